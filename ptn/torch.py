"""torch interop in the shape of ``safetensors.torch`` (torch imported only when called),
and ``load_program``: a package's methods, run in Python.

The public face of ``ptn.interop.torch`` and ``ptn.interop.program_runner``, where the code
lives (its layer: docs/architecture.md).
"""

from ptn.interop.program_runner import ProgramRunner, load_program
from ptn.interop.run_errors import (
    InputError,
    MemoryLimitError,
    OperatorError,
    OutputError,
    ProgramError,
    RunError,
    TimeLimitError,
    UnknownMethodError,
    UnsupportedError,
)
from ptn.interop.torch import load_file, save_file, to_numpy, to_torch

__all__ = [
    "InputError",
    "MemoryLimitError",
    "OperatorError",
    "OutputError",
    "ProgramError",
    "ProgramRunner",
    "RunError",
    "TimeLimitError",
    "UnknownMethodError",
    "UnsupportedError",
    "load_file",
    "load_program",
    "save_file",
    "to_numpy",
    "to_torch",
]
