"""The generated ``ptn.PtnMetadata`` drives writing and loading, and knows every rule.

Ways in (save, rewrite/edit_metadata, ``metadata set --from-json``, ``Metadata(...)``),
the way out (``.model``: plain values, typed and described attributes), the
x-ptn-rules as generated validators, and pydantic kept off the validation path.
The differential against ``Metadata`` is in tests/test_differential.py.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from pydantic import ValidationError

import ptn
from ptn.core.errors import PtnError
from ptn.core.names import METADATA
from ptn.core.resources import load_schema
from ptn.metadata.document import Metadata
from ptn.testing.hostile import PROGRAM  # the smallest real program: binds nothing
from ptn.testing.strategies import valid_metadata
from ptn_generated import metadata_model
from ptn_generated.metadata_model import PtnMetadata

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
SCHEMA = load_schema("metadata")
SCALARS = (bool, int, float, str)


def stored(path: Path) -> bytes:
    with zipfile.ZipFile(path) as zf:
        return zf.read(METADATA)


def plain(value: Any) -> bool:
    return type(value) in SCALARS or (
        type(value) is list and all(type(item) in SCALARS for item in value)
    )


def test_ptn_exports_the_generated_model() -> None:
    assert ptn.PtnMetadata is PtnMetadata
    assert "PtnMetadata" in ptn.__all__


def test_save_takes_the_model_with_extension_names_and_kinds(tmp_path: Path) -> None:
    model = PtnMetadata(
        get_vocab_size=64,
        get_eos_ids=[2],
        **{"general.name": "tiny", "rope.theta": 2.0, "n": 2, "scales": [1, 2.5]},
    )
    path = tmp_path / "m.ptn"
    ptn.save(path, PROGRAM, metadata=model)
    data = stored(path)
    assert data == (
        b'{"general.name":"tiny","get_eos_ids":[2],"get_vocab_size":64,"n":2,'
        b'"rope.theta":2.0,"scales":[1.0,2.5]}\n'
    )  # a float given 2.0 stays a float token, an int stays an int
    again = ptn.read_metadata(path)
    assert again is not None and again.model == model
    assert again.kind("rope.theta") == "float" and again.kind("n") == "int"


def test_rewrite_and_edit_metadata_take_the_model(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    path.write_bytes(TINY.read_bytes())
    before = ptn.read_metadata(path)
    assert before is not None
    ptn.rewrite_metadata(path, before.model.model_copy(update={"get_max_context_len": 64}))
    after = ptn.read_metadata(path)
    assert after is not None and after.to_dict() == {**before.to_dict(), "get_max_context_len": 64}
    written = ptn.edit_metadata(
        path, lambda old: PtnMetadata.model_validate({**old, "general.name": "edited"})
    )
    assert written is not None and written["general.name"] == "edited"
    assert ptn.read_metadata(path) == written


def test_model_is_validated_again_on_the_way_in(tmp_path: Path) -> None:
    """A model built without validation (model_construct) still meets every rule."""
    bad = PtnMetadata.model_construct(get_vocab_size=5, get_eos_ids=[5])
    with pytest.raises(PtnError) as raised:
        Metadata(bad)
    assert raised.value.rule == "llm-token-id-out-of-range"
    path = tmp_path / "m.ptn"
    path.write_bytes(TINY.read_bytes())
    with pytest.raises(PtnError, match="get_eos_ids"):
        ptn.rewrite_metadata(path, bad)
    assert path.read_bytes() == TINY.read_bytes()
    with pytest.raises(TypeError, match=r"ptn\.PtnMetadata"):
        ptn.save(tmp_path / "x.ptn", PROGRAM, metadata=[("a", 1)])  # type: ignore[arg-type]


@pytest.mark.slow
def test_metadata_set_from_json_takes_the_models_json(tmp_path: Path) -> None:
    before = ptn.read_metadata(TINY)
    assert before is not None
    model = before.model.model_copy(update={"get_max_context_len": 64})
    assert "general.name" in model.model_extra  # type: ignore[operator]
    src = tmp_path / "m.json"
    src.write_text(model.model_dump_json())  # absent names are left out, not null
    out = tmp_path / "o.ptn"
    command = ["metadata", "set", str(TINY), "--from-json", str(src), "-o", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "ptn.cli", *command], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    after = ptn.read_metadata(out)
    assert after is not None and after.model == model and after == Metadata(model)


@pytest.mark.slow
@given(valid_metadata())
def test_model_reads_back_plain_values_and_kinds_survive(doc: dict[str, Any]) -> None:
    meta = Metadata(doc)
    model = meta.model
    assert model.model_dump() == meta.to_dict()
    assert all(plain(getattr(model, name)) for name in meta if name in PtnMetadata.model_fields)
    assert all(plain(value) for value in (model.model_extra or {}).values())
    assert Metadata(model) == meta  # Metadata equality tells 1, 1.0 and True apart


def test_package_metadata_model_gives_plain_lists() -> None:
    with ptn.load(TINY) as pkg:
        assert pkg.metadata is not None
        windows = pkg.metadata.model.get_windows
    assert windows == [64, 0] and all(type(w) is int for w in windows)
    meta = ptn.read_metadata(TINY)
    assert meta is not None and meta.model.model_extra == {
        name: meta[name] for name in meta if name not in SCHEMA["properties"]
    }


def test_well_known_names_are_attributes_with_the_schema_descriptions() -> None:
    """What an IDE completes and shows: the fields, their descriptions and docstrings."""
    props = SCHEMA["properties"]
    assert list(PtnMetadata.model_fields) == list(props)
    assert {n: f.description for n, f in PtnMetadata.model_fields.items()} == {
        n: s["description"] for n, s in props.items()
    }
    (cls,) = [
        node
        for node in ast.parse(inspect.getsource(metadata_model)).body
        if isinstance(node, ast.ClassDef) and node.name == "PtnMetadata"
    ]
    docstrings = {
        field.target.id: doc.value.value
        for field, doc in zip(cls.body, cls.body[1:], strict=False)
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
        if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    }
    assert docstrings == {n: s["description"] for n, s in props.items()}
    assert Metadata.model.fget.__annotations__["return"] == "PtnMetadata"  # type: ignore[attr-defined]


def test_every_x_ptn_rule_is_a_generated_model_validator() -> None:
    validators = PtnMetadata.__pydantic_decorators__.model_validators
    for rule in SCHEMA["x-ptn-rules"]:
        method = "_" + rule["id"].replace("-", "_")
        assert validators[method].info.mode == "after"
        assert f"check_rule(self, {{'id': {rule['id']!r}" in inspect.getsource(
            getattr(PtnMetadata, method)
        )


def test_a_rule_violation_is_a_validation_error_typed_by_the_rule_id() -> None:
    with pytest.raises(ValidationError) as raised:
        PtnMetadata(get_vocab_size=64, get_eos_ids=[99])
    (error,) = raised.value.errors()
    assert error["type"] == "llm-token-id-out-of-range"
    assert error["msg"] == "get_eos_ids[0] = 99 is not below get_vocab_size = 64"
    assert error["ctx"]["pointer"] == "/get_eos_ids/0"


def test_import_and_validation_never_import_pydantic() -> None:
    code = (
        "import sys, ptn\n"
        f"assert ptn.validate({str(TINY)!r}).valid\n"
        f"meta = ptn.read_metadata({str(TINY)!r})\n"
        f"with ptn.load({str(TINY)!r}) as pkg: pkg.metadata_ints('get_windows')\n"
        "ptn.Metadata.parse(b'{}'), ptn.Metadata({'a': 1})\n"
        "from ptn.cli import main\n"
        "assert 'pydantic' not in sys.modules, 'pydantic was imported'\n"
        "assert meta.model.get_windows == [64, 0] and 'pydantic' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
