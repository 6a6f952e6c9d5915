"""``ptn run``: run one method of a package in Python, on given or random inputs.

Library layers (and torch) are imported inside the command, not at the top: the other
commands never pay for them (bench/bench_startup.py).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Mapping
from typing import Any

import click

from ptn.cli.common import UsageProblem, checked

_OUTPUT_KEY = re.compile(r"output[0-9]+")


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
    help="Write the inputs (by name) and outputs (output0...) as safetensors.",
)
def run(
    path: str,
    method_name: str | None,
    inputs_path: str | None,
    random_inputs: bool,
    seed: int,
    output: str | None,
) -> None:
    """Run a method of a package with torch's ATen operators; show its outputs.

    \b
      ptn run model.ptn --random                   a smoke test: does it run?
      ptn run model.ptn --inputs in.safetensors -o out.safetensors

    The package is validated as ptn.load does, every operator is resolved in
    torch.ops.aten, and the inputs are checked against the graph's metadata.
    A file written by -o can be given back to --inputs (its output keys are
    ignored). Needs torch. Exit status: 0 it ran, 1 the package does not run
    (invalid, or a node failed), 2 usage or I/O problem (inputs that do not fit).
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
        outputs = runner.run(method, *given.values())
    except ptn_torch.InputError as err:
        raise UsageProblem(safe(str(err))) from None
    except ptn_torch.RunError as err:
        click.echo(f"ptn run: {safe(path)}: {safe(str(err))}", err=True)
        sys.exit(1)
    took = time.perf_counter() - start
    _show(path, method, given, outputs, runner, took, seed if random_inputs else None)
    if output is not None:
        _write(run_io, output, given, outputs)


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
    """``float32 [2, 3]  min -1.2  max 3.4  mean 0.5`` (the range and mean of numbers)."""
    if not hasattr(value, "dtype"):
        return repr(value)
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
    outputs: tuple[Any, ...],
    runner: Any,
    took: float,
    seed: int | None,
) -> None:
    from ptn.cli.report import safe

    how = f", random inputs (seed {seed})" if seed is not None else ""
    click.echo(f"{safe(path)} {safe(method)}: {took * 1000:.1f} ms{how}")
    rows = [("input", name, value) for name, value in given.items()]
    names = [name for name, _ in runner.outputs(method)]
    rows += [(f"output{k}", n, v) for k, (n, v) in enumerate(zip(names, outputs, strict=True))]
    label = max(len(r[0]) for r in rows) if rows else 0
    width = max((len(safe(r[1])) for r in rows), default=0)
    for kind, name, value in rows:
        click.echo(f"  {kind:<{label}}  {safe(name):<{width}}  {_describe(value)}")


def _write(run_io: Any, path: str, given: Mapping[str, Any], outputs: tuple[Any, ...]) -> None:
    from ptn.cli.report import safe
    from ptn.core.errors import PtnError

    tensors = dict(given)
    for k, value in enumerate(outputs):
        key = f"output{k}"
        if key in tensors:
            raise UsageProblem(f"an input is named {key!r}: -o cannot write both")
        tensors[key] = value
    try:
        run_io.write_tensors(path, tensors)
    except (OSError, PtnError) as err:
        raise UsageProblem(f"cannot write {safe(path)}: {safe(str(err))}") from None
    counts = f"{_count(len(given), 'input')}, {_count(len(outputs), 'output')}"
    click.echo(f"wrote {safe(path)} ({counts})", err=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
