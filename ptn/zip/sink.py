"""Where every stage of one zip read reports: findings in order, each rule capped."""

from __future__ import annotations

from ptn.core.errors import MAX_FINDINGS_PER_RULE, Finding, Severity


class Sink:
    """The findings of one read, in the order the stages report them.

    The only mutable object a read shares between stages: records passed from
    stage to stage are frozen, so a finding can never be lost by a stage
    changing what an earlier one decided.
    """

    __slots__ = ("_counts", "_findings")

    def __init__(self) -> None:
        self._findings: list[Finding] = []
        self._counts: dict[tuple[str, Severity], int] = {}

    def add(
        self, rule: str, member: str | None, message: str, severity: Severity = "error"
    ) -> None:
        """Record one finding; past the cap of its rule, only count it."""
        key = (rule, severity)
        count = self._counts.get(key, 0) + 1
        self._counts[key] = count
        if count <= MAX_FINDINGS_PER_RULE:
            self._findings.append(Finding(rule, severity, member, None, message))

    def finish(self) -> list[Finding]:
        """The listed findings, then one summary per rule that went over its cap."""
        more = [
            Finding(
                rule,
                severity,
                None,
                None,
                f"{count - MAX_FINDINGS_PER_RULE} more findings of this rule are not listed",
                more=count - MAX_FINDINGS_PER_RULE,
            )
            for (rule, severity), count in self._counts.items()
            if count > MAX_FINDINGS_PER_RULE
        ]
        return self._findings + more
