"""``ptn.save``: writing a whole package.

Saving validates everything before touching the destination, the constants against the
program included (ptn.program.writing: which keys are mutable comes from the program),
streams each tensor once into a temporary file beside it (CRC-32 on the fly), fsyncs
and renames (ptn.package.atomic: the old file survives any failure), and the same
inputs always give the same bytes. Edits and repacks (ptn.package.edit, ptn.package.repack)
write through ``write_atomically`` too (ptn.package.rewrite).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from ptn.core.errors import Finding, PtnError, SaveWarning
from ptn.core.gcpause import gc_paused
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.metadata.document import Metadata, model_values
from ptn.package.rewrite import (
    MemberSource,
    _ArgumentTypeError,
    metadata_to_write,
    write_atomically,
    write_failed,
)
from ptn.program.writing import check_constants, describe_warnings, for_writing
from ptn.safetensors.aliases import dumps_aliases
from ptn.safetensors.dedup import fold_duplicates
from ptn.safetensors.frameworks import to_numpy
from ptn.safetensors.sharing import refuse_shared_mutables
from ptn.safetensors.tensors import (
    METADATA_KEY,
    TensorInfo,
    dtype_of,
    plan_layout,
    tensor_bytes,
)

if TYPE_CHECKING:
    from ptn_generated.metadata_model import PtnMetadata


def _as_numpy(value: Any, key: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if type(value).__module__.startswith("torch"):
        return to_numpy(value)
    raise _ArgumentTypeError(
        f"constants[{key!r}] is a {type(value).__name__}; give a numpy array or a torch tensor"
    )


NO_PROGRAM = (
    "no program given: a .ptn needs one. program.ptg is what ExecuTorch's runtime runs, and "
    "it says which constants each method binds and which it updates in place, so tensors "
    "alone are not a package (to store tensors alone, write a .safetensors file). Two ways "
    "to get one: export the model with ExecuTorch and write it with ptn.executorch.save("
    "torch.export.export(model, example_inputs), path), which writes the program and its "
    "constants in one call (pip install 'ptn-tools[executorch]'); or pass program=, the "
    "bytes of a program.ptg: an existing package's (with ptn.load(path) as pkg: program = "
    "bytes(pkg.program)), or, for tests, ptn.testing.program_for(tensors), which binds the "
    "tensors but computes nothing"
)
"""The TypeError of a save without a program (``ptn.save``, ``ptn.torch``/``ptn.numpy``'s
``save_file``): what a safetensors user types first."""


def _check_argument_types(
    program: object, constants: object, metadata: object, mutable_keys: object
) -> set[str] | None:
    """Wrong Python types are the caller's bug: TypeError naming the argument, not a rule.

    Returns ``mutable_keys`` as a set (it may be a one-shot iterator), None when not given.
    """
    if program is None:
        raise TypeError(NO_PROGRAM)
    if not isinstance(program, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"program must be bytes, bytearray or memoryview (the FlatBuffer), "
            f"not {type(program).__name__}"
        )
    if constants is not None and not isinstance(constants, Mapping):
        raise TypeError(
            f"constants must be a mapping of str keys to arrays, not {type(constants).__name__}"
        )
    if (
        metadata is not None
        and not isinstance(metadata, (Mapping, Metadata))
        and model_values(metadata) is None
    ):
        raise TypeError(
            f"metadata must be a mapping of names to values, a ptn.Metadata or a "
            f"ptn.PtnMetadata, not {type(metadata).__name__}"
        )
    if mutable_keys is None:
        return None
    if isinstance(mutable_keys, (str, bytes)):
        raise TypeError(
            f"mutable_keys must be an iterable of keys such as [{mutable_keys!r}], not a "
            f"{type(mutable_keys).__name__} (that would name each of its characters)"
        )
    if not isinstance(mutable_keys, Iterable):
        raise TypeError(
            f"mutable_keys must be an iterable of str keys, not {type(mutable_keys).__name__}"
        )
    keys = list(mutable_keys)
    odd = next((k for k in keys if not isinstance(k, str)), None)
    if odd is not None:
        raise TypeError(f"mutable_keys holds {odd!r} ({type(odd).__name__}); keys are str")
    return set(keys)


class _Inputs(NamedTuple):
    """What a save needs of each constant, taken in one pass while its array is at hand
    (10^5 small arrays: each further pass over them is a cache miss per array)."""

    arrays: dict[str, np.ndarray]
    names: dict[str, str]  # dtype names
    views: dict[str, memoryview]  # the bytes to write (``tensor_bytes``)
    specs: list[tuple[str, str, tuple[int, ...], int]]  # plan_layout's items


def _check_inputs(
    constants: Mapping[str, Any], mutable: frozenset[str], from_program: bool
) -> _Inputs:
    """The constants as numpy arrays; ``mutable``: the keys never to fold (from the
    program when ``from_program``, else the caller's ``mutable_keys``)."""
    arrays: dict[str, np.ndarray] = {}
    names: dict[str, str] = {}
    views: dict[str, memoryview] = {}
    specs = []
    for key, value in constants.items():
        if not isinstance(key, str):
            raise _ArgumentTypeError(
                f"constants has the key {key!r} ({type(key).__name__}); keys are str"
            )
        if not key or key == METADATA_KEY:
            raise PtnError(
                "st-reserved-key" if key == METADATA_KEY else "st-entry-invalid",
                f"constant key {key!r} is not allowed",
                member=SAFETENSORS,
            )
        try:
            arrays[key] = array = _as_numpy(value, key)
            names[key] = name = dtype_of(array)
        except PtnError as err:  # st-unsupported-dtype (float8...): say which constant
            message = f"constant {key!r}: {err.message}"
            raise PtnError(err.rule, message, member=SAFETENSORS) from None
        views[key] = tensor_bytes(array)
        specs.append((key, name, array.shape, array.nbytes))
    unknown = mutable - set(arrays)
    if unknown and not from_program:  # a key the program mutates is ptg-missing-constant
        raise PtnError(
            "st-entry-invalid",
            f"mutable keys without a constant: {sorted(unknown)}",
            member=SAFETENSORS,
        )
    return _Inputs(arrays, names, views, specs)


def save(
    path: str | os.PathLike[str],
    program: bytes | bytearray | memoryview,
    constants: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    mutable_keys: Iterable[str] | None = None,
) -> None:
    """Write a package atomically and reproducibly; see the module docstring.

    The program says which constants are mutable (bound with ``mutated`` by some method):
    those are never deduplicated. Constants that contradict it (a bound key missing, a
    dtype or shape it does not declare, bytes under a mutable buffer's name) raise
    ``PtnError`` with the ``ptg-`` rule before anything is written. A constant that no
    method binds is written, with a ``ptn.SaveWarning`` (``ptg-unused-constant``).
    ``mutable_keys`` is for a program ptn cannot read (a ``version`` it does not know,
    also warned of): for one it can read, it must name exactly the keys the program
    mutates (else ``ptg-mutable-keys-mismatch``), and is best left out.

    Arguments of the wrong type raise TypeError; contents that break a rule raise PtnError.
    """
    found = save_package(path, program, constants, metadata, mutable_keys)
    warn_saved(found, stacklevel=3)


def save_package(
    path: str | os.PathLike[str],
    program: bytes | bytearray | memoryview,
    constants: Mapping[str, Any] | None = None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None = None,
    mutable_keys: Iterable[str] | None = None,
) -> list[Finding]:
    """``save``, returning the warnings to give instead of giving them (``warn_saved``)."""
    mutable = _check_argument_types(program, constants, metadata, mutable_keys)
    with gc_paused():  # 10^5 constants: a cost per constant that does not grow with them
        return _save(path, program, constants, metadata, mutable)


def warn_saved(findings: list[Finding], stacklevel: int) -> None:
    """A ``SaveWarning`` for the warnings of a save, when there are any."""
    if findings:
        warnings.warn(SaveWarning(describe_warnings(findings), findings), stacklevel=stacklevel)


def _save(
    path: str | os.PathLike[str],
    program: bytes | bytearray | memoryview,
    constants: Mapping[str, Any] | None,
    metadata: Mapping[str, Any] | Metadata | PtnMetadata | None,
    mutable_keys: set[str] | None,
) -> list[Finding]:
    # A lazy mapping or array-like may fail on access: that too is ptn-write-failed.
    with write_failed(path, "preparing"):
        meta = metadata_to_write(metadata)
        plan = for_writing(program, mutable_keys)
        arrays, names, views, specs = _check_inputs(
            constants or {}, plan.mutable, plan.program is not None
        )
        refuse_shared_mutables(constants or {}, plan.mutable)
        owners, aliases = fold_duplicates(arrays, plan.mutable, views, names)
        prefix, layout = plan_layout(
            [s for s in specs if s[0] not in aliases] if aliases else specs
        )
        found = list(plan.notes)  # empty when the program was read: its warnings mean it was not
        if plan.program is not None:
            found += check_constants(plan.program, _Planned(layout, owners, names), aliases)
    members: list[MemberSource] = [(PTG, [memoryview(program)], len(program))]
    if owners:
        keys = map(itemgetter(0), layout)  # the data tiles [0, the last end)
        chunks: Iterable[bytes | memoryview] = chain([prefix], map(views.__getitem__, keys))
        members.append((SAFETENSORS, chunks, len(prefix) + (layout[-1][2] if layout else 0)))
    if aliases:
        members.append((ALIASES, [dumps_aliases(aliases)], -1))
    if meta is not None:
        members.append((METADATA, [meta.dumps()], -1))
    write_atomically(path, members)
    return found


class _Planned(Mapping[str, TensorInfo]):
    """The planned entries, in layout order, for the program's checks: a TensorInfo is
    made only for a key they look at (those the program binds), not for 10^5 others."""

    def __init__(
        self,
        layout: list[tuple[str, int, int]],
        arrays: Mapping[str, np.ndarray],
        names: Mapping[str, str],
    ) -> None:
        self._spans = {key: (begin, end) for key, begin, end in layout}
        self._arrays, self._names = arrays, names

    def __getitem__(self, key: str) -> TensorInfo:
        begin, end = self._spans[key]
        return TensorInfo(key, self._names[key], tuple(self._arrays[key].shape), begin, end)

    def __contains__(self, key: object) -> bool:
        return key in self._spans

    def __iter__(self) -> Iterator[str]:
        return iter(self._spans)

    def __len__(self) -> int:
        return len(self._spans)
