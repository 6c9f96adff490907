"""Shared test data: dtypes, value generators, memory layouts and oracles.

The oracles: :func:`numpy_oracle` (``numpy.triu``/``numpy.tril``, with a
far-out ``k`` clamped so numpy does not overflow), :func:`spec_oracle` (the
ONNX Trilu-14 definition, element by element, independent of numpy's triu),
and the toolkit's: :func:`band_oracle` / :func:`triangle_oracle` (numpy's
answer with the dropped elements set to a fill), :func:`pack_oracle` /
:func:`unpack_oracle` (numpy's fancy indexing by ``triu_indices``, sorted
by column for ``order="F"``; unpack's mirror by the transposed indices),
:func:`mirror_oracle` (``np.where`` of the matrix and its transpose),
:func:`mask_oracle` and :func:`attention_oracle` (a bool mask of ``j - i``,
cast as ``np.tri`` casts it) and :func:`to_banded_oracle` /
:func:`from_banded_oracle` (band storage a diagonal at a time).
:func:`assert_same` compares results bit for bit: the suite's one comparison.
The toolkit's files share the fills by dtype, the ``out=`` makers and
:func:`every`, which walks a product and reports each failure. Optional test
packages are imported with ``pytest.importorskip``.
"""

from __future__ import annotations

import contextlib
import fractions
import functools
import itertools
import operator
import os
import subprocess
import sys
import textwrap
import types
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pytest

import trilu

# --- subprocesses ---------------------------------------------------------------------

# Seconds a subprocess may take (a fresh interpreter, a mypy run): a guard
# against a hang, not a speed limit, ample under qemu-user (nox -s emulated).
TIMEOUT = 900


def run_python(code: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    """Run code (dedented) in a fresh interpreter; env sets variables over this
    process's environment, None removes one."""
    environ = dict(os.environ)
    for name, value in env.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


try:
    import ml_dtypes
except ModuleNotFoundError:  # its dtypes are left out of the tables below
    ml_dtypes = None
STRING: Any = getattr(np.dtypes, "StringDType", None)  # numpy >= 2.0
STRING = STRING() if STRING is not None else None

# --- trilu's memory handlers ---------------------------------------------------------

# Built on Linux, and on unless TRILU_RECYCLE=0 was set at import (nox -s
# sanitize runs the suite both ways).
HANDLERS = (
    sys.platform.startswith("linux")
    and os.environ.get("TRILU_RECYCLE", "").strip() != "0"
)


def allocation_name(name: str) -> str:
    """The allocation explain() reports for `name` as things are: without the
    handlers, zero pages come from numpy's calloc, recycled blocks from malloc."""
    if HANDLERS:
        return name
    return {"zero_pages": "calloc", "recycled": "malloc"}.get(name, name)


# --- dtypes ---------------------------------------------------------------------------

STRUCT_PLAIN = np.dtype([("a", "<i2"), ("b", ">f8"), ("c", "S3")])
STRUCT_OBJECT = np.dtype([("a", "<i4"), ("b", ">f8"), ("c", "O")])
STRUCT_PADDED = np.dtype(
    {
        "names": ["a", "b", "c"],
        "formats": ["<i2", ("<f4", (2,)), "S1"],
        "offsets": [0, 4, 13],
        "itemsize": 16,
    }
)

_ML_NAMES = [
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e4m3b11fnuz",
    "float4_e2m1fn",
    "int4",
    "uint4",
]

#: Every dtype numpy.triu accepts that trilu.triu/tril must match, by id.
#: ml_dtypes' types and StringDType are left out where not available.
ALL_DTYPES: dict[str, np.dtype] = {
    "bool": np.dtype(bool),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "uint64": np.dtype(np.uint64),
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "longdouble": np.dtype(np.longdouble),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
    "clongdouble": np.dtype(np.clongdouble),
    **{
        name: np.dtype(getattr(ml_dtypes, name))
        for name in _ML_NAMES
        if ml_dtypes is not None and hasattr(ml_dtypes, name)
    },
    "M8": np.dtype("M8"),
    "M8[s]": np.dtype("M8[s]"),
    "m8": np.dtype("m8"),
    "m8[ns]": np.dtype("m8[ns]"),
    "U3": np.dtype("U3"),
    "S4": np.dtype("S4"),
    "V5": np.dtype("V5"),
    "struct": STRUCT_PLAIN,
    "struct_obj": STRUCT_OBJECT,
    "struct_padded": STRUCT_PADDED,
    "object": np.dtype(object),
    **({"StringDType": STRING} if STRING is not None else {}),
    ">f8": np.dtype(">f8"),
    ">i2": np.dtype(">i2"),
    ">c16": np.dtype(">c16"),
    ">U2": np.dtype(">U2"),
    ">M8[ms]": np.dtype(">M8[ms]"),
}

_ONNX_NUMERIC = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex64",
    "complex128",
]
#: The 16 types of Trilu's type constraint; "string" comes in four forms.
ONNX_DTYPES: dict[str, Any] = {
    # bfloat16 only where ml_dtypes is installed
    **{name: ALL_DTYPES[name] for name in _ONNX_NUMERIC if name in ALL_DTYPES},
    "string-object": np.dtype(object),
    "string-U": np.dtype("U4"),
    "string-S": np.dtype("S4"),
    **({"string-StringDType": STRING} if STRING is not None else {}),
}


_SUB_BYTE = {"int4", "uint4", "float4_e2m1fn"}


def dtype_params(table: dict[str, Any]) -> list[Any]:
    """pytest params of a dtype table, with the table's keys as ids."""
    return [pytest.param(dt, id=name) for name, dt in table.items()]


def swapped(dtype: np.dtype) -> np.dtype | None:
    """The same dtype in the other byte order, or None if it has none."""
    if dtype.kind not in "iufcmMU" or dtype.itemsize == 1 or dtype.fields:
        return None
    if dtype.type.__module__.startswith("ml_dtypes"):
        return None
    return dtype.newbyteorder()


# --- values ---------------------------------------------------------------------------


class Token:
    """A distinct object for object arrays; equal only to itself."""

    def __init__(self, i: int) -> None:
        self.i = i

    def __repr__(self) -> str:
        return f"Token({self.i})"


def _objects(n: int, rng: np.random.Generator) -> list[Any]:
    """n distinct objects of assorted types (never an int 0)."""
    makers: list[Callable[[int], Any]] = [
        lambda i: 10**20 + i,
        lambda i: f"str{i}",
        lambda i: float(i) + 0.5,
        lambda _: None,
        lambda i: [i],
        lambda i: (i, "t"),
        lambda i: fractions.Fraction(i + 1, 3),
        Token,
    ]
    picks = rng.integers(0, len(makers), n)
    return [makers[p](i) for i, p in enumerate(picks)]


_ALPHABET = "abcXYZ09 é€\U0001f600"


def _strings(n: int, rng: np.random.Generator, maxlen: int) -> list[str]:
    out = []
    for _ in range(n):
        length = int(rng.integers(1, maxlen + 1))
        out.append("".join(rng.choice(list(_ALPHABET), length)))
    return out


def _random_bytes(dtype: np.dtype, shape: tuple[int, ...], rng) -> np.ndarray:
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    # 64-bit words: each draw gives 8 bytes, not 1
    words = rng.integers(0, 2**64 - 1, -(-nbytes // 8), np.uint64, endpoint=True)
    raw = words.view(np.uint8)[:nbytes]
    return raw.view(dtype).reshape(shape)  # raw is fresh: no copy needed


def make(dtype: Any, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """A C-ordered, writable array of dtype and shape with varied values.

    Numbers get random bits (NaN payloads, -0.0, NaT and padding bytes
    included), so bit-for-bit checks are meaningful; objects are distinct.
    """
    dtype = np.dtype(dtype)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype.kind == "b":
        return rng.random(shape) < 0.8
    if dtype.kind == "O":
        a = np.empty(size, dtype)
        a[:] = _objects(size, rng) if size else []
        return a.reshape(shape)
    if dtype.kind == "T":
        return np.array(_strings(size, rng, 20), dtype=dtype).reshape(shape)
    if dtype.kind == "U":
        if not dtype.isnative:
            return make(dtype.newbyteorder(), shape, rng).astype(dtype)
        n = dtype.itemsize // 4
        codes = rng.choice(np.array([ord(c) for c in _ALPHABET], np.uint32), (size, n))
        codes[np.arange(n) >= rng.integers(1, n + 1, (size, 1))] = 0
        return codes.view(dtype).reshape(shape)
    if dtype.hasobject:  # structured with an object field
        a = np.empty(shape, dtype)
        for name in dtype.names:
            sub = dtype.fields[name][0]
            a[name] = make(sub, shape, rng)
        return a
    name = dtype.type.__name__
    if name in _SUB_BYTE:
        values = (
            rng.integers(-8, 8, shape) if name == "int4" else rng.integers(0, 16, shape)
        )
        if name == "float4_e2m1fn":
            values = rng.normal(0, 3, shape)
        return values.astype(dtype)
    return _random_bytes(dtype, shape, rng)


# --- layouts --------------------------------------------------------------------------

LAYOUTS = [
    "C",
    "F",
    "transposed",
    "step",
    "neg_rows",
    "neg_cols",
    "neg_both",
    "bcast_rows",
    "bcast_cols",
    "bcast_batch",
    "readonly",
    "unaligned",
    "swapped",
    "batch_step",
    "batch_inner",
]


MEMORY_VARIANTS = ("readonly", "unaligned", "swapped")


def memory_variant(
    name: str, dtype: Any, shape: tuple[int, ...], rng
) -> np.ndarray | None:
    """A C-ordered array of any shape whose memory is read-only, one byte off
    alignment, or in the other byte order; None where the dtype has none."""
    dtype = np.dtype(dtype)
    if name == "readonly":
        a = make(dtype, shape, rng)
        a.flags.writeable = False
        return a
    if name == "unaligned":
        if dtype.hasobject:
            return None
        src = make(dtype, shape, rng)
        buf = np.zeros(src.nbytes + 1, np.uint8)
        a = buf[1:].view(dtype).reshape(shape)
        a[...] = src
        return a
    if name == "swapped":
        other = swapped(dtype)
        return None if other is None else make(dtype, shape, rng).astype(other)
    raise ValueError(name)


#: Axis lengths whose product makes edge shapes: 0 (an empty array) and 1
#: (an array both C- and F-contiguous whatever its other strides), beside 3.
EDGE_SIZES = (0, 1, 3)


def edge_shapes(ndims: Iterable[int] = (2, 3)) -> list[tuple[int, ...]]:
    """Every shape of ndims dims whose axes have lengths of EDGE_SIZES:
    (3, 1), (1, 3), (1, 1), (0, 3), (3, 1, 1), (1, 3, 1), ..."""
    return [s for nd in ndims for s in itertools.product(EDGE_SIZES, repeat=nd)]


def layout_ok(name: str, dtype: Any, ndim: int) -> bool:
    """Whether :func:`layout` can build `name` for dtype with ndim dims."""
    dtype = np.dtype(dtype)
    if name in ("bcast_batch", "batch_step", "batch_inner"):
        return ndim >= 3
    if name == "unaligned":
        return not dtype.hasobject
    if name == "swapped":
        return swapped(dtype) is not None
    return True


def layout(name: str, dtype: Any, shape: tuple[int, ...], rng) -> np.ndarray | None:
    """An array of `shape` stored in layout `name`, or None if not possible.

    Shapes have at least two dims; batch layouts need at least three.
    """
    dtype = np.dtype(dtype)
    *batch, n, m = shape
    b = tuple(batch)
    if name == "C":
        return make(dtype, shape, rng)
    if name == "F":
        return np.asfortranarray(make(dtype, shape, rng))
    if name == "transposed":
        return make(dtype, (*b, m, n), rng).swapaxes(-1, -2)
    if name == "step":
        return make(dtype, (*b, 2 * n + 1, 3 * m + 1), rng)[..., 1::2, ::3]
    if name == "neg_rows":
        return make(dtype, shape, rng)[..., ::-1, :]
    if name == "neg_cols":
        return make(dtype, shape, rng)[..., ::-1]
    if name == "neg_both":
        return make(dtype, shape, rng)[..., ::-1, ::-1]
    if name == "bcast_rows":
        return np.broadcast_to(make(dtype, (*b, 1, m), rng), shape)
    if name == "bcast_cols":
        return np.broadcast_to(make(dtype, (*b, n, 1), rng), shape)
    if name == "bcast_batch":
        if not b:
            return None
        return np.broadcast_to(make(dtype, (1,) * len(b) + (n, m), rng), shape)
    if name in MEMORY_VARIANTS:
        return memory_variant(name, dtype, shape, rng)
    if name == "batch_step":
        if not b:
            return None
        return make(dtype, (2 * b[0], *b[1:], n, m), rng)[::2]
    if name == "batch_inner":
        if not b:
            return None
        # batch axes innermost in memory: matrices interleaved element-wise
        return np.moveaxis(make(dtype, (n, m, *b), rng), (0, 1), (-2, -1))
    raise ValueError(name)


# --- k --------------------------------------------------------------------------------

BIG_K = 10**6

#: k values for triu/tril, by id: small, far out, beyond int64, numpy ints.
K_VALUES: dict[str, Any] = {
    "0": 0,
    "1": 1,
    "-1": -1,
    "2": 2,
    "-2": -2,
    "1e6": BIG_K,
    "-1e6": -BIG_K,
    "2**70": 2**70,
    "-2**70": -(2**70),
    "uint64max": np.uint64(2**64 - 1),
    "int8(-3)": np.int8(-3),
    "int64(3)": np.int64(3),
    "uint8(1)": np.uint8(1),
}


def k_int(k: Any) -> int:
    """The integer value of an integral k (int, numpy int, bool, integral float)."""
    if isinstance(k, np.ndarray):
        k = k.reshape(())[()]
    if isinstance(k, np.bool_):  # its __index__ is deprecated (numpy < 2.3): warns
        return int(k)
    try:
        return operator.index(k)
    except TypeError:
        return int(float(k))


def clamp_k(k: Any) -> int:
    """k as an int in [-10**6, 10**6]: the same answer for any matrix here."""
    return max(-BIG_K, min(BIG_K, k_int(k)))


# --- numpy 2.5's sizes and k ---------------------------------------------------------
# numpy/numpy#30869, read in numpy/lib/_twodim_base_impl.py at tag v2.5.0
# (commit 6910b28f, the same file at v2.5.2): tri(N, M, k) takes N, M (unless
# None) and k through operator.index and, after making its result, warns of
# the first it refuses, naming that one's type; tril_indices(n, k, m) is
# tri(n, m, k); triu_indices(n, k, m) first takes k through operator.index
# and, where it refuses it and k - 1 is of another type, warns of k's type,
# then is ~tri(n, m, k - 1); the _from forms are these with arr's shape;
# tril(m, k) is tri's check of k, triu(m, k) of k - 1. Each warning is a
# DeprecationWarning at the first line outside numpy.lib. numpy 2.5.5 takes
# the same steps, its warning worded with a space after "integer." (NOT_INTEGER);
# test_deprecations checks this transcription against numpy wherever it is >= 2.5.

_NUMPY_FAMILY = {
    name: getattr(np, name)
    for name in ("tri", "triu_indices", "tril_indices", "triu_indices_from",
                 "tril_indices_from")
}  # fmt: skip


with warnings.catch_warnings(record=True) as _caught:
    warnings.simplefilter("always")
    np.tri(2.0)
_deprecations = [str(w.message) for w in _caught if w.category is DeprecationWarning]
#: The running numpy deprecates sizes and k that are not integers (>= 2.5).
NUMPY_DEPRECATES = bool(_deprecations)
#: numpy 2.5's warning, "{}" for the type's name: the running numpy's words
#: (v2.5.0 to v2.5.2 lack the space after "integer."), else numpy 2.5.5's.
NOT_INTEGER = (
    _deprecations[0].replace("float", "{}", 1)
    if NUMPY_DEPRECATES
    else "Cannot convert {} safely to an integer. This will raise an error in "
    "future versions (Deprecated NumPy 2.5)"
)


def _refused(value: Any) -> type | None:
    """The type of a value operator.index refuses (numpy 2.5 keeps it as it
    is, and deprecates it), or None."""
    try:
        operator.index(value)
    except TypeError:
        return type(value)
    return None


def _tri_warning(N: Any, M: Any, k: Any) -> list[str]:
    for value in (N, k) if M is None else (N, M, k):
        if (refused := _refused(value)) is not None:
            return [NOT_INTEGER.format(refused.__name__)]
    return []


def numpy25_warnings(name: str, n: Any, m: Any, k: Any) -> tuple[list[str], list[str]]:
    """numpy 2.5's warnings for `name` (tri, tril_indices, triu_indices, tril,
    triu) with these sizes and k: those given before its tri makes the mask,
    and those after (none if that raises)."""
    if name == "triu_indices":
        if _refused(k) is None:
            return [], _tri_warning(n, m, operator.index(k) - 1)
        try:
            handed = k - 1
        except TypeError:  # numpy's error, before any warning
            return [], []
        first = (
            []
            if isinstance(k, type(handed))
            else [NOT_INTEGER.format(type(k).__name__)]
        )
        return first, _tri_warning(n, m, handed)
    if name == "triu" and _refused(k) is not None:  # numpy's k - 1; an int stays one
        return [], _tri_warning(n, m, k - 1)
    return [], _tri_warning(n, m, k)


def numpy25(name: str, *args: Any) -> tuple[Any, list[str]]:
    """numpy 2.5's outcome of numpy.`name`(*args) and its warnings' messages,
    the index family's arguments in full and in order: (N, M, k[, dtype]),
    (n, k, m), (arr, k).

    Its result is the running numpy's function on the sizes and k numpy 2.5
    takes through operator.index, its own warnings (numpy >= 2.5) set aside:
    numpy 2.5 converts them, then takes numpy 2.4's steps."""
    sizes = (1,) if name.endswith("_from") else (0, 1, 2)
    taken = [
        operator.index(a) if at in sizes and a is not None and not _refused(a) else a
        for at, a in enumerate(args)
    ]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", DeprecationWarning)
        result = outcome(_NUMPY_FAMILY[name], *taken)
    if name.endswith("_from"):
        arr, k = args
        if not isinstance(arr, np.ndarray) or arr.ndim != 2:
            return result, []
        name, (n, m) = name[:-5], arr.shape
    elif name == "tri":
        n, m, k = args[:3]
    else:
        n, k, m = args
    first, then = numpy25_warnings(name, n, m, k)
    raised = isinstance(result, tuple) and isinstance(result[0], type)
    return result, first if raised else first + then


def triangle_warnings(k: Any, upper: bool, rows: int, cols: int) -> list[str]:
    """The running numpy's warnings for triu (upper) or tril of a k trilu
    takes: numpy 2.5's from numpy 2.5 on, none before."""
    if not NUMPY_DEPRECATES:
        return []
    first, then = numpy25_warnings("triu" if upper else "tril", rows, cols, k)
    return first + then


def outcome(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """The result, or the error's type and message."""
    try:
        return function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001
        return type(error), str(error)


def warned(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """call()'s outcome and its warnings' messages, each checked to be a
    DeprecationWarning at call's own line (a one-line lambda), as numpy's."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        result = outcome(call)
    code = call.__code__
    for w in caught:
        assert (w.category, w.filename, w.lineno) == (
            DeprecationWarning,
            code.co_filename,
            code.co_firstlineno,
        ), w
    return result, [str(w.message) for w in caught]


# --- oracles --------------------------------------------------------------------------


def numpy_oracle(x: Any, k: Any, upper: bool) -> np.ndarray:
    """numpy.triu / numpy.tril with k clamped (numpy overflows past int64)."""
    return (np.triu if upper else np.tril)(x, clamp_k(k))


def keep(i: int, j: int, k: int, upper: bool) -> bool:
    """ONNX Trilu-14: (i, j) is kept iff j - i >= k (upper) or <= k (lower)."""
    return j - i >= k if upper else j - i <= k


def spec_oracle(x: np.ndarray, k: int, upper: bool, zero: Any) -> np.ndarray:
    """The spec's answer built element by element, without numpy.triu/tril."""
    dtype = x.dtype if x.dtype.isnative else x.dtype.newbyteorder("=")
    y = np.array(x, dtype=dtype, copy=True)  # kept elements: their bits as they are
    for idx in np.ndindex(*x.shape):
        if not keep(idx[-2], idx[-1], k, upper):
            y[idx] = zero
    return y


def onnx_zero(dtype: np.dtype) -> Any:
    """The zero of an ONNX type: "" for strings, else 0 (b"" for bytes)."""
    if dtype.kind == "S":
        return b""
    if dtype.kind in "OUT":
        return ""
    return 0


# --- comparison -----------------------------------------------------------------------


def snapshot(a: np.ndarray) -> Any:
    """What must not change about a: its bytes, or its elements for references."""
    if a.dtype.kind == "T":
        return a.tolist()
    if a.dtype.hasobject or a.dtype.names:  # field by field: padding is no value
        return _object_snapshot(a)
    return np.ascontiguousarray(a).tobytes()


def _object_snapshot(a: np.ndarray) -> list[Any]:
    """Ids of referenced objects, bytes of plain fields, field by field."""
    if a.dtype.names:
        return [v for name in a.dtype.names for v in _object_snapshot(a[name])]
    if a.dtype.kind == "O":
        return [id(v) for v in a.ravel()]
    return [np.ascontiguousarray(a).tobytes()]


def _same_object(got: Any, exp: Any) -> bool:
    return got is exp or (
        type(got) is type(exp) and type(got) in (int, str) and got == exp
    )


_CHUNK = 1 << 20  # bytes compared at a time: a small temporary, reused


def _same_bytes(got: np.ndarray, exp: np.ndarray) -> bool:
    """got and exp (same dtype and shape) hold the same bytes, in C order.

    Compared a chunk at a time, in place where they are contiguous: copying
    a result of 32 MiB or more to ``bytes`` costs more than making it.
    """
    g = np.ascontiguousarray(got).reshape(-1).view(np.uint8)
    e = np.ascontiguousarray(exp).reshape(-1).view(np.uint8)
    return all(
        np.array_equal(g[i : i + _CHUNK], e[i : i + _CHUNK])
        for i in range(0, e.size, _CHUNK)
    )


def _assert_values(got: np.ndarray, exp: np.ndarray, where: str) -> None:
    if exp.dtype.names:
        for name in exp.dtype.names:
            _assert_values(got[name], exp[name], f"{where}[{name!r}]")
        return
    if exp.dtype.kind == "O":
        bad = [
            (idx, got[idx], exp[idx])
            for idx in np.ndindex(*exp.shape)
            if not _same_object(got[idx], exp[idx])
        ]
        assert not bad, f"{where}: {len(bad)} elements differ, first {bad[:5]}"
        return
    if exp.dtype.kind == "T":
        assert got.tolist() == exp.tolist(), f"{where}: values differ"
        return
    if not _same_bytes(got, exp):
        g = np.ascontiguousarray(got).tobytes()
        e = np.ascontiguousarray(exp).tobytes()
        w = exp.dtype.itemsize
        diff = [
            idx
            for n, idx in enumerate(np.ndindex(*exp.shape))
            if g[n * w : (n + 1) * w] != e[n * w : (n + 1) * w]
        ]
        raise AssertionError(
            f"{where}: {len(diff)} elements differ in their bytes, "
            f"first at {diff[:5]}\n got={got!r}\nwant={exp!r}"
        )


def assert_same(got: Any, exp: np.ndarray) -> None:
    """got is a base ndarray equal to exp bit for bit: dtype, shape, bytes.

    Object elements must be the very same objects (zeros: equal int/str);
    StringDType arrays are compared by value.
    """
    assert type(got) is np.ndarray, f"got a {type(got).__name__}"
    assert got.dtype == exp.dtype, f"dtype {got.dtype} != {exp.dtype}"
    assert got.shape == exp.shape, f"shape {got.shape} != {exp.shape}"
    _assert_values(got, exp, "result")


def as_native(out: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """out's values in dtype, which differs from out's only in byte order.

    Plain dtypes are byte-swapped by hand (bits unchanged, whatever numpy's
    casts do); structured ones are cast field by field.
    """
    out = np.ascontiguousarray(out)
    if out.dtype == dtype:
        return out
    assert np.can_cast(out.dtype, dtype, "equiv"), f"{out.dtype} vs {dtype}"
    if dtype.names:
        return out.astype(dtype)
    assert out.dtype.newbyteorder() == dtype, f"{out.dtype} vs {dtype}"
    return out.byteswap().view(dtype)


def iter_k_upper(ks: dict[str, Any] = K_VALUES) -> Iterator[tuple[str, Any, bool]]:
    """Every (id, k, upper) combination of a k table."""
    for name, k in ks.items():
        for upper in (True, False):
            yield name, k, upper


def func(upper: bool) -> Callable[..., Any]:
    """trilu.triu or trilu.tril."""
    return trilu.triu if upper else trilu.tril


# --- fills by dtype -------------------------------------------------------------------

_PAYLOAD_NAN = {2: 0x7E01, 4: 0x7FC00123, 8: 0x7FF8000000000123}
#: NaT with no unit (datetime64 "M", timedelta64 "m"), made from its bits:
#: numpy 2.5 deprecates the generic unit where it parses or converts a value.
NAT = {kind: np.array(np.iinfo(np.int64).min).view(f"{kind}8")[()] for kind in "Mm"}
NUMPY_FLOATS = (np.float16, np.float32, np.float64)


def ml_dtype(dtype: np.dtype) -> bool:
    return dtype.type.__module__.startswith("ml_dtypes")


def fills(dtype: Any) -> list[Any]:
    """Fills that the dtype takes: extremes, -0.0, NaN (a payload), -inf,
    strings of the dtype's length, objects whose identity is checked."""
    dt = np.dtype(dtype)
    kind, name = dt.kind, dt.type.__name__
    if name == "int4":
        return [-8, 7]
    if name == "uint4":
        return [15, 1]
    if ml_dtype(dt) or kind == "f":
        values: list[Any] = [float("-inf"), -0.0, 1.5, -3]
        if dt.type in NUMPY_FLOATS:  # a NaN whose payload survives the cast
            bits = np.array(_PAYLOAD_NAN[dt.itemsize], f"u{dt.itemsize}")
            values.append(bits.view(dt.newbyteorder("="))[()])
        return values
    if kind == "b":
        return [True]
    if kind == "i":
        info = np.iinfo(dt)
        return [int(info.min), int(info.max), -1]
    if kind == "u":
        return [int(np.iinfo(dt).max), 1]
    if kind == "c":
        return [complex(float("nan"), float("-inf")), complex(-0.0, -0.0), 1.5, -2]
    if kind in "Mm":
        if np.datetime_data(dt)[0] == "generic":  # only NaT fits no unit
            return [NAT[kind]]  # (numpy 2.5 deprecates a bare int into m8 too)
        if kind == "M":
            return [NAT[kind], np.datetime64(1_234_567_890, "s")]
        return [NAT[kind], -7]
    if kind == "U":
        return ["é€\U0001f600"[: dt.itemsize // 4], ""]
    if kind == "S":
        return [b"a\x01bc"[: dt.itemsize]]
    if kind == "T":
        return ["fill ☃", ""]
    if kind == "O":
        return [Token(-1), [], -0.0]
    if dt.names:  # a structured scalar, object fields included
        return [make(dt, (), np.random.default_rng(3))[()]]
    return [bytes(range(1, dt.itemsize + 1)), b"\xff"]  # void: short bytes padded


def as_fill(fill: Any, dtype: np.dtype) -> np.ndarray:
    """The oracle's fill: a 0-d array of dtype holding fill, as numpy assigns
    it, padding bytes (a long double's) zero."""
    value = np.zeros((), dtype)
    value[()] = fill
    return value_bytes(value)


def fill_cycle(dtype: Any) -> list[Any]:
    """None (numpy's zero) and the dtype's fills."""
    return [None, *fills(dtype)]


# --- padding --------------------------------------------------------------------------


def _padding(dtype: np.dtype) -> np.ndarray | None:
    """The bytes of an element that are no part of its value: those after
    x86's 80-bit extended precision in a long double's 16 (or 12) bytes
    (before it, byte-swapped). numpy's casts leave them as they fall (np.full
    writes stale bytes there); a fill's are zeros, as in numpy's zeros."""
    if dtype.type not in (np.longdouble, np.clongdouble):
        return None
    if np.finfo(np.longdouble).nmant != 63:  # no padding: a real quad or double
        return None
    part = dtype.itemsize // (2 if dtype.kind == "c" else 1)
    one = np.arange(part) >= 10
    return np.tile(one if dtype.isnative else one[::-1], dtype.itemsize // part)


def value_bytes(a: np.ndarray) -> np.ndarray:
    """a, or a C-ordered copy of it with a long double's padding zeroed."""
    mask = _padding(a.dtype)
    if mask is None:
        return a
    b = np.array(a, order="C", copy=True)
    b.reshape(-1).view(np.uint8).reshape(-1, a.dtype.itemsize)[:, mask] = 0
    return b


# --- the toolkit's oracles ------------------------------------------------------------


def keep_mask(rows: int, cols: int, lo: Any, hi: Any) -> np.ndarray:
    """True where lo <= j - i <= hi (None: unbounded); far-out bounds clamped."""
    lo = None if lo is None else max(-rows - 1, min(k_int(lo), cols + 1))
    hi = None if hi is None else max(-rows - 1, min(k_int(hi), cols + 1))
    return _keep_mask(rows, cols, lo, hi)


@functools.lru_cache(maxsize=4096)
def _keep_mask(rows: int, cols: int, lo: int | None, hi: int | None) -> np.ndarray:
    d = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = np.ones((rows, cols), bool)
    if lo is not None:
        keep &= d >= lo
    if hi is not None:
        keep &= d <= hi
    keep.flags.writeable = False  # shared by the cache
    return keep


def replace(exp: np.ndarray, keep: np.ndarray, fill: Any) -> np.ndarray:
    """exp (a fresh array) with fill where keep (one matrix's) is False."""
    if fill is not None:
        exp[np.broadcast_to(~keep, exp.shape)] = as_fill(fill, exp.dtype)
    return exp


def band_oracle(x: Any, lo: Any, hi: Any, fill: Any = None) -> np.ndarray:
    """np.triu(np.tril(x, hi), lo) (one of them for a bound of None), the
    elements outside the band then set to fill."""
    if lo is None and hi is None:
        exp = np.triu(x, -BIG_K)  # numpy's result dtype, every element kept
    else:
        exp = x
        if hi is not None:
            exp = np.tril(exp, clamp_k(hi))
        if lo is not None:
            exp = np.triu(exp, clamp_k(lo))
    return replace(exp, keep_mask(*exp.shape[-2:], lo, hi), fill)


def triangle_oracle(x: Any, k: Any, upper: bool, fill: Any = None) -> np.ndarray:
    """np.triu / np.tril of x with its zeros replaced by fill."""
    exp = numpy_oracle(x, k, upper)
    lo, hi = (k, None) if upper else (None, k)
    return replace(exp, keep_mask(*exp.shape[-2:], lo, hi), fill)


def indices(
    rows: int, cols: int, k: Any, upper: bool, order: str = "C"
) -> tuple[np.ndarray, ...]:
    """numpy's triu_indices / tril_indices (far-out k clamped): row after
    row, or for order "F" sorted by column, then row."""
    return _indices(rows, cols, clamp_k(k), upper, order)


@functools.lru_cache(maxsize=4096)
def _indices(
    rows: int, cols: int, k: int, upper: bool, order: str
) -> tuple[np.ndarray, ...]:
    r, c = (np.triu_indices if upper else np.tril_indices)(rows, k, cols)
    if order == "F":
        by_column = np.lexsort((r, c))
        r, c = r[by_column], c[by_column]
    r.flags.writeable = c.flags.writeable = False  # shared by the cache
    return r, c


def count(rows: int, cols: int, k: Any, upper: bool) -> int:
    return len(indices(rows, cols, k, upper)[0])


def index_read(x: np.ndarray, index: tuple[Any, ...]) -> np.ndarray:
    """x[index], StringDType's through Python strings: integer-array indexing
    misreads long strings in numpy 2.2 and 2.3 (numpy/numpy#29279)."""
    if x.dtype.kind == "T":
        return x.astype(object)[index].astype(x.dtype)
    return x[index]


def pack_oracle(x: np.ndarray, k: Any, upper: bool, order: str = "C") -> np.ndarray:
    """m[..., r, c], (r, c) as `indices` gives them."""
    r, c = indices(*x.shape[-2:], k, upper, order)
    return index_read(x, (..., r, c))


def unpack_oracle(
    v: np.ndarray,
    n: int,
    m: int,
    k: Any,
    upper: bool,
    fill: Any = None,
    order: str = "C",
    mirror: Any = False,
) -> np.ndarray:
    """o = np.full(v.shape[:-1] + (n, m), fill or zero, v.dtype); o[..., r, c] = v;
    with mirror, also o[..., c, r] = v (conjugated for "conj") where (c, r)
    is not kept."""
    o = np.zeros((*v.shape[:-1], n, m), v.dtype)
    if fill is not None:
        o[...] = as_fill(fill, v.dtype)
    r, c = indices(n, m, k, upper, order)
    o[..., r, c] = v
    if mirror:
        kept = keep_mask(n, m, k, None) if upper else keep_mask(n, m, None, k)
        other = ~kept[c, r]
        mirrored = v[..., other]
        o[..., c[other], r[other]] = (
            conjugate(mirrored) if mirror == "conj" else mirrored
        )
    return o


def negate_imag(a: np.ndarray) -> np.ndarray:
    """A copy of complex a with each imaginary part's sign bit flipped, by
    bytes (the real part and any padding untouched)."""
    half = a.dtype.itemsize // 2
    part = np.zeros((), np.empty(0, a.dtype).real.dtype)  # padding stays zero
    part[()] = -0.0
    mask = np.frombuffer(bytes(half) + value_bytes(part).tobytes(), np.uint8)
    b = np.array(a, order="C", copy=True)
    raw = b.view(np.uint8).reshape(*b.shape, a.dtype.itemsize)
    raw ^= mask
    return b


def conjugate(a: np.ndarray) -> np.ndarray:
    """a's conjugates: complex numbers' imaginary sign bits flipped (by
    bytes), objects' .conjugate(), other numbers as they are."""
    if a.dtype.kind == "c":
        return negate_imag(a)
    if a.dtype.kind == "O":
        return np.conjugate(a)
    return a


def mirror_oracle(x: Any, upper: bool, conj: bool = False) -> np.ndarray:
    """np.where(j >= i, x, xT) (j <= i for the lower side), xT conjugated."""
    x = np.asarray(x)
    if x.ndim == 1:  # the rows of an n x n matrix, as in triu
        x = np.broadcast_to(x, (x.shape[0], x.shape[0]))
    n = x.shape[-1]
    j, i = np.arange(n)[None, :], np.arange(n)[:, None]
    keep = j >= i if upper else j <= i
    other = np.swapaxes(x, -1, -2)
    return np.where(keep, x, conjugate(other) if conj else other)


def mask_oracle(
    rows: int,
    cols: int,
    lo: Any,
    hi: Any,
    dtype: Any,
    keep: Any = None,
    fill: Any = None,
) -> np.ndarray:
    """np.tri's way for any band: the bool mask lo <= j - i <= hi cast to
    dtype (a long double's padding zero), its True and False then replaced
    by keep and fill where given."""
    where = keep_mask(rows, cols, lo, hi)
    exp = value_bytes(where.astype(dtype))
    if keep is not None:
        exp[where] = as_fill(keep, exp.dtype)
    if fill is not None:
        exp[~where] = as_fill(fill, exp.dtype)
    return exp


def attention_oracle(
    q_len: int, k_len: int, window: int | None, align: str
) -> np.ndarray:
    """Where query i may attend key j, by the definition: j - i <= diag
    (diag = k_len - q_len bottom right, 0 top left), and within the window,
    j - i > diag - window."""
    diag = k_len - q_len if align == "bottom_right" else 0
    offset = np.arange(k_len)[None, :] - np.arange(q_len)[:, None]
    allowed = offset <= diag
    if window is not None:
        allowed &= offset > diag - window
    return allowed


def to_banded_oracle(a: np.ndarray, lower: int, upper: int) -> np.ndarray:
    """LAPACK's band storage by hand, a diagonal at a time: row upper - k of
    ab holds np.diagonal(a, k) from column max(k, 0), zeros elsewhere."""
    cols = a.shape[-1]
    ab = np.zeros((*a.shape[:-2], lower + upper + 1, cols), a.dtype)
    for k in range(-lower, upper + 1):
        diagonal = np.diagonal(a, k, -2, -1)
        start = max(k, 0)
        ab[..., upper - k, start : start + diagonal.shape[-1]] = diagonal
    return ab


def from_banded_oracle(
    ab: np.ndarray, lower: int, upper: int, rows: int, fill: Any = None
) -> np.ndarray:
    """Matrices from band storage by hand, a diagonal at a time: diagonal k
    from row upper - k of ab, fill (or zero) elsewhere."""
    cols = ab.shape[-1]
    o = np.zeros((*ab.shape[:-2], rows, cols), ab.dtype)
    if fill is not None:
        o[...] = as_fill(fill, ab.dtype)
    for k in range(-lower, upper + 1):
        i = np.arange(max(0, -k), max(0, min(rows, cols - k)))
        o[..., i, i + k] = index_read(ab, (..., upper - k, i + k))
    return o


# --- out= and in place ----------------------------------------------------------------

# Elements of out's buffer before and after all out covers: a write past
# either end of out shows there, as a write into a gap between its elements.
GUARD = 3
# Elements after each row where out's rows have a gap (padded rows).
ROW_GAP = 3

#: Where an out= layout has gaps: between the elements of a row (rows not
#: contiguous), after each row (a matrix not one block), after each matrix (a
#: batch step longer than a matrix: out=buf[::2]). On the last axis, the last
#: but one and the one before (pack's out: the vectors are its rows).
GAPS = ("elements", "rows", "matrices")

#: The layouts of every combination of GAPS, by name: "C" has none.
GAPPED: dict[str, tuple[str, ...]] = {
    "gaps:" + "+".join(on) if on else "C": on
    for on in (
        tuple(g for g, bit in zip(GAPS, bits, strict=True) if bit)
        for bits in itertools.product((False, True), repeat=len(GAPS))
    )
}

#: The layouts of out= (and of an in-place array): the gaps' product, Fortran
#: order, each matrix transposed, every other element from the second on each
#: axis (the batch not mergeable), every axis reversed, the other byte order.
OUT_MODES = [*GAPPED, "F", "transposed", "strided", "reversed", "swapped"]


def _guarded(
    dtype: Any, shape: tuple[int, ...], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """(a, buf): a C-ordered array of shape, random values, in the middle of
    buf (1-D, random values), GUARD elements from either end."""
    size = int(np.prod(shape, dtype=np.int64))
    buf = make(dtype, (size + 2 * GUARD,), rng)
    return buf[GUARD : GUARD + size].reshape(shape), buf


def _gapped(
    gaps: tuple[str, ...], shape: tuple[int, ...]
) -> tuple[tuple[int, ...], tuple[slice, ...]]:
    """(full, index): an array of shape `full`, indexed so, is one of
    `shape` with `gaps`: every other element, ROW_GAP elements after each
    row, a matrix's worth after each matrix (a gap with no axis to be on
    left out)."""
    full, index = list(shape), [slice(None)] * len(shape)
    if shape:
        step = 2 if "elements" in gaps else 1
        row_gap = ROW_GAP if "rows" in gaps and len(shape) > 1 else 0
        full[-1] = step * shape[-1] + row_gap
        index[-1] = slice(None, step * shape[-1], step)
    if "matrices" in gaps and len(shape) > 2:  # the outer batch axes: no gaps
        full[-3] *= 2
        index[-3] = slice(None, None, 2)
    return tuple(full), tuple(index)


def make_out(
    mode: str, exp: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray] | None:
    """(out, buf): out of exp's shape and dtype (or its other byte order) in
    layout `mode`, over random values, a view into buf (1-D), whose GUARD
    elements at either end out never covers; None if the dtype has no
    such out."""
    shape, dtype = exp.shape, exp.dtype
    if mode in GAPPED:
        full, index = _gapped(GAPPED[mode], shape)
        a, buf = _guarded(dtype, full, rng)
        return a[index], buf
    if mode == "F":
        a, buf = _guarded(dtype, shape[::-1], rng)
        return a.T, buf
    if mode == "transposed":
        a, buf = _guarded(dtype, (*shape[:-2], *shape[-2:][::-1]), rng)
        return (a.swapaxes(-1, -2) if a.ndim > 1 else a), buf
    if mode == "strided":
        a, buf = _guarded(dtype, tuple(2 * s + 1 for s in shape), rng)
        return a[(slice(1, None, 2),) * len(shape)], buf
    if mode == "reversed":
        a, buf = _guarded(dtype, shape, rng)
        return a[(slice(None, None, -1),) * len(shape)], buf
    if mode == "swapped":
        other = swapped(dtype)
        return None if other is None else _guarded(other, shape, rng)
    raise ValueError(mode)


def _covered(out: np.ndarray, buf: np.ndarray) -> np.ndarray:
    """The indices in buf (1-D, contiguous) of out's elements, out a view into
    it: an index array strided as out."""
    w = buf.itemsize
    at = np.arange(buf.size)
    start = (out.ctypes.data - buf.ctypes.data) // w
    strides = tuple(s // w * at.itemsize for s in out.strides)
    return np.lib.stride_tricks.as_strided(at[start:], out.shape, strides).ravel()


def assert_only_out_written(
    out: np.ndarray, buf: np.ndarray, before: np.ndarray
) -> None:
    """buf holds `before` everywhere out does not cover."""
    covered = _covered(out, buf)
    outside = before.copy()
    outside[covered] = buf[covered]
    try:
        assert_same(buf, outside)
    except AssertionError as error:
        raise AssertionError(f"written outside out: {error}") from None


def check_out(
    call: Callable[..., Any],
    x: np.ndarray,
    exp: np.ndarray,
    mode: str,
    rng: np.random.Generator,
) -> None:
    """call(out=out) fills out (returned) with exp, writes nothing of out's
    buffer beyond out, and leaves x unchanged."""
    made = make_out(mode, exp, rng)
    if made is None:
        return
    out, buf = made
    before = buf.copy()
    x_before = snapshot(x)
    assert call(out=out) is out
    assert_same(as_native(out, exp.dtype), exp)
    assert_only_out_written(out, buf, before)
    assert snapshot(x) == x_before, "the input was modified"


def check_in_place(
    call: Callable[..., Any],
    oracle: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    how: str,
    rng: np.random.Generator,
) -> None:
    """y, x's values in out= layout `how` (byte-swapped by hand for "swapped":
    numpy's casts leave generic datetimes unswapped): call(y, out=y) returns
    y, which then holds oracle(x); nothing of y's buffer beyond y is written."""
    made = make_out(how, x, rng)
    if made is None:
        return
    y, buf = made
    y[...] = as_native(x, y.dtype)
    exp = oracle(x)
    before = buf.copy()
    assert call(y, out=y) is y
    assert_same(as_native(y, exp.dtype), exp)
    assert_only_out_written(y, buf, before)


def check_fresh(call: Callable[..., Any], x: Any, exp: np.ndarray) -> None:
    """call() returns exp, x unchanged."""
    before = snapshot(x) if isinstance(x, np.ndarray) else None
    assert_same(call(), exp)
    if before is not None:
        assert snapshot(x) == before, "the input was modified"


# --- walking a product ----------------------------------------------------------------


def _failure(label: Any, check: Callable[[Any], None]) -> str | None:
    """check(label)'s failure, as a line naming label; None if it passes."""
    try:
        check(label)
    except Exception as error:  # noqa: BLE001 (reported by every)
        return f"[{label}] {type(error).__name__}: {error}"[:3000]
    return None


def every(labels: Iterable[Any], check: Callable[[Any], None]) -> None:
    """check(label) for each label; every failure reported, by label, not
    only the first (a product walked in one test)."""
    failures = [f for label in labels if (f := _failure(label, check)) is not None]
    assert not failures, f"{len(failures)} failed:\n" + "\n".join(failures)


# --- fills a dtype cannot hold --------------------------------------------------------


def numpy_fill_error(dtype: Any, fill: Any) -> type[Exception]:
    """The error of the running numpy's own conversion of fill into dtype
    (same_kind casting), where trilu adds no rule of its own: a float into
    timedelta64 is a TypeError there before numpy 2.5, a ValueError from 2.5
    on (as numpy's item assignment always gave)."""
    error = outcome(np.copyto, np.zeros((), dtype), fill, casting="same_kind")
    assert isinstance(error, tuple), f"numpy converts {fill!r} into {dtype}"
    exception: type[Exception] = error[0]
    return exception


BAD_FILLS = [
    ("int8", 300, OverflowError),
    ("int8", -129, OverflowError),
    ("uint8", -1, OverflowError),
    ("uint16", 2**16, OverflowError),
    ("int64", 2**63, OverflowError),
    ("uint64", 2**64, OverflowError),
    (">i2", 2**15, OverflowError),
    ("int8", np.int64(300), OverflowError),
    ("int4", 8, OverflowError),
    ("int4", 16, OverflowError),
    ("uint4", 16, OverflowError),
    ("uint4", -1, OverflowError),
    ("int32", 1.5, TypeError),
    ("int32", float("-inf"), TypeError),
    ("int32", float("nan"), TypeError),
    ("int32", 2.0, TypeError),
    ("uint8", np.float64(1.0), TypeError),
    ("int64", np.timedelta64(5, "s"), TypeError),  # (not out of bounds)
    ("int32", np.timedelta64(0), TypeError),
    ("int4", 1.5, TypeError),
    ("m8[ns]", 1.5, numpy_fill_error("m8[ns]", 1.5)),
    ("float64", 1j, TypeError),
    ("float32", complex(1, 0), TypeError),
    ("M8[s]", 5, TypeError),
    ("float64", "1", (TypeError, ValueError)),
    ("int16", b"1", (TypeError, ValueError)),
    ("complex64", "x", (TypeError, ValueError)),
    ("bool", "True", (TypeError, ValueError)),
    ("U3", "abcd", ValueError),
    ("U3", b"ab", TypeError),
    ("U3", 1, TypeError),
    ("S4", b"abcde", ValueError),
    ("S4", "ab", TypeError),
    ("float64", np.array([1.0, 2.0]), ValueError),
]
if STRING is not None:
    BAD_FILLS.append(("StringDType", 5, TypeError))


BAD_FILL_PARAMS = [
    pytest.param(name, fill, exc, id=f"{name}-{fill!r}")
    for name, fill, exc in BAD_FILLS
    if name in ALL_DTYPES  # int4 and uint4 only with ml_dtypes
]


@contextlib.contextmanager
def python_calls(wanted: Callable[[types.CodeType], bool]) -> Iterator[list[str]]:
    """The names of the Python functions whose code `wanted` picks that run
    in the block (a profile hook: code compiled by Cython makes no event)."""
    calls: list[str] = []

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and wanted(frame.f_code):
            calls.append(frame.f_code.co_name)

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(previous)
