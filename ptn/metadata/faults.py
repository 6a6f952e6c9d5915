"""Every fault of one metadata.json document, for validators (spec.md 9, "all at once").

``Metadata.parse`` stops at the first broken rule, which is what a reader needs. A
validator's user fixing a file wants the whole list, as a JSON Schema validator gives it:
one error per broken name (its first fault) in document order, then each well-known value
out of kind or range, then, only when none of those, every cross-field rule broken; and
the near-miss names (``metadata-near-well-known`` warnings) whatever else is wrong.
A syntax error of the JSON text is one fault: nothing after it can be read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

from ptn.core.errors import Finding, PtnError, pointer
from ptn.json.strict import parse_json
from ptn.metadata.document import (
    MEMBER,
    Metadata,
    Stored,
    check_name,
    check_value,
    check_well_known,
)
from ptn.metadata.near import RULE as NEAR
from ptn.metadata.near import near_message, near_names
from ptn.metadata.rules import check_cross_field
from ptn_generated import metadata_rules as tables


def near_warnings(names: Iterable[str]) -> Iterator[Finding]:
    """One ``metadata-near-well-known`` warning per name that looks like a misspelling."""
    for name, nearest in near_names(names):
        yield Finding(NEAR, "warning", MEMBER, pointer(name), near_message(name, nearest))


def parse_all(
    data: bytes | bytearray | memoryview,
) -> tuple[Metadata | None, Finding | None, Iterator[Finding]]:
    """The metadata (None when it breaks a rule), the first error (the one
    ``Metadata.parse`` raises) and every finding, errors first, then the warnings.

    The findings come lazily, so a findings budget downstream bounds memory whatever
    the number of broken names.
    """
    try:
        metadata = Metadata.parse(data)
    except PtnError as first:
        if first.rule.startswith("json-") or first.rule == "metadata-not-object":
            return None, first.to_finding(), iter((first.to_finding(),))
        document = parse_json(data, member=MEMBER)  # it parsed once: it parses again
        errors = (e.to_finding() for e in _value_errors(document))
        return None, first.to_finding(), chain(errors, near_warnings(_good_names(document)))
    return metadata, None, near_warnings(list(metadata))


def _good_names(document: dict[str, object]) -> Iterator[str]:
    """The names that follow the grammar (a name breaking it has its error already)."""
    for name in document:
        try:
            check_name(name)
        except PtnError:
            continue
        yield name


def _value_errors(document: dict[str, object]) -> Iterator[PtnError]:
    values: dict[str, Stored] = {}
    broken = False
    for name, raw in document.items():
        try:
            check_name(name)
            values[name] = check_value(raw, name)
        except PtnError as error:
            broken = True
            yield error
    for name, spec in tables.WELL_KNOWN.items():
        if name in values:
            try:
                check_well_known(name, spec, values[name])
            except PtnError as error:
                broken = True
                yield error
    if not broken:
        for rule_error in check_cross_field(tables.CROSS_FIELD_RULES, values):
            yield rule_error.with_member(MEMBER)
