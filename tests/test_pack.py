"""pack and unpack: a triangle as a vector, and back, as numpy indexes it.

``pack(m, k)`` is ``m[..., r, c]`` with ``r, c = np.triu_indices(N, k, M)``
(``tril_indices`` for ``upper=False``; sorted by column, then row, for
``order="F"``), bit for bit and in ``m``'s dtype; ``unpack(v, n, m, k)`` is
``o = np.full(..., fill or zero); o[..., r, c] = v``, with the square ``n``
found from ``v.shape[-1]`` when omitted, and with ``mirror`` also
``o[..., c, r] = v`` (conjugated) where ``(c, r)`` is not kept. Every dtype x
layout x k x order, out= in every layout and byte order (and overlapping the
input), 1 and 4 threads, the round trip to triu/tril, LAPACK's ``?trttp`` and
``?tpttr``, and the errors.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections import Counter
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
    indices,
    iter_k_upper,
    k_int,
    layout,
    layout_ok,
    make,
    memory_variant,
    ml_dtype,
    numpy_oracle,
    pack_oracle,
    run_python,
    snapshot,
    triangle_oracle,
    unpack_oracle,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu

BATCH_SHAPE = (2, 4, 5)
ORDERS = ["C", "F"]


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


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("shape", list(MATRIX_SHAPES.values()), ids=list(MATRIX_SHAPES))
@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_pack_dtype_layout(
    dtype: np.dtype, shape: tuple[int, ...], order: str, rng
) -> None:
    """pack(x, k, upper, order) is x[..., r, c], dtype (byte order) included,
    for every dtype and layout, k from far below to far above; unpack of it
    is triu/tril(x, k) (with the fill, where given); x unchanged."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        x = layout(name, dtype, shape, rng)
        before = snapshot(x)
        rows, cols = x.shape[-2:]  # "step" has a column more
        for n, (_, k, upper) in enumerate(iter_k_upper()):
            got = trilu.pack(x, k, upper=upper, order=order)
            assert_same(got, pack_oracle(x, k, upper, order))
            if n % 2:  # the round trip, with the fill where given
                fill = cycle[n % len(cycle)]
                back = trilu.unpack(
                    got, rows, cols, k, upper=upper, order=order, fill=fill
                )
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
        for (_, k, upper), order in itertools.product(iter_k_upper(), ORDERS):
            got = trilu.pack(x, k, upper=upper, order=order)
            assert got.shape == (*shape[:-2], count(*shape[-2:], k, upper))
            assert_same(got, pack_oracle(x, k, upper, order))


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


@pytest.mark.parametrize("order", ORDERS)
def test_pack_objects_are_the_same_objects(order: str, rng) -> None:
    """Object elements are the input's own objects (references, not copies)."""
    x = make(object, (2, 4, 4), rng)
    got = trilu.pack(x, -1, upper=False, order=order)
    r, c = indices(4, 4, -1, False, order)
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
        for (k, upper), order in itertools.product(cases, ORDERS):
            exp = pack_oracle(x, k, upper, order)
            call = partial(trilu.pack, x, k, upper=upper, order=order)
            check_out(call, x, exp, mode, rng)

    every(OUT_MODES, check)


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128", "V5"])
def test_pack_rows_copied_inline(dtype: str, rng) -> None:
    """A PACK of rows along contiguous lines, in cache, copies each span
    inline on AVX-512 (explain_packed's "vector"): every band of matrices of
    short and of long rows, rows contiguous and a gap apart, one and more
    matrices, into a contiguous vector and a strided one; where a side is
    strided, the element walk."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    avx512 = _kernel._vector_loops() == "avx512"
    vector = 0
    for n, m in [(9, 40), (5, 200), (70, 59)]:
        x = make(dtype_, (3, n, m + 3), rng)
        for k, upper in itertools.product(range(-n - 1, m + 2, 3), (True, False)):
            p = count(n, m, k, upper)
            lo, hi = (k_int(k), None) if upper else (None, k_int(k))
            for mat, out in [(x[..., :m].copy(), np.empty((3, p), dtype_)),
                             (x[..., :m], np.empty((3, p), dtype_)),
                             (x[1, :, :m], np.empty(p, dtype_)),
                             (x[..., :m], np.empty((3, 2 * p), dtype_)[..., ::2]),
                             (x[..., :m:2], np.empty((3, count(n, len(range(0, m, 2)), k, upper)), dtype_))]:  # fmt: skip
                plan = _kernel.explain_packed(mat, out, False, lo, hi)
                along = mat.strides[-1] == out.strides[-1] == dtype_.itemsize
                if plan:  # (empty: nothing to move)
                    assert plan["vector"] == (
                        avx512 and along and plan["method"] == "strided"
                    ), (mat.shape, mat.strides, out.strides, k, upper, plan)
                    vector += plan["vector"]
                out[...] = make(dtype_, out.shape, rng)
                got = trilu.pack(mat, k, upper=upper, out=out)
                assert got is out
                assert_same(out, pack_oracle(mat, k, upper, "C"))
    assert bool(vector) == avx512


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "float32", "float64", "complex128", "V3"]
)
def test_pack_across_by_tiles(dtype: str, rng) -> None:
    """A PACK that reads its matrices across their lines (order="F" of C
    order, order="C" of F order), in cache, goes by square blocks on
    AVX-512 (explain_packed's "tiles": 8x8 of 8-byte elements, 16x16 of 1-
    to 4-byte ones), where the runs read and the vector are contiguous and
    lines and runs are two blocks' or more (8-byte elements only where L1D
    would not hold the runs at their stride, as 40 runs 1 KiB apart),
    writing nothing outside the lines: every band of matrices of fewer
    lines than two blocks, of blocks and a rest, of more runs than a
    tile's 512; contiguous, a gap apart and strided; into a contiguous
    vector and a strided one; a batch."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    w = dtype_.itemsize
    lanes = {1: 16, 2: 16, 4: 16, 8: 8}.get(w, 0)
    lanes = lanes if _kernel._vector_loops() == "avx512" else 0
    tiled = 0
    for n, m in [(9, 40), (21, 19), (37, 70), (40, 23), (600, 17), (40, 128)]:
        for order in ("C", "F"):
            x = make(dtype_, (2, n, m + 3), rng)
            base = x[..., :m] if order == "F" else np.asfortranarray(x[..., :m])
            for k, upper in itertools.product(range(-n - 1, m + 2, 5), (True, False)):
                p = count(n, m, k, upper)
                lo, hi = (k_int(k), None) if upper else (None, k_int(k))
                wide = np.empty((2, 2 * p), dtype_)
                strided = base[..., ::2, :]
                for mat, out in [(base, np.empty((2, p), dtype_)),
                                 (base.copy(order="K"), wide[..., ::2]),
                                 (strided, np.empty_like(pack_oracle(strided, k, upper, order)))]:  # fmt: skip
                    exp = pack_oracle(mat, k, upper, order)
                    plan = _kernel.explain_packed(mat, out, False, lo, hi, order == "F")
                    across = mat.strides[-1 if order == "F" else -2] == w
                    tiles = (across and out.strides[-1] == w and lanes > 0
                             and plan.get("method") == "strided"
                             and min(mat.shape[-2:]) >= 2 * lanes)  # fmt: skip
                    # (8-byte ones where the runs would not stay in L1D)
                    apart = abs(mat.strides[-2 if order == "F" else -1])
                    runs = mat.shape[-2 if order == "F" else -1]
                    tiles &= w <= 4 or runs > _kernel._l1_lines(apart)
                    assert plan.get("tiles", False) == tiles, (mat.strides, plan)
                    tiled += tiles
                    out[...] = make(dtype_, out.shape, rng)
                    got = trilu.pack(mat, k, upper=upper, order=order, out=out)
                    assert got is out
                    assert_same(out, exp)
    assert bool(tiled) == bool(lanes)


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "float32", "float64", "complex128", "V3"]
)
def test_pack_side_by_side(dtype: str, rng) -> None:
    """A batch whose matrices lie side by side (each element's batch one
    contiguous run: Fortran order, or the batch axes last in memory in any
    order) packs a block of elements' runs at a time across into the
    vectors (explain_packed's "side_by_side"), where the vectors' batch runs
    in the same order (a fresh result's, or out='s): batches under, at and
    past a register block, each order and k, rectangles; out= with the
    vectors' elements contiguous or strided. Where out's batch runs in
    another order, the matrices go one after another, as every other batch."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    taken = 0
    for batch, (n, m) in itertools.product(
        [(3,), (8,), (37,), (2, 5)], [(6, 6), (9, 20), (21, 5), (70, 64)]
    ):
        axes = len(batch)
        # the batch axes last in memory: reversed (Fortran order), or in order
        for perm in [tuple(range(axes + 1, -1, -1)), (axes, axes + 1, *range(axes))]:
            x = make(dtype_, tuple(np.array((*batch, n, m))[list(perm)]), rng)
            x = x.transpose(np.argsort(perm))
            assert x.shape == (*batch, n, m)
            for k, upper in [(0, True), (-2, False), (3, True), (-n, True)]:
                for order in ORDERS:
                    exp = pack_oracle(x, k, upper, order)
                    lo, hi = (k, None) if upper else (None, k)
                    size = exp.shape[-1]
                    # (a C-ordered batch runs as x's where x's runs in C order)
                    in_c = axes == 1 or perm[-1] != 0
                    vectors = {  # out, and whether its batch runs as x's does
                        "C": (np.empty(exp.shape, dtype_), in_c),
                        "alike": (np.empty((size, *batch[::-1]), dtype_).T
                                  if perm[-1] == 0 else
                                  np.empty((size, *batch), dtype_).transpose(
                                      *range(1, axes + 1), 0),
                                  True),
                        "strided": (np.empty((*batch, 2 * size), dtype_)[..., ::2],
                                    in_c),
                    }  # fmt: skip
                    for out, alike in vectors.values():
                        if size:
                            plan = _kernel.explain_packed(
                                x, out, False, lo, hi, order == "F"
                            )
                            assert (plan["method"] == "side_by_side") == alike, plan
                            taken += alike
                        out[...] = make(dtype_, out.shape, rng)
                        got = trilu.pack(x, k, upper=upper, order=order, out=out)
                        assert got is out
                        assert_same(out, exp)
                    assert_same(trilu.pack(x, k, upper=upper, order=order), exp)
    assert taken


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_pack_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= in the input's own memory (from its first byte, or within it): the
    input's elements as they were."""
    cases = [(0, True, 5), (-1, False, 5), (1, True, 0), (-3, True, 0)]
    for (k, upper, start), order in itertools.product(cases, ORDERS):
        buf = make(dtype, (3, 4, 4), rng)
        x = buf[:2]
        p = count(4, 4, k, upper)
        out = buf.reshape(-1)[start : start + 2 * p].reshape(2, p)
        exp = pack_oracle(x.copy(), k, upper, order)
        assert trilu.pack(x, k, upper=upper, order=order, out=out) is out
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


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_unpack_dtype_layout(dtype: np.dtype, order: str, rng) -> None:
    """unpack(v, n, m, k, upper, order, fill) is o[..., r, c] = v over o full
    of fill (zero when None), in v's dtype, for every dtype and vector
    layout, k from far below to far above, square and not; v unchanged."""
    cycle = fill_cycle(dtype)

    def check(name: str) -> None:
        for i, (_, k, upper) in enumerate(iter_k_upper()):
            n, m = MATRIX_SIDES[i % len(MATRIX_SIDES)]
            v = vectors(name, dtype, (2, count(n, m, k, upper)), rng)
            if v is None:
                return
            before = snapshot(v)
            fill = cycle[i % len(cycle)]
            exp = unpack_oracle(v, n, m, k, upper, fill, order)
            call = partial(trilu.unpack, upper=upper, order=order, fill=fill)
            assert_same(call(v, n, m, k), exp)
            if n == m:  # the same, n found from v's length (where one n fits)
                if abs(k_int(k)) <= 2 and square_n(v.shape[-1], k_int(k), upper) == n:
                    assert_same(call(v, k=k), exp)
                assert_same(call(v, n, k=k), exp)
            assert snapshot(v) == before, "v was modified"

    every(VLAYOUTS, check)


def mirror_modes(dtype: np.dtype) -> list[Any]:
    """unpack's mirror values the dtype takes: "conj" for numbers (and for
    objects with a .conjugate, which make's are not)."""
    conj = ml_dtype(dtype) or dtype.kind in "iufc"
    return [True, "conj"] if conj else [True]


# square sides: short rows, then rows read across by tiles (the kernel's; the
# references' path, numpy's indexing, takes the short ones only)
MIRROR_SIDES = [4, 1, 0, 7, 130, 300]
MIRROR_SIDES_REFS = [4, 1, 0, 7]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_unpack_mirror(dtype: np.dtype, order: str, rng) -> None:
    """unpack(..., mirror=True or "conj") is the unpack oracle with
    o[..., c, r] = v (conjugated) where (c, r) is not kept, for every dtype,
    vector layout, k (the diagonals between the triangle and its mirror
    filled), side, order and fill; v unchanged."""
    cycle = fill_cycle(dtype)
    modes = mirror_modes(dtype)
    sides = MIRROR_SIDES_REFS if dtype.hasobject else MIRROR_SIDES

    def check(name: str) -> None:
        for i, (_, k, upper) in enumerate(iter_k_upper()):
            n = sides[i % len(sides)]
            v = vectors(name, dtype, (2, count(n, n, k, upper)), rng)
            if v is None:
                return
            before = snapshot(v)
            fill = cycle[i % len(cycle)]
            for mirror in modes:
                exp = unpack_oracle(v, n, n, k, upper, fill, order, mirror)
                got = trilu.unpack(
                    v, n, k=k, upper=upper, order=order, fill=fill, mirror=mirror
                )
                assert_same(got, exp)
            assert snapshot(v) == before, "v was modified"

    every(VLAYOUTS, check)


def test_unpack_mirror_objects_are_the_objects(rng) -> None:
    """Object results hold v's own objects on both sides (and their
    .conjugate() on the mirrored one with "conj"), and the fill itself."""
    v = make(object, (10,), rng)
    fill = []
    got = trilu.unpack(v, k=1, mirror=True, fill=fill)
    r, c = np.triu_indices(5, 1)
    for i, (rr, cc) in enumerate(zip(r, c, strict=True)):
        assert got[rr, cc] is v[i]
        assert got[cc, rr] is v[i]
    for i in range(5):
        assert got[i, i] is fill
    z = np.array([1 + 2j, 3 - 1j, 4j], object)
    got = trilu.unpack(z, order="F", upper=False, mirror="conj")
    assert got.tolist() == [[1 + 2j, 3 + 1j], [3 - 1j, 4j]]
    assert got[1, 0] is z[1]
    # an object without .conjugate: numpy's TypeError, out untouched
    bad = np.array([1j, "x", 2], object)
    out = np.full((2, 2), None, object)
    with pytest.raises(TypeError, match="conjugate"):
        trilu.unpack(bad, mirror="conj", out=out)
    assert out.tolist() == [[None, None], [None, None]]


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
    """k=1 is scipy's squareform: its upper triangle, n found from the length,
    and with mirror=True the whole matrix (scipy needed)."""
    distance = pytest.importorskip("scipy.spatial.distance")
    rng = np.random.default_rng(4)
    for n in range(2, 8):  # P = 0 fits n = 0 and n = 1
        v = rng.random(n * (n - 1) // 2)
        want = np.triu(distance.squareform(v), 1)
        assert_same(trilu.unpack(v, k=1), want)
        assert_same(trilu.unpack(v, k=1, mirror=True, fill=0), distance.squareform(v))
        assert_same(trilu.pack(distance.squareform(v), 1), v)


# LAPACK's packed storage: ?trttp and ?tpttr, uplo "U" and "L", for s, d, c, z
LAPACK_TYPES = {"s": np.float32, "d": np.float64, "c": np.complex64, "z": np.complex128}


@pytest.mark.parametrize("n", [0, 1, 5, 64, 300])
@pytest.mark.parametrize("prefix", list(LAPACK_TYPES))
def test_lapack_packed_storage(prefix: str, n: int, rng) -> None:
    """pack(a, order="F") is ?trttp(a, uplo) and unpack is ?tpttr with the
    other triangle zero, uplo "U" for upper=True and "L" for upper=False, the
    input in Fortran and C order (scipy needed)."""
    lapack = pytest.importorskip("scipy.linalg.lapack")
    trttp = getattr(lapack, f"{prefix}trttp")
    tpttr = getattr(lapack, f"{prefix}tpttr")
    a = make(LAPACK_TYPES[prefix], (n, n), rng)
    for x, uplo in itertools.product((a, np.asfortranarray(a)), "UL"):
        upper = uplo == "U"
        ap, info = trttp(x, uplo=uplo)
        assert info == 0
        assert_same(trilu.pack(x, upper=upper, order="F"), ap)
        back, info = tpttr(n, ap, uplo=uplo)
        assert info == 0
        want = np.triu(back) if upper else np.tril(back)
        assert_same(trilu.unpack(ap, n, upper=upper, order="F"), want)


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
    # mirror: one square case each (the first), a side of 40 read by tiles too
    mirrors = [(4, 4, 1, True), (40, 40, -2, False)]

    def check(mode: str) -> None:
        for i, ((n, m, k, upper), order) in enumerate(itertools.product(cases, ORDERS)):
            v = make(dtype, (2, 3, count(n, m, k, upper)), rng)
            fill = cycle[i % len(cycle)]
            exp = unpack_oracle(v, n, m, k, upper, fill, order)
            call = partial(
                trilu.unpack, v, n, m, k, upper=upper, order=order, fill=fill
            )
            check_out(call, v, exp, mode, rng)
        for i, ((n, _, k, upper), order, mirror) in enumerate(
            itertools.product(mirrors, ORDERS, mirror_modes(dtype))
        ):
            v = make(dtype, (2, count(n, n, k, upper)), rng)
            fill = cycle[i % len(cycle)]
            exp = unpack_oracle(v, n, n, k, upper, fill, order, mirror)
            call = partial(
                trilu.unpack, v, n, k=k, upper=upper, order=order, fill=fill,
                mirror=mirror,
            )  # fmt: skip
            check_out(call, v, exp, mode, rng)

    every(OUT_MODES, check)


@pytest.mark.parametrize("dtype", ["int8", "float32", "complex128", "V5"])
def test_unpack_rows_as_a_band(dtype: str, rng) -> None:
    """An UNPACK into contiguous rows from contiguous lines writes them as a
    band's rows (the kernel's explain_packed says so), with another source
    cursor, the crossed ones by AVX-512's row loop where the fill's pattern
    allows ("vector"): every band of a matrix of short and of long rows,
    each fill, rows a gap apart; where the lines or the rows are strided,
    the span walk."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    cycle = [None, *fill_cycle(dtype_)[:2]]
    taken = vector = 0
    avx512 = _kernel._vector_loops() == "avx512"
    for i, (n, m) in enumerate([(9, 7), (5, 200), (70, 59)]):
        for k, upper in itertools.product(range(-n - 1, m + 2, 3), (True, False)):
            v = make(dtype_, (3, count(n, m, k, upper)), rng)
            fill = cycle[(i + k) % len(cycle)]
            exp = unpack_oracle(v, n, m, k, upper, fill)
            wide = np.empty((3, n, m + 3), dtype_)
            for out, lines in [(np.empty((3, n, m), dtype_), v), (wide[..., :m], v),
                               (np.empty((3, n, 2 * m), dtype_)[..., ::2], v),
                               (np.empty((3, n, m), dtype_), v.repeat(2, -1)[..., ::2])]:  # fmt: skip
                lo, hi = (k_int(k), None) if upper else (None, k_int(k))
                elem = None if fill is None else np.array(fill, dtype_).tobytes()
                plan = _kernel.explain_packed(out, lines, True, lo, hi, False, elem)
                along = out.strides[-1] == lines.strides[-1] == dtype_.itemsize
                if plan:  # (empty: nothing to move)
                    assert plan["rows"] == (along and plan["method"] == "strided")
                    # (a pattern of 16 bytes, or one byte)
                    pattern = 16 % dtype_.itemsize == 0 or len(set(elem or b"")) < 2
                    assert plan["vector"] == (plan["rows"] and avx512 and pattern)
                taken += plan.get("rows", False)
                vector += plan.get("vector", False)
                got = trilu.unpack(lines, n, m, k, upper=upper, fill=fill, out=out)
                assert got is out
                assert_same(out, exp)
    assert taken
    assert bool(vector) == avx512


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "float32", "float64", "complex128", "V3"]
)
def test_unpack_side_by_side(dtype: str, rng) -> None:
    """Vectors that lie side by side (each element's batch one contiguous
    run: Fortran order, or the batch axes last in memory in any order)
    unpack a block of elements' runs at a time across into the matrices
    (explain_packed's "side_by_side"), where the matrices' batch runs in the
    same order and their rows are a register block long or longer: batches
    under, at and past a block, 1-D and 2-D, each order and k, rectangles,
    zeros (into zero pages too) and a fill; out= contiguous, strided and in
    Fortran order. Shorter rows, mirror=, and matrices whose batch runs in
    another order go one matrix after another. C-ordered vectors (their
    elements contiguous or apart) into a Fortran-ordered stack (matrices
    side by side) go across into its runs, along the packed lines (the
    stack's rows for order "C", its columns for "F")."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    avx2 = _kernel._vector_loops() != "portable"
    block = {1: 16, 2: 8, 4: 8, 8: 4}.get(dtype_.itemsize, 0) if avx2 else 0
    fills = [None, fill_cycle(dtype_)[0]]
    taken = 0
    for batch, (n, m) in itertools.product(
        [(3,), (8,), (37,), (2, 5)], [(6, 6), (9, 20), (21, 5), (70, 64)]
    ):
        axes = len(batch)
        for perm in [tuple(range(axes, -1, -1)), (axes, *range(axes))]:
            in_c = axes == 1 or perm[-1] != 0  # (as in test_pack_side_by_side)
            for i, ((k, upper), order) in enumerate(
                itertools.product([(0, True), (-2, False), (3, True)], ORDERS)
            ):
                size = count(n, m, k, upper)
                v = make(dtype_, tuple(np.array((*batch, size))[list(perm)]), rng)
                v = v.transpose(np.argsort(perm))
                fill = fills[i % 2]
                exp = unpack_oracle(v, n, m, k, upper, fill, order)
                lo, hi = (k, None) if upper else (None, k)
                shape = (*batch, n, m)
                # (out, whether its batch runs as v's, its rows' length: in
                # Fortran order, the matrices' columns are walked as rows)
                outs = [
                    (np.empty(shape, dtype_), in_c, m),
                    (np.empty((*batch, n, 2 * m), dtype_)[..., ::2], in_c, m),
                    (np.empty(shape[::-1], dtype_).T, axes == 1 or perm[-1] == 0, n),
                ]
                for out, alike, row in outs:
                    plan = _kernel.explain_packed(out, v, True, lo, hi, order == "F")
                    side = alike and 0 < block <= row
                    assert (plan["method"] == "side_by_side") == side, plan
                    taken += side
                    out[...] = make(dtype_, out.shape, rng)
                    got = trilu.unpack(v, n, m, k, upper=upper, order=order,
                                       fill=fill, out=out)  # fmt: skip
                    assert got is out
                    assert_same(out, exp)
                assert_same(trilu.unpack(v, n, m, k, upper=upper, order=order,
                                         fill=fill), exp)  # fmt: skip
                if n == m:
                    mirrored = _kernel.explain_packed(
                        outs[0][0], v, True, lo, hi, order == "F", None, True
                    )
                    assert mirrored["method"] != "side_by_side"
            # C-ordered vectors into matrices side by side (a stack in
            # Fortran order), walked along the packed lines, where its
            # batch runs as theirs
            lines = make(dtype_, (*batch, count(n, m, 1, True)), rng)
            strided = lines.repeat(2, -1)[..., ::2]  # (its elements apart)
            for v, order in itertools.product([lines, strided], ORDERS):
                exp = unpack_oracle(v, n, m, 1, True, fills[1], order)
                out = make(dtype_, shape[::-1], rng).T
                plan = _kernel.explain_packed(out, v, True, 1, None, order == "F")
                into = axes == 1
                assert (plan["method"] == "side_by_side") == into, plan
                taken += into
                got = trilu.unpack(v, n, m, 1, order=order, fill=fills[1], out=out)
                assert got is out
                assert_same(out, exp)
    assert taken


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    "dtype", ["int8", "int16", "float32", "float64", "complex64", "complex128", "V3"]
)
def test_unpack_columns_by_row_groups(dtype: str, rng) -> None:
    """An UNPACK column after column into matrices in cache goes a group of
    rows at a time (explain_packed's "columns"; a matrix past the caches
    goes by tiles), where both sides are contiguous and a register block
    holds 8 elements or more, every line of a group by blocks, read past
    the spans ("blocked"); on AVX-512 by square blocks (8x8 of 8-byte
    elements, else 16x16), the fill with them, where rows and columns are a
    block's or more ("tiles"): every band of matrices of fewer rows
    than a group, of fewer than a block but long rows (blocks, not tiles),
    of groups and a rest, short and long rows, fewer columns than a block
    and a last block moved left; each fill; out= contiguous, a gap apart
    and strided; v contiguous and strided; a batch."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    big = np.empty((4096, 4096), dtype_)  # (never written: its plan only)
    assert _kernel.explain_packed(big, big[0], True, 0, None, True)["method"] == "tiled"
    # (register blocks of 16 bytes, or of 8 elements of 2 and 4 bytes)
    blocks = dtype_.itemsize in (1, 2, 4) and _kernel._vector_loops() != "portable"
    # (square blocks: 8x8 of 8-byte elements, 16x16 of 1- to 4-byte ones)
    lanes = {1: 16, 2: 16, 4: 16, 8: 8}.get(dtype_.itemsize, 0)
    lanes = lanes if _kernel._vector_loops() == "avx512" else 0
    cycle = [None, *fill_cycle(dtype_)[:2]]
    taken = blocked = tiled = 0
    shapes = [(3, 9), (21, 19), (37, 70), (40, 23), (12, 40), (12, 200)]
    for i, (n, m) in enumerate(shapes):
        for k, upper in itertools.product(range(-n - 1, m + 2, 4), (True, False)):
            v = make(dtype_, (2, count(n, m, k, upper)), rng)
            fill = cycle[(i + k) % len(cycle)]
            exp = unpack_oracle(v, n, m, k, upper, fill, "F")
            wide = np.empty((2, n, m + 3), dtype_)
            for out, lines in [(np.empty((2, n, m), dtype_), v), (wide[..., :m], v),
                               (np.empty((2, n, 2 * m), dtype_)[..., ::2], v),
                               (np.empty((2, n, m), dtype_), v.repeat(2, -1)[..., ::2])]:  # fmt: skip
                lo, hi = (k_int(k), None) if upper else (None, k_int(k))
                plan = _kernel.explain_packed(out, lines, True, lo, hi, True)
                # (empty: nothing to move; matrices: small ones of short rows)
                assert plan.get("method", "columns") in ("columns", "matrices")
                taken += plan.get("method") == "columns"
                contiguous = out.strides[-1] == lines.strides[-1] == dtype_.itemsize
                columns = contiguous and plan.get("method") == "columns"
                tiles = bool(lanes) and columns and min(n, m) >= lanes
                assert plan.get("tiles", False) == tiles
                tiled += tiles
                assert plan.get("blocked", False) == (blocks and columns and not tiles)
                blocked += plan.get("blocked", False)
                out[...] = make(dtype_, out.shape, rng)
                got = trilu.unpack(lines, n, m, k, upper=upper, fill=fill, order="F",
                                   out=out)  # fmt: skip
                assert got is out
                assert_same(out, exp)
    assert taken
    assert bool(blocked) == blocks
    assert bool(tiled) == bool(lanes)


@pytest.mark.usefixtures("threads")
@pytest.mark.parametrize(
    "dtype", ["int8", "float32", "float64", "complex64", "complex128", "V3"]
)
def test_unpack_mirror_by_row_groups(dtype: str, rng) -> None:
    """A mirrored UNPACK into matrices in cache goes a group of rows at a
    time (explain_packed's "columns"; a matrix past the caches goes by
    tiles, and small ones of short rows whole through the table of offsets,
    "matrices"), whichever band its lines run across; on AVX-512 by square
    blocks where both sides are contiguous and the rows a block's or more
    ("tiles": each row along its line first, the span the whole line or,
    upper k < 0 packed by columns, a part of it; then the band read across,
    under masks at its edge): every k of square matrices
    of fewer rows than a group, of groups and a rest; packed by rows and by
    columns, into rows and into columns (out= in F order); conjugated (no
    blocks in registers) or not; each fill; out= contiguous, a gap apart
    and strided; v contiguous and strided; a batch."""
    from trilu import _kernel  # noqa: PLC0415

    dtype_ = np.dtype(dtype)
    big = np.empty((1024, 1024), dtype_)  # (never written: its plan only)
    plan = _kernel.explain_packed(big, big[0], True, 0, None, False, None, True)
    assert plan["method"] == "tiled"
    cycle = [None, *fill_cycle(dtype_)[:2]]
    modes = mirror_modes(dtype_)
    itemsize = dtype_.itemsize
    # (square blocks on AVX-512, explain_packed's "tiles": the rows along
    # their lines first, then the band read across; none where conjugated)
    lanes = {1: 16, 2: 16, 4: 16, 8: 8}.get(itemsize, 0)
    lanes = lanes if _kernel._vector_loops() == "avx512" else 0
    taken = Counter()
    for i, n in enumerate([3, 21, 37]):
        for (k, upper), order in itertools.product(
            itertools.product(range(-n - 1, n + 2, 4), (True, False)), ORDERS
        ):
            v = make(dtype_, (2, count(n, n, k, upper)), rng)
            fill = cycle[(i + k) % len(cycle)]
            wide = np.empty((2, n, n + 3), dtype_)
            for out, lines in [(np.empty((2, n, n), dtype_), v), (wide[..., :n], v),
                               (np.empty((2, n, 2 * n), dtype_)[..., ::2], v),
                               (np.empty((2, n, n), dtype_, order="F"), v),
                               (np.empty((2, n, n), dtype_), v.repeat(2, -1)[..., ::2])]:  # fmt: skip
                lo, hi = (k_int(k), None) if upper else (None, k_int(k))
                plan = _kernel.explain_packed(
                    out, lines, True, lo, hi, order == "F", None, True
                )
                assert plan.get("method", "columns") in ("columns", "matrices")
                taken[plan.get("method")] += 1  # (empty: {})
                contiguous = lines.strides[-1] == itemsize in out.strides[-2:]
                columns = contiguous and plan.get("method") == "columns"
                tiles = columns and 0 < lanes <= n
                assert plan.get("tiles", False) == tiles
                taken["tiles"] += tiles
                for mirror in modes:
                    exp = unpack_oracle(v, n, n, k, upper, fill, order, mirror)
                    out[...] = make(dtype_, out.shape, rng)
                    got = trilu.unpack(lines, n, k=k, upper=upper, fill=fill,
                                       order=order, mirror=mirror, out=out)  # fmt: skip
                    assert got is out
                    assert_same(out, exp)
    assert taken["columns"]
    assert taken["matrices"]
    assert bool(taken["tiles"]) == bool(lanes)


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_unpack_out_overlapping_input(dtype: np.dtype, rng) -> None:
    """out= sharing memory with v (from its first byte, or within it): v's
    elements as they were before."""
    cases = [
        (0, True, None, False, "C", False),
        (1, False, fills(dtype)[0], True, "F", False),
        (-3, True, None, True, "F", False),
        (1, True, None, True, "C", True),
        (-1, False, fills(dtype)[0], False, "F", True),
    ]
    for k, upper, fill, first, order, mirror in cases:
        p = count(4, 4, k, upper)
        buf = make(dtype, (32 + p,), rng)
        out = buf[:32].reshape(2, 4, 4)
        v = (buf[: 2 * p] if first else buf[-2 * p :]).reshape(2, p)
        exp = unpack_oracle(v.copy(), 4, 4, k, upper, fill, order, mirror)
        call = partial(trilu.unpack, upper=upper, order=order, fill=fill)
        assert call(v, 4, 4, k, mirror=mirror, out=out) is out
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


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_large(
    case: tuple[Any, tuple[int, ...], str], order: str, threads: int, rng
) -> None:
    """Several MiB on 1 and 4 threads: pack fresh and into out= (C and
    reversed), unpack fresh and into out= (C and F), the round trip; with
    mirror where square."""
    assert trilu.get_num_threads() == threads
    dtype, shape, name = case
    x = layout(name, dtype, shape, rng)
    rows, cols = shape[-2:]
    fill = fills(dtype)[0]
    for k, upper in [(0, True), (-1, False), (-5, False), (300, True)]:
        exp = pack_oracle(x, k, upper, order)
        call = partial(trilu.pack, x, k, upper=upper, order=order)
        assert_same(call(), exp)
        check_out(call, x, exp, "reversed", rng)
        want = unpack_oracle(exp, rows, cols, k, upper, fill, order)
        call = partial(
            trilu.unpack, exp, rows, cols, k, upper=upper, order=order, fill=fill
        )
        assert_same(call(), want)
        check_out(call, exp, want, "F", rng)
    back = trilu.unpack(trilu.pack(x, 1, order=order), rows, cols, 1, order=order)
    assert_same(back, numpy_oracle(x, 1, True))


# square: the mirrored band read across by tiles, both orders
LARGE_MIRROR = {
    "float64": (np.float64, (700, 700)),
    "float64-blocks": (np.float64, (500, 500)),  # (column_tile's, on AVX-512)
    "int8": (np.int8, (1500, 1500)),
    "complex128-batch": (np.complex128, (3, 300, 300)),
    "float32-tiny": (np.float32, (20000, 5, 5)),
}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("case", list(LARGE_MIRROR.values()), ids=list(LARGE_MIRROR))
def test_large_mirror(
    case: tuple[Any, tuple[int, ...]], order: str, threads: int, rng
) -> None:
    """Several MiB on 1 and 4 threads: unpack with mirror (True and "conj"),
    fresh and into out= (C and F), k from below to above the diagonal."""
    assert trilu.get_num_threads() == threads
    dtype, shape = case
    n = shape[-1]
    fill = fills(dtype)[0]
    for k, upper in [(1, True), (0, False), (-3, False), (2, True), (-2, True)]:
        v = make(dtype, (*shape[:-2], count(n, n, k, upper)), rng)
        for mirror in (True, "conj"):
            want = unpack_oracle(v, n, n, k, upper, fill, order, mirror)
            call = partial(
                trilu.unpack, v, n, k=k, upper=upper, order=order, fill=fill,
                mirror=mirror,
            )  # fmt: skip
            assert_same(call(), want)
            check_out(call, v, want, "F", rng)


# (dtype, n, walk): mirrored results of 1 MiB and more, and the walk each
# takes on AVX-512: column_tile's register blocks ("columns") up to 2.5 MiB
# of elements of 2 to 8 bytes, else the tiled walk
MIRROR_WALKS = [(np.float64, 500, "columns"), (np.float64, 650, "tiled"),
                (np.float32, 800, "columns"), (np.int16, 1000, "columns"),
                (np.int16, 1150, "tiled"), (np.int8, 1030, "tiled"),
                (np.complex64, 400, "columns"), (np.complex128, 300, "tiled")]  # fmt: skip


@pytest.mark.parametrize("case", MIRROR_WALKS, ids=str)
def test_mirror_walk(case: tuple[Any, int, str], rng) -> None:
    """A mirror of 1 MiB or more, not conjugated, of elements of 2 to 8
    bytes goes by column_tile's blocks (COLUMNS) on AVX-512 up to 2.5 MiB;
    a larger one, one of other elements and every one without AVX-512 by
    the tiled walk (conjugated ones: test_large_mirror). Either way, the
    oracle's bytes."""
    from trilu import _kernel  # noqa: PLC0415

    dtype, n, walk = case
    v = make(dtype, (count(n, n, 1, True),), rng)
    out = np.empty((n, n), dtype)
    plan = _kernel.explain_packed(out, v, True, 1, None, mirror=True)
    avx512 = _kernel._vector_loops() == "avx512"
    assert plan["method"] == (walk if avx512 else "tiled"), plan
    assert_same(
        trilu.unpack(v, n, k=1, mirror=True),
        unpack_oracle(v, n, n, 1, True, None, "C", True),
    )


# unpacked results of 32 MiB or more, whose rows are written with streaming
# stores where SSE2 is built: rows of any byte length (so every alignment of
# the fill and the kept span), fills of one byte, of a pattern and of an
# element whose width divides no 16 bytes (never streamed)
STREAMED = {
    "int8-odd": (np.int8, 5793),
    "float16": (np.float16, 4097),
    "S3": (np.dtype("S3"), 3345),
    "float64": (np.float64, 2049),
    "complex128": (np.complex128, 1449),
}


@pytest.mark.usefixtures("threads4")
@pytest.mark.parametrize("case", list(STREAMED.values()), ids=list(STREAMED))
def test_streamed(case: tuple[Any, int], rng) -> None:
    """unpack into fresh results (zero pages, recycled blocks) and into an
    unaligned out=, row after row, column after column and mirrored, each
    numpy's answer to the bit."""
    dtype, n = case
    assert n * n * np.dtype(dtype).itemsize >= 32 << 20
    fill = fills(dtype)[0]
    buf = np.empty(n * n * np.dtype(dtype).itemsize + 1, np.uint8)
    out = buf[1:].view(dtype).reshape(n, n)
    cases = itertools.product(ORDERS, (False, True), (None, fill))
    for i, (order, mirror, f) in enumerate(cases):
        k, upper = [(1, True), (-2, False)][i % 2]
        v = make(dtype, (count(n, n, k, upper),), rng)
        exp = unpack_oracle(v, n, n, k, upper, f, order, mirror)
        call = partial(
            trilu.unpack, v, n, k=k, upper=upper, order=order, fill=f, mirror=mirror
        )
        assert_same(call(), exp)
        if i % 3 == 0:
            assert call(out=out) is out
            assert_same(out, exp)


@pytest.mark.usefixtures("threads4")
def test_streamed_columns_whole_lines(rng) -> None:
    """An unpack column after column into rows of whole cache lines streams
    its tiles whole lines wide, the fill with them (explain_packed's
    "lines"); rows of other lengths, and mirrored ones, do not. Each result
    numpy's answer to the bit: fresh, and into out= at a line's start and a
    byte past it, every k's side of the diagonal, zeros and a fill."""
    from trilu import _kernel  # noqa: PLC0415

    n, dtype = 2048, np.dtype(np.float64)  # rows of 16 KiB, 32 MiB results
    assert n * n * dtype.itemsize >= 32 << 20
    buf = np.empty(n * n * dtype.itemsize + 128, np.uint8)
    start = -buf.ctypes.data % 64
    outs = [
        buf[at : at + n * n * 8].view(dtype).reshape(n, n) for at in (start, start + 1)
    ]

    def lines(rows: int, mirror: bool) -> bool:
        mat, vec = (
            np.empty((rows, rows), dtype),
            np.empty(count(rows, rows, 0, True), dtype),
        )
        plan = _kernel.explain_packed(mat, vec, True, 0, None, True, None, mirror)
        assert plan["method"] == "tiled"
        return plan["lines"]

    assert lines(n, False) == _kernel.STREAMING
    assert not lines(n + 1, False)
    assert not lines(n, True)
    fill = fills(dtype)[0]
    for i, (k, upper) in enumerate([(0, True), (0, False), (3, True), (-5, False)]):
        v = make(dtype, (count(n, n, k, upper),), rng)
        f = (None, fill)[i % 2]
        exp = unpack_oracle(v, n, n, k, upper, f, "F", False)
        call = partial(trilu.unpack, v, n, k=k, upper=upper, order="F", fill=f)
        assert_same(call(), exp)
        out = outs[i // 2]
        out.fill(7)
        assert call(out=out) is out
        assert_same(out, exp)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mprotect: Linux")
def test_streamed_rows_read_v_only() -> None:
    """Streamed rows read v's elements and nothing around them: a v flush
    against pages that cannot be read, before it and after it, unpacks in
    every order and mirrored, in a fresh interpreter that a read past v
    would kill. Rows of whole lines too (2048), whose columns' tiles load
    the band's edges under masks."""
    proc = run_python(
        """
        import ctypes, mmap
        import numpy as np, trilu
        page = mmap.PAGESIZE
        mprotect = ctypes.CDLL(None, use_errno=True).mprotect
        for n in (2049, 2048):
            count = n * (n - 1) // 2  # k=1: whole pages of float64, 32 MiB out
            size = count * 8
            assert size % page == 0 and n * n * 8 >= 32 << 20
            buf = mmap.mmap(-1, size + 2 * page)
            base = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            for at in (base, base + page + size):  # PROT_NONE
                assert mprotect(ctypes.c_void_p(at), page, 0) == 0
            v = np.frombuffer(buf, np.float64, count, page)
            v[:] = np.arange(count)
            for order in ("C", "F"):
                for mirror in (False, True):
                    for fill in (None, -1.0):
                        got = trilu.unpack(v, k=1, order=order, mirror=mirror,
                                           fill=fill)
                        want = trilu.unpack(v.copy(), k=1, order=order,
                                            mirror=mirror, fill=fill)
                        assert np.array_equal(got, want)
        print("read v only")
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "read v only"


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
    (
        "pack-order",
        lambda: trilu.pack(np.zeros((3, 3)), order="X"),
        ValueError,
        r"\border must be 'C'.*or 'F'.*'X'",
    ),
    (
        "pack-order-K",
        lambda: trilu.pack(np.zeros((3, 3)), order="K"),
        ValueError,
        r"\border\b.*'K'",
    ),
    (
        "unpack-order",
        lambda: trilu.unpack(np.zeros(3), order=None),
        ValueError,
        r"\border must be 'C'.*None",
    ),
    (
        "unpack-mirror-str",
        lambda: trilu.unpack(np.zeros(3), mirror="yes"),
        ValueError,
        r"\bmirror must be True, False or 'conj'.*'yes'",
    ),
    (
        "unpack-mirror-int",
        lambda: trilu.unpack(np.zeros(3), mirror=1),
        TypeError,
        r"\bmirror must be a bool",
    ),
    (
        "unpack-mirror-square",
        lambda: trilu.unpack(np.zeros(1), 2, 4, -1, upper=False, mirror=True),
        ValueError,
        r"\bmirror needs square matrices.*2 x 4",
    ),
    (
        "unpack-mirror-conj-str",
        lambda: trilu.unpack(np.array(["a", "b", "c"]), mirror="conj"),
        TypeError,
        r"mirror='conj' needs numbers.*" + np.dtype("U1").str,  # (<U1, or >U1)
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
    st.sampled_from(ORDERS),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["fresh", *OUT_MODES]),
)
def test_pack_hypothesis(
    name: str,
    shape: list[int],
    layout_name: str,
    k: int,
    upper: bool,
    order: str,
    seed: int,
    mode: str,
) -> None:
    """Random dtype, shape, layout, k, side and order: pack is m[..., r, c];
    the round trip through unpack is triu/tril."""
    dtype = ALL_DTYPES[name]
    rng = np.random.default_rng(seed)
    if layout_ok(layout_name, dtype, len(shape)):
        x = layout(layout_name, dtype, tuple(shape), rng)
    else:
        x = make(dtype, tuple(shape), rng)
    exp = pack_oracle(x, k, upper, order)
    call = partial(trilu.pack, x, k, upper=upper, order=order)
    if mode == "fresh":
        got = call()
        assert_same(got, exp)
    else:
        check_out(call, x, exp, mode, rng)
        got = exp
    back = trilu.unpack(got, *x.shape[-2:], k, upper=upper, order=order)
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
    st.sampled_from(ORDERS),
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
    order: str,
    seed: int,
    vlayout: str,
    mode: str,
    data: Any,
) -> None:
    """Random dtype, batch, n, m, k, side, order, fill, mirror (square
    matrices) and vector layout: unpack is o[..., r, c] = v over o full of
    the fill, and o[..., c, r] = v (conjugated) where (c, r) is not kept."""
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
    mirror = False
    if cols == n:
        mirror = data.draw(st.sampled_from([False, *mirror_modes(dtype)]))
    exp = unpack_oracle(v, n, cols, k, upper, fill, order, mirror)
    call = partial(
        trilu.unpack, v, n, m, k, upper=upper, order=order, fill=fill, mirror=mirror
    )
    if mode == "fresh":
        assert_same(call(), exp)
    else:
        check_out(call, v, exp, mode, rng)
