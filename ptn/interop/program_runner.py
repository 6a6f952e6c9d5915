"""Run a package's methods in Python: ``ptn.torch.load_program(path)``.

Each method's graph is executed node by node with the ATen kernels of the installed
torch for the operators of ptn's operator table only (ptn.program.operators: pure tensor
computation), each call's arguments bound through the table's schema
(ptn.program.calls). A program is vetted before anything of it is planned: every rule
of its graphs (spec.md sections 4.4 and 4.5), whichever way the runner is made. The
constants are the package's copy-on-write views (``Package.to_torch``): running never
changes the file. Buffers a method updates are state, as in a runtime: a persistent
buffer (a constant bound ``mutated``) starts from its stored bytes, a non-persistent
one (a ``MutableBufferSpec``) from zeros, and both carry their values from call to call
and across the methods that share their data key or fqn.

A call keeps its caller whole. The graph sees each input through an alias of its own
(``detach``), or through a copy when the method declares that it updates it, whose new
value is written back into the caller's tensor when the call succeeds; a node that
would write into an input or a constant the method does not declare is stopped before it
writes. Outputs that share storage with an input, a constant or the state come back as
copies. The call runs with autograd off and restores grad mode and the thread count it
found on every exit. Its memory is planned before any node runs and capped
(ptn.interop.program_memory, ``max_memory``), and a wall-clock limit (``time_limit``)
is checked between nodes.
"""

from __future__ import annotations

import keyword
import os
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ptn.core.errors import first_error
from ptn.core.gcpause import gc_paused
from ptn.interop.program_memory import (
    DEFAULT_MAX_MEMORY,
    MetaRun,
    Profile,
    declared_bytes,
    size_text,
    storage_id,
    to_meta,
)
from ptn.interop.program_plan import Context, Plan, compile_method
from ptn.interop.run_errors import (
    InputError,
    MemoryLimitError,
    OperatorError,
    OutputError,
    RunError,
    TimeLimitError,
    UnknownMethodError,
)
from ptn.interop.torch_values import Kernels, dtypes, enum_strings
from ptn.package.read import load
from ptn.program.effects import graph_findings
from ptn.program.model import Program, TensorMeta
from ptn.program.read import method_findings, read_program
from ptn.program.ssa import undefined_findings
from ptn.safetensors.frameworks import torch_module

_PROFILES_KEPT = 16
"""Memory plans kept per method, one per input signature (the most recent)."""
_RAISE = "raise it with max_memory=, or ptn run --max-memory"


def load_program(
    path: str | os.PathLike[str],
    *,
    max_memory: int = DEFAULT_MAX_MEMORY,
    time_limit: float | None = None,
) -> ProgramRunner:
    """The package at ``path``, ready to run: ``.methods`` and ``.run(method, *inputs)``.

    The package is checked as ``ptn.load`` checks it, every rule of its program included
    (PtnError on the first error: ``ptg-unknown-operator``, ``ptg-undeclared-mutation``...
    naming the node). ``max_memory`` (bytes, default 2 GiB) caps the intermediate tensors a
    call holds at once, ``time_limit`` (seconds, default none) the time a call takes:
    the defaults of every ``run``. Needs torch.
    """
    torch_module()  # ImportError saying how to install torch, before anything is read
    with load(path) as pkg:
        program, findings = read_program(pkg.program)
        constants = pkg.to_torch()
    error = first_error(findings)
    if error is not None:  # load raised on any error already: this is its own guard
        raise error
    assert program is not None
    return ProgramRunner(program, constants, max_memory=max_memory, time_limit=time_limit)


def vet(program: Program) -> None:
    """PtnError for the first error of the program rules that a run relies on: methods,
    values defined once before their use, operators of the table with arguments that fit
    and no undeclared writes."""
    for check in (method_findings, undefined_findings, graph_findings):
        error = first_error(check(program))
        if error is not None:
            raise error


class ProgramRunner:
    """The methods of one program, with their constants and state.

    ``ProgramRunner(program, constants)`` runs a decoded ``Program`` over ``constants``
    (data key -> torch tensor), updating the mutated ones in place; ``load_program``
    gives it a package's copy-on-write views. The program is vetted first (``vet``:
    PtnError with the rule). ``max_memory`` and ``time_limit`` are the defaults of
    ``run`` (attributes, which may be changed). Not thread-safe: calls share the state.
    """

    def __init__(
        self,
        program: Program,
        constants: Mapping[str, Any],
        *,
        max_memory: int = DEFAULT_MAX_MEMORY,
        time_limit: float | None = None,
    ) -> None:
        torch = torch_module()
        self.max_memory = _checked_cap(max_memory)
        self.time_limit = _checked_limit(time_limit)
        self._torch = torch
        _warm_meta(torch)
        ctx = Context(torch, Kernels(torch), dtypes(torch), enum_strings(torch), constants, {})
        self._ctx = ctx
        self._plans: dict[str, Plan] = {}
        with gc_paused():  # 10^5 nodes make 10^6 objects, none of them garbage
            vet(program)
            for i, method in enumerate(program.methods):
                self._plans.setdefault(method.name, compile_method(ctx, method, i))

    @property
    def methods(self) -> tuple[str, ...]:
        """The method names, in program order."""
        return tuple(self._plans)

    def inputs(self, method: str) -> dict[str, TensorMeta]:
        """Input name -> declared metadata (dtype, sizes with their ``Dim`` ranges), in order."""
        return {i.name: i.meta for i in self._plan(method).inputs}

    def outputs(self, method: str) -> tuple[tuple[str, TensorMeta | None], ...]:
        """(name, declared metadata or None) of each user output, in order."""
        return tuple((r.name, r.meta) for r in self._plan(method).returned)

    @property
    def constants(self) -> Mapping[str, Any]:
        """The tensors the methods read, by data key: one per key, whichever methods bind it."""
        return self._ctx.constants

    @property
    def buffers(self) -> dict[str, Any]:
        """The state: each mutated constant by data key, each non-persistent buffer by fqn
        (the tensors themselves, which the next call updates)."""
        out = {}
        for plan in self._plans.values():
            for c in plan.method.constants:
                if c.mutated:
                    out[c.data_key] = self._ctx.constants[c.data_key]
        out.update({fqn: tensor for fqn, (_, tensor) in self._ctx.buffers.items()})
        return out

    def run(
        self,
        method: str,
        *inputs: Any,
        max_memory: int | None = None,
        time_limit: float | None = None,
    ) -> tuple[Any, ...]:
        """Run ``method`` on ``inputs`` (torch tensors, in the order of the graph's inputs);
        the user outputs, in order: tensors, and Python ints or bools where the graph
        returns a number.

        ``max_memory`` (bytes) and ``time_limit`` (seconds) override the runner's for this
        call. InputError when an input does not fit the graph's metadata, MemoryLimitError
        (before any node runs, or before a node whose sizes depend on data) when the
        intermediate tensors would pass ``max_memory``, TimeLimitError when the call
        passes ``time_limit`` (checked between nodes: an operator already running is not
        interrupted), OperatorError when an operator raises (its exception is the cause),
        ProgramError when a node would write into an input or constant the method does
        not declare, OutputError when an output differs from the declared dtype or shape.
        """
        plan = self._plan(method)
        cap = self.max_memory if max_memory is None else _checked_cap(max_memory)
        limit = self.time_limit if time_limit is None else _checked_limit(time_limit)
        deadline = None if limit is None else time.monotonic() + limit
        self._check_inputs(plan, inputs)
        torch = self._torch
        grad, threads = torch.is_grad_enabled(), torch.get_num_threads()
        dtype = torch.get_default_dtype()
        torch.set_grad_enabled(False)
        # A factory given no dtype makes the default one: float32, as the program was
        # exported with, whatever the caller set (restored below).
        torch.set_default_dtype(torch.float32)
        try:
            values, given = self._start(plan, inputs)
            self._execute(plan, values, cap, deadline)
            results = tuple(values[r.slot] for r in plan.returned)
            self._check_outputs(plan, results)
            results = self._detached(plan, given, results)  # before the state moves on
            for slot, state in plan.buffer_updates:
                new = values[slot]
                if new is not state:
                    _update(plan, state, new, "a buffer")
            for slot, position in plan.input_updates:
                _update(plan, inputs[position], values[slot], f"input {position}")
            return results
        finally:
            plan.read_only.inputs = {}
            torch.set_grad_enabled(grad)
            torch.set_default_dtype(dtype)
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)

    # -- a call ----------------------------------------------------------------------------

    def _start(self, plan: Plan, inputs: tuple[Any, ...]) -> tuple[list[Any], set[int]]:
        """The slots at the start of a call, and the storages of the caller's inputs. Each
        input is an alias of its own, or a copy when the method updates it; the others'
        storages are read-only for this call."""
        values = plan.template.copy()
        read_only: dict[int, str] = {}
        given: set[int] = set()
        for k, (i, value) in enumerate(zip(plan.inputs, inputs, strict=True)):
            sid = storage_id(value)
            given.add(sid)
            if k in plan.updated_inputs:
                values[i.slot] = value.detach().clone()
            else:
                values[i.slot] = value.detach()
                read_only[sid] = f"user input {i.name!r}"
        plan.read_only.inputs = read_only
        return values, given

    def _execute(self, plan: Plan, values: list[Any], cap: int, deadline: float | None) -> None:
        """Run the steps, each stretch of them after its memory is planned; a step whose
        sizes depend on data is bounded by its declared outputs, and measured after it
        before the rest is planned."""
        at, (profile, run) = 0, self._profile(plan, values, deadline)
        while True:
            over = profile.first_over(cap)
            if over is not None:
                raise MemoryLimitError(
                    f"{_node(plan, over)} would bring the intermediate tensors the call "
                    f"holds to {size_text(profile.held_at(over))}, past its memory cap of "
                    f"{size_text(cap)} ({_RAISE}){'; nothing ran' if at == 0 else ''}"
                )
            _run_steps(plan, values, at, profile.stop, deadline)
            k = profile.stop
            if k == len(plan.steps):
                return
            assert run is not None  # only a plan of every step is kept for later calls
            bound = self._declared(plan, k)
            if bound is not None and profile.live_end + bound > cap:
                raise MemoryLimitError(
                    f"{_node(plan, k)} computes sizes from tensor data, and the sizes the graph "
                    f"declares for its outputs ({size_text(bound)}) would bring the "
                    f"intermediate tensors to more than its memory cap of {size_text(cap)} "
                    f"({_RAISE})"
                )
            _run_steps(plan, values, k, k + 1, deadline)
            held = run.adopt(k, values)
            if held > cap:
                raise MemoryLimitError(
                    f"{_node(plan, k)} computed sizes from tensor data that bring the "
                    f"intermediate tensors the call holds to {size_text(held)}, past its "
                    f"memory cap of {size_text(cap)} ({_RAISE}); the call stopped after it"
                )
            at = k + 1
            with gc_paused():
                profile = run.plan(at, deadline)

    def _profile(
        self, plan: Plan, values: list[Any], deadline: float | None
    ) -> tuple[Profile, MetaRun | None]:
        """The memory plan from the first step for these inputs' shapes and strides: kept
        for later calls when it covers every step; otherwise with the meta run that made
        it, which the call continues past the steps whose sizes depend on data."""
        signature = tuple((values[i.slot].shape, values[i.slot].stride()) for i in plan.inputs)
        found = plan.profiles.pop(signature, None)
        if found is not None:
            plan.profiles[signature] = found  # the most recent last
            return found, None
        torch = self._torch
        if plan.meta_template is None:
            plan.meta_template = to_meta(torch, plan.template, plan.owned)
        template, base = plan.meta_template
        meta = template.copy()
        base = set(base)
        for i in plan.inputs:
            real = values[i.slot]
            meta[i.slot] = t = torch.empty_strided(
                real.shape, real.stride(), dtype=real.dtype, device="meta"
            )
            base.add(storage_id(t))
        run = MetaRun(torch, plan.meta_steps, meta, base, f"method {plan.method.name!r}")
        with gc_paused():
            profile = run.plan(0, deadline)
        if profile.stop < len(plan.steps):
            return profile, run
        while len(plan.profiles) >= _PROFILES_KEPT:
            plan.profiles.pop(next(iter(plan.profiles)))
        plan.profiles[signature] = profile
        return profile, None

    def _declared(self, plan: Plan, step: int) -> int | None:
        """The most bytes the outputs of the step's node may hold by the graph's tensor
        metadata; None when one of them is unbounded or undeclared."""
        node = plan.method.graph.nodes[plan.step_nodes[step]]
        total = 0
        for out in node.outputs:
            for name in out.names or (out.name,):
                n = declared_bytes(plan.method.graph.tensor_values.get(name), self._ctx.dtypes)
                if n is None:
                    return None
                total += n
        return total

    def _detached(self, plan: Plan, given: set[int], results: tuple[Any, ...]) -> tuple[Any, ...]:
        """The results, each tensor that shares storage with an input (``given``), a
        constant or the state replaced by a copy: writing into an output never changes
        the model or the caller's tensors."""
        tensor, owned = self._torch.Tensor, plan.owned
        out = []
        for value in results:
            if isinstance(value, tensor):
                sid = storage_id(value)
                if sid in owned or sid in given:
                    value = value.clone()
            elif isinstance(value, list | tuple):
                value = type(value)(
                    v.clone()
                    if isinstance(v, tensor) and (storage_id(v) in owned or storage_id(v) in given)
                    else v
                    for v in value
                )
            out.append(value)
        return tuple(out)

    # -- checks ----------------------------------------------------------------------------

    def _plan(self, method: str) -> Plan:
        plan = self._plans.get(method)
        if plan is None:
            raise UnknownMethodError(
                f"no method {method!r}; the program has {', '.join(map(repr, self._plans))}"
            )
        return plan

    def _check_inputs(self, plan: Plan, inputs: tuple[Any, ...]) -> None:
        name = plan.method.name
        if len(inputs) != len(plan.inputs):
            listed = ", ".join(i.name for i in plan.inputs) or "none"
            raise InputError(
                f"method {name!r} takes {len(plan.inputs)} inputs ({listed}), not {len(inputs)}"
            )
        for k, (given, value) in enumerate(zip(plan.inputs, inputs, strict=True)):
            what = f"method {name!r}: input {k} ({given.name!r})"
            if not isinstance(value, self._torch.Tensor):
                raise InputError(f"{what} is a {type(value).__name__}, not a torch.Tensor")
            if value.layout != self._torch.strided or value.device.type != "cpu":
                raise InputError(
                    f"{what} is a {value.layout} tensor on {value.device}; ptn runs dense "
                    "(torch.strided) tensors on the cpu"
                )
            problem = _mismatch(given.meta, given.dtype, value)
            if problem:
                raise InputError(f"{what} {problem}")

    def _check_outputs(self, plan: Plan, results: tuple[Any, ...]) -> None:
        tensor = self._torch.Tensor
        for k, (r, value) in enumerate(zip(plan.returned, results, strict=True)):
            if isinstance(value, tensor):
                if r.meta is None:
                    continue
                problem = _mismatch(r.meta, self._ctx.dtypes.get(r.meta.dtype), value)
            elif r.meta is not None:
                problem = f"is {_kind(value)}; the graph declares a tensor {r.meta.describe()}"
            elif not _returnable(value, tensor):
                problem = f"is {_kind(value)}, which ptn does not return"
            else:
                continue
            if problem:
                raise OutputError(f"method {plan.method.name!r}: output {k} ({r.name!r}) {problem}")

    def __getattr__(self, name: str) -> Callable[..., tuple[Any, ...]]:
        """A method by name, where the name is an identifier: ``runner.forward(x)``."""
        plans = self.__dict__.get("_plans", {})
        if name in plans and name.isidentifier() and not keyword.iskeyword(name):
            return partial(self.run, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __dir__(self) -> list[str]:
        callable_names = [m for m in self._plans if m.isidentifier() and not keyword.iskeyword(m)]
        return sorted({*super().__dir__(), *callable_names})

    def __repr__(self) -> str:
        return f"<ptn ProgramRunner: methods {', '.join(self._plans)}>"


def _warm_meta(torch: Any) -> None:
    """The first operator call on the meta device in a process imports torch's meta
    kernels, written in Python (seconds on a busy machine): made here, when a program is
    loaded, not inside the first call, whose time limit it would eat."""
    torch.ops.aten.neg.default(torch.empty((1,), device="meta"))


def _checked_cap(max_memory: int) -> int:
    if isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory <= 0:
        raise ValueError(f"max_memory is a number of bytes above 0, not {max_memory!r}")
    return max_memory


def _checked_limit(time_limit: float | None) -> float | None:
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, int | float):
        raise ValueError(f"time_limit is a number of seconds or None, not {time_limit!r}")
    if not time_limit > 0 or time_limit == float("inf"):
        raise ValueError(f"time_limit is a finite number of seconds above 0, not {time_limit!r}")
    return float(time_limit)


def _node(plan: Plan, step: int) -> str:
    node = plan.method.graph.nodes[plan.step_nodes[step]]
    return f"method {plan.method.name!r}, node {node.name!r} ({node.target})"


def _kind(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, int | float):
        return f"a {type(value).__name__} ({value!r})"
    return f"a {type(value).__name__}"


def _returnable(value: Any, tensor: type) -> bool:
    """A Python bool, int or float, or a list or tuple of tensors and those."""
    if isinstance(value, bool | int | float):
        return True
    if isinstance(value, list | tuple):
        return all(isinstance(v, tensor | bool | int | float) for v in value)
    return False


def _mismatch(meta: TensorMeta, dtype: Any, value: Any) -> str | None:
    """Why ``value`` does not have ``meta``'s dtype and sizes; None when it does."""
    shape = tuple(value.shape)
    if value.dtype != dtype:
        return f"is {value.dtype}; the graph declares {meta.describe()}"
    if len(shape) != len(meta.sizes):
        return f"has shape {list(shape)} (rank {len(shape)}); the graph declares {meta.describe()}"
    for d, (dim, n) in enumerate(zip(meta.sizes, shape, strict=True)):
        if not dim.admits(n):
            return (
                f"has shape {list(shape)}: dimension {d} is {n}, outside {dim}; the graph "
                f"declares {meta.describe()}"
            )
    return None


def _run_steps(
    plan: Plan, values: list[Any], start: int, stop: int, deadline: float | None
) -> None:
    """Run steps ``start`` to ``stop`` over ``values``; OperatorError naming the node when
    one raises, TimeLimitError when ``deadline`` (time.monotonic) passes between two."""
    steps = plan.steps
    at = start
    try:
        for at in range(start, stop):
            fn, args, kwargs, store, free = steps[at]
            if deadline is not None and time.monotonic() > deadline:
                raise TimeLimitError(
                    f"{_node(plan, at)} was next when the call passed its time limit"
                )
            if kwargs:
                result = fn(*[values[a] for a in args], **{k: values[s] for k, s in kwargs})
            else:
                result = fn(*[values[a] for a in args])
            if store.__class__ is int:
                values[store] = result
            elif store is not None:
                for slot, item in zip(store, result, strict=True):
                    values[slot] = item
            for slot in free:
                values[slot] = None
    except RunError:
        raise
    except Exception as err:
        raise OperatorError(f"{_node(plan, at)}: {type(err).__name__}: {err}") from err


def _update(plan: Plan, state: Any, new: Any, what: str) -> None:
    try:
        state.copy_(new)
    except Exception as err:
        raise OperatorError(
            f"method {plan.method.name!r}: the new value of {what} cannot be written: {err}"
        ) from err
