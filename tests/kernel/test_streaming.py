"""Results of 32 MiB or more: written with streaming stores, still exact.

Where SSE2 is built, such results are written in 16-byte streaming stores,
with normal stores for the unaligned ends of each run. Rows of any byte length
(so row starts at every alignment), the kept part starting or ending anywhere
inside a 16-byte chunk, elements of 1, 2, 3, 4, 8 and 16 bytes, an unaligned
``out``, fresh results whose zeroed part is never written (calloc pages) or
rewritten over a recycled block, and batches of small matrices ANDed with a
keep-mask: every one must be numpy's result to the bit, on one thread or many.
In place, which is never streamed, is checked at the same sizes.

A Fortran-ordered input's C-ordered result (the tiled walk) streams where its
rows are whole cache lines: its tiles write each row whole, the band and the
fill around it, on columns aligned to the lines of the out (at any address),
and the rest of each row is streamed apart. Rows of other lengths, and
mirror's halves (which may write their band alone), keep normal stores.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from _cases import assert_same, band_oracle, func, mirror_oracle, numpy_oracle

import trilu
from trilu import _kernel

MIB = 1 << 20

# (dtype, shape): every result is at least 32 MiB.
ROWS = {
    "int8-odd-rows": (np.int8, (8200, 4099)),
    "float16": (np.float16, (4100, 4097)),
    "S3": (np.dtype("S3"), (3400, 3300)),
    "float32": (np.float32, (2900, 2897)),
    "float64": (np.float64, (2049, 2049)),
    "float64-F": (np.float64, (2049, 2049)),
    # Fortran order, rows of whole lines: tiles 64, 64 and 128 elements wide
    "float64-F-lines": (np.float64, (2048, 2048)),
    "float32-F-lines": (np.float32, (2900, 2944)),
    "int8-F-lines": (np.int8, (8200, 4160)),
    "complex128": (np.complex128, (1449, 1449)),
    "batch-64x64": (np.float32, (2049, 64, 64)),
}
MASKED = {
    "3x3-float64": (np.float64, (470_000, 3, 3)),
    "3x3-float32": (np.float32, (1_000_000, 3, 3)),
    "3x3-int8": (np.int8, (4_000_000, 3, 3)),
    "5x7-bool": (np.bool_, (1_000_000, 5, 7)),
}
K_UPPER = [(0, True), (7, True), (0, False), (-5, False)]


def make(dtype: np.dtype, shape: tuple[int, ...], fortran: bool) -> np.ndarray:
    """Nonzero bytes everywhere, so a byte left unwritten or zeroed shows."""
    rng = np.random.default_rng(sum(shape))
    raw = rng.integers(
        1, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8
    )
    x = raw.view(dtype).reshape(shape)
    assert x.nbytes >= 32 * MIB
    return np.asfortranarray(x) if fortran else x


def fortran(x: np.ndarray) -> bool:
    return x.flags.f_contiguous and not x.flags.c_contiguous


def garbage_like(
    x: np.ndarray, offset: int, buf: np.ndarray, order: str = "K"
) -> np.ndarray:
    """An out of x's shape and dtype, in x's order (or `order`), full of 0xAB
    bytes, starting offset bytes past the aligned start of buf (x.nbytes + 1
    bytes, refilled rather than allocated anew: faulting in fresh pages costs
    more)."""
    buf.fill(0xAB)
    flat = buf[offset : offset + x.nbytes].view(x.dtype)
    if order == "F" or (order == "K" and fortran(x)):
        return flat.reshape(x.shape[::-1]).T
    return flat.reshape(x.shape)


def results(
    f: Callable[..., np.ndarray], x: np.ndarray, k: int, buf: np.ndarray
) -> Iterator[tuple[str, np.ndarray]]:
    """f(x, k) every way a large result can be written, by name (the outs in
    buf)."""
    # A fresh result when no freed block of its size is kept (from 32 MiB:
    # zeroed pages, only the kept part written), then one over the block of
    # the result just freed, stale bytes and all.
    trilu.triu(np.ones((1024, 1024)))  # freed at once: the kept block is 8 MiB
    yield "fresh", f(x, k)
    yield "recycled", f(x, k)  # check() saw the fresh one freed
    yield "out", f(x, k, out=garbage_like(x, 0, buf))
    yield "unaligned out", f(x, k, out=garbage_like(x, 1, buf))
    if fortran(x):  # numpy's C-ordered result, into out=: the tiled walk
        yield "C out", f(x, k, out=garbage_like(x, 0, buf, "C"))
        yield "unaligned C out", f(x, k, out=garbage_like(x, 1, buf, "C"))
    for offset in (0, 1):
        y = garbage_like(x, offset, buf)
        y[...] = x
        got = f(y, k, out=y)
        assert got is y
        yield ("in place", "unaligned in place")[offset], got


def check(dtype: np.dtype, shape: tuple[int, ...], fortran: bool = False) -> None:
    x = make(dtype, shape, fortran)
    before = x.tobytes()
    buf = np.empty(x.nbytes + 1, np.uint8)
    gc.collect()  # earlier tests' garbage freed now, not between the calls below
    for k, upper in K_UPPER:
        expected = numpy_oracle(x, k, upper)
        for mode, got in results(func(upper), x, k, buf):
            try:
                assert_same(got, expected)
            except AssertionError as e:
                raise AssertionError(f"{mode}, k={k}, upper={upper}: {e}") from None
            if mode in ("fresh", "recycled"):  # numpy's layout; else out's
                assert got.strides == expected.strides
            elif "C out" in mode:
                assert got.flags.c_contiguous
            else:
                assert got.flags.f_contiguous == fortran
            result = weakref.ref(got)
            del got
            # a fresh result is freed here, at once: the next call recycles it
            assert "in place" in mode or result() is None, mode
    assert x.tobytes() == before


@pytest.mark.parametrize("name", list(ROWS))
def test_rows(name: str) -> None:
    dtype, shape = ROWS[name]
    check(np.dtype(dtype), shape, fortran=name.endswith("-F"))


@pytest.mark.parametrize("name", list(MASKED))
def test_masked(name: str) -> None:
    dtype, shape = MASKED[name]
    check(np.dtype(dtype), shape)


@pytest.mark.parametrize("threads", [1, 3])
def test_thread_counts(threads: int) -> None:
    """Threads split the work in grains that need not end on a 16-byte line."""
    previous = trilu.get_num_threads()
    trilu.set_num_threads(threads)
    try:
        check(np.dtype(np.float32), (2900, 2897))
        check(np.dtype(np.float64), (470_000, 3, 3))
    finally:
        trilu.set_num_threads(previous)


def test_tiled_rows_stream_whole_lines() -> None:
    """The tiled walk streams where each row is whole lines and starts where
    the others do in a line (the tiles' columns then align to every row's
    lines): not rows of another length, in the result or in out=."""
    lines = np.asfortranarray(np.empty((2048, 2048)))
    assert _kernel.explain(lines, 0, True)["method"] == "tiled"
    assert _kernel.explain(lines, 0, True)["stream"] == _kernel.STREAMING
    odd = np.asfortranarray(np.empty((2049, 2049)))
    assert _kernel.explain(odd, 0, True)["method"] == "tiled"
    assert not _kernel.explain(odd, 0, True)["stream"]
    padded = np.empty((2048, 2049))[:, :2048]  # rows of 16392 bytes
    assert not _kernel.explain(lines, 0, True, padded)["stream"]


@pytest.mark.parametrize("threads", [1, 3])
def test_tiled_fills_and_mirror(threads: int) -> None:
    """Streamed tiles write the fill around the band (a pattern, a NaN's
    payload), for a band crossing both sides; mirror's transposed half,
    tiled too, writes its band alone, beside the half written first."""
    previous = trilu.get_num_threads()
    trilu.set_num_threads(threads)
    try:
        x = make(np.dtype(np.float64), (2048, 2048), fortran=True)
        buf = np.empty(x.nbytes + 1, np.uint8)
        for fill in (-np.inf, np.array(0x7FF8000000000123, np.uint64).view(np.float64)):
            exp = band_oracle(x, -300, 1000, fill)
            assert_same(trilu.band(x, -300, 1000, fill=fill), exp)
            for offset in (0, 1):
                out = garbage_like(x, offset, buf, "C")
                assert_same(trilu.band(x, -300, 1000, fill=fill, out=out), exp)
        c = np.ascontiguousarray(x)
        for upper in (True, False):
            assert_same(trilu.mirror(c, upper=upper), mirror_oracle(c, upper))
    finally:
        trilu.set_num_threads(previous)
