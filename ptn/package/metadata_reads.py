"""Metadata without the rest: ``ptn.read_metadata`` of a file, and the typed reads of a
package (spec 9.5) for ``Package`` and ``RemotePackage``.

Each typed read takes one name of metadata.json through ``Metadata``'s accessor of the
same name; a package without metadata.json raises ``metadata-missing-name`` for every name.
"""

from __future__ import annotations

import os

from ptn.core.buffers import open_regular
from ptn.core.errors import PtnError, first_error
from ptn.core.names import METADATA
from ptn.metadata.document import Metadata
from ptn.package.source import FileSource
from ptn.package.sparse import SparseBuffer, fetch_for_stages
from ptn.zip import read_members


class MetadataReads:
    """``metadata_int`` ... ``metadata_bools`` over the ``metadata`` property of a package."""

    @property
    def metadata(self) -> Metadata | None:
        raise NotImplementedError  # Package's property

    def _metadata(self) -> Metadata:
        metadata = self.metadata
        if metadata is None:
            raise PtnError(
                "metadata-missing-name", "the package has no metadata.json", member=METADATA
            )
        return metadata

    def metadata_int(self, name: str, **bounds: int) -> int:
        return self._metadata().metadata_int(name, **bounds)

    def metadata_ints(self, name: str, **bounds: int) -> list[int]:
        return self._metadata().metadata_ints(name, **bounds)

    def metadata_float(self, name: str) -> float:
        return self._metadata().metadata_float(name)

    def metadata_floats(self, name: str) -> list[float]:
        return self._metadata().metadata_floats(name)

    def metadata_str(self, name: str) -> str:
        return self._metadata().metadata_str(name)

    def metadata_strs(self, name: str) -> list[str]:
        return self._metadata().metadata_strs(name)

    def metadata_bool(self, name: str) -> bool:
        return self._metadata().metadata_bool(name)

    def metadata_bools(self, name: str) -> list[bool]:
        return self._metadata().metadata_bools(name)


def read_metadata(path: str | os.PathLike[str]) -> Metadata | None:
    """Only the metadata (None when the package has none).

    Reads the zip directory and the metadata member, nothing else (with ``pread``); a
    container error is raised as the first ``zip-*`` error, a bad member as its own rule.
    """
    fd = open_regular(path)
    try:
        buf = SparseBuffer(FileSource(fd, os.fspath(path)))
        try:
            read = fetch_for_stages(buf, only=(METADATA,))
            members, findings = read_members(buf.view) if read is None else read
            error = first_error(findings)
            if error is not None:
                raise error
            member = next((m for m in members if m.name == METADATA), None)
            if member is None:
                return None
            return Metadata.parse(buf.view[member.data_offset : member.data_offset + member.size])
        finally:
            buf.close()
    finally:
        os.close(fd)
