"""The operator rules of a program's graphs, from ptn's operator table (spec.md 4.5).

Every call node names an operator of the table and fits its schema
(``ptg-unknown-operator``, ``ptg-operator-schema-mismatch``: ptn.program.operators and
ptn.program.calls). What a node may write follows from the table too: a parameter the
table marks written (``Tensor(a!)``: an in-place operator's ``self``) may only be given
a value whose storage the method declares as state, a mutated constant, a non-persistent
buffer or a user input that an output spec updates, or a value the graph computed itself
(``ptg-undeclared-mutation``). The storage a value lives in (its root) follows the
table's alias sets: the output of a view operator (``Tensor(a) self -> Tensor(a)``) lives
in its input's. Last, a non-persistent buffer that some node reads and no method writes
is zero at every read (``ptg-buffer-never-written``).

One walk of each method's nodes in order, each looked up once in the table: linear in
the size of the program, with no torch. Subgraphs (``GraphArg``) are checked against the
table, but hold no state of the method: no operator of the table takes one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ptn.core.errors import Finding, FindingBudget, Severity, pointer
from ptn.core.names import PTG
from ptn.program.calls import bind, node_error
from ptn.program.layout import load_layout
from ptn.program.model import (
    CALL_FUNCTION,
    GraphArg,
    Method,
    Node,
    OptionalTensorListArg,
    Program,
    TensorArg,
    TensorListArg,
)
from ptn.program.operators import NodeProblem, OperatorTable, Param, Schema, operator_table

_LAYOUT = load_layout()
_TENSOR_LIST = _LAYOUT.enums["OutputValueKind"]["TENSOR_LIST"]
_OUTPUT_KIND = _LAYOUT.enums["OutputKind"]

Tokens = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class Root:
    """Where a value's storage comes from: what it is (for messages), whether the method
    may write it, and the fqn of the non-persistent buffer it is, if it is one."""

    label: str
    writable: bool
    why: str = ""
    """Why it may not be written (what would declare it), when it may not."""
    buffer: str | None = None


_FRESH = Root("a value the graph computes", True)


@dataclass
class _Buffer:
    """A non-persistent buffer across the program: its first declaration and first read."""

    method: int
    index: int
    name: str
    read: bool = False
    written: bool = False


@dataclass
class _Walk:
    table: OperatorTable
    out: FindingBudget = field(default_factory=FindingBudget)
    buffers: dict[str, _Buffer] = field(default_factory=dict)

    def report(self, rule: str, tokens: Tokens, message: str, severity: Severity = "error") -> None:
        if self.out.room(rule, severity):
            self.out.append(Finding(rule, severity, PTG, pointer(*tokens), message))
        else:
            self.out.skip(rule, severity)

    def schema(self, method: str, node: Node, here: Tokens) -> Schema | None:
        """The node's schema, bound; None (and a finding) when it has none or does not fit."""
        try:
            schema = self.table.lookup(node.target)
            bind(node, schema)
        except NodeProblem as problem:
            self.report(problem.rule, (*here, *problem.tokens), node_error(method, node, problem))
            return None
        return schema

    def method(self, i: int, method: Method) -> None:
        mutated_inputs = {
            s.target for s in method.output_specs if s.kind == _OUTPUT_KIND["USER_INPUT_MUTATION"]
        }
        roots: dict[str, Root] = {}
        for name in method.graph.inputs:
            roots[name] = Root(
                f"user input {name!r}",
                name in mutated_inputs,
                "no USER_INPUT_MUTATION output spec of the method updates it",
            )
        for c in method.constants:
            roots[c.name] = Root(
                f"constant {c.name!r} (data key {c.data_key!r})",
                c.mutated,
                "the method binds it with mutated = false",
            )
        for k, b in enumerate(method.mutable_buffers):
            roots[b.name] = Root(f"buffer {b.name!r}", True, buffer=b.fqn)
            self.buffers.setdefault(b.fqn, _Buffer(i, k, b.name))
        base: Tokens = ("methods", i, "graph")
        for j, node in enumerate(method.graph.nodes):
            here = (*base, "nodes", j)
            if node.op_kind == CALL_FUNCTION:
                schema = self.schema(method.name, node, here)
                if schema is not None:
                    self.effects(method.name, node, schema, here, roots)
            self.subgraphs(method.name, node, here)

    def effects(
        self, method: str, node: Node, schema: Schema, here: Tokens, roots: dict[str, Root]
    ) -> None:
        """Check what a bound node writes; record the buffers it reads and writes, and the
        roots of its outputs."""
        by_param: dict[str, list[Root]] = {}
        params = {p.name: p for p in schema.params}
        for k, arg in enumerate(node.inputs):
            param = params[arg.name] if arg.name else schema.params[k]
            at = (*here, "inputs", k, "arg", "value")
            found = []
            for tokens, name in _tensors(arg.value):
                root = roots.get(name)
                if root is None:  # undefined: ptg-undefined-value says so
                    continue
                found.append(root)
                if param.write:
                    self.write(method, node, schema, param, (*at, *tokens), name, root)
                elif root.buffer is not None:
                    self.buffers[root.buffer].read = True
            if param.alias is not None:
                by_param[param.alias] = found
        for out, returned in zip(node.outputs, schema.returns, strict=False):
            viewed = by_param.get(returned.alias or "", [])
            root = viewed[0] if viewed else _FRESH
            names = out.names if out.kind == _TENSOR_LIST else (out.name,)
            for name in names:
                if name:
                    roots.setdefault(name, root)

    def write(
        self,
        method: str,
        node: Node,
        schema: Schema,
        param: Param,
        tokens: Tokens,
        name: str,
        root: Root,
    ) -> None:
        if root.buffer is not None:
            self.buffers[root.buffer].written = True
        if root.writable:
            return
        self.report(
            "ptg-undeclared-mutation",
            tokens,
            f"method {method!r}, node {node.name!r}: {schema.qualified} writes its argument "
            f"{param.name!r} in place, and {name!r} is {root.label} or a view of it, which "
            f"the method does not declare as state ({root.why})",
        )

    def subgraphs(self, method: str, node: Node, here: Tokens) -> None:
        """Every call node of the node's subgraphs, against the table."""
        for k, arg in enumerate(node.inputs):
            if isinstance(arg.value, GraphArg):
                inner = (*here, "inputs", k, "arg", "value", "graph")
                for j, sub in enumerate(arg.value.graph.nodes):
                    at = (*inner, "nodes", j)
                    if sub.op_kind == CALL_FUNCTION:
                        self.schema(method, sub, at)
                    self.subgraphs(method, sub, at)

    def unwritten_buffers(self, program: Program) -> None:
        updated = {  # by an output spec of any method, before or after the one reading it
            s.target
            for m in program.methods
            for s in m.output_specs
            if s.kind == _OUTPUT_KIND["BUFFER_MUTATION"]
        }
        for fqn, buffer in self.buffers.items():
            if buffer.read and not buffer.written and fqn not in updated:
                method = program.methods[buffer.method].name
                self.report(
                    "ptg-buffer-never-written",
                    ("methods", buffer.method, "mutable_buffers", buffer.index),
                    f"method {method!r}: non-persistent buffer {buffer.name!r} (fqn {fqn!r}) is "
                    "read, and no method writes it: a runtime zero-initialises it, so every "
                    "read sees zeros, whatever it held when the model was exported",
                    "warning",
                )


def _tensors(value: object) -> list[tuple[Tokens, str]]:
    """(pointer tokens below the argument's value, name) of each tensor it names."""
    if isinstance(value, TensorArg):
        return [((), value.name)]
    if isinstance(value, TensorListArg):
        return [(("names", m), name) for m, name in enumerate(value.names)]
    if isinstance(value, OptionalTensorListArg):
        return [
            (("names", m), name)
            for m, (name, present) in enumerate(zip(value.names, value.has_value, strict=False))
            if present
        ]
    return []


def graph_findings(program: Program) -> list[Finding]:
    """The operator rules of every method, in program order (each call node: its
    operator, then what it writes; then its subgraphs), then the buffers no method
    writes; within the findings budget."""
    if not any(_has_calls(m.graph.nodes) for m in program.methods):
        return []
    walk = _Walk(operator_table())
    for i, method in enumerate(program.methods):
        walk.method(i, method)
    walk.unwritten_buffers(program)
    return walk.out.finish()


def _has_calls(nodes: tuple[Node, ...]) -> bool:
    return any(
        n.op_kind == CALL_FUNCTION
        or any(isinstance(a.value, GraphArg) and _has_calls(a.value.graph.nodes) for a in n.inputs)
        for n in nodes
    )
