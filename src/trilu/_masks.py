"""Masks made from nothing: a band of one value in a matrix of another.

``band_mask`` is ``np.tri``'s generalisation, two diagonals and two values,
and ``attention_mask`` the masks of attention (causal, sliding-window, for a
KV cache or not) in its terms. The kernel writes each row's spans as fills,
a run of whole rows at once, with nothing read; dtypes that hold references
(object, StringDType) go through numpy's assignment instead.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import TYPE_CHECKING, Any, Literal, SupportsIndex, overload

import numpy as np

from . import _dispatch, _kernel, _route, _validate
from ._pack import _size

if TYPE_CHECKING:
    from collections.abc import Callable

    from numpy._typing import _DTypeLike
    from numpy.typing import DTypeLike

    from ._typing import (
        AnyArray,
        Array2D,
        DaskArray,
        ScalarT,
        SupportsArrayFunc,
        SupportsDLPack,
    )

_ndarray = np.ndarray


def _values(dtype: np.dtype, keep: Any, fill: Any) -> tuple[np.ndarray, np.ndarray]:
    """keep and fill as 0-d arrays of dtype: numpy's cast of True and False
    (np.tri's values) where not given, else converted as ``fill=`` is (and
    remembered for band_mask's door)."""
    keep = (
        np.array(True).astype(dtype)
        if keep is None
        else _route._fill(keep, dtype, None, "keep")
    )
    fill = (
        np.array(False).astype(dtype)
        if fill is None
        else _route._fill(fill, dtype, None)
    )
    return keep, fill


def _defaults(dtype: np.dtype) -> tuple[Any, Any]:
    """band_mask's keep and fill in dtype where not given; None for a dtype
    that takes no bool."""
    try:
        return _values(dtype, None, None)
    except (TypeError, ValueError):
        return None, None


def _remember(
    table: dict[Any, tuple[np.dtype, bytes, bytes]],
    dtype: Any,
    descr: np.dtype,
    values: Callable[[np.dtype], tuple[Any, Any]],
) -> None:
    """table[dtype] = (descr, keep's bytes, fill's), keep and fill as
    values(descr) gives them, for a door to find the values a dtype argument
    gives: only a dtype the door looks up as it is (``_kernel.keyed``), once."""
    if descr.hasobject or not _kernel.keyed(dtype) or dtype in table:
        return
    keep, fill = values(descr)
    if keep is None:
        return
    data = _validate.fill_bytes(keep, descr), _validate.fill_bytes(fill, descr)
    table[dtype] = (descr, *data)


def _bound(value: Any, name: str) -> int | None:
    return None if value is None else _validate.numpy_k(value, name)


def _mask(
    rows: int,
    cols: int,
    lo: int | None,
    hi: int | None,
    keep: np.ndarray,
    fill: np.ndarray,
    chunks: Any,
    name: str,
) -> AnyArray:
    """The mask of validated arguments: a dask array with chunks, else numpy's."""
    dtype = keep.dtype
    if max(rows, cols, rows * cols * dtype.itemsize) > sys.maxsize:
        raise MemoryError(f"a {rows} x {cols} result of {dtype} cannot be allocated")
    if chunks is not None:
        from . import _dask  # noqa: PLC0415  (dask is optional: only now)

        lazy: DaskArray = _dask.mask(rows, cols, lo, hi, keep, fill, chunks, name)
        return lazy
    return numpy_mask(rows, cols, lo, hi, keep, fill)


def numpy_mask(
    rows: int,
    cols: int,
    lo: int | None,
    hi: int | None,
    keep: np.ndarray,
    fill: np.ndarray,
) -> np.ndarray:
    """A rows x cols numpy array of keep where lo <= j - i <= hi, fill elsewhere."""
    dtype = keep.dtype
    if dtype.hasobject:  # references: numpy's assignment copies them
        out = np.empty((rows, cols), dtype)
        out[...] = fill
        np.copyto(out, keep, where=_route._keep_mask(rows, cols, lo, hi))
        return out
    data = _validate.fill_bytes(keep, dtype), _validate.fill_bytes(fill, dtype)
    return _kernel.mask(rows, cols, lo, hi, dtype, *data)


# numpy's types for tri, bool by default; with chunks=, a dask array (Any:
# its type is dask's, which checking trilu's callers needs not)
@overload
def band_mask(
    n: SupportsIndex,
    m: SupportsIndex | None = None,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    dtype: type[bool] = ...,
    keep: object = None,
    fill: object = None,
    like: SupportsArrayFunc | None = None,
    chunks: None = None,
) -> Array2D[np.bool_]: ...
@overload
def band_mask(
    n: SupportsIndex,
    m: SupportsIndex | None = None,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    dtype: _DTypeLike[ScalarT],
    keep: object = None,
    fill: object = None,
    like: SupportsArrayFunc | None = None,
    chunks: None = None,
) -> Array2D[ScalarT]: ...
@overload
def band_mask(
    n: SupportsIndex,
    m: SupportsIndex | None = None,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    dtype: DTypeLike,
    keep: object = None,
    fill: object = None,
    like: SupportsArrayFunc | None = None,
    chunks: None = None,
) -> Array2D[Any]: ...
@overload
def band_mask(
    n: SupportsIndex,
    m: SupportsIndex | None = None,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    dtype: DTypeLike = ...,
    keep: object = None,
    fill: object = None,
    like: SupportsArrayFunc | None = None,
    chunks: object,
) -> Any: ...
@_kernel.door
def band_mask(
    n: SupportsIndex,
    m: SupportsIndex | None = None,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    dtype: DTypeLike = bool,
    keep: object = None,
    fill: object = None,
    like: SupportsArrayFunc | SupportsDLPack | None = None,
    chunks: object = None,
) -> AnyArray:
    """An array of `keep` on the diagonals ``lo <= j - i <= hi`` and `fill`
    elsewhere, made from nothing.

    ``band_mask(n, m, None, k, dtype=d)`` is ``np.tri(n, m, k, d)`` bit for
    bit, and ``band_mask(n, m, k, None)`` its upper counterpart. Each element
    is written once, as a run of one value: nothing is read, no comparison
    is made.

    Parameters
    ----------
    n : int
        Number of rows.
    m : int, optional
        Number of columns; `n` by default.
    lo, hi : int or None, optional
        The lowest and highest diagonal that holds `keep` (0 is the main
        one, ``k > 0`` above it), as in :func:`band`; None leaves that side
        unbounded.
    dtype : data-type, optional
        The result's dtype, bool by default.
    keep, fill : scalar, optional
        The values on and off the band: numpy's cast of True and False by
        default (``True``/``False``, ``1``/``0`` for numbers), as
        :func:`numpy.tri` holds them; given, converted as ``fill=`` is in
        :func:`triu` (NEP 50).
    like : array_like, optional
        As in numpy's creation functions: an array whose library makes the
        result (through ``__array_function__``); a dask array gives a lazy
        dask array (chunked as `chunks` says, ``"auto"`` by default), and a
        CPU array of a library that speaks DLPack (a PyTorch tensor, a JAX
        array) trilu's result in that library, without a copy.
    chunks : optional
        Any chunks :func:`dask.array.zeros` takes: the result is then a lazy
        dask array, and each block wholly on or off the band is one value,
        broadcast, made without a task of its own to run.

    Returns
    -------
    numpy.ndarray
        The ``(n, m)`` array, C-ordered (a dask array with `chunks`).

    Raises
    ------
    TypeError
        If `n`, `m`, `lo` or `hi` is not an integer, `keep` or `fill` is not
        of the dtype's kind, `like` has no ``__array_function__`` (nor
        DLPack), or is of DLPack with `chunks` given.
    OverflowError
        If an integer `keep` or `fill` is out of the dtype's range.
    ValueError
        If `n` or `m` is negative.

    See Also
    --------
    attention_mask : The masks of attention, in these terms.
    band : The same diagonals of an array.
    numpy.tri : ``band_mask(n, m, None, k, dtype=float)``.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.band_mask(3, 5, -1, 1)
    array([[ True,  True, False, False, False],
           [ True,  True,  True, False, False],
           [False,  True,  True,  True, False]])
    >>> np.array_equal(trilu.band_mask(4, None, None, 0, dtype=float), np.tri(4))
    True
    >>> trilu.band_mask(3, 3, 1, None, dtype=np.int8, keep=-1, fill=7)
    array([[ 7, -1, -1],
           [ 7,  7, -1],
           [ 7,  7,  7]], dtype=int8)
    """
    if like is not None and type(like) is not _ndarray:
        kwargs: dict[str, Any] = {"n": n, "m": m, "lo": lo, "hi": hi,
                                  "dtype": dtype, "keep": keep, "fill": fill,
                                  "chunks": chunks}  # fmt: skip
        made = _dispatch.like(
            lambda: band_mask(**kwargs), like, "band_mask", (band_mask, kwargs)
        )
        if made is not None:
            return made
    rows = _size(n, "n")
    cols = rows if m is None else _size(m, "m")
    lo, hi = _bound(lo, "lo"), _bound(hi, "hi")
    descr = np.dtype(dtype)
    keep, fill = _values(descr, keep, fill)
    _remember(_kernel.mask_dtypes, dtype, descr, _defaults)
    return _mask(rows, cols, lo, hi, keep, fill, chunks, "band_mask")


_ALIGNS = ("bottom_right", "top_left")


def _attention_values(dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Where attention is allowed and where not: True and False for bool, 0
    and -inf (added to the scores) for a floating dtype that holds -inf;
    read-only, for _cached_values to share them."""
    if dtype.kind == "b":
        values = np.ones((), dtype), np.zeros((), dtype)
    elif dtype.kind == "f" or (
        dtype.kind == "V" and dtype.type.__module__.startswith("ml_dtypes")
    ):
        with np.errstate(invalid="ignore"):  # int4 and float8_e4m3fn say so
            low = np.array(-math.inf).astype(dtype)
        if float(low) != -math.inf:
            raise TypeError(
                f"attention_mask's additive mask needs -inf, which dtype {dtype} "
                "does not hold"
            )
        values = np.zeros((), dtype), low
    else:
        raise TypeError(
            "attention_mask's dtype must be bool (True where attention is "
            f"allowed) or floating (the additive mask: 0 and -inf), got {dtype}; "
            "for another dtype, convert the bool mask (.astype)"
        )
    for value in values:
        value.flags.writeable = False
    return values


# A dtype with metadata is equal to, and hashes as, the same dtype without:
# those are never looked up.
_cached_values = functools.lru_cache(maxsize=64)(_attention_values)


@overload
def attention_mask(
    q_len: SupportsIndex,
    k_len: SupportsIndex | None = None,
    *,
    window: SupportsIndex | None = None,
    align: Literal["bottom_right", "top_left"] = "bottom_right",
    dtype: type[bool] = ...,
    like: SupportsArrayFunc | None = None,
    chunks: None = None,
) -> Array2D[np.bool_]: ...
@overload
def attention_mask(
    q_len: SupportsIndex,
    k_len: SupportsIndex | None = None,
    *,
    window: SupportsIndex | None = None,
    align: Literal["bottom_right", "top_left"] = "bottom_right",
    dtype: _DTypeLike[ScalarT],
    like: SupportsArrayFunc | None = None,
    chunks: None = None,
) -> Array2D[ScalarT]: ...
@overload
def attention_mask(
    q_len: SupportsIndex,
    k_len: SupportsIndex | None = None,
    *,
    window: SupportsIndex | None = None,
    align: Literal["bottom_right", "top_left"] = "bottom_right",
    dtype: DTypeLike,
    like: SupportsArrayFunc | None = None,
    chunks: None = None,
) -> Array2D[Any]: ...
@overload
def attention_mask(
    q_len: SupportsIndex,
    k_len: SupportsIndex | None = None,
    *,
    window: SupportsIndex | None = None,
    align: Literal["bottom_right", "top_left"] = "bottom_right",
    dtype: DTypeLike = ...,
    like: SupportsArrayFunc | None = None,
    chunks: object,
) -> Any: ...
@_kernel.door
def attention_mask(
    q_len: SupportsIndex,
    k_len: SupportsIndex | None = None,
    *,
    window: SupportsIndex | None = None,
    align: Literal["bottom_right", "top_left"] = "bottom_right",
    dtype: DTypeLike = bool,
    like: SupportsArrayFunc | SupportsDLPack | None = None,
    chunks: object = None,
) -> AnyArray:
    """A causal attention mask, sliding-window with `window`: where query i
    may attend key j.

    Query i may attend the keys ``j <= i + diag``, where ``diag = k_len -
    q_len`` aligns the last query with the last key (``"bottom_right"``: the
    queries are the newest tokens, as in decoding with a KV cache and in
    FlashAttention) or ``diag = 0`` aligns the first with the first
    (``"top_left"``: ``torch.nn.functional.scaled_dot_product_attention``'s
    ``is_causal=True``). With `window`, only the `window` most recent of them:
    ``j - i > diag - window``. The two are torch's ``causal_lower_right`` and
    ``causal_upper_left`` masks (``torch.nn.attention.bias``). This is
    :func:`band_mask` ``(q_len, k_len, diag - window + 1, diag)``.

    Parameters
    ----------
    q_len : int
        The number of queries: the rows.
    k_len : int, optional
        The number of keys: the columns; `q_len` by default.
    window : int, optional
        How many keys each query sees at most, itself included (1 or more);
        None (the default) for all of those before it.
    align : {"bottom_right", "top_left"}, optional
        Which corner the causal diagonal starts from, when the lengths
        differ (the same mask when they do not).
    dtype : data-type, optional
        bool (the default): True where attention is allowed, as torch's
        boolean masks. A floating dtype gives the additive mask, 0 where
        allowed and ``-inf`` elsewhere, to add to the scores before the
        softmax. Any other dtype is a TypeError: integers hold no ``-inf``,
        and a 1/0 integer mask is the bool one converted (``.astype``).
    like : array_like, optional
        As in :func:`band_mask`.
    chunks : optional
        As in :func:`band_mask`: a lazy dask array.

    Returns
    -------
    numpy.ndarray
        The ``(q_len, k_len)`` mask (a dask array with `chunks`).

    Raises
    ------
    TypeError
        If a length or `window` is not an integer, or `dtype` is neither
        bool nor floating with ``-inf``.
    ValueError
        If a length is negative, `window` is below 1, or `align` is neither
        "bottom_right" nor "top_left".

    See Also
    --------
    band_mask : Any band, any two values.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.attention_mask(3, 5)  # the 3 newest of 5 tokens
    array([[ True,  True,  True, False, False],
           [ True,  True,  True,  True, False],
           [ True,  True,  True,  True,  True]])
    >>> trilu.attention_mask(3, 5, align="top_left")
    array([[ True, False, False, False, False],
           [ True,  True, False, False, False],
           [ True,  True,  True, False, False]])
    >>> trilu.attention_mask(4, window=2, dtype=np.float32)
    array([[  0., -inf, -inf, -inf],
           [  0.,   0., -inf, -inf],
           [-inf,   0.,   0., -inf],
           [-inf, -inf,   0.,   0.]], dtype=float32)
    """
    if like is not None and type(like) is not _ndarray:
        kwargs: dict[str, Any] = {"q_len": q_len, "k_len": k_len,
                                  "window": window, "align": align,
                                  "dtype": dtype, "chunks": chunks}  # fmt: skip
        made = _dispatch.like(
            lambda: attention_mask(**kwargs),
            like,
            "attention_mask",
            (attention_mask, kwargs),
        )
        if made is not None:
            return made
    rows = _size(q_len, "q_len")
    cols = rows if k_len is None else _size(k_len, "k_len")
    if align not in _ALIGNS:
        raise ValueError(f"align must be 'bottom_right' or 'top_left', got {align!r}")
    diag = cols - rows if align == "bottom_right" else 0
    lo = None
    if window is not None:
        size = _validate.numpy_k(window, "window")
        if size < 1:
            raise ValueError(f"window must be 1 or more, got {size}")
        lo = diag - size + 1
    descr = np.dtype(dtype)
    cached = descr.metadata is None
    values = _cached_values if cached else _attention_values
    keep, fill = values(descr)
    _remember(_kernel.attention_dtypes, dtype, descr, values)
    return _mask(rows, cols, lo, diag, keep, fill, chunks, "attention_mask")


__all__ = ["attention_mask", "band_mask"]
