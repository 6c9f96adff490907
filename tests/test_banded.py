"""to_banded and from_banded: LAPACK's band storage, as solve_banded reads it.

``to_banded(a, l, u)`` is ``ab[..., u + i - j, j] = a[..., i, j]`` on the
diagonals ``-l <= j - i <= u``, zeros outside the matrix (``to_banded_oracle``:
``np.diagonal`` a diagonal at a time); ``from_banded(ab, l, u, n=, fill=)`` the
inverse, ``fill`` off the band (``from_banded_oracle``). Every dtype x layout
x band, square, tall, wide and batched; out= in every layout and byte order
and overlapping the input; 1 and 4 threads on large ones; scipy's
solve_banded, eig_banded and cholesky_banded on the result; the errors.
"""

from __future__ import annotations

import itertools
import sys
from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    BAD_FILL_PARAMS,
    LAYOUTS,
    OUT_MODES,
    as_native,
    assert_same,
    band_oracle,
    check_out,
    dtype_params,
    every,
    fill_cycle,
    from_banded_oracle,
    layout,
    layout_ok,
    make,
    run_python,
    snapshot,
    to_banded_oracle,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu

# (lower, upper): none, one side, both, and beyond the matrices below (6 x 6)
BANDS = [(0, 0), (1, 1), (2, 0), (0, 3), (3, 1), (1, 4), (8, 2), (0, 12), (7, 9)]
SHAPES = {"square": (2, 6, 6), "tall": (2, 9, 4), "wide": (2, 4, 9)}


# --- to_banded: every dtype x layout x band -----------------------------------------


@pytest.mark.parametrize("shape", list(SHAPES.values()), ids=list(SHAPES))
@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_to_banded_dtype_layout(dtype: np.dtype, shape: tuple[int, ...], rng) -> None:
    """to_banded(a, l, u) is the diagonals a at a time, dtype (byte order)
    included, for every dtype and layout; from_banded of it is the band of
    a (band(a, -l, u)), with the fill where given; a unchanged."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        a = layout(name, dtype, shape, rng)
        before = snapshot(a)
        rows = a.shape[-2]
        for t, (lower, upper) in enumerate(BANDS):
            ab = trilu.to_banded(a, lower, upper)
            assert_same(ab, to_banded_oracle(a, lower, upper))
            fill = cycle[t % len(cycle)]
            back = trilu.from_banded(ab, lower, upper, n=rows, fill=fill)
            exp = band_oracle(a, -lower, upper, fill)  # in numpy's result dtype
            assert_same(as_native(back, exp.dtype), exp)
        assert snapshot(a) == before, "the input was modified"

    every([n for n in LAYOUTS if layout_ok(n, dtype, len(shape))], check)


# --- from_banded: every dtype x layout x band x rows --------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_from_banded_dtype_layout(dtype: np.dtype, rng) -> None:
    """from_banded(ab, l, u, n=, fill=) is the matrices a diagonal at a
    time, fill (zero) elsewhere, for every dtype and layout of ab, square
    (n omitted), tall and wide; what ab holds outside the matrix is never
    read; ab unchanged."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        for t, ((lower, upper), n) in enumerate(itertools.product(BANDS, [None, 3, 9])):
            ab = layout(name, dtype, (2, lower + upper + 1, 6), rng)
            before = snapshot(ab)
            fill = cycle[t % len(cycle)]
            rows = ab.shape[-1] if n is None else n  # ("step" has a column more)
            got = trilu.from_banded(ab, lower, upper, n=n, fill=fill)
            assert_same(got, from_banded_oracle(ab, lower, upper, rows, fill))
            assert snapshot(ab) == before, "ab was modified"

    every([n for n in LAYOUTS if layout_ok(n, dtype, 3)], check)


EDGE_SHAPES = [(1, 6), (6, 1), (1, 1), (0, 3), (3, 0), (0, 0), (2, 0, 3), (0, 3, 3),
               (2, 3, 1, 4), (2, 2, 2, 3, 2), (3, 70, 2), (2, 2, 70)]  # fmt: skip


@pytest.mark.parametrize("shape", EDGE_SHAPES, ids=str)
def test_shapes(shape: tuple[int, ...], rng) -> None:
    """Thin, empty and many-batch-dim shapes: ab of shape a.shape[:-2] +
    (l + u + 1, N), zeros where a has no rows; and back."""
    rows = shape[-2]
    for dtype in (np.int16, np.dtype("U3"), np.dtype(object)):
        a = make(dtype, shape, rng)
        for lower, upper in BANDS:
            ab = trilu.to_banded(a, lower, upper)
            assert ab.shape == (*shape[:-2], lower + upper + 1, shape[-1])
            assert_same(ab, to_banded_oracle(a, lower, upper))
            back = trilu.from_banded(ab, lower, upper, n=rows)
            assert_same(back, from_banded_oracle(ab, lower, upper, rows))


def test_argument_forms(rng) -> None:
    """lower, upper and n take numpy's integer forms; lists convert as
    numpy converts them."""
    a = make(np.float64, (5, 5), rng)
    exp = to_banded_oracle(a, 2, 1)
    for lower, upper in [(2, 1), (np.int8(2), np.uint64(1)), (2.0, 1.0),
                         (np.array(2), np.array(1))]:  # fmt: skip
        assert_same(trilu.to_banded(a, lower, upper), exp)
        back = from_banded_oracle(exp, 2, 1, 4)
        assert_same(trilu.from_banded(exp, lower, upper, n=np.int64(4)), back)
    assert_same(trilu.to_banded(a.tolist(), 2, 1), exp)
    assert_same(trilu.from_banded(exp.tolist(), 2, 1), from_banded_oracle(exp, 2, 1, 5))


def test_objects_are_the_objects(rng) -> None:
    """Object band storage holds a's own objects, and back the same ones."""
    a = make(object, (4, 4), rng)
    ab = trilu.to_banded(a, 1, 2)
    back = trilu.from_banded(ab, 1, 2, fill=None)
    for i, j in itertools.product(range(4), range(4)):
        if -1 <= j - i <= 2:
            assert ab[2 + i - j, j] is a[i, j]
            assert back[i, j] is a[i, j]


# --- out= ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out(dtype: np.dtype, rng) -> None:
    """out= in each layout and byte order gets the result whole and is
    returned; nothing of its buffer beyond it is written; the input is
    unchanged."""
    cycle = fill_cycle(dtype)
    a = make(dtype, (2, 3, 5, 6), rng)

    def check(mode: str) -> None:
        for t, (lower, upper) in enumerate([(1, 1), (0, 3), (7, 0)]):
            exp = to_banded_oracle(a, lower, upper)
            check_out(partial(trilu.to_banded, a, lower, upper), a, exp, mode, rng)
            fill = cycle[t % len(cycle)]
            back = from_banded_oracle(exp, lower, upper, 5, fill)
            call = partial(trilu.from_banded, exp, lower, upper, n=5, fill=fill)
            check_out(call, exp, back, mode, rng)

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= in the input's own memory (from its first byte, or within it):
    the input's elements as they were."""
    for lower, upper, start in [(1, 1, 0), (0, 2, 7), (2, 0, 30)]:
        buf = make(dtype, (80,), rng)
        a = buf[:36].reshape(6, 6)
        count = lower + upper + 1
        out = buf[start : start + count * 6].reshape(count, 6)
        exp = to_banded_oracle(a.copy(), lower, upper)
        assert trilu.to_banded(a, lower, upper, out=out) is out
        assert_same(as_native(out, exp.dtype), exp)
        buf = make(dtype, (80,), rng)
        ab = buf[start : start + count * 6].reshape(count, 6)
        out = buf[:36].reshape(6, 6)
        exp = from_banded_oracle(ab.copy(), lower, upper, 6)
        assert trilu.from_banded(ab, lower, upper, out=out) is out
        assert_same(as_native(out, exp.dtype), exp)


# --- large: threads, tiles, zero pages -------------------------------------------------

LARGE = {
    # (dtype, shape, layout of a, lower, upper)
    "f64-C": (np.float64, (1500, 1500), "C", 8, 8),
    "f64-F": (np.float64, (1500, 1500), "F", 3, 10),
    "f32-wide-band": (np.float32, (900, 1000), "C", 70, 45),  # tiles of diagonals
    "c128-batch": (np.complex128, (3, 400, 420), "neg_rows", 5, 0),
    "i8-tall": (np.int8, (5000, 700), "transposed", 0, 40),
    "u16-wide": (np.uint16, (300, 6000), "step", 2, 2),
}


@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_large(case: tuple[Any, ...], threads: int, rng) -> None:
    """Several MiB on 1 and 4 threads: to_banded fresh and into out=,
    from_banded fresh (zero pages or a fill) and into C and F out=."""
    assert trilu.get_num_threads() == threads
    dtype, shape, name, lower, upper = case
    a = layout(name, dtype, shape, rng)
    rows = shape[-2]
    exp = to_banded_oracle(a, lower, upper)
    assert_same(trilu.to_banded(a, lower, upper), exp)
    check_out(partial(trilu.to_banded, a, lower, upper), a, exp, "F", rng)
    for fill in (None, 3):
        want = from_banded_oracle(exp, lower, upper, rows, fill)
        call = partial(trilu.from_banded, exp, lower, upper, n=rows, fill=fill)
        assert_same(call(), want)
        check_out(call, exp, want, "F" if fill is None else "C", rng)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect: Linux")
def test_reads_the_band_only() -> None:
    """A matrix flush against pages that cannot be read, before it and
    after it (and its band storage likewise): to_banded and from_banded
    read the band and nothing around it, through the transposed walks (a
    read along rows, four 8-byte runs at a time where the CPU has AVX2,
    and one down columns), in a fresh interpreter that a stray read would
    kill."""
    proc = run_python(
        """
        import ctypes, mmap
        import numpy as np, trilu
        page = mmap.PAGESIZE
        mprotect = ctypes.CDLL(None, use_errno=True).mprotect

        def flush(shape, dtype):
            size = int(np.prod(shape)) * np.dtype(dtype).itemsize
            assert size % page == 0
            buf = mmap.mmap(-1, size + 2 * page)
            base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            for at in (base, base + page + size):  # PROT_NONE
                assert mprotect(ctypes.c_void_p(at), page, 0) == 0
            x = np.frombuffer(buf, dtype, int(np.prod(shape)), page).reshape(shape)
            x[...] = np.arange(x.size).reshape(shape) % 251 + 1
            return x

        for dtype, n in ((np.float64, 512), (np.float32, 512), (np.int8, 1024)):
            x = flush((n, n), dtype)
            for a in (x, x.T):
                for lower, upper in ((8, 8), (0, 40), (40, 0), (3, 300), (n - 1, n - 1)):
                    got = trilu.to_banded(a, lower, upper)
                    want = trilu.to_banded(a.copy(), lower, upper)
                    assert np.array_equal(got, want)
        for lower, upper in ((8, 8), (0, 13), (21, 2)):
            ab = flush((lower + upper + 1, 4096), np.float64)
            got = trilu.from_banded(ab, lower, upper)
            assert np.array_equal(got, trilu.from_banded(ab.copy(), lower, upper))
        print("read the band only")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "read the band only"


# --- scipy reads it --------------------------------------------------------------------


def banded_matrix(n: int, lower: int, upper: int, rng) -> np.ndarray:
    """A random n x n matrix of that band, diagonally dominant."""
    a = trilu.band(rng.standard_normal((n, n)), -lower, upper)
    return a + np.diag(np.abs(a).sum(axis=1) + 1)


def test_solve_banded() -> None:
    """solve_banded((l, u), to_banded(a, l, u), b) is solve(a, b), batches
    of right-hand sides too (scipy needed)."""
    linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(1)
    for n, lower, upper in [(1, 0, 0), (7, 1, 1), (20, 3, 0), (20, 0, 4), (40, 5, 2),
                            (9, 8, 8)]:  # fmt: skip
        a = banded_matrix(n, lower, upper, rng)
        for b in (rng.standard_normal(n), rng.standard_normal((n, 3))):
            got = linalg.solve_banded(
                (lower, upper), trilu.to_banded(a, lower, upper), b
            )
            np.testing.assert_allclose(got, linalg.solve(a, b), rtol=1e-10, atol=1e-12)


def test_symmetric_forms() -> None:
    """to_banded(a, 0, u) is eig_banded's and cholesky_banded's upper form,
    to_banded(a, l, 0) their lower one (lower=True); from_banded turns
    cholesky_banded's factor back into cholesky's (scipy needed)."""
    linalg = pytest.importorskip("scipy.linalg")
    rng = np.random.default_rng(2)
    for n, width in [(1, 0), (6, 1), (30, 3), (25, 7)]:
        half = banded_matrix(n, 0, width, rng)
        a = half + half.T  # symmetric, positive definite (dominant diagonal)
        want = linalg.eigvalsh(a)
        upper = trilu.to_banded(a, 0, width)
        lower = trilu.to_banded(a, width, 0)
        np.testing.assert_allclose(linalg.eig_banded(upper)[0], want, rtol=1e-10)
        np.testing.assert_allclose(
            linalg.eig_banded(lower, lower=True)[0], want, rtol=1e-10
        )
        factor = linalg.cholesky_banded(upper)
        np.testing.assert_allclose(
            trilu.from_banded(factor, 0, width), linalg.cholesky(a), atol=1e-12
        )
        factor = linalg.cholesky_banded(lower, lower=True)
        np.testing.assert_allclose(
            trilu.from_banded(factor, width, 0),
            linalg.cholesky(a, lower=True),
            atol=1e-12,
        )


# --- errors ------------------------------------------------------------------------------

A = np.zeros((4, 4))
AB = np.zeros((3, 4))
BAD = [
    ("to-1d", lambda: trilu.to_banded(np.zeros(3), 1, 1), ValueError,
     r"to_banded needs matrices.*\(3,\)"),
    ("to-lower-neg", lambda: trilu.to_banded(A, -1, 1), ValueError,
     r"\blower must be 0 or more, got -1"),
    ("to-upper-neg", lambda: trilu.to_banded(A, 1, -2), ValueError,
     r"\bupper must be 0 or more, got -2"),
    ("to-lower-float", lambda: trilu.to_banded(A, 1.5, 1), TypeError,
     r"\blower must be an integer"),
    ("to-upper-str", lambda: trilu.to_banded(A, 1, "1"), TypeError,
     r"\bupper must be an integer"),
    ("to-upper-none", lambda: trilu.to_banded(A, 1, None), TypeError,
     r"\bupper must be an integer"),
    ("to-huge", lambda: trilu.to_banded(np.zeros((0, 4, 4)), 2**62, 2**62), MemoryError,
     r"cannot be allocated"),
    ("from-1d", lambda: trilu.from_banded(np.zeros(3), 1, 1), ValueError,
     r"from_banded needs band storage.*\(3,\)"),
    ("from-rows", lambda: trilu.from_banded(AB, 1, 2), ValueError,
     r"ab's second-to-last axis has 3 rows.*lower \+ upper \+ 1 = 4"),
    ("from-rows-batch", lambda: trilu.from_banded(np.zeros((2, 5, 4)), 0, 0), ValueError,
     r"ab's second-to-last axis has 5 rows.*= 1"),
    ("from-lower-neg", lambda: trilu.from_banded(AB, -1, 3), ValueError,
     r"\blower must be 0 or more"),
    ("from-n-neg", lambda: trilu.from_banded(AB, 1, 1, n=-1), ValueError,
     r"\bn must be 0 or more, got -1"),
    ("from-n-float", lambda: trilu.from_banded(AB, 1, 1, n=2.5), TypeError,
     r"\bn must be an integer"),
    ("from-huge", lambda: trilu.from_banded(AB, 1, 1, n=2**62), MemoryError,
     r"cannot be allocated"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("fn", "exc", "match"), [pytest.param(*b[1:], id=b[0]) for b in BAD]
)
def test_bad_arguments(fn: Any, exc: type, match: str) -> None:
    """The exact exception type, with a message naming the culprit."""
    with pytest.raises(exc, match=match):
        fn()


def _outs(shape: tuple[int, ...]) -> dict[str, tuple[Any, type, str]]:
    """Bad out= for a result of shape (float64): (out, exception, match)."""
    ro = np.zeros(shape)
    ro.flags.writeable = False
    return {
        "shape": (np.zeros((*shape, 1)), ValueError, r"\bout\b.*shape"),
        "dtype": (np.zeros(shape, np.float32), TypeError, r"\bout\b.*dtype"),
        "list": (np.zeros(shape).tolist(), TypeError, r"\bout must be a numpy"),
        "readonly": (ro, ValueError, r"\bout\b.*read-only"),
        "zero-stride": (
            np.lib.stride_tricks.as_strided(np.zeros(1), shape, (0,) * len(shape)),
            ValueError,
            r"\bout\b.*overlap",
        ),
    }


@pytest.mark.parametrize("which", ["shape", "dtype", "list", "readonly", "zero-stride"])
def test_bad_out(which: str) -> None:
    """A bad out= raises (type, message naming out) before anything is
    written: out and the input untouched."""
    a = np.arange(40.0).reshape(2, 4, 5)
    ab = np.arange(30.0).reshape(2, 3, 5)
    for call, shape, src in [
        (lambda out: trilu.to_banded(a, 1, 1, out=out), (2, 3, 5), a),
        (
            lambda out: trilu.from_banded(ab, 1, 1, n=4, fill=-1.0, out=out),
            (2, 4, 5),
            ab,
        ),
    ]:
        out, exc, match = _outs(shape)[which]
        before = [snapshot(x) for x in (out, src) if isinstance(x, np.ndarray)]
        with pytest.raises(exc, match=match):
            call(out)
        assert [snapshot(x) for x in (out, src) if isinstance(x, np.ndarray)] == before


@pytest.mark.parametrize(("name", "fill", "exc"), BAD_FILL_PARAMS)
def test_bad_fill(name: str, fill: Any, exc: Any, rng) -> None:
    """A fill ab's dtype cannot hold raises (exact type, message naming
    fill) before anything is written: out= and ab untouched."""
    dtype = ALL_DTYPES[name]
    ab = make(dtype, (2, 3, 4), rng)
    before = snapshot(ab)
    with pytest.raises(exc, match=r"\bfill\b"):
        trilu.from_banded(ab, 1, 1, fill=fill)
    out = make(dtype, (2, 4, 4), rng)
    out_before = snapshot(out)
    with pytest.raises(exc, match=r"\bfill\b"):
        trilu.from_banded(ab, 1, 1, fill=fill, out=out)
    assert snapshot(out) == out_before, "out was written"
    assert snapshot(ab) == before, "ab was written"


def test_dask_refused() -> None:
    """Both take numpy arrays: a dask array is the TypeError pack gives."""
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match=r"to_banded takes numpy arrays.*dask.*compute"):
        trilu.to_banded(da.zeros((3, 3)), 1, 1)
    with pytest.raises(TypeError, match=r"from_banded takes numpy arrays.*dask"):
        trilu.from_banded(da.zeros((3, 3)), 1, 1)


# --- properties -----------------------------------------------------------------------------

_HYP_DTYPES = [n for n in ALL_DTYPES if n not in ("struct_obj", "struct_padded")]
SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(
    st.sampled_from(_HYP_DTYPES),
    st.lists(st.integers(0, 6), min_size=2, max_size=4),
    st.sampled_from(LAYOUTS),
    st.integers(0, 8),
    st.integers(0, 8),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["fresh", "C", "strided", "swapped"]),
    st.data(),
)
def test_hypothesis(
    name: str,
    shape: list[int],
    layout_name: str,
    lower: int,
    upper: int,
    seed: int,
    mode: str,
    data: Any,
) -> None:
    """Random dtype, shape, layout and band: to_banded is the oracle's, and
    from_banded of it the band of a, with a random fill."""
    dtype = ALL_DTYPES[name]
    rng = np.random.default_rng(seed)
    if layout_ok(layout_name, dtype, len(shape)):
        a = layout(layout_name, dtype, tuple(shape), rng)
    else:
        a = make(dtype, tuple(shape), rng)
    exp = to_banded_oracle(a, lower, upper)
    fill = data.draw(st.sampled_from(fill_cycle(dtype)))
    want = from_banded_oracle(exp, lower, upper, a.shape[-2], fill)
    if mode == "fresh":
        assert_same(trilu.to_banded(a, lower, upper), exp)
        got = trilu.from_banded(exp, lower, upper, n=a.shape[-2], fill=fill)
        assert_same(got, want)
    else:
        check_out(partial(trilu.to_banded, a, lower, upper), a, exp, mode, rng)
        call = partial(trilu.from_banded, exp, lower, upper, n=a.shape[-2], fill=fill)
        check_out(call, exp, want, mode, rng)
