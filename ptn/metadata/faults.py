"""Every fault of one metadata.json document, for validators (spec.md 9.4, "at once").

``Metadata.parse`` stops at the first broken rule, which is what a reader needs. A
validator's user fixing a file wants the whole list, as a JSON Schema validator gives it:
one error per broken name (its first fault) in document order, then each well-known value
out of kind or range, then each cross-field rule broken among the values that passed;
then the warnings: each cross-field rule that a broken value kept from comparing
(``llm-rule-unchecked``), and the near-miss names (``metadata-near-well-known``). A
syntax error of the JSON text is one fault: nothing after it can be read.

``RuleInputs`` hands the well-known values on to the rules of the metadata against the
program (ptn.package.agreement), which take them the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain

from ptn.core.errors import Finding, PtnError, pointer
from ptn.json.strict import parse_json
from ptn.metadata.document import (
    MEMBER,
    Metadata,
    Stored,
    Value,
    check_name,
    check_value,
    check_well_known,
)
from ptn.metadata.near import RULE as NEAR
from ptn.metadata.near import near_message, near_names
from ptn.metadata.rules import UNCHECKED, check_cross_field
from ptn_generated import metadata_rules as tables


@dataclass(frozen=True)
class RuleInputs:
    """The well-known names of a document, as the rules between names take them."""

    values: Mapping[str, Stored | Value] = field(default_factory=dict)
    """The well-known names whose value passed spec.md 9.1 to 9.3."""
    broken: Mapping[str, str] = field(default_factory=dict)
    """The well-known names present whose value breaks them -> the rule it breaks."""


def near_warnings(names: Iterable[str]) -> Iterator[Finding]:
    """One ``metadata-near-well-known`` warning per name that looks like a misspelling."""
    for name, nearest in near_names(names):
        yield Finding(NEAR, "warning", MEMBER, pointer(name), near_message(name, nearest))


def parse_all(
    data: bytes | bytearray | memoryview,
) -> tuple[Metadata | None, Finding | None, Iterator[Finding], RuleInputs | None]:
    """The metadata (None when it breaks a rule), the first error (the one
    ``Metadata.parse`` raises), every finding (errors first, then the warnings) and the
    well-known values (None when the text is no JSON object).

    The findings come lazily, so a findings budget downstream bounds memory whatever
    the number of broken names.
    """
    try:
        metadata = Metadata.parse(data)
    except PtnError as first:
        if first.rule.startswith("json-") or first.rule == "metadata-not-object":
            return None, first.to_finding(), iter((first.to_finding(),)), None
        document = parse_json(data, member=MEMBER)  # it parsed once: it parses again
        inputs = rule_inputs(document)
        return None, first.to_finding(), _all_findings(document, inputs), inputs
    return metadata, None, near_warnings(list(metadata)), inputs_of(metadata)


def inputs_of(metadata: Metadata) -> RuleInputs:
    """The well-known values of valid metadata (none is broken)."""
    return RuleInputs({name: metadata[name] for name in tables.WELL_KNOWN if name in metadata})


def rule_inputs(document: Mapping[str, object]) -> RuleInputs:
    """Each well-known name of ``document``, its value checked (spec.md 9.2 and 9.3)."""
    values: dict[str, Stored] = {}
    broken: dict[str, str] = {}
    for name, spec in tables.WELL_KNOWN.items():
        if name not in document:
            continue
        try:
            value = check_value(document[name], name)
            check_well_known(name, spec, value)
        except PtnError as error:
            broken[name] = error.rule
            continue
        values[name] = value
    return RuleInputs(values, broken)


def _all_findings(document: dict[str, object], inputs: RuleInputs) -> Iterator[Finding]:
    crossed = list(check_cross_field(tables.CROSS_FIELD_RULES, inputs.values, inputs.broken))
    errors = chain(
        _value_errors(document),
        (e.with_member(MEMBER) for e in crossed if e.rule != UNCHECKED),
    )
    warnings = (e.with_member(MEMBER).to_finding("warning") for e in crossed if e.rule == UNCHECKED)
    return chain((e.to_finding() for e in errors), warnings, near_warnings(_good_names(document)))


def _good_names(document: dict[str, object]) -> Iterator[str]:
    """The names that follow the grammar (a name breaking it has its error already)."""
    for name in document:
        try:
            check_name(name)
        except PtnError:
            continue
        yield name


def _value_errors(document: dict[str, object]) -> Iterator[PtnError]:
    """Per name in document order its first fault of 9.1 and 9.2, then each well-known
    value of the right shape that breaks 9.3, in the table's order."""
    shaped: dict[str, Stored] = {}
    for name, raw in document.items():
        try:
            check_name(name)
            value = check_value(raw, name)
        except PtnError as error:
            yield error
            continue
        if name in tables.WELL_KNOWN:
            shaped[name] = value
    for name, spec in tables.WELL_KNOWN.items():
        if name in shaped:
            try:
                check_well_known(name, spec, shaped[name])
            except PtnError as error:
                yield error
