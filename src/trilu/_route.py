"""The triangle of a numpy array whose arguments are valid: dtypes routed.

Everything that can be decided in Python is decided here, so the kernel only
ever sees plain bytes: dtypes that hold references (object, StringDType,
structured with object fields) go through numpy's own copy, and a byte order
or layout that differs between input and result is recast first.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import numpy as np

from . import _kernel, _validate

try:  # numpy's own triu and tril, which trilu.use_in_numpy() never replaces
    _numpy_impl = importlib.import_module("numpy.lib._twodim_base_impl")
except ImportError:  # numpy 1.26
    _numpy_impl = importlib.import_module("numpy.lib.twodim_base")


def numpy_original(name: str) -> Any:
    """numpy's own function of this name (triu, tri, triu_indices, ...), from
    numpy's module, not its namespace, which trilu.use_in_numpy() changes:
    what trilu hands to numpy never comes back to trilu."""
    return getattr(_numpy_impl, name)


def numpy_function(upper: bool) -> Any:
    """numpy.triu or numpy.tril itself: arrays of other libraries go there,
    to their own code."""
    return numpy_original("triu" if upper else "tril")


def _keep_mask(rows: int, cols: int, k: int, upper: bool) -> np.ndarray:
    """True where (i, j) is kept: j - i >= k (upper) or j - i <= k (lower)."""
    offset = np.arange(cols) - np.arange(rows)[:, None]
    return offset >= k if upper else offset <= k


def _by_reference(
    m: np.ndarray, k: int, upper: bool, out: np.ndarray, zero: Any
) -> np.ndarray:
    """Object and StringDType arrays: numpy copies the references, never bytes."""
    rows, cols = m.shape[-2:]
    if out is not m:
        np.copyto(out, m, casting="equiv")  # numpy buffers an overlapping m
    np.copyto(out, zero, where=~_keep_mask(rows, cols, k, upper))
    return out


def _recast(m: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A copy of m in dtype: m's dtype in another byte order, or packed."""
    # numpy's astype leaves generic-unit datetimes unswapped: swap the bytes
    swap = dtype.kind in "mM" and dtype.byteorder != m.dtype.byteorder
    copy: np.ndarray = m.byteswap().view(dtype) if swap else m.astype(dtype)
    return copy


def triangle(
    m: np.ndarray, k: int, upper: bool, out: Any, order: Any, onnx: bool
) -> np.ndarray:
    """The triangle of ndarray m, into out (validated here) or a new array."""
    _validate.order(order)
    if m.ndim < 2:
        _validate.rank(m.shape, onnx)
        n = m.shape[0]  # numpy: a 1-D m is taken as the rows of an n x n matrix
        if n * n * m.dtype.itemsize > sys.maxsize:
            raise MemoryError(f"a {n} x {n} result of {m.dtype} cannot be allocated")
        m = np.broadcast_to(m, (n, n))
    dtype = m.dtype
    rdtype = _validate.result_dtype(dtype)
    if out is not None:
        _validate.out(out, m.shape, rdtype)
    overlap = out is not None and _kernel.check_out(m, out)
    if dtype.hasobject:
        rows, cols = m.shape[-2:]
        k = max(-rows, min(k, cols))
        if onnx and dtype.kind == "O":
            zero: Any = ""  # an ONNX string tensor as an object array
        else:
            zero = np.zeros((), dtype)  # numpy's zero: int 0 in object fields
        if out is None:
            out = _kernel.empty(m, rdtype, order)
        return _by_reference(m, k, upper, out, zero)
    if out is None:
        if rdtype != dtype:  # another byte order or layout: recast, then cut
            return _kernel.fill(
                _recast(m, rdtype), _kernel.empty(m, rdtype, order), k, upper
            )
        if rdtype is not dtype:  # metadata numpy drops: m viewed in its dtype
            m = m.view(rdtype)
        return _kernel.fill(m, None, k, upper, order)
    if out.dtype != dtype:  # another byte order or layout than out's
        m = _recast(m, out.dtype)
    elif overlap:  # a partial overlap: work on a copy of m
        m = m.copy()
    return _kernel.fill(m, out, k, upper)
