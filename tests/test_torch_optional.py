"""torch is optional: never imported by validation or the CLI, used only when asked."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import ptn

TINY = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"
HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_validate_load_and_cli_never_import_torch() -> None:
    code = (
        "import sys, ptn\n"
        f"ptn.validate({str(TINY)!r}, deep=True)\n"
        f"with ptn.load({str(TINY)!r}) as p: p.constants['norm.weight']\n"
        "from ptn.cli import main\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


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
