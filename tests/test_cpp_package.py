"""The C++ package validator and reader agree with the Python reference, file by file.

Built as a runtime builds it (``-fno-exceptions -fno-rtti``) and run under AddressSanitizer
and UndefinedBehaviorSanitizer (any report aborts the process, which fails the test):

- the conformance runner (``ptn::validate``, fast and deep) reports the same findings as
  ``ptn.validate`` (rule, severity, member, pointer, in order) on the corpus that
  tests/test_ts_package.py holds against Node (examples, hostile files, targeted edits,
  random edits), plus the real ExecuTorch exports, a 20,000-tensor header, 300 random
  edits of the fuzzing seeds, 400 byte edits of the programs of the real exports and 400
  edits of their graphs (tests/program_edits.py: the operator rules); only the gaps C++
  declares (tools/conformance/capabilities.py) would be left out, and printed;
- ``ptn::Package`` (strict and lenient) opens what ``ptn.load`` opens and reads the same
  findings (the program's with their messages), keys, tensor views (owner, dtype, shape,
  bytes), program size, methods, metadata, unreadable parts and the package's SHA-256
  (bindings/cpp/tests/read_package.cpp);
- bindings/cpp/tests/unit_test.cpp: nesting (JSON, programs) on a 64 KiB thread stack,
  ptg-undefined-value, ptg-redefined-value and the operator rules by pointer and message
  (subgraphs on that stack too), the generated operator table's order and lookups, CRC-32
  and SHA-256 values, packed sizes past 64 bits, a caller's buffer, methods, I/O errors;
- the CMake package: ``find_package(ptn)`` after an install, and ``add_subdirectory``.

Without g++ (or cmake, for the last test) the tests skip locally; in CI they fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path
from typing import Any

import pytest
from conftest import missing_toolchain
from graphs import call, constant, integer, meta, method, program, tensor
from program_edits import program_edits
from test_ts_package import corpus, mutants

from ptn.core.errors import Finding, PtnError
from ptn.package.read import Package, load
from ptn.program.model import TensorMeta
from ptn.program.read import read_program
from ptn.testing import fuzz, hostile
from tools.conformance.capabilities import adjust_line, describe, uncovered
from tools.conformance.runners import CPP_DIR, run_python_packages

pytestmark = pytest.mark.slow  # compiles the C++ validator, and CMake builds

REPO = Path(__file__).resolve().parent.parent
SOURCES = REPO / "bindings" / "cpp"
FLAGS = ("-std=c++17", "-Wall", "-Wextra", "-Werror", "-fno-exceptions", "-fno-rtti")
SANITIZE = ("-O1", "-g1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined")
SANITIZE += ("-fno-sanitize-recover=all",)
PROGRAMS = {
    "conformance_runner": CPP_DIR / "conformance_runner.cpp",
    "read_package": SOURCES / "tests" / "read_package.cpp",
    "unit_test": SOURCES / "tests" / "unit_test.cpp",
}


@pytest.fixture(scope="module")
def built(cxx: list[str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three programs, compiled in parallel with the sanitizers."""
    out = tmp_path_factory.mktemp("cpp")
    procs = {}
    for name, source in PROGRAMS.items():
        cmd = [*cxx, *FLAGS, *SANITIZE, "-I", str(CPP_DIR / "include"), str(source)]
        procs[name] = subprocess.Popen(
            [*cmd, "-o", str(out / name), "-lpthread"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    for name, proc in procs.items():
        log, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{name}:\n{log}"
    return {name: out / name for name in PROGRAMS}


def run(cmd: list[str]) -> str:
    env = {**os.environ, "ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1"}
    proc = subprocess.run(cmd, capture_output=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-6000:]
    # Keys may hold lone surrogates (generalised UTF-8), as Python's str does.
    return proc.stdout.decode("utf-8", "surrogatepass")


def many_tensors(n: int) -> bytes:
    """A package of ``n`` one-byte tensors and ``n // 10`` aliases."""
    header = {f"t.{i}": {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]} for i in range(n)}
    aliases = {f"a.{i}": f"t.{i}" for i in range(0, n, 10)}
    return hostile.package({
        "program.safetensors": hostile.safetensors(header, bytes(i % 251 for i in range(n))),
        "aliases.json": json.dumps(aliases).encode(),
    })  # fmt: skip


# Values worth writing over an offset or a length of a program.
_WORDS = (0, 1, 2, 3, 4, 8, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0xFFFFFFFC)


def program_mutants(n: int, seed: int) -> dict[str, bytes]:
    """``n`` packages of the real exports and the valid vectors, their program.ptg edited
    one to three times (a byte, a bit, an aligned offset or vtable entry set to a value at
    an edge) and everything else kept: what reaches the program verifier and the rules of
    the constants, past the container (whose CRC-32s are those of the edited bytes)."""
    bases = []
    for path in sorted(REPO.glob("tests/fixtures/real/*.ptn")) + sorted(
        REPO.glob("tests/vectors/packages/valid/*.ptn")
    ):
        with zipfile.ZipFile(path) as z:
            bases.append({i.filename: z.read(i) for i in z.infolist()})
    rng = random.Random(seed)
    out = {}
    for i in range(n):
        members = dict(rng.choice(bases))
        p = bytearray(members.pop("program.ptg"))
        for _ in range(rng.randint(1, 3)):
            kind, at = rng.random(), rng.randrange(len(p))
            if kind < 0.4:
                p[at] = rng.randrange(256)
            elif kind < 0.7 and (at & ~3) + 4 <= len(p):
                word = rng.choice((*_WORDS, len(p), len(p) - at, rng.randrange(len(p))))
                p[at & ~3 : (at & ~3) + 4] = struct.pack("<I", word & 0xFFFFFFFF)
            elif kind < 0.9 and (at & ~1) + 2 <= len(p):
                half = rng.choice((0, 2, 3, 4, 6, 0xFFFF, rng.randrange(64)))
                p[at & ~1 : (at & ~1) + 2] = struct.pack("<H", half)
            else:
                p[at] ^= 1 << rng.randrange(8)
        out[f"program-mutant-{i}"] = hostile.package(members, bytes(p))
    return out


@pytest.fixture(scope="module")
def packages(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    tmp = tmp_path_factory.mktemp("packages")
    files = dict(corpus(tmp))
    files["many-tensors"] = many_tensors(20_000)
    files.update({f"seed-{k}": v for k, v in fuzz.corpus().items()})
    edited = mutants(list(fuzz.corpus().values()), 300, seed=28)
    files.update({f"fuzz-{k}": v for k, v in edited.items()})
    files.update(program_mutants(400, seed=28))
    files.update(program_edits(400, seed=28))
    paths = []
    for name, data in files.items():
        path = tmp / f"{name}.ptn"
        path.write_bytes(data)
        paths.append(str(path))
    for pattern in ("examples/*.ptn", "invalid-examples/*.ptn", "tests/fixtures/*/*.ptn"):
        paths += [str(p) for p in sorted(REPO.glob(pattern))]
    return paths


def test_validator_agrees_with_python(built: dict[str, Path], packages: list[str]) -> None:
    got = run([str(built["conformance_runner"]), *packages]).splitlines()
    want = run_python_packages(packages).splitlines()
    assert len(got) == len(want) == 2 * len(packages)
    left_out: dict[str, int] = {}
    wrong = []
    for line, expected in zip(got, want, strict=True):
        adjusted, left = adjust_line("cpp", expected)
        for rule in left:
            left_out[rule] = left_out.get(rule, 0) + 1
        if line != adjusted:
            wrong.append(f"python: {adjusted}\n   c++: {line}")
    print(describe("cpp", left_out))
    assert wrong == [], "\n".join(wrong[:10])


def _spec(meta: TensorMeta) -> list[Any]:
    sizes = [[d.min, d.max] for d in meta.sizes]
    return [meta.dtype, meta.dtype_name, sizes, list(meta.dim_order), meta.quant is not None]


def _methods_view(pkg: Package) -> list[Any]:
    """What ptn::Package::methods() gives, from the program ptn.load's package holds: per
    method its name, inputs and outputs (with the graph's tensor value of that name),
    constants and mutable buffers; or the rule why the tables were not read."""
    try:
        program, found = read_program(pkg.program)
    except PtnError as err:
        return [err.rule]
    if program is None:
        not_read = ("ptg-unknown-version", "ptg-too-large")
        return [next(f.rule for f in found if f.severity == "error" or f.rule in not_read)]
    out = []
    for m in program.methods:
        values = m.graph.tensor_values

        def named(name: str, values: dict[str, TensorMeta] = values) -> list[Any]:
            return [name, _spec(values[name]) if name in values else None]

        out.append([
            m.name,
            [named(n) for n in m.graph.inputs],
            [named(n) for n in m.graph.outputs],
            [[c.name, c.data_key, _spec(c.meta), c.kind, c.mutated] for c in m.constants],
            [[b.name, b.fqn, named(b.name)[1]] for b in m.mutable_buffers],
        ])  # fmt: skip
    return out


def _worded(findings: list[list[Any]]) -> list[list[Any]]:
    """Findings with the message kept only where C++ words it as Python does: the program's
    rules (``ptg-``); the other layers word theirs in their own way (docs/bindings.md). A
    non-ASCII character that Python's repr escapes (by its Unicode database: U+00A0,
    U+200B) C++ shows as it is (ptn/bytes.hpp): escaped here as repr escapes it."""
    return [
        [*f[:4], _escaped(str(f[4])) if str(f[0]).startswith("ptg-") else None] for f in findings
    ]


def _escaped(message: str) -> str:
    return "".join(c if c.isascii() or c.isprintable() else repr(c)[1:-1] for c in message)


def _python_view(path: str, lenient: bool) -> dict[str, Any]:
    """What read_package.cpp prints, from ptn.load, without the findings of the gaps C++
    declares: a strict open fails on the first error C++ can find, and only on such one."""
    view: dict[str, Any] = {"path": path}
    try:
        pkg = load(path, strict=False)
    except PtnError as err:
        view["open"] = [err.rule, err.member, err.pointer]
        return view
    with pkg:
        findings, _ = uncovered(
            "cpp", [[f.rule, f.severity, f.member, f.pointer, f.message] for f in pkg.findings]
        )
        first = next((f for f in findings if f[1] == "error"), None)
        if not lenient and first is not None:
            view["open"] = [first[0], first[2], first[3]]
            return view
        view["open"] = None
        view["findings"] = _worded(findings)
        try:
            view["program"] = len(pkg.program)
        except PtnError as err:
            view["program"] = [err.rule]
        view["methods"] = _methods_view(pkg)
        keys = pkg.keys()
        view["keys"] = keys
        tensors = {}
        for key in keys:
            info = pkg.tensor_info(key)
            crc = 0
            for chunk in pkg.constant_chunks(key, 1 << 20):
                crc = zlib.crc32(chunk, crc)
            tensors[key] = [info.key, info.dtype, list(info.shape), info.nbytes, f"{crc:08x}"]
        view["tensors"] = tensors
        try:
            metadata = pkg.metadata
            view["metadata"] = None if metadata is None else metadata.to_dict()
        except PtnError as err:
            view["metadata"] = [err.rule]
        view["unreadable"] = [[k, f.rule] for k, f in pkg.unreadable.items()]
        view["unreadable_keys"] = [[k, f.rule] for k, f in pkg.unreadable_keys.items()]
    view["sha256"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    return view


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_package_reader_agrees_with_ptn_load(
    built: dict[str, Path], packages: list[str], lenient: bool
) -> None:
    """What ptn::Package opens and reads is what ptn.load opens and reads."""
    flags = ["--lenient"] if lenient else []
    lines = run([str(built["read_package"]), *flags, *packages]).splitlines()
    assert len(lines) == len(packages)
    wrong = []
    for line, path in zip(lines, packages, strict=True):
        got, want = json.loads(line), _python_view(path, lenient)
        if "findings" in got:
            got["findings"] = _worded(got["findings"])
        if got != want:
            diff = {k: (want.get(k), got.get(k)) for k in want.keys() | got.keys()}
            wrong.append(f"{path}: " + repr({k: v for k, v in diff.items() if v[0] != v[1]})[:800])
    assert wrong == [], "\n".join(wrong[:10])
    # Not vacuous: dozens of packages opened, every tensor of the big one viewed, the
    # methods of the real exports read, program findings worded.
    views = [json.loads(line) for line in lines]
    assert sum(v["open"] is None for v in views) >= 50
    assert sum(len(v.get("tensors", {})) for v in views) > 22_000
    read = [v for v in views if isinstance(v.get("methods", [None])[0], list)]
    assert sum(len(m[3]) for v in read for m in v["methods"]) > 100  # bound constants
    worded = [f for v in views for f in v.get("findings", ()) if str(f[0]).startswith("ptg-")]
    assert len({f[0] for f in worded}) >= (4 if lenient else 1)


ONE = meta("FLOAT", 1)


def undefined_programs() -> dict[str, bytes]:
    """Programs whose graphs use names they do not define: unit_test.cpp holds C++'s
    ptg-undefined-value findings on them to pointers and messages it spells out."""
    optional = {"names": ["gone", "absent"], "has_value": [False, True]}
    size = {"values": [0, 1], "refs": ["", "n"]}
    uses = [
        call("a", "add.Tensor", [("self", tensor("x")), ("other", tensor("later"))]),
        call("cat", "cat.default", [("tensors", ("TensorListArg", {"names": ["x", "it's"]}))]),
        call(
            "i",
            "index.Tensor",
            [("self", tensor("x")), ("indices", ("OptionalTensorListArg", optional))],
        ),
        call("v", "view_copy.default", [("self", tensor("x")), ("size", ("IntListArg", size))]),
        call("m", "mul.Scalar", [("self", tensor("x")), ("", integer(0, "k"))], alias_of="q"),
        call("later", "clone.default", [("self", tensor("later"))]),  # used before, by "a"
    ]
    returns = [
        ("y", "USER_OUTPUT", ""),
        ("x", "USER_INPUT_MUTATION", "z"),
        ("x", "USER_INPUT_MUTATION", "x"),
        ("p_w", "USER_INPUT_MUTATION", "p_w"),  # a constant, not an input
    ]
    specs = method(
        "forward",
        inputs={"x": ONE},
        nodes=[],
        returns=returns,
        constants=[constant("p_w", "w", ONE)],
    )
    ghost = {"name": "ghost", "op_kind": "PLACEHOLDER", "outputs": [{"name": "ghost"}]}
    specs["graph"]["nodes"].insert(0, ghost)
    # 11 levels of subgraphs, each with a name of its own missing; the top's "x" is not
    # visible in the deepest (5 tables a level: 60 of the verifier's 64).
    deepest = call("deepest", "neg.default", [("self", tensor("a")), ("other", tensor("x"))])
    graph: dict[str, Any] = {"nodes": [deepest], "inputs": ["a"], "outputs": ["deepest", "b"]}
    for i in range(11):
        body = {"name": "body", "arg": {"value": ("GraphArg", {"name": "g", "graph": graph})}}
        hop = {"name": f"hop{i}", "inputs": [body], "outputs": [{"name": f"hop{i}"}]}
        use = call(f"u{i}", "neg.default", [("self", tensor(f"missing{i}"))])
        graph = {"nodes": [use, hop], "inputs": ["a"]}
    many = [call(f"n{i}", "neg.default", [("self", tensor("missing"))]) for i in range(10_000)]
    return {
        "undefined-uses": program(method("forward", inputs={"x": ONE}, nodes=uses, returns=[])),
        "undefined-specs": program(specs),
        "undefined-nested": program(
            method("forward", inputs={"x": ONE}, nodes=graph["nodes"], returns=[])
        ),
        "undefined-many": program(method("forward", inputs={"x": ONE}, nodes=many, returns=[])),
    }


def operator_programs() -> dict[str, bytes]:
    """Programs that break the operator rules (spec section 4.5) and define values twice
    (section 4.4): unit_test.cpp holds C++'s findings on them to pointers and messages it
    spells out."""
    two = meta("FLOAT", 2)
    size = ("IntListArg", {"values": [-1]})
    cuda = ("StringArg", {"value": "cuda"})
    body = {
        "nodes": [call("inner", "neg.default", [("bogus", tensor("a"))])],
        "inputs": ["a"],
        "outputs": ["inner"],
    }
    nodes = [
        call("a", "not_an_op.default", [("self", tensor("x"))]),
        call("b", "from_file.default", [("filename", ("StringArg", {"value": "/etc/passwd"}))]),
        {**call("c", "", []), "target": "torch.ops.torchvision.nms.default"},
        {**call("d", "", []), "target": "it's.eval"},
        call("e", "linear.out", [("input", tensor("x"))]),
        call("f", "linear.default", [("input", tensor("x")), ("bogus", tensor("p_w"))]),
        call("g", "full.default", [("size", size), ("fill_value", integer(1)), ("device", cuda)]),
        call("h", "add.Tensor", [("", tensor("x")), ("other", tensor("y")), ("", integer(1))]),
        call("i", "fill_.Scalar", [("self", tensor("p_w")), ("value", integer(0))]),
        call("v", "view.default", [("self", tensor("y")), ("size", size)]),
        call("j", "add_.Tensor", [("self", tensor("v")), ("other", tensor("x"))]),
        call("k", "add_.Tensor", [("self", tensor("x")), ("other", tensor("y"))]),
        call("l", "copy_.default", [("self", tensor("b_cache")), ("src", tensor("x"))]),
        call("m", "mul.Tensor", [("self", tensor("b_scale")), ("other", tensor("x"))]),
        call("n", "add_.Tensor", [("self", tensor("p_state")), ("other", tensor("x"))]),
        {
            **call("cond", "", [("body", ("GraphArg", {"name": "g", "graph": body}))]),
            "target": "torch.ops.higher_order.cond",
        },
    ]
    calls = method(
        "forward",
        inputs={"x": two, "y": two},
        nodes=nodes,
        returns=[("k", "USER_INPUT_MUTATION", "x"), ("m", "USER_OUTPUT", "")],
        constants=[
            constant("p_w", "w", two),
            constant("p_state", "state", two, mutated=True, kind="BUFFER"),
        ],
        buffers=[("b_cache", "cache", two), ("b_scale", "scale", two)],
    )
    many = [call(f"n{i}", "nope.default", []) for i in range(10_000)]
    # Each name defined twice: an input, a constant, a buffer, a node's output, a tensor
    # list's element, a placeholder, a subgraph's input.
    pair = {"name": "", "kind": "TENSOR_LIST", "names": ["t", "t"]}
    redefining = method(
        "forward",
        inputs={"x": two},
        nodes=[
            call("n1", "relu.default", [("self", tensor("x"))]),
            {**call("n2", "split.Tensor", [("self", tensor("x")), ("split_size", integer(1))])},
            call("cond", "neg.default", [("self", ("GraphArg", {"name": "g", "graph": body}))]),
        ],
        returns=[("n1", "USER_OUTPUT", "")],
        constants=[constant("p_w", "w", two), constant("x", "w2", two)],
        buffers=[("p_w", "buf", two)],
    )
    nodes = redefining["graph"]["nodes"]
    redefining["graph"]["inputs"].append("x")
    nodes.insert(1, dict(nodes[0]))  # placeholder 'x' twice
    for node in nodes:
        if node["name"] == "n1":
            node["outputs"] = [{"name": "p_w"}]
        if node["name"] == "n2":
            node["outputs"] = [pair]
        if node["name"] == "cond":
            node["inputs"][0]["arg"]["value"][1]["graph"] = {**body, "inputs": ["a", "a"]}
    return {
        "operator-calls": program(calls),
        "operator-many": program(method("forward", inputs={"x": ONE}, nodes=many, returns=[])),
        "redefined": program(redefining),
    }


def _rules(findings: list[Finding]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in findings:
        out[f.rule] = out.get(f.rule, 0) + 1
    return out


def test_programs_are_what_unit_test_expects() -> None:
    """The reference's findings on the programs unit_test.cpp reads: as many as it expects,
    of the rules it checks."""
    counts = {k: _rules(read_program(v)[1]) for k, v in undefined_programs().items()}
    assert {k: c["ptg-undefined-value"] for k, c in counts.items()} == {
        "undefined-uses": 7,
        "undefined-specs": 6,
        "undefined-nested": 13,
        "undefined-many": 101,
    }
    counts = {k: _rules(read_program(v)[1]) for k, v in operator_programs().items()}
    assert counts == {
        "operator-calls": {
            "ptg-unknown-operator": 6,
            "ptg-operator-schema-mismatch": 4,
            "ptg-undeclared-mutation": 2,
            "ptg-buffer-never-written": 1,
        },
        "operator-many": {"ptg-unknown-operator": 101},
        "redefined": {
            "ptg-redefined-value": 9,
            "ptg-undefined-value": 3,
            "ptg-operator-schema-mismatch": 2,
        },
    }


def test_unit_checks(built: dict[str, Path], tmp_path: Path) -> None:
    """Bounded recursion, ptg-undefined-value, ptg-redefined-value and the operator rules by
    pointer and message, the operator table, CRC-32 values, packed sizes past 64 bits, a
    caller's buffer, the methods of a package, I/O errors (unit_test.cpp)."""
    package = REPO / "examples" / "tiny-llm.ptn"
    for depth in (12, 13):
        (tmp_path / f"deep-{depth}.ptg").write_bytes(hostile.deep_program(depth))
    for name, data in {**undefined_programs(), **operator_programs()}.items():
        (tmp_path / f"{name}.ptg").write_bytes(data)
    assert run([str(built["unit_test"]), str(package), str(tmp_path)]) == "ok\n"


CONSUMER = """cmake_minimum_required(VERSION 3.14)
project(consumer LANGUAGES CXX)
{find}
add_executable(load_package {source})
target_link_libraries(load_package PRIVATE ptn::ptn)
"""


def test_cmake_find_package_and_add_subdirectory(cxx: list[str], tmp_path: Path) -> None:
    """The CMake package installs (find_package(ptn)) and builds in place (add_subdirectory);
    both link the docs' loader example, built without exceptions or RTTI."""
    cmake = shutil.which("cmake")
    if cmake is None:
        missing_toolchain("no cmake")
        return
    env = {**os.environ, "CXX": shutil.which(cxx[0]) or cxx[0]}
    flags = f"-DCMAKE_CXX_FLAGS={' '.join(FLAGS[1:])}"
    source = REPO / "examples" / "bindings" / "load_package.cpp"
    example = REPO / "examples" / "tiny-llm.ptn"

    def cmake_run(*args: str | Path) -> None:
        proc = subprocess.run([cmake, *map(str, args)], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    prefix = tmp_path / "prefix"
    cmake_run("-S", CPP_DIR, "-B", tmp_path / "ptn-build", f"-DCMAKE_INSTALL_PREFIX={prefix}")
    cmake_run("--install", tmp_path / "ptn-build")
    assert (prefix / "include" / "ptn" / "package.hpp").is_file()
    cases = {
        "installed": ("find_package(ptn REQUIRED)", [f"-DCMAKE_PREFIX_PATH={prefix}"]),
        "subdirectory": (f'add_subdirectory("{CPP_DIR}" ptn)', []),
    }
    outputs = set()
    for name, (find, extra) in cases.items():
        project = tmp_path / name
        project.mkdir()
        (project / "CMakeLists.txt").write_text(CONSUMER.format(find=find, source=source))
        cmake_run("-S", project, "-B", project / "build", flags, *extra)
        cmake_run("--build", project / "build")
        exe = project / "build" / "load_package"
        outputs.add(subprocess.run([exe, example], capture_output=True, text=True).stdout)
    assert len(outputs) == 1 and "vocab 64" in outputs.pop()
