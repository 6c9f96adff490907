"""triu of a Fortran-ordered input against the same call on a C-ordered one,
each in fresh interpreters, where users meet it: the first call (its result's
pages new) and the best of five.

    python bench/bench_fortran.py [--rounds 5] [--sizes 2048 3000]

Each round starts one interpreter per size and order; the table is each
case's median over the rounds, and F's time over C's (at most 2 is the
target). Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CALL = r"""
import sys, time
import numpy as np
import trilu
n, order = int(sys.argv[1]), sys.argv[2]
x = np.random.default_rng(0).random((n, n))
if order == "F":
    x = np.asfortranarray(x)
times = []
for _ in range(5):
    start = time.perf_counter()
    result = trilu.triu(x)
    times.append(time.perf_counter() - start)
    del result
print(times[0], min(times))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 3000])
    args = parser.parse_args()
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [src, os.environ.get("PYTHONPATH")]))}  # fmt: skip
    runs: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for _ in range(args.rounds):
        for n in args.sizes:
            for order in ("C", "F"):
                out = subprocess.run(
                    [sys.executable, "-c", CALL, str(n), order],
                    env=env, capture_output=True, text=True, check=True,
                ).stdout.split()  # fmt: skip
                runs.setdefault((n, order), []).append((float(out[0]), float(out[1])))
    print("| n | call | C | F | F / C |")
    print("|---|---|---:|---:|---:|")
    for n in args.sizes:
        for i, call in enumerate(("first", "best of 5")):
            c = statistics.median(t[i] for t in runs[(n, "C")])
            f = statistics.median(t[i] for t in runs[(n, "F")])
            print(
                f"| {n} | {call} | {c * 1e3:.2f} ms | {f * 1e3:.2f} ms | {f / c:.2f} |"
            )


if __name__ == "__main__":
    main()
