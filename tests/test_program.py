"""program.ptg: the layout, the verifier and decoder, the builder, and ExecuTorch's own programs.

Properties: programs drawn from the layout survive build -> verify -> decode unchanged;
any single-byte edit or cut of a real program decodes or gives a ptg- finding, never
another exception; a hostile program (shared offsets, deep nesting) is refused or
verified with work bounded by its size, counted in objects visited (never timed).
ExecuTorch 1.5.1 (when installed) is the reference: it reads what ptn builds, and
ptn decodes what it wrote to the same values.
"""

from __future__ import annotations

import json
import math
import zipfile
from dataclasses import fields, is_dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import ptn
from ptn.core.errors import PtnError
from ptn.core.resources import load_schema
from ptn.program.build import build_program
from ptn.program.layout import load_layout, parse_layout
from ptn.program.model import Dim, GraphArg, TensorArg, TensorMeta
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.program.verify import Refusal, Verifier
from ptn.testing import hostile, program_for
from ptn.testing.program_strategies import expected_plain, programs

# executorch (the reference, when installed) and torch under it warn of their own deprecations.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
FIXTURES = sorted(REAL.glob("*.ptn"))
ZEROED_BUFFERS = {"llama_tiny", "qwen2_tiny", "nonpersistent_buffer"}
"""Exports whose model reads a non-persistent buffer that ExecuTorch zeroes at load."""
LAYOUT = load_layout()


def ptg_of(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read("program.ptg")


# -- the description --------------------------------------------------------------------------


def test_layout_describes_every_table_the_real_programs_use() -> None:
    doc = load_schema("program-layout")
    assert "$comment" in doc and "$schema" not in doc  # ptn's own format, not a JSON Schema
    wanted = {
        "Program", "Method", "Graph", "Node", "NamedArgument", "Argument", "Output",
        "TensorValue", "TensorMeta", "Dim", "QuantSpec", "AffineGroup", "PackedQuant",
        "NamedTensorRef", "OutputSpec", "MutableBufferSpec", "KeyValue",
        *LAYOUT.unions["ArgumentValue"],
    }  # fmt: skip
    assert set(LAYOUT.tables) == wanted
    assert LAYOUT.identifier == b"NPTG" and LAYOUT.root == "Program"
    assert sum(f.required for t in LAYOUT.tables.values() for f in t.fields) == 29
    assert LAYOUT.unions["ArgumentValue"][0] == "TensorArg"  # type byte 1
    assert LAYOUT.unions["ArgumentValue"][12] == "GraphArg"  # type byte 13
    assert next(f for f in LAYOUT.tables["Dim"].fields if f.name == "max").default == -1
    assert LAYOUT.safetensors_dtype[LAYOUT.enums["ScalarType"]["FLOAT"]] == "F32"


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d["tables"]["Node"]["fields"].append({"name": "x", "slot": 0, "type": "int"}),
         "slot twice"),
        (lambda d: d["tables"]["Graph"]["fields"][0].update(table="Nope"), "no table Nope"),
        (lambda d: d["unions"]["QuantScheme"]["members"].append("Nope"), "not there"),
        (lambda d: d["tables"]["Dim"]["fields"][0].update(type="float"), "unknown type"),
    ],
)  # fmt: skip
def test_a_self_contradicting_layout_is_refused(edit: Any, says: str) -> None:
    doc = load_schema("program-layout")
    doc = json.loads(json.dumps(doc))
    edit(doc)
    with pytest.raises(ValueError, match=says):
        parse_layout(doc)


def test_cli_prints_the_layout() -> None:
    from click.testing import CliRunner

    from ptn.cli.main import cli

    out = CliRunner().invoke(cli, ["schema", "program-layout"]).output
    assert json.loads(out)["root_table"] == "Program"


# -- ExecuTorch's own programs ------------------------------------------------------------------


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_real_package_is_valid(path: Path) -> None:
    """What ExecuTorch 1.5.1 wrote: valid; advised only to align its members and tensors,
    and warned where it zeroes a buffer the model reads (ptg-buffer-never-written)."""
    report = ptn.validate(path)
    assert report.errors == []
    zeroed = path.stem in ZEROED_BUFFERS
    assert [f.rule for f in report.warnings] == (["ptg-buffer-never-written"] if zeroed else [])
    assert {f.rule for f in report.advice} <= {"zip-unaligned-member", "st-unaligned-tensor"}
    program, found = read_program(ptg_of(path))
    assert program is not None
    assert [f.rule for f in found] == (["ptg-buffer-never-written"] if zeroed else [])
    assert program.version == "1" and program.methods


def test_decoded_values_of_a_real_program() -> None:
    program, _ = read_program(ptg_of(REAL / "dynamic_batch.ptn"))
    assert program is not None
    method = program.method("forward")
    (x,) = method.graph.inputs
    meta = method.graph.tensor_values[x]
    assert meta.dtype_name == "F32" and meta.scalar_type == "FLOAT"
    assert meta.sizes[0].min < meta.sizes[0].max and meta.sizes[1].static
    assert not meta.static and meta.admits((3, *(d.min for d in meta.sizes[1:])))
    assert not meta.admits((9, *(d.min for d in meta.sizes[1:])))
    placeholders = [n for n in method.graph.nodes if n.op_kind_name == "PLACEHOLDER"]
    assert {n.name for n in placeholders} >= {c.name for c in method.constants}
    assert method.graph.nodes[-1].op_kind_name == "OUTPUT"
    returned = [a.value for a in method.graph.nodes[-1].inputs]
    assert all(isinstance(v, TensorArg) for v in returned)
    assert Dim().max == -1 and not Dim().bounded and Dim(2, 2).admits(2)


# The ExecuTorch reference: deserialize_program (flatc) and validate_program.


def _executorch() -> Any:
    pytest.importorskip("executorch")
    from executorch.backends.native.serialization import graph_serialize

    return graph_serialize


def _normal(value: Any) -> Any:
    """ExecuTorch's dataclasses as plain data: absent strings "", absent lists [], enums int."""
    if isinstance(value, IntEnum):
        return int(value)
    if is_dataclass(value):
        return {
            type(value).__name__: {f.name: _normal(getattr(value, f.name)) for f in fields(value)}
        }
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


@pytest.mark.slow
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_reencoded_real_programs_read_the_same_in_executorch(path: Path) -> None:
    """decode with ptn, write again with ptn's builder: ExecuTorch reads the same program."""
    graph_serialize = _executorch()
    original = ptg_of(path)
    program, found = read_program(original)
    assert program is not None
    again = build_program(to_plain(program))
    assert read_program(again) == (program, found)
    ours, theirs = (
        graph_serialize.deserialize_program(again),
        graph_serialize.deserialize_program(original),
    )
    assert _normal(ours) == _normal(theirs)


def test_executorch_accepts_what_program_for_builds() -> None:
    graph_serialize = _executorch()
    w = np.ones((2, 3), np.float32)
    constants = {"w": w, "k": np.zeros(4, np.float16), "scalar": np.array(1, np.int64)}
    data = program_for(
        constants,
        mutated=["k"],
        mutable_buffers={"rope.inv_freq": ("F32", (4,))},
        methods=("forward", "decode"),
    )
    program = graph_serialize.deserialize_program(data)
    graph_serialize.validate_program(program, set(constants))
    assert graph_serialize.collect_data_keys(program) == set(constants)
    with pytest.raises(ValueError, match=r"no data|data_key"):
        graph_serialize.validate_program(program, {"w"})


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=programs(depth=1, known_enums=True))
def test_executorch_reads_drawn_programs_as_ptn_does(data: dict[str, Any]) -> None:
    """ExecuTorch's reader and ptn's decoder agree on any program the layout allows, with
    enum values it knows (its reader turns each into a Python enum member) and a value in
    every Argument and QuantSpec, and finite doubles (see _executorch_cannot_read)."""
    graph_serialize = _executorch()
    assume(not _executorch_cannot_read("Program", data))
    program, _ = read_program(build_program(data))
    assert program is not None
    theirs = graph_serialize.deserialize_program(build_program(data))
    assert [m.name for m in theirs.methods] == [m.name for m in program.methods]
    assert [len(m.graph.nodes) for m in theirs.methods] == [
        len(m.graph.nodes) for m in program.methods
    ]


def _executorch_cannot_read(table: str, data: dict[str, Any]) -> bool:
    """Whether ``data`` holds what ExecuTorch's reader fails on, though the schema allows
    it: a union-holding table (Argument, QuantSpec) that holds none, or an infinite double
    (flatc prints it as `inf`, which is not JSON)."""
    for f in LAYOUT.tables[table].fields:
        value = data.get(f.name)
        if f.kind == "union":
            if value is None or _executorch_cannot_read(value[0], value[1]):
                return True
        elif f.kind == "table" and value is not None:
            if _executorch_cannot_read(f.table or "", value):
                return True
        elif f.kind == "vector" and f.table is not None:
            if any(_executorch_cannot_read(f.table, v) for v in value or []):
                return True
        elif "double" in (f.kind, f.items) and value is not None:
            values = value if f.kind == "vector" else [value]
            if any(math.isinf(v) for v in values):
                return True
    return False


# -- properties ---------------------------------------------------------------------------------


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=programs())
def test_build_verify_decode_round_trip(data: dict[str, Any]) -> None:
    """(a) Whatever the layout allows comes back as written, defaults filled in (drawn
    names refer to anything: the method and value rules may object, nothing else)."""
    program, found = read_program(build_program(data))
    assert found == [] or {f.rule for f in found} <= {
        "ptg-empty-method-name",
        "ptg-duplicate-method-name",
        "ptg-undefined-value",
        "ptg-redefined-value",
        "ptg-unknown-operator",
        "ptg-operator-schema-mismatch",
        "ptg-undeclared-mutation",
        "ptg-buffer-never-written",
    }
    assert program is not None
    assert to_plain(program) == expected_plain("Program", data)


REAL_PROGRAMS = {p.stem: ptg_of(p) for p in FIXTURES if p.stat().st_size < 20_000}


def _judged(data: bytes) -> None:
    """A decoded program, or ptg- findings only; and the walk's work within its bound."""
    try:
        program, found = read_program(data)
    except PtnError as err:  # allowed by the contract, though read_program reports instead
        assert err.rule.startswith("ptg-")
        return
    assert program is not None or any(
        f.severity == "error" or f.rule == "ptg-unknown-version" for f in found
    )
    assert all(f.rule.startswith("ptg-") for f in found)
    if len(data) >= 8:
        verifier = Verifier(data)
        try:
            verifier.root()
        except Refusal:
            pass
        except Exception:  # the envelope refused it first: the walk was never started
            assert program is None
        assert verifier.visited <= verifier.reached <= len(data) // LAYOUT.bytes_per_object + 1


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    name=st.sampled_from(sorted(REAL_PROGRAMS)),
    at=st.integers(0, 20_000),
    byte=st.integers(0, 255),
)
def test_any_single_byte_edit_of_a_real_program_is_judged(name: str, at: int, byte: int) -> None:
    """(b) One byte set anywhere: a valid decode or a ptg- finding, never another exception."""
    data = bytearray(REAL_PROGRAMS[name])
    data[at % len(data)] = byte
    _judged(bytes(data))


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(REAL_PROGRAMS)), keep=st.integers(0, 20_000))
def test_any_cut_of_a_real_program_is_judged(name: str, keep: int) -> None:
    data = REAL_PROGRAMS[name]
    _judged(data[: keep % (len(data) + 1)])


@pytest.mark.slow
def test_every_byte_of_a_small_real_program_set_to_each_interesting_value() -> None:
    """(b) exhaustively for one program: every position, six values each."""
    data = REAL_PROGRAMS["dynamic_batch"]
    for at in range(len(data)):
        for byte in (0x00, 0x01, 0x04, 0x7F, 0x80, 0xFF):
            edited = bytearray(data)
            edited[at] = byte
            _judged(bytes(edited))


@pytest.mark.parametrize(
    ("build", "refused"),
    [
        (lambda: hostile.deep_program(10_000), True),  # 50,000 tables deep
        (lambda: hostile.deep_program(12), False),  # 60 levels: within the limit
        (lambda: hostile.shared_program(100_000), True),  # one node listed 10^5 times
        (lambda: hostile.shared_program(5, width=0), False),  # a few bare shared nodes
        (lambda: hostile.doubling_program(40), True),  # 2^40 graphs as a tree
        (lambda: hostile.doubling_program(2), False),  # 4 graphs from 3: within
    ],
)
def test_hostile_programs_cost_what_their_size_allows(build: Any, refused: bool) -> None:
    """(c) Shared offsets and deep nesting: each (offset, type) verified once, every offset
    followed counted, and a walk that would exceed one object per 4 bytes refused."""
    data = build()
    verifier = Verifier(data)
    try:
        verifier.root()
        outcome = False
    except Refusal as refusal:
        outcome = True
        assert refusal.rule == "ptg-malformed"
    assert outcome == refused
    bound = len(data) // LAYOUT.bytes_per_object
    assert verifier.visited <= verifier.reached <= bound + 1
    assert verifier.visited <= 200  # a few hundred distinct objects, whatever the size


def test_deep_nesting_names_where() -> None:
    program, found = read_program(hostile.deep_program(30))
    assert program is None and [f.rule for f in found] == ["ptg-malformed"]
    assert found[0].pointer is not None and found[0].pointer.count("/graph") >= 12
    assert "deeper than 64 levels" in found[0].message


def test_shared_subgraphs_within_bounds_are_decoded_once() -> None:
    program, found = read_program(hostile.doubling_program(2))
    assert program is not None
    assert {f.rule for f in found} == {"ptg-unknown-operator"}  # its nodes name no operator
    (method,) = program.methods
    first, second = (n.inputs[0].value for n in method.graph.nodes[:2])
    assert isinstance(first, GraphArg) and first is second  # one object, as in the buffer


def test_a_repeated_tensor_value_keeps_its_first_entry_and_positions(tmp_path: Path) -> None:
    from test_ts_package import repeated_value_program

    data = repeated_value_program()
    program, _ = read_program(data)
    assert program is not None
    graph = program.methods[0].graph
    assert list(graph.tensor_values) == ["a", "q"] and graph.repeated_values == (1,)
    assert list(graph.tensor_value_positions()) == [0, 2]
    path = tmp_path / "p.ptn"
    path.write_bytes(hostile.package({}, data))
    (finding,) = ptn.validate(path).findings
    assert finding.rule == "ptg-missing-constant"
    assert finding.pointer == "/methods/0/graph/tensor_values/2/meta/quant/scheme/scale_data_key"


# -- the builder and program_for ---------------------------------------------------------------


def test_builder_refuses_what_the_layout_does_not_allow() -> None:
    with pytest.raises(ValueError, match=r"Method\.graph is required"):
        build_program({"version": "1", "methods": [{"name": "m"}]})
    with pytest.raises(ValueError, match="no field 'nope'"):
        build_program({"version": "1", "methods": [], "nope": 1})
    with pytest.raises(ValueError, match="not a member of OpKind"):
        build_program(
            {"methods": [{"name": "m", "graph": {"nodes": [{"name": "n", "op_kind": "JUMP"}]}}]}
        )


def test_program_for_binds_what_it_is_given(tmp_path: Path) -> None:
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    program, _ = read_program(program_for({"w": w, "h": ("F16", (4,))}, mutated=["h"]))
    assert program is not None
    (method,) = program.methods
    assert [(c.data_key, c.meta.dtype_name, c.meta.sizes, c.mutated) for c in method.constants] == [
        ("w", "F32", (Dim(2, 2), Dim(3, 3)), False),
        ("h", "F16", (Dim(4, 4),), True),
    ]
    assert [s.kind for s in method.output_specs] == [1, 0]  # the mutation first
    with pytest.raises(ValueError, match="mutated keys without a constant"):
        program_for({"w": w}, mutated=["x"])
    with pytest.raises(ValueError, match="no ScalarType"):
        program_for({"c": np.zeros(2, np.complex64)})
    assert TensorMeta(6, (Dim(2, 2),)).describe() == "F32 [2]"
