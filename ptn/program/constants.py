"""The constants a package stores against the ones its program binds (spec section 4.3).

A method binds a constant by its ``data_key``; an AffineGroup scheme binds its scales
and zero points by key too. A key is stored when program.safetensors or aliases.json
holds it. ``constant_findings`` compares the two, binding by binding, in program order:
the key is stored, with the dtype and shape (or packed size) the program says; a
mutated constant is no alias; every binding of a key agrees; no bytes sit under a
mutable buffer's name; and then, every stored key is bound by something.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from ptn.core.errors import Finding, FindingBudget, pointer
from ptn.core.names import ALIASES, PTG, SAFETENSORS
from ptn.program.model import AffineGroup, Binding, Graph, Program, TensorMeta, UnknownMember
from ptn.safetensors.header import TensorInfo

_NO_DATA = "has no data in program.safetensors or aliases.json"


@dataclass(frozen=True)
class Stored:
    """What a package stores, as validation read it.

    ``tensors``: the readable entries of program.safetensors ({} when the member is
    absent, None when it could not be read); ``aliases``: the readable entries of
    aliases.json (likewise); ``broken``: keys whose entry, alias entry or owner breaks a
    rule of sections 5 or 6, left out of every comparison.
    """

    tensors: Mapping[str, TensorInfo] | None
    aliases: Mapping[str, str] | None
    broken: Collection[str] = ()

    def entry(self, key: str) -> TensorInfo | Literal[False] | None:
        """The entry holding ``key``'s bytes; False when the key is not stored; None when
        that cannot be known (a member unreadable, the key or its owner broken)."""
        if self.tensors is None or key in self.broken:
            return None
        owner = key if self.aliases is None else self.aliases.get(key, key)
        if owner in self.broken:
            return None
        info = self.tensors.get(owner)
        if info is not None:
            return info
        return None if self.aliases is None else False


def _where(*tokens: str | int) -> str:
    return pointer(*tokens)


def _quant_keys(meta: TensorMeta) -> tuple[tuple[str, str], ...]:
    """(field, key) of each constant an AffineGroup scheme names."""
    q = meta.quant
    if not isinstance(q, AffineGroup):
        return ()
    keys: tuple[tuple[str, str], ...] = (("scale_data_key", q.scale_data_key),)
    if q.zero_point_data_key:
        keys += (("zero_point_data_key", q.zero_point_data_key),)
    return keys


def _tensor_values(
    graph: Graph, base: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str, TensorMeta]]:
    """(pointer tokens of the meta, tensor value name, meta) of every tensor value of
    ``graph`` and of its subgraphs, depth first."""
    positions = graph.tensor_value_positions()
    for t, (name, meta) in zip(positions, graph.tensor_values.items(), strict=True):
        yield (*base, "tensor_values", t, "meta"), name, meta
    for n, a, sub in graph.subgraphs():
        inner = (*base, "nodes", n, "inputs", a, "arg", "value", "graph")
        yield from _tensor_values(sub.graph, inner)


class _Check:
    def __init__(self, stored: Stored) -> None:
        self.stored = stored
        self.out = FindingBudget()  # 10^5 bindings of missing keys list 100 per rule
        self.bound: set[str] = set()
        self.first: dict[str, tuple[tuple[str | int, ...], Binding]] = {}
        owners: dict[str, tuple[str, int]] = {}
        for alias, owner in (stored.aliases or {}).items():
            first, n = owners.get(owner, (alias, 0))
            owners[owner] = (first, n + 1)
        self.owners = owners

    def error(self, rule: str, where: str, message: str, member: str = PTG) -> None:
        if self.out.room(rule, "error"):
            self.out.append(Finding(rule, "error", member, where, message))
        else:
            self.out.skip(rule, "error")

    def key_is_stored(self, key: str, where: str, what: str) -> None:
        self.bound.add(key)
        if self.stored.entry(key) is False:
            self.error("ptg-missing-constant", where, f"{what} {_NO_DATA}")

    def binding(self, base: tuple[str | int, ...], c: Binding) -> None:
        self.bound.add(c.data_key)
        what = f"constant {c.name!r} (data_key {c.data_key!r})"
        entry = self.stored.entry(c.data_key)
        if entry is False:
            self.error("ptg-missing-constant", _where(*base, "data_key"), f"{what} {_NO_DATA}")
        elif entry is not None:
            self.compare(base, what, c.data_key, c.meta, entry)
        self.mutated_alias(base, c)
        self.conflict(base, c)
        for name, key in _quant_keys(c.meta):
            self.key_is_stored(
                key, _where(*base, "meta", "quant", "scheme", name), f"{name} {key!r} of {what}"
            )

    def compare(
        self, base: tuple[str | int, ...], what: str, key: str, meta: TensorMeta, info: TensorInfo
    ) -> None:
        quant = meta.quant
        if isinstance(quant, UnknownMember):
            return  # a scheme ptn does not know: its storage is not ptn's to judge
        owner = "" if info.key == key else f" (the bytes of {info.key!r})"
        want = "U8" if quant is not None else meta.dtype_name
        if want != info.dtype:
            said = (
                "quantized, so stored as U8" if quant is not None
                else f"{meta.dtype_name} in the program" if want
                else f"dtype code {meta.dtype} in the program, which no safetensors dtype is"
            )  # fmt: skip
            self.error(
                "ptg-constant-dtype-mismatch",
                _where(*base, "meta", "dtype"),
                f"{what} is {said}; program.safetensors stores {info.dtype}{owner}",
            )
        if quant is None and not meta.admits(info.shape):
            sizes = ", ".join(str(d) for d in meta.sizes)
            self.error(
                "ptg-constant-shape-mismatch",
                _where(*base, "meta", "sizes"),
                f"{what} has sizes [{sizes}] in the program; program.safetensors stores shape "
                f"{list(info.shape)}{owner}",
            )
        if isinstance(quant, AffineGroup):
            self.packed_size(base, what, meta, quant, info, owner)

    def packed_size(
        self,
        base: tuple[str | int, ...],
        what: str,
        meta: TensorMeta,
        quant: AffineGroup,
        info: TensorInfo,
        owner: str,
    ) -> None:
        where = _where(*base, "meta", "quant")
        nbytes = info.end - info.begin
        low, high = meta.numel_range
        fewest, most = quant.packed_bytes(low), None if high is None else quant.packed_bytes(high)
        if fewest is None:
            self.error(
                "ptg-constant-size-mismatch",
                where,
                f"{what} cannot be sized: its quant range [{quant.quant_min}, "
                f"{quant.quant_max}] is empty",
            )
        elif nbytes < fewest or (most is not None and nbytes > most):
            count = f"{low}" if high == low else f"{low}..{'' if high is None else high}"
            packed = f"{fewest}" if most == fewest else f"{fewest}..{'' if most is None else most}"
            self.error(
                "ptg-constant-size-mismatch",
                where,
                f"{what} holds {nbytes} bytes{owner}; {count} values of {quant.bits} bits "
                f"pack into {packed} bytes",
            )

    def mutated_alias(self, base: tuple[str | int, ...], c: Binding) -> None:
        aliases = self.stored.aliases
        if not c.mutated or aliases is None:
            return
        key = c.data_key
        if key in aliases:
            how = f"is an alias of {aliases[key]!r}"
        elif key in self.owners:
            first, n = self.owners[key]
            how = f"owns the bytes of {n} alias{'es' if n > 1 else ''} (first: {first!r})"
        else:
            return
        self.error(
            "ptg-mutated-alias",
            _where(*base, "mutated"),
            f"constant {c.name!r} is mutated, but its data_key {key!r} {how} in aliases.json: "
            "a method would write bytes that other keys share",
        )

    def conflict(self, base: tuple[str | int, ...], c: Binding) -> None:
        seen = self.first.get(c.data_key)
        if seen is None:
            self.first[c.data_key] = (base, c)  # its pointer is made only for a finding
            return
        there_tokens, first = seen
        there = _where(*there_tokens)
        a, b = c.meta, first.meta
        if (a.dtype, a.sizes, a.contiguous_order, a.quant) != (
            b.dtype,
            b.sizes,
            b.contiguous_order,
            b.quant,
        ):
            mine, theirs = a.describe(), b.describe()
            if mine == theirs:
                mine, theirs = f"{mine} (one quantization)", f"{theirs} (another)"
            self.error(
                "ptg-conflicting-binding",
                _where(*base, "meta"),
                f"data_key {c.data_key!r} is bound as {mine} here and as {theirs} at {there}",
            )
        elif c.mutated != first.mutated:
            said = {True: "mutated", False: "not mutated"}
            self.error(
                "ptg-conflicting-binding",
                _where(*base, "mutated"),
                f"data_key {c.data_key!r} is bound {said[c.mutated]} here and "
                f"{said[first.mutated]} at {there}",
            )

    def mutable_buffer(self, base: tuple[str | int, ...], name: str, fqn: str) -> None:
        s = self.stored
        if fqn in s.broken:
            return
        if s.tensors is not None and fqn in s.tensors:
            member = "program.safetensors"
        elif s.aliases is not None and fqn in s.aliases:
            member = "aliases.json"
        else:
            return
        self.error(
            "ptg-mutable-buffer-stored",
            _where(*base, "fqn"),
            f"mutable buffer {name!r} (fqn {fqn!r}) starts at zero and holds no bytes, but "
            f"{member} stores {fqn!r}",
        )

    def unused(self) -> None:
        s = self.stored
        if s.tensors is None:
            return  # what is stored is not known: the unreadable header's finding says why
        rule, out, bound, broken = "ptg-unused-constant", self.out, self.bound, s.broken
        for member, keys in ((SAFETENSORS, s.tensors), (ALIASES, s.aliases)):
            unbound = [key for key in keys or () if key not in bound and key not in broken]
            for i, key in enumerate(unbound):
                if not out.room(rule, "warning"):
                    out.skip(rule, "warning", len(unbound) - i)  # counted, not listed
                    break
                message = f"{key!r} is stored, but no method binds it"
                out.append(Finding(rule, "warning", member, pointer(key), message))


def constant_findings(program: Program, stored: Stored) -> list[Finding]:
    """Section 4.3's findings, in program order, then the unused keys in member order."""
    check = _Check(stored)
    for i, method in enumerate(program.methods):
        for j, c in enumerate(method.constants):
            check.binding(("methods", i, "constants", j), c)
        for k, buffer in enumerate(method.mutable_buffers):
            check.mutable_buffer(("methods", i, "mutable_buffers", k), buffer.name, buffer.fqn)
        for tokens, name, meta in _tensor_values(method.graph, ("methods", i, "graph")):
            for field, key in _quant_keys(meta):
                check.key_is_stored(
                    key,
                    _where(*tokens, "quant", "scheme", field),
                    f"{field} {key!r} of tensor value {name!r}",
                )
    check.unused()
    return check.out.finish()
