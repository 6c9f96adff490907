"""Small calls of two builds of trilu, side by side: each call's cost in units
of numpy's allocation of its result.

    python bench/small_ab.py SRC_A SRC_B [--rounds 6] [--instructions]

SRC_A and SRC_B are ``src`` folders of two built trees (``setup.py
build_ext --inplace``); nothing is installed: each measurement is a fresh
interpreter with that folder first on ``PYTHONPATH``, the two builds in
turn.

- Times (the default): each interpreter times every call and its floor
  interleaved (best of 7 x 10,000 calls) and reports their ratios; the table
  is each build's best (lowest) and median ratio over the rounds. On a
  shared machine, the best is the steadier.
- ``--instructions``: the instructions each call executes, counted by
  valgrind's callgrind (a loop of N calls less a loop of none, over N; one
  thread, one hash seed, no garbage collection): within a percent or two
  from run to run, whatever else the machine runs.

Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

_SETUP = """
import numpy as np
import trilu

x = np.arange(20).reshape(4, 5)
a = np.ones((4, 4))
o = np.empty_like(a)
triu, trilu_, pack, empty_like, empty = (
    trilu.triu, trilu.trilu, trilu.pack, np.empty_like, np.empty)
"""
# the call, and its floor: numpy's allocation of the result
CALLS = {
    "triu(x) 4x5 int64": ("triu(x)", "empty_like(x)"),
    "trilu(x, 0)": ("trilu_(x, 0)", "empty_like(x)"),
    "triu(a, out=o) 4x4 f64": ("triu(a, out=o)", "empty_like(a)"),
    "pack(a)": ("pack(a)", "empty(10)"),
}

_TIMES = (
    _SETUP
    + """
import json, sys, timeit
ratios = {}
for name, pair in json.loads(sys.argv[1]).items():
    best = [float("inf")] * 2
    for _ in range(7):
        for i, stmt in enumerate(pair):
            time = timeit.timeit(stmt, number=10_000, globals=globals())
            best[i] = min(best[i], time)
    ratios[name] = best[0] / best[1]
print(json.dumps({"file": trilu.__file__, "ratios": ratios}))
"""
)

_LOOP = (
    _SETUP
    + """
import gc, sys
stmt, n = sys.argv[1], int(sys.argv[2])
for _ in range(50):  # warm: the first calls fill caches (dtypes, fills)
    exec(stmt)
gc.disable()  # a collection falls where it will
exec(compile(f"for _ in range({n}):\\n    {stmt}\\n", "<loop>", "exec"))
"""
)
_CALLS_COUNTED = 5000


def _run(src: str, argv: list[str], prefix: list[str] | None = None) -> str:
    env = dict(os.environ, PYTHONPATH=src)
    if prefix:  # counted: one thread (idle pools' spinning counts), one hash seed
        env.update(TRILU_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONHASHSEED="0")
    proc = subprocess.run(
        [*(prefix or []), sys.executable, "-c", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    return proc.stdout + proc.stderr


def times(src: str) -> dict[str, float]:
    result = json.loads(_run(src, [_TIMES, json.dumps(CALLS)]))
    if not result["file"].startswith(str(Path(src).resolve())):
        raise SystemExit(f"{src}: imported {result['file']} instead")
    ratios: dict[str, float] = result["ratios"]
    return ratios


def _instructions(src: str, stmt: str, n: int) -> int:
    grind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    output = _run(src, [_LOOP, stmt, str(n)], grind)
    return int(re.search(r"refs:\s*([\d,]+)", output)[1].replace(",", ""))  # type: ignore[index]


def instructions(src: str) -> dict[str, float]:
    """Each call's instructions over its floor's."""

    def per_call(stmt: str) -> float:
        total = _instructions(src, stmt, _CALLS_COUNTED)
        return (total - _instructions(src, stmt, 0)) / _CALLS_COUNTED

    return {name: per_call(c) / per_call(f) for name, (c, f) in CALLS.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--instructions", action="store_true")
    args = parser.parse_args()
    if args.instructions:
        a, b = instructions(args.a), instructions(args.b)
        print(f"{'call':24} {'A':>7} {'B':>7}   (instructions, x its floor's)")
        for name in CALLS:
            print(f"{name:24} {a[name]:7.2f} {b[name]:7.2f}")
    else:
        runs: dict[str, list[dict[str, float]]] = {args.a: [], args.b: []}
        for _ in range(args.rounds):
            for src in (args.a, args.b):
                runs[src].append(times(src))
        print(f"{'call':24} {'A best':>7} {'B best':>7} {'A med':>7} {'B med':>7}")
        for name in CALLS:
            ra, rb = ([r[name] for r in runs[s]] for s in (args.a, args.b))
            figures = (min(ra), min(rb), statistics.median(ra), statistics.median(rb))
            print(f"{name:24}" + "".join(f" {f:7.2f}" for f in figures))
        print(f"(time, x its floor's; {args.rounds} rounds)")
    print(f"A = {args.a}\nB = {args.b}")


if __name__ == "__main__":
    main()
