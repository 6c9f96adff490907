"""JAX arrays on trilu's kernel: concrete ones read in place, traced ones
(``jax.jit``, ``jax.vmap``, ``jax.grad``) through a host callback.

Imported by ``_dispatch`` when the first JAX array arrives (jax is loaded
then), never by ``import trilu``.

- A concrete CPU array is read in place as a numpy array (``numpy.asarray``:
  JAX hands over its host buffer, read-only), in its own dtype: JAX's
  bfloat16, float8 and int4 types are ml_dtypes' numpy dtypes, which trilu
  takes as any other (no bit view needed). The result comes back through
  ``jax.device_put``, which XLA's CPU client takes in place only where the
  buffer is 64-byte aligned: numpy allocates under trilu's aligned handler
  (``_kernel.ALIGNED``) while the call runs.
- A traced one becomes a host callback with the result's static shape
  (``_pack.result_shape``): ``jax.experimental.buffer_callback`` (JAX 0.6.1
  on), which reads the input's buffer and writes the result into XLA's own
  (``out=``), or, before it and for the dtypes XLA packs several to a byte,
  ``jax.pure_callback``, whose result XLA copies in. Under ``jax.vmap`` the batch is one more leading axis, which every
  function takes as it is (``vmap_method="expand_dims"``), but a batch of
  1-D rows, which is called once per row. Its gradient is
  ``jax.custom_vjp``'s, with the adjoints of ``_torch``: the same band of
  the cotangent for the band family (zero fill), ``unpack`` for ``pack``
  and the reverse, and for ``mirror`` the kept triangle's plus the other's
  transposed (conjugated with conj).
- JAX's arrays are immutable: ``out=`` is a TypeError.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _api, _dispatch, _kernel, _pack

buffer_callback: Any
try:
    buffer_callback = importlib.import_module(
        "jax.experimental.buffer_callback"
    ).buffer_callback
except ImportError:  # JAX before 0.6.1
    buffer_callback = None

_DLPACK = _dispatch.DLPackLibrary()


def device(x: Any) -> Any:
    """None where the kernel reads x: a CPU array, or any traced array of a
    CPU backend (its callback runs on the host); else x's device."""
    if isinstance(x, jax.core.Tracer):
        backend = jax.default_backend()
        return None if backend == "cpu" else backend
    return _DLPACK.device(x)


def from_numpy(result: np.ndarray, like: Any) -> Any:
    """result's buffer as a JAX array (in place where 64-byte aligned), on
    like's device where like is committed to one."""
    at = like.device if getattr(like, "committed", False) else None
    return jax.device_put(result, at, may_alias=True)


def _packed(dtype: np.dtype) -> bool:
    """XLA keeps dtype's elements several to a byte (int4, float4): JAX's
    buffer callback hands such a buffer over as if one a byte, to be read and
    written past its end, where pure_callback's arrays are unpacked."""
    if dtype.itemsize != 1 or dtype.kind != "V":  # ml_dtypes' are "V"
        return False
    info = jnp.iinfo if jnp.issubdtype(dtype, jnp.integer) else jnp.finfo
    return bool(info(dtype).bits < 8)


def _rows(name: str, ndim: int) -> bool:
    """An input of ndim dimensions is the rows of an N x N matrix (a 1-D one,
    but unpack's, which is a packed triangle)."""
    return ndim == 1 and name != "unpack"


def _adjoint(name: str, function: Callable[..., Any], shape: tuple[int, ...],
             values: dict[str, Any], g: Any) -> Any:  # fmt: skip
    """The cotangent of the input (of this shape) from the result's, g."""
    if name == "pack":
        k, upper, order = values["k"], values["upper"], values["order"]
        grad = _pack.unpack(g, shape[-2], shape[-1], k, upper=upper, order=order)
    elif name == "unpack":
        k, upper, order = values["k"], values["upper"], values["order"]
        grad = _pack.pack(g, k, upper=upper, order=order)
        mirror = values["mirror"]
        if mirror:  # plus the gradients of the mirrored elements
            other = jnp.swapaxes(g, -1, -2)
            other = jnp.conj(other) if mirror == "conj" else other
            lo, hi = _pack.mirrored_band(k, upper)
            grad = grad + _pack.pack(
                _api.band(other, lo, hi), k, upper=upper, order=order
            )
    elif name == "mirror":
        upper, conj = values["upper"], values["conj"]
        other = _api.mirror(g, upper=not upper, conj=conj)
        if upper:
            grad = _api.band(g, 1, None) + _api.band(other, 0, None)
        else:
            grad = _api.band(g, None, -1) + _api.band(other, None, 0)
    else:  # the band family: the same band, zero fill
        positional = [v for key, v in values.items() if key not in ("fill", "order")]
        grad = function(g, *positional)
    if _rows(name, len(shape)):
        grad = grad.sum(-2)
    return grad


def _traced(
    function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[Any], Any]:
    """function(x, *args, **kwargs) for a traced x, with its gradient."""
    name = function.__name__
    values = _dispatch.named(function, args, kwargs)

    def run(x: Any) -> Any:
        shape = _pack.result_shape(name, x.shape, x.dtype, values)
        result = jax.ShapeDtypeStruct(shape, x.dtype)  # type: ignore[no-untyped-call]
        # a batch of rows would be read as a matrix: one call each
        vmap = "sequential" if _rows(name, x.ndim) else "expand_dims"
        if buffer_callback is None or _packed(np.dtype(x.dtype)):
            return jax.pure_callback(
                lambda a: np.asarray(function(np.asarray(a), *args, **kwargs)),
                result,
                x,
                vmap_method=vmap,
            )
        return buffer_callback(write, result, vmap_method=vmap)(x)

    def write(_context: Any, out: Any, a: Any) -> None:
        function(np.asarray(a), *args, out=np.asarray(out), **kwargs)

    @jax.custom_vjp
    def op(x: Any) -> Any:
        return run(x)

    def forward(x: Any) -> tuple[Any, tuple[int, ...]]:
        return run(x), x.shape

    def backward(shape: tuple[int, ...], g: Any) -> tuple[Any]:
        return (_adjoint(name, function, shape, values, g),)

    op.defvjp(forward, backward)
    return op


def call(
    function: Callable[..., Any],
    x: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
) -> Any:
    """``function(x, *args, out=out, **kwargs)`` for a JAX array."""
    if device(x) is not None:
        return _dispatch.ELSEWHERE
    if out is not None:
        raise TypeError(
            f"{function.__name__}(out=) cannot write a JAX array: JAX's arrays "
            "are immutable"
        )
    if isinstance(x, jax.core.Tracer):
        if function not in _TRACED:
            raise TypeError(
                f"{function.__name__} cannot be traced (jax.jit, jax.vmap, "
                "jax.grad): call it on a concrete array"
            )
        return _traced(function, args, kwargs)(x)
    previous = _kernel.use_handler(_kernel.ALIGNED)
    try:
        result = function(np.asarray(x), *args, **kwargs)
    finally:
        _kernel.use_handler(previous)
    return from_numpy(result, x)


# the functions with a result shape (_pack.result_shape) and an adjoint here
_TRACED = frozenset(
    (_api.triu, _api.tril, _api.band, _api.trilu, _api.mirror, _pack.pack, _pack.unpack)
)
