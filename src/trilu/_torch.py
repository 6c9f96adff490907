"""PyTorch tensors on trilu's kernel: the crossing, and the operations
registered with PyTorch for autograd and ``torch.compile``.

Imported by ``_dispatch`` when the first tensor arrives (torch is loaded
then), never by ``import trilu``; the operations are registered here, once.

- A plain CPU tensor that needs no gradient, outside ``torch.compile``,
  takes the direct path: its memory is read as a numpy array in place
  (torch's numpy bridge, which shares memory as DLPack does, at a fraction
  of a DLPack exchange's cost), the public function runs on it, and its
  result's buffer becomes the returned tensor. ``out=`` is written in place.
- A tensor that requires grad, a tensor subclass (the fake and functional
  tensors ``torch.compile`` traces with), and any call under
  ``torch.compile``, go through the operation registered for the function
  (``torch.ops.trilu.<name>``, ``torch.library.custom_op``): its fake
  implementation gives the result's shape, its autograd formula is another
  of trilu's operations, and its implementation is the direct path.
- dtypes numpy lacks (bfloat16, the float8 types) cross as unsigned
  integers of their width, and the result is viewed back: trilu only moves
  bytes, so width is all that matters. A fill is converted by torch to the
  tensor's dtype first, then taken as those bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from . import _api, _dispatch, _pack, _validate

# --- the crossing ------------------------------------------------------------------

_UNSIGNED = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32, 8: torch.uint64}
# dtype -> the unsigned dtype it crosses as, or None where numpy has it
_views: dict[torch.dtype, torch.dtype | None] = {}


def _view(dtype: torch.dtype) -> torch.dtype | None:
    """The unsigned dtype a tensor of this dtype crosses as: None for a dtype
    numpy has; the same width for one it lacks, for real numbers only (a
    complex number's conjugate would need its halves)."""
    if dtype in _views:
        return _views[dtype]
    try:  # an empty view: no tensor of the dtype made (complex32's warns)
        torch.empty(0, dtype=torch.uint8).view(dtype).numpy()
        found = None
    except TypeError:
        found = _UNSIGNED.get(dtype.itemsize) if dtype.is_floating_point else None
        if found is None:
            raise TypeError(
                f"trilu takes tensors of the dtypes numpy has, and real floats of "
                f"1 to 8 bytes, as their bits; got {dtype}"
            ) from None
    _views[dtype] = found
    return found


def _numpy(t: Tensor, view: torch.dtype | None, writable: bool = False) -> np.ndarray:
    """t's memory as a numpy array (as the dtype ``view``, where given)."""
    try:
        return t.numpy() if view is None else t.view(view).numpy()
    except RuntimeError:  # it requires grad, or is a lazy conjugate or negation
        if writable and (t.is_conj() or t.is_neg()):
            raise TypeError(
                "out= must be a tensor without a lazy conj() or neg()"
            ) from None
        t = t.detach().resolve_conj().resolve_neg()
        return t.numpy() if view is None else t.view(view).numpy()


def from_numpy(result: np.ndarray, _like: Any = None) -> Tensor:
    """The CPU tensor of result's buffer (the device of any ``_like``)."""
    return torch.from_numpy(result)


def device(t: Tensor) -> Any:
    """None for a CPU tensor, else its device."""
    return None if t.is_cpu else t.device


def _fill(fill: Any, dtype: torch.dtype, view: torch.dtype) -> np.ndarray:
    """fill in a dtype numpy lacks, converted by torch, as its bits."""
    try:
        value = torch.tensor(fill, dtype=dtype)
    except (RuntimeError, TypeError, OverflowError) as error:
        raise TypeError(
            f"fill={fill!r} cannot be converted to the result's dtype {dtype}: {error}"
        ) from None
    return value.view(view).numpy()


def direct(
    function: Callable[..., Any],
    x: Tensor,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
) -> Any:
    """function on x's memory, the result's buffer returned as a tensor, or
    written into out in place."""
    dtype = x.dtype
    if out is None and _views.get(dtype, False) is None:
        try:  # the common case, in fewest steps
            m = x.numpy()
        except RuntimeError:  # see _numpy
            m = _numpy(x, None)
        return torch.from_numpy(function(m, *args, **kwargs))
    view = _view(dtype)
    if view is not None:
        if function is _api.trilu and dtype is not torch.bfloat16:
            raise _validate.onnx_refused(dtype)  # its bits would pass as unsigned
        if kwargs.get("fill") is not None:
            kwargs = {**kwargs, "fill": _fill(kwargs["fill"], dtype, view)}
    m = _numpy(x, view)
    if out is None:
        result = torch.from_numpy(function(m, *args, **kwargs))
        return result if view is None else result.view(dtype)
    if isinstance(out, Tensor):
        if not out.is_cpu:
            raise _dispatch.refuse_device(out, f"{function.__name__}(out=)", out.device)
        if out.dtype != dtype:
            raise TypeError(
                f"out has dtype {out.dtype}, but the result has dtype {dtype}"
            )
        if out.requires_grad and torch.is_grad_enabled():
            raise TypeError(
                f"{function.__name__}(out=) takes no tensor that requires grad: "
                "writing it in place is invisible to autograd"
            )
        function(m, *args, out=_numpy(out, view, writable=True), **kwargs)
    else:
        function(m, *args, out=out, **kwargs)
    return out


def call(
    function: Callable[..., Any],
    x: Tensor,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    out: Any,
) -> Any:
    """``function(x, *args, out=out, **kwargs)`` for a tensor x:
    ``_dispatch.ELSEWHERE`` for one off the CPU. A plain tensor that needs no
    gradient, outside torch.compile, takes the direct path; any other (a
    tensor subclass, such as compile's fake and functional tensors) the
    registered operation."""
    if not x.is_cpu:
        return _dispatch.ELSEWHERE
    if (
        type(x) is Tensor
        and not (x.requires_grad and torch.is_grad_enabled())
        and not torch.compiler.is_compiling()
    ):
        return direct(function, x, args, kwargs, out)
    name = function.__name__
    if out is not None:
        raise TypeError(
            f"{name}(out=) is not differentiable nor traceable: "
            "call it without out= under autograd and torch.compile"
        )
    op = _OPS.get(name)
    if op is None:
        raise TypeError(
            f"{name} has no gradient and no torch.compile operation: call it on "
            "a tensor that needs no grad (detach it), outside torch.compile"
        )
    return op(x, *args, **kwargs)


# --- the registered operations -----------------------------------------------------

# Each public function's scalar arguments, in the operation's schema: its
# positional ones after the array, then its keywords but out=
# (_dispatch.parameters). k, lo and hi are clamped into int64 (the
# schema's int) where they are beyond every matrix: the same result.
_TYPES = {
    "k": "int",
    "lo": "int?",
    "hi": "int?",
    "upper": "bool",
    "conj": "bool",
    "n": "int?",
    "m": "int?",
    "fill": "Scalar?",
    "order": "str?",
    "mirror": "str",  # False, True or "conj", as its str (_MIRRORS)
}
_MIRRORS = {"False": False, "True": True, "conj": "conj"}
_FUNCTIONS = (
    _api.triu,
    _api.tril,
    _api.band,
    _api.trilu,
    _api.mirror,
    _pack.pack,
    _pack.unpack,
)
_LIMIT = 1 << 62


def _clamp(value: Any) -> Any:
    if type(value) is int:
        return max(-_LIMIT, min(_LIMIT, value))
    return value


def _grad(name: str, g: Tensor, shape: Any, values: dict[str, Any]) -> Tensor:
    """The gradient of the input (of this shape), from the result's gradient
    g: trilu's operations."""
    ops = torch.ops.trilu
    grad: Tensor
    if name in ("triu", "tril", "band", "trilu"):  # the same band, zero fill
        keep = {**values, "order": "C"}
        if "fill" in keep:
            keep["fill"] = None
        grad = getattr(ops, name)(g, *keep.values())
    elif name == "mirror":
        # the kept triangle's gradient, plus the other triangle's transposed
        # (conjugated with conj), the diagonal once
        upper, conj = values["upper"], values["conj"]
        kept = (
            ops.band(g, 1, None, None, "C")
            if upper
            else ops.band(g, None, -1, None, "C")
        )
        other = ops.mirror(g, not upper, conj, "C")
        grad = kept + (
            ops.band(other, 0, None, None, "C")
            if upper
            else ops.band(other, None, 0, None, "C")
        )
    elif name == "pack":
        rows, cols = shape[-2:]
        k, upper, order = values["k"], values["upper"], values["order"]
        grad = ops.unpack(g, rows, cols, k, upper, order, None, "False")
    else:  # unpack
        k, upper, order = values["k"], values["upper"], values["order"]
        grad = ops.pack(g, k, upper, order)
        mirror = _MIRRORS[values["mirror"]]
        if mirror:  # plus the gradients of the mirrored elements
            other = g.mT.conj() if mirror == "conj" else g.mT
            lo, hi = _pack.mirrored_band(k, upper)
            grad = grad + ops.pack(ops.band(other, lo, hi, None, "C"), k, upper, order)
    if len(shape) == 1 and name != "unpack":  # the rows of an N x N matrix: summed
        grad = grad.sum(-2)
    return grad


def _register(function: Callable[..., Any]) -> Any:
    """The operation ``trilu::<name>`` of a public function."""
    name = function.__name__
    positional, keywords = _dispatch.parameters(function)
    names = positional + keywords
    schema = ", ".join(f"{_TYPES[p]} {p}" for p in names)

    def implementation(x: Tensor, *values: Any) -> Tensor:
        args = values[: len(positional)]
        kwargs = dict(zip(keywords, values[len(positional) :], strict=True))
        if "order" in kwargs and kwargs["order"] is None:
            kwargs["order"] = "C"  # the layout the fake implementation gives
        if "mirror" in kwargs:
            kwargs["mirror"] = _MIRRORS[kwargs["mirror"]]
        result: Tensor = direct(function, x, args, kwargs, None)
        return result

    op = torch.library.custom_op(
        f"trilu::{name}",
        implementation,
        mutates_args=(),
        schema=f"(Tensor x, {schema}) -> Tensor",
    )

    @op.register_fake
    def _(x: Tensor, *values: Any) -> Tensor:
        named = dict(zip(names, values, strict=True))
        return x.new_empty(_pack.result_shape(name, tuple(x.shape), x.dtype, named))

    def setup_context(  # torch passes each argument by its name
        ctx: Any,
        inputs: tuple[Any, ...],
        output: Tensor,  # noqa: ARG001
    ) -> None:
        ctx.shape = inputs[0].shape
        ctx.values = dict(zip(names, inputs[1:], strict=True))

    def backward(ctx: Any, g: Tensor) -> tuple[Any, ...]:
        return (_grad(name, g, ctx.shape, ctx.values), *([None] * len(names)))

    op.register_autograd(backward, setup_context=setup_context)
    return op


def _call_op(op: Any, function: Callable[..., Any]) -> Callable[..., Tensor]:
    """Call op with function's arguments: its positional, then keywords."""
    keywords = _dispatch.parameters(function)[1]

    def run(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        values = [_clamp(v) for v in args] + [
            str(kwargs[key]) if key == "mirror" else kwargs[key] for key in keywords
        ]
        result: Tensor = op(x, *values)
        return result

    return run


# by name: under torch.compile a public function is traced as its kernel door's
# wrapper (_kernel.door), which dynamo cannot hash
_OPS = {f.__name__: _call_op(_register(f), f) for f in _FUNCTIONS}
