"""numpy interop in the shape of ``safetensors.numpy``: ``load_file`` and ``save_file``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ptn.package.read import load
from ptn.package.write import NO_PROGRAM, save_package, warn_saved

if TYPE_CHECKING:
    from ptn.metadata.document import Metadata
    from ptn_generated.metadata_model import PtnMetadata


def load_file(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """Every constant of the package at ``path`` as a numpy array, like safetensors'.

    The arrays are writable views of a private copy-on-write mapping of the file
    (bfloat16 via ml_dtypes): nothing is read until touched, and a write copies
    only the pages it touches, never reaching the file or another array. They
    keep the mapping alive while they live. The package is checked as
    ``ptn.load`` checks it (fast mode) first.
    """
    with load(path) as pkg:
        return {key: pkg.constant(key, writable=True).array for key in pkg.keys()}


def save_file(
    tensors: Mapping[str, np.ndarray],
    path: str | os.PathLike[str],
    *,
    program: bytes | bytearray | memoryview | None = None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    mutable_keys: Iterable[str] | None = None,
) -> None:
    """Write numpy arrays as a package, like safetensors' ``save_file`` plus the program.

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
    check_tensors(tensors, np.ndarray, "numpy.ndarray", "ptn.torch.save_file takes torch tensors")
    found = save_package(path, given(program), tensors, metadata, mutable_keys)
    warn_saved(found, stacklevel=3)


def given(program: bytes | bytearray | memoryview | None) -> bytes | bytearray | memoryview:
    """``save_file``'s program; without one, a TypeError that says why a package needs it."""
    if program is None:
        raise TypeError(NO_PROGRAM)
    return program


def check_tensors(tensors: object, kind: type, kind_name: str, other: str) -> None:
    """``save_file``'s argument check: a mapping whose values are all ``kind`` (else TypeError)."""
    if not isinstance(tensors, Mapping):
        raise TypeError(
            f"tensors must be a mapping of str keys to {kind_name}, not {type(tensors).__name__}"
        )
    for key, value in tensors.items():
        if not isinstance(value, kind):
            raise TypeError(
                f"tensors[{key!r}] is a {type(value).__name__}, not a {kind_name} ({other})"
            )
