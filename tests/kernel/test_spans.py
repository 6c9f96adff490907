"""The kernel's span model, white box: ``_kernel.band`` keeps lo <= j - i <= hi
of every matrix and fills the rest with one element's bytes.

The oracle works on bytes: the input viewed as void elements of its width,
``fill`` written where ``_cases.keep_mask`` is False. Results are compared
byte for byte (``assert_same``); ``_kernel.explain_band`` says which path ran, so each
path is checked to be the one exercised.
"""

from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from _cases import allocation_name, assert_same, keep_mask, numpy_oracle, snapshot

import trilu
from trilu import _kernel

# dtype -> fills (the bytes of one element; None: zeros)
FILLS = {
    "int8": [None, b"\x7f", b"\x00"],
    "bool": [None, b"\x01"],
    "float16": [None, np.float16(-np.inf).tobytes()],
    "float32": [None, np.float32(-np.inf).tobytes(), b"\xff\xff\xff\xff"],
    "int32": [None, bytes.fromhex("01020304")],
    "float64": [
        None,
        np.float64(-np.inf).tobytes(),
        np.array(0x7FF8000000000123, np.uint64).tobytes(),  # NaN, a payload
        np.float64(-0.0).tobytes(),
    ],
    "complex128": [None, np.complex128(complex(np.nan, -np.inf)).tobytes()],
    "S3": [None, b"abc"],
    "U3": [None, np.array("xy", "U3").tobytes()],
    "V5": [None, b"\x01\x02\x03\x04\x05"],
}


def data(dtype: object, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Random bytes of the dtype (bool: 0/1), none of them 0x00."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return np.ones(shape, dt)
    n = int(np.prod(shape)) * dt.itemsize
    return rng.integers(1, 256, n, dtype=np.uint8).view(dt).reshape(shape)


def oracle(x: np.ndarray, lo: int | None, hi: int | None, fill: bytes | None):
    """x in C order with the element whose bytes are fill (zeros: None) where
    lo <= j - i <= hi does not hold."""
    w = x.dtype.itemsize
    exp = np.array(x, order="C")
    drop = np.broadcast_to(~keep_mask(*x.shape[-2:], lo, hi), x.shape)
    exp.view(np.dtype((np.void, w)))[drop] = np.void(fill or bytes(w))
    return exp


@functools.lru_cache(maxsize=2)
def other_bytes(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Bytes unlike data()'s, for an out= to start from (made once a shape:
    random bytes of a large array cost more than the call under test)."""
    made = data(dtype, shape, seed=1)
    made.flags.writeable = False
    return made


def check(x: np.ndarray, lo, hi, fill, modes=("fresh", "out", "inplace")) -> None:
    """Every mode against the oracle; the input untouched (but in place)."""
    exp = oracle(x, lo, hi, fill)
    before = snapshot(x)
    for mode in modes:
        if mode == "fresh":
            r = _kernel.band(x, None, lo, hi, fill)
            assert r.shape == x.shape
            assert r.dtype == x.dtype
            assert r.strides == trilu.triu(x).strides
        elif mode == "out":
            out = np.empty_like(x)
            np.copyto(out, other_bytes(x.dtype, x.shape))
            r = _kernel.band(x, out, lo, hi, fill)
            assert r is out
        else:
            y = x.copy()
            r = _kernel.band(y, y, lo, hi, fill)
            assert r is y
        assert_same(r, exp)
        assert snapshot(x) == before, (mode, lo, hi, fill)


def bounds(rows: int, cols: int) -> list[tuple[int | None, int | None]]:
    """(lo, hi) from far below to far above the matrix, and lo > hi."""
    edges = [None, -(10**30), -rows - 1, -rows, -2, 0, 1, cols - 1, cols, 10**30]
    pairs = [(lo, hi) for lo in edges for hi in edges]
    return [*pairs, (3, 1), (1, -1), (cols, -rows)]


@pytest.mark.parametrize("dtype", list(FILLS))
def test_every_band_every_fill(dtype: str) -> None:
    """A square, a tall and a wide matrix, every band and fill of the dtype."""
    for shape in [(7, 7), (9, 4), (3, 8)]:
        x = data(dtype, shape)
        for lo, hi in bounds(*shape):
            for fill in FILLS[dtype]:
                check(x, lo, hi, fill)


LAYOUTS = {
    "C": lambda a: a,
    "F": np.asfortranarray,
    "transposed": lambda a: a.swapaxes(-1, -2),
    "rows[::-1]": lambda a: a[..., ::-1, :],
    "cols[::-1]": lambda a: a[..., :, ::-1],
    "steps": lambda a: a[..., ::2, ::3],
    "batch-gapped": lambda a: a[::2],
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["int8", "float32", "float64", "complex128", "V5"])
def test_layouts(layout: str, dtype: str) -> None:
    """Every layout, as a batch, with a band crossing both sides, or one side."""
    x = LAYOUTS[layout](data(dtype, (4, 30, 41)))
    rows, cols = x.shape[-2:]
    for lo, hi in [(-3, 5), (None, 2), (-4, None), (-rows, cols), (6, -6)]:
        for fill in FILLS[dtype]:
            check(x, lo, hi, fill)


@pytest.mark.parametrize("layout", ["C", "F", "transposed", "steps"])
def test_out_in_another_layout(layout: str) -> None:
    """out= laid out otherwise than the input."""
    x = data("float64", (3, 20, 24))
    fill = FILLS["float64"][2]
    exp = oracle(x, -2, 7, fill)
    base = {"transposed": (3, 24, 20), "steps": (3, 40, 72)}.get(layout, x.shape)
    out = LAYOUTS[layout](np.empty(base))
    assert out.shape == x.shape
    _kernel.band(x, out, -2, 7, fill)
    assert_same(out, exp)


METHODS = {
    # shape, layout, band -> the method the crossed rows take
    "rows": ((300, 300), "C", (-5, 5), "rows"),
    "strided": ((300, 300), "steps", (-5, 5), "strided"),
    # 1 MiB and more, elements of 8 bytes or less (else the element walk)
    "tiled": ((1100, 1000), "transposed", (-5, 5), "tiled"),
    "band_mask": ((20000, 7), "C", (-2, 3), "band_mask"),
    "matrices": ((3000, 5, 6), "C", (-1, 2), "matrices"),
    "band_mask_batch": ((100, 200, 10), "C", (-1, 2), "band_mask"),
}


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("dtype", ["int8", "float32", "float64", "complex128", "V5"])
def test_methods(name: str, dtype: str, threads: int) -> None:
    """Each writer with each kind of fill (zeros, one byte value, a pattern),
    on 1 and 4 threads."""
    shape, layout, (lo, hi), method = METHODS[name]
    x = LAYOUTS[layout](data(dtype, shape))
    before = trilu.get_num_threads()
    trilu.set_num_threads(threads)
    try:
        for fill in FILLS[dtype]:
            plan = _kernel.explain_band(x, lo, hi, np.empty(x.shape, x.dtype), fill)
            wide = name == "tiled" and np.dtype(dtype).itemsize > 8
            assert plan["method"] == ("strided" if wide else method), plan
            check(x, lo, hi, fill, modes=("out", "inplace"))
            check(x, lo, hi, fill, modes=("fresh",))
    finally:
        trilu.set_num_threads(before)


@pytest.mark.usefixtures("threads4")
def test_threads_split_a_band() -> None:
    """A band large enough for 4 threads, crossed twice with kept rows between."""
    x = data("float64", (900, 700))
    for fill in FILLS["float64"]:
        plan = _kernel.explain_band(x, -600, 300, np.empty_like(x), fill)
        assert plan["threads"] == 4
        assert plan["edges"] == (0, 399, 601, 900)  # crossed, kept, crossed
        check(x, -600, 300, fill)


def test_runs_match_the_mask() -> None:
    """The five runs: filled, crossed, kept, crossed, filled rows, as the mask
    of each row says (a matrix that is not one kind throughout)."""
    for rows, cols in [(10, 10), (12, 5), (5, 12), (1, 9), (9, 1)]:
        x = data("int8", (rows, cols))
        for lo, hi in bounds(rows, cols):
            plan = _kernel.explain_band(x, lo, hi)
            mask = keep_mask(rows, cols, lo, hi)
            kind = np.where(mask.all(1), 2, np.where(mask.any(1), 1, 0))
            if plan["rows"] != rows:  # the walk ran down the columns
                continue
            if kind.min() == kind.max() and kind[0] != 1:
                continue  # one kind throughout: merged, edges normalised
            e = (0, *plan["edges"], rows)
            want = [0, 1, 2, 1, 0]
            runs = np.concatenate([[want[r]] * (e[r + 1] - e[r]) for r in range(5)])
            assert (runs == kind).all(), (rows, cols, lo, hi, plan["edges"])


def test_uniform_bands_merge_across_the_batch() -> None:
    """Bands that keep all or nothing: a contiguous batch is one run."""
    x = data("float32", (50, 6, 7))
    for lo, hi, fill in [(None, None, None), (5, 2, None), (7, None, b"\x01" * 4),
                         (-10, 10, bytes.fromhex("0000c07f"))]:  # fmt: skip
        plan = _kernel.explain_band(x, lo, hi, None, fill)
        assert plan["matrices"] == 1
        assert plan["rows"] == 300
        check(x, lo, hi, fill)


def test_transposed_walk_swaps_the_band() -> None:
    """A Fortran-order matrix walks its columns: (lo, hi) becomes (-hi, -lo)."""
    x = np.asfortranarray(data("float64", (40, 50)))
    plan = _kernel.explain_band(x, -3, 5, np.empty_like(x, order="F"))
    assert plan["band"] == (-5, 3)
    assert plan["rows"] == 50


def test_triu_tril_are_bands() -> None:
    """triu and tril are band with (k, None) and (None, k), bit for bit."""
    x = data("complex128", (3, 17, 13))
    for k in [-20, -3, 0, 2, 13, 10**20]:
        assert_same(trilu.triu(x, k), oracle(x, k, None, None))
        assert_same(trilu.tril(x, k), oracle(x, None, k, None))
        assert_same(_kernel.band(x, None, k, None), numpy_oracle(x, k, True))
        plan = _kernel.explain(x, k, True)
        assert plan == _kernel.explain_band(x, k, None)


def test_fill_allocations() -> None:
    """Zero pages and calloc are for zeros only: another fill writes every byte."""
    x = data("float64", (1024, 1024))
    zero_pages = allocation_name("zero_pages")
    assert _kernel.explain_band(x, 1000, None)["allocation"] == zero_pages
    assert _kernel.explain_band(x, 1000, None, None, bytes(8))["allocation"] == (
        zero_pages
    )
    for fill in FILLS["float64"][1:3]:
        plan = _kernel.explain_band(x, 1000, None, None, fill)
        assert plan["allocation"] in ("malloc", "recycled")
        check(x, 1000, None, fill, modes=("fresh",))


def test_streaming_fills() -> None:
    """Large results stream (where the build has streaming stores) a one-byte
    fill, and a pattern whose width divides 16 (its 16-byte chunks all
    alike), into aligned and unaligned rows; a pattern of another width is
    written normally."""
    x = data("float32", (3000, 3000))  # 36 MB
    out = np.empty_like(x)
    unaligned = np.empty(x.nbytes + 1, np.uint8)[1:].view(x.dtype).reshape(x.shape)
    for fill in [b"\xff" * 4, FILLS["float32"][1]]:
        for dst in (out, unaligned):
            plan = _kernel.explain_band(x, -2, 2, dst, fill)
            assert plan["stream"] == _kernel.STREAMING
            _kernel.band(x, dst, -2, 2, fill)
            assert_same(dst, oracle(x, -2, 2, fill))
    v = data("V5", (2700, 2700))  # 36 MB
    assert not _kernel.explain_band(v, -2, 2, None, FILLS["V5"][1])["stream"]
    exp = oracle(v, -2, 2, FILLS["V5"][1])
    assert_same(_kernel.band(v, None, -2, 2, FILLS["V5"][1]), exp)


def test_fill_of_the_wrong_size() -> None:
    x = data("float64", (4, 4))
    with pytest.raises(ValueError, match="8 bytes"):
        _kernel.band(x, None, 0, None, b"\x00" * 4)
    with pytest.raises(ValueError, match="8 bytes"):
        _kernel.band(x, None, 0, None, 0.0)


LEVELS = {"portable": {"TRILU_AVX2": "0"}, "avx2": {"TRILU_AVX512": "0"}, "widest": {}}


@pytest.mark.parametrize("level", list(LEVELS))
def test_vector_loops_with_a_fill(level: str) -> None:
    """Each level of _simd.h's loops (portable, AVX2, the widest the CPU has)
    against the oracle, with every fill: the keep-mask AND of short rows and
    tiny matrices, and rows long enough for the row loop (one each:
    AVX-512's, or AVX2's for triu's and tril's rows) over every band, their
    batches contiguous, sliced or with rows apart."""
    # Imported here, not at the top: the fresh interpreter imports this module
    # for its helpers, and _cases's imports (ml_dtypes: 1-1.5 s) are not needed.
    from _cases import run_python  # noqa: PLC0415

    code = f"""
        import numpy as np
        from trilu import _kernel
        import sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from test_spans import FILLS, bounds, check, data
        for dtype in ["int8", "float32", "float64", "complex128", "V5"]:
            for shape in [(3000, 5, 6), (20000, 7), (40, 33, 3)]:
                x = data(dtype, shape)
                for fill in FILLS[dtype]:
                    plan = _kernel.explain_band(x, -1, 2, np.empty_like(x), fill)
                    assert plan["method"] in ("matrices", "band_mask"), plan
                    check(x, -1, 2, fill)
        rows = 0
        for dtype in FILLS:
            cols = -(-_kernel._vector_row_bytes()[0] // np.dtype(dtype).itemsize) + 3
            x = data(dtype, (4, 9, cols))
            for v in (x, x[::2], x[:, ::2]):
                for lo, hi in bounds(9, cols):
                    for fill in FILLS[dtype]:
                        plan = _kernel.explain_band(v, lo, hi, None, fill)
                        rows += plan.get("vector", False)
                        check(v, lo, hi, fill)
        print(_kernel._vector_loops(), rows > 0)
    """
    proc = run_python(code, **LEVELS[level])
    assert proc.returncode == 0, proc.stderr
    loops, vector = proc.stdout.split()
    assert vector == str(loops != "portable")  # the row loop, where it exists
    if level != "widest":  # (a CPU without AVX2 runs the portable loops)
        assert loops in {"portable": ["portable"], "avx2": ["avx2", "portable"]}[level]


@pytest.mark.parametrize("level", list(LEVELS))
def test_transposed_walk_at_each_level(level: str) -> None:
    """The transposed walk (TILED) at each level of _simd.h: its 8-byte runs
    along rows (4x4 blocks with AVX2) and those of the other tiled widths, a
    Fortran-ordered input's every band (and a band of few diagonals, whose
    runs start and end a row later each) and its fills, against the oracle."""
    from _cases import run_python  # noqa: PLC0415  (as above)

    code = f"""
        import numpy as np
        from trilu import _kernel
        import sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from test_spans import FILLS, bounds, check, data
        for dtype in ["float64", "complex64", "int8", "float32", "int16"]:
            n = max(-(-(1 << 20) // (403 * np.dtype(dtype).itemsize)), 64)
            x = data(dtype, (403, n)).T        # its 403 columns span 1 MiB or more
            for lo, hi in [*bounds(*x.shape), (-2, 1), (0, 2), (-5, -3)]:
                plan = _kernel.explain_band(x, lo, hi, None, None)
                assert plan["method"] == "tiled", plan
                check(x, lo, hi, None, modes=("fresh",))
            for fill in FILLS.get(dtype, [None]):
                check(x, -3, 7, fill, modes=("fresh", "out"))
        print(_kernel._vector_loops())
    """
    proc = run_python(code, **LEVELS[level])
    assert proc.returncode == 0, proc.stderr
    if level != "widest":
        assert proc.stdout.split() in (["portable"], [level])


def _mask_jobs() -> list[tuple[np.ndarray, int | None, int | None, bytes | None]]:
    """Jobs with masks (band_mask, matrices) that differ from the first in
    one thing each of what the masks depend on."""
    x = data("int8", (64, 64))
    f4 = data("float32", (64, 30))  # (rows short of the AVX-512 row loop's)
    batch = data("int16", (300, 5, 6))
    return [
        (x, 1, None, None),
        (x, 2, None, None),  # the band's lower edge
        (x, 1, 40, None),  # its upper edge
        (data("int8", (64, 63)), 1, None, None),  # the columns
        (data("int8", (63, 64)), 1, None, None),  # the rows
        (data("uint16", (64, 32)), 1, None, None),  # the width (same bytes)
        (x, 1, None, b"\x7f"),  # a fill
        (x, 1, None, b"\x01"),  # another fill
        (f4, 1, None, FILLS["float32"][1]),  # a fill element
        (f4, 1, None, b"\x01\x00\xc0\x7f"),  # another element (a NaN)
        (batch, -1, 2, None),  # whole matrices (matrices)
        (batch[:7], -1, 2, None),  # a smaller block of them
        (batch, -1, 3, None),
    ]


def test_kept_masks_are_the_jobs_own() -> None:
    """A thread keeps its last job's masks for its next: a repeated job builds
    none, and a job that differs in anything the masks depend on builds its
    own, in any order of jobs, with every result the oracle's."""
    jobs = _mask_jobs()
    for x, lo, hi, fill in jobs:
        assert _kernel.explain_band(x, lo, hi, None, fill)["method"] in (
            "band_mask", "matrices"
        )  # fmt: skip
    last = None
    for order in (jobs, jobs[::-1], jobs[::2] + jobs[1::2]):
        for job in order:
            x, lo, hi, fill = job
            before = _kernel._mask_builds()
            assert_same(_kernel.band(x, None, lo, hi, fill), oracle(x, lo, hi, fill))
            built = 0 if job is last else 1  # (an order may start with the last)
            assert _kernel._mask_builds() == before + built
            last = job
            exp = oracle(x, lo, hi, fill)
            for _ in range(2):  # the same job again, fresh and into out: none built
                assert_same(_kernel.band(x, None, lo, hi, fill), exp)
                out = np.empty_like(x)
                assert_same(_kernel.band(x, out, lo, hi, fill), exp)
            assert _kernel._mask_builds() == before + built


@pytest.mark.parametrize("level", list(LEVELS))
def test_in_cache_matrices_take_the_in_cache_walks(level: str) -> None:
    """in_cache_walks at each level of _simd.h's loops."""
    if level == "widest":
        in_cache_walks()
        return
    from _cases import run_python  # noqa: PLC0415 (as above)

    proc = run_python(
        f"""
        import sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        from test_spans import in_cache_walks
        in_cache_walks()
        """,
        **LEVELS[level],
    )
    assert proc.returncode == 0, proc.stderr


def in_cache_walks() -> None:
    """The plans of matrices in cache: rows under 512 bytes whose mask fits
    the kept slot are ANDed with it, but for rows the level's row loop
    writes in one loop each (AVX-512's, or AVX2's triu and tril rows up to
    its ramp's length): from the first of _vector_row_bytes, or from its
    second where the mask and the matrix's source and result outgrow L1D;
    longer rows are copied without fetching rows ahead, which only a source
    beyond the L2 does."""
    always, outgrown = _kernel._vector_row_bytes()
    # each level's row loop, where it has one, from the shorter length
    assert _kernel._row_loop(outgrown, True) == (_kernel._vector_loops() != "portable")
    for dtype, n in [("int8", 64), ("int8", 256), ("float32", 64), ("float64", 22),
                     ("int16", 127), ("int16", 95), ("float64", 45), ("int8", 128),
                     ("float32", 40), ("int8", 96)]:  # fmt: skip
        row = n * np.dtype(dtype).itemsize
        for k, upper in [(0, True), (-1, False), (5, True)]:
            plan = _kernel.explain(data(dtype, (n, n)), k, upper)
            e = plan["edges"]
            mask = ((e[1] - e[0]) + (e[3] - e[2])) * row
            in_l1 = mask + 2 * n * row <= _kernel._l1d_bytes()
            looped = _kernel._row_loop(row, True) and (
                row >= always or (row >= outgrown and not in_l1)
            )
            want = ("rows", True) if looped else ("band_mask", False)
            assert (plan["method"], plan["vector"]) == want, (dtype, n, k, plan)
            check(
                data(dtype, (3, n, n)), k if upper else None, None if upper else k, None
            )
    # a band's crossed rows, two edges each, keep their mask, in L1D or not
    x = data("int8", (4, 160, 160))
    assert _kernel.explain_band(x, -3, 3, None, None)["method"] == "band_mask"
    check(x, -3, 3, None)
    for dtype, n in [("float32", 128), ("int8", 362), ("float64", 256),
                     ("complex128", 32), ("float32", 362)]:  # fmt: skip
        plan = _kernel.explain(data(dtype, (n, n)), 0, True)
        row = n * np.dtype(dtype).itemsize
        assert (plan["method"], plan["prefetch"], plan["vector"]) == (
            "rows",
            False,
            _kernel._row_loop(row, True),
        ), (dtype, n)
    for shape in [(1024, 1024), (4, 256, 256)]:  # 4 MiB and 1 MiB of float32
        plan = _kernel.explain(data("float32", shape), 0, True)
        assert (plan["method"], plan["prefetch"], plan["vector"]) == (
            "rows",
            True,
            False,
        ), shape
        check(data("float32", shape), 0, None, None, modes=("fresh", "out"))
    # a batch of short rows beyond the L2 keeps the AND
    plan = _kernel.explain(data("float32", (1024, 64, 64)), 0, True)
    assert (plan["method"], plan["prefetch"], plan["vector"]) == (
        "band_mask",
        True,
        False,
    )
    # in place, the kept part is already there: the row loop would rewrite it
    x = data("int8", (256, 256))
    assert not _kernel.explain(x, 0, True, x)["vector"]


def test_kept_masks_are_each_threads() -> None:
    """Each thread keeps its own: threads that run different jobs at once
    each get their job's result, every time."""
    jobs = _mask_jobs()

    def run(first: int) -> list[bool]:
        same = []
        for turn in range(40):
            x, lo, hi, fill = jobs[(first + turn // 4) % len(jobs)]
            got = _kernel.band(x, None, lo, hi, fill)
            same.append(got.tobytes() == oracle(x, lo, hi, fill).tobytes())
        return same

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(run, range(4)))
    assert all(all(r) for r in results)


@pytest.mark.parametrize("ndim", [0, 1])
def test_needs_matrices(ndim: int) -> None:
    """One check of the dimensions, for a call and for explain's plans alike:
    below two, a ValueError, not a plan read from dimensions it lacks."""
    x = np.zeros((3,) * ndim)
    match = f"2 or more dimensions, got {ndim}"
    with pytest.raises(ValueError, match=match):
        _kernel.band(x, None, 0, None)
    with pytest.raises(ValueError, match=match):
        _kernel.explain_band(x, 0, None)
    with pytest.raises(ValueError, match=match):
        _kernel.explain(x, 0, True)
