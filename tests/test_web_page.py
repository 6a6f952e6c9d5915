"""The inspector page (web/): built into one self-contained HTML file, then driven in the
system's headless Chromium by web/test/drive.mjs (playwright-core; no browser is downloaded).

What the page shows is compared with what ptn itself says about the same files (members,
constants and metadata as `ptn inspect --json`, findings as `ptn.validate`), fast and deep.
The screenshots land in build/web-page/ (one PNG per package; docs/img/inspector.png is a
copy of tiny-llm.png). Without Chromium (/usr/bin/chromium, or $PTN_CHROMIUM) or Node.js the
browser tests skip locally and fail in CI, like the binding tests.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ptn
from ptn.cli.inspect_view import describe
from ptn.cli.links import DOCS_URL
from ptn.testing.hostile import PROGRAM
from tools.conformance.runners import _build_lock, _installed_as_locked

REPO = Path(__file__).resolve().parent.parent
WEB = REPO / "web"
PAGE = WEB / "dist" / "ptn-inspector.html"
SHOTS = REPO / "build" / "web-page"
VALID = REPO / "examples" / "tiny-llm.ptn"
INVALID = REPO / "invalid-examples" / "bad-token-id.ptn"
EXPORTED = REPO / "tests" / "fixtures" / "real" / "mixed_dtype.ptn"  # ExecuTorch's: unaligned
SHOWN_ROWS = 40  # web/src/view.ts


def _npm(*args: str) -> str:
    proc = subprocess.run(
        ["npm", *args], cwd=WEB, capture_output=True, text=True, timeout=900, check=False
    )
    assert proc.returncode == 0, (
        f"npm {' '.join(args)}:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    )
    return proc.stdout


@pytest.fixture(scope="module")
def web(node: str) -> Path:
    """web/ with its locked toolchain installed (npm ci; playwright-core downloads no browser)."""
    with _build_lock("web"):
        if not _installed_as_locked(WEB):
            _npm("ci", "--no-audit", "--no-fund")
    return WEB


@pytest.fixture(scope="module")
def page(web: Path) -> Path:
    """The page, built as docs/bindings.md says (npm run build)."""
    PAGE.unlink(missing_ok=True)
    _npm("run", "build")
    return PAGE


def test_page_sources_never_write_markup() -> None:
    """Strings from a package reach the DOM as text only: no HTML parsing sink in the source."""
    sinks = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function"
    )
    hits = [
        f"{path.name}:{n}"
        for path in sorted((WEB / "src").glob("*.ts"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if sinks.search(line)
    ]
    assert hits == []


def test_the_shipped_page_is_this_build(page: Path) -> None:
    """ptn/_web/ptn-inspector.html, which `ptn inspector` writes, is what web/ builds now
    (the build is deterministic: pinned esbuild, no dates)."""
    shipped = REPO / "ptn" / "_web" / "ptn-inspector.html"
    assert shipped.read_bytes() == page.read_bytes(), "stale: run `npm run ship` in web/"


def test_page_sources_type_check(web: Path) -> None:
    _npm("run", "check")


def test_page_is_one_file_that_loads_nothing(page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    assert re.search(r"<script[^>]*\bsrc=|<link\b|@import|url\(", html) is None
    (csp,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert "default-src 'none'" in csp and "script-src 'sha256-" in csp


def _flipped(tmp: Path) -> Path:
    """tiny-llm with one byte of tensor data changed: valid to the fast check, not the deep."""
    data = bytearray(VALID.read_bytes())
    with ptn.load(VALID) as pkg:
        member = pkg.members["program.safetensors"]
        at = member.data_offset + member.size - 1
    data[at] ^= 0xFF
    out = tmp / "flipped-byte.ptn"
    out.write_bytes(bytes(data))
    return out


def _many(tmp: Path, count: int) -> Path:
    out = tmp / "many-constants.ptn"
    constants = {f"w{i:03d}": np.full((2,), i, np.float32) for i in range(count)}
    ptn.save(out, PROGRAM, constants=constants, metadata={"general.name": "many"})
    return out


def _large(tmp: Path) -> Path:
    """A package whose constants dwarf its headers (4 MiB), for the URL test."""
    out = tmp / "large-constant.ptn"
    ptn.save(out, PROGRAM, constants={"w": np.arange(1 << 20, dtype=np.float32)})
    return out


FLOATS = [-0.0, 1e21, 1e16, 9.5e15, 1e-05, 0.0001, 100.0, 0.1, -2.5e-07, 1.7976931348623157e308]


def _floats(tmp: Path) -> Path:
    """Floats whose text JavaScript writes otherwise than Python (-0.0, 1e+21...)."""
    out = tmp / "float-texts.ptn"
    ptn.save(out, PROGRAM, metadata={"x.floats": FLOATS, "x.neg_zero": -0.0, "x.big": 1e21})
    return out


ROWS = 200_000


def _rows(tmp: Path) -> Path:
    """A constants table of 200,000 rows: "show all" once overflowed the stack."""
    out = tmp / "many-rows.ptn"
    constants = {f"k{i:06d}": np.full((1,), i, np.int32) for i in range(ROWS)}
    ptn.save(out, PROGRAM, constants=constants)
    return out


def _hostile(tmp: Path) -> Path:
    """Markup and a right-to-left override in a tensor key and a metadata string."""
    out = tmp / "hostile-names.ptn"
    constants = {"<img src=x onerror=alert(1)>\u202egnp.exe": np.ones((2,), np.float32)}
    ptn.save(out, PROGRAM, constants=constants, metadata={"general.name": "<b>bold</b>\u202e"})
    return out


def _zipped(tmp: Path) -> Path:
    """tiny-llm zipped by hand (deflate, as `zip -r` does): every member unreadable but
    metadata.json, which the page inflates for showing (bounded, CRC-checked)."""
    out = tmp / "hand-zipped.ptn"
    with zipfile.ZipFile(VALID) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    return out


def _findings(path: Path, deep: bool) -> list[tuple[str, str]]:
    return [(f.severity, f.rule) for f in ptn.validate(path, deep=deep).findings]


def _shown(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(f["severity"], f["rule"]) for f in state["findings"]]


MISSING = "no-such-file.ptn"  # pasted as a URL the server does not have


@pytest.fixture(scope="module")
def driven(page: Path, chromium: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the page showed for each package (web/test/drive.mjs's JSON), by file name."""
    tmp = tmp_path_factory.mktemp("web")
    packages = [VALID, INVALID, _flipped(tmp), _many(tmp, SHOWN_ROWS + 20), _hostile(tmp)]
    packages.append(_zipped(tmp))
    packages.append(EXPORTED)
    packages.append(_floats(tmp))
    packages.append(_large(tmp))
    rows = _rows(tmp)
    SHOTS.mkdir(parents=True, exist_ok=True)
    # the last one by its URL; the table of 200,000 rows only counted
    args = [*map(str, packages[:-1]), f"url:{packages[-1]}", f"rows:{rows}", f"missing:{MISSING}"]
    cmd = ["node", "test/drive.mjs", chromium, str(page), str(SHOTS), *args]
    proc = subprocess.run(cmd, cwd=WEB, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout)
    out["paths"] = {p.name: p for p in [*packages, rows]}
    out["by_name"] = {r["package"]: r for r in out["results"]}
    return out


def test_page_requests_only_itself_and_the_pasted_url(driven: dict[str, Any]) -> None:
    missing = driven["by_name"][MISSING]["url"]
    assert [e for e in driven["errors"] if "404" not in e] == []  # the missing file's 404 only
    (url,) = {u for u in driven["requests"] if u not in (PAGE.as_uri(), missing)}
    assert url.startswith("http://127.0.0.1:") and url.endswith("/large-constant.ptn")


def test_url_is_read_by_range_requests_headers_only_until_deep(driven: dict[str, Any]) -> None:
    name = "large-constant.ptn"
    shown = driven["by_name"][name]
    with ptn.load(driven["paths"][name]) as pkg:
        info = describe(pkg)
    assert shown["fast"]["verdict"].startswith("valid")
    assert [row[0] for row in shown["fast"]["members"]] == [m["name"] for m in info["members"]]
    assert shown["fast"]["tensors"] == [["w", "F32", "[1048576]", "4.0 MiB", ""]]
    assert shown["size"] > 4 << 20 and shown["fastBytes"] < 64 << 10
    assert shown["deep"]["verdict"].startswith("valid") and "deep check" in shown["deep"]["verdict"]


def test_valid_package_shows_what_ptn_inspect_shows(driven: dict[str, Any]) -> None:
    shown = driven["by_name"][VALID.name]
    with ptn.load(VALID) as pkg:
        info = describe(pkg)
    fast = shown["fast"]
    assert fast["title"] == VALID.name
    assert fast["verdict"].startswith("valid") and "fast check" in fast["verdict"]
    assert fast["findings"] == []
    assert [row[0] for row in fast["members"]] == [m["name"] for m in info["members"]]
    assert [row[5] for row in fast["members"]] == [m["crc32"] for m in info["members"]]
    assert [(r[0], r[1], r[2], r[4]) for r in fast["tensors"]] == [
        (t["key"], t["dtype"], str(t["shape"]), t["alias_of"] or "") for t in info["tensors"]
    ]
    assert ["tok_embeddings.weight", "BF16", "[64, 16]", "2.0 KiB", "output.weight"] in fast[
        "tensors"
    ]
    assert [(r[0], r[1], r[3]) for r in fast["metadata"]] == [
        (m["name"], m["kind"], m["meaning"] or "") for m in info["metadata"]
    ]
    assert fast["program"].endswith(f"identifier {info['program']['identifier']}")
    ((name, inputs, outputs, bound, buffers),) = fast["methods"]
    (method,) = info["methods"]
    assert (name, inputs, buffers) == (method["name"], "", "")  # no input, no buffer
    assert outputs.startswith("p_tok_embeddings_weight: BF16 [64, 16]\n")
    assert outputs.endswith("... 2 more")
    assert bound == f"{len(method['constants'])} (2 mutated)"
    assert fast["deepEnabled"] and fast["summaries"] == [] and fast["notes"] == []
    deep = shown["deep"]
    assert deep["verdict"].startswith("valid") and "deep check" in deep["verdict"]
    assert not deep["progress"]["hidden"] and deep["progress"]["value"] == deep["progress"]["max"]
    assert Path(shown["screenshot"]).stat().st_size > 0


def test_executorch_export_is_valid_with_its_advice_counted_apart(driven: dict[str, Any]) -> None:
    """Alignment is advice (spec.md section 1): shown, counted apart, never a warning."""
    shown = driven["by_name"][EXPORTED.name]
    for mode, deep in (("fast", False), ("deep", True)):
        state = shown[mode]
        assert state["verdict"].startswith("valid — 0 errors, 0 warnings, 4 advice; ")
        assert _shown(state) == _findings(EXPORTED, deep)
        assert {severity for severity, _ in _shown(state)} == {"advice"}


def test_invalid_package_shows_each_finding_linked_to_its_rule(driven: dict[str, Any]) -> None:
    shown = driven["by_name"][INVALID.name]
    for mode, deep in (("fast", False), ("deep", True)):
        state = shown[mode]
        assert state["verdict"].startswith("invalid")
        assert _shown(state) == _findings(INVALID, deep) != []
    # metadata.json breaks a rule: its values are shown as parsed, as ptn inspect shows them
    assert shown["fast"]["notes"] == ["the package has no program.safetensors"]
    with ptn.load(INVALID, strict=False) as pkg:
        info = describe(pkg)
    assert [(r[0], r[1], r[3]) for r in shown["fast"]["metadata"]] == [
        (m["name"], m["kind"], m["meaning"] or "") for m in info["metadata"]
    ]
    assert ["get_eos_ids", "ints", "[2, 99]"] in [r[:3] for r in shown["fast"]["metadata"]]
    assert shown["fast"]["unreadable"] == []
    (finding,) = shown["fast"]["findings"]
    assert finding["rule"] == "llm-token-id-out-of-range"
    assert finding["href"] == f"{DOCS_URL}spec/#llm-token-id-out-of-range-error"
    assert "get_eos_ids[1] = 99" in finding["text"]
    spec = (REPO / "spec.md").read_text(encoding="utf-8")
    assert "#### `llm-token-id-out-of-range` (error)" in spec  # the anchor's heading


def test_hand_zipped_package_shows_its_unreadable_parts(driven: dict[str, Any]) -> None:
    """Each compressed member has one finding, no cascade; the page lists the members that
    cannot be read (with their rule) as ptn inspect does, and shows the metadata it inflated."""
    name = "hand-zipped.ptn"
    path = driven["paths"][name]
    shown = driven["by_name"][name]["fast"]
    with ptn.load(path, strict=False) as pkg:
        info = describe(pkg)
    assert _shown(shown) == _findings(path, deep=False)
    errors = [rule for severity, rule in _shown(shown) if severity == "error"]
    assert errors == ["zip-member-compressed"] * len(info["members"])  # one per member
    assert [row[6] for row in shown["members"]] == ["deflate (8)"] * len(info["members"])
    assert (
        [row[:2] for row in shown["unreadable"]]
        == [[u["part"], u["rule"]] for u in info["unreadable"]]
        != []
    )
    assert shown["notes"] == ["not readable (zip-member-compressed): see the findings"] * 2
    assert (
        [(r[0], r[1]) for r in shown["metadata"]]
        == [(m["name"], m["kind"]) for m in info["metadata"]]
        != []
    )
    deep = driven["by_name"][name]["deep"]
    assert _shown(deep) == _findings(path, deep=True) == _findings(path, deep=False)


def test_deep_check_finds_what_the_fast_check_cannot(driven: dict[str, Any]) -> None:
    name = "flipped-byte.ptn"
    path = driven["paths"][name]
    shown = driven["by_name"][name]
    assert _shown(shown["fast"]) == _findings(path, deep=False) == []
    assert _shown(shown["deep"]) == _findings(path, deep=True)
    assert ("error", "zip-crc-mismatch") in _shown(shown["deep"])
    assert shown["deep"]["verdict"].startswith("invalid")


def test_long_tables_are_summarised_until_show_all(driven: dict[str, Any]) -> None:
    shown = driven["by_name"]["many-constants.ptn"]
    total = SHOWN_ROWS + 20
    assert len(shown["fast"]["tensors"]) == SHOWN_ROWS
    assert shown["fast"]["summaries"] == [
        f"showing {SHOWN_ROWS} of {total} rows show all {total} rows"
    ]
    assert [row[0] for row in shown["all"]["tensors"]] == [f"w{i:03d}" for i in range(total)]
    assert shown["all"]["summaries"] == []


def test_show_all_of_200000_rows(driven: dict[str, Any]) -> None:
    shown = driven["by_name"]["many-rows.ptn"]["rows"]
    # once: RangeError: Maximum call stack size exceeded (the missing file's 404 aside)
    assert [e for e in driven["errors"] if "404" not in e] == []
    assert shown == {"tensors": ROWS, "summaries": []}


def test_floats_are_shown_as_ptn_inspect_prints_them(driven: dict[str, Any]) -> None:
    """Once -0.0 as 0.0 and 1e21 as 1e+21.0 (JavaScript's number text, plus ".0")."""
    shown = driven["by_name"]["float-texts.ptn"]["fast"]
    values = {row[0]: row[2] for row in shown["metadata"]}
    assert values == {
        "x.big": json.dumps(1e21),
        "x.floats": json.dumps(FLOATS),
        "x.neg_zero": json.dumps(-0.0),
    }
    assert values["x.big"] == "1e+21" and values["x.neg_zero"] == "-0.0"


def test_names_from_a_package_are_text_never_markup(driven: dict[str, Any]) -> None:
    shown = driven["by_name"]["hostile-names.ptn"]["fast"]
    assert shown["injected"] == 0
    assert shown["tensors"][0][0] == "<img src=x onerror=alert(1)>\\u{202e}gnp.exe"
    assert ["general.name", "str", '"<b>bold</b>\\u{202e}"', ""] in shown["metadata"]


def test_readme_shows_the_page() -> None:
    readme = (REPO / "docs" / "web.md").read_text(encoding="utf-8")
    assert "img/inspector.png" in readme and (REPO / "docs" / "img" / "inspector.png").is_file()
    assert "npm ci && npm run build" in readme


def test_an_unreadable_url_is_not_checked_with_a_cors_hint(driven: dict[str, Any]) -> None:
    """As `ptn validate` (exit 2): a file that cannot be read is not called invalid."""
    shown = driven["by_name"][MISSING]
    verdict = shown["fast"]["verdict"]
    assert verdict.startswith("not checked") and "CORS" in verdict
    assert [f["rule"] for f in shown["fast"]["findings"]] == ["ptn-io-error"]
    assert shown["deepDisabled"] is True
