"""torch's objects for what a program writes as codes and names, by explicit tables.

A program writes element types as ScalarType codes, and the torch enums an operator
takes (layout, memory format, device, sometimes a dtype) as the strings torch prints
(``torch.strided``, ``torch.contiguous_format``, ``cpu``, ``torch.float32``). Each is
mapped here by a table written out in full: no name from a file is ever looked up as an
attribute of torch. The tables are built from the ``torch`` module the caller imported.
"""

from __future__ import annotations

from typing import Any

from ptn.program.calls import DTYPE_NAMES, LAYOUTS, MEMORY_FORMATS
from ptn.program.layout import load_layout

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
