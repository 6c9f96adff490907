"""Bad arguments raise a precise error naming the argument, and touch nothing.

Every case checks the exception type, the message (which names ``k``,
``upper``, ``out`` or ``input``), and that the input and any ``out`` are
byte-for-byte unchanged afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _cases import ml_dtypes, snapshot

import trilu

FUNCS = {
    "triu": trilu.triu,
    "tril": trilu.tril,
    "trilu": trilu.trilu,
    "trilu-lower": lambda m, k=0, **kw: trilu.trilu(m, k, False, **kw),
}


def _input() -> np.ndarray:
    return np.arange(1.0, 13.0).reshape(3, 4)


def _raises(exc: type[BaseException], match: str, fn: Any, *args: Any, **kw: Any):
    """fn(*args, **kw) raises exc matching `match`; array args are untouched."""
    arrays = [a for a in (*args, *kw.values()) if isinstance(a, np.ndarray)]
    before = [snapshot(a) for a in arrays]
    with pytest.raises(exc, match=match):
        fn(*args, **kw)
    assert [snapshot(a) for a in arrays] == before, "an array was modified"


# --- k --------------------------------------------------------------------------------

BAD_K_ALL = {
    "1.5": 1.5,
    "-0.5": -0.5,
    "nan": float("nan"),
    "inf": float("inf"),
    "-inf": -float("inf"),
    "np.float64(1.5)": np.float64(1.5),
    "str": "1",
    "None": None,
    "2-element": np.array([1, 2]),
    "2x1": np.array([[1], [2]]),
    "complex": 1 + 0j,
    "list": [1],
}


@pytest.mark.parametrize("k", list(BAD_K_ALL.values()), ids=list(BAD_K_ALL))
@pytest.mark.parametrize("fn", list(FUNCS.values()), ids=list(FUNCS))
@pytest.mark.parametrize("as_list", [False, True], ids=["ndarray", "list"])
def test_bad_k(fn: Any, k: Any, as_list: bool) -> None:
    """A k that is not an integer is a TypeError naming k (never truncated)."""
    x = _input()
    out = np.full((3, 4), -7.0)
    _raises(TypeError, r"\bk must be an integer", fn, x.tolist() if as_list else x, k)
    _raises(TypeError, r"\bk must be an integer", fn, x, k, out=out)


BAD_K_ONNX = {
    "float-0d": np.array(1.0),
    "float-1d": np.array([1.0]),
    "float-int-valued": 2.0,
    "np.float32(1.0)": np.float32(1.0),
    "bool": True,
    "np.bool": np.False_,
    "bool-0d": np.array(True),
    "empty": np.array([], np.int64),
    "1x1": np.array([[1]], np.int64),
    "object-0d": np.array(1, dtype=object),
}


@pytest.mark.parametrize("k", list(BAD_K_ONNX.values()), ids=list(BAD_K_ONNX))
def test_bad_onnx_k(k: Any) -> None:
    """trilu's k is an integer or a one-element integer tensor: nothing else."""
    x = _input()
    out = np.zeros((3, 4))
    _raises(TypeError, r"\bk must be an integer", trilu.trilu, x, k)
    _raises(TypeError, r"\bk must be an integer", trilu.trilu, x, k, False, out=out)


def test_onnx_bool_k_message() -> None:
    """A bool k for trilu says that upper= sets the triangle."""
    x = _input()
    _raises(TypeError, "k must be an integer, got bool.*upper=", trilu.trilu, x, True)


# --- upper -------------------------------------------------------------------------------

BAD_UPPER = {
    "2": (ValueError, 2),
    "-1": (ValueError, -1),
    "np.int64(2)": (ValueError, np.int64(2)),
    "yes": (TypeError, "yes"),
    "1.0": (TypeError, 1.0),
    "0.0": (TypeError, 0.0),
    "None": (TypeError, None),
    "array": (TypeError, np.array([True])),
}


@pytest.mark.parametrize("case", list(BAD_UPPER.values()), ids=list(BAD_UPPER))
def test_bad_upper(case: tuple[type[Exception], Any]) -> None:
    """upper is a bool or 0/1; anything else names upper."""
    exc, upper = case
    x = _input()
    out = np.zeros((3, 4))
    _raises(exc, r"\bupper must be a bool or 0/1", trilu.trilu, x, 0, upper)
    _raises(exc, r"\bupper must be a bool or 0/1", trilu.trilu, x, upper=upper, out=out)


# --- input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [np.array(5.0), np.arange(4.0), np.array([[1.0, 2.0]])[0], [1, 2, 3], 3],
    ids=["0d", "1d", "1d-view", "list-1d", "python-int"],
)
def test_trilu_rank_below_2(x: Any) -> None:
    """trilu needs an input of rank >= 2 (the spec); 1-D is not taken as N x N."""
    _raises(ValueError, r"\binput must have at least 2 dimensions", trilu.trilu, x)
    _raises(
        ValueError, r"\binput must have at least 2 dimensions", trilu.trilu, x, 0, False
    )


@pytest.mark.parametrize("fn", [trilu.triu, trilu.tril], ids=["triu", "tril"])
@pytest.mark.parametrize("x", [np.array(5.0), 5, np.array("s", object)], ids=str)
def test_numpy_0d(fn: Any, x: Any) -> None:
    """triu/tril of a 0-D input: numpy's TypeError, saying what is needed."""
    _raises(
        TypeError, r"^m must be an array of at least 1 dimension .* got a 0-D", fn, x
    )


OUTSIDE_CONSTRAINT = {
    "longdouble": np.longdouble,
    "clongdouble": np.clongdouble,
    "datetime64": "M8[s]",
    "datetime64-generic": "M8",
    "timedelta64": "m8[ns]",
    "structured": [("a", "<i4"), ("b", "<f8")],
    "structured-big-endian": [("a", ">i4"), ("b", ">f8")],
    "void": "V5",
}
if ml_dtypes is not None:
    OUTSIDE_CONSTRAINT["float8_e4m3fn"] = ml_dtypes.float8_e4m3fn
    OUTSIDE_CONSTRAINT["int4"] = ml_dtypes.int4


@pytest.mark.parametrize(
    "dtype", list(OUTSIDE_CONSTRAINT.values()), ids=list(OUTSIDE_CONSTRAINT)
)
def test_trilu_type_outside_constraint(dtype: Any) -> None:
    """trilu rejects dtypes outside Trilu's type constraint, naming input."""
    x = np.zeros((2, 3), dtype)
    out = np.zeros((2, 3), dtype)
    _raises(TypeError, r"\binput has dtype .*type constraint", trilu.trilu, x)
    _raises(TypeError, r"\binput has dtype .*type constraint", trilu.trilu, x, out=out)
    # numpy's drop-ins take them, with numpy's result dtype: a structured dtype
    # in the other byte order comes back with native fields (numpy.triu's
    # np.where does that), so the same input gives '<' fields on one host and
    # '>' on another.
    assert trilu.triu(x).dtype == np.triu(x).dtype
    assert trilu.tril(x).dtype == np.tril(x).dtype


@pytest.mark.parametrize("fn", [trilu.triu, trilu.tril], ids=["triu", "tril"])
def test_1d_result_too_large(fn: Any) -> None:
    """A 1-D input whose N x N result cannot exist is a MemoryError."""
    for dtype, n in ((np.float64, 2**32), (np.uint8, 2**32 + 1), (object, 2**31)):
        one = np.ones(1, dtype)
        x = np.broadcast_to(one, (n,))  # n * n * itemsize > sys.maxsize
        before = snapshot(one)
        with pytest.raises(MemoryError, match="cannot be allocated"):
            fn(x)
        assert snapshot(one) == before


# --- out -------------------------------------------------------------------------------------


def _zero_stride_out() -> np.ndarray:
    base = np.zeros(4 * 8)
    return np.lib.stride_tricks.as_strided(base, (3, 4), (0, 8), writeable=True)


def _readonly_out() -> np.ndarray:
    out = np.zeros((3, 4))
    out.flags.writeable = False
    return out


BAD_OUT = {
    "shape-transposed": (ValueError, r"\bout has shape", lambda: np.zeros((4, 3))),
    "shape-batch": (ValueError, r"\bout has shape", lambda: np.zeros((1, 3, 4))),
    "shape-flat": (ValueError, r"\bout has shape", lambda: np.zeros(12)),
    "dtype-float32": (
        TypeError,
        r"\bout has dtype",
        lambda: np.zeros((3, 4), np.float32),
    ),
    "dtype-int64": (TypeError, r"\bout has dtype", lambda: np.zeros((3, 4), np.int64)),
    "dtype-complex": (TypeError, r"\bout has dtype", lambda: np.zeros((3, 4), complex)),
    "dtype-object": (TypeError, r"\bout has dtype", lambda: np.zeros((3, 4), object)),
    "readonly": (ValueError, r"\bout is read-only", _readonly_out),
    "readonly-bcast": (
        ValueError,
        r"\bout (is read-only|has a zero stride)",
        lambda: np.broadcast_to(np.zeros(4), (3, 4)),
    ),
    "list": (TypeError, r"\bout must be a numpy.ndarray", lambda: [[0.0] * 4] * 3),
    "memoryview": (
        TypeError,
        r"\bout must be a numpy.ndarray",
        lambda: memoryview(np.zeros((3, 4))),
    ),
    "zero-stride": (ValueError, r"\bout has a zero stride", _zero_stride_out),
}


@pytest.mark.parametrize("case", list(BAD_OUT.values()), ids=list(BAD_OUT))
@pytest.mark.parametrize("fn", list(FUNCS.values()), ids=list(FUNCS))
def test_bad_out(fn: Any, case: tuple[type[Exception], str, Any]) -> None:
    """A bad out= raises before anything is written to it or to the input."""
    exc, match, make_out = case
    x = _input()
    out = make_out()
    base = out.base if isinstance(out, np.ndarray) and out.base is not None else None
    base_before = snapshot(base) if isinstance(base, np.ndarray) else None
    _raises(exc, match, fn, x, 1, out=out)
    if base_before is not None:
        assert snapshot(base) == base_before


@pytest.mark.parametrize("fn", [trilu.triu, trilu.tril], ids=["triu", "tril"])
def test_bad_out_1d_input(fn: Any) -> None:
    """For a 1-D input, out must have the N x N shape, not the input's."""
    x = np.arange(4.0)
    _raises(ValueError, r"\bout has shape", fn, x, out=np.zeros(4))


@pytest.mark.parametrize(
    ("dtype", "out_dtype"),
    [("U3", "U4"), ("S3", "U3"), ("V5", "V6"), (object, "U3"), ("M8[s]", "M8[ms]")],
    ids=["U3-U4", "S3-U3", "V5-V6", "object-U3", "M8s-M8ms"],
)
def test_out_dtype_must_match(dtype: Any, out_dtype: Any) -> None:
    """out must have the result's dtype exactly (up to byte order)."""
    x = np.zeros((2, 2), dtype)
    out = np.zeros((2, 2), out_dtype)
    _raises(TypeError, r"\bout has dtype", trilu.triu, x, out=out)


@pytest.mark.parametrize("fn", list(FUNCS.values()), ids=list(FUNCS))
def test_out_with_foreign_input(fn: Any) -> None:
    """out= needs a numpy input: a dask array with out= is a TypeError."""
    da = pytest.importorskip("dask.array")
    x = da.ones((3, 4), chunks=2)
    out = np.full((3, 4), 5.0)
    _raises(TypeError, r"\bout= needs a numpy array input", fn, x, 0, out=out)
