"""The rules for trilu's arguments, and their messages, in one place.

numpy's rules for ``triu``/``tril``, ONNX's for ``trilu``, and what both
share (``out=``, ``order=``, the result's dtype). Every check raises before
anything is written; nothing here imports the rest of trilu, so the public
functions (``_api``) and the dask graphs (``_dask``) use the same rules.
"""

from __future__ import annotations

import numbers
import operator
import os
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

_ndarray = np.ndarray

# --- k and upper -------------------------------------------------------------


def numpy_k(k: Any, name: str = "k") -> int:
    """numpy's k: anything integral, int-like or a 0-d array; never 1.5."""
    # The common case first; triu, tril and band test it before the call,
    # which saves the call on their hot path.
    if type(k) is int:
        return k
    if isinstance(k, _ndarray):
        if k.ndim != 0:
            raise TypeError(
                f"{name} must be an integer, got an array of shape {k.shape}"
            )
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
        raise TypeError(f"{name} must be an integer, got {type(k).__name__} {k!r}")
    raise TypeError(f"{name} must be an integer, got {type(k).__name__}")


def triangle_k(k: Any, upper: bool) -> int:
    """numpy's k of triu (upper) or tril, as :func:`numpy_k`, with the
    DeprecationWarning numpy >= 2.5 gives where its tri gets a k that is not
    an integer: triu hands it ``k - 1`` (a numpy bool's is an int), tril
    ``k``."""
    value = numpy_k(k)
    if NOT_INTEGER is not None and _refuses(k):
        handed = k - 1 if upper else k
        if _refuses(handed):
            not_integer(type(handed))
    return value


def flag(value: Any, name: str) -> bool:
    """A keyword that is on or off: a bool (numpy's too), nothing else."""
    if value is True or value is False:
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def onnx_k(k: Any) -> int:
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


def onnx_upper(upper: Any) -> bool:
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


# --- tri's sizes and k, numpy >= 2.5 ---------------------------------------------

# numpy/numpy#30869 (numpy 2.5): tri, the index family and so triu and tril
# take N, M and k through operator.index (unsigned integers too, which numpy
# 2.4's arithmetic in their type got wrong) and deprecate what it refuses.


def _numpy_not_integer() -> str | None:
    """The running numpy's DeprecationWarning for a k that is not an integer,
    its type's name as ``{}`` (numpy words it anew within 2.5), or None where
    numpy takes such a k silently (numpy < 2.5)."""
    k: Any = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.tri(0, 0, k)
    for w in caught:
        if w.category is DeprecationWarning:
            return str(w.message).replace(float.__name__, "{}", 1)
    return None


# Decided once, from the numpy trilu runs on: numpy 2.5's rules for sizes and
# k (and its warning) where this is a message, numpy 2.4's where it is None.
NOT_INTEGER = _numpy_not_integer()
# The warning points past these files, as numpy's own points past numpy.lib's
# (its skip_file_prefixes): at the line that called trilu, or numpy.
_INSIDE = tuple(str(Path(path).parent) + os.sep for path in (__file__, np.lib.__file__))


def _refuses(value: Any) -> bool:
    """operator.index refuses value: no integer, to numpy >= 2.5."""
    try:
        operator.index(value)
    except TypeError:
        return True
    return False


def tri_sizes(N: Any, M: Any, k: Any) -> tuple[Any, Any, Any, type | None]:
    """N, M and k as numpy >= 2.5's tri takes them: operator.index's ints,
    or as they are where it refuses them, with the type of the first so kept
    (None: none), which its warning names. None stays None: M's default, and
    numpy's error before any warning as N or k."""
    sizes = [N, M, k]
    refused = None
    for at, value in enumerate(sizes):
        if value is None:
            continue
        try:
            sizes[at] = operator.index(value)
        except TypeError:
            refused = refused or type(value)
    return sizes[0], sizes[1], sizes[2], refused


def triu_indices_k(k: Any) -> Any:
    """numpy >= 2.5's triu_indices' own check of k, before its tri's:
    operator.index's int, else k, warned of where ``k - 1`` (what its tri
    gets, and warns of) is of another type."""
    try:
        return operator.index(k)
    except TypeError:
        if not isinstance(k, type(k - 1)):
            not_integer(type(k))
        return k


def not_integer(refused: type | None) -> None:
    """numpy >= 2.5's DeprecationWarning for a size or k of type `refused`
    (none for None), at the first line outside trilu and numpy.lib."""
    if refused is None or NOT_INTEGER is None:
        return
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame, level = frame.f_back, level + 1
    warnings.warn(
        NOT_INTEGER.format(refused.__name__), DeprecationWarning, stacklevel=level
    )


# --- the input ------------------------------------------------------------------

_ONNX_KINDS = {
    "b": (1,),
    "i": (1, 2, 4, 8),
    "u": (1, 2, 4, 8),
    "f": (2, 4, 8),
    "c": (8, 16),
}
_onnx_type_cache: dict[np.dtype, bool] = {}


def onnx_type(dtype: np.dtype) -> None:
    """Raise unless dtype is one of the 16 types of Trilu's type constraint
    (strings in any form; bfloat16 recognised without importing ml_dtypes)."""
    ok = _onnx_type_cache.get(dtype)
    if ok is None:
        if dtype.kind in "OUST":
            ok = True
        elif dtype.kind in _ONNX_KINDS:
            ok = dtype.itemsize in _ONNX_KINDS[dtype.kind]
        else:
            ok = dtype.type.__name__ == "bfloat16" and dtype.itemsize == 2
        _onnx_type_cache[dtype] = ok
    if not ok:
        raise onnx_refused(dtype)


def onnx_refused(dtype: Any) -> TypeError:
    """The error for a dtype (numpy's, or another library's) not in Trilu's
    type constraint."""
    return TypeError(
        f"input has dtype {dtype}, which is not in Trilu's type constraint "
        "(bool, int8-64, uint8-64, float16/32/64, bfloat16, complex64/128, "
        "string)"
    )


def rank(shape: tuple[Any, ...], onnx: bool) -> None:
    """Raise for a rank the operation cannot take: below 2 for ONNX (the
    spec), 0 for numpy (a 1-D input is the rows of a square matrix)."""
    if onnx and len(shape) < 2:
        raise ValueError(f"input must have at least 2 dimensions, got shape {shape}")
    if not shape:  # numpy's exception type, with what is needed
        raise TypeError(
            "m must be an array of at least 1 dimension (the rows of a square "
            "matrix) or 2 (a matrix or a batch of them), got a 0-D array"
        )


def square(shape: tuple[int, ...], name: str) -> None:
    """Raise unless shape is a batch of square matrices."""
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"{name} needs square matrices, got shape {shape}")


def conjugable(dtype: np.dtype, what: str = "conj=True") -> None:
    """Raise unless conj= (or `what`) can apply to dtype: numbers (ml_dtypes'
    too, all real) and objects (which need a .conjugate, found when it is
    called)."""
    if dtype.kind in "iufcO" or (
        dtype.kind == "V" and dtype.type.__module__.startswith("ml_dtypes")
    ):
        return
    raise TypeError(f"{what} needs numbers with a conjugate, got dtype {dtype}")


def mirror(value: Any) -> tuple[bool, bool]:
    """unpack's mirror=: False, True or "conj"; (mirror, conj)."""
    if isinstance(value, str):
        if value == "conj":
            return True, True
        raise ValueError(f"mirror must be True, False or 'conj', got {value!r}")
    return flag(value, "mirror"), False


def result_dtype(dtype: np.dtype) -> np.dtype:
    """numpy's result dtype, as its ``where`` finds it: native byte order,
    structured dtypes packed, a number's metadata dropped."""
    if dtype.isnative and dtype.names is None and dtype.metadata is None:
        return dtype
    rdtype: np.dtype = np.result_type(dtype, dtype)
    return rdtype


# --- out= and order= ----------------------------------------------------------------


def out(out: Any, shape: tuple[int, ...], dtype: np.dtype) -> None:
    """Raise unless out can take a result of this shape and dtype (its
    memory, read-only or overlapping, is the kernel's to check)."""
    if not isinstance(out, _ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, but the result has shape {shape}")
    if out.dtype != dtype and not np.can_cast(dtype, out.dtype, "equiv"):
        raise TypeError(f"out has dtype {out.dtype}, but the result has dtype {dtype}")


def order(order: Any) -> None:
    """numpy's memory orders, or None for numpy.triu's own layout."""
    if order is not None and order not in ("K", "A", "C", "F"):
        raise ValueError(
            f"order must be one of 'K', 'A', 'C', 'F' or None, got {order!r}"
        )


def packed_order(order: Any) -> bool:
    """pack's and unpack's order=: "C" (row after row) or "F" (column after
    column); whether it is "F"."""
    if isinstance(order, str) and order in ("C", "F"):
        return order == "F"
    raise ValueError(
        f"order must be 'C' (row after row) or 'F' (column after column), got {order!r}"
    )


def numpy_only(cls: type, out: Any, order: Any) -> None:
    """out= and order= are for numpy results: refused for another library's."""
    for name, value in (("out", out), ("order", order)):
        if value is not None:
            raise TypeError(f"{name}= needs a numpy array input, got {cls.__name__}")


# --- fill= -------------------------------------------------------------------------

_PYTHON_NUMBERS = (bool, int, float, complex)


def _int_range(dtype: np.dtype) -> tuple[int, int] | None:
    """The range of an integer dtype, numpy's or ml_dtypes' (int4, uint4:
    kind "V"); None for any other dtype."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return int(info.min), int(info.max)
    ml_dtypes = sys.modules.get("ml_dtypes")  # loaded if the dtype is its
    if dtype.kind == "V" and ml_dtypes is not None:
        try:
            ml_info = ml_dtypes.iinfo(dtype)
        except (TypeError, ValueError):  # its floats
            return None
        return int(ml_info.min), int(ml_info.max)
    return None


# x87's long double: 10 bytes of value in 12 or 16, the rest padding that
# numpy's casts leave as they find it.
_X87 = np.finfo(np.longdouble).nmant == 63 and np.dtype(np.longdouble).itemsize > 10


def fill_bytes(value: np.ndarray, dtype: np.dtype) -> bytes:
    """One element's bytes of a 0-d array in dtype (value's dtype in either
    byte order): generic-unit datetimes swapped by hand (casts leave them as
    they are), and a long double's padding zero, so that every fill is the
    same bytes."""
    if value.dtype == dtype:
        data = value.tobytes()
    elif dtype.kind in "mM":
        data = value.tobytes()[::-1]
    else:
        target = np.zeros((), dtype)
        np.copyto(target, value, casting="equiv")
        data = target.tobytes()
    if _X87 and dtype.type in (np.longdouble, np.clongdouble):
        part = np.dtype(np.longdouble).itemsize
        native = dtype.isnative
        data = b"".join(
            data[at : at + 10].ljust(part, b"\0")
            if native
            else data[at + part - 10 : at + part].rjust(part, b"\0")
            for at in range(0, dtype.itemsize, part)
        )
    return data


def fill(
    fill: Any, dtype: np.dtype, zero: Any = None, name: str = "fill"
) -> np.ndarray:
    """``fill`` as a 0-d array of ``dtype``, converted as numpy converts a
    scalar into an array of that dtype (NEP 50: Python scalars are weak, an
    int must fit, a float never becomes an int); None is numpy's zero of the
    dtype, or ``zero`` where given (ONNX's "" for object strings).

    Strings and objects are kept as given: an object fill is the object
    itself, a string must be a ``str`` (``bytes`` for ``S``) that the dtype
    holds whole. Errors call it `name` (the argument it came from).
    """
    value = np.zeros((), dtype)
    if fill is None:
        if zero is not None:
            value[()] = zero
        return value
    kind = dtype.kind
    if kind == "O":
        value[()] = fill
        return value
    if kind in "UST":
        text = bytes if kind == "S" else str
        if not isinstance(fill, text):
            raise TypeError(
                f"{name} must be a {text.__name__} for a result of dtype {dtype}, "
                f"got {type(fill).__name__}"
            )
        value[()] = fill
        if value[()] != fill:
            raise ValueError(f"{name} {fill!r} does not fit in dtype {dtype}")
        return value
    if isinstance(fill, _ndarray):
        if fill.ndim != 0:
            raise ValueError(
                f"{name} must be a scalar, got an array of shape {fill.shape}"
            )
        fill = fill[()]
    # An integer must fit, and a float is no integer: numpy 1.x casts a
    # Python int, numpy's same_kind casting wraps a numpy integer, and
    # ml_dtypes' int4 takes a float, where the value would be lost.
    bounds = _int_range(dtype)
    if bounds is not None:
        if isinstance(fill, (float, complex, np.inexact)):  # numpy 1.x casts
            raise TypeError(  # ml_dtypes' int4 as it casts to int8
                f"{name}={fill!r} cannot be converted to the result's dtype {dtype}: "
                "an integer dtype takes no float"
            )
        # (a timedelta64 is numpy's integer too, in units: numpy's cast refuses it)
        integer = isinstance(fill, (int, np.integer)) and not isinstance(
            fill, (bool, np.bool_, np.timedelta64)
        )
        if integer and not bounds[0] <= fill <= bounds[1]:
            raise OverflowError(f"{name}={fill} is out of bounds for {dtype}")
    try:
        np.copyto(value, fill, casting="same_kind")
    except (TypeError, ValueError, OverflowError) as error:
        raise type(error)(
            f"{name}={fill!r} cannot be converted to the result's dtype {dtype}: {error}"
        ) from None
    return value
