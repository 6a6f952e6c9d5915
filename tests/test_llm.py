"""ptn.llm.from_hf_config and `ptn metadata import-hf`.

Three sources of truth: the default configs of transformers' own config classes (and
the layer_types those classes compute, a second implementation of every window rule),
config.json fixtures written from published models' documented values
(tests/fixtures/hf/README.md), and properties over generated configs.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import ptn
from ptn.cli.main import cli
from ptn.core.errors import PtnError
from ptn.llm import FAMILIES, HfConfigWarning, from_hf_config

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "hf"
TINY = REPO / "examples" / "tiny-llm.ptn"
GEOMETRY = ("get_n_caches", "get_kv_heads", "get_head_dims", "get_windows")


def derive(config: Mapping[str, Any] | str | os.PathLike[str], **kw: Any) -> dict[str, Any]:
    """from_hf_config without its warnings (the tests that want them ask for them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HfConfigWarning)
        return from_hf_config(config, **kw)


# --- transformers' own config classes ------------------------------------------------


def transformers_module() -> Any:
    """transformers (configs only: no torch, no weights, no network); the dev extra has it."""
    try:
        import transformers
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("transformers is missing in CI; pip install -e '.[dev]' installs it")
        pytest.skip("transformers is not installed (pip install -e '.[dev]')")
    return transformers


def config_class(name: str) -> Any:
    transformers = transformers_module()
    cls = getattr(transformers, name, None)
    if cls is None:
        pytest.skip(f"transformers {transformers.__version__} has no {name}")
    return cls


def expected_by_transformers(cfg: Any) -> dict[str, Any]:
    """The geometry transformers itself uses: its layer_types (or one sliding_window for
    every layer, for classes without layer_types), head_dim, num_key_value_heads."""
    n = cfg.num_hidden_layers
    window = getattr(cfg, "sliding_window", None) or 0
    types = getattr(cfg, "layer_types", None)
    windows = [window if t == "sliding_attention" else 0 for t in types] if types else [window] * n
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
    return {
        "get_n_caches": n,
        "get_kv_heads": [kv] * n,
        "get_head_dims": [head_dim] * n,
        "get_windows": windows,
    }


CLASSES = [
    "LlamaConfig",
    "MistralConfig",
    "MixtralConfig",
    "Qwen2Config",
    "Qwen3Config",
    "Gemma2Config",
    "Gemma3TextConfig",
    "Gemma3Config",
    "Phi3Config",
    "Cohere2Config",
    "GptOssConfig",
]


@pytest.mark.slow
@pytest.mark.parametrize("name", CLASSES)
@pytest.mark.parametrize("form", ["as saved", "without layer_types", "without any pattern"])
def test_transformers_default_configs(name: str, form: str) -> None:
    """Default config of each class: as to_dict() gives it, and as older config.json files
    spell it (no layer_types: the family rule must compute what transformers computes)."""
    cfg = config_class(name)()
    data = cfg.to_dict()
    if form != "as saved":
        for part in (data, data.get("text_config") or {}):
            part.pop("layer_types", None)
            if form == "without any pattern":
                part.pop("_sliding_window_pattern", None)
    text = cfg.get_text_config()
    got = derive(data)
    assert {k: got[k] for k in GEOMETRY} == expected_by_transformers(text)
    assert got["get_vocab_size"] == text.vocab_size
    assert got["get_max_context_len"] == text.max_position_embeddings
    assert got.get("get_bos_id") == getattr(text, "bos_token_id", None)
    eos = text.eos_token_id
    assert got.get("get_eos_ids") == ([eos] if isinstance(eos, int) else eos)
    assert isinstance(got["rope.theta"], float)


PATTERN_CLASSES = {
    "Gemma2Config": {},
    "GptOssConfig": {},
    "Cohere2Config": {"sliding_window_pattern": st.integers(1, 8)},
    "Gemma3TextConfig": {"sliding_window_pattern": st.integers(1, 8)},
    "Qwen2Config": {"use_sliding_window": st.booleans(), "max_window_layers": st.integers(0, 40)},
    "Qwen3Config": {"use_sliding_window": st.booleans(), "max_window_layers": st.integers(0, 40)},
}


@pytest.mark.parametrize("name", sorted(PATTERN_CLASSES))
@settings(max_examples=25)
@given(data=st.data())
def test_window_rules_agree_with_transformers(name: str, data: st.DataObject) -> None:
    """Random layer counts, windows and patterns: the rule read from the fields alone
    gives transformers' own per-layer choice, and so does its layer_types when present."""
    cls = config_class(name)
    kwargs = {
        "num_hidden_layers": data.draw(st.integers(1, 40), label="layers"),
        "sliding_window": data.draw(st.integers(1, 1 << 20), label="window"),
        **{k: data.draw(s, label=k) for k, s in PATTERN_CLASSES[name].items()},
    }
    cfg = cls(**kwargs)
    saved = cfg.to_dict()
    older = {k: v for k, v in saved.items() if k != "layer_types"}
    older.update({k: v for k, v in kwargs.items() if k == "sliding_window_pattern"})
    for form in (saved, older):
        got = derive(form)
        assert {k: got[k] for k in GEOMETRY} == expected_by_transformers(cfg)


FIXTURE_FACTS = {
    # file: (model_type, layers, kv heads, head dim, sliding layers' window, full layers, eos)
    "mistral-7b-v0.1.json": ("mistral", 32, 8, 128, 4096, [], [2]),
    "llama-3.1-8b-instruct.json": ("llama", 32, 8, 128, 0, range(32), [128001, 128008, 128009]),
    "qwen2-7b.json": ("qwen2", 28, 4, 128, 0, range(28), [151643]),
    "gemma-2-2b.json": ("gemma2", 26, 4, 256, 4096, range(1, 26, 2), [1]),
    "gemma-3-4b-it.json": ("gemma3_text", 34, 4, 256, 1024, range(5, 34, 6), [1, 106]),
    "phi-3-mini-4k-instruct.json": ("phi3", 32, 32, 96, 2047, [], [32000]),
}


@pytest.mark.parametrize("name", sorted(FIXTURE_FACTS))
def test_published_configs(name: str) -> None:
    arch, n, kv, head_dim, window, full, eos = FIXTURE_FACTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error", HfConfigWarning)  # every name derived
        got = from_hf_config(FIXTURES / name)
    assert got["general.architecture"] == arch
    assert got["get_n_caches"] == n
    assert got["get_kv_heads"] == [kv] * n
    assert got["get_head_dims"] == [head_dim] * n
    assert got["get_windows"] == [0 if i in full else window for i in range(n)]
    assert got["get_eos_ids"] == eos
    assert all(k in got for k in ("get_vocab_size", "get_bos_id", "get_max_context_len"))


@pytest.mark.parametrize("name", sorted(FIXTURE_FACTS))
def test_published_configs_agree_with_transformers(name: str) -> None:
    """transformers loads each fixture to the same geometry (its defaults fill the sparse
    text_config of Gemma 3 exactly as FAMILIES' defaults do)."""
    transformers = transformers_module()
    data = json.loads((FIXTURES / name).read_text())
    try:
        cfg = transformers.AutoConfig.for_model(**data).get_text_config()
    except ValueError as exc:
        pytest.skip(f"transformers {transformers.__version__} cannot load {name}: {exc}")
    got = derive(data)
    assert {k: got[k] for k in GEOMETRY} == expected_by_transformers(cfg)
    assert got["get_vocab_size"] == cfg.vocab_size


def test_rope_facts() -> None:
    llama = derive(FIXTURES / "llama-3.1-8b-instruct.json")
    assert {k: v for k, v in llama.items() if k.startswith("rope.")} == {
        "rope.theta": 500000.0,
        "rope.scaling.type": "llama3",
        "rope.scaling.factor": 8.0,
        "rope.scaling.low_freq_factor": 1.0,
        "rope.scaling.high_freq_factor": 4.0,
        "rope.scaling.original_max_position_embeddings": 8192,
    }
    gemma3 = derive(FIXTURES / "gemma-3-4b-it.json")
    assert (gemma3["rope.theta"], gemma3["rope.local_theta"]) == (1000000.0, 10000.0)
    assert (gemma3["rope.scaling.type"], gemma3["rope.scaling.factor"]) == ("linear", 8.0)
    newer = derive(
        {**MISTRAL, "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0}}
    )
    assert (newer["rope.theta"], newer["rope.scaling.type"]) == (1e6, "yarn")


def test_eos_list_keeps_order_and_drops_repeats() -> None:
    assert derive({**MISTRAL, "eos_token_id": [7, 2, 7]})["get_eos_ids"] == [7, 2]


def test_max_context_len_argument_wins() -> None:
    assert derive(MISTRAL, max_context_len=512)["get_max_context_len"] == 512
    for bad in (0, True, "8", 1.0):
        with pytest.raises(ValueError, match="max_context_len"):
            from_hf_config(MISTRAL, max_context_len=bad)  # type: ignore[arg-type]


def test_model_directory_and_type_errors(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "qwen2-7b.json", tmp_path / "config.json")
    assert derive(tmp_path)["get_n_caches"] == 28
    with pytest.raises(TypeError, match="config must be"):
        from_hf_config(42)  # type: ignore[arg-type]


# --- what cannot be derived, conflicts, bad fields -------------------------------------

MISTRAL = {
    "model_type": "mistral",
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "hidden_size": 256,
    "sliding_window": 64,
    "vocab_size": 100,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "max_position_embeddings": 1024,
}


def test_unknown_architecture_warns_and_reads_generic_fields() -> None:
    plain = {**MISTRAL, "model_type": "brand_new"}
    del plain["sliding_window"]
    with pytest.warns(HfConfigWarning, match="'brand_new' is not in ptn.llm's table"):
        got = from_hf_config(plain)
    assert got["get_windows"] == [0] * 4 and got["get_kv_heads"] == [8] * 4
    typed = {
        **plain,
        "sliding_window": 32,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
    }
    with pytest.warns(HfConfigWarning):
        assert from_hf_config(typed)["get_windows"] == [32, 0, 32, 0]


def test_unknown_window_spelling_leaves_geometry_out() -> None:
    with pytest.warns(HfConfigWarning) as record:
        got = from_hf_config({**MISTRAL, "model_type": "brand_new", "attention_chunk_size": 8})
    assert not set(GEOMETRY) & set(got)
    assert any(
        "get_windows" in str(w.message) and "attention_chunk_size" in str(w.message) for w in record
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"num_hidden_layers": None}, "num_hidden_layers"),
        ({"layer_types": ["chunked_attention"] * 4, "model_type": "gemma2"}, "chunked_attention"),
        ({"use_bidirectional_attention": True}, "use_bidirectional_attention"),
        ({"num_attention_heads": None, "head_dim": 32}, "num_key_value_heads"),
        ({"eos_token_id": None}, "get_eos_ids (no eos_token_id)"),
        ({"rope_scaling": {"rope_type": "yarn", "mrope": {"a": 1}}}, "'mrope'"),
    ],
)
def test_what_cannot_be_derived_is_left_out_with_a_warning(
    change: dict[str, Any], words: str
) -> None:
    with pytest.warns(
        HfConfigWarning, match=r"not derived: .*" + words.replace("(", r"\(").replace(")", r"\)")
    ):
        got = from_hf_config({**MISTRAL, **change})
    assert got["get_vocab_size"] == 100


@pytest.mark.parametrize(
    ("config", "first", "second"),
    [
        ({**MISTRAL, "layer_types": ["full_attention"] * 3, "model_type": "gemma2"},
         "layer_types", "num_hidden_layers"),
        ({**MISTRAL, "model_type": "gemma3_text", "sliding_window_pattern": 6,
          "layer_types": ["sliding_attention", "full_attention"] * 2},
         "layer_types", "sliding_window_pattern"),
        ({**MISTRAL, "model_type": "qwen2", "use_sliding_window": False,
          "layer_types": ["sliding_attention"] * 4},
         "layer_types", "use_sliding_window"),
        ({**MISTRAL, "layer_types": ["full_attention"] * 4}, "layer_types", "sliding_window"),
        ({**MISTRAL, "model_type": "llama", "layer_types": ["sliding_attention"] * 4},
         "layer_types", "model_type"),
        ({**MISTRAL, "model_type": "gemma2", "sliding_window": None},
         "sliding_window", "layer_types"),
        ({**MISTRAL, "num_key_value_heads": [2, 2]}, "num_key_value_heads", "num_hidden_layers"),
        ({**MISTRAL, "rope_theta": 1e4, "rope_parameters": {"rope_theta": 5e5}},
         "rope_theta", "rope_parameters"),
        ({**MISTRAL, "rope_scaling": {"type": "linear", "factor": 2.0},
          "rope_parameters": {"rope_type": "linear", "factor": 4.0}},
         "rope_scaling", "rope_parameters"),
    ],
)  # fmt: skip
def test_conflicting_fields_are_an_error_naming_both(
    config: dict[str, Any], first: str, second: str
) -> None:
    with pytest.raises(PtnError) as caught:
        derive(config)
    assert caught.value.rule == "llm-config-conflict"
    assert caught.value.message.startswith(f"{first} and {second} disagree")
    assert caught.value.pointer == f"/{first}"


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"num_hidden_layers": "32"}, "/num_hidden_layers"),
        ({"num_hidden_layers": True}, "/num_hidden_layers"),
        ({"vocab_size": 0}, "/vocab_size"),
        ({"eos_token_id": [2, -1]}, "/eos_token_id"),
        ({"bos_token_id": 1.0}, "/bos_token_id"),
        ({"layer_types": "full_attention"}, "/layer_types"),
        ({"use_sliding_window": "yes", "model_type": "qwen2"}, "/use_sliding_window"),
        ({"rope_theta": "1e4"}, "/rope_theta"),
        ({"rope_scaling": [1]}, "/rope_scaling"),
        (
            {"rope_parameters": {"rope_theta": "x"}},
            "/rope_parameters",
        ),
        ({"hidden_size": 4}, "/hidden_size"),
        ({"model_type": 7}, "/model_type"),
        ({"text_config": {"num_hidden_layers": -1}}, "/text_config/num_hidden_layers"),
    ],
)
def test_a_field_of_the_wrong_type_is_invalid(change: dict[str, Any], pointer: str) -> None:
    with pytest.raises(PtnError) as caught:
        derive({**MISTRAL, **change})
    assert (caught.value.rule, caught.value.pointer) == ("llm-config-invalid", pointer)


def test_the_layer_count_is_bounded_before_any_list_is_built() -> None:
    """A 130-byte config once asked for lists of 10^9 entries (a MemoryError traceback;
    10^8 took 151 s and 16.5 GB). The bound is checked before anything is built."""
    import tracemalloc

    from ptn.metadata.hf import MAX_LAYERS

    for n in (10**9, MAX_LAYERS + 1):
        tracemalloc.start()
        try:
            with pytest.raises(PtnError) as caught:
                derive({**MISTRAL, "num_hidden_layers": n})
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert (caught.value.rule, caught.value.pointer) == (
            "llm-config-invalid",
            "/num_hidden_layers",
        )
        assert peak < 1 << 20
    assert derive({**MISTRAL, "num_hidden_layers": MAX_LAYERS})["get_n_caches"] == MAX_LAYERS


def _text_model(config: dict[str, Any]) -> Any:
    """transformers' reading of a multimodal config: the text model's own config."""
    transformers = transformers_module()
    data = dict(config)
    return transformers.AutoConfig.for_model(data.pop("model_type"), **data).get_text_config()


def test_a_null_in_text_config_is_no_window_whatever_the_top_level_says() -> None:
    """transformers builds the text model from text_config alone: its null sliding_window
    is no window (a top-level 999 is not read), and an absent one is the class default."""
    mistral = {k: v for k, v in MISTRAL.items() if k != "sliding_window"}
    composite = {
        "model_type": "mistral3",
        "text_config": {**mistral, "sliding_window": None},
        "sliding_window": 999,
    }
    assert _text_model(composite).sliding_window is None
    assert derive(composite)["get_windows"] == [0] * 4
    gemma = {"model_type": "gemma3", "text_config": {"num_hidden_layers": 4}, "sliding_window": 999}
    assert _text_model(gemma).sliding_window == 4096  # the class default, not 999
    assert derive(gemma)["get_windows"] == [4096] * 4
    # Sliding layers (Gemma 3's pattern) with a null window: transformers cannot build their
    # mask ("sliding_window ... is not set"); ptn says which fields disagree.
    gemma["text_config"] = {"num_hidden_layers": 4, "sliding_window": None}
    assert _text_model(gemma).sliding_window is None
    with pytest.raises(PtnError) as caught:
        derive(gemma)
    assert (caught.value.rule, caught.value.pointer) == (
        "llm-config-conflict",
        "/text_config/sliding_window",
    )


def test_file_errors(tmp_path: Path) -> None:
    (tmp_path / "list.json").write_text("[1]")
    (tmp_path / "bad.json").write_text('{"a": 1,}')
    cases = {
        "list.json": "llm-config-invalid",
        "bad.json": "json-syntax",
        "none.json": "ptn-io-error",
    }
    for name, rule in cases.items():
        with pytest.raises(PtnError) as caught:
            from_hf_config(tmp_path / name)
        assert caught.value.rule == rule


def test_derived_values_still_pass_the_cross_field_rules() -> None:
    with pytest.raises(PtnError) as caught:
        derive({**MISTRAL, "eos_token_id": 100})
    assert caught.value.rule == "llm-token-id-out-of-range"


# --- property: any config of a supported shape ----------------------------------------


@st.composite
def hf_configs(draw: st.DrawFn) -> dict[str, Any]:
    model_type = draw(st.sampled_from(sorted(FAMILIES)))
    family = FAMILIES[model_type]
    n = draw(st.integers(1, 48))
    heads = draw(st.integers(1, 64))
    vocab = draw(st.integers(1, 300_000))
    config: dict[str, Any] = {
        "model_type": model_type,
        "num_hidden_layers": n,
        "num_attention_heads": heads,
        "hidden_size": heads * draw(st.integers(1, 256)),
        "vocab_size": vocab,
        "max_position_embeddings": draw(st.integers(1, 1 << 20)),
        "sliding_window": draw(st.none() | st.integers(1, 1 << 17)),
    }
    optional = {
        "num_key_value_heads": st.integers(1, heads),
        "head_dim": st.integers(1, 512),
        "bos_token_id": st.integers(0, vocab - 1),
        "eos_token_id": st.integers(0, vocab - 1) | st.lists(st.integers(0, vocab - 1), max_size=4),
        "rope_theta": st.floats(1.0, 1e7),
    }
    for key, strategy in optional.items():
        # Gemma 3's class defaults hold token ids that only fit its own vocabulary.
        if draw(st.booleans()) or (family.defaults and key.endswith("token_id")):
            config[key] = draw(strategy)
    if family.windows == "qwen2" and draw(st.booleans()):
        config["use_sliding_window"] = draw(st.booleans())
        config["max_window_layers"] = draw(st.integers(0, n + 2))
    elif family.windows == "pattern" and draw(st.booleans()):
        config["sliding_window_pattern"] = draw(st.integers(1, 8))
    elif family.reads_layer_types and draw(st.booleans()):
        config["layer_types"] = draw(
            st.lists(
                st.sampled_from(["full_attention", "sliding_attention"]), min_size=n, max_size=n
            )
        )
    if family.windows == "pattern" or "layer_types" in config:
        config["sliding_window"] = config["sliding_window"] or draw(st.integers(1, 1 << 17))
    return config


@given(hf_configs())
def test_any_supported_config_gives_valid_metadata(config: dict[str, Any]) -> None:
    got = derive(config)
    assert ptn.Metadata(got).to_dict() == got  # the schema and its cross-field rules
    n = config["num_hidden_layers"]
    assert got["get_n_caches"] == n
    assert all(len(got[k]) == n for k in GEOMETRY[1:])
    assert set(got["get_windows"]) <= {0, config["sliding_window"]}
    if "layer_types" in config:
        sliding = [t == "sliding_attention" for t in config["layer_types"]]
        assert [w != 0 for w in got["get_windows"]] == sliding


# --- ptn metadata import-hf ------------------------------------------------------------


def import_hf(*args: str) -> Any:
    return CliRunner().invoke(cli, ["metadata", "import-hf", *args])


def test_cli_dry_run_prints_and_writes_nothing(tmp_path: Path) -> None:
    model = tmp_path / "model.ptn"
    shutil.copy(TINY, model)
    before = model.read_bytes()
    result = import_hf(str(FIXTURES / "gemma-2-2b.json"), str(model), "--dry-run")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["get_windows"] == [4096, 0] * 13
    assert shown["general.name"] == "tiny-llm"  # existing names are kept
    assert model.read_bytes() == before


def test_cli_import_merges_into_the_package(tmp_path: Path) -> None:
    model, out = tmp_path / "model.ptn", tmp_path / "out.ptn"
    shutil.copy(TINY, model)
    before = model.read_bytes()
    result = import_hf(
        str(FIXTURES / "mistral-7b-v0.1.json"),
        str(model),
        "--max-context-len",
        "8192",
        "-o",
        str(out),
    )
    assert result.exit_code == 0, result.output
    assert model.read_bytes() == before
    with ptn.load(out) as pkg:
        assert pkg.metadata_ints("get_windows") == [4096] * 32
        assert pkg.metadata_int("get_max_context_len") == 8192
        assert pkg.metadata_str("general.name") == "tiny-llm"
    assert import_hf(str(FIXTURES / "qwen2-7b.json"), str(model)).exit_code == 0
    assert ptn.read_metadata(model)["get_n_caches"] == 28  # type: ignore[index]


def test_cli_errors_and_escaped_warnings(tmp_path: Path) -> None:
    model = tmp_path / "model.ptn"
    shutil.copy(TINY, model)
    before = model.read_bytes()
    conflict = tmp_path / "conflict.json"
    conflict.write_text(json.dumps({**MISTRAL, "num_key_value_heads": [1]}))
    result = import_hf(str(conflict), str(model))
    assert (
        result.exit_code == 1
        and "error llm-config-conflict [/num_key_value_heads]" in result.stderr
    )
    assert import_hf(str(tmp_path / "missing.json"), str(model)).exit_code == 2
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps({**MISTRAL, "model_type": "\x1b[2Jx"}))
    result = import_hf(str(hostile), str(model), "--dry-run")
    assert result.exit_code == 0 and "\x1b" not in result.stderr and "\\x1b" in result.stderr
    assert model.read_bytes() == before


def test_docs_table_covers_the_code_table() -> None:
    """docs/hf-config.md is where the mapping is read: every family and name is there."""
    from ptn.llm import SCALARS

    doc = (REPO / "docs" / "hf-config.md").read_text()
    for model_type in FAMILIES:
        assert f"`{model_type}`" in doc, model_type
    for name, (key, _kind) in SCALARS.items():
        assert f"| `{name}` |" in doc and f"`{key}`" in doc, name
