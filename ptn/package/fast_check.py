"""A local package's fast-mode check, by the native validator when it is built: what an
edit reads of the package it starts from.

An edit needs its source's fast findings (it refuses a package with errors outside
metadata.json), its members (the data it copies) and its metadata.json as parsed. Python's
stages would import the whole validator first, the program layer above all: ~30 ms, most of
the start-up of ``ptn metadata set``, whose copy of a 512 MiB package takes ~0.2 s
(bench/bench_rewrite.py). The native validator gives the very same findings from the very
same fetched bytes (``ptn.package.native.fast_findings``), so Python's stages are imported
only when it is not built or declines the file.
"""

from __future__ import annotations

from typing import Any

from ptn.core.errors import Finding, PtnError, first_error
from ptn.core.names import METADATA
from ptn.metadata.document import parse_object
from ptn.package.native import fast_findings
from ptn.package.source import FileSource
from ptn.package.sparse import SparseBuffer, fetch_for_stages
from ptn.zip import Member


class FastCheck:
    """The fast findings and the members of the package open at ``fd``, read with ``pread``
    into a ``SparseBuffer`` (the bytes the fast stages read, no others). Close it, or use it
    as a context manager."""

    def __init__(self, fd: int, path: str) -> None:
        self._buf = SparseBuffer(FileSource(fd, path))
        try:
            read = fetch_for_stages(self._buf)
            found = fast_findings(self._buf.view)
            if found is None:
                # Imported here: the whole validator, only when the native one cannot answer.
                from ptn.package.validate import check_package

                found, _ = check_package(self._buf.view, read=read)
        except BaseException:
            self._buf.close()
            raise
        self.findings: list[Finding] = found
        self.members: dict[str, Member] = {m.name: m for m in (read[0] if read else [])}

    def raw_metadata(self) -> dict[str, Any] | None:
        """metadata.json as parsed JSON, whatever rules its values break (None: absent);
        PtnError when it is not a JSON object, or with its zip rule when its bytes are not
        its content (a deflated member is not inflated: an edit refuses the package first)."""
        member = self.members.get(METADATA)
        if member is None:
            return None
        if member.fault is not None:
            raise first_error(
                f for f in self.findings if f.member == METADATA and f.rule == member.fault
            ) or PtnError(member.fault, "metadata.json cannot be read", member=METADATA)
        return parse_object(self._buf.view[member.data_offset : member.data_offset + member.size])

    def close(self) -> None:
        self._buf.close()

    def __enter__(self) -> FastCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
