# The extension setup.py compiles from bindings/python/native.cpp (ptn.package.native).
from typing import Literal

from typing_extensions import Buffer

def validate(
    buffer: Buffer, deep: bool, /
) -> tuple[int, list[tuple[str, Literal["error", "warning"], str | None, str | None, str, int]]]: ...
