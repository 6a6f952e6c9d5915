"""The Java binding: its JUnit tests (Maven), the x-ptn-rules and well-known-name probes on a
regenerated copy, and the generated files. The metadata and package vectors run through it in
tests/test_vectors.py and tests/test_package_vectors.py like every language.

Without a JDK (javac, java) or Maven the tests that need them skip locally; in CI (``CI``
set) a missing toolchain fails them instead (.ci/install-bindings.sh installs both).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import missing_toolchain
from tests.test_ts_package import corpus
from tools.codegen import render_all, stale_files, write_all
from tools.codegen.java_operators import emit_operator_table, encode_table
from tools.conformance.capabilities import OPERATOR_RULES, adjust_line
from tools.conformance.runners import JAVA_DIR, JAVA_RELEASE, run

pytestmark = pytest.mark.slow  # javac, and Maven runs the JUnit tests

REPO = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc.stdout


def test_junit_tests_pass_under_maven(tmp_path: Path) -> None:
    """`mvn test` on a copy of generated/java (offline when the local repository holds the
    pinned plugins and JUnit, as on this project's machines)."""
    mvn = shutil.which("mvn")
    if mvn is None or shutil.which("javac") is None:
        missing_toolchain("Maven (mvn) with a JDK not found")
        raise AssertionError
    project = tmp_path / "java"
    shutil.copytree(JAVA_DIR, project, ignore=shutil.ignore_patterns("build", "target"))
    out = _run([mvn, "-B", "-o", "test"], cwd=project)
    assert "Tests run:" in out and "BUILD SUCCESS" in out
    assert "Tests run: 0," not in out


def test_generated_java_says_do_not_edit() -> None:
    for rel, text in render_all().items():
        if rel.startswith("generated/java/"):
            assert "DO NOT EDIT" in text.splitlines()[0], rel


PROBE = r"""
import dev.ptn.Metadata;
import dev.ptn.PtnException;

public final class Probe {
  public static void main(String[] args) {
    Metadata m = Metadata.parse("{\"get_rope_base\": 10000.0, \"tokenizer.kind\": \"bpe\"}");
    System.out.println(m.ropeBase() + " " + m.tokenizerKind());
    String[] docs = {
      "{\"get_rope_base\": 10000}", "{\"get_rope_base\": 0.5}", "{\"tokenizer.kind\": \"wp\"}",
      "{\"get_max_context_len\": 8, \"get_max_seq_len\": 8}",
      "{\"get_max_context_len\": 8, \"get_max_seq_len\": 7}"
    };
    for (String doc : docs) {
      try {
        Metadata.parse(doc);
        System.out.println("valid");
      } catch (PtnException err) {
        System.out.println(err.rule() + " " + err.pointer());
      }
    }
  }
}
"""
PROBE_OUT = """10000.0 bpe
llm-wrong-type /get_rope_base
llm-value-out-of-range /get_rope_base
llm-value-out-of-range /tokenizer.kind
llm-seq-within-context /get_max_seq_len
valid
"""


def test_schema_edits_reach_java_after_codegen(jdk: tuple[str, str], tmp_path: Path) -> None:
    """The probe: a rule and two names added to the schema only are enforced and read in Java
    once `python -m tools.codegen` has run, with no edit of bindings/java."""
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("node_modules", "build", "dist", "target", "__pycache__")
    shutil.copytree(REPO / "schema", root / "schema")
    shutil.copytree(REPO / "bindings", root / "bindings", ignore=ignore)
    shutil.copytree(REPO / "generated", root / "generated", ignore=ignore)
    shutil.copy(REPO / "spec.md", root / "spec.md")
    path = root / "schema" / "metadata.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["properties"].update(
        {
            "get_rope_base": {"description": "RoPE base.", "type": "number", "minimum": 1},
            "tokenizer.kind": {"description": "Tokenizer.", "type": "string", "enum": ["bpe"]},
        }
    )
    schema["x-ptn-rules"].append(
        {
            "id": "llm-seq-within-context",
            "kind": "less-than",
            "names": ["get_max_seq_len"],
            "bound": "get_max_context_len",
            "why": "A sequence fits the context.",
        }
    )
    path.write_text(json.dumps(schema, indent=2), encoding="utf-8")
    outputs = render_all(root)
    assert "generated/java/src/main/java/dev/ptn/Metadata.java" in stale_files(outputs, root)
    write_all(outputs, root)
    javac, java = jdk
    sources = sorted((root / "generated/java/src/main/java").rglob("*.java"))
    probe = tmp_path / "Probe.java"
    probe.write_text(PROBE, encoding="utf-8")
    classes = tmp_path / "classes"
    _run([javac, "--release", JAVA_RELEASE, "-d", str(classes), *map(str, sources), str(probe)])
    assert _run([java, "-cp", str(classes), "Probe"]) == PROBE_OUT


def test_java_validator_agrees_with_ptn_on_the_differential_corpus(
    jdk: tuple[str, str], tmp_path: Path
) -> None:
    """Every package of tests/test_ts_package.py's corpus (hostile, edited, fuzzed, zip64,
    the examples), fast and deep: the Java findings are ptn.validate's, in order, less those
    of the program stage the binding declares it lacks."""
    files = []
    for name, data in corpus(tmp_path).items():
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        files.append(str(path))
    files += [str(p) for p in sorted((REPO / "examples").glob("*.ptn"))]
    files += [str(p) for p in sorted((REPO / "invalid-examples").glob("*.ptn"))]
    want = [adjust_line("java", line)[0] for line in run("python", files).splitlines()]
    got = run("java", files).splitlines()
    assert len(got) == len(want) == 2 * len(files)
    assert [g for g, w in zip(got, want, strict=True) if g != w] == []


MESSAGES = r"""
import dev.ptn.Finding;
import dev.ptn.PackageValidator;
import java.nio.file.Paths;

public final class Messages {
  public static void main(String[] args) throws Exception {
    for (String path : args) {
      for (boolean deep : new boolean[] {false, true}) {
        for (Finding f : PackageValidator.validateFile(Paths.get(path), deep).findings()) {
          String where = path + "\t" + (deep ? "deep" : "fast") + "\t" + f.rule();
          System.out.println(where + "\t" + f.pointer() + "\t" + f.message());
        }
      }
    }
  }
}
"""
GRAPH_RULES = OPERATOR_RULES | {"ptg-undefined-value"}


def test_java_words_the_graph_rules_as_ptn(jdk: tuple[str, str], tmp_path: Path) -> None:
    """The findings of the graph rules (spec.md 4.4, 4.5) on every package vector and real
    export, fast and deep, message included: the Java binding says what ptn says."""
    from ptn.remote.validate import validate

    files = sorted(REPO.glob("tests/vectors/packages/*/*.ptn"))
    files += sorted((REPO / "tests" / "fixtures" / "real").glob("*.ptn"))
    want = [
        f"{path}\t{mode}\t{f.rule}\t{f.pointer}\t{f.message}"
        for path in files
        for mode in ("fast", "deep")
        for f in validate(path, fast=mode == "fast").findings
        if f.rule in GRAPH_RULES
    ]
    assert {line.split("\t")[2] for line in want} == GRAPH_RULES  # each rule is compared
    javac, java = jdk
    probe = tmp_path / "Messages.java"
    probe.write_text(MESSAGES, encoding="utf-8")
    classes = tmp_path / "classes"
    sources = sorted((JAVA_DIR / "src" / "main" / "java").rglob("*.java"))
    _run([javac, "--release", JAVA_RELEASE, "-d", str(classes), *map(str, sources), str(probe)])
    out = _run([java, "-cp", str(classes), "Messages", *map(str, files)])
    got = [line for line in out.splitlines() if line.split("\t")[2] in GRAPH_RULES]
    assert got == want


TABLE_PROBE = r"""
package dev.ptn;

public final class TableProbe {
  public static void main(String[] args) throws Exception {
    OperatorTable table = OperatorTable.get();
    int overloads = 0;
    for (java.util.Map<String, ?> overload : table.operators.values()) overloads += overload.size();
    OperatorTable.Schema last = table.lookup(args[0]);
    System.out.println(overloads + " " + table.refused.size() + " " + last.params.length);
  }
}
"""


def test_an_operator_table_five_times_larger_still_fits_the_class_file(
    jdk: tuple[str, str], tmp_path: Path
) -> None:
    """The JVM's limits (65,535 bytes per string constant, 64 KiB of bytecode per method)
    hold as the table grows: five copies of every overload render, compile and read back."""
    doc = json.loads((REPO / "schema" / "operators.json").read_text(encoding="utf-8"))
    copies = [
        {**op, "name": f"{op['name']}_copy{k}"} for k in range(1, 5) for op in doc["operators"]
    ]
    doc["operators"] += copies
    text = emit_operator_table(json.dumps(doc))
    assert text.count("private static String part") >= 5  # the bundled table takes 2
    sources = tmp_path / "src"
    shutil.copytree(JAVA_DIR / "src" / "main" / "java", sources)
    (sources / "dev" / "ptn" / "OperatorTableText.java").write_text(text, encoding="utf-8")
    (sources / "dev" / "ptn" / "TableProbe.java").write_text(TABLE_PROBE, encoding="utf-8")
    javac, java = jdk
    classes = tmp_path / "classes"
    _run([javac, "--release", JAVA_RELEASE, "-d", str(classes), *map(str, sources.rglob("*.java"))])
    last = copies[-1]
    target = f"torch.ops.aten.{last['name']}.{last['overload']}"
    out = _run([java, "-cp", str(classes), "dev.ptn.TableProbe", target])
    assert out.split() == [
        str(len(doc["operators"])),
        str(len(doc["refused"])),
        str(len(last["params"])),
    ]


def test_the_operator_table_encoding_refuses_what_it_cannot_carry() -> None:
    """A reason with a tab, or a value with a separator, would change the table's meaning
    once parsed: the generator stops rather than write it."""
    doc = json.loads((REPO / "schema" / "operators.json").read_text(encoding="utf-8"))
    lines = encode_table(json.dumps(doc))
    assert len(lines) == 1 + len(doc["refused"]) + len(doc["operators"])
    broken = json.loads(json.dumps(doc))
    broken["refused"][0]["why"] = "a\tb"
    with pytest.raises(ValueError, match="one line of ASCII"):
        encode_table(json.dumps(broken))
    broken = json.loads(json.dumps(doc))
    param = next(p for op in broken["operators"] for p in op["params"] if "allowed" in p)
    param["allowed"] = ["cpu,cuda"]
    with pytest.raises(ValueError, match="would not survive the encoding"):
        encode_table(json.dumps(broken))


def test_docs_show_the_java_example_and_it_prints_what_they_say(
    jdk: tuple[str, str], tmp_path: Path
) -> None:
    example = REPO / "examples" / "bindings" / "ReadEosWindows.java"
    docs = (REPO / "docs" / "bindings.md").read_text(encoding="utf-8")
    assert f"```java\n{example.read_text(encoding='utf-8')}```" in docs
    assert "metadata?.eosIds()" in docs and "metadata?.windows()" in docs  # the Kotlin one
    javac, java = jdk
    classes = tmp_path / "classes"
    sources = sorted((JAVA_DIR / "src" / "main" / "java").rglob("*.java"))
    _run([javac, "--release", JAVA_RELEASE, "-d", str(classes), *map(str, sources)])
    out = _run([java, "-cp", str(classes), str(example), str(REPO / "examples" / "tiny-llm.ptn")])
    assert out == "eos [2, 3]\nwindows [64, 0]\n"
    assert "eos [2, 3]` and `windows [64, 0]`" in docs


SHA_PROBE = """
import dev.ptn.PackageSource;
import dev.ptn.Packages;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

public class ShaProbe {
  public static void main(String[] args) throws Exception {
    for (String arg : args) {
      try (FileChannel channel = FileChannel.open(Path.of(arg), StandardOpenOption.READ)) {
        String mapped = Packages.sha256(PackageSource.map(channel));
        System.out.println(Packages.sha256(Path.of(arg)) + " " + mapped);
      }
    }
  }
}
"""


def test_packages_sha256_is_the_files(jdk: tuple[str, str], tmp_path: Path) -> None:
    """Packages.sha256, from a path and from a mapped source, is hashlib's SHA-256 of the whole
    file: the examples, an empty file, and one of 3 MiB + 1 byte (over the 1 MiB pieces)."""
    files = sorted((REPO / "examples").glob("*.ptn"))
    files.append(tmp_path / "empty.bin")
    files[-1].write_bytes(b"")
    files.append(tmp_path / "large.bin")
    files[-1].write_bytes(bytes(range(256)) * (3 * 4096) + b"x")
    javac, java = jdk
    classes = tmp_path / "classes"
    probe = tmp_path / "ShaProbe.java"
    probe.write_text(SHA_PROBE, encoding="utf-8")
    sources = sorted((JAVA_DIR / "src" / "main" / "java").rglob("*.java"))
    _run([javac, "--release", JAVA_RELEASE, "-d", str(classes), *map(str, sources), str(probe)])
    out = _run([java, "-cp", str(classes), "ShaProbe", *map(str, files)]).splitlines()
    want = [hashlib.sha256(f.read_bytes()).hexdigest() for f in files]
    assert out == [f"{w} {w}" for w in want]
