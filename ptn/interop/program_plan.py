"""A method compiled into steps over numbered slots, for ptn.interop.program_runner.

Every value of the graph gets a slot: inputs, constants, buffers, each node's outputs,
and each literal argument (ints, dtypes, lists...), which is computed once here. A
step calls one ATen operator (or builds a list of slots) with its arguments read from
slots, stores what it returns, and clears the slots it read for the last time, so an
intermediate tensor lives no longer than in eager PyTorch. Names, operators, argument
kinds and the torch enums the file writes as strings are all resolved here, once:
running a method is then a loop over the steps (``Plan.steps``), with no lookup by name.

Two more things are made here. An operator that writes an argument in place (the
table's ``Tensor(a!)``) is preceded by a step that refuses, when the call runs, a value
living in a user input the method does not update or in a constant it does not mutate:
validation refuses such writes by the table's alias sets (``ptg-undeclared-mutation``),
and this check holds should the table miss an operator that returns its input's storage
without torch's schema saying so (it marks ``type_as``, ``_unsafe_view`` and ``einsum``).
And ``Plan.meta_steps`` are
the same steps with each ``device`` argument turned to torch's meta device, for the
memory plan (ptn.interop.program_memory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ptn.core.errors import PtnError, pointer
from ptn.core.names import PTG
from ptn.interop.dequantize import dequantize
from ptn.interop.program_memory import Profile, storage_id, tensors_in
from ptn.interop.run_errors import ProgramError, UnsupportedError
from ptn.interop.torch_values import device
from ptn.program.calls import bind, node_error
from ptn.program.layout import load_layout
from ptn.program.model import (
    CALL_FUNCTION,
    OUTPUT,
    PLACEHOLDER,
    AffineGroup,
    ArgValue,
    Binding,
    BoolArg,
    BoolListArg,
    FloatArg,
    FloatListArg,
    GraphArg,
    IntArg,
    IntListArg,
    Method,
    Node,
    NoneArg,
    OptionalTensorListArg,
    OutputSpec,
    ScalarTypeArg,
    StringArg,
    TensorArg,
    TensorListArg,
    TensorMeta,
)
from ptn.program.operators import NodeProblem, Param, Schema, operator_table

_LAYOUT = load_layout()
_OUT = _LAYOUT.enums["OutputKind"]
_TENSOR_LIST = _LAYOUT.enums["OutputValueKind"]["TENSOR_LIST"]
_FLOATING = {_LAYOUT.enums["ScalarType"][n] for n in ("HALF", "FLOAT", "DOUBLE", "BFLOAT16")}

Step = tuple[Callable[..., Any], tuple[int, ...], tuple[tuple[str, int], ...], Any, tuple[int, ...]]
"""(function, argument slots, (keyword, slot) pairs, where the result goes: a slot, a
tuple of slots to unpack it into, or None, and the slots to clear afterwards)."""


def _as_list(*items: Any) -> list[Any]:
    return list(items)


def _skip(*items: Any) -> None:
    """A write check in the memory plan, where nothing is written."""


class ReadOnly:
    """The storages no node may write in the current call, each with what it is: the
    constants the method does not mutate (fixed), and the user inputs it does not
    update (set by each call)."""

    def __init__(self) -> None:
        self.fixed: dict[int, str] = {}
        self.inputs: dict[int, str] = {}

    def label(self, sid: int) -> str | None:
        return self.fixed.get(sid) or self.inputs.get(sid)


class _WriteCheck:
    """The step before an in-place operator: its written arguments' storages must not be
    read-only; ProgramError naming the node, the argument and the storage otherwise."""

    def __init__(self, torch: Any, read_only: ReadOnly, where: str, params: tuple[str, ...]):
        self.tensor = torch.Tensor
        self.read_only = read_only
        self.where = where
        self.params = params

    def __call__(self, *values: Any) -> None:
        for param, value in zip(self.params, values, strict=True):
            for t in tensors_in(value, self.tensor):
                label = self.read_only.label(storage_id(t))
                if label is not None:
                    raise ProgramError(
                        f"{self.where} would write its argument {param!r} in place, which "
                        f"lives in the storage of {label}, and the method does not declare "
                        "that it changes it; nothing was written"
                    )


@dataclass(frozen=True, slots=True)
class Input:
    name: str
    slot: int
    meta: TensorMeta
    dtype: Any


@dataclass(frozen=True, slots=True)
class Returned:
    """A user output: its slot, SSA name and declared metadata (None if the graph has none)."""

    slot: int
    name: str
    meta: TensorMeta | None


@dataclass
class Plan:
    method: Method
    template: list[Any]
    inputs: tuple[Input, ...]
    steps: list[Step]
    step_nodes: list[int]
    """The node index of each step (for errors)."""
    returned: tuple[Returned, ...]
    buffer_updates: tuple[tuple[int, Any], ...]
    """(slot, state tensor) of each BUFFER_MUTATION, in spec order."""
    input_updates: tuple[tuple[int, int], ...]
    """(slot, input position) of each USER_INPUT_MUTATION."""
    updated_inputs: frozenset[int]
    """The positions of the inputs that ``input_updates`` write."""
    meta_steps: list[Step]
    """``steps`` for the memory plan: devices turned to meta, write checks skipped."""
    read_only: ReadOnly
    owned: frozenset[int]
    """The storages of the template's tensors (constants, state): outputs in them are
    returned as copies."""
    profiles: dict[tuple[Any, ...], Profile] = field(default_factory=dict)
    """The memory plan from step 0 by input signature (most recent last)."""
    meta_template: tuple[list[Any], set[int]] | None = None
    """The template as meta tensors, and their storages (ptn.interop.program_memory)."""


@dataclass
class Context:
    """What every method of one program shares: torch, its tables, ATen, the constants
    by data key and the non-persistent buffers by fqn (created by the first method)."""

    torch: Any
    kernel: Callable[[Schema], Any]
    dtypes: dict[int, Any]
    enums: dict[str, dict[str, Any]]
    constants: Mapping[str, Any]
    buffers: dict[str, tuple[TensorMeta, Any]]


class _Compiler:
    def __init__(self, ctx: Context, method: Method, index: int) -> None:
        self.ctx = ctx
        self.method = method
        self.index = index
        self.values = method.graph.tensor_values
        self.slots: dict[str, int] = {}
        self.template: list[Any] = []
        self.steps: list[Step] = []
        self.meta_steps: list[Step] = []
        self.step_nodes: list[int] = []
        self.read_only = ReadOnly()
        self.meta_device: int | None = None
        self.quantized: dict[str, Binding] = {}
        self.dequantized: dict[tuple[str, Any], int] = {}

    # -- slots --------------------------------------------------------------------------

    def slot(self, value: Any = None) -> int:
        self.template.append(value)
        return len(self.template) - 1

    def define(self, name: str, value: Any = None) -> int:
        self.slots[name] = slot = self.slot(value)
        return slot

    def use(self, name: str, node: int, tokens: tuple[str | int, ...], what: str) -> int:
        slot = self.slots.get(name)
        if slot is None:
            raise PtnError(
                "ptg-undefined-value",
                f"method {self.method.name!r}: {what} uses {name!r}, which nothing before it "
                "in its graph defines",
                member=PTG,
                pointer=pointer("methods", self.index, "graph", "nodes", node, *tokens),
            )
        return slot

    def dtype(self, code: int, what: str) -> Any:
        dtype = self.ctx.dtypes.get(code)
        if dtype is None:
            raise ProgramError(
                f"{self.where()}{what} has dtype code {code}, which is no ScalarType"
            )
        return dtype

    def where(self) -> str:
        return f"method {self.method.name!r}: "

    # -- what the graph starts with ------------------------------------------------------

    def inputs(self) -> tuple[Input, ...]:
        found = []
        for k, name in enumerate(self.method.graph.inputs):
            meta = self.values.get(name)
            what = f"input {k} ({name!r})"
            if meta is None:
                raise ProgramError(f"{self.where()}{what} has no tensor metadata to check it by")
            if meta.quant is not None:
                raise UnsupportedError(f"{self.where()}{what} is quantized: not supported")
            found.append(Input(name, self.define(name), meta, self.dtype(meta.dtype, what)))
        return tuple(found)

    def constants(self) -> None:
        for c in self.method.constants:
            tensor = self.ctx.constants.get(c.data_key)
            what = f"constant {c.name!r} (data_key {c.data_key!r})"
            if tensor is None:
                raise ProgramError(f"{self.where()}{what} has no tensor")
            torch = self.ctx.torch
            if not isinstance(tensor, torch.Tensor):
                raise ProgramError(
                    f"{self.where()}{what} is a {type(tensor).__name__}, not a torch.Tensor"
                )
            if tensor.layout != torch.strided:
                raise ProgramError(
                    f"{self.where()}{what} is a {tensor.layout} tensor: ptn runs over dense "
                    "tensors (torch.strided)"
                )
            if c.meta.quant is not None:
                if not isinstance(c.meta.quant, AffineGroup):
                    kind = type(c.meta.quant).__name__
                    raise UnsupportedError(
                        f"{self.where()}{what} is quantized by {kind}: not supported"
                    )
                if c.mutated:
                    raise UnsupportedError(f"{self.where()}{what} is quantized and mutated")
                self.quantized[c.name] = c
            self.define(c.name, tensor)
            if not c.mutated:
                self.read_only.fixed[storage_id(tensor)] = what

    def buffers(self) -> None:
        torch = self.ctx.torch
        for b in self.method.mutable_buffers:
            meta = self.values.get(b.name)
            what = f"mutable buffer {b.name!r} (fqn {b.fqn!r})"
            if meta is None:
                raise ProgramError(f"{self.where()}{what} has no tensor metadata")
            shared = self.ctx.buffers.get(b.fqn)
            if shared is None:
                if not meta.static:
                    raise UnsupportedError(
                        f"{self.where()}{what} has dynamic sizes {meta.describe()}"
                    )
                zeros = torch.zeros([d.min for d in meta.sizes], dtype=self.dtype(meta.dtype, what))
                shared = self.ctx.buffers[b.fqn] = (meta, zeros)
            elif (shared[0].dtype, shared[0].sizes) != (meta.dtype, meta.sizes):
                raise ProgramError(
                    f"{self.where()}{what} is {meta.describe()}, but another method has it as "
                    f"{shared[0].describe()}"
                )
            self.define(b.name, shared[1])

    # -- nodes ---------------------------------------------------------------------------

    def node(self, j: int, node: Node) -> None:
        if node.op_kind == PLACEHOLDER:
            slot = self.use(node.name, j, ("name",), f"placeholder {node.name!r}")
            for out in node.outputs:
                self.slots.setdefault(out.name, slot)
        elif node.op_kind == CALL_FUNCTION:
            self.call(j, node)
        elif node.op_kind != OUTPUT:  # the results are read by the output specs
            raise UnsupportedError(
                f"{self.where()}node {node.name!r} has op kind code {node.op_kind}, "
                "which ptn does not know"
            )

    def call(self, j: int, node: Node) -> None:
        if any(isinstance(a.value, GraphArg) for a in node.inputs):
            raise UnsupportedError(
                f"{self.where()}node {node.name!r} ({node.target!r}) takes a subgraph "
                "(GraphArg): higher-order operators are not supported"
            )
        try:
            schema = operator_table().lookup(node.target)
            bound = bind(node, schema)
        except NodeProblem as problem:
            where = pointer("methods", self.index, "graph", "nodes", j, *problem.tokens)
            raise PtnError(
                problem.rule, node_error(self.method.name, node, problem), member=PTG, pointer=where
            ) from None
        op = self.ctx.kernel(schema)
        args = tuple(self.operand(j, node, k, p) for k, p in bound.positional)
        kwargs = tuple((p.name, self.operand(j, node, k, p)) for k, p in bound.keywords)
        written = [(p.name, a) for a, (_, p) in zip(args, bound.positional, strict=True)]
        written += [(p.name, s) for (_, s), (_, p) in zip(kwargs, bound.keywords, strict=True)]
        params = {p.name: p for p in schema.params}
        written = [(name, slot) for name, slot in written if params[name].write]
        if written:
            where = f"{self.where()}node {node.name!r} ({node.target})"
            check = _WriteCheck(self.ctx.torch, self.read_only, where, tuple(n for n, _ in written))
            self.emit(j, check, tuple(s for _, s in written), (), None, _skip)
        meta_args, meta_kwargs = self.on_meta(schema, args, kwargs)
        store = self.results(node)
        self.emit(j, op, args, kwargs, store, op, meta_args, meta_kwargs)

    def on_meta(
        self, schema: Schema, args: tuple[int, ...], kwargs: tuple[tuple[str, int], ...]
    ) -> tuple[tuple[int, ...], tuple[tuple[str, int], ...]]:
        """The arguments with ``device`` on the meta device, given or not (a factory)."""
        names = [p.name for p in schema.params]
        if "device" not in names:
            return args, kwargs
        if self.meta_device is None:
            self.meta_device = self.slot(self.ctx.torch.device("meta"))
        at = names.index("device")
        if at < len(args):
            return (*args[:at], self.meta_device, *args[at + 1 :]), kwargs
        kept = tuple((k, s) for k, s in kwargs if k != "device")
        return args, (*kept, ("device", self.meta_device))

    def emit(
        self,
        j: int,
        fn: Callable[..., Any],
        args: tuple[int, ...],
        kwargs: Any,
        store: Any,
        meta_fn: Callable[..., Any] | None = None,
        meta_args: tuple[int, ...] | None = None,
        meta_kwargs: Any = None,
    ) -> None:
        self.steps.append((fn, args, kwargs, store, ()))
        self.meta_steps.append(
            (
                meta_fn or fn,
                args if meta_args is None else meta_args,
                kwargs if meta_kwargs is None else meta_kwargs,
                store,
                (),
            )
        )
        self.step_nodes.append(j)

    def results(self, node: Node) -> Any:
        outs = node.outputs
        if not outs:
            return None
        if len(outs) == 1 and outs[0].kind != _TENSOR_LIST:
            return self.define(outs[0].name)
        if len(outs) == 1:
            return tuple(self.define(n) for n in outs[0].names)
        if any(o.kind == _TENSOR_LIST for o in outs):
            raise UnsupportedError(
                f"{self.where()}node {node.name!r} returns a tensor list among other outputs"
            )
        return tuple(self.define(o.name) for o in outs)

    def operand(self, j: int, node: Node, k: int, param: Param) -> int:
        """The slot of argument ``k``'s value, converted to what ``param`` takes."""
        value: ArgValue | None = node.inputs[k].value
        at: tuple[str | int, ...] = ("inputs", k, "arg", "value")
        what = f"node {node.name!r}, argument {param.name!r}"
        kind = param.type.removesuffix("?")
        if isinstance(value, TensorArg):
            return self.tensor(value.name, j, node, (*at, "name"), what)
        if isinstance(value, NoneArg):
            return self.slot(None)
        if isinstance(value, IntArg | FloatArg | BoolArg):
            if value.ref:
                return self.use(value.ref, j, (*at, "ref"), what)
            return self.slot(value.value)
        if isinstance(value, ScalarTypeArg):
            return self.slot(self.dtype(value.value, what))
        if isinstance(value, StringArg):
            return self.slot(self.string(kind, value.value, what))
        if isinstance(value, IntListArg):
            refs = value.refs or ("",) * len(value.values)
            if not any(refs):
                return self.slot(list(value.values))
            items = tuple(
                self.use(r, j, (*at, "refs", m), what) if r else self.slot(v)
                for m, (v, r) in enumerate(zip(value.values, refs, strict=True))
            )
            return self.built(j, items)
        if isinstance(value, FloatListArg | BoolListArg):
            return self.slot(list(value.values))
        if isinstance(value, TensorListArg):
            names = value.names
            items = tuple(
                self.tensor(n, j, node, (*at, "names", m), what) for m, n in enumerate(names)
            )
            return self.built(j, items)
        if isinstance(value, OptionalTensorListArg):
            items = tuple(
                self.tensor(n, j, node, (*at, "names", m), what) if present else self.slot(None)
                for m, (n, present) in enumerate(zip(value.names, value.has_value, strict=True))
            )
            return self.built(j, items)
        raise ProgramError(f"{self.where()}{what} is {type(value).__name__}: ptn cannot pass it")

    def built(self, j: int, items: tuple[int, ...]) -> int:
        """A slot that a step fills with the list of ``items``' values before each call."""
        slot = self.slot()
        self.emit(j, _as_list, items, (), slot)
        return slot

    def string(self, kind: str, text: str, what: str) -> Any:
        if kind == "Device":
            found = device(self.ctx.torch, text)
            if found is None:
                raise UnsupportedError(f"{self.where()}{what} is device {text!r}: ptn runs on cpu")
            return found
        table = self.ctx.enums.get(kind)
        return text if table is None else table[text]  # bind() accepted only names it lists

    def tensor(
        self, name: str, j: int, node: Node, tokens: tuple[str | int, ...], what: str
    ) -> int:
        slot = self.use(name, j, tokens, what)
        binding = self.quantized.get(name)
        if binding is None:
            return slot
        return self.dequantized_slot(binding, node, slot)

    def dequantized_slot(self, c: Binding, node: Node, slot: int) -> int:
        """The slot of ``c``'s real values, in the dtype of what ``node`` computes from it."""
        scheme = c.meta.quant
        assert isinstance(scheme, AffineGroup)  # constants() let no other scheme through
        out = self.values.get(node.outputs[0].name) if node.outputs else None
        code = out.dtype if out is not None and out.dtype in _FLOATING else scheme.scale_dtype
        dtype = self.dtype(code, f"the values of quantized constant {c.name!r}")
        hit = self.dequantized.get((c.name, dtype))
        if hit is not None:
            return hit
        keys = {"scale": scheme.scale_data_key, "zero point": scheme.zero_point_data_key}
        found = {}
        for role, key in keys.items():
            if key:
                found[role] = self.ctx.constants.get(key)
                if found[role] is None:
                    raise ProgramError(f"{self.where()}the {role} {key!r} of {c.name!r} is missing")
        what = f"{self.where()}quantized constant {c.name!r}"
        value = dequantize(
            self.ctx.torch, self.template[slot], c.meta, scheme,
            found["scale"], found.get("zero point"), dtype, what,
        )  # fmt: skip
        self.dequantized[(c.name, dtype)] = new = self.slot(value)
        self.read_only.fixed[storage_id(value)] = f"the values of quantized constant {c.name!r}"
        return new

    # -- what the method returns ---------------------------------------------------------

    def outputs(
        self,
    ) -> tuple[tuple[Returned, ...], tuple[tuple[int, Any], ...], tuple[tuple[int, int], ...]]:
        method = self.method
        # No output specs at all: every graph output is a user output.
        user = _OUT["USER_OUTPUT"]
        specs = method.output_specs or tuple(OutputSpec(n, user) for n in method.graph.outputs)
        returned, buffers, inputs = [], [], []
        mutated = {c.data_key: c.name for c in method.constants if c.mutated}
        for k, spec in enumerate(specs):
            what = f"output spec {k}"
            slot = self.slots.get(spec.name)
            if slot is None:
                raise PtnError(
                    "ptg-undefined-value",
                    f"{self.where()}{what} returns {spec.name!r}, which nothing in the graph "
                    "defines",
                    member=PTG,
                    pointer=pointer("methods", self.index, "output_specs", k, "name"),
                )
            if spec.kind == _OUT["USER_OUTPUT"]:
                returned.append(Returned(slot, spec.name, self.values.get(spec.name)))
            elif spec.kind == _OUT["BUFFER_MUTATION"]:
                buffers.append((slot, self.state(spec.target, mutated, what)))
            elif spec.kind == _OUT["USER_INPUT_MUTATION"]:
                if spec.target not in method.graph.inputs:
                    raise ProgramError(f"{self.where()}{what} updates {spec.target!r}, no input")
                inputs.append((slot, method.graph.inputs.index(spec.target)))
            else:
                raise UnsupportedError(f"{self.where()}{what} has kind code {spec.kind}")
        return tuple(returned), tuple(buffers), tuple(inputs)

    def state(self, target: str, mutated: dict[str, str], what: str) -> Any:
        if target in mutated:
            return self.template[self.slots[mutated[target]]]
        for b in self.method.mutable_buffers:
            if b.fqn == target:
                return self.ctx.buffers[b.fqn][1]
        raise ProgramError(
            f"{self.where()}{what} updates {target!r}, which is no mutated constant or "
            "mutable buffer of the method"
        )


def compile_method(ctx: Context, method: Method, index: int) -> Plan:
    """The plan of ``method`` (the ``index``-th of its program); PtnError for what breaks a
    rule of spec.md, a RunError subclass for anything else that cannot run."""
    c = _Compiler(ctx, method, index)
    inputs = c.inputs()
    c.constants()
    c.buffers()
    for j, node in enumerate(method.graph.nodes):
        c.node(j, node)
    returned, buffers, updates = c.outputs()
    kept = {r.slot for r in returned} | {s for s, _ in buffers} | {s for s, _ in updates}
    frees = _frees(c.steps, kept)
    tensor = ctx.torch.Tensor
    owned = frozenset(storage_id(t) for v in c.template for t in tensors_in(v, tensor))
    return Plan(
        method, c.template, inputs, _with(c.steps, frees), c.step_nodes, returned, buffers,
        updates, frozenset(p for _, p in updates), _with(c.meta_steps, frees), c.read_only,
        owned,
    )  # fmt: skip


def _frees(steps: list[Step], kept: set[int]) -> list[tuple[int, ...]]:
    """The slots each step reads (or writes) for the last time, to clear after it:
    values live no longer than they are needed. ``kept``: the slots read at the end."""
    last: dict[int, int] = {}
    for i, (_, args, kwargs, store, _) in enumerate(steps):
        for slot in (*args, *(s for _, s in kwargs)):
            last[slot] = i
        for slot in (store,) if isinstance(store, int) else store or ():
            last.setdefault(slot, i)  # a value never read is cleared at once
    frees: dict[int, list[int]] = {}
    for slot, i in last.items():
        if slot not in kept:
            frees.setdefault(i, []).append(slot)
    return [tuple(sorted(frees.get(i, ()))) for i in range(len(steps))]


def _with(steps: list[Step], frees: list[tuple[int, ...]]) -> list[Step]:
    return [(fn, a, kw, st, free) for (fn, a, kw, st, _), free in zip(steps, frees, strict=True)]
