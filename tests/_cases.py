"""Shared test data: dtypes, value generators, memory layouts and oracles.

Two oracles: :func:`numpy_oracle` (``numpy.triu``/``numpy.tril``, with a
far-out ``k`` clamped so numpy does not overflow) and :func:`spec_oracle`
(the ONNX Trilu-14 definition, element by element, independent of numpy's
triu). :func:`assert_same` compares results bit for bit: the suite's one
comparison. Optional test packages are imported with ``pytest.importorskip``.
"""

from __future__ import annotations

import fractions
import operator
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import trilu

# --- subprocesses -----------------------------------------------------------------


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
        timeout=120,
        check=False,
    )


try:
    import ml_dtypes
except ModuleNotFoundError:  # its dtypes are left out of the tables below
    ml_dtypes = None
STRING: Any = getattr(np.dtypes, "StringDType", None)  # numpy >= 2.0
STRING = STRING() if STRING is not None else None

# --- dtypes -------------------------------------------------------------------

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


# --- values -----------------------------------------------------------------------


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
    size = int(np.prod(shape, dtype=np.int64))
    raw = rng.integers(0, 256, size * dtype.itemsize, dtype=np.uint8)
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


# --- layouts ------------------------------------------------------------------------

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
        if other is None:
            return None
        return make(dtype, shape, rng).astype(other)
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


# --- k ------------------------------------------------------------------------------

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


# --- oracles -------------------------------------------------------------------------


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


# --- comparison ------------------------------------------------------------------------


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
