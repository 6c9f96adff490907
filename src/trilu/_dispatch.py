"""What kind of array an input is, decided once per class, and where it goes.

Each public function that takes an array tests ``type(m) is numpy.ndarray``
first and runs the kernel: a numpy array never pays for what is decided
here. Anything else comes to :func:`call`, with the function itself, which
hands it to one of four paths:

- the kernel: numpy's subclasses and what numpy converts (lists, scalars,
  objects with ``__array__`` alone) are made numpy arrays
  (``numpy.asarray``), and the function runs on them;
- dask's lazy graph (``_dask``), for a dask array;
- a DLPack crossing, for a CPU array of another library that speaks DLPack
  (``__dlpack__`` and ``__dlpack_device__``): its memory is read in place
  as a numpy array, the function runs on that, and the result crosses back
  as an array of the caller's library (from its Array API namespace's
  ``from_dlpack``, on the input's device), whose buffer is the kernel's own.
  ``out=`` is written in place. PyTorch crosses through ``_torch``, which
  adds its gradients and ``torch.compile``;
- the library's own function: an array on another device, whose memory the
  kernel cannot read and trilu never copies, goes to the ``triu`` or
  ``tril`` of its Array API namespace (``__array_namespace__``) or, without
  one, of its top-level module (``torch.triu``); an array that implements
  ``__array_function__`` without DLPack, to numpy's own ``triu`` or
  ``tril``, which hands it over. Only triu and tril (trilu, ONNX's) have
  such a function: any other call raises a TypeError.

:func:`like` makes a creation function's numpy result an array of the
library of ``like=``, by the same crossing.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _private

if TYPE_CHECKING:
    from ._typing import AnyArray, SupportsDLPack

NUMPY = "numpy"
DASK = "dask"
DLPACK = "dlpack"
OWN = "own"

_kinds: dict[type, str] = {}
_CPU = 1  # DLPack's kDLCPU: memory the kernel reads in place
ELSEWHERE = object()  # a crossing's answer for an array off the CPU


def kind(x: Any) -> str:
    """NUMPY, DASK, DLPACK or OWN for x's class, classified on first sight."""
    cls = type(x)
    found = _kinds.get(cls)
    if found is None:
        found = _kinds[cls] = _classify(cls)
    return found


def _classify(cls: type) -> str:
    if issubclass(cls, np.ndarray):
        return NUMPY
    numpy_protocol = hasattr(cls, "__array_function__")
    if numpy_protocol and cls.__module__.startswith("dask."):
        return DASK
    if hasattr(cls, "__dlpack__") and (
        hasattr(cls, "__dlpack_device__")
        or hasattr(cls, "__array_namespace__")  # JAX's traced arrays
    ):
        return DLPACK
    return OWN if numpy_protocol else NUMPY


_crossings: dict[type, Any] = {}


def library(x: Any) -> Any:
    """The crossing for x's library, found on first sight of its class:
    ``_torch`` for PyTorch's tensors, ``_jax`` for JAX's arrays (each
    imported now that its library is), else DLPack's, for any other."""
    cls = type(x)
    found = _crossings.get(cls)
    if found is None:
        found = _DLPACK
        top = cls.__module__.partition(".")[0]
        # torch or jax is loaded: its array is here
        if top == "torch":
            from . import _torch  # noqa: PLC0415

            found = _torch
        elif top in ("jax", "jaxlib"):
            from . import _jax  # noqa: PLC0415

            found = _jax
        _crossings[cls] = found
    return found


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def refuse_device(x: Any, name: str, where: Any) -> TypeError:
    return TypeError(
        f"{name} got a {_name(type(x))} on device {where}: trilu's kernel runs "
        "on the CPU, and trilu never copies between devices (move it to the "
        "CPU first, if that is what you want)"
    )


def namespace(x: Any) -> ModuleType:
    """x's library: its Array API namespace, or its top-level module."""
    get = getattr(x, "__array_namespace__", None)
    if get is not None:
        found: ModuleType = get()
        return found
    return sys.modules[type(x).__module__.partition(".")[0]]


def _own(x: Any, upper: bool) -> Callable[[Any, int], Any]:
    """x's library's triu (upper) or tril, as ``f(x, k)``: numpy's own for an
    ``__array_function__`` array (numpy hands it over), else its namespace's
    (``k=`` a keyword, as the Array API has it) or its top-level module's."""
    name = "triu" if upper else "tril"
    if kind(x) is OWN:
        function: Callable[[Any, int], Any] = getattr(_private.numpy_twodim, name)
        return function
    get = getattr(x, "__array_namespace__", None)
    if get is None:
        return getattr(namespace(x), name)  # type: ignore[no-any-return]
    standard = getattr(get(), name)
    return lambda a, k: standard(a, k=k)


def own_band(x: Any, lo: int | None, hi: int | None) -> Any:
    """Band (lo, hi) of an array the kernel cannot read, by its library's own
    tril and triu."""
    if hi is not None:
        x = _own(x, False)(x, hi)
    return x if lo is None else _own(x, True)(x, lo)


def _numpy_only(
    x: Any, out: Any, kwargs: dict[str, Any], graph: dict[str, Any] | None = None
) -> None:
    """out= and a result's order= make numpy results: refused for dask's and
    others' (but an order= the dask graph takes itself: pack's storage)."""
    order = None if graph and "order" in graph else kwargs.get("order")
    for key, value in (("out", out), ("order", order)):
        if value is not None:
            raise TypeError(f"{key}= needs a numpy array input, got {type(x).__name__}")


def call(
    function: Callable[..., Any],
    x: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
    *,
    lazy: tuple[str, tuple[Any, ...], dict[str, Any]] | None = None,
    own: tuple[int | None, int | None] | None = None,
) -> AnyArray:
    """``function(x, *args, out=out, **kwargs)`` for an x that is not exactly
    a numpy array, by x's path.

    ``function`` is the public function itself, called again on the numpy
    array of the kernel's and the crossing's paths; its scalar arguments
    are already valid. ``lazy`` names its dask graph, where it has one:
    the function of ``_dask`` and its arguments after the array (the
    public functions hold no closure: its cells would cost every call);
    ``own`` the band (lo, hi) its library's triu and tril give, where they
    can stand in (triu, tril and trilu without fill=).
    """
    result: AnyArray
    cls = type(x)
    found = _kinds.get(cls) or kind(x)
    if found is DLPACK:
        crossing = _crossings.get(cls) or library(x)
        result = crossing.call(function, x, args, kwargs, out)
        if result is not ELSEWHERE:
            return result
    elif found is NUMPY:
        result = function(np.asarray(x), *args, out=out, **kwargs)
        return result
    name = function.__name__
    if kwargs.get("fill") is not None:
        name += " with fill="
    if found is DLPACK:
        where = crossing.device(x)
        if own is None or out is not None or kwargs.get("order") is not None:
            raise refuse_device(x, name, where)
        result = own_band(x, *own)
        return result
    if found is DASK and lazy is not None:
        graph, lazy_args, lazy_kwargs = lazy
        _numpy_only(x, out, kwargs, lazy_kwargs)
        from . import _dask  # noqa: PLC0415  (dask is optional: only now)

        result = getattr(_dask, graph)(x, *lazy_args, **lazy_kwargs)
        return result
    if found is OWN and own is not None:
        _numpy_only(x, out, kwargs)
        result = own_band(x, *own)
        return result
    dask = found is DASK
    raise TypeError(
        f"{name} takes numpy {'and dask ' if lazy else ''}arrays, got "
        f"{_name(type(x))}{' (compute it first)' if dask else ''}"
    )


def parameters(function: Callable[..., Any]) -> tuple[list[str], list[str]]:
    """A public function's scalar parameters: its positional ones after the
    array, and its keywords but out=."""
    positional, keywords = [], []
    for parameter in list(inspect.signature(function).parameters.values())[1:]:
        if parameter.kind is parameter.KEYWORD_ONLY:
            if parameter.name != "out":
                keywords.append(parameter.name)
        else:
            positional.append(parameter.name)
    return positional, keywords


def named(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The scalar arguments of a call of function (as ``call`` has them), by
    name, in its signature's order."""
    positional, keywords = parameters(function)
    return {**dict(zip(positional, args, strict=True)), **{
        key: kwargs[key] for key in keywords}}  # fmt: skip


def numpy_answers(x: Any) -> bool:
    """numpy's functions answer x themselves, as they answer no array (like=)
    or a plain one (_from): its __array_function__ is ndarray's."""
    return getattr(type(x), "__array_function__", None) is np.ndarray.__array_function__


def like(
    make: Callable[[], Any],
    like: Any,
    name: str,
    handed: tuple[Callable[..., Any], dict[str, Any]] | None = None,
) -> AnyArray | None:
    """A creation function's result, ``make()``, as an array of like's
    library: by DLPack for a CPU array that speaks it (on like's device).

    None where numpy answers: for numpy's own arrays and, for a function
    numpy has (tri), any array that implements ``__array_function__``, to
    which numpy's ``like=`` hands the call. A function numpy lacks gives
    ``handed``, itself and its arguments but like: a dask array gets the
    function's lazy result (``chunks="auto"`` unless given), any other array
    its ``__array_function__``'s, with numpy's errors (NEP 35).
    """
    found = kind(like)
    if found is DLPACK:
        crossing = library(like)
        where = crossing.device(like)
        if where is not None:
            raise refuse_device(like, f"{name}(like=)", where)
        if handed is not None and handed[1].get("chunks") is not None:
            raise TypeError(
                f"{name}: chunks= makes a dask array, like= an array of "
                f"{_name(type(like))}'s library: give one of them"
            )
        made: SupportsDLPack = crossing.from_numpy(make(), like)
        return made
    if handed is None or numpy_answers(like):
        return None
    function, kwargs = handed
    if found is DASK:
        lazy: AnyArray = function(
            **{**kwargs, "chunks": kwargs.get("chunks") or "auto"}
        )
        return lazy
    cls = type(like)
    if getattr(cls, "__array_function__", None) is None:
        raise TypeError(  # numpy's message
            "The `like` argument must be an array-like that implements the "
            "`__array_function__` protocol."
        )
    result: AnyArray = like.__array_function__(function, (cls,), (), kwargs)
    if result is NotImplemented:  # numpy's message
        raise TypeError(
            f"no implementation found for 'trilu.{name}' on types that "
            f"implement __array_function__: [{cls}]"
        )
    return result


# numpy 2.1 gave np.from_dlpack its copy= (before, an import never copies)
_DLPACK_COPY = np.lib.NumpyVersion(np.__version__) >= "2.1.0"


def _from_dlpack(x: Any) -> np.ndarray:
    """x's memory as numpy imports it through DLPack, never copied."""
    array: np.ndarray = (
        np.from_dlpack(x, copy=False)  # type: ignore[call-arg,unused-ignore]
        if _DLPACK_COPY
        else np.from_dlpack(x)
    )
    return array


def _dlpack_writable() -> bool:
    """Whether numpy's DLPack import can give a writable array at all (numpy
    1.26 to 2.2 make every import read-only): its own writable array,
    re-imported."""
    return bool(_from_dlpack(np.zeros(1)).flags.writeable)


class DLPackLibrary:
    """The crossing of any library that speaks DLPack, both ways in place."""

    @staticmethod
    def device(x: Any) -> Any:
        """None for memory the kernel reads (the CPU), else x's device: the
        library's own (``x.device``) or DLPack's (type, id)."""
        where = x.__dlpack_device__()
        if where[0] == _CPU:
            return None
        return getattr(x, "device", where)

    @staticmethod
    def to_numpy(x: Any, writable: bool = False) -> np.ndarray:
        """x's memory as a numpy array (writable, or a TypeError saying why)."""
        try:
            array: np.ndarray = _from_dlpack(x)
        except (BufferError, TypeError, RuntimeError) as error:
            raise TypeError(
                f"trilu reads a {_name(type(x))} through DLPack, which numpy "
                f"cannot import here: {error}"
            ) from None
        if writable and not array.flags.writeable:
            why = (
                "its library's arrays are immutable"
                if _dlpack_writable()
                else f"numpy {np.__version__} imports every DLPack array read-only"
            )
            raise TypeError(
                f"out= must be writable, and DLPack gives this "
                f"{_name(type(x))} read-only ({why})"
            )
        return array

    @staticmethod
    def from_numpy(result: np.ndarray, x: Any) -> Any:
        """result (the kernel's own buffer) as an array of x's library, on
        x's device."""
        xp = namespace(x)
        at = getattr(x, "device", None)
        return (
            xp.from_dlpack(result) if at is None else xp.from_dlpack(result, device=at)
        )

    def call(
        self,
        function: Callable[..., Any],
        x: Any,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        out: Any,
    ) -> Any:
        """function on x's memory (ELSEWHERE for x off the CPU), the result
        as x's library's array, or written into out."""
        if self.device(x) is not None:
            return ELSEWHERE
        m = self.to_numpy(x)
        if out is None:
            return self.from_numpy(function(m, *args, **kwargs), x)
        function(m, *args, out=self.to_numpy(out, writable=True), **kwargs)
        return out


_DLPACK = DLPackLibrary()
