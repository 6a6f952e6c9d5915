"""A call node against its operator's schema (``ptg-operator-schema-mismatch``).

``bind`` pairs each argument of a node with the schema parameter it names, checks that
the value is of a kind the parameter's type takes (and one of the values the table holds
a few parameters to), that every required parameter is given, and that the node's
outputs fit what the operator returns. It works on plain data
(``ptn.program.operators.Schema``); the runner (ptn.interop) calls it to plan each call,
validation (ptn.program.effects) to check every node. String arguments that stand for
torch enums are accepted by the names listed here, which the runner maps to torch's
objects.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ptn.program.layout import load_layout
from ptn.program.model import (
    ArgValue,
    BoolArg,
    BoolListArg,
    FloatArg,
    FloatListArg,
    GraphArg,
    IntArg,
    IntListArg,
    Node,
    NoneArg,
    OptionalTensorListArg,
    ScalarTypeArg,
    StringArg,
    TensorArg,
    TensorListArg,
    UnknownMember,
)
from ptn.program.operators import NodeProblem, Param, Schema

_LAYOUT = load_layout()
_KIND = _LAYOUT.enums["OutputValueKind"]

LAYOUTS = (
    "torch.strided",
    "torch.sparse_coo",
    "torch.sparse_csr",
    "torch.sparse_csc",
    "torch.sparse_bsr",
    "torch.sparse_bsc",
    "torch._mkldnn",
    "torch.jagged",
)
MEMORY_FORMATS = (
    "torch.contiguous_format",
    "torch.preserve_format",
    "torch.channels_last",
    "torch.channels_last_3d",
)
DTYPE_NAMES = {
    "torch.uint8": "BYTE",
    "torch.int8": "CHAR",
    "torch.int16": "SHORT",
    "torch.int32": "INT",
    "torch.int64": "LONG",
    "torch.float16": "HALF",
    "torch.float32": "FLOAT",
    "torch.float64": "DOUBLE",
    "torch.bool": "BOOL",
    "torch.bfloat16": "BFLOAT16",
    "torch.uint16": "UINT16",
    "torch.uint32": "UINT32",
    "torch.uint64": "UINT64",
}
"""A dtype written as a string, by the name torch prints, -> its ScalarType."""
DEVICE = re.compile(r"(cpu|cuda|mps|xpu|meta)(:[0-9]{1,4})?")
"""The devices a ``Device`` string may name (the table holds every device to ``cpu``)."""

_ENUM_STRINGS: dict[str, tuple[str, ...]] = {
    "Layout": LAYOUTS,
    "MemoryFormat": MEMORY_FORMATS,
    "ScalarType": tuple(DTYPE_NAMES),
}
_SCALARS: dict[str, tuple[type, ...]] = {
    "Tensor": (TensorArg,),
    "int": (IntArg,),
    "float": (FloatArg, IntArg),
    "bool": (BoolArg,),
    "Scalar": (IntArg, FloatArg, BoolArg),
    "str": (StringArg,),
    "ScalarType": (ScalarTypeArg, StringArg),
    "Layout": (StringArg,),
    "MemoryFormat": (StringArg,),
    "Device": (StringArg,),
}
_LISTS: dict[str, tuple[type, ...]] = {
    "int": (IntListArg,),
    "float": (FloatListArg,),
    "bool": (BoolListArg,),
    "Tensor": (TensorListArg,),
    "Tensor?": (OptionalTensorListArg, TensorListArg),
    "Scalar": (IntListArg, FloatListArg),
}
RETURN_KINDS: dict[str, tuple[int, ...]] = {
    # The output kinds a node may give each type an operator returns.
    "Tensor": (_KIND["TENSOR"],),
    "Tensor?": (_KIND["TENSOR"],),
    "Tensor[]": (_KIND["TENSOR_LIST"],),
    "int": (_KIND["INT"],),
    "float": (_KIND["FLOAT"],),
    "bool": (_KIND["BOOL"],),
    "Scalar": (_KIND["INT"], _KIND["FLOAT"], _KIND["BOOL"]),
}


def kind_name(value: ArgValue | None) -> str:
    if value is None:
        return "an argument holding no value"
    if isinstance(value, UnknownMember):
        return f"an ArgumentValue member ptn does not know (type {value.type_code})"
    return f"a {type(value).__name__}"


def value_problem(param: Param, value: ArgValue | None) -> str | None:
    """Why ``value`` is of no kind ``param``'s type takes; None when it is."""
    kind = param.type
    if kind.endswith("?"):
        if isinstance(value, NoneArg):
            return None
        kind = kind[:-1]
    if kind.endswith("[]"):
        allowed = _LISTS.get(kind[:-2], ())
        if param.size is not None and kind == "int[]":
            allowed += (IntArg,)
    else:
        allowed = _SCALARS.get(kind, ())
    if not allowed:
        return f"is {kind_name(value)}, and ptn passes no value of type {param.type}"
    if not isinstance(value, allowed):
        return f"is {kind_name(value)}; {param.type} takes " + " or ".join(
            f"a {c.__name__}" for c in allowed
        )
    problem = _content_problem(kind, value)
    if problem is None and param.allowed is not None and not _is_allowed(value, param.allowed):
        listed = " or ".join(json.dumps(v) for v in param.allowed)
        return f"may only be {listed}: the operator table holds it there to keep the call pure"
    return problem


def _is_allowed(value: ArgValue | None, allowed: tuple[str | float | bool | None, ...]) -> bool:
    """Whether ``value``, of a kind its parameter takes, is a literal among ``allowed`` (a
    symbolic one never is; a NoneArg never gets here: an optional parameter takes it)."""
    if isinstance(value, StringArg):
        return value.value in allowed
    if not isinstance(value, IntArg | FloatArg | BoolArg) or value.ref:
        return False
    if isinstance(value, BoolArg):
        return any(v is value.value for v in allowed)
    return any(
        isinstance(v, int | float) and not isinstance(v, bool) and v == value.value for v in allowed
    )


def _content_problem(kind: str, value: ArgValue | None) -> str | None:
    if isinstance(value, StringArg):
        text = value.value
        if kind == "Device":
            return None if DEVICE.fullmatch(text) else f"is {text!r}, which names no device"
        names = _ENUM_STRINGS.get(kind)
        if names is not None and text not in names:
            return f"is {text!r}, which is no {kind} ptn knows ({', '.join(names[:4])}, ...)"
    elif isinstance(value, ScalarTypeArg):
        if _LAYOUT.enum_name("ScalarType", value.value) is None:
            return f"is ScalarType code {value.value}, which the program layout does not list"
    elif isinstance(value, IntListArg) and value.refs and len(value.refs) != len(value.values):
        return f"has {len(value.values)} values but {len(value.refs)} refs"
    elif isinstance(value, OptionalTensorListArg) and len(value.has_value) != len(value.names):
        return f"has {len(value.names)} names but {len(value.has_value)} has_value flags"
    return None


@dataclass(frozen=True, slots=True)
class Bound:
    """How a node calls its operator: (input index, parameter) of the arguments passed
    by position, in order, then of those passed by name."""

    positional: tuple[tuple[int, Param], ...]
    keywords: tuple[tuple[int, Param], ...]


def bind(node: Node, schema: Schema) -> Bound:
    """Pair the node's arguments with ``schema``'s parameters, or raise NodeProblem
    (``ptg-operator-schema-mismatch``) saying which argument does not fit and why."""
    problem = "ptg-operator-schema-mismatch"
    by_name = {p.name: i for i, p in enumerate(schema.params)}
    given: dict[int, int] = {}  # parameter index -> input index
    named = False
    for k, arg in enumerate(node.inputs):
        at: tuple[str | int, ...] = ("inputs", k)
        if isinstance(arg.value, GraphArg):
            raise NodeProblem(
                problem,
                (*at, "arg", "value"),
                f"argument {k} is a subgraph: no ATen operator takes one",
            )
        if arg.name:
            named = True
            index = by_name.get(arg.name)
            if index is None:
                known = ", ".join(p.name for p in schema.params) or "none"
                raise NodeProblem(
                    problem,
                    (*at, "name"),
                    f"{schema.qualified} has no argument {arg.name!r} (its arguments: {known})",
                )
        else:
            if named:
                raise NodeProblem(problem, at, f"argument {k} is positional but follows named ones")
            index = k
            if index >= len(schema.params) or schema.params[index].kwarg_only:
                raise NodeProblem(
                    problem, at, f"argument {k} is positional, and {schema.qualified} takes fewer"
                )
        param = schema.params[index]
        if index in given:
            raise NodeProblem(problem, at, f"argument {param.name!r} is given twice")
        why = value_problem(param, arg.value)
        if why is not None:
            raise NodeProblem(problem, (*at, "arg", "value"), f"argument {param.name!r} {why}")
        given[index] = k
    for index, param in enumerate(schema.params):
        if param.required and index not in given:
            raise NodeProblem(
                problem, ("inputs",), f"{schema.qualified} needs argument {param.name!r}"
            )
    _check_outputs(node, schema)
    positional: list[tuple[int, Param]] = []
    keywords: list[tuple[int, Param]] = []
    for index, param in enumerate(schema.params):
        if index not in given:
            continue
        # By position while no parameter before it was left out (its default applies).
        if not param.kwarg_only and index == len(positional) and not keywords:
            positional.append((given[index], param))
        else:
            keywords.append((given[index], param))
    return Bound(tuple(positional), tuple(keywords))


def _check_outputs(node: Node, schema: Schema) -> None:
    problem = "ptg-operator-schema-mismatch"
    outs = node.outputs
    if outs and len(outs) != len(schema.returns):
        raise NodeProblem(
            problem,
            ("outputs",),
            f"the node defines {len(outs)} outputs; {schema.qualified} returns "
            f"{len(schema.returns)}",
        )
    for o, (out, returned) in enumerate(zip(outs, schema.returns, strict=False)):
        kinds = RETURN_KINDS.get(returned.type, ())
        if out.kind not in kinds:
            said = _LAYOUT.enum_name("OutputValueKind", out.kind) or f"kind code {out.kind}"
            raise NodeProblem(
                problem,
                ("outputs", o, "kind"),
                f"output {o} is a {said}; {schema.qualified} returns a {returned.type} there",
            )


def node_error(method: str, node: Node, problem: NodeProblem) -> str:
    """The message of a finding about ``node``: where, then the problem."""
    return f"method {method!r}, node {node.name!r}: {problem.message}"
