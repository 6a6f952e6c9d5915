"""``ptn.diff``: what differs between two packages, read in bounded chunks.

Both packages are opened with ``ptn.load`` (an invalid one raises its
``PtnError``). Constants are compared byte for byte, read from the two files
``CHUNK_BYTES`` at a time and without hashing: memory stays bounded by the chunk
whatever the size of the packages, and a difference ends the read of that
constant early. With ``values=True`` a changed floating-point constant is read
again, in float64 chunks, for its largest absolute difference (NaN-aware). Sections compare
what a reader sees: members by name (size and directory CRC-32), the program by
SHA-256, constants by key (an alias by its owner's bytes), aliases by key,
metadata by name with its kind (1 and 1.0 differ), and the program's methods by name and
its bindings by data key (``ptn.package.diff_methods``).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

from ptn.metadata.document import _SCALAR_KINDS, Stored, _kind_of
from ptn.package.diff_methods import (
    BindingFacts,
    MethodFacts,
    binding_facts,
    method_facts,
    methods_or_none,
)
from ptn.package.read import Package, load
from ptn.safetensors.tensors import DTYPES, TensorInfo

CHUNK_BYTES = 256 << 10
"""Bytes of each package read per step (the values pass reads ``CHUNK_BYTES // 16``
elements of each side per step, as float64: half a chunk each). Small enough that a
chunk, read into its reused buffer, is still in the CPU cache when it is compared (and
numpy's temporaries stay there too): 16 MiB chunks made a byte comparison 1.8x and the
values pass 2.2x the CPU time (bench/README.md, bench_diff.py)."""

SMALL_BYTES = 64 << 10
"""Chunks up to this size are compared as bytes: numpy's per-call cost would dominate."""

FLOATING = frozenset({"F16", "BF16", "F32", "F64"})

Progress = Callable[[int, int], None]
"""Called with (bytes read so far, bytes to read) while constants are compared."""

V = TypeVar("V")
C = TypeVar("C")


@dataclass(frozen=True)
class Section(Generic[V, C]):
    """One part of a diff: entries only in the new package, only in the old, in both but changed."""

    added: dict[str, V] = field(default_factory=dict)
    removed: dict[str, V] = field(default_factory=dict)
    changed: dict[str, C] = field(default_factory=dict)
    unchanged: int = 0

    @property
    def equal(self) -> bool:
        return not (self.added or self.removed or self.changed)


@dataclass(frozen=True)
class MemberFacts:
    size: int
    crc32: int

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "crc32": f"{self.crc32:08x}"}


@dataclass(frozen=True)
class TensorFacts:
    dtype: str
    shape: tuple[int, ...]
    nbytes: int

    def to_json(self) -> dict[str, Any]:
        return {"dtype": self.dtype, "shape": list(self.shape), "bytes": self.nbytes}


@dataclass(frozen=True)
class ValueStats:
    """Elementwise comparison of two floating-point constants of one shape.

    ``max_abs_diff`` ignores positions where exactly one side is NaN (counted in
    ``nan_mismatches``); NaN against NaN and equal infinities count as equal.
    """

    max_abs_diff: float
    differing: int
    nan_mismatches: int


@dataclass(frozen=True)
class TensorChange:
    old: TensorFacts
    new: TensorFacts
    bytes_equal: bool
    values: ValueStats | None = None

    def to_json(self) -> dict[str, Any]:
        stats = self.values
        worst = None if stats is None else stats.max_abs_diff
        return {
            "old": self.old.to_json(),
            "new": self.new.to_json(),
            "bytes_equal": self.bytes_equal,
            # JSON has no infinity: an overflowing difference is the string "inf".
            "max_abs_diff": worst if worst is None or math.isfinite(worst) else "inf",
            "differing_elements": None if stats is None else stats.differing,
            "nan_mismatches": None if stats is None else stats.nan_mismatches,
        }


@dataclass(frozen=True)
class ProgramDiff:
    old_size: int
    new_size: int
    old_sha256: str
    new_sha256: str

    @property
    def equal(self) -> bool:
        return self.old_sha256 == self.new_sha256

    def to_json(self) -> dict[str, Any]:
        return {
            "equal": self.equal,
            "old": {"size": self.old_size, "sha256": self.old_sha256},
            "new": {"size": self.new_size, "sha256": self.new_sha256},
        }


@dataclass(frozen=True)
class PackageDiff:
    """The result of ``ptn.diff``; ``to_json()`` is what ``ptn diff --json`` prints."""

    old: str
    new: str
    members: Section[MemberFacts, tuple[MemberFacts, MemberFacts]]
    program: ProgramDiff
    methods: Section[MethodFacts, tuple[MethodFacts, MethodFacts]]
    bindings: Section[BindingFacts, tuple[BindingFacts, BindingFacts]]
    tensors: Section[TensorFacts, TensorChange]
    aliases: Section[str, tuple[str, str]]
    metadata: Section[Stored, tuple[Stored, Stored]]
    values: bool = False

    @property
    def equal(self) -> bool:
        sections = (
            self.members, self.methods, self.bindings, self.tensors, self.aliases, self.metadata
        )  # fmt: skip
        return self.program.equal and all(s.equal for s in sections)

    def to_json(self) -> dict[str, Any]:
        """JSON-ready data; its shape is documented in docs/diff.md."""
        return {
            "old": self.old,
            "new": self.new,
            "equal": self.equal,
            "values": self.values,
            "members": _section_json(
                self.members,
                "name",
                lambda m: m.to_json(),
                lambda c: {"old": c[0].to_json(), "new": c[1].to_json()},
            ),
            "program": self.program.to_json(),
            "methods": _section_json(self.methods, "name", _facts_json, _change_json),
            "bindings": _section_json(self.bindings, "data_key", _facts_json, _change_json),
            "tensors": _section_json(
                self.tensors, "key", lambda t: t.to_json(), lambda c: c.to_json()
            ),
            "aliases": _section_json(
                self.aliases,
                "key",
                lambda owner: {"owner": owner},
                lambda c: {"old": c[0], "new": c[1]},
            ),
            "metadata": _section_json(
                self.metadata,
                "name",
                _meta_json,
                lambda c: {"old": _meta_json(c[0]), "new": _meta_json(c[1])},
            ),
        }


def _section_json(
    section: Section[V, C],
    label: str,
    one: Callable[[V], dict[str, Any]],
    change: Callable[[C], dict[str, Any]],
) -> dict[str, Any]:
    return {
        "added": [{label: k, **one(v)} for k, v in section.added.items()],
        "removed": [{label: k, **one(v)} for k, v in section.removed.items()],
        "changed": [{label: k, **change(c)} for k, c in section.changed.items()],
        "unchanged": section.unchanged,
    }


def _facts_json(facts: MethodFacts | BindingFacts) -> dict[str, Any]:
    return facts.to_json()


def _change_json(change: tuple[Any, Any]) -> dict[str, Any]:
    return {"old": change[0].to_json(), "new": change[1].to_json()}


def _meta_json(value: Stored) -> dict[str, Any]:
    return {"kind": _kind_of(value), "value": value}


def _same_value(a: Stored, b: Stored) -> bool:
    """Equal with the same kind: 1 vs 1.0 vs True differ, and so do 0.0 and -0.0."""

    def tokens(v: Stored) -> list[tuple[str, Any]] | tuple[str, Any]:
        items = v if isinstance(v, list) else [v]
        typed = [(_SCALAR_KINDS[type(x)], x.hex() if type(x) is float else x) for x in items]
        return typed if isinstance(v, list) else typed[0]

    return tokens(a) == tokens(b)


def _sections(
    old: dict[str, V], new: dict[str, V], same: Callable[[V, V], bool]
) -> Section[V, tuple[V, V]]:
    changed = {k: (old[k], new[k]) for k in sorted(old.keys() & new.keys())}
    unchanged = [k for k, (a, b) in changed.items() if same(a, b)]
    for k in unchanged:
        del changed[k]
    return Section(
        added={k: new[k] for k in sorted(new.keys() - old.keys())},
        removed={k: old[k] for k in sorted(old.keys() - new.keys())},
        changed=changed,
        unchanged=len(unchanged),
    )


def _sha256(view: memoryview) -> str:
    digest = hashlib.sha256()
    for start in range(0, len(view), CHUNK_BYTES):
        digest.update(view[start : start + CHUNK_BYTES])
    return digest.hexdigest()


def _facts(info: TensorInfo) -> TensorFacts:
    return TensorFacts(info.dtype, info.shape, info.nbytes)


class _Reader:
    """Counts bytes read for a progress callback."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total, self.done, self.progress = total, 0, progress

    def advance(self, n: int) -> None:
        self.done += n
        if self.progress is not None:
            self.progress(self.done, self.total)


def _bytes_equal(
    old: Package, new: Package, owners: tuple[str, str], nbytes: int, reader: _Reader
) -> bool:
    """Chunk by chunk, read from the files; stops at the first differing chunk."""
    step = max(1, CHUNK_BYTES)
    left = 2 * nbytes
    for x, y in zip(
        old.constant_chunks(owners[0], step, reuse=True),
        new.constant_chunks(owners[1], step, reuse=True),
        strict=True,
    ):
        reader.advance(2 * len(x))
        left -= 2 * len(x)
        if len(x) <= SMALL_BYTES:
            same = bytes(x) == bytes(y)
        else:
            same = np.array_equal(np.frombuffer(x, np.uint8), np.frombuffer(y, np.uint8))
        if not same:
            reader.advance(left)  # counted as done: the rest need not be read
            return False
    return True


def _value_stats(
    old: Package, new: Package, owners: tuple[str, str], reader: _Reader
) -> ValueStats:
    """Elementwise stats, as float64, ``CHUNK_BYTES // 16`` elements at a time."""
    n = max(1, CHUNK_BYTES // 16)
    old_dtype, old_size = DTYPES[old.tensor_info(owners[0]).dtype]
    new_dtype, new_size = DTYPES[new.tensor_info(owners[1]).dtype]
    worst, differing, nan_mismatches = 0.0, 0, 0
    for x, y in zip(
        old.constant_chunks(owners[0], n * old_size, reuse=True),
        new.constant_chunks(owners[1], n * new_size, reuse=True),
        strict=True,
    ):
        reader.advance(len(x) + len(y))
        a = np.frombuffer(x, old_dtype).astype(np.float64)
        b = np.frombuffer(y, new_dtype).astype(np.float64)
        a_nan, b_nan = np.isnan(a), np.isnan(b)
        equal = (a == b) | (a_nan & b_nan)
        one_nan = a_nan ^ b_nan
        differing += equal.size - int(np.count_nonzero(equal))
        nan_mismatches += int(np.count_nonzero(one_nan))
        with np.errstate(invalid="ignore", over="ignore"):
            gap = np.abs(a - b)
        gap[equal | one_nan] = 0.0
        if gap.size:
            worst = max(worst, float(gap.max()))
    return ValueStats(worst, differing, nan_mismatches)


def _tensors(
    old: Package, new: Package, values: bool, progress: Progress | None
) -> Section[TensorFacts, TensorChange]:
    old_keys, new_keys = set(old.keys()), set(new.keys())
    both = sorted(old_keys & new_keys)
    infos = {k: (old.tensor_info(k), new.tensor_info(k)) for k in both}
    facts = {k: (_facts(a), _facts(b)) for k, (a, b) in infos.items()}
    owners = {k: (a.key, b.key) for k, (a, b) in infos.items()}
    # An alias shares its owner's bytes: each pair of owners is read once.
    pairs = {owners[k]: facts[k] for k in both}
    same_size = [o for o, (a, b) in pairs.items() if a.nbytes == b.nbytes]
    reader = _Reader(sum(2 * pairs[o][0].nbytes for o in same_size), progress)
    bytes_equal = {o: _bytes_equal(old, new, o, pairs[o][0].nbytes, reader) for o in same_size}
    stats: dict[tuple[str, str], ValueStats] = {}
    if values:  # a second pass, over the changed floating-point constants only
        todo = [
            o
            for o, (a, b) in pairs.items()
            if (a.dtype != b.dtype or not bytes_equal.get(o, False))
            and a.dtype in FLOATING
            and b.dtype in FLOATING
            and a.shape == b.shape
        ]
        reader.total += sum(pairs[o][0].nbytes + pairs[o][1].nbytes for o in todo)
        for o in todo:
            stats[o] = _value_stats(old, new, o, reader)
    changed = {
        k: TensorChange(*facts[k], bytes_equal.get(owners[k], False), stats.get(owners[k]))
        for k in both
        if facts[k][0] != facts[k][1] or not bytes_equal.get(owners[k], False)
    }
    return Section(
        added={k: _facts(new.tensor_info(k)) for k in sorted(new_keys - old_keys)},
        removed={k: _facts(old.tensor_info(k)) for k in sorted(old_keys - new_keys)},
        changed=changed,
        unchanged=len(both) - len(changed),
    )


def compare(
    old: Package, new: Package, *, values: bool = False, progress: Progress | None = None
) -> PackageDiff:
    """``diff`` of two open packages (they stay open)."""
    members = _sections(
        {n: MemberFacts(m.size, m.crc32) for n, m in old.members.items()},
        {n: MemberFacts(m.size, m.crc32) for n, m in new.members.items()},
        lambda a, b: a == b,
    )
    program = ProgramDiff(
        len(old.program), len(new.program), _sha256(old.program), _sha256(new.program)
    )
    methods_old, methods_new = methods_or_none(old), methods_or_none(new)
    meta_old = old.metadata.to_dict() if old.metadata is not None else {}
    meta_new = new.metadata.to_dict() if new.metadata is not None else {}
    return PackageDiff(
        old=old.path,
        new=new.path,
        members=members,
        program=program,
        methods=_sections(
            method_facts(methods_old), method_facts(methods_new), lambda a, b: a == b
        ),
        bindings=_sections(
            binding_facts(methods_old), binding_facts(methods_new), lambda a, b: a == b
        ),
        tensors=_tensors(old, new, values, progress),
        aliases=_sections(old.aliases, new.aliases, lambda a, b: a == b),
        metadata=_sections(meta_old, meta_new, _same_value),
        values=values,
    )


def diff(
    old: str | os.PathLike[str] | Package,
    new: str | os.PathLike[str] | Package,
    *,
    values: bool = False,
    progress: Progress | None = None,
) -> PackageDiff:
    """What differs from package ``old`` to package ``new`` (paths or open packages).

    Raises ``PtnError`` if either is invalid. ``values``: also the largest
    absolute difference of each changed floating-point constant of unchanged
    shape. ``progress(done, total)`` is called as constant bytes are read.
    """
    with ExitStack() as stack:
        opened = [p if isinstance(p, Package) else stack.enter_context(load(p)) for p in (old, new)]
        return compare(opened[0], opened[1], values=values, progress=progress)
