"""squareform: scipy.spatial.distance.squareform's drop-in, against scipy itself.

Every input scipy takes, walked as a product: vectors and matrices of every
dtype and layout (lists and scalars too), sizes from n = 0 up to matrices
read by tiles on 1 and 4 threads, the checks on and off over matrices that
pass them and that fail each (an asymmetric pair anywhere, a nonzero or NaN
diagonal, zeros of either sign), ``force`` in every form. Each call gives
scipy's result bit for bit (dtype included) or scipy's exception type, with a
message that says what scipy's says. scipy is needed (importorskip), but for
the arrays of references, whose elements scipy copies without counting their
references: those are checked against pack's and unpack's oracles.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    assert_same,
    dtype_params,
    every,
    make,
    pack_oracle,
    snapshot,
    unpack_oracle,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trilu

distance = pytest.importorskip("scipy.spatial.distance")

# What each of scipy's messages says, and what trilu's must say too.
MEANINGS = {
    "must be symmetric": r"\bX\b.*must be symmetric",
    "diagonal must be zero": r"\bX\b.*diagonal must be zero",
    "must be square": r"\bX\b.*must be square",
    "binomial coefficient": r"\bX has \d+ elements.*n \* \(n - 1\) / 2",
    "Forcing 'tomatrix'": r"force='tomatrix'.*not a distance vector",
    "Forcing 'tovector'": r"force='tovector'.*not a distance matrix",
    "dimensional": r"\bX must be one or two dimensional",
}

# the dtypes whose elements are references, which scipy's C code copies as
# bytes: not compared with scipy
REFERENCES = {name for name, dt in ALL_DTYPES.items() if dt.hasobject}


def outcome(call: Any) -> tuple[str, Any]:
    """("ok", result) or ("raised", exception)."""
    try:
        return "ok", call()
    except Exception as error:  # noqa: BLE001 (compared with scipy's)
        return "raised", error


def same_as_scipy(x: Any, **kw: Any) -> None:
    """trilu.squareform(x, **kw) does what scipy's does: the same result bit
    for bit, or the same exception type with a message of the same meaning;
    x unchanged."""
    before = snapshot(x) if isinstance(x, np.ndarray) else None
    theirs = outcome(lambda: distance.squareform(x, **kw))
    ours = outcome(lambda: trilu.squareform(x, **kw))
    if before is not None:
        assert snapshot(x) == before, "the input was modified"
    if theirs[0] == "ok":
        assert ours[0] == "ok", f"trilu raised {ours[1]!r}, scipy gave a result"
        assert_same(ours[1], theirs[1])
        return
    assert ours[0] == "raised", f"scipy raised {theirs[1]!r}, trilu did not"
    assert type(ours[1]) is type(theirs[1]), f"{ours[1]!r} vs scipy's {theirs[1]!r}"
    for phrase, meaning in MEANINGS.items():
        if phrase in str(theirs[1]):
            assert re.search(meaning, str(ours[1])), (
                f"{ours[1]!r} does not say what scipy's {theirs[1]!r} says"
            )


def distances(dtype: np.dtype, n: int, rng: np.random.Generator) -> np.ndarray:
    """A condensed vector for n points: random values of the dtype (random
    bytes: NaNs and zeros of either sign for floats), zeros and ones for
    bool."""
    return make(dtype, (n * (n - 1) // 2,), rng)


def matrices(v: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Square matrices around the symmetric one of v (zero diagonal): itself,
    one pair unequal (first, last, and where tiles meet), the diagonal
    nonzero (first, last), NaN on it, -0.0 on it, both failures at once."""
    base = unpack_oracle(v, n, n, 1, True, None, "C", True)
    out = {"symmetric": base}
    if n == 0:
        return out
    one = make(v.dtype, (4,), np.random.default_rng(n))  # values for the changes
    for name, (i, j) in {"pair-first": (0, n - 1), "pair-last": (n - 1, n - 2),
                         "pair-tile": (n // 2, min(n - 1, 70)),
                         "diag-first": (0, 0), "diag-last": (n - 1, n - 1)}.items():  # fmt: skip
        if i == j or n > 1:
            changed = base.copy()
            changed[i, j] = one[0] if one[0] != base[i, j] else one[1]
            out[name] = changed
    if base.dtype.kind in "fc" and not base.dtype.hasobject:
        for name, value in {"diag-nan": np.nan, "diag-negzero": -0.0}.items():
            changed = base.copy()
            changed[n - 1, n - 1] = value
            out[name] = changed
    if n > 1:
        both = out["diag-first"].copy()
        both[n - 1, 0] = one[2] if one[2] != both[n - 1, 0] else one[3]
        out["both"] = both
    return out


SIZES = [0, 1, 2, 3, 7, 130]


@pytest.mark.parametrize(
    "dtype", [p for p in dtype_params(ALL_DTYPES) if p.id not in REFERENCES]
)
def test_like_scipy(dtype: np.dtype, rng) -> None:
    """Every dtype, vector and matrix, checks on and off, each way of
    failing them, C- and Fortran-ordered and reversed: scipy's result or
    scipy's exception."""

    def check(n: int) -> None:
        v = distances(dtype, n, rng)
        for x in (v, v[::-1]):
            same_as_scipy(x)
            same_as_scipy(x, force="tomatrix")
            same_as_scipy(x, force="tovector")
        for x, checks in itertools.product(matrices(v, n).values(), (True, False)):
            for m in (x, np.asfortranarray(x), x[::-1, ::-1]):
                same_as_scipy(m, checks=checks)
            same_as_scipy(x, force="TOVECTOR", checks=checks)
            same_as_scipy(x, force="tomatrix", checks=checks)

    every(SIZES, check)


@pytest.mark.parametrize("count", [2, 4, 5, 7, 8, 9, 11, 1000])
def test_vector_length_fits_no_n(count: int) -> None:
    """A length that is no n (n - 1) / 2: scipy's ValueError, naming the
    length and the two nearest."""
    v = np.ones(count)
    same_as_scipy(v)
    with pytest.raises(ValueError, match=rf"\b{count} elements\b.*n=\d+ has"):
        trilu.squareform(v)


SHAPES = [(2, 3), (3, 2), (0, 3), (1, 0), (2, 2, 2), (1, 1, 1), (0, 0, 0), (2, 1, 1, 1)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_shapes_scipy_refuses(shape: tuple[int, ...]) -> None:
    """Not square, or neither 1-D nor 2-D: scipy's ValueError, whatever
    force says."""
    x = np.zeros(shape)
    for force in ("no", "tovector", "tomatrix"):
        same_as_scipy(x, force=force)


INPUTS = {
    "scalar": 5.0,
    "np-scalar": np.float32(2.0),
    "0-d": np.array(7, np.int16),
    "empty-list": [],
    "list": [1, 2, 3],
    "nested-list": [[0, 1, 2], [1, 0, 3], [2, 3, 0]],
    "bad-nested-list": [[0, 1], [2, 0]],
    "bools": [True, False, True],
    "strings": ["a", "bc", "d"],
    "empty-matrix": [[]],
    "one": [[0]],
    "one-nonzero": [[4]],
}


@pytest.mark.parametrize("x", list(INPUTS.values()), ids=list(INPUTS))
def test_array_likes(x: Any) -> None:
    """Lists, scalars (one element) and 0-d arrays, as scipy converts them."""
    for force, checks in itertools.product(
        ("no", "tomatrix", "tovector"), (True, False)
    ):
        same_as_scipy(x, force=force, checks=checks)


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_references(name: str, rng) -> None:
    """Object and StringDType: unpack's and pack's oracles, the elements the
    very same objects; the checks as numpy compares them."""
    dtype = ALL_DTYPES[name]
    for n in (0, 1, 2, 5):
        v = distances(dtype, n, rng)
        m = trilu.squareform(v)
        exp = (
            unpack_oracle(v, n, n, 1, True, None, "C", True)
            if n
            else np.zeros((1, 1), dtype)
        )
        assert_same(m, exp)
        assert_same(trilu.squareform(m, checks=False), pack_oracle(exp, 1, True))
    v = np.array([1, "x", None], object)
    m = trilu.squareform(v)
    assert m[0, 1] is v[0]
    assert m[1, 0] is v[0]
    assert m[2, 1] is v[2]
    assert_same(trilu.squareform(m), v)  # symmetric; 0 == 0 on the diagonal
    m[0, 0] = "y"
    with pytest.raises(ValueError, match="diagonal must be zero"):
        trilu.squareform(m)


# --- every place a check can fail, around the blocks in registers ---------------

# numbers of 4 and 8 bytes (the blocks in registers, 16x16 and 8x8: floats,
# integers, of either byte order) and some the tiles check (complex, float16)
PAIRED = ["float32", "float64", "int32", "uint64", ">i4", "<u8", "complex64", "float16"]
PAIRED_SIZES = [1, 2, 7, 8, 9, 15, 16, 17, 24, 33]


@pytest.mark.parametrize("dtype", PAIRED)
def test_every_place(dtype: str, rng) -> None:
    """Each pair made unequal in turn (upper element or lower), each
    diagonal element made nonzero, NaN and -0.0 in turn, in matrices that
    end inside, at and past a block's edge: scipy's result or error."""

    def check(n: int) -> None:
        v = distances(np.dtype(dtype), n, rng)
        if v.dtype.kind in "fc":  # no NaN: the matrix passes the checks
            v[np.isnan(v)] = 1
        base = distance.squareform(v)
        same_as_scipy(base)
        values = [1, -0.0, np.nan] if base.dtype.kind in "fc" else [1]
        for (i, j), value in itertools.product(np.ndindex(n, n), values):
            if i != j and value != 1:
                continue
            bad = base.copy()
            bad[i, j] = value if i == j or bad[i, j] != value else 2
            same_as_scipy(bad)

    every(PAIRED_SIZES, check)


# --- large: read by tiles, on threads ---------------------------------------------

LARGE = {"float64": (np.float64, 700), "int8": (np.int8, 1500),
         "complex64": (np.complex64, 400), "float16": (np.float16, 900),
         "float32": (np.float32, 650), "int64": (np.int64, 550)}  # fmt: skip


@pytest.mark.parametrize("case", list(LARGE.values()), ids=list(LARGE))
def test_large(case: tuple[Any, int], threads: int, rng) -> None:
    """Several MiB on 1 and 4 threads: each way, and each way of failing the
    checks, at random places (one pair, one diagonal element)."""
    assert trilu.get_num_threads() == threads
    dtype, n = case
    v = make(dtype, (n * (n - 1) // 2,), rng)
    if np.dtype(dtype).kind in "fc":  # no NaN: the matrix passes the checks
        v[np.isnan(v)] = 1
    m = distance.squareform(v)
    assert_same(trilu.squareform(v), m)
    assert_same(trilu.squareform(m), distance.squareform(m))
    for _ in range(4):
        i, j = rng.integers(0, n, 2)
        bad = m.copy()
        bad[i, j] = 1 if bad[i, j] != 1 else 2
        same_as_scipy(bad)
        same_as_scipy(bad, checks=False)


def test_dask_refused() -> None:
    """squareform takes numpy arrays: a dask array is pack's TypeError (dask
    needed)."""
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match=r"^squareform takes numpy arrays.*dask"):
        trilu.squareform(da.zeros(3))
    with pytest.raises(TypeError, match=r"^squareform takes numpy arrays.*dask"):
        trilu.squareform(da.zeros((3, 3)))


def test_force_not_a_string() -> None:
    """force is a string: anything else is a TypeError naming force (scipy
    fails on its .lower() with an AttributeError)."""
    with pytest.raises(TypeError, match=r"\bforce must be a str, got int"):
        trilu.squareform(np.zeros(3), force=1)


# --- properties -----------------------------------------------------------------

_HYP_DTYPES = [n for n in ALL_DTYPES if n not in REFERENCES]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_HYP_DTYPES),
    st.integers(0, 40),
    st.integers(0, 2**32 - 1),
    st.lists(st.tuples(st.integers(0, 39), st.integers(0, 39)), max_size=3),
    st.booleans(),
    st.sampled_from(["no", "tovector", "tomatrix"]),
)
def test_hypothesis(
    name: str,
    n: int,
    seed: int,
    changes: list[tuple[int, int]],
    checks: bool,
    force: str,
) -> None:
    """Random dtype, n, values and changed elements: scipy's answer, both
    ways."""
    rng = np.random.default_rng(seed)
    v = distances(ALL_DTYPES[name], n, rng)
    same_as_scipy(v, force=force)
    m = unpack_oracle(v, n, n, 1, True, None, "C", True)
    values = make(v.dtype, (len(changes),), rng)
    for (i, j), value in zip(changes, values, strict=True):
        if i < n and j < n:
            m[i, j] = value
    same_as_scipy(m, checks=checks, force=force)
