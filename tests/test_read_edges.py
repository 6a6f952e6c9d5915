"""Reading pinned at its edges: the lazy numpy import in a fresh interpreter, what a lenient
package lists and parses, and how ``to_torch`` maps the file (issue 33: each test here once
killed a survivor)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptn
from ptn.testing import hostile, program_for

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "examples" / "tiny-llm.ptn"
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"  # llm-token-id-out-of-range


def test_a_fresh_interpreter_reads_a_constant_through_the_lazy_import() -> None:
    """``tensor_view`` imports numpy's side on first use: the first call must work too."""
    with ptn.load(TINY) as pkg:
        key = pkg.keys()[0]
        want = pkg.constants[key].tobytes().hex()
    code = (
        "import sys, ptn\n"
        "with ptn.load(sys.argv[1]) as pkg:\n"
        "    print(pkg.constants[sys.argv[2]].tobytes().hex())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(TINY), key], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == want


def test_a_lenient_package_lists_only_the_sizes_of_its_readable_owners(tmp_path: Path) -> None:
    header = {
        "good": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "bad": {"dtype": "F99", "shape": [2], "data_offsets": [8, 16]},
        "more": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]},
    }
    path = tmp_path / "p.ptn"
    path.write_bytes(
        hostile.package({"program.safetensors": hostile.safetensors(header, bytes(24))})
    )
    with ptn.load(path, strict=False) as pkg:
        assert set(pkg.unreadable_keys) == {"bad"}
        assert sorted(pkg.owner_sizes()) == [("good", "F32", 8), ("more", "I64", 8)]


def test_metadata_breaking_an_llm_rule_still_parses_raw() -> None:
    with ptn.load(BAD, strict=False) as pkg:
        assert pkg.unreadable["metadata.json"].rule == "llm-token-id-out-of-range"
        assert pkg.raw_metadata() == {"get_vocab_size": 64, "get_eos_ids": [2, 99]}


def _mappings_of(path: Path) -> list[str]:
    """The permissions (``r--s``, ``rw-p``...) of this process's mappings of ``path``."""
    target = str(path.resolve())
    return [
        fields[1]
        for line in Path("/proc/self/maps").read_text().splitlines()
        if len(fields := line.split()) >= 6 and fields[5] == target
    ]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_to_torch_maps_the_file_privately_never_shared_writable(tmp_path: Path) -> None:
    """Its tensors view a private copy-on-write mapping (``rw-p``): a read-only one would
    crash the first in-place write, a shared one would carry writes to the file."""
    pytest.importorskip("torch")
    constants = {"w": np.arange(2048, dtype=np.float32)}
    path = tmp_path / "m.ptn"
    ptn.save(path, program_for(constants), constants)
    with ptn.load(path) as pkg:
        before = _mappings_of(path)
        tensors = pkg.to_torch()
        added = sorted(_mappings_of(path))
        for perms in before:
            added.remove(perms)
        assert added == ["rw-p"]
        del tensors
