"""The operator rules in the TypeScript binding (spec.md sections 4.4 and 4.5) against the
Python reference: the binding reads ptn's operator table (generated compact into
``src/operator_table.ts``) as ptn.program.operators reads schema/operators.json, takes the
string enums ptn.program.calls takes, and finds what ptn finds, message for message, fast
and deep, on ExecuTorch's own exports edited node by node: operators retargeted, arguments
renamed, dropped, doubled or given values of every kind, outputs added or retyped, calls
inserted that bind (views of inputs and constants written in place, buffers read and never
written), values defined twice, subgraphs with call nodes.

Without Node.js >= 20 the tests skip locally; in CI a missing toolchain fails them.
"""

from __future__ import annotations

import copy
import io
import json
import random
import subprocess
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ptn.program import calls
from ptn.program.build import build_program
from ptn.program.layout import load_layout
from ptn.program.operators import NodeProblem, OperatorTable, Param, Schema, operator_table
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.remote.validate import validate
from ptn.testing import hostile
from tools.codegen.typescript_operators import emit_operator_table, overload_line
from tools.conformance.capabilities import OPERATOR_RULES, gaps
from tools.conformance.runners import TS_DIR

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "fixtures" / "real"
COMMAND = TS_DIR / "bin" / "ptn-validate.mjs"
DIST = TS_DIR / "dist"
OWN_WORDING = ("json-", "metadata-", "llm-")  # the binding's own words (tests/test_ts_package.py)
MUTANTS = 300
_KIND = load_layout().enums["OutputValueKind"]


def _node_json(node: str, tmp: Path, body: str) -> Any:
    script = tmp / "probe.mjs"
    script.write_text(body, encoding="utf-8")
    proc = subprocess.run([node, str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _param_row(p: Param) -> dict[str, Any]:
    return {
        "name": p.name,
        "type": p.type,
        "kwargOnly": p.kwarg_only,
        "required": p.required,
        "size": p.size,
        "alias": p.alias,
        "write": p.write,
        "allowed": None if p.allowed is None else [json.dumps(v) for v in p.allowed],
    }


def _schema_row(s: Schema) -> dict[str, Any]:
    return {
        "name": s.name,
        "overload": s.overload,
        "qualified": s.qualified,
        "params": [_param_row(p) for p in s.params],
        "returns": [{"type": r.type, "alias": r.alias, "write": r.write} for r in s.returns],
    }


def test_typescript_reads_the_operator_table_as_python_does(node: str, tmp_path: Path) -> None:
    """Every overload, parameter and return, in the table's order; the refusals; the
    version. Allowed values compare as the values and as Python's json.dumps text, which
    the messages quote."""
    got = _node_json(
        node,
        tmp_path,
        f"""
import {{ OPERATOR_TABLE, operatorTable }} from {json.dumps((DIST / "index.js").as_uri())};
const t = operatorTable(OPERATOR_TABLE);
const operators = [];
for (const overloads of t.operators.values()) {{
  for (const s of overloads.values()) {{
    operators.push({{
      name: s.name, overload: s.overload, qualified: s.qualified,
      params: s.params.map((p) => ({{ ...p, allowed: p.allowed && p.allowed.map((a) => a.text),
        values: p.allowed && p.allowed.map((a) => a.value) }})),
      returns: s.returns,
    }});
  }}
}}
process.stdout.write(JSON.stringify({{ version: t.version, torch: t.torch,
  refused: [...t.refused], operators }}));
""",
    )
    table = operator_table()
    assert got["version"] == table.version and got["torch"] == table.torch
    assert got["refused"] == [[k, v] for k, v in table.refused.items()]
    want = [_schema_row(s) for overloads in table.operators.values() for s in overloads.values()]
    values = [
        [p.pop("values") for p in row["params"]]  # the parsed values, beside their texts
        for row in got["operators"]
    ]
    assert got["operators"] == want
    expected_values = [
        [None if p.allowed is None else list(p.allowed) for p in s.params]
        for overloads in table.operators.values()
        for s in overloads.values()
    ]
    assert values == expected_values
    assert len(want) > 500


def test_typescript_takes_the_string_enums_python_takes(node: str, tmp_path: Path) -> None:
    got = _node_json(
        node,
        tmp_path,
        f"""
import * as c from {json.dumps((DIST / "program_calls.js").as_uri())};
process.stdout.write(JSON.stringify({{ layouts: c.LAYOUTS, formats: c.MEMORY_FORMATS,
  dtypes: c.DTYPE_NAMES, device: c.DEVICE.source, returns: [...c.RETURN_KINDS] }}));
""",
    )
    assert got["layouts"] == list(calls.LAYOUTS)
    assert got["formats"] == list(calls.MEMORY_FORMATS)
    assert got["dtypes"] == list(calls.DTYPE_NAMES)
    assert got["device"] == f"^{calls.DEVICE.pattern}$"
    names = {v: k for k, v in reversed(_KIND.items())}
    assert got["returns"] == [[t, [names[k] for k in ks]] for t, ks in calls.RETURN_KINDS.items()]


_GRID_VALUES: list[Any] = [
    None,
    ["?", 99],
    ["TensorArg", {"name": "x"}],
    ["NoneArg", {}],
    ["IntArg", {"value": 0, "ref": ""}],
    ["IntArg", {"value": 0, "ref": "s"}],
    ["IntArg", {"value": 2**62, "ref": ""}],
    ["FloatArg", {"value": 0.0, "ref": ""}],
    ["FloatArg", {"value": -0.0, "ref": ""}],
    ["FloatArg", {"value": 0.5, "ref": ""}],
    ["FloatArg", {"value": 0.0, "ref": "s"}],
    ["BoolArg", {"value": False, "ref": ""}],
    ["BoolArg", {"value": True, "ref": ""}],
    ["BoolArg", {"value": False, "ref": "s"}],
    *(
        ["StringArg", {"value": v}]
        for v in ("cpu", "cuda:0", "cuda:12345", "bogus", "torch.float32", "torch.strided")
    ),
    *(["StringArg", {"value": v}] for v in ("torch.channels_last", "", "it's", "x\u2028")),
    ["ScalarTypeArg", {"value": 6}],
    ["ScalarTypeArg", {"value": 100}],
    ["IntListArg", {"values": [1, 2], "refs": []}],
    ["IntListArg", {"values": [1, 2], "refs": ["a"]}],
    ["IntListArg", {"values": [1], "refs": ["a"]}],
    ["FloatListArg", {"values": [1.0]}],
    ["BoolListArg", {"values": [True]}],
    ["TensorListArg", {"names": ["a"]}],
    ["OptionalTensorListArg", {"names": ["a", "b"], "has_value": [True, False]}],
    ["OptionalTensorListArg", {"names": ["a"], "has_value": []}],
]
_GRID_ALLOWED: list[Any] = [None, ["cpu", None], [False, None], [False], [0.0], [0], [True]]


def _model_value(raw: Any) -> Any:
    from ptn.program import model

    if raw is None:
        return None
    member, fields = raw
    if member == "?":
        return model.UnknownMember("ArgumentValue", fields)
    cls = getattr(model, member)
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def test_typescript_judges_argument_values_as_python_does(node: str, tmp_path: Path) -> None:
    """value_problem over every type of the table's schema (and two it does not name), with
    and without a size and held values, against values of every kind and content."""
    types = json.loads((REPO / "schema" / "operators.schema.json").read_text())["$defs"]["Type"]
    cases = [
        (t, size, None if held is None else [[v, json.dumps(v)] for v in held])
        for t in [*types["enum"], "str[]", "Generator"]
        for size in (None, 2)
        for held in _GRID_ALLOWED
    ]
    got = _node_json(
        node,
        tmp_path,
        f"""
import {{ PROGRAM_LAYOUT }} from {json.dumps((DIST / "index.js").as_uri())};
import {{ valueProblem }} from {json.dumps((DIST / "program_calls.js").as_uri())};
const values = {json.dumps(_GRID_VALUES)}.map((raw) => {{
  if (raw === null) return null;
  const [member, fields] = raw;
  if (member === "?") return {{ member: null, typeCode: fields, value: null }};
  const v = {{ ...fields }};
  if (member === "IntArg") v.value = BigInt(v.value);
  if (member === "IntListArg") v.values = v.values.map(BigInt);
  return {{ member, typeCode: 0, value: v }};
}});
const out = [];
for (const [type, size, allowed] of {json.dumps(cases)}) {{
  // Each held value with its text as Python's json.dumps writes it (0.0), as the table has it.
  const param = {{ name: "p", type, kwargOnly: false, required: true, size, alias: null,
    write: false, allowed: allowed && allowed.map(([value, text]) => ({{ value, text }})) }};
  out.push(values.map((v) => valueProblem(param, v, PROGRAM_LAYOUT)));
}}
process.stdout.write(JSON.stringify(out));
""",
    )
    want = [
        [
            calls.value_problem(
                Param("p", t, size=size, allowed=None if a is None else tuple(h for h, _ in a)),
                _model_value(v),
            )
            for v in _GRID_VALUES
        ]
        for t, size, a in cases
    ]
    for case, g, w in zip(cases, got, want, strict=True):
        assert g == w, case
    assert sum(x is not None for row in want for x in row) > len(cases) * 10


def test_typescript_lookup_says_what_python_says(node: str, tmp_path: Path) -> None:
    """ptg-unknown-operator's messages on a small table of the same shape: an operator with
    more overloads than a message lists, a refused one, a missing one, targets that are
    not ATen's."""
    refused = [{"name": "evil", "why": "it does harm"}]
    operators: list[dict[str, Any]] = [
        {"name": "many", "overload": f"o{i}", "params": [], "returns": []} for i in range(10)
    ]
    operators.append({"name": "few", "overload": "default", "params": [], "returns": []})
    doc = {"version": 7, "torch": "9.9.9", "refused": refused, "operators": operators}
    source = {
        "version": 7,
        "torch": "9.9.9",
        "refused": [[r["name"], r["why"]] for r in refused],
        "operators": [overload_line(o) for o in operators],
    }
    targets = [
        "torch.ops.aten.many.o3",
        "torch.ops.aten.many.nope",
        "torch.ops.aten.few.nope",
        "torch.ops.aten.few.default",
        "torch.ops.aten.evil.default",
        "torch.ops.aten.absent.default",
        "torch.ops.aten.__proto__.default",
        "torch.ops.aten.few.__proto__",
        "torch.ops.other.few.default",
        "torch.ops.aten.few",
        "torch.ops.aten.few.default\n",
        "",
        "os.system",
        "torch.ops.évil.x.y",
    ]
    got = _node_json(
        node,
        tmp_path,
        f"""
import {{ OperatorTable }} from {json.dumps((DIST / "index.js").as_uri())};
const t = new OperatorTable({json.dumps(source)});
const out = [];
for (const target of {json.dumps(targets)}) {{
  try {{ out.push(["ok", t.lookup(target).qualified]); }}
  catch (e) {{ out.push([e.rule, e.tokens, e.message]); }}
}}
process.stdout.write(JSON.stringify(out));
""",
    )
    table = OperatorTable(doc)
    want: list[list[Any]] = []
    for target in targets:
        try:
            want.append(["ok", table.lookup(target).qualified])
        except NodeProblem as problem:
            want.append([problem.rule, list(problem.tokens), problem.message])
    assert got == want
    assert any("o7, ..." in str(w) for w in want)  # the list is cut, as Python cuts it


# -- a corpus of real exports edited node by node ----------------------------------------------

TARGETS = [
    f"torch.ops.aten.{s.name}.{s.overload}"
    for overloads in operator_table().operators.values()
    for s in overloads.values()
]
WRITERS = [
    t
    for t, s in zip(
        TARGETS,
        (s for o in operator_table().operators.values() for s in o.values()),
        strict=True,
    )
    if any(p.write for p in s.params)
]
HELD = [
    t
    for t, s in zip(
        TARGETS,
        (s for o in operator_table().operators.values() for s in o.values()),
        strict=True,
    )
    if any(p.allowed is not None for p in s.params)
]
VIEWS = [
    "torch.ops.aten.view.default",
    "torch.ops.aten.transpose.int",
    "torch.ops.aten.slice.Tensor",
    "torch.ops.aten.split.Tensor",
    "torch.ops.aten.unbind.int",
    "torch.ops.aten.alias.default",
    "torch.ops.aten.view_copy.default",
]
ODD_TARGETS = [
    "",
    "builtins.eval",
    "os.system",
    "torch.ops.torchvision.nms.default",
    "torch.ops.aten.from_file.default",
    "torch.ops.aten._print.default",
    "torch.ops.aten.not_an_op.default",
    "torch.ops.aten.linear.out",
    "torch.ops.aten.add.bogus",
    "torch.ops.aten.add",
    "torch.ops.aten.add.Tensor.extra",
    "torch.ops.aten.é.default",
    "torch.ops.aten.__proto__.default",
    "torch.ops.aten.constructor.toString",
    "torch.ops.aten.add.__proto__",
]
STRINGS = [
    "cpu",
    "cuda",
    "cuda:0",
    "cpu:12345",
    "meta",
    "torch.float32",
    "torch.strided",
    "torch.channels_last",
    "torch.preserve_format",
    "bogus",
    "",
    "it's",
    'quo"te\n',
    "tanh",
]


def _lookup(target: str) -> Schema | None:
    try:
        return operator_table().lookup(target)
    except NodeProblem:
        return None


class _Mutator:
    def __init__(self, rng: random.Random, plain: dict[str, Any]) -> None:
        self.rng = rng
        self.plain = plain
        self.fresh = 0

    def method(self) -> dict[str, Any]:
        return self.rng.choice(self.plain["methods"])

    def names(self, method: dict[str, Any]) -> list[str]:
        graph = method["graph"]
        found = list(graph.get("inputs", []))
        found += [c["name"] for c in method.get("constants", [])]
        found += [b["name"] for b in method.get("mutable_buffers", [])]
        for n in graph["nodes"]:
            for o in n.get("outputs", []):
                found += [o["name"], *o.get("names", [])]
        return [n for n in found if n] + ["undefined_x"]

    def new_name(self) -> str:
        self.fresh += 1
        return f"ts_probe_{self.fresh}"

    def calls(self, method: dict[str, Any]) -> list[dict[str, Any]]:
        return [n for n in method["graph"]["nodes"] if n.get("op_kind", 0) == 0]

    def value(self, names: list[str], depth: int = 0) -> Any:
        r = self.rng
        pick = lambda: r.choice(names)  # noqa: E731
        ref = lambda: r.choice(["", "", pick()])  # noqa: E731
        kinds = [
            lambda: ("TensorArg", {"name": pick()}),
            lambda: ("NoneArg", {}),
            lambda: ("IntArg", {"value": r.choice([0, 1, -1, 2**62]), "ref": ref()}),
            lambda: ("FloatArg", {"value": r.choice([0.0, -0.0, 0.5, 1e300]), "ref": ref()}),
            lambda: ("BoolArg", {"value": r.random() < 0.5, "ref": ref()}),
            lambda: ("StringArg", {"value": r.choice(STRINGS)}),
            lambda: ("ScalarTypeArg", {"value": r.choice([6, 0, 11, 15, 100, -1])}),
            lambda: (
                "IntListArg",
                {"values": [1, 2], "refs": r.choice([[], ["", ""], [pick()], ["", pick()]])},
            ),
            lambda: ("FloatListArg", {"values": [1.0, 0.0]}),
            lambda: ("BoolListArg", {"values": [True]}),
            lambda: ("TensorListArg", {"names": [pick(), pick()]}),
            lambda: (
                "OptionalTensorListArg",
                {
                    "names": [pick(), pick()],
                    "has_value": r.choice([[True, False], [True], [True, True, True]]),
                },
            ),
            lambda: None,
        ]
        if depth == 0:
            kinds.append(lambda: ("GraphArg", {"name": "g", "graph": self.subgraph(names)}))
        return r.choice(kinds)()

    def fitting(self, param: Param, names: list[str]) -> Any:
        """A value of a kind ``param`` takes, mostly; now and then one whose kind or content
        is off (a device that is not the CPU, a list whose refs do not match...)."""
        r = self.rng
        if r.random() < 0.1:
            return self.value(names, depth=1)
        kind = param.type
        if kind.endswith("?") and r.random() < 0.4:
            return ("NoneArg", {})
        kind = kind.rstrip("?")
        if param.allowed is not None and r.random() < 0.7:
            v = r.choice(param.allowed)
            ref = r.choice(["", "", "", r.choice(names)])
            if v is None:
                return ("NoneArg", {})
            if isinstance(v, bool):
                return ("BoolArg", {"value": r.choice([v, v, not v]), "ref": ref})
            if isinstance(v, str):
                return ("StringArg", {"value": r.choice([v, v, "cuda", "cuda:1"])})
            return r.choice(
                [("FloatArg", {"value": float(v), "ref": ref}), ("IntArg", {"value": 0, "ref": ""})]
            )
        text = lambda *usual: ("StringArg", {"value": r.choice([*usual, *usual, *STRINGS])})  # noqa: E731
        refs = lambda: r.choice([[], [], ["", ""], [r.choice(names)]])  # noqa: E731
        table = {
            "Tensor": lambda: ("TensorArg", {"name": r.choice(names)}),
            "int": lambda: ("IntArg", {"value": r.choice([0, 1]), "ref": ""}),
            "float": lambda: r.choice(
                [("FloatArg", {"value": 0.5, "ref": ""}), ("IntArg", {"value": 2, "ref": ""})]
            ),
            "bool": lambda: ("BoolArg", {"value": False, "ref": ""}),
            "Scalar": lambda: r.choice(
                [("IntArg", {"value": 1, "ref": ""}), ("FloatArg", {"value": 1.5, "ref": ""})]
            ),
            "str": lambda: text("none", "tanh"),
            "ScalarType": lambda: r.choice(
                [("ScalarTypeArg", {"value": r.choice([6, 6, 4, 100, -1])}), text("torch.float32")]
            ),
            "Layout": lambda: text("torch.strided"),
            "MemoryFormat": lambda: text("torch.contiguous_format"),
            "Device": lambda: text("cpu"),
            "int[]": lambda: (
                ("IntArg", {"value": 1, "ref": ""})
                if param.size is not None and r.random() < 0.3
                else ("IntListArg", {"values": [0, 1], "refs": refs()})
            ),
            "float[]": lambda: ("FloatListArg", {"values": [1.0]}),
            "bool[]": lambda: ("BoolListArg", {"values": [False]}),
            "Tensor[]": lambda: ("TensorListArg", {"names": [r.choice(names), r.choice(names)]}),
            "Tensor?[]": lambda: r.choice(
                [
                    (
                        "OptionalTensorListArg",
                        {
                            "names": [r.choice(names), ""],
                            "has_value": r.choice([[True, False], [True]]),
                        },
                    ),
                    ("TensorListArg", {"names": [r.choice(names)]}),
                ]
            ),
            "Scalar[]": lambda: ("IntListArg", {"values": [1], "refs": []}),
        }
        make = table.get(kind)
        return make() if make is not None else self.value(names)

    def call(self, target: str, names: list[str]) -> dict[str, Any]:
        """A call node of ``target`` whose arguments fit its schema, mostly."""
        r = self.rng
        schema = _lookup(target)
        name = self.new_name()
        inputs = []
        outputs: list[dict[str, Any]] = [{"name": name, "kind": 0}]
        if schema is not None:
            named = r.random() < 0.8
            for p in schema.params:
                if not p.required and r.random() < 0.5:
                    named = True  # a parameter left out: the ones after it go by name
                    continue
                named = named or p.kwarg_only
                inputs.append(
                    {"name": p.name if named else "", "arg": {"value": self.fitting(p, names)}}
                )
            if not named and r.random() < 0.2:  # one positional argument too many
                inputs.append({"name": "", "arg": {"value": ("IntArg", {"value": 0, "ref": ""})}})
            outputs = []
            for k, ret in enumerate(schema.returns):
                if ret.type == "Tensor[]":
                    names_k = [f"{name}_{k}_0", f"{name}_{k}_1"]
                    outputs.append({"name": "", "kind": 1, "names": names_k})
                else:
                    kinds = calls.RETURN_KINDS.get(ret.type, (0,))
                    outputs.append({"name": f"{name}_{k}" if k else name, "kind": kinds[0]})
        return {"name": name, "op_kind": 0, "target": target, "inputs": inputs, "outputs": outputs}

    def subgraph(self, names: list[str]) -> dict[str, Any]:
        inner = ["a", "b"]
        nodes = [self.call(self.rng.choice(TARGETS + ODD_TARGETS[:3]), inner) for _ in range(2)]
        return {"nodes": nodes, "inputs": ["a", "b"], "outputs": [nodes[-1]["name"]]}

    def insert(self, method: dict[str, Any], node: dict[str, Any]) -> None:
        nodes = method["graph"]["nodes"]
        last = len(nodes) - (1 if nodes and nodes[-1].get("op_kind") == 2 else 0)
        first = next((i for i, n in enumerate(nodes) if n.get("op_kind", 0) != 1), last)
        nodes.insert(self.rng.randint(first, last), node)

    # -- the edits ---------------------------------------------------------------------------

    def retarget(self) -> None:
        nodes = self.calls(self.method())
        if nodes:
            self.rng.choice(nodes)["target"] = self.rng.choice(
                self.rng.choice([TARGETS, ODD_TARGETS])
            )

    def argument(self) -> None:
        method = self.method()
        nodes = [n for n in self.calls(method) if n.get("inputs")]
        if not nodes:
            return
        arg = self.rng.choice(self.rng.choice(nodes)["inputs"])
        what = self.rng.randrange(3)
        if what == 0:
            arg["arg"] = {"value": self.value(self.names(method))}
        elif what == 1:
            arg["name"] = self.rng.choice(["", "bogus", "self", "other", "alpha", "dim", "out"])
        else:
            arg["arg"] = {"value": self.value(self.names(method))}
            arg["name"] = ""

    def arguments(self) -> None:
        nodes = [n for n in self.calls(self.method()) if n.get("inputs")]
        if not nodes:
            return
        inputs = self.rng.choice(nodes)["inputs"]
        what = self.rng.randrange(3)
        if what == 0:
            del inputs[self.rng.randrange(len(inputs))]
        elif what == 1:
            inputs.append(copy.deepcopy(self.rng.choice(inputs)))
        else:
            self.rng.shuffle(inputs)

    def outputs(self) -> None:
        nodes = self.calls(self.method())
        if not nodes:
            return
        outs = self.rng.choice(nodes).setdefault("outputs", [])
        what = self.rng.randrange(3)
        if what == 0:
            outs.append({"name": self.new_name(), "kind": self.rng.randrange(6)})
        elif what == 1 and outs:
            self.rng.choice(outs)["kind"] = self.rng.randrange(6)
        elif outs:
            outs.pop()

    def bound_call(self) -> None:
        method = self.method()
        targets = self.rng.choice([TARGETS, TARGETS, HELD])  # HELD: parameters held to values
        self.insert(method, self.call(self.rng.choice(targets), self.names(method)))

    def write_in_place(self) -> None:
        """A view of some value (maybe), then an in-place operator writing it."""
        method = self.method()
        names = self.names(method)
        target = self.rng.choice(names)
        if self.rng.random() < 0.5:
            view = self.call(self.rng.choice(VIEWS), [target])
            self.insert(method, view)
            out = view["outputs"][0] if view["outputs"] else {"name": target}
            target = out["name"] or (out.get("names") or [target])[0]
        node = self.call(self.rng.choice(WRITERS), names)
        for arg in node["inputs"]:
            if arg["name"] == "self" or (not arg["name"] and arg is node["inputs"][0]):
                arg["arg"] = {"value": ("TensorArg", {"name": target})}
        self.insert(method, node)

    def redefine(self) -> None:
        method = self.method()
        graph = method["graph"]
        nodes = graph["nodes"]
        what = self.rng.randrange(4)
        if what == 0 and self.calls(method):
            node = self.rng.choice(self.calls(method))
            if node.get("outputs"):
                node["outputs"][0]["name"] = self.rng.choice(self.names(method)[:-1] or ["x"])
        elif what == 1 and nodes:
            node = self.rng.choice(nodes)
            nodes.insert(nodes.index(node) + 1, copy.deepcopy(node))
        elif what == 2 and graph.get("inputs"):
            graph["inputs"].append(self.rng.choice(graph["inputs"]))
        elif method.get("constants"):
            method["constants"].append(copy.deepcopy(self.rng.choice(method["constants"])))

    def state(self) -> None:
        method = self.method()
        what = self.rng.randrange(4)
        specs = method.setdefault("output_specs", [])
        if what == 0:
            method["output_specs"] = [s for s in specs if s.get("kind") != 1]
        elif what == 1 and method["graph"].get("inputs"):
            out = method["graph"].get("outputs") or ["x"]
            specs.append(
                {"name": out[0], "kind": 2, "target": self.rng.choice(method["graph"]["inputs"])}
            )
        elif what == 2 and method.get("constants"):
            constant = self.rng.choice(method["constants"])
            constant["mutated"] = not constant.get("mutated", False)
        elif specs:
            self.rng.choice(specs)["target"] = self.rng.choice(["acc", "offset", "cache", "x"])

    def op_kind(self) -> None:
        nodes = self.method()["graph"]["nodes"]
        if nodes:
            self.rng.choice(nodes)["op_kind"] = self.rng.randrange(4)

    def subgraph_argument(self) -> None:
        method = self.method()
        nodes = [n for n in self.calls(method) if n.get("inputs")]
        if nodes:
            arg = self.rng.choice(self.rng.choice(nodes)["inputs"])
            arg["arg"] = {"value": ("GraphArg", {"name": "g", "graph": self.subgraph([])})}


EDITS = [
    _Mutator.retarget,
    _Mutator.argument,
    _Mutator.arguments,
    _Mutator.outputs,
    _Mutator.bound_call,
    _Mutator.bound_call,
    _Mutator.write_in_place,
    _Mutator.write_in_place,
    _Mutator.redefine,
    _Mutator.state,
    _Mutator.op_kind,
    _Mutator.subgraph_argument,
]


def _members(path: Path) -> tuple[dict[str, bytes], dict[str, Any]]:
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist() if n != "program.ptg"}
        program, _ = read_program(z.read("program.ptg"))
    assert program is not None
    return members, to_plain(program)


def mutants(count: int, seed: int = 44) -> dict[str, bytes]:
    rng = random.Random(seed)
    bases = {p.stem: _members(p) for p in sorted(REAL.glob("*.ptn"))}
    out = {}
    for i in range(count):
        name = rng.choice(sorted(bases))
        members, plain = bases[name]
        mutator = _Mutator(rng, copy.deepcopy(plain))
        for _ in range(rng.randint(1, 4)):
            rng.choice(EDITS)(mutator)
        out[f"{i:03d}-{name}"] = hostile.package(members, build_program(mutator.plain))
    return out


def _findings(document: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    return [
        [(x["rule"], x["severity"], x["member"], x["pointer"], x["message"]) for x in f["findings"]]
        for f in document["files"]
    ]


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "deep"])
def test_operator_rules_agree_with_python_message_for_message(
    node: str, tmp_path: Path, fast: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reference is ptn's Python: the compiled-in native validator, which answers for
    # programs without call nodes, does not read the operator table (ptn.package.native).
    monkeypatch.setenv("PTN_NATIVE", "0")
    assert gaps("typescript") == (), "the binding declares no gap: every finding is compared"
    paths = []
    for name, data in mutants(MUTANTS).items():
        path = tmp_path / f"{name}.ptn"
        path.write_bytes(data)
        paths.append(path)
    proc = subprocess.run(
        [node, str(COMMAND), *(["--fast"] if fast else []), "--json", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode in (0, 1), proc.stderr
    got = _findings(json.loads(proc.stdout))
    seen: Counter[str] = Counter()
    for path, found in zip(paths, got, strict=True):
        want = [
            (f.rule, f.severity, f.member, f.pointer, f.message)
            for f in validate(path, fast=fast).findings
        ]
        seen.update(f[0] for f in want)
        assert [f[:4] for f in found] == [f[:4] for f in want], path.name
        for g, w in zip(found, want, strict=True):
            if not g[0].startswith(OWN_WORDING):
                assert g[4] == w[4], (path.name, g, w)
    # Not vacuous: every rule of the table was found, and often.
    for rule in [*OPERATOR_RULES, "ptg-undefined-value"]:
        assert seen[rule] >= 10, (rule, seen)


def test_the_corpus_is_reproducible() -> None:
    """Same seed, same bytes: a disagreement found once is found again."""
    assert mutants(5) == mutants(5)
    assert len({bytes(v) for v in mutants(20).values()}) == 20
    assert all(zipfile.ZipFile(io.BytesIO(v)).testzip() is None for v in mutants(3).values())


@pytest.mark.parametrize(
    "param",
    [
        {"name": "device", "type": "Device?", "allowed": ["cpu 0", None]},
        {"name": "device", "type": "Device?", "allowed": ["cpu|cuda"]},
        {"name": "self", "type": "Tensor", "write": True},
        {"name": "bad name", "type": "Tensor"},
        {"name": "x", "type": "Tensor(a)"},
    ],
)
def test_a_table_the_compact_form_cannot_carry_stops_the_build(param: dict[str, Any]) -> None:
    """Rather than a line the TypeScript parser would read otherwise."""
    doc = {
        "version": 1,
        "torch": "2.13.0",
        "refused": [],
        "operators": [{"name": "op", "overload": "default", "params": [param], "returns": []}],
    }
    with pytest.raises(ValueError, match=r"compact|alias set"):
        emit_operator_table(doc)
