"""The `ptn` command through its real entry point (subprocess) and click's runner."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import ptn
from ptn.core.resources import load_schema
from ptn.package.write import write_atomically
from ptn.testing import program_for
from ptn.testing.hostile import PROGRAM  # the smallest real program: binds nothing

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"
SPEC = (REPO / "spec.md").read_text()


def ptn_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptn.cli", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A directory with valid, invalid and hostile packages (and one in a subfolder)."""
    shutil.copy(TINY, tmp_path / "good.ptn")
    shutil.copy(BAD, tmp_path / "bad.ptn")
    (tmp_path / "sub").mkdir()
    shutil.copy(TINY, tmp_path / "sub" / "good2.ptn")
    (tmp_path / "garbage.ptn").write_bytes(b"\x1b[31mnot a zip\x07")
    (tmp_path / "notes.txt").write_text("ignored")
    return tmp_path


def test_validate_valid_exit_0() -> None:
    proc = ptn_cli("validate", str(TINY))
    assert proc.returncode == 0, proc.stderr
    assert "1 file: 1 valid, 0 invalid" in proc.stdout


def test_validate_invalid_exit_1_with_rule_line() -> None:
    proc = ptn_cli("validate", str(BAD))
    assert proc.returncode == 1
    first = proc.stdout.splitlines()[0]
    assert first.startswith(
        f"{BAD}: error llm-token-id-out-of-range [metadata.json /get_eos_ids/1]"
    )


def test_validate_directory_json_matches_report_schema(mixed: Path) -> None:
    proc = ptn_cli("validate", "--json", str(mixed))
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    jsonschema.Draft202012Validator(load_schema("report")).validate(report)
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    assert set(by_name) == {"good.ptn", "bad.ptn", "good2.ptn", "garbage.ptn"}
    assert by_name["good.ptn"]["valid"] and not by_name["bad.ptn"]["valid"]
    assert by_name["garbage.ptn"]["findings"][0]["rule"].startswith("zip-")
    assert report["summary"] == {
        "files": 4,
        "valid": 2,
        "invalid": 2,
        "unchecked": 0,
        "errors": report["summary"]["errors"],
        "warnings": 0,
        "advice": 0,
    }


def test_jobs_1_and_2_give_the_same_report(mixed: Path) -> None:
    one = ptn_cli("validate", "--json", "-j", "1", str(mixed))
    two = ptn_cli("validate", "--json", "-j", "2", str(mixed))
    assert one.stdout == two.stdout and one.returncode == two.returncode == 1


def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    evil = tmp_path / "evil.ptn"
    write_atomically(evil, [
        ("program.ptg", [PROGRAM], len(PROGRAM)),
        ("\x1b[2Jx\u202e.json", [b"{}"], 2),
    ])  # fmt: skip
    proc = ptn_cli("validate", str(evil))
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout
    assert "\\x1b[2Jx\\u202e.json" in proc.stdout


def test_missing_path_and_empty_directory_exit_2(tmp_path: Path) -> None:
    assert ptn_cli("validate", str(tmp_path / "nope.ptn")).returncode == 2
    assert ptn_cli("validate", str(tmp_path)).returncode == 2
    proc = ptn_cli("validate", str(TINY), str(tmp_path / "nope.ptn"))
    assert proc.returncode == 2 and "no such file" in proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads unreadable files")
def test_unreadable_file_exit_2(tmp_path: Path) -> None:  # pragma: no cover - CI runs as root
    path = tmp_path / "locked.ptn"
    shutil.copy(TINY, path)
    path.chmod(0)
    assert ptn_cli("validate", str(path)).returncode == 2


def test_directory_named_like_a_package(tmp_path: Path) -> None:
    (tmp_path / "dir.ptn").mkdir()
    (tmp_path / "x.ptn").write_bytes(TINY.read_bytes())
    searched = ptn_cli("validate", "--json", str(tmp_path))
    assert searched.returncode == 0  # found by the directory search: not taken as a package
    assert [Path(f["path"]).name for f in json.loads(searched.stdout)["files"]] == ["x.ptn"]
    named = ptn_cli("validate", "--json", str(tmp_path / "dir.ptn"))
    assert named.returncode == 2  # named on the command line: searched, and holds no package


def test_strict_turns_warnings_into_errors(tmp_path: Path) -> None:
    import numpy as np

    path = tmp_path / "c64.ptn"
    ptn.save(path, PROGRAM, {"z": np.zeros(2, dtype=np.complex64)})
    assert ptn_cli("validate", str(path)).returncode == 0
    strict = ptn_cli("validate", "--strict", "--json", str(path))
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["files"][0]["findings"][0]["severity"] == "error"


def test_strict_leaves_advice_alone(tmp_path: Path) -> None:
    """Alignment is advice (spec.md section 1): --strict fails the warning, not the advice,
    and the summary counts the two apart."""
    import zipfile

    import numpy as np

    aligned = tmp_path / "c64.ptn"
    ptn.save(aligned, PROGRAM, {"z": np.zeros(2, dtype=np.complex64)})
    path = tmp_path / "zipped.ptn"  # Python's zipfile: every member unaligned
    with zipfile.ZipFile(aligned) as src, zipfile.ZipFile(path, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, src.read(name))
    plain = json.loads(ptn_cli("validate", "--json", str(path)).stdout)
    strict = ptn_cli("validate", "--strict", "--json", str(path))
    assert strict.returncode == 1
    report = json.loads(strict.stdout)
    severities = {(f["rule"], f["severity"]) for f in report["files"][0]["findings"]}
    assert severities == {
        ("zip-unaligned-member", "advice"),
        ("st-complex64", "error"),
        ("ptg-unused-constant", "error"),
    }
    assert (
        plain["summary"] | {"errors": 2, "warnings": 0, "valid": 0, "invalid": 1}
        == (report["summary"])
    )
    assert plain["summary"]["advice"] == len(plain["files"][0]["findings"]) - 2 > 0
    text = ptn_cli("validate", str(path)).stdout
    advice = plain["summary"]["advice"]
    assert f"\n1 file: 1 valid, 0 invalid (0 errors, 2 warnings, {advice} advice)\n" in text
    assert ptn_cli("validate", "--strict", str(aligned)).returncode == 1


def test_fast_skips_crc(tmp_path: Path) -> None:
    path = tmp_path / "flip.ptn"
    data = bytearray(TINY.read_bytes())
    with ptn.load(TINY) as pkg:
        member = pkg.members["program.safetensors"]
        offset = member.data_offset + member.size - 1  # last byte of the last tensor
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    assert ptn_cli("validate", "--fast", str(path)).returncode == 0
    deep = ptn_cli("validate", str(path))
    assert deep.returncode == 1 and "zip-crc-mismatch" in deep.stdout


def test_per_file_time_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stage that never ends is cut by the worker's time limit (SIGALRM in its main thread)."""
    from ptn.cli import runner

    def stuck(buf: object, deep: bool = False):  # type: ignore[no-untyped-def]
        import time

        time.sleep(30)
        yield from ()

    monkeypatch.setattr("ptn.remote.sparse.sparse_stages", stuck)
    monkeypatch.setenv("PTN_NATIVE", "0")  # stall the Python stages, not native
    _, findings = runner.check_one(str(TINY), True, 0.2)
    assert [f.rule for f in findings] == ["ptn-timeout"]


def test_a_bug_is_reported_as_internal_error_not_as_a_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ptn.cli import runner

    def broken(path: str, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("ptn.remote.validate.validate", broken)
    _, findings = runner.check_one(str(TINY), True, 5.0)
    assert [f.rule for f in findings] == ["ptn-internal-error"]
    assert "bug in ptn" in findings[0].message and "boom" in findings[0].message


def test_a_dead_worker_is_reported_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ptn.remote.validate
    from ptn.cli import runner

    real = ptn.remote.validate.validate
    doomed = tmp_path / "die.ptn"
    doomed.write_bytes(TINY.read_bytes())

    def dying(path: str, **kwargs: object) -> object:
        if path == str(doomed):
            os._exit(9)  # as if killed: the worker process is gone
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ptn.remote.validate, "validate", dying)  # workers are forked after this
    results = list(runner.run_all([str(TINY), str(doomed)], True, 2, 30.0))
    by_path = dict(results)
    assert by_path[str(TINY)] == []
    assert [f.rule for f in by_path[str(doomed)]] == ["ptn-internal-error"]
    assert "not checked" in by_path[str(doomed)][0].message


@given(st.lists(st.integers(0, 6 * 1024 * 1024), max_size=80), st.integers(1, 8))
def test_batches_keep_the_order_and_their_bounds(sizes: list[int], workers: int) -> None:
    from ptn.cli import runner

    stat = {f"f{i}": size for i, size in enumerate(sizes)}
    files = list(stat)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            runner.os, "stat", lambda path: os.stat_result((0,) * 6 + (stat[path],) + (0,) * 3)
        )
        batches = list(runner.batches(files, workers))
    assert [path for batch in batches for path in batch] == files
    most = max(1, min(runner.BATCH_FILES, len(files) // (4 * workers)))
    for batch in batches:
        assert 1 <= len(batch) <= most
        assert len(batch) == 1 or sum(stat[p] for p in batch) <= runner.BATCH_BYTES


def _many(tmp_path: Path, count: int) -> list[str]:
    """``count`` packages, every third one invalid, named in input order."""
    paths = []
    for i in range(count):
        path = tmp_path / f"m{i:03}.ptn"
        shutil.copy(BAD if i % 3 == 1 else TINY, path)
        paths.append(str(path))
    return paths


def test_batched_workers_give_results_in_input_order(tmp_path: Path) -> None:
    from ptn.cli import runner

    files = _many(tmp_path, 40)
    assert len(list(runner.batches(files, 2))) > 2  # several batches, several files each
    calls: list[None] = []
    two = list(runner.run_all(files, True, 2, 30.0, lambda: calls.append(None)))
    one = list(runner.run_all(files, True, 1, 30.0))
    assert [path for path, _ in two] == files
    assert two == one
    assert len(calls) == len(files)  # progress: once per file
    assert {bool(findings) for _, findings in two} == {True, False}


def test_a_dead_worker_inside_a_batch_is_reported_for_its_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ptn.remote.validate
    from ptn.cli import runner

    files = _many(tmp_path, 30)
    doomed = files[7]
    assert any(doomed in batch and len(batch) > 1 for batch in runner.batches(files, 2))
    real = ptn.remote.validate.validate

    def dying(path: str, **kwargs: object) -> object:
        if path == doomed:
            os._exit(9)
        return real(path, **kwargs)  # type: ignore[arg-type]

    expected = list(runner.run_all(files, True, 1, 30.0))
    monkeypatch.setattr(ptn.remote.validate, "validate", dying)  # workers are forked after this
    results = list(runner.run_all(files, True, 2, 30.0))
    assert [path for path, _ in results] == files
    for (path, findings), (_, before) in zip(results, expected, strict=True):
        if path == doomed:
            assert [f.rule for f in findings] == ["ptn-internal-error"]
            assert "not checked" in findings[0].message
        else:
            assert findings == before


def test_a_batch_submitted_to_a_broken_pool_fails_in_its_turn() -> None:
    """A worker may die while the runner submits more: the error waits in the window."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from ptn.cli import runner

    pool = ProcessPoolExecutor(max_workers=1)
    try:
        with pytest.raises(BrokenProcessPool):
            pool.submit(os._exit, 9).result()
        future = runner._submit(pool, [str(TINY)], True, 5.0)
        with pytest.raises(BrokenProcessPool):
            future.result()
    finally:
        pool.shutdown()


def test_batched_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through click, in this process (so the forked workers see the patch): all valid 0,
    some invalid 1, a file whose worker died 2 (it was not checked)."""
    import ptn.remote.validate
    from ptn.cli.main import cli

    good = tmp_path / "good"
    good.mkdir()
    for i in range(20):
        shutil.copy(TINY, good / f"m{i:02}.ptn")
    some_bad = tmp_path / "some_bad"
    some_bad.mkdir()
    files = _many(some_bad, 20)
    runner = CliRunner()
    assert runner.invoke(cli, ["validate", "-j", "2", str(good)]).exit_code == 0
    assert runner.invoke(cli, ["validate", "-j", "2", str(some_bad)]).exit_code == 1
    real = ptn.remote.validate.validate

    def dying(path: str, **kwargs: object) -> object:
        if path == files[4]:
            os._exit(9)
        return real(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ptn.remote.validate, "validate", dying)
    out = runner.invoke(cli, ["validate", "--json", "-j", "2", str(some_bad)])
    assert out.exit_code == 2
    rules = {f["rule"] for f in json.loads(out.output)["files"][4]["findings"]}
    assert rules == {"ptn-internal-error"}


def test_inspect_text_and_json() -> None:
    text = ptn_cli("inspect", str(TINY))
    assert text.returncode == 0
    for word in ("program.safetensors", "tok_embeddings.weight", "get_windows", "saved by"):
        assert word in text.stdout
    info = json.loads(ptn_cli("inspect", "--json", str(TINY)).stdout)
    assert info["program"]["identifier"] == "NPTG"
    assert all(m["data_offset"] % 64 == 0 for m in info["members"])
    assert info["metadata"][0]["name"] == "get_max_context_len"  # well-known names first
    assert info["totals"]["dedup_saved_bytes"] == 64 * 16 * 2
    assert ptn_cli("inspect", str(BAD)).returncode == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    ("literal", "kind"),
    [("8192", "int"), ("1.0", "float"), ("true", "bool"), ('"tiny"', "str"),
     ("[1,2]", "ints"), ("[0.5,1]", "floats"), ("[true]", "bools"), ('["a","b"]', "strs"),
     ("[]", "list")],
)  # fmt: skip
def test_metadata_set_get_round_trips_every_kind(tmp_path: Path, literal: str, kind: str) -> None:
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    assert ptn_cli("metadata", "set", str(path), f"x.value={literal}").returncode == 0
    got = ptn_cli("metadata", "get", str(path), "x.value")
    assert json.loads(got.stdout) == json.loads(literal)  # what set took, get prints
    shown = ptn_cli("inspect", "--json", str(path))
    assert {m["name"]: m["value"] for m in json.loads(shown.stdout)["metadata"]}["x.value"] == (
        json.loads(literal)
    )
    with ptn.load(path) as pkg:
        assert pkg.metadata is not None and pkg.metadata.kind("x.value") == kind
        assert pkg.constants["norm.weight"].tolist() == [1.0] * 16
    assert ptn.validate(path, deep=True).valid


@pytest.mark.slow
def test_failing_metadata_set_leaves_package_identical(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    before = path.read_bytes()
    for bad in ("get_windows=[1]", "x=NaN", 'x=[1,"a"]', "1bad=1", "get_vocab_size=true", "x"):
        proc = ptn_cli("metadata", "set", str(path), bad)
        assert proc.returncode in (1, 2), bad
        assert "Traceback" not in proc.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ptn"]


def test_metadata_unset_and_output(tmp_path: Path) -> None:
    out = tmp_path / "out.ptn"
    proc = ptn_cli("metadata", "unset", str(TINY), "general.name", "rope.theta", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    names = json.loads(ptn_cli("metadata", "get", str(out)).stdout)
    assert "general.name" not in names and "get_windows" in names
    solo = tmp_path / "solo.ptn"
    ptn.save(solo, PROGRAM, metadata={"a": 1})
    assert ptn_cli("metadata", "unset", str(solo), "a").returncode == 0
    with ptn.load(solo) as pkg:
        assert pkg.metadata is None  # last name removed: no metadata.json at all


def test_metadata_set_from_json(tmp_path: Path) -> None:
    src = tmp_path / "m.json"
    src.write_text('{"general.name": "from-file", "get_max_seq_len": 16}')
    out = tmp_path / "o.ptn"
    proc = ptn_cli("metadata", "set", str(TINY), "--from-json", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert ptn_cli("metadata", "get", str(out), "general.name").stdout.strip() == '"from-file"'


def test_schema_command_prints_bundled_schemas() -> None:
    for name in (
        "metadata",
        "aliases",
        "safetensors-header",
        "report",
        "program-layout",
        "operators",
        "operator-table",
    ):
        proc = ptn_cli("schema", name)
        assert proc.returncode == 0
        assert json.loads(proc.stdout) == load_schema(name)


def test_help_and_version() -> None:
    assert "validate" in ptn_cli("--help").stdout
    assert f"spec {ptn.SPEC_VERSION}" in ptn_cli("--version").stdout
    assert ptn_cli("validate").returncode == 2  # usage error


def test_safetensors_header_schema_lists_the_dtypes() -> None:
    from ptn.safetensors.tensors import DTYPES

    enum = load_schema("safetensors-header")["additionalProperties"]["properties"]["dtype"]["enum"]
    assert set(enum) == set(DTYPES)


# -- every message leads somewhere ------------------------------------------------------


def test_metadata_get_and_inspect_show_json_literals(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    assert ptn_cli("metadata", "set", str(path), "x.flag=true").returncode == 0
    assert ptn_cli("metadata", "get", str(path), "general.name").stdout == '"tiny-llm"\n'
    assert ptn_cli("metadata", "get", "--raw", str(path), "general.name").stdout == "tiny-llm\n"
    assert ptn_cli("metadata", "get", str(path), "x.flag").stdout == "true\n"
    table = ptn_cli("inspect", str(path)).stdout
    assert '"tiny-llm"' in table and "'tiny-llm'" not in table
    flag_row = next(line for line in table.splitlines() if "x.flag" in line)
    assert "true" in flag_row and "True" not in flag_row


@pytest.mark.slow
@pytest.mark.parametrize(
    ("item", "suggestion"),
    [("name=tiny", """'name="tiny"'"""), ("general.name=tiny llm", """'general.name="tiny llm"'"""),
     ("x=[1,", """'x="[1,"'""")],
)  # fmt: skip
def test_metadata_set_value_that_is_not_json_explains_literals(
    tmp_path: Path, item: str, suggestion: str
) -> None:
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    before = path.read_bytes()
    proc = ptn_cli("metadata", "set", str(path), item)
    assert proc.returncode == 2, proc.stderr
    assert "VALUE is a JSON literal" in proc.stderr and suggestion in proc.stderr
    assert path.read_bytes() == before
    name = item.partition("=")[0]
    fixed = ptn_cli("metadata", "set", str(path), suggestion.strip("'"))  # the hint works
    assert fixed.returncode == 0, fixed.stderr
    assert ptn_cli("metadata", "get", "--raw", str(path), name).stdout == (
        item.partition("=")[2] + "\n"
    )


@pytest.mark.parametrize("item", ["name", "=5", "", "get_vocab_size"])
def test_metadata_set_malformed_assignment_is_a_usage_error(tmp_path: Path, item: str) -> None:
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    proc = ptn_cli("metadata", "set", str(path), item)
    assert proc.returncode == 2 and "is not NAME=VALUE" in proc.stderr, proc.stderr


@pytest.mark.parametrize("output", [False, True])
def test_metadata_unset_of_a_missing_name_fails_and_touches_nothing(
    tmp_path: Path, output: bool
) -> None:
    path = tmp_path / "m.ptn"
    shutil.copy(TINY, path)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.read_bytes()
    extra = ["-o", str(tmp_path / "out.ptn")] if output else []
    proc = ptn_cli("metadata", "unset", str(path), "general.name", "no.such", *extra)
    assert proc.returncode == 1
    assert "metadata-missing-name" in proc.stderr and "'no.such'" in proc.stderr
    assert "general.name" not in proc.stderr.split("named", 1)[1]  # names only the missing one
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.ptn"]


def test_validate_json_reports_missing_paths_in_the_document(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    proc = ptn_cli(
        "validate", "--json", str(TINY), str(tmp_path / "nope.ptn"), str(tmp_path / "empty")
    )
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    jsonschema.Draft202012Validator(load_schema("report")).validate(report)
    by_path = {f["path"]: f for f in report["files"]}
    assert by_path[str(TINY)]["valid"]
    for missing in (tmp_path / "nope.ptn", tmp_path / "empty"):
        entry = by_path[str(missing)]
        assert not entry["valid"] and [f["rule"] for f in entry["findings"]] == ["ptn-io-error"]
    summary = report["summary"]  # a path not read is not checked, never invalid (exit 2)
    assert (summary["files"], summary["valid"], summary["invalid"], summary["unchecked"]) == (
        3,
        1,
        0,
        2,
    )
    assert "no such file" in proc.stderr  # and people still read why on stderr


@given(
    st.lists(st.lists(st.sampled_from(["error", "warning"]), max_size=3), min_size=1, max_size=3)
)
def test_summary_line_uses_correct_plurals(severities: list[list[str]]) -> None:
    from ptn.cli.report import text_report
    from ptn.core.errors import Finding

    results = [
        (f"f{i}.ptn", [Finding("ptn-io-error", s, None, None, "x") for s in fs])
        for i, fs in enumerate(severities)
    ]
    # The summary comes last but for the rule links ("see <url>") after it.
    lines = text_report(results, colour=False).splitlines()
    last = [line for line in lines if not line.startswith("see ")][-1]
    errors = sum(fs.count("error") for fs in severities)
    warnings = sum(fs.count("warning") for fs in severities)
    files = len(severities)
    assert last.startswith(f"{files} file{'s' if files != 1 else ''}: ")
    assert last.endswith(
        f"({errors} error{'s' if errors != 1 else ''}, "
        f"{warnings} warning{'s' if warnings != 1 else ''})"
    )


def _sub(group: click.Group, name: str) -> click.Command:
    """A subcommand, as click finds it (``ptn``'s group imports a command's module then)."""
    command = group.get_command(click.Context(group), name)
    assert command is not None, name
    return command


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    for name in group.list_commands(click.Context(group)):
        command = _sub(group, name)
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
        else:
            found.append((*prefix, name))
    return found


@pytest.mark.parametrize("width", [40, 52, 64, 80, 100])
def test_help_never_wraps_a_rule_id(width: int) -> None:
    from ptn.cli.main import cli

    rule_ids = set(re.findall(r"^#### `([a-z0-9-]+)`", SPEC, re.MULTILINE))
    runner = CliRunner()
    checked = 0
    for path in _commands(cli):
        command: click.Command = cli
        for name in path:
            assert isinstance(command, click.Group)
            command = _sub(command, name)
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        wanted = {r for r in rule_ids if any(r in text for text in texts)}
        out = runner.invoke(cli, [*path, "--help"], terminal_width=width).output
        for rule in wanted:
            assert rule in out, (path, rule, out)
            checked += 1
    assert checked  # some help does name a rule id (ptn-timeout)


def test_every_command_a_message_names_exists() -> None:
    """Backquoted `ptn ...` in any string of ptn/ or spec.md names a real (sub)command."""
    import ast

    from ptn.cli.main import cli

    commands = {" ".join(path) for path in _commands(cli)}
    texts = [SPEC]
    for source in (REPO / "ptn").rglob("*.py"):
        tree = ast.parse(source.read_text())
        texts += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                  and isinstance(n.value, str)]  # fmt: skip
    named = {m for text in texts for m in re.findall(r"`ptn ((?:[a-z][a-z-]* ?)+)", text)}
    assert named
    for words in named:
        parts = words.split()
        assert any(" ".join(parts[:n]) in commands for n in (1, 2)), words


def test_unaligned_member_hint_names_what_aligns() -> None:
    import zipfile
    from io import BytesIO

    from ptn.zip import read_members

    buf = BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("program.ptg", PROGRAM)
    (finding,) = read_members(buf.getvalue())[1]
    assert finding.rule == "zip-unaligned-member"
    assert "`ptn repack`" in finding.message and "with ptn to" not in finding.message


# --- inspect: long tables and streamed JSON -------------------------------------


def test_inspect_shows_the_ends_of_long_tables(tmp_path: Path) -> None:
    import numpy as np

    from ptn.cli.inspect_view import SHOWN_AT_EACH_END

    n = 2 * SHOWN_AT_EACH_END + 7
    path = tmp_path / "many.ptn"
    constants = {f"w{i:03}": np.full(4, i, np.float32) for i in range(n)}
    constants["h"] = np.zeros(2, np.float16)
    ptn.save(path, program_for(constants), constants, {f"x.n{i:03}": i for i in range(n)})
    keys = sorted(constants)
    cut = ptn_cli("inspect", str(path)).stdout
    assert f"{len(keys) - 2 * SHOWN_AT_EACH_END:,} more (--all" in cut
    assert keys[0] in cut and keys[-1] in cut and keys[len(keys) // 2] not in cut
    assert "x.n000" in cut and f"x.n{n // 2:03}" not in cut
    assert f"F16 x 1 (4 B), F32 x {n:,} (" in cut
    every = ptn_cli("inspect", "--all", str(path)).stdout
    assert all(k in every for k in keys) and "more (--all" not in every
    assert all(f"x.n{i:03}" in every for i in range(n))


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3) | st.integers(), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(st.dictionaries(st.text(max_size=3), _json_values, max_size=4) | _json_values)
def test_streamed_json_is_the_same_text(value: object) -> None:
    from ptn.cli import inspect_view

    if not isinstance(value, dict):
        value = {"rows": [value] * 3, "one": value}
    pieces: list[str] = []
    inspect_view.write_json(value, pieces.append)
    assert "".join(pieces) == json.dumps(value, indent=2, ensure_ascii=True) + "\n"


def test_inspect_json_is_describe_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptn.cli import inspect_view

    monkeypatch.setattr(inspect_view, "_BATCH", 3)  # several batches of the constants
    with ptn.load(TINY) as pkg:
        info = inspect_view.describe(pkg)
    out = ptn_cli("inspect", "--json", str(TINY)).stdout
    assert len(info["tensors"]) > 3
    assert out == json.dumps(info, indent=2, ensure_ascii=True) + "\n"
    pieces: list[str] = []
    inspect_view.write_json(info, pieces.append)
    assert "".join(pieces) == out


def test_inspect_rows_built_when_drawn_are_the_rows(tmp_path: Path) -> None:
    import numpy as np

    from ptn.cli import inspect_view

    path = tmp_path / "dedup.ptn"
    w = np.arange(6, dtype=np.float32)
    ptn.save(path, PROGRAM, {"w": w, "w_copy": w.copy(), "h": np.zeros(3, np.float16)})
    for source in (TINY, path):
        with ptn.load(source) as pkg:
            every = inspect_view.describe(pkg)
            lazy = inspect_view.describe(pkg, every_row=False)
        rows = lazy["tensors"]
        assert list(rows) == every["tensors"] and rows[1:] == every["tensors"][1:]
        assert lazy["totals"] == every["totals"]
        assert inspect_view._by_dtype(rows) == inspect_view._by_dtype(every["tensors"])
    assert every["totals"]["dedup_saved_bytes"] == w.nbytes
