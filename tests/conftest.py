"""Shared fixtures, and the bookkeeping behind tests/test_spec_rules.py.

Every ``PtnError`` and ``Finding`` created while the suite runs is recorded, so
that the suite can check that each rule id in spec.md is produced by some test.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, is_hypothesis_test, settings

from ptn.core import errors

REPO = Path(__file__).resolve().parent.parent
# Vendored (see tests/jsontestsuite/ORIGIN.md): the suite needs nothing outside the checkout.
JSONTESTSUITE = Path(__file__).resolve().parent / "jsontestsuite" / "test_parsing"
RAISED_RULES: set[str] = set()

settings.register_profile(
    "default", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=100
)
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

_error_init = errors.PtnError.__init__
_finding_init = errors.Finding.__init__


def _recording_error_init(self: errors.PtnError, rule: str, *args: object, **kw: object) -> None:
    RAISED_RULES.add(rule)
    _error_init(self, rule, *args, **kw)  # type: ignore[arg-type]


def _recording_finding_init(self: errors.Finding, rule: str, *args: object, **kw: object) -> None:
    RAISED_RULES.add(rule)
    _finding_init(self, rule, *args, **kw)  # type: ignore[arg-type]


errors.PtnError.__init__ = _recording_error_init  # type: ignore[method-assign]
errors.Finding.__init__ = _recording_finding_init  # type: ignore[method-assign]


WHOLE_SUITE = pytest.StashKey[bool]()
LAST = "test_every_specified_rule_is_raised_by_some_test"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--only-properties",
        action="store_true",
        help="Run only the hypothesis property tests (CI runs them once more under a random "
        "seed: `pytest --only-properties --hypothesis-seed=N` replays a failure).",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the spec-coverage test last, and note whether every test module was selected."""
    if config.getoption("--only-properties"):
        kept = [item for item in items if _is_property(item)]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    items.sort(key=lambda item: item.name == LAST)
    modules = {Path(str(item.fspath)).name for item in items}
    every = {p.name for p in Path(__file__).parent.glob("test_*.py")}
    # Not under -k or -m (the quick check), nor in a pytest-xdist worker, which runs a part.
    whole = not (config.option.keyword or config.option.markexpr or hasattr(config, "workerinput"))
    config.stash[WHOLE_SUITE] = modules == every and whole


def _is_property(item: pytest.Item) -> bool:
    function = getattr(item, "function", None)
    return function is not None and is_hypothesis_test(function)


@pytest.fixture(scope="session")
def raised_rules() -> set[str]:
    return RAISED_RULES


@pytest.fixture(scope="session")
def jsontestsuite() -> Path:
    """JSONTestSuite's test_parsing directory: a failure, never a skip, when missing."""
    if not JSONTESTSUITE.is_dir():
        pytest.fail(f"JSONTestSuite not found at {JSONTESTSUITE}")
    return JSONTESTSUITE


def missing_toolchain(what: str) -> None:
    """Skip locally; fail in CI, where .ci/run installs every toolchain the tests use."""
    message = f"{what}; see docs/bindings.md or run .ci/install-bindings.sh"
    if os.environ.get("CI"):
        pytest.fail(f"toolchain missing in CI: {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def cxx() -> list[str]:
    """The C++ compiler command (with $PTN_CXXFLAGS), once it is known to compile C++17."""
    compiler = shlex.split(os.environ.get("CXX") or "g++")
    if shutil.which(compiler[0]) is None:
        missing_toolchain(f"no C++ compiler `{compiler[0]}`")
    command = [*compiler, *shlex.split(os.environ.get("PTN_CXXFLAGS", ""))]
    probe = subprocess.run(
        [*command, "-std=c++17", "-x", "c++", "-fsyntax-only", "-"],
        input="#include <string_view>\nint main() { return std::string_view().size(); }\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        missing_toolchain(f"`{compiler[0]}` does not compile C++17: {probe.stderr[-500:]}")
    return command


@pytest.fixture(scope="session")
def node() -> str:
    """node, with generated/typescript installed (npm ci) and built (tsc)."""
    from tools.conformance.runners import typescript_runner

    found = shutil.which("node")
    if found is None or shutil.which("npm") is None:
        missing_toolchain("Node.js >= 20 with npm not found")
        raise AssertionError  # unreachable; for type checkers
    version = subprocess.run([found, "--version"], capture_output=True, text=True, check=False)
    if int(version.stdout.strip().lstrip("v").split(".")[0] or 0) < 20:
        missing_toolchain(f"Node.js >= 20 needed, found {version.stdout.strip()}")
    typescript_runner()  # npm ci / tsc when needed; a failure here is a real failure
    return found


@pytest.fixture(scope="session")
def jdk() -> tuple[str, str]:
    """(javac, java) of a JDK, for the Java binding."""
    javac, java = shutil.which("javac"), shutil.which("java")
    if javac is None or java is None:
        missing_toolchain("no JDK (javac and java) found")
        raise AssertionError  # unreachable; for type checkers
    return javac, java


@pytest.fixture(scope="session")
def unzip() -> str:
    """unzip, which the docs use to pipe a member into the examples."""
    found = shutil.which("unzip")
    if found is None:
        missing_toolchain("unzip not found (apt-get install unzip)")
        raise AssertionError  # unreachable; for type checkers
    return found


@pytest.fixture(scope="session")
def chromium() -> str:
    """The system's Chromium ($PTN_CHROMIUM, default /usr/bin/chromium), for the page tests."""
    browser = os.environ.get("PTN_CHROMIUM", "/usr/bin/chromium")
    if not (os.path.isfile(browser) and os.access(browser, os.X_OK)):
        missing_toolchain(f"no Chromium at {browser} (run .ci/install-browser.sh)")
    return browser


@pytest.fixture(scope="session")
def fresh_clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the files a fresh clone has (`git ls-files`), and nothing beside it.

    Tests that build or run commands "as a new user would" work here, never in the checkout.
    """
    if shutil.which("git") is None or not (REPO / ".git").exists():
        missing_toolchain("not a git checkout (or no git): cannot tell which files a clone has")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    root = tmp_path_factory.mktemp("fresh") / "ptn"
    for rel in filter(None, listed.split("\0")):
        source = REPO / rel
        if source.is_file():  # a file deleted in the work tree but not yet in the index
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / rel)
    return root
