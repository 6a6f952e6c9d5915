"""The metadata findings of spec.md 9.4 and 9.8 in every binding, message included.

The package vectors hold C++, TypeScript and Java to the findings' rule, severity, member
and pointer (tests/test_package_vectors.py); here each binding must also word them as ptn
does, on the LLM vectors and on one package per wrong fact built from ExecuTorch's LLM
exports (tests/test_llm_agreement.py's cases), fast and deep. The C++ binding is asked
through the compiled-in native validator, whatever ptn.package.native would leave to Python.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from ptn.package import native
from ptn.remote.validate import validate
from ptn.testing import hostile
from tests.conftest import missing_toolchain
from tests.test_llm_agreement import METADATA, REAL, SINGLE_FAULTS
from tools.conformance.runners import JAVA_DIR, JAVA_RELEASE, TS_DIR

REPO = Path(__file__).resolve().parent.parent
VECTORS = REPO / "tests" / "vectors" / "packages"
METADATA_RULES = ("metadata-", "llm-")


def _files(tmp: Path) -> list[Path]:
    files = [
        *sorted(VECTORS.glob("*/llm-*.ptn")),
        VECTORS / "invalid" / "metadata-three-faults.ptn",
    ]
    for case, (name, edit, *_) in sorted(SINGLE_FAULTS.items()):
        metadata = copy.deepcopy(METADATA[name])
        edit(metadata)
        path = tmp / f"{case}.ptn"
        document = json.dumps(metadata).encode()
        path.write_bytes(hostile.with_metadata((REAL / f"{name}.ptn").read_bytes(), document))
        files.append(path)
    return files


def _lines(findings: list[tuple[str, str, str | None, str | None, str]]) -> list[str]:
    """The metadata findings, one line each: rule, severity, pointer, message."""
    return [
        f"{rule}\t{severity}\t{pointer}\t{message}"
        for rule, severity, member, pointer, message in findings
        if member == "metadata.json" and rule.startswith(METADATA_RULES)
    ]


def _python(path: Path, deep: bool) -> list[str]:
    found = validate(path, fast=not deep).findings
    return _lines([(f.rule, f.severity, f.member, f.pointer, f.message) for f in found])


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return _files(tmp_path_factory.mktemp("llm"))


def test_the_files_hold_every_rule(files: list[Path]) -> None:
    rules = {line.split("\t")[0] for path in files for line in _python(path, deep=False)}
    assert {
        "llm-cache-count-mismatch", "llm-cache-geometry-mismatch", "llm-window-exceeds-cache",
        "llm-context-exceeds-program", "llm-seq-len-exceeds-program", "llm-vocab-mismatch",
        "llm-token-id-out-of-range", "llm-rule-unchecked", "llm-wrong-type",
        "llm-cache-geometry-length",
    } <= rules  # fmt: skip


def test_cpp_words_them_as_ptn(files: list[Path]) -> None:
    if native._native is None:
        missing_toolchain(
            "ptn.package._native is not built (pip install -e . with a C++17 compiler)"
        )
    for path in files:
        for deep in (False, True):
            found = native._native.validate(path.read_bytes(), deep)
            assert _lines([f[:5] for f in found]) == _python(path, deep), (path.name, deep)


def test_typescript_words_them_as_ptn(node: str, files: list[Path]) -> None:
    command = TS_DIR / "bin" / "ptn-validate.mjs"
    for deep in (False, True):
        flags = ["--json"] + ([] if deep else ["--fast"])
        proc = subprocess.run(
            [node, str(command), *flags, *map(str, files)], capture_output=True, text=True
        )
        assert proc.stdout, proc.stderr
        by_path = {
            f["path"]: _lines(
                [
                    (x["rule"], x["severity"], x["member"], x["pointer"], x["message"])
                    for x in f["findings"]
                ]
            )
            for f in json.loads(proc.stdout)["files"]
        }
        for path in files:
            assert by_path[str(path)] == _python(path, deep), (path.name, deep)


MESSAGES = r"""
import dev.ptn.Finding;
import dev.ptn.PackageValidator;
import java.nio.file.Paths;

public final class LlmMessages {
  public static void main(String[] args) throws Exception {
    for (String path : args) {
      for (boolean deep : new boolean[] {false, true}) {
        for (Finding f : PackageValidator.validateFile(Paths.get(path), deep).findings()) {
          if (!"metadata.json".equals(f.member())) continue;
          if (!f.rule().startsWith("metadata-") && !f.rule().startsWith("llm-")) continue;
          System.out.println(path + "\t" + deep + "\t" + f.rule() + "\t" + f.severity() + "\t"
              + f.pointer() + "\t" + f.message());
        }
      }
    }
  }
}
"""


def test_java_words_them_as_ptn(jdk: tuple[str, str], files: list[Path], tmp_path: Path) -> None:
    javac, java = jdk
    probe = tmp_path / "LlmMessages.java"
    probe.write_text(MESSAGES, encoding="utf-8")
    classes = tmp_path / "classes"
    sources = sorted((JAVA_DIR / "src" / "main" / "java").rglob("*.java"))
    compiled = subprocess.run(
        [javac, "--release", JAVA_RELEASE, "-d", str(classes), *map(str, sources), str(probe)],
        capture_output=True,
        text=True,
    )
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    proc = subprocess.run(
        [java, "-cp", str(classes), "LlmMessages", *map(str, files)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    want = [
        f"{path}\t{str(deep).lower()}\t{line}"
        for path in files
        for deep in (False, True)
        for line in _python(path, deep)
    ]
    assert proc.stdout.splitlines() == want
