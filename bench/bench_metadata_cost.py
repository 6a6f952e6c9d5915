"""Metadata cost per item: ptn against jsonschema-rs at 1k/100k names and 1M-value lists.

    python bench/bench_metadata_cost.py [--runs 5] [--quick]

Every figure is a median of ``--runs`` timings (after one warm-up) taken in this run, and
every ratio divides by a baseline timed in the same run:

- parse: ``Metadata.parse(bytes)`` against jsonschema-rs validating ``json.loads(bytes)``
  with schema/metadata.schema.json (the baseline parses too; ptn also applies strict JSON
  and the cross-field rules);
- ``Metadata(dict)``: against the same jsonschema-rs call on the dict alone, and against
  ``Metadata.parse`` of the same document (the target: at most 1.5x parse);
- dumps: ``Metadata.dumps()`` against ``json.dumps(values, sort_keys=True)`` of the same
  values, and against jsonschema-rs.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable

import jsonschema_rs
from bench_metadata import names_document  # this folder is on sys.path when run as a script

from ptn import Metadata
from ptn.core.resources import load_schema


def cases(scale: int) -> dict[str, dict[str, object]]:
    million = 1_000_000 // scale
    return {
        f"{1000:,} names": names_document(1000),
        f"{100_000 // scale:,} names": names_document(100_000 // scale),
        f"{million:,} ints": {"x.ints": [i * 7919 - 10**6 for i in range(million)]},
        f"{million:,} floats": {"x.floats": [i / 7 for i in range(million)]},
        f"{million:,} ints and floats": {
            "x.mixed": [i if i % 2 else i / 7 for i in range(million)]
        },
    }


def medians(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Seconds per call of each function: the median of ``runs`` rounds, interleaved.

    CPU time of this process (``time.process_time``): the machine is shared, and wall
    time would mostly measure the other processes. A round repeats a call until it has
    taken 50 ms, so small documents are not timed at the clock's resolution.
    """
    repeat = {}
    for name, fn in fns.items():  # warm-up, and the repeat count of each
        start = time.process_time()
        fn()
        repeat[name] = max(1, int(0.05 / max(time.process_time() - start, 1e-6)))
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            gc.collect()
            start = time.process_time()
            for _ in range(repeat[name]):
                fn()
            samples[name].append((time.process_time() - start) / repeat[name])
    return {name: statistics.median(times) for name, times in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="1/10 of every size")
    args = parser.parse_args()
    rs = jsonschema_rs.validator_for(load_schema("metadata"))
    print(f"medians of {args.runs}; ratios against a baseline timed in the same run\n")
    print(
        "| document | jsonschema-rs (loads + validate) | ptn parse | ratio "
        "| `Metadata(dict)` | x rs on the dict | x parse |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    dump_rows = []
    for label, values in cases(10 if args.quick else 1).items():
        data = json.dumps(values).encode()
        assert rs.is_valid(json.loads(data))
        Metadata.parse(data)
        meta = Metadata(values)
        fns: dict[str, Callable[[], object]] = {
            "rs": lambda: rs.is_valid(json.loads(data)),  # noqa: B023
            "rs dict": lambda: rs.is_valid(values),  # noqa: B023
            "parse": lambda: Metadata.parse(data),  # noqa: B023
            "build": lambda: Metadata(values),  # noqa: B023
        }
        dumping = "ints" in label and "floats" not in label
        if dumping:
            fns["json.dumps"] = lambda: json.dumps(values, sort_keys=True, separators=(",", ":"))  # noqa: B023
            fns["dumps"] = meta.dumps
        t = medians(fns, args.runs)
        base, parse, build = t["rs"], t["parse"], t["build"]
        print(
            f"| {label}, {len(data) / 1e6:.2f} MB | {base * 1e3:.2f} ms | {parse * 1e3:.2f} ms "
            f"| **{parse / base:.2f}x** | {build * 1e3:.2f} ms | {build / t['rs dict']:.2f}x "
            f"| **{build / parse:.2f}x** |"
        )
        if dumping:
            dump_rows.append((label, t["json.dumps"], t["dumps"], base))
    print("\n| saving | json.dumps (sorted, compact) | `Metadata.dumps()` | ratio | x rs parse |")
    print("| --- | --- | --- | --- | --- |")
    for label, plain, dumps, base in dump_rows:
        print(
            f"| {label} | {plain * 1e3:.2f} ms | {dumps * 1e3:.2f} ms | **{dumps / plain:.2f}x** "
            f"| {dumps / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
