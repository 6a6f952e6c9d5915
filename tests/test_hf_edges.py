"""Edges of ptn.llm.from_hf_config that the broader tests in test_llm.py leave open.

Each pins one behaviour a mutation run showed unasserted (docs/mutation-testing.md):
how much of a config file is read, where errors point, the older ``rope_scaling``
spelling ``type``, and a Gemma 3 local RoPE base given only in ``rope_parameters``.
"""

from __future__ import annotations

import tracemalloc
import warnings
from pathlib import Path
from typing import Any

import pytest

from ptn.core.errors import PtnError
from ptn.json.strict import MAX_JSON_BYTES
from ptn.llm import HfConfigWarning, from_hf_config
from tests.test_llm import MISTRAL

GEMMA3 = {"model_type": "gemma3_text", "num_hidden_layers": 6}


def derive(config: dict[str, Any]) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", HfConfigWarning)
        return from_hf_config(config)


def test_a_huge_config_file_is_refused_after_reading_one_byte_past_the_cap(
    tmp_path: Path,
) -> None:
    """A config.json of 8 times the JSON cap (sparse: no disk used) is never read whole."""
    path = tmp_path / "config.json"
    with open(path, "wb") as f:
        f.truncate(8 * MAX_JSON_BYTES)
    tracemalloc.start()
    try:
        with pytest.raises(PtnError) as caught:
            from_hf_config(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert caught.value.rule == "json-too-large"
    assert peak < 2 * MAX_JSON_BYTES


def test_a_config_file_that_is_not_an_object_points_at_the_document(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('"mistral"')
    with pytest.raises(PtnError) as caught:
        from_hf_config(path)
    assert (caught.value.rule, caught.value.pointer) == ("llm-config-invalid", "")


def test_every_unknown_layer_type_is_named_in_the_warning() -> None:
    kinds = ["chunked_attention", "linear_attention", "full_attention", "chunked_attention"]
    with pytest.warns(HfConfigWarning) as record:
        got = from_hf_config({**MISTRAL, "model_type": "gemma2", "layer_types": kinds})
    assert "get_windows" not in got
    (message,) = (str(w.message) for w in record)
    assert "layer_types holds 'chunked_attention', 'linear_attention')" in message


def test_rope_parameters_that_are_not_an_object_say_what_is_wanted() -> None:
    with pytest.raises(PtnError) as caught:
        derive({**MISTRAL, "rope_parameters": [1]})
    assert (caught.value.rule, caught.value.pointer) == ("llm-config-invalid", "/rope_parameters")
    assert caught.value.message == "rope_parameters = [1] is not an object"


def test_the_older_rope_scaling_key_type_is_rope_type() -> None:
    """transformers renames rope_scaling's ``type`` to ``rope_type``: so does ptn, so that a
    ``default`` type is no scaling, and a type that rope_parameters contradicts conflicts."""
    plain = derive({**MISTRAL, "rope_scaling": {"type": "default"}})
    assert not [k for k in plain if k.startswith("rope.scaling")]
    linear = derive({**MISTRAL, "rope_scaling": {"type": "linear", "factor": 2.0}})
    assert (linear["rope.scaling.type"], linear["rope.scaling.factor"]) == ("linear", 2.0)
    with pytest.raises(PtnError) as caught:
        derive(
            {
                **MISTRAL,
                "rope_scaling": {"type": "linear"},
                "rope_parameters": {"rope_type": "yarn"},
            }
        )
    assert (caught.value.rule, caught.value.pointer) == ("llm-config-conflict", "/rope_scaling")


def test_gemma3_local_rope_base_from_rope_parameters() -> None:
    """Per layer type (transformers 5): the sliding layers' base is read from there, not
    taken from the class default (10000.0), and must agree with the older field."""
    params = {
        "full_attention": {"rope_type": "default", "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 2e4},
    }
    got = derive({**GEMMA3, "rope_parameters": params})
    assert (got["rope.theta"], got["rope.local_theta"]) == (1e6, 2e4)
    default = derive(GEMMA3)
    assert (default["rope.theta"], default["rope.local_theta"]) == (1e6, 1e4)
    with pytest.raises(PtnError) as caught:
        derive({**GEMMA3, "rope_parameters": params, "rope_local_base_freq": 1e4})
    assert (caught.value.rule, caught.value.pointer) == (
        "llm-config-conflict",
        "/rope_local_base_freq",
    )


def test_the_older_private_pattern_field_sets_the_period() -> None:
    """Gemma 3 configs saved before ``sliding_window_pattern`` spell it with an underscore."""
    windows = derive({**GEMMA3, "_sliding_window_pattern": 3})["get_windows"]
    assert windows == [4096, 4096, 0, 4096, 4096, 0]
    assert derive(GEMMA3)["get_windows"] == [4096] * 5 + [0]


def test_geometry_left_out_says_which_fields_are_missing() -> None:
    config = {k: v for k, v in MISTRAL.items() if k != "hidden_size"}
    with pytest.warns(HfConfigWarning) as record:
        got = from_hf_config(config)
    assert "get_n_caches" not in got
    assert "(no head_dim, and no hidden_size and num_attention_heads)" in str(record[0].message)


def test_a_layer_types_list_of_the_wrong_length_says_both_counts() -> None:
    with pytest.raises(PtnError) as caught:
        derive({**MISTRAL, "model_type": "gemma2", "layer_types": ["full_attention"] * 3})
    assert caught.value.message == (
        "layer_types and num_hidden_layers disagree: 3 layer types for 4 layers; fix one of them"
    )


def test_long_values_are_shown_cut_to_sixty_characters() -> None:
    name = "x" * 100
    with pytest.warns(HfConfigWarning) as record:
        from_hf_config({**MISTRAL, "model_type": name})
    shown = "'" + "x" * 56 + "..."
    assert str(record[0].message).startswith(f"model_type {shown} is not in ptn.llm's table")


def test_warnings_point_at_the_caller() -> None:
    """Under mutmut this fails whatever the mutant (its trampoline adds a frame), so
    ``[tool.mutmut]`` deselects it; the pinned mutant run keeps it."""
    with pytest.warns(HfConfigWarning) as record:
        from_hf_config({**MISTRAL, "model_type": "brand_new"})
    assert {w.filename for w in record} == {__file__}


def test_qwen2_without_use_sliding_window_has_no_sliding_layers() -> None:
    """Its class default is False: a sliding_window alone does not make layers slide."""
    got = derive({**MISTRAL, "model_type": "qwen2"})
    assert got["get_windows"] == [0] * 4
