"""The README's first command and the outputs it and the docs pages it sends to show are real."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()
TOUR = (REPO / "docs" / "tour.md").read_text()  # the README's tour, moved to the docs site
PYTHON = (REPO / "docs" / "python.md").read_text()
CI = (REPO / "docs" / "ci.md").read_text()


def run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptn.cli", *args], capture_output=True, text=True, cwd=cwd
    )


def test_opens_with_the_two_commands() -> None:
    block = README.split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == ["pip install -e '.[dev]' && ptn validate examples/", "pytest"]
    assert run("validate", "examples/").returncode == 0


def test_validate_tour_output_is_real() -> None:
    proc = run("validate", "examples/", "invalid-examples/")
    assert proc.returncode == 1
    for line in proc.stdout.splitlines():
        assert line in README and line in TOUR, line


@pytest.mark.slow
def test_metadata_tour_output_is_real(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples" / "tiny-llm.ptn", tmp_path / "model.ptn")
    proc = run("metadata", "set", "model.ptn", "get_max_context_len=256",
               'general.name="tiny-llm-256"', cwd=tmp_path)  # fmt: skip
    assert proc.stderr.strip() in TOUR
    assert (
        run("metadata", "get", "model.ptn", "get_max_context_len", cwd=tmp_path).stdout == "256\n"
    )
    bad = run("metadata", "set", "model.ptn", "get_windows=[512]", cwd=tmp_path)
    assert bad.returncode == 1 and bad.stderr.strip() in TOUR


@pytest.mark.slow
def test_diff_tour_output_is_real(tmp_path: Path) -> None:
    """The diff block: the edited package of the metadata tour against the example."""
    (tmp_path / "examples").mkdir()
    shutil.copy(REPO / "examples" / "tiny-llm.ptn", tmp_path / "examples" / "tiny-llm.ptn")
    shutil.copy(REPO / "examples" / "tiny-llm.ptn", tmp_path / "model.ptn")
    run("metadata", "set", "model.ptn", "get_max_context_len=256",
        'general.name="tiny-llm-256"', cwd=tmp_path)  # fmt: skip
    line = "$ ptn diff examples/tiny-llm.ptn model.ptn"
    proc = run(*line.split()[2:], cwd=tmp_path)
    assert proc.returncode == 1 and f"{line}\n{proc.stdout}```" in TOUR


@pytest.mark.slow
def test_import_hf_tour_output_is_real(tmp_path: Path) -> None:
    fixture = Path("tests/fixtures/hf/gemma-2-2b.json")
    (tmp_path / fixture.parent).mkdir(parents=True)
    shutil.copy(REPO / fixture, tmp_path / fixture)
    shutil.copy(REPO / "examples" / "tiny-llm.ptn", tmp_path / "model.ptn")
    line = f"$ ptn metadata import-hf {fixture} model.ptn --max-context-len 4096"
    assert line in TOUR
    proc = run(*line.split()[2:], cwd=tmp_path)
    assert proc.returncode == 0 and f"{line}\n{proc.stderr}" in TOUR
    got = run("metadata", "get", "model.ptn", "get_windows", cwd=tmp_path).stdout
    assert f"$ ptn metadata get model.ptn get_windows\n{got}" in TOUR


def test_model_tour_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The PtnMetadata block: written with the model, read back as plain values."""
    import ptn

    (block,) = [b.split("```", 1)[0] for b in PYTHON.split("```python\n") if "PtnMetadata(" in b]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(block, "docs/python.md", "exec"), namespace)
    assert namespace["windows"] == [512, 0]
    meta = ptn.read_metadata(tmp_path / "model.ptn")
    assert meta is not None and meta.kind("rope.theta") == "float"
    assert meta.metadata_int("get_max_context_len") == 4096
    from pydantic import ValidationError

    claim = "`ptn.PtnMetadata(get_vocab_size=64, get_eos_ids=[99])` raises"
    assert claim in " ".join(PYTHON.split())
    with pytest.raises(ValidationError) as raised:
        ptn.PtnMetadata(get_vocab_size=64, get_eos_ids=[99])
    with pytest.raises(ptn.PtnError) as ptn_error:
        ptn.Metadata({"get_vocab_size": 64, "get_eos_ids": [99]})
    (error,) = raised.value.errors()
    assert (error["type"], error["msg"]) == ("llm-token-id-out-of-range", ptn_error.value.message)


def test_inspect_tour_rows_are_real() -> None:
    out = run("inspect", "examples/tiny-llm.ptn").stdout
    rows = [line for line in TOUR.splitlines() if line.startswith("│ program.")]
    assert rows and all(row in out for row in rows)


def test_pre_commit_snippet_is_a_local_hook_like_the_published_one() -> None:
    """The snippet needs no repository URL, and runs what .pre-commit-hooks.yaml's hook runs."""
    import yaml  # PyYAML: a dependency of the dev extra's datamodel-code-generator

    block = CI.split("## Use in pre-commit", 1)[1].split("```yaml\n", 1)[1].split("```")[0]
    (repo,) = yaml.safe_load(block)["repos"]
    (hook,) = repo["hooks"]
    assert repo["repo"] == "local" and hook["language"] == "system"
    published = {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    for key in ("name", "entry", "files", "types", "require_serial"):
        assert hook[key] == published[hook["id"]][key], key
    entry = hook["entry"].split()
    assert entry[0] == "ptn"
    assert run(*entry[1:], "examples/tiny-llm.ptn").returncode == 0


def _python_blocks() -> list[str]:
    return [b.split("```", 1)[0] for b in README.split("```python\n")[1:]]


def test_readme_is_a_front_page() -> None:
    assert len(README.splitlines()) < 150
    for page in [m.split(")")[0] for m in README.split("](docs/")[1:]]:
        assert (REPO / "docs" / page).is_file(), page


@pytest.mark.slow
def test_quickstart_metadata_output_is_real(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples" / "tiny-llm.ptn", tmp_path / "model.ptn")
    assert "$ cp examples/tiny-llm.ptn model.ptn\n" in README
    line = """$ ptn metadata set model.ptn get_max_context_len=256 'general.name="tiny-llm-256"'"""
    proc = run("metadata", "set", "model.ptn", "get_max_context_len=256",
               'general.name="tiny-llm-256"', cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0 and f"{line}\n{proc.stderr}" in README
    line = "$ ptn metadata get model.ptn get_max_context_len general.name"
    proc = run(*line.split()[2:], cwd=tmp_path)
    assert f"{line}\n{proc.stdout}```" in README


@pytest.mark.slow
def test_quickstart_load_block_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    (block,) = [b for b in _python_blocks() if "ptn.load(" in b]
    shutil.copy(REPO / "examples" / "tiny-llm.ptn", tmp_path / "model.ptn")
    run("metadata", "set", "model.ptn", "get_max_context_len=256", cwd=tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    assert set(namespace["tensors"]) >= {"tok_embeddings.weight"}  # type: ignore[call-overload]
    assert namespace["embedding"].shape == (64, 16)  # type: ignore[attr-defined]


def test_quickstart_executorch_block_writes_a_valid_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("executorch")
    import ptn

    (block,) = [b for b in _python_blocks() if "ptn.executorch.save(" in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    with ptn.load(tmp_path / "tiny.ptn") as pkg:
        assert pkg.metadata is not None and pkg.metadata["general.name"] == "tiny"
        assert [m.name for m in pkg.methods] == ["forward"]
