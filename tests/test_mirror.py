"""mirror: a symmetric (Hermitian with conj) matrix from one triangle.

The oracle is ``np.where(j >= i, x, xT)`` (``j <= i`` for ``upper=False``),
``xT = np.swapaxes(x, -1, -2)``, with xT's imaginary parts negated bit for bit
when ``conj=True`` (the sign bit flipped: NaN payloads kept). Every dtype x
layout x side x conj, fresh, into ``out=`` in every layout and byte order, in
place (``out=m``) and overlapping, on 1 and 4 threads through the tiled path
(>= 1 MiB, elements of 8 bytes or less); the errors leave everything untouched.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    LAYOUTS,
    OUT_MODES,
    Token,
    as_native,
    assert_same,
    check_in_place,
    check_out,
    dtype_params,
    every,
    layout,
    layout_ok,
    make,
    mirror_oracle,
    ml_dtype,
    snapshot,
    swapped,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu
from trilu import _kernel

BATCH_SHAPE = (2, 4, 4)


# --- helpers -------------------------------------------------------------------------


def conj_ok(dtype: np.dtype) -> bool:
    """Numbers: ints and floats (their own conjugates, ml_dtypes' too) and
    complex; not bool, datetimes, strings, void or structured."""
    return ml_dtype(dtype) or dtype.kind in "iufc"


def conj_native(dtype: np.dtype) -> bool:
    """numpy's own numbers (ml_dtypes' conj has its own test)."""
    return conj_ok(dtype) and not ml_dtype(dtype)


def square(name: str, dtype: Any, shape: tuple[int, ...], rng) -> np.ndarray:
    """layout(name, ...) cut square ("step" has a column more)."""
    x = layout(name, dtype, shape, rng)
    return x[..., : shape[-2], : shape[-1]]


def assert_equal_objects(got: np.ndarray, exp: np.ndarray) -> None:
    """Object results made by conjugation: equal values of the same types."""
    assert type(got) is np.ndarray
    assert got.dtype == exp.dtype
    assert got.shape == exp.shape
    for idx in np.ndindex(*exp.shape):
        assert type(got[idx]) is type(exp[idx]), idx
        assert got[idx] == exp[idx], idx


# --- every dtype x layout x side x conj ----------------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_dtype_layout(dtype: np.dtype, rng) -> None:
    """mirror(x, upper, conj) is the oracle bit for bit (object elements the
    very objects), for every dtype and layout; conj=True on numbers only."""

    def check(name: str) -> None:
        x = square(name, dtype, (2, 5, 5), rng)
        before = snapshot(x)
        for upper in (True, False):
            for conj in (False, True) if conj_native(dtype) else (False,):
                got = trilu.mirror(x, upper=upper, conj=conj)
                assert_same(got, mirror_oracle(x, upper, conj))
        assert snapshot(x) == before, "the input was modified"

    every([n for n in LAYOUTS if layout_ok(n, dtype, 3)], check)


SHAPES = [(0, 0), (1, 1), (2, 2), (3, 0, 0), (0, 3, 3), (2, 1, 1), (2, 3, 5, 5), (7, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_shapes(shape: tuple[int, ...], rng) -> None:
    """Empty, single-element and many-batch-dim square shapes."""
    for dtype in (np.float64, np.complex64, np.dtype("U3"), np.dtype(object)):
        x = make(dtype, shape, rng)
        for upper in (True, False):
            assert_same(trilu.mirror(x, upper=upper), mirror_oracle(x, upper))
            if np.dtype(dtype).kind == "c":
                got = trilu.mirror(x, upper=upper, conj=True)
                assert_same(got, mirror_oracle(x, upper, True))


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_1d_input(dtype: np.dtype, rng) -> None:
    """A 1-D input is the rows of an n x n matrix, as in triu."""
    for n in (0, 1, 4):
        for x in (make(dtype, (n,), rng), make(dtype, (2 * n,), rng)[::-2]):
            for upper in (True, False):
                assert_same(trilu.mirror(x, upper=upper), mirror_oracle(x, upper))


def test_list_input() -> None:
    """A nested list converts as numpy converts it."""
    data = [[1, 2j], [3, 4]]
    got = trilu.mirror(data, upper=False, conj=True)
    assert_same(got, mirror_oracle(np.array(data), False, True))


REALS = {n: dt for n, dt in ALL_DTYPES.items() if conj_ok(dt) and dt.kind != "c"}


@pytest.mark.parametrize("dtype", dtype_params(REALS))
def test_conj_of_reals_is_identity(dtype: np.dtype, rng) -> None:
    """conj=True on ints and floats (byte-swapped and ml_dtypes' too): the
    same bytes as conj=False, in every layout."""
    for name in LAYOUTS:
        if layout_ok(name, dtype, 3):
            x = square(name, dtype, (3, 6, 6), rng)
            for upper in (True, False):
                got = trilu.mirror(x, upper=upper, conj=True)
                assert_same(got, mirror_oracle(x, upper))


def test_conj_keeps_nan_payloads_and_zeros() -> None:
    """The imaginary part is negated bit for bit: NaN payloads and signed
    zeros kept, the real part and the kept triangle untouched."""
    bits = np.array([0x7FF8000000000123, 0, 1 << 63, 0xFFF0000000000001], np.uint64)
    x = np.empty((4, 4), np.complex128)
    raw = x.view(np.uint64).reshape(4, 4, 2)
    raw[..., 0] = bits[:, None]  # real parts by row
    raw[..., 1] = bits[None, :]  # imaginary parts by column
    for upper in (True, False):
        got = trilu.mirror(x, upper=upper, conj=True).view(np.uint64).reshape(4, 4, 2)
        for i in range(4):
            for j in range(4):
                kept = j >= i if upper else j <= i
                src = raw[i, j] if kept else raw[j, i]
                assert got[i, j, 0] == src[0]
                assert got[i, j, 1] == src[1] ^ np.uint64(0 if kept else 1 << 63)


# --- out= and in place -------------------------------------------------------------------

SIDES = [(True, False), (False, False), (True, True), (False, True)]


def _sides(dtype: np.dtype) -> list[tuple[bool, bool]]:
    """(upper, conj) pairs: conj=True for numpy's numbers."""
    return [(u, c) for u, c in SIDES if conj_native(dtype) or not c]


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out(dtype: np.dtype, rng) -> None:
    """out= in each layout and byte order gets the answer and is returned;
    nothing of its buffer beyond it is written; the input is unchanged."""
    x = make(dtype, BATCH_SHAPE, rng)

    def check(mode: str) -> None:
        for upper, conj in _sides(dtype):
            exp = mirror_oracle(x, upper, conj)
            call = partial(trilu.mirror, x, upper=upper, conj=conj)
            check_out(call, x, exp, mode, rng)

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_in_place(dtype: np.dtype, rng) -> None:
    """out=m, m in each layout and byte order (each matrix transposed too): m is
    made symmetric (Hermitian) from its own kept triangle."""

    def check(how: str) -> None:
        for upper, conj in _sides(dtype):
            check_in_place(
                partial(trilu.mirror, upper=upper, conj=conj),
                partial(mirror_oracle, upper=upper, conj=conj),
                make(dtype, BATCH_SHAPE, rng),
                how,
                rng,
            )

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= sharing memory with m (m's transpose, m shifted by a matrix or
    by one element): the answer of m as it was."""
    for upper, conj in _sides(dtype):
        for shift in ("transposed", "batch", "element"):
            if shift == "transposed":
                x = make(dtype, BATCH_SHAPE, rng)
                out = x.swapaxes(-1, -2)
            elif shift == "batch":
                buf = make(dtype, (3, 4, 4), rng)
                x, out = buf[:-1], buf[1:]
            else:
                buf = make(dtype, (33,), rng)
                x, out = buf[:-1].reshape(2, 4, 4), buf[1:].reshape(2, 4, 4)
            exp = mirror_oracle(x.copy(), upper, conj)
            assert trilu.mirror(x, upper=upper, conj=conj, out=out) is out
            assert_same(as_native(out, exp.dtype), exp)


@pytest.mark.parametrize("order", ["C", "F", "K", "A", None])
def test_order(order: Any, rng) -> None:
    """order= sets a fresh result's layout (None: numpy's C order), never
    its values."""
    x = np.asfortranarray(make(np.complex64, (6, 6), rng))
    got = trilu.mirror(x, conj=True, order=order)
    assert_same(got, mirror_oracle(x, True, True))
    if order in ("F", "K", "A"):
        assert got.flags.f_contiguous
    else:
        assert got.flags.c_contiguous


# --- objects -----------------------------------------------------------------------------------


def _numbers(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """An object array of Python numbers with a conjugate: int, float,
    complex, Fraction."""
    import fractions  # noqa: PLC0415

    makers = [
        int,
        float,
        lambda i: complex(i, -2 * i - 1),
        lambda i: fractions.Fraction(i, 7),
    ]
    size = int(np.prod(shape))
    picks = rng.integers(0, len(makers), size)
    a = np.empty(size, object)
    a[:] = [makers[p](i + 1) for i, p in enumerate(picks)]
    return a.reshape(shape)


def test_object_conj(rng) -> None:
    """conj=True on objects: each mirrored element is its .conjugate(); the
    kept ones are the input's own objects; fresh, into out= and in place."""
    x = _numbers((2, 5, 5), rng)
    for upper in (True, False):
        exp = mirror_oracle(x, upper, True)
        got = trilu.mirror(x, upper=upper, conj=True)
        assert_equal_objects(got, exp)
        keep = (
            np.triu(np.ones((5, 5), bool)) if upper else np.tril(np.ones((5, 5), bool))
        )
        for idx in zip(*np.nonzero(np.broadcast_to(keep, x.shape)), strict=True):
            assert got[idx] is x[idx]
        out = np.empty_like(x)
        assert trilu.mirror(x, upper=upper, conj=True, out=out) is out
        assert_equal_objects(out, exp)
        y = x.copy()
        assert trilu.mirror(y, upper=upper, conj=True, out=y) is y
        assert_equal_objects(y, exp)


def test_object_conj_without_conjugate_writes_nothing(rng) -> None:
    """An object without .conjugate (here the last one mirrored) is a
    TypeError naming conjugate, raised before any write: out and an in-place
    m untouched."""
    for upper in (True, False):
        x = _numbers((4, 4), rng)
        x[(3, 2) if upper else (2, 3)] = Token(0)  # mirrored, read last
        x[(2, 3) if upper else (3, 2)] = Token(1)  # kept: conjugated in xT
        out = _numbers((4, 4), rng)
        for target in (None, out, x):
            before = [snapshot(x), snapshot(out)]
            with pytest.raises(TypeError, match=r"conj"):
                trilu.mirror(x, upper=upper, conj=True, out=target)
            assert [snapshot(x), snapshot(out)] == before


# --- errors -----------------------------------------------------------------------------------

NO_CONJ = [n for n, dt in ALL_DTYPES.items() if not conj_ok(dt) and dt.kind != "O"]


@pytest.mark.parametrize("name", NO_CONJ)
def test_conj_refused(name: str, rng) -> None:
    """conj=True on bool, datetimes, strings, void and structured: a
    TypeError naming conj, before any write (out= and in place untouched)."""
    dtype = ALL_DTYPES[name]
    x = make(dtype, (2, 3, 3), rng)
    out = make(dtype, (2, 3, 3), rng)
    for target in (None, out, x):
        before = [snapshot(x), snapshot(out)]
        with pytest.raises(TypeError, match=r"\bconj\b"):
            trilu.mirror(x, conj=True, out=target)
        assert [snapshot(x), snapshot(out)] == before


BAD = [
    ("2x3", lambda x: trilu.mirror(x[:, :2, :]), ValueError, r"square.*\(2, 2, 3\)"),
    ("3x2", lambda x: trilu.mirror(x[0, :, :2]), ValueError, r"square.*\(3, 2\)"),
    ("0-d", lambda x: trilu.mirror(x[0, 0, 0]), TypeError, r"0-D"),
    ("upper", lambda x: trilu.mirror(x, upper=1), TypeError, r"\bupper must be a bool"),
    (
        "conj",
        lambda x: trilu.mirror(x, conj="yes"),
        TypeError,
        r"\bconj must be a bool",
    ),
    ("order", lambda x: trilu.mirror(x, order="Q"), ValueError, r"\border\b"),
    (
        "out-shape",
        lambda x: trilu.mirror(x, out=np.empty((2, 3, 4))),
        ValueError,
        r"\bout\b",
    ),
    (
        "out-dtype",
        lambda x: trilu.mirror(x, out=np.empty(x.shape, np.float32)),
        TypeError,
        r"\bout\b.*dtype",
    ),
    (
        "out-list",
        lambda x: trilu.mirror(x, out=x.tolist()),
        TypeError,
        r"\bout must be a numpy",
    ),
    (
        "out-readonly",
        lambda x: trilu.mirror(x, out=np.broadcast_to(x, x.shape)),
        ValueError,
        r"read-only|writ",
    ),
    (
        "dask-out",
        lambda x: trilu.mirror(pytest.importorskip("dask.array").from_array(x), out=x),
        TypeError,
        r"\bout=",
    ),
]


@pytest.mark.parametrize(
    ("fn", "exc", "match"), [pytest.param(*b[1:], id=b[0]) for b in BAD]
)
def test_bad_arguments(fn: Any, exc: type, match: str) -> None:
    """The exact exception type, a message naming the culprit (the shape of
    a matrix that is not square), the input untouched."""
    x = np.arange(18.0).reshape(2, 3, 3)
    before = snapshot(x)
    with pytest.raises(exc, match=match):
        fn(x)
    assert snapshot(x) == before


# --- small matrices: one pass through the table of offsets -------------------------------


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128", "V3", "U3"])
def test_small_matrices_in_one_pass(dtype: str, rng) -> None:
    """Small matrices of short rows go whole in one pass, through the table
    of offsets, larger ones as two bands (counted by _two_band_mirrors), a
    batch of tiny ones across threads: both the oracle's for every layout
    of the input, into out= in C and F order and in place, conj too."""
    dtype_ = np.dtype(dtype)
    bands: Counter[bool] = Counter()

    def check(case: tuple[str, tuple[int, ...]]) -> None:
        name, shape = case
        x = square(name, dtype_, shape, rng)
        before = snapshot(x)
        for upper, conj in _sides(dtype_):
            exp = mirror_oracle(x, upper, conj)
            y = x.copy(order="K")  # (its byte order as x's)
            for out in (
                np.empty(x.shape, exp.dtype),
                np.empty(x.shape, exp.dtype, "F"),
                y,
            ):
                count = _kernel._two_band_mirrors()
                assert trilu.mirror(x if out is not y else y, upper=upper, conj=conj,
                                    out=out) is out  # fmt: skip
                assert_same(out, exp.astype(out.dtype))
                went = _kernel._two_band_mirrors() - count
                if shape[-1] != 31:  # (31 x 31: one pass where rows are short)
                    assert went == (shape[-1] == 40)
                bands[went == 1] += 1
        assert snapshot(x) == before, "the input was modified"

    shapes = [(3, 2, 2), (7, 7), (2, 3, 5, 5), (2, 31, 31), (2, 40, 40), (20000, 3, 3)]
    every([(n, s) for s in shapes for n in LAYOUTS if layout_ok(n, dtype_, len(s))],
          check)  # fmt: skip
    assert bands[False]
    assert bands[True]


# --- large: the tiled path, threads ---------------------------------------------------------

LARGE = {
    "float32": (np.float32, 640),
    "int8": (np.int8, 1200),
    "complex64": (np.complex64, 420),
    "complex128": (np.complex128, 300),  # 16 bytes: the strided walk
}


@pytest.mark.parametrize("name", ["C", "F", "transposed", "batch"])
@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_large(case: tuple[Any, int], name: str, threads: int, rng) -> None:
    """Matrices of 1 MiB and more (the tiled walk for elements of 8 bytes or
    less), on 1 and 4 threads: fresh, into out= (C and F), in place, conj."""
    dtype, n = case
    if name == "batch":
        x = make(dtype, (2, n // 2, n // 2), rng)
    else:
        x = square(name, dtype, (n, n), rng)
    if name == "C":  # the mirrored half is read down its columns: tiles
        plan = _kernel.explain_band(x.swapaxes(-1, -2), -n, -1, np.empty_like(x))
        assert plan["method"] == (
            "tiled" if np.dtype(dtype).itemsize <= 8 else "strided"
        )
        assert (plan["threads"] > 1) == (threads > 1), plan
    for upper, conj in SIDES:
        exp = mirror_oracle(x, upper, conj)
        call = partial(trilu.mirror, x, upper=upper, conj=conj)
        assert_same(call(), exp)
        check_out(call, x, exp, "F" if upper else "C", rng)
        y = x.copy(order="K")
        assert trilu.mirror(y, upper=upper, conj=conj, out=y) is y
        assert_same(y, exp)


# --- properties -----------------------------------------------------------------------------

_HYP_DTYPES = [n for n in ALL_DTYPES if n not in ("struct_obj", "struct_padded")]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_HYP_DTYPES),
    st.lists(st.integers(0, 3), min_size=0, max_size=2),
    st.integers(0, 6),
    st.sampled_from(LAYOUTS),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["fresh", "inplace", *OUT_MODES]),
)
def test_hypothesis(
    name: str,
    batch: list[int],
    n: int,
    layout_name: str,
    upper: bool,
    conj: bool,
    seed: int,
    mode: str,
) -> None:
    """Random dtype, batch, size, layout, side and conj against the oracle:
    fresh, into out= or in place; conj=True refused where it has no meaning."""
    dtype = ALL_DTYPES[name]
    rng = np.random.default_rng(seed)
    shape = (*batch, n, n)
    if layout_ok(layout_name, dtype, len(shape)):
        x = square(layout_name, dtype, shape, rng)
    else:
        x = make(dtype, shape, rng)
    conj = conj and not ml_dtype(dtype)  # ml_dtypes: test_conj_of_reals_is_identity
    if conj and not conj_ok(dtype):
        if dtype.kind == "O":  # raises where an element has no .conjugate
            try:
                exp = mirror_oracle(x, upper, conj)
            except TypeError:
                with pytest.raises(TypeError, match=r"conj"):
                    trilu.mirror(x, upper=upper, conj=conj)
                return
            assert_equal_objects(trilu.mirror(x, upper=upper, conj=conj), exp)
            return
        with pytest.raises(TypeError, match=r"\bconj\b"):
            trilu.mirror(x, upper=upper, conj=conj)
        return
    exp = mirror_oracle(x, upper, conj)
    call = partial(trilu.mirror, x, upper=upper, conj=conj)
    if mode == "fresh":
        assert_same(call(), exp)
    elif mode == "inplace":
        y = x.copy(order="K")
        assert trilu.mirror(y, upper=upper, conj=conj, out=y) is y
        assert_same(as_native(y, exp.dtype), exp)
    else:
        check_out(call, x, exp, mode, rng)


def test_swapped_input_gives_native_result(rng) -> None:
    """A byte-swapped input gives numpy's native-order result (as np.where),
    on either kind of host."""
    for name in ("float64", "complex128", "int16"):
        native = np.dtype(name)
        x = make(swapped(native), (3, 3), rng)
        got = trilu.mirror(x, conj=True)
        assert got.dtype == native
        assert_same(got, mirror_oracle(x, True, True))
