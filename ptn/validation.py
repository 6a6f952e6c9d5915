"""Whole-package validation: every finding, from the container inwards.

Deep mode (the default of ``validate`` and ``ptn validate``) checks every
rule, including a streamed CRC-32 of every member. Fast mode (``deep=False``,
``ptn validate --fast``, and what ``ptn.load`` runs) reads the zip directory,
the local headers, the safetensors header and the small JSON members; its cost
does not depend on the size of the constants.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Generator, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from ptn.aliases import read_aliases
from ptn.buffers import mapped
from ptn.errors import Finding, PtnError, Report, within_budget
from ptn.members import ALIASES, METADATA, PTG, SAFETENSORS, membership_findings, ptg_findings
from ptn.metadata import Metadata
from ptn.st_header import TensorInfo, bool_findings, read_header
from ptn.zip import Member, check_crc, read_members


@dataclass(frozen=True)
class Parsed:
    """What validation learned, for ``ptn.load`` to build on without parsing twice."""

    members: dict[str, Member] = field(default_factory=dict)
    tensors: Mapping[str, TensorInfo] = field(default_factory=dict)
    data_start: int = 0
    aliases: dict[str, str] = field(default_factory=dict)
    metadata: Metadata | None = None


def _member_view(buf: memoryview, member: Member) -> memoryview:
    return buf[member.data_offset : member.data_offset + member.size]


def iter_findings(buf: memoryview, deep: bool = False) -> Iterator[Finding]:
    """Every finding for the package in ``buf``: container first, then each member.

    Within one findings budget for all layers (at most 100 per rule, 1,000 in all, then
    one summary per cut rule): a hostile file cannot make the report grow with it.
    Lazy, so a caller can stop between stages (``validate``'s time limit).
    """
    return within_budget(_stages(buf, deep))


def check_package(buf: memoryview, deep: bool = False) -> tuple[list[Finding], Parsed]:
    """Every finding (within the budget), and what was parsed on the way.

    The budget sees the findings as they come, so memory stays bounded whatever
    the file holds; the stages' return value is caught on the way out.
    """
    parsed: list[Parsed] = []

    def stages() -> Iterator[Finding]:
        parsed.append((yield from _stages(buf, deep)))

    findings = list(within_budget(stages()))
    return findings, parsed[0]


def _stages(buf: memoryview, deep: bool) -> Generator[Finding, None, Parsed]:
    """Yield the findings of each layer in order; return what was parsed."""
    try:
        members, found = read_members(buf)
    except PtnError as err:
        yield err.to_finding()
        return Parsed()
    yield from found
    yield from membership_findings([m.name for m in members])
    by_name = {m.name: m for m in members}
    tensors: Mapping[str, TensorInfo] = {}
    data_start = 0
    aliases: dict[str, str] = {}
    metadata = None
    if PTG in by_name:
        yield from ptg_findings(_member_view(buf, by_name[PTG]))
    if SAFETENSORS in by_name:
        try:
            tensors, data_start, found = read_header(_member_view(buf, by_name[SAFETENSORS]))
            yield from found
        except PtnError as err:
            yield err.with_member(SAFETENSORS).to_finding()
    if ALIASES in by_name:
        try:
            aliases, found = read_aliases(_member_view(buf, by_name[ALIASES]), set(tensors))
            yield from found
        except PtnError as err:
            yield err.with_member(ALIASES).to_finding()
    if METADATA in by_name:
        try:
            metadata = Metadata.parse(_member_view(buf, by_name[METADATA]))
        except PtnError as err:
            yield err.with_member(METADATA).to_finding()
    if deep:
        yield from _crc_findings(buf, members)
        if tensors:
            yield from bool_findings(_member_view(buf, by_name[SAFETENSORS]), data_start, tensors)
    return Parsed(by_name, tensors, data_start, aliases, metadata)


def _crc_findings(buf: memoryview, members: list[Member]) -> Iterator[Finding]:
    """CRC-32 of each member, reading every byte of the file at most once.

    Entries that share or overlap data are already errors; checking each of
    them would let 10^5 entries over one large member cost 10^5 full reads.
    Mismatches are yielded one by one: the findings budget caps them.
    """
    checked_to = 0
    for member in sorted(members, key=lambda m: (m.data_offset, m.size)):
        if member.data_offset < checked_to:
            continue
        checked_to = member.data_offset + member.size
        finding = check_crc(buf, member)
        if finding is not None:
            yield finding


class _Timeout(Exception):
    """The time limit of one ``validate`` call ran out."""


def _on_alarm(signum: int, frame: object) -> None:
    raise _Timeout


@contextmanager
def _alarm(seconds: float | None) -> Iterator[None]:
    """SIGALRM after ``seconds`` when this is the main thread (the only one signals reach)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def validate(
    path: str | os.PathLike[str],
    deep: bool | None = None,
    *,
    fast: bool = False,
    time_limit: float | None = None,
) -> Report:
    """Check one file against every rule of spec.md; never raises for bad content.

    Deep by default, like ``ptn validate``: every rule, including the CRC-32 of
    every member, so a flipped bit in a tensor is found (it reads every byte).
    ``deep=False`` (or ``fast=True``, like ``ptn validate --fast``) checks all
    but the CRC-32: the zip directory, the local headers, the safetensors header
    and the JSON members, at a cost that does not grow with the constants.
    I/O problems are reported as a ``ptn-io-error`` finding.

    ``time_limit`` (seconds) stops the check and reports ``ptn-timeout`` with
    the findings so far. In the main thread a SIGALRM timer interrupts any
    stage (it replaces a SIGALRM handler for the duration); in other threads
    the limit is checked between stages only. Costs are bounded without it
    (spec.md section 10): the limit is for callers with a budget of their own.
    """
    if fast and deep:
        raise ValueError("validate: deep=True and fast=True contradict each other; give one")
    if time_limit is not None and not time_limit > 0:
        raise ValueError(
            f"validate: time_limit must be a positive number of seconds, not {time_limit!r}"
        )
    report = Report(os.fspath(path))
    deadline = None if time_limit is None else time.monotonic() + time_limit
    try:
        with _alarm(time_limit), mapped(path) as buf:
            for finding in iter_findings(buf, deep=not fast and deep is not False):
                report.findings.append(finding)
                if deadline is not None and time.monotonic() > deadline:
                    raise _Timeout
    except PtnError as err:
        report.findings.append(err.to_finding())
    except _Timeout:
        report.findings.append(
            Finding(
                "ptn-timeout",
                "error",
                None,
                None,
                f"validation took longer than {time_limit:g} s and was stopped",
            )
        )
    return report
