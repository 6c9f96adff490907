"""band_mask and attention_mask: masks made from nothing.

``band_mask(n, m, lo, hi, dtype=, keep=, fill=)`` is the bool mask ``lo <= j - i
<= hi`` cast to the dtype as ``np.tri`` casts it, True and False then replaced
by keep and fill (``mask_oracle``); with ``lo=None`` it is ``np.tri`` itself.
``attention_mask`` is its definition (``attention_oracle``) and torch's
``causal_lower_right``/``causal_upper_left`` where torch is installed. Every
dtype, bounds from far below to far above, both sides of the zero-page
choice, streaming sizes on 1 and 4 threads, like=, chunks= (dask) and the
errors.
"""

from __future__ import annotations

import gc
import itertools
import math
import warnings
from typing import Any, ClassVar

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    BAD_FILL_PARAMS,
    BIG_K,
    as_fill,
    assert_same,
    attention_oracle,
    dtype_params,
    every,
    fills,
    mask_oracle,
    ml_dtypes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu

# (n, m) pairs: square, wide, tall, thin and empty
SIDES = [(5, 5), (4, 9), (9, 4), (1, 6), (6, 1), (1, 1), (0, 3), (3, 0), (40, 70)]
# bounds from beyond one side to beyond the other, unbounded, and crossed
BOUNDS = [None, -BIG_K, -(2**70), -5, -2, -1, 0, 1, 3, 8, BIG_K, 2**70]


def bounds_of(n: int, m: int) -> list[tuple[Any, Any]]:
    """(lo, hi) pairs: every pair of BOUNDS and of the matrix's edges."""
    edges = sorted({-n, 1 - n, m - 1, m, -n - 1, m + 1})
    values = [*BOUNDS, *edges]
    return list(itertools.product(values, values))


def np_tri_exact(got: np.ndarray, exp: np.ndarray) -> None:
    """got is np.tri's result: bytes, but a long double by value (numpy's cast
    leaves its padding bytes as they were)."""
    if exp.dtype.char in "gG":
        assert got.dtype == exp.dtype
        assert got.shape == exp.shape
        assert np.array_equal(got, exp)
    else:
        assert_same(got, exp)
    assert got.flags.c_contiguous
    assert got.flags.writeable
    assert got.flags.owndata


def cast_fails(dtype: np.dtype) -> type[Exception] | None:
    """The error numpy's cast of True to dtype raises, None if it casts."""
    try:
        np.array(True).astype(dtype)
    except Exception as error:  # noqa: BLE001  (which one is the point)
        return type(error)
    return None


# --- band_mask: every dtype, every band --------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_band_mask_every_dtype(dtype: np.dtype) -> None:
    """The mask of every band of every side, keep and fill by default (numpy's
    cast of True and False) or any of the dtype's fills; a dtype bool cannot
    be cast to raises numpy's error."""
    failure = cast_fails(dtype)
    if failure is not None:
        with pytest.raises(failure):
            trilu.band_mask(3, dtype=dtype)
        return
    values = [None, *fills(dtype)]

    def check(side: tuple[int, int]) -> None:
        n, m = side
        for t, (lo, hi) in enumerate(bounds_of(n, m)):
            keep = values[t % len(values)]
            fill = values[(t // 3) % len(values)]
            got = trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=keep, fill=fill)
            assert_same(got, mask_oracle(n, m, lo, hi, dtype, keep, fill))

    every(SIDES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_band_mask_is_np_tri(dtype: np.dtype) -> None:
    """band_mask(n, m, None, k, dtype=d) is np.tri(n, m, k, d), flags and
    bytes, for every dtype np.tri takes."""
    if cast_fails(dtype) is not None:
        return
    for (n, m), k in itertools.product(SIDES, [-BIG_K, -3, -1, 0, 1, 4, BIG_K]):
        np_tri_exact(
            trilu.band_mask(n, m, None, k, dtype=dtype), np.tri(n, m, k, dtype)
        )
    np_tri_exact(trilu.band_mask(4, hi=0), np.tri(4, dtype=bool))
    np_tri_exact(trilu.band_mask(4), np.ones((4, 4), bool))  # no bound: all kept
    assert trilu.band_mask(2, dtype=object)[0, 0] is True


def test_band_mask_argument_forms() -> None:
    """Sizes and bounds take numpy's integer forms (numpy ints, integral
    floats, 0-d arrays); a dtype takes numpy's forms; keep and fill numpy
    scalars and 0-d arrays."""
    exp = mask_oracle(4, 6, -1, 2, np.int16, 9, -9)
    for n, m, lo, hi in [
        (4, 6, -1, 2),
        (np.int64(4), np.uint8(6), np.int8(-1), np.int64(2)),
        (4.0, 6.0, -1.0, 2.0),
        (np.array(4), np.array(6), np.array(-1), np.array(2)),
    ]:
        # (np.dtype(np.int16).str: "<i2", or ">i2" on a big-endian host)
        for dtype in (np.int16, "int16", np.dtype(np.int16).str, np.dtype(np.int16)):
            got = trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=9, fill=-9)
            assert_same(got, exp)
    got = trilu.band_mask(4, 6, -1, 2, dtype="i2", keep=np.int8(9), fill=np.array(-9))
    assert_same(got, exp)


def test_band_mask_objects_are_the_objects() -> None:
    """Object masks hold keep and fill themselves, not copies."""
    keep, fill = object(), []
    got = trilu.band_mask(3, 4, 0, 1, dtype=object, keep=keep, fill=fill)
    where = mask_oracle(3, 4, 0, 1, bool)
    for idx in np.ndindex(3, 4):
        assert got[idx] is (keep if where[idx] else fill)


# --- band_mask: the kernel's paths --------------------------------------------------

# Past 32 MiB (streaming stores) and below, fresh pages or the spare block of a
# freed result: (shape, dtype, lo, hi, keep, fill)
LARGE = {
    "bool-causal": ((3000, 3000), "bool", None, 0, None, None),
    "bool-window": ((3000, 3000), "bool", -255, 0, None, None),
    "f32-additive-causal": ((3000, 3000), "float32", None, 0, 0.0, -math.inf),
    "f32-additive-window": ((3000, 3000), "float32", -255, 0, 0.0, -math.inf),
    "f32-upper": ((2000, 2100), "float32", 3, None, None, None),
    "i8-both": ((6000, 6000), "int8", -7, 300, 3, -3),
    "c128-pattern": ((600, 700), "complex128", -20, 40, 1 + 2j, -1j),
    "S3-width": ((900, 1100), "S3", -3, 3, b"abc", b"xy"),
    "f64-tall": ((30000, 200), "float64", -10, 10, 2.5, None),
}


def _stale_spare(nbytes: int) -> None:
    """Leave trilu's spare block (4-256 MiB) of this size full of 0xFF."""
    blocker = trilu.tril(np.ones((nbytes, 1), np.uint8))  # from trilu's handler
    blocker.fill(255)
    del blocker
    gc.collect()


@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_band_mask_large(case: tuple[Any, ...], threads: int) -> None:
    """Large masks on 1 and 4 threads, streamed past 32 MiB, fresh and over
    a recycled block of stale bytes (every byte then written); the additive
    mask's zeros left to zero pages (the values trade places)."""
    assert trilu.get_num_threads() == threads
    (n, m), dtype, lo, hi, keep, fill = case
    exp = mask_oracle(n, m, lo, hi, dtype, keep, fill)
    assert_same(trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=keep, fill=fill), exp)
    _stale_spare(exp.nbytes)
    assert_same(trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=keep, fill=fill), exp)


# --- attention_mask ----------------------------------------------------------------

LENGTHS = [(1, 1), (4, 4), (3, 7), (7, 3), (0, 4), (4, 0), (1, 9), (9, 1), (33, 50)]
WINDOWS = [None, 1, 2, 3, 5, 100, 2**70]


def attention_dtypes() -> list[Any]:
    """bool, and the floating dtypes that hold -inf."""
    found = ["bool", "float16", "float32", "float64", "longdouble"]
    if ml_dtypes is not None:
        found += [ml_dtypes.bfloat16, ml_dtypes.float8_e5m2]
    return found


@pytest.mark.parametrize("dtype", attention_dtypes(), ids=str)
def test_attention_mask_definition(dtype: Any) -> None:
    """Query i attends key j where j - i <= diag and, with a window, j - i >
    diag - window: bool True there, floating 0 there and -inf elsewhere."""
    dtype = np.dtype(dtype)
    for (q, k), window, align in itertools.product(
        LENGTHS, WINDOWS, ["bottom_right", "top_left"]
    ):
        allowed = attention_oracle(q, k, window, align)
        if dtype.kind == "b":
            exp = allowed
        else:
            exp = mask_oracle(q, k, None, None, dtype, 0.0)
            exp[~allowed] = as_fill(-math.inf, dtype)
        got = trilu.attention_mask(q, k, window=window, align=align, dtype=dtype)
        assert_same(got, exp)
    assert_same(trilu.attention_mask(5), attention_oracle(5, 5, None, "bottom_right"))


def test_attention_mask_is_a_band_mask() -> None:
    """attention_mask is band_mask(q, k, diag - window + 1, diag)."""
    for (q, k), window in itertools.product(LENGTHS, [None, 1, 3]):
        diag = k - q
        lo = None if window is None else diag - window + 1
        assert_same(
            trilu.attention_mask(q, k, window=window),
            trilu.band_mask(q, k, lo, diag),
        )


def test_attention_mask_is_torchs() -> None:
    """torch's causal_lower_right (bottom right) and causal_upper_left (top
    left): scaled_dot_product_attention gives the same output with either
    of ours as attn_mask, bool or additive, as with torch's own; and their
    materialized masks are ours (torch needed)."""
    torch = pytest.importorskip("torch")
    bias = pytest.importorskip("torch.nn.attention.bias")
    sdpa = torch.nn.functional.scaled_dot_product_attention
    generator = torch.Generator().manual_seed(5)
    for q, k in [(4, 4), (3, 7), (7, 3), (1, 9), (16, 16), (5, 40)]:
        query = torch.randn(2, 3, q, 8, generator=generator, dtype=torch.float64)
        key, value = torch.randn(
            2, 2, 3, k, 8, generator=generator, dtype=torch.float64
        )
        for align, variant in [
            ("bottom_right", bias.causal_lower_right),
            ("top_left", bias.causal_upper_left),
        ]:
            with warnings.catch_warnings():
                # more queries than keys: rows that attend nothing, of which
                # torch warns (NaN in attention); the mask is the point here
                warnings.simplefilter("ignore", UserWarning)
                theirs = variant(q, k)
            ours = trilu.attention_mask(q, k, align=align)
            additive = trilu.attention_mask(q, k, align=align, dtype=np.float64)
            if hasattr(theirs, "_materialize"):  # torch's dense form of it
                assert_same(ours, theirs._materialize().numpy())
            want = sdpa(query, key, value, attn_mask=theirs).numpy()
            for mask in (ours, additive):
                got = sdpa(query, key, value, attn_mask=torch.from_numpy(mask))
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_attention_mask_dtype_metadata() -> None:
    """A dtype's metadata is kept, as np.tri keeps it, whichever dtype came
    first (the values made once a dtype are not shared with it); the mask
    is always a fresh writable array."""
    unit = np.dtype(np.float64, metadata={"unit": "m"})
    for dtype in (np.float64, unit, np.float64, unit, bool):
        got = trilu.attention_mask(3, dtype=dtype)
        assert got.dtype.metadata == np.dtype(dtype).metadata
        assert got.flags.writeable
    assert (
        trilu.band_mask(2, dtype=unit).dtype.metadata
        == np.tri(2, dtype=unit).dtype.metadata
    )


BAD_ATTENTION = [
    ({"align": "middle"}, ValueError, r"\balign\b.*'middle'"),
    ({"align": None}, ValueError, r"\balign\b"),
    ({"window": 0}, ValueError, r"\bwindow must be 1 or more, got 0"),
    ({"window": -3}, ValueError, r"\bwindow must be 1 or more, got -3"),
    ({"window": 1.5}, TypeError, r"\bwindow must be an integer"),
    ({"window": "2"}, TypeError, r"\bwindow must be an integer"),
    ({"dtype": np.int32}, TypeError, r"\bdtype\b.*bool.*floating.*int32"),
    ({"dtype": np.uint8}, TypeError, r"\bdtype\b.*uint8"),
    ({"dtype": np.complex64}, TypeError, r"\bdtype\b.*complex64"),
    ({"dtype": "U3"}, TypeError, r"\bdtype\b"),
    ({"dtype": object}, TypeError, r"\bdtype\b"),
    ({"q_len": -1}, ValueError, r"\bq_len must be 0 or more"),
    ({"k_len": -2}, ValueError, r"\bk_len must be 0 or more"),
    ({"q_len": 2.5}, TypeError, r"\bq_len must be an integer"),
    ({"k_len": "3"}, TypeError, r"\bk_len must be an integer"),
]
if ml_dtypes is not None:
    BAD_ATTENTION += [
        ({"dtype": ml_dtypes.float8_e4m3fn}, TypeError, r"-inf.*float8_e4m3fn"),
        ({"dtype": ml_dtypes.int4}, TypeError, r"-inf.*int4"),
    ]


@pytest.mark.parametrize(("kwargs", "exc", "match"), BAD_ATTENTION, ids=str)
def test_attention_mask_bad_arguments(
    kwargs: dict[str, Any], exc: type, match: str
) -> None:
    """The exact exception type, with a message naming the culprit."""
    args = {"q_len": 3, "k_len": 4, **kwargs}
    with pytest.raises(exc, match=match):
        trilu.attention_mask(**args)


# --- band_mask: errors -------------------------------------------------------------

BAD_MASK = [
    ((-1,), {}, ValueError, r"\bn must be 0 or more, got -1"),
    ((3, -2), {}, ValueError, r"\bm must be 0 or more, got -2"),
    ((2.5,), {}, TypeError, r"\bn must be an integer"),
    (("3",), {}, TypeError, r"\bn must be an integer"),
    ((None,), {}, TypeError, r"\bn must be an integer"),
    ((3, 1.5), {}, TypeError, r"\bm must be an integer"),
    ((3, 3, 0.5), {}, TypeError, r"\blo must be an integer"),
    ((3, 3, 0, "1"), {}, TypeError, r"\bhi must be an integer"),
    ((3, 3, np.array([1])), {}, TypeError, r"\blo must be an integer"),
    ((3,), {"dtype": "foo"}, TypeError, r"foo"),
    ((3,), {"dtype": np.int8, "keep": 300}, OverflowError, r"\bkeep=300\b"),
    ((3,), {"dtype": np.int8, "fill": -129}, OverflowError, r"\bfill=-129\b"),
    ((3,), {"dtype": np.int32, "keep": 1.5}, TypeError, r"\bkeep=1.5\b"),
    ((3,), {"dtype": np.int32, "fill": -math.inf}, TypeError, r"\bfill=-inf\b"),
    ((3,), {"dtype": "U2", "keep": 1}, TypeError, r"\bkeep must be a str"),
    ((3,), {"dtype": "U2", "fill": "abc"}, ValueError, r"\bfill 'abc' does not fit"),
    ((3,), {"like": [1]}, TypeError, r"`like` argument.*__array_function__"),
    ((3,), {"like": 3}, TypeError, r"`like` argument"),
    ((2**62, 2**62), {}, MemoryError, r"cannot be allocated"),
]


@pytest.mark.parametrize(("args", "kwargs", "exc", "match"), BAD_MASK, ids=str)
def test_band_mask_bad_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any], exc: type, match: str
) -> None:
    with pytest.raises(exc, match=match):
        trilu.band_mask(*args, **kwargs)


@pytest.mark.parametrize(("name", "fill", "exc"), BAD_FILL_PARAMS)
def test_band_mask_bad_keep_and_fill(name: str, fill: Any, exc: Any) -> None:
    """A keep or fill the dtype cannot hold: the exception fill= raises in
    triu, naming the argument."""
    dtype = ALL_DTYPES[name]
    with pytest.raises(exc, match=r"\bfill\b"):
        trilu.band_mask(3, dtype=dtype, fill=fill)
    with pytest.raises(exc, match=r"\bkeep\b"):
        trilu.band_mask(3, dtype=dtype, keep=fill)


# --- like= ---------------------------------------------------------------------------


class Recorder:
    """An array of another library: records what __array_function__ is handed."""

    calls: ClassVar[list[tuple[Any, ...]]] = []
    answer: Any = "made by Recorder"

    def __array_function__(
        self, func: Any, types: Any, args: Any, kwargs: dict[str, Any]
    ) -> Any:
        Recorder.calls.append((func, types, args, kwargs))
        return self.answer


class Refuser(Recorder):
    answer = NotImplemented


class Sub(np.ndarray):
    """A subclass that keeps ndarray's __array_function__."""


@pytest.mark.parametrize("function", [trilu.band_mask, trilu.attention_mask])
def test_like(function: Any) -> None:
    """numpy's like= protocol: a numpy array (or subclass) changes nothing;
    another library's array gets the function and its arguments, without
    like (its NotImplemented a TypeError); a dask array a lazy mask."""
    plain = function(4, 6)
    assert_same(function(4, 6, like=np.empty(0)), plain)
    assert_same(function(4, 6, like=np.empty(0).view(Sub)), plain)
    Recorder.calls.clear()
    assert function(4, 6, dtype=np.float32, like=Recorder()) == "made by Recorder"
    ((func, types, args, kwargs),) = Recorder.calls
    assert func is function
    assert types == (Recorder,)
    assert args == ()
    assert "like" not in kwargs
    assert function(**kwargs) is not None  # the arguments call it again
    assert_same(function(**kwargs), function(4, 6, dtype=np.float32))
    with pytest.raises(
        TypeError, match=rf"no implementation found for 'trilu.{function.__name__}'"
    ):
        function(4, 6, like=Refuser())
    da = pytest.importorskip("dask.array")
    lazy = function(4, 6, like=da.zeros(3))
    assert isinstance(lazy, da.Array)
    assert_same(lazy.compute(), plain)
    lazy = function(4, 6, like=da.zeros(3), chunks=2)
    assert lazy.chunks == ((2, 2), (2, 2, 2))


# --- chunks= (dask) -------------------------------------------------------------------

CHUNKINGS = [((7, 9), 3), ((7, 9), ((3, 1, 3), (4, 0, 5))), ((6, 6), 6),
             ((0, 4), 2), ((40, 30), (7, 11)), ((5, 8), "auto")]  # fmt: skip


@pytest.mark.parametrize(("shape", "chunks"), CHUNKINGS, ids=str)
def test_chunks(shape: tuple[int, int], chunks: Any) -> None:
    """chunks= gives a lazy dask array equal to the numpy mask, of those
    chunks; a block wholly on or off the band is a task that broadcasts one
    value (no kernel call), and only crossed blocks call the kernel."""
    da = pytest.importorskip("dask.array")
    n, m = shape
    for lo, hi, dtype, keep, fill in [
        (None, 0, bool, None, None),
        (-2, 1, np.float32, 0.0, -math.inf),
        (3, None, np.int16, 7, -7),
        (-BIG_K, BIG_K, "U2", "ab", "c"),
        (2, 1, object, [], None),
    ]:
        if chunks == "auto" and np.dtype(dtype).hasobject:  # dask's own limit
            with pytest.raises(NotImplementedError, match="object dtype"):
                trilu.band_mask(n, m, dtype=dtype, chunks=chunks)
            continue
        lazy = trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=keep, fill=fill,
                               chunks=chunks)  # fmt: skip
        assert isinstance(lazy, da.Array)
        assert lazy.chunks == da.zeros(shape, dtype, chunks=chunks).chunks
        exp = trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=keep, fill=fill)
        if np.dtype(dtype).kind == "O":
            assert lazy.compute().tolist() == exp.tolist()
        else:
            assert_same(lazy.compute(), exp)
        graph = dict(lazy.__dask_graph__())
        rows, cols = lazy.chunks
        for (_, i, j), task in graph.items():
            first_row, first_col = sum(rows[:i]), sum(cols[:j])
            block = exp[
                first_row : first_row + rows[i], first_col : first_col + cols[j]
            ]
            one_value = block.size == 0 or (block == block.flat[0]).all()
            assert (task.func.__name__ == "_zeros") == bool(one_value), (i, j)
    lazy = trilu.attention_mask(n, m, window=2, dtype=np.float64, chunks=chunks)
    assert_same(lazy.compute(), trilu.attention_mask(n, m, window=2, dtype=np.float64))


def test_chunks_validated_at_the_call() -> None:
    """Bad arguments raise when the graph is built, not when it is computed."""
    pytest.importorskip("dask.array")
    with pytest.raises(OverflowError, match=r"\bkeep=300\b"):
        trilu.band_mask(4, dtype=np.int8, keep=300, chunks=2)
    with pytest.raises(ValueError, match=r"\bwindow\b"):
        trilu.attention_mask(4, window=0, chunks=2)


# --- properties -------------------------------------------------------------------------

_HYP_DTYPES = [n for n in ALL_DTYPES if cast_fails(ALL_DTYPES[n]) is None]
SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
BOUND = st.none() | st.integers(-12, 12) | st.integers(-(2**70), 2**70)


@SETTINGS
@given(
    st.sampled_from(_HYP_DTYPES),
    st.integers(0, 40),
    st.integers(0, 40) | st.none(),
    BOUND,
    BOUND,
    st.data(),
)
def test_band_mask_hypothesis(
    name: str, n: int, m: int | None, lo: Any, hi: Any, data: Any
) -> None:
    """Random dtype, sides, bounds, keep and fill: the oracle's mask."""
    dtype = ALL_DTYPES[name]
    values = [None, *fills(dtype)]
    keep, fill = data.draw(st.sampled_from(values)), data.draw(st.sampled_from(values))
    got = trilu.band_mask(n, m, lo, hi, dtype=dtype, keep=keep, fill=fill)
    cols = n if m is None else m
    assert_same(got, mask_oracle(n, cols, lo, hi, dtype, keep, fill))


@SETTINGS
@given(
    st.integers(0, 60),
    st.integers(0, 60),
    st.none() | st.integers(1, 70),
    st.sampled_from(["bottom_right", "top_left"]),
    st.sampled_from(["bool", "float32", "float16"]),
)
def test_attention_mask_hypothesis(
    q: int, k: int, window: int | None, align: str, dtype: str
) -> None:
    """Random lengths, window and alignment: the definition."""
    allowed = attention_oracle(q, k, window, align)
    got = trilu.attention_mask(q, k, window=window, align=align, dtype=dtype)
    if dtype == "bool":
        assert_same(got, allowed)
    else:
        assert_same(got, np.where(allowed, 0, -math.inf).astype(dtype))
