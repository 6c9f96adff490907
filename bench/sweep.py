"""The shape sweep: trilu on shapes drawn from a seed, class by class.

    python bench/sweep.py [--seed 1] [--per-class 6] [--quick] [--classes a,b]
                          [--json bench/results/sweep-1.json] [--plot sweep.png]

The grid of bench.py holds fixed cases, which a kernel can be tuned to. Here
the sizes, k and dtypes of each class are drawn from a seed, so run it with
several seeds. Each case prints trilu's time and these ratios (peer time /
trilu time, > 1: trilu is faster), each a median over interleaved rounds:

- numpy: ``numpy.triu`` / ``tril``;
- copy: ``x.copy()``, the memcpy floor, for results of 1 MiB or more;
- zeros: ``np.zeros`` of the result's shape, where under 1% is kept;
- copyto: ``trilu.triu(x, k, out=out)`` against ``np.copyto(out, x)``.

A case whose input is not C-ordered is also timed with ``order="K"`` (mode
"order K": the result laid out as the input, against numpy and ``x.copy()``,
which keeps it too), beside numpy's layout (mode "fresh").

The last lines are the worst case of each ratio, by name and by class.
Nothing here is a test: no time is asserted.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import math
import sys
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from bench import cpu_name, fmt_time, machine, measure, median, ratio

MIB = 1 << 20
DTYPES = ["int8", "bool", "int16", "float16", "int32", "float32", "int64",
          "float64", "complex64", "complex128"]  # fmt: skip
CLASSES = ["tall", "wide", "square", "batch", "k", "negstride", "transposed", "dtype"]
TARGETS = {"numpy": 3.0, "copy": 0.9, "zeros": 0.3, "copyto": 0.8}


@dataclass(frozen=True)
class Case:
    """One drawn input: shape, dtype, k, triu or tril, and a view of it."""

    cls: str
    shape: tuple[int, ...]
    dtype: str
    k: int
    upper: bool
    view: str = "C"  # C, F, rows[::-1], cols[::-1], both[::-1], swapaxes

    @property
    def name(self) -> str:
        dims = "x".join(map(str, self.shape))
        view = "" if self.view == "C" else f" {self.view}"
        return f"{self.cls}: {dims} {self.dtype}{view} {self.op} k={self.k}"

    @property
    def op(self) -> str:
        return "triu" if self.upper else "tril"

    def make(self) -> np.ndarray:
        """The input, random bytes of the dtype (bool: 0/1), in the view."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        dtype = np.dtype(self.dtype)
        shape = self.shape
        if self.view == "swapaxes":
            shape = (*shape[:-2], shape[-1], shape[-2])
        if dtype.kind == "b":
            x = rng.random(shape) < 0.5
        else:
            n = math.prod(shape) * dtype.itemsize
            x = rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(shape)
        views = {
            "C": lambda a: a,
            "F": np.asfortranarray,
            "rows[::-1]": lambda a: a[..., ::-1, :],
            "cols[::-1]": lambda a: a[..., :, ::-1],
            "both[::-1]": lambda a: a[..., ::-1, ::-1],
            "swapaxes": lambda a: a.swapaxes(-1, -2),
        }
        return views[self.view](x)

    def kept_fraction(self) -> float:
        rows, cols = self.shape[-2:]
        mask = np.ones((rows, cols), dtype=bool)
        kept = np.triu(mask, self.k) if self.upper else np.tril(mask, self.k)
        return float(np.count_nonzero(kept)) / max(1, rows * cols)


# --- drawing cases ----------------------------------------------------------------


def _log_int(rng: np.random.Generator, lo: float, hi: float) -> int:
    return round(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _near_diagonal_k(rng: np.random.Generator, rows: int, cols: int) -> int:
    return int(rng.integers(-min(rows, 4), min(cols, 4) + 1))


def _k_regime(rng: np.random.Generator, rows: int, cols: int, upper: bool) -> int:
    """k for one of: all kept, diagonal, under 1% kept, all zero."""
    regime = rng.choice(["all kept", "diagonal", "nearly zero", "all zero"])
    sign = 1 if upper else -1  # the k that zeroes more, for this triangle
    if regime == "all kept":
        return -sign * int(rng.integers(rows if upper else cols, 3 * max(rows, cols)))
    if regime == "diagonal":
        return _near_diagonal_k(rng, rows, cols)
    if regime == "all zero":
        return sign * int(rng.integers(cols if upper else rows, 3 * max(rows, cols)))
    # nearly zero: the kept corner is a triangle of side s, s*s/2 < 1% of it
    side = max(1, int(math.sqrt(0.01 * rows * cols)) - 1)
    return sign * ((cols if upper else rows) - side)


def draw(cls: str, rng: np.random.Generator) -> Case:
    """One case of a class; sizes log-uniform, results of 16 KiB to 64 MiB."""
    dtype = str(rng.choice(["int8", "float32", "float64", "complex128"]))
    if cls == "dtype":
        dtype = str(rng.choice(DTYPES))
    width = np.dtype(dtype).itemsize
    upper = bool(rng.integers(2))
    size = _log_int(rng, 16 * 1024, 64 * MIB) // width  # elements
    if cls in ("tall", "wide"):
        short = max(1, _log_int(rng, 8, 512) // width)  # rows of 8-512 bytes
        long_ = max(2 * short, size // short)
        rows, cols = (long_, short) if cls == "tall" else (short, long_)
        return Case(cls, (rows, cols), dtype, _near_diagonal_k(rng, rows, cols), upper)
    if cls == "batch":
        n = _log_int(rng, 2, 512)
        m = max(2, round(n * math.exp(rng.uniform(-0.3, 0.3))))
        count = max(2, size // (n * m))
        k = _near_diagonal_k(rng, n, m)
        return Case(cls, (count, n, m), dtype, k, upper)
    n = max(2, math.isqrt(size))
    m = max(2, round(n * math.exp(rng.uniform(-0.2, 0.2))))
    if cls == "square":
        return Case(cls, (n, n), dtype, _near_diagonal_k(rng, n, n), upper)
    if cls == "k":
        return Case(cls, (n, m), dtype, _k_regime(rng, n, m, upper), upper)
    if cls == "negstride":
        view = str(rng.choice(["rows[::-1]", "cols[::-1]", "both[::-1]"]))
        return Case(cls, (n, m), dtype, _near_diagonal_k(rng, n, m), upper, view)
    if cls == "transposed":
        if rng.integers(2):
            return Case(cls, (n, m), dtype, _near_diagonal_k(rng, n, m), upper, "F")
        b = _log_int(rng, 2, 64)
        n = max(2, math.isqrt(size // b))
        shape = (b, n, n)
        return Case(cls, shape, dtype, _near_diagonal_k(rng, n, n), upper, "swapaxes")
    return Case(cls, (n, m), dtype, _near_diagonal_k(rng, n, m), upper)  # dtype


def cases(seed: int, per_class: int, only: Sequence[str] = CLASSES) -> Iterator[Case]:
    """The seed's cases, class by class (those of `only`; the draws of the
    others are made all the same, so a case is the same whatever `only`)."""
    rng = np.random.default_rng(seed)
    for cls in CLASSES:
        for _ in range(per_class):
            case = draw(cls, rng)
            if cls in only:
                yield case


# --- measuring ---------------------------------------------------------------------


Fn = Callable[[], Any]


def run_case(case: Case, rounds: int, min_sample: float) -> list[dict[str, Any]]:
    """The case's records: a fresh result, out= into an array, and for an
    input not in C order a fresh result with order="K"."""
    x = case.make()
    ours = trilu.triu if case.upper else trilu.tril
    theirs = np.triu if case.upper else np.tril
    out = np.empty_like(x)
    kept = case.kept_fraction()
    fresh: dict[str, Fn | None] = {
        "trilu": functools.partial(ours, x, case.k),
        "numpy": functools.partial(theirs, x, case.k),
        "copy": x.copy if x.nbytes >= MIB else None,
        "zeros": functools.partial(np.zeros, x.shape, x.dtype) if kept < 0.01 else None,
    }
    # Lambdas on both sides: a partial's keyword costs ~0.1 us a call.
    into: dict[str, Fn | None] = {
        "trilu": lambda: ours(x, case.k, out=out),
        "copyto": lambda: np.copyto(out, x),
    }
    base = {
        "name": case.name,
        "class": case.cls,
        "op": case.op,
        "shape": list(case.shape),
        "dtype": case.dtype,
        "k": case.k,
        "layout": case.view,
        "result_bytes": x.nbytes,
        "kept_fraction": kept,
    }
    keep: dict[str, Fn | None] = {
        "trilu": functools.partial(ours, x, case.k, order="K"),
        "numpy": fresh["numpy"],
        "copy": fresh["copy"],
    }
    modes = [("fresh", fresh), ("out", into)]
    if case.view != "C":
        modes.append(("order K", keep))
    records = []
    for mode, fns in modes:
        times = measure(fns, rounds, min_sample)
        ratios = {p: ratio(times, p) for p in fns if p != "trilu"}  # None: n/a
        records.append(
            {**base, "mode": mode, "trilu_s": median(times, "trilu"), "ratios": ratios}
        )
    return records


def worst(records: list[dict[str, Any]]) -> dict[str, tuple[float, str]]:
    """The lowest ratio of each peer, and its case."""
    low: dict[str, tuple[float, str]] = {}
    for rec in records:
        for peer, value in rec["ratios"].items():
            if value is not None and (peer not in low or value < low[peer][0]):
                low[peer] = (value, rec["name"])
    return low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="draws the sizes (1)")
    parser.add_argument("--per-class", type=int, default=6, help="cases a class (6)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    parser.add_argument(
        "--classes", default=",".join(CLASSES), help="comma-separated (all)"
    )
    parser.add_argument("--json", metavar="PATH", help="write the results here")
    parser.add_argument("--plot", metavar="PNG", help="draw ratio against class")
    args = parser.parse_args()
    rounds, min_sample = (3, 0.002) if args.quick else (7, 0.005)

    date = dt.datetime.now(dt.timezone.utc)
    print(f"# trilu shape sweep, seed {args.seed}\n\n{cpu_name()}, "
          f"{date:%Y-%m-%d %H:%M} UTC, trilu {trilu.__version__} "
          f"({trilu.get_num_threads()} threads), numpy {np.__version__}\n")  # fmt: skip
    peers = ["numpy", "copy", "zeros", "copyto"]
    print("| case | kept | trilu | " + " | ".join(f"{p} / trilu" for p in peers) + " |")
    print("|---|---:|---:|" + "---:|" * len(peers))
    records: list[dict[str, Any]] = []
    for case in cases(args.seed, args.per_class, args.classes.split(",")):
        fresh, into, *keep = run_case(case, rounds, min_sample)
        records += [fresh, into, *keep]
        cells = []
        for rec, peer in [(fresh, "numpy"), (fresh, "copy"), (fresh, "zeros"),
                          (into, "copyto")]:  # fmt: skip
            value = rec["ratios"][peer]
            cells.append(f"{value:.2f}x" if value is not None else "n/a")
        print(f"| {case.name} | {fresh['kept_fraction']:.1%} | "
              f"{fmt_time(fresh['trilu_s'])} | " + " | ".join(cells) + " |")  # fmt: skip
    low = worst(records)
    print("\n| class | " + " | ".join(f"worst {p} / trilu" for p in peers) + " |")
    print("|---|" + "---:|" * len(peers))
    for cls in CLASSES:
        by_class = worst([r for r in records if r["class"] == cls])
        print(f"| {cls} | " + " | ".join(
            f"{by_class[p][0]:.2f}x" if p in by_class else "n/a" for p in peers
        ) + " |")  # fmt: skip
    print()
    print(f"seed {args.seed} worst: " + "; ".join(
        f"{p} {low[p][0]:.2f}x ({low[p][1]})" + (" BELOW" if low[p][0] < TARGETS[p] else "")
        for p in peers if p in low))  # fmt: skip

    bound = [
        (r["ratios"]["numpy"] / r["ratios"]["copy"], r["name"])
        for r in records
        if r["mode"] == "fresh"
        and r["ratios"]["numpy"] < TARGETS["numpy"]
        and r["ratios"]["copy"] is not None
    ]
    if bound:
        print(f"numpy under {TARGETS['numpy']:.0f}x in {len(bound)} cases, where "
              "numpy itself takes " + ", ".join(f"{b:.2f}x" for b, _ in bound)
              + " the time of x.copy(): 3x numpy would need trilu faster than "
              "a memcpy of the same bytes where that is under 3")  # fmt: skip
    results = {
        "schema": 1,
        "kind": "sweep",
        "date": f"{date:%Y-%m-%dT%H:%M:%SZ}",
        "seed": args.seed,
        "machine": machine(),
        "cases": records,
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
        print(f"results written to {args.json}")
    if args.plot:
        from report import plot_sweep  # noqa: PLC0415  (matplotlib: only now)

        plot_sweep([results], args.plot)
        print(f"plot written to {args.plot}")


if __name__ == "__main__":
    main()
