"""trilu vs dask's own ways on a chunked dask array, threaded scheduler.

The issue's case: an 8000 x 8000 float64 array in 2000 x 2000 chunks, the result
written with ``dask.array.store`` into a preallocated numpy array (touched once
before timing, so page faults are not counted). The input is ``da.from_array``
of a numpy array, so reading a chunk costs nothing and the times are those of
the operations themselves. For scale, storing the input unchanged is timed too:
the store's own copy, which every method pays. Also timed for information:
``.compute()`` into a fresh array, which adds the final concatenation to both.

The cases: ``triu`` and ``tril`` against ``dask.array.triu``/``tril``; a fill
(``trilu.triu(x, fill=-inf)``, an attention mask) and ``trilu.mirror`` against
what dask offers for them, ``da.where`` on a lazy index comparison
(``da.where(j >= i, x, -inf)`` and ``da.where(j >= i, x, x.T)``).

Runs are interleaved (trilu, dask, trilu, dask, ...) so that load from other
work on the machine hits both alike; the medians and their ratio are printed.

    python bench/bench_dask.py            # the issue's size, 7 runs
    python bench/bench_dask.py --quick    # 800 x 800 in 200 x 200, a smoke run
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import dask
import dask.array as da
import numpy as np

import trilu


def _time(run: Callable[[], object], repeat: int) -> list[float]:
    """Wall times of run, one per repetition."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    """Time every case, check trilu's result against numpy, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small smoke size")
    parser.add_argument("--repeat", type=int, default=None, help="runs per case")
    parser.add_argument("--lock", action="store_true", help="store with lock=True")
    args = parser.parse_args()
    n, chunk = (800, 200) if args.quick else (8000, 2000)
    repeat = args.repeat or (3 if args.quick else 7)

    a = np.random.default_rng(0).random((n, n))
    x = da.from_array(a, chunks=chunk)
    target = np.ones_like(a)  # preallocated and touched
    print(
        f"{n}x{n} float64 in {chunk}x{chunk} chunks, threaded scheduler "
        f"({dask.system.CPU_COUNT} workers), trilu threads "
        f"{trilu.get_num_threads()}, store lock={args.lock}, median of {repeat}"
    )

    with dask.config.set(scheduler="threads"):
        floor = statistics.median(
            _time(lambda: da.store(x, target, lock=args.lock), repeat)
        )
        print(f"  the input itself, stored (for scale): {floor * 1e3:.1f} ms")
        for label, ours, theirs, their_name, expected in _cases(a, x):

            def store(f: Callable[[da.Array], da.Array] = ours) -> None:
                da.store(f(x), target, lock=args.lock)

            def store_dask(f: Callable[[da.Array], da.Array] = theirs) -> None:
                da.store(f(x), target, lock=args.lock)

            store()
            assert np.array_equal(target, expected), "trilu's store is wrong"
            store_dask()
            assert np.array_equal(target, expected), "dask's store is wrong"
            assert np.array_equal(ours(x).compute(), expected)

            cases = {
                "store": (store, store_dask),
                "compute": (
                    lambda f=ours: f(x).compute(),
                    lambda f=theirs: f(x).compute(),
                ),
            }
            for how, (mine, other) in cases.items():
                t_mine: list[float] = []
                t_other: list[float] = []
                for _ in range(repeat):  # interleaved
                    t_mine += _time(mine, 1)
                    t_other += _time(other, 1)
                m, o = statistics.median(t_mine), statistics.median(t_other)
                print(
                    f"  {label:6} {how:7}  trilu {m * 1e3:8.1f} ms   "
                    f"{their_name:24} {o * 1e3:8.1f} ms   "
                    f"{o / m:5.2f}x faster"
                )


Case = tuple[
    str, Callable[[da.Array], da.Array], Callable[[da.Array], da.Array], str, np.ndarray
]


def _cases(a: np.ndarray, x: da.Array) -> list[Case]:
    """(label, trilu's way, dask's way, its name, the expected result) for x,
    the dask array of a. dask has no fill or mirror: its way is ``where`` on
    the index comparison, as a dask user writes it (lazy, chunked as x)."""
    n = a.shape[0]
    i = da.arange(n, chunks=x.chunks[0])[:, None]
    j = da.arange(n, chunks=x.chunks[1])[None, :]
    return [
        ("triu", lambda y: trilu.triu(y, 0), da.triu, "dask.array.triu", np.triu(a)),
        ("tril", lambda y: trilu.tril(y, 0), da.tril, "dask.array.tril", np.tril(a)),
        (
            "fill",
            lambda y: trilu.triu(y, 0, fill=-np.inf),
            lambda y: da.where(j >= i, y, -np.inf),
            "da.where(j>=i, x, -inf)",
            np.where(np.triu(np.ones(a.shape, bool)), a, -np.inf),
        ),
        (
            "mirror",
            trilu.mirror,
            lambda y: da.where(j >= i, y, y.T),
            "da.where(j>=i, x, x.T)",
            np.where(np.triu(np.ones(a.shape, bool)), a, a.T),
        ),
    ]


if __name__ == "__main__":
    main()
