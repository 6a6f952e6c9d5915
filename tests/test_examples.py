"""The bundled examples are what examples/make_examples.py writes, byte for byte."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ptn

REPO = Path(__file__).resolve().parent.parent


def _module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "make_examples", REPO / "examples" / "make_examples.py"
    )
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_rewriting_examples_is_byte_identical(tmp_path: Path) -> None:
    written = _module().write_all(tmp_path / "examples", tmp_path / "invalid-examples")
    for path in written:
        committed = REPO / path.relative_to(tmp_path)
        assert committed.read_bytes() == path.read_bytes(), committed


def test_examples_are_valid_and_the_invalid_one_is_not() -> None:
    for path in (REPO / "examples").glob("*.ptn"):
        assert ptn.validate(path, deep=True).findings == []
    report = ptn.validate(REPO / "invalid-examples" / "bad-token-id.ptn")
    assert [f.rule for f in report.findings] == ["llm-token-id-out-of-range"]


def test_tiny_llm_contents() -> None:
    with ptn.load(REPO / "examples" / "tiny-llm.ptn") as pkg:
        assert pkg.aliases == {"tok_embeddings.weight": "output.weight"}
        assert pkg.metadata_ints("get_windows") == [64, 0]
        assert "kv_cache.v" in pkg.owner_keys()  # mutable: never deduplicated
        assert pkg.constant("tok_embeddings.weight").dtype == "BF16"
