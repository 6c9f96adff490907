"""The kernel's plan: bands of rows, keep-masks, allocations, bit for bit.

Each matrix has at most three bands of rows: wholly kept, crossed by the
diagonal, wholly zeroed. Bands are written in bulk (one memcpy or memset where
the rows are contiguous, nothing in place or into zero pages), and matrices
with no diagonal band merge across the batch into one run. Short rows have
their diagonal band ANDed with a keep-mask; tiny matrices are ANDed whole. A
fresh result comes from malloc, the recycled spare block, calloc or 4 KiB zero
pages, by the bytes each makes the kernel write. ``_kernel.explain`` reports
the plan that ``fill`` follows; every test here checks that the plan is the
one meant, and that the result is numpy's to the bit, fresh, into ``out=`` and
in place, on one thread and on four.
"""

from __future__ import annotations

import functools
import gc
from typing import Any

import numpy as np
import pytest
from _cases import HANDLERS, allocation_name, assert_same, func, numpy_oracle

import trilu
from trilu import _kernel

MIB = 1 << 20


@functools.lru_cache(maxsize=8)
def _random_bytes(n: int, seed: int) -> np.ndarray:
    """n random bytes, none zero, drawn once (read-only: they are copied)."""
    raw = np.random.default_rng(seed).integers(1, 256, n, dtype=np.uint8)
    raw.flags.writeable = False
    return raw


def nonzero_bytes(dtype: Any, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Every byte nonzero, so a byte left unwritten or wrongly zeroed shows.

    A fresh copy of bytes drawn once for the size and seed: the same bytes
    every call, at a copy's cost rather than the generator's (80 tests here
    take the same five inputs)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) * dtype.itemsize
    raw = _random_bytes(n, seed).copy()
    return raw.view(dtype).reshape(shape)


def garbage_like(x: np.ndarray) -> np.ndarray:
    """An array of x's shape and dtype, C order, every byte 0xAB."""
    raw = np.full(x.nbytes, 0xAB, dtype=np.uint8)
    return raw.view(x.dtype).reshape(x.shape)


def every_mode(x: np.ndarray, k: int, upper: bool) -> None:
    """Fresh, into a garbage-filled out=, and in place: numpy's bytes, and
    the input unchanged."""
    want = numpy_oracle(x, k, upper)
    before = x.tobytes()
    f = func(upper)
    assert_same(f(x, k), want)
    out = garbage_like(x)
    assert f(x, k, out=out) is out
    assert_same(out, want)
    assert x.tobytes() == before
    y = x.copy()
    assert f(y, k, out=y) is y
    assert_same(y, want)


# --- bands -----------------------------------------------------------------------


BAND_CASES = {
    # shape, k, upper -> lead, trail (rows of the walked matrix)
    "tall-tril": ((3000, 6), 0, False, 0, 5),
    "tall-triu-k-2": ((3000, 6), -2, True, 3, 8),
    "wide-triu": ((6, 3000), 0, True, 1, 6),
    "square-triu-k3": ((50, 50), 3, True, 0, 47),
    "square-tril-k-3": ((50, 50), -3, False, 3, 50),
}


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("name", list(BAND_CASES))
@pytest.mark.parametrize("dtype", ["int8", "float64", "complex128", "V3"])
def test_bands(name: str, dtype: str) -> None:
    """Leading and trailing bands where the spec puts them, written right."""
    shape, k, upper, lead, trail = BAND_CASES[name]
    x = nonzero_bytes(dtype, shape)
    plan = _kernel.explain(x, k, upper)
    assert (plan["lead"], plan["trail"]) == (lead, trail)
    assert plan["bulk_src"]
    assert plan["bulk_dst"]
    every_mode(x, k, upper)
    every_mode(x[::2], k, upper)  # rows apart: bands row by row
    every_mode(x[::-1], k, upper)  # rows backwards, into forward rows
    # rows backwards into rows backwards (out= and in place): still one run
    want = numpy_oracle(x[::-1], k, upper)
    out = garbage_like(x)[::-1]
    assert _kernel.explain(x[::-1], k, upper, out)["bulk_src"]
    assert_same(func(upper)(x[::-1], k, out=out), want)
    y = x.copy()[::-1]
    assert_same(func(upper)(y, k, out=y), want)


UNIFORM_K = {"all-kept": (True, -10**6), "all-zero": (True, 10**6),
             "tril-all-kept": (False, 10**6), "tril-all-zero": (False, -10**6)}  # fmt: skip


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("name", list(UNIFORM_K))
@pytest.mark.parametrize(
    "shape", [(300, 7, 5), (4, 50, 60, 3), (2, 3, 200, 200)], ids=str
)
def test_uniform_matrices_merge_across_the_batch(
    name: str, shape: tuple[int, ...]
) -> None:
    """With no diagonal band, a contiguous batch is one matrix of all rows."""
    upper, k = UNIFORM_K[name]
    x = nonzero_bytes(np.float32, shape)
    plan = _kernel.explain(x, k, upper)
    assert plan["matrices"] == 1
    assert plan["rows"] == int(np.prod(shape[:-1]))
    assert plan["lead"] == plan["trail"] in (0, plan["rows"])
    every_mode(x, k, upper)
    # a batch with gaps merges only as far as its matrices touch
    gapped = x[..., ::2, :, :]
    assert _kernel.explain(gapped, k, upper)["matrices"] > 1
    every_mode(gapped, k, upper)
    every_mode(x[..., ::-1, :], k, upper)


# --- keep-masks ------------------------------------------------------------------


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "float64", "V5"])
@pytest.mark.parametrize("k", [-3, 0, 1, 4])
@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_band_mask_on_one_tall_matrix(dtype: str, k: int, upper: bool) -> None:
    """A single tall matrix with short rows: its diagonal band is masked."""
    x = nonzero_bytes(dtype, (100_003, 7))
    plan = _kernel.explain(x, k, upper)
    assert plan["method"] == "band_mask"
    assert plan["matrices"] == 1
    every_mode(x, k, upper)


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    ("shape", "method"),
    [
        ((5000, 3, 3), "matrices"),
        ((3000, 8, 8), "matrices"),
        ((1000, 20, 20), "band_mask"),  # 3.2 KiB matrices: bands, band masked
        ((200, 40, 6), "band_mask"),
        ((100, 40, 40), "band_mask"),  # 320-byte rows, a 12.5 KiB mask
        ((20, 40, 40), "band_mask"),  # the same in cache
        ((40, 80, 80), "rows"),  # 640-byte rows: memset + memcpy
    ],
    ids=str,
)
def test_batch_methods(shape: tuple[int, ...], method: str) -> None:
    """Each way a batch is done, chosen by row and matrix size, is exact."""
    x = nonzero_bytes(np.float64, shape)
    plan = _kernel.explain(x, 0, True)
    row = shape[-1] * x.itemsize
    if (method == "band_mask" and _kernel._row_loop(row, True)
            and row >= _kernel._vector_row_bytes()[0]
            and not plan["prefetch"]):  # fmt: skip
        method = "rows"  # in cache, each crossed row one loop (triu's: one edge)
    assert plan["method"] == method
    for k in (-2, 0, 1, 5):
        for upper in (True, False):
            every_mode(x, k, upper)
            every_mode(x[1::3], k, upper)  # a strided batch


SIDE_BY_SIDE = {
    # a batch whose matrices lie side by side: each position one run of them,
    # the first batch axis the fastest (F) or the last (a stack of (n, m, ...)
    # moved to the front)
    "F": np.asfortranarray,
    "stack-to-front": lambda x: np.moveaxis(
        np.ascontiguousarray(np.moveaxis(x, (-2, -1), (0, 1))), (0, 1), (-2, -1)
    ),
}


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("layout", list(SIDE_BY_SIDE))
@pytest.mark.parametrize("dtype", [np.int8, np.float32, np.complex128, "V5"])
@pytest.mark.parametrize(
    "shape", [(6, 5, 7), (2, 3, 5, 7), (64, 40, 40), (1, 3, 300, 200)], ids=str
)
def test_batch_side_by_side(layout: str, dtype: Any, shape: tuple[int, ...]) -> None:
    """A batch whose matrices lie side by side is walked as one matrix of wide
    elements (explain: folded), fresh, into out= laid out alike and in place,
    with fills; an out= laid out otherwise, or a batch not one run (sliced),
    takes the walk of each matrix. Every result numpy's bytes and layout."""
    x = SIDE_BY_SIDE[layout](nonzero_bytes(dtype, shape))
    nb = int(np.prod(x.shape[:-2]))
    fastest = min(
        (d for d in range(x.ndim - 2) if x.shape[d] > 1), key=x.strides.__getitem__
    )
    gaps = x[(slice(None),) * fastest + (slice(None, None, 2),)]  # not one run
    for k in (-2, 0, 3):
        for upper in (True, False):
            want = numpy_oracle(x, k, upper)
            plan = _kernel.explain(x, k, upper)
            assert plan["folded"] == nb, plan
            assert func(upper)(x, k).strides == want.strides
            every_mode(x, k, upper)
            out = SIDE_BY_SIDE[layout](garbage_like(x))  # out= laid out alike
            assert _kernel.explain(x, k, upper, out)["folded"] == nb
            assert_same(func(upper)(x, k, out=out), want)
            y = np.copy(x, order="K")  # in place, laid out as x
            assert _kernel.explain(y, k, upper, y)["folded"] == nb
            assert func(upper)(y, k, out=y) is y
            assert_same(y, want)
            c = garbage_like(np.ascontiguousarray(x))  # out= of another layout
            assert "folded" not in _kernel.explain(x, k, upper, c)
            assert_same(func(upper)(x, k, out=c), want)
            assert "folded" not in _kernel.explain(gaps, k, upper)
            every_mode(gaps, k, upper)
    if np.dtype(dtype).kind == "f":  # a fill: each wide element's, the element's
        fill = np.array(-np.inf, dtype)
        want = np.where(np.tri(*x.shape[-2:], -1, bool), fill, x)
        assert_same(trilu.triu(x, fill=fill), want)
        assert _kernel.explain_band(x, 0, None, None, fill.tobytes())["folded"] == nb


# --- allocations -----------------------------------------------------------------


def address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


ALLOCATIONS = {
    # shape, dtype, k, upper -> the allocation of a fresh result
    "small": ((100, 100), np.float64, 0, True, "malloc"),
    "kept-dominates": ((700, 700), np.float64, 0, True, "malloc"),
    "zero-dominates": ((700, 700), np.float64, 650, True, "zero_pages"),
    "nothing-kept": ((700, 700), np.float64, 700, True, "zero_pages"),
    "recycled": ((1024, 1024), np.float64, -3, False, "recycled"),
    "large-zero-dominates": ((1024, 1024), np.float64, 950, True, "zero_pages"),
    # its kept rows touch 2 of every 5 pages: faulting them costs more than
    # zeroing the rest of the spare block (and so at 700x700 k=600)
    "large-zero-half": ((1024, 1024), np.float64, 600, True, "recycled"),
    "large-nothing-kept": ((2, 1024, 1024), np.float64, -2000, False, "zero_pages"),
}


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("name", list(ALLOCATIONS))
def test_allocation_choice(name: str) -> None:
    """Each allocation, chosen by cost, gives numpy's result in every mode."""
    shape, dtype, k, upper, expected = ALLOCATIONS[name]
    x = nonzero_bytes(dtype, shape)
    plan = _kernel.explain(x, k, upper)
    assert plan["allocation"] == allocation_name(expected)
    every_mode(x, k, upper)
    every_mode(np.asfortranarray(x), k, upper)


@pytest.mark.skipif(not HANDLERS, reason="trilu's memory handlers are off")
@pytest.mark.usefixtures("threads")
def test_zero_pages_pass_over_the_spare_block() -> None:
    """A spare block of the right size is there, stale bytes and all; a mostly
    zero result still takes zero pages, a mostly kept one takes the block."""
    x = nonzero_bytes(np.float64, (1024, 1024), seed=1)
    stale = trilu.triu(x, -5)
    where = address(stale)
    del stale
    gc.collect()
    assert _kernel.explain(x, 1000, True)["allocation"] == "zero_pages"
    sparse = trilu.triu(x, 1000)
    assert address(sparse) != where
    assert_same(sparse, np.triu(x, 1000))
    assert _kernel.explain(x, 0, True)["allocation"] == "recycled"
    dense = trilu.triu(x)
    assert address(dense) == where
    assert_same(dense, np.triu(x))


def test_calloc_from_32_mib_without_a_spare_block() -> None:
    """From 32 MiB with no spare block of the size, a mostly kept result
    comes from calloc: only the kept part is written."""
    x = nonzero_bytes(np.float32, (2900, 2900), seed=2)  # 32.1 MiB
    plan = _kernel.explain(x, -7, True)
    assert plan["allocation"] in ("calloc", "recycled")  # a spare may be left
    every_mode(x, -7, True)


def test_no_bytes_at_all() -> None:
    """An itemsize-0 dtype (V0): numpy's empty result, nothing divided by 0."""
    for shape in ((3, 3), (2, 3, 3), (5, 1, 4)):
        x = np.zeros(shape, "V0")
        for upper in (True, False):
            got = func(upper)(x, 1)
            assert got.shape == shape
            assert got.dtype == x.dtype
            assert func(upper)(x, 1, out=np.zeros(shape, "V0")).shape == shape
        assert _kernel.explain(x, 0, True)["allocation"] == "malloc"


# --- layouts ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("view", "bulk"),
    [
        (lambda a: a, True),
        (np.asfortranarray, True),  # the batch side by side: one matrix of runs
        (lambda a: a.swapaxes(-1, -2), True),  # a transposed batch
        (lambda a: a[:, ::-1, ::-1], False),  # read backwards
        (lambda a: a.transpose(1, 2, 0)[::2], False),
    ],
    ids=["C", "F", "swapaxes", "reversed", "batch-last"],
)
@pytest.mark.parametrize("k", [1, 100])  # malloc; zero pages from 128 KiB
def test_result_keeps_the_input_layout(view: Any, bulk: bool, k: int) -> None:
    """With order="K" a fresh result is laid out as the input (np.empty_like),
    so a transposed batch is walked along its contiguous axis, not transposed."""
    for n in (100, 1000):  # 37.5 KiB, 375 KiB
        x = view(nonzero_bytes(np.float64, (n, 8, 6)))
        got = trilu.triu(x, k, order="K")
        assert got.flags.owndata
        assert got.strides == np.empty_like(x).strides
        assert_same(got, np.triu(x, k))
        assert _kernel.explain(x, k, True, order="K")["bulk_src"] == bulk


# Transposed reads in cache: src read down its columns (a Fortran-order
# input, or a slice of one) into C-order rows, more lines to a row than L1D
# (64 sets of 8 lines) holds at their stride, go a group of rows at a time:
# (column stride in bytes, columns, grouped). Lines 2**s lines apart share
# 64 >> s sets: 16 lines apart (1 KiB), 32 held; 4 apart, 128; an odd number
# of lines apart, or no multiple of a line, spreads over every set, 512.
GROUPED = [(1024, 33, True), (1024, 32, False), (256, 129, True),
           (256, 128, False), (17 * 64, 513, True), (17 * 64, 512, False),
           (1000, 100, False)]  # fmt: skip


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "float32", "float64", "complex128", "V3", "V6"]
)
def test_transposed_reads_go_by_lines(dtype: str) -> None:
    """explain says which walks read src a group of rows at a time (elements
    of 1 to 16 bytes, a power of two, copied as they are; of 1 to 8 bytes
    always, with AVX2), and every k of
    each, with fewer rows than a group, whole groups and a rest, is numpy's
    to the bit."""
    w = np.dtype(dtype).itemsize
    # 1- to 8-byte elements move a block of columns in registers with AVX2
    blocks = w <= 8 and _kernel._vector_loops() != "portable"
    avx512 = _kernel._vector_loops() == "avx512"
    tiled = 0
    for stride, cols, grouped in GROUPED:
        if stride % w:
            continue
        base = np.asfortranarray(nonzero_bytes(dtype, (cols, stride // w)).T)
        group = min(16, 64 // w) if 64 % w == 0 else 1
        for rows in sorted({3, group, 2 * group + 3, stride // w}):
            x = base[:rows]
            assert x.strides[-1] == stride
            for k in sorted({-rows, -rows // 2, -1, 0, 1, cols // 3, cols}):
                for upper in (True, False):
                    plan = _kernel.explain(x, k, upper, garbage_like(x))
                    assert plan["method"] == "strided"
                    want = w in (1, 2, 4, 8, 16) and (grouped or blocks)
                    assert plan["grouped"] == want, (stride, cols, rows, k, plan)
                    # 1- and 2-byte elements, whole rows, by 16x16 blocks
                    tiles = (want and avx512 and w <= 2
                             and min(plan["rows"], plan["cols"]) >= 16)  # fmt: skip
                    assert plan["tiles"] == tiles, (stride, cols, rows, k, plan)
                    tiled += tiles
                    every_mode(x, k, upper)
    assert bool(tiled) == (avx512 and w <= 2)
