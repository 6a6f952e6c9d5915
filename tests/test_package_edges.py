"""Reading and replacing packages pinned at their edges, second pass (issue 33: each test
here once killed a survivor of a sampled mutation run over ``ptn/package/read.py`` and
``ptn/package/atomic.py``): the checked-column path of ``constants``, empty and unmappable
writable constants, chunked reads with a short last chunk, a closed package, ``repr`` of
an invalid one, what a lenient package without a directory or with odd metadata says, and
the temporary-file bounds, listings and lock waits of ``ptn.package.atomic``."""

from __future__ import annotations

import fcntl
import os
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ptn
import ptn.package.atomic as atomic
import ptn.package.read as read
import ptn.safetensors.tensors as tensors
from ptn.core.errors import PtnError
from ptn.json.strict import MAX_JSON_BYTES
from ptn.package import tempfiles
from ptn.package.atomic import BrokenHardLinks, replace_file
from ptn.package.tempfiles import stale_temp_files
from ptn.testing import hostile, program_for


def _save(path: Path, constants: dict[str, np.ndarray]) -> Path:
    with warnings.catch_warnings():  # the constants are bound by the program: no warning
        warnings.simplefilter("error")
        ptn.save(path, program_for(constants), constants)
    return path


def test_constants_are_viewed_through_the_checked_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``constants[key]`` of a valid package, owner or alias, never takes the per-key
    ``TensorInfo`` route (``tensor_view``): that is the cost issue 30 removed."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    path = _save(tmp_path / "p.ptn", {"w": w, "w2": w.copy(), "b": np.ones(4, np.int64)})
    with ptn.load(path) as pkg:
        assert pkg.aliases == {"w2": "w"}

        def refused(*args: object) -> np.ndarray:
            raise AssertionError("constants[key] left the checked columns")

        monkeypatch.setattr(read, "tensor_view", refused)
        for key, want in (("w", w), ("w2", w), ("b", np.ones(4, np.int64))):
            got = pkg.constants[key]
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.array_equal(got, want)


def test_an_empty_constant_is_writable(tmp_path: Path) -> None:
    path = _save(tmp_path / "p.ptn", {"e": np.zeros((0, 3), np.float32), "x": np.ones(2)})
    with ptn.load(path) as pkg:
        array = pkg.constant("e", writable=True).array
        assert array.shape == (0, 3) and array.dtype == np.float32 and array.flags.writeable


def test_a_writable_constant_is_a_private_copy_when_no_mapping_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of mappings (vm.max_map_count): the writable constant is a copy of its bytes."""
    w = np.arange(10, dtype=np.int32)
    path = _save(tmp_path / "p.ptn", {"w": w})
    with ptn.load(path) as pkg:

        def no_mapping(*args: object, **kwargs: object) -> None:
            raise PtnError("ptn-io-error", "out of mappings")

        monkeypatch.setattr(read, "map_fd", no_mapping)
        array = pkg.constant("w", writable=True).array
        assert array.dtype == np.int32 and np.array_equal(array, w)
        array[:] = -1
        assert np.array_equal(pkg.constants["w"], w)  # the file's view is untouched


@pytest.mark.parametrize("reuse", [False, True])
def test_chunks_end_with_the_short_rest(tmp_path: Path, reuse: bool) -> None:
    data = np.arange(10, dtype=np.uint8)
    path = _save(tmp_path / "p.ptn", {"d": data})
    with ptn.load(path) as pkg:
        chunks = [bytes(c) for c in pkg.constant_chunks("d", 3, reuse=reuse)]
    assert [len(c) for c in chunks] == [3, 3, 3, 1]
    assert b"".join(chunks) == data.tobytes()


def test_chunks_of_a_closed_package_are_refused(tmp_path: Path) -> None:
    path = _save(tmp_path / "p.ptn", {"d": np.arange(10, dtype=np.uint8)})
    pkg = ptn.load(path)
    pkg.close()
    with pytest.raises(ValueError) as caught:
        pkg.constant_chunks("d", 4)
    assert str(caught.value) == "the package is closed"


def test_a_lenient_package_without_aliases_lists_only_its_readable_keys(tmp_path: Path) -> None:
    header = {
        "good": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "over": {"dtype": "U8", "shape": [4], "data_offsets": [4, 8]},  # parsed, yet broken
    }
    path = tmp_path / "p.ptn"
    path.write_bytes(
        hostile.package({"program.safetensors": hostile.safetensors(header, bytes(8))})
    )
    with ptn.load(path, strict=False) as pkg:
        assert pkg.aliases == {} and "over" in pkg.unreadable_keys
        assert pkg.keys() == pkg.owner_keys() == ["good"]
        assert list(pkg.constants) == ["good"] and len(pkg.constants) == 1


def test_repr_of_an_invalid_package_counts_its_errors(tmp_path: Path) -> None:
    header = {
        "good": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "bad": {"dtype": "F99", "shape": [2], "data_offsets": [8, 16]},
        "worse": {"dtype": "F98", "shape": [2], "data_offsets": [16, 24]},
    }
    path = tmp_path / "p.ptn"
    member = hostile.safetensors(header, bytes(24))
    path.write_bytes(hostile.package({"program.safetensors": member}))
    with ptn.load(path, strict=False) as pkg:
        errors = len(pkg.report.errors)
        assert errors >= 2
        assert repr(pkg).endswith(f", 0 metadata names, {errors} errors>")


def test_a_replaced_file_with_another_link_warns_exactly(tmp_path: Path) -> None:
    path = _save(tmp_path / "p.ptn", {"d": np.arange(4, dtype=np.uint8)})
    os.link(path, tmp_path / "other.ptn")
    with pytest.warns(BrokenHardLinks) as caught:
        replace_file(path, lambda fd: os.write(fd, b"new"))
    assert str(caught[0].message) == (
        f"{os.fspath(path)!r} had 1 other hard link(s); they still hold the old package"
    )
    assert path.read_bytes() == b"new"


def test_a_temporary_name_is_tried_64_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random names that are all taken: 64 tries, then the write fails naming why, and
    the destination is untouched."""
    dest = tmp_path / "p.ptn"
    dest.write_bytes(b"old")
    taken = tmp_path / atomic.TEMP_NAME.format(name=dest.name, token="00000000")
    taken.write_bytes(b"")
    tries = []

    def same_token(n: int) -> bytes:
        tries.append(n)
        return bytes(n)

    monkeypatch.setattr(atomic.os, "urandom", same_token)
    with pytest.raises(FileExistsError, match="no free temporary name beside"):
        replace_file(dest, lambda fd: None)
    assert len(tries) == 64
    assert dest.read_bytes() == b"old"


def test_stale_temps_list_each_directory_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / tempfiles.TEMP_NAME.format(name="b.ptn", token="0123abcd")
    stale.write_bytes(b"")
    listed: list[str] = []
    real = tempfiles._listing

    def counted(directory: str) -> dict[str, bool]:
        listed.append(directory)
        return real(directory)

    monkeypatch.setattr(tempfiles, "_listing", counted)
    found = stale_temp_files([tmp_path / "a.ptn", tmp_path / "b.ptn", tmp_path / "c.ptn"])
    assert found == [stale]
    assert listed == [os.fspath(tmp_path)]


def test_the_checked_columns_are_made_once_per_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The viewer over the header's columns is made on the first ``constants[key]`` and
    kept: making it again per key would cost the whole header per constant."""
    path = _save(tmp_path / "p.ptn", {f"c{i}": np.full(3, i, np.int16) for i in range(4)})
    made = []
    real = tensors.checked_viewer

    def counted(*args: Any) -> Any:
        made.append(1)
        return real(*args)

    monkeypatch.setattr(tensors, "checked_viewer", counted)
    with ptn.load(path) as pkg:
        for i in range(4):
            assert pkg.constants[f"c{i}"].tolist() == [i, i, i]
    assert len(made) == 1


def test_read_only_constants_share_one_array_of_the_member(tmp_path: Path) -> None:
    path = _save(tmp_path / "p.ptn", {"a": np.arange(3, dtype=np.int32), "b": np.ones(2)})
    with ptn.load(path) as pkg:
        a, b = pkg.constant("a").array, pkg.constant("b").array
        assert a.base is not None and a.base is b.base
        assert a.base is pkg.constants["a"].base


def test_reused_chunks_of_every_constant_share_one_buffer(tmp_path: Path) -> None:
    """``reuse=True``: one buffer per package, not per constant (``ptn.diff`` reads 10^5)."""
    path = _save(tmp_path / "p.ptn", {"a": np.arange(8, dtype=np.uint8), "b": np.ones(8)})
    with ptn.load(path) as pkg:
        first = next(pkg.constant_chunks("a", 4, reuse=True))
        assert bytes(first) == bytes(range(4))
        second = next(pkg.constant_chunks("b", 4, reuse=True))
        assert first.obj is second.obj
        assert bytes(second) == np.ones(8).tobytes()[:4]


def test_to_torch_gives_an_alias_a_writable_tensor_of_its_own(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    w = np.arange(6, dtype=np.float32)
    path = _save(tmp_path / "p.ptn", {"w": w, "w2": w.copy()})
    before = path.read_bytes()
    with ptn.load(path) as pkg:
        assert pkg.aliases == {"w2": "w"}
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # torch warns of a read-only array
            out = pkg.to_torch()
        out["w2"].add_(1)
        assert torch.equal(out["w"], torch.from_numpy(w))
        assert torch.equal(out["w2"], torch.from_numpy(w + 1))
    assert path.read_bytes() == before


def _with_metadata(tmp_path: Path, body: bytes, kind: int) -> Path:
    path = tmp_path / "p.ptn"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("program.ptg", hostile.PROGRAM)
        z.writestr("metadata.json", body, compress_type=kind)
    return path


def test_raw_metadata_that_is_not_an_object(tmp_path: Path) -> None:
    path = _with_metadata(tmp_path, b"[1, 2]", zipfile.ZIP_STORED)
    with ptn.load(path, strict=False) as pkg, pytest.raises(PtnError) as caught:
        pkg.raw_metadata()
    err = caught.value
    assert (err.rule, err.member) == ("metadata-not-object", "metadata.json")
    assert err.message == "metadata.json is not a JSON object"


def test_raw_metadata_deflated_and_not_json_names_the_member(tmp_path: Path) -> None:
    path = _with_metadata(tmp_path, b'{"a": ', zipfile.ZIP_DEFLATED)
    with ptn.load(path, strict=False) as pkg:
        assert pkg.unreadable["metadata.json"].rule == "zip-member-compressed"
        with pytest.raises(PtnError) as caught:
            pkg.raw_metadata()
    err = caught.value
    assert err.rule.startswith("json-") and err.member == "metadata.json"


@pytest.mark.slow
def test_raw_metadata_inflates_up_to_the_json_limit_and_no_further(tmp_path: Path) -> None:
    """A deflated metadata.json of exactly the JSON size limit is inflated; one byte more
    (its declared size) is refused with the member's own finding, before inflating."""
    for size, inflated in ((MAX_JSON_BYTES, True), (MAX_JSON_BYTES + 1, False)):
        path = _with_metadata(tmp_path, b"{}" + b" " * (size - 2), zipfile.ZIP_DEFLATED)
        with ptn.load(path, strict=False) as pkg:
            fault = pkg.unreadable["metadata.json"]
            assert fault.rule == "zip-member-compressed"
            if inflated:
                assert pkg.raw_metadata() == {}
                continue
            with pytest.raises(PtnError) as caught:
                pkg.raw_metadata()
        err = caught.value
        assert (err.rule, err.member, err.message) == (fault.rule, fault.member, fault.message)


def test_without_a_directory_the_program_is_unreadable_for_that_reason(tmp_path: Path) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(b"not a zip at all")
    with ptn.load(path, strict=False) as pkg:
        assert pkg.members == {}
        first = next(f for f in pkg.findings if f.severity == "error")
        assert pkg.unreadable == {"program.ptg": first}
        with pytest.raises(PtnError) as caught:
            _ = pkg.program
    assert (caught.value.rule, caught.value.message) == (first.rule, first.message)
    assert caught.value.rule != "ptn-missing-ptg"


class _Clock:
    """time.monotonic and time.sleep for ``_lock``: sleeping advances the clock."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_a_locked_package_is_polled_with_backoff_up_to_a_tenth_of_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.ptn"
    path.write_bytes(b"x")
    clock = _Clock()
    monkeypatch.setattr(atomic, "time", clock)
    with open(path, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another open file description: it conflicts
        with pytest.raises(PtnError) as caught, atomic.edit_lock(path, timeout=1.0):
            pass
    assert caught.value.rule == "ptn-concurrent-modification"
    assert clock.slept[:6] == pytest.approx([0.005, 0.01, 0.02, 0.04, 0.08, 0.1])
    assert set(clock.slept[5:]) == {0.1}
    assert clock.now == pytest.approx(1.055)  # the first poll at or past the deadline gives up
