"""``ptn inspect URL``: a remote package opened like ``ptn.load``, its constants fetched on demand.

A module apart from ptn.remote.sparse so that validating a URL never imports numpy
(ptn.package.read).
"""

from __future__ import annotations

import numpy as np

from ptn.core.names import SAFETENSORS
from ptn.package.read import Package
from ptn.remote.sources import TransferStats, open_source
from ptn.safetensors.tensors import TensorInfo


class RemotePackage(Package):
    """A remote package opened for reading (``ptn inspect URL``): fast-validated like ``load``.

    Only what validation read was fetched; ``program`` and ``constant(key)`` fetch their
    bytes when asked (writable constants are private copies).
    """

    def __init__(
        self, url: str, *, strict: bool = True, timeout: tuple[float, float] | None = None
    ) -> None:  # no descriptor and no mapping: nothing of it is on disk
        self.path = url
        self.strict = strict
        self._mmap = None
        self._ptg = None
        self._st = memoryview(b"")
        self._fd = -1
        self._remote = open_source(url, timeout=timeout)
        try:
            self._open(self._remote)
        except BaseException:
            self.close()
            raise

    @property
    def stats(self) -> TransferStats:
        return self._remote.stats

    def _constants_view(self) -> memoryview:
        """program.safetensors in the sparse buffer: each array's bytes fetched when asked."""
        return self._member_bytes(self._buf, SAFETENSORS)

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

    def _read_only(self, key: str) -> np.ndarray:
        """``constants[key]`` too goes through ``_array``, which fetches the bytes first."""
        return self._array(key, writable=False)[1]

    def close(self) -> None:
        super().close()  # the views, arrays and the sparse buffer (no mapping or descriptor)
        if "_remote" in self.__dict__:
            self._remote.close()
