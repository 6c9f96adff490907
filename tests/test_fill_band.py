"""triu/tril with ``fill=``, and band: numpy's answer with the rest filled.

The oracle is numpy's: ``np.triu(np.tril(x, hi), lo)`` (``np.triu``/``np.tril``
for one bound), in numpy's result dtype, with the elements outside the band
(``lo <= j - i <= hi``) replaced by the fill converted as numpy assigns a
scalar. Results are compared bit for bit (``assert_same``): every dtype x
layout x bound, fresh, into ``out=`` in several layouts and byte orders, in
place and overlapping, on 1 and 4 threads; ``fill`` is validated before any
write.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    BAD_FILL_PARAMS,
    BIG_K,
    K_VALUES,
    LAYOUTS,
    NUMPY_FLOATS,
    OUT_MODES,
    STRING,
    Token,
    as_fill,
    as_native,
    assert_same,
    band_oracle,
    check_fresh,
    check_in_place,
    check_out,
    dtype_params,
    every,
    fill_cycle,
    fills,
    func,
    iter_k_upper,
    layout,
    layout_ok,
    make,
    ml_dtype,
    numpy_oracle,
    snapshot,
    triangle_oracle,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu
from trilu import _kernel

BATCH_SHAPE = (2, 4, 5)


# --- every dtype x layout --------------------------------------------------------------


def bounds(rows: int, cols: int, edges: Any = None) -> list[tuple[Any, Any]]:
    """(lo, hi) from far below to far above the matrix, and lo > hi."""
    if edges is None:
        edges = [None, -(10**30), -rows - 1, -1, 0, 2, cols, 10**30]
    pairs = list(itertools.product(edges, edges))
    return [*pairs, (3, 1), (1, -1), (cols, -rows)]


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_dtype_layout(dtype: np.dtype, rng) -> None:
    """Every dtype in every layout: triu/tril(x, k, fill=f) is numpy's answer
    with its zeros replaced by f, k from far below to far above; band(x, lo,
    hi, fill=f) is np.triu(np.tril(x, hi), lo) with f outside the band, for
    bounds from far below to far above, lo > hi keeping nothing."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        x = layout(name, dtype, BATCH_SHAPE, rng)
        for n, (_, k, upper) in enumerate(iter_k_upper()):
            fill = cycle[n % len(cycle)]
            exp = triangle_oracle(x, k, upper, fill)
            check_fresh(partial(func(upper), x, k, fill=fill), x, exp)
        for n, (lo, hi) in enumerate(bounds(*x.shape[-2:])):
            fill = cycle[n % len(cycle)]
            exp = band_oracle(x, lo, hi, fill)
            check_fresh(partial(trilu.band, x, lo, hi, fill=fill), x, exp)

    every([n for n in LAYOUTS if layout_ok(n, dtype, len(BATCH_SHAPE))], check)


# --- out= and in place -------------------------------------------------------------------

OPS: list[tuple[str, Any, Any]] = [
    ("triu", -2, None),
    ("triu", 0, None),
    ("triu", 10**30, None),
    ("tril", 1, None),
    ("tril", -(10**30), None),
    ("band", -1, 2),
    ("band", None, None),
    ("band", 3, 1),
    ("band", -(10**30), 0),
]


def op_call(op: tuple[str, Any, Any], x: Any, fill: Any) -> Callable[..., Any]:
    name, a, b = op
    if name == "band":
        return partial(trilu.band, x, a, b, fill=fill)
    return partial(getattr(trilu, name), x, a, fill=fill)


def op_oracle(op: tuple[str, Any, Any], x: Any, fill: Any) -> np.ndarray:
    name, a, b = op
    if name == "band":
        return band_oracle(x, a, b, fill)
    return triangle_oracle(x, a, name == "triu", fill)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out(dtype: np.dtype, rng) -> None:
    """out= in each layout and byte order gets the answer and is returned;
    nothing of its buffer beyond it is written; the input is unchanged."""
    x = make(dtype, (2, 4, 5), rng)
    cycle = fill_cycle(dtype)

    def check(mode: str) -> None:
        for n, op in enumerate(OPS):
            fill = cycle[n % len(cycle)]
            check_out(op_call(op, x, fill), x, op_oracle(op, x, fill), mode, rng)

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_in_place(dtype: np.dtype, rng) -> None:
    """out=m, m in each layout and byte order: m holds the answer afterwards."""
    cycle = fill_cycle(dtype)

    def check(how: str) -> None:
        for n, op in enumerate(OPS):
            fill = cycle[n % len(cycle)]
            check_in_place(
                lambda y, out, op=op, fill=fill: op_call(op, y, fill)(out=out),
                partial(op_oracle, op, fill=fill),
                make(dtype, (2, 4, 5), rng),
                how,
                rng,
            )

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= sharing memory with the input, shifted by a row or by a matrix,
    or the input transposed: the answer of the input as it was."""
    cycle = fill_cycle(dtype)

    def check(shift: str) -> None:
        for n, op in enumerate(OPS):
            fill = cycle[n % len(cycle)]
            if shift == "row":
                buf = make(dtype, (2, 5, 5), rng)
                x, out = buf[:, :-1], buf[:, 1:]
            elif shift == "batch":
                buf = make(dtype, (3, 4, 4), rng)
                x, out = buf[:-1], buf[1:]
            else:
                x = make(dtype, (2, 4, 4), rng)
                out = x.swapaxes(-1, -2)
            exp = op_oracle(op, x.copy(), fill)
            assert op_call(op, x, fill)(out=out) is out
            assert_same(as_native(out, exp.dtype), exp)

    every(["row", "batch", "transposed"], check)


# --- shapes, 1-D, argument forms ------------------------------------------------------

SHAPES = [(1, 6), (6, 1), (1, 1), (0, 3), (3, 0), (0, 0), (2, 0, 3), (0, 3, 3),
          (2, 3, 1, 4), (2, 2, 2, 3, 2)]  # fmt: skip
SHAPE_DTYPES = {
    n: ALL_DTYPES[n]
    for n in ("bool", "int8", "float64", "complex128", "U3", "V5", "object")
}
if STRING is not None:
    SHAPE_DTYPES["StringDType"] = STRING


@pytest.mark.parametrize("dtype", dtype_params(SHAPE_DTYPES))
def test_shapes(dtype: np.dtype, rng) -> None:
    """Thin, empty and many-batch-dim shapes, fresh and into out=."""
    fill = fills(dtype)[0]

    def check(shape: tuple[int, ...]) -> None:
        x = make(dtype, shape, rng)
        for lo, hi in bounds(*shape[-2:]):
            exp = band_oracle(x, lo, hi, fill)
            check_fresh(partial(trilu.band, x, lo, hi, fill=fill), x, exp)
        for _, k, upper in iter_k_upper():
            exp = triangle_oracle(x, k, upper, fill)
            call = partial(func(upper), x, k, fill=fill)
            check_fresh(call, x, exp)
            check_out(call, x, exp, "F", rng)

    every(SHAPES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_1d_input(dtype: np.dtype, rng) -> None:
    """A 1-D input is the rows of an N x N matrix, as in numpy, with fill,
    for triu/tril and band, fresh and into out=."""
    cycle = fill_cycle(dtype)

    def check(n: int) -> None:
        for x in (make(dtype, (n,), rng), make(dtype, (2 * n,), rng)[::-2]):
            for i, (lo, hi) in enumerate([(-1, 1), (None, 0), (2, None), (1, -1)]):
                fill = cycle[i % len(cycle)]
                exp = band_oracle(x, lo, hi, fill)
                call = partial(trilu.band, x, lo, hi, fill=fill)
                check_fresh(call, x, exp)
                check_out(call, x, exp, "C", rng)
                k = hi if lo is None else lo
                if k is not None:
                    exp = triangle_oracle(x, k, lo is not None, fill)
                    check_fresh(partial(func(lo is not None), x, k, fill=fill), x, exp)

    every([0, 1, 5], check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_band_is_triu_and_tril(dtype: np.dtype, rng) -> None:
    """band(m, k, None) is np.triu(m, k) and band(m, None, k) np.tril(m, k),
    bit for bit, as are trilu.triu/tril; band(m) keeps everything."""
    x = make(dtype, (2, 5, 4), rng)
    for _, k, upper in iter_k_upper():
        want = numpy_oracle(x, k, upper)
        got = trilu.band(x, k, None) if upper else trilu.band(x, None, k)
        assert_same(got, want)
        assert_same(func(upper)(x, k, fill=None), want)
    assert_same(trilu.band(x), np.triu(x, -BIG_K))


def test_bound_forms(rng) -> None:
    """lo and hi take numpy's k forms: numpy ints, integral floats, 0-d arrays,
    bools; far beyond int64."""
    x = make(np.float64, (3, 6, 7), rng)
    forms = [*K_VALUES.values(), 2.0, -3.0, np.array(2), np.array(-1, np.int8),
             np.True_, np.float32(-2.0), 2**64, -(2**64)]  # fmt: skip
    for lo, hi in itertools.product([None, *forms], [None, *forms[:6]]):
        assert_same(trilu.band(x, lo, hi, fill=-1.5), band_oracle(x, lo, hi, -1.5))


def test_list_input() -> None:
    """A nested list converts as numpy converts it."""
    data = [[1, 2, 3], [4, 5, 6]]
    assert_same(trilu.band(data, 0, 1, fill=-9), band_oracle(np.array(data), 0, 1, -9))
    assert_same(
        trilu.tril(data, 0, fill=7), triangle_oracle(np.array(data), 0, False, 7)
    )


@pytest.mark.parametrize("order", ["C", "F", "K", "A", None])
def test_order(order: Any, rng) -> None:
    """order= sets a fresh result's layout (None: numpy's C order), never
    its values."""
    x = np.asfortranarray(make(np.float32, (6, 7), rng))
    for got, exp in [
        (
            trilu.band(x, -1, 2, fill=-np.inf, order=order),
            band_oracle(x, -1, 2, -np.inf),
        ),
        (
            trilu.triu(x, 1, fill=np.nan, order=order),
            triangle_oracle(x, 1, True, np.nan),
        ),
    ]:
        assert_same(got, exp)
        if order in ("F", "K", "A"):
            assert got.flags.f_contiguous
        else:
            assert got.flags.c_contiguous


# --- what the fill is ------------------------------------------------------------------


def test_object_fill_is_the_object() -> None:
    """An object array's fill is the given object itself, in every filled
    element; the kept elements are the input's own objects."""
    x = np.empty((3, 4), object)
    x[...] = [[Token(4 * i + j) for j in range(4)] for i in range(3)]
    for fill in (Token(-1), [], {"a": 1}, (1, 2), np.array([1, 2])):
        for got in (
            trilu.triu(x, 1, fill=fill),
            trilu.tril(x, -1, fill=fill),
            trilu.band(x, 0, 0, fill=fill),
        ):
            for (i, j), v in np.ndenumerate(got):
                assert v is x[i, j] or v is fill


def test_object_default_fill_is_zero() -> None:
    """fill=None on objects is numpy's int 0."""
    x = np.full((3, 3), Token(0), object)
    got = trilu.band(x, 0, 0)
    assert all(type(v) is int and v == 0 for v in got[~np.eye(3, dtype=bool)])


@pytest.mark.parametrize(
    ("dtype", "fill", "want"),
    [
        ("U3", "ab", "ab"),
        ("U3", "é€x", "é€x"),
        (">U2", "xy", "xy"),
        ("S4", b"\x01\x02", b"\x01\x02"),
        ("S4", b"abcd", b"abcd"),
    ],
)
def test_string_fill_is_the_string(dtype: str, fill: Any, want: Any) -> None:
    """A string dtype's fill is the given string, bit for bit."""
    x = make(np.dtype(dtype), (3, 3), np.random.default_rng(1))
    got = trilu.triu(x, 1, fill=fill)
    assert got[1, 0] == want
    assert got[2, 1] == want
    assert_same(got, triangle_oracle(x, 1, True, fill))


def test_float_fill_bits() -> None:
    """-0.0 and a NaN's payload reach the result as they are (fill bytes are
    never taken for zeros); 0.0 gives +0.0."""
    x = np.ones((4, 4))
    payload = np.array(0x7FF8000000000123, np.uint64).view(np.float64)[()]
    for fill, bits in [(-0.0, 1 << 63), (payload, 0x7FF8000000000123), (0.0, 0)]:
        for got in (trilu.triu(x, fill=fill), trilu.band(x, 0, 0, fill=fill)):
            assert got.view(np.uint64)[3, 0] == bits


# --- large inputs: threads and every path ----------------------------------------------

LARGE = {
    "float32-C": (np.float32, (1200, 900), "C"),
    "float32-transposed": (np.float32, (1200, 900), "transposed"),
    "int8-neg_cols": (np.int8, (2000, 1500), "neg_cols"),
    "complex128-batch": (np.complex128, (3, 300, 310), "neg_rows"),
    "float64-tall": (np.float64, (150_000, 3), "C"),
}


@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_large(case: tuple[Any, tuple[int, ...], str], threads: int, rng) -> None:
    """Several MiB: the kernel splits the work over the threads; fresh, out=
    (C and F) and in place match the oracle."""
    dtype, shape, name = case
    x = layout(name, dtype, shape, rng)
    fill = fills(dtype)[0]
    for lo, hi, mode in [(-300, 200, "C"), (None, -2, "F"), (5, -5, "strided")]:
        fill_bytes = as_fill(fill, np.dtype(dtype)).tobytes()
        plan = _kernel.explain_band(x, lo, hi, None, fill_bytes)
        assert plan["threads"] == threads, plan
        exp = band_oracle(x, lo, hi, fill)
        call = partial(trilu.band, x, lo, hi, fill=fill)
        check_fresh(call, x, exp)
        check_out(call, x, exp, mode, rng)
        y = x.copy(order="K")
        assert trilu.band(y, lo, hi, fill=fill, out=y) is y
        assert_same(y, exp)
    for upper in (True, False):
        exp = triangle_oracle(x, 7, upper, fill)
        check_fresh(partial(func(upper), x, 7, fill=fill), x, exp)


# --- fill validation ---------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fill", "exc"), BAD_FILL_PARAMS)
def test_bad_fill(name: str, fill: Any, exc: Any, rng) -> None:
    """A fill the dtype cannot hold raises (the exact type, a message naming
    fill) before anything is written: out= and an in-place m untouched."""
    dtype = ALL_DTYPES[name]
    x = make(dtype, (2, 4, 5), rng)
    calls: list[Callable[..., Any]] = [
        lambda **kw: trilu.triu(x, 1, fill=fill, **kw),
        lambda **kw: trilu.tril(x, -1, fill=fill, **kw),
        lambda **kw: trilu.band(x, -1, 1, fill=fill, **kw),
        lambda **kw: trilu.band(x, None, None, fill=fill, **kw),
    ]
    for call in calls:
        before = snapshot(x)
        with pytest.raises(exc, match=r"\bfill\b"):
            call()
        out = make(dtype, x.shape, rng)
        out_before = snapshot(out)
        with pytest.raises(exc, match=r"\bfill\b"):
            call(out=out)
        assert snapshot(out) == out_before, "out was written"
        with pytest.raises(exc, match=r"\bfill\b"):
            call(out=x)
        assert snapshot(x) == before, "the input was written"


def test_good_fill_conversions() -> None:
    """What NEP 50 allows: ints into floats and complex, a bool into ints,
    numpy scalars of the same kind, 0-d arrays; extremes of the range."""
    cases = [
        (np.int8, -128),
        (np.int8, True),
        (np.uint64, 2**64 - 1),
        (np.int64, -(2**63)),
        (np.float16, 70000.0),  # beyond float16: inf, as numpy converts it
        (np.float32, 3),
        (np.complex64, -(2**40)),
        (np.float64, np.float32(0.1)),
        (np.int16, np.int8(-5)),
        (np.float64, np.array(-2.5)),
        (np.dtype("m8[ns]"), np.timedelta64(3, "us")),
    ]
    for dtype, fill in cases:
        x = np.ones((3, 3), dtype)
        with np.errstate(over="ignore"):
            exp = triangle_oracle(x, 0, True, fill)
            assert_same(trilu.triu(x, fill=fill), exp)


def test_bare_int_into_generic_timedelta() -> None:
    """An int fill of a timedelta with no unit: numpy's value and numpy's
    warnings (numpy 2.5 deprecates the conversion; they name trilu's line, the
    Python frame numpy's C code sees), raised before any write where
    warnings are errors."""
    x = np.arange(12).view("m8").reshape(3, 4)
    with warnings.catch_warnings(record=True) as numpy_s:
        warnings.simplefilter("always")
        exp = triangle_oracle(x, 1, True, -7)
    for call in (
        partial(trilu.triu, x, 1, fill=-7),
        partial(trilu.band, x, 1, None, fill=-7),
    ):
        with warnings.catch_warnings(record=True) as trilu_s:
            warnings.simplefilter("always")
            assert_same(call(), exp)
        assert [(w.category, str(w.message)) for w in trilu_s] == [
            (w.category, str(w.message)) for w in numpy_s
        ]
        if numpy_s:
            out = x.copy()
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with pytest.raises(DeprecationWarning):
                    call(out=out)
            assert snapshot(out) == snapshot(x)


BAD_ARGS = [
    ("lo", lambda x: trilu.band(x, 1.5, None), TypeError, r"\blo must be an integer"),
    ("hi", lambda x: trilu.band(x, None, "1"), TypeError, r"\bhi must be an integer"),
    ("lo-array", lambda x: trilu.band(x, np.array([1, 2])), TypeError, r"\blo\b"),
    ("hi-nan", lambda x: trilu.band(x, 0, float("nan")), TypeError, r"\bhi\b"),
    ("k", lambda x: trilu.triu(x, 0.5, fill=1.0), TypeError, r"\bk must be"),
    ("0-d", lambda x: trilu.band(x[0, 0], 0, 1), TypeError, r"0-D"),
    ("order", lambda x: trilu.band(x, 0, 1, order="X"), ValueError, r"\border\b"),
    (
        "out-shape",
        lambda x: trilu.band(x, 0, 1, fill=2.0, out=np.empty((4, 3))),
        ValueError,
        r"\bout\b.*shape",
    ),
    (
        "out-dtype",
        lambda x: trilu.band(x, 0, 1, out=np.empty((3, 4), np.float32)),
        TypeError,
        r"\bout\b.*dtype",
    ),
    (
        "out-type",
        lambda x: trilu.triu(x, 0, fill=1.0, out=[[0.0] * 4] * 3),
        TypeError,
        r"\bout must be a numpy",
    ),
    (
        "out-readonly",
        lambda x: trilu.band(x, 0, 1, fill=2.0, out=np.broadcast_to(x, x.shape)),
        ValueError,
        r"read-only|writ",
    ),
]


@pytest.mark.parametrize(
    ("fn", "exc", "match"), [pytest.param(*c[1:], id=c[0]) for c in BAD_ARGS]
)
def test_bad_arguments(fn: Any, exc: type, match: str) -> None:
    """band's bounds, order= and out= are checked as triu's k is: the exact
    type, a message naming the argument, the input untouched."""
    x = np.arange(12.0).reshape(3, 4)
    before = snapshot(x)
    with pytest.raises(exc, match=match):
        fn(x)
    assert snapshot(x) == before


# --- properties ----------------------------------------------------------------------------

_HYP_DTYPES = [
    n for n in ALL_DTYPES if n not in ("struct_obj", "struct_padded")
]  # structured: covered above; they slow the draw down
BOUND = st.one_of(
    st.none(),
    st.integers(-8, 8),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, -(2**63), 2**64]),
)


@st.composite
def fill_for(draw: Any, dtype: np.dtype) -> Any:
    """A fill the dtype takes: drawn for native numbers, else from fills()."""
    if dtype.kind in "iu" and not ml_dtype(dtype):
        info = np.iinfo(dtype)
        return draw(st.integers(int(info.min), int(info.max)))
    if dtype.kind == "f" and dtype.type in NUMPY_FLOATS:
        width = 8 * dtype.itemsize
        return draw(st.floats(width=width) | st.integers(-2048, 2048))
    if dtype.kind == "c" and dtype.itemsize in (8, 16):
        return draw(st.complex_numbers(width=8 * dtype.itemsize))
    return draw(st.sampled_from(fills(dtype)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_HYP_DTYPES),
    st.lists(st.integers(0, 5), min_size=1, max_size=4),
    st.sampled_from(LAYOUTS),
    BOUND,
    BOUND,
    st.integers(0, 2**32 - 1),
    st.sampled_from(["fresh", "triangle", "inplace", *OUT_MODES]),
    st.data(),
)
def test_hypothesis(
    name: str,
    shape: list[int],
    layout_name: str,
    lo: Any,
    hi: Any,
    seed: int,
    mode: str,
    data: Any,
) -> None:
    """Random dtype, shape (1-D too), layout, bounds and fill against the
    oracle: fresh, as triu/tril, into out= or in place."""
    dtype = ALL_DTYPES[name]
    rng = np.random.default_rng(seed)
    fill = data.draw(st.none() | fill_for(dtype))
    if len(shape) == 1 or not layout_ok(layout_name, dtype, len(shape)):
        x = make(dtype, tuple(shape), rng)
    else:
        x = layout(layout_name, dtype, tuple(shape), rng)
    if mode == "triangle":
        upper = lo is not None
        k = lo if upper else (hi if hi is not None else 0)
        exp = triangle_oracle(x, k, upper, fill)
        check_fresh(partial(func(upper), x, k, fill=fill), x, exp)
        return
    exp = band_oracle(x, lo, hi, fill)
    call = partial(trilu.band, x, lo, hi, fill=fill)
    if mode == "fresh":
        check_fresh(call, x, exp)
    elif mode == "inplace":
        y = np.array(np.broadcast_to(x, exp.shape), order="K")
        assert trilu.band(y, lo, hi, fill=fill, out=y) is y
        assert_same(as_native(y, exp.dtype), exp)
    else:
        check_out(call, x, exp, mode, rng)
