"""Validate a package by reading only the bytes the checks read: a URL, or a local file.

The fast stages run over ``ptn.package.sparse.SparseBuffer``, into which what each stage
reads is fetched first (from a server, or with ``pread`` from a local file). Deep mode
does not fill the buffer with the members: it streams each byte range the CRC-32 check
covers once from the source, in bounded pieces, and keeps only the first out-of-range
byte of each BOOL tensor (written into the buffer, where the unchanged BOOL check then
finds it first).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from contextlib import contextmanager

from isal import isal_zlib

from ptn.core.errors import Finding, within_budget
from ptn.core.names import SAFETENSORS
from ptn.package.source import Source
from ptn.package.sparse import Range, SparseBuffer, fetch_for_stages, union
from ptn.package.validate import Parsed, _stages, crc_targets
from ptn.remote.sources import TransferStats, open_source
from ptn.safetensors.bools import bool_findings
from ptn.zip import Member
from ptn.zip.decoy import DecoyScan, scans
from ptn.zip.reader import crc_mismatch

# -- deep mode: one streamed pass ------------------------------------------------------


def _streamed_findings(
    buf: SparseBuffer, members: list[Member], parsed: Parsed
) -> Iterator[Finding]:
    """The CRC-32, decoy descriptor and BOOL findings of deep mode from one pass over the
    bytes they cover."""
    targets = list(crc_targets(members))  # sorted and disjoint
    crcs = [0] * len(targets)
    decoys = [DecoyScan(m) if scans(m) else None for m in targets]
    st = parsed.members.get(SAFETENSORS)
    bools = _BoolScan(buf, parsed) if st is not None else None
    spans = [(m.data_offset, m.data_offset + m.size) for m in targets]
    first = 0  # targets before this one end before the current piece
    for begin, end in union(spans + (bools.ranges if bools else [])):
        for at, piece in buf.pieces(begin, end, transient=True):
            stop = at + len(piece)
            while first < len(targets) and spans[first][1] <= at:
                first += 1
            i = first
            while i < len(targets) and spans[i][0] < stop:
                lo, hi = max(at, spans[i][0]), min(stop, spans[i][1])
                if lo < hi:
                    crcs[i] = isal_zlib.crc32(piece[lo - at : hi - at], crcs[i])
                    if decoys[i] is not None:
                        decoys[i].feed(piece[lo - at : hi - at])  # type: ignore[union-attr]
                i += 1
            if bools:
                bools.scan(at, piece)
    for m, crc, decoy in zip(targets, crcs, decoys, strict=True):
        finding = crc_mismatch(m, crc)
        if finding is not None:
            yield finding
        if decoy is not None:
            decoy.finish()
            found = decoy.finding()
            if found is not None:
                yield found
    if parsed.tensors and st is not None:
        view = buf.view[st.data_offset : st.data_offset + st.size]
        yield from bool_findings(view, parsed.data_start, parsed.tensors)


class _BoolScan:
    """The first byte > 1 of each BOOL tensor, found as the bytes stream past.

    It is written into the sparse buffer, where every other byte of the tensor reads as
    0, so the BOOL check run afterwards on the buffer finds exactly it first (a bad byte
    another BOOL tensor wrote there is bad in this one too, and no earlier than its first).
    """

    def __init__(self, buf: SparseBuffer, parsed: Parsed) -> None:
        st = parsed.members[SAFETENSORS]
        base = st.data_offset + parsed.data_start
        self.buf = buf
        self.ranges = sorted(
            (base + info.begin, base + info.end)
            for info in parsed.tensors.values()
            if info.dtype == "BOOL" and info.nbytes
        )
        self._next = 0  # ranges before this one have entered ``_active``
        self._active: list[Range] = []

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def scan(self, at: int, piece: bytes | memoryview) -> None:
        import numpy as np

        data = np.frombuffer(piece, dtype=np.uint8)
        stop = at + len(piece)
        while self._next < len(self.ranges) and self.ranges[self._next][0] < stop:
            self._active.append(self.ranges[self._next])
            self._next += 1
        still: list[Range] = []
        for begin, end in self._active:
            lo, hi = max(at, begin), min(stop, end)
            chunk = data[lo - at : hi - at]
            if chunk.size and chunk.max() > 1:
                pos = lo + int(np.argmax(chunk > 1))
                self.buf.poke(pos, int(data[pos - at]))
            elif end > stop:
                still.append((begin, end))
        self._active = still


# -- entry points ------------------------------------------------------------------


def sparse_stages(buf: SparseBuffer, deep: bool) -> Generator[Finding, None, Parsed]:
    read = fetch_for_stages(buf)
    # The data rules of deep mode are streamed below; the others run in the stages.
    parsed = yield from _stages(buf.view, False, whole=deep, read=read)
    if deep and read is not None and read[0]:
        yield from _streamed_findings(buf, read[0], parsed)
    return parsed


@contextmanager
def sparse_findings(source: Source, deep: bool, *, fill: int = 0) -> Iterator[Iterator[Finding]]:
    """Every finding for the package ``source`` reads (within the budget), as
    ``iter_findings`` gives them for a buffer; ``fill`` poisons the bytes never read."""
    buf = SparseBuffer(source, fill=fill)
    try:
        yield within_budget(sparse_stages(buf, deep))
    finally:
        buf.close()


@contextmanager
def remote_findings(
    url: str,
    deep: bool,
    *,
    stats: TransferStats | None = None,
    timeout: tuple[float, float] | None = None,
    deadline: float | None = None,
    fill: int = 0,
) -> Iterator[Iterator[Finding]]:
    """``sparse_findings`` of the package at ``url``.

    Transfers stop with ``ptn.remote.base.OutOfTime`` past ``deadline`` (``time.monotonic()``).
    """
    source = open_source(url, timeout=timeout, stats=stats, deadline=deadline)
    try:
        with sparse_findings(source, deep, fill=fill) as found:
            yield found
    finally:
        source.close()
