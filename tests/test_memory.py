"""Large results: memory recycled from freed results is fully rewritten.

On Linux a fresh result of 4-256 MiB is allocated by trilu's numpy memory
handler, which keeps the block of the last such result freed and hands it to
the next result of the same size, stale bytes and all (from 64 MiB, after
madvise(MADV_FREE), which may leave some pages stale and others zero).
Whatever was there before, the result must be numpy's to the bit; a result
still referenced is never reused; the handler is only ever attached to
trilu's own results.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from _cases import HANDLERS, assert_same, numpy_oracle, run_python

import trilu
from trilu import _kernel

try:
    from numpy._core.multiarray import get_handler_name
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import get_handler_name

SHAPE = (2048, 2048)  # float64: 32 MiB, recycled, calloc when no block is kept
SIZES = {
    "8MiB-float16": np.float16,
    "32MiB-float64": np.float64,
    "64MiB-complex128": np.complex128,  # lazily freed
}
BUILT = sys.platform.startswith("linux")  # the handlers, on unless TRILU_RECYCLE=0


def address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_large_results_use_the_handler() -> None:
    """4 MiB and more: trilu's handler on Linux; below, numpy's default."""
    expected = "trilu_recycle" if HANDLERS else "default_allocator"
    assert get_handler_name(trilu.triu(np.ones(SHAPE))) == expected
    assert get_handler_name(trilu.triu(np.ones((1024, 512)))) == expected
    assert get_handler_name(trilu.triu(np.ones((1023, 512)))) == "default_allocator"
    assert get_handler_name(np.empty(SHAPE)) == "default_allocator"
    # pack's and unpack's results by the same rule, through the door or not
    big = np.ones((1500, 1500))  # its upper triangle: 8.6 MiB
    assert get_handler_name(trilu.pack(big)) == expected
    assert get_handler_name(trilu.pack(big, order="F", out=None)) == expected
    assert get_handler_name(trilu.pack(big[:1000, :1000])) == "default_allocator"
    assert get_handler_name(trilu.unpack(trilu.pack(big))) == expected


@pytest.mark.parametrize("dtype", list(SIZES.values()), ids=list(SIZES))
@pytest.mark.parametrize("order", ["C", "F"])
def test_recycled_block_fully_rewritten(order: str, dtype: type) -> None:
    """A freed result's block comes back for the next one, which is exact."""
    gc.collect()  # earlier tests' garbage freed now, not between the calls below
    rng = np.random.default_rng(0)
    first = np.asarray(rng.random(SHAPE).astype(dtype), order=order)
    stale = trilu.triu(first, -5)  # nonzero almost everywhere
    where = address(stale)
    del stale  # freed at once (no cycle): its block is the spare one
    # results whose kept part is large enough for the spare block (a mostly
    # zero one comes from zero pages: see kernel/test_bands.py)
    for upper, k in ((False, 3), (True, 700), (False, -300)):
        x = np.asarray(rng.random(SHAPE).astype(dtype), order=order)
        got = (trilu.triu if upper else trilu.tril)(x, k)
        if HANDLERS:
            assert address(got) == where
        expected = numpy_oracle(x, k, upper)
        assert_same(got, expected)
        assert got.strides == expected.strides
        del got


def test_live_result_never_reused() -> None:
    """A result still referenced keeps its bytes; the next one gets other memory."""
    x = np.random.default_rng(1).random(SHAPE)
    keep = trilu.triu(x)
    before = keep.tobytes()
    other = trilu.tril(x)
    assert address(other) != address(keep)
    assert keep.tobytes() == before
    assert_same(other, np.tril(x))


def test_other_sizes_and_dtypes() -> None:
    """The spare block serves only its own size; any other gets fresh pages."""
    rng = np.random.default_rng(2)
    del_me = trilu.triu(rng.random(SHAPE))
    del del_me
    for shape, dtype in (((2049, 2048), np.float64), ((4096, 2048), np.float32)):
        x = rng.random(shape).astype(dtype)
        assert_same(trilu.tril(x, 1), np.tril(x, 1))


def test_resized_result() -> None:
    """ndarray.resize goes through the handler's realloc; freeing still works."""
    x = np.random.default_rng(3).random(SHAPE)
    r = trilu.triu(x)
    r.resize((2048 * 2048 + 1000,), refcheck=False)
    assert_same(r[: x.size].reshape(SHAPE), np.triu(x))
    assert not r[x.size :].any()
    del r
    assert_same(trilu.triu(x), np.triu(x))


def test_concurrent_allocation_and_free() -> None:
    """Python threads taking and freeing large results at once: all exact."""
    rng = np.random.default_rng(4)
    inputs = [rng.random(SHAPE) for _ in range(3)]
    wants = [np.triu(x, i) for i, x in enumerate(inputs)]
    barrier = threading.Barrier(4)

    def run(t: int) -> None:
        barrier.wait()
        for i in range(6):
            j = (t + i) % 3
            assert_same(trilu.triu(inputs[j], j), wants[j])

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(run, range(4)))


def aligned(a: np.ndarray) -> bool:
    """Whether a block of trilu's handlers is aligned as they align it: to
    64 bytes (XLA's CPU client takes only such memory in place), and a
    large one to a page (apart from numpy's large arrays, 16 bytes into
    theirs: no 4K aliasing between a source and its result)."""
    page = a.nbytes >= _kernel.PAGE_ALIGN_MIN
    return address(a) % (4096 if page else 64) == 0


def test_every_block_is_aligned() -> None:
    """trilu's handlers align every block (aligned): recycled blocks,
    calloc's (where they are in use), and the aligned handler's (on every
    platform), of every size, resized up and down (realloc) across the
    page's threshold with their bytes kept; zero pages' to 64 bytes (after
    their header)."""
    x = np.ones(SHAPE)
    for _ in range(2 if HANDLERS else 0):  # the second from the first's spare
        assert aligned(trilu.triu(x))
        assert address(trilu.triu(x, 2000)) % 64 == 0  # zero pages
    previous = _kernel.use_handler(_kernel.ALIGNED)
    try:
        blocks = [np.arange(n, dtype=np.uint8) for n in range(300)]
        edge = _kernel.PAGE_ALIGN_MIN
        blocks += [np.arange(n, dtype=np.uint8)
                   for n in (edge - 1, edge, edge + 5000, 5 << 20, 40 << 20)]  # fmt: skip
        for a in blocks:
            n = a.size
            assert get_handler_name(a) == "trilu_aligned"
            assert aligned(a)
            a.resize(3 * n + 1000, refcheck=False)  # numpy zeroes what it adds
            assert aligned(a)
            a.resize(a.size // 5 + 7, refcheck=False)
            assert aligned(a)
            kept = min(n, a.size)
            assert (a[:kept] == np.arange(kept).astype(np.uint8)).all()
            assert not a[kept:].any()
    finally:
        _kernel.use_handler(previous)
    assert get_handler_name(np.empty(3)) == "default_allocator"


@pytest.mark.parametrize("value", ["0", " 0 ", "1", ""])
def test_recycling_switch(value: str) -> None:
    """TRILU_RECYCLE=0 at import leaves every result to numpy's allocator."""
    code = """
        import numpy as np
        import trilu
        try:
            from numpy._core.multiarray import get_handler_name
        except ImportError:
            from numpy.core.multiarray import get_handler_name
        x = np.ones((2048, 2048))
        r = trilu.triu(x)
        assert np.array_equal(r, np.triu(x))
        print(get_handler_name(r))
    """
    proc = run_python(code, TRILU_RECYCLE=value)
    assert proc.returncode == 0, proc.stderr
    on = BUILT and value.strip() != "0"
    assert proc.stdout.strip() == ("trilu_recycle" if on else "default_allocator")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_spare_block_after_fork() -> None:
    """A forked child inherits the spare block and recycles it correctly."""
    code = """
        import os
        import numpy as np
        import trilu
        x = np.random.default_rng(5).random((2048, 2048))
        r = trilu.triu(x, -3)
        del r
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(trilu.tril(x, 4), np.tril(x, 4))
            ok = ok and np.array_equal(trilu.triu(x, 9), np.triu(x, 9))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"
