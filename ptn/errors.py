"""One error type and one finding shape for every rule of the spec.

Rule ids are data (``PtnError.rule``), never parsed out of messages: callers
branch on them, reports print them, and tests match them against spec.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]

# The findings budget of one file (spec.md, threat model): a hostile file can break one
# rule a million times, and listing each would cost memory and output in proportion.
MAX_FINDINGS_PER_RULE = 100
MAX_FINDINGS_PER_FILE = 1000


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
    # A summary stands for this many findings of its rule that were not listed.
    more: int = field(default=0, compare=False)

    def to_json(self) -> dict[str, str | None]:
        return {
            "rule": self.rule,
            "severity": self.severity,
            "member": self.member,
            "pointer": self.pointer,
            "message": self.message,
        }


class FindingBudget:
    """At most ``per_rule`` findings of each (rule, severity) and ``total`` in all.

    Findings past the budget are only counted; ``summaries()`` gives one finding per
    rule that lost some, saying how many. A summary from an inner budget (``more`` > 0)
    is merged into this one's count, so nested layers report one number per rule.
    """

    def __init__(
        self, per_rule: int = MAX_FINDINGS_PER_RULE, total: int = MAX_FINDINGS_PER_FILE
    ) -> None:
        self.per_rule = per_rule
        self.total = total
        self.kept: list[Finding] = []
        self._listed: dict[tuple[str, Severity], int] = {}
        self._left_out: dict[tuple[str, Severity], int] = {}
        self._count = 0

    def room(self, rule: str, severity: Severity) -> bool:
        """Would the next finding of ``rule`` be listed? (Saves building one that is not.)"""
        return self._listed.get((rule, severity), 0) < self.per_rule and self._count < self.total

    def skip(self, rule: str, severity: Severity, n: int = 1) -> None:
        """Count ``n`` findings of ``rule`` that are not listed."""
        key = (rule, severity)
        self._left_out[key] = self._left_out.get(key, 0) + n

    def admit(self, finding: Finding) -> bool:
        """Count ``finding``; True if it is to be listed."""
        rule, severity = finding.rule, finding.severity
        if finding.more == 0 and self.room(rule, severity):
            key = (rule, severity)
            self._listed[key] = self._listed.get(key, 0) + 1
            self._count += 1
            return True
        self.skip(rule, severity, finding.more or 1)
        return False

    def append(self, finding: Finding) -> None:
        """Keep ``finding`` in ``kept`` if the budget lists it (a list's name: drop-in)."""
        if self.admit(finding):
            self.kept.append(finding)

    def summaries(self) -> list[Finding]:
        return [
            Finding(
                rule,
                severity,
                None,
                None,
                f"{n} more findings of this rule are not listed (at most {self.per_rule} "
                f"per rule and {self.total} per file are)",
                more=n,
            )
            for (rule, severity), n in self._left_out.items()
        ]

    def finish(self) -> list[Finding]:
        """The kept findings, then the summaries."""
        return self.kept + self.summaries()


def within_budget(findings: Iterable[Finding]) -> Iterator[Finding]:
    """``findings`` cut to one file's budget, streamed, with a summary per cut rule last."""
    budget = FindingBudget()
    for finding in findings:
        if budget.admit(finding):
            yield finding
    yield from budget.summaries()


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
