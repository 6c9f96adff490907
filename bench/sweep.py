"""The shape sweep: trilu on shapes drawn from a seed, class by class.

    python bench/sweep.py [--seed 1] [--per-class 6] [--quick] [--classes a,b]
                          [--json bench/results/sweep-1.json] [--plot sweep.png]
    python bench/sweep.py --seed 1 --classes toolkit \
                          --json bench/results/sweep-toolkit-1.json

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

Those are the ``triu``/``tril`` classes (tall, wide, square, batch, k,
negstride, transposed, dtype: ``--classes triangle``, the default). The
toolkit classes (``--classes toolkit``, or any of fill, band, pack, unpack,
mirror) time the operations beyond numpy, each against the numpy way of it
(masks and index arrays made once, outside the timing), on 2-D and batched
inputs of 1 KiB to 32 MiB:

- fill: ``tril``/``triu(x, k, fill=-inf)`` (an integer dtype's minimum for
  integers) against ``np.where(mask, x, fill)`` ("where") and against the
  same call with zeros ("zero fill": what the fill costs);
- band: ``band(x, lo, hi)`` against ``np.triu(np.tril(x, hi), lo)``;
- pack: ``pack(x, k, upper=)`` against ``x[..., r, c]``;
- unpack: ``unpack(v, n, m, k, upper=)`` against ``o = np.zeros(...);
  o[..., r, c] = v`` ("scatter");
- mirror: ``mirror(x, upper=, conj=)`` against ``np.where(j >= i, x,
  x.swapaxes(-1, -2))`` (conjugated with conj), fresh and in place (mode
  "inplace", ``out=x``);
- pack_f: ``pack(x, k, upper=, order="F")`` of a C- or Fortran-ordered x
  against ``x.swapaxes(-1, -2)[..., r, c]`` (r, c the transpose's triangle:
  column after column) and, for square float and complex matrices with
  k=0, LAPACK's ``?trttp`` ("trttp");
- unpack_f: ``unpack(v, n, m, k, upper=, order="F")`` against the scatter
  through the same indices, and ``?tpttr`` ("tpttr") where it applies;
- unpack_mirror: ``unpack(v, n, k=k, upper=, mirror=)`` (``"conj"`` for
  complex half the time) against the scatter through the triangle's indices
  and then its transpose's;
- squareform_v and squareform_m: ``squareform`` of a condensed vector and of
  a distance matrix (its checks on) against scipy's ("scipy", "scipy
  checks"), where scipy is installed;
- mask: ``band_mask(n, m, lo, hi)`` (bool, or float 0 and -inf: an
  additive attention mask; causal, sliding-window or any band) against
  ``np.where`` of ``np.tri`` masks ("tri+where"), and against ``np.zeros``
  and ``np.ones`` (``np.full`` for -inf) of as many elements as the mask
  has of each value ("zeros+ones": the same bytes, the floor);
- to_banded: ``to_banded(x, lower, upper)`` against a loop over
  ``np.diagonal`` into ``np.zeros`` ("diagonals");
- from_banded: ``from_banded(ab, lower, upper)`` against ``np.zeros`` and
  an assignment a diagonal ("zeros+diagonals", index arrays made once).

Where the result has 40 KiB to 1 MiB, each but mask is also timed writing
into a preallocated array (mode "out", ``out=``) against ``np.copyto`` of the
same bytes.

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
from cases import placed, placed_copy
from report import SWEEP_COLUMNS, TOOLKIT_COLUMNS

from bench import cpu_name, fmt_time, machine, measure, summary

MIB = 1 << 20
DTYPES = ["int8", "bool", "int16", "float16", "int32", "float32", "int64",
          "float64", "complex64", "complex128"]  # fmt: skip
CLASSES = ["tall", "wide", "square", "batch", "k", "negstride", "transposed", "dtype"]
# After CLASSES: drawn from the same stream, so adding them changed no draw of
# the classes above.
TOOLKIT_CLASSES = ["fill", "band", "pack", "unpack", "mirror", "pack_f", "unpack_f",
                   "unpack_mirror", "squareform_v", "squareform_m", "mask",
                   "to_banded", "from_banded"]  # fmt: skip
ALL_CLASSES = CLASSES + TOOLKIT_CLASSES
GROUPS = {"triangle": CLASSES, "toolkit": TOOLKIT_CLASSES, "all": ALL_CLASSES}
TARGETS = {"numpy": 3.0, "copy": 0.9, "zeros": 0.3, "copyto": 0.8,
           "where": 3.0, "zero fill": 0.8, "triu(tril)": 4.0, "x[r, c]": 4.0,
           "scatter": 4.0, "trttp": 1.5, "tpttr": 2.0, "scipy": 3.0,
           "scipy checks": 5.0, "tri+where": 4.0, "zeros+ones": 0.8,
           "diagonals": 3.0, "zeros+diagonals": 1.0}  # fmt: skip
# The toolkit classes' ops, where they are not the class's name.
TOOLKIT_OPS = {"pack_f": "pack F", "unpack_f": "unpack F",
               "unpack_mirror": "unpack mirror", "squareform_v": "squareform",
               "squareform_m": "squareform", "mask": "band_mask"}  # fmt: skip
PEERS = ["numpy", "copy", "zeros", "copyto"]
# The toolkit classes' out= is timed on results of this many bytes: the range
# its target (0.8x np.copyto) is set for.
OUT_BYTES = (40 * 1024, MIB)


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


@dataclass(frozen=True)
class ToolCase:
    """One drawn input of a toolkit class: matrices of ``shape`` (the result's
    for unpack; the distance matrix for squareform), the band kept (lo <= j -
    i <= hi; None: unbounded), mirror's conj (unpack_mirror's "conj"), and
    the matrices' layout (``view``, "C" or "F"). A triangle is k with upper;
    a band, lo and hi."""

    cls: str
    shape: tuple[int, ...]
    dtype: str
    k: int | None = None
    upper: bool = True
    lo: int | None = None
    hi: int | None = None
    conj: bool = False
    view: str = "C"

    @property
    def op(self) -> str:
        if self.cls == "fill":
            return "triu" if self.upper else "tril"
        return TOOLKIT_OPS.get(self.cls, self.cls)

    @property
    def name(self) -> str:
        head = f"{self.cls}: {'x'.join(map(str, self.shape))} {self.dtype}"
        head += "" if self.view == "C" else f" {self.view}"
        side = "upper" if self.upper else "lower"
        if self.cls == "fill":
            return f"{head} {self.op} k={self.k} fill={self.fill}"
        if self.cls in ("band", "mask"):
            return f"{head} band({self.lo}, {self.hi})"
        if self.cls in ("to_banded", "from_banded"):
            return f"{head} lower={self.lower} upper={self.upper_count}"
        if self.cls in ("mirror", "unpack_mirror"):
            conj = " conj" if self.conj else ""
            k = "" if self.cls == "mirror" else f" k={self.k}"
            return f"{head} {side}{k}{conj}"
        if self.cls.startswith("squareform"):
            return head
        return f"{head} {side} k={self.k}"  # pack, unpack, pack_f, unpack_f

    @property
    def fill(self) -> Any:
        """fill's value: -inf, or an integer dtype's minimum."""
        dtype = np.dtype(self.dtype)
        return int(np.iinfo(dtype).min) if dtype.kind in "iu" else -math.inf

    @property
    def lower(self) -> int:
        """Band storage's diagonals below the main one: -lo."""
        return -(self.lo or 0)

    @property
    def upper_count(self) -> int:
        """Band storage's diagonals above the main one: hi."""
        return self.hi or 0

    def values(self) -> tuple[Any, Any]:
        """A mask's keep and fill: True and False, or an additive mask's 0
        and -inf."""
        if np.dtype(self.dtype).kind == "b":
            return True, False
        return 0.0, -math.inf

    def mask(self) -> np.ndarray:
        """Where each matrix keeps its input: the triangle, band, or for
        mirror the triangle kept as it is (diagonal included)."""
        rows, cols = self.shape[-2:]
        offset = np.arange(cols) - np.arange(rows)[:, None]
        if self.cls in ("band", "mask", "to_banded", "from_banded"):
            lo = -rows if self.lo is None else self.lo
            hi = cols if self.hi is None else self.hi
            return (offset >= lo) & (offset <= hi)
        if self.cls.startswith("squareform"):
            return offset >= 1  # the condensed vector's: the strict upper triangle
        k = 0 if self.cls == "mirror" else self.k
        return offset >= k if self.upper else offset <= k

    def indices(self) -> tuple[np.ndarray, np.ndarray]:
        """numpy's r, c of pack's and unpack's triangle: row after row, or
        (pack_f, unpack_f) column after column, the transpose's other
        triangle's, swapped."""
        rows, cols = self.shape[-2:]
        if self.cls in ("pack_f", "unpack_f"):
            tri = np.tril_indices if self.upper else np.triu_indices
            c, r = tri(cols, -self.k, rows)
            return r, c
        tri = np.triu_indices if self.upper else np.tril_indices
        return tri(rows, self.k, cols)

    def make(self) -> np.ndarray:
        """Random bytes of the dtype and shape (the matrices, also for unpack)
        in the view; for squareform, a distance matrix: symmetric, of zero
        diagonal, its distances random numbers (no NaN)."""
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        dtype = np.dtype(self.dtype)
        if self.cls.startswith("squareform"):
            n = self.shape[-1]
            v = (rng.random(n * (n - 1) // 2) * 100).astype(dtype)
            return trilu.unpack(v, n, k=1, mirror=True)
        n = math.prod(self.shape) * dtype.itemsize
        x = rng.integers(0, 256, n, dtype=np.uint8).view(dtype).reshape(self.shape)
        return np.asfortranarray(x) if self.view == "F" else x

    def kept_fraction(self) -> float:
        mask = self.mask()
        return float(np.count_nonzero(mask)) / max(1, mask.size)


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


def draw_toolkit(cls: str, rng: np.random.Generator) -> ToolCase:
    """One case of a toolkit class: one matrix or a batch of them (half the
    time each), matrices of 1 KiB to 32 MiB in all, log-uniform; square for
    mirror, within 1.35x of it otherwise."""
    dtypes = ["int8", "float32", "float64", "complex128"]
    if cls == "fill":  # float16 too: a fill of another width
        dtypes = ["int8", "float16", "float32", "float64", "complex128"]
    dtype = str(rng.choice(dtypes))
    upper = bool(rng.integers(2))
    size = _log_int(rng, 1024, 32 * MIB) // np.dtype(dtype).itemsize  # elements
    count = _log_int(rng, 2, 256) if rng.integers(2) else 1
    n = max(2, math.isqrt(size // count))
    m = n if cls == "mirror" else max(2, round(n * math.exp(rng.uniform(-0.3, 0.3))))
    shape = (n, m) if count == 1 else (count, n, m)
    if cls == "band":  # half-widths of 0 to the whole matrix, log-uniform
        lo, hi = 1 - _log_int(rng, 1, n), _log_int(rng, 1, m) - 1
        return ToolCase(cls, shape, dtype, lo=lo, hi=hi)
    if cls == "mask":  # one matrix: causal, a sliding window, or a band
        nbytes = size * np.dtype(dtype).itemsize
        dtype = str(rng.choice(["bool", "float32", "float16"]))
        n = max(2, math.isqrt(nbytes // np.dtype(dtype).itemsize))
        m = max(2, round(n * math.exp(rng.uniform(-0.3, 0.3))))
        kind = rng.choice(["causal", "window", "band"])
        lo, hi = None, m - n  # bottom right, as attention_mask's default
        if kind == "window":
            lo = hi - _log_int(rng, 1, m) + 1
        elif kind == "band":
            lo, hi = 1 - _log_int(rng, 1, n), _log_int(rng, 1, m) - 1
        return ToolCase(cls, (n, m), dtype, lo=lo, hi=hi)
    if cls in ("to_banded", "from_banded"):  # square, as band storage's users
        side = min(n, m)
        lower, upper = _log_int(rng, 1, min(side, 65)) - 1, _log_int(rng, 1, 65) - 1
        return ToolCase(cls, (*shape[:-2], side, side), dtype, lo=-lower, hi=upper)
    if cls == "mirror":
        conj = dtype.startswith("complex") and bool(rng.integers(2))
        return ToolCase(cls, shape, dtype, upper=upper, conj=conj)
    if cls == "unpack_mirror":  # square, as mirror's
        conj = dtype.startswith("complex") and bool(rng.integers(2))
        shape = (*shape[:-1], n)
        return ToolCase(
            cls, shape, dtype, _near_diagonal_k(rng, n, n), upper, conj=conj
        )
    if cls.startswith("squareform"):  # one matrix of distances, numbers
        dtype = str(rng.choice(["float32", "float64", "int32"]))
        n = max(2, math.isqrt(size))
        return ToolCase(cls, (n, n), dtype)
    view = str(rng.choice(["C", "F"])) if cls == "pack_f" else "C"
    return ToolCase(cls, shape, dtype, _near_diagonal_k(rng, n, m), upper, view=view)


def classes(names: str) -> list[str]:
    """--classes: class names and groups (triangle, toolkit, all), comma-separated."""
    chosen: list[str] = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        if name not in GROUPS and name not in ALL_CLASSES:
            raise ValueError(
                f"no class {name!r}: {', '.join(ALL_CLASSES)} or {', '.join(GROUPS)}"
            )
        chosen += [c for c in GROUPS.get(name, [name]) if c not in chosen]
    return chosen


def cases(
    seed: int, per_class: int, only: Sequence[str] = CLASSES
) -> Iterator[Case | ToolCase]:
    """The seed's cases, class by class (those of `only`; the draws of the
    others are made all the same, so a case is the same whatever `only`)."""
    rng = np.random.default_rng(seed)
    for cls in ALL_CLASSES:
        for _ in range(per_class):
            case = draw(cls, rng) if cls in CLASSES else draw_toolkit(cls, rng)
            if cls in only:
                yield case


# --- measuring ---------------------------------------------------------------------


Fn = Callable[[], Any]


def _identity(case: Case | ToolCase, layout: str) -> dict[str, Any]:
    """The fields that name a case in each of its records."""
    return {
        "name": case.name,
        "class": case.cls,
        "op": case.op,
        "shape": list(case.shape),
        "dtype": case.dtype,
        "k": case.k,
        "layout": layout,
        "kept_fraction": case.kept_fraction(),
    }


def _timed(fns: dict[str, Fn | None], rounds: int, min_sample: float) -> dict[str, Any]:
    """trilu's median time and each peer's ratio to it (None: n/a)."""
    return summary(measure(fns, rounds, min_sample), [p for p in fns if p != "trilu"])


def run_case(case: Case, rounds: int, min_sample: float) -> list[dict[str, Any]]:
    """The case's records: a fresh result, out= into an array, and for an
    input not in C order a fresh result with order="K"."""
    x = case.make()
    ours = trilu.triu if case.upper else trilu.tril
    theirs = np.triu if case.upper else np.tril
    out = placed(x, x)
    base = _identity(case, case.view) | {"result_bytes": x.nbytes}
    kept = base["kept_fraction"]
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
    keep: dict[str, Fn | None] = {
        "trilu": functools.partial(ours, x, case.k, order="K"),
        "numpy": fresh["numpy"],
        "copy": fresh["copy"],
    }
    modes = [("fresh", fresh), ("out", into)]
    if case.view != "C":
        modes.append(("order K", keep))
    return [
        base | {"mode": mode} | _timed(fns, rounds, min_sample) for mode, fns in modes
    ]


def _scatter(
    v: np.ndarray, shape: tuple[int, ...], r: np.ndarray, c: np.ndarray
) -> Any:
    o = np.zeros(shape, v.dtype)
    o[..., r, c] = v
    return o


def _diagonals(x: np.ndarray, lower: int, upper: int) -> np.ndarray:
    """Band storage the numpy way: a loop over np.diagonal into np.zeros."""
    ab = np.zeros((*x.shape[:-2], lower + upper + 1, x.shape[-1]), x.dtype)
    for k in range(-lower, upper + 1):
        diagonal = np.diagonal(x, k, -2, -1)
        start = max(k, 0)
        ab[..., upper - k, start : start + diagonal.shape[-1]] = diagonal
    return ab


def _from_diagonals(
    ab: np.ndarray, shape: tuple[int, ...], upper: int, index: list[Any]
) -> np.ndarray:
    """Matrices from band storage the numpy way: np.zeros, then each
    diagonal assigned (index arrays made once)."""
    o = np.zeros(shape, ab.dtype)
    for k, i in index:
        o[..., i, i + k] = ab[..., upper - k, i + k]
    return o


def toolkit_fns(case: ToolCase) -> list[tuple[str, int, dict[str, Fn | None]]]:
    """(mode, the result's bytes, {"trilu": ..., peer: ...}) of each way the
    case is timed; the masks and index arrays the numpy way needs are made
    here, once, outside the timing. Each peer returns what trilu returns
    (copyto: the same bytes into the same array)."""
    if case.cls == "mask":
        rows, cols = case.shape
        lo, hi, dtype = case.lo, case.hi, np.dtype(case.dtype)
        keep, fill_value = (np.array(v).astype(dtype) for v in case.values())
        kept = int(np.count_nonzero(case.mask()))

        def tri_where() -> np.ndarray:
            where = (
                np.ones((rows, cols), bool)
                if hi is None
                else np.tri(rows, cols, hi, bool)
            )
            if lo is not None:
                where &= ~np.tri(rows, cols, lo - 1, bool)
            return np.where(where, keep, fill_value)

        def zeros_ones() -> Any:
            # np.zeros for as many elements as hold a value of zero bytes,
            # np.ones (np.full: -inf) for as many as hold the other
            return tuple(
                np.full(count, value, dtype) if any(value.tobytes())
                else np.zeros(count, dtype)
                for value, count in ((keep, kept), (fill_value, rows * cols - kept))
            )  # fmt: skip

        ours = functools.partial(trilu.band_mask, rows, cols, lo, hi, dtype=dtype,
                                 keep=keep, fill=fill_value)  # fmt: skip
        nbytes = rows * cols * dtype.itemsize
        return [("fresh", nbytes, {"trilu": ours, "tri+where": tri_where,
                                   "zeros+ones": zeros_ones})]  # fmt: skip
    x = case.make()
    k, upper, conj, fill = case.k, case.upper, case.conj, case.fill
    if case.cls in ("to_banded", "from_banded"):
        lower, upper = case.lower, case.upper_count
        ab = placed_copy(trilu.to_banded(x, lower, upper), x)
        banded = placed(ab, x)
        if case.cls == "to_banded":
            return [
                ("fresh", ab.nbytes, {"trilu": lambda: trilu.to_banded(x, lower, upper),
                                      "diagonals": lambda: _diagonals(x, lower, upper)}),
                ("out", ab.nbytes, {
                    "trilu": lambda: trilu.to_banded(x, lower, upper, out=banded),
                    "copyto": lambda: np.copyto(banded, ab)}),
            ]  # fmt: skip
        rows, cols = x.shape[-2:]
        index = [(d, np.arange(max(0, -d), max(0, min(rows, cols - d))))
                 for d in range(-lower, upper + 1)]  # fmt: skip
        out = placed(x, x)
        return [
            ("fresh", x.nbytes, {
                "trilu": lambda: trilu.from_banded(ab, lower, upper, n=rows),
                "zeros+diagonals": lambda: _from_diagonals(ab, x.shape, upper, index)}),
            ("out", x.nbytes, {
                "trilu": lambda: trilu.from_banded(ab, lower, upper, n=rows, out=out),
                "copyto": lambda: np.copyto(out, x)}),
        ]  # fmt: skip
    out = placed(x, x)
    into = {"copyto": lambda: np.copyto(out, x)}
    if case.cls == "fill":
        ours = trilu.triu if upper else trilu.tril
        mask = case.mask()
        return [
            ("fresh", x.nbytes, {"trilu": lambda: ours(x, k, fill=fill),
                                 "where": lambda: np.where(mask, x, fill),
                                 "zero fill": lambda: ours(x, k)}),
            ("out", x.nbytes, {"trilu": lambda: ours(x, k, fill=fill, out=out),
                               **into}),
        ]  # fmt: skip
    if case.cls == "band":
        lo, hi = case.lo, case.hi
        return [
            ("fresh", x.nbytes, {"trilu": lambda: trilu.band(x, lo, hi),
                                 "triu(tril)": lambda: np.triu(np.tril(x, hi), lo)}),
            ("out", x.nbytes, {"trilu": lambda: trilu.band(x, lo, hi, out=out),
                               **into}),
        ]  # fmt: skip
    if case.cls.startswith("squareform"):
        return _squareform_fns(case, x)
    packed_cls = ("pack", "unpack", "pack_f", "unpack_f", "unpack_mirror")
    r, c = case.indices() if case.cls in packed_cls else (None, None)
    # the packed vectors in C order, as pack returns them (numpy's
    # x[..., r, c] of a batch runs down the batch: a transpose of that)
    v = placed_copy(np.ascontiguousarray(x[..., r, c]), x) if r is not None else x
    order = "F" if case.cls in ("pack_f", "unpack_f") else "C"
    if case.cls in ("pack", "pack_f"):
        packed = placed(v, x)
        # column after column: the transpose's triangle, gathered from the view
        xt, rt, ct = (np.swapaxes(x, -1, -2), c, r) if order == "F" else (x, r, c)
        return [
            ("fresh", v.nbytes, {
                "trilu": lambda: trilu.pack(x, k, upper=upper, order=order),
                "x[r, c]": lambda: xt[..., rt, ct],
                "trttp": _lapack(case, x, "trttp")}),
            ("out", v.nbytes, {
                "trilu": lambda: trilu.pack(x, k, upper=upper, order=order, out=packed),
                "copyto": lambda: np.copyto(packed, v)}),
        ]  # fmt: skip
    if case.cls in ("unpack", "unpack_f"):
        rows, cols = x.shape[-2:]
        return [
            ("fresh", x.nbytes, {
                "trilu": lambda: trilu.unpack(v, rows, cols, k, upper=upper, order=order),
                "scatter": lambda: _scatter(v, x.shape, r, c),
                "tpttr": _lapack(case, v, "tpttr")}),
            ("out", x.nbytes, {
                "trilu": lambda: trilu.unpack(v, rows, cols, k, upper=upper, order=order,
                                              out=out),
                **into}),
        ]  # fmt: skip
    if case.cls == "unpack_mirror":
        n = x.shape[-1]
        mirror: Any = "conj" if conj else True
        # the transposes that are not kept: the scatter's second half
        other = ~case.mask()[c, r]
        rm, cm = c[other], r[other]

        def scatter() -> np.ndarray:
            o = _scatter(v, x.shape, r, c)
            w = v[..., other]
            o[..., rm, cm] = np.conjugate(w) if conj else w
            return o

        return [
            ("fresh", x.nbytes, {
                "trilu": lambda: trilu.unpack(v, n, k=k, upper=upper, mirror=mirror),
                "scatter": scatter}),
            ("out", x.nbytes, {
                "trilu": lambda: trilu.unpack(v, n, k=k, upper=upper, mirror=mirror,
                                              out=out),
                **into}),
        ]  # fmt: skip
    mask = case.mask()  # mirror: the triangle kept as it is
    y = x.copy()

    def where() -> np.ndarray:
        t = np.swapaxes(x, -1, -2)
        return np.where(mask, x, np.conjugate(t) if conj else t)

    return [
        ("fresh", x.nbytes, {"trilu": lambda: trilu.mirror(x, upper=upper, conj=conj),
                             "where": where}),
        ("inplace", x.nbytes, {
            "trilu": lambda: trilu.mirror(y, upper=upper, conj=conj, out=y),
            "where": where}),
        ("out", x.nbytes, {
            "trilu": lambda: trilu.mirror(x, upper=upper, conj=conj, out=out),
            **into}),
    ]  # fmt: skip


def _lapack(case: ToolCase, x: np.ndarray, name: str) -> Fn | None:
    """LAPACK's ?trttp (of the matrix x) or ?tpttr (of the packed vector x),
    uplo as the case's triangle, where it applies: one square matrix, k=0, a
    float or complex dtype of 4 to 16 bytes, and scipy installed."""
    prefix = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}
    rows, cols = case.shape[-2:]
    if case.cls not in ("pack_f", "unpack_f") or len(case.shape) != 2:
        return None  # (LAPACK's order is column after column)
    if rows != cols or case.k != 0:
        return None
    if case.dtype not in prefix:
        return None
    try:
        from scipy.linalg import lapack  # noqa: PLC0415  (optional)
    except ImportError:
        return None
    fn = getattr(lapack, prefix[case.dtype] + name)
    uplo = "U" if case.upper else "L"
    if name == "trttp":
        return lambda: fn(x, uplo=uplo)[0]
    return lambda: fn(rows, x, uplo=uplo)[0]


def _squareform_fns(
    case: ToolCase, m: np.ndarray
) -> list[tuple[str, int, dict[str, Fn | None]]]:
    """squareform of the case's vector (squareform_v) or of its matrix
    (squareform_m, checked) against scipy's, where scipy is installed."""
    try:
        from scipy.spatial.distance import squareform  # noqa: PLC0415  (optional)
    except ImportError:
        squareform = None
    n = m.shape[-1]
    if case.cls == "squareform_m":
        return [("fresh", n * (n - 1) // 2 * m.itemsize, {
            "trilu": lambda: trilu.squareform(m),
            "scipy checks": squareform and (lambda: squareform(m))})]  # fmt: skip
    v = trilu.squareform(m)
    return [("fresh", m.nbytes, {
        "trilu": lambda: trilu.squareform(v),
        "scipy": squareform and (lambda: squareform(v))})]  # fmt: skip


def run_toolkit_case(
    case: ToolCase, rounds: int, min_sample: float
) -> list[dict[str, Any]]:
    """The case's records, one a mode (fresh, inplace, out)."""
    base = _identity(case, "C")
    if case.cls == "fill":
        base["fill"] = str(case.fill)  # JSON has no -inf
    if case.cls in ("band", "mask"):
        base |= {"lo": case.lo, "hi": case.hi}
    if case.cls in ("to_banded", "from_banded"):
        base |= {"lower": case.lower, "upper": case.upper_count}
    if case.cls in ("pack", "unpack", "mirror", "pack_f", "unpack_f", "unpack_mirror"):
        base["upper"] = case.upper
    if case.cls in ("mirror", "unpack_mirror"):
        base["conj"] = case.conj
    if case.view != "C":
        base["layout"] = case.view
    records = []
    for mode, nbytes, fns in toolkit_fns(case):
        if mode == "out" and not OUT_BYTES[0] <= nbytes <= OUT_BYTES[1]:
            continue
        record = base | {"mode": mode, "result_bytes": nbytes}
        records.append(record | _timed(fns, rounds, min_sample))
    return records


def worst(records: list[dict[str, Any]]) -> dict[str, tuple[float, str]]:
    """The lowest ratio of each peer, and its case."""
    low: dict[str, tuple[float, str]] = {}
    for rec in records:
        for peer, value in rec["ratios"].items():
            if value is not None and (peer not in low or value < low[peer][0]):
                low[peer] = (value, rec["name"])
    return low


def _cell(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else "n/a"


def _print_triangle(case: Case, fresh: dict[str, Any], into: dict[str, Any]) -> None:
    cells = [_cell(rec["ratios"][peer])
             for rec, peer in [(fresh, "numpy"), (fresh, "copy"), (fresh, "zeros"),
                               (into, "copyto")]]  # fmt: skip
    print(f"| {case.name} | {fresh['kept_fraction']:.1%} | "
          f"{fmt_time(fresh['trilu_s'])} | " + " | ".join(cells) + " |")  # fmt: skip


def _worst_tables(records: list[dict[str, Any]], chosen: list[str]) -> None:
    """The worst ratio of each class: one table for the triangle classes, one
    for the toolkit ones, each with its peers' columns."""
    groups = [(CLASSES, SWEEP_COLUMNS), (TOOLKIT_CLASSES, TOOLKIT_COLUMNS)]
    for group, columns in groups:
        shown = [c for c in group if c in chosen]
        if not shown:
            continue
        peers = [peer for _, peer in columns]  # with the mode where one repeats
        print("\n| class | " + " | ".join(
            f"worst {peer}" + (f" {mode}" if peers.count(peer) > 1 else "")
            + " / trilu" for mode, peer in columns) + " |")  # fmt: skip
        print("|---|" + "---:|" * len(columns))
        for cls in shown:
            cells = []
            for mode, peer in columns:
                low = worst([r for r in records
                             if r["class"] == cls and r["mode"] == mode])  # fmt: skip
                cells.append(_cell(low[peer][0]) if peer in low else "n/a")
            print(f"| {cls} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="draws the sizes (1)")
    parser.add_argument("--per-class", type=int, default=6, help="cases a class (6)")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    parser.add_argument(
        "--classes",
        default="triangle",
        help="comma-separated classes, or groups: triangle (the default: "
        + ", ".join(CLASSES) + "), toolkit (" + ", ".join(TOOLKIT_CLASSES)
        + "), all",
    )  # fmt: skip
    parser.add_argument("--json", metavar="PATH", help="write the results here")
    parser.add_argument("--plot", metavar="PNG", help="draw ratio against class")
    args = parser.parse_args()
    try:
        chosen = classes(args.classes)
    except ValueError as exc:
        parser.error(str(exc))
    rounds, min_sample = (3, 0.002) if args.quick else (7, 0.005)

    date = dt.datetime.now(dt.timezone.utc)
    print(f"# trilu shape sweep, seed {args.seed}\n\n{cpu_name()}, "
          f"{date:%Y-%m-%d %H:%M} UTC, trilu {trilu.__version__} "
          f"({trilu.get_num_threads()} threads), numpy {np.__version__}\n")  # fmt: skip
    records: list[dict[str, Any]] = []
    header = None
    for case in cases(args.seed, args.per_class, chosen):
        group = "toolkit" if isinstance(case, ToolCase) else "triangle"
        if group != header:
            header = group
            if group == "triangle":
                print(
                    "| case | kept | trilu | "
                    + " | ".join(f"{p} / trilu" for p in PEERS)
                    + " |"
                )
                print("|---|---:|---:|" + "---:|" * len(PEERS))  # fmt: skip
            else:
                print("\n| case | mode | kept | trilu | peer / trilu |")
                print("|---|---|---:|---:|---|")
        if isinstance(case, ToolCase):
            new = run_toolkit_case(case, rounds, min_sample)
            for rec in new:
                print(f"| {case.name} | {rec['mode']} | {rec['kept_fraction']:.1%} | "
                      f"{fmt_time(rec['trilu_s'])} | " + ", ".join(
                          f"{p} {_cell(v)}" for p, v in rec["ratios"].items())
                      + " |")  # fmt: skip
            records += new
        else:
            fresh, into, *keep = run_case(case, rounds, min_sample)
            records += [fresh, into, *keep]
            _print_triangle(case, fresh, into)
    _worst_tables(records, chosen)
    low = worst(records)
    print()
    print(f"seed {args.seed} worst: " + "; ".join(
        f"{p} {low[p][0]:.2f}x ({low[p][1]})" + (" BELOW" if low[p][0] < TARGETS[p] else "")
        for p in TARGETS if p in low))  # fmt: skip

    bound = [
        (r["ratios"]["numpy"] / r["ratios"]["copy"], r["name"])
        for r in records
        if r["mode"] == "fresh"
        and r["class"] in CLASSES
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
