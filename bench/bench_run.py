"""``ptn.torch.load_program(...).run`` per call against the eager PyTorch module.

    python bench/bench_run.py [--rounds 7] [--calls 50] [--threads 1]

Packages: ``llama_tiny`` (the largest real export, a transformers LlamaForCausalLM),
``qwen2_tiny`` (the graph with the most nodes) and ``mlp`` (the smallest: two linears,
where the interpreter's own cost weighs most). The eager module is rebuilt by
``tools/real_exports.py`` from the same seeds as the export (so it needs transformers),
with the non-persistent ``inv_freq`` zeroed as the package has it; the script first
checks that both compute the same outputs on the reference inputs.

Per package, in each round, ``--calls`` calls of each, interleaved (eager, run, eager...),
under ``torch.inference_mode``; the figures are medians over rounds of the median call,
and the ratio is the median of each round's ratio (machine drift hits both).
"The interpreter's cost per node" is ``run`` replayed with every operator replaced by a
function returning its recorded result: what is left is the loop, the slot reads and
writes, the argument lists and the input and output checks, divided by the steps.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import ptn.torch  # noqa: E402
from ptn.interop.program_runner import ProgramRunner  # noqa: E402
from tools import real_exports  # noqa: E402

REAL = REPO / "tests" / "fixtures" / "real"
BUILDERS: dict[str, Callable[[], Any]] = {
    "llama_tiny": lambda: real_exports._tiny_llm("llama"),
    "qwen2_tiny": lambda: real_exports._tiny_llm("qwen2"),
    "mlp": real_exports.build_mlp,
}


def eager(name: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """The eager module as a function of the first reference call's inputs."""
    spec = BUILDERS[name]()
    module = spec.modules["forward"]
    for fqn, buffer in module.named_buffers():
        if fqn.endswith("inv_freq"):
            buffer.zero_()  # a .ptn starts its non-persistent buffers at zero
    inputs = spec.calls[0][1]
    if name.endswith("_tiny"):
        return (lambda *xs: module(*xs).logits), inputs
    return module, inputs


def replayed(runner: ProgramRunner, inputs: tuple[Any, ...]) -> ProgramRunner:
    """A copy of ``runner`` whose steps return what the real operators returned for
    ``inputs``, without computing anything."""
    plan = runner._plans["forward"]
    values = plan.template.copy()
    for given, value in zip(plan.inputs, inputs, strict=True):
        values[given.slot] = value
    steps = []
    for fn, args, kwargs, store, _freed in plan.steps:
        result = fn(*[values[a] for a in args], **{k: values[s] for k, s in kwargs})
        if isinstance(store, int):
            values[store] = result
        elif store is not None:
            for slot, item in zip(store, result, strict=True):
                values[slot] = item

        def recorded(*_: Any, _result: Any = result, **__: Any) -> Any:
            return _result

        steps.append((recorded, args, kwargs, store, ()))  # nothing freed: results are kept
    copy = object.__new__(ProgramRunner)
    copy.__dict__.update(runner.__dict__)
    copy._plans = {"forward": dataclasses.replace(plan, steps=steps)}
    return copy


def per_call(fn: Callable[[], Any], calls: int) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench(name: str, rounds: int, calls: int) -> dict[str, float]:
    module, inputs = eager(name)
    runner = ptn.torch.load_program(REAL / f"{name}.ptn")
    with torch.inference_mode():
        (ours,) = runner.run("forward", *inputs)
        torch.testing.assert_close(ours, module(*inputs))  # the same computation
        bare = replayed(runner, inputs)
        nodes = len(runner._plans["forward"].steps)
        jobs = {
            "eager": lambda: module(*inputs),
            "run": lambda: runner.run("forward", *inputs),
            "interpreter": lambda: bare.run("forward", *inputs),
        }
        for job in jobs.values():  # warm-up
            per_call(job, 3)
        medians: dict[str, list[float]] = {k: [] for k in jobs}
        ratios = []
        for _ in range(rounds):
            for key, job in jobs.items():
                medians[key].append(per_call(job, calls))
            ratios.append(medians["run"][-1] / medians["eager"][-1])
    result = {k: statistics.median(v) for k, v in medians.items()}
    result["ratio"] = statistics.median(ratios)
    result["nodes"] = nodes
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--only", nargs="*", choices=sorted(BUILDERS), default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {args.rounds} rounds of "
          f"{args.calls} calls each\n")  # fmt: skip
    print(
        "| package | steps | eager per call | run per call | run / eager | interpreter per step |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name in args.only or BUILDERS:
        r = bench(name, args.rounds, args.calls)
        print(
            f"| {name} | {r['nodes']:.0f} | {r['eager'] * 1e6:,.0f} µs | {r['run'] * 1e6:,.0f} µs "
            f"| {r['ratio']:.2f}x | {r['interpreter'] / r['nodes'] * 1e6:.2f} µs |"
        )


if __name__ == "__main__":
    main()
