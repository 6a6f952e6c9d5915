"""``ptg-undefined-value`` and ``ptg-redefined-value``: every value a graph uses is
defined earlier in that graph, and no value is defined twice.

A graph's values are named once each (static single assignment), in one namespace per
graph: its inputs, its nodes' outputs, and in a method's top graph the method's bound
constants and mutable buffers. A runtime looks each name up as it executes the nodes
in order, so a name used before (or without) its definition leaves it nothing to
compute with, and a name defined twice is one value for one reader and another for the
next. No torch needed: every validator checks this, fast and deep.

The walk visits each node once per offset that reaches it, which the verifier bounds
by the size of program.ptg (spec.md, ``ptg-malformed``), and keeps one set of names per
graph on the way down: linear time, memory bounded by the program.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ptn.core.errors import Finding, FindingBudget, pointer
from ptn.core.names import PTG
from ptn.program.layout import load_layout
from ptn.program.model import (
    BoolArg,
    FloatArg,
    GraphArg,
    IntArg,
    IntListArg,
    Method,
    Node,
    OptionalTensorListArg,
    Program,
    TensorArg,
    TensorListArg,
)

_LAYOUT = load_layout()
PLACEHOLDER = _LAYOUT.enums["OpKind"]["PLACEHOLDER"]
TENSOR_LIST = _LAYOUT.enums["OutputValueKind"]["TENSOR_LIST"]
USER_INPUT_MUTATION = _LAYOUT.enums["OutputKind"]["USER_INPUT_MUTATION"]

Tokens = tuple[str | int, ...]


def uses(node: Node) -> Iterator[tuple[Tokens, str, str]]:
    """(pointer tokens below the node, name, what uses it) of every value ``node``'s
    arguments and outputs refer to, in order (a PLACEHOLDER's own name excepted)."""
    for k, arg in enumerate(node.inputs):
        at: Tokens = ("inputs", k, "arg", "value")
        what = f"argument {arg.name!r}" if arg.name else f"argument {k}"
        value = arg.value
        if isinstance(value, TensorArg):
            yield (*at, "name"), value.name, what
        elif isinstance(value, TensorListArg):
            for m, name in enumerate(value.names):
                yield (*at, "names", m), name, f"{what}[{m}]"
        elif isinstance(value, OptionalTensorListArg):
            for m, (name, present) in enumerate(zip(value.names, value.has_value, strict=False)):
                if present:
                    yield (*at, "names", m), name, f"{what}[{m}]"
        elif isinstance(value, IntArg | FloatArg | BoolArg):
            if value.ref:
                yield (*at, "ref"), value.ref, what
        elif isinstance(value, IntListArg):
            for m, ref in enumerate(value.refs):
                if ref:
                    yield (*at, "refs", m), ref, f"{what}[{m}]"
    for o, out in enumerate(node.outputs):
        if out.alias_of:
            yield ("outputs", o, "alias_of"), out.alias_of, f"output {o}'s alias_of"


def defines(node: Node) -> Iterator[tuple[Tokens, str]]:
    """(pointer tokens below the node, name) of each value ``node`` defines: each
    output's (a tensor list's element names). A placeholder's output that bears the
    placeholder's own name stands for the input, constant or buffer it places."""
    for o, out in enumerate(node.outputs):
        if out.kind == TENSOR_LIST:
            for m, name in enumerate(out.names):
                if name:  # an element nothing uses may go unnamed
                    yield ("outputs", o, "names", m), name
        elif out.name and not (node.op_kind == PLACEHOLDER and out.name == node.name):
            yield ("outputs", o, "name"), out.name


class _Walk:
    def __init__(self) -> None:
        self.out = FindingBudget()  # 10^5 references to one missing name list 100

    def report(self, tokens: Tokens, message: str, rule: str = "ptg-undefined-value") -> None:
        if self.out.room(rule, "error"):
            self.out.append(Finding(rule, "error", PTG, pointer(*tokens), message))
        else:
            self.out.skip(rule, "error")

    def define(
        self, method: str, defined: dict[str, str], tokens: Tokens, name: str, what: str
    ) -> None:
        """Record that ``what`` defines ``name``, or report what defined it first."""
        first = defined.get(name)
        if first is None:
            defined[name] = what
        else:
            self.report(
                tokens,
                f"method {method!r}: {what} defines {name!r}, which {first} already defines; "
                "each value of a graph is named once",
                "ptg-redefined-value",
            )

    def nodes(
        self,
        method: str,
        nodes: tuple[Node, ...],
        outputs: tuple[str, ...],
        base: Tokens,
        defined: dict[str, str],
    ) -> dict[str, str]:
        where = f"method {method!r}"
        placed: set[str] = set()
        for j, node in enumerate(nodes):
            here = (*base, "nodes", j)
            if node.op_kind == PLACEHOLDER:
                if node.name not in defined:
                    self.report(
                        (*here, "name"),
                        f"{where}: placeholder {node.name!r} names no input, constant or "
                        "mutable buffer of its graph",
                    )
                elif node.name in placed:
                    self.report(
                        (*here, "name"),
                        f"{where}: placeholder {node.name!r} places a value that an earlier "
                        "placeholder of its graph places: each value of a graph is named once",
                        "ptg-redefined-value",
                    )
                placed.add(node.name)
            for tokens, name, what in uses(node):
                if name not in defined:
                    self.report(
                        (*here, *tokens),
                        f"{where}, node {node.name!r}: {what} uses {name!r}, which nothing "
                        "before it in its graph defines",
                    )
            for k, arg in enumerate(node.inputs):
                if isinstance(arg.value, GraphArg):
                    sub = arg.value.graph
                    inner = (*here, "inputs", k, "arg", "value", "graph")
                    self.nodes(
                        method,
                        sub.nodes,
                        sub.outputs,
                        inner,
                        self.declared(method, inner, [(("inputs",), (), sub.inputs, "input")]),
                    )
            what = f"node {node.name!r}"
            for tokens, name in defines(node):
                self.define(method, defined, (*here, *tokens), name, what)
        for k, name in enumerate(outputs):
            if name not in defined:
                self.report(
                    (*base, "outputs", k),
                    f"{where}: graph output {k} is {name!r}, which no node, input, constant "
                    "or buffer of its graph defines",
                )
        return defined

    def declared(
        self, method: str, base: Tokens, groups: Iterable[tuple[Tokens, Tokens, Iterable[str], str]]
    ) -> dict[str, str]:
        """The values a graph starts with, group by group (its inputs; a method's constants
        and buffers), each named once. A group: the pointer tokens before and after each
        one's index (below ``base``), the names, and what they are."""
        defined: dict[str, str] = {}
        for before, after, names, kind in groups:
            for k, name in enumerate(names):
                self.define(method, defined, (*base, *before, k, *after), name, f"{kind} {k}")
        return defined

    def method(self, i: int, method: Method) -> None:
        graph = method.graph
        groups: list[tuple[Tokens, Tokens, Iterable[str], str]] = [
            (("graph", "inputs"), (), graph.inputs, "input"),
            (("constants",), ("name",), (c.name for c in method.constants), "constant"),
            (
                ("mutable_buffers",),
                ("name",),
                (b.name for b in method.mutable_buffers),
                "mutable buffer",
            ),
        ]
        defined = self.declared(method.name, ("methods", i), groups)
        base: Tokens = ("methods", i, "graph")
        defined = self.nodes(method.name, graph.nodes, graph.outputs, base, defined)
        for k, spec in enumerate(method.output_specs):
            at = ("methods", i, "output_specs", k)
            if spec.name not in defined:
                self.report(
                    (*at, "name"),
                    f"method {method.name!r}: output spec {k} returns {spec.name!r}, which "
                    "nothing in the graph defines",
                )
            if spec.kind == USER_INPUT_MUTATION and spec.target not in graph.inputs:
                self.report(
                    (*at, "target"),
                    f"method {method.name!r}: output spec {k} updates user input "
                    f"{spec.target!r}, which is not an input of the graph",
                )


def undefined_findings(program: Program) -> list[Finding]:
    """``ptg-undefined-value`` and ``ptg-redefined-value`` for every method, in program
    order (each node: its uses, its subgraphs, then its definitions), within the budget."""
    walk = _Walk()
    for i, method in enumerate(program.methods):
        walk.method(i, method)
    return walk.out.finish()
