"""The `ptn` command through its real entry point (subprocess) and click's runner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

import ptn
from ptn.package import write_atomically
from ptn.schemas import load_schema

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"
PROGRAM = b"\x10\x00\x00\x00NPTG" + bytes(56)


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
        "errors": report["summary"]["errors"],
        "warnings": 0,
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
    from ptn.cli import runner

    def slow(path: str, deep: bool = False):  # type: ignore[no-untyped-def]
        import time

        time.sleep(5)

    monkeypatch.setattr("ptn.validation.validate", slow)
    _, findings = runner.check_one(str(TINY), True, 0.2)
    assert [f.rule for f in findings] == ["ptn-timeout"]


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
    got = ptn_cli("metadata", "get", "--json", str(path), "x.value")
    assert json.loads(got.stdout) == json.loads(literal)
    with ptn.load(path) as pkg:
        assert pkg.metadata is not None and pkg.metadata.kind("x.value") == kind
        assert pkg.constants["norm.weight"].tolist() == [1.0] * 16
    assert ptn.validate(path, deep=True).valid


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
    assert ptn_cli("metadata", "get", str(out), "general.name").stdout.strip() == "from-file"


def test_schema_command_prints_bundled_schemas() -> None:
    for name in ("metadata", "aliases", "safetensors-header", "report"):
        proc = ptn_cli("schema", name)
        assert proc.returncode == 0
        assert json.loads(proc.stdout) == load_schema(name)


def test_help_and_version() -> None:
    assert "validate" in ptn_cli("--help").stdout
    assert "spec 1.0.0" in ptn_cli("--version").stdout
    assert ptn_cli("validate").returncode == 2  # usage error


def test_safetensors_header_schema_lists_the_dtypes() -> None:
    from ptn.tensors import DTYPES

    enum = load_schema("safetensors-header")["additionalProperties"]["properties"]["dtype"]["enum"]
    assert set(enum) == set(DTYPES)
