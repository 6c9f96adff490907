"""The operations beyond numpy's triu/tril, beside the numpy way of each.

    python bench/bench_toolkit.py [--quick] [--json bench/results/toolkit.json]

Ratios are the numpy way's time over trilu's (> 1: trilu is faster), medians
over interleaved rounds in one process (bench.py's ``measure``); masks and
index arrays that the numpy way needs are made once, outside the timing:

- ``tril(x, fill=-inf)`` against ``np.where(mask, x, -inf)``, and against
  ``tril(x)`` with zeros (what the fill costs);
- ``band(x, -8, 8)`` against ``np.triu(np.tril(x, 8), -8)``;
- ``pack(x)`` against ``x[r, c]``, ``unpack(v, n)`` against
  ``o = np.zeros(...); o[r, c] = v``;
- ``mirror(x)`` against ``np.where(j >= i, x, x.T)``, fresh and in place.

``--json PATH`` writes the rows as a results file of bench/report.py's schema
(``"kind": "grid"``, the cases' class ``"toolkit"``). Nothing here is a test:
no time is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from bench import environment, fmt_ratio, fmt_time, measure, median, ratio, write_json

SHAPES = [
    ((2048, 2048), "float64"),
    ((64, 128, 128), "float32"),
    ((300, 300), "float64"),
]


def _unpacked(v: np.ndarray, n: int, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    o = np.zeros(v.shape[:-1] + (n, n), v.dtype)
    o[..., r, c] = v
    return o


def _mirrored(x: np.ndarray, upper: np.ndarray) -> np.ndarray:
    return np.where(upper, x, np.swapaxes(x, -1, -2))


def cases(x: np.ndarray) -> list[tuple[str, dict[str, Callable[[], Any]], str]]:
    """(name, {"trilu": ..., peer: ...}, peer) for each operation on x."""
    n = x.shape[-1]
    lower = np.tril(np.ones((n, n), bool))
    r, c = np.triu_indices(n)
    v = x[..., r, c]
    i = np.arange(n)
    upper = i >= i[:, None]
    y = x.copy()
    p = functools.partial
    return [
        ("tril fill=-inf", {"trilu": p(trilu.tril, x, fill=-np.inf),
                            "where": p(np.where, lower, x, -np.inf)}, "where"),
        ("tril fill=-inf", {"trilu": p(trilu.tril, x, fill=-np.inf),
                            "zeros": p(trilu.tril, x)}, "zeros"),
        ("band(-8, 8)", {"trilu": p(trilu.band, x, -8, 8),
                         "triu(tril)": lambda: np.triu(np.tril(x, 8), -8)},
         "triu(tril)"),
        ("pack", {"trilu": p(trilu.pack, x), "x[r, c]": lambda: x[..., r, c]},
         "x[r, c]"),
        ("unpack", {"trilu": p(trilu.unpack, v, n),
                    "o[r, c] = v": p(_unpacked, v, n, r, c)}, "o[r, c] = v"),
        ("mirror", {"trilu": p(trilu.mirror, x), "where": p(_mirrored, x, upper)},
         "where"),
        ("mirror in place", {"trilu": p(trilu.mirror, y, out=y),
                             "where": p(_mirrored, x, upper)}, "where"),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    parser.add_argument("--json", metavar="PATH", help="write the results file here")
    args = parser.parse_args()
    rounds, min_sample = (3, 0.005) if args.quick else (9, 0.02)
    date = dt.datetime.now(dt.timezone.utc)
    print(f"# trilu beyond numpy\n\n{environment()}\n")
    print("| case | trilu | numpy way / trilu |\n|---|---:|---:|")
    rows = []
    for shape, dtype in SHAPES:
        x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
        for op, fns, peer in cases(x):
            times = measure(fns, rounds, min_sample)
            name = f"{op} {'x'.join(map(str, shape))} {dtype} vs {peer}"
            print(
                f"| {name} | {fmt_time(median(times, 'trilu'))} | "
                f"{fmt_ratio(ratio(times, peer))} |"
            )
            result = fns["trilu"]()
            rows.append(
                {
                    "name": name,
                    "class": "toolkit",
                    "op": op.split()[0].split("(")[0],
                    "mode": "in place" if "in place" in op else "fresh",
                    "shape": list(shape),
                    "dtype": dtype,
                    "k": 0,
                    "layout": "C",
                    "result_bytes": result.nbytes,
                    "kept_fraction": None,
                    "trilu_s": median(times, "trilu"),
                    "ratios": {peer: ratio(times, peer)},
                }
            )
    if args.json:
        write_json(args.json, date, rows)


if __name__ == "__main__":
    main()
