"""trilu on dask arrays: trilu's numpy answer bit for bit, lazily, block by block.

triu, tril, trilu and band (with fill=) and mirror. Besides the values, the
graph itself is checked: blocks outside the band must not depend on the input
(so it is never read for them), kept blocks must alias it, mirror's other
triangle must read only the block across the diagonal, chunks must not change
(mirror's: the rows' on both axes). Arrays of other libraries must reach their
own triu/tril; pack and unpack refuse dask arrays.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import pickle
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    NAT,
    STRING,
    TIMEOUT,
    Token,
    assert_same,
    make,
    numpy_oracle,
    onnx_zero,
    run_python,
    spec_oracle,
    triangle_warnings,
    warned,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import trilu

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
Alias = pytest.importorskip("dask._task_spec").Alias
Task = pytest.importorskip("dask._task_spec").Task
HighLevelGraph = pytest.importorskip("dask.highlevelgraph").HighLevelGraph
_dask = importlib.import_module("trilu._dask")  # needs dask: after the skip

HUGE = 2**70


# The three public functions, as (name, trilu's function, oracle on numpy):
# numpy's triangle for triu/tril, the spec's (strings zeroed to "") for trilu.
def _trilu_upper(m: Any, k: int) -> Any:
    return trilu.trilu(m, k, True)


def _trilu_lower(m: Any, k: int) -> Any:
    return trilu.trilu(m, k, False)


def _numpy(upper: bool) -> Callable[[np.ndarray, Any], np.ndarray]:
    return lambda a, k: numpy_oracle(a, k, upper)


def _spec(upper: bool) -> Callable[[np.ndarray, Any], np.ndarray]:
    return lambda a, k: spec_oracle(a, int(k), upper, onnx_zero(a.dtype))


FUNCS: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("triu", trilu.triu, _numpy(True)),
    ("tril", trilu.tril, _numpy(False)),
    ("trilu-upper", _trilu_upper, _spec(True)),
    ("trilu-lower", _trilu_lower, _spec(False)),
]
FUNC_PARAMS = [pytest.param(ours, ref, id=name) for name, ours, ref in FUNCS]


def sample(shape: tuple[int, ...], dtype: Any = np.float64) -> np.ndarray:
    """Nonzero values everywhere (and -0.0, nan for floats), so zeros show."""
    n = int(np.prod(shape))
    values = np.arange(1, n + 1)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.ones(shape, bool)
    if dtype.kind == "O":
        return np.array([f"s{v}" for v in values], object).reshape(shape)
    if dtype.kind in "US":
        return values.astype(dtype).reshape(shape)
    if dtype.kind == "M":
        return values.astype("datetime64[s]").astype(dtype).reshape(shape)
    a = values.astype(dtype).reshape(shape)
    if dtype.kind in "fc" and n > 2:
        a.flat[1] = -0.0
        a.flat[2] = np.nan
    return a


# --- values ----------------------------------------------------------------------

CHUNKINGS: list[tuple[tuple[int, ...], Any]] = [
    ((6, 6), 2),  # regular
    ((6, 6), 6),  # one chunk
    ((7, 5), 3),  # ragged edges
    ((7, 9), ((3, 1, 3), (4, 0, 5))),  # irregular, with an empty chunk
    ((9, 4), ((1, 5, 3), (2, 2))),  # tall
    ((3, 11), ((2, 1), (1, 1, 7, 2))),  # wide
    ((4, 5, 6), (3, 2, 4)),  # a batch axis, chunked
    ((2, 3, 5, 6), ((1, 1), (2, 1), (5,), (1, 5))),  # two batch axes
    ((0, 4), 2),  # no rows
    ((3, 0, 4), 2),  # an empty batch
]


@pytest.mark.parametrize(("ours", "ref"), FUNC_PARAMS)
@pytest.mark.parametrize(("shape", "chunks"), CHUNKINGS, ids=str)
def test_equals_numpy_for_every_k(
    ours: Callable, ref: Callable, shape: tuple[int, ...], chunks: Any
) -> None:
    a = sample(shape)
    x = da.from_array(a, chunks=chunks)
    rows, cols = shape[-2:]
    ks = [*range(-rows - 2, cols + 3), -HUGE, HUGE, -(2**63), 2**64 - 1]
    for k in ks:
        r = ours(x, k)
        assert isinstance(r, da.Array)
        assert r.chunks == x.chunks
        assert r.dtype == a.dtype
        expected = ref(a, k)
        assert_same(r.compute(), expected)


DTYPES = [
    np.float64,
    np.float32,
    np.float16,
    np.int8,
    np.int64,
    np.uint16,
    np.uint64,
    np.bool_,
    np.complex64,
    np.complex128,
    "U3",
    "S4",
    object,
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(("ours", "ref"), FUNC_PARAMS)
def test_dtypes(ours: Callable, ref: Callable, dtype: Any) -> None:
    a = sample((2, 5, 7), dtype)
    x = da.from_array(a, chunks=(1, 2, 3))
    for k in (-3, -1, 0, 2, 5):
        r = ours(x, k)
        assert r.dtype == a.dtype
        assert_same(r.compute(), ref(a, k))


def test_object_zero_is_numpy_for_triu_and_empty_string_for_trilu() -> None:
    a = sample((4, 4), object)
    x = da.from_array(a, chunks=2)  # a whole zero block and a cut block
    assert trilu.triu(x).compute()[3, 0] == 0
    assert trilu.triu(x).compute()[1, 0] == 0
    assert trilu.trilu(x).compute()[3, 0] == ""
    assert trilu.trilu(x).compute()[1, 0] == ""
    assert trilu.trilu(x, upper=False).compute()[0, 3] == ""


@pytest.mark.parametrize(
    "dtype",
    [
        *([STRING] if STRING is not None else []),  # StringDType: numpy >= 2
        "datetime64[ms]",
        "timedelta64[s]",
        ">f8",
        "<i4",
    ],
)
def test_more_dtypes_for_triu_tril(dtype: Any) -> None:
    a = sample((5, 6), np.float64 if str(dtype) == ">f8" else np.int32)
    a = a.astype(dtype) if np.dtype(dtype).kind != "M" else sample((5, 6), dtype)
    x = da.from_array(a, chunks=(2, 4))
    for k in (-2, 0, 3):
        for ours, ref in ((trilu.triu, np.triu), (trilu.tril, np.tril)):
            r = ours(x, k)
            expected = ref(a, k)
            assert r.dtype == expected.dtype  # big-endian in, native out, as numpy
            assert_same(r.compute(), expected)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    batch=st.lists(st.integers(1, 3), max_size=2),
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    k=st.one_of(st.integers(-12, 12), st.sampled_from([-HUGE, HUGE])),
    which=st.sampled_from(range(len(FUNCS))),
)
def test_random_chunkings(
    data: st.DataObject, batch: list[int], rows: int, cols: int, k: int, which: int
) -> None:
    shape = (*batch, rows, cols)
    chunks = tuple(data.draw(_chunking(n)) for n in shape)
    a = sample(shape)
    _, ours, ref = FUNCS[which]
    r = ours(da.from_array(a, chunks=chunks), k)
    assert r.chunks == chunks
    assert_same(r.compute(), ref(a, k))


def _chunking(n: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Any split of n into positive chunks."""
    cuts = st.sets(st.integers(1, n - 1), max_size=n - 1) if n > 1 else st.just(set())
    return cuts.map(lambda c: tuple(np.diff([0, *sorted(c), n]).tolist()))


# --- 1-D, rank and type rules ------------------------------------------------------


@pytest.mark.parametrize(("ours", "ref"), FUNC_PARAMS[:2])
def test_one_dimensional_gives_numpys_square(ours: Callable, ref: Callable) -> None:
    a = np.arange(1, 8)
    x = da.from_array(a, chunks=((3, 1, 3),))
    for k in (-8, -2, 0, 1, 4, 8, HUGE):
        r = ours(x, k)
        assert r.chunks == (x.chunks[0], x.chunks[0])
        expected = ref(a, k)
        got = r.compute()
        assert_same(got, expected)
        assert got.flags.writeable


def test_trilu_rejects_rank_below_two_and_types_outside_the_constraint() -> None:
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        trilu.trilu(da.arange(4, chunks=2))
    with pytest.raises(TypeError, match="type constraint"):
        trilu.trilu(da.from_array(np.zeros((3, 3), "datetime64[s]"), chunks=2))
    with pytest.raises(TypeError, match="type constraint"):
        trilu.trilu(da.from_array(np.zeros((3, 3), np.longdouble), chunks=2))


def test_zero_dimensional_is_rejected() -> None:
    """The rules of numpy input (_validate): numpy's TypeError for triu/tril,
    the spec's ValueError for trilu."""
    x = da.from_array(np.array(1.0), chunks=())
    for f in (trilu.triu, trilu.tril):
        with pytest.raises(TypeError, match=r"^m must be an array of at least 1"):
            f(x)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        trilu.trilu(x)


def test_out_is_refused_for_dask_input() -> None:
    x = da.ones((3, 3), chunks=2)
    with pytest.raises(TypeError, match="out="):
        trilu.triu(x, out=np.empty((3, 3)))
    with pytest.raises(TypeError, match="out="):
        trilu.trilu(x, out=np.empty((3, 3)))


def test_k_is_validated_as_for_numpy_arrays() -> None:
    x = da.ones((3, 3), chunks=2)
    with pytest.raises(TypeError, match="k must be an integer"):
        trilu.triu(x, 1.5)
    got, messages = warned(lambda: trilu.triu(x, 1.0).compute())
    assert_same(got, np.triu(np.ones((3, 3)), 1))
    assert messages == triangle_warnings(1.0, True, 3, 3)  # numpy's (>= 2.5)
    assert_same(trilu.trilu(x, np.array([1])).compute(), np.triu(np.ones((3, 3)), 1))


# --- the graph -----------------------------------------------------------------------


def _layer(r: Any) -> dict:
    """The tasks trilu added: the result's own layer."""
    graph = r.__dask_graph__()
    assert isinstance(graph, HighLevelGraph)
    return dict(graph.layers[r.name])


# (lo, hi) and the kinds of block they make on the array below
BANDS = [
    pytest.param(1, None, {"zero", "kept", "cut"}, id="triu"),
    pytest.param(None, 1, {"zero", "kept", "cut"}, id="tril"),
    pytest.param(-2, 3, {"zero", "kept", "cut"}, id="band"),
    pytest.param(0, 0, {"zero", "cut"}, id="diagonal"),
    pytest.param(-4, 6, {"kept", "cut"}, id="wide-band"),
    pytest.param(2, -1, {"zero"}, id="lo-above-hi"),
    pytest.param(None, None, {"kept"}, id="unbounded"),
]


@pytest.mark.parametrize("fill", [None, -np.inf])
@pytest.mark.parametrize(("lo", "hi", "kinds"), BANDS)
def test_blocks_outside_inside_and_crossed(
    lo: int | None, hi: int | None, kinds: set[str], fill: Any
) -> None:
    x = da.ones((2, 6, 8), chunks=(1, 2, (3, 3, 2)))
    r = _dask.band(x, lo, hi, fill, name="band")
    layer = _layer(r)
    assert len(layer) == np.prod(x.numblocks)
    first_row, first_col, ncols = (0, 2, 4), (0, 3, 6), (3, 3, 2)
    seen = set()
    for key, node in layer.items():
        _, b, i, j = key
        source = (x.name, b, i, j)
        # column minus row in this block runs over [first, last]
        first = first_col[j] - (first_row[i] + 1)
        last = first_col[j] + ncols[j] - 1 - first_row[i]
        offsets = range(first, last + 1)
        inside = [(lo is None or d >= lo) and (hi is None or d <= hi) for d in offsets]
        if not any(inside):
            assert isinstance(node, Task), key
            assert not node.dependencies, key
            made = node()  # the fill (or zero) broadcast, without the input
            assert_same(np.array(made), np.full((1, 2, ncols[j]), fill or 0.0))
            seen.add("zero")
        elif all(inside):
            assert isinstance(node, Alias), key
            assert node.target == source, key
            seen.add("kept")
        else:
            assert isinstance(node, Task), key
            assert node.dependencies == {source}, key
            seen.add("cut")
    assert seen == kinds


_reads: list[tuple[int, int]] = []
_reads_lock = threading.Lock()


def _load(i: int, j: int, n: int) -> np.ndarray:
    """An input chunk that notes it was read."""
    with _reads_lock:
        _reads.append((i, j))
    return np.full((n, n), 1.0 + i * 10 + j)


def _recording_input(blocks: int, n: int) -> Any:
    """A blocks x blocks dask array of n x n chunks whose reads are noted."""
    name = "recorded-input"
    dsk = {
        (name, i, j): Task((name, i, j), _load, i, j, n)
        for i in range(blocks)
        for j in range(blocks)
    }
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[])
    return da.Array(graph, name, ((n,) * blocks,) * 2, meta=np.empty((0, 0)))


@pytest.mark.parametrize("ours", [trilu.triu, trilu.tril, trilu.trilu])
def test_lazy_and_zero_blocks_never_read(ours: Callable) -> None:
    x = _recording_input(4, 3)
    expected = x.compute()
    _reads.clear()
    r = ours(x, 1)
    assert _reads == []  # nothing computed at call time
    with dask.config.set(scheduler="threads"):
        got = r.compute()
    ref = np.tril if ours is trilu.tril else np.triu
    assert_same(got, ref(expected, 1))
    # triu, k=1: block (i, j) is read only where j >= i (blocks below are zero)
    if ours is trilu.tril:
        wanted = {(i, j) for i in range(4) for j in range(4) if j <= i + 1}
    else:
        wanted = {(i, j) for i in range(4) for j in range(4) if j >= i}
    assert sorted(_reads) == sorted(wanted)


def test_kept_block_is_the_input_chunk_itself() -> None:
    chunk = np.arange(4.0).reshape(2, 2)
    x = _recording_input(2, 2)
    r = trilu.triu(x, 0)
    key = (r.name, 0, 1)
    assert _layer(r)[key] == Alias(key, (x.name, 0, 1))
    # The scheduler hands on the very object the input task returned.
    dsk = {**dict(x.__dask_graph__()), **_layer(r)}
    dsk[(x.name, 0, 1)] = Task((x.name, 0, 1), _identity, chunk)
    assert dask.get(dsk, key) is chunk


def _identity(a: np.ndarray) -> np.ndarray:
    return a


def test_zero_blocks_cost_one_element() -> None:
    r = trilu.triu(da.ones((4000, 4000), chunks=2000))
    block = dask.compute(r.blocks[1, 0])[0]  # a single-chunk compute is a copy
    assert not block.any()
    node = _layer(r)[(r.name, 1, 0)]
    made = node()  # the task itself: a broadcast zero, not 32 MB
    assert made.shape == (2000, 2000)
    assert made.base is not None
    assert made.base.nbytes <= 8
    assert not made.flags.writeable


def test_same_graph_same_name_and_picklable() -> None:
    x = da.from_array(sample((5, 5)), chunks=2)
    assert trilu.triu(x, 1).name == trilu.triu(x, 1).name
    made = (trilu.triu(x, 1), trilu.triu(x, 2), trilu.tril(x, 1), trilu.trilu(x, 1))
    names = {r.name for r in made}
    assert len(names) == 4
    layer = _layer(trilu.triu(x, 1))
    assert pickle.loads(pickle.dumps(layer)).keys() == layer.keys()


def test_meta_keeps_type_and_dtype() -> None:
    x = da.from_array(sample((3, 4, 5), np.float32), chunks=2)
    r = trilu.tril(x, 1)
    assert type(r._meta) is np.ndarray
    assert r._meta.dtype == np.float32
    assert r._meta.ndim == 3


def test_unknown_chunk_sizes() -> None:
    a = sample((4, 5, 6))
    x = da.from_array(a, chunks=2)
    keep = np.array([True, False, True, True])
    batch_unknown = x[da.from_array(keep, chunks=2)]  # batch axis sizes unknown
    assert np.isnan(batch_unknown.shape[0])
    assert_same(trilu.triu(batch_unknown, 1).compute(), np.triu(a[keep], 1))
    rows_unknown = x[:, da.from_array(np.array([True, False, True, True, True]), 2)]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        trilu.triu(rows_unknown)


# --- fill= and band ------------------------------------------------------------------

# Fills of each dtype kind, beside None (numpy's zero).
FILLS: dict[str, list[Any]] = {
    "b": [True],
    "i": [-1],
    "u": [7],
    "f": [-np.inf, np.nan, -0.0],
    "c": [complex(np.nan, -0.0), -np.inf],
    "U": ["ab"],
    "T": ["ab", ""],
    "S": [b"ab"],
    "O": [Token(-1), "ab"],
    "M": [NAT["M"]],
    "m": [np.timedelta64(-7, "s")],
    "V": [b"\x01\x02"],
}


def _bounds(rows: int, cols: int) -> list[int | None]:
    """Bounds from far below the matrix to far above, and None."""
    return [None, -HUGE, -rows - 1, -rows + 1, -1, 0, 2, cols - 1, cols + 1, HUGE]


@pytest.mark.parametrize(("shape", "chunks"), CHUNKINGS, ids=str)
def test_band_equals_numpy_input(shape: tuple[int, ...], chunks: Any) -> None:
    """Every pair of bounds (lo > hi too), with and without a fill."""
    a = sample(shape)
    x = da.from_array(a, chunks=chunks)
    bounds = _bounds(*shape[-2:])
    cases = list(itertools.product(bounds, bounds, (None, -np.inf)))
    results = [trilu.band(x, lo, hi, fill=fill) for lo, hi, fill in cases]
    for r in results:
        assert isinstance(r, da.Array)
        assert r.chunks == x.chunks
        assert r.dtype == a.dtype
    for (lo, hi, fill), got in zip(cases, dask.compute(*results), strict=True):
        assert_same(got, trilu.band(a, lo, hi, fill=fill))


@pytest.mark.parametrize(("shape", "chunks"), CHUNKINGS[:7], ids=str)
@pytest.mark.parametrize("ours", [trilu.triu, trilu.tril])
def test_triangle_fill_equals_numpy_input(
    shape: tuple[int, ...], chunks: Any, ours: Callable
) -> None:
    a = sample(shape)
    x = da.from_array(a, chunks=chunks)
    ks = [*range(-shape[-2] - 2, shape[-1] + 3), -HUGE, HUGE]
    cases = list(itertools.product(ks, (np.nan, -np.inf, 5)))
    results = [ours(x, k, fill=fill) for k, fill in cases]
    assert all(r.chunks == x.chunks for r in results)
    for (k, fill), got in zip(cases, dask.compute(*results), strict=True):
        assert_same(got, ours(a, k, fill=fill))


@pytest.mark.parametrize("dtype", list(ALL_DTYPES.values()), ids=list(ALL_DTYPES))
def test_fill_dtypes(dtype: np.dtype) -> None:
    """Each dtype with its kind's fills: the same answer, or the same error
    raised when the graph is built, as for numpy input. Long double's padding
    too: blocks outside the band hold the fill's bytes as the kernel writes
    them."""
    a = make(dtype, (2, 5, 7), np.random.default_rng(4))
    x = da.from_array(a, chunks=(1, 2, 3))
    for fill in [None, *FILLS.get(dtype.kind, [])]:
        for lo, hi in ((1, None), (None, -1), (-2, 3)):
            _same_as_numpy(
                lambda lo=lo, hi=hi, fill=fill: trilu.band(a, lo, hi, fill=fill),
                lambda lo=lo, hi=hi, fill=fill: trilu.band(x, lo, hi, fill=fill),
            )


def _same_as_numpy(numpy_call: Callable[[], Any], dask_call: Callable[[], Any]) -> None:
    """dask_call's result computes to numpy_call's, bit for bit, or dask_call
    raises numpy_call's error (type and message) when the graph is built."""
    try:
        expected = numpy_call()
    except (TypeError, ValueError, OverflowError) as error:
        numpy_error = error
    else:
        r = dask_call()
        assert isinstance(r, da.Array)
        assert r.dtype == expected.dtype
        assert_same(r.compute(), expected)
        return
    with pytest.raises(type(numpy_error)) as raised:
        dask_call()
    assert str(raised.value) == str(numpy_error)


BAD_FILLS = [
    (np.float64, "a"),
    (np.float64, np.ones(2)),
    (np.int8, 300),
    (np.int64, 1.5),
    (np.uint8, -1),
    (np.bool_, 2.5),
    ("U2", 5),
    ("U2", "abc"),
    ("S2", "ab"),
]


@pytest.mark.parametrize(("dtype", "fill"), BAD_FILLS, ids=str)
def test_bad_fill_raises_at_the_call_as_for_numpy(dtype: Any, fill: Any) -> None:
    a = sample((4, 4), dtype)
    with pytest.raises((TypeError, ValueError, OverflowError)) as numpy_error:
        trilu.triu(a, fill=fill)
    x = _recording_input(2, 2).astype(dtype)
    _reads.clear()
    for call in (
        lambda: trilu.triu(x, fill=fill),
        lambda: trilu.tril(x, -1, fill=fill),
        lambda: trilu.band(x, -1, 1, fill=fill),
    ):
        with pytest.raises(numpy_error.type) as raised:
            call()
        assert str(raised.value) == str(numpy_error.value)
    assert _reads == []  # raised when the graph was built, before any compute


def test_object_fill_is_the_object_itself() -> None:
    token = Token(7)
    a = sample((5, 5), object)
    r = trilu.triu(da.from_array(a, chunks=2), 1, fill=token).compute()
    assert r[4, 0] is token  # a block wholly outside: the broadcast fill
    assert r[1, 0] is token  # a crossed block: the kernel's fill
    assert_same(r, trilu.triu(a, 1, fill=token))


def test_one_dimensional_band_with_fill() -> None:
    a = np.arange(1.0, 8.0)
    x = da.from_array(a, chunks=((3, 1, 3),))
    for lo, hi in ((-8, 8), (-1, 2), (0, None), (None, -2), (3, 1)):
        for fill in (None, np.nan):
            r = trilu.band(x, lo, hi, fill=fill)
            assert r.chunks == (x.chunks[0], x.chunks[0])
            assert_same(r.compute(), trilu.band(a, lo, hi, fill=fill))


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    batch=st.lists(st.integers(1, 3), max_size=2),
    rows=st.integers(1, 9),
    cols=st.integers(1, 9),
    lo=st.one_of(st.none(), st.integers(-12, 12)),
    hi=st.one_of(st.none(), st.integers(-12, 12)),
    fill=st.sampled_from([None, -np.inf, np.nan, 2.5]),
)
def test_random_bands(
    data: st.DataObject,
    batch: list[int],
    rows: int,
    cols: int,
    lo: int | None,
    hi: int | None,
    fill: Any,
) -> None:
    shape = (*batch, rows, cols)
    chunks = tuple(data.draw(_chunking(n)) for n in shape)
    a = sample(shape)
    r = trilu.band(da.from_array(a, chunks=chunks), lo, hi, fill=fill)
    assert r.chunks == chunks
    assert_same(r.compute(), trilu.band(a, lo, hi, fill=fill))


@pytest.mark.parametrize("ours", [trilu.triu, trilu.tril, trilu.band])
def test_band_blocks_outside_never_read(ours: Callable) -> None:
    """With a fill, as without: only blocks the band reaches are read."""
    x = _recording_input(4, 3)
    expected = x.compute()
    _reads.clear()
    args = {trilu.triu: (-1,), trilu.tril: (1,), trilu.band: (-1, 1)}[ours]
    r = ours(x, *args, fill=-np.inf)
    assert _reads == []
    with dask.config.set(scheduler="threads"):
        got = r.compute()
    assert_same(got, ours(expected, *args, fill=-np.inf))
    # 3 x 3 blocks: offset -1 reaches block (i, j) where j >= i - 1, 1 where j <= i + 1
    wanted = {
        (i, j)
        for i in range(4)
        for j in range(4)
        if (ours is trilu.tril or j >= i - 1) and (ours is trilu.triu or j <= i + 1)
    }
    assert sorted(_reads) == sorted(wanted)


# --- mirror ---------------------------------------------------------------------------

MIRROR_CHUNKINGS: list[tuple[tuple[int, ...], Any]] = [
    ((6, 6), 2),  # regular
    ((6, 6), 6),  # one chunk
    ((7, 7), 3),  # a ragged edge
    ((7, 7), ((3, 0, 4), (3, 0, 4))),  # irregular, with an empty chunk
    ((6, 6), ((2, 4), (3, 3))),  # non-square chunks: rechunked
    ((5, 5), ((5,), (1, 1, 3))),  # rows whole, columns split
    ((4, 5, 5), (3, 2, 2)),  # a batch axis, chunked
    ((2, 3, 4, 4), ((1, 1), (2, 1), (4,), (1, 3))),  # two batch axes, rechunked
    ((0, 0), 2),  # empty
    ((3, 0, 0), 2),  # an empty batch
]


def _complex_sample(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Random bits: NaN payloads, -0.0 and infinities in both parts."""
    return make(np.dtype(dtype), shape, np.random.default_rng(5))


@pytest.mark.parametrize(("shape", "chunks"), MIRROR_CHUNKINGS, ids=str)
@pytest.mark.parametrize("upper", [True, False])
def test_mirror_equals_numpy_input(
    shape: tuple[int, ...], chunks: Any, upper: bool
) -> None:
    for a in (sample(shape), _complex_sample(shape, np.complex128)):
        x = da.from_array(a, chunks=chunks)
        for conj in (False, True):
            r = trilu.mirror(x, upper=upper, conj=conj)
            assert isinstance(r, da.Array)
            assert r.chunks == (*x.chunks[:-1], x.chunks[-2])  # the rows' chunks
            assert r.dtype == a.dtype
            assert_same(r.compute(), trilu.mirror(a, upper=upper, conj=conj))


@pytest.mark.parametrize("dtype", list(ALL_DTYPES.values()), ids=list(ALL_DTYPES))
def test_mirror_dtypes(dtype: np.dtype) -> None:
    """Each dtype, conj or not: the same answer, or the same error raised when
    the graph is built, as for numpy input."""
    a = make(dtype, (2, 5, 5), np.random.default_rng(6))
    for upper, conj in itertools.product((True, False), (False, True)):
        if conj and dtype.kind == "O":  # new objects: test_mirror_conj_of_objects
            continue
        x = da.from_array(a, chunks=(1, 2, (3, 2)))  # columns rechunked
        _same_as_numpy(
            lambda upper=upper, conj=conj: trilu.mirror(a, upper=upper, conj=conj),
            lambda x=x, upper=upper, conj=conj: trilu.mirror(x, upper=upper, conj=conj),
        )


def test_mirror_conj_of_objects() -> None:
    """Each object's .conjugate() across the diagonal, when computed (numpy
    input raises at the call: it is computed then); kept ones are the objects."""
    a = np.array([[complex(i, j - i) for j in range(5)] for i in range(5)], object)
    x = da.from_array(a, chunks=2)
    for upper in (True, False):
        got = trilu.mirror(x, upper=upper, conj=True).compute()
        expected = trilu.mirror(a, upper=upper, conj=True)
        assert got.dtype == expected.dtype
        assert got.tolist() == expected.tolist()
        assert (got[0, 4] if upper else got[4, 0]) is (a[0, 4] if upper else a[4, 0])
    tokens = np.array([[Token(i * 4 + j) for j in range(4)] for i in range(4)], object)
    r = trilu.mirror(da.from_array(tokens, chunks=2), conj=True)
    with pytest.raises(TypeError, match="conjugate"):
        r.compute()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128, np.clongdouble])
def test_mirror_conj_flips_the_sign_bit_as_the_kernel_does(dtype: Any) -> None:
    """Random bits, NaNs and long double's padding included: the blocks
    across the diagonal are conjugated bit for bit as the kernel does."""
    a = _complex_sample((3, 9, 9), dtype)
    x = da.from_array(a, chunks=(2, 3, 3))
    for upper in (True, False):
        got = trilu.mirror(x, upper=upper, conj=True).compute()
        assert_same(got, trilu.mirror(a, upper=upper, conj=True))


def test_one_dimensional_mirror_is_numpys_square() -> None:
    a = np.arange(1.0, 8.0)
    x = da.from_array(a, chunks=((3, 1, 3),))
    for upper in (True, False):
        r = trilu.mirror(x, upper=upper)
        assert r.chunks == (x.chunks[0], x.chunks[0])
        assert_same(r.compute(), trilu.mirror(a, upper=upper))


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    batch=st.lists(st.integers(1, 3), max_size=2),
    n=st.integers(1, 9),
    upper=st.booleans(),
    conj=st.booleans(),
)
def test_random_mirrors(
    data: st.DataObject, batch: list[int], n: int, upper: bool, conj: bool
) -> None:
    shape = (*batch, n, n)
    chunks = tuple(data.draw(_chunking(size)) for size in shape)
    a = _complex_sample(shape, np.complex64)
    r = trilu.mirror(da.from_array(a, chunks=chunks), upper=upper, conj=conj)
    assert r.chunks == (*chunks[:-1], chunks[-2])
    assert_same(r.compute(), trilu.mirror(a, upper=upper, conj=conj))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("conj", [False, True])
def test_mirror_blocks_alias_transpose_and_diagonal(upper: bool, conj: bool) -> None:
    x = da.ones((2, 6, 6), np.complex64, chunks=(1, (2, 3, 1), (2, 3, 1)))
    r = trilu.mirror(x, upper=upper, conj=conj)
    layer = _layer(r)
    assert len(layer) == np.prod(x.numblocks)
    seen = set()
    for key, node in layer.items():
        _, b, i, j = key
        if i == j:
            assert isinstance(node, Task), key
            assert node.dependencies == {(x.name, b, i, i)}, key
            seen.add("diagonal")
        elif (j > i) == upper:
            assert isinstance(node, Alias), key
            assert node.target == (x.name, b, i, j), key
            seen.add("kept")
        else:  # only the block across the diagonal is read
            assert isinstance(node, Task), key
            assert node.dependencies == {(x.name, b, j, i)}, key
            seen.add("mirrored")
    assert seen == {"diagonal", "kept", "mirrored"}


def test_mirror_reads_each_block_once_and_is_lazy() -> None:
    x = _recording_input(3, 2)
    expected = x.compute()
    _reads.clear()
    r = trilu.mirror(x, upper=False)
    assert _reads == []
    with dask.config.set(scheduler="threads"):
        got = r.compute()
    assert_same(got, trilu.mirror(expected, upper=False))
    assert sorted(_reads) == [(i, j) for i in range(3) for j in range(3) if j <= i]


def test_mirror_kept_block_is_the_input_chunk_itself() -> None:
    x = da.from_array(sample((4, 4)), chunks=2)
    r = trilu.mirror(x)
    assert _layer(r)[(r.name, 0, 1)] == Alias((r.name, 0, 1), (x.name, 0, 1))


def test_mirror_rechunks_the_columns_as_the_rows() -> None:
    a = sample((3, 7, 7))
    x = da.from_array(a, chunks=(2, (4, 3), (2, 2, 3)))
    r = trilu.mirror(x, conj=True)
    assert r.chunks == ((2, 1), (4, 3), (4, 3))
    assert_same(r.compute(), trilu.mirror(a, conj=True))
    # blocks read the rechunked input, not x's chunks, and mirror across
    sources = {dep[0] for node in _layer(r).values() for dep in node.dependencies}
    assert len(sources) == 1
    assert x.name not in sources


def test_mirror_errors_at_the_call() -> None:
    with pytest.raises(
        ValueError, match=r"^mirror needs square matrices, got shape \(2, 3, 4\)$"
    ):
        trilu.mirror(da.ones((2, 3, 4), chunks=2))
    for dtype in (bool, "U2", "datetime64[s]", "V4"):
        a = np.zeros((3, 3), dtype)
        with pytest.raises(TypeError) as numpy_error:
            trilu.mirror(a, conj=True)
        with pytest.raises(TypeError) as raised:
            trilu.mirror(da.from_array(a, chunks=2), conj=True)
        assert str(raised.value) == str(numpy_error.value)
        assert "conj=True needs numbers with a conjugate" in str(raised.value)
    with pytest.raises(TypeError, match=r"^m must be an array of at least 1"):
        trilu.mirror(da.from_array(np.array(1.0), chunks=()))
    x = da.from_array(sample((4, 4)), chunks=2)
    rows_unknown = x[da.from_array(np.array([True, False, True, True]), 2)]
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        trilu.mirror(rows_unknown)
    with pytest.raises(TypeError, match="out="):
        trilu.mirror(x, out=np.empty((4, 4)))


def test_mirror_unknown_batch_size() -> None:
    a = sample((4, 3, 3))
    x = da.from_array(a, chunks=2)
    keep = np.array([True, False, True, True])
    batch_unknown = x[da.from_array(keep, chunks=2)]
    assert np.isnan(batch_unknown.shape[0])
    assert_same(trilu.mirror(batch_unknown).compute(), trilu.mirror(a[keep]))


def test_band_and_mirror_graphs_are_named_and_pickle() -> None:
    x = da.from_array(sample((5, 5)), chunks=2)
    assert trilu.band(x, -1, 1, fill=0.5).name == trilu.band(x, -1, 1, fill=0.5).name
    made = (
        trilu.band(x, -1, 1),
        trilu.band(x, -1, 1, fill=0.5),
        trilu.band(x, -1, 1, fill=-0.0),
        trilu.triu(x, 1, fill=0.5),
        trilu.mirror(x),
        trilu.mirror(x, upper=False),
    )
    assert len({r.name for r in made}) == len(made)
    for r in made:
        layer = _layer(r)
        assert pickle.loads(pickle.dumps(layer)).keys() == layer.keys()


def test_mirror_diagonal_block_runs_on_one_thread(monkeypatch) -> None:
    """As band's crossed blocks: a cap of one kernel thread unless the count
    was chosen, lifted after the block."""
    from trilu import _kernel, _route, _threads  # noqa: PLC0415

    def threads(*_: Any) -> Any:
        return _kernel.explain(np.empty((2048, 2048)), 0, True)["threads"]

    monkeypatch.setattr(_threads, "chosen", False)  # as a test before may leave it
    before = threads()
    monkeypatch.setattr(_route, "mirror", threads)
    assert _dask._diagonal(np.zeros((2, 2)), True, False) == 1
    assert threads() == before


# --- pack and unpack ------------------------------------------------------------------


def _packed_chunkings(size: int) -> list[Any]:
    """Chunkings of a packed axis of this size: whole, in threes, irregular
    with an empty chunk, one element each."""
    return [size, 3, (1, 0, size - 1) if size else (0,), 1]


@pytest.mark.parametrize(("shape", "chunks"), CHUNKINGS, ids=str)
def test_pack_and_unpack_equal_numpy_input(shape: tuple[int, ...], chunks: Any) -> None:
    """Every k, both triangles: pack one chunk of the packed axis per row
    block, the batch's chunks kept; unpack of every chunking of the packed
    axis, with and without a fill, its square chunks as its rows'."""
    a = sample(shape)
    x = da.from_array(a, chunks=chunks)
    rows, cols = shape[-2:]
    cases = list(
        itertools.product([*range(-rows - 2, cols + 3), -HUGE, HUGE], (True, False))
    )
    packs = [trilu.pack(x, k, upper=upper) for k, upper in cases]
    for (k, upper), got in zip(cases, dask.compute(*packs), strict=True):
        assert_same(got, trilu.pack(a, k, upper=upper))
    unpacks, expects = [], []
    for (k, upper), p in zip(cases, packs, strict=True):
        indices = np.triu_indices if upper else np.tril_indices
        row_of = indices(rows, max(-rows, min(cols, k)), cols)[0]  # (no huge k)
        # pack: a chunk of the packed axis per row block, its elements
        row_ends = np.cumsum((0, *x.chunks[-2]))
        segments = np.diff(np.searchsorted(row_of, row_ends))
        assert p.chunks == (*x.chunks[:-2], tuple(segments.tolist()))
        v = trilu.pack(a, k, upper=upper)
        for packed, fill in itertools.product(
            _packed_chunkings(v.shape[-1]), (None, -np.inf)
        ):
            vx = da.from_array(v, chunks=(*x.chunks[:-2], packed))
            r = trilu.unpack(vx, rows, cols, k, upper=upper, fill=fill)
            unpacks.append(r)
            expects.append(trilu.unpack(v, rows, cols, k, upper=upper, fill=fill))
            assert r.chunks[:-2] == x.chunks[:-2]
            # unpack: a row block ends in the row where a chunk of the packed
            # axis ends; the columns' blocks end where the rows' do
            ends = {row_of[e - 1] + 1 for e in np.cumsum(vx.chunks[-1]) if e}
            assert set(np.cumsum(r.chunks[-2])) == ends | {rows}
            within = {e for e in np.cumsum(r.chunks[-2]) if 0 < e < cols}
            assert set(np.cumsum(r.chunks[-1])) == within | {cols}
    for got, expected in zip(dask.compute(*unpacks), expects, strict=True):
        assert_same(got, expected)


def test_unpack_square_from_its_count() -> None:
    """n omitted: the one square whose triangle holds the packed axis."""
    a = sample((2, 5, 5))
    for k, upper in ((0, True), (1, True), (-1, False)):
        v = trilu.pack(a, k, upper=upper)
        vx = da.from_array(v, chunks=(1, 4))
        assert_same(
            trilu.unpack(vx, k=k, upper=upper).compute(),
            trilu.unpack(v, k=k, upper=upper),
        )


@pytest.mark.parametrize("dtype", list(ALL_DTYPES.values()), ids=list(ALL_DTYPES))
def test_pack_and_unpack_dtypes(dtype: np.dtype) -> None:
    """Each dtype (with its kind's fills for unpack): the same answer, or the
    same error raised when the graph is built, as for numpy input."""
    a = make(dtype, (2, 5, 7), np.random.default_rng(7))
    x = da.from_array(a, chunks=(1, 2, 3))
    for k, upper in ((1, True), (-1, False)):
        _same_as_numpy(
            partial(trilu.pack, a, k, upper=upper),
            partial(trilu.pack, x, k, upper=upper),
        )
        v = trilu.pack(a, k, upper=upper)
        vx = da.from_array(v, chunks=(1, 4))
        for fill in [None, *FILLS.get(dtype.kind, [])]:
            options = {"k": k, "upper": upper, "fill": fill}
            _same_as_numpy(
                partial(trilu.unpack, v, 5, 7, **options),
                partial(trilu.unpack, vx, 5, 7, **options),
            )


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    batch=st.lists(st.integers(1, 3), max_size=2),
    rows=st.integers(0, 9),
    cols=st.integers(0, 9),
    k=st.integers(-11, 11),
    upper=st.booleans(),
)
def test_random_pack_unpack_chunkings(
    data: st.DataObject, batch: list[int], rows: int, cols: int, k: int, upper: bool
) -> None:
    shape = (*batch, rows, cols)
    a = sample(shape)
    chunks = tuple(data.draw(_chunking(n)) if n else (0,) for n in shape)
    p = trilu.pack(da.from_array(a, chunks=chunks), k, upper=upper)
    v = trilu.pack(a, k, upper=upper)
    assert_same(p.compute(), v)
    size = v.shape[-1]
    packed = data.draw(_chunking(size)) if size else (0,)
    vx = da.from_array(v, chunks=(*chunks[:-2], packed))
    got = trilu.unpack(vx, rows, cols, k, upper=upper, fill=-1.0).compute()
    assert_same(got, trilu.unpack(v, rows, cols, k, upper=upper, fill=-1.0))


@pytest.mark.parametrize(("shape", "chunks"), CHUNKINGS, ids=str)
def test_pack_and_unpack_in_lapacks_order_and_mirrored(
    shape: tuple[int, ...], chunks: Any
) -> None:
    """order="F" (the transpose's other triangle, in rows) and mirror= (a
    matrix's whole vector in one block): every k, both triangles, the same
    answer as numpy input; mirrored where the matrices are square, with
    conj for complex ones."""
    a = sample(shape, np.complex128)
    x = da.from_array(a, chunks=chunks)
    rows, cols = shape[-2:]
    mirrors = (False, True, "conj") if rows == cols else (False,)
    calls, expects = [], []
    for k, upper in itertools.product(range(-rows - 1, cols + 2), (True, False)):
        calls.append(trilu.pack(x, k, upper=upper, order="F"))
        expects.append(trilu.pack(a, k, upper=upper, order="F"))
        v = expects[-1]
        for packed, mirror in itertools.product(
            _packed_chunkings(v.shape[-1]), mirrors
        ):
            vx = da.from_array(v, chunks=(*x.chunks[:-2], packed))
            for order in ("C", "F") if mirror else ("F",):
                w = v if order == "F" else trilu.pack(a, k, upper=upper)
                wx = vx if order == "F" else da.from_array(w, chunks=vx.chunks)
                options = {"upper": upper, "order": order, "mirror": mirror}
                calls.append(trilu.unpack(wx, rows, cols, k, fill=-1.0, **options))
                expects.append(trilu.unpack(w, rows, cols, k, fill=-1.0, **options))
    for got, expected in zip(dask.compute(*calls), expects, strict=True):
        assert_same(got, expected)


def test_unpack_mirrored_errors_at_the_call() -> None:
    """mirror's checks are numpy input's, made when the graph is built."""
    with pytest.raises(ValueError, match="mirror needs square matrices, got 2 x 3"):
        trilu.unpack(da.ones(5, chunks=2), 2, 3, mirror=True)
    with pytest.raises(TypeError, match="mirror='conj' needs numbers"):
        trilu.unpack(da.from_array(np.array(["a", "b", "c"]), chunks=2), mirror="conj")
    with pytest.raises(ValueError, match="mirror must be True, False or 'conj'"):
        trilu.unpack(da.ones(3, chunks=2), mirror="yes")


@pytest.mark.parametrize("upper", [True, False])
def test_pack_reads_only_the_blocks_the_triangle_meets(upper: bool) -> None:
    x = _recording_input(4, 3)
    expected = x.compute()
    _reads.clear()
    r = trilu.pack(x, 1, upper=upper)
    assert _reads == []  # nothing computed at call time
    row_of = (np.triu_indices if upper else np.tril_indices)(12, 1)[0]
    segments = np.diff(np.searchsorted(row_of, [0, 3, 6, 9, 12]))
    assert r.chunks == (tuple(segments.tolist()),)  # each row block's elements
    with dask.config.set(scheduler="threads"):
        got = r.compute()
    assert_same(got, trilu.pack(expected, 1, upper=upper))
    # 3 x 3 blocks, k=1: block (i, j) meets the triangle where j >= i (upper)
    # or j <= i + 1 (lower)
    wanted = {
        (i, j) for i in range(4) for j in range(4) if (j >= i if upper else j <= i + 1)
    }
    assert sorted(_reads) == sorted(wanted)


def _packed_load(q: int, size: int) -> np.ndarray:
    """A chunk of a packed axis that notes it was read."""
    with _reads_lock:
        _reads.append((q, 0))
    return np.arange(q * 100.0, q * 100.0 + size)


@pytest.mark.parametrize("upper", [True, False])
def test_unpack_reads_each_chunk_for_its_rows_only(upper: bool) -> None:
    """Each block reads the chunks of the packed axis its rows' segment
    overlaps; a block the triangle misses reads none (no dependency)."""
    n, sizes = 9, (10, 5, 20, 10)  # 45: a 9 x 9 triangle
    name = "recorded-packed"
    dsk = {(name, q): Task((name, q), _packed_load, q, c) for q, c in enumerate(sizes)}
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[])
    v = da.Array(graph, name, (sizes,), meta=np.empty((0,)))
    _reads.clear()
    r = trilu.unpack(v, upper=upper)
    assert _reads == []  # nothing computed at call time
    assert r.chunks[0] == r.chunks[1]
    expected = trilu.unpack(v.compute(), upper=upper)
    kept = trilu.unpack(np.ones(45, bool), upper=upper)
    row_of = (np.triu_indices if upper else np.tril_indices)(n)[0]  # element's row
    chunk_of = np.repeat(np.arange(len(sizes)), sizes)  # element's chunk
    ends = np.cumsum((0, *r.chunks[0]))
    layer = _layer(r)
    for i, j in itertools.product(range(len(r.chunks[0])), repeat=2):
        rows, cols = slice(ends[i], ends[i + 1]), slice(ends[j], ends[j + 1])
        _reads.clear()
        assert_same(
            dask.compute(r.blocks[i, j], scheduler="sync")[0], expected[rows, cols]
        )
        met = kept[rows, cols].any()
        mine = set(chunk_of[(row_of >= ends[i]) & (row_of < ends[i + 1])].tolist())
        assert {q for q, _ in _reads} == (mine if met else set())
        assert bool(layer[(r.name, i, j)].dependencies) == met
    assert_same(r.compute(), expected)


def test_pack_and_unpack_errors_at_the_call() -> None:
    """As for numpy input, before anything is computed."""
    x = _recording_input(2, 2)
    _reads.clear()
    with pytest.raises(ValueError, match="pack needs matrices"):
        trilu.pack(da.ones(4, chunks=2))
    with pytest.raises(ValueError, match="v's last axis has 7 elements"):
        trilu.unpack(da.ones(7, chunks=3))
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        trilu.unpack(da.ones(6, chunks=3)[da.ones(6, chunks=3) > 0])
    with pytest.raises(TypeError, match="out="):
        trilu.pack(x, out=np.empty(10))
    with pytest.raises(OverflowError):
        trilu.unpack(da.ones(6, chunks=3, dtype=np.int8), fill=300)
    assert _reads == []
    for name in ("triu_indices_from", "tril_indices_from"):
        with pytest.raises(
            TypeError, match=rf"^{name} takes a numpy array, got a dask"
        ):
            getattr(trilu, name)(x)


def test_pack_and_unpack_unknown_batch_size() -> None:
    a = sample((4, 5, 6))
    x = da.from_array(a, chunks=(2, 2, 4))
    keep = da.from_array(np.array([True, False, True, True]), chunks=2)
    batch_unknown = x[keep]
    for k in (-2, 1, 9):
        assert_same(trilu.pack(batch_unknown, k).compute(), trilu.pack(a[[0, 2, 3]], k))
        square = da.from_array(a[..., :5], chunks=2)[keep]
        v = trilu.pack(a[..., :5], k, order="F")
        vx = da.from_array(v, chunks=(2, 3))[keep]
        got = trilu.unpack(vx, 5, 5, k, order="F", mirror=True).compute()
        assert_same(got, trilu.unpack(v[[0, 2, 3]], 5, 5, k, order="F", mirror=True))
        assert_same(trilu.pack(square, k, order="F").compute(), v[[0, 2, 3]])
        v = trilu.pack(a, k, upper=False)
        vx = da.from_array(v, chunks=(2, 3))[keep]
        got = trilu.unpack(vx, 5, 6, k, upper=False, fill=2.0).compute()
        assert_same(got, trilu.unpack(v[[0, 2, 3]], 5, 6, k, upper=False, fill=2.0))


def test_pack_and_unpack_graphs_are_named_and_pickle() -> None:
    a = sample((5, 5))
    x = da.from_array(a, chunks=2)
    v = da.from_array(trilu.pack(a), chunks=4)
    assert trilu.pack(x, 1).name == trilu.pack(x, 1).name
    made = (
        trilu.pack(x),
        trilu.pack(x, 1),
        trilu.pack(x, upper=False),
        trilu.unpack(v),
        trilu.unpack(v, fill=1.0),
        trilu.unpack(v, 5, 6, 1),
    )
    assert len({r.name for r in made}) == len(made)
    for r in made:
        layer = _layer(r)
        assert pickle.loads(pickle.dumps(layer)).keys() == layer.keys()


# --- other libraries' chunks ------------------------------------------------------------


class Chunk:
    """Another library's chunk: numpy's triu and tril reach it through
    ``__array_function__``, and answer with the calls made."""

    def __init__(self, calls: tuple = ()) -> None:
        self.calls = calls

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return Chunk((*self.calls, (func.__name__, args[1])))


def test_other_librarys_chunks_band_through_their_triu_and_tril() -> None:
    assert _dask._cut(Chunk(), 1, None, None, False).calls == (("triu", 1),)
    assert _dask._cut(Chunk(), None, 2, None, False).calls == (("tril", 2),)
    both = _dask._cut(Chunk(), -1, 2, None, False).calls
    assert both == (("tril", 2), ("triu", -1))
    with pytest.raises(TypeError, match=r"^fill= of a dask array needs numpy chunks"):
        _dask._cut(Chunk(), 1, None, -1.0, False)
    with pytest.raises(TypeError, match=r"^mirror of a dask array needs numpy chunks"):
        _dask._diagonal(Chunk(), True, False)


class Meta:
    """The meta of a dask array of another library's chunks."""

    ndim = 2
    shape = (0, 0)
    dtype = np.dtype(np.float64)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return NotImplemented

    def __getitem__(self, index: Any) -> Meta:
        return self

    def astype(self, *_: Any, **__: Any) -> Meta:
        return self


def test_other_librarys_chunks_refused_at_the_call_for_fill_and_mirror() -> None:
    x = da.ones((4, 4), chunks=2)
    other = da.Array(x.dask, x.name, x.chunks, meta=Meta())
    with pytest.raises(TypeError, match=r"^fill= of a dask array needs numpy chunks"):
        trilu.triu(other, fill=2.0)
    with pytest.raises(TypeError, match=r"^mirror of a dask array needs numpy chunks"):
        trilu.mirror(other)
    assert type(trilu.band(other, -1, 1)._meta) is Meta  # their triu and tril


# --- storing and distributing ------------------------------------------------------


@pytest.mark.parametrize("lock", [True, False])
def test_store_into_preallocated_array(lock: bool) -> None:
    a = np.random.default_rng(1).random((60, 50))
    x = da.from_array(a, chunks=(20, (10, 25, 15)))
    for ours, ref in ((trilu.triu, np.triu), (trilu.tril, np.tril)):
        for k in (-30, -7, 0, 12, 60):
            target = np.full_like(a, 7.0)
            da.store(ours(x, k), target, lock=lock, scheduler="threads")
            assert_same(target, ref(a, k))


@contextlib.contextmanager
def _local_cluster(distributed: Any, **workers: int) -> Iterator[Any]:
    """A client of a cluster of worker processes, shut down within bounded
    time: on a loaded machine a worker can outlast the default close."""
    cluster = distributed.LocalCluster(
        processes=True,
        # None still serves the scheduler's HTTP routes on 8787, which two
        # test runs at once then fight over: ":0" takes any free port.
        dashboard_address=":0",
        worker_dashboard_address=None,
        **workers,
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close(timeout=60)
        cluster.close(timeout=60)


def test_distributed_local_cluster_with_processes() -> None:
    distributed = pytest.importorskip("distributed")
    a = np.random.default_rng(2).random((3, 40, 50))
    x = da.from_array(a, chunks=(2, 15, 20))
    b = a[:, :, :40] + 1j * a[:, :, 10:]
    y = da.from_array(b, chunks=(2, 15, 20))  # mirror rechunks the columns
    with _local_cluster(distributed, n_workers=2, threads_per_worker=1) as client:
        results = client.compute(
            [
                trilu.triu(x, 3),
                trilu.tril(x, -4),
                trilu.trilu(x, 50, False),
                trilu.band(x, -9, 12, fill=-np.inf),
                trilu.mirror(y, upper=False, conj=True),
                trilu.unpack(trilu.pack(x, 3), 40, 50, 3, fill=-1.0),
            ],
            sync=True,
        )
    assert_same(results[0], np.triu(a, 3))
    assert_same(results[1], np.tril(a, -4))
    assert_same(results[2], a)
    assert_same(results[3], trilu.band(a, -9, 12, fill=-np.inf))
    assert_same(results[4], trilu.mirror(b, upper=False, conj=True))
    assert_same(results[5], trilu.triu(a, 3, fill=-1.0))


# --- threads: one per block unless chosen -------------------------------------------


class Probe:
    """A chunk that answers trilu's triu with the threads a large kernel call
    would get on the thread running the block (through ``__array_function__``,
    as any other library's chunk), where a numpy chunk runs the kernel."""

    def __init__(self, block: Any) -> None:
        self.shape = block.shape

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        from trilu import _kernel  # noqa: PLC0415

        large = np.empty((2048, 2048))  # enough bytes for every thread
        return np.full(self.shape, _kernel.explain(large, 0, True)["threads"])


def _probe() -> Any:
    """triu of 8 blocks, each cut by the diagonal, as probes: their counts."""
    x = da.zeros((8, 64, 64), chunks=(1, 64, 64)).map_blocks(
        Probe, meta=np.empty((0, 0, 0))
    )
    return trilu.triu(x)


def _counts(result: np.ndarray) -> list[int]:
    return sorted(set(result.ravel().tolist()))


# In a fresh interpreter, so that no other test's count is in force.
THREADED = """
    import numpy as np, threadpoolctl, trilu
    from trilu import _kernel
    from test_dask import _counts, _probe

    def report(label):
        got = _counts(_probe().compute(scheduler="threads", num_workers=4))
        here = _kernel.explain(np.empty((2048, 2048)), 0, True)["threads"]
        print(label, got, trilu.get_num_threads(), here)

    report("default")
    trilu.set_num_threads(3)
    report("set")
    trilu.set_num_threads()
    report("restored")
    with threadpoolctl.threadpool_limits(limits=2):
        report("limit")
    report("after")
"""


def test_blocks_run_on_one_thread_unless_the_count_is_chosen() -> None:
    """Under the threaded scheduler each block's kernel call gets one thread,
    unless the count was chosen for trilu (set_num_threads, threadpoolctl);
    the process's count, and other threads' calls, are left alone."""
    pytest.importorskip("threadpoolctl")
    tests = str(Path(__file__).resolve().parent)
    code = f"import sys; sys.path.insert(0, {tests!r})\n" + textwrap.dedent(THREADED)
    proc = run_python(code, OMP_NUM_THREADS="4", TRILU_NUM_THREADS=None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "default [1] 4 4",
        "set [3] 3 3",
        "restored [1] 4 4",
        "limit [2] 2 2",
        "after [1] 4 4",
    ]
    chosen = run_python(code, OMP_NUM_THREADS="4", TRILU_NUM_THREADS="3")
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout.splitlines()[0] == "default [3] 3 3"


def test_distributed_worker_one_thread_unless_chosen(monkeypatch) -> None:
    """A dask.distributed worker sets OMP_NUM_THREADS=1: trilu takes it, and
    its blocks run on one thread; a count set in the worker is honoured."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.delenv("TRILU_NUM_THREADS", raising=False)  # the workers inherit
    with _local_cluster(distributed, n_workers=1, threads_per_worker=2) as client:
        environ = client.run(lambda: __import__("os").environ.get("OMP_NUM_THREADS"))
        assert list(environ.values()) == ["1"]
        assert list(client.run(trilu.get_num_threads).values()) == [1]
        assert _counts(client.compute(_probe(), sync=True)) == [1]
        client.run(trilu.set_num_threads, 2)
        assert _counts(client.compute(_probe(), sync=True)) == [2]


# --- who handles what -------------------------------------------------------------


class FakeArray:
    """Another library's array: trilu must call numpy.triu/tril on it."""

    calls: ClassVar[list[tuple[Any, tuple, dict]]] = []

    def __array_function__(
        self, func: Any, types: Any, args: tuple, kwargs: dict
    ) -> Any:
        FakeArray.calls.append((func, args, kwargs))
        return "handled by FakeArray"


@pytest.mark.parametrize(
    ("ours", "numpy_func", "upper"),
    [(trilu.triu, np.triu, True), (trilu.tril, np.tril, False)],
)
def test_other_array_function_arrays_go_to_numpy(
    ours: Callable, numpy_func: Callable, upper: bool
) -> None:
    fake = FakeArray()
    FakeArray.calls.clear()
    assert ours(fake, 2) == "handled by FakeArray"
    assert FakeArray.calls == [(numpy_func, (fake, 2), {})]
    FakeArray.calls.clear()
    assert trilu.trilu(fake, -1, upper) == "handled by FakeArray"
    assert FakeArray.calls == [(numpy_func, (fake, -1), {})]
    with pytest.raises(TypeError, match="out="):
        ours(fake, out=np.empty((2, 2)))


# Whether this dask can switch on array expressions, asked in a fresh process
# (the setting is read once, at dask.array's import): it prints the type of
# array it makes, or why it cannot make one. dask before 2025.1 takes them from
# the separate dask_expr package, which Debian does not ship.
_EXPR_PROBE = (
    "import dask\n"
    "dask.config.set({'array.query-planning': True})\n"
    "try:\n"
    "    import dask.array as da\n"
    "    print(type(da.ones(2)).__module__)\n"
    "except ImportError as e:\n"
    "    print('ImportError: ' + str(e).splitlines()[0])\n"
)


def _array_expressions_unavailable() -> str | None:
    """Why this dask has no array expressions, or None when it has them."""
    proc = run_python(_EXPR_PROBE)
    proc.check_returncode()
    made = proc.stdout.strip()
    if made.startswith("ImportError"):
        return f"array.query-planning needs what this dask lacks: {made}"
    if "expr" not in made:
        return f"this dask ignores array.query-planning (it made a {made} array)"
    return None


def test_array_expressions() -> None:
    """dask's opt-in array expressions ("array.query-planning") get one back,
    from band with a fill and from mirror (rechunked first) too."""
    why = _array_expressions_unavailable()
    if why is not None:
        pytest.skip(why)
    code = (
        "import numpy as np, dask, trilu\n"
        "dask.config.set({'array.query-planning': True})\n"
        "import dask.array as da\n"
        "a = np.arange(60.0).reshape(2, 5, 6)\n"
        "x = da.from_array(a, chunks=(1, 2, 4))\n"
        "r = trilu.triu(x, 1)\n"
        "assert type(r) is type(x) and r.chunks == x.chunks, type(r)\n"
        "assert np.array_equal(r.compute(), np.triu(a, 1))\n"
        "s = (trilu.tril(x + 1, -1) * 2).sum().compute()\n"
        "assert s == (np.tril(a + 1, -1) * 2).sum(), s\n"
        "r = trilu.band(x, -1, 2, fill=-np.inf)\n"
        "assert type(r) is type(x) and r.chunks == x.chunks, type(r)\n"
        "assert np.array_equal(r.compute(), trilu.band(a, -1, 2, fill=-np.inf))\n"
        "b = a[:, :, :5] + 1j * a[:, :, 1:]\n"
        "y = da.from_array(b, chunks=(1, 2, 4))\n"
        "r = trilu.mirror(y, conj=True)\n"
        "assert type(r) is type(x) and r.chunks == ((1, 1), (2, 2, 1), (2, 2, 1))\n"
        "assert np.array_equal(r.compute(), trilu.mirror(b, conj=True))\n"
        "assert (trilu.mirror(y) + 1).sum().compute() == (trilu.mirror(b) + 1).sum()\n"
        "p = trilu.pack(x, 1)\n"
        "assert type(p) is type(x) and p.chunks == ((1, 1), (9, 5, 1)), p.chunks\n"
        "assert np.array_equal(p.compute(), trilu.pack(a, 1))\n"
        "u = trilu.unpack(p, 5, 6, 1, fill=-1.0)  # (a layer of strips too)\n"
        "assert type(u) is type(x), type(u)\n"
        "named = [key for key in dict(u.__dask_graph__()) if key[0] == u.name]\n"
        "assert {len(key) for key in named} == {u.ndim + 1}, named  # blocks only\n"
        "assert np.array_equal(u.compute(), trilu.triu(a, 1, fill=-1.0))\n"
        "r = trilu.triu(x.rechunk((1, 3, 3)), 1)  # keys renamed when lowered\n"
        "assert np.array_equal(r.compute(), np.triu(a, 1))\n"
    )
    subprocess.run(
        [sys.executable, "-W", "error", "-c", code], timeout=TIMEOUT, check=True
    )
