"""The public functions: each is the kernel's door (``_kernel.door``), which
answers the common call in C and hands any other to the function here: a
numpy array to ``_route``, any other input to ``_dispatch``, with its scalar
arguments already valid."""

from __future__ import annotations

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
        Order,
        ScalarT,
    )

_ndarray = np.ndarray


# The public functions' types, as numpy's own for triu and tril
# (numpy/lib/_twodim_base_impl.pyi): an array of a known scalar type gives an
# array of that type, any other array-like NDArray[Any], and out= its own
# type. First, another library's array gives its own kind (a dask array, a
# tensor, a JAX array are array-like too). tril, band, mirror, trilu, pack
# and unpack follow triu.
@overload
def triu(
    m: DaskArrayT,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: None = None,
    out: None = None,
) -> DaskArrayT: ...
@overload
def triu(
    m: ForeignT,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def triu(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def triu(
    m: _ArrayLike[ScalarT],
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def triu(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def triu(
    m: ArrayLike | DaskArray | Foreign,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Literal["K", "A", "C", "F"] | None = None,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """Upper triangle of an array: ``numpy.triu``, bit for bit, with ``out=``.

    Elements below the k-th diagonal of the last two axes are zeroed
    (``k > 0`` is above the main diagonal). A 1-D ``m`` gives an N x N result,
    as in numpy. ``out`` may be ``m`` itself (in place) or any writable array
    of the result's shape and dtype; it is then filled and returned.

    Parameters
    ----------
    m : array_like
        Input of any dtype numpy.triu takes, shape ``(..., N, M)`` or ``(N,)``.
        A dask array gives a lazy dask array; an array of another library that
        implements ``__array_function__`` goes to that library's triu.
    k : int, optional
        Diagonal above which to zero elements: 0 (the default) is the main
        diagonal, ``k < 0`` below it, ``k > 0`` above. Integral floats
        (``2.0``) and 0-d integer arrays are accepted, as in numpy, with the
        DeprecationWarning numpy gives for a float from 2.5 on; any integer
        is allowed, however large.
    fill : scalar, optional
        What the zeroed triangle gets instead of numpy's zero (``-inf`` for
        an attention mask), converted to the result's dtype as numpy converts
        a Python scalar (NEP 50): an int must fit, a float never becomes an
        int. A string for string dtypes, any object for object arrays.
    order : {None, "K", "A", "C", "F"}, optional
        The memory layout of a fresh result: ``None`` (the default) is
        numpy.triu's own (C order, batch axes kept in the input's order; see
        :doc:`/user_guide/numpy`), the others numpy's orders, as in
        :func:`numpy.empty_like` (``"K"`` keeps the input's). No effect with
        `out`.
    out : numpy.ndarray, optional
        Where to write the result: a writable array of the result's shape and
        dtype (in either byte order), with any strides. It may be `m` itself
        (in place: only the zeroed triangle is written) or overlap it.

    Returns
    -------
    numpy.ndarray
        The upper triangle: `out` if given, else a new array of numpy's
        result dtype, laid out as `order` says.

    Raises
    ------
    TypeError
        If `k` is not an integer (``1.5``), `fill` is not of the result's
        kind (``-inf`` for integers), or `out` is not a numpy array or has
        another dtype than the result, or `out` is given with a non-numpy
        input.
    OverflowError
        If an integer `fill` is out of the dtype's range.
    ValueError
        If `out` has another shape than the result, or `order` is not one of
        numpy's.

    See Also
    --------
    tril : The lower triangle.
    trilu : The ONNX operator.
    numpy.triu : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> x = np.arange(1, 13).reshape(3, 4)
    >>> trilu.triu(x, 1)
    array([[ 0,  2,  3,  4],
           [ 0,  0,  7,  8],
           [ 0,  0,  0, 12]])
    >>> trilu.triu([1, 2, 3])  # a 1-D input is the rows of a 3x3 matrix
    array([[1, 2, 3],
           [0, 2, 3],
           [0, 0, 3]])
    >>> a = np.ones((2, 2))
    >>> trilu.triu(a, out=a) is a  # in place
    True
    >>> trilu.triu(np.ones((3, 3)), 1, fill=-np.inf)
    array([[-inf,   1.,   1.],
           [-inf, -inf,   1.],
           [-inf, -inf, -inf]])
    """
    if type(k) is not int:
        k = _validate.triangle_k(k, True)
    if type(m) is _ndarray:
        return _route.band(m, k, None, fill, out, order, False)
    return _dispatch.call(
        triu,
        m,
        (k,),
        {"fill": fill, "order": order},
        out,
        lazy=("band", (k, None, fill), {"name": "triu"}),
        own=None if fill is not None else (k, None),
    )


@overload
def tril(
    m: DaskArrayT,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: None = None,
    out: None = None,
) -> DaskArrayT: ...
@overload
def tril(
    m: ForeignT,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def tril(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def tril(
    m: _ArrayLike[ScalarT],
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def tril(
    m: ArrayLike,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Order = None,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def tril(
    m: ArrayLike | DaskArray | Foreign,
    k: SupportsIndex = 0,
    *,
    fill: object = None,
    order: Literal["K", "A", "C", "F"] | None = None,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """Lower triangle of an array: ``numpy.tril``, bit for bit, with ``out=``.

    Elements above the k-th diagonal of the last two axes are zeroed
    (``k > 0`` is above the main diagonal). Otherwise as :func:`triu`.

    Parameters
    ----------
    m : array_like
        Input of any dtype numpy.tril takes, shape ``(..., N, M)`` or ``(N,)``.
        A dask array gives a lazy dask array; an array of another library that
        implements ``__array_function__`` goes to that library's tril.
    k : int, optional
        Diagonal below which to keep elements: 0 (the default) is the main
        diagonal, ``k < 0`` below it, ``k > 0`` above. As in :func:`triu`.
    fill : scalar, optional
        What the zeroed triangle gets instead of numpy's zero, as in
        :func:`triu`.
    order : {None, "K", "A", "C", "F"}, optional
        The memory layout of a fresh result: ``None`` (the default) is
        numpy.triu's own (C order, batch axes kept in the input's order; see
        :doc:`/user_guide/numpy`), the others numpy's orders, as in
        :func:`numpy.empty_like` (``"K"`` keeps the input's). No effect with
        `out`.
    out : numpy.ndarray, optional
        Where to write the result, as in :func:`triu`.

    Returns
    -------
    numpy.ndarray
        The lower triangle: `out` if given, else a new array of `m`'s dtype.

    Raises
    ------
    TypeError
        If `k` is not an integer, `fill` is not of the result's kind, or
        `out` is not a numpy array of the result's dtype, or `out` is given
        with a non-numpy input.
    OverflowError
        If an integer `fill` is out of the dtype's range.
    ValueError
        If `out` has another shape than the result, or `order` is not one of
        numpy's.

    See Also
    --------
    triu : The upper triangle.
    trilu : The ONNX operator.
    numpy.tril : numpy's function, which this one reproduces.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.tril(np.arange(1, 10).reshape(3, 3), -1)
    array([[0, 0, 0],
           [4, 0, 0],
           [7, 8, 0]])
    >>> batch = np.ones((2, 3, 3), dtype=np.float32)
    >>> out = np.empty_like(batch)
    >>> trilu.tril(batch, out=out)[1]
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]], dtype=float32)
    """
    if type(k) is not int:
        k = _validate.triangle_k(k, False)
    if type(m) is _ndarray:
        return _route.band(m, None, k, fill, out, order, False)
    return _dispatch.call(
        tril,
        m,
        (k,),
        {"fill": fill, "order": order},
        out,
        lazy=("band", (None, k, fill), {"name": "tril"}),
        own=None if fill is not None else (None, k),
    )


@overload
def band(
    m: DaskArrayT,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    fill: object = None,
    order: None = None,
    out: None = None,
) -> DaskArrayT: ...
@overload
def band(
    m: ForeignT,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    fill: object = None,
    order: Order = None,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def band(
    m: ArrayLike,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    fill: object = None,
    order: Order = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def band(
    m: _ArrayLike[ScalarT],
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    fill: object = None,
    order: Order = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def band(
    m: ArrayLike,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    fill: object = None,
    order: Order = None,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def band(
    m: ArrayLike | DaskArray | Foreign,
    lo: SupportsIndex | None = None,
    hi: SupportsIndex | None = None,
    *,
    fill: object = None,
    order: Literal["K", "A", "C", "F"] | None = None,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """The diagonals between two offsets: element (i, j) of each matrix is
    kept where ``lo <= j - i <= hi``, the rest is zeroed (or `fill`).

    ``band(m, k, None)`` is ``triu(m, k)`` and ``band(m, None, k)`` is
    ``tril(m, k)``, bit for bit, in one pass: TensorFlow's ``band_part``,
    with numpy's conventions. Takes what :func:`triu` takes.

    Parameters
    ----------
    m : array_like
        Input of shape ``(..., N, M)`` or ``(N,)`` (the rows of an N x N
        matrix), of any dtype; a dask array gives a lazy dask array.
    lo, hi : int or None, optional
        The lowest and highest diagonal kept (0 is the main one, ``k > 0``
        above it); None leaves that side unbounded. ``lo > hi`` keeps
        nothing.
    fill : scalar, optional
        What the other elements get instead of numpy's zero, as in
        :func:`triu`.
    order : {None, "K", "A", "C", "F"}, optional
        The memory layout of a fresh result, as in :func:`triu`.
    out : numpy.ndarray, optional
        Where to write the result, as in :func:`triu` (in place too).

    Returns
    -------
    numpy.ndarray
        The band: `out` if given, else a new array of numpy's result dtype.

    Raises
    ------
    TypeError
        If `lo` or `hi` is not an integer or None, `fill` is not of the
        result's kind, or `out` is not a numpy array of the result's dtype.
    OverflowError
        If an integer `fill` is out of the dtype's range.
    ValueError
        If `out` has another shape than the result, or `order` is not one of
        numpy's.

    See Also
    --------
    triu, tril : One bound each.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.band(np.arange(1, 17).reshape(4, 4), -1, 1)  # tridiagonal
    array([[ 1,  2,  0,  0],
           [ 5,  6,  7,  0],
           [ 0, 10, 11, 12],
           [ 0,  0, 15, 16]])
    >>> trilu.band(np.zeros((3, 5)), 0, 2, fill=np.nan)  # a sliding window
    array([[ 0.,  0.,  0., nan, nan],
           [nan,  0.,  0.,  0., nan],
           [nan, nan,  0.,  0.,  0.]])
    """
    if lo is not None and type(lo) is not int:
        lo = _validate.numpy_k(lo, "lo")
    if hi is not None and type(hi) is not int:
        hi = _validate.numpy_k(hi, "hi")
    if type(m) is _ndarray:
        return _route.band(m, lo, hi, fill, out, order, False)
    return _dispatch.call(
        band,
        m,
        (lo, hi),
        {"fill": fill, "order": order},
        out,
        lazy=("band", (lo, hi, fill), {"name": "band"}),
    )


@overload
def mirror(
    m: DaskArrayT,
    *,
    upper: bool | np.bool_ = True,
    conj: bool | np.bool_ = False,
    order: None = None,
    out: None = None,
) -> DaskArrayT: ...
@overload
def mirror(
    m: ForeignT,
    *,
    upper: bool | np.bool_ = True,
    conj: bool | np.bool_ = False,
    order: Order = None,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def mirror(
    m: ArrayLike,
    *,
    upper: bool | np.bool_ = True,
    conj: bool | np.bool_ = False,
    order: Order = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def mirror(
    m: _ArrayLike[ScalarT],
    *,
    upper: bool | np.bool_ = True,
    conj: bool | np.bool_ = False,
    order: Order = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def mirror(
    m: ArrayLike,
    *,
    upper: bool | np.bool_ = True,
    conj: bool | np.bool_ = False,
    order: Order = None,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def mirror(
    m: ArrayLike | DaskArray | Foreign,
    *,
    upper: bool | np.bool_ = True,
    conj: bool | np.bool_ = False,
    order: Literal["K", "A", "C", "F"] | None = None,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """A symmetric (or Hermitian) matrix from one triangle: the triangle
    `upper` names, diagonal included, is kept as it is, and the other becomes
    its transpose (conjugated with `conj`).

    What LAPACK's ``potrf``, ``syrk`` or ``heevd`` leave for the other half:
    ``np.where(j >= i, m, m.T)`` (``m.T.conj()`` with `conj`) bit for bit,
    and ``out=m`` in place at the same speed.

    Parameters
    ----------
    m : array_like
        Square matrices, shape ``(..., N, N)`` (or ``(N,)``, the rows of an
        N x N matrix, as in :func:`triu`); a dask array gives a lazy dask
        array.
    upper : bool, optional
        Keep the upper triangle (the default) and mirror it below, or the
        reverse.
    conj : bool, optional
        Conjugate the mirrored elements: a Hermitian matrix from complex
        input. Real numbers are their own conjugates.
    order : {None, "K", "A", "C", "F"}, optional
        The memory layout of a fresh result, as in :func:`triu`.
    out : numpy.ndarray, optional
        Where to write the result, as in :func:`triu`; ``out=m`` writes only
        the mirrored triangle.

    Returns
    -------
    numpy.ndarray
        `out` if given, else a new array of numpy's result dtype.

    Raises
    ------
    TypeError
        If `conj` is true for a dtype without conjugation (strings, bool,
        objects without ``.conjugate``), or `out` is not a numpy array of
        the result's dtype.
    ValueError
        If the matrices are not square, `out` has another shape than the
        result, or `order` is not one of numpy's.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.mirror(np.array([[1, 2, 3], [0, 4, 5], [0, 0, 6]]))
    array([[1, 2, 3],
           [2, 4, 5],
           [3, 5, 6]])
    >>> trilu.mirror(np.array([[1, 2j], [0, 3]]), conj=True)
    array([[1.+0.j, 0.+2.j],
           [0.-2.j, 3.+0.j]])
    """
    upper = _validate.flag(upper, "upper")
    conj = _validate.flag(conj, "conj")
    if type(m) is _ndarray:
        return _route.mirror(m, upper, conj, out, order)
    return _dispatch.call(
        mirror,
        m,
        (),
        {"upper": upper, "conj": conj, "order": order},
        out,
        lazy=("mirror", (upper, conj), {}),
    )


@overload
def trilu(
    input: DaskArrayT,
    k: SupportsIndex = 0,
    upper: SupportsIndex | np.bool_ = True,
    *,
    order: None = None,
    out: None = None,
) -> DaskArrayT: ...
@overload
def trilu(
    input: ForeignT,
    k: SupportsIndex = 0,
    upper: SupportsIndex | np.bool_ = True,
    *,
    order: Order = None,
    out: ForeignT | None = None,
) -> ForeignT: ...
@overload
def trilu(
    input: ArrayLike,
    k: SupportsIndex = 0,
    upper: SupportsIndex | np.bool_ = True,
    *,
    order: Order = None,
    out: ArrayT,
) -> ArrayT: ...
@overload
def trilu(
    input: _ArrayLike[ScalarT],
    k: SupportsIndex = 0,
    upper: SupportsIndex | np.bool_ = True,
    *,
    order: Order = None,
    out: None = None,
) -> NDArray[ScalarT]: ...
@overload
def trilu(
    input: ArrayLike,
    k: SupportsIndex = 0,
    upper: SupportsIndex | np.bool_ = True,
    *,
    order: Order = None,
    out: None = None,
) -> NDArray[Any]: ...
@_kernel.door
def trilu(
    input: ArrayLike | DaskArray | Foreign,
    k: SupportsIndex = 0,
    upper: SupportsIndex | np.bool_ = True,
    *,
    order: Literal["K", "A", "C", "F"] | None = None,
    out: NDArray[Any] | Foreign | None = None,
) -> AnyArray:
    """The ONNX Trilu operator (opset 14) on a tensor of shape ``[*, N, M]``.

    Keeps the elements on and above (``upper``) or on and below the k-th
    diagonal of each matrix and zeroes the rest; strings are zeroed to "".
    ``k`` is an integer or a one-element integer array; ``upper`` a bool or
    0/1. All 16 types of the operator's type constraint are accepted.

    Parameters
    ----------
    input : array_like
        A tensor of rank 2 or more, of one of the 16 types of Trilu's type
        constraint: bool, int8-int64, uint8-uint64, float16/32/64,
        ``ml_dtypes.bfloat16``, complex64/128, or strings (an object array
        of ``str``, a ``U``/``S`` array or ``StringDType``).
    k : int or numpy.ndarray, optional
        The diagonal offset, the operator's optional input ``k``: an integer
        or a one-element integer array (0-D, or 1-D as onnxruntime accepts).
        0 (the default) is the main diagonal.
    upper : bool or {0, 1}, optional
        The operator's ``upper`` attribute: keep the upper triangle (the
        default) or the lower one.
    order : {None, "K", "A", "C", "F"}, optional
        The memory layout of a fresh result: ``None`` (the default) is
        numpy.triu's own (C order, batch axes kept in the input's order; see
        :doc:`/user_guide/numpy`), the others numpy's orders, as in
        :func:`numpy.empty_like` (``"K"`` keeps the input's). No effect with
        `out`.
    out : numpy.ndarray, optional
        Where to write the result, as in :func:`triu`.

    Returns
    -------
    numpy.ndarray
        The result: `out` if given, else a new array of `input`'s dtype.

    Raises
    ------
    TypeError
        If the dtype is not in Trilu's type constraint, `k` is not an
        integer or a one-element integer array (a bool is refused), `upper`
        is not a bool or an integer, or `out` is not a numpy array of the
        result's dtype.
    ValueError
        If `input` has rank below 2, `upper` is an integer other than 0 or
        1, or `out` has another shape than the result.

    See Also
    --------
    triu, tril : numpy's functions, with numpy's rules.
    trilu.onnx.Trilu : The operator for ``onnx.reference.ReferenceEvaluator``.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> x = np.arange(1, 13).reshape(3, 4)
    >>> trilu.trilu(x, k=-1, upper=False)
    array([[ 0,  0,  0,  0],
           [ 5,  0,  0,  0],
           [ 9, 10,  0,  0]])
    >>> trilu.trilu(np.array([["a", "b"], ["c", "d"]], dtype=object), np.array(1))
    array([['', 'b'],
           ['', '']], dtype=object)
    >>> trilu.trilu(np.ones(3))
    Traceback (most recent call last):
        ...
    ValueError: input must have at least 2 dimensions, got shape (3,)
    """
    if type(k) is not int:
        k = _validate.onnx_k(k)
    if upper is not True and upper is not False:
        upper = _validate.onnx_upper(upper)
    if type(input) is not _ndarray:
        lo, hi = (k, None) if upper else (None, k)
        return _dispatch.call(
            trilu,
            input,
            (k, upper),
            {"order": order},
            out,
            lazy=("band", (lo, hi, None), {"onnx": True, "name": "trilu"}),
            own=(lo, hi),
        )
    _validate.onnx_type(input.dtype)
    return _route.triangle(input, k, upper, out, order, True)
