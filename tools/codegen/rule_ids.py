"""The rule-id enum, from spec.md's rule headings (spec.md stays the only list of rules)."""

from __future__ import annotations

import re

from tools.codegen.common import header

# "#### `zip-not-a-zip` (error)": the only way spec.md defines a rule.
RULE_HEADING = re.compile(r"^#### `([a-z0-9]+(?:-[a-z0-9]+)+)` \((error|warning|advice)\)$", re.M)


def rule_headings(spec_text: str) -> list[tuple[str, str]]:
    """(rule id, severity) of every rule heading, in spec order; ids must be unique."""
    found = RULE_HEADING.findall(spec_text)
    ids = [rule for rule, _ in found]
    duplicates = sorted({r for r in ids if ids.count(r) > 1})
    if duplicates:
        raise ValueError(f"spec.md defines these rule ids twice: {duplicates}")
    return found


def emit_rule_ids(spec_text: str) -> str:
    """ptn_generated/rule_ids.py: ``Rule`` (a StrEnum) and ``SEVERITY`` (id -> severity)."""
    rules = rule_headings(spec_text)
    lines = [
        header("#", "spec.md"),
        '"""Every rule id of spec.md, with the severity its heading gives."""\n',
        "from __future__ import annotations\n",
        "from enum import StrEnum\n\n",
        "class Rule(StrEnum):",
        '    """A rule of spec.md: ``Rule.ZIP_NOT_A_ZIP == "zip-not-a-zip"``."""\n',
    ]
    lines += [f"    {rule.upper().replace('-', '_')} = {rule!r}" for rule, _ in rules]
    lines += ["\n", "SEVERITY: dict[str, str] = {"]
    lines += [f"    {rule!r}: {severity!r}," for rule, severity in rules]
    lines += ["}", ""]
    return "\n".join(lines)
