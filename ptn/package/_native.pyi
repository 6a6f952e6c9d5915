# The extension setup.py compiles from bindings/python/native.cpp (ptn.package.native).
from typing import Literal

from typing_extensions import Buffer

# (rule, severity, member, pointer, message, more): ptn.core.errors.Finding's fields.
_Finding = tuple[str, Literal["error", "warning", "advice"], str | None, str | None, str, int]

def validate(buffer: Buffer, deep: bool, /) -> list[_Finding]: ...
