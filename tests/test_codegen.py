"""`python -m tools.codegen`: deterministic, drift-checked, and driven only by schema/ and
the binding runtime in bindings/."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.codegen import render_all, stale_files, write_all

REPO = Path(__file__).resolve().parent.parent


def test_generated_files_are_current() -> None:
    assert stale_files(render_all()) == []


def test_generated_files_say_do_not_edit() -> None:
    for rel in render_all():
        if rel.endswith(".py"):
            assert "DO NOT EDIT" in (REPO / rel).read_text().splitlines()[0]


def test_check_command_exits_zero_when_current() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tools.codegen", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "generated files are current" in proc.stdout


def test_ptn_codegen_points_to_the_dev_command(tmp_path: Path) -> None:
    """Outside a checkout it says in one line where regeneration went; inside, it runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "codegen", "--check"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "python -m tools.codegen" in proc.stderr and "ptn bindings" in proc.stderr
    help_text = subprocess.run(
        [sys.executable, "-m", "ptn", "--help"], capture_output=True, text=True
    ).stdout
    assert "bindings" in help_text and "codegen" not in help_text
    in_checkout = subprocess.run(
        [sys.executable, "-m", "ptn", "codegen", "--check"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert in_checkout.returncode == 0, in_checkout.stderr
    assert "generated files are current" in in_checkout.stdout


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    for name in ("schema", "bindings", "generated", "spec.md"):
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, tmp_path / name, ignore=shutil.ignore_patterns("node_modules"))
        else:
            shutil.copy(src, tmp_path / name)
    return tmp_path


def test_new_well_known_name_flows_everywhere(repo_copy: Path) -> None:
    path = repo_copy / "schema" / "metadata.schema.json"
    schema = json.loads(path.read_text())
    schema["properties"]["get_rope_base"] = {"description": "RoPE base.", "type": "number"}
    path.write_text(json.dumps(schema, indent=2))
    outputs = render_all(repo_copy)
    stale = stale_files(outputs, repo_copy)
    assert "spec.md" in stale
    assert "generated/python/ptn_generated/metadata_rules.py" in stale
    assert "generated/python/ptn_generated/metadata_model.py" in stale
    assert "get_rope_base" in outputs["spec.md"]
    write_all(outputs, repo_copy)
    assert stale_files(render_all(repo_copy), repo_copy) == []


def test_new_x_ptn_rule_becomes_a_model_validator(repo_copy: Path) -> None:
    path = repo_copy / "schema" / "metadata.schema.json"
    schema = json.loads(path.read_text())
    rule = {"id": "llm-seq-within-context", "kind": "less-than", "names": ["get_max_seq_len"]}
    schema["x-ptn-rules"].append({**rule, "bound": "get_max_context_len", "why": "Fits."})
    path.write_text(json.dumps(schema, indent=2))
    model = render_all(repo_copy)["generated/python/ptn_generated/metadata_model.py"]
    method = model.split("    def _llm_seq_within_context(self) -> PtnMetadata:\n", 1)[1]
    assert method.splitlines()[1].strip() == (
        "return check_rule(self, {'id': 'llm-seq-within-context', 'kind': 'less-than', "
        "'names': ('get_max_seq_len',), 'bound': 'get_max_context_len'})"
    )


def test_an_edit_of_the_binding_runtime_makes_its_copy_stale(repo_copy: Path) -> None:
    source = repo_copy / "bindings" / "cpp" / "include" / "ptn" / "error.hpp"
    source.write_text(source.read_text() + "// edited\n")
    outputs = render_all(repo_copy)
    assert stale_files(outputs, repo_copy) == ["generated/cpp/include/ptn/error.hpp"]
    assert outputs["generated/cpp/include/ptn/error.hpp"].endswith("// edited\n")


def test_stray_file_is_reported_and_never_deleted(repo_copy: Path) -> None:
    stray = repo_copy / "generated" / "python" / "stray.py"
    stray.write_text("x = 1\n")
    outputs = render_all(repo_copy)
    assert "generated/python/stray.py" in stale_files(outputs, repo_copy)
    write_all(outputs, repo_copy)
    assert stray.exists()


def test_rendering_is_deterministic() -> None:
    assert render_all() == render_all()
