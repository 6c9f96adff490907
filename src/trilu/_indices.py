"""numpy's index family: ``tri``, ``triu_indices``, ``tril_indices`` and their
``_from`` forms, bit for bit, without numpy's n x m mask.

The kernel answers the common calls: sizes and ``k`` that are ints, and for
``tri`` a numeric or bool dtype. Anything else (floats or bools as sizes,
numpy scalars of other widths, 0-d arrays, ``like=`` a numpy or
``__array_function__`` array, strings, objects, datetimes) goes to numpy's own
function, from numpy's module, which :func:`trilu.use_in_numpy` never
replaces: it gives numpy's answer or numpy's error to the letter in every
numpy version. From numpy 2.5 on, sizes and k
are numpy's operator.index of them, and what that refuses takes numpy's
steps here, so that numpy's DeprecationWarning names the caller's line.
``tri(like=)`` an array that speaks DLPack makes the result
here and hands it to that array's library (``_dispatch.like``); the index
arrays are numpy's, whatever the input, as numpy's are.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, SupportsIndex, cast, overload

import numpy as np

from . import _dispatch, _kernel, _private, _validate

if TYPE_CHECKING:
    from numpy._typing import _DTypeLike
    from numpy.typing import DTypeLike, NDArray

    from ._typing import (
        Array2D,
        Foreign,
        ForeignT,
        HasShapeAndNDim,
        Indices,
        ScalarT,
        SupportsArrayFunc,
        SupportsDLPack,
    )

_ndarray = np.ndarray
_Pair = Callable[..., tuple[np.ndarray, np.ndarray]]
# numpy's own functions, which trilu.use_in_numpy() never replaces
_np_tri: Callable[..., np.ndarray] = _private.numpy_twodim.tri
_np_triu_indices: _Pair = _private.numpy_twodim.triu_indices
_np_tril_indices: _Pair = _private.numpy_twodim.tril_indices
_np_triu_indices_from: _Pair = _private.numpy_twodim.triu_indices_from
_np_tril_indices_from: _Pair = _private.numpy_twodim.tril_indices_from

# Exact ints: within these bounds numpy's own arithmetic on them (-k, m - k,
# k - 1, in int64) is exact, so the kernel's answer is numpy's.
_INT_TYPES: tuple[type, ...] = (int, np.intp, np.int64)
_LIMIT = 1 << 62


def _memory() -> int:
    """The machine's memory in bytes (or 2**40 where it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 1 << 40


# numpy's n x m bool mask (and its np.arange vectors of n and m) cannot be
# allocated beyond the machine's memory: numpy raises MemoryError there, or
# ValueError past the largest array, so numpy itself answers such sizes.
_MEMORY = _memory()


def _sizes(n: Any, m: Any, k: Any) -> tuple[int, int, int] | None:
    """n, m (None: n) and k as the kernel takes them (n, m clamped to >= 0),
    or None where numpy must answer."""
    if m is None:
        m = n
    for x in (n, m, k):
        if type(x) not in _INT_TYPES or not -_LIMIT < x < _LIMIT:
            return None
    rows, cols = max(int(n), 0), max(int(m), 0)
    if max(rows, cols, rows * cols) > _MEMORY:
        return None
    return rows, cols, int(k)


# numpy >= 2.5 warns of a size or k that is not an integer at the first line
# outside numpy.lib, which would be trilu's: for them trilu takes numpy's own
# steps (numpy/lib/_twodim_base_impl.py at v2.5.0) and warns as numpy does.


def _numpy_tri(N: Any, M: Any, k: Any, dtype: Any) -> np.ndarray:
    """numpy >= 2.5's tri, where a size or k is not an integer."""
    N, M, k, refused = _validate.tri_sizes(N, M, k)
    if M is None:
        M = N
    min_int = _private.numpy_twodim._min_int  # numpy's own dtype choice
    m = np.greater_equal.outer(
        np.arange(N, dtype=min_int(0, N)),
        np.arange(-k, M - k, dtype=min_int(-k, M - k)),
    )
    m = m.astype(dtype, copy=False)
    _validate.not_integer(refused)
    return m


def _numpy_indices(
    n: Any, k: Any, m: Any, upper: bool
) -> tuple[np.ndarray, np.ndarray]:
    """numpy >= 2.5's triu_indices (upper) or tril_indices, where a size or
    k is not an integer."""
    if upper:
        tri_ = ~_numpy_tri(n, m, _validate.triu_indices_k(k) - 1, bool)
    else:
        tri_ = _numpy_tri(n, m, k, bool)
    shape = (int(tri_.shape[0]), int(tri_.shape[1]))
    rows, cols = np.indices(shape, sparse=True)
    return np.broadcast_to(rows, shape)[tri_], np.broadcast_to(cols, shape)[tri_]


# The dtype argument -> (its dtype, numpy's casts of True and False to it),
# or None for dtypes numpy fills itself (those are not bytes of a fixed
# pattern, or True is not 1 in them): the kernel's, which tri's door reads
# too. A dtype with metadata is never a key: it is equal to, and hashes as,
# the same dtype without.
_tri_dtypes: dict[Any, tuple[np.dtype, bytes, bytes] | None] = _kernel.tri_dtypes
_PLAIN_CLASSES = {type(np.dtype(c)) for c in "?bhilqBHILQefdgFDG"}


def _tri_dtype(dtype: Any) -> tuple[np.dtype, bytes, bytes] | None:
    keyed = not (isinstance(dtype, np.dtype) and dtype.metadata is not None)
    try:
        if keyed:
            return _tri_dtypes[dtype]
    except (KeyError, TypeError):  # TypeError: unhashable (a field list)
        pass
    if not (dtype is None or isinstance(dtype, (type, str, np.dtype))):
        return None
    try:
        descr = np.dtype(dtype)
    except Exception:  # noqa: BLE001  (numpy raises its own error)
        return None
    found = None
    if type(descr) in _PLAIN_CLASSES:
        one = np.zeros(1, descr)  # long double's padding bytes stay zero
        one[...] = np.True_
        found = (descr, one.tobytes(), bytes(descr.itemsize))  # False: zeros
    if keyed and descr.metadata is None:
        _tri_dtypes[dtype] = found
    return found


# like= a tensor or a JAX array: that library's array; else numpy's overloads:
# float64 by default, a dtype's scalar type where it names one
@overload
def tri(
    N: SupportsIndex,
    M: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    dtype: DTypeLike | None = ...,
    *,
    like: ForeignT,
) -> ForeignT: ...
@overload
def tri(
    N: SupportsIndex,
    M: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    dtype: None = ...,
    *,
    like: SupportsArrayFunc | None = None,
) -> Array2D[np.float64]: ...
@overload
def tri(
    N: SupportsIndex,
    M: SupportsIndex | None,
    k: SupportsIndex,
    dtype: _DTypeLike[ScalarT],
    *,
    like: SupportsArrayFunc | None = None,
) -> Array2D[ScalarT]: ...
@overload
def tri(
    N: SupportsIndex,
    M: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    *,
    dtype: _DTypeLike[ScalarT],
    like: SupportsArrayFunc | None = None,
) -> Array2D[ScalarT]: ...
@overload
def tri(
    N: SupportsIndex,
    M: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    dtype: DTypeLike | None = ...,
    *,
    like: SupportsArrayFunc | None = None,
) -> Array2D[Any]: ...
@_kernel.door
def tri(
    N: SupportsIndex,
    M: SupportsIndex | None = None,
    k: SupportsIndex = 0,
    dtype: DTypeLike | None = float,
    *,
    like: SupportsArrayFunc | SupportsDLPack | Foreign | None = None,
) -> NDArray[Any] | SupportsDLPack | Foreign:
    """An array with ones at and below the k-th diagonal: ``numpy.tri``, bit
    for bit.

    Element ``[i, j]`` is 1 where ``j <= i + k`` and 0 elsewhere, written
    directly rather than cast from a broadcast comparison: the mask
    ``band_mask(N, M, None, k, dtype=dtype)``.

    Parameters
    ----------
    N : int
        Number of rows.
    M : int, optional
        Number of columns; `N` by default.
    k : int, optional
        The diagonal at and below which the array is filled: 0 (the default)
        is the main diagonal, ``k < 0`` below it, ``k > 0`` above.
    dtype : data-type, optional
        The result's dtype, float64 by default. Strings, objects and
        datetimes hold numpy's cast of True and False (``'True'``, ``True``).
    like : array_like, optional
        As in numpy: an array whose library makes the result. A CPU array of
        a library that speaks DLPack (a PyTorch tensor, a JAX array) gets
        trilu's result in that library, without a copy.

    Returns
    -------
    numpy.ndarray
        The ``(N, M)`` array, C-ordered (of `like`'s library, if given).

    Raises
    ------
    TypeError, ValueError, OverflowError, MemoryError
        Exactly where numpy raises them, with numpy's messages.

    See Also
    --------
    tril_indices : The indices of the same triangle.
    numpy.tri : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import trilu
    >>> trilu.tri(3, 5, 2, dtype=int)
    array([[1, 1, 1, 0, 0],
           [1, 1, 1, 1, 0],
           [1, 1, 1, 1, 1]])
    """
    if like is not None and _dispatch.numpy_answers(like):
        like = None
    if like is not None and type(like) is not _ndarray:
        # (handing nothing: a DLPack library's array, or None)
        made = cast(
            "SupportsDLPack | None",
            _dispatch.like(lambda: tri(N, M, k, dtype), like, "tri"),
        )
        if made is not None:
            return made
    sizes = _sizes(N, M, k) if like is None else None
    if sizes is None and like is None and _validate.NOT_INTEGER is not None:
        N, M, k, refused = _validate.tri_sizes(N, M, k)
        if refused is not None:
            return _numpy_tri(N, M, k, dtype)
        sizes = _sizes(N, M, k)
    if sizes is not None and (plain := _tri_dtype(dtype)) is not None:
        rows, cols, kk = sizes
        try:
            return _kernel.mask(rows, cols, None, kk, *plain)
        except MemoryError:  # numpy fails first on its mask, or not at all
            pass
    return _np_tri(N, M, k, dtype, like=like)


def _indices(n: Any, k: Any, m: Any, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    sizes = _sizes(n, m, k)
    if sizes is None and _validate.NOT_INTEGER is not None:
        n, m, k, refused = _validate.tri_sizes(n, m, k)
        if refused is not None:
            return _numpy_indices(n, k, m, upper)
        sizes = _sizes(n, m, k)
    if sizes is not None:
        rows, cols, kk = sizes
        try:
            return _kernel.triangle_indices(rows, cols, kk, upper)
        except MemoryError:
            pass
    return (_np_triu_indices if upper else _np_tril_indices)(n, k, m)


@_kernel.door
def triu_indices(
    n: SupportsIndex, k: SupportsIndex = 0, m: SupportsIndex | None = None
) -> Indices:
    """The indices of the upper triangle of an ``(n, m)`` array:
    ``numpy.triu_indices``, bit for bit.

    The pairs ``(i, j)`` with ``j - i >= k``, in row-major order, counted
    directly rather than found in an n x m mask: the two index arrays are the
    only memory the call takes.

    Parameters
    ----------
    n : int
        Number of rows of the arrays the indices are for.
    k : int, optional
        Diagonal offset, as in :func:`~trilu.triu`: 0 (the default) is the
        main diagonal.
    m : int, optional
        Number of columns; `n` by default.

    Returns
    -------
    tuple of numpy.ndarray
        The row indices and the column indices, two 1-D ``intp`` arrays.

    Raises
    ------
    TypeError, ValueError, OverflowError, MemoryError
        Exactly where numpy raises them, with numpy's messages.

    See Also
    --------
    tril_indices, triu_indices_from
    numpy.triu_indices : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import trilu
    >>> trilu.triu_indices(3)
    (array([0, 0, 0, 1, 1, 2]), array([0, 1, 2, 1, 2, 2]))
    >>> trilu.triu_indices(2, 1, 4)
    (array([0, 0, 0, 1, 1]), array([1, 2, 3, 2, 3]))
    """
    return _indices(n, k, m, True)


@_kernel.door
def tril_indices(
    n: SupportsIndex, k: SupportsIndex = 0, m: SupportsIndex | None = None
) -> Indices:
    """The indices of the lower triangle of an ``(n, m)`` array:
    ``numpy.tril_indices``, bit for bit.

    The pairs ``(i, j)`` with ``j - i <= k``, in row-major order; otherwise as
    :func:`triu_indices`.

    Parameters
    ----------
    n : int
        Number of rows of the arrays the indices are for.
    k : int, optional
        Diagonal offset, as in :func:`~trilu.tril`: 0 (the default) is the
        main diagonal.
    m : int, optional
        Number of columns; `n` by default.

    Returns
    -------
    tuple of numpy.ndarray
        The row indices and the column indices, two 1-D ``intp`` arrays.

    Raises
    ------
    TypeError, ValueError, OverflowError, MemoryError
        Exactly where numpy raises them, with numpy's messages.

    See Also
    --------
    triu_indices, tril_indices_from
    numpy.tril_indices : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import trilu
    >>> trilu.tril_indices(3, -1)
    (array([1, 2, 2]), array([0, 0, 1]))
    """
    return _indices(n, k, m, False)


def _from(arr: Any, k: Any, upper: bool) -> tuple[np.ndarray, np.ndarray]:
    if type(arr) is not _ndarray and not _dispatch.numpy_answers(arr):
        if _dispatch.kind(arr) is _dispatch.DASK:
            name = "triu_indices_from" if upper else "tril_indices_from"
            raise TypeError(
                f"{name} takes a numpy array, got a dask array; pass its "
                f"shape: trilu.{name[:-5]}(n, k, m)"
            )
        return (_np_triu_indices_from if upper else _np_tril_indices_from)(arr, k)
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _indices(arr.shape[-2], k, arr.shape[-1], upper)


@_kernel.door
def triu_indices_from(arr: HasShapeAndNDim, k: SupportsIndex = 0) -> Indices:
    """The indices of the upper triangle of a 2-D array:
    ``numpy.triu_indices_from``, bit for bit.

    ``triu_indices(*arr.shape, ...)`` with `arr`'s rows and columns.

    Parameters
    ----------
    arr : numpy.ndarray
        A 2-D array; only its shape is read. Arrays of other libraries that
        implement ``__array_function__`` go to numpy's function (which hands
        them to their library); a dask array raises ``TypeError``.
    k : int, optional
        Diagonal offset, as in :func:`triu_indices`.

    Returns
    -------
    tuple of numpy.ndarray
        The row indices and the column indices.

    Raises
    ------
    ValueError
        If `arr` is not 2-D (numpy's message).
    TypeError
        If `arr` is a dask array.

    See Also
    --------
    triu_indices
    numpy.triu_indices_from : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> a = np.arange(6).reshape(2, 3)
    >>> a[trilu.triu_indices_from(a, 1)]
    array([1, 2, 5])
    """
    return _from(arr, k, True)


@_kernel.door
def tril_indices_from(arr: HasShapeAndNDim, k: SupportsIndex = 0) -> Indices:
    """The indices of the lower triangle of a 2-D array:
    ``numpy.tril_indices_from``, bit for bit.

    ``tril_indices(*arr.shape, ...)`` with `arr`'s rows and columns.

    Parameters
    ----------
    arr : numpy.ndarray
        A 2-D array, as in :func:`triu_indices_from`.
    k : int, optional
        Diagonal offset, as in :func:`tril_indices`.

    Returns
    -------
    tuple of numpy.ndarray
        The row indices and the column indices.

    Raises
    ------
    ValueError
        If `arr` is not 2-D (numpy's message).
    TypeError
        If `arr` is a dask array.

    See Also
    --------
    tril_indices
    numpy.tril_indices_from : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> a = np.arange(6).reshape(2, 3)
    >>> a[trilu.tril_indices_from(a)]
    array([0, 3, 4])
    """
    return _from(arr, k, False)
