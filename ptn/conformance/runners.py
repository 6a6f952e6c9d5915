"""One metadata conformance runner per language, behind one function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ptn.errors import PtnError
from ptn.metadata import Metadata


def verdict_line(path: str, rule: str | None) -> str:
    return f"{path}\tvalid\n" if rule is None else f"{path}\tinvalid\t{rule}\n"


def run_python(files: Sequence[str]) -> str:
    out = []
    for path in files:
        try:
            Metadata.parse(Path(path).read_bytes())
            rule = None
        except PtnError as err:
            rule = err.rule
        out.append(verdict_line(path, rule))
    return "".join(out)


LANGUAGES: dict[str, Callable[[Sequence[str]], str]] = {"python": run_python}


def run(lang: str, files: Sequence[str]) -> str:
    """Run ``lang``'s runner over ``files``; RuntimeError if its toolchain is unusable."""
    return LANGUAGES[lang](files)
