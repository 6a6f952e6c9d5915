"""The bounds of spec.md section 10: each hostile input built here, its verdict asserted.

Memory is a tracemalloc peak as a ratio to the document's size (deterministic). Time is
never asserted here (a loaded machine would make it flaky): bench/bench_hostile.py
measures each hostile input's cost per MiB against an ordinary document.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ptn
from ptn.cli.main import cli
from ptn.cli.runner import max_jobs, run_all
from ptn.core.errors import (
    MAX_FINDINGS_PER_FILE,
    MAX_FINDINGS_PER_RULE,
    Finding,
    FindingBudget,
    PtnError,
    within_budget,
)
from ptn.json import strict as json_strict
from ptn.metadata.document import Metadata
from ptn.safetensors.aliases import read_aliases
from ptn.safetensors.tensors import ITEMSIZE, plan_layout
from ptn.testing import hostile
from ptn.testing.fuzz import check, check_bytes, corpus, mutated, shaped
from ptn_generated.rule_ids import SEVERITY

SLOW = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def rule_of(parse: Callable[[bytes], Any], data: bytes) -> str:
    try:
        parse(data)
    except PtnError as err:
        return err.rule
    return "valid"


def peak_ratio(fn: Callable[[], Any], size: int) -> float:
    tracemalloc.start()
    try:
        try:
            fn()
        except PtnError:
            pass
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / size


# -- A. the strict JSON parser --------------------------------------------------------------


def reference_first_too_deep(text: str) -> int | None:
    """The nesting scan written the obvious way, one character at a time."""
    depth, in_string, escaped = 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > json_strict.PARSE_DEPTH_CAP:
                return i
        elif ch in "]}":
            depth -= 1
    return None


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(['"', "\\", "[", "{", "]", "}", "x", ",", '\\"', "[" * 300]), max_size=40
    )
)
def test_nesting_scan_matches_the_reference(parts: list[str]) -> None:
    text = "".join(parts)
    assert json_strict._first_too_deep(text) == reference_first_too_deep(text)


def test_escaped_quotes_then_deep_is_a_syntax_error() -> None:
    """Once 8 s at 40 KB and 48 s at 100 KB (quadratic); its cost per MiB against an
    ordinary document is measured by ``bench/bench_hostile.py time`` (no timings here)."""
    for n in (40_000, 400_000):
        assert rule_of(json_strict.parse_json, hostile.escaped_quotes_then_deep(n)) == "json-syntax"


@pytest.mark.parametrize("size", [1 << 20])
def test_nesting_scan_memory_is_constant(size: int) -> None:
    """Once ~130x the document: the scan itself now allocates nothing in proportion."""
    doc = hostile.surrogate_then_deep(size)
    text = doc.decode()
    assert json_strict._first_too_deep(text) is not None
    assert peak_ratio(lambda: json_strict._first_too_deep(text), size) < 0.01
    assert rule_of(json_strict.parse_json, doc) == "json-too-deep"
    # The whole parse decodes the long string (UCS-4: 4 bytes a character) at most twice.
    assert peak_ratio(lambda: json_strict.parse_json(doc), size) < 16


@settings(max_examples=40, deadline=None)
@given(depth=st.integers(json_strict.PARSE_DEPTH_CAP + 1, 1_100), after=st.booleans())
def test_parse_cap_comes_before_a_float_overflow(depth: int, after: bool) -> None:
    """Spec 8 step 2 (the cap, in the one pass) before step 4 (overflow), at every depth."""
    inner = b"[" * (depth - 1) + b"]" * (depth - 1)
    doc = b"[" + (inner + b",1e400" if after else b"1e400," + inner) + b"]"
    assert rule_of(json_strict.parse_json, doc) == "json-too-deep"


@settings(max_examples=20, deadline=None)
@given(depth=st.integers(json_strict.MAX_DEPTH + 1, json_strict.PARSE_DEPTH_CAP))
def test_below_the_cap_a_float_overflow_in_a_shallower_container_wins(depth: int) -> None:
    inner = b"[" * (depth - 1) + b"]" * (depth - 1)
    assert rule_of(json_strict.parse_json, b"[1e400," + inner + b"]") == "json-number-overflow"


def test_surrogate_walk_survives_deep_valid_nesting() -> None:
    """A valid pair and 900 levels: checking strings must not recurse 900 deep."""
    doc = b'["\\ud83d\\ude00",' + b"[" * 898 + b"]" * 898 + b"]"
    assert rule_of(json_strict.parse_json, doc) == "json-too-deep"  # past 64, step 4


INT_CASES = {
    700: "metadata-int-out-of-range",
    4_300: "metadata-int-out-of-range",
    4_301: "json-number-overflow",
    100_000: "json-number-overflow",
}


@pytest.mark.parametrize("limit", [None, "640", "0", "100000"])
def test_integer_digits_do_not_depend_on_the_interpreter_limit(limit: str | None) -> None:
    code = (
        "import json, sys\n"
        "from ptn import Metadata, PtnError, parse_json\n"
        "out = {}\n"
        f"for digits in {sorted(INT_CASES)}:\n"
        "    doc = b'{\"a\":-' + b'9' * digits + b'}'\n"
        "    try:\n"
        "        Metadata.parse(doc)\n"
        "        out[digits] = 'valid'\n"
        "    except PtnError as err:\n"
        "        out[digits] = err.rule\n"
        "value = parse_json(b'[' + b'12345' * 860 + b']')[0]\n"  # 4,300 digits
        "out['exact'] = value == int('12345' * 860) if sys.get_int_max_str_digits() == 0 "
        "else value % 1000003 == sum(12345 * pow(10, 5 * i, 1000003) for i in range(860)) "
        "% 1000003\n"
        "print(json.dumps(out))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONINTMAXSTRDIGITS"}
    if limit is not None:
        env["PYTHONINTMAXSTRDIGITS"] = limit
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out.pop("exact") is True
    assert {int(k): v for k, v in out.items()} == INT_CASES


# -- B. memory on large valid documents ------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(hostile.LARGE_VALID))
def test_large_valid_metadata_stays_within_16x(kind: str) -> None:
    """Small size here (bench/bench_hostile.py measures 64 MiB per binding)."""
    doc = hostile.LARGE_VALID[kind](1 << 20)
    assert rule_of(Metadata.parse, doc) == "valid"
    assert peak_ratio(lambda: Metadata.parse(doc), len(doc)) < 16


# -- C. the findings budget ------------------------------------------------------------------


def finding(rule: str, n: int = 0) -> Finding:
    return Finding(rule, "error", None, None, "m", more=n)


@given(
    rules=st.lists(
        st.sampled_from(["zip-crc-mismatch", "st-bad-shape", "aliases-bad-entry", "json-syntax"]),
        max_size=1500,
    ),
    inner=st.integers(0, 10**6),
)
def test_budget_lists_at_most_its_numbers_and_counts_the_rest(rules: list[str], inner: int) -> None:
    found = [finding(r) for r in rules] + ([finding("zip-crc-mismatch", inner)] if inner else [])
    out = list(within_budget(found))
    listed = Counter(f.rule for f in out if not f.more)
    summaries = {f.rule: f.more for f in out if f.more}
    assert all(n <= MAX_FINDINGS_PER_RULE for n in listed.values())
    assert sum(listed.values()) <= MAX_FINDINGS_PER_FILE
    assert out[len(out) - len(summaries) :] == [f for f in out if f.more]  # summaries last
    expected = Counter(rules) + Counter({"zip-crc-mismatch": inner})
    assert {r: listed[r] + summaries.get(r, 0) for r in expected} == dict(expected)


def test_budget_total_over_many_rules() -> None:
    budget = FindingBudget()
    for rule in sorted(SEVERITY)[:30]:  # 30 distinct rules
        for _ in range(60):
            budget.append(finding(rule))
    out = budget.finish()
    assert len([f for f in out if not f.more]) == MAX_FINDINGS_PER_FILE
    assert sum(f.more for f in out) == 30 * 60 - MAX_FINDINGS_PER_FILE


def test_bad_aliases_list_one_hundred(tmp_path: Path) -> None:
    """Once ~880k findings and 1.6 GB: the reader itself stops building findings."""
    entries = 100_000
    path = tmp_path / "aliases.ptn"
    path.write_bytes(hostile.bad_aliases(entries))
    report = ptn.validate(path, deep=True)
    assert [f.rule for f in report.findings] == ["aliases-missing-owner"] * 101
    assert report.findings[-1].more == entries - MAX_FINDINGS_PER_RULE
    assert str(entries - MAX_FINDINGS_PER_RULE) in report.findings[-1].message
    body = ("{" + ",".join(f'"{i:x}":"m"' for i in range(entries)) + "}").encode()
    # Parsing alone costs ~7x here; a finding per entry (~300 bytes) would add ~25x.
    parsed = peak_ratio(lambda: json_strict.parse_json(body), len(body))
    assert peak_ratio(lambda: read_aliases(body, {"w"}), len(body)) < parsed + 2


def test_zip_layer_summary_merges_into_the_budget(tmp_path: Path) -> None:
    from test_hostile import one_member_many_entries

    path = tmp_path / "many.ptn"
    path.write_bytes(one_member_many_entries(1_000, 64))
    report = ptn.validate(path, deep=True)
    counts = Counter(f.rule for f in report.findings if not f.more)
    summaries = Counter(f.rule for f in report.findings if f.more)
    assert counts["zip-duplicate-member"] == MAX_FINDINGS_PER_RULE
    assert summaries["zip-duplicate-member"] == 1  # one number per rule, not two
    assert max(summaries.values()) == 1


def test_report_schema_states_the_budget() -> None:
    schema = json.loads(
        (Path(ptn.__file__).parent.parent / "schema/report.schema.json").read_text()
    )
    text = json.dumps(schema)
    assert "100" in text and "1,000" in text


def test_entries_sharing_an_amplifying_local_header_get_the_findings_of_their_bytes(
    tmp_path: Path,
) -> None:
    """10,000 entries on one local header with 16,383 extra fields, against the same
    bytes with one extra field: the same findings. Parsed once per entry, the first
    took ~37x the second at 3,000 entries; ``bench/bench_hostile.py time`` measures it
    (no timings here)."""
    hostile_path, control_path = tmp_path / "amplified.ptn", tmp_path / "control.ptn"
    hostile_path.write_bytes(hostile.shared_extras(10_000))
    control_path.write_bytes(hostile.shared_extras(10_000, fields=1))
    assert hostile_path.stat().st_size == control_path.stat().st_size
    verdict = ptn.validate(hostile_path)
    assert not verdict.valid
    assert (
        {f.rule for f in verdict.findings}
        == {f.rule for f in ptn.validate(control_path).findings}
        >= {"zip-overlapping-entries"}
    )


# -- D. tensors ------------------------------------------------------------------------------


def test_zero_elements_with_huge_dims_is_a_bad_shape(tmp_path: Path) -> None:
    path = tmp_path / "zero.ptn"
    path.write_bytes(hostile.huge_zero_element_tensor())
    report = check(path)
    assert [f.rule for f in report.errors] == ["st-bad-shape"]
    with pytest.raises(PtnError) as raised:
        plan_layout([("w", "F32", [0, 2**31 - 1, 2**31 - 1, 2**31 - 1], 0)])
    assert raised.value.rule == "st-bad-shape"
    plan_layout([("w", "U8", [0, 2**31 - 1, 2**31 - 1], 0)])  # 2**62 bytes would fit


@pytest.mark.parametrize(
    ("values", "deep_rules"),
    [
        (b"\x00\x01\x01", []),
        (b"\x00\x01\x02", ["st-bool-not-0-or-1"]),
        (b"\xff", ["st-bool-not-0-or-1"]),
    ],
)
def test_bool_bytes_are_0_or_1(tmp_path: Path, values: bytes, deep_rules: list[str]) -> None:
    path = tmp_path / "bool.ptn"
    path.write_bytes(hostile.bool_tensor(values))
    assert [f.rule for f in ptn.validate(path, deep=True).errors] == deep_rules
    assert ptn.validate(path, deep=False).valid  # reading the data is deep validation's job


dims = st.sampled_from([0, 1, 2, 3, 7, 2**16, 2**31 - 1, 2**31, 2**32, -1])


@pytest.mark.slow
@settings(SLOW, max_examples=150)
@given(
    entries=st.lists(
        st.tuples(st.sampled_from(sorted(ITEMSIZE)), st.lists(dims, max_size=70)),
        min_size=1,
        max_size=3,
    )
)
def test_reading_any_constant_raises_only_ptn_error(entries: list[tuple[str, list[int]]]) -> None:
    header: dict[str, object] = {}
    data = b""
    for i, (dtype, shape) in enumerate(entries):
        count = int(np.prod([abs(d) for d in shape], dtype=object)) if shape else 1
        nbytes = count * ITEMSIZE[dtype] if count * ITEMSIZE[dtype] <= 4096 else 8
        header[f"t{i}"] = {
            "dtype": dtype,
            "shape": shape,
            "data_offsets": [len(data), len(data) + nbytes],
        }
        data += bytes(nbytes)
    check_bytes(hostile.package({"program.safetensors": hostile.safetensors(header, data)}))


# -- E. -j -------------------------------------------------------------------------------------


def test_jobs_above_the_cap_are_a_usage_error() -> None:
    tiny = str(Path(ptn.__file__).parent.parent / "examples" / "tiny-llm.ptn")
    too_many = CliRunner().invoke(cli, ["validate", "-j", str(max_jobs() + 1), tiny])
    assert too_many.exit_code == 2
    assert "at most that many" in too_many.output and str(max_jobs()) in too_many.output
    assert CliRunner().invoke(cli, ["validate", "-j", str(max_jobs()), tiny]).exit_code == 0


def test_workers_keep_input_order_with_a_bounded_window(tmp_path: Path) -> None:
    paths = []
    for i, (name, data) in enumerate(sorted(corpus().items())):
        path = tmp_path / f"{i:02d}-{name}.ptn"
        path.write_bytes(data)
        paths.append(str(path))
    parallel = [(p, [f.rule for f in fs]) for p, fs in run_all(paths, True, 2, 60.0)]
    serial = [(p, [f.rule for f in fs]) for p, fs in run_all(paths, True, 1, 60.0)]
    assert parallel == serial and [p for p, _ in parallel] == paths


# -- F. the fuzz harness, a short bounded run ----------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=mutated())
def test_fuzz_harness_short_run(data: bytes) -> None:
    check_bytes(data)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=shaped())
def test_fuzz_harness_shapes_short_run(data: bytes) -> None:
    """Long lists before a bad token, deep long names, prototype-named keys: any size."""
    report = check_bytes(data)
    for f in report.findings:  # a pointer is a path through the document, not every item
        assert f.pointer is None or len(f.pointer) <= 2 * len(data), f  # before its value


@pytest.mark.parametrize("name", sorted(hostile.seeds()))
def test_every_hostile_seed_is_checked(name: str) -> None:
    report = check_bytes(hostile.seeds()[name])
    valid = name in {"float-list", "many-names"}
    assert report.valid == valid, report.findings


def test_fuzz_run_saves_each_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ptn.testing.fuzz as fuzz

    def broken(data: bytes) -> None:
        if b"PK" in data:
            raise KeyError("a bug")

    monkeypatch.setattr(fuzz, "check_bytes", broken)
    said: list[str] = []
    assert fuzz.run(0.001, tmp_path, say=said.append) >= 1
    saved = sorted(tmp_path.glob("*.ptn"))
    assert saved and b"PK" in saved[0].read_bytes()
    assert "KeyError" in saved[0].with_suffix(".txt").read_text()
    assert any(line.startswith("finding:") for line in said)


# -- ptn.validate(time_limit=...) ----------------------------------------------------------


def _tiny() -> Path:
    return Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"


def test_validate_time_limit_interrupts_a_stage_in_the_main_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ptn.remote.sparse

    def stuck(buf: object, deep: bool = False) -> Iterator[Finding]:
        time.sleep(30)
        yield from ()

    monkeypatch.setattr(ptn.remote.sparse, "sparse_stages", stuck)
    monkeypatch.setenv("PTN_NATIVE", "0")  # stall the Python stages, not native
    report = ptn.validate(_tiny(), time_limit=0.2)
    assert [f.rule for f in report.findings] == ["ptn-timeout"]
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL  # handler restored


def test_a_held_alarm_handler_times_every_call_of_a_loop_and_gives_the_callers_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``alarm_handler`` (``ptn validate -j1``'s loop) installs the handler once: each call
    under it still stops at its own limit, and the caller's handler is back after."""
    import ptn.remote.sparse
    from ptn.remote.validate import alarm_handler

    def stuck(buf: object, deep: bool = False) -> Iterator[Finding]:
        time.sleep(30)
        yield from ()

    def mine(signum: int, frame: object) -> None:
        raise AssertionError("the caller's handler ran")

    monkeypatch.setattr(ptn.remote.sparse, "sparse_stages", stuck)
    monkeypatch.setenv("PTN_NATIVE", "0")
    previous = signal.signal(signal.SIGALRM, mine)
    try:
        with alarm_handler():
            assert signal.getsignal(signal.SIGALRM) is not mine
            for _ in range(3):
                report = ptn.validate(_tiny(), time_limit=0.1)
                assert [f.rule for f in report.findings] == ["ptn-timeout"]
            assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no timer left armed
        assert signal.getsignal(signal.SIGALRM) is mine
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_validate_time_limit_between_stages_in_another_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ptn.remote.sparse

    def slow(buf: object, deep: bool = False) -> Iterator[Finding]:
        for i in range(100):
            time.sleep(0.02)
            yield Finding("zip-crc-mismatch", "error", None, None, f"#{i}")

    monkeypatch.setattr(ptn.remote.sparse, "sparse_stages", slow)
    monkeypatch.setenv("PTN_NATIVE", "0")  # stall the Python stages, not native
    reports: list[ptn.Report] = []
    worker = threading.Thread(target=lambda: reports.append(ptn.validate(_tiny(), time_limit=0.1)))
    worker.start()
    worker.join(30)
    (report,) = reports
    assert report.findings[-1].rule == "ptn-timeout"
    assert 1 <= len(report.findings) - 1 < 100  # the findings so far are kept


@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
def test_validate_time_limit_must_be_positive(bad: float) -> None:
    with pytest.raises(ValueError, match="time_limit"):
        ptn.validate(_tiny(), time_limit=bad)
