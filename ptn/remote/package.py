"""``ptn inspect URL``: a remote package opened like ``ptn.load``, its constants fetched on demand.

A module apart from ptn.remote.sparse so that validating a URL never imports numpy
(ptn.package.read).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ptn.core.errors import Finding, within_budget
from ptn.core.names import PTG, SAFETENSORS
from ptn.package.read import Package
from ptn.package.validate import Parsed
from ptn.remote.sources import TransferStats, open_source
from ptn.remote.sparse import SparseBuffer, remote_stages
from ptn.safetensors.tensors import TensorInfo


class RemotePackage(Package):
    """A remote package opened for reading (``ptn inspect URL``): fast-validated like ``load``.

    Only what validation read was fetched; ``constant(key)`` fetches that tensor's
    bytes when asked (writable constants are private copies).
    """

    def __init__(
        self, url: str, *, strict: bool = True, timeout: tuple[float, float] | None = None
    ) -> None:  # no descriptor: nothing of it is on disk
        self.path = url
        self.strict = strict
        self._mmap = None
        self._cow = None
        self._program = None
        self._st = memoryview(b"")
        self._fd = -1
        self._source = open_source(url, timeout=timeout)
        try:
            self._sparse = SparseBuffer(self._source)
            self._buf = self._sparse.view
            parsed: list[Parsed] = []

            def stages() -> Iterator[Finding]:
                parsed.append((yield from remote_stages(self._sparse, False)))

            self._adopt(list(within_budget(stages())), parsed[0])
        except BaseException:
            self.close()
            raise

    @property
    def stats(self) -> TransferStats:
        return self._source.stats

    def _adopt(self, findings: list[Finding], parsed: Parsed) -> None:
        ptg = parsed.members.get(PTG)
        if ptg is not None and PTG not in parsed.unreadable:  # the program is shown whole
            self._sparse.need([(ptg.data_offset, ptg.data_offset + ptg.size)])
        super()._adopt(findings, parsed)

    def _fetch(self, info: TensorInfo) -> None:
        start = self._parsed.members[SAFETENSORS].data_offset + self._parsed.data_start
        self._sparse.need([(start + info.begin, start + info.end)])

    def _array(self, key: str, *, writable: bool) -> tuple[TensorInfo, np.ndarray]:
        """Every array (``constant``, ``constants[key]``, ``to_torch``) comes through here:
        its bytes are fetched first; a writable one is a private copy."""
        info = self.tensor_info(key)
        self._fetch(info)
        info, array = super()._array(key, writable=False)
        return info, array.copy() if writable else array

    def close(self) -> None:
        super().close()  # the views and arrays (no file mapping, copy or descriptor here)
        if "_sparse" in self.__dict__:
            self._sparse.close()
        if "_source" in self.__dict__:
            self._source.close()
