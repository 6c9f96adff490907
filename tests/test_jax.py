"""JAX arrays (needs jax): a concrete one is read in place and the result
comes back as a JAX array of the same dtype (bfloat16, float8 and int4
included) and shape, in place too, numpy's answer on the same bytes; under
``jax.jit`` and ``jax.vmap`` each call is a host callback with the eager
answer, and ``jax.grad`` takes trilu's own adjoints (checked numerically).
``out=`` a JAX array is refused (JAX's arrays are immutable).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    allocation_name,
    assert_same,
    fill_cycle,
    from_banded_oracle,
    make,
    mirror_oracle,
    pack_oracle,
    to_banded_oracle,
    triangle_oracle,
    unpack_oracle,
)

import trilu
from trilu import _api, _kernel, _pack

jax = pytest.importorskip("jax")
jnp = jax.numpy
from trilu import _jax  # noqa: E402  (imports jax: after the skip)


def _held(dtype: np.dtype) -> bool:
    """JAX holds arrays of dtype as themselves (64-bit ones need
    jax_enable_x64; strings, dates, objects and the other byte order it has
    none of, though some versions make zeros of the last)."""
    if not dtype.isnative:
        return False
    if jax.dtypes.canonicalize_dtype(dtype) != dtype:
        return False  # (a 64-bit one, which JAX would truncate)
    try:
        jnp.zeros(0, dtype)
    except TypeError:
        return False
    return True


# Every dtype of the shared table that JAX holds: numpy's, and ml_dtypes'
# (bfloat16, float8, float4, int4), which numpy holds as JAX does.
DTYPES = {name: dt for name, dt in ALL_DTYPES.items() if _held(dt)}


def _check(got: Any, x: Any, exp: np.ndarray) -> None:
    assert type(got) is type(x)
    assert got.dtype == x.dtype
    assert_same(np.array(got), exp)


@pytest.mark.parametrize("dtype", list(DTYPES.values()), ids=list(DTYPES))
@pytest.mark.usefixtures("threads")
def test_bit_exact_eager_and_jitted(dtype: np.dtype, rng: Any) -> None:
    """Every function, with every fill the dtype takes, eager and under
    jax.jit (all in one traced function), against the oracle on the bytes
    JAX holds."""
    x = jnp.asarray(make(dtype, (2, 5, 5), rng))
    src = np.asarray(x)
    conj = dtype.kind == "c"
    calls = []  # (call, its expected result)
    unpacks = []  # (call, packed vector, expected)
    for k in (-1, 0, 2):
        for upper in (True, False):
            function = trilu.triu if upper else trilu.tril
            for fill in fill_cycle(dtype):
                exp = triangle_oracle(src, k, upper, fill)
                calls.append((partial(function, k=k, fill=fill), exp))
            for order in ("C", "F"):
                packed = pack_oracle(src, k, upper, order)
                pack = partial(trilu.pack, k=k, upper=upper, order=order)
                calls.append((pack, packed))
                for mirror in (False, True):
                    exp = unpack_oracle(packed, 5, 5, k, upper, None, order, mirror)
                    unpack = partial(trilu.unpack, n=5, m=5, k=k, upper=upper,
                                     order=order, mirror=mirror)  # fmt: skip
                    unpacks.append((unpack, jnp.asarray(packed), exp))
    calls.append((partial(trilu.mirror, conj=conj), mirror_oracle(src, True, conj)))
    transposed = triangle_oracle(np.swapaxes(src, -1, -2), 1, False)
    calls.append((lambda z: trilu.tril(z.mT, 1), transposed))
    jitted = jax.jit(lambda z: [call(z) for call, _ in calls])(x)
    for (call, exp), got in zip(calls, jitted, strict=True):
        _check(call(x), x, exp)
        _check(got, x, exp)
    vectors = [v for _, v, _ in unpacks]
    jitted = jax.jit(
        lambda vs: [u(v) for (u, _, _), v in zip(unpacks, vs, strict=True)]
    )
    for (call, v, exp), got in zip(unpacks, jitted(vectors), strict=True):
        _check(call(v), x, exp)
        _check(got, x, exp)
    # band storage: eager only (no adjoint, not traced)
    ab = trilu.to_banded(x, 1, 2)
    _check(ab, x, to_banded_oracle(src, 1, 2))
    _check(trilu.from_banded(ab, 1, 2), x, from_banded_oracle(np.array(ab), 1, 2, 5))


# --- zero copies -----------------------------------------------------------------


def _calls(dtype: Any) -> list[tuple[Any, tuple[int, ...], tuple[Any, ...]]]:
    """(function, shape, args): triu's results from each of the allocator's
    choices (numpy's allocator, below 4 MiB; trilu's recycled blocks, zero
    pages, and calloc from 32 MiB, where its handlers are on), and the
    others' small and large."""
    mib = (1 << 20) // np.dtype(dtype).itemsize  # elements
    square = math.isqrt(32 * mib) + 1  # just over 32 MiB
    return [
        (trilu.triu, (6, 7), (1,)),
        (trilu.triu, (4 * mib // 1024, 1024), (0,)),
        (trilu.triu, (4 * mib // 1024, 1024), (1000,)),
        (trilu.triu, (square, square), (0,)),
        (trilu.pack, (6, 7), ()),
        (trilu.pack, (1024, 1024), ()),
        (trilu.mirror, (6, 6), ()),
        (trilu.mirror, (1024, 1024), ()),
        (trilu.unpack, (21,), ()),
        (trilu.unpack, (1024 * 1025 // 2,), ()),
    ]


@pytest.mark.parametrize("dtype", [np.float32, ALL_DTYPES.get("bfloat16")], ids=str)
def test_read_in_place_and_the_result_is_the_kernels_buffer(
    dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The numpy array each function runs on is the JAX array's buffer; the
    JAX array returned is the buffer of the numpy result, 64-byte aligned
    whichever way it was allocated. (A public function hands itself, by its
    module's name, to the crossing: a spy there sees both arrays.)"""
    if dtype is None:
        pytest.skip("needs ml_dtypes")
    seen: list[np.ndarray] = []

    def spying(function: Any) -> Any:
        def spy(m: Any, *rest: Any, **kw: Any) -> Any:
            seen[:] = [m, function(m, *rest, **kw)]
            return seen[-1]

        return spy

    for module in (_api, _pack):
        for name in ("triu", "mirror", "pack", "unpack"):
            if hasattr(module, name):  # (_api imports neither pack nor unpack)
                monkeypatch.setattr(module, name, spying(getattr(module, name)))
    allocations = set()
    for function, shape, args in _calls(dtype):
        x = jnp.ones(shape, dtype)
        if function is trilu.triu:
            plan = _kernel.explain(np.asarray(x), *args, True)
            allocations.add(plan["allocation"])
        result = function(x, *args)
        numpy_in, numpy_out = seen
        assert numpy_in.ctypes.data == x.unsafe_buffer_pointer()
        assert numpy_out.ctypes.data % 64 == 0
        assert result.unsafe_buffer_pointer() == numpy_out.ctypes.data
        del x, result, numpy_in, numpy_out, seen[:]
    # the premise: each choice was met
    names = ("malloc", "recycled", "zero_pages", "calloc")
    assert allocations == {allocation_name(a) for a in names}


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


@pytest.fixture(params=["buffer_callback", "pure_callback"])
def callback(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Traced calls through each host callback: JAX's buffer callback (JAX
    0.6.1 on), and pure_callback, the one before it."""
    if request.param == "pure_callback":
        monkeypatch.setattr(_jax, "buffer_callback", None)
    elif _jax.buffer_callback is None:
        pytest.skip("needs JAX 0.6.1's buffer callback")


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
@pytest.mark.usefixtures("callback")
def test_jit_and_vmap_give_the_eager_answer(name: str, args: Any, kwargs: Any) -> None:
    x = jnp.asarray(np.random.default_rng(0).standard_normal((3, 5, 5)), jnp.float32)
    call = _call(name, args, kwargs)
    eager = np.array(call(x))
    assert_same(np.array(jax.jit(call)(x)), eager)
    assert_same(np.array(jax.vmap(call)(x)), eager)
    assert_same(np.array(jax.jit(jax.vmap(call))(x)), eager)


@pytest.mark.usefixtures("callback")
def test_vmap_of_rows_and_of_packed_vectors() -> None:
    """A batch of 1-D rows is each the rows of its own square (one call
    each); a batch of packed vectors is unpacked as one."""
    rows = jnp.arange(12.0).reshape(4, 3)
    exp = np.stack([np.triu(r) for r in np.asarray(rows)])
    assert_same(np.array(jax.vmap(trilu.triu)(rows)), exp)
    assert_same(np.array(jax.jit(jax.vmap(trilu.triu))(rows)), exp)
    vectors = jnp.arange(12.0).reshape(2, 6)
    exp = np.asarray(trilu.unpack(vectors))
    assert_same(np.array(jax.jit(jax.vmap(trilu.unpack))(vectors)), exp)


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
