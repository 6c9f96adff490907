"""numpy's index family: tri, triu_indices, tril_indices and the _from forms.

numpy (the installed one) is the oracle: every result must be numpy's to the
bit (dtype, byte order, shape, strides, flags, bytes), every error numpy's
type and message, over sizes and k from far below to far above the matrix.
The kernel's paths (each element width, zero pages, recycled blocks,
streaming stores) take no more memory than the result.
"""

from __future__ import annotations

import gc
import importlib
import inspect
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from _cases import assert_same, outcome, warned
from _cases import ml_dtypes as _cases_ml_dtypes

import trilu
from trilu import _indices, _kernel

NAMES = [
    "tri",
    "triu_indices",
    "tril_indices",
    "triu_indices_from",
    "tril_indices_from",
]
# numpy's own functions, whatever a test does to numpy's namespace
NP = {name: getattr(np, name) for name in NAMES}
NP_TRIU = np.triu

PLAIN_DTYPES = [np.dtype(c) for c in "?bhilqBHILQefdgFDG"] + [
    np.dtype(c).newbyteorder() for c in "hiqefdFD"
]
OTHER_DTYPES: list[Any] = [
    None, float, int, bool, complex, np.float32, "f8", "int16", "c8",
    object, str, bytes, "U2", "S1", "S", "M8[D]", "m8[s]", "m8", "V8",
    [("a", "<f8")], np.dtype([("a", "<i2"), ("b", ">f4")]),
    np.dtype("f8", metadata={"unit": "m"}),
]  # fmt: skip
if hasattr(np.dtypes, "StringDType"):
    OTHER_DTYPES.append(np.dtypes.StringDType())
_ml = _cases_ml_dtypes
if _ml is not None:
    OTHER_DTYPES += [_ml.bfloat16, _ml.float8_e4m3fn]


def _id(value: Any) -> str:
    return str(np.dtype(value)) if value is not None else "None"


def assert_exact(got: Any, exp: Any) -> None:
    """got is exp: a tuple of arrays or an array, each a fresh base ndarray with
    numpy's dtype (byte order and metadata too), strides, flags and bytes."""
    if isinstance(exp, tuple):
        assert type(got) is tuple
        assert len(got) == len(exp)
        for g, e in zip(got, exp, strict=True):
            assert_exact(g, e)
        return
    assert type(got) is np.ndarray, type(got)
    assert got.dtype.str == exp.dtype.str
    assert got.dtype == exp.dtype
    assert got.dtype.metadata == exp.dtype.metadata
    assert got.strides == exp.strides, (got.strides, exp.strides)
    assert (got.base is None) == (exp.base is None)
    for flag in ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED"):
        assert got.flags[flag] == exp.flags[flag], flag
    if exp.dtype.char in "gG":
        # long double: numpy's cast leaves the padding bytes as they were
        assert got.shape == exp.shape
        assert np.array_equal(got, exp)
        return
    assert_same(got, exp)


def assert_like_numpy(name: str, *args: Any, **kwargs: Any) -> None:
    got = outcome(getattr(trilu, name), *args, **kwargs)
    exp = outcome(NP[name], *args, **kwargs)
    if isinstance(exp, tuple) and isinstance(exp[0], type):
        assert got == exp
    else:
        assert_exact(got, exp)


# --- values over the whole range of n, m, k -----------------------------------------

SIZES = [-5, -1, 0, 1, 2, 3, 7, 16]
COLS = [None, -3, 0, 1, 2, 5, 9, 16]


def ks(n: int, m: int | None) -> list[int]:
    cols = n if m is None else m
    near = {0, 1, -1, 2, -3, n, -n, n - 1, -n - 1, cols, cols + 1, -cols, cols - n}
    return sorted(near | {-100, 100, 10**12, -(10**12), 2**61, -(2**61)})


def grid() -> Iterator[tuple[int, int | None, int]]:
    for n in SIZES:
        for m in COLS:
            for k in ks(n, m):
                yield n, m, k


@pytest.mark.parametrize("name", ["triu_indices", "tril_indices"])
def test_indices_grid(name: str) -> None:
    for n, m, k in grid():
        assert_exact(getattr(trilu, name)(n, k, m), NP[name](n, k, m))
        assert_exact(getattr(trilu, name)(n, k=k, m=m), NP[name](n, k=k, m=m))


def test_tri_grid() -> None:
    for n, m, k in grid():
        assert_exact(trilu.tri(n, m, k), NP["tri"](n, m, k))
        assert_exact(trilu.tri(n, m, k, dtype=np.int8), NP["tri"](n, m, k, np.int8))


@pytest.mark.parametrize("name", ["triu_indices_from", "tril_indices_from"])
def test_from_grid(name: str) -> None:
    for n in range(9):
        for m in range(9):
            arr = np.empty((n, m), dtype=np.float32)
            for k in ks(n, m):
                assert_exact(getattr(trilu, name)(arr, k), NP[name](arr, k))
            assert_exact(getattr(trilu, name)(arr), NP[name](arr))
            assert_exact(getattr(trilu, name)(arr.T, k=1), NP[name](arr.T, k=1))


def test_defaults() -> None:
    assert_exact(trilu.triu_indices(5), NP["triu_indices"](5))
    assert_exact(trilu.tril_indices(5), NP["tril_indices"](5))
    assert_exact(trilu.tri(5), NP["tri"](5))
    assert_exact(trilu.tri(N=4, M=2, k=1), NP["tri"](N=4, M=2, k=1))


def test_numpy_integer_arguments() -> None:
    """np.int64 as numpy takes them; other numpy ints and bools go to numpy,
    whose arithmetic in their width (wrapping, NEP 50) is numpy's answer."""
    for name in ("triu_indices", "tril_indices"):
        for args in [
            (np.int64(5), np.int64(-1), np.int64(7)),
            (np.intp(4), 1, None),
            (np.int8(100), -100, None),
            (np.int8(5), np.int8(-128)),
            (np.uint64(3), 1),
            (3, np.uint64(1)),
            (np.uint8(4),),
            (3, True),
            (3, np.True_),
            (np.True_,),
        ]:
            assert_like_numpy(name, *args)
    for args in [
        (np.int64(5), np.int64(3), np.int64(-1)),
        (np.int8(100), None, -100),
        (np.int8(100), np.int8(100), -100),
        (np.uint64(3), None, -1),
        (3, None, np.uint64(1)),
        (True,),
        (3, None, True),
        (3, None, np.True_),
    ]:
        assert_like_numpy("tri", *args)


# --- tri's dtypes --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", PLAIN_DTYPES, ids=[d.str for d in PLAIN_DTYPES])
def test_tri_plain_dtypes(dtype: np.dtype) -> None:
    for n, m, k in [(5, None, 0), (4, 7, 2), (7, 3, -1), (1, 1, 0), (6, 6, -7)]:
        assert_exact(trilu.tri(n, m, k, dtype), NP["tri"](n, m, k, dtype))
        assert_exact(trilu.tri(n, m, k, dtype.type), NP["tri"](n, m, k, dtype.type))


@pytest.mark.parametrize(
    "dtype", OTHER_DTYPES, ids=lambda d: _id(d) if not isinstance(d, list) else "fields"
)
def test_tri_other_dtypes(dtype: Any) -> None:
    """numpy's cast of its bool mask: 'True'/'False' for strings, True/False
    objects, 1 day for datetimes; dtypes that hold these come from numpy."""
    for n, m, k in [(4, None, 0), (3, 5, 1), (5, 2, -2), (0, 3, 0)]:
        assert_exact(trilu.tri(n, m, k, dtype), NP["tri"](n, m, k, dtype))
        assert_exact(trilu.tri(n, m, k, dtype=dtype), NP["tri"](n, m, k, dtype=dtype))


def test_tri_object_elements_are_bools() -> None:
    got = trilu.tri(2, dtype=object)
    assert got[0, 0] is True
    assert got[0, 1] is False


def test_tri_like() -> None:
    assert_exact(trilu.tri(3, like=np.empty(0)), NP["tri"](3, like=np.empty(0)))
    assert_like_numpy("tri", 3, like=[1])


# --- errors --------------------------------------------------------------------------

BAD_INDICES_ARGS = [
    (None,), ("3",), (3, None), (3, "1"), (3, 1.5), (3.5,), (3, 1, 2.5), (3.0, 0, 4.0),
    (np.array(3),), (np.array([3]),), (3, np.array(1)), (3, np.array([1])),
    (3, 2**63), (3, -(2**63)), (3, -(2**63) + 1), (3, 2**62), (3, -(2**62)),
    (3, 2**64), (2**62,), (2**63,), (-(2**63),), (-(2**70),), (10**6,),
    (10**6, 10**6 - 1), (10**6, -(10**6) + 1), (2, 0, 10**12), (3, 0, 1, 2), (),
]  # fmt: skip


@pytest.mark.parametrize("name", ["triu_indices", "tril_indices"])
@pytest.mark.parametrize("args", BAD_INDICES_ARGS, ids=repr)
def test_indices_odd_arguments(name: str, args: tuple[Any, ...]) -> None:
    """numpy's result or numpy's error, whatever numpy makes of them."""
    with np.errstate(all="ignore"):
        assert_like_numpy(name, *args)


# A result the kernel cannot allocate (16 times the machine's memory) of
# sizes it takes (n * m not past the memory): its MemoryError hands the call
# to numpy, whose answer is then trilu's. One row: numpy fails as fast (its
# arange of m), where a square (10**5 x 10**5) had numpy write a mask of
# n * m bytes first, 10 GB, twice.
TOO_LARGE_FOR_THE_KERNEL = ((1, _indices._MEMORY), {"dtype": "c16"})

BAD_TRI_ARGS: list[Any] = [
    ((None,), {}), (("3",), {}), ((3, None, None), {}), ((3, None, "1"), {}),
    ((3.5,), {}), ((2, 3.5), {}), ((3, None, 1.5), {}), ((np.array(3),), {}),
    ((np.array([3]),), {}), ((3, None, np.array([1])), {}), ((3, None, 2**63), {}),
    ((3, None, -(2**63)), {}), ((3, None, -(2**63) + 1), {}), ((3, None, 2**64), {}),
    ((2**62,), {}), ((2**63,), {}), ((10**6,), {}), ((10**6,), {"dtype": bool}),
    ((10**6, 1), {}), ((2, 10**12), {}),
    pytest.param(*TOO_LARGE_FOR_THE_KERNEL, id="(1, memory)-{'dtype': 'c16'}"),
    ((3,), {"dtype": "foo"}), ((3, 4, 1, int, None), {}), ((), {}),
    ((3,), {"foo": 1}), ((3,), {"dtype": np.dtype("M8")}),
]  # fmt: skip


@pytest.mark.parametrize(("args", "kwargs"), BAD_TRI_ARGS, ids=repr)
def test_tri_odd_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with np.errstate(all="ignore"):
        assert_like_numpy("tri", *args, **kwargs)


def test_tri_too_large_for_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """The case above takes that path: the kernel is called, raises
    MemoryError, and numpy's function answers (once)."""
    (n, m), kwargs = TOO_LARGE_FOR_THE_KERNEL
    sizes = _indices._sizes(n, m, 0)
    plain = _indices._tri_dtype(kwargs["dtype"])
    assert sizes == (n, m, 0)
    assert plain is not None
    with pytest.raises(MemoryError):
        _kernel.mask(n, m, None, 0, *plain)
    calls = []

    def numpy_tri(*args: Any, **kw: Any) -> Any:
        calls.append(args)
        return NP["tri"](*args, **kw)

    monkeypatch.setattr(_indices, "_np_tri", numpy_tri)
    got = outcome(trilu.tri, n, m, **kwargs)
    assert calls == [(n, m, 0, "c16")]
    assert got == outcome(NP["tri"], n, m, **kwargs)
    assert issubclass(got[0], MemoryError)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
@pytest.mark.parametrize("name", ["triu_indices_from", "tril_indices_from"])
def test_from_odd_arguments(name: str) -> None:
    for arr in [
        np.ones(3), np.ones((2, 3, 4)), np.ones(()), [[1, 2], [3, 4]], 3, None,
        np.matrix(np.ones((3, 4))), np.ma.ones((3, 2)), np.ones((4, 3))[::2, ::-1],
    ]:  # fmt: skip
        for k in (0, 1, -1, 1.5, None, "1", 2**63):
            with np.errstate(all="ignore"):
                assert_like_numpy(name, arr, k)
    assert_like_numpy(name, np.ones((3, 3)), k=1, m=3)  # no such keyword


def test_from_dask_is_refused() -> None:
    da = pytest.importorskip("dask.array")
    x = da.ones((4, 4), chunks=2)
    for name in ("triu_indices_from", "tril_indices_from"):
        with pytest.raises(TypeError, match=f"{name} takes a numpy array, got a dask"):
            getattr(trilu, name)(x)


def test_signatures_are_numpy_s() -> None:
    for name in NAMES:
        ours = inspect.signature(getattr(trilu, name))
        theirs = inspect.signature(NP[name])
        assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
            (p.name, p.kind, p.default) for p in theirs.parameters.values()
        ], name


# --- the kernel's paths ----------------------------------------------------------------


def test_widths_and_layouts_of_tri() -> None:
    """Every element width, past a NOGIL_MIN_BYTES call, rows of any length."""
    for dtype in (
        np.bool_,
        np.int16,
        np.float32,
        np.float64,
        np.complex128,
        np.clongdouble,
    ):
        for n, m, k in [(130, 70, 3), (70, 130, -5), (257, 257, 0), (1, 3000, 1500)]:
            assert_exact(trilu.tri(n, m, k, dtype), NP["tri"](n, m, k, dtype))


def _stale_spare(nbytes: int) -> None:
    """Leave trilu's spare block (4-256 MiB) of this size full of NaNs."""
    blocker = trilu.tril(np.ones((nbytes // 8, 1)))  # from trilu's handler
    blocker.fill(np.nan)
    del blocker
    gc.collect()


@pytest.mark.parametrize("n", [1500, 2048, 2100])
def test_large_tri_fresh_and_recycled(n: int) -> None:
    """From 32 MiB: calloc's zero pages (only the ones written), then the
    spare block of a freed result (stale bytes, every byte rewritten)."""
    exp = NP["tri"](n)
    _stale_spare(64 * 1024 * 1024 + 8)  # another size: no spare for this one
    assert_exact(trilu.tri(n), exp)
    _stale_spare(n * n * 8)
    assert_exact(trilu.tri(n), exp)
    exp = NP["tri"](n, n + 1, -n // 3, np.float32)
    _stale_spare(n * (n + 1) * 4)
    assert_exact(trilu.tri(n, n + 1, -n // 3, np.float32), exp)


@pytest.mark.parametrize("name", ["triu_indices", "tril_indices"])
@pytest.mark.parametrize(
    ("n", "k", "m"), [(2100, 0, None), (2100, -7, 2300), (1200, 3, 1700)]
)
def test_large_indices_streamed_and_recycled(name: str, n: int, k: int, m: Any) -> None:
    """Both arrays past 32 MiB are streamed; the first, from a spare block of
    stale bytes, is rewritten whole."""
    exp = NP[name](n, k, m)
    assert_exact(getattr(trilu, name)(n, k, m), exp)
    _stale_spare(exp[0].nbytes)
    assert_exact(getattr(trilu, name)(n, k, m), exp)


def _peak(function: Callable[[], Any]) -> tuple[int, int]:
    """tracemalloc's peak over a call, and the bytes of its result's arrays."""
    gc.collect()
    tracemalloc.start()
    try:
        result = function()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    arrays = result if isinstance(result, tuple) else (result,)
    return peak, sum(a.nbytes for a in arrays)


MEMORY_CASES = [
    ("triu_indices", (1000,)),
    ("triu_indices", (1000, 1)),
    ("tril_indices", (1000, -3, 1400)),
    ("triu_indices", (2100,)),
    ("tril_indices", (2100,)),
    ("tri", (1000,)),
    ("tri", (1000, 1200, 5, np.int8)),
    ("tri", (700, None, 0, np.bool_)),
    ("tri", (700, None, -2, np.complex128)),
    ("tri", (2048,)),
    ("triu_indices_from", (np.empty((900, 800)), 2)),
]


@pytest.mark.parametrize(("name", "args"), MEMORY_CASES, ids=lambda c: repr(c)[:40])
def test_peak_memory_is_the_output(name: str, args: tuple[Any, ...]) -> None:
    """No mask: the peak is the result, within 1.2x (numpy: plus its mask)."""
    function = getattr(trilu, name)
    function(*args)  # caches warm
    peak, out = _peak(lambda: function(*args))
    assert out <= peak <= 1.2 * out, (peak, out)  # the result itself is traced


def test_result_independent_of_threads() -> None:
    before = trilu.get_num_threads()
    try:
        for threads in (1, 4):
            trilu.set_num_threads(threads)
            assert_exact(trilu.triu_indices(2100, 1), NP["triu_indices"](2100, 1))
    finally:
        trilu.set_num_threads(before)


# --- numpy's own tests, run against trilu's functions -----------------------------------

NUMPY_CLASSES = [
    "TestTri",
    "TestTriuIndices",
    "TestTrilIndicesFrom",
    "TestTriuIndicesFrom",
]


@pytest.mark.parametrize("cls", NUMPY_CLASSES)
def test_numpy_suite(cls: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy's test classes, their module's names bound to trilu's functions."""
    try:
        module = importlib.import_module("numpy.lib.tests.test_twodim_base")
    except ImportError:
        module = None
    if module is None or not hasattr(module, cls):
        pytest.skip("this numpy was installed without these tests")
    for name in NAMES:
        if hasattr(module, name):
            monkeypatch.setattr(module, name, getattr(trilu, name))
    instance = getattr(module, cls)()
    tests = [t for t in dir(instance) if t.startswith("test")]
    assert tests
    for test in tests:
        getattr(instance, test)()
    if hasattr(module, "test_tril_indices"):
        module.test_tril_indices()


# --- the numpy patch -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_patch_covers_the_family() -> None:
    masked = np.mask_indices(4, NP_TRIU, 1)
    with trilu.patched():
        for name in NAMES:  # tri behind numpy's rule for like= (test_dispatch)
            patched = getattr(np, name)  # trilu's, or a wrapper of it
            assert getattr(trilu, name) in (patched, patched.__wrapped__)
        assert_exact(np.triu_indices(4, 1), NP["triu_indices"](4, 1))
        assert_exact(np.tri(3, dtype=object), NP["tri"](3, dtype=object))
        # numpy's own functions, calling each other by their module's names
        assert_exact(NP["tril_indices"](5, -1), trilu.tril_indices(5, -1))
        assert_exact(np.mask_indices(4, np.triu, 1), masked)
        # what trilu hands to numpy (a float size, below numpy 2.5), and an
        # ndarray subclass: never back into trilu
        got = warned(lambda: np.triu_indices(3.5))
        exp = warned(lambda: NP["triu_indices"](3.5))
        assert_exact(got[0], exp[0])
        assert got[1] == exp[1]
        assert_exact(np.tril_indices_from(np.matrix(np.ones((2, 3)))),
                     NP["tril_indices_from"](np.matrix(np.ones((2, 3)))))  # fmt: skip
    for name in NAMES:
        assert getattr(np, name) is NP[name]


def test_patch_round_trip_of_the_family() -> None:
    trilu.use_in_numpy()
    try:
        assert np.tri.__wrapped__ is trilu.tri
        assert np.tril_indices_from is trilu.tril_indices_from
    finally:
        trilu.restore_numpy()
    for name in NAMES:
        assert getattr(np, name) is NP[name]
    assert _indices._np_tri is NP["tri"]


# --- hypothesis -----------------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
if hypothesis is not None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    _n = st.integers(-3, 40)
    _m = st.none() | st.integers(-3, 40)
    _k = st.integers(-60, 60) | st.integers(-(2**62), 2**62)

    @given(n=_n, m=_m, k=_k, upper=st.booleans())
    @settings(max_examples=300, deadline=None)
    def test_hypothesis_indices(n: int, m: int | None, k: int, upper: bool) -> None:
        name = "triu_indices" if upper else "tril_indices"
        assert_exact(getattr(trilu, name)(n, k, m), NP[name](n, k, m))

    @given(n=_n, m=_m, k=_k, dtype=st.sampled_from(PLAIN_DTYPES))
    @settings(max_examples=300, deadline=None)
    def test_hypothesis_tri(n: int, m: int | None, k: int, dtype: np.dtype) -> None:
        assert_exact(trilu.tri(n, m, k, dtype), NP["tri"](n, m, k, dtype))


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
