"""LLM metadata (spec.md 9.3) derived from a Hugging Face ``config.json``.

Per-layer windows, KV geometry and token ids sit in every model's config, spelled
differently per architecture; copying them by hand is how a wrong window reaches a
runtime and silently degrades generation. ``from_hf_config`` maps them by one table
(``FAMILIES`` for the windows, ``SCALARS`` for the rest; docs/hf-config.md shows both
with their sources), validates the result with ``ptn.Metadata`` and returns it.
Fields that disagree raise ``llm-config-conflict``; a field of the wrong type raises
``llm-config-invalid``; whatever cannot be derived is left out with a
``HfConfigWarning``.

Size (~450 lines): the tables and the derivation that reads them stay together;
split per family, each piece would read the config again.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ptn.core.buffers import open_regular
from ptn.core.errors import PtnError, PtnIOError
from ptn.json.strict import MAX_JSON_BYTES, parse_json
from ptn.metadata.document import Metadata


class HfConfigWarning(UserWarning):
    """A name could not be derived from the config (it is left out), or the architecture
    is not in the table and only its generic fields were read."""


WindowRule = Literal["none", "all", "qwen2", "pattern"]


@dataclass(frozen=True)
class Family:
    """How one ``model_type`` chooses its sliding-window layers.

    ``none``: no layer slides. ``all``: every layer slides when ``sliding_window`` is
    set. ``qwen2``: with ``use_sliding_window``, layers from ``max_window_layers`` on
    slide. ``pattern``: every ``period``-th layer (1-based) is full attention, the rest
    slide; ``sliding_window_pattern`` overrides the period. ``layer_types``, where the
    config class reads it (``reads_layer_types``), decides per layer and must agree
    with any field stated above. ``defaults`` are the transformers class defaults a
    saved config may omit (nested sub-configs are saved as a diff against them).
    """

    windows: WindowRule
    doc: str
    period: int = 0
    reads_layer_types: bool = True
    defaults: Mapping[str, Any] = field(default_factory=dict)


_QWEN_DEFAULTS = {"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28}
_GEMMA3_TEXT_DEFAULTS = {
    "vocab_size": 262208,
    "hidden_size": 2304,
    "num_hidden_layers": 26,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "head_dim": 256,
    "max_position_embeddings": 131072,
    "bos_token_id": 2,
    "eos_token_id": 1,
    "sliding_window": 4096,
    "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0,
    "query_pre_attn_scalar": 256,
}
_GEMMA3 = Family("pattern", "gemma3", period=6, defaults=_GEMMA3_TEXT_DEFAULTS)

# model_type -> window rule; doc is the transformers model_doc page (and configuration_*.py).
FAMILIES: dict[str, Family] = {
    "llama": Family("none", "llama", reads_layer_types=False),
    "gemma": Family("none", "gemma", reads_layer_types=False),
    "mistral": Family("all", "mistral", reads_layer_types=False),
    "mixtral": Family("all", "mixtral", reads_layer_types=False),
    "phi3": Family("all", "phi3", reads_layer_types=False),
    "starcoder2": Family("all", "starcoder2", reads_layer_types=False),
    "qwen2": Family("qwen2", "qwen2", defaults=_QWEN_DEFAULTS),
    "qwen3": Family("qwen2", "qwen3", defaults=_QWEN_DEFAULTS),
    "gemma2": Family("pattern", "gemma2", period=2),
    "gemma3_text": _GEMMA3,
    "gemma3": _GEMMA3,
    "cohere2": Family("pattern", "cohere2", period=4),
    "gpt_oss": Family("pattern", "gpt_oss", period=2),
}

ScalarKind = Literal["count", "token", "tokens", "float", "str"]

# Names copied from one config field: name -> (field, kind).
SCALARS: dict[str, tuple[str, ScalarKind]] = {
    "get_vocab_size": ("vocab_size", "count"),
    "get_bos_id": ("bos_token_id", "token"),
    "get_eos_ids": ("eos_token_id", "tokens"),
    "get_max_context_len": ("max_position_embeddings", "count"),
    "general.architecture": ("model_type", "str"),
    "attention.logit_softcapping": ("attn_logit_softcapping", "float"),
    "attention.query_pre_attn_scalar": ("query_pre_attn_scalar", "float"),
    "output.logit_softcapping": ("final_logit_softcapping", "float"),
    "rope.partial_rotary_factor": ("partial_rotary_factor", "float"),
}

_GEOMETRY = ("get_n_caches", "get_kv_heads", "get_head_dims", "get_windows")
_LAYER_TYPES = {"full_attention": False, "sliding_attention": True}
# A config with none of these fields (and no layer_types) has no sliding window to miss.
_WORDS = ("window", "sliding", "chunk", "local")
MAX_LAYERS = 1 << 16
"""The most layers a config may claim. Four lists of one entry per layer are built from
this one number, so a 130-byte config could ask for gigabytes (10^9 layers); published
models have at most a few hundred."""
_WHY_MAX_LAYERS = "the per-layer lists are built from it; models have a few hundred layers"
_SHORT = 60


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 3] + "..."


class _Underived(Exception):
    """Cache geometry cannot be derived; the message says why (it becomes a warning)."""


class _Config:
    """The fields of one config. ``None`` is no value, as in transformers; an absent field
    takes the family's default (``get``), but only present fields can conflict (``has``)."""

    def __init__(self, raw: Mapping[str, Any], nested: set[str], defaults: Mapping[str, Any]):
        self.raw = raw
        self.nested = nested
        self.defaults = defaults

    def pointer(self, key: str) -> str:
        return f"/text_config/{key}" if key in self.nested else f"/{key}"

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def get(self, key: str) -> Any:
        return self.raw[key] if key in self.raw else self.defaults.get(key)

    def invalid(self, key: str, wanted: str) -> PtnError:
        return PtnError(
            "llm-config-invalid",
            f"{key} = {_show(self.get(key))} is not {wanted}",
            pointer=self.pointer(key),
        )

    def conflict(self, key: str, other: str, why: str) -> PtnError:
        return PtnError(
            "llm-config-conflict",
            f"{key} and {other} disagree: {why}; fix one of them",
            pointer=self.pointer(key),
        )

    def count(self, key: str, minimum: int = 1, maximum: int | None = None) -> int | None:
        value = self.get(key)
        if value is not None and (type(value) is not int or value < minimum):
            raise self.invalid(key, f"an integer >= {minimum}")
        if value is not None and maximum is not None and value > maximum:
            raise self.invalid(key, f"at most {maximum} ({_WHY_MAX_LAYERS})")
        return value

    def counts(self, key: str, minimum: int) -> list[int] | None:
        """An integer or a list of integers, as a list."""
        value = self.get(key)
        if value is None:
            return None
        items = value if isinstance(value, list) else [value]
        if any(type(v) is not int or v < minimum for v in items):
            raise self.invalid(key, f"an integer >= {minimum} or a list of them")
        return items

    def number(self, key: str) -> float | None:
        value = self.get(key)
        if value is None:
            return None
        if type(value) not in (int, float) or not math.isfinite(value):
            raise self.invalid(key, "a finite number")
        return float(value)

    def text(self, key: str) -> str | None:
        value = self.get(key)
        if value is not None and not isinstance(value, str):
            raise self.invalid(key, "a string")
        return value

    def flag(self, key: str) -> bool:
        value = self.get(key)
        if value is not None and not isinstance(value, bool):
            raise self.invalid(key, "a bool")
        return bool(value)


def _scalar(cfg: _Config, key: str, kind: ScalarKind) -> Any:
    if kind == "count":
        return cfg.count(key)
    if kind == "token":
        return cfg.count(key, minimum=0)
    if kind == "tokens":
        ids = list(dict.fromkeys(cfg.counts(key, minimum=0) or ()))  # in order, once each
        return ids or None
    if kind == "float":
        return cfg.number(key)
    return cfg.text(key)


def _read(config: Mapping[str, Any] | str | os.PathLike[str]) -> Mapping[str, Any]:
    if isinstance(config, Mapping):
        return config
    if not isinstance(config, (str, os.PathLike)):
        raise TypeError(f"config must be a mapping or a path, not {type(config).__name__}")
    path = os.path.join(config, "config.json") if os.path.isdir(config) else config
    fd = open_regular(path)
    try:
        with os.fdopen(fd, "rb") as file:
            data = file.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise PtnIOError(f"cannot read {os.fspath(path)!r}: {exc}", errno=exc.errno) from None
    value = parse_json(data)
    if not isinstance(value, dict):
        raise PtnError("llm-config-invalid", "a config.json holds a JSON object", pointer="")
    return value


# What a multimodal config keeps for generation at its top level, read there when its
# text_config does not state it (gemma-3-4b-it's eos_token_id [1, 106]); model_type names
# the family when text_config has none.
_TOP_LEVEL = ("model_type", "bos_token_id", "eos_token_id")


def _flatten(top: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """The fields of the language model, and those of them read from ``text_config``.

    With a ``text_config``, the model's fields are that config's alone, as transformers'
    ``get_text_config()`` holds them (docs/hf-config.md): an explicit null there is no
    value, and an absent field takes the family's default, never the top level's value
    (a top-level ``sliding_window`` is not read by the text model). Only ``_TOP_LEVEL``
    comes from the top level, when the text config does not give it.
    """
    text = top.get("text_config")
    if not isinstance(text, Mapping):
        return dict(top), set()
    merged = dict(text)
    for key in _TOP_LEVEL:
        if merged.get(key) is None and top.get(key) is not None:
            merged[key] = top[key]
    return merged, {k for k in merged if k in text and merged[k] is text[k]}


def _layer_flags(cfg: _Config, n: int) -> list[bool] | None:
    """``layer_types`` as sliding flags, or None when absent."""
    types = cfg.get("layer_types")
    if types is None:
        return None
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise cfg.invalid("layer_types", "a list of strings")
    if len(types) != n:
        raise cfg.conflict(
            "layer_types", "num_hidden_layers", f"{len(types)} layer types for {n} layers"
        )
    unknown = sorted({t for t in types if t not in _LAYER_TYPES})
    if unknown:
        raise _Underived(f"layer_types holds {', '.join(map(_show, unknown))}")
    return [_LAYER_TYPES[t] for t in types]


def _pattern(period: int, n: int) -> list[bool]:
    return [(i + 1) % period != 0 for i in range(n)]


def _stated(cfg: _Config, family: Family, n: int) -> tuple[list[bool], str] | None:
    """Sliding flags stated by the family's own fields, and the field that states them."""
    if family.windows == "none":
        return [False] * n, "model_type"
    if family.windows == "all":
        return [cfg.has("sliding_window")] * n, "sliding_window"
    if family.windows == "qwen2" and cfg.has("use_sliding_window"):
        on = cfg.flag("use_sliding_window") and cfg.get("sliding_window") is not None
        first = cfg.count("max_window_layers", minimum=0) or 0
        return [on and i >= first for i in range(n)], "use_sliding_window"
    if family.windows == "pattern":
        for key in ("sliding_window_pattern", "_sliding_window_pattern"):
            if cfg.has(key):
                return _pattern(cfg.count(key) or 1, n), key
    return None


def _sliding_flags(cfg: _Config, family: Family | None, n: int) -> list[bool]:
    flags = _layer_flags(cfg, n)
    if family is None:
        hints = sorted(
            k for k, v in cfg.raw.items() if v not in (None, False) and any(w in k for w in _WORDS)
        )
        if flags is None and hints:
            raise _Underived(f"an unknown architecture with {', '.join(hints)}")
        return flags or [False] * n
    stated = _stated(cfg, family, n)
    if flags is not None and stated is not None and flags != stated[0]:
        i = next(i for i, (a, b) in enumerate(zip(flags, stated[0], strict=True)) if a != b)
        kind = ("full", "sliding")
        raise cfg.conflict(
            "layer_types",
            stated[1],
            f"layer {i} is {kind[flags[i]]} attention by layer_types, {kind[stated[0][i]]} "
            f"by {stated[1]}",
        )
    if flags is not None and family.reads_layer_types:
        return flags
    if stated is not None:
        return stated[0]
    return _pattern(family.period, n) if family.windows == "pattern" else [False] * n


def _geometry(cfg: _Config, family: Family | None) -> dict[str, Any]:
    n = cfg.count("num_hidden_layers", maximum=MAX_LAYERS)  # before any list is built
    if n is None:
        raise _Underived("no num_hidden_layers")
    heads = cfg.count("num_attention_heads")
    if isinstance(cfg.get("num_key_value_heads"), list):
        kv = cfg.counts("num_key_value_heads", minimum=1) or []
        if len(kv) != n:
            raise cfg.conflict(
                "num_key_value_heads", "num_hidden_layers", f"{len(kv)} entries for {n} layers"
            )
    else:
        one = cfg.count("num_key_value_heads") or heads
        if one is None:
            raise _Underived("no num_key_value_heads or num_attention_heads")
        kv = [one] * n
    head_dim = cfg.count("head_dim")
    if head_dim is None:
        hidden = cfg.count("hidden_size")
        if heads is None or hidden is None:
            raise _Underived("no head_dim, and no hidden_size and num_attention_heads")
        if hidden < heads:
            raise cfg.invalid("hidden_size", f"at least num_attention_heads ({heads})")
        head_dim = hidden // heads
    if cfg.flag("use_bidirectional_attention"):
        raise _Underived("use_bidirectional_attention is set (an encoder, no KV cache)")
    flags = _sliding_flags(cfg, family, n)
    window = cfg.count("sliding_window") if any(flags) else 0
    if window is None:
        raise cfg.conflict("sliding_window", "layer_types", "sliding layers need a window")
    return {
        "get_n_caches": n,
        "get_kv_heads": kv,
        "get_head_dims": [head_dim] * n,
        "get_windows": [window if f else 0 for f in flags],
    }


def _theta(cfg: _Config, key: str, nested: Any) -> float | None:
    """A RoPE base from its older top-level field or from rope_parameters; both must agree."""
    if nested is not None and (type(nested) not in (int, float) or not math.isfinite(nested)):
        raise cfg.invalid("rope_parameters", "an object with a finite rope_theta")
    if cfg.has(key):
        theta = cfg.number(key)
        if nested is not None and theta != nested:
            raise cfg.conflict(key, "rope_parameters", f"{theta} against {_show(nested)}")
        return theta
    return float(nested) if nested is not None else cfg.number(key)


def _rope(cfg: _Config) -> tuple[dict[str, Any], list[str]]:
    """rope.theta, rope.local_theta and rope.scaling.* of the full-attention layers, from
    rope_theta/rope_scaling or the newer rope_parameters (per layer type for Gemma 3)."""
    params = cfg.get("rope_parameters") or {}
    if not isinstance(params, Mapping):
        raise cfg.invalid("rope_parameters", "an object")
    local: Mapping[str, Any] = {}
    if isinstance(params.get("full_attention"), Mapping):
        local = params.get("sliding_attention") or {}
        params = params["full_attention"]
    older = cfg.get("rope_scaling") or {}
    if not isinstance(older, Mapping) or not isinstance(local, Mapping):
        raise cfg.invalid("rope_scaling", "an object")
    older = {("rope_type" if k == "type" else k): v for k, v in older.items()}
    newer = {k: v for k, v in params.items() if k != "rope_theta"}
    if older and any(k in newer and newer[k] != v for k, v in older.items()):
        raise cfg.conflict("rope_scaling", "rope_parameters", "they give other scaling values")
    out: dict[str, Any] = {}
    for name, key, nested in (
        ("rope.theta", "rope_theta", params.get("rope_theta")),
        ("rope.local_theta", "rope_local_base_freq", local.get("rope_theta")),
    ):
        theta = _theta(cfg, key, nested)
        if theta is not None:
            out[name] = theta
    skipped = []
    for key, value in {**newer, **older}.items():
        if value is None or (key == "rope_type" and value == "default"):
            continue
        name = _ROPE_NAMES.get(key, f"rope.scaling.{key}")
        try:
            out.update(Metadata({name: value}).to_dict())
        except PtnError:
            skipped.append(f"rope scaling entry {_show(key)}: not a metadata name and value")
    return out, skipped


_ROPE_NAMES = {
    "rope_type": "rope.scaling.type",
    "partial_rotary_factor": "rope.partial_rotary_factor",
}


def from_hf_config(
    config: Mapping[str, Any] | str | os.PathLike[str],
    *,
    max_context_len: int | None = None,
) -> dict[str, Any]:
    """Well-known LLM metadata (and documented extension names) from a HF config.

    Args:
        config: a parsed ``config.json`` (a mapping, such as a transformers config's
            ``to_dict()``), its path, or a model directory holding it.
        max_context_len: the KV-cache capacity of the exported program; by default
            ``max_position_embeddings``, which a program's cache may well be smaller than.

    Returns the metadata as a dict, validated by ``ptn.Metadata``.

    Raises:
        PtnError: ``llm-config-conflict`` (two fields disagree), ``llm-config-invalid``
            (a field of the wrong type), ``json-*``/``ptn-io-error`` (reading the file),
            or the ``metadata-``/``llm-`` rule that the derived values break.

    Warns ``HfConfigWarning`` naming each well-known name it could not derive, and an
    unknown ``model_type``. docs/hf-config.md has the table.

    Examples:
        >>> from_hf_config({"model_type": "mistral", "num_hidden_layers": 2,
        ...     "num_attention_heads": 4, "hidden_size": 64, "sliding_window": 16,
        ...     "vocab_size": 100, "bos_token_id": 1, "eos_token_id": 2,
        ...     "max_position_embeddings": 256})["get_windows"]
        [16, 16]
    """
    if max_context_len is not None and (type(max_context_len) is not int or max_context_len < 1):
        raise ValueError(f"max_context_len must be a positive int, not {max_context_len!r}")
    raw, nested = _flatten(_read(config))
    model_type = raw.get("model_type")
    family = FAMILIES.get(model_type) if isinstance(model_type, str) else None
    cfg = _Config(raw, nested, family.defaults if family else {})
    if family is None:
        warnings.warn(
            f"model_type {_show(model_type)} is not in ptn.llm's table: only the generic "
            "fields were read; check get_windows against the model's documentation",
            HfConfigWarning,
            stacklevel=2,
        )
    out: dict[str, Any] = {}
    missing = []
    for name, (key, kind) in SCALARS.items():
        value = max_context_len if name == "get_max_context_len" else None
        value = _scalar(cfg, key, kind) if value is None else value
        if value is not None:
            out[name] = value
        elif name.startswith("get_"):
            missing.append(f"{name} (no {key})")
    try:
        out.update(_geometry(cfg, family))
    except _Underived as why:
        missing.append(f"{', '.join(_GEOMETRY)} ({why})")
    rope, skipped = _rope(cfg)
    out.update(rope)
    if missing or skipped:
        warnings.warn("not derived: " + "; ".join(missing + skipped), HfConfigWarning, stacklevel=2)
    return Metadata(out).to_dict()
