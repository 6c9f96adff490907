"""JAX arrays (needs jax): eager ones cross through DLPack as any other
library's, and come back as JAX arrays of the same dtype and shape, numpy's
answer on the same values; ``out=`` a JAX array is refused (JAX's arrays are
immutable, DLPack hands them over read-only). Under ``jax.jit`` and
``jax.vmap`` each call is a host callback with the eager answer, and
``jax.grad`` takes trilu's own adjoints (checked numerically).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _cases import (
    assert_same,
    from_banded_oracle,
    make,
    mirror_oracle,
    pack_oracle,
    to_banded_oracle,
    triangle_oracle,
    unpack_oracle,
)

import trilu

jax = pytest.importorskip("jax")
jnp = jax.numpy

# JAX's default dtypes (64-bit ones need jax_enable_x64)
DTYPES = ["bool", "int8", "int32", "uint16", "float16", "float32", "complex64"]


def _check(got: Any, x: Any, exp: np.ndarray) -> None:
    assert type(got) is type(x)
    assert got.dtype == x.dtype
    assert_same(np.array(got), exp)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.usefixtures("threads")
def test_bit_exact(dtype: str, rng: Any) -> None:
    src = make(np.dtype(dtype), (2, 5, 5), rng)
    x = jnp.asarray(src)
    for k in (-1, 0, 2):
        for upper in (True, False):
            function = trilu.triu if upper else trilu.tril
            _check(function(x, k), x, triangle_oracle(src, k, upper))
            for order in ("C", "F"):
                packed = trilu.pack(x, k, upper=upper, order=order)
                _check(packed, x, pack_oracle(src, k, upper, order))
                for mirror in (False, True):
                    v = np.array(packed)
                    exp = unpack_oracle(v, 5, 5, k, upper, None, order, mirror)
                    got = trilu.unpack(packed, 5, 5, k, upper=upper, order=order,
                                       mirror=mirror)  # fmt: skip
                    _check(got, x, exp)
    ab = trilu.to_banded(x, 1, 2)
    _check(ab, x, to_banded_oracle(src, 1, 2))
    _check(trilu.from_banded(ab, 1, 2), x, from_banded_oracle(np.array(ab), 1, 2, 5))
    conj = src.dtype.kind == "c"
    _check(trilu.mirror(x, conj=conj), x, mirror_oracle(src, True, conj))
    _check(trilu.tril(x.mT, 1), x, triangle_oracle(np.swapaxes(src, -1, -2), 1, False))


def test_storage_cannot_be_traced() -> None:
    """to_banded, from_banded and squareform have no adjoint here: under
    jax.jit a TypeError saying so."""
    x = jnp.ones((4, 4))
    for call in (
        lambda z: trilu.to_banded(z, 1, 1),
        lambda z: trilu.from_banded(z[:3], 1, 1),
        lambda z: trilu.squareform(z[0, :3]),
    ):
        with pytest.raises(TypeError, match=r"cannot be traced \(jax.jit"):
            jax.jit(call)(x)


@pytest.mark.parametrize("function", [trilu.band_mask, trilu.attention_mask])
def test_masks_like_a_jax_array(function: Any) -> None:
    like = jnp.zeros(1)
    _check(function(3, 4, dtype=np.float32, like=like), like,
           function(3, 4, dtype=np.float32))  # fmt: skip


def test_out_is_refused_saying_why() -> None:
    x = jnp.ones((3, 3))
    with pytest.raises(TypeError, match=r"cannot write a JAX array: .* immutable"):
        trilu.triu(x, out=x)
    assert bool((np.array(x) == 1).all())


def test_tri_like_a_jax_array() -> None:
    made = trilu.tri(3, 4, dtype=np.float32, like=jnp.zeros(1))
    assert type(made) is type(jnp.zeros(1))
    assert_same(np.array(made), np.tri(3, 4, dtype=np.float32))


# each public function, on a batch of square matrices: (name, args, kwargs)
CALLS = [
    ("triu", (1,), {}),
    ("tril", (-1,), {"fill": -5.0}),
    ("band", (-1, 1), {}),
    ("trilu", (0, False), {}),
    ("mirror", (), {"upper": False}),
    ("pack", (1,), {"upper": True}),
    ("pack", (-1,), {"upper": False, "order": "F"}),
]


def _call(name: str, args: Any, kwargs: Any) -> Any:
    function = getattr(trilu, name)
    return lambda z: function(z, *args, **kwargs)


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
def test_jit_and_vmap_give_the_eager_answer(name: str, args: Any, kwargs: Any) -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 5, 5)), jnp.float32)
    call = _call(name, args, kwargs)
    eager = np.array(call(x))
    assert_same(np.array(jax.jit(call)(x)), eager)
    assert_same(np.array(jax.vmap(call)(x)), eager)
    assert_same(np.array(jax.jit(jax.vmap(call))(x)), eager)


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
def test_grad(name: str, args: Any, kwargs: Any) -> None:
    from jax.test_util import check_grads  # noqa: PLC0415

    x = jnp.asarray(np.random.default_rng(1).standard_normal((2, 4, 4)), jnp.float32)
    call = _call(name, args, kwargs)
    check_grads(call, (x,), order=1, modes=["rev"], eps=1e-2, atol=1e-2, rtol=1e-2)
    jitted = jax.jit(jax.grad(lambda z: (call(z) ** 2).sum()))(x)
    assert_same(np.array(jitted), np.array(jax.grad(lambda z: (call(z) ** 2).sum())(x)))


def test_grad_of_unpack_and_of_a_1d_input() -> None:
    from jax.test_util import check_grads  # noqa: PLC0415

    v = jnp.arange(1.0, 11.0)
    check_grads(lambda z: trilu.unpack(z, upper=False), (v,), order=1, modes=["rev"])
    w = jnp.arange(1.0, 17.0) / 16  # (float32: small values, as test_grad's)
    for upper, k in ((True, -1), (False, 0), (False, -2)):
        for mirror, values in ((True, w), ("conj", w * (1 + 0.5j))):
            count = len(np.triu_indices(4, k)[0] if upper else np.tril_indices(4, k)[0])
            call = lambda z, upper=upper, k=k, mirror=mirror: trilu.unpack(  # noqa: E731
                z, 4, 4, k, upper=upper, order="F", mirror=mirror, fill=-1.0
            )
            check_grads(call, (values[:count],), order=1, modes=["rev"], eps=1e-2,
                        atol=1e-2, rtol=1e-2)  # fmt: skip
    row = jnp.arange(1.0, 4.0)
    grad = jax.grad(lambda z: trilu.triu(z).sum())(row)
    assert_same(np.array(grad), np.array([1.0, 2.0, 3.0], np.float32))
