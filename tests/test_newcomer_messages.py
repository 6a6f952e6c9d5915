"""Messages that lead to the fix (issue 29): near-miss metadata names, every metadata fault
at once, `metadata get` suggestions, `metadata set` hints that give a value that works, and
an ExecuTorch .pte named as such."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import ptn
from ptn.cli.main import cli
from ptn.core.errors import PtnError
from ptn.metadata.faults import parse_all
from ptn.metadata.near import MetadataNameWarning, edit_distance, nearest_well_known
from ptn_generated.metadata_rules import WELL_KNOWN

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "tiny-llm.ptn"
KNOWN = list(WELL_KNOWN)
LETTERS = "abcdefghijklmnopqrstuvwxyz_ABCXYZ"


@pytest.mark.parametrize(
    ("name", "nearest"),
    [
        ("get_max_contxt_len", ["get_max_context_len"]),
        ("Get_Max_Context_Len", ["get_max_context_len"]),
        ("GET_WINDOWS", ["get_windows"]),
        ("get_window", ["get_windows"]),
        ("get_eos_id", ["get_bos_id", "get_eos_ids"]),
        ("get_max_context_len", []),  # well-known itself
        ("general.key_12", []),
        ("get_max_ctx_len", []),  # four edits away
        ("rope.theta", []),
    ],
)
def test_nearest_well_known(name: str, nearest: list[str]) -> None:
    assert nearest_well_known(name) == nearest


@st.composite
def edited(draw: st.DrawFn) -> tuple[str, str]:
    """A well-known name after at most two inserts, deletes or replaces (any case)."""
    known = draw(st.sampled_from(KNOWN))
    name = known
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.integers(0, len(name)))
        op = draw(st.sampled_from(("insert", "delete", "replace")))
        c = draw(st.sampled_from(LETTERS))
        if op == "insert":
            name = name[:i] + c + name[i:]
        elif i < len(name):
            name = name[:i] + ("" if op == "delete" else c) + name[i + 1 :]
    if draw(st.booleans()):
        name = name.upper()
    return known, name


@given(edited())
def test_every_name_two_edits_from_a_well_known_one_is_near_it(pair: tuple[str, str]) -> None:
    """The cheap filters (length, the three pieces) never pass over a near name."""
    known, name = pair
    if name in WELL_KNOWN:
        assert nearest_well_known(name) == []
    else:
        assert known in nearest_well_known(name) or edit_distance(name.lower(), known) > 2
        assert nearest_well_known(name)


def test_writers_warn_of_a_near_name_and_readers_do_not() -> None:
    with pytest.warns(MetadataNameWarning, match="'get_max_contxt_len' is not a well-known"):
        ptn.Metadata({"get_max_contxt_len": 256})
    with pytest.warns(MetadataNameWarning, match="close to 'get_max_context_len'"):
        ptn.PtnMetadata(Get_Max_Context_Len=256)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ptn.Metadata.parse(b'{"get_max_contxt_len":256}')
        ptn.Metadata({"get_max_context_len": 256, "rope.theta": 1e4})


def test_every_metadata_fault_at_once_the_first_as_parse_raises_it() -> None:
    data = b'{"get_max_context_len":"256","x":99999999999999999999999,"get_vocab_siz":3}'
    metadata, first, found, _ = parse_all(data)
    findings = list(found)
    with pytest.raises(PtnError) as raised:
        ptn.Metadata.parse(data)
    assert metadata is None and first == raised.value.finding == findings[0]
    assert [(f.rule, f.severity, f.pointer) for f in findings] == [
        ("metadata-int-out-of-range", "error", "/x"),
        ("llm-wrong-type", "error", "/get_max_context_len"),
        ("metadata-near-well-known", "warning", "/get_vocab_siz"),
    ]


def test_the_issue_three_fault_document_gets_three_findings() -> None:
    """spec.md 9.4's example: a wrong type never hides the rules between other names."""
    data = (
        b'{"use_kv_cache":1,"get_vocab_size":64,"get_bos_id":999,"get_kv_heads":[8,8],'
        b'"get_head_dims":[64,64],"get_windows":[0,0,0]}'
    )
    _, _, found, _ = parse_all(data)
    assert [(f.rule, f.pointer) for f in found] == [
        ("llm-wrong-type", "/use_kv_cache"),
        ("llm-cache-geometry-length", "/get_windows"),
        ("llm-token-id-out-of-range", "/get_bos_id"),
    ]


def test_cross_field_rules_compare_the_values_that_pass() -> None:
    _, _, found, _ = parse_all(b'{"get_vocab_size":5,"get_bos_id":5,"get_kv_heads":[8]}')
    assert [f.rule for f in found] == ["llm-cache-geometry-together", "llm-token-id-out-of-range"]
    # A wrong kind is still present (together), and compared with nothing else here.
    _, _, found, _ = parse_all(b'{"get_vocab_size":5,"get_bos_id":5,"get_kv_heads":"8"}')
    assert [f.rule for f in found] == [
        "llm-wrong-type",
        "llm-cache-geometry-together",
        "llm-token-id-out-of-range",
    ]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # the bound is broken: no id is compared, said once, at the bound
        (
            b'{"get_vocab_size":"64","get_bos_id":999,"get_eos_ids":[1]}',
            "llm-token-id-out-of-range was not checked for get_vocab_size (llm-wrong-type): "
            "fix that value and validate again",
        ),
        # an id is broken: the other id is still compared (and passes)
        (
            b'{"get_vocab_size":64,"get_bos_id":-1,"get_eos_ids":[1]}',
            "llm-token-id-out-of-range was not checked for get_bos_id "
            "(llm-value-out-of-range): fix that value and validate again",
        ),
        # the count is broken: the lists are still compared with each other
        (
            b'{"get_n_caches":2.0,"get_kv_heads":[8],"get_head_dims":[64],"get_windows":[0]}',
            "llm-cache-geometry-length was not checked for get_n_caches (llm-wrong-type): "
            "fix that value and validate again",
        ),
    ],
)
def test_a_rule_a_broken_value_keeps_from_comparing_says_so_once(
    document: bytes, expected: str
) -> None:
    _, _, found, _ = parse_all(document)
    warnings = [f for f in found if f.rule == "llm-rule-unchecked"]
    assert [(f.severity, f.member, f.message) for f in warnings] == [
        ("warning", "metadata.json", expected)
    ]


def test_a_broken_value_compared_with_nothing_is_not_unchecked() -> None:
    _, _, found, _ = parse_all(b'{"get_bos_id":"1","get_kv_heads":"8"}')
    assert "llm-rule-unchecked" not in {f.rule for f in found}


@pytest.fixture
def package(tmp_path: Path) -> Path:
    path = tmp_path / "m.ptn"
    shutil.copyfile(EXAMPLE, path)
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_set_warns_and_strict_validation_refuses_a_near_name(package: Path) -> None:
    code, _, err = run("metadata", "set", str(package), "get_max_contxt_len=256")
    assert code == 0
    assert err.startswith(
        "warning: metadata-near-well-known: 'get_max_contxt_len' is not a well-known name "
        "but is close to 'get_max_context_len'"
    )
    code, out, _ = run("validate", str(package))
    assert code == 0 and "warning metadata-near-well-known" in out
    code, out, _ = run("validate", "--strict", str(package))
    assert code == 1 and "error metadata-near-well-known" in out


def test_get_takes_several_names_and_suggests_close_ones(package: Path) -> None:
    code, out, _ = run("metadata", "get", str(package), "get_bos_id", "get_windows")
    assert code == 0
    assert out == '{\n  "get_bos_id": 1,\n  "get_windows": [\n    64,\n    0\n  ]\n}\n'
    code, _, err = run("metadata", "get", str(package), "get_bos_idd", "GET_VOCAB_SIZE", "zzz")
    assert code == 1
    assert err.splitlines() == [
        f"{package}: no metadata named 'get_bos_idd'; did you mean 'get_bos_id' or 'get_eos_ids'?",
        f"{package}: no metadata named 'GET_VOCAB_SIZE'; did you mean 'get_vocab_size'?",
        f"{package}: no metadata named 'zzz' (`ptn metadata get` without a name lists them all)",
    ]


@pytest.mark.parametrize(
    ("assignment", "hint", "suggested"),
    [
        (
            "get_windows=512,0",
            "a list is a JSON list in brackets: 'get_windows=[512,0]'",
            "get_windows=[512,0]",
        ),
        ("get_windows=512", "a list is a JSON list in brackets: 'get_windows=[512]'", None),
        ("x=a,b", "for a string write 'x=\"a,b\"'", 'x="a,b"'),
        ("name=tiny", "for a string write 'name=\"tiny\"'", 'name="tiny"'),
        ("rope.theta=NaN", "metadata floats must be finite (NaN and infinities", None),
        ("x.big=1e400", "1e400 is beyond the largest finite float (about 1.8e308)", None),
    ],
)
def test_set_hints_give_a_value_that_works(
    package: Path, assignment: str, hint: str, suggested: str | None
) -> None:
    code, _, err = run("metadata", "set", str(package), assignment)
    assert code == 2 and hint in err
    if suggested is not None:  # what the hint says to write is accepted
        code, _, err = run("metadata", "set", str(package), suggested)
        assert code == 0, err


def test_an_executorch_program_is_named_as_such(tmp_path: Path) -> None:
    for size in (100, 200_000):  # within and past the end-record search window
        path = tmp_path / "model.pte"
        path.write_bytes(b"\x1c\x00\x00\x00ET12" + bytes(size))
        code, out, _ = run("validate", str(path))
        assert code == 1
        assert "error zip-not-a-zip this is an ExecuTorch program (a .pte file" in out
        assert "ptn.executorch.save(programs, 'model.ptn')" in out


def test_pydantic_errors_name_their_field() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as raised:
        ptn.PtnMetadata(x=[1, 2**64])
    (error,) = raised.value.errors()
    assert error["type"] == "metadata-int-out-of-range" and error["loc"] == ("x", 1)
    assert "\nx.1\n" in str(raised.value)
