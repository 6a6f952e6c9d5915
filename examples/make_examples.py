"""Write the bundled example packages (run from anywhere: `python examples/make_examples.py`).

The writer is reproducible, so running this again must give byte-identical
files; tests/test_examples.py checks exactly that.
"""

from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np

import ptn
from ptn.package.write import write_atomically
from ptn.testing import program_for

HERE = Path(__file__).resolve().parent
INVALID = HERE.parent / "invalid-examples"
CACHES = ["kv_cache.k", "kv_cache.v"]


def tiny_llm() -> tuple[dict[str, np.ndarray], dict[str, object]]:
    rng = np.random.default_rng(0)
    embed = rng.standard_normal((64, 16)).astype(ml_dtypes.bfloat16)
    constants = {
        "tok_embeddings.weight": embed,
        "output.weight": embed.copy(),  # tied embeddings: stored once, aliased
        "layers.0.attention.wq.weight": rng.standard_normal((16, 16)).astype(np.float32),
        "layers.1.attention.wq.weight": rng.standard_normal((16, 16)).astype(np.float32),
        "norm.weight": np.ones(16, dtype=np.float32),
        "rope.freqs": np.linspace(0, 1, 8, dtype=np.float32),
        "kv_cache.k": np.zeros((2, 4, 8), dtype=np.float16),
        "kv_cache.v": np.zeros((2, 4, 8), dtype=np.float16),  # same bytes, but mutable
    }
    metadata = {
        "get_max_context_len": 128,
        "get_max_seq_len": 32,
        "get_vocab_size": 64,
        "get_bos_id": 1,
        "get_eos_ids": [2, 3],
        "use_kv_cache": True,
        "use_sdpa_with_kv_cache": True,
        "enable_dynamic_shape": False,
        "get_activation_dtype": 15,
        "get_logits_to_keep_mode": 1,
        "get_n_caches": 2,
        "get_kv_heads": [4, 4],
        "get_head_dims": [8, 8],
        "get_windows": [64, 0],
        "general.name": "tiny-llm",
        "rope.theta": 10000.0,
    }
    return constants, metadata


def write_all(out: Path = HERE, invalid_out: Path = INVALID) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    invalid_out.mkdir(parents=True, exist_ok=True)
    constants, metadata = tiny_llm()
    written = [out / "tiny-llm.ptn", out / "no-constants.ptn", invalid_out / "bad-token-id.ptn"]
    # A real program.ptg: one method, forward, binding every constant (the caches mutated:
    # ptn.save reads that from the program, and keeps each cache's bytes to itself).
    program = program_for(constants, mutated=CACHES)
    ptn.save(written[0], program, constants, metadata)
    empty = program_for()  # binds nothing: a method with no constants
    ptn.save(written[1], empty, metadata={"general.name": "no-constants"})
    # Deliberately invalid: an eos id beyond the vocabulary. ptn.save refuses to
    # write that, so the member is written raw, the way a buggy exporter might.
    bad = b'{"get_eos_ids":[2,99],"get_vocab_size":64}\n'
    write_atomically(
        written[2], [("program.ptg", [empty], len(empty)), ("metadata.json", [bad], len(bad))]
    )
    return written


if __name__ == "__main__":
    for path in write_all(*(Path(a) for a in sys.argv[1:3])):
        print(f"wrote {path}")
