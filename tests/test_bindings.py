"""The C++ and TypeScript bindings: examples, warnings-clean headers and a strictly typed
runtime (bindings/ linted as source), typed reads, and accessors that follow the schema.

Without g++ + nlohmann/json or Node.js >= 20 the tests that need them skip locally; in
CI (``CI`` set) a missing toolchain fails them instead.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ptn.core.resources import binding_files
from ptn.program.build import build_program
from ptn.program.layout import parse_layout
from ptn.program.verify import Refusal, Verifier
from tools.codegen import render_all, stale_files, write_all
from tools.conformance.runners import CPP_DIR, TS_DIR

REPO = Path(__file__).resolve().parent.parent
RUNTIME = REPO / "bindings"
EXAMPLES = REPO / "examples" / "bindings"
DOCS = REPO / "docs" / "bindings.md"
STRICT = ("-std=c++17", "-Wall", "-Wextra", "-Werror")
MORE_WARNINGS = ("-Wpedantic", "-Wshadow", "-Wconversion")
NO_EXCEPTIONS = ("-fno-exceptions", "-fno-rtti")


def compile_cpp(
    cxx: list[str],
    source: Path,
    out: Path,
    include: Path = CPP_DIR / "include",
    flags: tuple[str, ...] = NO_EXCEPTIONS,
) -> Path:
    cmd = [*cxx, *STRICT, *MORE_WARNINGS, *flags, "-I", str(include), str(source), "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{shlex.join(cmd)}\n{proc.stderr}"
    return out


def run(cmd: list[str], stdin: bytes | None = None) -> str:
    proc = subprocess.run(cmd, input=stdin, capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


# ---------------------------------------------------------------------------
# The examples of docs/bindings.md
# ---------------------------------------------------------------------------


def test_docs_show_the_example_programs_verbatim() -> None:
    for doc in (DOCS, REPO / "docs" / "cpp-typescript.md"):
        text = doc.read_text(encoding="utf-8")
        for name in ("read_windows.cpp", "read_windows.mjs"):
            assert (EXAMPLES / name).read_text(encoding="utf-8") in text, (doc.name, name)
    loader = (EXAMPLES / "load_package.cpp").read_text(encoding="utf-8")
    assert f"```cpp\n{loader}```" in DOCS.read_text(encoding="utf-8")
    reader = (EXAMPLES / "read_metadata.mjs").read_text(encoding="utf-8")
    assert f"```js\n{reader}```" in DOCS.read_text(encoding="utf-8")


def test_docs_cpp_loader_prints_what_the_docs_show(fresh_clone: Path, cxx: list[str]) -> None:
    """The worked C++ loader of docs/bindings.md: its build (without exceptions or RTTI)
    and run commands, as written, on a fresh clone print exactly the output block after
    them."""
    blocks = re.findall(
        r"^```sh\n([^`]*?)^```\n\n```text\n([^`]*?)^```", DOCS.read_text(encoding="utf-8"), re.M
    )
    found = [block for block in blocks if "load_package" in block[0]]
    assert len(found) == 1, "docs/bindings.md shows the loader's commands, then its output"
    script, shown = found[0]
    assert "-fno-exceptions -fno-rtti" in script
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=fresh_clone,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"{script}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout == shown


def _example_scripts(doc: Path) -> list[str]:
    """The shell blocks of ``doc`` that build or run an example."""
    blocks = re.findall(r"^```sh\n(.*?)^```", doc.read_text(encoding="utf-8"), re.M | re.S)
    return [block for block in blocks if "read_windows" in block or "read_metadata" in block]


def _example_id(script: str) -> str:
    language = "cpp" if "g++" in script else "typescript"
    return language + ("-package" if "read_metadata" in script else "")


def _commands(script: str) -> list[tuple[tuple[str, ...], str | None]]:
    """(words, expected output or None) per command, continuations joined, comments dropped."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        prints = re.search(r"#\s*([\d ]+?)\s*$", line)
        commands.append((tuple(line.split("#")[0].split()), prints and prints[1]))
    return commands


@pytest.mark.parametrize("script", _example_scripts(DOCS), ids=_example_id)
def test_docs_example_commands_work_on_a_fresh_clone(
    script: str, fresh_clone: Path, request: pytest.FixtureRequest
) -> None:
    """Run as written from the root of a fresh clone (no dist/, no node_modules/), each block
    prints, in order, what its all-digit comments say (``# 512 0 512 0``)."""
    for tool, fixture in (("g++ ", "cxx"), ("node ", "node"), ("unzip ", "unzip")):
        if tool in script:
            request.getfixturevalue(fixture)
    expected = re.findall(r"#\s*([\d ]+?)\s*$", script, re.M)
    assert expected, "a block that runs an example says what it prints"
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=fresh_clone,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, f"{script}\n{proc.stdout}\n{proc.stderr}"
    printed = iter(proc.stdout.splitlines())  # npm's own lines may come in between
    missing = [line for line in expected if line not in printed]
    assert missing == [], proc.stdout


def test_docs_package_metadata_example_reads_a_url(node: str) -> None:
    """examples/bindings/read_metadata.mjs given a URL, as its comment shows: the same
    values as from the path, over range requests."""
    from range_server import Store, serve

    store = Store()
    store.files["tiny-llm.ptn"] = (REPO / "examples" / "tiny-llm.ptn").read_bytes()
    with serve(store) as base:
        url = f"{base}/ok/tiny-llm.ptn"
        assert run([node, str(EXAMPLES / "read_metadata.mjs"), url]) == "128 2 3\n"
        ignored = subprocess.run(  # a server that ignores Range: refused, never downloaded
            [node, str(EXAMPLES / "read_metadata.mjs"), f"{base}/norange/tiny-llm.ptn"],
            capture_output=True,
            text=True,
            check=False,
        )
    assert ignored.returncode == 1 and "ptn-io-error" in ignored.stderr


def test_readme_example_commands_are_the_ones_run_above() -> None:
    """docs/cpp-typescript.md repeats commands of docs/bindings.md (run by the test above) in their
    order, with the same output, and keeps every command that prints nothing (the builds)."""
    tested = [c for script in _example_scripts(DOCS) for c in _commands(script)]
    (block,) = _example_scripts(REPO / "docs" / "cpp-typescript.md")
    readme = _commands(block)
    remaining = iter(tested)
    assert all(command in remaining for command in readme), "not in docs/bindings.md's order"
    assert [c for c in tested if c[1] is None and c not in readme] == []


# ---------------------------------------------------------------------------
# The C++ header: warnings-clean, self-contained, typed reads
# ---------------------------------------------------------------------------

CPP_TYPED_READS = r"""
#include <ptn/metadata.hpp>  // first: the public header is self-contained

#include <cstdint>
#include <iostream>
#include <string>

template <class T>
std::string rule_of(const ptn::Result<T>& r) {
  if (r) return "ok";
  const ptn::Error& e = r.error();
  return e.rule() + (e.has_pointer() ? " '" + e.pointer() + "'" : " -");
}

int main() {
  const ptn::Result<ptn::Metadata> parsed = ptn::Metadata::parse(
      R"({"get_vocab_size": 32000, "get_eos_ids": [2, 31999], "x": 1.5, "n": 300,)"
      R"( "e": [], "mix": [1, 2.5], "s": "h\u00e9", "b": [true, false],)"
      R"( "big": 9223372036854775807})");
  const ptn::Metadata& m = parsed.value();
  std::cout << *m.vocab_size() << " " << (m.max_context_len() ? "set" : "absent") << "\n";
  std::cout << m.metadata_int<std::uint16_t>("get_vocab_size").value() << " "
            << m.metadata_int("big").value() << "\n";
  std::cout << rule_of(m.metadata_int<std::int8_t>("n")) << "\n";
  std::cout << rule_of(m.metadata_int("x")) << "\n";
  std::cout << rule_of(m.metadata_bool("nope")) << "\n";
  std::cout << m.metadata_float("n").value() << " " << m.metadata_floats("get_eos_ids")->size()
            << " " << m.metadata_floats("mix")->at(1) << " " << m.metadata_ints("e")->size()
            << m.metadata_strs("e")->size() << "\n";
  std::cout << m.metadata_str("s").value() << " " << m.metadata_bools("b")->size() << " "
            << ptn::kind_name(*m.kind("mix")) << " " << ptn::kind_name(*m.kind("e")) << "\n";
  std::cout << rule_of(ptn::Metadata::parse(R"({"a": 1, "a": 2})")) << "\n";
  std::cout << rule_of(ptn::Metadata::parse("[1]")) << "\n";
  std::cout << rule_of(ptn::Metadata::parse(std::string("{}\0", 3))) << "\n";
  std::cout << rule_of(ptn::Metadata::parse(
                   R"({"get_kv_heads": [8], "get_head_dims": [64], "get_windows": [0, 0]})"))
            << "\n";
  std::cout << m.to_json() << "\n";
  std::cout << m.metadata_int("x").value_or(-1) << " " << parsed.error().rule() << "\n";
}
"""

CPP_TYPED_READS_OUT = """32000 absent
32000 9223372036854775807
metadata-read-out-of-range '/n'
metadata-wrong-kind '/x'
metadata-missing-name '/nope'
300 2 2.5 00
h\u00e9 2 floats list
json-duplicate-name '/a'
metadata-not-object ''
json-trailing-data -
llm-cache-geometry-length '/get_windows'
{"get_vocab_size":32000,"get_eos_ids":[2,31999],"x":1.5,"n":300,"e":[],"mix":[1.0,2.5],\
"s":"h\u00e9","b":[true,false],"big":9223372036854775807}
-1 """

# Reading a Result against its state is a caller's bug: it aborts with the error's text.
CPP_MISUSE_ABORT = "ptn: Result::error() called on a value"

CPP_THROWING = r"""
#include <ptn/metadata.hpp>
#include <ptn/throwing.hpp>

#include <iostream>
#include <stdexcept>
#include <type_traits>

static_assert(std::is_base_of_v<std::runtime_error, ptn::Exception>);

int main() {
  const ptn::Metadata m = ptn::or_throw(ptn::Metadata::parse(R"({"n": 300})"));
  std::cout << ptn::or_throw(m.metadata_int("n")) << "\n";
  try {
    ptn::or_throw(m.metadata_int<std::int8_t>("n"));
  } catch (const ptn::Exception& e) {
    std::cout << e.rule() << " " << e.pointer() << " | " << e.what() << "\n";
  }
  try {
    ptn::or_throw(ptn::Metadata::parse("{"));
  } catch (const std::runtime_error& e) {
    std::cout << e.what() << "\n";
  }
}
"""


@pytest.mark.parametrize("include", [RUNTIME / "cpp" / "include", CPP_DIR / "include"])
def test_every_cpp_header_compiles_alone(cxx: list[str], include: Path) -> None:
    """The runtime as written in bindings/cpp, and the generated binding, header by header.
    The runtime's program stage walks the generated tables of ptn/program_layout.hpp: the
    generated directory comes second, for that header only (the runtime has no copy)."""
    headers = sorted((include / "ptn").glob("*.hpp"))
    assert len(headers) >= 3
    generated = CPP_DIR / "include"
    assert not (RUNTIME / "cpp" / "include" / "ptn" / "program_layout.hpp").exists()
    for header in headers:
        flags = () if header.name == "throwing.hpp" else NO_EXCEPTIONS
        cmd = [*cxx, *STRICT, *MORE_WARNINGS, *flags, "-I", str(include), "-I", str(generated)]
        cmd.append("-xc++")
        cmd.append("-fsyntax-only")
        proc = subprocess.run(
            [*cmd, "-"], input=f"#include <ptn/{header.name}>\n", capture_output=True, text=True
        )
        assert proc.returncode == 0, f"{header}:\n{proc.stderr}"


def test_cpp_header_reads_typed_values(cxx: list[str], tmp_path: Path) -> None:
    """Errors as values, built without exceptions or RTTI; misreading a Result aborts."""
    source = tmp_path / "typed_reads.cpp"
    source.write_text(CPP_TYPED_READS, encoding="utf-8")
    exe = compile_cpp(cxx, source, tmp_path / "typed_reads")
    proc = subprocess.run([str(exe)], capture_output=True, text=True, check=False)
    assert proc.stdout == CPP_TYPED_READS_OUT
    assert proc.returncode != 0 and CPP_MISUSE_ABORT in proc.stderr


def test_cpp_throwing_layer(cxx: list[str], tmp_path: Path) -> None:
    """ptn/throwing.hpp, for applications built with exceptions: ptn::Exception per Error."""
    source = tmp_path / "throwing.cpp"
    source.write_text(CPP_THROWING, encoding="utf-8")
    out = run([str(compile_cpp(cxx, source, tmp_path / "throwing", flags=()))]).splitlines()
    assert out[0] == "300"
    assert out[1].startswith("metadata-read-out-of-range /n | metadata-read-out-of-range ")
    assert out[2].startswith("json-syntax metadata.json: ")
    syntax_only = ["-std=c++17", "-fno-exceptions", "-x", "c++", "-fsyntax-only"]
    proc = subprocess.run(
        [*cxx, *syntax_only, "-I", str(CPP_DIR / "include"), "-"],
        input="#include <ptn/throwing.hpp>\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "build with exceptions" in proc.stderr


# ---------------------------------------------------------------------------
# TypeScript: typed reads, string input
# ---------------------------------------------------------------------------

TS_TYPED_READS = r"""
import { Metadata, PtnError } from "%(index)s";

const ruleOf = (f) => {
  try {
    f();
    return "ok";
  } catch (e) {
    if (!(e instanceof PtnError)) throw e;
    return `${e.rule} ${JSON.stringify(e.pointer)}`;
  }
};
const m = Metadata.parse(
  '{"get_vocab_size": 32000, "get_eos_ids": [2, 31999], "x": 1.5, "n": 300, "e": [],' +
    ' "mix": [1, 2.5], "big": 9223372036854775807}',
);
const out = [
  `${m.vocabSize()} ${m.maxContextLen()} ${m.metadataInt("big")} ${m.eosIds().join(",")}`,
  ruleOf(() => m.metadataInt("n", { maximum: 255n })),
  ruleOf(() => m.metadataInt("x")),
  ruleOf(() => m.metadataBool("nope")),
  `${m.metadataFloat("n")} ${m.metadataFloats("mix").join(",")} ${m.metadataInts("e").length}`,
  `${m.kind("mix")} ${m.kind("e")} ${Object.keys(m.wellKnown()).join(",")}`,
  ruleOf(() => Metadata.parse("\uFEFF{}")),
  ruleOf(() => Metadata.parse('{"a": "\uD800"}')),
  ruleOf(() => Metadata.parse('{"a": "\\ud800"}')),
  ruleOf(() => Metadata.parse(new TextEncoder().encode('{"a": 1, "a": 2}'))),
  ruleOf(() => Metadata.parse('{"a": "\u{1F600}", "b": "\\ud83d\\ude00"}')),
  ruleOf(() => Metadata.parse(new Uint8Array([0x7b, 0x7d, 0x00]))),
];
console.log(out.join("\n"));
"""

TS_TYPED_READS_OUT = """32000 undefined 9223372036854775807 2,31999
metadata-read-out-of-range "/n"
metadata-wrong-kind "/x"
metadata-missing-name "/nope"
300 1,2.5 0
floats list get_vocab_size,get_eos_ids
json-bom null
json-invalid-utf8 null
json-lone-surrogate "/a"
json-duplicate-name "/a"
ok
json-trailing-data null
"""


def test_typescript_runtime_type_checks_as_source(node: str) -> None:
    """bindings/typescript on its own, under its strict tsconfig (tsc --noEmit)."""
    tsc = TS_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    project = RUNTIME / "typescript"
    assert (project / "tsconfig.json").is_file() and list((project / "src").glob("*.ts"))
    run([node, str(tsc), "--noEmit", "-p", str(project)])


# A table of object-literal keys (``const T: Record<string, X> = {...}``, or an untyped
# ``= {`` literal indexed by a string): looked up with a name from a file, it answers
# "__proto__", "constructor", "toString"... with what every object inherits.
_PLAIN_TABLE = re.compile(r"const \w+: (?:Readonly<)?Record<string,[^=]*= \{")


def test_typescript_tables_looked_up_by_name_are_maps() -> None:
    sources = [*(RUNTIME / "typescript" / "src").glob("*.ts"), *(REPO / "web" / "src").glob("*.ts")]
    offenders = [
        f"{path.name}: {match.group(0)}"
        for path in sources
        for match in _PLAIN_TABLE.finditer(path.read_text(encoding="utf-8"))
    ]
    assert sources and not offenders, offenders


def test_typescript_reads_typed_values(node: str, tmp_path: Path) -> None:
    script = tmp_path / "typed_reads.mjs"
    index = (TS_DIR / "dist" / "index.js").as_uri()
    script.write_text(TS_TYPED_READS % {"index": index}, encoding="utf-8")
    assert run([node, str(script)]) == TS_TYPED_READS_OUT


# ---------------------------------------------------------------------------
# TypeScript: the built package in a consumer's project (issue 42)
# ---------------------------------------------------------------------------

# A consumer's program: typed uses of the public API, so that its .d.ts files must say what
# the code does (an exhaustive switch over Severity fails to compile if a level is missing).
TS_CONSUMER = r"""
import {
  bytesSource,
  inspectPackage,
  Metadata,
  PackageMetadata,
  PtnError,
  readMetadata,
  readPackageMetadata,
  RULE_SEVERITY,
  urlSource,
  validatePackage,
  type ByteSource,
  type FileReport,
  type Finding,
  type IntRange,
  type PackageInput,
  type Severity,
} from "@ptn/metadata";
import { nodeCrc32, nodeFileSource, type NodeFileSource } from "@ptn/metadata/node";

// The two Node globals this program uses (a consumer without @types/node declares them).
declare const process: { argv: string[]; stdout: { write(text: string): boolean } };

function letter(severity: Severity): string {
  switch (severity) {
    case "error":
      return "E";
    case "warning":
      return "W";
    case "advice":
      return "A";
  }
}

async function ruleOf(read: () => unknown): Promise<string> {
  try {
    await read();
    return "ok";
  } catch (err) {
    if (!(err instanceof PtnError)) throw err;
    return `${err.rule} ${err.member} ${err.pointer}`;
  }
}

const [path, url, bare, exported] = process.argv.slice(2) as [string, string, string, string];
const out: string[] = [];
const file: NodeFileSource = nodeFileSource(path);
let whole: Uint8Array;
try {
  const pkg: PackageMetadata<Metadata> = await readPackageMetadata(file);
  const range: IntRange = { minimum: 1n };
  const context: bigint = pkg.metadataInt("get_max_context_len", range);
  const windows: bigint[] | undefined = pkg.metadata?.windows();
  out.push(`path ${context} ${windows?.join(",")} ${pkg.metadataFloat("get_max_seq_len")}`);
  const report: FileReport = await validatePackage(file, { deep: true, crc32: nodeCrc32 });
  out.push(`valid ${report.valid} ${report.findings.length}`);
  whole = await file.read(0, await file.size());
} finally {
  await file.close();
}
const input: PackageInput = whole;
const fromBytes = await readPackageMetadata(input);
const eos = fromBytes.metadataInts("get_eos_ids");
out.push(`bytes ${eos.join(",")} ${fromBytes.metadataBool("use_kv_cache")}`);
const remote: ByteSource = urlSource(url);
const metadata: Metadata | null = await readMetadata(remote);
out.push(`url ${metadata?.metadataStr("general.name")}`);
const none = await readPackageMetadata(nodeFileSource(bare));
out.push(`bare ${none.metadata} ${await ruleOf(() => none.metadataInt("get_vocab_size"))}`);
out.push(`kind ${await ruleOf(() => fromBytes.metadataInt("general.name"))}`);
out.push(`range ${await ruleOf(() => fromBytes.metadataInt("get_max_seq_len", { maximum: 8n }))}`);
out.push(`zip ${await ruleOf(() => readMetadata(bytesSource(new Uint8Array(30))))}`);
const { report, info } = await inspectPackage(nodeFileSource(exported));
const levels = report.findings.map((f: Finding) => letter(f.severity));
out.push(`exported ${report.valid} ${levels.join("")} ${info.findings.length}`);
out.push(`heading ${RULE_SEVERITY["zip-unaligned-member"]} ${RULE_SEVERITY["st-complex64"]}`);
process.stdout.write(out.join("\n") + "\n");
"""

# The compiler options a consumer might use, all with skipLibCheck false (tsc's default):
# Node's own module resolution, and a bundler's without the DOM library.
TS_CONSUMER_CONFIGS = {
    "nodenext": {"module": "NodeNext", "moduleResolution": "NodeNext"},
    "bundler": {"module": "ESNext", "moduleResolution": "Bundler", "lib": ["ES2022"]},
}


def _consumer_project(root: Path, options: dict[str, Any]) -> Path:
    """A project that installed the built package as npm would (package.json, dist/, bin/)."""
    installed = root / "node_modules" / "@ptn" / "metadata"
    installed.mkdir(parents=True)
    shutil.copy(TS_DIR / "package.json", installed / "package.json")
    for part in json.loads((TS_DIR / "package.json").read_text(encoding="utf-8"))["files"]:
        shutil.copytree(TS_DIR / part, installed / part)
    (root / "package.json").write_text('{"private": true, "type": "module"}\n', encoding="utf-8")
    (root / "main.ts").write_text(TS_CONSUMER, encoding="utf-8")
    compiler = {
        "target": "ES2022",
        "strict": True,
        "skipLibCheck": False,
        "exactOptionalPropertyTypes": True,
        "noUncheckedIndexedAccess": True,
        "noImplicitReturns": True,
        "types": [],
        "outDir": "out",
        **options,
    }
    config = {"compilerOptions": compiler, "files": ["main.ts"]}
    (root / "tsconfig.json").write_text(json.dumps(config), encoding="utf-8")
    return root


@pytest.mark.parametrize("config", sorted(TS_CONSUMER_CONFIGS))
def test_typescript_package_type_checks_in_a_consumer_project(
    node: str, tmp_path: Path, config: str
) -> None:
    """The .d.ts files of the built package compile in a strict consumer project with
    skipLibCheck false (once: dist/metadata_core.d.ts imported types that stripInternal had
    removed from dist/strict_json.d.ts), and the program runs: package-level typed reads
    from a path, bytes and a URL, and advice as a Severity of its own."""
    import numpy as np
    from range_server import Store, serve

    import ptn
    from ptn.testing import program_for
    from ptn.testing.hostile import PROGRAM

    root = _consumer_project(tmp_path / "consumer", TS_CONSUMER_CONFIGS[config])
    tsc = TS_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    proc = subprocess.run(
        [node, str(tsc), "-p", str(root)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    bare = tmp_path / "bare.ptn"
    ptn.save(bare, PROGRAM)  # no metadata.json
    large = tmp_path / "large.ptn"  # 4 MiB of constants, of which the URL read sends none
    constants = {"w": np.zeros(1 << 20, np.float32)}
    ptn.save(large, program_for(constants), constants, {"general.name": "large"})
    store = Store()
    store.files["large.ptn"] = large.read_bytes()
    tiny = REPO / "examples" / "tiny-llm.ptn"
    exported = REPO / "tests" / "fixtures" / "real" / "mixed_dtype.ptn"
    with serve(store) as base:
        args = [str(tiny), f"{base}/ok/large.ptn", str(bare), str(exported)]
        ran = run([node, str(root / "out" / "main.js"), *args])
    assert store.sent < 16 << 10  # the directory and metadata.json
    assert ran.splitlines() == [
        "path 128 64,0 32",
        "valid true 0",
        "bytes 2,3 true",
        "url large",
        "bare null metadata-missing-name metadata.json /get_vocab_size",
        "kind metadata-wrong-kind metadata.json /general.name",
        "range metadata-read-out-of-range metadata.json /get_max_seq_len",
        "zip zip-not-a-zip null null",
        "exported true AAAA 4",
        "heading advice warning",
    ]


# ---------------------------------------------------------------------------
# Generated from the schema
# ---------------------------------------------------------------------------


def _ptn(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "ptn", *map(str, args)]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)


def _tree(root: Path) -> dict[str, bytes]:
    """Files under root (relative path -> bytes), without build products and tool caches."""
    skip = {"node_modules", "dist", "build", "target", "__pycache__"}
    paths = (p for p in root.rglob("*") if p.is_file() and not skip & set(p.parts))
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in paths}


@pytest.mark.parametrize("language", ["cpp", "typescript", "java"])
def test_bindings_command_writes_generated_files_and_keeps_yours(
    language: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    mine = out / "mine.txt"
    out.mkdir()
    mine.write_text("not ptn's")
    proc = _ptn("bindings", language, "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = _tree(REPO / "generated" / language)
    assert _tree(out) == {**expected, "mine.txt": b"not ptn's"}
    first = out / sorted(expected)[0]
    first.write_text("edited")
    proc = _ptn("bindings", language, "out", cwd=tmp_path)  # differs: refused, nothing written
    assert proc.returncode == 2 and "--force" in proc.stderr
    assert first.read_text() == "edited"
    assert _ptn("bindings", language, "out", "--force", cwd=tmp_path).returncode == 0
    assert _tree(out) == {**expected, "mine.txt": b"not ptn's"}


def test_binding_files_names_a_wrong_language() -> None:
    with pytest.raises(ValueError, match="language must be one of"):
        binding_files("rust")


def test_binding_files_say_do_not_edit() -> None:
    for rel, text in render_all().items():
        if not rel.startswith(("generated/cpp/", "generated/typescript/")):
            continue
        if rel.endswith("package-lock.json"):  # npm's JSON: no comments possible
            continue
        lines = text.splitlines()
        if lines[0].startswith("#!"):  # a command's "#!" line must stay first (npx)
            lines = lines[1:]
        first = lines[0] if not rel.endswith("package.json") else text
        assert "DO NOT EDIT" in first, rel


def test_lock_file_matches_package_json() -> None:
    source = RUNTIME / "typescript"
    package = json.loads((source / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((source / "package-lock.json").read_text(encoding="utf-8"))
    root = lock["packages"][""]
    assert (lock["name"], lock["version"]) == (package["name"], package["version"])
    assert root.get("dependencies") == package.get("dependencies")
    assert root.get("devDependencies") == package.get("devDependencies")
    for name, version in package["devDependencies"].items():
        assert lock["packages"][f"node_modules/{name}"]["version"] == version


NEW_NAMES = {
    "get_rope_base": {"description": "RoPE base frequency.", "type": "number", "minimum": 1},
    "tokenizer.kind": {"description": "Tokenizer family.", "type": "string", "enum": ["bpe"]},
}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository whose schema gained two well-known names, regenerated."""
    root = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("node_modules", "build", "dist", "__pycache__")
    shutil.copytree(REPO / "schema", root / "schema")
    shutil.copytree(RUNTIME, root / "bindings", ignore=ignore)
    shutil.copytree(REPO / "generated", root / "generated", ignore=ignore)
    shutil.copy(REPO / "spec.md", root / "spec.md")
    path = root / "schema" / "metadata.schema.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    schema["properties"].update(NEW_NAMES)
    path.write_text(json.dumps(schema, indent=2), encoding="utf-8")
    outputs = render_all(root)
    stale = stale_files(outputs, root)
    assert "generated/cpp/include/ptn/metadata.hpp" in stale
    assert "generated/typescript/src/metadata.ts" in stale
    write_all(outputs, root)
    assert stale_files(render_all(root), root) == []
    return root


def test_new_well_known_names_get_accessors(regenerated: Path) -> None:
    header = (regenerated / "generated/cpp/include/ptn/metadata.hpp").read_text()
    assert "std::optional<double> rope_base() const" in header
    assert 'optional_float("get_rope_base")' in header
    assert "std::optional<std::string> tokenizer_kind() const" in header
    module = (regenerated / "generated/typescript/src/metadata.ts").read_text()
    assert "ropeBase(): number | undefined" in module
    assert "tokenizerKind(): string | undefined" in module
    assert 'readonly "tokenizer.kind"?: string;' in module


CPP_NEW_NAMES = r"""
#include <ptn/metadata.hpp>

#include <iostream>

int main() {
  const auto m = ptn::Metadata::parse(R"({"get_rope_base": 10000.0, "tokenizer.kind": "bpe"})");
  std::cout << *m->rope_base() << " " << *m->tokenizer_kind() << "\n";
  for (const char* text : {R"({"get_rope_base": 10000})", R"({"get_rope_base": 0.5})",
                           R"({"tokenizer.kind": "wordpiece"})"}) {
    const auto parsed = ptn::Metadata::parse(text);
    if (parsed) {
      std::cout << "valid\n";
    } else {
      std::cout << parsed.error().rule() << " " << parsed.error().pointer() << "\n";
    }
  }
}
"""

NEW_NAMES_OUT = """10000 bpe
llm-wrong-type /get_rope_base
llm-value-out-of-range /get_rope_base
llm-value-out-of-range /tokenizer.kind
"""


def test_new_well_known_names_work_in_cpp(
    regenerated: Path, cxx: list[str], tmp_path: Path
) -> None:
    source = tmp_path / "new_names.cpp"
    source.write_text(CPP_NEW_NAMES, encoding="utf-8")
    include = regenerated / "generated" / "cpp" / "include"
    exe = compile_cpp(cxx, source, tmp_path / "new_names", include=include)
    assert run([str(exe)]) == NEW_NAMES_OUT


TS_NEW_NAMES = r"""
import { Metadata, PtnError } from "%(index)s";

const m = Metadata.parse('{"get_rope_base": 10000.0, "tokenizer.kind": "bpe"}');
const out = [`${m.ropeBase()} ${m.tokenizerKind()}`];
for (const text of ['{"get_rope_base": 10000}', '{"get_rope_base": 0.5}',
                    '{"tokenizer.kind": "wordpiece"}']) {
  try {
    Metadata.parse(text);
    out.push("valid");
  } catch (e) {
    if (!(e instanceof PtnError)) throw e;
    out.push(`${e.rule} ${e.pointer}`);
  }
}
console.log(out.join("\n"));
"""


def test_new_well_known_names_work_in_typescript(
    regenerated: Path, node: str, tmp_path: Path
) -> None:
    package = regenerated / "generated" / "typescript"
    modules = package / "node_modules"
    if not modules.exists():
        modules.symlink_to(TS_DIR / "node_modules", target_is_directory=True)
    tsc = TS_DIR / "node_modules" / "typescript" / "bin" / "tsc"
    run([node, str(tsc), "-p", str(package)])
    script = tmp_path / "new_names.mjs"
    script.write_text(TS_NEW_NAMES % {"index": (package / "dist/index.js").as_uri()})
    assert run([node, str(script)]) == NEW_NAMES_OUT


PROGRAM_LAYOUT_CHECK = r"""
#include <ptn/mapped_file.hpp>
#include <ptn/program_read.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const auto file = ptn::MappedFile::open(argv[1]);
  if (!file) return 2;
  const ptn::program::ProgramRead read = ptn::program::read_program(file->bytes());
  for (const ptn::Finding& f : read.findings) {
    std::printf("%s %s %s\n", f.rule.c_str(), f.pointer ? f.pointer->c_str() : "-",
                f.message.c_str());
  }
  std::printf("%s\n", read.program ? "read" : "not read");
}
"""


def _layout_root(tmp_path: Path, name: str) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / name
    shutil.copytree(REPO / "schema", root / "schema")
    shutil.copytree(RUNTIME, root / "bindings", ignore=shutil.ignore_patterns("node_modules"))
    shutil.copy(REPO / "spec.md", root / "spec.md")
    return root, json.loads((root / "schema" / "program.layout.json").read_text(encoding="utf-8"))


def _program_check(cxx: list[str], root: Path, doc: dict[str, Any]) -> Path:
    """The generated headers of ``root`` with ``doc`` as its program layout, and the check
    program above compiled against them."""
    (root / "schema" / "program.layout.json").write_text(json.dumps(doc), encoding="utf-8")
    write_all(render_all(root), root)
    source = root / "check.cpp"
    source.write_text(PROGRAM_LAYOUT_CHECK, encoding="utf-8")
    return compile_cpp(cxx, source, root / "check", include=root / "generated/cpp/include")


def test_program_layout_drives_the_cpp_verifier(cxx: list[str], tmp_path: Path) -> None:
    """schema/program.layout.json is rendered into generated/cpp/include/ptn/program_layout.hpp,
    constant tables the C++ verifier walks: a field the description adds is verified as
    Python verifies it with the same description, with no C++ edited."""
    root, doc = _layout_root(tmp_path, "repo")
    committed = (REPO / "generated/cpp/include/ptn/program_layout.hpp").read_text()
    assert render_all(root)["generated/cpp/include/ptn/program_layout.hpp"] == committed
    # Method gains a required string: a program without it is refused, where it was read.
    program = build_program({"version": "1", "methods": [{"name": "f", "graph": {"nodes": []}}]})
    (tmp_path / "program.ptg").write_bytes(program)
    before = _program_check(cxx, root, doc)
    assert run([str(before), str(tmp_path / "program.ptg")]) == "read\n"
    doc["tables"]["Method"]["fields"].append(
        {"name": "note", "slot": 5, "type": "string", "required": True}
    )
    after = _program_check(cxx, root, doc)
    with pytest.raises(Refusal) as refused:
        Verifier(program, parse_layout(doc)).root()
    python = f"{refused.value.rule} {refused.value.pointer} {refused.value.message}"
    assert python == "ptg-missing-field /methods/0 Method.note is required but absent"
    assert run([str(after), str(tmp_path / "program.ptg")]) == f"{python}\nnot read\n"


def test_program_layout_losing_a_field_the_cpp_rules_read_stops_the_build(
    cxx: list[str], tmp_path: Path
) -> None:
    """The C++ rules find the fields they read by name at compile time: a description
    without Method.name does not compile, rather than reading another slot."""
    root, doc = _layout_root(tmp_path, "repo")
    doc["tables"]["Method"]["fields"][0]["name"] = "title"
    with pytest.raises(AssertionError, match="name_not_in_program_layout"):
        _program_check(cxx, root, doc)


def test_node_command_runs_through_npx() -> None:
    """npm links package.json's "bin" as a command: its first line must say to run node."""
    for root in ("bindings", "generated"):
        command = REPO / root / "typescript" / "bin" / "ptn-validate.mjs"
        assert command.read_text(encoding="utf-8").startswith("#!/usr/bin/env node\n")
