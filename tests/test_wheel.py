"""The wheel alone is enough: built from a fresh clone by the README's route, installed with
its declared dependencies in a new venv outside the repository, and used from a directory
outside it.

Nothing here may import the checkout's ptn: every command runs the venv's own interpreter
or script, from a working directory outside the repository, without PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import ptn

pytestmark = pytest.mark.slow  # builds the wheel in a fresh venv (pip's isolated build, C++)

REPO = Path(__file__).resolve().parent.parent
LLM_FULL = REPO / "tests" / "vectors" / "metadata" / "valid" / "llm_full.json"
STRICT = ("-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wpedantic", "-Wshadow", "-Wconversion")


class Installed:
    """A venv holding only the wheel and what it declares, and a working directory outside."""

    def __init__(self, wheel: Path, venv: Path, work: Path) -> None:
        self.wheel, self.venv, self.work = wheel, venv, work
        self.bin = venv / "bin"
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        self.env.update(VIRTUAL_ENV=str(venv), PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}")

    def run(self, *cmd: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(c) for c in cmd],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )

    def ptn(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return self.run(self.bin / "ptn", *args)

    def python(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return self.run(self.bin / "python", *args)


def _checked(cmd: list[str | Path]) -> None:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout}\n{proc.stderr}"


def readme_wheel_route() -> list[str]:
    """The README's commands for a wheel (its "Without a checkout" block), comments cut."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("**Without a checkout**", 1)[1].split("```sh\n", 1)[1]
    lines = block.split("```", 1)[0].splitlines()
    return [c for c in (line.split("#", 1)[0].strip() for line in lines) if c]


@pytest.fixture(scope="module")
def installed(fresh_clone: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The README's wheel route, as written, with a new venv's own pip: the wheel built in
    a fresh clone (pip's isolated build: setuptools from the index), then installed."""
    build, use, _ = readme_wheel_route()  # the extra: the next test
    assert build == "pip wheel --no-deps -w dist ." and use == "pip install dist/ptn_tools-*.whl"
    tmp = tmp_path_factory.mktemp("wheel")
    venv, work = tmp / "venv", tmp / "work"
    _checked([sys.executable, "-m", "venv", venv])  # with pip, as a user's venv has
    work.mkdir()
    user = Installed(Path(), venv, work)
    for line in (build, use):  # through the shell, as typed (it expands the glob)
        proc = subprocess.run(
            line, shell=True, cwd=fresh_clone, env=user.env, capture_output=True, text=True
        )
        assert proc.returncode == 0, f"{line}\n{proc.stdout}\n{proc.stderr}"
    (wheel,) = (fresh_clone / "dist").glob("*.whl")
    # The native validator (setup.py) makes it a wheel of this interpreter and platform.
    python = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert wheel.name.startswith(f"ptn_tools-{ptn.__version__}-{python}-{python}-"), wheel.name
    return Installed(wheel, venv, work)


def test_the_readme_extra_resolves_to_a_torch_the_tests_run_on(installed: Installed) -> None:
    """The third line of the route, resolved (not installed: torch is large): the extra
    exists, is taken from the installed wheel (ptn-tools is not fetched again), and admits
    the torch of .ci/run (2.13.0); on this machine kind, the CPU build on disk."""
    *_, extra = readme_wheel_route()
    assert extra == "pip install 'ptn-tools[torch]'"
    report = installed.work / "resolved.json"
    proc = subprocess.run(  # as typed, through the shell, plus what keeps it a dry run
        f"{extra} --dry-run --quiet --report {report}",
        shell=True,
        cwd=installed.work,
        env=installed.env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "does not provide the extra" not in proc.stderr, proc.stderr
    names = {i["metadata"]["name"].lower(): i for i in json.loads(report.read_text())["install"]}
    assert "ptn-tools" not in names  # the installed wheel's extra: nothing fetched for it
    torch = names["torch"]["metadata"]["version"]
    assert torch.startswith("2.13."), torch  # the newest the pin admits here
    specs = (
        zipfile.ZipFile(installed.wheel)
        .read(f"ptn_tools-{ptn.__version__}.dist-info/METADATA")
        .decode()
    )
    assert "Provides-Extra: torch" in specs and 'torch<2.14,>=2.3; extra == "torch"' in specs


def test_the_venv_imports_the_wheel_not_the_checkout(installed: Installed) -> None:
    proc = installed.python("-c", "import ptn, ptn_generated; print(ptn.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert Path(proc.stdout.strip()).is_relative_to(installed.venv), proc.stdout


def test_validate_and_python_m_ptn(installed: Installed) -> None:
    good = installed.work / "model.ptn"
    good.write_bytes((REPO / "examples" / "tiny-llm.ptn").read_bytes())
    bad = installed.work / "bad.ptn"
    bad.write_bytes((REPO / "invalid-examples" / "bad-token-id.ptn").read_bytes())
    assert installed.ptn("validate", "model.ptn").returncode == 0
    assert installed.python("-m", "ptn", "validate", "model.ptn").returncode == 0
    proc = installed.python("-m", "ptn", "validate", "bad.ptn")
    assert proc.returncode == 1 and "llm-token-id-out-of-range" in proc.stdout
    report = json.loads(installed.ptn("validate", "--json", "model.ptn").stdout)
    assert report["tool_version"] == ptn.__version__


def test_the_wheel_validates_natively(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert [n for n in names if n.startswith("ptn/package/_native.") and n.endswith(".so")]
    assert "ptn/package/_native.pyi" in names
    code = "from ptn.package import native; print(native.available())"
    assert installed.python("-c", code).stdout.strip() == "True"


def test_without_a_compiler_the_build_goes_on(fresh_clone: Path, tmp_path: Path) -> None:
    """The extension is optional: no C++ compiler, no extension, and ptn validates in Python."""
    source = tmp_path / "src"  # not the module's clone: its build/ holds a compiled extension
    shutil.copytree(fresh_clone, source, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    env = {**os.environ, "CC": "false", "CXX": "false"}
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert not [n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".so")]


def test_the_wheel_has_the_bindings_and_no_dev_tools(installed: Installed) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"ptn", "ptn_generated", f"ptn_tools-{ptn.__version__}.dist-info"}, tops
    assert not [n for n in names if "codegen" in n or "conformance/" in n or "tools/" in n]
    for language in ("cpp", "typescript", "java"):
        shipped = {n.removeprefix(f"ptn/_bindings/{language}/") for n in names}
        assert set(_files(REPO / "generated" / language)) <= {Path(n) for n in shipped}


def test_the_wheel_writes_the_inspector_page(installed: Installed) -> None:
    proc = installed.ptn("inspector", "-o", "page.html")
    assert proc.returncode == 0 and "page.html" in proc.stdout
    page = (installed.work / "page.html").read_bytes()
    assert page == (REPO / "ptn" / "_web" / "ptn-inspector.html").read_bytes()
    assert b"<html" in page and len(page) > 10_000


def test_codegen_says_where_it_went(installed: Installed) -> None:
    proc = installed.ptn("codegen", "--check")
    assert proc.returncode == 2
    assert "python -m tools.codegen" in proc.stderr and "ptn bindings cpp" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_testing_helpers_name_their_extra(installed: Installed) -> None:
    proc = installed.python("-c", "import ptn.testing.strategies")
    assert proc.returncode == 1
    assert "pip install 'ptn-tools[testing]'" in proc.stderr


def _files(root: Path) -> dict[Path, bytes]:
    """Files under root (relative path -> bytes), without the checkout's build products."""
    ignored = {"node_modules", "dist", "build", "target"}
    paths = (p for p in root.rglob("*") if p.is_file())
    rels = {p.relative_to(root): p for p in paths}
    return {rel: p.read_bytes() for rel, p in rels.items() if not ignored & set(rel.parts)}


def _same_files(written: Path, generated: Path) -> None:
    assert _files(written) == _files(generated)


def test_cpp_bindings_compile_and_read(installed: Installed, cxx: list[str]) -> None:
    proc = installed.ptn("bindings", "cpp", "ptn-cpp")
    assert proc.returncode == 0, proc.stderr
    out = installed.work / "ptn-cpp"
    _same_files(out, REPO / "generated" / "cpp")
    exe = installed.work / "read_windows"
    source = REPO / "examples" / "bindings" / "read_windows.cpp"
    _checked([*cxx, *STRICT, "-I", out / "include", source, "-o", exe])
    assert installed.run(exe, LLM_FULL).stdout == "512 0 512 0\n"
    # The whole-package binding too, as a runtime builds it (no exceptions, no RTTI).
    loader = installed.work / "load_package"
    source = REPO / "examples" / "bindings" / "load_package.cpp"
    flags = ("-fno-exceptions", "-fno-rtti")
    _checked([*cxx, *STRICT, *flags, "-I", out / "include", source, "-o", loader])
    printed = installed.run(loader, REPO / "examples" / "tiny-llm.ptn").stdout
    assert printed.startswith("vocab 64 eos 2 3 context 128\n")


def test_typescript_bindings_are_the_package(installed: Installed) -> None:
    proc = installed.python("-m", "ptn", "bindings", "typescript", "ptn-ts")
    assert proc.returncode == 0, proc.stderr
    assert "npm ci && npx tsc" in proc.stdout
    _same_files(installed.work / "ptn-ts", REPO / "generated" / "typescript")
