"""The metadata against the program it describes (spec.md 9.8).

The program shows some facts the metadata states (ptn.program.llm_facts): the KV caches'
count and shapes, the vocabulary, the longest token sequence. Each rule compares one
metadata value with one such fact, only where the program shows it. A finding is about
``metadata.json`` (the member a user edits; the pointer is the value's) and its message
names the program's side with its program.ptg pointer. Values that break spec.md 9.1 to
9.3 are not compared: the rule says so once (``llm-rule-unchecked``). Errors first, in
rule order, then those warnings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptn.core.errors import Finding, pointer
from ptn.core.names import METADATA
from ptn.metadata.faults import RuleInputs
from ptn.metadata.rules import unchecked
from ptn.program.llm_facts import Cache, Extent, LlmFacts

_GEOMETRY = ("get_kv_heads", "get_head_dims", "get_windows")
_COUNTS = ("get_n_caches", *_GEOMETRY, "get_n_layers")


def agreement_findings(facts: LlmFacts, inputs: RuleInputs) -> list[Finding]:
    """Every disagreement of the metadata's well-known values with ``facts``."""
    check = _Agreement(facts, inputs.values, inputs.broken)
    check.cache_count()
    check.cache_geometry()
    check.windows()
    check.context()
    check.seq_len()
    check.vocabulary()
    check.token_ids()
    return check.errors + check.warnings


def _entries(n: int) -> str:
    return f"{n} {'entry' if n == 1 else 'entries'}"


class _Agreement:
    def __init__(self, facts: LlmFacts, values: Mapping[str, Any], broken: Mapping[str, str]):
        self.facts = facts
        self.values = values
        self.broken = broken
        self.errors: list[Finding] = []
        self.warnings: list[Finding] = []

    def present(self, name: str) -> bool:
        return name in self.values or name in self.broken

    def error(self, rule: str, where: str, message: str) -> None:
        self.errors.append(Finding(rule, "error", METADATA, where, message))

    def checkable(self, rule: str, names: list[str]) -> bool:
        """False (and one ``llm-rule-unchecked``) if a present one of ``names`` is broken."""
        bad = [n for n in names if n in self.broken]
        if bad:
            self.warnings.append(
                unchecked(rule, bad, self.broken).with_member(METADATA).to_finding("warning")
            )
        return not bad

    # -- the caches ---------------------------------------------------------------------

    def cache_count(self) -> None:
        caches = self.facts.caches
        name = next((n for n in _COUNTS if self.present(n)), None)
        if not caches or name is None:
            return
        shared = "get_num_kv_shared_layers"
        names = [name, shared] if name == "get_n_layers" and self.present(shared) else [name]
        if not self.checkable("llm-cache-count-mismatch", names):
            return
        value = self.values[name]
        if name in _GEOMETRY:
            said, source = len(value), f"{name} has {_entries(len(value))}"
        elif len(names) == 2:
            skip = self.values[shared]
            said = value - skip
            source = f"get_n_layers - {shared} = {value} - {skip} = {said}"
        else:
            said, source = value, f"{name} = {value}"
        n = len(caches)
        if said != n:
            first = caches[0].keys
            self.error(
                "llm-cache-count-mismatch",
                pointer(name),
                f"{source}, but the program keeps {n} KV cache{'' if n == 1 else 's'} "
                f"({2 * n} buffers of rank 4 that its graph updates, paired as keys and "
                f"values; the first, {first.name!r}, at program.ptg {first.declared})",
            )

    def per_cache(self, name: str) -> list[Any] | None:
        """The list ``name`` when it has one entry per cache (else no entry is compared)."""
        caches = self.facts.caches
        value = self.values.get(name)
        if not caches or value is None or len(value) != len(caches):
            return None
        return list(value)

    def cache_geometry(self) -> None:
        if not self.facts.caches:
            return
        names = [n for n in ("get_kv_heads", "get_head_dims") if self.present(n)]
        for name, d, label in (("get_kv_heads", 1, "KV heads"), ("get_head_dims", 3, "head dim")):
            listed = self.per_cache(name)
            if listed is None:
                continue
            caches = self.facts.caches
            wrong = [i for i, v in enumerate(listed) if v != caches[i].size(d)]
            if wrong:
                i = wrong[0]
                more = len(wrong) - 1
                self.error(
                    "llm-cache-geometry-mismatch",
                    pointer(name, i),
                    f"{name}[{i}] = {listed[i]}, but dimension {d} of cache {i} ({label}) is "
                    f"{caches[i].size(d)}: {caches[i].keys.dim(d)}"
                    + (f"; {more} more {'entry differs' if more == 1 else 'entries differ'}"
                       if more else ""),
                )  # fmt: skip
        self.checkable("llm-cache-geometry-mismatch", names)

    def windows(self) -> None:
        if not self.facts.caches or not self.present("get_windows"):
            return
        if not self.checkable("llm-window-exceeds-cache", ["get_windows"]):
            return
        listed = self.per_cache("get_windows") or []
        for i, (window, cache) in enumerate(zip(listed, self.facts.caches, strict=False)):
            if window > cache.length:
                self.error(
                    "llm-window-exceeds-cache",
                    pointer("get_windows", i),
                    f"get_windows[{i}] = {window}, but cache {i} holds {cache.length} positions: "
                    f"{cache.keys.dim(2)}; a window longer than its cache needs positions the "
                    "cache no longer holds",
                )
                return

    # -- lengths ------------------------------------------------------------------------

    def context(self) -> None:
        name = "get_max_context_len"
        caches, tokens = self.facts.caches, self.facts.tokens
        if not self.present(name) or not (caches or (caches == () and tokens is not None)):
            return
        if caches:
            names = [name, *(["get_windows"] if self.present("get_windows") else [])]
            if not self.checkable("llm-context-exceeds-program", names):
                return
            full = self.full_history(caches)
            longest = self.values[name]
            for i, why in full:
                if caches[i].length < longest:
                    self.error(
                        "llm-context-exceeds-program",
                        pointer(name),
                        f"{name} = {longest}, but cache {i} keeps the full history ({why}) and "
                        f"holds {caches[i].length} positions: {caches[i].keys.dim(2)}",
                    )
                    return
            return
        if not self.checkable("llm-context-exceeds-program", [name]):
            return
        assert tokens is not None
        if self.values[name] > tokens.size:
            self.error(
                "llm-context-exceeds-program",
                pointer(name),
                f"{name} = {self.values[name]}, but the program keeps no KV cache, so one call "
                f"sees the whole context, and {tokens}",
            )

    def full_history(self, caches: tuple[Cache, ...]) -> list[tuple[int, str]]:
        """(index, why) of each cache that keeps the full history; none when get_windows
        has another number of entries than there are caches (no guess)."""
        if "get_windows" not in self.values:
            return [(i, "get_windows is absent") for i in range(len(caches))]
        listed = self.per_cache("get_windows") or []
        return [(i, f"get_windows[{i}] = 0") for i, w in enumerate(listed) if w == 0]

    def seq_len(self) -> None:
        name = "get_max_seq_len"
        caches, tokens = self.facts.caches, self.facts.tokens
        if not self.present(name) or not (caches or tokens is not None):
            return
        if not self.checkable("llm-seq-len-exceeds-program", [name]):
            return
        step = self.values[name]
        if tokens is not None and step > tokens.size:
            rule = "llm-seq-len-exceeds-program"
            self.error(rule, pointer(name), f"{name} = {step}, but {tokens}")
            return
        for i, cache in enumerate(caches or ()):
            if cache.length < step:
                self.error(
                    "llm-seq-len-exceeds-program",
                    pointer(name),
                    f"{name} = {step}, but cache {i} holds {cache.length} positions: "
                    f"{cache.keys.dim(2)}; one step must fit every cache",
                )
                return

    # -- the vocabulary -----------------------------------------------------------------

    def vocabulary(self) -> None:
        name = "get_vocab_size"
        shown = [e for e in (self.facts.logits, self.facts.embedding) if e is not None]
        if not shown or not self.present(name):
            return
        if not self.checkable("llm-vocab-mismatch", [name]):
            return
        size = self.values[name]
        wrong = [str(e) for e in shown if e.size != size]
        if wrong:
            self.error(
                "llm-vocab-mismatch", pointer(name), f"{name} = {size}, but {' and '.join(wrong)}"
            )

    def token_ids(self) -> None:
        vocabulary = self.facts.vocabulary
        if vocabulary is None or self.present("get_vocab_size"):
            return  # with get_vocab_size, llm-token-id-out-of-range holds ids to it
        names = [n for n in ("get_bos_id", "get_eos_ids") if self.present(n)]
        for name in names:
            value = self.values.get(name)
            if value is None:
                continue
            items = enumerate(value) if isinstance(value, (list, tuple)) else [(None, value)]
            for index, item in items:
                if item >= vocabulary.size:
                    label = name if index is None else f"{name}[{index}]"
                    self.error(
                        "llm-token-id-out-of-range",
                        pointer(name) if index is None else pointer(name, index),
                        f"{label} = {item} is not below the program's vocabulary: {vocabulary}",
                    )
                    self.checkable("llm-token-id-out-of-range", names)
                    return
        self.checkable("llm-token-id-out-of-range", names)


# -- side by side (ptn inspect) ---------------------------------------------------------------

_ROWS = (
    ("KV caches", "llm-cache-count-mismatch"),
    ("KV heads per cache", "llm-cache-geometry-mismatch"),
    ("head dim per cache", "llm-cache-geometry-mismatch"),
    ("window / cache length", "llm-window-exceeds-cache"),
    ("context length", "llm-context-exceeds-program"),
    ("tokens per step", "llm-seq-len-exceeds-program"),
    ("vocabulary", "llm-vocab-mismatch"),
    ("token ids", "llm-token-id-out-of-range"),
)


def side_by_side(facts: LlmFacts, inputs: RuleInputs) -> list[dict[str, Any]]:
    """One row per fact of spec.md 9.8: what the metadata says (the name and value, None
    when absent or broken), what the program shows (a value and its program.ptg pointer,
    None when it does not show it), the rule that compares them, and whether they agree
    (None when they are not compared)."""
    found = agreement_findings(facts, inputs)
    values = inputs.values
    rows = []
    for (fact, rule), said, shown in zip(
        _ROWS, _metadata_side(values), _program_side(facts, values), strict=True
    ):
        names = [said["name"]] if said is not None else []
        names += ["get_eos_ids"] if fact == "token ids" and "get_eos_ids" in values else []
        wrong = any(
            f.rule == rule
            and f.severity == "error"
            and any(f.pointer == pointer(n) or (f.pointer or "").startswith(pointer(n) + "/")
                    for n in names)
            for f in found
        )  # fmt: skip
        compared = said is not None and shown is not None
        if fact == "token ids" and compared:  # every id, whichever rule would say so
            eos: Any = values.get("get_eos_ids", ())
            ids: list[Any] = [values["get_bos_id"]] if "get_bos_id" in values else []
            wrong = any(i >= shown["value"] for i in [*ids, *eos])  # type: ignore[index]
        rows.append(
            {
                "fact": fact,
                "metadata": said,
                "program": shown,
                "rule": rule,
                "agrees": (not wrong) if compared else None,
            }
        )
    return rows


def _said(values: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    if name not in values:
        return None
    value = values[name]
    return {"name": name, "value": list(value) if isinstance(value, (list, tuple)) else value}


def _metadata_side(values: Mapping[str, Any]) -> list[dict[str, Any] | None]:
    count = next((n for n in _COUNTS if n in values), None)
    ids = "get_bos_id" if "get_bos_id" in values else "get_eos_ids"
    return [
        None if count is None else _said(values, count),
        _said(values, "get_kv_heads"),
        _said(values, "get_head_dims"),
        _said(values, "get_windows"),
        _said(values, "get_max_context_len"),
        _said(values, "get_max_seq_len"),
        _said(values, "get_vocab_size"),
        _said(values, ids),
    ]


def _program_side(facts: LlmFacts, values: Mapping[str, Any]) -> list[dict[str, Any] | None]:
    caches = facts.caches or ()

    def per_cache(d: int) -> dict[str, Any] | None:
        if not caches:
            return None
        return {"value": [c.size(d) for c in caches], "pointer": f"{caches[0].keys.meta}/sizes/{d}"}

    def extent(e: Extent | None) -> dict[str, Any] | None:
        return None if e is None else {"value": e.size, "pointer": e.where}

    count = None
    if facts.caches is not None:
        where = caches[0].keys.declared if caches else None
        count = {"value": len(caches), "pointer": where}
    context = extent(facts.tokens) if facts.caches == () else None
    if caches:
        agreeing = _Agreement(facts, values, {})
        full = agreeing.full_history(caches)
        if full:
            i = min(full, key=lambda item: caches[item[0]].length)[0]
            context = {"value": caches[i].length, "pointer": f"{caches[i].keys.meta}/sizes/2"}
    # A step is bounded by the token input and by every cache (the smaller shown).
    bounds = [extent(facts.tokens)] if facts.tokens is not None else []
    bounds += [
        {"value": c.length, "pointer": f"{c.keys.meta}/sizes/2"}
        for c in sorted(caches, key=lambda c: c.length)[:1]
    ]
    step = min(bounds, key=lambda b: b["value"]) if bounds else None  # type: ignore[index]
    return [
        count,
        per_cache(1),
        per_cache(3),
        per_cache(2),
        context,
        step,
        extent(facts.logits or facts.embedding),
        extent(facts.vocabulary),
    ]
