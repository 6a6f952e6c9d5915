"""Hostile input: peak memory per binding, validate time per MiB, bytes fetched, as ratios.

    python bench/bench_hostile.py memory [--mib 64] [--langs python,cpp,typescript]
    python bench/bench_hostile.py time [--mib 4]
    python bench/bench_hostile.py fetch [--mib 64]

``memory``: each large valid metadata.json of ptn.testing.hostile.LARGE_VALID (one float
list, one int list, short strings, one long string, many names), and the invalid deep
chain of long names (``deep_long_names``, once 445x in Python), is parsed by each
binding's conformance runner in a fresh process; the figure is the peak RSS above that
runner's peak on ``{}``, divided by the document's size (spec.md promises at most 16x).

``time``: ``ptn.validate`` time per MiB of adversarial files (nesting pre-scan worst
cases, a long list before a lone surrogate, a huge aliases.json of bad entries, tens of
thousands of central entries on one local header of 16,383 extra fields) against an
ordinary package of the same size (a metadata.json of floats), and each file's time
against a plain read of its bytes.

``fetch``: bytes a fast check reads of packages whose claims are large (a stored
metadata.json past the JSON limit, a central directory claimed far longer than its
entries), Python over loopback HTTP and the TypeScript binding, against the file's size.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tools/ of the checkout

from ptn.testing import hostile
from tools.conformance.runners import cpp_runner, typescript_runner

MIB = 1 << 20


def _command(lang: str) -> list[str]:
    if lang == "python":
        code = (
            "import sys; sys.path.insert(0, sys.argv.pop(1)); "
            "from tools.conformance.runners import run_python as r; r(sys.argv[1:])"
        )
        return [sys.executable, "-c", code, str(Path(__file__).resolve().parent.parent)]
    if lang == "cpp":
        return [str(cpp_runner())]
    return typescript_runner()


def _peak_rss(cmd: list[str]) -> int:
    """Peak RSS in bytes of ``cmd`` run in a fresh child of a fresh measuring process."""
    probe = (
        "import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *cmd], check=True, capture_output=True, text=True
    )
    return int(out.stdout) * 1024  # ru_maxrss is in KiB on Linux


# Invalid documents whose parse once took memory out of proportion to their size.
HOSTILE_MEMORY: dict[str, Callable[[int], bytes]] = {
    "deep-long-names (json-too-deep)": hostile.deep_long_names,
}


def memory(mib: int, langs: list[str]) -> None:
    size = mib * MIB
    print(f"| document ({mib} MiB) | " + " | ".join(langs) + " |")
    print("| --- |" + " --- |" * len(langs))
    with tempfile.TemporaryDirectory() as where:
        empty = Path(where) / "empty.json"
        empty.write_bytes(b"{}")
        floor = {lang: _peak_rss([*_command(lang), str(empty)]) for lang in langs}
        for name, build in {**hostile.LARGE_VALID, **HOSTILE_MEMORY}.items():
            path = Path(where) / f"{name}.json"
            path.write_bytes(build(size))
            real = path.stat().st_size
            cells = []
            for lang in langs:
                peak = _peak_rss([*_command(lang), str(path)])
                cells.append(f"{(peak - floor[lang]) / real:.1f}x")
            path.unlink()
            print(f"| {name} | " + " | ".join(cells) + " |")
    floors = ", ".join(f"{k} {v / MIB:.0f} MiB" for k, v in floor.items())
    print(f"\nfloor (peak RSS on `{{}}`): {floors}")


def _best(fn: Callable[[], object], runs: int = 3) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return min(samples)


def timing(mib: int) -> None:
    import ptn

    size = mib * MIB
    files: dict[str, bytes] = {
        "ordinary: metadata float list": hostile.metadata_package(hostile.float_list(size)),
        "escaped quotes + 901 '['": hostile.metadata_package(
            hostile.escaped_quotes_then_deep(size // 2)
        ),
        "surrogate pair + 900 '['": hostile.metadata_package(hostile.surrogate_then_deep(size)),
        "items before a lone surrogate": hostile.metadata_package(
            hostile.long_list_then(b'"\\ud800"', size // 2)
        ),
        "aliases.json of bad entries": hostile.bad_aliases(size // 20),
        "entries sharing 16,383 extra fields": hostile.shared_extras(
            min(0xFFFE, max(1, (size - 65_600) // 51))
        ),
    }
    print("| file | MiB | validate s/MiB | vs ordinary | vs plain read |")
    print("| --- | --- | --- | --- | --- |")
    base = None
    with tempfile.TemporaryDirectory() as where:
        for name, data in files.items():
            path = Path(where) / "f.ptn"
            path.write_bytes(data)
            ptn.validate(path, deep=True)  # warm-up
            took = _best(lambda p=path: ptn.validate(p, deep=True))  # type: ignore[misc]
            read = _best(lambda p=path: p.read_bytes())  # type: ignore[misc]
            per_mib = took / (len(data) / MIB)
            base = base or per_mib
            print(
                f"| {name} | {len(data) / MIB:.1f} | {per_mib * 1e3:.1f} ms | "
                f"{per_mib / base:.2f}x | {took / read:.0f}x |"
            )


_SERVER = """
import sys, pathlib
sys.path.insert(0, sys.argv[1])
from range_server import Store, serve
store = Store()
for p in pathlib.Path(sys.argv[2]).glob("*.ptn"):
    store.files[p.name] = p.read_bytes()
with serve(store) as url:
    print(url, flush=True)
    sys.stdin.read()
"""

_NODE_BYTES = """
const [dist, path] = process.argv.slice(1);
const ptn = await import(dist + "/index.js");
const { nodeFileSource } = await import(dist + "/node.js");
const file = nodeFileSource(path);
let bytes = 0;
const read = (o, n) => ((bytes += n), file.read(o, n));
const source = { name: path, size: () => file.size(), read };
await ptn.validatePackage(source);
await file.close();
console.log(bytes);
"""


def fetch(mib: int) -> None:
    import ptn
    from ptn.json.strict import MAX_JSON_BYTES
    from ptn.sources import TransferStats
    from tools.conformance.runners import TS_DIR

    repo = Path(__file__).resolve().parent.parent
    files = {
        "metadata.json of 64 MiB + 1 byte": hostile.metadata_package(b" " * (MAX_JSON_BYTES + 1)),
        f"directory claimed {mib} MiB longer": hostile.directory_claim(mib * MIB),
        f"{mib} MiB of zeros before the directory": hostile.directory_claim(mib * MIB, before=True),
    }
    print("| package | size | Python fetched (HTTP) | TypeScript read | fetched / size |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as where:
        names = {}
        for i, (label, data) in enumerate(files.items()):
            names[label] = f"f{i}.ptn"
            (Path(where) / names[label]).write_bytes(data)
        server = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(repo / "tests"), where],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stdout is not None
            base = server.stdout.readline().strip()
            for label, name in names.items():
                size = len(files[label])
                stats = TransferStats()
                ptn.validate(f"{base}/ok/{name}", fast=True, stats=stats)
                node = subprocess.run(
                    ["node", "--input-type=module", "-e", _NODE_BYTES, str(TS_DIR / "dist"),
                     str(Path(where) / name)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                ts = int(node.stdout)
                print(
                    f"| {label} | {size / MIB:.1f} MiB | {stats.bytes / 1024:.1f} KiB "
                    f"({stats.requests} requests) | {ts / 1024:.1f} KiB | "
                    f"{max(stats.bytes, ts) / size:.5f} |"
                )
        finally:
            server.communicate("")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    mem = sub.add_parser("memory", help="peak memory / document size per binding")
    mem.add_argument("--mib", type=int, default=64)
    mem.add_argument("--langs", default="python,cpp,typescript")
    tim = sub.add_parser("time", help="validate time per MiB, adversarial vs ordinary")
    tim.add_argument("--mib", type=int, default=4)
    fet = sub.add_parser("fetch", help="bytes a fast check reads of packages claiming much")
    fet.add_argument("--mib", type=int, default=64)
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.environ.setdefault("PYTHONHASHSEED", "0")
    if args.what == "memory":
        memory(args.mib, args.langs.split(","))
    elif args.what == "fetch":
        fetch(args.mib)
    else:
        timing(args.mib)


if __name__ == "__main__":
    main()
