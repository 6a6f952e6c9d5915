"""Edits and repacks pinned at their edges: what they refuse and say, where they write, and
that a repack of a package larger than the reader's first read, or of ExecuTorch's unaligned
layout, gives what ``ptn.save`` gives (issue 33: each test here once killed a survivor)."""

from __future__ import annotations

import os
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import ptn
import ptn.package.atomic
import ptn.package.repack
from ptn.core.errors import InvalidPackageError, PtnError
from ptn.package.atomic import replace_file
from ptn.package.source import LOCAL_TAIL
from ptn.package.tempfiles import stale_temp_files
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


@pytest.mark.parametrize(
    ("made", "rule", "why"),
    [
        pytest.param(
            hostile.unicode_path_extra,
            "zip-unicode-path-extra",
            "`ptn repack` rewrites compressed, unaligned or oddly flagged members, but this "
            "fault leaves the content uncertain; nothing was written",
            id="ambiguous",
        ),
        pytest.param(
            hostile.descriptor_decoy,
            "zip-descriptor-decoy",
            "two readers would read different members, so `ptn repack` cannot choose one; "
            "nothing was written",
            id="decoy",
        ),
    ],
)
def test_repack_refuses_a_container_it_cannot_rewrite_saying_why(
    tmp_path: Path, made: Callable[[], bytes], rule: str, why: str
) -> None:
    path, out = tmp_path / "p.ptn", tmp_path / "out.ptn"
    path.write_bytes(made())
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(path, out)
    err = caught.value
    assert err.rule == rule
    assert err.message == f"{err.findings[0].message} ({why})"
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


def test_a_repack_whose_result_breaks_a_rule_writes_nothing_and_says_why(tmp_path: Path) -> None:
    """A deflated member's content is checked only once written: the result is refused."""
    zipped = rezipped(BAD, tmp_path / "bad.ptn", {"metadata.json"})
    before = zipped.read_bytes()
    with pytest.raises(InvalidPackageError) as caught:
        ptn.repack(zipped)
    err = caught.value
    assert (err.rule, err.member) == ("llm-token-id-out-of-range", "metadata.json")
    assert [f.rule for f in err.findings] == ["llm-token-id-out-of-range"]
    assert err.message == (
        "the result would not be a valid package (1 error; the first: "
        f"{err.findings[0].message}); nothing was written"
    )
    assert zipped.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.ptn"]


def test_an_edit_that_changes_nothing_the_clock_sees_still_notices_the_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends where no timestamp moves (the edit sees every file time as
    0, as on a file system that keeps none): the size tells."""
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})

    def timeless(st: os.stat_result) -> os.stat_result:
        times = {"st_atime_ns": 0, "st_mtime_ns": 0, "st_ctime_ns": 0}
        return os.stat_result((*tuple(st)[:7], 0, 0, 0), times)

    class Timeless:  # os, as the edit's identity checks see it
        def __getattr__(self, name: str) -> object:
            return getattr(os, name)

        stat = staticmethod(lambda path: timeless(os.stat(path)))
        fstat = staticmethod(lambda fd: timeless(os.fstat(fd)))

    monkeypatch.setattr(ptn.package.atomic, "os", Timeless())

    def change(values: dict[str, object]) -> dict[str, object]:
        with open(src, "ab") as f:
            f.write(b"junk")
        return {**values, "x": 1}

    with pytest.raises(PtnError) as caught:
        ptn.edit_metadata(src, change)
    assert caught.value.rule == "ptn-concurrent-modification"
    assert caught.value.message.startswith(
        f"{os.fspath(src)!r} was replaced, modified or retargeted by another program"
    )
    assert src.read_bytes().endswith(b"junk")


def test_save_writes_no_metadata_member_for_empty_metadata(tmp_path: Path) -> None:
    constants = {"w": np.arange(4, dtype=np.float32)}
    for metadata in ({}, None):
        path = tmp_path / "m.ptn"
        ptn.save(path, program_for(constants), constants, metadata)
        with zipfile.ZipFile(path) as z:
            assert z.namelist() == ["program.ptg", "program.safetensors"]


@pytest.mark.parametrize(
    ("key", "rule"), [("", "st-entry-invalid"), ("__metadata__", "st-reserved-key")]
)
def test_save_refuses_a_key_safetensors_cannot_hold(tmp_path: Path, key: str, rule: str) -> None:
    path = tmp_path / "m.ptn"
    with pytest.raises(PtnError) as caught:
        ptn.save(path, program_for(), {key: np.zeros(1, np.float32)})
    err = caught.value
    assert (err.rule, err.member) == (rule, "program.safetensors")
    assert err.message == f"constant key {key!r} is not allowed"
    assert not path.exists()


def test_save_names_a_key_or_mutable_key_of_the_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    with pytest.raises(TypeError) as caught:
        ptn.save(path, program_for(), {1: np.zeros(1, np.float32)})  # type: ignore[dict-item]
    assert str(caught.value) == "constants has the key 1 (int); keys are str"
    with pytest.raises(TypeError) as caught:
        ptn.save(path, program_for(), {}, mutable_keys=["a", 2])  # type: ignore[list-item]
    assert str(caught.value) == "mutable_keys holds 2 (int); keys are str"
    assert not path.exists()


def test_a_save_warning_carries_its_findings(tmp_path: Path) -> None:
    w = np.arange(4, dtype=np.float32)
    path = tmp_path / "m.ptn"
    with pytest.warns(ptn.SaveWarning) as caught:
        ptn.save(path, program_for({"w": w}), {"w": w, "extra": np.zeros(2, np.int64)})
    (warning,) = caught
    findings = warning.message.findings  # type: ignore[union-attr]
    assert [(f.rule, f.severity) for f in findings] == [("ptg-unused-constant", "warning")]


def test_repack_over_another_existing_file_replaces_it(tmp_path: Path) -> None:
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    zipped = rezipped(src, tmp_path / "z.ptn", {"program.safetensors"})
    out = tmp_path / "out.ptn"
    out.write_bytes(b"an older file")
    ptn.repack(zipped, out)
    assert out.read_bytes() == src.read_bytes()


def test_repack_of_an_empty_file_is_not_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "empty.ptn"
    path.write_bytes(b"")
    with pytest.raises(PtnError) as caught:
        ptn.repack(path, tmp_path / "out.ptn")
    assert caught.value.rule == "zip-not-a-zip"
    assert not (tmp_path / "out.ptn").exists()


def test_repack_refuses_a_member_whose_bytes_do_not_match_its_crc(tmp_path: Path) -> None:
    """Found only while writing (fast checks read no content): named, and nothing written."""
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    data = bytearray(src.read_bytes())
    with ptn.load(src) as pkg:
        member = pkg.members["program.safetensors"]
    data[member.data_offset + member.size - 1] ^= 1
    src.write_bytes(bytes(data))
    out = tmp_path / "out.ptn"
    with pytest.raises(PtnError) as caught:
        ptn.repack(src, out)
    assert (caught.value.rule, caught.value.member) == ("zip-crc-mismatch", "program.safetensors")
    assert not out.exists()


# -- replacing a file ------------------------------------------------------------------------


def test_a_failed_write_whose_temp_is_already_gone_raises_its_own_error(tmp_path: Path) -> None:
    """The cleanup's own failure (the temporary file removed meanwhile) hides nothing."""
    dest = tmp_path / "m.ptn"

    def write(fd: int) -> None:
        for tmp in tmp_path.glob(".*.tmp"):
            tmp.unlink()
        raise ValueError("the writer failed")

    with pytest.raises(ValueError, match="the writer failed"):
        replace_file(dest, write)
    assert list(tmp_path.iterdir()) == []


def test_an_owner_that_cannot_be_kept_still_keeps_the_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not allowed to give the file its owner: the group is still given (chown -1, gid)."""
    dest = tmp_path / "m.ptn"
    dest.write_bytes(b"old")
    gid = dest.stat().st_gid
    calls: list[tuple[int, int]] = []

    def fchown(fd: int, uid: int, group: int) -> None:
        calls.append((uid, group))
        if uid != -1:
            raise PermissionError("not the owner")

    monkeypatch.setattr(os, "fchown", fchown)
    replace_file(dest, lambda fd: os.write(fd, b"new") and None)
    assert calls == [(dest.stat().st_uid, gid), (-1, gid)]
    assert dest.read_bytes() == b"new"


def test_an_unsupported_dtype_names_its_constant_and_member(tmp_path: Path) -> None:
    import ml_dtypes  # only this test needs it

    path = tmp_path / "m.ptn"
    with pytest.raises(PtnError) as caught:
        ptn.save(path, program_for(), {"scale": np.zeros(4, ml_dtypes.float8_e4m3fn)})
    err = caught.value
    assert (err.rule, err.member) == ("st-unsupported-dtype", "program.safetensors")
    assert err.message.startswith("constant 'scale': ")
    assert not path.exists()


def test_a_repack_in_place_of_a_file_replaced_meanwhile_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program puts a new package at the path while the repack writes: the rename
    would lose it, so the repack stops (the same last check as an edit's)."""
    src = save(tmp_path / "m.ptn", {"w": np.arange(4, dtype=np.float32)})
    zipped = rezipped(src, tmp_path / "z.ptn", {"program.safetensors"})
    other = save(tmp_path / "other.ptn", {"w": np.arange(3, dtype=np.float32)})
    other_bytes = other.read_bytes()
    check = ptn.package.repack.check_written

    def replaced_meanwhile(fd: int, path: str, *, deep: bool = False) -> None:
        os.replace(other, zipped)
        check(fd, path, deep=deep)

    monkeypatch.setattr(ptn.package.repack, "check_written", replaced_meanwhile)
    with pytest.raises(PtnError) as caught:
        ptn.repack(zipped)
    assert caught.value.rule == "ptn-concurrent-modification"
    assert zipped.read_bytes() == other_bytes


class _Failing(dict):  # type: ignore[type-arg]
    """A mapping whose items fail on access (a lazy loader that breaks)."""

    def items(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("the loader broke")


def test_a_mapping_failing_on_access_is_a_write_failure_while_preparing(tmp_path: Path) -> None:
    path = tmp_path / "m.ptn"
    with pytest.raises(PtnError) as caught:
        ptn.save(path, program_for(), _Failing(w=1))
    assert caught.value.rule == "ptn-write-failed"
    assert caught.value.message == (
        f"preparing {os.fspath(path)!r} failed: RuntimeError: the loader broke; "
        "the destination is unchanged"
    )
    assert not path.exists()


def test_mutable_keys_given_as_one_string_is_a_type_error_saying_why(tmp_path: Path) -> None:
    with pytest.raises(TypeError) as caught:
        ptn.save(tmp_path / "m.ptn", program_for(), {}, mutable_keys="kv")
    assert str(caught.value) == (
        "mutable_keys must be an iterable of keys such as ['kv'], not a str "
        "(that would name each of its characters)"
    )


def test_a_temporary_name_taken_by_another_writer_is_never_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Created exclusively: with every name taken (the token forced), the write fails
    instead of writing into another writer's temporary file."""
    dest = tmp_path / "m.ptn"
    theirs = tmp_path / ".m.ptn.00000000.tmp"
    theirs.write_bytes(b"another writer's")
    monkeypatch.setattr(os, "urandom", lambda n: bytes(n))
    with pytest.raises(PtnError) as caught:
        ptn.save(dest, program_for(), {})
    assert caught.value.rule == "ptn-write-failed"
    assert f"no free temporary name beside {os.fspath(dest)!r}" in caught.value.message
    assert theirs.read_bytes() == b"another writer's"
    assert not dest.exists()
