"""The tiled walk (TILED): an input that runs down its columns into a result
whose rows are contiguous, as numpy's C-ordered result of a Fortran or
transposed input, for matrices large enough to take it (1 MiB and more).

Every width, odd ones included, goes through the tile's buffer (the
transposed walk pack, unpack and squareform share). Each is checked bit for
bit against numpy, fresh and into out=, on 1 and 4 threads, with k inside
and beyond.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _cases import assert_same, make

import trilu
from trilu import _kernel

# (dtype, rows, cols): about 1.1 MiB a matrix
SIZES = [
    ("int8", 1100, 1000),
    ("int16", 800, 700),
    ("S3", 700, 560),
    ("float32", 600, 500),
    ("V6", 500, 380),
    ("float64", 400, 350),
]


def inputs(dtype: str, rows: int, cols: int, rng) -> dict[str, np.ndarray]:
    """The layouts that run down their columns."""
    base = make(np.dtype(dtype), (2, cols, rows), rng)
    return {
        "F": np.asfortranarray(base[0].T),
        "swapaxes": base.swapaxes(-1, -2),
        "F rows[::-1]": np.asfortranarray(base[0].T)[::-1],
        "F, every other row": np.asfortranarray(
            make(np.dtype(dtype), (2 * rows, cols), rng)
        )[::2],
    }


@pytest.mark.parametrize(("dtype", "rows", "cols"), SIZES, ids=[s[0] for s in SIZES])
def test_tiled(dtype: str, rows: int, cols: int, threads: int) -> None:
    assert trilu.get_num_threads() == threads
    rng = np.random.default_rng(20)
    for name, x in inputs(dtype, rows, cols, rng).items():
        for k, upper in itertools.product(
            (-rows - 1, -37, 0, 5, cols + 1), (True, False)
        ):
            fn = trilu.triu if upper else trilu.tril
            expected = (np.triu if upper else np.tril)(x, k)
            plan = _kernel.explain(x, k, upper)
            crossed = plan["lead"] != plan["trail"]
            assert plan["method"] == "tiled" or not crossed, (name, k, plan)
            where = f"{name}, k={k}, upper={upper}"
            got = fn(x, k)
            assert got.strides == expected.strides, where
            assert_same(got, expected)
            out = np.empty(x.shape, x.dtype)
            out.view(np.uint8)[...] = 0x33  # stale bytes, to be overwritten
            assert fn(x, k, out=out) is out
            assert_same(out, expected)


def test_small_and_wide_matrices_take_the_element_walk() -> None:
    """Below 1 MiB a matrix's lines stay in cache for the element walk, and
    elements of 16 bytes waste little of a line: neither is tiled."""
    rng = np.random.default_rng(21)
    small = np.asfortranarray(make(np.float64, (300, 400), rng))  # 960 KB
    wide = np.asfortranarray(make(np.complex128, (400, 400), rng))  # 2.5 MB
    large = np.asfortranarray(make(np.float64, (400, 400), rng))  # 1.3 MB
    assert _kernel.explain(small, 0, True)["method"] == "strided"
    assert _kernel.explain(wide, 0, True)["method"] == "strided"
    assert _kernel.explain(large, 0, True)["method"] == "tiled"
    assert _kernel.explain(large, 0, True, order="K")["method"] != "tiled"
