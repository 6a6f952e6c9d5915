"""Semantic edits of real programs: what reaches the rules of the graph (spec sections 4.4
and 4.5) rather than the verifier.

``program_edits(n, seed)`` takes the programs ExecuTorch wrote (tests/fixtures/real) and the
valid package vectors, applies one to three edits of their graphs in plain form (a node
retargeted to another overload of the operator table, to one it refuses or to no ATen
operator; an argument renamed, dropped, repeated or given a value of another kind; an
output of another kind or count, or a name defined twice; an in-place operator writing an
input, a constant or a buffer, or a view of one; output specs and the ``mutated`` flag of
constants changed; an ArgumentValue type byte ptn does not know), builds the program again
and puts it back in its package: every other member is the export's own. Seeded, so a
failure replays. The comparisons of the bindings with Python (tests/test_native.py,
tests/test_cpp_package.py) run them.
"""

from __future__ import annotations

import copy
import random
import struct
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

from ptn.program.build import build_program
from ptn.program.operators import NodeProblem, Param, operator_table
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.program.verify import Verifier
from ptn.testing import hostile

REPO = Path(__file__).resolve().parent.parent
Plain = dict[str, Any]

_TARGETS = (
    "",
    "builtins.eval",
    "os.system",
    "torch.ops.higher_order.cond",
    "torch.ops.torchvision.nms.default",
    "torch.ops.aten",
    "torch.ops.aten.add",
    "torch.ops.aten.add.Tensor.out",
    "torch.ops.aten.1add.default",
    "torch.ops.aten.add.",
    "torch.ops.aten.from_file.default",
    "torch.ops.aten._print.default",
    "torch.ops.aten.set_.source_Tensor",
    "torch.ops.aten.linear.out",
    "torch.ops.aten.not_an_op.default",
    "torch.ops.aten.ädd.default",
    "torch.ops.aten.add.Tensor\n",
    'it\'s "quoted"\\',
    "torch.ops.\u00a0.x",
    "torch.ops.aten_.add.default",
)
_IN_PLACE = (
    "add_.Tensor",
    "fill_.Scalar",
    "copy_.default",
    "index_put_.default",
    "relu_.default",
    "mul_.Scalar",
    "clamp_.default",
)
_VIEWS = ("view.default", "expand.default", "slice.Tensor", "permute.default", "view_copy.default")
_STRINGS = (
    "cpu",
    "cpu:0",
    "cpu:12345",
    "cuda",
    "cuda:1",
    "meta:7",
    "cpux",
    "",
    "torch.float32",
    "torch.strided",
    "torch.channels_last",
    "torch.complex64",
    "bogus",
    "it's",
    "naïve\u00a0",
    "\u200b",
)
_NAMES = ("bogus", "", "self", "other", "input", "weight", "alpha", "device", "dtype", "out")


@cache
def _bases() -> tuple[tuple[dict[str, bytes], Plain], ...]:
    """(the members other than program.ptg, the program in plain form) of each base."""
    out = []
    paths = sorted(REPO.glob("tests/fixtures/real/*.ptn"))
    paths += sorted(REPO.glob("tests/vectors/packages/valid/*.ptn"))
    for path in paths:
        with zipfile.ZipFile(path) as z:
            members = {i.filename: z.read(i) for i in z.infolist()}
        program, _ = read_program(members.pop("program.ptg"))
        if program is not None and program.methods:
            out.append((members, to_plain(program)))
    return tuple(out)


def _value(rng: random.Random, names: list[str]) -> tuple[str, Plain]:
    """An ArgumentValue of a random kind."""
    name = rng.choice(names) if names else "x"
    kind = rng.randrange(14)
    ref = rng.choice(("", "", "s0"))
    if kind == 0:
        return ("TensorArg", {"name": name})
    if kind == 1:
        return ("NoneArg", {})
    if kind == 2:
        return ("IntArg", {"value": rng.choice((0, 1, -1, 2**62, 7)), "ref": ref})
    if kind == 3:
        return ("FloatArg", {"value": rng.choice((0.0, -0.0, 1.0, 0.5, float("nan"))), "ref": ref})
    if kind == 4:
        return ("BoolArg", {"value": rng.random() < 0.5, "ref": ref})
    if kind == 5:
        return ("StringArg", {"value": rng.choice(_STRINGS)})
    if kind == 6:
        return ("ScalarTypeArg", {"value": rng.choice((6, 0, 11, 15, 99, -1, 44))})
    if kind == 7:
        refs = rng.choice(([], ["", "s0"], ["s0"]))
        return ("IntListArg", {"values": [1, 2], "refs": refs})
    if kind == 8:
        return ("FloatListArg", {"values": [1.0]})
    if kind == 9:
        return ("BoolListArg", {"values": [True, False]})
    if kind == 10:
        return ("TensorListArg", {"names": [name, rng.choice(names) if names else "y"]})
    if kind == 11:
        flags = rng.choice(([True, False], [True], [True, True, True]))
        return ("OptionalTensorListArg", {"names": [name, "gone"], "has_value": flags})
    if kind == 12:
        inner = {
            "name": "inner",
            "target": rng.choice(("torch.ops.aten.neg.default", "torch.ops.aten.nope.default")),
            "inputs": [{"name": "self", "arg": {"value": ("TensorArg", {"name": "a"})}}],
            "outputs": [{"name": "inner"}],
        }
        graph = {"nodes": [inner], "inputs": ["a"], "outputs": ["inner"]}
        return ("GraphArg", {"name": "body", "graph": graph})
    return ("TensorArg", {"name": rng.choice(("x", "ghost", name))})


def _table_target(rng: random.Random) -> str:
    table = operator_table()
    name = rng.choice(sorted(table.operators))
    overload = rng.choice(sorted(table.operators[name]))
    return f"torch.ops.aten.{name}.{overload}"


def _held(method: Plain) -> list[str]:
    """The names a method starts with: inputs, constants, buffers."""
    return [
        *method["graph"].get("inputs", []),
        *(c["name"] for c in method.get("constants", [])),
        *(b["name"] for b in method.get("mutable_buffers", [])),
    ]


def _odd(rng: random.Random, param: Param, names: list[str]) -> tuple[str, Plain]:
    """A value of a kind ``param`` takes, mostly, with content worth checking: strings of
    every enum and none, unknown ScalarType codes, refs, numbers near those a parameter is
    held to, lists whose lengths disagree."""
    ref = rng.choice(("", "", "s0"))
    kind = param.type.rstrip("?")
    choices: list[tuple[str, Plain]] = []
    if kind in ("Device", "Layout", "MemoryFormat", "str") or rng.random() < 0.1:
        choices.append(("StringArg", {"value": rng.choice(_STRINGS)}))
    if kind == "ScalarType":
        choices += [("ScalarTypeArg", {"value": rng.choice((6, 0, 11, 15, 99, -1, 44))})]
        choices += [("StringArg", {"value": rng.choice(("torch.float32", "torch.complex64"))})]
    if kind in ("bool", "Scalar"):
        choices.append(("BoolArg", {"value": rng.random() < 0.5, "ref": ref}))
    if kind in ("float", "int", "Scalar"):
        choices.append(("IntArg", {"value": rng.choice((0, 1, 2)), "ref": ref}))
        choices.append(
            ("FloatArg", {"value": rng.choice((0.0, -0.0, 0.1, float("nan"))), "ref": ref})
        )
    if kind == "int[]":
        refs = rng.choice((["s0"], ["", "", ""], []))
        choices += [("IntListArg", {"values": [1, 2, 3], "refs": refs}), ("IntArg", {"value": 3})]
    if kind == "Tensor?[]":
        flags = rng.choice(([True], [True, False], [True, True, True]))
        choices.append(("OptionalTensorListArg", {"names": names[:2], "has_value": flags}))
    if param.type.endswith("?") or not choices:
        choices.append(("NoneArg", {}))
    return rng.choice(choices)


_FITS: dict[str, tuple[str, Plain]] = {
    "int": ("IntArg", {"value": 1}),
    "float": ("FloatArg", {"value": 1.0}),
    "bool": ("BoolArg", {"value": False}),
    "Scalar": ("IntArg", {"value": 1}),
    "str": ("StringArg", {"value": "none"}),
    "ScalarType": ("ScalarTypeArg", {"value": 6}),
    "Layout": ("StringArg", {"value": "torch.strided"}),
    "MemoryFormat": ("StringArg", {"value": "torch.contiguous_format"}),
    "Device": ("StringArg", {"value": "cpu"}),
    "int[]": ("IntListArg", {"values": [1]}),
    "float[]": ("FloatListArg", {"values": [1.0]}),
    "bool[]": ("BoolListArg", {"values": [True]}),
    "Scalar[]": ("IntListArg", {"values": [1]}),
}


def _fit(rng: random.Random, param: Param, names: list[str]) -> tuple[str, Plain]:
    """A value of a kind ``param`` takes."""
    kind = param.type
    if kind.endswith("?"):
        if rng.random() < 0.5:
            return ("NoneArg", {})
        kind = kind[:-1]
    name = rng.choice(names) if names else "x"
    if kind == "Tensor":
        return ("TensorArg", {"name": name})
    if kind == "Tensor[]":
        return ("TensorListArg", {"names": [name]})
    if kind == "Tensor?[]":
        return ("OptionalTensorListArg", {"names": [name], "has_value": [True]})
    return _FITS[kind]


def _special(params: tuple[Param, ...]) -> list[Param]:
    """The parameters held to values, of an enum type, or of a list with a content rule."""
    return [
        p
        for p in params
        if p.allowed is not None
        or p.type.rstrip("?") in ("Device", "Layout", "MemoryFormat", "ScalarType", "int[]")
        or p.type.startswith("Tensor?[")
    ]


@cache
def _with_special() -> tuple[str, ...]:
    """The targets of the overloads that have such parameters."""
    return tuple(
        f"torch.ops.aten.{s.name}.{s.overload}"
        for overloads in operator_table().operators.values()
        for s in overloads.values()
        if _special(s.params)
    )


def _fitting(rng: random.Random, node: Plain, names: list[str]) -> None:
    """Give a parameter of the node's schema (one held to values or of an enum type, when
    it has one; the node retargeted to an overload that has one, at times) an odd value of
    a kind it may take."""
    retarget = rng.random() < 0.4
    if retarget:
        node["target"] = rng.choice(_with_special())
    try:
        schema = operator_table().lookup(node.get("target", ""))
    except NodeProblem:
        return
    if retarget:  # arguments that fit, so that the odd one is the node's first problem
        node["inputs"] = [
            {"name": p.name, "arg": {"value": _fit(rng, p, names)}}
            for p in schema.params
            if p.required or rng.random() < 0.3
        ]
    pool = _special(schema.params) or list(schema.params)
    if not pool:
        return
    param = rng.choice(pool)
    inputs = node.setdefault("inputs", [])
    arg = {"name": param.name, "arg": {"value": _odd(rng, param, names)}}
    for i, given in enumerate(inputs):
        if given.get("name") == param.name:
            inputs[i] = arg
            return
    inputs.append(arg)


def _edit(rng: random.Random, plain: Plain) -> None:
    """One edit of a random method of ``plain``."""
    method = rng.choice(plain["methods"])
    graph = method["graph"]
    nodes = graph["nodes"]
    calls = [n for n in nodes if n.get("op_kind", 0) == 0] or nodes
    node = rng.choice(calls)
    held = _held(method)
    defined = held + [o["name"] for n in nodes for o in n.get("outputs", []) if o.get("name")]
    what = rng.randrange(20)
    inputs = node.setdefault("inputs", [])
    if what >= 16:
        _fitting(rng, node, defined)
    elif what == 0:
        node["target"] = rng.choice(_TARGETS)
    elif what == 1:
        node["target"] = _table_target(rng)
    elif what == 2 and inputs:
        rng.choice(inputs)["name"] = rng.choice(_NAMES)
    elif what in (3, 4) and inputs:
        rng.choice(inputs)["arg"] = {"value": _value(rng, defined)}
    elif what == 5 and inputs:
        inputs.pop(rng.randrange(len(inputs)))
    elif what == 6 and inputs:
        inputs.insert(rng.randrange(len(inputs) + 1), copy.deepcopy(rng.choice(inputs)))
    elif what == 7:
        outputs = node.setdefault("outputs", [])
        if outputs and rng.random() < 0.5:
            out = rng.choice(outputs)
            out["kind"] = rng.choice((0, 1, 2, 3, 4, 5, -1))
            if out["kind"] == 1:
                out["names"] = [out.get("name", "") or "t0", rng.choice(defined)]
        elif rng.random() < 0.5:
            outputs.append({"name": f"{node['name']}_extra"})
        else:
            outputs.clear()
    elif what == 8:  # a name defined twice: a node's output, or a declared value
        outputs = node.setdefault("outputs", [])
        if outputs:
            rng.choice(outputs)["name"] = rng.choice(defined)
        else:
            nodes.insert(nodes.index(node), copy.deepcopy(node))
    elif what in (9, 15):  # an in-place write of a value the method starts with, or a view
        self_name = rng.choice(held) if held else "x"
        new: list[Plain] = []
        if rng.random() < 0.5:
            view = f"v_{len(nodes)}"
            new.append({
                "name": view,
                "target": "torch.ops.aten." + rng.choice(_VIEWS),
                "inputs": [
                    {"name": "self", "arg": {"value": ("TensorArg", {"name": self_name})}},
                    {"name": "size", "arg": {"value": ("IntListArg", {"values": [-1]})}},
                ],
                "outputs": [{"name": view}],
            })  # fmt: skip
            self_name = view
        target = "torch.ops.aten." + rng.choice(_IN_PLACE)
        written = f"w_{len(nodes)}"
        new.append({
            "name": written,
            "target": target,
            "inputs": [
                {"name": "self", "arg": {"value": ("TensorArg", {"name": self_name})}},
                {"name": "other", "arg": {"value": ("TensorArg", {"name": self_name})}},
            ],
            "outputs": [{"name": written, "alias_of": self_name}],
        })  # fmt: skip
        at = rng.randrange(len(nodes) + 1)
        nodes[at:at] = new
    elif what == 10:  # output specs: an update dropped, or a user input declared updated
        specs = method.setdefault("output_specs", [])
        if specs and rng.random() < 0.5:
            specs.pop(rng.randrange(len(specs)))
        elif graph.get("inputs"):
            name = rng.choice(graph["inputs"])
            specs.append({"name": name, "kind": 2, "target": name})
    elif what == 11 and method.get("constants"):
        c = rng.choice(method["constants"])
        c["mutated"] = not c.get("mutated", False)
    elif what == 12:  # a placeholder twice, or a node turned into one
        placeholders = [n for n in nodes if n.get("op_kind") == 1]
        if placeholders and rng.random() < 0.5:
            nodes.insert(0, copy.deepcopy(rng.choice(placeholders)))
        else:
            node["op_kind"] = rng.choice((0, 1, 2, 3))
    elif what == 13 and method.get("mutable_buffers"):  # a buffer no spec updates any more
        fqns = {b["fqn"] for b in method["mutable_buffers"]}
        method["output_specs"] = [
            s for s in method.get("output_specs", []) if s.get("target") not in fqns
        ]
    elif what == 14:  # an argument by position: after named ones, or past the parameters
        if rng.random() < 0.5:
            inputs.insert(rng.randrange(len(inputs) + 1), {"arg": {"value": _value(rng, defined)}})
        else:
            for arg in inputs:
                arg["name"] = ""
            inputs.extend({"arg": {"value": _value(rng, defined)}} for _ in range(rng.randrange(4)))
    if rng.random() < 0.1:  # a declared name twice
        group = rng.choice(("inputs", "constants", "mutable_buffers"))
        if group == "inputs" and graph.get("inputs"):
            graph["inputs"].append(rng.choice(held))
        elif method.get(group):
            item = copy.deepcopy(rng.choice(method[group]))
            item["name"] = rng.choice(held)
            method[group].append(item)


def _unknown_member(program: bytes, rng: random.Random) -> bytes:
    """``program`` with one Argument's union type byte past the members ptn knows."""
    verifier = Verifier(program)
    verifier.root()
    arguments = sorted(pos for pos, kind in verifier.memo if kind == "Argument")
    if not arguments:
        return program
    pos = rng.choice(arguments)
    out = bytearray(program)
    (back,) = struct.unpack_from("<i", out, pos)
    vtable = pos - back
    (size,) = struct.unpack_from("<H", out, vtable)
    if size < 6:
        return program
    (offset,) = struct.unpack_from("<H", out, vtable + 4)  # slot 0: the type byte
    if offset == 0:
        return program
    out[pos + offset] = rng.choice((14, 15, 200, 255))
    return bytes(out)


def program_edits(n: int, seed: int) -> dict[str, bytes]:
    """``n`` packages of the real exports and the valid vectors, each with its program
    edited one to three times (the module docstring says how)."""
    bases = _bases()
    rng = random.Random(seed)
    out: dict[str, bytes] = {}
    while len(out) < n:
        members, base = rng.choice(bases)
        plain = copy.deepcopy(base)
        for _ in range(rng.randint(1, 3)):
            _edit(rng, plain)
        try:
            program = build_program(plain)
        except ValueError:  # an edit the builder refuses (a required field left out)
            continue
        if rng.random() < 0.05:
            program = _unknown_member(program, rng)
        out[f"program-edit-{len(out)}"] = hostile.package(members, program)
    return out
