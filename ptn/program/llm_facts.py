"""What a program shows of the facts LLM metadata states (spec.md 9.8): its KV caches, its
vocabulary (embedding table rows, logits width) and the longest token sequence it takes.

Each fact is recognised by a fixed pattern of the graph, and only where the pattern is
unambiguous; otherwise the fact is None and nothing is compared (no guess). The patterns
need no operator table, so that every binding recognises the same facts:

- a *state buffer* is a constant a method binds with ``mutated`` (persistent; one buffer
  across methods per ``data_key``) or one of its ``mutable_buffers`` (per ``fqn``);
- a *cache update* is a call node of ``UPDATES_IN_PLACE`` whose ``self`` names a state
  buffer's placeholder, or of ``UPDATES_BY_SPEC`` whose ``self`` does and whose first output
  a ``BUFFER_MUTATION`` output spec hands to that buffer;
- the *cache buffers* are the updated state buffers of rank 4, in the order of their
  first update; pairs (keys, values) are one cache each, ``[batch, KV heads, length, head
  dim]``, the layout of ExecuTorch's Llama export and of transformers' static caches; they
  are shown when every updated buffer has sizes, every cache buffer's are static, and
  they pair up (an even number, each pair of equal sizes);
- an *embedding* is a call of ``aten.embedding`` whose ``weight`` names a bound constant of
  rank 2 with static sizes and whose ``indices`` names a graph input: the token input;
- a method with a token input and exactly one user output of rank >= 2 with a static last
  dimension returns *logits*, that dimension wide.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ptn.core.errors import pointer
from ptn.program.layout import load_layout
from ptn.program.model import (
    CALL_FUNCTION,
    Binding,
    Dim,
    Graph,
    Method,
    Node,
    Program,
    TensorArg,
)

_OUTPUT_KIND = load_layout().enums["OutputKind"]
_USER_OUTPUT = _OUTPUT_KIND["USER_OUTPUT"]
_BUFFER_MUTATION = _OUTPUT_KIND["BUFFER_MUTATION"]

UPDATES_IN_PLACE = frozenset(
    (
        "torch.ops.aten.index_put_.default",
        "torch.ops.aten.index_copy_.default",
        "torch.ops.aten.copy_.default",
    )
)
"""Operators that write their ``self`` in place (the operator table says so of each)."""
UPDATES_BY_SPEC = frozenset(
    (
        "torch.ops.aten.index_put.default",
        "torch.ops.aten.index_copy.default",
        "torch.ops.aten.slice_scatter.default",
        "torch.ops.aten.copy.default",
    )
)
"""Their functional forms: ``self`` updated, the result handed back by a BUFFER_MUTATION."""
EMBEDDING = "torch.ops.aten.embedding.default"


@dataclass(frozen=True, slots=True)
class StateBuffer:
    """A buffer a method keeps between calls: its ``data_key`` or ``fqn``, its sizes (None
    when the program declares none), and pointers into program.ptg to its declaration and
    to its TensorMeta (None with no sizes)."""

    name: str
    sizes: tuple[Dim, ...] | None
    declared: str
    meta: str | None

    def shape(self) -> str:
        return "[" + ", ".join(str(d) for d in self.sizes or ()) + "]"

    def dim(self, d: int) -> str:
        """``'layers.0.k_cache' [1, 2, 8, 4] (program.ptg /methods/0/.../sizes/d)``."""
        return f"{self.name!r} is {self.shape()} (program.ptg {self.meta}/sizes/{d})"


@dataclass(frozen=True, slots=True)
class Cache:
    """One layer's KV cache: its keys and values buffers, of equal sizes."""

    keys: StateBuffer
    values: StateBuffer

    def size(self, d: int) -> int:
        sizes = self.keys.sizes
        assert sizes is not None
        return sizes[d].min

    @property
    def heads(self) -> int:
        return self.size(1)

    @property
    def length(self) -> int:
        return self.size(2)

    @property
    def head_dim(self) -> int:
        return self.size(3)


@dataclass(frozen=True, slots=True)
class Extent:
    """A number the program shows (rows, a width, a longest sequence), a sentence saying
    what shows it, and the program.ptg pointer to that dimension."""

    size: int
    says: str
    where: str

    def __str__(self) -> str:
        return f"{self.says} (program.ptg {self.where})"


@dataclass(frozen=True)
class LlmFacts:
    """What the program shows; None where it does not show the fact unambiguously."""

    caches: tuple[Cache, ...] | None = None
    """The caches in order; () when no state buffer is updated at all (no KV cache)."""
    embedding: Extent | None = None
    """The embedding table's rows, when every embedding reads one table."""
    logits: Extent | None = None
    """The logits' width, when every method that returns logits agrees."""
    tokens: Extent | None = None
    """The most tokens a token input takes, when every token input is bounded."""

    @property
    def vocabulary(self) -> Extent | None:
        """What bounds a token id: the embedding table's rows, else the logits' width."""
        return self.embedding or self.logits


def program_facts(program: Program) -> LlmFacts:
    """The facts ``program`` shows (see the module docstring for each pattern)."""
    updated: dict[tuple[str, str], StateBuffer] = {}
    tables: dict[str, Extent] = {}
    tokens: list[Extent | None] = []
    widths: list[Extent] = []
    for i, method in enumerate(program.methods):
        _Method(i, method).walk(updated, tables, tokens, widths)
    return LlmFacts(
        caches=_caches(list(updated.values())),
        embedding=next(iter(tables.values())) if len(tables) == 1 else None,
        logits=widths[0] if widths and all(w.size == widths[0].size for w in widths) else None,
        tokens=_longest(tokens),
    )


def _caches(updated: list[StateBuffer]) -> tuple[Cache, ...] | None:
    if not updated:
        return ()
    if any(b.sizes is None for b in updated):
        return None  # a buffer of unknown rank may be a cache
    ranked = [b for b in updated if b.sizes is not None and len(b.sizes) == 4]
    if not ranked or len(ranked) % 2 or not all(d.static for b in ranked for d in b.sizes or ()):
        return None
    pairs = [Cache(ranked[k], ranked[k + 1]) for k in range(0, len(ranked), 2)]
    if any(c.keys.sizes != c.values.sizes for c in pairs):
        return None
    return tuple(pairs)


def _longest(tokens: list[Extent | None]) -> Extent | None:
    if not tokens or any(t is None for t in tokens):
        return None
    return max((t for t in tokens if t is not None), key=lambda t: t.size)


class _Method:
    def __init__(self, i: int, method: Method) -> None:
        self.i = i
        self.method = method
        graph = method.graph
        self.positions = dict(zip(graph.tensor_values, graph.tensor_value_positions(), strict=True))
        self.state: dict[str, tuple[tuple[str, str], StateBuffer]] = {}
        for j, c in enumerate(method.constants):
            if c.mutated:
                at = pointer("methods", i, "constants", j)
                buffer = StateBuffer(c.data_key, c.meta.sizes, at, at + "/meta")
                self.state.setdefault(c.name, (("constant", c.data_key), buffer))
        for j, b in enumerate(method.mutable_buffers):
            meta = graph.tensor_values.get(b.name)
            buffer = StateBuffer(
                b.fqn,
                None if meta is None else meta.sizes,
                pointer("methods", i, "mutable_buffers", j),
                None if meta is None else self.meta_pointer(b.name),
            )
            self.state.setdefault(b.name, (("buffer", b.fqn), buffer))
        self.handed: dict[str, str] = {}
        for spec in method.output_specs:
            if spec.kind == _BUFFER_MUTATION:
                self.handed.setdefault(spec.name, spec.target)
        self.bindings: dict[str, tuple[int, Binding]] = {}
        for j, c in enumerate(method.constants):
            self.bindings.setdefault(c.name, (j, c))

    def meta_pointer(self, name: str) -> str:
        return pointer("methods", self.i, "graph", "tensor_values", self.positions[name], "meta")

    def walk(
        self,
        updated: dict[tuple[str, str], StateBuffer],
        tables: dict[str, Extent],
        tokens: list[Extent | None],
        widths: list[Extent],
    ) -> None:
        graph = self.method.graph
        inputs = set(graph.inputs)
        token_inputs: dict[str, None] = {}  # in order of first use
        for node in _calls(graph):
            if node.target in UPDATES_IN_PLACE or node.target in UPDATES_BY_SPEC:
                found = self.state.get(_tensor(node, "self", 0) or "")
                if found is not None and self.updates(node, found[1]):
                    updated.setdefault(*found)
            elif node.target == EMBEDDING:
                table = self.embedding(node)
                indices = _tensor(node, "indices", 1)
                if table is not None and indices is not None and indices in inputs:
                    tables.setdefault(*table)
                    token_inputs.setdefault(indices)
        for name in token_inputs:
            tokens.append(self.sequence(name))
        if token_inputs:
            width = self.logits()
            if width is not None:
                widths.append(width)

    def updates(self, node: Node, buffer: StateBuffer) -> bool:
        if node.target in UPDATES_IN_PLACE:
            return True
        first = node.outputs[0].name if node.outputs else ""
        return first in self.handed and self.handed[first] == buffer.name

    def embedding(self, node: Node) -> tuple[str, Extent] | None:
        bound = self.bindings.get(_tensor(node, "weight", 0) or "")
        if bound is None:
            return None
        j, c = bound
        sizes = c.meta.sizes
        if len(sizes) != 2 or not all(d.static for d in sizes):
            return None
        where = pointer("methods", self.i, "constants", j, "meta", "sizes", 0)
        rows = sizes[0].min
        says = f"the embedding table {c.data_key!r} has {rows} rows"
        return c.data_key, Extent(rows, says, where)

    def sequence(self, name: str) -> Extent | None:
        """The most tokens input ``name`` takes (its last dimension); None if unbounded."""
        meta = self.method.graph.tensor_values.get(name)
        if meta is None or not meta.sizes or not meta.sizes[-1].bounded:
            return None
        last, most = len(meta.sizes) - 1, meta.sizes[-1].max
        says = f"the token input {name!r} of method {self.method.name!r} takes at most {most}"
        says += " tokens"
        return Extent(most, says, f"{self.meta_pointer(name)}/sizes/{last}")

    def logits(self) -> Extent | None:
        user = [s for s in self.method.output_specs if s.kind == _USER_OUTPUT]
        if len(user) != 1:
            return None
        name = user[0].name
        meta = self.method.graph.tensor_values.get(name)
        if meta is None or len(meta.sizes) < 2 or not meta.sizes[-1].static:
            return None
        last, width = len(meta.sizes) - 1, meta.sizes[-1].min
        says = f"the logits {name!r} of method {self.method.name!r} are {width} wide"
        return Extent(width, says, f"{self.meta_pointer(name)}/sizes/{last}")


def _calls(graph: Graph) -> Iterator[Node]:
    return (n for n in graph.nodes if n.op_kind == CALL_FUNCTION)


def _tensor(node: Node, name: str, position: int) -> str | None:
    """The tensor the node passes as parameter ``name``: the input so named, else the
    unnamed (positional) input at ``position``; None when that is no single tensor."""
    arg = next((a for a in node.inputs if a.name == name), None)
    if arg is None and position < len(node.inputs) and not node.inputs[position].name:
        arg = node.inputs[position]
    value = None if arg is None else arg.value
    return value.name if isinstance(value, TensorArg) else None
