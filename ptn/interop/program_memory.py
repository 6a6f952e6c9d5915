"""The memory a method's run will hold, planned before any node runs (ptn.interop.program_runner).

A call first runs its plan's steps on torch's ``meta`` device: tensors that have a
shape, dtype and strides but no data, so every operator computes the exact sizes of its
results from the actual input shapes without allocating them. A factory's ``device`` is
turned to ``meta`` for this run (``Plan.meta_steps``). Along the way a ledger counts
the bytes of the storages the steps create that are alive after each step, with the
plan's own schedule of when a slot is cleared: a view adds nothing (it shares its
base's storage), and the inputs, constants and state, which exist before the call, are
not counted. The result, a running maximum per step, is cached per input signature
(shapes and strides); a call whose running maximum passes the cap stops before its first
node runs, with an error naming the node at which it would pass.

A step whose meta call fails has results whose sizes depend on tensor data (a boolean
mask's selection) or is an operator failing on these shapes: the plan stops there. The
call runs up to that node, bounds it by the sizes the graph declares for its outputs
when they are bounded, runs it, takes its results' real sizes into the meta run
(``MetaRun.adopt``) and plans on from there: each step is planned once per call, however
many such nodes there are. Such a plan depends on data, and is not kept for later calls.

What is counted is what the graph holds between nodes; memory an operator uses inside
one call (a convolution's unfolded input, a matrix product's workspace) is not, and the
output copies ``run`` makes of results that share storage with an input or a constant
come after the plan.
"""

from __future__ import annotations

import time
from bisect import bisect_right
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from ptn.interop.run_errors import TimeLimitError
from ptn.program.model import TensorMeta

DEFAULT_MAX_MEMORY = 2 * 2**30
"""The default cap on the bytes of intermediate tensors a call holds at once: 2 GiB. The
real exports of tests/fixtures hold at most 9 KiB (the tiny Llama); a caller whose
model's activations need more raises it. Constants, inputs and state are not counted."""


def storage_id(tensor: Any) -> int:
    """The identity of the storage ``tensor`` lives in: the same for all its views."""
    return int(tensor.untyped_storage()._cdata)


def tensors_in(value: Any, tensor_type: type) -> Iterator[Any]:
    """The tensors a slot holds: itself, or the tensors of a list or tuple."""
    if isinstance(value, tensor_type):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            if isinstance(item, tensor_type):
                yield item


def size_text(n: int) -> str:
    """``3.3 GiB``, ``512 MiB``, ``17 bytes``."""
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if value < 1024 or unit == "PiB":
            return f"{value:.3g} {unit}"
    raise AssertionError("unreachable")


def declared_bytes(meta: TensorMeta | None, dtypes: dict[int, Any]) -> int | None:
    """The most bytes a tensor with this declared metadata holds (``dtypes``: ScalarType
    code -> torch dtype); None when a dimension has no upper bound, or no metadata."""
    if meta is None or meta.dtype not in dtypes or not all(d.bounded for d in meta.sizes):
        return None
    n = int(dtypes[meta.dtype].itemsize)
    for d in meta.sizes:
        n *= d.max
    return n


class Ledger:
    """Live bytes of the storages the run created, counted by reference from slots."""

    def __init__(self, tensor_type: type, base: AbstractSet[int]) -> None:
        self.tensor_type = tensor_type
        self.base = base
        """Storages that exist before the call (inputs, constants, state): not counted."""
        self.refs: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        self.live = 0

    def hold(self, value: Any) -> None:
        for t in tensors_in(value, self.tensor_type):
            storage = t.untyped_storage()
            sid = int(storage._cdata)
            if sid in self.base:
                continue
            n = self.refs.get(sid)
            if n is None:
                self.refs[sid] = 1
                self.sizes[sid] = size = int(storage.nbytes())
                self.live += size
            else:
                self.refs[sid] = n + 1

    def release(self, value: Any) -> None:
        for t in tensors_in(value, self.tensor_type):
            sid = storage_id(t)
            n = self.refs.get(sid)
            if n is None:
                continue
            if n > 1:
                self.refs[sid] = n - 1
            else:
                del self.refs[sid]
                self.live -= self.sizes.pop(sid)


@dataclass(frozen=True, slots=True)
class Profile:
    """The planned memory of steps ``start`` to ``stop``: ``peaks[i]`` is the most bytes
    held at any of steps ``start`` to ``start + i``; ``live_end`` what is held after
    ``stop - 1``. ``stop`` short of the plan's length: that step's sizes depend on data."""

    start: int
    stop: int
    peaks: list[int]
    held: list[int]
    """Bytes held right after each step (before its frees), for messages."""
    live_end: int

    def first_over(self, cap: int) -> int | None:
        """The first step at which more than ``cap`` bytes would be held; None if none."""
        i = bisect_right(self.peaks, cap)
        return self.start + i if i < len(self.peaks) else None

    def held_at(self, step: int) -> int:
        return self.held[step - self.start]


def _meta_of(torch: Any, t: Any, storages: dict[int, Any]) -> Any:
    """A meta tensor with ``t``'s dtype, sizes, strides and offset, over the meta storage
    ``storages`` maps ``t``'s storage to (a new one of its size, recorded, if none)."""
    storage = t.untyped_storage()
    sid = int(storage._cdata)
    found = storages.get(sid)
    if found is None:
        found = storages[sid] = torch.UntypedStorage(int(storage.nbytes()), device="meta")
    out = torch.empty((0,), dtype=t.dtype, device="meta")
    return out.set_(found, t.storage_offset(), t.size(), t.stride())


def to_meta(torch: Any, values: list[Any], base: AbstractSet[int]) -> tuple[list[Any], set[int]]:
    """``values`` with every tensor as a meta tensor of the same dtype, sizes, strides and
    offset, over one meta storage per real storage (views stay views of one another); and
    the meta storages of the real ones in ``base``."""
    tensor_type = torch.Tensor
    storages: dict[int, Any] = {}
    out: list[Any] = []
    for value in values:
        if isinstance(value, tensor_type):
            out.append(_meta_of(torch, value, storages))
        elif isinstance(value, list | tuple) and any(isinstance(v, tensor_type) for v in value):
            items = [_meta_of(torch, v, storages) if isinstance(v, tensor_type) else v
                     for v in value]  # fmt: skip
            out.append(items if isinstance(value, list) else tuple(items))
        else:
            out.append(value)
    return out, {int(storages[sid]._cdata) for sid in base if sid in storages}


class MetaRun:
    """The steps of one call run on the meta device, stretch by stretch, with the ledger
    of what they hold. ``values``: the slots as meta tensors (changed in place); ``base``:
    the meta storages that exist before the call."""

    def __init__(
        self, torch: Any, steps: list[Any], values: list[Any], base: set[int], what: str
    ) -> None:
        self.torch = torch
        self.steps = steps
        self.values = values
        self.what = what
        self.ledger = Ledger(torch.Tensor, base)
        for value in values:
            self.ledger.hold(value)

    def plan(self, start: int, deadline: float | None) -> Profile:
        """Run the steps from ``start`` and count what they hold; stop before the first
        step whose meta call raises (its sizes depend on data, or it fails)."""
        values, ledger = self.values, self.ledger
        peaks: list[int] = []
        held: list[int] = []
        peak = 0
        for at in range(start, len(self.steps)):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeLimitError(
                    f"{self.what}: the time limit passed while its memory was planned"
                )
            fn, args, kwargs, store, free = self.steps[at]
            try:
                if kwargs:
                    result = fn(*[values[a] for a in args], **{k: values[s] for k, s in kwargs})
                else:
                    result = fn(*[values[a] for a in args])
            except Exception:
                return Profile(start, at, peaks, held, ledger.live)
            self._store(store, result)
            held.append(ledger.live)
            peak = max(peak, ledger.live)
            peaks.append(peak)
            self._free(free)
        return Profile(start, len(self.steps), peaks, held, ledger.live)

    def adopt(self, step: int, real: list[Any]) -> int:
        """Take the results of ``step``, which ran for real (``real``: the call's slots), as
        meta tensors of their real sizes (a view of one of its arguments stays a view of
        that argument's meta storage); the bytes held right after it."""
        torch = self.torch
        _, args, kwargs, store, free = self.steps[step]
        storages: dict[int, Any] = {}
        for slot in (*args, *(s for _, s in kwargs)):
            for r, m in zip(
                tensors_in(real[slot], torch.Tensor),
                tensors_in(self.values[slot], torch.Tensor),
                strict=False,
            ):
                storages[storage_id(r)] = m.untyped_storage()
        slots = (store,) if store.__class__ is int else store or ()
        for slot in slots:
            value = real[slot]
            items = [_meta_of(torch, t, storages) if isinstance(t, torch.Tensor) else t
                     for t in (value if isinstance(value, list | tuple) else (value,))]  # fmt: skip
            self.values[slot] = items if isinstance(value, list | tuple) else items[0]
            self.ledger.hold(self.values[slot])
        held = self.ledger.live
        self._free(free)
        return held

    def _store(self, store: Any, result: Any) -> None:
        if store.__class__ is int:
            self.values[store] = result
            self.ledger.hold(result)
        elif store is not None:
            for slot, item in zip(store, result, strict=True):
                self.values[slot] = item
                self.ledger.hold(item)

    def _free(self, free: tuple[int, ...]) -> None:
        for slot in free:
            self.ledger.release(self.values[slot])
            self.values[slot] = None
