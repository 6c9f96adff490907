"""LAPACK's band storage: a matrix's diagonals as the rows of an array, and back.

``ab[..., upper + i - j, j] = a[..., i, j]`` for the diagonals ``-lower <= j -
i <= upper``: the ``ab`` of ``scipy.linalg.solve_banded`` and of LAPACK's
``?gbsv`` (without the rows ``?gbtrf`` adds for its fill-in), and with one
side zero the ``ab`` of ``eig_banded`` and ``cholesky_banded``. An M x N matrix
is stored in N columns, as ``?gbtrf`` stores it. Either side, seen through a
sheared view, is a band of the other's shape: the kernel moves it as it moves
any band (to_banded's zeros are the rest of that band); dtypes that hold
references (object, StringDType) go through numpy's indexing instead.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

import numpy as np

from . import _dispatch, _kernel, _route, _validate
from ._pack import _out, _size

if TYPE_CHECKING:
    from numpy._typing import _ArrayLike
    from numpy.typing import ArrayLike, NDArray

    from ._typing import AnyArray, ArrayT, ScalarT

_ndarray = np.ndarray
_MAXSIZE = sys.maxsize  # (a global: no attribute looked up a call)


def _sides(lower: Any, upper: Any) -> tuple[int, int]:
    if type(lower) is int and type(upper) is int and lower >= 0 and upper >= 0:
        return lower, upper  # (the common case, without two calls)
    return _size(lower, "lower"), _size(upper, "upper")


def _matrices(x: np.ndarray, name: str, what: str) -> None:
    if x.ndim < 2:
        raise ValueError(
            f"{name} needs {what} (2 or more dimensions), got shape {x.shape}"
        )


def _fits(count: int, cols: int, dtype: np.dtype) -> None:
    """Raise MemoryError for band storage of count x cols that no array holds."""
    if count * (cols or 1) * (dtype.itemsize or 1) > _MAXSIZE:
        raise MemoryError(
            f"a {count} x {cols} band storage of {dtype} cannot be allocated"
        )


def _positions(
    rows: int, cols: int, lower: int, upper: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(d, i, j) of every element of the band: ab[..., d, j] = a[..., i, j]."""
    d, j = np.indices((lower + upper + 1, cols)).reshape(2, -1)
    i = j + d - upper
    inside = (i >= 0) & (i < rows)
    return d[inside], i[inside], j[inside]


# pack's and unpack's types (numpy's for triu), without k
@overload
def to_banded(
    a: ArrayLike, lower: SupportsIndex, upper: SupportsIndex, *, out: ArrayT
) -> ArrayT: ...
@overload
def to_banded(
    a: _ArrayLike[ScalarT],
    lower: SupportsIndex,
    upper: SupportsIndex,
    *,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def to_banded(
    a: ArrayLike, lower: SupportsIndex, upper: SupportsIndex, *, out: None = None
) -> NDArray[Any]: ...
def to_banded(
    a: ArrayLike,
    lower: SupportsIndex,
    upper: SupportsIndex,
    *,
    out: NDArray[Any] | None = None,
) -> AnyArray:
    """The diagonals ``-lower..upper`` of each matrix in LAPACK's band storage,
    as :func:`scipy.linalg.solve_banded` takes them.

    ``ab[..., upper + i - j, j] = a[..., i, j]`` for ``-lower <= j - i <=
    upper``; the positions of ``ab`` outside the matrix (the corners, and
    the rows past the last of a wide matrix) are zero. ``to_banded(a, 0, u)``
    is the upper form of :func:`scipy.linalg.eig_banded` and
    :func:`scipy.linalg.cholesky_banded`, ``to_banded(a, l, 0)`` the lower
    one (with ``lower=True``). An M x N matrix is stored in N columns, as
    LAPACK's ``?gbtrf`` stores it: rows past ``N + lower`` hold nothing of
    the band.

    Parameters
    ----------
    a : array_like
        Matrices, shape ``(..., M, N)``, of any dtype.
    lower, upper : int
        The numbers of diagonals below and above the main one (0 or more).
    out : numpy.ndarray, optional
        Where to write the result: a writable array of shape
        ``a.shape[:-2] + (lower + upper + 1, N)`` and `a`'s dtype (either
        byte order).

    Returns
    -------
    numpy.ndarray
        ``ab``, of `a`'s dtype; `out` if given.

    Raises
    ------
    TypeError
        If `a` is a dask array, `lower` or `upper` is not an integer, or
        `out` is not a numpy array of `a`'s dtype.
    ValueError
        If `lower` or `upper` is negative, `a` has fewer than 2 dimensions,
        or `out` another shape.

    See Also
    --------
    from_banded : The inverse.
    band : The same diagonals, in place in the matrix.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> a = np.array([[4., 1, 0, 0], [2, 5, 1, 0], [0, 2, 6, 1], [0, 0, 2, 7]])
    >>> ab = trilu.to_banded(a, 1, 1)
    >>> ab
    array([[0., 1., 1., 1.],
           [4., 5., 6., 7.],
           [2., 2., 2., 0.]])
    >>> from scipy.linalg import solve_banded
    >>> np.allclose(a @ solve_banded((1, 1), ab, np.ones(4)), 1)
    True
    """
    lower, upper = _sides(lower, upper)
    if type(a) is not _ndarray:
        return _dispatch.call(to_banded, a, (lower, upper), {}, out)
    _matrices(a, "to_banded", "matrices")
    rows, cols = a.shape[-2:]
    count = lower + upper + 1
    _fits(count, cols, a.dtype)
    shape = (*a.shape[:-2], count, cols)
    if out is not None:
        a, out = _out(out, shape, a.dtype, a)
    if a.dtype.hasobject:  # references: numpy's indexing copies them
        ab = np.zeros(shape, a.dtype) if out is None else out
        if out is not None:
            ab[...] = np.zeros((), a.dtype)
        d, i, j = _positions(rows, cols, lower, upper)
        ab[..., d, j] = _route.gather(a, (..., i, j))
        return ab
    return _kernel.to_banded(a, out, lower, upper)


@overload
def from_banded(
    ab: ArrayLike,
    lower: SupportsIndex,
    upper: SupportsIndex,
    *,
    n: SupportsIndex | None = None,
    fill: object = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def from_banded(
    ab: _ArrayLike[ScalarT],
    lower: SupportsIndex,
    upper: SupportsIndex,
    *,
    n: SupportsIndex | None = None,
    fill: object = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def from_banded(
    ab: ArrayLike,
    lower: SupportsIndex,
    upper: SupportsIndex,
    *,
    n: SupportsIndex | None = None,
    fill: object = None,
    out: None = None,
) -> NDArray[Any]: ...
def from_banded(
    ab: ArrayLike,
    lower: SupportsIndex,
    upper: SupportsIndex,
    *,
    n: SupportsIndex | None = None,
    fill: object = None,
    out: NDArray[Any] | None = None,
) -> AnyArray:
    """Matrices from their LAPACK band storage, the inverse of
    :func:`to_banded`: ``a[..., i, j] = ab[..., upper + i - j, j]`` on the
    diagonals ``-lower <= j - i <= upper``, `fill` elsewhere.

    The positions of `ab` outside the matrix are not read (LAPACK leaves
    them as they were).

    Parameters
    ----------
    ab : array_like
        Band storage, shape ``(..., lower + upper + 1, N)``, of any dtype.
    lower, upper : int
        The numbers of diagonals below and above the main one (0 or more).
    n : int, optional
        The rows of each matrix (M); N by default: square matrices.
    fill : scalar, optional
        What the elements off the band get instead of zero, converted as in
        :func:`triu`.
    out : numpy.ndarray, optional
        Where to write the result: a writable array of shape
        ``ab.shape[:-2] + (n, N)`` and `ab`'s dtype (either byte order).

    Returns
    -------
    numpy.ndarray
        The matrices, shape ``ab.shape[:-2] + (n, N)``; `out` if given.

    Raises
    ------
    TypeError
        If `ab` is a dask array, `lower`, `upper` or `n` is not an integer,
        `fill` is not of `ab`'s kind, or `out` is not a numpy array of
        `ab`'s dtype.
    OverflowError
        If an integer `fill` is out of the dtype's range.
    ValueError
        If `lower`, `upper` or `n` is negative, `ab`'s second-to-last axis
        is not ``lower + upper + 1`` long, or `out` has another shape.

    See Also
    --------
    to_banded : The band storage of matrices.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> ab = np.array([[0, 1, 1, 1], [4, 5, 6, 7], [2, 2, 2, 0]])
    >>> trilu.from_banded(ab, 1, 1)
    array([[4, 1, 0, 0],
           [2, 5, 1, 0],
           [0, 2, 6, 1],
           [0, 0, 2, 7]])
    >>> trilu.from_banded(ab[:2], 0, 1, fill=-1)  # the upper form
    array([[ 4,  1, -1, -1],
           [-1,  5,  1, -1],
           [-1, -1,  6,  1],
           [-1, -1, -1,  7]])
    >>> trilu.from_banded(ab[1:], 1, 0, n=5)  # the lower form, 5 x 4
    array([[4, 0, 0, 0],
           [2, 5, 0, 0],
           [0, 2, 6, 0],
           [0, 0, 2, 7],
           [0, 0, 0, 0]])
    """
    lower, upper = _sides(lower, upper)
    n = None if n is None else _size(n, "n")
    if type(ab) is not _ndarray:
        kwargs = {"n": n, "fill": fill}
        return _dispatch.call(from_banded, ab, (lower, upper), kwargs, out)
    _matrices(ab, "from_banded", "band storage")
    count = lower + upper + 1
    if ab.shape[-2] != count:
        raise ValueError(
            f"ab's second-to-last axis has {ab.shape[-2]} rows, but band storage "
            f"of lower={lower}, upper={upper} has lower + upper + 1 = {count}"
        )
    cols = ab.shape[-1]
    rows = cols if n is None else n
    if max(rows, rows * cols * ab.dtype.itemsize) > _MAXSIZE:
        raise MemoryError(f"a {rows} x {cols} result of {ab.dtype} cannot be allocated")
    shape = (*ab.shape[:-2], rows, cols)
    value = _validate.fill(fill, ab.dtype) if fill is not None else None
    if out is not None:
        ab, out = _out(out, shape, ab.dtype, ab)
    if ab.dtype.hasobject:
        if out is None:
            out = np.empty(shape, ab.dtype)
        out[...] = value if value is not None else _validate.fill(None, ab.dtype)
        d, i, j = _positions(rows, cols, lower, upper)
        out[..., i, j] = _route.gather(ab, (..., d, j))
        return out
    dtype = ab.dtype if out is None else out.dtype
    data = None if value is None else _validate.fill_bytes(value, dtype)
    data = data if data and any(data) else None  # zeros: fresh zero pages hold them
    return _kernel.from_banded(ab, out, lower, upper, data, rows)


__all__ = ["from_banded", "to_banded"]
