"""``ptg-undefined-value``: every value a graph uses is defined earlier in that graph.

A graph's values are named once each (static single assignment), in one namespace per
graph: its inputs, its nodes' outputs, and in a method's top graph the method's bound
constants and mutable buffers. A runtime looks each name up as it executes the nodes
in order, so a name used before (or without) its definition leaves it nothing to
compute with. No torch needed: every validator checks this, fast and deep.

The walk visits each node once per offset that reaches it, which the verifier bounds
by the size of program.ptg (spec.md, ``ptg-malformed``), and keeps one set of names per
graph on the way down: linear time, memory bounded by the program.
"""

from __future__ import annotations

from collections.abc import Iterator

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


def defines(node: Node) -> Iterator[str]:
    """The names ``node`` defines: each output's (a tensor list's element names)."""
    for out in node.outputs:
        if out.kind == TENSOR_LIST:
            yield from out.names
        elif out.name:
            yield out.name


class _Walk:
    def __init__(self) -> None:
        self.out = FindingBudget()  # 10^5 references to one missing name list 100

    def report(self, tokens: Tokens, message: str) -> None:
        if self.out.room("ptg-undefined-value", "error"):
            where = pointer(*tokens)
            self.out.append(Finding("ptg-undefined-value", "error", PTG, where, message))
        else:
            self.out.skip("ptg-undefined-value", "error")

    def nodes(
        self,
        method: str,
        nodes: tuple[Node, ...],
        outputs: tuple[str, ...],
        base: Tokens,
        defined: set[str],
    ) -> set[str]:
        where = f"method {method!r}"
        for j, node in enumerate(nodes):
            here = (*base, "nodes", j)
            if node.op_kind == PLACEHOLDER and node.name not in defined:
                self.report(
                    (*here, "name"),
                    f"{where}: placeholder {node.name!r} names no input, constant or mutable "
                    "buffer of its graph",
                )
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
                    self.nodes(method, sub.nodes, sub.outputs, inner, set(sub.inputs))
            defined.update(defines(node))
        for k, name in enumerate(outputs):
            if name not in defined:
                self.report(
                    (*base, "outputs", k),
                    f"{where}: graph output {k} is {name!r}, which no node, input, constant "
                    "or buffer of its graph defines",
                )
        return defined

    def method(self, i: int, method: Method) -> None:
        graph = method.graph
        defined = {*graph.inputs, *(c.name for c in method.constants)}
        defined.update(b.name for b in method.mutable_buffers)
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
    """``ptg-undefined-value`` for every method, in program order, within the budget."""
    walk = _Walk()
    for i, method in enumerate(program.methods):
        walk.method(i, method)
    return walk.out.finish()
