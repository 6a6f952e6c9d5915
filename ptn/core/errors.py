"""One error type and one finding shape for every rule of the spec.

Rule ids are data (``PtnError.rule``), never parsed out of messages: callers
branch on them, reports print them. Every id is checked against the ids
generated from spec.md's rule headings (``ptn_generated.rule_ids``) when a
Finding is made, so a typo is a bug that fails at once, never a silent new rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Literal

Severity = Literal["error", "warning", "advice"]
"""spec.md section 1: an error invalidates a package; a warning does not (``--strict`` fails
on it); advice does not either, and never fails ``--strict``: a rewrite (``ptn repack``)
would do better (alignment, which ExecuTorch 1.5.1's writer never gives and its reader
does not need)."""

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


class UnknownRuleError(LookupError):
    """A rule id that spec.md does not define: a bug in ptn (a typo), never the file's fault."""


def _known(rule: str) -> None:
    # Imported here, for start-up: the table's enum of every rule costs ~1.5 ms to build,
    # and checking valid files makes no finding.
    from ptn_generated.rule_ids import SEVERITY

    if rule not in SEVERITY:
        raise UnknownRuleError(
            f"{rule!r} is not a rule of spec.md; rule ids come from its `#### ` headings "
            "(ptn_generated.rule_ids.Rule lists them)"
        )


class PtnError(ValueError):
    """A rule of the spec is broken (or a read asked for something absent).

    It carries one ``Finding`` (``.finding``), the unit every layer reports in;
    ``rule``, ``member``, ``pointer`` and ``message`` read from it. ``rule`` is
    the stable id from spec.md, ``member`` the package member (``metadata.json``...)
    or None, ``pointer`` a JSON pointer into that member ("" for the whole
    document) or None where it does not apply.
    """

    def __init__(
        self,
        rule: str,
        message: str,
        *,
        member: str | None = None,
        pointer: str | None = None,
    ) -> None:
        self.finding = Finding(rule, "error", member, pointer, message)
        super().__init__(message)

    @property
    def rule(self) -> str:
        return self.finding.rule

    @property
    def message(self) -> str:
        return self.finding.message

    @property
    def member(self) -> str | None:
        return self.finding.member

    @property
    def pointer(self) -> str | None:
        return self.finding.pointer

    def with_member(self, member: str) -> PtnError:
        """This error attributed to ``member``: a copy, unless it already names one."""
        if self.finding.member is not None:
            return self
        return _restore(
            type(self), {**self.__dict__, "finding": replace(self.finding, member=member)}
        )

    def __reduce__(self) -> tuple[object, ...]:  # pickling (worker processes) keeps the finding
        return (_restore, (type(self), self.__dict__))

    def to_finding(self, severity: Severity = "error") -> Finding:
        if severity == self.finding.severity:
            return self.finding
        return replace(self.finding, severity=severity)

    def __str__(self) -> str:
        where = " ".join(p for p in (self.member, self.pointer) if p)
        return f"{self.rule}{' ' + where if where else ''}: {self.message}"


def _restore(cls: type[PtnError], state: dict[str, object]) -> PtnError:
    """An error of ``cls`` with ``state`` (its finding and any extra attributes)."""
    error = cls.__new__(cls)
    error.__dict__.update(state)
    error.args = (error.finding.message,)
    return error


def first_error(findings: Iterable[Finding]) -> PtnError | None:
    """The first error among ``findings`` as a PtnError (what a strict reader raises)."""
    for f in findings:
        if f.severity == "error":
            return PtnError(f.rule, f.message, member=f.member, pointer=f.pointer)
    return None


class InvalidPackageError(PtnError):
    """A package breaks rules that the operation cannot work around (or would write).

    ``rule`` and ``message`` are the first such error's; ``findings`` lists them all
    (within the findings budget), for a caller that shows the whole picture.
    """

    def __init__(self, findings: list[Finding], message: str) -> None:
        first = next(f for f in findings if f.severity == "error")
        super().__init__(first.rule, message, member=first.member, pointer=first.pointer)
        self.findings = findings


class PtnIOError(OSError, PtnError):
    """``ptn-io-error``: the file could not be opened, mapped or read.

    Both a PtnError (every rejection is one) and an OSError (what Python code
    catches for I/O problems); ``errno`` is the operating system's, when known.
    """

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        PtnError.__init__(self, "ptn-io-error", message)
        self.errno = errno

    __str__ = PtnError.__str__

    def with_member(self, member: str) -> PtnIOError:
        if self.finding.member is not None:
            return self
        return _io_error(replace(self.finding, member=member), self.errno)

    def __reduce__(self) -> tuple[object, ...]:
        return (_io_error, (self.finding, self.errno))


def _io_error(finding: Finding, errno: int | None) -> PtnIOError:
    error = PtnIOError(finding.message, errno=errno)
    error.finding = finding
    return error


@dataclass(frozen=True)
class Finding:
    """One rule violation found in a package; errors invalidate, warnings and advice do not."""

    rule: str
    severity: Severity
    member: str | None
    pointer: str | None
    message: str
    # A summary stands for this many findings of its rule that were not listed.
    more: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        _known(self.rule)

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


class SaveWarning(UserWarning):
    """A package was written, with findings that validation warns of (a constant that no
    method binds, a program ptn could not read); ``findings`` lists them."""

    def __init__(self, message: str, findings: list[Finding]) -> None:
        super().__init__(message)
        self.findings = findings


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

    @property
    def advice(self) -> list[Finding]:
        """What a rewrite would improve (``ptn repack``): neither an error nor a warning."""
        return [f for f in self.findings if f.severity == "advice"]


NO_VERDICT = frozenset({"ptn-io-error", "ptn-internal-error"})
"""Rules that say a file was not checked (unreadable, or ptn failed): not a verdict on it."""

Verdict = Literal["valid", "invalid", "unchecked"]


def verdict(findings: Iterable[Finding]) -> Verdict:
    """What a file's findings say of it: ``unchecked`` when one of them is a ``NO_VERDICT``
    rule (``ptn validate`` exits 2, and counts it apart from the invalid ones), else
    ``invalid`` when one is an error, else ``valid``."""
    errors = [f.rule for f in findings if f.severity == "error"]
    if NO_VERDICT.intersection(errors):
        return "unchecked"
    return "invalid" if errors else "valid"
