"""pack and unpack: a triangle as a vector, and back, as numpy indexes it.

``pack(m, k)`` is ``m[..., r, c]`` with ``r, c = np.triu_indices(N, k, M)``
(``tril_indices`` for ``upper=False``), bit for bit and in ``m``'s dtype;
``unpack(v, n, m, k)`` is ``o = np.full(..., fill or zero); o[..., r, c] = v``,
with the square ``n`` found from ``v.shape[-1]`` when omitted. Every dtype x
layout x k, out= in every layout and byte order (and overlapping the input),
1 and 4 threads, the round trip to triu/tril, and the errors.
"""

from __future__ import annotations

import itertools
import math
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
    MEMORY_VARIANTS,
    OUT_MODES,
    as_native,
    assert_same,
    check_out,
    count,
    dtype_params,
    every,
    fill_cycle,
    fills,
    iter_k_upper,
    k_int,
    layout,
    layout_ok,
    make,
    memory_variant,
    numpy_oracle,
    pack_oracle,
    snapshot,
    triangle_oracle,
    unpack_oracle,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu

BATCH_SHAPE = (2, 4, 5)


# --- the count of a triangle -------------------------------------------------------


def square_n(p: int, k: int, upper: bool) -> int | None:
    """The one n whose n x n triangle holds p elements, None if none or two
    (k small: the count grows with n, by 1 or more past n = |k| + 1)."""
    assert abs(k) <= 50
    found = [n for n in range(p + abs(k) + 4) if count(n, n, k, upper) == p]
    return found[0] if len(found) == 1 else None


# --- pack: every dtype x layout x k -------------------------------------------------


# The kernel walks matrices of short rows and few elements through a table of
# offsets, others run by run: both, for every dtype and layout.
MATRIX_SHAPES = {"short-rows": BATCH_SHAPE, "long-rows": (2, 3, 130)}


@pytest.mark.parametrize("shape", list(MATRIX_SHAPES.values()), ids=list(MATRIX_SHAPES))
@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_pack_dtype_layout(dtype: np.dtype, shape: tuple[int, ...], rng) -> None:
    """pack(x, k, upper) is x[..., r, c], dtype (byte order) included, for every
    dtype and layout, k from far below to far above; unpack of it is
    triu/tril(x, k) (with the fill, where given); x unchanged."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        x = layout(name, dtype, shape, rng)
        before = snapshot(x)
        rows, cols = x.shape[-2:]  # "step" has a column more
        for n, (_, k, upper) in enumerate(iter_k_upper()):
            got = trilu.pack(x, k, upper=upper)
            assert_same(got, pack_oracle(x, k, upper))
            if n % 2:  # the round trip, with the fill where given
                fill = cycle[n % len(cycle)]
                back = trilu.unpack(got, rows, cols, k, upper=upper, fill=fill)
                exp = triangle_oracle(x, k, upper, fill)
                assert_same(as_native(back, exp.dtype), exp)
        assert snapshot(x) == before, "the input was modified"

    every([n for n in LAYOUTS if layout_ok(n, dtype, len(shape))], check)


SHAPES = [(1, 6), (6, 1), (1, 1), (0, 3), (3, 0), (0, 0), (2, 0, 3), (0, 3, 3),
          (2, 3, 1, 4), (2, 2, 2, 3, 2), (3, 7, 2)]  # fmt: skip


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_pack_shapes(shape: tuple[int, ...], rng) -> None:
    """Thin, empty and many-batch-dim shapes: shape m.shape[:-2] + (P,)."""
    for dtype in (np.int16, np.dtype("U3"), np.dtype(object)):
        x = make(dtype, shape, rng)
        for _, k, upper in iter_k_upper():
            got = trilu.pack(x, k, upper=upper)
            assert got.shape == (*shape[:-2], count(*shape[-2:], k, upper))
            assert_same(got, pack_oracle(x, k, upper))


def test_pack_k_forms(rng) -> None:
    """k takes numpy's forms: numpy ints, integral floats, 0-d arrays, beyond
    int64; upper takes numpy's bool."""
    x = make(np.float64, (3, 6, 7), rng)
    forms = [*K_VALUES.values(), 2.0, np.array(-2), 2**64, -(2**64)]
    for k in forms:
        for upper in (True, False, np.True_, np.False_):
            assert_same(trilu.pack(x, k, upper=upper), pack_oracle(x, k, bool(upper)))


def test_pack_list_input() -> None:
    """A nested list converts as numpy converts it."""
    data = [[1, 2, 3], [4, 5, 6]]
    assert_same(trilu.pack(data, 1), pack_oracle(np.array(data), 1, True))


def test_pack_objects_are_the_same_objects(rng) -> None:
    """Object elements are the input's own objects (references, not copies)."""
    x = make(object, (2, 4, 4), rng)
    got = trilu.pack(x, -1, upper=False)
    r, c = np.tril_indices(4, -1)
    for b in range(2):
        for i, (rr, cc) in enumerate(zip(r, c, strict=True)):
            assert got[b, i] is x[b, rr, cc]


# --- pack: out= ---------------------------------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_pack_out(dtype: np.dtype, rng) -> None:
    """out= in each layout and byte order gets m[..., r, c] and is returned;
    nothing of its buffer beyond it is written; the input is unchanged."""
    x = make(dtype, (2, 3, 4, 5), rng)
    cases = [(0, True), (-1, False), (2, True), (10**30, True), (-(10**30), False)]

    def check(mode: str) -> None:
        for k, upper in cases:
            exp = pack_oracle(x, k, upper)
            check_out(partial(trilu.pack, x, k, upper=upper), x, exp, mode, rng)

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_pack_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= in the input's own memory (from its first byte, or within it): the
    input's elements as they were."""
    cases = [(0, True, 5), (-1, False, 5), (1, True, 0), (-3, True, 0)]
    for k, upper, start in cases:
        buf = make(dtype, (3, 4, 4), rng)
        x = buf[:2]
        p = count(4, 4, k, upper)
        out = buf.reshape(-1)[start : start + 2 * p].reshape(2, p)
        exp = pack_oracle(x.copy(), k, upper)
        assert trilu.pack(x, k, upper=upper, out=out) is out
        assert_same(as_native(out, exp.dtype), exp)


# --- unpack: every dtype x vector layout x k --------------------------------------------

VLAYOUTS = ["C", "step", "reversed", "F", "batch_step", "bcast_batch", "bcast_elem",
            *MEMORY_VARIANTS]  # fmt: skip


def vectors(name: str, dtype: Any, shape: tuple[int, ...], rng) -> np.ndarray | None:
    """Packed vectors of `shape` (batch first) in layout `name`, or None."""
    dtype = np.dtype(dtype)
    *b, p = shape
    if name == "C":
        return make(dtype, shape, rng)
    if name == "step":
        return make(dtype, (*b, 2 * p + 1), rng)[..., 1::2]
    if name == "reversed":
        return make(dtype, shape, rng)[..., ::-1]
    if name == "F":
        return np.asfortranarray(make(dtype, shape, rng))
    if name == "batch_step":
        return make(dtype, (2 * b[0], *b[1:], p), rng)[::2]
    if name == "bcast_batch":
        return np.broadcast_to(make(dtype, (1,) * len(b) + (p,), rng), shape)
    if name == "bcast_elem":
        return np.broadcast_to(make(dtype, (*b, 1), rng), shape)
    return memory_variant(name, dtype, shape, rng)


# short rows, few elements (a table of offsets), then long rows and many
# elements (run by run)
MATRIX_SIDES = [(4, 5), (5, 4), (3, 3), (1, 6), (0, 2), (3, 130), (700, 3)]


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_unpack_dtype_layout(dtype: np.dtype, rng) -> None:
    """unpack(v, n, m, k, upper, fill) is o[..., r, c] = v over o full of fill
    (zero when None), in v's dtype, for every dtype and vector layout, k from
    far below to far above, square and not; v unchanged."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        for i, (_, k, upper) in enumerate(iter_k_upper()):
            n, m = MATRIX_SIDES[i % len(MATRIX_SIDES)]
            v = vectors(name, dtype, (2, count(n, m, k, upper)), rng)
            if v is None:
                return
            before = snapshot(v)
            fill = cycle[i % len(cycle)]
            exp = unpack_oracle(v, n, m, k, upper, fill)
            assert_same(trilu.unpack(v, n, m, k, upper=upper, fill=fill), exp)
            if n == m:  # the same, n found from v's length (where one n fits)
                if abs(k_int(k)) <= 2 and square_n(v.shape[-1], k_int(k), upper) == n:
                    assert_same(trilu.unpack(v, k=k, upper=upper, fill=fill), exp)
                assert_same(trilu.unpack(v, n, k=k, upper=upper, fill=fill), exp)
            assert snapshot(v) == before, "v was modified"

    every(VLAYOUTS, check)


def test_unpack_batch_shapes(rng) -> None:
    """v of 1 to 4 dims (empty batches too): shape v.shape[:-1] + (n, m)."""
    for batch in [(), (3,), (0,), (2, 3), (1, 2, 2)]:
        for n, m, k, upper in [(4, 4, 0, True), (3, 5, -1, False), (0, 0, 0, True)]:
            v = make(np.float32, (*batch, count(n, m, k, upper)), rng)
            got = trilu.unpack(v, n, m, k, upper=upper, fill=-1.0)
            assert got.shape == (*batch, n, m)
            assert_same(got, unpack_oracle(v, n, m, k, upper, -1.0))


def test_unpack_list_input() -> None:
    """A list converts as numpy converts it."""
    assert_same(
        trilu.unpack([1, 2, 3]), unpack_oracle(np.array([1, 2, 3]), 2, 2, 0, True)
    )


def test_unpack_object_fill_and_elements_are_the_objects(rng) -> None:
    """Object results hold v's own objects and the fill object itself."""
    v = make(object, (6,), rng)
    fill = []
    got = trilu.unpack(v, k=1, fill=fill)
    r, c = np.triu_indices(4, 1)
    for i, (rr, cc) in enumerate(zip(r, c, strict=True)):
        assert got[rr, cc] is v[i]
    for rr, cc in zip(*np.tril_indices(4), strict=True):
        assert got[rr, cc] is fill


def test_unpack_is_squareform() -> None:
    """k=1 is scipy's squareform: its upper triangle, n found from the length."""
    distance = pytest.importorskip("scipy.spatial.distance")
    rng = np.random.default_rng(4)
    for n in range(2, 8):  # P = 0 fits n = 0 and n = 1
        v = rng.random(n * (n - 1) // 2)
        want = np.triu(distance.squareform(v), 1)
        assert_same(trilu.unpack(v, k=1), want)
        assert_same(trilu.pack(distance.squareform(v), 1), v)


def test_unpack_finds_n() -> None:
    """n omitted: the one square n whose triangle holds P elements, for each
    k and P; a P that fits no n, or two, is a ValueError naming P."""
    for k, upper in itertools.product([-3, -1, 0, 1, 2, 5], (True, False)):
        for p in range(40):
            v = np.arange(p, dtype=np.int64)
            n = square_n(p, k, upper)
            if n is not None:
                want = unpack_oracle(v, n, n, k, upper)
                assert_same(trilu.unpack(v, k=k, upper=upper), want)
            else:
                with pytest.raises(ValueError, match=rf"\b{p} elements\b.*give n"):
                    trilu.unpack(v, k=k, upper=upper)


@pytest.mark.parametrize("big", [10**30, 2**63, BIG_K])
def test_unpack_finds_n_far_out_k(big: int) -> None:
    """A k beyond every matrix: a side that keeps everything gives n = sqrt(P)
    (P a square), one that keeps nothing has no unique n for P = 0."""
    for k, upper in [(-big, True), (big, False)]:  # everything kept: P = n * n
        for p in range(30):
            v = np.arange(p, dtype=np.int16)
            n = math.isqrt(p)
            if n * n == p:
                assert_same(
                    trilu.unpack(v, k=k, upper=upper), unpack_oracle(v, n, n, k, upper)
                )
            else:
                with pytest.raises(ValueError, match=rf"\b{p} elements\b"):
                    trilu.unpack(v, k=k, upper=upper)
    for k, upper in [(big, True), (-big, False)]:  # nothing kept: n = 0, 1, ...
        with pytest.raises(ValueError, match=r"\b0 elements\b.*\bn=0 and n=1\b"):
            trilu.unpack(np.zeros(0), k=k, upper=upper)
        v = np.zeros((2, 0), np.float32)
        assert_same(
            trilu.unpack(v, 3, 4, k, upper=upper), np.zeros((2, 3, 4), np.float32)
        )


COUNT_ERRORS = [
    # v's length, call's keywords, what the message must say (P and the count)
    (2, {}, r"\b2 elements\b.*\bn=1 has 1\b.*\bn=2 has 3\b"),
    (0, {"k": 1}, r"\b0 elements\b.*\bn=0 and n=1\b"),
    (5, {"k": 0, "upper": False}, r"\b5 elements\b.*\bn=2 has 3\b.*\bn=3 has 6\b"),
    (3, {"k": 10**30}, rf"\b3 elements\b.*\bk={10**30}\b.*\bhas 0\b"),  # no n
    (3, {"n": 3}, r"\b3 elements\b.*\b3 x 3\b.*\bhas 6\b"),
    (
        5,
        {"n": 2, "m": 4, "k": -1, "upper": False},
        r"\b5 elements\b.*\b2 x 4\b.*\bhas 1\b",
    ),
    (1, {"n": 0}, r"\b1 elements\b.*\b0 x 0\b.*\bhas 0\b"),
]


@pytest.mark.parametrize(("p", "kw", "match"), COUNT_ERRORS)
def test_unpack_count_errors_name_both_counts(
    p: int, kw: dict[str, Any], match: str
) -> None:
    """A length that fits no n, two n, or not the given n and m: ValueError
    naming v's length and the triangle's; out= untouched."""
    v = np.arange(p, dtype=np.float64)
    out = np.full((3, 3), 7.0)
    with pytest.raises(ValueError, match=match):
        trilu.unpack(v, **kw)
    with pytest.raises(ValueError, match=match):
        trilu.unpack(v, **kw, out=out)
    assert_same(out, np.full((3, 3), 7.0))


# --- unpack: out= --------------------------------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_unpack_out(dtype: np.dtype, rng) -> None:
    """out= in each layout and byte order is filled whole (fill, then v) and
    returned; nothing of its buffer beyond it is written; v is unchanged."""
    cycle = fill_cycle(dtype)
    cases = [(4, 4, 0, True), (3, 5, -1, False), (5, 3, 2, True), (4, 4, 10**30, True)]

    def check(mode: str) -> None:
        for i, (n, m, k, upper) in enumerate(cases):
            v = make(dtype, (2, 3, count(n, m, k, upper)), rng)
            fill = cycle[i % len(cycle)]
            exp = unpack_oracle(v, n, m, k, upper, fill)
            call = partial(trilu.unpack, v, n, m, k, upper=upper, fill=fill)
            check_out(call, v, exp, mode, rng)

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_unpack_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= sharing memory with v (from its first byte, or within it): v's
    elements as they were before."""
    cases = [
        (0, True, None, False),
        (1, False, fills(dtype)[0], True),
        (-3, True, None, True),
    ]
    for k, upper, fill, first in cases:
        p = count(4, 4, k, upper)
        buf = make(dtype, (32 + p,), rng)
        out = buf[:32].reshape(2, 4, 4)
        v = (buf[: 2 * p] if first else buf[-2 * p :]).reshape(2, p)
        exp = unpack_oracle(v.copy(), 4, 4, k, upper, fill)
        assert trilu.unpack(v, 4, 4, k, upper=upper, fill=fill, out=out) is out
        assert_same(as_native(out, exp.dtype), exp)


# --- large: threads ---------------------------------------------------------------------

LARGE = {
    "float32-C": (np.float32, (1200, 900), "C"),
    "float32-transposed": (np.float32, (900, 1200), "transposed"),
    "int8-neg_cols": (np.int8, (2000, 1500), "neg_cols"),
    "complex128-batch": (np.complex128, (3, 300, 310), "neg_rows"),
    # tiny matrices, whole through the table of offsets: one batch run, and
    # a batch of two steps
    "float64-tiny": (np.float64, (40000, 4, 4), "C"),
    "int16-tiny-batch_step": (np.int16, (300, 100, 3, 5), "batch_step"),
}


@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_large(case: tuple[Any, tuple[int, ...], str], threads: int, rng) -> None:
    """Several MiB on 1 and 4 threads: pack fresh and into out= (C and
    reversed), unpack fresh and into out= (C and F), the round trip."""
    assert trilu.get_num_threads() == threads
    dtype, shape, name = case
    x = layout(name, dtype, shape, rng)
    rows, cols = shape[-2:]
    fill = fills(dtype)[0]
    for k, upper in [(0, True), (-1, False), (-5, False), (300, True)]:
        exp = pack_oracle(x, k, upper)
        got = trilu.pack(x, k, upper=upper)
        assert_same(got, exp)
        check_out(partial(trilu.pack, x, k, upper=upper), x, exp, "reversed", rng)
        want = unpack_oracle(got, rows, cols, k, upper, fill)
        call = partial(trilu.unpack, got, rows, cols, k, upper=upper, fill=fill)
        assert_same(call(), want)
        check_out(call, got, want, "F", rng)
    assert_same(trilu.unpack(trilu.pack(x, 1), rows, cols, 1), numpy_oracle(x, 1, True))


# --- errors ------------------------------------------------------------------------------

BAD = [
    (
        "pack-1d",
        lambda: trilu.pack(np.zeros(3)),
        ValueError,
        r"2 or more dimensions.*\(3,\)",
    ),
    ("pack-0d", lambda: trilu.pack(np.zeros(())), ValueError, r"2 or more dimensions"),
    (
        "pack-k",
        lambda: trilu.pack(np.zeros((3, 3)), 1.5),
        TypeError,
        r"\bk must be an integer",
    ),
    ("pack-k-str", lambda: trilu.pack(np.zeros((3, 3)), "1"), TypeError, r"\bk\b"),
    (
        "pack-upper",
        lambda: trilu.pack(np.zeros((3, 3)), upper=1),
        TypeError,
        r"\bupper\b",
    ),
    ("unpack-0d", lambda: trilu.unpack(np.zeros(())), ValueError, r"0-D"),
    (
        "unpack-n-neg",
        lambda: trilu.unpack(np.zeros(0), -1),
        ValueError,
        r"\bn must be 0 or more",
    ),
    (
        "unpack-m-neg",
        lambda: trilu.unpack(np.zeros(0), 0, -2),
        ValueError,
        r"\bm must be 0",
    ),
    (
        "unpack-n-float",
        lambda: trilu.unpack(np.zeros(1), 1.5),
        TypeError,
        r"\bn must be an integer",
    ),
    (
        "unpack-m-str",
        lambda: trilu.unpack(np.zeros(1), 1, "1"),
        TypeError,
        r"\bm must be an integer",
    ),
    (
        "unpack-m-no-n",
        lambda: trilu.unpack(np.zeros(1), m=1),
        TypeError,
        r"\bm needs n",
    ),
    (
        "unpack-k",
        lambda: trilu.unpack(np.zeros(1), k=0.5),
        TypeError,
        r"\bk must be an integer",
    ),
    (
        "unpack-upper",
        lambda: trilu.unpack(np.zeros(1), upper="yes"),
        TypeError,
        r"\bupper\b",
    ),
]


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
    x = np.arange(24.0).reshape(2, 3, 4)
    v = np.arange(12.0).reshape(2, 6)
    for call, shape, src in [
        (lambda out: trilu.pack(x, out=out), (2, 9), x),
        (lambda out: trilu.unpack(v, 3, 3, fill=-1.0, out=out), (2, 3, 3), v),
    ]:
        out, exc, match = _outs(shape)[which]
        before = [snapshot(a) for a in (out, src) if isinstance(a, np.ndarray)]
        with pytest.raises(exc, match=match):
            call(out)
        assert [snapshot(a) for a in (out, src) if isinstance(a, np.ndarray)] == before


@pytest.mark.parametrize(("name", "fill", "exc"), BAD_FILL_PARAMS)
def test_unpack_bad_fill(name: str, fill: Any, exc: Any, rng) -> None:
    """A fill v's dtype cannot hold raises (exact type, message naming fill)
    before anything is written: out= and v untouched."""
    dtype = ALL_DTYPES[name]
    v = make(dtype, (2, 6), rng)
    before = snapshot(v)
    with pytest.raises(exc, match=r"\bfill\b"):
        trilu.unpack(v, fill=fill)
    out = make(dtype, (2, 3, 3), rng)
    out_before = snapshot(out)
    with pytest.raises(exc, match=r"\bfill\b"):
        trilu.unpack(v, 3, fill=fill, out=out)
    assert snapshot(out) == out_before, "out was written"
    assert snapshot(v) == before, "v was written"


# --- properties -----------------------------------------------------------------------------

_HYP_DTYPES = [n for n in ALL_DTYPES if n not in ("struct_obj", "struct_padded")]
K = st.one_of(st.integers(-8, 8), st.integers(-(2**70), 2**70))
SETTINGS = settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@SETTINGS
@given(
    st.sampled_from(_HYP_DTYPES),
    st.lists(st.integers(0, 5), min_size=2, max_size=4),
    st.sampled_from(LAYOUTS),
    K,
    st.booleans(),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["fresh", *OUT_MODES]),
)
def test_pack_hypothesis(
    name: str,
    shape: list[int],
    layout_name: str,
    k: int,
    upper: bool,
    seed: int,
    mode: str,
) -> None:
    """Random dtype, shape, layout, k and side: pack is m[..., r, c]; the
    round trip through unpack is triu/tril."""
    dtype = ALL_DTYPES[name]
    rng = np.random.default_rng(seed)
    if layout_ok(layout_name, dtype, len(shape)):
        x = layout(layout_name, dtype, tuple(shape), rng)
    else:
        x = make(dtype, tuple(shape), rng)
    exp = pack_oracle(x, k, upper)
    if mode == "fresh":
        got = trilu.pack(x, k, upper=upper)
        assert_same(got, exp)
    else:
        check_out(partial(trilu.pack, x, k, upper=upper), x, exp, mode, rng)
        got = exp
    back = trilu.unpack(got, *x.shape[-2:], k, upper=upper)
    want = numpy_oracle(x, k, upper)
    assert_same(as_native(back, want.dtype), want)


@SETTINGS
@given(
    st.sampled_from(_HYP_DTYPES),
    st.lists(st.integers(0, 3), min_size=0, max_size=2),
    st.integers(0, 6),
    st.integers(0, 6) | st.none(),
    K,
    st.booleans(),
    st.integers(0, 2**32 - 1),
    st.sampled_from(VLAYOUTS),
    st.sampled_from(["fresh", *OUT_MODES]),
    st.data(),
)
def test_unpack_hypothesis(
    name: str,
    batch: list[int],
    n: int,
    m: int | None,
    k: int,
    upper: bool,
    seed: int,
    vlayout: str,
    mode: str,
    data: Any,
) -> None:
    """Random dtype, batch, n, m, k, side, fill and vector layout: unpack is
    o[..., r, c] = v over o full of the fill."""
    dtype = ALL_DTYPES[name]
    rng = np.random.default_rng(seed)
    cols = n if m is None else m
    p = count(n, cols, k, upper)
    if vlayout in ("F", "batch_step", "bcast_batch") and not batch:
        vlayout = "C"
    v = vectors(vlayout, dtype, (*batch, p), rng)
    if v is None:
        v = make(dtype, (*batch, p), rng)
    fill = data.draw(st.sampled_from(fill_cycle(dtype)))
    exp = unpack_oracle(v, n, cols, k, upper, fill)
    call = partial(trilu.unpack, v, n, m, k, upper=upper, fill=fill)
    if mode == "fresh":
        assert_same(call(), exp)
    else:
        check_out(call, v, exp, mode, rng)
