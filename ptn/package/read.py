"""``ptn.load`` and ``ptn.read_metadata``: whole packages in Python, for reading.

Loading validates the package's structure (fast mode) from what the stages read with
``pread`` (ptn.package.sparse: a file truncated meanwhile is an I/O error, never
SIGBUS), and memory-maps the file for the constants: they are zero-copy numpy views
created on first access, so resident memory grows only with what is touched. Writing
(``save``, ``edit_metadata``) is ptn.package.write; its names are importable from here too.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import chain
from typing import TYPE_CHECKING, Any

from isal import isal_zlib

from ptn.core.buffers import close_mapping, map_fd, open_regular
from ptn.core.errors import Finding, PtnError, Report, first_error
from ptn.core.gcpause import gc_paused
from ptn.core.names import METADATA, PTG, SAFETENSORS
from ptn.json.strict import MAX_JSON_BYTES
from ptn.metadata.document import Metadata, parse_object
from ptn.package.metadata_reads import MetadataReads
from ptn.package.source import FileSource, Source
from ptn.package.sparse import SparseBuffer
from ptn.package.validate import Parsed, broken_keys, check_sparse
from ptn.program.methods import MethodInfo, methods_of
from ptn.program.read import read_program
from ptn.safetensors.aliases import resolve
from ptn.safetensors.header import TensorInfo, entry_sizes
from ptn.zip import Member
from ptn.zip.inflate import inflate_pieces

if TYPE_CHECKING:
    import numpy as np


_view: Callable[[Any, int, TensorInfo], np.ndarray] | None = None


def tensor_view(buf: Any, data_start: int, info: TensorInfo) -> np.ndarray:
    """``ptn.safetensors.tensors.tensor_view``, imported on first use: numpy is needed only for
    arrays, not to load, validate or inspect a package (its import is a tenth of a second). Kept
    after that: an import statement per array cost more than the view itself."""
    global _view
    if _view is None:
        from ptn.safetensors.tensors import tensor_view as view

        _view = view
    return _view(buf, data_start, info)


@dataclass(frozen=True)
class Constant:
    """One constant: ``owner`` is the key whose bytes it shares (itself unless an alias)."""

    key: str
    owner: str
    dtype: str
    shape: tuple[int, ...]
    array: np.ndarray


class Constants(Mapping[str, "np.ndarray"]):
    """Lazy mapping key -> zero-copy array; aliases resolve to their owner's bytes."""

    def __init__(self, package: Package) -> None:
        self._package = package

    def __getitem__(self, key: str) -> np.ndarray:
        return self._package._read_only(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._package.keys())

    def __contains__(self, key: object) -> bool:
        """As ``key in package.keys()``, without making its array (Mapping's would)."""
        package = self._package
        owner = package.aliases.get(key, key)  # type: ignore[call-overload]
        broken = package.unreadable_keys
        return owner in package._parsed.tensors and key not in broken and owner not in broken

    def __len__(self) -> int:
        return len(self._package.keys())


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class Package(MetadataReads):
    """An open package. Use as a context manager or call ``close``.

    Strict (the default): the package is structurally valid, or opening it
    raised ``PtnError`` with its first error. Lenient (``strict=False``, for
    forensics): it opens whatever the file lets ptn read and carries the whole
    report (``findings``, ``valid``, ``report``); ``unreadable`` and
    ``unreadable_keys`` say what could not be read, and a typed read of such a
    part (``program``, ``constant``, ``metadata``...) raises ``PtnError`` with
    the rule that broke it.

    Validation, the program and the JSON members are read with ``pread`` (see the
    module); the file is mapped read-only for ``constants``. The open descriptor is
    kept, so writable views (``constant(key, writable=True)``, ``to_torch()``) map the
    very file that was validated, never a file put at the same path since.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, strict: bool = True, _fd: int | None = None
    ) -> None:
        self.path = os.fspath(path)
        self.strict = strict
        self._mmap: mmap.mmap | None = None
        self._ptg: Member | None = None
        self._st = memoryview(b"")
        self._fd = os.dup(_fd) if _fd is not None else open_regular(self.path)
        try:
            self._open(FileSource(self._fd, self.path))
        except BaseException:
            self.close()
            raise

    def _open(self, source: Source) -> None:
        self._source = source
        self._sparse = SparseBuffer(source)
        self._buf = self._sparse.view  # what validation read, and what is read on demand
        self._adopt(*check_sparse(self._sparse))

    def _adopt(self, findings: list[Finding], parsed: Parsed) -> None:
        """Keep what validation parsed (strict: raise its first error instead)."""
        error = first_error(findings)
        if error is not None and self.strict:
            raise error
        self.findings: list[Finding] = findings
        self.warnings = [f for f in findings if f.severity == "warning"]
        self.advice = [f for f in findings if f.severity == "advice"]
        """What ``ptn repack`` would improve (alignment): not a fault, not a warning."""
        # Not the decoded program: its objects (a dozen per bound constant) would stay
        # tracked by the cyclic collector, walked by every full collection while the
        # package is open. It is freed here; read_program(pkg.program) decodes it again.
        self._parsed = replace(parsed, program=None)
        self.members: dict[str, Member] = dict(parsed.members)
        self.aliases: dict[str, str] = dict(parsed.aliases)
        self.unreadable: dict[str, Finding] = dict(parsed.unreadable)
        """Members present whose content could not be read, each with the finding why."""
        if error is not None and not parsed.members:  # no directory: nothing is readable
            self.unreadable.setdefault(PTG, error.finding)
        broken = broken_keys(findings)
        broken.update({a: broken[o] for a, o in self.aliases.items() if o in broken})
        self.unreadable_keys: dict[str, Finding] = broken
        """Keys whose entry, alias entry or owner breaks a rule, each with the finding."""
        if PTG in self.members and PTG not in self.unreadable:
            self._ptg = self.members[PTG]
        if SAFETENSORS not in self.unreadable:
            self._st = self._constants_view()

    def _constants_view(self) -> memoryview:
        """program.safetensors in the file's mapping, which constants view (zero-copy)."""
        self._mmap, self._map = map_fd(self._fd, self.path)  # an empty file: no mapping
        return self._member_bytes(self._map, SAFETENSORS)

    @property
    def constants(self) -> Constants:
        """Lazy mapping key -> zero-copy array (aliases resolve to their owner's bytes).

        Built on each access, not kept: a package holding it would be a reference cycle,
        left (with its 10^5 header entries) for the cyclic collector to find and walk.
        """
        return Constants(self)

    @property
    def valid(self) -> bool:
        """No error was found (always True for a strictly loaded package)."""
        return not any(f.severity == "error" for f in self.findings)

    @property
    def report(self) -> Report:
        """The findings of the fast validation this package was opened with."""
        return Report(self.path, list(self.findings))

    def _unreadable_error(self, name: str) -> PtnError | None:
        finding = self.unreadable.get(name)
        return None if finding is None else _error_of(finding)

    @property
    def program(self) -> memoryview:
        """The bytes of program.ptg (read when first asked for); PtnError when unreadable."""
        m = self._ptg
        if m is None:
            error = self._unreadable_error(PTG) or PtnError(
                "ptn-missing-ptg", "program.ptg is missing; every package needs it", member=PTG
            )
            raise error
        self._sparse.need([(m.data_offset, m.data_offset + m.size)])
        return self._buf[m.data_offset : m.data_offset + m.size]

    @property
    def methods(self) -> tuple[MethodInfo, ...]:
        """Each method of the program: its name, inputs and outputs (``Value``: name and
        ``TensorMeta``, whose ``describe()`` reads ``F32 [1..8, 4]``), the constants it binds
        (``Binding``: name, data_key, meta, mutated) and its mutable buffers.

        Decoded from program.ptg on each access (an open package keeps no decoded program:
        see ``_adopt``), so keep the result rather than asking again. ``PtnError`` with the
        program's rule when it cannot be decoded (a lenient package), or that of the
        warning that says why its tables are not read (``ptg-unknown-version``).
        """
        program, findings = read_program(self.program)
        if program is None:  # then a finding says why: an error, or why tables are not read
            raise _error_of(next((f for f in findings if f.severity == "error"), findings[0]))
        return methods_of(program)

    @property
    def metadata(self) -> Metadata | None:
        """The validated metadata, None when there is no metadata.json.

        PtnError (its rule) when metadata.json is there but breaks a rule;
        ``raw_metadata()`` then still shows what parsed.
        """
        error = self._unreadable_error(METADATA)
        if error is not None:
            raise error
        return self._parsed.metadata

    def raw_metadata(self) -> dict[str, Any] | None:
        """metadata.json as parsed JSON, whatever rules its values break (None: absent).

        For forensics and repair: PtnError only when the member cannot be read
        or is not a JSON object (``json-*``, ``metadata-not-object``, a zip fault).
        A deflated metadata.json (a hand-zipped package) is inflated, never past
        its declared size nor the JSON size limit, and checked against its CRC-32.
        """
        if self._parsed.metadata is not None:
            return self._parsed.metadata.to_dict()
        member = self.members.get(METADATA)
        if member is None:
            return None
        finding = self.unreadable.get(METADATA)
        if finding is None or finding.rule.startswith(("metadata-", "llm-")):
            data: bytes | memoryview = self._member_bytes(self._buf, METADATA)
        elif finding.rule == "zip-member-compressed":
            data = self._inflated(member, finding)
        else:
            raise _error_of(finding)
        return parse_object(data)

    def _inflated(self, member: Member, fault: Finding) -> bytes:
        """A deflated JSON member's content: bounded by the JSON size limit, CRC-checked."""
        if member.content_size > MAX_JSON_BYTES:
            raise _error_of(fault)
        end = member.data_offset + member.size
        pieces = (piece for _, piece in self._sparse.pieces(member.data_offset, end))
        data = b"".join(inflate_pieces(pieces, member))
        if isal_zlib.crc32(data) != member.crc32:
            raise PtnError(
                "zip-crc-mismatch",
                f"the inflated content of '{member.name}' does not match its CRC-32 "
                f"{member.crc32:08x}: it was altered or corrupted",
                member=member.name,
            )
        return data

    def _member_bytes(self, buf: memoryview, name: str) -> memoryview:
        # An absent member's bytes are never read (no keys, no metadata): any view would do.
        m = self._parsed.members.get(name)
        return buf[m.data_offset : m.data_offset + m.size] if m else memoryview(b"")

    def keys(self) -> list[str]:
        """Every readable constant key, owners and aliases, sorted."""
        broken, tensors = self.unreadable_keys, self._parsed.tensors
        if not self.aliases:  # the common package: only the owners, filtered only if needed
            # (with nothing broken the filter gives the same list, only slower)
            return sorted(k for k in tensors if k not in broken) if broken else sorted(tensors)
        aliases = (a for a, owner in self.aliases.items() if owner in tensors)
        # _adopt put every alias of a broken owner in ``broken``: no owner to look up here
        return sorted(k for k in chain(tensors, aliases) if k not in broken)

    def owner_keys(self) -> list[str]:
        """Readable keys that own bytes in program.safetensors, sorted."""
        return sorted(k for k in self._parsed.tensors if k not in self.unreadable_keys)

    def owner_sizes(self) -> Iterator[tuple[str, str, int]]:
        """(key, dtype, bytes) of each readable key that owns bytes, in header order:
        totals over 10^5 constants without a TensorInfo each (``ptn inspect``)."""
        broken = self.unreadable_keys
        sizes = entry_sizes(self._parsed.tensors)
        return (t for t in sizes if t[0] not in broken) if broken else sizes

    def tensor_info(self, key: str) -> TensorInfo:
        """Header facts of ``key`` (an alias gives its owner's), without viewing any data.

        KeyError when there is no such key; PtnError when its entry (or the whole
        safetensors member) could not be read (lenient packages only).
        """
        owner = resolve(self.aliases, key) if self.aliases else key
        if self.unreadable_keys:
            for broken in (key, owner):
                if broken in self.unreadable_keys:
                    raise _error_of(self.unreadable_keys[broken])
        info = self._parsed.tensors.get(owner)
        if info is None:
            error = self._unreadable_error(SAFETENSORS)
            if error is not None:
                raise error
            raise KeyError(key)
        return info

    def constant(self, key: str, *, writable: bool = False) -> Constant:
        """The constant ``key`` (an alias gives its owner's bytes); KeyError if absent.

        By default the array is a read-only view of the file's mapping. With
        ``writable=True`` it is a view of a private copy-on-write mapping:
        zero-copy until written, and a write changes neither the file nor any
        other constant (an alias gets a mapping of its own).
        """
        info, array = self._array(key, writable=writable)
        return Constant(key, info.key, info.dtype, info.shape, array)

    def _array(self, key: str, *, writable: bool) -> tuple[TensorInfo, np.ndarray]:
        """``constant(key)``'s header facts and array, without the Constant (one per tensor
        of ``constants`` and ``to_torch``)."""
        info = self.tensor_info(key)
        if writable:
            return info, self._writable_view(info)
        return info, tensor_view(self._member_array(), self._parsed.data_start, info)

    def _read_only(self, key: str) -> np.ndarray:
        """``constants[key]``: through the header's checked columns when it has them (see
        ``checked_viewer``), else (or for its errors: a missing key...) as ``_array``."""
        view: Callable[[str], np.ndarray] | bool | None = self.__dict__.get("_viewer_")
        if view is None:
            # numpy comes with arrays: imported when one is asked for (start-up cost)
            from ptn.safetensors.tensors import checked_viewer

            usable = not self.unreadable_keys and SAFETENSORS not in self.unreadable
            tensors, start = self._parsed.tensors, self._parsed.data_start
            view = checked_viewer(tensors, self._member_array(), start) if usable else None
            self.__dict__["_viewer_"] = view = view or False
        if callable(view):
            try:
                return view(self.aliases.get(key, key))
            except (KeyError, ValueError):
                pass
        return self._array(key, writable=False)[1]

    def _member_array(self) -> np.ndarray:
        """program.safetensors as one uint8 array over the file's mapping, made on first
        use: every read-only constant is a view of it, the cheapest way numpy has to make
        10^5 views that each hold the mapping."""
        array = self.__dict__.get("_member_array_")
        if array is None:
            import numpy as np

            array = self.__dict__["_member_array_"] = np.frombuffer(self._st, np.uint8)
        return array

    def constant_chunks(self, key: str, size: int, *, reuse: bool = False) -> Iterator[memoryview]:
        """The stored bytes of ``key`` (an alias: its owner's), ``size`` bytes at a time.

        Without numpy, whatever the dtype or rank. Each chunk is read when asked for
        (``pread``, or from the server), so memory stays the chunks the caller keeps
        however large the constant, and a file truncated meanwhile is ``ptn-io-error``,
        never SIGBUS. ``reuse``: every chunk is read into one buffer of the package (no
        allocation per chunk), so a chunk is valid only until the next one of any
        constant of this package is asked for (``ptn.diff``).
        """
        if size < 1:
            raise ValueError(f"size must be a positive number of bytes, not {size!r}")
        info = self.tensor_info(key)
        if self.__dict__.get("_closed"):
            raise ValueError("the package is closed")
        begin = self._parsed.members[SAFETENSORS].data_offset + self._parsed.data_start
        return self._chunks(begin + info.begin, begin + info.end, size, reuse)

    def _chunks(self, begin: int, end: int, size: int, reuse: bool) -> Iterator[memoryview]:
        read_into = getattr(self._source, "read_into", None) if reuse else None
        buffer = self.__dict__.get("_chunk_buffer")
        if read_into is not None and (buffer is None or len(buffer) < min(size, end - begin)):
            buffer = self.__dict__["_chunk_buffer"] = memoryview(bytearray(size))
        for at in range(begin, end, size):
            n = min(size, end - at)
            if buffer is None or read_into is None:
                yield memoryview(self._source.read(at, n))
            else:
                read_into(buffer[:n], at)
                yield buffer[:n]

    def _writable_view(self, info: TensorInfo) -> np.ndarray:
        """A copy-on-write view of ``info``'s bytes in a fresh mapping of their pages: each
        call gets its own, so no view ever shows another's writes."""
        start = self._parsed.members[SAFETENSORS].data_offset + self._parsed.data_start
        begin, end = start + info.begin, start + info.end
        first_page = begin - begin % mmap.ALLOCATIONGRANULARITY
        local = TensorInfo(info.key, info.dtype, info.shape, begin - first_page, end - first_page)
        if end == begin:  # nothing to map
            return tensor_view(self._st, self._parsed.data_start, info).copy()
        try:
            _, view = map_fd(
                self._fd, self.path, copy=True, offset=first_page, length=end - first_page
            )
        except PtnError:  # out of mappings (vm.max_map_count): a private copy instead
            return tensor_view(self._st, self._parsed.data_start, info).copy()
        return tensor_view(view, 0, local)

    def to_torch(self) -> dict[str, Any]:
        """Every constant as a writable torch tensor, zero-copy until written (needs torch).

        Tensors view a private copy-on-write mapping of the package, a fresh one per
        call (aliases one each): an in-place write (``add_``, an optimizer step) copies
        only the pages it touches, and never reaches the file, another tensor, or the
        tensors of another call.
        """
        # numpy and ml_dtypes come with it: imported when tensors are asked for (start-up cost)
        import numpy as np

        from ptn.safetensors.frameworks import to_torch

        copy = None
        if self._mmap is not None:  # one mapping for the call: its tensors' bytes are disjoint
            _, whole = map_fd(self._fd, self.path, copy=True)
            copy = np.frombuffer(self._member_bytes(whole, SAFETENSORS), np.uint8)
        with gc_paused():
            out = {}
            for key in self.keys():
                info = self.tensor_info(key)
                if key != info.key or copy is None:  # an alias: a mapping of its own
                    array = self._array(key, writable=True)[1]
                else:
                    array = tensor_view(copy, self._parsed.data_start, info)
                out[key] = to_torch(array)
            return out

    def close(self) -> None:
        """Release the buffers; arrays still referenced keep the mapping alive until they go."""
        self._closed = True
        self.__dict__.pop("_member_array_", None)
        self.__dict__.pop("_viewer_", None)
        st = self.__dict__.get("_st")
        if isinstance(st, memoryview):
            st.release()
        if self.__dict__.get("_mmap") is not None:
            close_mapping(self._map, self._mmap)  # type: ignore[arg-type]
            self._mmap = None
        if "_sparse" in self.__dict__:
            self._sparse.close()
        if self.__dict__.get("_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def __repr__(self) -> str:
        meta = self._parsed.metadata
        names = len(meta) if meta is not None else 0
        errors = "" if self.valid else f", {_count(len(self.report.errors), 'error')}"
        return (
            f"<ptn.Package {self.path!r}: {_count(len(self.keys()), 'constant')}, "
            f"members {', '.join(self.members)}, {_count(names, 'metadata name')}{errors}>"
        )

    def __enter__(self) -> Package:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def load(path: str | os.PathLike[str], *, strict: bool = True) -> Package:
    """Open and validate (fast mode) a package; raise ``PtnError`` on the first error.

    ``strict=False`` opens an invalid package too, for looking inside it: see
    ``Package`` (``findings``, ``valid``, ``unreadable``). I/O problems raise
    ``PtnIOError`` either way.
    """
    return Package(path, strict=strict)


def _error_of(finding: Finding) -> PtnError:
    return PtnError(finding.rule, finding.message, member=finding.member, pointer=finding.pointer)
