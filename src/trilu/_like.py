"""``like=`` of trilu's creation functions: numpy's protocol (NEP 35), here
once.

numpy's creation functions take ``like=``, an array whose library makes the
result: numpy's own arrays (and subclasses that keep ndarray's
``__array_function__``) leave the call to numpy, any other array's
``__array_function__`` is handed the public function and its arguments
(without ``like``), and an object without the protocol is a TypeError, with
numpy's message. A dask array, whose ``__array_function__`` knows nothing of
trilu's functions, gets trilu's own lazy result instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_numpy_protocol = np.ndarray.__array_function__


def foreign(like: Any) -> bool:
    """Whether like's library, not numpy, makes the result (like not None)."""
    protocol = getattr(type(like), "__array_function__", None)
    if protocol is None:
        raise TypeError(  # numpy's message
            "The `like` argument must be an array-like that implements the "
            "`__array_function__` protocol."
        )
    return protocol is not _numpy_protocol


def create(like: Any, public: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """public(**kwargs) made by like's library (foreign(like) is true): a
    dask array's lazily (``chunks="auto"`` unless given), any other by its
    ``__array_function__``."""
    cls = type(like)
    if cls.__module__.startswith("dask.array"):
        return public(**{**kwargs, "chunks": kwargs.get("chunks") or "auto"})
    result = like.__array_function__(public, (cls,), (), kwargs)
    if result is NotImplemented:  # numpy's message
        raise TypeError(
            f"no implementation found for 'trilu.{public.__name__}' on types "
            f"that implement __array_function__: [{cls}]"
        )
    return result
