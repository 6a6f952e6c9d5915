"""``ptn run``: run one method of a package in Python, on given or random inputs.

Library layers (and torch) are imported inside the command, not at the top: the other
commands never pay for them (bench/bench_startup.py).
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import click

from ptn.cli.common import UsageProblem, checked

_OUTPUT_KEY = re.compile(r"output[0-9]+")
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
HARD_STOP_GRACE = 2.0
"""Seconds past ``--time-limit`` after which ``ptn run`` stops itself, even inside one
operator call (which the runner's own check, between nodes, cannot interrupt)."""


class MemorySize(click.ParamType):
    """A number of bytes: ``4G``, ``512MiB``, ``1.5GB``, ``1000000`` (binary units)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        match = _SIZE.fullmatch(str(value).strip())
        if match is None or float(match.group(1)) * _UNITS[match.group(2).upper()] < 1:
            self.fail(f"{value!r} is no size in bytes (such as 4G, 512MiB, 1000000)", param, ctx)
        return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


@click.command()
@click.argument("path", type=click.Path(dir_okay=False), metavar="PATH")
@click.option(
    "--method",
    "method_name",
    metavar="NAME",
    help="The method (default: forward, or the only one).",
)
@click.option(
    "--inputs",
    "inputs_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="A safetensors file with a tensor per input, by input name.",
)
@click.option(
    "--random", "random_inputs", is_flag=True, help="Random inputs within the declared bounds."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --random.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Write the inputs (by name) and tensor outputs (output0...) as safetensors.",
)
@click.option(
    "--max-memory",
    type=MemorySize(),
    default=None,
    metavar="SIZE",
    help="Cap on the intermediate tensors held at once (default 2G; 512M, 8GiB...).",
)
@click.option(
    "--time-limit",
    type=click.FloatRange(min=0.001),
    default=None,
    metavar="SECONDS",
    help="Stop a call that runs longer (default: no limit).",
)
def run(
    path: str,
    method_name: str | None,
    inputs_path: str | None,
    random_inputs: bool,
    seed: int,
    output: str | None,
    max_memory: int | None,
    time_limit: float | None,
) -> None:
    """Run a method of a package with torch's ATen operators; show its outputs.

    \b
      ptn run model.ptn --random                   a smoke test: does it run?
      ptn run model.ptn --inputs in.safetensors -o out.safetensors

    The package is validated as ptn.load does (only the operators of ptn's
    operator table run), and the inputs are checked against the graph's
    metadata. The memory the call's intermediate tensors hold is planned
    before it runs and capped (--max-memory); --time-limit is checked between
    nodes, and the command stops itself a few seconds past it. A file written
    by -o can be given back to --inputs (its output keys are ignored). Needs
    torch. Exit status: 0 it ran, 1 the package does not run (invalid, a node
    failed, past a limit), 2 usage or I/O problem (inputs that do not fit).
    """
    from ptn.cli.report import safe

    if inputs_path is not None and random_inputs:
        raise UsageProblem("give --inputs FILE or --random, not both")
    try:
        import ptn.torch as ptn_torch  # torch itself is imported by load_program
        from ptn.interop import run_io

        runner = checked(path, lambda: _load(ptn_torch, path))
    except ImportError as err:
        raise UsageProblem(f"ptn run needs torch: {err}") from None
    if max_memory is not None:
        runner.max_memory = max_memory
    runner.time_limit = time_limit
    method = _method(runner, method_name)
    metas = runner.inputs(method)
    if random_inputs:
        given = run_io.random_inputs(metas, seed)
    elif inputs_path is not None:
        given = _read_inputs(run_io, inputs_path, metas)
    elif metas:
        listed = ", ".join(safe(n) for n in metas)
        raise UsageProblem(
            f"method {safe(method)} takes inputs ({listed}): give --inputs FILE or --random"
        )
    else:
        given = {}
    start = time.perf_counter()
    try:
        with _hard_stop(path, time_limit):
            outputs = runner.run(method, *given.values())
    except ptn_torch.InputError as err:
        raise UsageProblem(safe(str(err))) from None
    except ptn_torch.RunError as err:
        click.echo(f"ptn run: {safe(path)}: {safe(str(err))}", err=True)
        sys.exit(1)
    took = time.perf_counter() - start
    names = [name for name, _ in runner.outputs(method)]
    _show(path, method, given, names, outputs, took, seed if random_inputs else None)
    if output is not None:
        _write(run_io, output, given, names, outputs)


@contextmanager
def _hard_stop(path: str, time_limit: float | None) -> Iterator[None]:
    """Past ``time_limit`` and a grace, end the process (exit 1) from a timer thread: one
    operator call can run for hours, and the runner checks its limit between nodes only."""
    if time_limit is None:
        yield
        return

    def stop() -> None:
        from ptn.cli.report import safe

        sys.stderr.write(
            f"ptn run: {safe(path)}: the call ran {time_limit + HARD_STOP_GRACE:g} s, past its "
            f"time limit of {time_limit:g} s, inside one operator call; stopped\n"
        )
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(time_limit + HARD_STOP_GRACE, stop)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def _load(ptn_torch: Any, path: str) -> Any:
    try:
        return ptn_torch.load_program(path)
    except ptn_torch.RunError as err:
        from ptn.cli.report import safe

        click.echo(f"ptn run: {safe(path)}: {safe(str(err))}", err=True)
        sys.exit(1)


def _method(runner: Any, name: str | None) -> str:
    from ptn.cli.report import safe

    methods = runner.methods
    listed = ", ".join(safe(m) for m in methods)
    if name is not None:
        if name not in methods:
            raise UsageProblem(f"no method {safe(name)!r}; the package has {listed}")
        return name
    if "forward" in methods:
        return "forward"
    if len(methods) == 1:
        return str(methods[0])
    raise UsageProblem(f"the package has several methods ({listed}): choose one with --method")


def _read_inputs(run_io: Any, path: str, metas: Mapping[str, Any]) -> dict[str, Any]:
    from ptn.cli.report import finding_line, safe
    from ptn.core.errors import PtnError

    try:
        tensors = run_io.read_tensors(path)
    except PtnError as err:
        click.echo(finding_line(path, err.to_finding(), colour=False), err=True)
        raise UsageProblem(f"{safe(path)} is not a safetensors file ptn can read") from None
    missing = [n for n in metas if n not in tensors]
    stray = [k for k in tensors if k not in metas and not _OUTPUT_KEY.fullmatch(k)]
    if missing or stray:
        said = []
        if missing:
            said.append("no tensor for input " + ", ".join(safe(n) for n in missing))
        if stray:
            said.append("keys that are no input: " + ", ".join(safe(k) for k in stray))
        raise UsageProblem(
            f"{safe(path)}: {'; '.join(said)} (inputs: {', '.join(map(safe, metas))})"
        )
    return {name: tensors[name] for name in metas}


def _describe(value: Any) -> str:
    """``float32 [2, 3]  min -1.2  max 3.4  mean 0.5`` (the range and mean of numbers);
    ``int 3``, ``bool True`` for a number; a list item by item."""
    if isinstance(value, bool | int | float):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, list | tuple):
        return f"list of {len(value)}: " + "; ".join(_describe(v) for v in value)
    if not hasattr(value, "dtype"):
        return type(value).__name__
    shape = "[" + ", ".join(str(n) for n in value.shape) + "]"
    text = f"{str(value.dtype).removeprefix('torch.')} {shape}"
    if value.numel() and not value.is_complex():
        as_float = value.detach().double()
        text += f"  min {as_float.min().item():.4g}  max {as_float.max().item():.4g}"
        if value.is_floating_point():
            text += f"  mean {as_float.mean().item():.4g}"
    return text


def _show(
    path: str,
    method: str,
    given: Mapping[str, Any],
    names: list[str],
    outputs: tuple[Any, ...],
    took: float,
    seed: int | None,
) -> None:
    from ptn.cli.report import safe

    how = f", random inputs (seed {seed})" if seed is not None else ""
    click.echo(f"{safe(path)} {safe(method)}: {took * 1000:.1f} ms{how}")
    rows = [("input", name, value) for name, value in given.items()]
    rows += [(f"output{k}", n, v) for k, (n, v) in enumerate(zip(names, outputs, strict=True))]
    label = max(len(r[0]) for r in rows) if rows else 0
    width = max((len(safe(r[1])) for r in rows), default=0)
    for kind, name, value in rows:
        click.echo(f"  {kind:<{label}}  {safe(name):<{width}}  {_describe(value)}")


def _write(
    run_io: Any, path: str, given: Mapping[str, Any], names: list[str], outputs: tuple[Any, ...]
) -> None:
    """The inputs and the tensor outputs; each output a safetensors file cannot hold (a
    number, a list) is named on stderr, with its value, and left out."""
    from ptn.cli.report import safe
    from ptn.core.errors import PtnError

    tensors = dict(given)
    left_out = []
    for k, (name, value) in enumerate(zip(names, outputs, strict=True)):
        key = f"output{k}"
        if key in tensors:
            raise UsageProblem(f"an input is named {key!r}: -o cannot write both")
        if hasattr(value, "dtype"):
            tensors[key] = value
        else:
            left_out.append(f"{key} ({safe(name)}: {_describe(value)})")
    try:
        run_io.write_tensors(path, tensors)
    except (OSError, PtnError) as err:
        raise UsageProblem(f"cannot write {safe(path)}: {safe(str(err))}") from None
    written = len(outputs) - len(left_out)
    counts = f"{_count(len(given), 'input')}, {_count(written, 'output')}"
    click.echo(f"wrote {safe(path)} ({counts})", err=True)
    for what in left_out:
        click.echo(f"not written: {what}: a safetensors file holds tensors only", err=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
