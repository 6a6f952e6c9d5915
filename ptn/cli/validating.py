"""The work of ``ptn validate``, without click.

Two fronts run it: the click command (ptn.cli.reading), and the entry point's quick front
(ptn.cli.entry), which reads the common forms of ``ptn validate`` before click is imported.
Both call ``validate_paths`` with the same values, so they print, write and exit alike;
only what prints differs (``Echo``: click's ``echo``, or a plain write where the two agree).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ptn.cli.exits import Echo
from ptn.cli.report import NO_TRUST_HINT
from ptn.core.names import SIGNATURE_SUFFIX

if TYPE_CHECKING:
    from ptn.signing.trust import Trust
    from ptn.signing.verify import SignatureCheck


def usage_problem(
    jobs: int | None, trust: object, require_signature: bool, urls: bool
) -> str | None:
    """What makes these values a usage error (exit 2 before any file is read), or None."""
    from ptn.cli.runner import default_jobs, max_jobs

    if jobs is not None and jobs > max_jobs():
        return (
            f"-j {jobs} is more than {max_jobs()} (4 per CPU, {default_jobs()} CPUs): each "
            "worker holds a file in memory; use at most that many"
        )
    if require_signature and trust is None:
        return f"--require-signature needs something to verify with: {NO_TRUST_HINT}"
    if urls and (trust is not None or require_signature):
        return "signatures are checked for local files only; download the URL first"
    return None


def validate_paths(
    paths: Sequence[str],
    *,
    as_json: bool,
    fast: bool,
    strict: bool,
    jobs: int | None,
    time_limit: float,
    stats: bool,
    trust: tuple[Trust, Any] | None,
    require_signature: bool,
    echo: Echo,
) -> int:
    """Check ``paths`` (files, directories searched for *.ptn, URLs) and print the report;
    the exit status. The values are usage-checked (``usage_problem``) by the caller."""
    from ptn.cli.report import apply_strict, dumps_report, is_valid, safe, text_report
    from ptn.cli.runner import default_jobs, find_packages, run_all
    from ptn.core.errors import Finding, verdict
    from ptn.remote.urls import is_url

    files, problems = find_packages([p for p in paths if not is_url(p)])
    urls = [p for p in paths if is_url(p)]
    for path, problem in problems:
        echo(f"ptn validate: {safe(path)}: {problem}", True)
    jobs = jobs or default_jobs()
    results = []
    if sys.stderr.isatty() and len(files) >= 4:
        from rich.progress import Progress

        from ptn.cli.report import stderr_console

        with Progress(transient=True, console=stderr_console()) as bar:
            task = bar.add_task("validating", total=len(files))
            for path, findings in run_all(
                files, not fast, jobs, time_limit, lambda: bar.advance(task)
            ):
                results.append((path, apply_strict(findings, strict)))
    else:
        for path, findings in run_all(files, not fast, jobs, time_limit):
            results.append((path, apply_strict(findings, strict)))
    if urls:
        from ptn.remote.batch import run_urls

        for url, findings, transfer in run_urls(urls, not fast, jobs, time_limit):
            results.append((url, apply_strict(findings, strict)))
            if stats:
                echo(
                    f"ptn validate: {safe(url)}: fetched {transfer.bytes} bytes in "
                    f"{transfer.requests} requests",
                    True,
                )
    signatures = check_signatures(files, trust, require_signature)
    results = [(path, fs + signatures[path].findings if path in signatures else fs)
               for path, fs in results]  # fmt: skip
    if as_json:  # the document itself says why the exit status is 2
        unchecked = [
            (path, [Finding("ptn-io-error", "error", None, None, problem)])
            for path, problem in problems
        ]
        echo(dumps_report(results + unchecked, signatures), False)
    else:
        echo(text_report(results, colour=sys.stdout.isatty(), signatures=signatures), False)
    for note in stale_notes(files):
        echo(note, True)
    # exit 2: a file was not checked (the summary counts it apart, as "not checked")
    if problems or any(verdict(fs) == "unchecked" for _, fs in results):
        return 2
    return 0 if all(is_valid(fs) for _, fs in results) else 1


def signatures_beside(paths: Sequence[str]) -> set[str]:
    """The packages among ``paths`` with a ``PATH.sig`` beside them: each directory is
    listed once (a hook that validates 10^4 files pays no ``stat`` per file)."""
    listings: dict[str, set[str]] = {}
    found = set()
    for path in paths:
        directory, name = os.path.split(path)
        if directory not in listings:
            try:
                listings[directory] = set(os.listdir(directory or "."))
            except OSError:
                listings[directory] = set()
        if name + SIGNATURE_SUFFIX in listings[directory]:
            found.add(path)
    return found


def check_signatures(
    paths: Sequence[str], trust: tuple[Trust, Any] | None, require: bool
) -> dict[str, SignatureCheck]:
    """The signature of each package, checked with ``trust`` (read only where there is
    one and no trust: what it claims is not shown by ``validate``, whose verdict it is not)."""
    todo = paths if trust is not None or require else sorted(signatures_beside(paths))
    if not todo:
        return {}
    from ptn.signing.verify import check_signature  # only when there is one to check

    out = {}
    for path in todo:
        check = check_signature(
            path,
            trust[0] if trust else None,
            verifier=trust[1] if trust else None,
            require=require,
            read=False,
        )
        if check is not None:
            out[path] = check
    return out


def stale_notes(paths: Sequence[str]) -> list[str]:
    """A note on each temporary file a killed writer left beside these packages."""
    from ptn.cli.report import safe
    from ptn.package.tempfiles import stale_temp_files

    return [
        f"note: {safe(str(tmp))} is a temporary file left by an interrupted ptn write; "
        "no process is using it, so it can be deleted"
        for tmp in stale_temp_files(paths)
    ]
