"""Run a package's methods in Python: ``ptn.torch.load_program(path)``.

Each method's graph is executed node by node with the ATen operators of the installed
torch, resolved by name from ``torch.ops.aten`` only (ptn.program.operators), each
call's arguments bound through the operator's schema (ptn.program.calls). The
constants are the package's copy-on-write views (``Package.to_torch``): running never
changes the file. Buffers a method updates are state, as in a runtime: a persistent
buffer (a constant bound ``mutated``) starts from its stored bytes, a non-persistent
one (a ``MutableBufferSpec``) from zeros, and both carry their values from call to call
and across the methods that share their data key or fqn.

Everything is resolved when the program is loaded (ptn.interop.program_plan); a call
checks its inputs against the graph's metadata, runs the steps, applies the buffer
and input updates, and checks the user outputs it returns.
"""

from __future__ import annotations

import keyword
import os
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from ptn.interop.program_plan import Context, Plan, compile_method
from ptn.interop.run_errors import InputError, OperatorError, OutputError, UnknownMethodError
from ptn.interop.torch_values import Kernels, dtypes, enum_strings
from ptn.package.read import load
from ptn.program.model import Program, TensorMeta
from ptn.program.read import read_program
from ptn.safetensors.frameworks import torch_module


def load_program(path: str | os.PathLike[str]) -> ProgramRunner:
    """The package at ``path``, ready to run: ``.methods`` and ``.run(method, *inputs)``.

    The package is checked as ``ptn.load`` checks it (PtnError on the first error); then
    every call node is resolved and bound to its operator (PtnError ``ptg-unknown-operator``
    or ``ptg-operator-schema-mismatch`` naming the node). Needs torch.
    """
    torch_module()  # ImportError saying how to install torch, before anything is read
    with load(path) as pkg:
        program, _ = read_program(pkg.program)  # valid: load raised on any error
        constants = pkg.to_torch()
    assert program is not None
    return ProgramRunner(program, constants)


class ProgramRunner:
    """The methods of one program, with their constants and state.

    ``ProgramRunner(program, constants)`` runs a decoded ``Program`` over ``constants``
    (data key -> torch tensor), updating the mutated ones in place; ``load_program``
    gives it a package's copy-on-write views. Not thread-safe: calls share the state.
    """

    def __init__(self, program: Program, constants: Mapping[str, Any]) -> None:
        torch = torch_module()
        self._torch = torch
        ctx = Context(torch, Kernels(torch), dtypes(torch), enum_strings(torch), constants, {})
        self._ctx = ctx
        self._plans: dict[str, Plan] = {}
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

    def run(self, method: str, *inputs: Any) -> tuple[Any, ...]:
        """Run ``method`` on ``inputs`` (torch tensors, in the order of the graph's inputs);
        the user outputs, in order. InputError when an input does not fit the graph's
        metadata, OperatorError when an operator raises (its exception is the cause),
        OutputError when an output differs from the declared dtype or shape."""
        plan = self._plan(method)
        values = plan.template.copy()
        self._check_inputs(plan, inputs)
        for given, value in zip(plan.inputs, inputs, strict=True):
            values[given.slot] = value
        _execute(plan, values)
        for slot, state in plan.buffer_updates:
            new = values[slot]
            if new is not state:
                _update(plan, state, new, "a buffer")
        for slot, position in plan.input_updates:
            new, old = values[slot], inputs[position]
            if new is not old:
                _update(plan, old, new, f"input {position}")
        results = tuple(values[r.slot] for r in plan.returned)
        self._check_outputs(plan, results)
        return results

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
            problem = _mismatch(given.meta, given.dtype, value)
            if problem:
                raise InputError(f"{what} {problem}")

    def _check_outputs(self, plan: Plan, results: tuple[Any, ...]) -> None:
        for k, (r, value) in enumerate(zip(plan.returned, results, strict=True)):
            if r.meta is None or not isinstance(value, self._torch.Tensor):
                continue
            problem = _mismatch(r.meta, self._ctx.dtypes.get(r.meta.dtype), value)
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


def _execute(plan: Plan, values: list[Any]) -> None:
    """Run the steps over ``values``; OperatorError naming the node when one raises."""
    at = 0
    try:
        for at, (fn, args, kwargs, store, free) in enumerate(plan.steps):  # noqa: B007
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
    except Exception as err:
        node = plan.method.graph.nodes[plan.step_nodes[at]]
        raise OperatorError(
            f"method {plan.method.name!r}, node {node.name!r} ({node.target}): "
            f"{type(err).__name__}: {err}"
        ) from err


def _update(plan: Plan, state: Any, new: Any, what: str) -> None:
    try:
        state.copy_(new)
    except Exception as err:
        raise OperatorError(
            f"method {plan.method.name!r}: the new value of {what} cannot be written: {err}"
        ) from err
