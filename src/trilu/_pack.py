"""Packed triangles: each matrix's kept elements as a vector, and back.

The packed order is numpy's ``m[..., r, c]`` with ``r, c =
np.triu_indices(n, k, m)`` (or ``tril_indices``): row after row, as LAPACK's
packed storage of a lower triangle, ``scipy.spatial.distance.squareform``
(``k=1``) and TensorFlow Probability's ``fill_triangular`` store them. The
kernel copies each row's span, with no index arrays: dtypes that hold
references (object, StringDType) go through numpy's own indexing instead.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

import numpy as np

from . import _dispatch, _kernel, _route, _validate

if TYPE_CHECKING:
    from numpy._typing import _ArrayLike
    from numpy.typing import ArrayLike, NDArray

    from ._typing import (
        AnyArray,
        ArrayT,
        DaskArray,
        DaskArrayT,
        Foreign,
        ForeignT,
        ScalarT,
    )

_ndarray = np.ndarray


def band_of(k: int, upper: bool) -> tuple[int | None, int | None]:
    """The band (lo, hi) of triu(k) (upper) or tril(k)."""
    return (k, None) if upper else (None, k)


def packed_shape(
    shape: tuple[int, ...], lo: int | None, hi: int | None
) -> tuple[int, ...]:
    """pack's result shape for matrices of this shape, band (lo, hi)."""
    if len(shape) < 2:
        raise ValueError(
            f"pack needs matrices (2 or more dimensions), got shape {shape}"
        )
    return (*shape[:-2], _kernel.band_count(shape[-2], shape[-1], lo, hi))


def _out(
    out: Any, shape: tuple[int, ...], dtype: np.dtype, src: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Check out; return src as the kernel must read it (in out's byte order,
    and copied first where out shares its memory), and out, checked."""
    _validate.out(out, shape, dtype)
    overlap = _kernel.check_out(src, out)
    if out.dtype != src.dtype:
        return _route.recast(src, out.dtype), out
    return (src.copy() if overlap else src), out


# The public functions' types follow triu's (_api): another library's array
# gives its own kind first.
@overload
def pack(
    m: DaskArrayT,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    out: None = None,
) -> DaskArrayT: ...
@overload
def pack(
    m: ForeignT,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def pack(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    out: ArrayT,
) -> ArrayT: ...
@overload
def pack(
    m: _ArrayLike[ScalarT],
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def pack(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def pack(
    m: ArrayLike | DaskArray | Foreign,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """The kept triangle of each matrix as a vector: ``m[..., r, c]`` with
    ``r, c = np.triu_indices(N, k, M)`` (or ``tril_indices``), bit for bit,
    without the index arrays.

    Parameters
    ----------
    m : array_like
        Matrices, shape ``(..., N, M)``, of any dtype. A dask array gives a
        lazy dask array, a chunk of the packed axis per block of rows.
    k : int, optional
        The diagonal offset, as in :func:`triu` and :func:`tril`.
    upper : bool, optional
        Pack the upper triangle (the default, as :func:`triu` keeps it) or
        the lower one (as :func:`tril`).
    out : numpy.ndarray, optional
        Where to write the result: a writable array of shape
        ``m.shape[:-2] + (P,)`` and `m`'s dtype (either byte order).

    Returns
    -------
    numpy.ndarray
        Shape ``m.shape[:-2] + (P,)``, P the elements each triangle keeps,
        in row-major order; `out` if given.

    Raises
    ------
    TypeError
        If `k` is not an integer, or `out` is not a numpy array of `m`'s
        dtype, or is given with a non-numpy `m`.
    ValueError
        If `m` has fewer than 2 dimensions, or `out` another shape.

    See Also
    --------
    unpack : The inverse.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> x = np.arange(1, 10).reshape(3, 3)
    >>> trilu.pack(x)
    array([1, 2, 3, 5, 6, 9])
    >>> trilu.pack(x, -1, upper=False)
    array([4, 7, 8])
    """
    if type(k) is not int:
        k = _validate.numpy_k(k)
    upper = _validate.flag(upper, "upper")
    if type(m) is not _ndarray:
        return _dispatch.call(
            pack, m, (k,), {"upper": upper}, out, lazy=("pack", (k, upper), {})
        )
    lo, hi = band_of(k, upper)
    shape = packed_shape(m.shape, lo, hi)
    if out is not None:
        m, out = _out(out, shape, m.dtype, m)
    if m.dtype.hasobject:  # references: numpy's indexing copies them
        rows, cols = m.shape[-2:]
        r, c = _kernel.triangle_indices(rows, cols, k, upper)
        if out is None:
            return m[..., r, c]
        out[...] = m[..., r, c]
        return out
    if out is None:
        out = np.empty(shape, m.dtype)
    return _kernel.pack(m, out, lo, hi)


def _rows(count: int, lo: int | None, hi: int | None, k: int, upper: bool) -> int:
    """The one n whose n x n matrix keeps `count` elements of band (lo, hi)."""

    def kept(n: int) -> int:
        return int(_kernel.band_count(n, n, lo, hi))

    low = _kernel.square_side(count, k, upper)  # the smallest that keeps count or more
    side = "upper" if upper else "lower"
    if kept(low) != count:
        near = (
            f"n={low - 1} has {kept(low - 1)}, n={low} has {kept(low)}"
            if kept(low) > count
            else f"the largest within reach, n={low}, has {kept(low)}"
        )
        raise ValueError(
            f"v's last axis has {count} elements, but no square matrix's {side} "
            f"triangle with k={k} has that many ({near}): give n"
        )
    if kept(low + 1) == count:
        raise ValueError(
            f"v's last axis has {count} elements, which square matrices of "
            f"n={low} and n={low + 1} both keep with k={k}: give n"
        )
    return low


def _size(n: Any, name: str) -> int:
    """A matrix side: a non-negative integer."""
    side = _validate.numpy_k(n, name)
    if side < 0:
        raise ValueError(f"{name} must be 0 or more, got {side}")
    return side


def result_shape(
    name: str, shape: tuple[int, ...], dtype: Any, values: dict[str, Any]
) -> tuple[int, ...]:
    """The shape of the public function ``name``'s result for an input of
    this shape, given its arguments by name (another library's dtype too)."""
    if name == "pack":
        return packed_shape(shape, *band_of(values["k"], values["upper"]))
    if name == "unpack":
        k, upper = values["k"], values["upper"]
        return unpacked_shape(shape, dtype, values["n"], values["m"], k, upper)
    return (shape[0], shape[0]) if len(shape) == 1 else shape  # 1-D: N x N


def unpacked_shape(
    shape: tuple[int, ...],
    dtype: Any,
    n: int | None,
    m: int | None,
    k: int,
    upper: bool,
) -> tuple[int, ...]:
    """unpack's result shape for packed vectors of this shape (n and m valid
    sides or None)."""
    if not shape:
        raise ValueError(
            "unpack needs packed vectors (1 or more dimensions), got a 0-D array"
        )
    lo, hi = band_of(k, upper)
    count = shape[-1]
    if n is None:
        if m is not None:
            raise TypeError("unpack: m needs n (omit both for a square result)")
        rows = cols = _rows(count, lo, hi, k, upper)
    else:
        rows, cols = n, n if m is None else m
        if rows * cols * dtype.itemsize > sys.maxsize:
            raise MemoryError(
                f"a {rows} x {cols} result of {dtype} cannot be allocated"
            )
        need = _kernel.band_count(rows, cols, lo, hi)
        if need != count:
            side = "upper" if upper else "lower"
            raise ValueError(
                f"v's last axis has {count} elements, but the {side} triangle of "
                f"a {rows} x {cols} matrix with k={k} has {need}"
            )
    return (*shape[:-1], rows, cols)


@overload
def unpack(
    v: DaskArrayT,
    n: SupportsIndex | None = None,
    m: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    fill: object = None,
    out: None = None,
) -> DaskArrayT: ...
@overload
def unpack(
    v: ForeignT,
    n: SupportsIndex | None = None,
    m: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    fill: object = None,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def unpack(
    v: ArrayLike,
    n: SupportsIndex | None = None,
    m: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    fill: object = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def unpack(
    v: _ArrayLike[ScalarT],
    n: SupportsIndex | None = None,
    m: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    fill: object = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def unpack(
    v: ArrayLike,
    n: SupportsIndex | None = None,
    m: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    fill: object = None,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def unpack(
    v: ArrayLike | DaskArray | Foreign,
    n: SupportsIndex | None = None,
    m: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    fill: object = None,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """Matrices from packed triangles, the inverse of :func:`pack`: each
    vector's elements go to the kept positions, row after row, and the rest
    get `fill`.

    ``o = np.zeros(v.shape[:-1] + (n, m)); o[..., r, c] = v`` bit for bit,
    with ``r, c = np.triu_indices(n, k, m)`` (or ``tril_indices``).

    Parameters
    ----------
    v : array_like
        Packed vectors along the last axis, shape ``(..., P)``, any dtype. A
        dask array gives a lazy dask array, its rows' blocks ending where the
        chunks of the packed axis do.
    n : int, optional
        The rows of each matrix. Omitted, the matrices are square, of the
        one n whose triangle keeps P elements (``k=1`` is
        ``squareform``'s case).
    m : int, optional
        The columns of each matrix; `n` by default.
    k : int, optional
        The diagonal offset, as in :func:`pack`.
    upper : bool, optional
        The upper triangle (the default) or the lower one.
    fill : scalar, optional
        What the other elements get instead of zero, as in :func:`triu`.
    out : numpy.ndarray, optional
        Where to write the result: a writable array of shape
        ``v.shape[:-1] + (n, m)`` and `v`'s dtype.

    Returns
    -------
    numpy.ndarray
        Shape ``v.shape[:-1] + (n, m)``; `out` if given.

    Raises
    ------
    TypeError
        If `n`, `m` or `k` is not an integer, `fill` is not of `v`'s kind,
        or `out` is not a numpy array of `v`'s dtype, or is given with a
        non-numpy `v`.
    OverflowError
        If an integer `fill` is out of the dtype's range.
    ValueError
        If P fits no square matrix (or more than one), or not the given n
        and m; if `v` is 0-D or `out` has another shape.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.unpack(np.array([1, 2, 3, 5, 6, 9]))
    array([[1, 2, 3],
           [0, 5, 6],
           [0, 0, 9]])
    >>> trilu.unpack(np.array([1., 2., 3.]), k=1, fill=np.nan)
    array([[nan,  1.,  2.],
           [nan, nan,  3.],
           [nan, nan, nan]])
    """
    k = _validate.numpy_k(k)
    upper = _validate.flag(upper, "upper")
    n = None if n is None else _size(n, "n")
    m = None if m is None else _size(m, "m")
    if type(v) is not _ndarray:
        return _dispatch.call(
            unpack,
            v,
            (n, m, k),
            {"upper": upper, "fill": fill},
            out,
            lazy=("unpack", (n, m, k, upper, fill), {}),
        )
    lo, hi = band_of(k, upper)
    shape = unpacked_shape(v.shape, v.dtype, n, m, k, upper)
    rows, cols = shape[-2:]
    value = _validate.fill(fill, v.dtype) if fill is not None else None
    if out is not None:
        v, out = _out(out, shape, v.dtype, v)
    if v.dtype.hasobject:
        if out is None:
            out = np.empty(shape, v.dtype)
        out[...] = value if value is not None else _validate.fill(None, v.dtype)
        r, c = _kernel.triangle_indices(rows, cols, k, upper)
        out[..., r, c] = v
        return out
    dtype = v.dtype if out is None else out.dtype
    data = None if value is None else _validate.fill_bytes(value, dtype)
    data = data if data and any(data) else None  # zeros: fresh zero pages hold them
    return _kernel.unpack(v, out, lo, hi, data, rows, cols)


__all__ = ["pack", "unpack"]
