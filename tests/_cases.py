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

import fractions
import functools
import operator
import os
import subprocess
import sys
import textwrap
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
    if kind == "M":
        if np.datetime_data(dt)[0] == "generic":  # only NaT fits no unit
            return [np.datetime64("NaT")]
        return [np.datetime64("NaT"), np.datetime64(1_234_567_890, "s")]
    if kind == "m":
        return [np.timedelta64("NaT"), -7]
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


def pack_oracle(x: np.ndarray, k: Any, upper: bool, order: str = "C") -> np.ndarray:
    """m[..., r, c], (r, c) as `indices` gives them."""
    r, c = indices(*x.shape[-2:], k, upper, order)
    return x[..., r, c]


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
        o[..., i, i + k] = ab[..., upper - k, i + k]
    return o


# --- out= and in place ----------------------------------------------------------------


def make_out(
    mode: str, exp: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, tuple[Any, ...]] | None:
    """(out, buf, index): out = buf[index] in layout `mode`, of exp's shape
    and dtype (or its other byte order), over random values; None if the
    dtype has no such out."""
    shape, dtype = exp.shape, exp.dtype
    whole = (slice(None),) * len(shape)
    if mode == "C":
        return (buf := make(dtype, shape, rng)), buf, whole
    if mode == "F":
        buf = np.asfortranarray(make(dtype, shape, rng))
        return buf, buf, whole
    if mode == "strided":  # every other element, offset by one, on every axis
        buf = make(dtype, tuple(2 * s + 1 for s in shape), rng)
        index = (slice(1, None, 2),) * len(shape)
        return buf[index], buf, index
    if mode == "reversed":
        buf = make(dtype, shape, rng)
        index = (slice(None, None, -1),) * len(shape)
        return buf[index], buf, index
    if mode == "swapped":
        other = swapped(dtype)
        if other is None:
            return None
        buf = make(other, shape, rng)
        return buf, buf, whole
    raise ValueError(mode)


OUT_MODES = ["C", "F", "strided", "reversed", "swapped"]  # of out=, or an in-place copy


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
    out, buf, index = made
    buf_before = buf.copy()
    x_before = snapshot(x)
    assert call(out=out) is out
    assert_same(as_native(out, exp.dtype), exp)
    outside = buf_before.copy()
    outside[index] = buf[index]
    assert_same(buf, outside)
    assert snapshot(x) == x_before, "the input was modified"


def check_fresh(call: Callable[..., Any], x: Any, exp: np.ndarray) -> None:
    """call() returns exp, x unchanged."""
    before = snapshot(x) if isinstance(x, np.ndarray) else None
    assert_same(call(), exp)
    if before is not None:
        assert snapshot(x) == before, "the input was modified"


def in_place_copy(
    x: np.ndarray, how: str, rng: np.random.Generator
) -> np.ndarray | None:
    """A writable array with x's values: C, F, strided, reversed or byte-swapped."""
    if how == "C":
        return x.copy()
    if how == "F":
        return np.asfortranarray(x)
    if how == "strided":
        buf = make(x.dtype, tuple(2 * s for s in x.shape), rng)
        y = buf[(slice(None, None, 2),) * x.ndim]
        y[...] = x
        return y
    if how == "reversed":
        y = make(x.dtype, x.shape, rng)[(slice(None, None, -1),) * x.ndim]
        y[...] = x
        return y
    if how == "swapped":
        other = swapped(x.dtype)
        if other is None:
            return None
        return x.astype(other)
    raise ValueError(how)


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
    ("int4", 1.5, TypeError),
    ("m8[ns]", 1.5, TypeError),
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
