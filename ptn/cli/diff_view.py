"""`ptn diff`: the JSON form of a ``PackageDiff`` drawn as a compact listing.

One line per difference (``+`` only in B, ``-`` only in A, ``~`` changed), at
most ``MAX_ROWS`` per section followed by a count of the rest (``--json`` has
every one). Names, keys and values come from the files: all pass through
``safe`` before they are printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ptn.cli.report import count, safe
from ptn.core.names import PTG

MAX_ROWS = 20
MAX_VALUE_CHARS = 120

Row = dict[str, Any]


def _shape(shape: list[int | str]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _tensor(t: Row) -> str:
    return f"{t['dtype']} {_shape(t['shape'])}"


def _value(v: Row) -> str:
    """A JSON literal (as `ptn metadata set` takes it), escaped and shortened."""
    text = safe(json.dumps(v["value"], ensure_ascii=False))
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


def _member_change(c: Row) -> str:
    old, new = c["old"], c["new"]
    parts = [f"{f} {old[f]} -> {new[f]}" for f in ("size", "crc32") if old[f] != new[f]]
    return ", ".join(parts)


def _tensor_change(c: Row) -> str:
    old, new = c["old"], c["new"]
    parts = []
    if old["dtype"] != new["dtype"]:
        parts.append(f"dtype {old['dtype']} -> {new['dtype']}")
    if old["shape"] != new["shape"]:
        parts.append(f"shape {_shape(old['shape'])} -> {_shape(new['shape'])}")
    if not parts:
        parts.append(_tensor(old))
    parts.append("same bytes" if c["bytes_equal"] else "bytes differ")
    worst = c["max_abs_diff"]
    if worst is not None:
        shown = worst if isinstance(worst, str) else f"{worst:.6g}"
        stats = f"max |A-B| {shown}, {c['differing_elements']} elements differ"
        if c["nan_mismatches"]:
            stats += f" ({c['nan_mismatches']} NaN on one side only)"
        parts.append(stats)
    return ", ".join(parts)


def _tensor_value(row: Row, name: str = "name") -> str:
    """``x: F32 [1..8, 4]`` (the name alone for a value the program gives no metadata)."""
    if row["dtype"] is None:
        return safe(row[name])
    return f"{safe(row[name])}: {safe(row['dtype'])} {_shape(row['shape'])}"


def _values(rows: list[Row], name: str = "name") -> str:
    return "(" + ", ".join(_tensor_value(r, name) for r in rows) + ")"


def _method(m: Row) -> str:
    text = f"{_values(m['inputs'])} -> {_values(m['outputs'])}"
    if m["mutable_buffers"]:
        text += f", mutable buffers {_values(m['mutable_buffers'], 'fqn')}"
    return text


def _method_change(c: Row) -> str:
    old, new = c["old"], c["new"]
    parts = []
    for part, name in (("inputs", "inputs"), ("outputs", "outputs"),
                       ("mutable_buffers", "mutable buffers")):  # fmt: skip
        if old[part] != new[part]:
            label = "fqn" if part == "mutable_buffers" else "name"
            parts.append(f"{name} {_values(old[part], label)} -> {_values(new[part], label)}")
    return ", ".join(parts)


def _binding_meta(b: Row) -> str:
    text = f"{safe(b['dtype'])} {_shape(b['shape'])}"
    return text if b["quant"] is None else f"{text} quantized ({safe(b['quant'])})"


def _binding(b: Row) -> str:
    mutated = ", mutated" if b["mutated"] else ""
    return f"{_binding_meta(b)}{mutated}, bound by {', '.join(map(safe, b['methods']))}"


def _binding_change(c: Row) -> str:
    old, new = c["old"], c["new"]
    parts = []
    if _binding_meta(old) != _binding_meta(new):
        parts.append(f"{_binding_meta(old)} -> {_binding_meta(new)}")
    if old["mutated"] != new["mutated"]:
        said = {True: "mutated", False: "not mutated"}
        parts.append(f"{said[old['mutated']]} -> {said[new['mutated']]}")
    if old["methods"] != new["methods"]:
        parts.append(
            f"bound by {', '.join(map(safe, old['methods']))} -> "
            f"{', '.join(map(safe, new['methods']))}"
        )
    return ", ".join(parts)


def _meta_change(c: Row) -> str:
    old, new = c["old"], c["new"]
    if old["kind"] == new["kind"]:
        return f"{_value(old)} -> {_value(new)}"
    return f"{_value(old)} ({old['kind']}) -> {_value(new)} ({new['kind']})"


def _section(
    title: str,
    noun: str,
    section: Row,
    label: str,
    one: Callable[[Row], str],
    change: Callable[[Row], str],
    mark: Callable[[str], str],
) -> list[str]:
    rows = (
        [(mark("-"), r, one(r)) for r in section["removed"]]
        + [(mark("+"), r, one(r)) for r in section["added"]]
        + [(mark("~"), r, change(r)) for r in section["changed"]]
    )
    if not rows:
        return [f"{title}: equal ({count(section['unchanged'], noun)})"]
    counts = [
        f"{len(section[part])} {part}" for part in ("removed", "added", "changed") if section[part]
    ]
    lines = [f"{title}: {', '.join(counts)}, {section['unchanged']} equal"]
    lines += [f"  {sign} {safe(r[label])}: {text}" for sign, r, text in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        lines.append(f"  ... and {len(rows) - MAX_ROWS} more (--json lists every one)")
    return lines


def text_diff(info: Row, colour: bool) -> str:
    """The listing of ``PackageDiff.to_json()`` data; the last line is the verdict."""
    styles = {"-": "31", "+": "32", "~": "33"}

    def mark(sign: str) -> str:
        return f"\x1b[{styles[sign]}m{sign}\x1b[0m" if colour else sign

    program = info["program"]
    if program["equal"]:
        program_line = f"{PTG}: equal (sha256 {program['old']['sha256'][:16]}...)"
    else:
        program_line = (
            f"{PTG}: differs (sha256 {program['old']['sha256'][:16]}... -> "
            f"{program['new']['sha256'][:16]}..., size {program['old']['size']} -> "
            f"{program['new']['size']})"
        )
    lines = [f"A {safe(info['old'])}", f"B {safe(info['new'])}"]
    lines += _section(
        "members", "member", info["members"], "name",
        lambda m: f"size {m['size']}, crc32 {m['crc32']}", _member_change, mark,
    )  # fmt: skip
    lines.append(program_line)
    lines += _section("methods", "method", info["methods"], "name", _method, _method_change, mark)
    lines += _section(
        "bindings", "binding", info["bindings"], "data_key", _binding, _binding_change, mark
    )
    lines += _section(
        "constants", "constant", info["tensors"], "key", _tensor, _tensor_change, mark
    )
    lines += _section(
        "aliases", "aliased key", info["aliases"], "key",
        lambda a: f"alias of {safe(a['owner'])}",
        lambda c: f"alias of {safe(c['old'])} -> {safe(c['new'])}", mark,
    )  # fmt: skip
    lines += _section(
        "metadata", "name", info["metadata"], "name",
        lambda v: _value(v), _meta_change, mark,
    )  # fmt: skip
    lines.append(_verdict(info))
    return "\n".join(lines)


def _verdict(info: Row) -> str:
    if info["equal"]:
        return "equal"
    parts = []
    for key, noun in (("members", "member"), ("methods", "method"), ("bindings", "binding"),
                      ("tensors", "constant"), ("aliases", "aliased key"),
                      ("metadata", "metadata name")):  # fmt: skip
        n = sum(len(info[key][part]) for part in ("added", "removed", "changed"))
        if n:
            parts.append(count(n, noun))
    if not info["program"]["equal"]:
        parts.insert(1, "the program")
    return "different: " + ", ".join(parts)


def dumps_diff(info: Row) -> str:
    # ensure_ascii: untrusted text cannot reach a terminal unescaped even via `cat`.
    return json.dumps(info, indent=2, ensure_ascii=True, allow_nan=False)
