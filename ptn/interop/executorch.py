"""ExecuTorch's native programs saved as packages, with metadata, in one call.

``executorch.exir.native.to_native(...)`` lowers exported programs to a
``NativeProgramManager``, which holds the program (``program.ptg`` bytes) and its
constants (torch tensors by data key). Its own ``save`` (ExecuTorch 1.5.1) writes no
``metadata.json`` (the upstream ``to_native(..., metadata=)`` is not released), leaves
members and tensors unaligned, and writes the destination in place. ``save`` here writes
the same program and constants with ptn's writer: metadata (from a Hugging Face config
too), the constants checked against the program and deduplicated as the program allows
(a mutated buffer never folds), every member and tensor aligned, replaced atomically.

ExecuTorch and torch are imported only when a call needs them: ``pip install
'ptn-tools[executorch]'`` (or ``.ci/install-executorch.sh``, which avoids executorch's
many optional dependencies).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ptn.metadata.document import Metadata
from ptn.metadata.hf import from_hf_config
from ptn.package.write import save_package, warn_saved

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata


def program_and_constants(programs: Any) -> tuple[bytes, dict[str, Any]]:
    """The program bytes and the constants of ``programs``: a ``NativeProgramManager``, or
    what ``to_native`` takes (an ``ExportedProgram``, a dict of method name -> one), lowered
    here with ``to_native``."""
    if not hasattr(programs, "_ptg"):
        try:  # imported here: executorch is optional, and its import costs seconds
            from executorch.exir.native import to_native
        except ImportError as exc:
            raise ImportError(
                "lowering exported programs needs ExecuTorch: pip install "
                "'ptn-tools[executorch]' (or pass the NativeProgramManager to_native returned)"
            ) from exc
        programs = to_native(programs)
    # NativeProgramManager keeps both as private attributes (ExecuTorch 1.5.1), its only
    # way to hand them out short of writing its own package.
    ptg, constants = getattr(programs, "_ptg", None), getattr(programs, "_constants", None)
    if not isinstance(ptg, bytes) or not isinstance(constants, Mapping):
        raise TypeError(
            f"expected what executorch.exir.native.to_native returns (ExecuTorch 1.5.1's "
            f"NativeProgramManager holds _ptg and _constants), not {type(programs).__name__}"
        )
    return ptg, dict(constants)


def package_metadata(
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
    hf_config: Mapping[str, Any] | str | os.PathLike[str] | None,
    max_context_len: int | None,
) -> dict[str, Any] | None:
    """The metadata to write: what ``hf_config`` gives (``ptn.llm.from_hf_config``), then
    ``metadata`` over it (a name given both ways takes ``metadata``'s value)."""
    given = metadata if isinstance(metadata, Metadata) or metadata is None else Metadata(metadata)
    if hf_config is None:
        if max_context_len is not None:
            raise TypeError("max_context_len is the KV-cache capacity read with hf_config")
        return None if given is None else given.to_dict()
    derived = from_hf_config(hf_config, max_context_len=max_context_len)
    return {**derived, **({} if given is None else given.to_dict())}


def save(
    programs: Any,
    path: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    hf_config: Mapping[str, Any] | str | os.PathLike[str] | None = None,
    max_context_len: int | None = None,
) -> None:
    """Write ``programs`` (``to_native``'s result, or the exported programs to lower) as a
    package at ``path``, with ``metadata`` and what ``hf_config`` says (a Hugging Face
    config.json, its path or model directory: ``ptn.llm.from_hf_config``, with
    ``max_context_len`` the KV-cache capacity of the program).

    The writer is ``ptn.save``'s: the program is verified and the constants checked
    against it before anything is written (``PtnError``), mutated buffers are never
    deduplicated, members and tensors are aligned, and the file is replaced atomically.
    ExecuTorch's ``read_ptn`` reads the result as it reads its own.
    """
    values = package_metadata(metadata, hf_config, max_context_len)
    ptg, constants = program_and_constants(programs)
    warn_saved(save_package(Path(path), ptg, constants, values), stacklevel=3)
