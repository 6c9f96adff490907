"""Packed triangles: each matrix's kept elements as a vector, and back.

The packed order is numpy's ``m[..., r, c]`` with ``r, c =
np.triu_indices(n, k, m)`` (or ``tril_indices``): row after row, as
``scipy.spatial.distance.squareform`` (``k=1``) and TensorFlow Probability's
``fill_triangular`` store them; or, with ``order="F"``, column after column,
as LAPACK's packed storage does. The kernel copies each line's span, with no
index arrays: dtypes that hold references (object, StringDType) go through
numpy's own indexing instead.
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex, overload

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
        Mirror,
        ScalarT,
    )

_ndarray = np.ndarray


def band_of(k: int, upper: bool) -> tuple[int | None, int | None]:
    """The band (lo, hi) of triu(k) (upper) or tril(k)."""
    return (k, None) if upper else (None, k)


def mirrored_band(k: int, upper: bool) -> tuple[int | None, int | None]:
    """The band of triu(k) (upper) or tril(k) whose transposes are not kept:
    the elements that unpack's mirror= also writes across the diagonal."""
    return (max(k, 1 - k), None) if upper else (None, min(k, -1 - k))


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


def _indices(
    rows: int, cols: int, k: int, upper: bool, columns: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The kept (r, c) of triu(k) (upper) or tril(k), sorted by row then
    column, or by column then row: the transpose's tril(-k) (or triu(-k))."""
    if columns:
        c, r = _kernel.triangle_indices(cols, rows, -k, not upper)
        return r, c
    return _kernel.triangle_indices(rows, cols, k, upper)


# The public functions' types follow triu's (_api): another library's array
# gives its own kind first.
@overload
def pack(
    m: DaskArrayT,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    order: Literal["C", "F"] = "C",
    out: None = None,
) -> DaskArrayT: ...
@overload
def pack(
    m: ForeignT,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    order: Literal["C", "F"] = "C",
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def pack(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    order: Literal["C", "F"] = "C",
    out: ArrayT,
) -> ArrayT: ...
@overload
def pack(
    m: _ArrayLike[ScalarT],
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    order: Literal["C", "F"] = "C",
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def pack(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    order: Literal["C", "F"] = "C",
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def pack(
    m: ArrayLike | DaskArray | Foreign,
    k: SupportsIndex = 0,
    *,
    upper: bool | np.bool_ = True,
    order: Literal["C", "F"] = "C",
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """The kept triangle of each matrix as a vector: ``m[..., r, c]`` with
    ``r, c = np.triu_indices(N, k, M)`` (or ``tril_indices``), bit for bit,
    without the index arrays; with ``order="F"``, the same elements column
    after column.

    LAPACK's packed storage is ``order="F"``: ``uplo="U"`` is
    ``upper=True``, ``uplo="L"`` is ``upper=False`` (``k=0``, as
    ``?trttp`` packs it).

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
    order : {"C", "F"}, optional
        The kept elements row after row (``"C"``, the default: numpy's
        ``triu_indices`` order) or column after column, each column top to
        bottom (``"F"``: ``(r, c)`` sorted by column, then row).
    out : numpy.ndarray, optional
        Where to write the result: a writable array of shape
        ``m.shape[:-2] + (P,)`` and `m`'s dtype (either byte order).

    Returns
    -------
    numpy.ndarray
        Shape ``m.shape[:-2] + (P,)``, P the elements each triangle keeps,
        in the order `order` says; `out` if given.

    Raises
    ------
    TypeError
        If `k` is not an integer, or `out` is not a numpy array of `m`'s
        dtype, or is given with a non-numpy `m`.
    ValueError
        If `m` has fewer than 2 dimensions, `order` is not "C" or "F", or
        `out` has another shape.

    See Also
    --------
    unpack : The inverse.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> x = np.arange(1, 10).reshape(3, 3)
    >>> trilu.pack(x)
    array([1, 2, 3, 5, 6, 9])
    >>> trilu.pack(x, order="F")
    array([1, 2, 5, 3, 6, 9])
    >>> trilu.pack(x, -1, upper=False)
    array([4, 7, 8])

    The Cholesky factor of a symmetric positive definite matrix by LAPACK's
    packed routine, ``uplo="U"``:

    >>> from scipy.linalg import lapack
    >>> c = np.array([[4.0, 2, 2], [2, 5, 3], [2, 3, 6]])
    >>> factor, info = lapack.dpptrf(3, trilu.pack(c, order="F"), lower=0)
    >>> trilu.unpack(factor, order="F")
    array([[2., 1., 1.],
           [0., 2., 1.],
           [0., 0., 2.]])
    """
    if type(k) is not int:
        k = _validate.numpy_k(k)
    upper = _validate.flag(upper, "upper")
    columns = _validate.packed_order(order)
    if type(m) is not _ndarray:
        kwargs = {"upper": upper, "order": order}
        lazy = ("pack", (k, upper), {"order": order})
        return _dispatch.call(pack, m, (k,), kwargs, out, lazy=lazy)
    lo, hi = band_of(k, upper)
    shape = packed_shape(m.shape, lo, hi)
    if out is not None:
        m, out = _out(out, shape, m.dtype, m)
    if m.dtype.hasobject:  # references: numpy's indexing copies them
        rows, cols = m.shape[-2:]
        r, c = _indices(rows, cols, k, upper, columns)
        if out is None:
            return _route.gather(m, (..., r, c))
        out[...] = _route.gather(m, (..., r, c))
        return out
    return _kernel.pack(m, out, lo, hi, columns)  # (None: a fresh result)


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
    order: Literal["C", "F"] = "C",
    fill: object = None,
    mirror: Mirror = False,
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
    order: Literal["C", "F"] = "C",
    fill: object = None,
    mirror: Mirror = False,
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
    order: Literal["C", "F"] = "C",
    fill: object = None,
    mirror: Mirror = False,
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
    order: Literal["C", "F"] = "C",
    fill: object = None,
    mirror: Mirror = False,
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
    order: Literal["C", "F"] = "C",
    fill: object = None,
    mirror: Mirror = False,
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
    order: Literal["C", "F"] = "C",
    fill: object = None,
    mirror: Mirror = False,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """Matrices from packed triangles, the inverse of :func:`pack`: each
    vector's elements go to the kept positions, row after row (or column
    after column), and the rest get `fill`; with `mirror`, the other
    triangle gets the kept one's transpose.

    ``o = np.zeros(v.shape[:-1] + (n, m)); o[..., r, c] = v`` bit for bit,
    with ``r, c = np.triu_indices(n, k, m)`` (or ``tril_indices``; for
    ``order="F"``, sorted by column, then row). LAPACK's packed storage is
    ``order="F"``: ``uplo="U"`` is ``upper=True``, ``uplo="L"`` is
    ``upper=False``, and ``unpack`` is ``?tpttr`` with the other triangle
    zero. ``mirror=True`` then sets ``o[..., c, r] = v`` wherever ``(c, r)``
    is not kept: a symmetric matrix in one pass, ``scipy.spatial.distance.
    squareform(v)`` for ``k=1``; the diagonals between the triangle and its
    mirror (``|k| > 0`` of them) get `fill`.

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
    order : {"C", "F"}, optional
        How `v` lists the triangle, as in :func:`pack`: row after row
        (``"C"``, the default) or column after column (``"F"``). The result
        is C-ordered either way.
    fill : scalar, optional
        What the other elements get instead of zero, as in :func:`triu`.
    mirror : {False, True, "conj"}, optional
        Write the transpose of the triangle over the other one (square
        matrices), conjugated with ``"conj"`` (a Hermitian matrix; a kept
        diagonal keeps its values as they are, as LAPACK's Hermitian
        storage does).
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
        ``mirror="conj"`` meets a dtype without a conjugate, or `out` is not
        a numpy array of `v`'s dtype, or is given with a non-numpy `v`.
    OverflowError
        If an integer `fill` is out of the dtype's range.
    ValueError
        If P fits no square matrix (or more than one), or not the given n
        and m; if `v` is 0-D, `order` is not "C" or "F", `mirror` is not one
        of its values or meets matrices that are not square, or `out` has
        another shape.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.unpack(np.array([1, 2, 3, 5, 6, 9]))
    array([[1, 2, 3],
           [0, 5, 6],
           [0, 0, 9]])
    >>> trilu.unpack(np.array([1, 2, 5, 3, 6, 9]), order="F")
    array([[1, 2, 3],
           [0, 5, 6],
           [0, 0, 9]])
    >>> trilu.unpack(np.array([1., 2., 3.]), k=1, fill=np.nan)
    array([[nan,  1.,  2.],
           [nan, nan,  3.],
           [nan, nan, nan]])
    >>> trilu.unpack(np.array([1, 2, 3]), k=1, mirror=True)
    array([[0, 1, 2],
           [1, 0, 3],
           [2, 3, 0]])
    >>> trilu.unpack(np.array([1, 2j, 3]), mirror="conj")
    array([[1.+0.j, 0.+2.j],
           [0.-2.j, 3.+0.j]])
    """
    k = _validate.numpy_k(k)
    upper = _validate.flag(upper, "upper")
    columns = _validate.packed_order(order)
    mirrored, conj = _validate.mirror(mirror)
    n = None if n is None else _size(n, "n")
    m = None if m is None else _size(m, "m")
    if type(v) is not _ndarray:
        kwargs = {"upper": upper, "order": order, "fill": fill, "mirror": mirror}
        lazy = ("unpack", (n, m, k, upper, fill), {"order": order, "mirror": mirror})
        return _dispatch.call(unpack, v, (n, m, k), kwargs, out, lazy=lazy)
    lo, hi = band_of(k, upper)
    shape = unpacked_shape(v.shape, v.dtype, n, m, k, upper)
    rows, cols = shape[-2:]
    if mirrored:
        mirrorable(rows, cols, v.dtype, conj)
    value = _route._fill(fill, v.dtype, None) if fill is not None else None
    if out is not None:
        v, out = _out(out, shape, v.dtype, v)
    if v.dtype.hasobject:
        return _unpack_references(
            v, shape, k, upper, columns, value, mirrored, conj, out
        )
    dtype = v.dtype if out is None else out.dtype
    data = None if value is None else _validate.fill_bytes(value, dtype)
    data = data if data and any(data) else None  # zeros: fresh zero pages hold them
    xor = _route.conj_bits(dtype) if conj else None
    return _kernel.unpack(v, out, lo, hi, data, rows, cols, columns, mirrored, xor)


def mirrorable(rows: int, cols: int, dtype: np.dtype, conj: bool) -> None:
    """Raise unless unpack can mirror rows x cols matrices of dtype (conj:
    conjugated)."""
    if conj:
        _validate.conjugable(dtype, "mirror='conj'")
    if rows != cols:
        raise ValueError(
            f"unpack with mirror needs square matrices, got {rows} x {cols}"
        )


def _unpack_references(
    v: np.ndarray,
    shape: tuple[int, ...],
    k: int,
    upper: bool,
    columns: bool,
    value: np.ndarray | None,
    mirrored: bool,
    conj: bool,
    out: np.ndarray | None,
) -> np.ndarray:
    """unpack of object and StringDType vectors, by numpy's indexing: the
    references copied, never bytes."""
    rows, cols = shape[-2:]
    r, c = _indices(rows, cols, k, upper, columns)
    if mirrored:  # the kept (r, c) whose transpose (c, r) is not kept
        d = r - c  # (c, r)'s j - i, against k within reach of it
        k = max(-rows - 1, min(k, cols + 1))
        other = (d < k) if upper else (d > k)
        mirror_v = v[..., other]
        if conj:  # raises for objects without .conjugate, before any write
            mirror_v = np.conjugate(mirror_v)
    if out is None:
        out = np.empty(shape, v.dtype)
    out[...] = value if value is not None else _validate.fill(None, v.dtype)
    out[..., r, c] = v
    if mirrored:
        out[..., c[other], r[other]] = mirror_v
    return out


# _check_numbers' answers for numpy's own number dtypes (np.finfo is a
# microsecond a call: most of a small squareform's)
_NUMBERS: dict[np.dtype, tuple[int, bool, int, int] | None] = {}


def _check_numbers(dtype: np.dtype) -> tuple[int, bool, int, int] | None:
    """How the kernel compares dtype's elements as numpy does (pack_checked's
    part, floats, mag and inf): integers by their bytes, in either byte
    order; numpy's floats and complex numbers of native byte order by IEEE
    754's rules, a part at a time. None for the others, which numpy
    compares: ml_dtypes' floats among them, which are no numpy inexact type
    (with ml_dtypes 0.5, np.finfo raises for them)."""
    try:
        return _NUMBERS[dtype]
    except KeyError:
        numbers = _numbers_of(dtype)
    if dtype.isbuiltin:  # (a finite set: the cache stays small)
        _NUMBERS[dtype] = numbers
    return numbers


def _numbers_of(dtype: np.dtype) -> tuple[int, bool, int, int] | None:
    """_check_numbers' answer, worked out."""
    if dtype.kind in "iu" and dtype.itemsize in (1, 2, 4, 8):
        return dtype.itemsize, False, 0, 0
    if not issubclass(dtype.type, np.inexact) or not dtype.isnative:
        return None
    part = np.finfo(dtype).dtype
    if part.type not in (np.float16, np.float32, np.float64):
        return None  # long double: padding bytes that are no part of it
    bits = 8 * part.itemsize
    mag = (1 << (bits - 1)) - 1  # all but the sign
    return part.itemsize, True, mag, mag ^ ((1 << int(np.finfo(part).nmant)) - 1)


def _distance_error(x: np.ndarray, symmetric: bool) -> ValueError:
    """scipy's error for a matrix that is not symmetric, or whose diagonal
    is not zero, with the first element that makes it so (found as the
    check finds it: by numpy's ==)."""
    if not symmetric:
        i, j = np.argwhere(~(x == x.T))[0]
        return ValueError(
            f"Distance matrix 'X' must be symmetric: X[{i}, {j}] != X[{j}, {i}]"
        )
    (i,) = np.flatnonzero(~(np.diagonal(x) == 0))[:1]
    return ValueError(f"Distance matrix 'X' diagonal must be zero: X[{i}, {i}] != 0")


def _to_vector(x: np.ndarray, checks: Any) -> np.ndarray:
    """squareform of a matrix: its strict upper triangle, row after row,
    checked first (or in the same pass) as scipy checks it."""
    n, m = x.shape
    if n != m:
        raise ValueError(
            f"squareform: the matrix X must be square, got shape {x.shape}"
        )
    numbers = _check_numbers(x.dtype) if checks else None
    if numbers is not None:
        x = np.ascontiguousarray(x)  # (rows read along, and across by tiles)
        v, unequal, nonzero = _kernel.pack_checked(x, *numbers)
        if unequal or nonzero:
            raise _distance_error(x, symmetric=not unequal)
        return v
    if checks:  # scipy's own comparisons, whatever they raise
        if not (x == x.T).all():
            raise _distance_error(x, symmetric=False)
        if not (x[range(n), range(n)] == 0).all():
            raise _distance_error(x, symmetric=True)
    if x.dtype.hasobject:
        r, c = _kernel.triangle_indices(n, n, 1, True)
        return _route.gather(x, (r, c))
    return _kernel.pack(x, None, 1, None)


def _to_matrix(v: np.ndarray) -> np.ndarray:
    """squareform of a vector: the symmetric matrix of zero diagonal whose
    strict upper triangle it is, row after row, in one pass."""
    count = v.shape[0]
    n = (1 + math.isqrt(1 + 8 * count)) // 2  # count = n (n - 1) / 2
    if n * (n - 1) // 2 != count:
        raise ValueError(
            f"squareform: X has {count} elements, which is no n * (n - 1) / 2 "
            f"(n choose 2) for an integer n: n={n} has {n * (n - 1) // 2}, "
            f"n={n + 1} has {n * (n + 1) // 2}"
        )
    if v.dtype.hasobject:
        return _unpack_references(v, (n, n), 1, True, False, None, True, False, None)
    return _kernel.unpack(v, None, 1, None, None, n, n, False, True)


@overload
def squareform(
    X: _ArrayLike[ScalarT], force: str = "no", checks: bool | np.bool_ = True
) -> NDArray[ScalarT]: ...
@overload
def squareform(
    X: ArrayLike, force: str = "no", checks: bool | np.bool_ = True
) -> NDArray[Any]: ...
def squareform(
    X: ArrayLike, force: str = "no", checks: bool | np.bool_ = True
) -> AnyArray:
    """A condensed distance vector as the square matrix, or the reverse:
    ``scipy.spatial.distance.squareform``, with the same results, dtypes and
    errors, in one pass each way.

    The vector is the strict upper triangle of a symmetric matrix of zero
    diagonal, row after row: ``pack(X, 1)`` of the matrix, and
    ``unpack(v, k=1, mirror=True)`` of the vector.

    Parameters
    ----------
    X : array_like
        A 1-D condensed distance vector of n * (n - 1) / 2 elements (a
        scalar is one element), or a 2-D square distance matrix; of any
        dtype.
    force : str, optional
        ``"tomatrix"`` or ``"tovector"`` (in any case): refuse an `X` of
        the other kind. Any other string is the default, ``"no"``.
    checks : bool, optional
        Check that a matrix is symmetric with a zero diagonal, as numpy
        compares its elements (so a NaN is never equal, and ``-0.0`` is
        zero), in the same pass that packs it; a vector is not checked.

    Returns
    -------
    numpy.ndarray
        The n x n matrix (the 1 x 1 zero matrix for an empty vector), or the
        vector (empty for n <= 1), in `X`'s dtype.

    Raises
    ------
    TypeError
        If `X` is a dask array, or `force` is not a string.
    ValueError
        If `X` is neither 1-D nor 2-D, or not the kind `force` asks for; if
        a vector's length is no n * (n - 1) / 2, or a matrix is not square,
        or (with `checks`) not symmetric or of a nonzero diagonal.

    See Also
    --------
    pack, unpack : Any triangle, batches, ``out=``.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> m = trilu.squareform(np.array([3.0, 4.0, 5.0]))
    >>> m
    array([[0., 3., 4.],
           [3., 0., 5.],
           [4., 5., 0.]])
    >>> trilu.squareform(m)
    array([3., 4., 5.])
    >>> m[0, 1] = 2.0
    >>> trilu.squareform(m)
    Traceback (most recent call last):
        ...
    ValueError: Distance matrix 'X' must be symmetric: X[0, 1] != X[1, 0]
    """
    if type(X) is _ndarray:
        x = X
    elif _dispatch.kind(X) is not _dispatch.NUMPY:
        return _dispatch.call(squareform, X, (force, checks), {}, None)
    else:
        x = np.asarray(X)
    if not isinstance(force, str):
        raise TypeError(f"force must be a str, got {type(force).__name__}")
    mode = force if force == "no" else force.lower()
    if x.ndim == 0:  # a scalar is a vector of one, as scipy takes it
        x = x.reshape(1)
    if mode == "tomatrix" and x.ndim != 1:
        raise ValueError(
            f"squareform: force='tomatrix' but X is not a distance vector: "
            f"shape {x.shape}"
        )
    if mode == "tovector" and x.ndim != 2:
        raise ValueError(
            f"squareform: force='tovector' but X is not a distance matrix: "
            f"shape {x.shape}"
        )
    if x.ndim == 1:
        return _to_matrix(x)
    if x.ndim == 2:
        return _to_vector(x, checks)
    raise ValueError(
        "squareform: X must be one or two dimensional (a distance vector or "
        f"matrix), got a {x.ndim}-dimensional array"
    )


__all__ = ["pack", "squareform", "unpack"]
