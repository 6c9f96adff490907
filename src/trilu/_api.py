"""The public functions: validate, resolve ``k``, route dtypes, call the kernel.

Everything that can be decided in Python is decided here, so the kernel only
ever sees plain bytes: dtypes that hold references (object, StringDType,
structured with object fields) go through numpy's own copy, and a byte order
that differs between input and output is swapped first.
"""

from __future__ import annotations

import numbers
import operator
import os
import sys
import warnings
from typing import Any, Literal

import numpy as np

from . import _kernel

_ndarray = np.ndarray
# numpy's own functions, taken before trilu.use_in_numpy() can replace the
# names in numpy's namespace: _foreign hands arrays of other libraries to
# these, so with the patch on it never calls trilu's triu/tril in a loop.
_np_triu = np.triu
_np_tril = np.tril

# --- threads -----------------------------------------------------------------


# Whether the count was chosen for trilu (set_num_threads(n), threadpoolctl's
# limits, TRILU_NUM_THREADS) rather than taken from the ecosystem's cap or the
# CPUs: a dask block runs on one thread unless it was chosen (_dask.py), as
# dask already runs blocks in parallel.
_chosen = False


def _cpus() -> int:
    """The CPUs this process may run on (its affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    count = getattr(os, "process_cpu_count", os.cpu_count)()  # 3.13+: affinity
    return max(1, count or 1)


def _default_threads() -> tuple[int, bool]:
    """The default count, and whether it was chosen for trilu.

    TRILU_NUM_THREADS, else OMP_NUM_THREADS (the ecosystem's cap, which
    OpenBLAS, MKL and numexpr also honour), else the CPUs this process may
    run on. A bad value warns, naming the variable and the count taken
    instead.
    """
    bad = []
    for name in ("TRILU_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(name, "")
        if not raw.strip():
            continue
        first = raw.partition(",")[0] if name == "OMP_NUM_THREADS" else raw
        try:  # OMP_NUM_THREADS nested: "4,2" is 4, at the outer level
            count = int(first)
        except ValueError:
            count = 0
        if count >= 1:
            source = name
            break
        bad.append(f"{name}={raw!r}")
    else:
        count, source = _cpus(), "the CPUs this process may run on"
    for setting in bad:
        warnings.warn(
            f"{setting} is not a positive integer; using the default, "
            f"{count} ({source})",
            RuntimeWarning,
            stacklevel=3,
        )
    return count, source == "TRILU_NUM_THREADS"


def set_num_threads(n: int | None = None) -> None:
    """Set how many threads a large call may use; 1 disables threading.

    A call uses one thread per 512 KiB it moves (bytes written plus bytes
    read), up to this count, so small calls stay on the calling thread.
    ``threadpoolctl.threadpool_limits`` sets the same count when threadpoolctl
    is installed (see :doc:`/user_guide/threads`).

    Parameters
    ----------
    n : int or None, optional
        The thread count, at least 1; counts above 64 are taken as 64.
        ``None`` (the default) restores the default count: the
        ``TRILU_NUM_THREADS`` environment variable if it is set, else
        ``OMP_NUM_THREADS`` (its first level), else the number of CPUs this
        process may run on. A count given here, by threadpoolctl or by
        ``TRILU_NUM_THREADS`` is also used inside dask tasks, which otherwise
        run each block on one thread.

    Raises
    ------
    TypeError
        If `n` is not an integer (``bool`` included).
    ValueError
        If `n` is less than 1.

    See Also
    --------
    get_num_threads

    Examples
    --------
    >>> import trilu
    >>> trilu.set_num_threads(1)
    >>> trilu.get_num_threads()
    1
    >>> trilu.set_num_threads()  # the default again
    """
    global _chosen  # noqa: PLW0603  (the process's count, as the kernel's)
    count, chosen = _default_threads() if n is None else (n, True)
    value: object = count  # whatever a caller passed: checked below
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"n must be an integer, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"n must be at least 1, got {value}")
    _kernel.set_num_threads(min(int(value), 64))  # the kernel takes a C int
    _chosen = chosen


def get_num_threads() -> int:
    """How many threads a large call may use.

    Returns
    -------
    int
        The count set by :func:`set_num_threads` (or by threadpoolctl), at
        least 1.

    Examples
    --------
    >>> import trilu
    >>> trilu.get_num_threads() >= 1
    True
    """
    return _kernel.get_num_threads()


# --- arguments -----------------------------------------------------------------


def _numpy_k(k: Any) -> int:
    """numpy's k: anything integral, int-like or a 0-d array; never 1.5."""
    if isinstance(k, _ndarray):
        if k.ndim != 0:
            raise TypeError(f"k must be an integer, got an array of shape {k.shape}")
        k = k[()]
    if isinstance(k, np.bool_):  # numpy takes it as 0/1; it has no __index__
        return int(k)
    try:
        return operator.index(k)
    except TypeError:
        pass
    if isinstance(k, numbers.Real):
        value = float(k)
        if value.is_integer():  # 2.0 works, as in numpy; inf and nan do not
            return int(value)
        raise TypeError(f"k must be an integer, got {type(k).__name__} {k!r}")
    raise TypeError(f"k must be an integer, got {type(k).__name__}")


def _onnx_k(k: Any) -> int:
    """ONNX's k: an integer, or an integer tensor of one element."""
    if isinstance(k, (bool, np.bool_)):
        raise TypeError("k must be an integer, got bool (upper= sets the triangle)")
    if isinstance(k, _ndarray):
        if k.size != 1 or k.ndim > 1 or k.dtype.kind not in "iu":
            raise TypeError(
                "k must be an integer or a one-element integer array, got an "
                f"array of shape {k.shape} and dtype {k.dtype}"
            )
        return int(k.reshape(())[()])
    try:
        return operator.index(k)
    except TypeError:
        raise TypeError(f"k must be an integer, got {type(k).__name__}") from None


def _onnx_upper(upper: Any) -> bool:
    """ONNX's upper attribute: a bool, or the int 0 or 1."""
    if upper is True or upper is False:
        return upper
    if isinstance(upper, np.bool_):
        return bool(upper)
    try:
        value = operator.index(upper)
    except TypeError:
        raise TypeError(
            f"upper must be a bool or 0/1, got {type(upper).__name__}"
        ) from None
    if value not in (0, 1):
        raise ValueError(f"upper must be a bool or 0/1, got {value}")
    return bool(value)


_ONNX_KINDS = {
    "b": (1,),
    "i": (1, 2, 4, 8),
    "u": (1, 2, 4, 8),
    "f": (2, 4, 8),
    "c": (8, 16),
}


_onnx_type_cache: dict[np.dtype, bool] = {}


def _is_onnx_type(dtype: np.dtype) -> bool:
    """One of the 16 types of Trilu's type constraint (strings in any form)."""
    ok = _onnx_type_cache.get(dtype)
    if ok is None:
        if dtype.kind in "OUST":
            ok = True
        elif dtype.kind in _ONNX_KINDS:
            ok = dtype.itemsize in _ONNX_KINDS[dtype.kind]
        else:  # ml_dtypes.bfloat16, without importing ml_dtypes
            ok = dtype.type.__name__ == "bfloat16" and dtype.itemsize == 2
        _onnx_type_cache[dtype] = ok
    return ok


def _check_out(out: Any, m: np.ndarray, dtype: np.dtype) -> bool:
    """Reject a bad out= before anything is written; return whether out
    overlaps m other than exactly (which is in place)."""
    if not isinstance(out, _ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != m.shape:
        raise ValueError(
            f"out has shape {out.shape}, but the result has shape {m.shape}"
        )
    if out.dtype != dtype and not np.can_cast(dtype, out.dtype, "equiv"):
        raise TypeError(f"out has dtype {out.dtype}, but the result has dtype {dtype}")
    return _kernel.check_out(m, out)  # read-only, zero strides; the overlap


# --- the operation ---------------------------------------------------------------


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
    swap = dtype.kind in "mM"
    copy: np.ndarray = m.byteswap().view(dtype) if swap else m.astype(dtype)
    return copy


def _apply(m: np.ndarray, k: int, upper: bool, out: Any, onnx: bool) -> np.ndarray:
    """The triangle of ndarray m, into out (validated here) or a new array."""
    if m.ndim < 2:
        if onnx or m.ndim == 0:
            raise ValueError(
                f"input must have at least 2 dimensions, got shape {m.shape}"
            )
        n = m.shape[0]  # numpy: a 1-D m is taken as the rows of an n x n matrix
        if n * n * m.dtype.itemsize > sys.maxsize:
            raise MemoryError(f"a {n} x {n} result of {m.dtype} cannot be allocated")
        m = np.broadcast_to(m, (n, n))
    dtype = m.dtype
    # numpy's result: native byte order, structured dtypes packed
    plain = dtype.isnative and dtype.names is None
    rdtype = dtype if plain else np.result_type(dtype)
    overlap = out is not None and _check_out(out, m, rdtype)
    if dtype.hasobject:
        rows, cols = m.shape[-2:]
        k = max(-rows, min(k, cols))
        if onnx and dtype.kind == "O":
            zero: Any = ""  # an ONNX string tensor as an object array
        else:
            zero = np.zeros((), dtype)  # numpy's zero: int 0 in object fields
        if out is None:
            out = np.empty(m.shape, rdtype)
        return _by_reference(m, k, upper, out, zero)
    if out is None:
        if rdtype != dtype:  # recast into the result, then cut it in place
            m = _recast(m, rdtype)
            return _kernel.fill(m, m, k, upper)
        return _kernel.fill(m, None, k, upper)
    if out.dtype != dtype:  # another byte order or layout than out's
        m = _recast(m, out.dtype)
    elif overlap:  # a partial overlap: work on a copy of m
        m = m.copy()
    return _kernel.fill(m, out, k, upper)


def _foreign(m: Any, k: int, upper: bool, out: Any, onnx: bool = False) -> Any:
    """Arrays of other libraries: dask through trilu, the rest their own code;
    None for anything else (array-likes that numpy converts)."""
    cls = type(m)
    if not hasattr(cls, "__array_function__"):
        return None
    if out is not None:
        raise TypeError(f"out= needs a numpy array input, got {cls.__name__}")
    if cls.__module__.startswith("dask.array"):
        from . import _dask  # noqa: PLC0415  (dask is optional: only now)

        return _dask.triangle(m, k, upper, onnx=onnx)
    return (_np_triu if upper else _np_tril)(m, k)


def _numpy_triangle(m: Any, k: Any, upper: bool, out: np.ndarray | None) -> Any:
    """triu and tril: numpy's k and inputs, then the shared path."""
    if type(k) is not int:
        k = _numpy_k(k)
    if type(m) is not _ndarray:
        if not isinstance(m, _ndarray):
            other = _foreign(m, k, upper, out)
            if other is not None:
                return other
        m = np.asarray(m)
    return _apply(m, k, upper, out, False)


def triu(
    m: Any,
    k: Any = 0,
    *,
    order: Literal["K", "A", "C", "F"] | None = None,  # noqa: ARG001  (to be wired)
    out: np.ndarray | None = None,
) -> Any:
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
        (``2.0``) and 0-d integer arrays are accepted, as in numpy; any
        integer is allowed, however large.
    out : numpy.ndarray, optional
        Where to write the result: a writable array of the result's shape and
        dtype (in either byte order), with any strides. It may be `m` itself
        (in place: only the zeroed triangle is written) or overlap it.

    Returns
    -------
    numpy.ndarray
        The upper triangle: `out` if given, else a new array of `m`'s dtype,
        laid out in memory as `m` (as :func:`numpy.empty_like`).

    Raises
    ------
    TypeError
        If `k` is not an integer (``1.5``), or `out` is not a numpy array or
        has another dtype than the result, or `out` is given with a
        non-numpy input.
    ValueError
        If `m` is 0-D, or `out` has another shape than the result.

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
    """
    if (result := _kernel.fill_plain(m, k, True, out)) is not None:
        return result
    return _numpy_triangle(m, k, True, out)


def tril(
    m: Any,
    k: Any = 0,
    *,
    order: Literal["K", "A", "C", "F"] | None = None,  # noqa: ARG001  (to be wired)
    out: np.ndarray | None = None,
) -> Any:
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
    out : numpy.ndarray, optional
        Where to write the result, as in :func:`triu`.

    Returns
    -------
    numpy.ndarray
        The lower triangle: `out` if given, else a new array of `m`'s dtype.

    Raises
    ------
    TypeError
        If `k` is not an integer, or `out` is not a numpy array of the
        result's dtype, or `out` is given with a non-numpy input.
    ValueError
        If `m` is 0-D, or `out` has another shape than the result.

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
    if (result := _kernel.fill_plain(m, k, False, out)) is not None:
        return result
    return _numpy_triangle(m, k, False, out)


def trilu(
    input: Any,
    k: Any = 0,
    upper: Any = True,
    *,
    order: Literal["K", "A", "C", "F"] | None = None,  # noqa: ARG001  (to be wired)
    out: np.ndarray | None = None,
) -> Any:
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
        k = _onnx_k(k)
    if upper is not True and upper is not False:
        upper = _onnx_upper(upper)
    if type(input) is not _ndarray:
        if not isinstance(input, _ndarray):
            other = _foreign(input, k, upper, out, onnx=True)
            if other is not None:
                return other
        input = np.asarray(input)
    if not _is_onnx_type(input.dtype):
        raise TypeError(
            f"input has dtype {input.dtype}, which is not in Trilu's type "
            "constraint (bool, int8-64, uint8-64, float16/32/64, bfloat16, "
            "complex64/128, string)"
        )
    if (result := _kernel.fill_plain(input, k, upper, out)) is not None:
        return result
    return _apply(input, k, upper, out, True)
