"""The operations beyond numpy's triu/tril, beside the numpy way of each.

    python bench/bench_toolkit.py [--quick] [--json bench/results/toolkit.json]

Ratios are the numpy way's time over trilu's (> 1: trilu is faster), medians
over interleaved rounds in one process (bench.py's ``measure``); masks and
index arrays that the numpy way needs are made once, outside the timing. The
cases are fixed (2048 x 2048 float64, 64 x 128 x 128 float32, and smaller);
the operations, peers and records are the toolkit classes' of
``bench/sweep.py`` (``toolkit_fns``), which draws the shapes instead:

- ``tril(x, fill=-inf)`` against ``np.where(mask, x, -inf)`` ("where"), and
  against ``tril(x)`` with zeros ("zero fill": what the fill costs);
- ``band(x, -8, 8)`` against ``np.triu(np.tril(x, 8), -8)``;
- ``pack(x)`` against ``x[..., r, c]``, ``unpack(v, n)`` against
  ``o = np.zeros(...); o[..., r, c] = v`` ("scatter");
- ``mirror(x)`` against ``np.where(j >= i, x, x.T)``, fresh and in place
  (mode "inplace", ``out=x``);
- ``pack(x, order="F")`` of a Fortran-ordered x against
  ``x.T[np.tril_indices(n)]`` (the transpose's triangle, column after
  column) and LAPACK's ``?trttp``, ``unpack(v, n, order="F")`` against the
  scatter and ``?tpttr``, and ``unpack(v, k=1, mirror=True)`` against the
  scatter of the triangle and of its transpose;
- each with ``out=`` (mode "out") against ``np.copyto`` of the same bytes,
  where the result has 40 KiB to 1 MiB;
- then the issue's cases (``TARGETS``): ``squareform`` of 4000 points,
  vector to matrix and matrix to vector (its checks on), against scipy's;
  4096 x 4096 causal and sliding-window (w = 256) masks, float32 additive
  and bool, against ``np.where`` of ``np.tri`` masks and ``np.zeros`` +
  ``np.ones`` of the same bytes; ``to_banded(a, 8, 8)`` and
  ``from_banded(ab, 8, 8)`` of 4096 x 4096 float64 against a loop over
  ``np.diagonal`` and ``np.zeros`` with a diagonal's assignment each.

LAPACK's and scipy's peers need scipy, and are left out without it.

``--json PATH`` writes the rows as a results file of bench/report.py's schema
(``"kind": "grid"``, the cases' class ``"toolkit"``). Nothing here is a test:
no time is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from sweep import ToolCase, run_toolkit_case

from bench import cli, environment, fmt_ratio, fmt_time, write_json

SHAPES = [
    ((2048, 2048), "float64"),
    ((64, 128, 128), "float32"),
    ((300, 300), "float64"),
    ((16, 64, 64), "float32"),
    ((128, 128), "float64"),
]


# squareform of 4000 points, both ways; the masks (additive float32 and
# bool; causal and a window of 256) and band storage (8 diagonals each side)
# of 4096 x 4096 matrices.
N = 4096
TARGETS = [
    ToolCase("squareform_v", (4000, 4000), "float64"),
    ToolCase("squareform_m", (4000, 4000), "float64"),
    ToolCase("mask", (N, N), "float32", lo=None, hi=0),
    ToolCase("mask", (N, N), "float32", lo=-255, hi=0),
    ToolCase("mask", (N, N), "bool", lo=None, hi=0),
    ToolCase("mask", (N, N), "bool", lo=-255, hi=0),
    ToolCase("to_banded", (N, N), "float64", lo=-8, hi=8),
    ToolCase("from_banded", (N, N), "float64", lo=-8, hi=8),
]


def cases(shape: tuple[int, ...], dtype: str) -> list[ToolCase]:
    """The toolkit's operations on one shape: tril with fill=-inf, the band
    -8..8, pack and unpack of the upper triangle (row after row, and column
    after column: LAPACK's), mirror of the upper one, unpack mirrored."""
    return [
        ToolCase("fill", shape, dtype, 0, upper=False),
        ToolCase("band", shape, dtype, lo=-8, hi=8),
        ToolCase("pack", shape, dtype, 0),
        ToolCase("unpack", shape, dtype, 0),
        ToolCase("mirror", shape, dtype),
        ToolCase("pack_f", shape, dtype, 0, view="F"),
        ToolCase("unpack_f", shape, dtype, 0),
        ToolCase("unpack_mirror", shape, dtype, 1),
    ]


def main() -> None:
    args, rounds, min_sample, date = cli(__doc__, (3, 0.005), (9, 0.02))
    print(f"# trilu beyond numpy\n\n{environment()}\n")
    print("| case | mode | trilu | numpy way / trilu |\n|---|---|---:|---|")
    rows: list[dict[str, Any]] = []
    every = [case for shape, dtype in SHAPES for case in cases(shape, dtype)]
    for case in every + TARGETS:
        for rec in run_toolkit_case(case, rounds, min_sample):
            rec["class"] = "toolkit"
            rows.append(rec)
            print(
                f"| {rec['name']} | {rec['mode']} | {fmt_time(rec['trilu_s'])} | "
                + ", ".join(f"{p} {fmt_ratio(v)}" for p, v in rec["ratios"].items())
                + " |"
            )
    if args.json:
        write_json(args.json, date, rows)


if __name__ == "__main__":
    main()
