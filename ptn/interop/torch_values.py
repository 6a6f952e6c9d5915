"""torch's objects for what a program writes as codes and names, by explicit tables.

A program writes element types as ScalarType codes, and the torch enums an operator
takes (layout, memory format, device, sometimes a dtype) as the strings torch prints
(``torch.strided``, ``torch.contiguous_format``, ``cpu``, ``torch.float32``). Each is
mapped here by a table written out in full: no name from a file is ever looked up as an
attribute of torch. The tables are built from the ``torch`` module the caller imported.
"""

from __future__ import annotations

from typing import Any

from ptn.interop.run_errors import UnsupportedError
from ptn.program.calls import DTYPE_NAMES, LAYOUTS, MEMORY_FORMATS
from ptn.program.layout import load_layout
from ptn.program.operators import Schema

_SCALAR_TYPE = load_layout().enums["ScalarType"]


def dtypes(torch: Any) -> dict[int, Any]:
    """ScalarType code -> torch dtype, for every element type of the program layout."""
    by_name = {
        "BYTE": torch.uint8,
        "CHAR": torch.int8,
        "SHORT": torch.int16,
        "INT": torch.int32,
        "LONG": torch.int64,
        "HALF": torch.float16,
        "FLOAT": torch.float32,
        "DOUBLE": torch.float64,
        "BOOL": torch.bool,
        "BFLOAT16": torch.bfloat16,
        "UINT16": torch.uint16,
        "UINT32": torch.uint32,
        "UINT64": torch.uint64,
    }
    if set(by_name) != set(_SCALAR_TYPE):
        raise ValueError("ptn.interop.torch_values: one torch dtype per ScalarType of the layout")
    return {_SCALAR_TYPE[name]: dtype for name, dtype in by_name.items()}


def enum_strings(torch: Any) -> dict[str, dict[str, Any]]:
    """Schema type (``Layout``, ``MemoryFormat``, ``ScalarType``) -> string -> torch object,
    for exactly the strings ptn.program.calls accepts."""
    layouts = {
        "torch.strided": torch.strided,
        "torch.sparse_coo": torch.sparse_coo,
        "torch.sparse_csr": torch.sparse_csr,
        "torch.sparse_csc": torch.sparse_csc,
        "torch.sparse_bsr": torch.sparse_bsr,
        "torch.sparse_bsc": torch.sparse_bsc,
        "torch._mkldnn": torch._mkldnn,
        "torch.jagged": torch.jagged,
    }
    formats = {
        "torch.contiguous_format": torch.contiguous_format,
        "torch.preserve_format": torch.preserve_format,
        "torch.channels_last": torch.channels_last,
        "torch.channels_last_3d": torch.channels_last_3d,
    }
    by_code = dtypes(torch)
    named = {text: by_code[_SCALAR_TYPE[name]] for text, name in DTYPE_NAMES.items()}
    if tuple(layouts) != LAYOUTS or tuple(formats) != MEMORY_FORMATS:
        raise ValueError("ptn.interop.torch_values: the tables must list the names calls accepts")
    return {"Layout": layouts, "MemoryFormat": formats, "ScalarType": named}


def device(torch: Any, text: str) -> Any | None:
    """The CPU device for ``cpu`` (or ``cpu:N``); None for any other device (the runner
    runs on the CPU only)."""
    if text == "cpu" or (text.startswith("cpu:") and text[4:].isdigit()):
        return torch.device("cpu")
    return None


class Kernels:
    """torch's kernel (``OpOverload``) of each schema of ptn's operator table, cached.

    Only names the table lists are read, as attributes of ``torch.ops.aten`` and of its
    operator packet, each result checked to be what it should be: nothing is imported or
    evaluated by name, and nothing outside the table is ever looked up.
    """

    def __init__(self, torch: Any) -> None:
        self._aten = torch.ops.aten
        self._packet_type = torch._ops.OpOverloadPacket
        self._overload_type = torch._ops.OpOverload
        self._version = str(torch.__version__)
        self._cache: dict[tuple[str, str], Any] = {}

    def __call__(self, schema: Schema) -> Any:
        key = (schema.name, schema.overload)
        op = self._cache.get(key)
        if op is None:
            packet = getattr(self._aten, schema.name, None)
            found = (
                getattr(packet, schema.overload, None)
                if isinstance(packet, self._packet_type)
                else None
            )
            if not isinstance(found, self._overload_type):
                raise UnsupportedError(
                    f"torch {self._version} has no kernel for {schema.qualified}, which ptn's "
                    "operator table lists"
                )
            op = self._cache[key] = found
        return op
