"""trilu.triu / trilu.tril give numpy.triu / numpy.tril's answer bit for bit.

Every dtype x memory layout x shape x k, with and without ``out=``; the input
is never modified, and ``out=`` returns ``out`` itself.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    K_VALUES,
    LAYOUTS,
    OUT_MODES,
    STRING,
    as_native,
    assert_same,
    check_in_place,
    check_out,
    clamp_k,
    dtype_params,
    every,
    func,
    iter_k_upper,
    layout,
    layout_ok,
    make,
    numpy_oracle,
    run_python,
    snapshot,
    swapped,
    triangle_warnings,
    warned,
)

from trilu import _kernel

BATCH_SHAPE = (3, 4, 5)
SMALL_K = {name: K_VALUES[name] for name in ("0", "1", "-1", "2", "-2", "2**70")}


def check(x: Any, k: Any, upper: bool) -> None:
    """triu/tril of x equals numpy's, and x is unchanged."""
    before = snapshot(x)
    got = func(upper)(x, k)
    assert_same(got, numpy_oracle(x, k, upper))
    assert snapshot(x) == before, "the input was modified"


# --- dtypes x layouts x k -----------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        pytest.param(dt, name, id=f"{dt_id}-{name}")
        for dt_id, dt in ALL_DTYPES.items()
        for name in LAYOUTS
        if layout_ok(name, dt, len(BATCH_SHAPE))
    ],
)
def test_dtype_layout(dtype: np.dtype, name: str, rng) -> None:
    """Every dtype in every layout, for every k (far-out k clamped), both sides."""
    x = layout(name, dtype, BATCH_SHAPE, rng)
    for _, k, upper in iter_k_upper():
        check(x, k, upper)


SHAPES = [
    (1, 6),
    (6, 1),
    (1, 1),
    (4, 4),
    (5, 3),
    (0, 3),
    (3, 0),
    (0, 0),
    (2, 0, 3),
    (0, 3, 3),
    (2, 1, 7),
    (2, 7, 1),
    (2, 3, 1, 4),
    (1, 1, 1, 5),
    (2, 2, 2, 3, 2),
]
SHAPE_DTYPES = {
    n: ALL_DTYPES[n]
    for n in ("bool", "int16", "float64", "clongdouble", "V5", "object", "StringDType")
    if n != "StringDType" or STRING is not None  # StringDType: numpy >= 2
}


@pytest.mark.parametrize("name", ["C", "F", "transposed", "neg_both", "step"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", dtype_params(SHAPE_DTYPES))
def test_shapes(dtype: np.dtype, shape: tuple[int, ...], name: str, rng) -> None:
    """Thin, empty, single-element and many-batch-dim shapes."""
    x = layout(name, dtype, shape, rng)
    for _, k, upper in iter_k_upper():
        check(x, k, upper)


@pytest.mark.parametrize("n", [0, 1, 5])
@pytest.mark.parametrize(
    ("dtype", "variant"),
    [
        pytest.param(dt, variant, id=f"{dt_id}-{variant}")
        for dt_id, dt in ALL_DTYPES.items()
        for variant in ("plain", "reversed", "step", "bcast", "readonly", "swapped")
        if variant != "swapped" or swapped(dt) is not None
    ],
)
def test_1d_input(dtype: np.dtype, n: int, variant: str, rng) -> None:
    """A 1-D input is taken as the rows of an N x N matrix, as in numpy."""
    if variant == "plain":
        x = make(dtype, (n,), rng)
    elif variant == "reversed":
        x = make(dtype, (n,), rng)[::-1]
    elif variant == "step":
        x = make(dtype, (3 * n,), rng)[::3]
    elif variant == "bcast":
        x = np.broadcast_to(make(dtype, (1,), rng), (n,))
    elif variant == "readonly":
        x = make(dtype, (n,), rng)
        x.flags.writeable = False
    else:
        x = make(dtype, (n,), rng).astype(swapped(dtype))
    for _, k, upper in iter_k_upper(SMALL_K):
        check(x, k, upper)


# --- big inputs: the mask path over many matrices, and the threaded path -----------

WIDTH_DTYPES = {
    n: ALL_DTYPES[n]
    for n in ("bool", "int16", "float32", "float64", "complex128", "V5", "U3")
}


@pytest.mark.parametrize("name", ["C", "F", "batch_step", "batch_inner", "neg_rows"])
@pytest.mark.parametrize("dtype", dtype_params(WIDTH_DTYPES))
def test_many_tiny_matrices(dtype: np.dtype, name: str, rng) -> None:
    """A batch of 20000 3x3 matrices (the kernel's masked path), all widths."""
    x = layout(name, dtype, (20000, 3, 3), rng)
    for k in (0, 1, -1, 3):
        for upper in (True, False):
            check(x, k, upper)


@pytest.mark.parametrize("value", ["0", None], ids=["TRILU_AVX2=0", "default"])
def test_mask_loops(value: str | None) -> None:
    """Both loops of the keep-mask AND (AVX2, where the CPU has it, and the
    portable one) give numpy's bytes, fresh, into out= and in place: widths,
    flat and strided batches, and matrices whose bytes are no multiple of 32
    or 8."""
    code = """
        import numpy as np
        import trilu
        from trilu import _kernel
        rng = np.random.default_rng(7)
        for dt in ("bool", "int16", "float32", "float64", "complex128", "V5"):
            for shape in [(3000, 3, 3), (500, 2, 7), (64, 4, 5)]:
                if dt == "bool":
                    x = rng.random(shape) < 0.5
                else:
                    size = (*shape[:-1], shape[-1] * np.dtype(dt).itemsize)
                    x = rng.integers(0, 256, size, dtype=np.uint8).view(dt)
                for v in (x, x[::2], x[:, ::-1]):
                    for k in (-1, 0, 1, 3):
                        for ours, theirs in ((trilu.triu, np.triu), (trilu.tril, np.tril)):
                            want = theirs(v, k).tobytes()
                            assert ours(v, k).tobytes() == want
                            out = np.empty_like(v)
                            assert ours(v, k, out=out).tobytes() == want
                            y = v.copy()
                            assert ours(y, k, out=y).tobytes() == want
        print(_kernel._vector_loops())
    """
    proc = run_python(code, TRILU_AVX2=value)
    assert proc.returncode == 0, proc.stderr
    if value == "0":
        assert proc.stdout.strip() == "portable"
    else:
        assert proc.stdout.strip() in ("avx512", "avx2", "portable")


BIG_SHAPES = {
    "uint8-2200x2100": (np.uint8, (2200, 2100)),
    "float64-770x760": (np.float64, (770, 760)),
    "complex128-batch": (np.complex128, (3, 300, 310)),
    "V5-1000x1000": ("V5", (1000, 1000)),
    "int16-3x1x1000000": (np.int16, (3, 1, 1_000_000)),
    "float32-1000000x2": (np.float32, (1_000_000, 2)),
}


@pytest.mark.usefixtures("threads4")
@pytest.mark.parametrize("name", ["C", "F", "step", "neg_cols", "transposed"])
@pytest.mark.parametrize("case", list(BIG_SHAPES.values()), ids=list(BIG_SHAPES))
def test_large_threaded(case: tuple[Any, tuple[int, ...]], name: str, rng) -> None:
    """Inputs of several MiB, split over kernel threads, still match numpy."""
    dtype, shape = case
    x = layout(name, dtype, shape, rng)
    for k in (0, 7, -300):
        for upper in (True, False):
            check(x, k, upper)


@pytest.mark.usefixtures("threads4")
@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_large_out_modes(upper: bool, rng) -> None:
    """The threaded path with out=: fresh, in place, overlapping, byte-swapped."""
    x = make(np.float64, (800, 900), rng)
    want = numpy_oracle(x, 3, upper)
    f = func(upper)
    out = np.empty((900, 800)).T
    assert f(x, 3, out=out) is out
    assert_same(np.array(out), want)
    y = x.copy()
    assert f(y, 3, out=y) is y
    assert_same(y, want)
    buf = make(np.float64, (801, 900), rng)
    y, out = buf[:-1], buf[1:]
    want2 = numpy_oracle(y.copy(), 3, upper)
    assert f(y, 3, out=out) is out
    assert_same(np.array(out), want2)
    out = np.empty((800, 900), ">f8")
    assert f(x, 3, out=out) is out
    assert_same(as_native(out, want.dtype), want)


# --- out= ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", dtype_params(ALL_DTYPES))
def test_out(dtype: np.dtype, rng) -> None:
    """out= in every layout of _cases' makers (the product of gaps among
    them), and x in each of them (in place): filled with numpy's answer and
    returned; nothing of out's buffer beyond it written; x unchanged."""
    x = make(dtype, (3, 4, 4), rng)

    def check(mode: str) -> None:
        for _, k, upper in iter_k_upper(SMALL_K):
            exp = numpy_oracle(x, k, upper)
            check_out(partial(func(upper), x, k), x, exp, mode, rng)
            oracle = partial(numpy_oracle, k=k, upper=upper)
            check_in_place(partial(func(upper), k=k), oracle, x, mode, rng)

    every(OUT_MODES, check)


OVERLAPS = [
    "overlap_row",
    "overlap_element",
    "overlap_batch",
    "overlap_transposed",
    "swapped_inplace_buffer",
]


def _overlap(mode: str, dtype: np.dtype, rng) -> tuple[np.ndarray, np.ndarray]:
    """(x, out) sharing memory; shapes are (3, 4, 4)."""
    shape = (3, 4, 4)
    if mode == "overlap_row":
        buf = make(dtype, (3, 5, 4), rng)
        return buf[:, :-1], buf[:, 1:]
    if mode == "overlap_element":
        buf = make(dtype, (3 * 16 + 1,), rng)
        return buf[:-1].reshape(shape), buf[1:].reshape(shape)
    if mode == "overlap_batch":
        buf = make(dtype, (4, 4, 4), rng)
        return buf[:-1], buf[1:]
    x = make(dtype, shape, rng)
    if mode == "overlap_transposed":
        return x, x.swapaxes(-1, -2)
    return x, x.view(swapped(dtype))  # the same memory in the other byte order


@pytest.mark.parametrize(
    ("dtype", "mode"),
    [
        pytest.param(dt, mode, id=f"{dt_id}-{mode}")
        for dt_id, dt in ALL_DTYPES.items()
        for mode in OVERLAPS
        if "swapped" not in mode or swapped(dt) is not None
    ],
)
def test_out_overlapping_input(dtype: np.dtype, mode: str, rng) -> None:
    """out= sharing memory with x: numpy's answer of x as it was, returned."""
    for _, k, upper in iter_k_upper(SMALL_K):
        x, out = _overlap(mode, np.dtype(dtype), rng)
        want = numpy_oracle(x.copy(), k, upper)
        assert func(upper)(x, k, out=out) is out
        assert_same(as_native(out, want.dtype), want)


def _views() -> dict[str, np.ndarray]:
    """(2, 3, 3) views of one buffer, in every stride pattern, and of another."""
    buf = np.arange(2 * 6 * 7, dtype=np.int32).reshape(2, 6, 7)
    flat = buf.reshape(-1)
    return {
        "head": buf[:, :3, :3],
        "tail": buf[:, 3:, 4:],
        "inner": buf[:, 1:4, 1:4],
        "steps": buf[:, ::2, ::3],
        "reversed": buf[::-1, ::-2, :3],
        "transposed": buf[:, :3, :3].swapaxes(1, 2),
        "packed": flat[:18].reshape(2, 3, 3),
        "packed_next": flat[18:36].reshape(2, 3, 3),
        "packed_shift": flat[1:19].reshape(2, 3, 3),
        "elsewhere": np.zeros((2, 3, 3), np.int32),
    }


def test_out_overlap_like_numpy() -> None:
    """The kernel's overlap test is np.may_share_memory's (bounds), except
    that out exactly m's memory is in place, not an overlap."""
    views = _views()
    for a in views.values():
        for b in views.values():
            ptr = a.__array_interface__["data"][0]
            same = ptr == b.__array_interface__["data"][0] and a.strides == b.strides
            expected = bool(np.may_share_memory(a, b)) and not same
            assert _kernel.check_out(a, b) is expected


@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_out_1d_input(upper: bool, rng) -> None:
    """A 1-D input with out= of the N x N result."""
    x = make(np.int32, (5,), rng)
    out = np.empty((5, 5), np.int32, order="F")
    assert func(upper)(x, -1, out=out) is out
    assert_same(np.array(out), numpy_oracle(x, -1, upper))


@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_out_list_input(upper: bool) -> None:
    """A list input with out= works like its array."""
    data = [[1, 2, 3], [4, 5, 6]]
    out = np.empty((2, 3), np.asarray(data).dtype)
    assert func(upper)(data, 1, out=out) is out
    assert_same(np.array(out), numpy_oracle(data, 1, upper))


# --- other inputs and k forms ---------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        [[1, 2, 3], [4, 5, 6]],
        ((1.5, 2.5), (3.5, 4.5), (5.5, 6.5)),
        [[True, False], [True, True]],
        [["ab", "c"], ["d", "efg"]],
        [1, 2, 3],
        [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
        [[1 + 2j, 3], [4, 5]],
        [[1, "a"], [None, 2.5]],
    ],
    ids=["list-int", "tuple-float", "bool", "str", "1d", "3d", "complex", "mixed"],
)
def test_sequence_input(data: Any) -> None:
    """Lists and tuples are converted as numpy converts them."""
    for _, k, upper in iter_k_upper(SMALL_K):
        got = func(upper)(data, k)
        assert_same(got, numpy_oracle(data, k, upper))


def _subclass(name: str) -> np.ndarray:
    base = np.arange(1.0, 13.0).reshape(3, 4)
    if name == "matrix":
        return np.matrix(base)
    if name == "masked":
        return np.ma.masked_array(base, mask=base % 3 == 0)
    if name == "recarray":
        return np.rec.fromarrays([np.arange(12).reshape(3, 4)], names="a")

    class Sub(np.ndarray):
        pass

    return base.view(Sub)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("name", ["matrix", "masked", "recarray", "subclass"])
def test_subclass_input_gives_ndarray(name: str) -> None:
    """ndarray subclasses come back as numpy's answer, a base ndarray."""
    x = _subclass(name)
    for _, k, upper in iter_k_upper(SMALL_K):
        check(x, k, upper)


K_FORMS = {
    "int": 1,
    "np.int8": np.int8(1),
    "np.int16": np.int16(-2),
    "np.int32": np.int32(2),
    "np.uint64": np.uint64(1),
    "np.intp": np.intp(-1),
    "0d-int": np.array(2),
    "0d-uint8": np.array(1, np.uint8),
    "0d-float": np.array(-1.0),
    "True": True,
    "False": False,
    "np.True_": np.True_,
    "2.0": 2.0,
    "-1.0": -1.0,
    "np.float32(1.0)": np.float32(1.0),
    "np.float64(-2.0)": np.float64(-2.0),
}


@pytest.mark.parametrize("k", list(K_FORMS.values()), ids=list(K_FORMS))
@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_k_forms(k: Any, upper: bool, rng) -> None:
    """k as numpy ints, 0-d arrays, bools and integral floats, as numpy takes
    it, with numpy's warnings (for floats, from numpy 2.5 on)."""
    x = make(np.int64, (4, 5), rng)
    want = (np.triu if upper else np.tril)(x, clamp_k(k))
    for call in (lambda: func(upper)(x, k), lambda: func(upper)(x.tolist(), k)):
        got, messages = warned(call)
        assert_same(got, want)
        assert messages == triangle_warnings(k, upper, *x.shape)


@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_huge_k_clamped(upper: bool, rng) -> None:
    """k past int64 (or uint64 max) gives all-kept or all-zero, not an error."""
    x = make(np.float32, (2, 3, 4), rng)
    zeros, kept = np.zeros_like(x), x.copy()
    for k in (2**70, np.uint64(2**64 - 1), 2**63, 10**30):
        assert_same(func(upper)(x, k), zeros if upper else kept)
    for k in (-(2**70), -(2**63) - 1, -(10**30)):
        assert_same(func(upper)(x, k), kept if upper else zeros)


@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_keyword_names(upper: bool) -> None:
    """Arguments by numpy's keyword names: m= and k=."""
    x = np.arange(9).reshape(3, 3)
    assert_same(func(upper)(m=x, k=1), numpy_oracle(x, 1, upper))


def test_result_is_new_memory(rng) -> None:
    """Without out=, the result never shares memory with the input."""
    for name in ("C", "F", "bcast_rows", "readonly"):
        x = layout(name, np.int32, (3, 4, 5), rng)
        for upper in (True, False):
            got = func(upper)(x, 100 if upper else -100)
            assert not np.shares_memory(got, x)


@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_dask_array(upper: bool, rng) -> None:
    """A dask array gives a dask array with numpy's values (README: foreign arrays)."""
    da = pytest.importorskip("dask.array")
    x = make(np.float64, (2, 6, 7), rng)
    dx = da.from_array(x, chunks=(1, 4, 3))
    got = func(upper)(dx, 1)
    assert isinstance(got, da.Array)
    assert_same(
        np.asarray(got.compute(scheduler="synchronous")), numpy_oracle(x, 1, upper)
    )


# --- the kernel's size thresholds and batch planning -----------------------------------

THRESHOLD_SHAPES = {
    # rows of 248 / 256 / 264 bytes around the 256-byte masked-path limit
    "row-248B": (np.float64, (5, 4, 31)),
    "row-256B": (np.float64, (5, 4, 32)),
    "row-264B": (np.float64, (5, 4, 33)),
    # matrices of exactly 32 KiB and just over, batches of 3, 4 and 5
    "matrix-32KiB-x3": (np.uint8, (3, 128, 256)),
    "matrix-32KiB-x4": (np.uint8, (4, 128, 256)),
    "matrix-32KiB+-x5": (np.uint8, (5, 129, 255)),
    # blocks of the keep-mask: 4096 bytes hold 113 3x3 int32 matrices
    "mask-blocks-113": (np.int32, (113, 3, 3)),
    "mask-blocks-114": (np.int32, (114, 3, 3)),
    "mask-blocks-227": (np.int32, (227, 3, 3)),
    # widths the masked path ANDs word by word: 3, 6, 10, 12, 24 bytes
    "width-3": ("V3", (50, 4, 5)),
    "width-6": ("V6", (50, 4, 5)),
    "width-10": ("S10", (50, 4, 5)),
    "width-12": ("U3", (50, 4, 5)),
    "width-24": ("U6", (50, 4, 5)),
    # around the 16 KiB GIL-release limit
    "nogil-16KiB-": (np.float32, (64, 63)),
    "nogil-16KiB": (np.float32, (64, 64)),
}


@pytest.mark.usefixtures("threads4")
@pytest.mark.parametrize("name", ["C", "F", "batch_step", "neg_cols"])
@pytest.mark.parametrize(
    "case", list(THRESHOLD_SHAPES.values()), ids=list(THRESHOLD_SHAPES)
)
def test_kernel_thresholds(case: tuple[Any, tuple[int, ...]], name: str, rng) -> None:
    """Shapes on either side of the kernel's method and threading limits."""
    dtype, shape = case
    if not layout_ok(name, dtype, len(shape)):
        name = "C"
    x = layout(name, dtype, shape, rng)
    for _, k, upper in iter_k_upper(SMALL_K):
        check(x, k, upper)
    for upper in (True, False):
        y = x.copy()
        want = numpy_oracle(y, -1, upper)
        assert func(upper)(y, -1, out=y) is y
        assert_same(y, want)


def _max_dims() -> int:
    try:
        np.empty((1,) * 64)
    except ValueError:
        return 32  # numpy 1.x
    return 64


@pytest.mark.parametrize("sliced", [False, True], ids=["contiguous", "sliced"])
@pytest.mark.parametrize("ndim", ["many", "max"])
def test_many_batch_dims(ndim: str, sliced: bool, rng) -> None:
    """Up to numpy's maximum number of dims, mergeable or not."""
    n_batch = _max_dims() - 2 if ndim == "max" else 12
    step = 8 if ndim == "max" else 2  # a size-2 dim every `step` dims
    batch = [2 if i % step == step - 1 else 1 for i in range(n_batch)]
    shape = (*batch, 3, 4)
    if sliced:  # the size-2 dims stepped by 2: no two batch dims merge
        x = make(np.int16, (*(2 * n if n > 1 else 1 for n in batch), 3, 4), rng)
        x = x[(slice(None, None, 2),) * n_batch]
    else:
        x = make(np.int16, shape, rng)
    assert x.shape == shape
    for k in (0, 1, -2):
        for upper in (True, False):
            check(x, k, upper)


@pytest.mark.skipif(STRING is None, reason="StringDType needs numpy 2")
@pytest.mark.parametrize("na", [None, np.nan, "NA"], ids=["None", "nan", "str"])
def test_string_dtype_with_na(na: Any) -> None:
    """StringDType with an NA object: NA elements are kept as NA, as in numpy."""
    dtype = np.dtypes.StringDType(na_object=na)
    x = np.array([["a", na, "c" * 40], [na, "é", ""], ["x", "y", na]], dtype=dtype)
    if isinstance(na, str):
        assert x[0, 1] == "NA"  # a string NA reads back as a plain string

    def values(a: np.ndarray) -> list[Any]:
        return ["<NA>" if not isinstance(v, str) else v for v in a.ravel().tolist()]

    for _, k, upper in iter_k_upper(SMALL_K):
        got = func(upper)(x, k)
        want = numpy_oracle(x, k, upper)
        assert got.dtype == want.dtype
        assert values(got) == values(want)
