"""Stage 5 of the reader: the placed members must tile the member area exactly once.

Bytes that no entry owns can hold a decoy local header that a reader walking
the file from offset 0 would return; two entries sharing bytes let one member
change with another. So member ranges (local header to end of data or data
descriptor) must cover ``[shift, cd_start)`` without gaps or overlaps. Gaps are
reported only when every entry was read and placed: otherwise the bytes of
the entries that were not are expected to look unowned.
"""

from __future__ import annotations

from collections.abc import Sequence

from ptn.zip.ends import EndRecords
from ptn.zip.local import Placed
from ptn.zip.sink import Sink


def check_layout(placed: Sequence[Placed], complete: bool, ends: EndRecords, sink: Sink) -> None:
    """Report overlapping member ranges, and (when ``complete``) the bytes no member owns."""
    spans = sorted(placed, key=lambda p: (p.entry.header_offset, p.end))
    cursor, owner = ends.shift, None
    for p in spans:
        e, start = p.entry, p.entry.header_offset
        if owner is not None and start < cursor:
            o = owner.entry
            sink.add(
                "zip-overlapping-entries",
                e.name,
                f"member {e.label} [{start}, {p.end}) overlaps member {o.label} "
                f"[{o.header_offset}, {owner.end}); every member owns its bytes",
            )
        elif start > cursor and complete:
            _gap(cursor, start, owner, f"the local header of member {e.label}", ends.shift, sink)
        if p.end > cursor:
            cursor, owner = p.end, p
    if cursor < ends.cd_start and complete:
        _gap(cursor, ends.cd_start, owner, "the central directory", ends.shift, sink)


def _gap(begin: int, end: int, owner: Placed | None, what: str, shift: int, sink: Sink) -> None:
    """Report bytes in the member area that no entry accounts for."""
    if owner is None and shift == 0:
        sink.add(
            "zip-data-before-archive",
            None,
            f"{end} bytes precede {what} at offset {end} and belong to no member; a "
            ".ptn starts with its first local header at offset 0",
        )
    else:
        after = f"the end of member {owner.entry.label}" if owner else "the prepended bytes"
        sink.add(
            "zip-unreferenced-data",
            None,
            f"{end - begin} bytes between {after} (offset {begin}) and {what} (offset "
            f"{end}) belong to no member; hidden bytes can carry a decoy local header",
        )
