"""A user's file is sacred: edits are transactions, writes keep what the file was,
interrupted writes leave the old file and no temporary file (spec.md section 11)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import ptn
import ptn.package.atomic
from ptn.core.errors import PtnError
from ptn.package.atomic import BrokenHardLinks
from ptn.package.edit import edit_metadata
from ptn.package.tempfiles import stale_temp_files
from ptn.testing import program_for
from ptn.testing.hostile import PROGRAM  # the smallest real program: binds nothing

REPO = Path(__file__).resolve().parent.parent


def make(path: Path, **metadata: object) -> Path:
    constants = {"w": np.arange(64, dtype=np.float32), "kv": np.zeros(16, np.float16)}
    program = program_for(constants, mutated=["kv"])  # kv: state the method updates
    ptn.save(path, program, constants, metadata or {"get_vocab_size": 64})
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def temp_names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def ptn_cli(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptn.cli", *args], capture_output=True, text=True, **kw
    )  # type: ignore[call-overload,no-any-return]


# -- 1. edits are transactions -------------------------------------------------------------


@pytest.mark.slow
def test_concurrent_cli_edits_serialise_and_none_is_lost(tmp_path: Path) -> None:
    """Real processes started together: every edit lands, the file stays valid."""
    pkg = make(tmp_path / "m.ptn")
    n = 6
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ptn.cli", "metadata", "set", str(pkg), f"edit.n{i}={i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(n)
    ]
    outcomes = [(p.wait(timeout=120), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    assert [code for code, _ in outcomes] == [0] * n, outcomes
    assert ptn.validate(pkg, deep=True).valid
    values = ptn.read_metadata(pkg).to_dict()  # type: ignore[union-attr]
    assert {f"edit.n{i}": i for i in range(n)}.items() <= values.items()
    assert temp_names(tmp_path) == []


def test_file_replaced_during_the_edit_fails_loudly_and_keeps_the_other(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    other = make(tmp_path / "other.ptn", **{"general.name": "other"})
    other_bytes = other.read_bytes()

    def change(values: dict[str, object]) -> dict[str, object]:
        os.replace(other, pkg)  # another program puts a new package at the path
        return {**values, "x": 1}

    with pytest.raises(PtnError) as raised:
        edit_metadata(pkg, change)
    assert raised.value.rule == "ptn-concurrent-modification"
    assert pkg.read_bytes() == other_bytes
    assert temp_names(tmp_path) == []


def test_file_grown_in_place_during_the_edit_fails_loudly(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")

    def change(values: dict[str, object]) -> dict[str, object]:
        with open(pkg, "ab") as f:  # a non-ptn writer modifying the same inode
            f.write(b"junk")
        return {**values, "x": 1}

    with pytest.raises(PtnError, match="concurrent-modification"):
        edit_metadata(pkg, change)
    assert pkg.read_bytes().endswith(b"junk")
    assert temp_names(tmp_path) == []


def test_copies_come_from_the_file_that_was_validated(tmp_path: Path) -> None:
    """The source descriptor is the one validated: a replaced path is never read."""
    pkg = make(tmp_path / "m.ptn")
    out = tmp_path / "out.ptn"
    decoy = make(tmp_path / "decoy.ptn", **{"general.name": "decoy"})
    original = ptn.load(pkg)
    owners = {k: original.constants[k].copy() for k in original.keys()}
    original.close()

    def change(values: dict[str, object]) -> dict[str, object]:
        os.replace(decoy, pkg)
        return {**values, "x": 1}

    # -o to another file: the source was consistent, only the path moved on
    with pytest.raises(PtnError, match="concurrent-modification"):
        edit_metadata(pkg, change, output=out)
    assert not out.exists()
    make(pkg)  # back to a package like the first one
    edit_metadata(pkg, lambda v: {**v, "x": 1}, output=out)
    with ptn.load(out) as result:
        assert {k: result.constants[k].tolist() for k in result.keys()} == {
            k: v.tolist() for k, v in owners.items()
        }
        assert result.metadata_int("x") == 1


def test_edit_waits_for_the_lock_then_gives_up_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = make(tmp_path / "m.ptn")
    before = pkg.read_bytes()
    monkeypatch.setattr(ptn.package.atomic, "LOCK_TIMEOUT", 0.3)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys, time\n"
            f"f = open({str(pkg)!r}, 'rb'); fcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('locked', flush=True); time.sleep(30)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"  # type: ignore[union-attr]
        with pytest.raises(PtnError) as raised:
            ptn.rewrite_metadata(pkg, {"x": 1})
        assert raised.value.rule == "ptn-concurrent-modification"
        assert "holds the package's lock" in raised.value.message
    finally:
        holder.kill()
        holder.wait()
    assert pkg.read_bytes() == before
    ptn.rewrite_metadata(pkg, {"x": 1})  # the lock is free again
    assert ptn.read_metadata(pkg).to_dict() == {"x": 1}  # type: ignore[union-attr]


def test_rewrite_metadata_in_process(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    ptn.rewrite_metadata(pkg, {"get_vocab_size": 32, "general.name": "x"})
    assert ptn.read_metadata(pkg).to_dict() == {  # type: ignore[union-attr]
        "get_vocab_size": 32,
        "general.name": "x",
    }
    ptn.rewrite_metadata(pkg, None)
    assert ptn.read_metadata(pkg) is None
    assert ptn.validate(pkg, deep=True).valid


# A second program writing in place during an edit: the same bytes count overwritten,
# ahead of the copy, just behind it, or in the middle of the file, when the copy is 20%,
# 50% or 80% done. The copy is stepped through ptn.zip.writer._read_into, so the write
# lands at exactly that point (no race between threads).

BIG_TENSORS = 8  # of 4 MiB each: a 32 MiB package, 32 blocks of the copy


@pytest.fixture(scope="module")
def big_package(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    rng = np.random.default_rng(40)
    constants = {f"layer.{i}": rng.random(1 << 20, dtype=np.float32) for i in range(BIG_TENSORS)}
    path = tmp_path_factory.mktemp("big") / "big.ptn"
    ptn.save(path, program_for(constants), constants, {"get_vocab_size": 64})
    return path.read_bytes()


def _overwrite_during_copy(
    monkeypatch: pytest.MonkeyPatch, pkg: Path, fraction: float, where: str, *, keep_mtime: bool
) -> None:
    """Arrange for another program to overwrite 4 KiB of ``pkg`` in place (same size) when
    the edit's copy is ``fraction`` done: ``where`` 1 MiB ahead of the block being read,
    1 MiB behind it, or in the middle of the file."""
    import ptn.zip.writer as writer_module

    size = pkg.stat().st_size
    to_copy = size - 2 * 4096  # about what the copy reads: all but headers and directory
    real = writer_module._read_into
    state = {"copied": 0, "done": False}

    def stepping(fd: int, view: memoryview, offset: int) -> int:
        if not state["done"] and state["copied"] >= fraction * to_copy:
            state["done"] = True
            at = {
                "ahead": offset + (1 << 20),
                "behind": offset - (1 << 20),
                "middle": size // 2,
            }[where]
            before = os.stat(pkg)
            with open(pkg, "r+b") as f:  # not ptn: no lock, no rename
                f.seek(at)
                old = f.read(4096)
                f.seek(at)
                f.write(bytes(b ^ 0xA5 for b in old))
            if keep_mtime:  # as rsync --inplace or touch -r would: only ctime tells
                os.utime(pkg, ns=(before.st_atime_ns, before.st_mtime_ns))
        n = real(fd, view, offset)
        state["copied"] += n
        return n

    monkeypatch.setattr(writer_module, "_read_into", stepping)


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("where", ["ahead", "behind", "middle"])
def test_a_same_size_overwrite_during_the_copy_is_found(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    big_package: bytes,
    fraction: float,
    where: str,
) -> None:
    pkg = tmp_path / "m.ptn"
    pkg.write_bytes(big_package)
    _overwrite_during_copy(monkeypatch, pkg, fraction, where, keep_mtime=where != "middle")
    with pytest.raises(PtnError) as raised:
        edit_metadata(pkg, lambda values: {**values, "x": 1})
    assert raised.value.rule == "ptn-concurrent-modification"
    assert "nothing was written" in raised.value.message
    after = pkg.read_bytes()
    assert len(after) == len(big_package) and after != big_package  # as the other left it
    assert temp_names(tmp_path) == []


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
def test_an_overwrite_ahead_of_the_copy_is_found_without_timestamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big_package: bytes, fraction: float
) -> None:
    """Where no timestamp moves (a shared mapping's writes to pages it dirtied before), the
    copy's CRC-32 check still finds bytes changed ahead of it: zip-crc-mismatch."""
    pkg = tmp_path / "m.ptn"
    pkg.write_bytes(big_package)
    still = ptn.package.atomic.Identity
    monkeypatch.setattr(
        ptn.package.atomic.Identity,
        "of",
        classmethod(lambda cls, st: still(st.st_dev, st.st_ino, st.st_size, 0, 0)),
    )
    _overwrite_during_copy(monkeypatch, pkg, fraction, "ahead", keep_mtime=True)
    out = tmp_path / "out.ptn"
    with pytest.raises(PtnError) as raised:
        edit_metadata(pkg, lambda values: {**values, "x": 1}, output=out)
    assert (raised.value.rule, raised.value.member) == ("zip-crc-mismatch", "program.safetensors")
    assert not out.exists() and temp_names(tmp_path) == []


def test_an_overwrite_behind_the_copy_is_found_on_second_timestamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big_package: bytes
) -> None:
    """On a file system with 1 s timestamps, a write in the second of the last change would
    leave the change time as it was: the edit starts reading only once that second (and
    FAT's 2 s step) is over, so the write behind the copy moves it."""
    pkg = tmp_path / "m.ptn"
    time.sleep(1 - time.time() % 1)  # early in a second: the write below lands in it too
    pkg.write_bytes(big_package)  # changed just now
    whole = ptn.package.atomic.Identity

    def seconds(cls: object, st: os.stat_result) -> object:
        rounded = [t // 10**9 * 10**9 for t in (st.st_mtime_ns, st.st_ctime_ns)]
        return whole(st.st_dev, st.st_ino, st.st_size, *rounded)

    monkeypatch.setattr(ptn.package.atomic.Identity, "of", classmethod(seconds))
    _overwrite_during_copy(monkeypatch, pkg, 0.2, "behind", keep_mtime=True)
    started = time.monotonic()
    with pytest.raises(PtnError) as raised:
        edit_metadata(pkg, lambda values: {**values, "x": 1})
    assert raised.value.rule == "ptn-concurrent-modification"
    assert time.monotonic() - started >= 1.0  # it waited for the change time to settle
    assert temp_names(tmp_path) == []


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("where", ["ahead", "behind"])
def test_a_same_size_overwrite_during_a_repack_is_found(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    big_package: bytes,
    fraction: float,
    where: str,
) -> None:
    """``ptn repack`` streams each member (its CRC-32 checked as it passes) rather than
    copying it: a write by another program, its modification time put back, is found
    there too. The stream is stepped through ZipWriter._emit."""
    import ptn.zip.writer as writer_module

    pkg = tmp_path / "m.ptn"
    pkg.write_bytes(big_package)
    size = len(big_package)
    real = writer_module.ZipWriter._emit
    state = {"written": 0, "done": False}

    def stepping(self: object, view: memoryview, crc: object) -> object:
        if not state["done"] and state["written"] >= fraction * size:
            state["done"] = True
            at = state["written"] + (1 << 20 if where == "ahead" else -(1 << 20))
            before = os.stat(pkg)
            with open(pkg, "r+b") as f:
                f.seek(at)
                old = f.read(4096)
                f.seek(at)
                f.write(bytes(b ^ 0xA5 for b in old))
            os.utime(pkg, ns=(before.st_atime_ns, before.st_mtime_ns))
        state["written"] += len(view)
        return real(self, view, crc)  # type: ignore[arg-type]

    monkeypatch.setattr(writer_module.ZipWriter, "_emit", stepping)
    with pytest.raises(PtnError) as raised:
        ptn.repack(pkg)
    assert state["done"]
    assert raised.value.rule == "ptn-concurrent-modification"
    after = pkg.read_bytes()
    assert len(after) == size and after != big_package  # as the other program left it
    assert temp_names(tmp_path) == []


def test_the_cli_says_which_rule_and_exits_1(tmp_path: Path, big_package: bytes) -> None:
    """``ptn metadata set`` while another program overwrites the package: exit 1, the rule
    named, the package as the other program left it."""
    pkg = tmp_path / "m.ptn"
    pkg.write_bytes(big_package)
    code = textwrap.dedent(
        f"""
        import os, sys
        import ptn.zip.writer as w
        real, done = w._read_into, []
        def stepping(fd, view, offset):
            if not done and offset >= {len(big_package) // 2}:  # half-way
                done.append(offset)
                with open({str(pkg)!r}, "r+b") as f:  # overwrite 4 KiB already copied
                    f.seek(offset - (1 << 20))
                    f.write(bytes(4096))
            return real(fd, view, offset)
        w._read_into = stepping
        sys.argv = ["ptn", "metadata", "set", {str(pkg)!r}, "x=1"]
        from ptn.cli.main import main
        main()
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "ptn-concurrent-modification" in result.stderr
    assert "nothing was written" in result.stderr and "wrote" not in result.stderr
    after = pkg.read_bytes()
    assert len(after) == len(big_package) and after != big_package
    assert temp_names(tmp_path) == []


# -- 2. writes respect the file ------------------------------------------------------------


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_new_package_mode_follows_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    old = os.umask(umask)
    try:
        pkg = make(tmp_path / "m.ptn")
    finally:
        os.umask(old)
    assert stat.S_IMODE(pkg.stat().st_mode) == mode


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o444])
def test_rewrite_keeps_mode(tmp_path: Path, mode: int) -> None:
    pkg = make(tmp_path / "m.ptn")
    pkg.chmod(mode)
    ptn.rewrite_metadata(pkg, {"x": 1})
    assert stat.S_IMODE(pkg.stat().st_mode) == mode
    result = ptn_cli("metadata", "set", str(pkg), "y=2")
    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE(pkg.stat().st_mode) == mode


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
def test_rewrite_keeps_owner_and_group(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    os.chown(pkg, 1234, 5678)
    ptn.rewrite_metadata(pkg, {"x": 1})
    st = pkg.stat()
    assert (st.st_uid, st.st_gid) == (1234, 5678)


def test_symlink_is_edited_at_its_target_and_stays_a_link(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    target = make(tmp_path / "store" / "real.ptn")
    link = tmp_path / "model.ptn"
    link.symlink_to(Path("store") / "real.ptn")
    result = ptn_cli("metadata", "set", str(link), "x=5")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(Path("store") / "real.ptn")
    assert ptn.read_metadata(target).to_dict()["x"] == 5  # type: ignore[union-attr]
    ptn.save(link, PROGRAM)  # a save through the link too
    assert link.is_symlink() and ptn.read_metadata(target) is None
    assert temp_names(tmp_path / "store") == [] and temp_names(tmp_path) == []


def test_hard_link_is_broken_and_the_user_is_told(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    other = tmp_path / "other-link.ptn"
    os.link(pkg, other)
    before = other.read_bytes()
    with pytest.warns(BrokenHardLinks, match="1 other hard link"):
        ptn.rewrite_metadata(pkg, {"x": 1})
    assert other.read_bytes() == before  # the other name keeps the old package
    assert ptn.read_metadata(pkg).to_dict() == {"x": 1}  # type: ignore[union-attr]
    os.link(pkg, tmp_path / "third.ptn")
    result = ptn_cli("metadata", "set", str(pkg), "y=2")
    assert result.returncode == 0 and "other hard link" in result.stderr


def test_no_warning_without_hard_links(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ptn.rewrite_metadata(pkg, {"x": 1})


# -- 3. interrupted writes clean up --------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    import ptn, ptn.zip.writer
    from ptn.testing import program_for
    path, marker = sys.argv[1], sys.argv[2]
    real = ptn.zip.writer.byte_view
    tensors = []
    def slow(data):
        view = real(data)
        if view.nbytes == 1 << 20:  # a tensor's bytes, as the writer takes them
            tensors.append(1)
            if len(tensors) == 2:  # one tensor is in the temporary file: stall mid-write
                open(marker, "w").close()
                time.sleep(60)
        return view
    ptn.zip.writer.byte_view = slow
    arrays = {f"t{i}": np.full(1 << 18, i, np.float32) for i in range(4)}
    ptn.save(path, program_for(arrays), arrays)
    """
)


def _start_stalled_writer(tmp_path: Path, pkg: Path) -> subprocess.Popen[bytes]:
    marker = tmp_path / "stalled"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(pkg), str(marker)])
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, "the writer ended before stalling"
        assert time.monotonic() < deadline, "the writer never stalled"
        time.sleep(0.02)
    assert len(temp_names(pkg.parent)) == 1  # it is mid-write
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_mid_write_leaves_the_old_file_and_no_temp(tmp_path: Path, sig: int) -> None:
    pkg = make(tmp_path / "m.ptn")
    before = digest(pkg)
    proc = _start_stalled_writer(tmp_path, pkg)
    proc.send_signal(sig)
    code = proc.wait(timeout=60)
    # the process still ends by that signal, as its parent expects (Python re-raises
    # SIGINT itself when a KeyboardInterrupt ends the program)
    assert code == -sig
    assert digest(pkg) == before
    assert temp_names(tmp_path) == []


@pytest.mark.slow
def test_killed_writer_leaves_a_stale_temp_that_is_named(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    live = _start_stalled_writer(tmp_path, pkg)
    try:
        assert stale_temp_files([pkg]) == []  # a live writer's file is not stale
    finally:
        live.kill()  # SIGKILL: no cleanup is possible
        live.wait()
    (stale,) = temp_names(tmp_path)
    assert [p.name for p in stale_temp_files([pkg])] == [stale]
    result = ptn_cli("validate", str(pkg))
    assert result.returncode == 0 and stale in result.stderr and "can be deleted" in result.stderr
    result = ptn_cli("metadata", "set", str(pkg), "x=1")
    assert result.returncode == 0 and stale in result.stderr


def test_temp_name_pattern_is_documented() -> None:
    spec = (REPO / "spec.md").read_text()
    assert ptn.package.atomic.TEMP_NAME.format(name="NAME", token="XXXXXXXX") in spec


# -- 4. copy-on-write tensors --------------------------------------------------------------


def _mapped_ranges(path: Path) -> list[tuple[int, int]]:
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[5] == str(path.resolve()):
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            ranges.append((lo, hi))
    return ranges


def test_to_torch_is_copy_on_write(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pkg_path = make(tmp_path / "m.ptn")
    before = digest(pkg_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "non-writable tensors" warning fails this
        with ptn.load(pkg_path) as pkg:
            tensors = pkg.to_torch()
            ranges = _mapped_ranges(pkg_path)
            ptr = tensors["w"].data_ptr()
            assert any(lo <= ptr < hi for lo, hi in ranges), "not a view of the file"
            tensors["w"].add_(1)
            tensors["kv"].mul_(3).add_(2)
            assert tensors["w"][:3].tolist() == [1.0, 2.0, 3.0]
            assert pkg.constants["w"][:3].tolist() == [0.0, 1.0, 2.0]  # read-only view unchanged
    assert digest(pkg_path) == before


def test_writable_alias_is_independent_of_its_owner(tmp_path: Path) -> None:
    w = np.arange(1000, dtype=np.float32)
    pkg_path = tmp_path / "m.ptn"
    ptn.save(pkg_path, PROGRAM, {"a": w, "b": w.copy()})
    before = digest(pkg_path)
    with ptn.load(pkg_path) as pkg:
        assert pkg.aliases == {"b": "a"}
        a = pkg.constant("a", writable=True).array
        b = pkg.constant("b", writable=True).array
        a += 1
        assert b[:2].tolist() == [0.0, 1.0]
        b *= 2
        assert a[:2].tolist() == [1.0, 2.0] and b[:2].tolist() == [0.0, 2.0]
        with pytest.raises(ValueError, match="read-only"):
            pkg.constants["a"][0] = 5
    assert digest(pkg_path) == before


@pytest.mark.slow
def test_optimizer_step_on_loaded_parameters(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pkg_path = tmp_path / "m.ptn"
    ptn.save(
        pkg_path, PROGRAM, {"weight": np.ones((4, 3), np.float32), "bias": np.zeros(4, np.float32)}
    )
    before = digest(pkg_path)
    model = torch.nn.Linear(3, 4)
    with ptn.load(pkg_path) as pkg:
        model.load_state_dict(pkg.to_torch(), assign=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss = model(torch.ones(2, 3)).sum()
        loss.backward()
        opt.step()
        assert model.bias.detach().tolist() == pytest.approx([-0.2] * 4)
    assert digest(pkg_path) == before


@pytest.mark.slow
def test_to_torch_of_a_large_package_maps_instead_of_reading(tmp_path: Path) -> None:
    """Resident memory after to_torch() is a small fraction of the constants' size."""
    pytest.importorskip("torch")
    pkg_path = tmp_path / "big.ptn"
    ptn.save(pkg_path, PROGRAM, {f"t{i}": np.full(1 << 23, i, np.float32) for i in range(8)})
    code = textwrap.dedent(
        f"""
        import os, ptn, torch
        def rss():
            return int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE')
        pkg = ptn.load({str(pkg_path)!r})
        base = rss()
        tensors = pkg.to_torch()
        mapped = rss() - base
        tensors['t3'][:1024].add_(1)   # one page range written
        written = rss() - base
        print(mapped, written, float(tensors['t3'][0]), float(tensors['t3'][2000]))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mapped, written, first, untouched = out.stdout.split()
    size = 8 * (1 << 25)  # 256 MiB of constants
    assert int(mapped) < size // 16, out.stdout
    assert int(written) < size // 16, out.stdout
    assert (float(first), float(untouched)) == (4.0, 3.0)


# -- 5. writer input errors ----------------------------------------------------------------


def test_mutable_keys_sharing_numpy_memory_are_refused(tmp_path: Path) -> None:
    buf = np.zeros(16, np.float32)
    cases = [
        ({"k": buf, "v": buf}, ["k", "v"]),  # two mutable keys, one buffer
        ({"k": buf, "v": buf[8:]}, ["k", "v"]),  # overlapping views
        ({"k": buf, "w": buf[:4]}, ["k"]),  # a mutable buffer that is also a constant
        ({"w": buf, "k": buf.reshape(4, 4)[1]}, ["k"]),
    ]
    for constants, mutable in cases:
        with pytest.raises(PtnError) as raised:
            ptn.save(tmp_path / "m.ptn", program_for(constants, mutated=mutable), constants)
        assert raised.value.rule == "st-mutable-shares-memory"
    assert not (tmp_path / "m.ptn").exists()


def test_memory_sharing_that_is_allowed(tmp_path: Path) -> None:
    buf = np.zeros(16, np.float32)
    ok = [
        ({"a": buf, "b": buf}, []),  # immutable constants may share (they deduplicate)
        ({"k": buf[::2], "v": buf[1::2]}, ["k", "v"]),  # interleaved, no byte in common
        ({"k": buf[:8], "v": buf[8:]}, ["k", "v"]),  # adjacent halves
        ({"k": buf, "v": buf.copy()}, ["k", "v"]),
    ]
    for constants, mutable in ok:
        ptn.save(tmp_path / "m.ptn", program_for(constants, mutated=mutable), constants)
        with ptn.load(tmp_path / "m.ptn") as pkg:
            for key in mutable:
                assert key not in pkg.aliases  # mutable keys are never deduplicated


def test_mutable_torch_tensors_sharing_a_storage_are_refused(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    cache = torch.zeros(2, 8)
    program = program_for({"k": cache[0], "v": cache[1]}, mutated=["k", "v"])
    with pytest.raises(PtnError, match="st-mutable-shares-memory"):
        ptn.save(tmp_path / "m.ptn", program, {"k": cache[0], "v": cache[1]})
    ptn.save(tmp_path / "m.ptn", program, {"k": cache[0].clone(), "v": cache[1].clone()})


def test_float8_is_an_unsupported_dtype_naming_the_key(tmp_path: Path) -> None:
    import ml_dtypes

    with pytest.raises(PtnError) as raised:
        ptn.save(tmp_path / "m.ptn", PROGRAM, {"scale": np.zeros(4, ml_dtypes.float8_e4m3fn)})
    assert raised.value.rule == "st-unsupported-dtype" and "'scale'" in raised.value.message
    torch = pytest.importorskip("torch")
    with pytest.raises(PtnError) as raised:
        ptn.save(tmp_path / "m.ptn", PROGRAM, {"q": torch.zeros(4, dtype=torch.float8_e5m2)})
    assert raised.value.rule == "st-unsupported-dtype" and "'q'" in raised.value.message


def test_writing_in_a_forked_child_after_the_parent_wrote(tmp_path: Path) -> None:
    """The CRC helper thread does not survive fork; the child must not wait for it."""
    big = {"t": np.ones(1 << 21, np.float32)}  # 8 MiB: CRC runs on the helper thread
    ptn.save(tmp_path / "parent.ptn", PROGRAM, big)
    code = textwrap.dedent(
        f"""
        import os, sys, numpy as np, ptn
        big = {{"t": np.ones(1 << 21, np.float32)}}
        ptn.save({str(tmp_path / "p2.ptn")!r}, {PROGRAM!r}, big)
        pid = os.fork()
        if pid == 0:
            ptn.save({str(tmp_path / "child.ptn")!r}, {PROGRAM!r}, big)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        sys.exit(os.waitstatus_to_exitcode(status))
        """
    )
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True, timeout=120)
    assert ptn.validate(tmp_path / "child.ptn", deep=True).valid


def test_lock_is_released_after_an_edit(tmp_path: Path) -> None:
    pkg = make(tmp_path / "m.ptn")
    ptn.rewrite_metadata(pkg, {"x": 1})
    with open(pkg, "rb") as f:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # would raise if still held


def test_timestamp_steps_and_how_long_an_edit_waits_for_them() -> None:
    from ptn.package.atomic import CLOCK_TICK_NS, Identity, settle_wait_ns, timestamp_step_ns

    assert timestamp_step_ns(1_733_453_167_123_456_789) == 1  # ns timestamps
    assert timestamp_step_ns(1_733_453_167_123_456_000) == 1_000  # µs
    assert timestamp_step_ns(1_733_453_167_120_000_000) == 10_000_000  # 10 ms
    assert timestamp_step_ns(1_733_453_167_000_000_000) == 2_000_000_000  # 1 s, or FAT's 2 s
    assert timestamp_step_ns(0) == 2_000_000_000

    def at(ctime: int, mtime: int | None = None) -> Identity:
        return Identity(1, 2, 3, ctime if mtime is None else mtime, ctime)

    now = 1_733_453_167_500_000_001
    assert settle_wait_ns(at(now - 10**9 + 7), now) == 0  # changed a second ago: no wait
    assert settle_wait_ns(at(now - 7), now) == 1 + CLOCK_TICK_NS - 7  # within a tick
    second = now // 10**9 * 10**9  # a 1 s file system: the whole second and FAT's next
    assert settle_wait_ns(at(second), now) == second + 2 * 10**9 + CLOCK_TICK_NS - now
    # a modification time in whole seconds (touch -d, an archive's) says nothing of the step
    assert settle_wait_ns(at(now - 7, mtime=second), now) == 1 + CLOCK_TICK_NS - 7
    assert settle_wait_ns(at(now + 10 * 10**9), now) == 0  # a skewed clock: no help waiting
