"""Reading pinned at its edges: the lazy numpy import in a fresh interpreter, what a lenient
package lists and parses, and how ``to_torch`` maps the file (issue 33: each test here once
killed a survivor)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ptn
from ptn.core.errors import PtnError
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
        "    print(pkg.constant(sys.argv[2]).array.tobytes().hex())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(TINY), key], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == want


def test_a_lenient_package_lists_only_its_readable_keys_and_sizes(tmp_path: Path) -> None:
    header = {
        "good": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "bad": {"dtype": "F99", "shape": [2], "data_offsets": [8, 16]},
        "more": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]},
        "over": {"dtype": "U8", "shape": [4], "data_offsets": [20, 24]},  # parsed, yet broken
    }
    path = tmp_path / "p.ptn"
    path.write_bytes(
        hostile.package(
            {
                "program.safetensors": hostile.safetensors(header, bytes(24)),
                "aliases.json": b'{"also_bad":"bad","also_good":"good"}',
            }
        )
    )
    with ptn.load(path, strict=False) as pkg:
        assert set(pkg.unreadable_keys) == {"bad", "also_bad", "over"}
        assert sorted(pkg.owner_sizes()) == [("good", "F32", 8), ("more", "I64", 8)]
        assert pkg.keys() == ["also_good", "good", "more"]
        keys = ("good", "more", "also_good", "bad", "also_bad", "over", "absent")
        assert [k for k in keys if k in pkg.constants] == ["good", "more", "also_good"]
        with pytest.raises(PtnError) as caught:
            pkg.constant("also_bad")
        err = caught.value
        assert (err.rule, err.member) == ("st-unsupported-dtype", "program.safetensors")
        assert err.pointer == pkg.unreadable_keys["bad"].pointer


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


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_a_writable_constant_maps_only_its_pages_privately(tmp_path: Path) -> None:
    """A private copy-on-write mapping of its pages, not a copy of the bytes (whatever the
    tensor's offset in its page), and writing it changes neither file nor package."""
    constants = {"a": np.arange(3, dtype=np.int8), "w": np.arange(4096, dtype=np.float32)}
    path = tmp_path / "m.ptn"
    ptn.save(path, program_for(constants), constants)
    before = path.read_bytes()
    with ptn.load(path) as pkg:
        mapped = _mappings_of(path)
        w = pkg.constant("w", writable=True).array
        added = sorted(_mappings_of(path))
        for perms in mapped:
            added.remove(perms)
        assert added == ["rw-p"]
        assert w.tolist() == constants["w"].tolist()
        w[0] = 7.0
        assert pkg.constants["w"][0] == 0.0
        del w
    assert path.read_bytes() == before


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc/self/maps")
def test_close_unmaps_the_file_once_no_array_is_left(tmp_path: Path) -> None:
    constants = {"w": np.arange(2048, dtype=np.float32)}
    path = tmp_path / "m.ptn"
    ptn.save(path, program_for(constants), constants)
    pkg = ptn.load(path)
    assert pkg.constants["w"][5] == 5.0  # makes the member's array and a view of it
    assert _mappings_of(path) != []
    pkg.close()
    assert _mappings_of(path) == []


def test_a_deflated_metadata_member_still_parses_raw(tmp_path: Path) -> None:
    src = tmp_path / "m.ptn"
    constants = {"w": np.arange(4, dtype=np.float32)}
    ptn.save(src, program_for(constants), constants, {"get_vocab_size": 64, "x": "y"})
    zipped = tmp_path / "z.ptn"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(zipped, "w") as z:
        for name in zin.namelist():
            kind = zipfile.ZIP_DEFLATED if name == "metadata.json" else zipfile.ZIP_STORED
            z.writestr(name, zin.read(name), compress_type=kind)
    with ptn.load(zipped, strict=False) as pkg:
        assert pkg.unreadable["metadata.json"].rule == "zip-member-compressed"
        assert pkg.raw_metadata() == {"get_vocab_size": 64, "x": "y"}


def test_typed_metadata_reads_and_their_rule_without_metadata(tmp_path: Path) -> None:
    constants = {"w": np.arange(4, dtype=np.float32)}
    path = tmp_path / "m.ptn"
    ptn.save(path, program_for(constants), constants, {"tags": ["a", "b"]})
    with ptn.load(path) as pkg:
        assert pkg.metadata_strs("tags") == ["a", "b"]
        assert repr(pkg) == (
            f"<ptn.Package {str(path)!r}: 1 constant, members program.ptg, "
            "program.safetensors, metadata.json, 1 metadata name>"
        )
    ptn.save(path, program_for(constants), constants)
    with ptn.load(path) as pkg, pytest.raises(PtnError) as caught:
        pkg.metadata_int("get_vocab_size")
    err = caught.value
    assert (err.rule, err.member) == ("metadata-missing-name", "metadata.json")
