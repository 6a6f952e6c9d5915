"""Parse + validate a 1,000-name metadata.json: ptn vs jsonschema vs jsonschema-rs.

    python bench/bench_metadata.py [--names 1000] [--repeat 2000]

All timings are medians measured in this run (these machines are noisy); the
ratios are what to compare. The baseline is jsonschema-rs validating the output
of json.loads (so it includes parsing, like ours). ptn does more: strict JSON
(duplicates, token kinds, int64, finite floats) and the cross-field rules.

A second table validates the same names as a Python dict, through the generated
pydantic model (``PtnMetadata.model_validate``) and through ``Metadata(...)``; the
model's ratio to ``Metadata`` is the figure to keep at or below 2x (issue 17).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import jsonschema
import jsonschema_rs

from ptn import Metadata, PtnMetadata
from ptn.core.resources import load_schema


def names_document(names: int) -> dict[str, object]:
    """Realistic mix: the well-known LLM names plus generic values of every kind."""
    doc: dict[str, object] = {
        "get_max_context_len": 4096, "get_vocab_size": 32000, "get_bos_id": 1,
        "get_eos_ids": [2], "use_kv_cache": True, "get_n_caches": 4,
        "get_kv_heads": [8] * 4, "get_head_dims": [64] * 4, "get_windows": [512, 0, 512, 0],
    }  # fmt: skip
    kinds: list[Callable[[int], object]] = [
        lambda i: i,
        lambda i: i / 7,
        lambda i: f"value {i}",
        lambda i: i % 2 == 0,
        lambda i: [i, i + 1, i + 2],
        lambda i: [0.5 * i, 1.5],
        lambda i: ["a", "b"],
    ]
    i = 0
    while len(doc) < names:
        doc[f"general.key_{i}"] = kinds[i % len(kinds)](i)
        i += 1
    return doc


def document(names: int) -> bytes:
    """``names_document`` as JSON bytes."""
    return json.dumps(names_document(names)).encode()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    data = document(args.names)
    schema = load_schema("metadata")
    rs = jsonschema_rs.validator_for(schema)
    py = jsonschema.Draft202012Validator(schema)
    assert rs.is_valid(json.loads(data)) and py.is_valid(json.loads(data))
    rows = {
        "json.loads alone": median_ms(lambda: json.loads(data), args.repeat),
        "jsonschema-rs (json.loads + validate)": median_ms(
            lambda: rs.is_valid(json.loads(data)), args.repeat
        ),
        "ptn Metadata.parse (strict parse + validate)": median_ms(
            lambda: Metadata.parse(data), args.repeat
        ),
        "jsonschema Draft202012Validator": median_ms(
            lambda: py.is_valid(json.loads(data)), max(5, args.repeat // 200)
        ),
    }
    base = rows["jsonschema-rs (json.loads + validate)"]
    print(f"metadata.json: {args.names} names, {len(data):,} bytes; medians of {args.repeat} runs")
    print(f"{'':46} {'ms':>9} {'x jsonschema-rs':>16}")
    for name, ms in rows.items():
        print(f"{name:46} {ms:9.3f} {ms / base:16.2f}")
    print_model_rows(json.loads(data), args.repeat)


def print_model_rows(values: dict[str, object], repeat: int) -> None:
    """The generated model against Metadata on the same dict (every rule, both)."""
    model = PtnMetadata.model_validate(values)
    assert Metadata(model) == Metadata(values)
    rows = {
        "ptn Metadata(dict)": median_ms(lambda: Metadata(values), repeat),
        "PtnMetadata.model_validate(dict)": median_ms(
            lambda: PtnMetadata.model_validate(values), repeat
        ),
        "ptn Metadata(PtnMetadata) (what save does)": median_ms(lambda: Metadata(model), repeat),
    }
    base = rows["ptn Metadata(dict)"]
    print(f"\n{'the same names as a dict':46} {'ms':>9} {'x Metadata':>16}")
    for name, ms in rows.items():
        print(f"{name:46} {ms:9.3f} {ms / base:16.2f}")


if __name__ == "__main__":
    main()
