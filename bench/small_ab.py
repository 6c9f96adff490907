"""Small calls, each in units of numpy's allocation of its result (its
floor), and mid-size results, each in units of numpy's copy of the same
bytes, for one build of trilu or two side by side.

    python bench/small_ab.py SRC [SRC_B] [--rounds 6] [--only small|mid]
        [--instructions] [--json bench/results/small.json]

SRC (and SRC_B) are ``src`` folders of built trees (``setup.py build_ext
--inplace``); nothing is installed: each measurement is a fresh interpreter
with that folder first on ``PYTHONPATH``, the builds in turn, ``--rounds``
times. With two, the first is the one to compare with (the previous main)
and the second the one measured.

The cases, of two classes (``--only`` runs one):

- "small": each public function's call on a small input, against numpy's
  allocation of its result;
- "mid": ``triu(x)`` against ``x.copy()`` and ``triu(x, out=o)`` against
  ``np.copyto(o, x)`` (and ``tril(x, -1)`` likewise, for two dtypes), for
  results of 4 KiB to 512 KiB of every plain numeric dtype, square and a
  batch of 4 matrices of the same bytes, in cache: there each row's cost
  decides.

- Times (the default): each interpreter times every call and its floor
  interleaved (best of 7 timings, each of 10,000 small calls, or of as
  many mid-size calls as a copy makes in about a millisecond) and reports
  their ratios; the table is each build's median ratio over the rounds,
  and its lowest. On a shared machine a round can catch the floor slowed
  down throughout, which makes that round's ratio low: the median holds.
- ``--instructions``: the instructions each call executes, over its floor's,
  counted by valgrind's callgrind (a loop of N calls less a loop of none,
  over N; one thread, one hash seed, no garbage collection): within a
  percent or two from run to run, whatever else the machine runs.

``--json PATH`` writes the measured build's figures (and the other's, as
"previous") as a results file of bench/report.py's schema, ``"kind":
"small"``: each case's class, median time ratio, its lowest, its target (the
most it may be; a mid-size case's shape, dtype and bytes too) and, with
``--instructions`` too, its instructions' ratio (both measures in one run).
Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import math
import os
import re
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench import write_json

_SETUP = f"""
import sys
sys.path.insert(0, {str(Path(__file__).parent)!r})
from cases import placed  # out= apart from x: no 4K aliasing
import numpy as np
import trilu

x = np.arange(20).reshape(4, 5)
a = np.ones((4, 4))
b = np.ones((2, 4, 4))
o = np.empty_like(a)
v = np.ones(10)
minus_inf = -np.inf
intp = np.intp
from numpy import copyto, empty, empty_like, ones
from trilu import (
    attention_mask, band, band_mask, mirror, pack, tri, tril, tril_indices,
    tril_indices_from, triu, triu_indices, triu_indices_from, unpack)
onnx_trilu = trilu.trilu
"""


@dataclass(frozen=True)
class Case:
    """A call timed against its floor, in _SETUP's names and its own."""

    call: str
    floor: str  # numpy's making of the same result: its allocation, or a copy
    target: float  # the most the call's time over its floor's may be
    cls: str = "small"
    setup: str = ""  # run once before the timings: the case's inputs
    number: int = 10_000  # calls a timing makes
    shape: tuple[int, ...] = ()  # a mid-size case's input
    dtype: str = ""

    @property
    def record(self) -> dict[str, Any]:
        """What the results file says of the case besides its figures."""
        fields = {
            "class": self.cls, "op": self.call.partition("(")[0],
            "mode": "out" if "out=" in self.call else "fresh",
            "call": self.call, "floor": self.floor, "target": self.target,
        }  # fmt: skip
        if self.shape:
            fields.update(
                shape=list(self.shape), dtype=self.dtype,
                result_bytes=math.prod(self.shape) * np.dtype(self.dtype).itemsize,
            )  # fmt: skip
        return fields


# the small calls, on _SETUP's inputs, each against numpy's allocation of its
# result; the targets (the masks made from nothing: tri's)
SMALL: dict[str, Case] = {
    "triu(x) 4x5 int64": Case("triu(x)", "empty_like(x)", 1.4),
    "tril(x, -1) 4x5 int64": Case("tril(x, -1)", "empty_like(x)", 1.4),
    "triu(b) 2x4x4 f64": Case("triu(b)", "empty_like(b)", 1.4),
    "trilu(x, 0)": Case("onnx_trilu(x, 0)", "empty_like(x)", 1.5),
    "triu(a, out=o) 4x4 f64": Case("triu(a, out=o)", "empty_like(a)", 1.2),
    "tril(a, fill=-inf)": Case("tril(a, fill=minus_inf)", "empty_like(a)", 2.0),
    "triu(x, fill=7)": Case("triu(x, fill=7)", "empty_like(x)", 2.0),
    "band(a, -1, 1)": Case("band(a, -1, 1)", "empty_like(a)", 2.0),
    "pack(a)": Case("pack(a)", "empty(10)", 3.0),
    "unpack(v) 10 elements": Case("unpack(v)", "empty((4, 4))", 3.0),
    "mirror(a)": Case("mirror(a)", "empty_like(a)", 3.0),
    "tri(4)": Case("tri(4)", "empty((4, 4))", 3.0),
    "band_mask(4, None, -1, 1)": Case(
        "band_mask(4, None, -1, 1)", "empty((4, 4), bool)", 3.0
    ),
    "attention_mask(4)": Case("attention_mask(4)", "empty((4, 4), bool)", 3.0),
    "triu_indices(4)": Case("triu_indices(4)", "empty((2, 10), intp)", 4.0),
    "tril_indices(4, -1)": Case("tril_indices(4, -1)", "empty((2, 6), intp)", 4.0),
    "triu_indices_from(a)": Case("triu_indices_from(a)", "empty((2, 10), intp)", 4.0),
    "tril_indices_from(a)": Case("tril_indices_from(a)", "empty((2, 10), intp)", 4.0),
}

# Every plain numeric dtype, by width: bool, uint8, numpy's signed integers,
# its floats and complexes (long double aside: its width is the platform's).
MID_DTYPES = sorted(
    {np.dtype(c).name for c in "?B" + np.typecodes["Integer"] + np.typecodes["AllFloat"]
     if c not in "gG"},
    key=lambda name: (np.dtype(name).itemsize, "biufc".index(np.dtype(name).kind)),
)  # fmt: skip
MID_SIZES = [4 << 10, 16 << 10, 64 << 10, 512 << 10]  # the results' bytes
BATCH = 4  # matrices in a batched case, of the same bytes as the square one
# The floors as speeds (the copy's time over trilu's), a fresh
# result's and out='s, each band from the size it starts at. A size where two
# bands meet takes the upper one, the stricter: 16 KiB is held to 16-64 KiB's
# figures, 64 KiB to 64 KiB-1 MiB's.
BANDS = [(4 << 10, 0.4, 0.5), (16 << 10, 0.5, 0.6), (64 << 10, 0.75, 0.8)]
# tril walks the rows triu does, the other way: the narrowest dtype and a
# wide one show it
TRIL_DTYPES = ("int8", "float64")
# A mid-size timing's calls: as many as a copy in cache makes in about a
# millisecond (TIMED_BYTES), each call's fixed cost counted as the bytes the
# copy writes meanwhile (CALL_BYTES), so that every timing is as long,
# whatever the size, and long beside the clock's resolution and its jitter.
TIMED_BYTES = 64 << 20
CALL_BYTES = 16 << 10


def _mid() -> dict[str, Case]:
    """triu (and tril) of every dtype and size, square and batched, a fresh
    result against x.copy() and out= against np.copyto, as trilu's time over
    the copy's: the most it may be is 1 over the issue's speed."""
    cases = {}
    for dtype, size, batch in itertools.product(MID_DTYPES, MID_SIZES, (1, BATCH)):
        side = math.isqrt(size // np.dtype(dtype).itemsize // batch)
        shape = (side, side) if batch == 1 else (batch, side, side)
        fresh, out = next(b[1:] for b in reversed(BANDS) if b[0] <= size)
        number = TIMED_BYTES // (size + CALL_BYTES)
        setup = f"x = ones({shape}, {dtype!r}); o = placed(x, x)"
        ops = ("triu(x", "tril(x, -1") if dtype in TRIL_DTYPES else ("triu(x",)
        for op in ops:
            for call, floor, speed in [
                (f"{op})", "x.copy()", fresh),
                (f"{op}, out=o)", "copyto(o, x)", out),
            ]:
                name = f"{call} {'x'.join(map(str, shape))} {dtype}"
                cases[name] = Case(
                    call, floor, 1 / speed, "mid", setup, number, shape, dtype
                )
    return cases


CASES = {**SMALL, **_mid()}
CLASSES = list(dict.fromkeys(case.cls for case in CASES.values()))

_TIMES = (
    _SETUP
    + """
import json, sys, timeit
ratios, times = {}, {}
for name, (setup, call, floor, number) in json.loads(sys.argv[1]).items():
    space = dict(globals())  # each case's inputs in a namespace of its own
    exec(setup, space)
    best = [float("inf")] * 2
    for _ in range(7):
        for i, stmt in enumerate((call, floor)):
            time = timeit.timeit(stmt, number=number, globals=space)
            best[i] = min(best[i], time / number)
    ratios[name] = best[0] / best[1]
    times[name] = best[0]
print(json.dumps({"file": trilu.__file__, "ratios": ratios, "times": times}))
"""
)

_LOOP = (
    _SETUP
    + """
import gc, sys
setup, stmt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
exec(setup)
for _ in range(50):  # warm: the first calls fill caches (dtypes, fills)
    exec(stmt)
gc.disable()  # a collection falls where it will
exec(compile(f"for _ in range({n}):\\n    {stmt}\\n", "<loop>", "exec"))
"""
)
# calls counted: as many as a timing makes, up to this: a count is exact, and
# a few thousand calls average out the allocator's paths
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


def times(src: str, cases: dict[str, Case]) -> dict[str, Any]:
    """One interpreter's ratios (call over floor) and call times, by name."""
    specs = {name: (c.setup, c.call, c.floor, c.number) for name, c in cases.items()}
    result: dict[str, Any] = json.loads(_run(src, [_TIMES, json.dumps(specs)]))
    if not result["file"].startswith(str(Path(src).resolve())):
        raise SystemExit(f"{src}: imported {result['file']} instead")
    return result


def _instructions(src: str, setup: str, stmt: str, n: int) -> int:
    grind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    output = _run(src, [_LOOP, setup, stmt, str(n)], grind)
    return int(re.search(r"refs:\s*([\d,]+)", output)[1].replace(",", ""))  # type: ignore[index]


def instructions(src: str, cases: dict[str, Case]) -> dict[str, float]:
    """Each call's instructions over its floor's."""

    def per_call(case: Case, stmt: str) -> float:
        n = min(_CALLS_COUNTED, case.number)
        total = _instructions(src, case.setup, stmt, n)
        return (total - _instructions(src, case.setup, stmt, 0)) / n

    return {
        name: per_call(case, case.call) / per_call(case, case.floor)
        for name, case in cases.items()
    }


def _records(
    cases: dict[str, Case],
    runs: list[dict[str, Any]],
    previous: list[dict[str, Any]] | None,
    counts: list[dict[str, float]],
) -> list[dict[str, Any]]:
    """The results file's cases: the measured build's median and lowest ratio
    over the rounds (and the previous build's median), its instructions'
    ratio where counted (and the previous build's), with each target."""
    rows = []
    for name, case in cases.items():
        ratios = [r["ratios"][name] for r in runs]
        before = [r["ratios"][name] for r in previous or []]
        rows.append({
            "name": name, **case.record,
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
    parser.add_argument("--only", choices=CLASSES, help="one class of cases")
    parser.add_argument("--instructions", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    if len(args.srcs) > 2:
        parser.error("one src folder, or two: the previous build and the measured one")
    srcs = args.srcs
    cases = {n: c for n, c in CASES.items() if args.only in (None, c.cls)}
    width = max(map(len, cases))
    label = "  ".join(f"{'AB'[i]} = {s}" for i, s in enumerate(srcs))
    date = dt.datetime.now(dt.timezone.utc)
    counts = [instructions(s, cases) for s in srcs] if args.instructions else []
    if counts:
        print(f"{'call':{width}}" + "".join(f" {'AB'[i]:>7}" for i in range(len(srcs))))
        for name in cases:
            print(f"{name:{width}}" + "".join(f" {c[name]:7.2f}" for c in counts))
        print(f"(instructions, x its floor's)\n{label}")
        if not args.json:
            return
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in srcs}
    for _ in range(args.rounds):
        for src in srcs:
            runs[src].append(times(src, cases))
    measured, previous = runs[srcs[-1]], runs[srcs[0]] if len(srcs) == 2 else None
    rows = _records(cases, measured, previous, counts)
    print(f"{'call':{width}} {'target':>7} {'median':>7} {'lowest':>7} {'before':>7}")
    for row in rows:
        before = f"{row['previous']:7.2f}" if row["previous"] is not None else "      -"
        print(f"{row['name']:{width}} {row['target']:7.2f} {row['ratios']['floor']:7.2f} "
              f"{row['lowest']:7.2f} {before}")  # fmt: skip
    print(f"(time, x its floor's; {args.rounds} rounds)\n{label}")
    if args.json:
        write_json(args.json, date, rows, kind="small")


if __name__ == "__main__":
    main()
