"""numpy's index family, trilu beside numpy: times, ratios and peak memory.

    python bench/bench_indices.py [--quick] [--json bench/results/indices.json]

tri, triu_indices and tril_indices at 100, 1000 and 4000, timed as
bench/bench.py times (interleaved rounds in one process, each ratio the
median of numpy's time over trilu's in the same round), and the peak memory
of one call as tracemalloc sees it (numpy's allocations are traced), over the
bytes of the result. Nothing here is a test: no time is asserted.

``--json PATH`` writes the rows as a results file of bench/report.py's schema
(``"kind": "grid"``, the cases' class ``"indices"``), each case with its
``peak_ratio`` beside.
"""

from __future__ import annotations

import functools
import gc
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from bench import (
    cli,
    environment,
    fmt_ratio,
    fmt_time,
    measure,
    median,
    ratio,
    summary,
    write_json,
)

# numpy's own functions, whatever the patch does
NP = {name: getattr(np, name) for name in ("tri", "triu_indices", "tril_indices")}

# (op, args): the targets at 4000, and smaller sizes
CASES: list[tuple[str, tuple[Any, ...]]] = [
    ("triu_indices", (4000,)),
    ("tril_indices", (4000,)),
    ("triu_indices", (4000, 1)),
    ("tri", (4000,)),
    ("triu_indices", (1000,)),
    ("tri", (1000,)),
    ("tri", (1000, None, 0, np.int8)),
    ("triu_indices", (100,)),
    ("tril_indices", (100, -1)),
    ("tri", (100,)),
]


def label(op: str, args: tuple[Any, ...]) -> str:
    shown = [a.__name__ if isinstance(a, type) else repr(a) for a in args]
    return f"{op}({', '.join(shown)})"


def nbytes(result: Any) -> int:
    arrays = result if isinstance(result, tuple) else (result,)
    return sum(a.nbytes for a in arrays)


def peak_ratio(fn: Callable[[], Any]) -> float:
    """tracemalloc's peak over one call, over the bytes of its result."""
    fn()  # caches warm
    gc.collect()
    tracemalloc.start()
    try:
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak / nbytes(result)


def main() -> None:
    args, rounds, min_sample, date = cli(__doc__, (5, 0.002), (15, 0.01))
    print(f"# trilu's index family\n\n{environment()}\n")
    print("| case | trilu | numpy / trilu | peak / result: trilu | numpy |")
    print("|---|---:|---:|---:|---:|")
    cases = []
    for op, call in CASES:
        fns = {
            "trilu": functools.partial(getattr(trilu, op), *call),
            "numpy": functools.partial(NP[op], *call),
        }
        times = measure(fns, rounds, min_sample)
        peaks = {name: peak_ratio(fn) for name, fn in fns.items()}
        result = fns["trilu"]()
        arrays = result if isinstance(result, tuple) else (result,)
        name = label(op, call)
        print(
            f"| {name} | {fmt_time(median(times, 'trilu'))} | "
            f"{fmt_ratio(ratio(times, 'numpy'))} | {peaks['trilu']:.3f} | "
            f"{peaks['numpy']:.3f} |"
        )
        cases.append(
            {
                "name": name,
                "class": "indices",
                "op": op,
                "mode": "fresh",
                "shape": list(arrays[0].shape),
                "dtype": str(arrays[0].dtype),
                "k": dict(enumerate(call)).get(2 if op == "tri" else 1, 0),
                "layout": "C",
                "result_bytes": nbytes(result),
                "kept_fraction": None,
                **summary(times, ["numpy"]),
                "peak_ratio": peaks,
            }
        )
        del result, arrays
    if args.json:
        write_json(args.json, date, cases)


if __name__ == "__main__":
    main()
