"""One conformance runner per language, behind one function.

A metadata runner prints ``<path>\\tvalid`` or ``<path>\\tinvalid\\t<rule-id>`` per
``metadata.json`` document. A package runner (every language; ``.ptn`` files) prints two
lines per file, the fast check's then the deep check's:
``<path>\\t<fast|deep>\\t<valid|invalid>\\t<findings>``, the findings a JSON list of
``[rule, severity, member, pointer]`` in the validator's order (messages are free text,
not compared). The C++ and TypeScript runners are built from generated/ on first use:

- ``cpp``: ``generated/cpp/conformance_runner.cpp`` (metadata documents and packages)
  compiled with ``$CXX`` (default g++) and ``-fno-exceptions -fno-rtti``, as a runtime
  builds it, into ``generated/cpp/build/conformance_runner-<hash>``, the hash covering the
  sources, the compiler and the flags (extra flags, e.g. sanitizers: ``$PTN_CXXFLAGS``);
- ``typescript``: ``npm ci`` in ``generated/typescript`` unless ``node_modules`` already
  holds the versions of ``package-lock.json``, then ``tsc`` into ``dist/`` when the sources
  changed (a hash in ``dist/.build_sha256``);
- ``java``: the sources of ``generated/java/src/main/java`` compiled with ``javac --release
  11`` (no Maven needed; the JUnit tests build with Maven) into
  ``generated/java/build/classes-<hash>``, the hash covering the sources and the JDK.

A missing toolchain raises RuntimeError saying what to install; nothing is skipped (in CI,
where ``CI`` is set, that is a failure like any other).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ptn.core.errors import PtnError
from ptn.metadata.document import Metadata
from tools import REPO_ROOT

GENERATED = REPO_ROOT / "generated"
CPP_DIR = GENERATED / "cpp"
TS_DIR = GENERATED / "typescript"
JAVA_DIR = GENERATED / "java"
JAVA_RELEASE = "11"
CXXFLAGS = ("-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-fno-exceptions", "-fno-rtti")
BUILD_TIMEOUT = 900
BATCH = 500  # files per runner process, well under any command-line limit
INSTALL_HINT = "see docs/bindings.md, or run .ci/install-bindings.sh"


def verdict_line(path: str, rule: str | None) -> str:
    return f"{path}\tvalid\n" if rule is None else f"{path}\tinvalid\t{rule}\n"


MODES = ("fast", "deep")
PACKAGE_SUFFIX = ".ptn"


def package_line(path: str, mode: str, valid: bool, findings: Sequence[Sequence[object]]) -> str:
    compact = json.dumps([list(f) for f in findings], ensure_ascii=True, separators=(",", ":"))
    return f"{path}\t{mode}\t{'valid' if valid else 'invalid'}\t{compact}\n"


def run_python(files: Sequence[str]) -> str:
    out = []
    for path in files:
        try:
            Metadata.parse(Path(path).read_bytes())
            rule = None
        except PtnError as err:
            rule = err.rule
        out.append(verdict_line(path, rule))
    return "".join(out)


def run_python_packages(files: Sequence[str]) -> str:
    """ptn.validate, fast then deep, in this process."""
    from ptn.remote.validate import validate

    out = []
    for path in files:
        for mode in MODES:
            report = validate(path, fast=mode == "fast")
            found = [(f.rule, f.severity, f.member, f.pointer) for f in report.findings]
            out.append(package_line(path, mode, report.valid, found))
    return "".join(out)


# ---------------------------------------------------------------------------
# Building
# ---------------------------------------------------------------------------


def _digest(parts: Sequence[str | bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def _files_digest(root: Path, paths: Sequence[Path], *extra: str) -> str:
    parts: list[str | bytes] = list(extra)
    for path in paths:
        parts += [path.relative_to(root).as_posix(), path.read_bytes()]
    return _digest(parts)


@contextlib.contextmanager
def _build_lock(name: str) -> Iterator[None]:
    """Serialise builds of one kind across processes (pytest-xdist, parallel CI jobs)."""
    try:
        import fcntl
    except ImportError:  # Windows: builds are rare; no lock
        yield
        return
    key = _digest([str(REPO_ROOT)])[:16]
    path = Path(tempfile.gettempdir()) / f"ptn-{name}-{key}.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class ToolchainMissing(RuntimeError):
    """A compiler, runtime or library the runner needs is not installed (not a build failure)."""


def _tool(name: str, what: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise ToolchainMissing(f"{what} needs `{name}`, which is not on PATH; {INSTALL_HINT}")
    return found


def _run_step(cmd: Sequence[str], cwd: Path, what: str) -> None:
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{what} timed out after {BUILD_TIMEOUT} s: {shlex.join(cmd)}") from None
    if proc.returncode != 0:
        raise RuntimeError(
            f"{what} failed ({shlex.join(cmd)}, exit {proc.returncode}):\n"
            f"{proc.stdout[-4000:]}{proc.stderr[-4000:]}"
        )


def _require_generated(paths: Sequence[Path]) -> None:
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise RuntimeError(f"{missing[0]} is missing; run `python -m tools.codegen`")


def cpp_runner() -> Path:
    """The compiled C++ conformance runner, built if its sources or flags changed."""
    compiler = shlex.split(os.environ.get("CXX") or "g++")
    cxx = [_tool(compiler[0], "the C++ conformance runner"), *compiler[1:]]
    flags = [*CXXFLAGS, *shlex.split(os.environ.get("PTN_CXXFLAGS", ""))]
    main = CPP_DIR / "conformance_runner.cpp"
    sources = [main, *sorted((CPP_DIR / "include").rglob("*.hpp"))]
    _require_generated([main, CPP_DIR / "include" / "ptn" / "metadata.hpp"])
    key = _files_digest(CPP_DIR, sources, *cxx, *flags)[:16]
    build = CPP_DIR / "build"
    target = build / f"conformance_runner-{key}"
    if target.is_file():
        return target
    with _build_lock("cpp"):
        if target.is_file():
            return target
        build.mkdir(parents=True, exist_ok=True)
        partial = build / f".conformance_runner-{key}.{os.getpid()}.tmp"
        cmd = [*cxx, *flags, "-I", str(CPP_DIR / "include"), str(main), "-o", str(partial)]
        try:
            _run_step(cmd, CPP_DIR, "compiling the C++ conformance runner")
        except RuntimeError:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, target)
        for old in build.glob("conformance_runner-*"):  # earlier builds of this cache
            if old != target:
                old.unlink(missing_ok=True)
    return target


def _node_major(node: str) -> int:
    proc = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    try:
        return int(proc.stdout.strip().lstrip("v").split(".")[0])
    except ValueError:
        return 0


def _installed_as_locked(root: Path) -> bool:
    """node_modules holds every package of package-lock.json at its locked version."""
    try:
        lock = json.loads((root / "package-lock.json").read_text(encoding="utf-8"))
        for where, entry in lock.get("packages", {}).items():
            if not where:
                continue
            installed = json.loads((root / where / "package.json").read_text(encoding="utf-8"))
            if installed.get("version") != entry.get("version"):
                return False
    except (OSError, ValueError):
        return False
    return True


def typescript_runner() -> list[str]:
    """The command of the TypeScript conformance runner, after `npm ci` and `tsc` if needed."""
    node = _tool("node", "the TypeScript conformance runner")
    if _node_major(node) < 20:
        raise ToolchainMissing(
            f"the TypeScript conformance runner needs Node.js >= 20; {INSTALL_HINT}"
        )
    script = TS_DIR / "conformance_runner.mjs"
    manifests = [TS_DIR / "package.json", TS_DIR / "package-lock.json"]
    _require_generated([script, *manifests])
    tsc = TS_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    sources = [TS_DIR / "tsconfig.json", *sorted((TS_DIR / "src").rglob("*.ts"))]
    dist = TS_DIR / "dist"
    dist_stamp = dist / ".build_sha256"

    def current(stamp: Path, key: str) -> bool:
        return stamp.is_file() and stamp.read_text() == key

    with _build_lock("typescript"):
        if not (tsc.is_file() and _installed_as_locked(TS_DIR)):
            npm = _tool("npm", "the TypeScript conformance runner")
            _run_step([npm, "ci", "--no-audit", "--no-fund"], TS_DIR, "npm ci")
        dist_key = _files_digest(TS_DIR, [*sources, *manifests])
        if not ((dist / "index.js").is_file() and current(dist_stamp, dist_key)):
            _run_step([node, str(tsc), "-p", str(TS_DIR)], TS_DIR, "tsc")
            dist_stamp.write_text(dist_key)
    return [node, str(script)]


def _javac_version(javac: str) -> str:
    proc = subprocess.run([javac, "-version"], capture_output=True, text=True, check=False)
    return (proc.stdout + proc.stderr).strip()


def java_runner() -> list[str]:
    """The command of the Java conformance runner, compiled with javac if the sources changed."""
    javac = _tool("javac", "the Java conformance runner")
    java = _tool("java", "the Java conformance runner")
    source_root = JAVA_DIR / "src" / "main" / "java"
    sources = sorted(source_root.rglob("*.java"))
    _require_generated([source_root / "dev" / "ptn" / "Metadata.java"])
    version = _javac_version(javac)
    key = _files_digest(JAVA_DIR, sources, version, JAVA_RELEASE)[:16]
    build = JAVA_DIR / "build"
    classes = build / f"classes-{key}"
    command = [java, "-Xss8m", "-cp", str(classes), "dev.ptn.ConformanceRunner"]
    if classes.is_dir():
        return command
    with _build_lock("java"):
        if classes.is_dir():
            return command
        build.mkdir(parents=True, exist_ok=True)
        partial = build / f".classes-{key}.{os.getpid()}.tmp"
        shutil.rmtree(partial, ignore_errors=True)
        cmd = [javac, "--release", JAVA_RELEASE, "-Xlint:all", "-Werror", "-encoding", "UTF-8"]
        cmd += ["-d", str(partial), *map(str, sources)]
        try:
            _run_step(cmd, JAVA_DIR, "compiling the Java conformance runner")
        except RuntimeError:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        os.replace(partial, classes)
        for old in build.glob("classes-*"):  # earlier builds of this cache
            if old != classes:
                shutil.rmtree(old, ignore_errors=True)
    return command


# ---------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------


def _run_command(cmd: Sequence[str], files: Sequence[str], what: str) -> str:
    out = []
    for start in range(0, len(files), BATCH):
        batch = list(files[start : start + BATCH])
        proc = subprocess.run([*cmd, *batch], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = proc.stdout[-2000:] + proc.stderr[-4000:]
            raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{tail}")
        out.append(proc.stdout)
    return "".join(out)


def run_report_command(cmd: Sequence[str], files: Sequence[str], what: str) -> str:
    """Package lines from a command that prints `ptn validate --json`'s document.

    ``cmd [--fast] --json FILE...`` runs once per mode and batch; exit 0 and 1 are
    verdicts, anything else (2: a file was not checked, or a usage error) a failure.
    """
    by_mode: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    for mode in MODES:
        flags = ["--json", "--fast"] if mode == "fast" else ["--json"]
        for start in range(0, len(files), BATCH):
            batch = list(files[start : start + BATCH])
            proc = subprocess.run(
                [*cmd, *flags, *batch], capture_output=True, text=True, check=False
            )
            try:
                reported = json.loads(proc.stdout)["files"] if proc.returncode in (0, 1) else None
            except (ValueError, KeyError, TypeError):
                reported = None
            if reported is None or len(reported) != len(batch):
                tail = proc.stdout[-2000:] + proc.stderr[-4000:]
                raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n{tail}")
            by_mode[mode] += reported
    out = []
    for i, path in enumerate(files):
        for mode in MODES:
            doc = by_mode[mode][i]
            found = [(f["rule"], f["severity"], f["member"], f["pointer"]) for f in doc["findings"]]
            out.append(package_line(path, mode, doc["valid"], found))
    return "".join(out)


def run_cpp(files: Sequence[str]) -> str:
    """Metadata documents and packages alike: the runner tells them apart by suffix."""
    return _run_command([str(cpp_runner())], files, "the C++ conformance runner")


def run_typescript(files: Sequence[str]) -> str:
    return _run_command(typescript_runner(), files, "the TypeScript conformance runner")


def typescript_validator() -> list[str]:
    """The Node command ``bin/ptn-validate.mjs`` of the TypeScript binding, built."""
    node = typescript_runner()[0]
    script = TS_DIR / "bin" / "ptn-validate.mjs"
    _require_generated([script])
    return [node, str(script)]


def run_typescript_packages(files: Sequence[str]) -> str:
    return run_report_command(typescript_validator(), files, "the TypeScript package validator")


def run_java(files: Sequence[str]) -> str:
    """Metadata documents and packages alike: the runner tells them apart by suffix."""
    return _run_command(java_runner(), files, "the Java conformance runner")


LANGUAGES: dict[str, Callable[[Sequence[str]], str]] = {
    "python": run_python,
    "cpp": run_cpp,
    "typescript": run_typescript,
    "java": run_java,
}
PACKAGE_LANGUAGES: dict[str, Callable[[Sequence[str]], str]] = {
    "python": run_python_packages,
    "cpp": run_cpp,
    "typescript": run_typescript_packages,
    "java": run_java,
}


def run(lang: str, files: Sequence[str]) -> str:
    """Run ``lang``'s runners over ``files`` (``.ptn``: the package runner), output in
    the order of ``files``; RuntimeError if a toolchain or runner is unusable."""
    packages = [f for f in files if f.endswith(PACKAGE_SUFFIX)]
    documents = [f for f in files if not f.endswith(PACKAGE_SUFFIX)]
    if packages and lang not in PACKAGE_LANGUAGES:
        raise RuntimeError(f"{lang} has no package validator: it checks metadata.json only")
    lines: dict[str, list[str]] = {}
    if documents:
        for line in LANGUAGES[lang](documents).splitlines(keepends=True):
            lines.setdefault(line.split("\t", 1)[0], []).append(line)
    if packages:
        for line in PACKAGE_LANGUAGES[lang](packages).splitlines(keepends=True):
            lines.setdefault(line.split("\t", 1)[0], []).append(line)
    return "".join(line for path in dict.fromkeys(files) for line in lines.get(path, []))
