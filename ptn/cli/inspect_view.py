"""`ptn inspect`: a package described as data, and that data drawn as rich tables."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import compress, repeat
from operator import eq, itemgetter
from typing import Any, overload

from ptn.cli.report import NO_TRUST_HINT, count, safe
from ptn.core.errors import PtnError
from ptn.core.names import METADATA, PTG
from ptn.package.read import Package
from ptn.program.methods import method_json
from ptn_generated.metadata_rules import WELL_KNOWN


def _alignment(offset: int) -> int:
    """Largest power of two (up to 4096) dividing ``offset``."""
    align = 1
    while align < 4096 and offset % (align * 2) == 0:
        align *= 2
    return align


def describe(pkg: Package, *, every_row: bool = True) -> dict[str, Any]:
    """Everything `inspect` shows, as JSON-ready data.

    A package opened leniently may be invalid: what could be read is shown as
    usual, each part that could not is listed under ``unreadable`` with the
    finding that says why (``program`` is then null), and ``findings`` holds the
    whole fast-validation report. Without ``every_row`` the constants are a
    sequence whose rows are built when read (``render`` draws a few of 10^5);
    ``--json`` needs each one.
    """
    members = [
        {"name": m.name, "header_offset": m.header_offset, "data_offset": m.data_offset,
         "size": m.size, "data_alignment": _alignment(m.data_offset), "crc32": f"{m.crc32:08x}",
         "method": m.method}
        for m in sorted(pkg.members.values(), key=lambda m: m.header_offset)
    ]  # fmt: skip
    meta, kinds = _metadata_values(pkg)
    unreadable = [
        {"part": name, **finding.to_json()}
        for name, finding in pkg.unreadable.items()
        # metadata.json that parsed is shown as parsed; its findings say what is wrong
        if name != METADATA or meta is None
    ] + [
        {"part": f"constant {key}", "key": key, **finding.to_json()}
        for key, finding in sorted(pkg.unreadable_keys.items())
    ]  # fmt: skip
    rows = _Rows(pkg, pkg.keys())
    tensors: Sequence[dict[str, Any]] = rows[:] if every_row else rows
    meta = meta or {}
    ordered = [n for n in WELL_KNOWN if n in meta] + sorted(n for n in meta if n not in WELL_KNOWN)
    return {
        "path": pkg.path,
        "valid": pkg.valid,
        "members": members,
        "program": _program(pkg),
        "methods": _methods(pkg),
        "tensors": tensors,
        "metadata": [
            {
                "name": n,
                "kind": kinds[n],
                "value": meta[n],
                "meaning": WELL_KNOWN[n][5] if n in WELL_KNOWN else None,
            }
            for n in ordered
        ],
        "llm": _llm(pkg, meta),
        "totals": {
            "constants": len(tensors),
            "constant_bytes": rows.owned,
            "dedup_saved_bytes": rows.saved,
        },
        "unreadable": unreadable,
        "signature": None,  # the signature beside the file: add_signature fills it in
        "findings": [f.to_json() for f in pkg.findings],
        "warnings": [f.to_json() for f in pkg.warnings],
        "advice": [f.to_json() for f in pkg.advice],
    }


def add_signature(info: dict[str, Any], path: str, trust: Any) -> None:
    """``info["signature"]``: the signature beside the package (None without one), what it
    claims, and, with ``trust`` (``ptn.cli.signing.trust_from``), whether it verifies; a
    failure's findings join ``info["findings"]`` and make the package shown invalid."""
    from ptn.signing.verify import check_signature

    check = check_signature(path, trust[0] if trust else None,
                            verifier=trust[1] if trust else None)  # fmt: skip
    info["signature"] = None if check is None else check.to_json()
    if check is not None and check.findings:
        info["findings"] = [*info["findings"], *(f.to_json() for f in check.findings)]
        info["valid"] = False


class _Rows(Sequence[dict[str, Any]]):
    """The constants' rows, in key order, each built when read; the totals and the
    counts by dtype are tallied from the header's sizes, with no object per constant."""

    def __init__(self, pkg: Package, keys: list[str]) -> None:
        self._pkg, self._keys = pkg, keys
        by_dtype: dict[str, list[int]] = {}
        aliases = pkg.aliases
        self.owned = self.saved = 0
        if not aliases:  # the keys are the readable owners: tallied by loops in C
            owners = list(pkg.owner_sizes())
            dtypes, sizes = list(map(itemgetter(1), owners)), list(map(itemgetter(2), owners))
            for dtype, n in Counter(dtypes).items():
                by_dtype[dtype] = [n, sum(compress(sizes, map(eq, dtypes, repeat(dtype))))]
            self.owned = sum(sizes)
        else:
            by_owner = {key: (dtype, nbytes) for key, dtype, nbytes in pkg.owner_sizes()}
            for key in keys:  # a row's facts are its owner's (tensor_info resolves the alias)
                owner = aliases.get(key)
                dtype, nbytes = by_owner[key if owner is None else owner]
                _tally(by_dtype, dtype, nbytes)
                if owner is None:
                    self.owned += nbytes
                else:
                    self.saved += nbytes
        self.by_dtype = by_dtype
        """dtype -> [constants, bytes], aliases included."""

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._row(key) for key in self._keys[index]]
        return self._row(self._keys[index])

    def _row(self, key: str) -> dict[str, Any]:
        info = self._pkg.tensor_info(key)
        return {
            "key": key, "dtype": info.dtype, "shape": list(info.shape), "bytes": info.nbytes,
            "alias_of": self._pkg.aliases.get(key),
        }  # fmt: skip


def _tally(by_dtype: dict[str, list[int]], dtype: str, nbytes: int) -> None:
    tally = by_dtype.get(dtype)
    if tally is None:
        by_dtype[dtype] = [1, nbytes]
    else:
        tally[0] += 1
        tally[1] += nbytes


def _program(pkg: Package) -> dict[str, Any] | None:
    """Size and identifier of program.ptg; None when it cannot be read (see ``unreadable``)."""
    try:
        program = pkg.program
    except PtnError:
        return None
    return {"size": len(program), "identifier": bytes(program[4:8]).decode("latin-1")}


def _methods(pkg: Package) -> list[dict[str, Any]] | None:
    """Each method's inputs, outputs, bound constants and mutable buffers; None when the
    program cannot be decoded (its finding says why)."""
    try:
        methods = pkg.methods
    except PtnError:
        return None
    return [method_json(m) for m in methods]


def _llm(pkg: Package, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The metadata against the program, side by side (spec.md 9.8), for an LLM package:
    one whose metadata has a well-known name or whose program shows a KV cache or a
    vocabulary; [] for any other."""
    from ptn.metadata.faults import rule_inputs
    from ptn.package.agreement import side_by_side
    from ptn.program.llm_facts import LlmFacts, program_facts
    from ptn.program.read import read_program

    facts = LlmFacts()
    if not any(f.severity == "error" and f.member == PTG for f in pkg.findings):
        try:
            program, _ = read_program(pkg.program)
        except PtnError:
            program = None
        if program is not None:
            facts = program_facts(program)
    inputs = rule_inputs(meta)
    if not (inputs.values or inputs.broken or facts.caches or facts.vocabulary):
        return []
    return side_by_side(facts, inputs)


def _metadata_values(pkg: Package) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """Names -> values (None: unreadable), and names -> kinds, of what metadata.json parsed to.

    Values that break a rule are shown as parsed; a value that is no metadata
    value at all (an object, a nested list) has the kind "?".
    """
    try:
        meta = pkg.raw_metadata() or {}
    except PtnError:  # not JSON, or not an object: listed under unreadable
        return None, {}
    return meta, {n: _kind(v) for n, v in meta.items()}


_KINDS = {bool: "bool", int: "int", float: "float", str: "str"}


def _kind(value: Any) -> str:
    if type(value) is list:
        kinds = {_KINDS.get(type(v), "?") for v in value}
        if not value:
            return "list"
        return f"{kinds.pop()}s" if len(kinds) == 1 and "?" not in kinds else "?"
    return _KINDS.get(type(value), "?")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


SHOWN_AT_EACH_END = 20
"""Rows drawn at the start and at the end of a long table (``--all`` draws every row)."""


def _shown(rows: Sequence[Any], show_all: bool) -> tuple[Sequence[Any], int, Sequence[Any]]:
    """(first rows, how many are left out, last rows): drawing costs O(rows drawn)."""
    if show_all or len(rows) <= 2 * SHOWN_AT_EACH_END + 1:
        return rows, 0, []
    end = len(rows) - SHOWN_AT_EACH_END
    return rows[:SHOWN_AT_EACH_END], end - SHOWN_AT_EACH_END, rows[end:]


def _add_rows(table: Any, rows: Sequence[Any], show_all: bool, row: Any) -> None:
    """``row(item)`` for the rows shown; one line saying how many are not, between them."""
    from rich.text import Text

    first, left_out, last = _shown(rows, show_all)
    for item in first:
        table.add_row(*row(item))
    if left_out:
        table.add_row(Text(f"... {left_out:,} more (--all lists every row)", style="italic"))
        for item in last:
            table.add_row(*row(item))


def _by_dtype(tensors: Sequence[dict[str, Any]]) -> str:
    """``F32 x 3 (12 KiB), ...``: how many constants of each dtype, and their bytes."""
    if isinstance(tensors, _Rows):
        counts = tensors.by_dtype
    else:
        counts = {}
        for t in tensors:
            _tally(counts, t["dtype"], t["bytes"])
    return ", ".join(f"{d} x {n:,} ({_size(b)})" for d, (n, b) in sorted(counts.items()))


def render(info: dict[str, Any], show_all: bool = False) -> None:
    """Draw ``describe``'s data; untrusted strings go in as Text (never markup), escaped.

    Long tables (constants, metadata) show their first and last rows and a count of
    the rest unless ``show_all``, so the cost follows what is drawn, not the package.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console()
    console.print(Text(f"{safe(info['path'])}", style="bold"))
    members = Table(title="members", title_justify="left")
    for col in ("name", "offset", "data", "size", "align", "crc32"):
        members.add_column(col, justify="left" if col == "name" else "right")
    for m in info["members"]:
        members.add_row(
            Text(safe(m["name"])),
            str(m["header_offset"]),
            str(m["data_offset"]),
            _size(m["size"]),
            str(m["data_alignment"]),
            m["crc32"],
        )
    console.print(members)
    prog = info["program"]
    if prog is not None:
        console.print(Text(f"{PTG}: {_size(prog['size'])}, identifier {safe(prog['identifier'])}"))
    if info["methods"]:
        methods = Table(title="methods", title_justify="left")
        for col in ("name", "inputs", "outputs", "constants", "mutable buffers"):
            methods.add_column(col)
        _add_rows(methods, info["methods"], show_all, _method_row)
        console.print(methods)
    if info["tensors"]:
        tensors = Table(title="constants", title_justify="left")
        for col in ("key", "dtype", "shape", "bytes", "alias of"):
            tensors.add_column(col)
        _add_rows(
            tensors,
            info["tensors"],
            show_all,
            lambda t: (
                Text(safe(t["key"])),
                t["dtype"],
                "[" + ", ".join(map(str, t["shape"])) + "]",  # as diff and the findings print it
                _size(t["bytes"]),
                Text(safe(t["alias_of"] or "")),
            ),
        )
        console.print(tensors)
        if _shown(info["tensors"], show_all)[1]:
            console.print(Text(f"by dtype: {_by_dtype(info['tensors'])}"))
    if info["metadata"]:
        meta = Table(title="metadata", title_justify="left")
        for col in ("name", "kind", "value", "meaning"):
            meta.add_column(col)
        _add_rows(meta, info["metadata"], show_all, _metadata_row)
        console.print(meta)
    if info["llm"]:
        console.print(_llm_table(info["llm"]))
    totals = info["totals"]
    console.print(Text(
        f"{count(totals['constants'], 'constant')}, {_size(totals['constant_bytes'])} stored, "
        f"{_size(totals['dedup_saved_bytes'])} saved by deduplication"
    ))  # fmt: skip
    sig = info.get("signature")
    if sig is not None:
        console.print(Text(_signature_text(sig)))
    for part in info["unreadable"]:  # the findings below give the whole message
        console.print(Text(f"unreadable {safe(part['part'])}: {part['rule']}", style="bold"))
    if not info["valid"]:  # every finding, so the report needs no second command
        console.print(Text(f"invalid: {count(len(info['findings']), 'finding')}", style="bold"))
        for f in info["findings"]:
            where = " ".join(safe(p) for p in (f["member"], f["pointer"]) if p)
            console.print(Text(
                f"{f['severity']} {f['rule']}{' [' + where + ']' if where else ''} "
                f"{safe(f['message'])}"
            ))  # fmt: skip
        return
    for w in [*info["warnings"], *info["advice"]]:  # advice: what `ptn repack` would improve
        line = f"{w['severity']} {w['rule']} {safe(w['member'])}: {safe(w['message'])}"
        console.print(Text(line))


def _signature_text(sig: dict[str, Any]) -> str:
    """``signature model.ptn.sig: verified (public-key), sha256 ...`` and the like."""
    head = f"signature {safe(sig['path'])}: "
    claims = f"({sig['method']}, sha256 {sig['sha256']})"
    if sig["status"] == "verified":
        return head + "verified " + claims
    if sig["status"] == "unchecked":
        return head + f"not verified {claims}; {NO_TRUST_HINT}"
    return head + sig["status"] + " (the findings say why)"


def _llm_table(rows: list[dict[str, Any]]) -> Any:
    """What the metadata says and what the program shows, side by side (spec.md 9.8)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="LLM facts: metadata and program", title_justify="left")
    for col in ("fact", "metadata.json", "program.ptg", "at", "agree"):
        table.add_column(col)
    for row in rows:
        said, shown = row["metadata"], row["program"]
        agree = {True: "yes", False: f"no: {row['rule']}", None: ""}[row["agrees"]]
        table.add_row(
            row["fact"],
            Text("" if said is None else f"{said['name']} = {json.dumps(said['value'])}"[:200]),
            "" if shown is None else json.dumps(shown["value"])[:200],
            Text("" if shown is None else safe(shown["pointer"] or "")),
            Text(agree, style="bold red" if row["agrees"] is False else ""),
        )
    return table


def _tensor_text(row: dict[str, Any], name: str) -> str:
    """``x: F32 [1..8, 4]`` (just the name for a value the program gives no metadata)."""
    if row["dtype"] is None:
        return safe(row[name])
    shape = ", ".join(str(d) for d in row["shape"])
    return f"{safe(row[name])}: {safe(row['dtype'])} [{shape}]"


def _listed(rows: list[dict[str, Any]], name: str, most: int = 4) -> str:
    """One line per value, at most ``most`` of them and a count of the rest."""
    lines = [_tensor_text(r, name) for r in rows[:most]]
    if len(rows) > most:
        lines.append(f"... {len(rows) - most} more")
    return "\n".join(lines)


def _method_row(m: dict[str, Any]) -> tuple[Any, ...]:
    from rich.text import Text

    constants = m["constants"]
    mutated = sum(c["mutated"] for c in constants)
    bound = f"{len(constants):,}" + (f" ({mutated:,} mutated)" if mutated else "")
    return (
        Text(safe(m["name"])),
        Text(_listed(m["inputs"], "name")),
        Text(_listed(m["outputs"], "name")),
        bound,
        Text(_listed(m["mutable_buffers"], "fqn")),
    )


def _metadata_row(m: dict[str, Any]) -> tuple[Any, ...]:
    from rich.text import Text

    # A JSON literal, as `ptn metadata set` takes it (true, "tiny"), not a Python repr.
    shown = safe(json.dumps(m["value"], ensure_ascii=False))
    return Text(safe(m["name"])), m["kind"], Text(shown[:200]), Text(m["meaning"] or "")


def write_json(info: dict[str, Any], write: Callable[[str], object]) -> None:
    """Write ``json.dumps(info, indent=2, ensure_ascii=True)`` and a newline, in pieces.

    The same text, but a long list (10^5 constants) is encoded and written a batch
    of items at a time instead of as one string of the whole document.
    """
    for piece in _pieces(info):
        write(piece)
    write("\n")


_BATCH = 1000


def _pieces(info: dict[str, Any]) -> Iterator[str]:
    if not info or any(type(k) is not str for k in info):
        yield json.dumps(info, indent=2, ensure_ascii=True)
        return
    yield "{"
    for i, (key, value) in enumerate(info.items()):
        yield f"{',' if i else ''}\n  {_encode_str(key)}: "
        if type(value) is not list or not value:
            yield _pretty(value, 1)
            continue
        yield "["
        for start in range(0, len(value), _BATCH):
            batch = value[start : start + _BATCH]
            yield ("," if start else "") + ",".join("\n    " + _pretty(v, 2) for v in batch)
        yield "\n  ]"
    yield "\n}"


_encode_str: Callable[[str], str] = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]


def _pretty(value: Any, level: int) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=True)`` as it appears at nesting ``level``.

    Scalars go straight to the encoder's own functions (a row of a table is a few of them).
    """
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if kind is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if value and (kind is list or kind is tuple or kind is dict):
        inner = "\n" + "  " * (level + 1)
        if kind is not dict:
            items = [inner + _pretty(v, level + 1) for v in value]
            return "[" + ",".join(items) + inner[:-2] + "]"
        try:  # json turns other keys into strings its own way: the fallback below
            items = [f"{inner}{_encode_str(k)}: {_pretty(v, level + 1)}" for k, v in value.items()]
            return "{" + ",".join(items) + inner[:-2] + "}"
        except TypeError:
            pass
    text = json.dumps(value, indent=2, ensure_ascii=True)  # floats, empty or odd containers
    return text.replace("\n", "\n" + "  " * level)
