"""The program verifier's cost per byte, against ExecuTorch's own reader of the same bytes.

    python bench/bench_program.py [--runs 7] [--nodes 10000]

Two programs: the largest ExecuTorch export of the fixtures (tests/fixtures/real/
llama_tiny.ptn's program.ptg, written by ExecuTorch 1.5.1) and a synthetic graph of
``--nodes`` operator nodes written by ptn's builder (each node an ``aten.add`` of the
previous value and a bound constant, with an integer argument, its output and its
tensor metadata). On each, in one run and interleaved (ours, theirs, ours...):

- ``ptn``: ``ptn.program.read.read_program`` (envelope, version, the one verifying and
  decoding walk, the method rules);
- ``executorch``: ``deserialize_program`` of ExecuTorch 1.5.1 (its bundled ``flatc``
  converts the buffer to JSON in a subprocess, then Python builds its dataclasses; it
  verifies nothing, see tests/test_program.py).

Each figure is the median of ``--runs`` rounds after a warm-up round; the ratio is the
median of each round's ratio (ptn / executorch), so machine drift hits both. Needs
executorch (``bash .ci/install-executorch.sh``).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ptn.program.build import build_program
from ptn.program.read import read_program

REPO = Path(__file__).resolve().parent.parent
LLAMA = REPO / "tests" / "fixtures" / "real" / "llama_tiny.ptn"


def synthetic(nodes: int) -> bytes:
    """A method of ``nodes`` add nodes chained through their outputs, each adding a bound
    constant (one per 64 nodes), in ExecuTorch's shape: placeholders, calls, one output."""
    meta = {"dtype": "FLOAT", "sizes": [{"min": 8, "max": 8}, {"min": 64, "max": 64}],
            "dim_order": [0, 1]}  # fmt: skip
    consts = [f"p_w{i}" for i in range(max(1, nodes // 64))]
    graph_nodes: list[dict[str, Any]] = [
        {"name": n, "op_kind": "PLACEHOLDER", "outputs": [{"name": n}]} for n in ["x", *consts]
    ]
    values = [{"name": "x", "meta": meta}]
    previous = "x"
    for i in range(nodes):
        name = f"aten_add_tensor_{i}"
        graph_nodes.append(
            {
                "name": name,
                "target": "torch.ops.aten.add.Tensor",
                "inputs": [
                    {"name": "self", "arg": {"value": ("TensorArg", {"name": previous})}},
                    {
                        "name": "other",
                        "arg": {"value": ("TensorArg", {"name": consts[i // 64 % len(consts)]})},
                    },
                    {"name": "alpha", "arg": {"value": ("IntArg", {"value": 1})}},
                ],
                "outputs": [{"name": name}],
            }
        )
        values.append({"name": name, "meta": meta})
        previous = name
    graph_nodes.append(
        {
            "name": "output",
            "op_kind": "OUTPUT",
            "inputs": [{"arg": {"value": ("TensorArg", {"name": previous})}}],
        }
    )
    method = {
        "name": "forward",
        "graph": {
            "nodes": graph_nodes,
            "inputs": ["x"],
            "outputs": [previous],
            "tensor_values": values,
        },
        "constants": [
            {"name": c, "data_key": c[2:], "meta": meta, "kind": "PARAMETER"} for c in consts
        ],
        "output_specs": [{"name": previous}],
    }
    return build_program({"version": "1", "methods": [method]})


def interleaved(jobs: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    """Seconds of each job in each round: a warm-up round, then ``runs`` rounds."""
    samples: dict[str, list[float]] = {name: [] for name in jobs}
    for round_ in range(runs + 1):
        for name, job in jobs.items():
            start = time.perf_counter()
            job()
            if round_:
                samples[name].append(time.perf_counter() - start)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--nodes", type=int, default=10_000)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # executorch's import speaks about torch internals
    from executorch.backends.native.serialization.graph_serialize import deserialize_program

    with zipfile.ZipFile(LLAMA) as z:
        llama = z.read("program.ptg")
    programs = {
        "llama_tiny (ExecuTorch 1.5.1)": llama,
        f"synthetic, {args.nodes:,} nodes": synthetic(args.nodes),
    }
    print("| program | bytes | ptn ns/byte | executorch ns/byte | ptn / executorch |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, data in programs.items():
        program, found = read_program(data)
        assert program is not None and found == [], found
        assert len(deserialize_program(data).methods) == len(program.methods)
        samples = interleaved(
            {
                "ptn": lambda d=data: read_program(d),
                "executorch": lambda d=data: deserialize_program(d),
            },
            args.runs,
        )
        ours, theirs = (statistics.median(samples[k]) for k in ("ptn", "executorch"))
        ratio = statistics.median(
            a / b for a, b in zip(samples["ptn"], samples["executorch"], strict=True)
        )
        print(
            f"| {label} | {len(data):,} | {ours / len(data) * 1e9:.0f} | "
            f"{theirs / len(data) * 1e9:.0f} | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
