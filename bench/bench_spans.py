"""The span kernel's new cases, through ``trilu._kernel.band`` directly.

    python bench/bench_spans.py [--quick]

Ratios are peer time / trilu time (> 1: trilu is faster), medians over
interleaved rounds in one process (bench.py's ``measure``):

- ``tril(x, fill=-inf)`` against ``np.where(mask, x, -inf)`` with the mask
  precomputed, and against ``tril(x)`` with zeros;
- ``band(x, -8, 8)`` against ``np.triu(np.tril(x, 8), -8)``.

Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path

import numpy as np

from trilu import _kernel

sys.path.insert(0, str(Path(__file__).parent))
from bench import fmt_time, measure, median, ratio

SHAPES = [
    ((2048, 2048), "float64"),
    ((64, 128, 128), "float32"),
    ((300, 300), "float64"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    args = parser.parse_args()
    rounds, min_sample = (3, 0.005) if args.quick else (9, 0.02)
    print("| case | trilu | peer / trilu |\n|---|---:|---:|")
    for shape, dtype in SHAPES:
        x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
        n, m = shape[-2:]
        mask = np.tril(np.ones((n, m), bool))
        inf = np.array(-np.inf, dtype).tobytes()
        name = "x".join(map(str, shape)) + f" {dtype}"
        s = measure(
            {
                "trilu": functools.partial(_kernel.band, x, None, None, 0, inf),
                "where": functools.partial(np.where, mask, x, -np.inf),
                "zeros": functools.partial(_kernel.band, x, None, None, 0),
            },
            rounds,
            min_sample,
        )
        t = fmt_time(median(s, "trilu"))
        print(f"| tril fill=-inf {name} vs np.where | {t} | {ratio(s, 'where'):.2f}x |")
        print(
            f"| tril fill=-inf {name} vs zero fill | {t} | {ratio(s, 'zeros'):.2f}x |"
        )
        s = measure(
            {
                "trilu": functools.partial(_kernel.band, x, None, -8, 8),
                "numpy": lambda x=x: np.triu(np.tril(x, 8), -8),
            },
            rounds,
            min_sample,
        )
        t = fmt_time(median(s, "trilu"))
        print(f"| band(-8, 8) {name} vs triu(tril) | {t} | {ratio(s, 'numpy'):.2f}x |")


if __name__ == "__main__":
    main()
