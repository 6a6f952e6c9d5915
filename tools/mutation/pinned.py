"""Pinned mutants: every mutant that once survived and was then killed, tried again.

``tools/mutation/pinned.toml`` lists them, each as an exact piece of source (``old``,
found exactly once in ``path``), its replacement (``new``) and the tests that must
fail on it. ``python -m tools.mutation --pinned`` copies the checkout's files to a
scratch directory, runs those tests once unchanged (they must pass), then applies each
mutant alone and runs its tests (they must fail). Unlike a sample it is deterministic
and needs no mutmut, so CI runs it: a test that pinned a behaviour cannot quietly stop.

A pin whose ``old`` no longer occurs (the code was rewritten) fails as *stale*: update
it to the new code, or drop it if the behaviour it guarded is gone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

PINNED = Path(__file__).with_name("pinned.toml")


@dataclass(frozen=True)
class Pin:
    """One mutant: ``old`` replaced by ``new`` in ``path`` must fail ``tests``."""

    id: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    why: str

    def apply(self, source: str) -> str:
        """``source`` with the mutation; ValueError when ``old`` is not there exactly once."""
        count = source.count(self.old)
        if count != 1:
            raise ValueError(
                f"pin {self.id}: its code occurs {count} times in {self.path}, not once; "
                "the source changed, so update or drop the pin"
            )
        return source.replace(self.old, self.new)


def load(path: Path = PINNED) -> list[Pin]:
    """The pins of ``path``, checked for the fields each needs and unique ids."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    pins = [
        Pin(p["id"], p["path"], p["old"], p["new"], tuple(p["tests"]), p["why"])
        for p in data["mutant"]
    ]
    ids = [p.id for p in pins]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: pin ids repeat")
    for p in pins:
        if p.old == p.new or not p.tests:
            raise ValueError(f"pin {p.id}: no change, or no tests")
    return pins


def _files(root: Path) -> list[str]:
    """The checkout's files, tracked or new (not ignored): what the tests may read."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout
    return [f for f in out.decode().split("\0") if f and (root / f).is_file()]


def _pytest(scratch: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(scratch), str(scratch / "generated" / "python")])
    # No bytecode: a mutant of the same size written within the same second as the
    # source would otherwise run from the other one's cached .pyc.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
    return subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True)


def run(root: Path, pins: list[Pin] | None = None) -> int:
    """Try every pin; 0 when each dies, 1 otherwise (printing why)."""
    pins = load() if pins is None else pins
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ptn-pinned-") as tmp:
        scratch = Path(tmp)
        for rel in _files(root):
            (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, scratch / rel)
        every = tuple(sorted({t for p in pins for t in p.tests}))
        clean = _pytest(scratch, every)
        if clean.returncode != 0:
            print(clean.stdout[-4000:], clean.stderr[-2000:], sep="\n")
            print("the pinned mutants' tests fail without any mutant: fix them first")
            return 1
        for pin in pins:
            target = scratch / pin.path
            original = target.read_text(encoding="utf-8")
            try:
                mutated = pin.apply(original)
            except ValueError as err:
                failures.append(f"stale  {err}")
                continue
            started = time.monotonic()
            target.write_text(mutated, encoding="utf-8")
            try:
                result = _pytest(scratch, pin.tests)
            finally:
                target.write_text(original, encoding="utf-8")
            took = time.monotonic() - started
            if result.returncode == 1:
                print(f"killed    {pin.id} ({took:.1f} s)")
            elif result.returncode == 0:
                failures.append(f"SURVIVED {pin.id}: {pin.why}")
            else:  # collection error, usage error: the pin is broken, not killed
                tail = (result.stdout + result.stderr)[-1500:]
                failures.append(f"broken {pin.id}: pytest exited {result.returncode}\n{tail}")
    print(f"{len(pins) - len(failures)} of {len(pins)} pinned mutants killed")
    for line in failures:
        print(line)
    return 1 if failures else 0
