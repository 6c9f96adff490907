"""JAX arrays on trilu's kernel: eager arrays through DLPack, traced ones
(``jax.jit``, ``jax.vmap``, ``jax.grad``) through ``jax.pure_callback``.

Imported by ``_dispatch`` when the first JAX array arrives (jax is loaded
then), never by ``import trilu``.

- A concrete array crosses as any DLPack array does (``_dispatch``): read in
  place, the result handed back through ``jax.numpy.from_dlpack``.
- A traced one becomes a host callback with the result's static shape
  (``_pack.result_shape``); under ``jax.vmap`` the batch is one more leading
  axis, which every function takes as it is (``vmap_method="expand_dims"``).
  Its gradient is ``jax.custom_vjp``'s, with the adjoints of ``_torch``:
  the same band of the cotangent for the band family (zero fill),
  ``unpack`` for ``pack`` and the reverse, and for ``mirror`` the kept
  triangle's plus the other's transposed (conjugated with conj).
- JAX's arrays are immutable: ``out=`` is a TypeError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from . import _api, _dispatch, _pack

_DLPACK = _dispatch.DLPackLibrary()


def device(x: Any) -> Any:
    """None where the kernel reads x: a CPU array, or any traced array of a
    CPU backend (its callback runs on the host); else x's device."""
    if isinstance(x, jax.core.Tracer):
        backend = jax.default_backend()
        return None if backend == "cpu" else backend
    return _DLPACK.device(x)


def from_numpy(result: np.ndarray, like: Any) -> Any:
    return _DLPACK.from_numpy(result, like)


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
    if len(shape) == 1 and name != "unpack":  # the rows of an N x N matrix
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
        return jax.pure_callback(
            lambda a: np.asarray(function(np.asarray(a), *args, **kwargs)),
            result,
            x,
            vmap_method="expand_dims",
        )

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
            "are immutable (DLPack hands them over read-only)"
        )
    if not isinstance(x, jax.core.Tracer):
        return _DLPACK.call(function, x, args, kwargs, None)
    if function not in _TRACED:
        raise TypeError(
            f"{function.__name__} cannot be traced (jax.jit, jax.vmap, "
            "jax.grad): call it on a concrete array"
        )
    return _traced(function, args, kwargs)(x)


# the functions with a result shape (_pack.result_shape) and an adjoint here
_TRACED = frozenset(
    (_api.triu, _api.tril, _api.band, _api.trilu, _api.mirror, _pack.pack, _pack.unpack)
)
