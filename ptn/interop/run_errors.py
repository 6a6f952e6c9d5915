"""The exceptions of running a program (ptn.interop.program_runner).

What is wrong with the file and spec.md names a rule for (an unknown operator, an
undefined value, an argument the operator does not take, an undeclared write) is a
``PtnError`` with that rule. Everything else that stops a method is one of these, whose
message names the method and the node, input or output at fault.
"""

from __future__ import annotations


class RunError(Exception):
    """A method of a program could not run."""


class UnknownMethodError(RunError, KeyError):
    """The program has no method of that name (a KeyError too, as a lookup by name)."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0]) if self.args else ""


class InputError(RunError, ValueError):
    """The inputs do not fit the method: their number, or an input's type, dtype, rank
    or a dimension outside its ``Dim`` range."""


class OutputError(RunError):
    """A user output does not have the dtype or shape the graph declares for it."""


class ProgramError(RunError):
    """The program asks for something that cannot be done, which no rule of spec.md
    covers (an update of a buffer the method does not have, a list of the wrong length)."""


class OperatorError(RunError):
    """An operator raised while a node ran; the operator's own exception is the cause."""


class MemoryLimitError(RunError):
    """Running the method would hold more memory in intermediate tensors than its cap
    (``max_memory``); raised before the node that would pass it allocates, naming it."""


class TimeLimitError(RunError, TimeoutError):
    """The method ran past its wall-clock limit (``time_limit``), checked between nodes."""


class UnsupportedError(RunError, NotImplementedError):
    """Something the runner does not do: subgraphs, quantized inputs, codecs of
    ``PackedQuant``, devices other than the CPU."""
