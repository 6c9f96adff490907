"""A fresh result's layout is numpy's: shape, strides, flags and dtype.

numpy.triu/tril is ``where(mask, zeros(1), m)``, whose result the iterator
lays out; trilu computes the same strides (docs: user_guide/numpy.rst,
Layout). The installed numpy is the oracle for every dtype and layout of
``tests/_cases.py``, batches with permuted, length-1 and length-0 axes, and
1-D input; ``order=`` is checked against ``numpy.empty_like``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    LAYOUTS,
    assert_same,
    band_oracle,
    dtype_params,
    edge_shapes,
    every,
    fills,
    layout,
    layout_ok,
    make,
    mirror_oracle,
    numpy_oracle,
    onnx_zero,
    pack_oracle,
    triangle_oracle,
    unpack_oracle,
)

import trilu

FLAGS = ("c_contiguous", "f_contiguous", "owndata", "writeable", "aligned")


def assert_layout(got: np.ndarray, exp: np.ndarray) -> None:
    """got is exp to the byte, laid out as exp: strides, flags, dtype metadata."""
    assert_same(got, exp)
    assert got.strides == exp.strides, f"strides {got.strides} != {exp.strides}"
    for flag in FLAGS:
        assert getattr(got.flags, flag) == getattr(exp.flags, flag), flag
    assert got.dtype.metadata == exp.dtype.metadata
    assert got.dtype.isnative == exp.dtype.isnative


def views(x: np.ndarray):
    """x under every axis permutation, with each axis reversed in turn, and
    copies laid out so (a permuted input's memory order)."""
    for perm in itertools.permutations(range(x.ndim)):
        yield x.transpose(perm)
        yield np.ascontiguousarray(x.transpose(perm)).transpose(np.argsort(perm))
    for axis in range(x.ndim):
        yield np.flip(x, axis)


def windows(rng) -> list[np.ndarray]:
    """Sliding windows: axes of equal strides, read-only overlapping views."""
    win = np.lib.stride_tricks.sliding_window_view
    flat = make(np.float32, (12,), rng)
    plane = make(np.int16, (6, 7), rng)
    return [
        win(flat, 4),
        win(flat, 4)[::-1],
        win(plane, (3, 4)),
        win(plane, 3, axis=0),
        win(plane.T, (2, 3)),
        win(flat, 4).T,
    ]


SHAPES = [(5, 7), (7, 1), (1, 6), (1, 1), (3, 4, 5), (3, 1, 5), (1, 4, 5),
          (2, 3, 4, 5), (4, 1, 1, 3), (2, 3, 1, 1), (0, 3, 4), (3, 0, 4),
          (2, 4, 0)]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_every_view(shape: tuple[int, ...], upper: bool, rng) -> None:
    """Every permutation, reversal and memory order of every shape."""
    fn = trilu.triu if upper else trilu.tril
    for x in views(make(np.float64, shape, rng)):
        for k in (-2, 0, 1, 4):
            assert_layout(fn(x, k), numpy_oracle(x, k, upper))


def test_equal_strides(rng) -> None:
    """Axes striding alike (overlapping views): numpy's tie-break, C order."""
    for w in windows(rng):
        for x in (w, *views(w[..., :3, :2])):
            for k, upper in itertools.product((-1, 0, 2), (True, False)):
                fn = trilu.triu if upper else trilu.tril
                assert_layout(fn(x, k), numpy_oracle(x, k, upper))
                for order in ("K", "A"):
                    assert (
                        fn(x, k, order=order).strides
                        == np.empty_like(x, order=order).strides
                    )


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
@pytest.mark.parametrize("name", LAYOUTS)
def test_every_dtype_and_layout(dtype: Any, name: str, rng) -> None:
    """Each dtype in each layout of _cases, 2-D and batched, both triangles."""
    for shape in ((4, 6), (6, 4), (3, 4, 5), (2, 3, 4, 5)):
        if not layout_ok(name, dtype, len(shape)):
            continue
        x = layout(name, dtype, shape, rng)
        for k, upper in itertools.product((-1, 0, 2), (True, False)):
            fn = trilu.triu if upper else trilu.tril
            assert_layout(fn(x, k), numpy_oracle(x, k, upper))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_one_dimensional(n: int, rng) -> None:
    """A 1-D input's N x N result, as numpy lays it out."""
    x = make(np.int32, (2 * n,), rng)[::2]
    for k, upper in itertools.product((-1, 0, 1), (True, False)):
        fn = trilu.triu if upper else trilu.tril
        assert_layout(fn(x, k), numpy_oracle(x, k, upper))


def test_metadata_dropped_as_numpy_does(rng) -> None:
    """numpy's result drops a number dtype's metadata and keeps a string's."""
    for base in (np.float64, "U3", ">i4", "M8[s]"):
        dtype = np.dtype(base, metadata={"unit": "m"})
        x = make(np.dtype(base), (4, 5), rng).astype(dtype)
        assert_layout(trilu.triu(x, 1), np.triu(x, 1))
        assert_layout(trilu.tril(x.T, -1), np.tril(x.T, -1))


def test_large_layouts(rng) -> None:
    """Results big enough for each allocation (zero pages, calloc, recycled)
    and for threads keep numpy's layout and bytes: Fortran, transposed batch."""
    x = np.asfortranarray(rng.random((1100, 1300)))
    batch = rng.random((6, 300, 200)).astype(np.float32).transpose(0, 2, 1)
    for a, k in itertools.product((x, batch, x[::-1, ::2]), (-3000, -5, 0, 7, 3000)):
        assert_layout(trilu.triu(a, k), np.triu(a, k))
        assert_layout(trilu.tril(a, k), np.tril(a, k))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)], ids=str)
def test_trilu_follows_the_same_rule(shape: tuple[int, ...], rng) -> None:
    """trilu.trilu lays its result out as numpy.triu would, as onnx's op does."""
    for x in views(make(np.int16, shape, rng)):
        for k, upper in itertools.product((-1, 0, 2), (True, False)):
            assert_layout(trilu.trilu(x, k, upper), numpy_oracle(x, k, upper))


@pytest.mark.parametrize("dtype", ["float64", "int16", "V3"])
def test_packed_results_are_c_ordered(dtype: str, rng) -> None:
    """pack's and unpack's fresh results are C-ordered arrays of their own,
    small results and those large enough for zero pages alike (numpy's
    ``x[..., r, c]`` of a batch lays its vectors out otherwise)."""
    shapes = [(4, 5), (2, 3, 3), (0, 3), (3, 300, 300)]
    for shape, k, upper in itertools.product(shapes, (-1, 0, 2), (True, False)):
        x = make(dtype, shape, rng)
        v = trilu.pack(x, k, upper=upper)
        assert_layout(v, np.array(pack_oracle(x, k, upper), order="C"))
        rows, cols = shape[-2:]
        exp = unpack_oracle(v, rows, cols, k, upper)
        assert_layout(trilu.unpack(v, rows, cols, k, upper=upper), exp)
        if rows == cols and k == 0:  # the side found from v's length
            assert_layout(trilu.unpack(v, upper=upper), exp)


# --- order= ----------------------------------------------------------------------


@pytest.mark.parametrize("order", ["K", "A", "C", "F"])
@pytest.mark.parametrize("shape", [(5, 7), (3, 1, 5), (2, 3, 4, 5), (0, 4, 3)], ids=str)
def test_order_is_numpys(order: str, shape: tuple[int, ...], rng) -> None:
    """order= lays the result out as numpy.empty_like(m, order=order)."""
    for x in views(make(np.complex64, shape, rng)):
        for k, upper in itertools.product((-1, 0, 3), (True, False)):
            fn = trilu.triu if upper else trilu.tril
            got = fn(x, k, order=order)
            exp = np.empty_like(x, order=order)
            assert got.strides == exp.strides, (x.strides, order)
            assert got.flags.owndata
            assert_same(np.ascontiguousarray(got), numpy_oracle(x, k, upper))
            got = trilu.trilu(x, k, upper, order=order)
            assert got.strides == exp.strides


ORDERS = [None, "K", "A", "C", "F"]


def order_calls(x: np.ndarray) -> Iterator[tuple[str, Callable[..., Any], np.ndarray]]:
    """(name, call taking order=, its answer) for every function with order=:
    triu and tril (with fill= too, another path), band, the ONNX operator,
    and mirror for square matrices."""
    fill = fills(x.dtype)[0]
    yield "triu", partial(trilu.triu, x, 1), numpy_oracle(x, 1, True)
    yield "tril", partial(trilu.tril, x, -1), numpy_oracle(x, -1, False)
    exp = triangle_oracle(x, 0, True, fill)
    yield "triu fill", partial(trilu.triu, x, fill=fill), exp
    yield "band", partial(trilu.band, x, -1, 1), band_oracle(x, -1, 1)
    exp = band_oracle(x, 0, 2, fill)
    yield "band fill", partial(trilu.band, x, 0, 2, fill=fill), exp
    exp = triangle_oracle(x, 0, False, onnx_zero(x.dtype))
    yield "trilu", partial(trilu.trilu, x, 0, False), exp
    if x.shape[-1] == x.shape[-2]:
        yield "mirror", partial(trilu.mirror, x), mirror_oracle(x, True)


@pytest.mark.parametrize("dtype", [np.complex64, object], ids=str)
@pytest.mark.parametrize("order", ORDERS, ids=str)
def test_order_on_edge_shapes(order: str | None, dtype: Any, rng) -> None:
    """Shapes with length-1 axes (C- and F-contiguous at once) and length-0
    ones, in every layout, through every function with order=: the result is
    numpy's bytes, laid out as numpy.empty_like(m, order=order) (as
    numpy.triu(m) for None), strides and flags."""

    def check(case: tuple[tuple[int, ...], str]) -> None:
        shape, name = case
        x = layout(name, dtype, shape, rng)
        for fn, call, exp in order_calls(x):
            got = call(order=order)
            if order is None:
                like = numpy_oracle(x, 0, True)
            else:
                like = np.empty_like(x, order=order, dtype=exp.dtype)
            try:
                assert_same(got, exp)
                assert got.strides == like.strides, f"strides {got.strides}"
                for flag in FLAGS:
                    assert getattr(got.flags, flag) == getattr(like.flags, flag), flag
            except AssertionError as error:
                raise AssertionError(f"{fn} of {x.strides}: {error}") from None

    every(
        [
            (shape, name)
            for shape in edge_shapes()
            for name in LAYOUTS
            if layout_ok(name, dtype, len(shape))
        ],
        check,
    )


def test_order_on_other_paths(rng) -> None:
    """order= holds for objects, strings, another byte order, and large results."""
    for dtype in (object, "U3", ">f8", np.dtype([("a", "<i2"), ("b", ">f4")])):
        x = np.asfortranarray(make(np.dtype(dtype), (3, 4, 5), rng))
        for order in ("K", "C", "F"):
            got = trilu.triu(x, 1, order=order)
            assert got.strides == np.empty_like(x, order=order, dtype=got.dtype).strides
            assert_same(got, np.triu(x, 1))
    x = rng.random((1500, 1200))
    for order, k in itertools.product(("K", "F"), (-2000, 0, 3, 2000)):
        got = trilu.tril(x, k, order=order)
        assert got.strides == np.empty_like(x, order=order).strides
        assert_same(got, np.tril(x, k))


def test_order_with_out_is_out(rng) -> None:
    """With out=, the result is out, whatever order says (as in ufuncs)."""
    x = make(np.float32, (4, 5), rng)
    out = np.empty((4, 5), np.float32, order="F")
    assert trilu.triu(x, out=out, order="C") is out
    assert_same(out, np.triu(x))


@pytest.mark.parametrize("order", ["k", "X", "CF", "", 1, b"C", ["C"]], ids=repr)
def test_bad_order(order: Any, rng) -> None:
    """An order that is none of numpy's: a ValueError naming it; nothing written."""
    x = make(np.float64, (3, 3), rng)
    out = np.full((3, 3), 7.0)
    for fn in (trilu.triu, trilu.tril, lambda m, **kw: trilu.trilu(m, 0, True, **kw)):
        with pytest.raises(ValueError, match=r"^order must be one of 'K', 'A', 'C'"):
            fn(x, order=order)
        with pytest.raises(ValueError, match=r"^order must be one of"):
            fn(x.astype(object), order=order)
        with pytest.raises(ValueError, match=r"^order must be one of"):
            fn(x, order=order, out=out)
    assert (out == 7.0).all()


def test_order_needs_numpy_input(rng) -> None:
    """order= is for numpy results: a dask array says so."""
    da = pytest.importorskip("dask.array")
    dx = da.from_array(make(np.float64, (4, 4), rng), chunks=2)
    with pytest.raises(TypeError, match="order= needs a numpy array input"):
        trilu.triu(dx, order="F")


def test_scipy_qr_under_the_patch(rng) -> None:
    """scipy.linalg.qr's R under trilu.patched() is numpy's, layout included,
    so a complex R views as float64 (its last axis contiguous)."""
    linalg = pytest.importorskip("scipy.linalg")
    a = np.asfortranarray(
        rng.standard_normal((6, 4)) + 1j * rng.standard_normal((6, 4))
    )
    (expected,) = linalg.qr(a, mode="r")
    with trilu.patched():
        (got,) = linalg.qr(a, mode="r")
    assert_layout(got, expected)
    assert got.view(np.float64).shape == (6, 8)
