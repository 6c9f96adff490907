"""Small calls, each in units of numpy's allocation of its result (its
floor), for one build of trilu or two side by side.

    python bench/small_ab.py SRC [SRC_B] [--rounds 6] [--instructions]
        [--json bench/results/small.json]

SRC (and SRC_B) are ``src`` folders of built trees (``setup.py build_ext
--inplace``); nothing is installed: each measurement is a fresh interpreter
with that folder first on ``PYTHONPATH``, the builds in turn, ``--rounds``
times. With two, the first is the one to compare with (the previous main)
and the second the one measured.

- Times (the default): each interpreter times every call and its floor
  interleaved (best of 7 x 10,000 calls each) and reports their ratios; the
  table is each build's median ratio over the rounds, and its lowest. On a
  shared machine a round can catch the floor slowed down throughout, which
  makes that round's ratio low: the median holds.
- ``--instructions``: the instructions each call executes, over its floor's,
  counted by valgrind's callgrind (a loop of N calls less a loop of none,
  over N; one thread, one hash seed, no garbage collection): within a
  percent or two from run to run, whatever else the machine runs.

``--json PATH`` writes the measured build's figures (and the other's, as
"previous") as a results file of bench/report.py's schema, ``"kind":
"small"``: each case's median time ratio, its lowest, its target (the most
it may be) and, with ``--instructions`` too, its instructions' ratio (both
measures in one run). Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench import write_json

_SETUP = """
import numpy as np
import trilu

x = np.arange(20).reshape(4, 5)
a = np.ones((4, 4))
b = np.ones((2, 4, 4))
o = np.empty_like(a)
v = np.ones(10)
minus_inf = -np.inf
intp = np.intp
from numpy import empty, empty_like
from trilu import (
    band, mirror, pack, tri, tril, tril_indices, tril_indices_from, triu,
    triu_indices, triu_indices_from, unpack)
onnx_trilu = trilu.trilu
"""
# name -> (the call, its floor: numpy's allocation of its result, the most
# the ratio may be: the targets)
CALLS: dict[str, tuple[str, str, float]] = {
    "triu(x) 4x5 int64": ("triu(x)", "empty_like(x)", 1.4),
    "tril(x, -1) 4x5 int64": ("tril(x, -1)", "empty_like(x)", 1.4),
    "triu(b) 2x4x4 f64": ("triu(b)", "empty_like(b)", 1.4),
    "trilu(x, 0)": ("onnx_trilu(x, 0)", "empty_like(x)", 1.5),
    "triu(a, out=o) 4x4 f64": ("triu(a, out=o)", "empty_like(a)", 1.2),
    "tril(a, fill=-inf)": ("tril(a, fill=minus_inf)", "empty_like(a)", 2.0),
    "triu(x, fill=7)": ("triu(x, fill=7)", "empty_like(x)", 2.0),
    "band(a, -1, 1)": ("band(a, -1, 1)", "empty_like(a)", 2.0),
    "pack(a)": ("pack(a)", "empty(10)", 3.0),
    "unpack(v) 10 elements": ("unpack(v)", "empty((4, 4))", 3.0),
    "mirror(a)": ("mirror(a)", "empty_like(a)", 3.0),
    "tri(4)": ("tri(4)", "empty((4, 4))", 3.0),
    "triu_indices(4)": ("triu_indices(4)", "empty((2, 10), intp)", 4.0),
    "tril_indices(4, -1)": ("tril_indices(4, -1)", "empty((2, 6), intp)", 4.0),
    "triu_indices_from(a)": ("triu_indices_from(a)", "empty((2, 10), intp)", 4.0),
    "tril_indices_from(a)": ("tril_indices_from(a)", "empty((2, 10), intp)", 4.0),
}

_TIMES = (
    _SETUP
    + """
import json, sys, timeit
ratios, times = {}, {}
for name, (call, floor) in json.loads(sys.argv[1]).items():
    best = [float("inf")] * 2
    for _ in range(7):
        for i, stmt in enumerate((call, floor)):
            time = timeit.timeit(stmt, number=10_000, globals=globals())
            best[i] = min(best[i], time / 10_000)
    ratios[name] = best[0] / best[1]
    times[name] = best[0]
print(json.dumps({"file": trilu.__file__, "ratios": ratios, "times": times}))
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


def times(src: str) -> dict[str, Any]:
    """One interpreter's ratios (call over floor) and call times, by name."""
    pairs = {name: (call, floor) for name, (call, floor, _) in CALLS.items()}
    result: dict[str, Any] = json.loads(_run(src, [_TIMES, json.dumps(pairs)]))
    if not result["file"].startswith(str(Path(src).resolve())):
        raise SystemExit(f"{src}: imported {result['file']} instead")
    return result


def _instructions(src: str, stmt: str, n: int) -> int:
    grind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    output = _run(src, [_LOOP, stmt, str(n)], grind)
    return int(re.search(r"refs:\s*([\d,]+)", output)[1].replace(",", ""))  # type: ignore[index]


def instructions(src: str) -> dict[str, float]:
    """Each call's instructions over its floor's."""

    def per_call(stmt: str) -> float:
        total = _instructions(src, stmt, _CALLS_COUNTED)
        return (total - _instructions(src, stmt, 0)) / _CALLS_COUNTED

    return {name: per_call(c) / per_call(f) for name, (c, f, _) in CALLS.items()}


def _records(
    runs: list[dict[str, Any]],
    previous: list[dict[str, Any]] | None,
    counts: list[dict[str, float]],
) -> list[dict[str, Any]]:
    """The results file's cases: the measured build's median and lowest ratio
    over the rounds (and the previous build's median), its instructions'
    ratio where counted (and the previous build's), with each target."""
    rows = []
    for name, (call, floor, target) in CALLS.items():
        ratios = [r["ratios"][name] for r in runs]
        before = [r["ratios"][name] for r in previous or []]
        rows.append({
            "name": name, "op": call.partition("(")[0], "mode": "fresh",
            "call": call, "floor": floor, "target": target,
            "trilu_s": statistics.median(r["times"][name] for r in runs),
            "ratios": {"floor": statistics.median(ratios)}, "lowest": min(ratios),
            "previous": statistics.median(before) if before else None,
            "instructions": counts[-1][name] if counts else None,
            "previous_instructions": counts[0][name] if len(counts) == 2 else None,
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("srcs", nargs="+", metavar="SRC", help="1 or 2 src folders")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if len(args.srcs) > 2:
        parser.error("one src folder, or two: the previous build and the measured one")
    srcs = args.srcs
    label = "  ".join(f"{'AB'[i]} = {s}" for i, s in enumerate(srcs))
    date = dt.datetime.now(dt.timezone.utc)
    counts = [instructions(s) for s in srcs] if args.instructions else []
    if counts:
        print(f"{'call':24}" + "".join(f" {'AB'[i]:>7}" for i in range(len(srcs))))
        for name in CALLS:
            print(f"{name:24}" + "".join(f" {c[name]:7.2f}" for c in counts))
        print(f"(instructions, x its floor's)\n{label}")
        if not args.json:
            return
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in srcs}
    for _ in range(args.rounds):
        for src in srcs:
            runs[src].append(times(src))
    measured, previous = runs[srcs[-1]], runs[srcs[0]] if len(srcs) == 2 else None
    rows = _records(measured, previous, counts)
    print(f"{'call':24} {'target':>7} {'median':>7} {'lowest':>7} {'before':>7}")
    for row in rows:
        before = f"{row['previous']:7.2f}" if row["previous"] is not None else "      -"
        print(f"{row['name']:24} {row['target']:7.1f} {row['ratios']['floor']:7.2f} "
              f"{row['lowest']:7.2f} {before}")  # fmt: skip
    print(f"(time, x its floor's; {args.rounds} rounds)\n{label}")
    if args.json:
        write_json(args.json, date, rows, kind="small")


if __name__ == "__main__":
    main()
