"""out= in every layout x input in every layout x batch merging x threads.

The kernel's plan depends on how the input's and out's strides relate: rows
contiguous or not, read backwards, batch axes that merge into one run (in
either array alone, or in both), and where a thread's share starts in the
batch. The product of these is walked here, against numpy.triu/tril, bit for
bit, with the bytes of out around the result checked untouched.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    HANDLERS,
    OUT_MODES,
    assert_only_out_written,
    assert_same,
    check_out,
    every,
    func,
    make,
    numpy_oracle,
    run_python,
)

from trilu import _kernel


def _padded(
    shape: tuple[int, ...], pad: int, dtype: Any, rng: np.random.Generator
) -> np.ndarray:
    """An array of shape whose rows sit `pad` elements apart beyond their end."""
    *batch, n, m = shape
    return make(dtype, (*batch, n, m + pad), rng)[..., :m]


def _inputs(
    shape: tuple[int, ...], dtype: Any, rng
) -> Iterator[tuple[str, np.ndarray]]:
    """x in each layout: C, F, padded rows, read backwards along columns or
    rows, transposed, every other element."""
    base = rng.integers(1, 250, shape, np.uint8).astype(dtype)
    yield "C", base
    yield "F", np.asfortranarray(base)
    view = _padded(shape, 5, dtype, rng)
    view[...] = base
    yield "padded", view
    yield "neg_cols", base[..., ::-1]
    yield "neg_rows", base[..., ::-1, :]
    yield "transposed", np.ascontiguousarray(base.swapaxes(-1, -2)).swapaxes(-1, -2)
    big = np.zeros(tuple(2 * s for s in shape), dtype)
    big[(slice(None, None, 2),) * len(shape)] = base
    yield "every_other", big[(slice(None, None, 2),) * len(shape)]


def _ks(n: int, m: int) -> list[int]:
    """Inside the matrix, and beyond it on each side (whole matrices kept or
    zeroed: the batch merges into one run)."""
    return [-(n + 2), -1, 0, 2, m + 2]


SHAPES = {
    "single": (37, 29),
    "batch": (3, 17, 23),
    "batches": (2, 3, 9, 11),
}
DTYPES = [np.uint8, np.float32, np.complex128]


def check_inputs(
    shape: tuple[int, ...],
    dtype: Any,
    out_name: str,
    call: Callable[[np.ndarray, int, bool], Callable[..., np.ndarray]],
    rng: np.random.Generator,
) -> None:
    """call(x, k, upper)(out=out) for every input layout x of shape into
    out= layout out_name (check_out), each k of _ks, both triangles."""
    inputs = dict(_inputs(shape, dtype, rng))

    def check(case: tuple[str, int, bool]) -> None:
        in_name, k, upper = case
        x = inputs[in_name]
        check_out(call(x, k, upper), x, numpy_oracle(x, k, upper), out_name, rng)

    every(itertools.product(inputs, _ks(*shape[-2:]), (True, False)), check)


def plain(x: np.ndarray, k: int, upper: bool) -> Callable[..., np.ndarray]:
    """triu/tril(x, k, out=out)."""
    return partial(func(upper), x, k)


@pytest.mark.parametrize("out_name", OUT_MODES)
@pytest.mark.parametrize("shape_name", list(SHAPES))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_product(out_name: str, shape_name: str, dtype: Any) -> None:
    """Every input layout into every out= layout of _cases' makers, each k,
    both triangles."""
    rng = np.random.default_rng(19)
    check_inputs(SHAPES[shape_name], dtype, out_name, plain, rng)


def _out_batch_step_of_input(
    x: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(out, buf): out's rows packed, but each matrix rows x x's row stride
    after the last (x's rows padded): the batch steps of out match x's rows,
    not out's own; buf (1-D) holds out."""
    *batch, n, m = x.shape
    w = x.itemsize
    assert x.ndim >= 3
    assert abs(x.strides[-2]) > m * w
    assert x.strides[-1] == w
    step = n * abs(x.strides[-2])
    strides: list[int] = []
    size = step
    for b in reversed(batch):
        strides.insert(0, size)
        size *= b
    buf = make(x.dtype, (size // w,), rng)
    out = np.lib.stride_tricks.as_strided(buf, x.shape, (*strides, m * w, w))
    return out, buf


@pytest.mark.parametrize("shape_name", ["batch", "batches"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_batch_merged_with_out_batch_step_of_input(shape_name: str, dtype: Any) -> None:
    """Whole matrices kept or zeroed merge across the batch only where both
    arrays' batch steps continue their own rows (here out's batch step is
    rows x the input's row stride, not its own)."""
    rng = np.random.default_rng(5)
    shape = SHAPES[shape_name]
    x = _padded(shape, 2, dtype, rng)
    for k, upper in itertools.product(_ks(*shape[-2:]), (True, False)):
        out, buf = _out_batch_step_of_input(x, rng)
        before = buf.copy()
        assert func(upper)(x, k, out=out) is out
        assert_same(out, numpy_oracle(x, k, upper))
        assert_only_out_written(out, buf, before)


@pytest.mark.parametrize(
    "out_name", [m for m in OUT_MODES if "elements" in m or m == "strided"]
)
def test_backwards_columns_into_strided_out(out_name: str) -> None:
    """A row read backwards ([..., ::-1]) into an out whose elements are all
    two or more apart: the backwards loop is for a contiguous out only."""
    rng = np.random.default_rng(6)
    for dtype in (np.uint8, np.int16, np.float32, np.float64, np.complex128):
        x = rng.integers(1, 99, (6, 40, 30)).astype(dtype)[..., ::-1]
        for k, upper in itertools.product((-3, 0, 4), (True, False)):
            exp = numpy_oracle(x, k, upper)
            check_out(partial(func(upper), x, k), x, exp, out_name, rng)


def threaded(
    x: np.ndarray, k: int, upper: bool, threads: int | None = None
) -> Callable[..., np.ndarray]:
    """triu/tril(x, k, out=out), once explain says the plan for out has
    `threads` threads (None: more than one)."""

    def call(out: np.ndarray) -> np.ndarray:
        got = _kernel.explain(x, k, upper, out)["threads"]
        assert got > 1 if threads is None else got == threads, got
        return func(upper)(x, k, out=out)

    return call


@pytest.mark.usefixtures("threads4")
def test_threads_start_past_the_first_matrix() -> None:
    """Threads whose share starts past matrix 0 of a batch that keeps three
    unequal batch axes after merging: each seeks its own matrix."""
    rng = np.random.default_rng(7)
    x = rng.random((4, 6, 10, 100, 100))[::2, ::2, ::2]
    for out_name in ("C", "gaps:elements+rows+matrices", "transposed"):
        for k, upper in itertools.product((-30, 0, 45), (True, False)):
            exp = numpy_oracle(x, k, upper)
            check_out(threaded(x, k, upper, 4), x, exp, out_name, rng)
            assert_same(func(upper)(x, k), exp)


# out= layouts for the threaded product: contiguous, Fortran, each row, each
# matrix or every element followed by a gap, reversed
THREADED_OUTS = [
    "C",
    "F",
    "gaps:rows",
    "gaps:matrices",
    "gaps:elements+rows+matrices",
    "reversed",
]


@pytest.mark.usefixtures("threads4")
@pytest.mark.parametrize("out_name", THREADED_OUTS)
def test_threaded_product(out_name: str) -> None:
    """Large enough for 4 threads: each input layout into out, batch and not."""
    rng = np.random.default_rng(8)
    for shape in ((400, 500), (3, 5, 7, 60, 50)):
        check_inputs(shape, np.float64, out_name, threaded, rng)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS and glibc's mallopt")
@pytest.mark.skipif(not HANDLERS, reason="no zero-pages handler")
@pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="ASan's shadow memory cannot live within RLIMIT_AS of VmSize + 2 MiB",
)
def test_zero_pages_without_mmap_are_zeroed() -> None:
    """Where mmap fails (here RLIMIT_AS), zero pages come from calloc: heap
    memory filled with a marker byte and freed never reaches the result."""
    proc = run_python(
        """
        import ctypes, mmap, resource
        import numpy as np
        import trilu
        from trilu import _kernel

        libc = ctypes.CDLL(None)
        # blocks below 64 MiB from the heap, kept there once freed
        libc.mallopt(-3, 64 << 20)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 1 << 30)    # M_TRIM_THRESHOLD
        x = np.random.default_rng(0).random((1000, 1000))
        k = 990                      # 55 elements kept: zero pages
        assert _kernel.explain(x, k, True)["allocation"] == "zero_pages"
        expected = np.triu(x, k)
        stale = np.full(16 << 20, 0xAB, np.uint8)
        where = stale.ctypes.data
        del stale
        with open("/proc/self/status") as status:
            vm = next(int(l.split()[1]) for l in status if l.startswith("VmSize"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, ((vm << 10) + (2 << 20), hard))
        # the premise, mmap failing, does not hold under qemu-user (its VmSize
        # is the guest's, its limit the host's)
        try:
            mmap.mmap(-1, 8 << 20).close()
        except OSError:
            got = trilu.triu(x, k)
        else:
            print("RLIMIT_AS does not bound mmap here")
            raise SystemExit(0)
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        assert where <= got.ctypes.data < where + (16 << 20), "not from the heap"
        assert got.tobytes() == expected.tobytes(), "stale bytes in the result"
        print("ok")
        """
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if proc.stdout.startswith("RLIMIT_AS does not"):
        pytest.skip(proc.stdout.strip())
    assert proc.stdout.strip() == "ok"
