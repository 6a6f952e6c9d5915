"""The metadata against the program (spec.md 9.8), on ExecuTorch's own LLM exports.

Every LLM export of tests/fixtures/real, given the metadata its manifest states, validates
clean; each single wrong fact is one finding of its rule, pointing at the metadata value and
naming the program's side with its program.ptg pointer; a program that does not show a
fact is never compared with it.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import ptn
from ptn.core.errors import Finding
from ptn.metadata.faults import RuleInputs
from ptn.package.agreement import agreement_findings
from ptn.program.build import build_program
from ptn.program.llm_facts import program_facts
from ptn.program.plain import to_plain
from ptn.program.read import read_program
from ptn.testing import hostile

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
MANIFEST = json.loads((REAL / "manifest.json").read_text())
METADATA = {p["name"]: p["metadata"] for p in MANIFEST["packages"] if "metadata" in p}


def _program(name: str) -> Any:
    with zipfile.ZipFile(REAL / f"{name}.ptn") as z:
        program, _ = read_program(z.read("program.ptg"))
    return program


def _findings(name: str, metadata: dict[str, Any], tmp_path: Path) -> list[Finding]:
    """ptn.validate of package ``name`` with ``metadata`` (written as it is)."""
    path = tmp_path / f"{name}.ptn"
    document = json.dumps(metadata).encode()
    path.write_bytes(hostile.with_metadata((REAL / f"{name}.ptn").read_bytes(), document))
    return [f for f in ptn.validate(path).findings if f.member == "metadata.json"]


def test_the_llm_exports_are_the_four_with_metadata() -> None:
    assert sorted(METADATA) == ["gemma3_tiny", "llama_tiny", "mistral_tiny", "qwen2_tiny"]


@pytest.mark.parametrize("name", sorted(METADATA))
def test_every_llm_export_validates_clean_with_its_metadata(name: str, tmp_path: Path) -> None:
    path = tmp_path / "model.ptn"
    shutil.copy(REAL / f"{name}.ptn", path)
    ptn.rewrite_metadata(path, METADATA[name])  # the edit validates its result
    report = ptn.validate(path)
    assert report.errors == []
    assert not [f for f in report.findings if f.member == "metadata.json"]


def test_what_the_exports_show() -> None:
    mistral, gemma = program_facts(_program("mistral_tiny")), program_facts(_program("gemma3_tiny"))
    assert mistral.caches is not None and gemma.caches is not None
    assert [(c.heads, c.length, c.head_dim) for c in mistral.caches] == [(1, 4, 4)] * 2
    assert [c.length for c in gemma.caches] == [4, 4, 16]
    assert [c.keys.name for c in gemma.caches] == [f"layers.{i}.k_cache" for i in range(3)]
    assert [c.values.name for c in gemma.caches] == [f"layers.{i}.v_cache" for i in range(3)]
    for facts in (mistral, gemma):
        assert (facts.embedding and facts.embedding.size, facts.logits and facts.logits.size) == (
            32,
            32,
        )
        assert facts.tokens is not None and facts.tokens.size == 4
    llama = program_facts(_program("llama_tiny"))
    assert llama.caches == () and llama.tokens is not None and llama.tokens.size == 8
    # Caches of rank 3, as the small KV-cache exports keep them: no cache is shown.
    assert program_facts(_program("kv_cache")).caches is None
    assert program_facts(_program("kv_cache_pair")).caches is None
    assert program_facts(_program("mlp")) == type(llama)(caches=())


Edit = Callable[[dict[str, Any]], None]


def _set(**values: Any) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        m.update(values)

    return edit


def _drop(*names: str, **values: Any) -> Edit:
    def edit(m: dict[str, Any]) -> None:
        for name in names:
            del m[name]
        m.update(values)

    return edit


GEOMETRY = ("get_n_caches", "get_kv_heads", "get_head_dims", "get_windows")
# One wrong fact each: (package, edit, rule, metadata pointer, program pointer in the message).
SINGLE_FAULTS: dict[str, tuple[str, Edit, str, str, str]] = {
    "n-caches": (
        "mistral_tiny",
        _set(get_n_caches=3, get_kv_heads=[1] * 3, get_head_dims=[4] * 3, get_windows=[4] * 3),
        "llm-cache-count-mismatch",
        "/get_n_caches",
        "program.ptg /methods/0/mutable_buffers/0",
    ),
    "n-layers": (
        "gemma3_tiny",
        _drop(*GEOMETRY, "get_max_context_len", get_n_layers=2),
        "llm-cache-count-mismatch",
        "/get_n_layers",
        "program.ptg /methods/0/constants/",
    ),
    "kv-heads": (
        "mistral_tiny",
        _set(get_kv_heads=[1, 2]),
        "llm-cache-geometry-mismatch",
        "/get_kv_heads/1",
        "program.ptg /methods/0/graph/tensor_values/2/meta/sizes/1",
    ),
    "head-dims": (
        "gemma3_tiny",
        _set(get_head_dims=[4, 4, 8]),
        "llm-cache-geometry-mismatch",
        "/get_head_dims/2",
        "/meta/sizes/3",
    ),
    "window": (
        "mistral_tiny",
        _set(get_windows=[4, 8]),
        "llm-window-exceeds-cache",
        "/get_windows/1",
        "program.ptg /methods/0/graph/tensor_values/2/meta/sizes/2",
    ),
    "context-cache": (
        "gemma3_tiny",
        _set(get_max_context_len=32),
        "llm-context-exceeds-program",
        "/get_max_context_len",
        "/meta/sizes/2",
    ),
    "context-no-cache": (
        "llama_tiny",
        _set(get_max_context_len=64),
        "llm-context-exceeds-program",
        "/get_max_context_len",
        "program.ptg /methods/0/graph/tensor_values/1/meta/sizes/1",
    ),
    "seq-len": (
        "mistral_tiny",
        _set(get_max_seq_len=8),
        "llm-seq-len-exceeds-program",
        "/get_max_seq_len",
        "/meta/sizes/1",
    ),
    "vocab": (
        "gemma3_tiny",
        _set(get_vocab_size=64),
        "llm-vocab-mismatch",
        "/get_vocab_size",
        "program.ptg /methods/0/constants/",
    ),
    "token-id": (
        "mistral_tiny",
        _drop("get_vocab_size", get_bos_id=32),
        "llm-token-id-out-of-range",
        "/get_bos_id",
        "program.ptg /methods/0/constants/0/meta/sizes/0",
    ),
}


@pytest.mark.parametrize("case", sorted(SINGLE_FAULTS))
def test_each_wrong_fact_is_one_finding_naming_both_sides(case: str, tmp_path: Path) -> None:
    name, edit, rule, where, program_side = SINGLE_FAULTS[case]
    metadata = copy.deepcopy(METADATA[name])
    edit(metadata)
    (finding,) = _findings(name, metadata, tmp_path)
    assert (finding.rule, finding.severity, finding.pointer) == (rule, "error", where)
    assert program_side in finding.message


def test_every_rule_of_9_8_has_a_single_fault() -> None:
    rules = {rule for _, _, rule, _, _ in SINGLE_FAULTS.values()}
    assert rules == {
        "llm-cache-count-mismatch",
        "llm-cache-geometry-mismatch",
        "llm-window-exceeds-cache",
        "llm-context-exceeds-program",
        "llm-seq-len-exceeds-program",
        "llm-vocab-mismatch",
        "llm-token-id-out-of-range",
    }


def test_the_vocabulary_finding_names_the_logits_and_the_table(tmp_path: Path) -> None:
    (finding,) = _findings("mistral_tiny", {"get_vocab_size": 64}, tmp_path)
    assert finding.message == (
        "get_vocab_size = 64, but the logits 'aten_linear_default_8' of method 'forward' are 32 "
        "wide (program.ptg /methods/0/graph/tensor_values/72/meta/sizes/2) and the embedding "
        "table 'embed.weight' has 32 rows (program.ptg /methods/0/constants/0/meta/sizes/0)"
    )


def test_the_issue_import_of_a_32_layer_config_is_caught(tmp_path: Path) -> None:
    metadata = {
        **METADATA["mistral_tiny"],
        "get_n_caches": 32,
        "get_kv_heads": [8] * 32,
        "get_head_dims": [128] * 32,
        "get_windows": [4096] * 32,
    }
    (finding,) = _findings("mistral_tiny", metadata, tmp_path)
    assert finding.message == (
        "get_n_caches = 32, but the program keeps 2 KV caches (4 buffers of rank 4 that its "
        "graph updates, paired as keys and values; the first, 'layers.0.k_cache', at "
        "program.ptg /methods/0/mutable_buffers/0)"
    )


def test_a_wrong_type_says_which_rules_it_keeps_from_comparing(tmp_path: Path) -> None:
    metadata = {**METADATA["mistral_tiny"], "get_n_caches": "2"}
    found = _findings("mistral_tiny", metadata, tmp_path)
    assert [(f.rule, f.severity, f.pointer, f.message) for f in found] == [
        (
            "llm-wrong-type",
            "error",
            "/get_n_caches",
            "get_n_caches must be an integer, got a string",
        ),
        (
            "llm-rule-unchecked",
            "warning",
            "/get_n_caches",
            "llm-cache-geometry-length was not checked for get_n_caches (llm-wrong-type): fix "
            "that value and validate again",
        ),
        (
            "llm-rule-unchecked",
            "warning",
            "/get_n_caches",
            "llm-cache-count-mismatch was not checked for get_n_caches (llm-wrong-type): fix "
            "that value and validate again",
        ),
    ]


def test_the_three_fault_document_gets_three_findings_in_a_package(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    path.write_bytes(
        hostile.metadata_package(
            b'{"use_kv_cache":1,"get_vocab_size":64,"get_bos_id":999,"get_kv_heads":[8,8],'
            b'"get_head_dims":[64,64],"get_windows":[0,0,0]}'
        )
    )
    assert [(f.rule, f.pointer) for f in ptn.validate(path).findings] == [
        ("llm-wrong-type", "/use_kv_cache"),
        ("llm-cache-geometry-length", "/get_windows"),
        ("llm-token-id-out-of-range", "/get_bos_id"),
    ]


def test_a_program_that_does_not_show_a_fact_is_not_compared(tmp_path: Path) -> None:
    wrong = {"get_n_caches": 9, "get_kv_heads": [9] * 9, "get_head_dims": [9] * 9,
             "get_windows": [9] * 9, "get_vocab_size": 9, "get_max_context_len": 9,
             "get_max_seq_len": 9, "get_bos_id": 8}  # fmt: skip
    for name in ("kv_cache", "kv_cache_pair", "mlp", "nonpersistent_buffer"):
        assert _findings(name, wrong, tmp_path) == [], name


def _edited(name: str, edit: Callable[[dict[str, Any]], None]) -> Any:
    plain = to_plain(_program(name))
    edit(plain)
    program, found = read_program(build_program(plain))
    assert program is not None and not [f for f in found if f.severity == "error"], found
    return program


def _meta_of(plain: dict[str, Any], value: str) -> dict[str, Any]:
    values = plain["methods"][0]["graph"]["tensor_values"]
    entry: dict[str, Any] = next(v for v in values if v["name"] == value)
    return entry["meta"]


def test_caches_are_shown_only_when_the_pairs_are_unambiguous() -> None:
    def unequal_pair(plain: dict[str, Any]) -> None:
        _meta_of(plain, "b_layers_1_v_cache")["sizes"][2] = {"min": 8, "max": 8}

    assert program_facts(_edited("mistral_tiny", unequal_pair)).caches is None

    def dynamic_length(plain: dict[str, Any]) -> None:
        for buffer in ("b_layers_1_k_cache", "b_layers_1_v_cache"):
            _meta_of(plain, buffer)["sizes"][2] = {"min": 1, "max": 4}

    assert program_facts(_edited("mistral_tiny", dynamic_length)).caches is None

    def not_written_back(plain: dict[str, Any]) -> None:  # index_put (functional), no spec
        nodes = plain["methods"][0]["graph"]["nodes"]
        last = [n for n in nodes if n.get("target") == "torch.ops.aten.index_put_.default"][-1]
        last["target"] = "torch.ops.aten.index_put.default"
        for out in last["outputs"]:
            out["alias_of"] = ""
        specs = plain["methods"][0]["output_specs"]
        plain["methods"][0]["output_specs"] = [s for s in specs if s["name"] != last["name"]]
        plain["methods"][0]["graph"]["outputs"] = [
            o for o in plain["methods"][0]["graph"]["outputs"] if o != last["name"]
        ]

    # Three buffers updated: an odd number of cache buffers shows nothing.
    assert program_facts(_edited("mistral_tiny", not_written_back)).caches is None

    def functional(plain: dict[str, Any]) -> None:  # index_put, handed back by its spec
        nodes = plain["methods"][0]["graph"]["nodes"]
        last = [n for n in nodes if n.get("target") == "torch.ops.aten.index_put_.default"][-1]
        last["target"] = "torch.ops.aten.index_put.default"
        for out in last["outputs"]:
            out["alias_of"] = ""

    shown = program_facts(_edited("mistral_tiny", functional)).caches
    assert shown is not None and [c.values.name for c in shown] == [
        "layers.0.v_cache",
        "layers.1.v_cache",
    ]


def test_a_broken_program_is_not_compared(tmp_path: Path) -> None:
    facts = program_facts(_program("mistral_tiny"))
    assert agreement_findings(facts, RuleInputs({"get_vocab_size": 64}))  # shown when read
    path = tmp_path / "m.ptn"
    with zipfile.ZipFile(REAL / "mistral_tiny.ptn") as z:
        members = {n: z.read(n) for n in z.namelist()}
    plain = to_plain(read_program(members["program.ptg"])[0])
    node = next(n for n in plain["methods"][0]["graph"]["nodes"] if n.get("target"))
    node["target"] = "torch.ops.aten.not_an_op.default"
    members["program.ptg"] = build_program(plain)
    members["metadata.json"] = b'{"get_vocab_size":64}'
    path.write_bytes(hostile.package({k: v for k, v in members.items() if k != "program.ptg"},
                                     members["program.ptg"]))  # fmt: skip
    rules = {f.rule for f in ptn.validate(path).findings}
    assert "ptg-unknown-operator" in rules and "llm-vocab-mismatch" not in rules


def test_every_rule_of_9_8_has_a_package_vector_every_binding_runs() -> None:
    """The shared corpus (tests/vectors/packages, built by make_package_vectors) carries a
    vector per rule of spec.md 9.8 and the rule-unchecked warning, so all four languages
    are held to the same findings."""
    manifest = json.loads(
        (REAL.parent.parent / "vectors" / "packages" / "manifest.json").read_text()
    )
    found = {f[0] for case in manifest.values() for f in case["deep"]["findings"]}
    spec = (REAL.parent.parent.parent / "spec.md").read_text()
    section = spec[spec.index("### 9.8 ") : spec.index("## 10. ")]
    rules = set(re.findall(r"^#### `([a-z0-9-]+)`", section, re.M))
    assert rules and rules | {"llm-rule-unchecked", "llm-token-id-out-of-range"} <= found
    valid = [rel for rel, case in manifest.items() if rel.startswith("valid/llm-")]
    assert {"valid/llm-mistral-metadata.ptn", "valid/llm-gemma3-metadata.ptn"} <= set(valid)


# -- the command line -----------------------------------------------------------------------

MISTRAL_CONFIG = {
    "model_type": "mistral", "vocab_size": 32, "hidden_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "sliding_window": 4,
    "max_position_embeddings": 16, "bos_token_id": 1, "eos_token_id": 2,
}  # fmt: skip


def _import_hf(tmp_path: Path, config: dict[str, Any], *flags: str) -> tuple[Path, Any]:
    from click.testing import CliRunner

    from ptn.cli.main import cli

    path = tmp_path / "mistral.ptn"
    if not path.exists():
        shutil.copy(REAL / "mistral_tiny.ptn", path)
    (tmp_path / "config.json").write_text(json.dumps(config))
    args = ["metadata", "import-hf", str(tmp_path / "config.json"), str(path), *flags]
    return path, CliRunner().invoke(cli, args)


def test_import_hf_of_the_models_own_config_is_written(tmp_path: Path) -> None:
    path, result = _import_hf(tmp_path, MISTRAL_CONFIG)
    assert result.exit_code == 0, result.output
    assert ptn.validate(path).errors == []
    with ptn.load(path) as pkg:
        assert pkg.metadata_ints("get_windows") == [4, 4]


def test_import_hf_of_a_32_layer_config_is_refused_unless_forced(tmp_path: Path) -> None:
    """The issue's case: a 32-layer config onto a program of 2 caches."""
    config = {**MISTRAL_CONFIG, "num_hidden_layers": 32}
    path, result = _import_hf(tmp_path, config)
    before = (REAL / "mistral_tiny.ptn").read_bytes()
    assert result.exit_code == 1
    assert "error llm-cache-count-mismatch [metadata.json /get_n_caches]" in result.output
    assert "program.ptg /methods/0/mutable_buffers/0" in result.output
    assert "nothing was written" in result.output and "--force" in result.output
    assert path.read_bytes() == before
    _, shown = _import_hf(tmp_path, config, "--dry-run")
    assert shown.exit_code == 1 and '"get_n_caches": 32' in shown.output
    assert path.read_bytes() == before
    path, forced = _import_hf(tmp_path, config, "--force")
    assert forced.exit_code == 0, forced.output
    assert "warning llm-cache-count-mismatch" in forced.output
    assert [f.rule for f in ptn.validate(path).errors] == ["llm-cache-count-mismatch"]


def test_inspect_shows_the_metadata_beside_the_program(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from ptn.cli.main import cli

    path = tmp_path / "m.ptn"
    metadata = {**METADATA["mistral_tiny"], "get_windows": [4, 8]}
    path.write_bytes(
        hostile.with_metadata(
            (REAL / "mistral_tiny.ptn").read_bytes(), json.dumps(metadata).encode()
        )
    )
    shown = json.loads(CliRunner().invoke(cli, ["inspect", "--json", str(path)]).output)
    rows = {row["fact"]: row for row in shown["llm"]}
    assert rows["window / cache length"] == {
        "fact": "window / cache length",
        "metadata": {"name": "get_windows", "value": [4, 8]},
        "program": {"value": [4, 4], "pointer": "/methods/0/graph/tensor_values/0/meta/sizes/2"},
        "rule": "llm-window-exceeds-cache",
        "agrees": False,
    }
    assert rows["KV caches"]["agrees"] is True and rows["vocabulary"]["agrees"] is True
    assert rows["context length"]["program"] is None  # every cache slides: no bound shown
    text = CliRunner().invoke(cli, ["inspect", str(path)], env={"COLUMNS": "200"}).output
    assert "LLM facts: metadata and program" in text and "no: llm-window-exceeds-cache" in text
    plain = json.loads(CliRunner().invoke(cli, ["inspect", "--json", str(REAL / "mlp.ptn")]).output)
    assert plain["llm"] == []


def test_the_hf_config_docs_show_what_import_hf_prints(tmp_path: Path) -> None:
    """docs/hf-config.md's refusal, run as it is written (from the repository root)."""
    import os
    import subprocess
    import sys

    docs = (REAL.parent.parent.parent / "docs" / "hf-config.md").read_text()
    block = docs[docs.index("$ cp tests/fixtures/real/mistral_tiny.ptn") :]
    block = block[: block.index("```")]
    lines = block.splitlines()
    assert lines[1].startswith("$ ptn metadata import-hf ")
    repo = REAL.parent.parent.parent
    shutil.copy(REAL / "mistral_tiny.ptn", tmp_path / "model.ptn")
    config = repo / lines[1].split()[4]
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-m", "ptn", "metadata", "import-hf", str(config), "model.ptn"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 1
    shown = proc.stderr.replace(str(config), lines[1].split()[4])
    assert shown.splitlines() == lines[2:]
