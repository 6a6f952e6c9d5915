"""Whole-package validation of a buffer: every finding, from the container inwards.

Deep mode (the default of ``validate`` and ``ptn validate``) checks every
rule, including a streamed CRC-32 of every member. Fast mode (``deep=False``,
``ptn validate --fast``, and what ``ptn.load`` runs) reads the zip directory,
the local headers, the safetensors header and the small JSON members; its cost
does not depend on the size of the constants. Both check the program's graphs against
ptn's operator table (ptn.program.effects), which is data: neither imports torch.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from ptn.core.errors import Finding, PtnError, within_budget
from ptn.core.names import ALIASES, METADATA, PTG, SAFETENSORS
from ptn.metadata.document import Metadata
from ptn.metadata.faults import parse_all
from ptn.package.agreement import agreement_findings
from ptn.package.members import membership_findings
from ptn.package.sparse import SparseBuffer, fetch_for_stages
from ptn.program.constants import Stored, constant_findings
from ptn.program.llm_facts import program_facts
from ptn.program.model import Program
from ptn.program.read import read_program
from ptn.safetensors.aliases import read_aliases
from ptn.safetensors.bools import bool_findings
from ptn.safetensors.header import TensorInfo, read_header
from ptn.zip import Member, check_crc, read_members
from ptn.zip.decoy import decoy_finding, scans
from ptn.zip.reader import ZipRead


@dataclass(frozen=True)
class Parsed:
    """What validation learned, for ``ptn.load`` to build on without parsing twice."""

    members: dict[str, Member] = field(default_factory=dict)
    tensors: Mapping[str, TensorInfo] = field(default_factory=dict)
    data_start: int = 0
    aliases: dict[str, str] = field(default_factory=dict)
    metadata: Metadata | None = None
    unreadable: dict[str, Finding] = field(default_factory=dict)
    """Members present whose content could not be read, with the finding that says why."""
    program: Program | None = None
    """The decoded program; None when program.ptg is absent or could not be read (its
    findings say why: envelope, an unknown version, a buffer that does not verify).
    ``Package`` does not keep it (see ``Package._adopt``)."""


def _member_view(buf: memoryview, member: Member) -> memoryview:
    return buf[member.data_offset : member.data_offset + member.size]


def iter_findings(buf: memoryview, deep: bool = False) -> Iterator[Finding]:
    """Every finding for the package in ``buf``: container first, then each member.

    Within one findings budget for all layers (at most 100 per rule, 1,000 in all, then
    one summary per cut rule): a hostile file cannot make the report grow with it.
    Lazy, so a caller can stop between stages (``validate``'s time limit).
    """
    return within_budget(_stages(buf, deep))


def check_package(
    buf: memoryview, deep: bool = False, *, read: ZipRead | None = None
) -> tuple[list[Finding], Parsed]:
    """Every finding (within the budget), and what was parsed on the way.

    The budget sees the findings as they come, so memory stays bounded whatever
    the file holds; the stages' return value is caught on the way out. ``read``: what
    ``read_members(buf)`` returns, when the caller has it already.
    """
    parsed: list[Parsed] = []

    def stages() -> Iterator[Finding]:
        parsed.append((yield from _stages(buf, deep, read=read)))

    findings = list(within_budget(stages()))
    return findings, parsed[0]


def check_sparse(buf: SparseBuffer) -> tuple[list[Finding], Parsed]:
    """``check_package`` (fast mode) of the package ``buf`` reads, fetching what it needs."""
    return check_package(buf.view, read=fetch_for_stages(buf))


def _stages(
    buf: memoryview,
    deep: bool,
    whole: bool | None = None,
    read: ZipRead | None = None,
) -> Generator[Finding, None, Parsed]:
    """Yield the findings of each layer in order; return what was parsed.

    ``whole`` (default: ``deep``): every tensor entry will be read (the BOOL data check),
    so the header's entries are kept from its one parse (``read_header``); they are kept
    too when the program binds constants, whose entries section 4.3 reads. ``read``:
    ``read_members(buf)``'s result, when the caller read the container already.
    """
    try:
        members, found = read_members(buf) if read is None else read
    except PtnError as err:
        yield err.to_finding()
        return Parsed()
    yield from found
    yield from membership_findings([m.name for m in members])
    by_name = {m.name: m for m in members}
    # A member whose bytes are not its content (compressed, encrypted) has one finding
    # already; parsing those bytes would only add false ones.
    unreadable = {
        m.name: next((f for f in found if f.member == m.name and f.rule == m.fault), None)
        or Finding(m.fault, "error", m.name, None, f"member '{m.name}' cannot be read")
        for m in by_name.values()
        if m.fault is not None
    }
    readable = {name: m for name, m in by_name.items() if name not in unreadable}
    tensors: Mapping[str, TensorInfo] = {}
    header_found: list[Finding] = []
    data_start = 0
    aliases: dict[str, str] = {}
    aliases_found: list[Finding] = []
    metadata = None
    program = None
    program_faults = False  # an error of program.ptg: its facts are not compared (9.8)
    if PTG in readable:
        program, ptg_found = read_program(_member_view(buf, readable[PTG]))
        program_faults = _has_error(ptg_found)
        yield from ptg_found
    binds = program is not None and any(m.constants for m in program.methods)
    if SAFETENSORS in readable:
        try:
            tensors, data_start, header_found = read_header(
                _member_view(buf, readable[SAFETENSORS]),
                whole=(deep if whole is None else whole) or binds,
            )
            yield from header_found
        except PtnError as err:
            unreadable[SAFETENSORS] = err.with_member(SAFETENSORS).to_finding()
            yield unreadable[SAFETENSORS]
    if ALIASES in readable:
        # Owners can be checked only against a header that was read; an owner whose
        # entry is broken is still a key of it (its own finding says what is wrong).
        keys = None if SAFETENSORS in unreadable else set(tensors) | set(broken_keys(header_found))
        try:
            aliases, aliases_found = read_aliases(_member_view(buf, readable[ALIASES]), keys)
            yield from aliases_found
        except PtnError as err:
            unreadable[ALIASES] = err.with_member(ALIASES).to_finding()
            yield unreadable[ALIASES]
    if program is not None:
        stored = Stored(
            None if SAFETENSORS in unreadable else tensors,
            None if ALIASES in unreadable else aliases,
            broken_keys([*header_found, *aliases_found]),
        )
        found = constant_findings(program, stored)
        program_faults = program_faults or _has_error(found)
        yield from found
    if METADATA in readable:
        metadata, first, metadata_found, inputs = parse_all(_member_view(buf, readable[METADATA]))
        if first is not None:
            unreadable[METADATA] = first
        yield from metadata_found
        if program is not None and not program_faults and inputs is not None:
            yield from agreement_findings(program_facts(program), inputs)
    if deep:
        yield from _crc_findings(buf, members)
        if tensors:
            yield from bool_findings(_member_view(buf, by_name[SAFETENSORS]), data_start, tensors)
    return Parsed(by_name, tensors, data_start, aliases, metadata, unreadable, program)


def _has_error(findings: list[Finding]) -> bool:
    return any(f.severity == "error" and f.member == PTG for f in findings)


# A gap before a tensor leaves the tensor itself readable.
_NOT_KEY_BREAKING = frozenset(("st-offsets-gap",))


def broken_keys(findings: Iterable[Finding]) -> dict[str, Finding]:
    """Constant keys that an error of program.safetensors or aliases.json names (first one).

    The key is the first token of the finding's pointer. A key whose finding the
    budget left out is not named; read_header leaves most broken entries out of
    its tensors anyway, so such a key reads as absent (an overlapping one reads).
    """
    broken: dict[str, Finding] = {}
    for f in findings:
        if (
            f.severity == "error"
            and f.member in (SAFETENSORS, ALIASES)
            and f.pointer
            and f.rule not in _NOT_KEY_BREAKING
        ):
            token = f.pointer[1:].split("/", 1)[0]
            broken.setdefault(token.replace("~1", "/").replace("~0", "~"), f)
    return broken


def _crc_findings(buf: memoryview, members: list[Member]) -> Iterator[Finding]:
    """CRC-32 of each member, reading every byte of the file at most once, and a decoy
    descriptor in the data of a member with one (ptn.zip.decoy).

    Entries that share or overlap data are already errors; checking each of
    them would let 10^5 entries over one large member cost 10^5 full reads.
    Mismatches are yielded one by one: the findings budget caps them.
    """
    for member in crc_targets(members):
        finding = check_crc(buf, member)
        if finding is not None:
            yield finding
        if scans(member) and (finding is None or finding.rule == "zip-crc-mismatch"):
            decoy = decoy_finding(_member_view(buf, member), member)
            if decoy is not None:
                yield decoy


def crc_targets(members: list[Member]) -> Iterator[Member]:
    """The members whose CRC-32 deep mode checks, by offset: none starts inside another.

    A member whose stored bytes are not its content (``fault``: compressed,
    encrypted) is left out: its fault is its one finding, and inflating it here
    would let a file of N bytes cost about 1000 N (deflate's ratio); ``ptn
    repack`` inflates it, bounded, when asked to.
    """
    checked_to = 0
    for member in sorted(members, key=lambda m: (m.data_offset, m.size)):
        if member.data_offset < checked_to:
            continue
        checked_to = member.data_offset + member.size
        if member.fault is None:
            yield member
