"""torch interop: safetensors-style ``load_file``/``save_file``, and the array converters.

torch is optional: importing this module does not import it; each call that
needs it imports it then, and says how to install it if it is missing.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ptn.interop.numpy import check_tensors, given
from ptn.package.read import load
from ptn.package.write import save_package, warn_saved
from ptn.safetensors.frameworks import to_numpy, to_torch, torch_module

if TYPE_CHECKING:
    from ptn.metadata.document import Metadata
    from ptn_generated.metadata_model import PtnMetadata

__all__ = ["load_file", "save_file", "to_numpy", "to_torch"]


def load_file(path: str | os.PathLike[str], device: Any = "cpu") -> dict[str, Any]:
    """Every constant of the package at ``path`` as a torch tensor, like safetensors'.

    On CPU the tensors share the file's mapping (``Package.to_torch``), so nothing
    is read until touched; another ``device`` ("cuda:0", a ``torch.device``, an
    index) gets a copy there (``.to(device)``).
    The package is checked as ``ptn.load`` checks it (fast mode) first.
    """
    with load(path) as pkg:
        tensors = pkg.to_torch()
    if str(device) == "cpu":
        return tensors
    return {key: tensor.to(device) for key, tensor in tensors.items()}


def save_file(
    tensors: Mapping[str, Any],
    path: str | os.PathLike[str],
    *,
    program: bytes | bytearray | memoryview | None = None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    mutable_keys: Iterable[str] | None = None,
) -> None:
    """Write torch tensors as a package, like safetensors' ``save_file`` plus the program.

    ``program`` (program.ptg's bytes) is required, as a keyword: without it, a TypeError
    says why a package needs one and how to get it (``ptn.executorch.save`` writes an
    ExecuTorch export's program and constants in one call).
    ``ptn.save`` does the work: same validation, deduplication and atomic write. The
    program says which constants are mutable (never deduplicated) and which it binds:
    constants that contradict it raise ``PtnError`` before anything is written, and a
    constant no method binds is written with a ``ptn.SaveWarning``. ``mutable_keys`` is
    only for a program ptn cannot read (a version it does not know); given for one it
    can, it must name exactly the keys the program mutates (``ptg-mutable-keys-mismatch``).
    """
    check_tensors(
        tensors, torch_module().Tensor, "torch.Tensor", "ptn.numpy.save_file takes arrays"
    )
    found = save_package(path, given(program), tensors, metadata, mutable_keys)
    warn_saved(found, stacklevel=3)
