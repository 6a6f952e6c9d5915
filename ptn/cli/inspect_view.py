"""`ptn inspect`: a package described as data, and that data drawn as rich tables."""

from __future__ import annotations

import json
from typing import Any

from ptn.cli.report import count, safe
from ptn.members import PTG
from ptn.package import Package


def _alignment(offset: int) -> int:
    """Largest power of two (up to 4096) dividing ``offset``."""
    align = 1
    while align < 4096 and offset % (align * 2) == 0:
        align *= 2
    return align


def describe(pkg: Package) -> dict[str, Any]:
    """Everything `inspect` shows, as JSON-ready data."""
    from ptn_generated.metadata_rules import WELL_KNOWN

    members = [
        {"name": m.name, "header_offset": m.header_offset, "data_offset": m.data_offset,
         "size": m.size, "data_alignment": _alignment(m.data_offset), "crc32": f"{m.crc32:08x}"}
        for m in sorted(pkg.members.values(), key=lambda m: m.header_offset)
    ]  # fmt: skip
    tensors: list[dict[str, Any]] = []
    for key in pkg.keys():
        info = pkg.tensor_info(key)
        tensors.append({
            "key": key, "dtype": info.dtype, "shape": list(info.shape), "bytes": info.nbytes,
            "alias_of": pkg.aliases.get(key),
        })  # fmt: skip
    owned = sum(t["bytes"] for t in tensors if t["alias_of"] is None)
    meta = pkg.metadata.to_dict() if pkg.metadata is not None else {}
    kinds = {n: pkg.metadata.kind(n) for n in meta} if pkg.metadata is not None else {}
    ordered = [n for n in WELL_KNOWN if n in meta] + sorted(n for n in meta if n not in WELL_KNOWN)
    return {
        "path": pkg.path,
        "members": members,
        "program": {
            "size": len(pkg.program),
            "identifier": bytes(pkg.program[4:8]).decode("latin-1"),
        },
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
        "totals": {
            "constants": len(tensors),
            "constant_bytes": owned,
            "dedup_saved_bytes": sum(t["bytes"] for t in tensors if t["alias_of"] is not None),
        },
        "warnings": [f.to_json() for f in pkg.warnings],
    }


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def render(info: dict[str, Any]) -> None:
    """Draw ``describe``'s data; untrusted strings go in as Text (never markup), escaped."""
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
    console.print(Text(f"{PTG}: {_size(prog['size'])}, identifier {safe(prog['identifier'])}"))
    if info["tensors"]:
        tensors = Table(title="constants", title_justify="left")
        for col in ("key", "dtype", "shape", "bytes", "alias of"):
            tensors.add_column(col)
        for t in info["tensors"]:
            tensors.add_row(
                Text(safe(t["key"])),
                t["dtype"],
                str(tuple(t["shape"])),
                _size(t["bytes"]),
                Text(safe(t["alias_of"] or "")),
            )
        console.print(tensors)
    if info["metadata"]:
        meta = Table(title="metadata", title_justify="left")
        for col in ("name", "kind", "value", "meaning"):
            meta.add_column(col)
        for m in info["metadata"]:
            # A JSON literal, as `ptn metadata set` takes it (true, "tiny"), not a Python repr.
            shown = safe(json.dumps(m["value"], ensure_ascii=False))
            meta.add_row(
                Text(safe(m["name"])), m["kind"], Text(shown[:200]), Text(m["meaning"] or "")
            )
        console.print(meta)
    totals = info["totals"]
    console.print(Text(
        f"{count(totals['constants'], 'constant')}, {_size(totals['constant_bytes'])} stored, "
        f"{_size(totals['dedup_saved_bytes'])} saved by deduplication"
    ))  # fmt: skip
    for w in info["warnings"]:
        console.print(Text(f"warning {w['rule']} {safe(w['member'])}: {safe(w['message'])}"))
