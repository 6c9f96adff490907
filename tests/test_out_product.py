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
from typing import Any

import numpy as np
import pytest
from _cases import HANDLERS, assert_same, run_python

import trilu
from trilu import _kernel

SENTINEL = 0x5A


def _padded(
    shape: tuple[int, ...], pad: int, dtype: Any
) -> tuple[np.ndarray, np.ndarray]:
    """A view of shape whose rows sit `pad` elements apart beyond their end,
    in a buffer (returned too) of sentinel bytes."""
    *batch, n, m = shape
    buf = np.full((*batch, n, (m + pad) * np.dtype(dtype).itemsize), SENTINEL, np.uint8)
    view = buf.view(dtype)[..., :m]
    return view, buf


def _strided(
    shape: tuple[int, ...], buf: np.ndarray, strides: tuple[int, ...], dtype: Any
) -> np.ndarray:
    return np.lib.stride_tricks.as_strided(
        buf.view(dtype).reshape(-1), shape, strides, writeable=True
    )


# Each maker: (the input x) -> (out, the whole buffer out lies in)
OutMaker = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def _out_c(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    out = np.empty(x.shape, x.dtype)
    out.view(np.uint8)[...] = SENTINEL
    return out, out


def _out_f(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    buf = _out_c(np.empty(x.shape[::-1], x.dtype))[0]
    return buf.T, buf


def _out_padded(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _padded(x.shape, 3, x.dtype)


def _out_every_other(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every element of out two apart, rows and columns (and batch) alike."""
    big = tuple(2 * s for s in x.shape)
    buf = _out_c(np.empty(big, x.dtype))[0]
    return buf[(slice(None, None, 2),) * x.ndim], buf


def _out_reversed(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    buf = _out_c(x)[0]
    return buf[..., ::-1, ::-1], buf


def _out_transposed(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    buf = _out_c(np.empty(x.shape[:-2] + x.shape[:-3:-1], x.dtype))[0]
    return buf.swapaxes(-1, -2), buf


def _out_batch_step_of_input(x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """out's rows packed, but each matrix rows x the input's row stride after
    the last: the batch steps of out match the input's rows, not out's own."""
    *batch, n, m = x.shape
    w = x.itemsize
    row = abs(x.strides[-2])
    if x.ndim < 3 or row <= m * w or x.strides[-1] != w:
        return None
    step = n * row
    count = int(np.prod(batch)) if batch else 1
    buf = np.full(count * step, SENTINEL, np.uint8)
    strides: list[int] = []
    size = step
    for b in reversed(batch):
        strides.insert(0, size)
        size *= b
    return _strided(x.shape, buf, (*strides, m * w, w), x.dtype), buf


OUTS: dict[str, Any] = {
    "C": _out_c,
    "F": _out_f,
    "padded": _out_padded,
    "every_other": _out_every_other,
    "reversed": _out_reversed,
    "transposed": _out_transposed,
    "batch_step_of_input": _out_batch_step_of_input,
}


def _inputs(
    shape: tuple[int, ...], dtype: Any, rng
) -> Iterator[tuple[str, np.ndarray]]:
    """x in each layout: C, F, padded rows, read backwards along columns or
    rows, transposed, every other element."""
    base = rng.integers(1, 250, shape, np.uint8).astype(dtype)
    yield "C", base
    yield "F", np.asfortranarray(base)
    view, _ = _padded(shape, 5, dtype)
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


@pytest.mark.parametrize("out_name", list(OUTS))
@pytest.mark.parametrize("shape_name", list(SHAPES))
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128], ids=str)
def test_product(out_name: str, shape_name: str, dtype: Any) -> None:
    """Every input layout into every out layout, each k, both triangles."""
    rng = np.random.default_rng(19)
    shape = SHAPES[shape_name]
    for in_name, x in _inputs(shape, dtype, rng):
        made = OUTS[out_name](x)
        if made is None:
            continue
        for k, upper in itertools.product(_ks(*shape[-2:]), (True, False)):
            made = OUTS[out_name](x)
            out, buf = made
            before = x.copy()
            fn = trilu.triu if upper else trilu.tril
            assert fn(x, k, out=out) is out
            where = f"{in_name} into {out_name}, k={k}, upper={upper}"
            try:
                assert_same(out, (np.triu if upper else np.tril)(x, k))
                untouched(out, buf)
                assert_same(x, before)
            except AssertionError as e:
                raise AssertionError(f"{where}: {e}") from None


def untouched(out: np.ndarray, buf: np.ndarray) -> None:
    """The bytes of buf that out does not cover still hold the sentinel.

    out's own elements are set to the sentinel for the look (and put back
    after): then every byte of buf is the sentinel exactly where each byte
    out does not cover still is. One pass over buf, compared a word at a time.
    """
    assert buf.flags.c_contiguous
    raw = buf.reshape(-1).view(np.uint8)  # buf's own memory: a view
    cells = out.view(np.dtype((np.void, out.itemsize)))  # any strides: same width
    assert np.may_share_memory(cells, raw)
    results = cells.copy()
    cells[...] = np.void(bytes([SENTINEL]) * out.itemsize)
    try:
        whole = raw.size - raw.size % 8
        words = raw[:whole].view(np.uint64)
        clean = bool((words == np.uint64(SENTINEL * 0x0101010101010101)).all())
        clean = clean and bool((raw[whole:] == SENTINEL).all())
    finally:
        cells[...] = results
    assert clean, "bytes outside out were written"


def test_batch_merged_with_out_batch_step_of_input() -> None:
    """Whole matrices kept or zeroed merge across the batch only where both
    arrays' batch steps continue their own rows (here out's batch step is
    rows x the input's row stride, not its own)."""
    rng = np.random.default_rng(5)
    x, _ = _padded((4, 5, 6), 2, np.float64)
    x[...] = rng.random((4, 5, 6))
    for k, upper in itertools.product((-7, 7), (True, False)):
        out, buf = _out_batch_step_of_input(x)
        (trilu.triu if upper else trilu.tril)(x, k, out=out)
        assert_same(out, (np.triu if upper else np.tril)(x, k))
        untouched(out, buf)


def test_backwards_columns_into_strided_out() -> None:
    """A row read backwards ([..., ::-1]) into an out whose elements are all
    two or more apart: the backwards loop is for a contiguous out only."""
    rng = np.random.default_rng(6)
    for dtype in (np.uint8, np.int16, np.float32, np.float64, np.complex128):
        x = rng.integers(1, 99, (6, 40, 30)).astype(dtype)[..., ::-1]
        for k, upper in itertools.product((-3, 0, 4), (True, False)):
            out, buf = _out_every_other(x)
            (trilu.triu if upper else trilu.tril)(x, k, out=out)
            assert_same(out, (np.triu if upper else np.tril)(x, k))
            untouched(out, buf)


@pytest.mark.usefixtures("threads4")
def test_threads_start_past_the_first_matrix() -> None:
    """Threads whose share starts past matrix 0 of a batch that keeps three
    unequal batch axes after merging: each seeks its own matrix."""
    rng = np.random.default_rng(7)
    x = rng.random((4, 6, 10, 100, 100))[::2, ::2, ::2]
    for out_name in ("C", "every_other", "transposed"):
        for k, upper in itertools.product((-30, 0, 45), (True, False)):
            out, _ = OUTS[out_name](x)
            assert _kernel.explain(x, k, upper, out)["threads"] == 4
            (trilu.triu if upper else trilu.tril)(x, k, out=out)
            assert_same(out, (np.triu if upper else np.tril)(x, k))
            got = (trilu.triu if upper else trilu.tril)(x, k)
            assert_same(got, (np.triu if upper else np.tril)(x, k))


@pytest.mark.usefixtures("threads4")
@pytest.mark.parametrize("out_name", ["C", "F", "padded", "every_other", "reversed"])
def test_threaded_product(out_name: str) -> None:
    """Large enough for 4 threads: each input layout into out, batch and not."""
    rng = np.random.default_rng(8)
    for shape in ((400, 500), (3, 5, 7, 60, 50)):
        for in_name, x in _inputs(shape, np.float64, rng):
            for k, upper in itertools.product((-40, 0, 33), (True, False)):
                out, buf = OUTS[out_name](x)
                assert _kernel.explain(x, k, upper, out)["threads"] > 1, in_name
                (trilu.triu if upper else trilu.tril)(x, k, out=out)
                assert_same(out, (np.triu if upper else np.tril)(x, k))
                untouched(out, buf)


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
