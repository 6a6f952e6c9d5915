"""Edits and repacks pinned at their edges: what they refuse and say, where they write, and
that a repack of a package larger than the reader's first read, or of ExecuTorch's unaligned
layout, gives what ``ptn.save`` gives (issue 33: each test here once killed a survivor)."""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

import ptn
from ptn.core.errors import InvalidPackageError, PtnError
from ptn.package.atomic import stale_temp_files
from ptn.package.sparse import LOCAL_TAIL
from ptn.testing import hostile, program_for

REPO = Path(__file__).resolve().parent.parent
BAD = REPO / "invalid-examples" / "bad-token-id.ptn"  # llm-token-id-out-of-range
MIXED = REPO / "tests" / "fixtures" / "real" / "mixed_dtype.ptn"  # ExecuTorch's layout


def save(path: Path, constants: dict[str, np.ndarray], **metadata: object) -> Path:
    ptn.save(path, program_for(constants), constants, metadata or {"get_vocab_size": 64})
    return path


def rezipped(src: Path, dst: Path, deflate: set[str]) -> Path:
    """``src``'s members written again by zipfile, those named in ``deflate`` deflated."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as z:
        for name in zin.namelist():
            kind = zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED
            z.writestr(name, zin.read(name), compress_type=kind)
    return dst


# -- edit_metadata ---------------------------------------------------------------------------


def test_an_edit_repairs_metadata_that_breaks_a_rule(tmp_path: Path) -> None:
    """The package is opened leniently: metadata breaking a rule is what an edit fixes."""
    path = tmp_path / "bad.ptn"
    shutil.copy(BAD, path)
    written = ptn.edit_metadata(path, lambda m: {**m, "get_eos_ids": [2]})
    assert written is not None and written.to_dict()["get_eos_ids"] == [2]
    assert ptn.validate(path).valid


def test_an_edit_to_another_existing_file_replaces_it_and_keeps_the_source(
    tmp_path: Path,
) -> None:
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    before = src.read_bytes()
    out = tmp_path / "out.ptn"
    out.write_bytes(b"an older file")
    ptn.edit_metadata(src, lambda m: {**m, "get_vocab_size": 65}, output=out)
    assert src.read_bytes() == before
    assert ptn.read_metadata(out) == ptn.Metadata({"get_vocab_size": 65})


def test_an_edit_whose_output_names_the_source_edits_it_in_place(tmp_path: Path) -> None:
    """Through a symlink: the source itself is rewritten, and the link stays a link."""
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    link = tmp_path / "link.ptn"
    link.symlink_to(src)
    ptn.edit_metadata(src, lambda m: {**m, "get_vocab_size": 66}, output=link)
    assert link.is_symlink()
    assert ptn.read_metadata(src) == ptn.Metadata({"get_vocab_size": 66})


def test_an_edit_refuses_a_deflated_metadata_member_and_names_repack(tmp_path: Path) -> None:
    """A container fault of metadata.json itself is not a metadata error an edit repairs."""
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    path = rezipped(src, tmp_path / "z.ptn", {"metadata.json"})
    before = path.read_bytes()
    with pytest.raises(InvalidPackageError) as caught:
        ptn.edit_metadata(path, lambda m: {**m, "x": 1})
    err = caught.value
    assert (err.rule, err.member) == ("zip-member-compressed", "metadata.json")
    first = err.findings[0].message
    assert err.message == (
        f"{first} (an edit rewrites metadata.json only, so the package's other errors, "
        f"{len(err.findings)} in all, must be fixed first; `ptn repack` fixes compressed or "
        "unaligned members; nothing was written)"
    )
    assert path.read_bytes() == before


def test_an_edit_refuses_a_content_error_elsewhere_without_naming_repack(
    tmp_path: Path,
) -> None:
    header = {"bad": {"dtype": "F99", "shape": [2], "data_offsets": [0, 8]}}
    path = tmp_path / "p.ptn"
    path.write_bytes(
        hostile.package({"program.safetensors": hostile.safetensors(header, bytes(8))})
    )
    with pytest.raises(InvalidPackageError) as caught:
        ptn.edit_metadata(path, lambda m: {"get_vocab_size": 3})
    err = caught.value
    assert (err.rule, err.member) == ("st-unsupported-dtype", "program.safetensors")
    assert err.message == (
        f"{err.findings[0].message} (an edit rewrites metadata.json only, so the package's "
        "other errors, 1 in all, must be fixed first; nothing was written)"
    )


# -- repack ----------------------------------------------------------------------------------


def test_a_deflated_package_larger_than_the_first_read_repacks_to_what_save_wrote(
    tmp_path: Path,
) -> None:
    """Bigger than the tail read first: the stages' bytes must be fetched before checking."""
    rng = np.random.default_rng(7)
    constants = {
        "w": rng.standard_normal(LOCAL_TAIL // 2, dtype=np.float32),
        "ids": np.arange(5, dtype=np.int64),
    }
    src = save(tmp_path / "m.ptn", constants)
    assert src.stat().st_size > 2 * LOCAL_TAIL
    zipped = rezipped(src, tmp_path / "z.ptn", {"program.ptg", "program.safetensors"})
    out = tmp_path / "out.ptn"
    fixed = ptn.repack(zipped, out)
    assert {f.rule for f in fixed} == {"zip-member-compressed", "zip-unaligned-member"}
    assert out.read_bytes() == src.read_bytes()


def test_executorchs_unaligned_tensors_are_laid_out_again(tmp_path: Path) -> None:
    out = tmp_path / "out.ptn"
    fixed = ptn.repack(MIXED, out)
    assert "st-unaligned-tensor" in {f.rule for f in fixed}
    assert ptn.validate(out, deep=True).findings == []
    with ptn.load(MIXED) as old, ptn.load(out) as new:
        assert new.keys() == old.keys()
        for key in old.keys():
            assert bytes(new.constants[key].tobytes()) == bytes(old.constants[key].tobytes())


def test_repack_refuses_a_content_error_saying_so(tmp_path: Path) -> None:
    out = tmp_path / "out.ptn"
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(BAD, out)
    err = caught.value
    assert (err.rule, err.member) == ("llm-token-id-out-of-range", "metadata.json")
    assert err.message == (
        f"{err.findings[0].message} (`ptn repack` rewrites compressed, unaligned or oddly "
        "flagged members, but this fault is in the content itself; nothing was written)"
    )
    assert not out.exists()


def test_repack_refuses_an_ambiguous_container_saying_so(tmp_path: Path) -> None:
    path, out = tmp_path / "p.ptn", tmp_path / "out.ptn"
    path.write_bytes(hostile.unicode_path_extra())
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(path, out)
    assert caught.value.rule == "zip-unicode-path-extra"
    assert caught.value.message.endswith(
        "but this fault leaves the content uncertain; nothing was written)"
    )
    assert not out.exists()


def test_repack_refuses_a_decoy_descriptor_saying_why(tmp_path: Path) -> None:
    path, out = tmp_path / "p.ptn", tmp_path / "out.ptn"
    path.write_bytes(hostile.descriptor_decoy())
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(path, out)
    err = caught.value
    assert err.rule == "zip-descriptor-decoy"
    assert err.message == (
        f"{err.findings[0].message} (two readers would read different members, so "
        "`ptn repack` cannot choose one; nothing was written)"
    )
    assert not out.exists()


def test_repack_into_a_missing_directory_is_a_write_failure_naming_the_stage(
    tmp_path: Path,
) -> None:
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    out = tmp_path / "no-such-dir" / "out.ptn"
    with pytest.raises(PtnError) as caught:
        ptn.repack(src, out)
    assert caught.value.rule == "ptn-write-failed"
    assert caught.value.message.startswith(f"repacking {os.fspath(out)!r} failed: ")


# -- stale temporary files -------------------------------------------------------------------


def test_stale_temps_are_found_after_a_directory_that_cannot_be_listed(tmp_path: Path) -> None:
    live = tmp_path / "here"
    live.mkdir()
    stale = live / ".m.ptn.0123abcd.tmp"
    stale.write_bytes(b"left by a killed writer")
    (live / ".other.ptn.0123abcd.tmp").write_bytes(b"another package's")
    found = stale_temp_files([tmp_path / "gone" / "m.ptn", live / "m.ptn"])
    assert found == [stale]
