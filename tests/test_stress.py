"""Many Python threads hammering trilu at once, checked against numpy.

Written for free-threaded CPython (``nox -s freethreaded`` runs it with the
GIL off, for longer), where every thread runs Python at once; with the GIL it
still overlaps the kernel, which releases the GIL on large calls. Each thread
loops over fresh results, ``out=`` and in-place calls on inputs shared by all
threads, large and small, while another thread keeps changing the thread
count; large results are freed together (the recycling handler's two spare
blocks are fought over). Every result is compared with numpy's.

``TRILU_STRESS_SECONDS`` sets how long it runs (default 1.5 s, in the normal
suite) and ``TRILU_STRESS_THREADS`` how many threads (default 8).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

import numpy as np
from _cases import assert_same, make

import trilu

SECONDS = float(os.environ.get("TRILU_STRESS_SECONDS", "1.5"))
THREADS = int(os.environ.get("TRILU_STRESS_THREADS", "8"))


def _inputs() -> list[np.ndarray]:
    """Shared inputs: threaded sizes, every kernel loop, and small ones."""
    rng = np.random.default_rng(13)
    return [
        make(np.float64, (700, 800), rng),  # 4.5 MB: threaded, rows
        make(np.float32, (1100, 1000), rng)[::-1],  # negative stride
        np.asfortranarray(make(np.int32, (3, 400, 500), rng)),
        make(np.uint8, (20000, 4, 4), rng),  # batched keep-mask
        make(np.complex128, (5, 6), rng),
        make(np.int16, (2, 3, 70), rng),
    ]


def _hammer(
    inputs: list[np.ndarray],
    expected: dict[tuple[int, int, bool], np.ndarray],
    deadline: float,
    seed: int,
    start: threading.Barrier,
    errors: list[str],
    counts: list[int],
) -> None:
    rng = np.random.default_rng(seed)
    keys = list(expected)
    done = 0
    start.wait()
    while time.monotonic() < deadline and not errors:
        held = []
        for _ in range(4):
            i, k, upper = keys[rng.integers(len(keys))]
            x, want = inputs[i], expected[i, k, upper]
            fn: Any = trilu.triu if upper else trilu.tril
            how = int(rng.integers(4))
            if how == 0:  # a fresh result
                got = fn(x, k)
            elif how == 1:  # out=, of another layout
                got = fn(x, k, out=np.empty_like(x, order="K" if done % 2 else "C"))
            elif how == 2:  # in place, on this thread's copy
                got = x.copy()
                fn(got, k, out=got)
            else:  # the ONNX operator
                got = trilu.trilu(x, k, upper)
            try:
                assert_same(got, want)
            except AssertionError as e:
                errors.append(f"input {i}, k={k}, upper={upper}, call kind {how}: {e}")
                return
            held.append(got)
            done += 1
        del held  # large results freed together
    counts.append(done)


def _toggle(deadline: float, start: threading.Barrier) -> None:
    n = 1
    start.wait()
    while time.monotonic() < deadline:
        n = n % 4 + 1
        trilu.set_num_threads(n)
        time.sleep(0.0005)


def test_threads_hammer(threads4: None) -> None:  # noqa: ARG001 (restores the count)
    """THREADS threads for SECONDS: every result is numpy's."""
    inputs = _inputs()
    expected = {
        (i, k, upper): (np.triu if upper else np.tril)(x, k)
        for i, x in enumerate(inputs)
        for k in (-3, 0, 2)
        for upper in (True, False)
    }
    deadline = time.monotonic() + SECONDS
    start = threading.Barrier(THREADS + 1)
    errors: list[str] = []
    counts: list[int] = []
    workers = [
        threading.Thread(
            target=_hammer,
            args=(inputs, expected, deadline, seed, start, errors, counts),
        )
        for seed in range(THREADS)
    ]
    workers.append(threading.Thread(target=_toggle, args=(deadline, start)))
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert not errors, f"wrong results: {errors}"
    assert len(counts) == THREADS
    assert min(counts) > 0, counts
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print(f"{sum(counts)} calls on {THREADS} threads in {SECONDS} s, GIL {gil}")
