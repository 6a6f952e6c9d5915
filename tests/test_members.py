"""Package-level envelope rules: program.ptg and membership."""

from __future__ import annotations

import struct

import pytest

from ptn.package.members import membership_findings
from ptn.program import envelope
from ptn.program.envelope import ptg_findings
from ptn.testing.hostile import PROGRAM

GOOD = PROGRAM  # a real program: its envelope is one part of it


def rules(findings: list) -> list[str]:  # type: ignore[type-arg]
    return [f.rule for f in findings]


def test_good_program_has_no_findings() -> None:
    assert ptg_findings(memoryview(GOOD)) == []


@pytest.mark.parametrize(
    ("data", "rule"),
    [
        (b"\x08\x00\x00", "ptg-too-short"),
        (GOOD[:4] + b"TFL3" + GOOD[8:], "ptg-bad-identifier"),  # a real program, one edit each
        (struct.pack("<I", 0x7FFFFFFF) + GOOD[4:], "ptg-bad-root-offset"),
        (struct.pack("<I", 4) + GOOD[4:], "ptg-bad-root-offset"),
    ],
)
def test_ptg_rules(data: bytes, rule: str) -> None:
    assert rules(ptg_findings(memoryview(data))) == [rule]


def test_program_over_the_runtime_cap_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(envelope, "PTG_MAX_BYTES", 32)
    (finding,) = ptg_findings(memoryview(GOOD))
    assert (finding.rule, finding.severity) == ("ptg-too-large", "warning")


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["program.ptg"], []),
        (["program.ptg", "program.safetensors", "aliases.json", "metadata.json"], []),
        (["metadata.json"], ["ptn-missing-ptg"]),
        (["program.ptg", "Program.ptg"], ["ptn-unknown-member"]),
        (["program.ptg", "a/metadata.json"], ["ptn-unknown-member"]),
        (["program.ptg", "../x"], ["ptn-unknown-member"]),
        (["program.ptg", "aliases.json"], ["ptn-aliases-without-constants"]),
    ],
)
def test_membership(names: list[str], expected: list[str]) -> None:
    assert rules(membership_findings(names)) == expected


def test_case_variant_gets_a_hint() -> None:
    (finding,) = membership_findings(["program.ptg", "METADATA.JSON"])
    assert "did you mean metadata.json" in finding.message


def test_membership_findings_name_rule_severity_member_and_hint() -> None:
    found = membership_findings(["a/b/Program.PTG", "aliases.json", "x"])
    assert [(f.rule, f.severity, f.member, f.pointer) for f in found] == [
        ("ptn-unknown-member", "error", "a/b/Program.PTG", None),
        ("ptn-unknown-member", "error", "x", None),
        ("ptn-missing-ptg", "error", "program.ptg", None),
        ("ptn-aliases-without-constants", "error", "aliases.json", None),
    ]
    assert "(did you mean program.ptg?)" in found[0].message  # the last path part counts
    assert "did you mean" not in found[1].message
    assert found[2].message == "program.ptg is missing; every package needs it"
    assert found[3].message == (
        "aliases.json without program.safetensors: its owners name no constant"
    )
