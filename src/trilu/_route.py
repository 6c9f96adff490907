"""The triangle of a numpy array whose arguments are valid: dtypes routed.

Everything that can be decided in Python is decided here, so the kernel only
ever sees plain bytes: dtypes that hold references (object, StringDType,
structured with object fields) go through numpy's own copy, and a byte order
or layout that differs between input and result is recast first.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _kernel, _validate


def _keep_mask(rows: int, cols: int, lo: int | None, hi: int | None) -> np.ndarray:
    """True where (i, j) is kept: lo <= j - i <= hi (None: unbounded)."""
    offset = np.arange(cols) - np.arange(rows)[:, None]
    keep = np.ones((rows, cols), bool)
    if lo is not None:
        keep &= offset >= max(-rows, min(lo, cols))
    if hi is not None:
        keep &= offset <= max(-rows, min(hi, cols))
    return keep


def _by_reference(
    m: np.ndarray, keep: np.ndarray, out: np.ndarray, fill: np.ndarray
) -> np.ndarray:
    """Object and StringDType arrays: numpy copies the references, never bytes."""
    if out is not m:
        np.copyto(out, m, casting="equiv")  # numpy buffers an overlapping m
    np.copyto(out, fill, where=~keep)
    return out


_strings_right: list[bool] = []  # the probe's answer, once asked


def _strings_indexed_right() -> bool:
    """Whether numpy's integer-array indexing reads StringDType's long
    strings right: numpy 2.2 and 2.3 read some as other bytes
    (numpy/numpy#29279; the probe, run at the first StringDType gather, is
    that issue's example), and 2.0 and 2.1 fail on them (numpy/numpy#27737),
    printing errors of their own."""
    if not _strings_right:
        rows = [["A" * 17], ["B" * 29], ["C" * 17]]
        right = np.lib.NumpyVersion(np.__version__) >= "2.2.0" and [
            np.array(rows, dtype="T")[[i]].tolist() for i in range(3)
        ] == [[row] for row in rows]
        _strings_right.append(right)
    return _strings_right[0]


def gather(x: np.ndarray, index: tuple[Any, ...]) -> np.ndarray:
    """x[index] by integer arrays, for dtypes that hold references: numpy's
    indexing, which copies the references (the very objects), through Python
    strings where numpy's would misread StringDType."""
    got: np.ndarray = (
        x.astype(object)[index].astype(x.dtype)
        if x.dtype.kind == "T" and not _strings_indexed_right()
        else x[index]
    )
    return got


def recast(m: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A copy of m in dtype: m's dtype in another byte order, or packed."""
    # numpy's astype leaves generic-unit datetimes unswapped: swap the bytes
    swap = dtype.kind in "mM" and dtype.byteorder != m.dtype.byteorder
    copy: np.ndarray = m.byteswap().view(dtype) if swap else m.astype(dtype)
    return copy


def _fill_bytes(fill: np.ndarray | None, dtype: np.dtype) -> bytes | None:
    """The kernel's fill: one element's bytes in dtype, None for zeros (which
    fresh zero pages already hold)."""
    if fill is None:
        return None
    data = _validate.fill_bytes(fill, dtype)
    return data if any(data) else None


def _fill(fill: Any, dtype: np.dtype, zero: Any, name: str = "fill") -> np.ndarray:
    """``_validate.fill``; the bytes remembered for the kernel's doors
    (``_kernel.remembers``) where numpy's conversion raises no floating-point
    error, as ``np.errstate(all="raise")`` finds: then they are the same under
    any errstate, and no warning is owed, so that a conversion remembered is
    not made again (a large call's, which the doors hand on). Otherwise the
    conversion runs again under the caller's errstate, which gives numpy's
    own warning or error."""
    if not _kernel.remembers(dtype, fill):
        return _validate.fill(fill, dtype, zero, name)
    data = _kernel.remembered(dtype, fill)
    if data is not None:
        return np.frombuffer(data, dtype).reshape(())
    try:
        with np.errstate(all="raise"):
            value = _validate.fill(fill, dtype, name=name)
    except FloatingPointError:
        return _validate.fill(fill, dtype, name=name)
    _kernel.remember_fill(dtype, fill, _validate.fill_bytes(value, dtype))
    return value


def matrices(m: np.ndarray, onnx: bool) -> np.ndarray:
    """m as a batch of matrices: a 1-D m is the rows of an n x n matrix
    (numpy), refused by ONNX."""
    if m.ndim < 2:
        _validate.rank(m.shape, onnx)
        n = m.shape[0]
        if n * n * m.dtype.itemsize > sys.maxsize:
            raise MemoryError(f"a {n} x {n} result of {m.dtype} cannot be allocated")
        m = np.broadcast_to(m, (n, n))
    return m


def band(
    m: np.ndarray,
    lo: int | None,
    hi: int | None,
    fill: Any,
    out: Any,
    order: Any,
    onnx: bool,
) -> np.ndarray:
    """Band (lo, hi) of ndarray m, the rest ``fill`` (validated here, None
    for zeros), into out (validated here) or a new array."""
    _validate.order(order)
    m = matrices(m, onnx)
    dtype = m.dtype
    rdtype = _validate.result_dtype(dtype)
    if out is not None:
        _validate.out(out, m.shape, rdtype)
    value = None
    if fill is not None or (onnx and dtype.kind == "O"):
        value = _fill(fill, rdtype, "" if onnx else None)
    overlap = out is not None and _kernel.check_out(m, out)
    if dtype.hasobject:
        if value is None:  # numpy's zero: int 0 in object fields
            value = _validate.fill(None, dtype)
        if out is None:
            out = _kernel.empty(m, rdtype, order)
        rows, cols = m.shape[-2:]
        return _by_reference(m, _keep_mask(rows, cols, lo, hi), out, value)
    if out is None:
        if rdtype != dtype:  # another byte order or layout: recast, then cut
            src, out = recast(m, rdtype), _kernel.empty(m, rdtype, order)
            return _kernel.band(src, out, lo, hi, _fill_bytes(value, rdtype))
        if rdtype is not dtype:  # metadata numpy drops: m viewed in its dtype
            m = m.view(rdtype)
        return _kernel.band(m, None, lo, hi, _fill_bytes(value, rdtype), order)
    if out.dtype != dtype:  # another byte order or layout than out's
        m = recast(m, out.dtype)
    elif overlap:  # a partial overlap: work on a copy of m
        m = m.copy()
    return _kernel.band(m, out, lo, hi, _fill_bytes(value, out.dtype))


def triangle(
    m: np.ndarray, k: int, upper: bool, out: Any, order: Any, onnx: bool
) -> np.ndarray:
    """triu (upper) or tril of ndarray m, with zeros."""
    if upper:
        return band(m, k, None, None, out, order, onnx)
    return band(m, None, k, None, out, order, onnx)


def conj_bits(dtype: np.dtype) -> bytes | None:
    """What conj XORs each element with: the sign bit of a complex number's
    imaginary part (negation, bit for bit, NaNs included); None for real
    numbers, their own conjugates."""
    if dtype.kind != "c":
        return None
    minus = np.array(complex(0.0, -0.0), dtype).tobytes()
    plus = np.array(0j, dtype).tobytes()
    return bytes(x ^ y for x, y in zip(minus, plus, strict=True))


def mirror(m: np.ndarray, upper: bool, conj: bool, out: Any, order: Any) -> np.ndarray:
    """m's triangle (upper, diagonal included) and its transpose for the
    other (conjugated with conj), into out (validated here) or a new array."""
    _validate.order(order)
    m = matrices(m, False)
    _validate.square(m.shape, "mirror")
    dtype = m.dtype
    if conj:
        _validate.conjugable(dtype)
    rdtype = _validate.result_dtype(dtype)
    if out is not None:
        _validate.out(out, m.shape, rdtype)
    overlap = out is not None and _kernel.check_out(m, out)
    if dtype.hasobject:
        other = np.swapaxes(m, -1, -2)
        if conj:  # raises for objects without .conjugate, before any write
            other = np.conjugate(other)
        n = m.shape[-1]
        keep = _keep_mask(n, n, 0, None) if upper else _keep_mask(n, n, None, 0)
        if out is None:
            out = _kernel.empty(m, rdtype, order)
        elif overlap or out is m:  # the transpose is read from m's other half
            other = other.copy()
        return _by_reference(m, keep, out, other)
    if out is None:
        if rdtype != dtype:  # another byte order or layout: recast first
            m = recast(m, rdtype)
        elif rdtype is not dtype:
            m = m.view(rdtype)
        return _kernel.mirror(
            m, None, upper, conj_bits(rdtype) if conj else None, order
        )
    if out.dtype != dtype:
        m = recast(m, out.dtype)
    elif overlap:
        m = m.copy()
    return _kernel.mirror(m, out, upper, conj_bits(out.dtype) if conj else None)
