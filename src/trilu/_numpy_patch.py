"""Put trilu's functions in numpy's namespace, and take them out again.

Nothing happens at import: the patch is an explicit switch, as Intel's
``mkl_umath.use_in_numpy()``. It replaces the attributes ``numpy.triu``,
``numpy.tril`` and the index family (``numpy.tri``, ``numpy.triu_indices``,
``numpy.tril_indices``, ``numpy.triu_indices_from``,
``numpy.tril_indices_from``), so it reaches every call that looks the name up
in numpy's namespace when it runs (``np.triu(a)``, ``numpy.tril(a)``), in any
module, but not a name bound before the patch (``from numpy import triu``).
numpy's own functions call each other by their module's names, which the
patch leaves alone.

What it puts there keeps numpy's rule for arrays of other libraries that
speak DLPack (a PyTorch tensor): numpy converts them to numpy arrays
(``numpy.asanyarray``), so ``np.triu(tensor)`` is a numpy array, as
without the patch; ``trilu.triu(tensor)`` is a tensor. So ``numpy.triu``
and ``numpy.tril`` become trilu's functions behind that conversion (their
``__wrapped__``), and ``numpy.tri`` refuses a tensor as ``like=``, as numpy
does; the index family is trilu's own functions, numpy arrays for any input.
"""

from __future__ import annotations

import contextlib
import functools
from _thread import allocate_lock  # a lock without importing threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import _api, _dispatch, _indices, _private

_ndarray = np.ndarray


# Each wrapper takes its function's name, docstring and signature, not the
# attributes a door (_kernel.door) holds for torch.compile: this wrapper's
# body is what it traces.
@functools.wraps(_api.triu, updated=())
def _triu(
    m: Any, k: Any = 0, *, fill: Any = None, order: Any = None, out: Any = None
) -> Any:
    if type(m) is not _ndarray and _dispatch.kind(m) is _dispatch.DLPACK:
        m = np.asanyarray(m)  # numpy's rule: numpy.triu converts it so
    return _api.triu(m, k, fill=fill, order=order, out=out)


@functools.wraps(_api.tril, updated=())
def _tril(
    m: Any, k: Any = 0, *, fill: Any = None, order: Any = None, out: Any = None
) -> Any:
    if type(m) is not _ndarray and _dispatch.kind(m) is _dispatch.DLPACK:
        m = np.asanyarray(m)
    return _api.tril(m, k, fill=fill, order=order, out=out)


@functools.wraps(_indices.tri, updated=())
def _tri(
    N: Any, M: Any = None, k: Any = 0, dtype: Any = float, *, like: Any = None
) -> Any:
    if like is not None and _dispatch.kind(like) is _dispatch.DLPACK:
        return _private.numpy_twodim.tri(N, M, k, dtype, like=like)  # numpy's error
    return _indices.tri(N, M, k, dtype, like=like)


# numpy's name -> trilu's function, with numpy's rule for other libraries' arrays
_FUNCTIONS = {
    "triu": _triu,
    "tril": _tril,
    "tri": _tri,
    "triu_indices": _indices.triu_indices,
    "tril_indices": _indices.tril_indices,
    "triu_indices_from": _indices.triu_indices_from,
    "tril_indices_from": _indices.tril_indices_from,
}
_lock = allocate_lock()
# numpy's functions as they were when the patch went on; empty while it is off
_saved: dict[str, Any] = {}


def use_in_numpy() -> None:
    """Make ``numpy.triu`` and ``numpy.tril`` trilu's :func:`~trilu.triu` and
    :func:`~trilu.tril` (with numpy's rule for other libraries' arrays: see
    :doc:`/user_guide/numpy`), and numpy's ``tri``, ``triu_indices``,
    ``tril_indices``, ``triu_indices_from`` and ``tril_indices_from`` trilu's
    functions of those names, for the whole process, until
    :func:`restore_numpy`.

    Only lookups of the names in numpy's namespace made after this call are
    reached: a name bound earlier with ``from numpy import triu`` keeps numpy's
    function. Calling it again while the patch is on does nothing.
    Arrays of other libraries that implement ``__array_function__`` (dask
    aside) still reach their own ``triu``/``tril`` through numpy's original
    functions, never through the patched names.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> trilu.use_in_numpy()
    >>> np.triu.__wrapped__ is trilu.triu
    True
    >>> np.triu(np.ones((2, 2)))
    array([[1., 1.],
           [0., 1.]])
    >>> trilu.restore_numpy()
    >>> getattr(np.triu, "__wrapped__", None) is trilu.triu
    False
    """
    with _lock:
        if _saved:
            return
        _saved.update({name: getattr(np, name) for name in _FUNCTIONS})
        for name, function in _FUNCTIONS.items():
            setattr(np, name, function)


def restore_numpy() -> None:
    """Put back exactly the numpy functions that :func:`use_in_numpy`
    replaced; nothing happens if the patch is off.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> original = np.tril
    >>> trilu.use_in_numpy()
    >>> trilu.restore_numpy()
    >>> np.tril is original
    True
    """
    with _lock:
        if not _saved:
            return
        for name in _FUNCTIONS:
            setattr(np, name, _saved.pop(name))


def is_patched() -> bool:
    """Whether :func:`use_in_numpy` is in effect."""
    return bool(_saved)


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """A context manager: :func:`use_in_numpy` for the ``with`` block.

    On leaving the block numpy's functions are restored, unless the patch was
    already on when the block began (then it stays on). The patch is
    process-wide: other threads see it during the block too.

    Examples
    --------
    >>> import numpy as np, trilu
    >>> with trilu.patched():
    ...     np.tril.__wrapped__ is trilu.tril
    True
    >>> getattr(np.tril, "__wrapped__", None) is trilu.tril
    False
    """
    already = is_patched()
    use_in_numpy()
    try:
        yield
    finally:
        if not already:
            restore_numpy()
