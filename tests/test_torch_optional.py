"""torch is optional: never imported by validation or the CLI, used only when asked."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptn
from ptn.testing.hostile import PROGRAM  # the smallest real program: binds nothing

TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_validation_and_the_cli_import_neither_numpy_nor_pydantic() -> None:
    """What a pre-commit hook pays at start-up: the validation path stays light."""
    code = (
        "import sys, ptn\n"
        f"assert ptn.validate({str(TINY)!r}).valid\n"
        "from ptn.cli import main, runner\n"
        "heavy = {'numpy', 'pydantic', 'ml_dtypes', 'multiprocessing'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_validate_load_and_cli_never_import_torch() -> None:
    """TINY's program has no call node: deep validation has no operator to check."""
    code = (
        "import sys, ptn\n"
        f"ptn.validate({str(TINY)!r}, deep=True)\n"
        f"with ptn.load({str(TINY)!r}) as p: p.constants['norm.weight']\n"
        f"ptn.numpy.load_file({str(TINY)!r})\n"
        "ptn.torch.load_file, ptn.torch.save_file  # the module itself does not need torch\n"
        "from ptn.cli import main\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (optional)")
def test_no_validation_imports_torch(tmp_path: Path) -> None:
    """The operator rules read ptn's operator table, not torch: deep and fast validation of
    a program with call nodes, ptn.load and repack never import torch, installed or not."""
    mlp = Path(__file__).resolve().parent / "fixtures" / "real" / "mlp.ptn"
    out = tmp_path / "repacked.ptn"
    quiet = (
        "import sys, ptn\n"
        f"assert ptn.validate({str(mlp)!r}, fast=True).valid\n"
        f"with ptn.load({str(mlp)!r}) as p: p.constants['layers.0.weight']\n"
        f"ptn.repack({str(mlp)!r}, {str(out)!r})\n"
        f"assert ptn.validate({str(mlp)!r}).valid\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", quiet], check=True)


@pytest.mark.skipif(HAS_TORCH, reason="torch is installed here")
def test_to_torch_without_torch_says_how_to_get_it() -> None:
    with ptn.load(TINY) as pkg, pytest.raises(ImportError, match="pip install torch"):
        pkg.to_torch()


@pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (optional)")
def test_to_torch_shares_memory_and_keeps_bfloat16() -> None:  # pragma: no cover
    import torch

    with ptn.load(TINY) as pkg:
        tensors = pkg.to_torch()
        assert tensors["output.weight"].dtype == torch.bfloat16
        assert tensors["norm.weight"].tolist() == [1.0] * 16


def test_numpy_load_file_gives_zero_copy_arrays_equal_to_the_package() -> None:
    arrays = ptn.numpy.load_file(TINY)
    with ptn.load(TINY) as pkg:
        assert sorted(arrays) == pkg.keys()
        for key, array in arrays.items():
            assert isinstance(array, np.ndarray) and not array.flags.owndata  # a view
            assert array.dtype == pkg.constants[key].dtype
            assert array.tobytes() == pkg.constants[key].tobytes()
    assert str(arrays["output.weight"].dtype) == "bfloat16"


def test_numpy_save_file_round_trips_and_checks_types(tmp_path: Path) -> None:
    arrays = ptn.numpy.load_file(TINY)
    with ptn.load(TINY) as pkg:
        program = bytes(pkg.program)  # binds every constant, and mutates the caches
    path = tmp_path / "copy.ptn"
    ptn.numpy.save_file(arrays, path, program=program, metadata={"a": 1})
    again = ptn.numpy.load_file(path)
    assert {k: a.tobytes() for k, a in again.items()} == {k: a.tobytes() for k, a in arrays.items()}
    assert ptn.validate(path).findings == []
    with ptn.load(path) as pkg:
        assert pkg.aliases == {"tok_embeddings.weight": "output.weight"}  # the caches: not
    with pytest.raises(TypeError, match=r"tensors\['w'\] is a list"):
        ptn.numpy.save_file({"w": [1.0]}, tmp_path / "x.ptn", program=PROGRAM)
    with pytest.raises(TypeError, match="tensors must be a mapping"):
        ptn.numpy.save_file([np.zeros(2)], tmp_path / "x.ptn", program=PROGRAM)  # type: ignore[arg-type]
    with pytest.raises(TypeError):  # program is keyword-only: it is not safetensors' metadata
        ptn.numpy.save_file(arrays, tmp_path / "x.ptn", PROGRAM)  # type: ignore[misc]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.ptn"]


def test_torch_load_file_is_to_torch_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from ptn.package.read import Package

    given: dict[str, object] = {"w": object()}
    monkeypatch.setattr(Package, "to_torch", lambda self: given)
    assert ptn.torch.load_file(TINY) is given  # no copy made on the way: the mapping's own


def test_torch_load_file_and_save_file(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    tensors = ptn.torch.load_file(TINY)
    assert all(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in tensors.values())
    assert tensors["output.weight"].dtype == torch.bfloat16
    assert tensors["norm.weight"].tolist() == [1.0] * 16
    assert ptn.torch.load_file(TINY, device=torch.device("cpu")).keys() == tensors.keys()
    moved = ptn.torch.load_file(TINY, device="meta")
    assert {t.device.type for t in moved.values()} == {"meta"}
    assert {k: t.shape for k, t in moved.items()} == {k: t.shape for k, t in tensors.items()}
    path = tmp_path / "t.ptn"
    ptn.torch.save_file(tensors, path, program=PROGRAM, metadata={"general.name": "t"})
    again = ptn.torch.load_file(path)
    assert sorted(again) == sorted(tensors)
    assert all(torch.equal(again[k].float(), tensors[k].float()) for k in tensors)
    with ptn.load(path) as pkg:
        assert pkg.metadata_str("general.name") == "t"
    with pytest.raises(TypeError, match=r"not a torch\.Tensor"):
        ptn.torch.save_file({"w": np.zeros(2)}, tmp_path / "x.ptn", program=PROGRAM)


def _says_why_and_how(message: str) -> None:
    """The missing-program message: why a package needs a program, and the two ways to one."""
    assert message.startswith("no program given: a .ptn needs one")
    assert "which constants each method binds" in message  # why
    assert "ptn.executorch.save(torch.export.export(model, example_inputs), path)" in message
    assert "program=" in message and "bytes(pkg.program)" in message
    assert "ptn.testing.program_for(tensors)" in message


def test_save_file_without_a_program_says_why_and_how(tmp_path: Path) -> None:
    """What a safetensors user types first: a TypeError (the caller's mistake, not a rule of
    the spec broken by a file) whose message names both ways, each of which then works."""
    arrays = {"w": np.ones((2, 3), np.float32)}
    out = tmp_path / "x.ptn"
    with pytest.raises(TypeError) as raised:
        ptn.numpy.save_file(arrays, out)
    _says_why_and_how(str(raised.value))
    with pytest.raises(TypeError) as raised:
        ptn.save(out, None, arrays)  # type: ignore[arg-type]
    _says_why_and_how(str(raised.value))
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert callable(ptn.executorch.save)  # the first way (tests/test_readme.py runs it)
    from ptn.testing import program_for

    ptn.numpy.save_file(arrays, out, program=program_for(arrays))  # the second way
    assert ptn.validate(out).findings == []


def test_torch_save_file_without_a_program_says_why_and_how(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as raised:
        ptn.torch.save_file({"w": torch.ones(2)}, tmp_path / "x.ptn")
    _says_why_and_how(str(raised.value))
    assert list(tmp_path.iterdir()) == []
