"""One error type and one finding shape for every rule of the spec.

Rule ids are data (``PtnError.rule``), never parsed out of messages: callers
branch on them, reports print them, and tests match them against spec.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]


def escape_pointer_token(token: str) -> str:
    """Escape one reference token of a JSON pointer (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    """Build a JSON pointer from raw tokens: ``pointer("a/b", 0) == "/a~1b/0"``."""
    return "".join("/" + escape_pointer_token(str(t)) for t in tokens)


class PtnError(ValueError):
    """A rule of the spec is broken (or a read asked for something absent).

    ``rule`` is the stable id from spec.md, ``member`` the package member
    (``metadata.json``...) or None, ``pointer`` a JSON pointer into that member
    ("" for the whole document) or None where it does not apply.
    """

    def __init__(
        self,
        rule: str,
        message: str,
        *,
        member: str | None = None,
        pointer: str | None = None,
    ) -> None:
        self.rule = rule
        self.message = message
        self.member = member
        self.pointer = pointer
        super().__init__(message)

    def with_member(self, member: str) -> PtnError:
        """Return this error attributed to ``member`` (keeps an existing one)."""
        if self.member is None:
            self.member = member
        return self

    def to_finding(self, severity: Severity = "error") -> Finding:
        return Finding(self.rule, severity, self.member, self.pointer, self.message)

    def __str__(self) -> str:
        where = " ".join(p for p in (self.member, self.pointer) if p)
        return f"{self.rule}{' ' + where if where else ''}: {self.message}"


@dataclass(frozen=True)
class Finding:
    """One rule violation found in a package; errors invalidate, warnings do not."""

    rule: str
    severity: Severity
    member: str | None
    pointer: str | None
    message: str

    def to_json(self) -> dict[str, str | None]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "member": self.member,
            "pointer": self.pointer,
            "message": self.message,
        }


@dataclass
class Report:
    """Everything ``ptn.validate`` found in one file."""

    path: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]
