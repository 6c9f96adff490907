"""Property tests: random dtypes, shapes, views, k and out= against the oracles.

triu/tril must equal numpy bit for bit; trilu must equal the ONNX spec's
per-element definition on the operator's types.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from _cases import (
    STRING,
    as_native,
    assert_same,
    ml_dtypes,
    numpy_oracle,
    onnx_zero,
    snapshot,
    spec_oracle,
    swapped,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import trilu

SETTINGS = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

SHAPES = hnp.array_shapes(min_dims=2, max_dims=4, min_side=0, max_side=6)

NUMPY_DTYPES = st.one_of(
    hnp.scalar_dtypes(),
    hnp.byte_string_dtypes(max_len=4),
    hnp.unicode_string_dtypes(max_len=4),
    st.just(np.dtype(np.longdouble)),
    st.just(np.dtype(np.clongdouble)),
    st.just(np.dtype("V3")),
)

ONNX_NUMERIC = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(),
    hnp.unsigned_integer_dtypes(),
    hnp.floating_dtypes(),
    hnp.complex_number_dtypes(),
    hnp.byte_string_dtypes(max_len=4),
    hnp.unicode_string_dtypes(max_len=4),
)

K = st.one_of(
    st.integers(-8, 8),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, 2**64 - 1, -(2**64)]),
)


@st.composite
def base_arrays(draw: Any, dtypes: Any, shape: Any = SHAPES) -> np.ndarray:
    """An array of a drawn dtype, including V3, bfloat16 and object/str arrays."""
    dtype = draw(dtypes)
    dims = draw(shape)
    if dtype == np.dtype("V3"):
        raw = draw(hnp.arrays(np.uint8, (*dims, 3)))
        return raw.view("V3")[..., 0]
    if dtype.type.__name__ == "bfloat16":
        return draw(hnp.arrays(np.uint16, dims)).view(ml_dtypes.bfloat16)
    if dtype == np.dtype(object):
        elements = st.one_of(st.text(max_size=3), st.integers(), st.none())
        return draw(hnp.arrays(object, dims, elements=elements))
    if dtype.kind == "T":
        text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
        return draw(hnp.arrays(object, dims, elements=text)).astype(dtype)
    if dtype.type in (np.longdouble, np.clongdouble):
        # random bits, padding included
        raw = draw(hnp.arrays(np.uint8, (*dims, dtype.itemsize)))
        return raw.view(dtype)[..., 0]
    return draw(hnp.arrays(dtype, dims))


@st.composite
def views(draw: Any, dtypes: Any) -> np.ndarray:
    """A drawn array seen through a random slicing, axis order and byte order."""
    x = draw(base_arrays(dtypes))
    steps = draw(
        st.lists(st.sampled_from([1, 1, 2, -1, -2]), min_size=x.ndim, max_size=x.ndim)
    )
    x = x[tuple(slice(None, None, s) for s in steps)]
    if draw(st.booleans()):
        x = x.swapaxes(-1, -2)
    if x.ndim > 2 and draw(st.booleans()):
        x = np.moveaxis(x, 0, draw(st.integers(0, x.ndim - 1)))
    if draw(st.booleans()):
        x = np.asfortranarray(x)
    other = swapped(x.dtype)
    if other is not None and draw(st.booleans()):
        x = x.astype(other)
    if draw(st.booleans()):
        x.flags.writeable = False
    return x


def _run(fn: Any, x: np.ndarray, k: int, want: np.ndarray, mode: str, data) -> None:
    """fn(x, k) with out= in `mode`, checked against want; x unchanged unless
    it is out."""
    before = snapshot(x)
    if mode == "none":
        assert_same(fn(x, k), want)
    elif mode == "fresh":
        order = data.draw(st.sampled_from("CF"))
        out = np.empty(x.shape, want.dtype, order=order)
        assert fn(x, k, out=out) is out
        assert_same(out, want)
    else:  # in place, on a writable copy with x's strides
        y = x.copy(order="K")
        assert fn(y, k, out=y) is y
        assert_same(as_native(y, want.dtype), want)
    assert snapshot(x) == before


OUT_MODES = st.sampled_from(["none", "fresh", "inplace"])
ONNX_DTYPES = st.one_of(
    ONNX_NUMERIC,
    st.sampled_from(
        [np.dtype(object)]
        + ([np.dtype(ml_dtypes.bfloat16)] if ml_dtypes is not None else [])
        + ([STRING] if STRING is not None else [])
    ),
)


@SETTINGS
@given(views(NUMPY_DTYPES), K, st.booleans(), OUT_MODES, st.data())
def test_triu_tril_match_numpy(x: np.ndarray, k: int, upper: bool, mode: str, data):
    """triu/tril of any view of any dtype: numpy's answer, bit for bit."""
    fn = trilu.triu if upper else trilu.tril
    _run(fn, x, k, numpy_oracle(x, k, upper), mode, data)


@SETTINGS
@given(views(ONNX_DTYPES), K, st.booleans(), OUT_MODES, st.data())
def test_trilu_matches_spec(x: np.ndarray, k: int, upper: bool, mode: str, data):
    """trilu on the ONNX types: the spec's element-wise answer ("" for strings)."""
    want = spec_oracle(x, k, upper, onnx_zero(x.dtype))

    def fn(m: np.ndarray, kk: int, **kw: Any) -> Any:
        k_arg = np.array(kk) if -(2**63) <= kk < 2**63 else kk
        return trilu.trilu(m, k_arg, upper, **kw)

    _run(fn, x, k, want, mode, data)


@SETTINGS
@given(
    base_arrays(
        st.just(np.dtype(np.int32)),
        hnp.array_shapes(min_dims=1, max_dims=1, min_side=0, max_side=8),
    ),
    K,
    st.booleans(),
)
def test_1d_matches_numpy(x: np.ndarray, k: int, upper: bool) -> None:
    """A 1-D input gives numpy's N x N answer."""
    fn = trilu.triu if upper else trilu.tril
    assert_same(fn(x, k), numpy_oracle(x, k, upper))


@SETTINGS
@given(views(st.just(np.dtype(np.float64))), K)
def test_triu_plus_strict_tril_is_input(x: np.ndarray, k: int) -> None:
    """triu(x, k) and tril(x, k - 1) split x: disjoint supports, sum is x."""
    k = max(-(10**6), min(10**6, k))
    hi = trilu.triu(x, k)
    lo = trilu.tril(x, k - 1)
    xs = np.ascontiguousarray(x).astype(np.float64).view(np.uint64)
    his = hi.view(np.uint64)
    los = lo.view(np.uint64)
    assert not np.any((his != 0) & (los != 0))
    np.testing.assert_array_equal(his | los, xs)
