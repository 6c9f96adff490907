"""PyTorch tensors (needs torch, CPU): every function that takes an array gives
a tensor of the input's dtype and shape, bit for bit numpy's answer on the
same bytes, without a copy either way; ``out=`` in place; gradients through
the registered operations (``gradcheck``), and ``torch.compile`` with no
graph break.

The oracle is numpy's answer (``_cases``' oracles) on the tensor's bytes:
dtypes numpy lacks (bfloat16, the float8 types) are compared as the unsigned
integers of their width, their fills converted by torch first.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _cases import (
    assert_same,
    band_oracle,
    every,
    from_banded_oracle,
    mirror_oracle,
    pack_oracle,
    to_banded_oracle,
    triangle_oracle,
    unpack_oracle,
)

import trilu
from trilu import _api, _pack

torch = pytest.importorskip("torch")
from trilu import _torch  # noqa: E402  (imports torch: after the skip)


def _crosses(dtype: Any) -> bool:
    try:
        _torch._view(dtype)
    except TypeError:
        return False
    return True


# Every dtype torch has, by whether trilu takes it: those numpy has, and real
# floats numpy lacks (as their bits).
ALL = sorted({v for v in vars(torch).values() if isinstance(v, torch.dtype)}, key=str)
DTYPES = [d for d in ALL if _crosses(d)]
VIEWED = [d for d in DTYPES if _torch._view(d) is not None]
REFUSED = [d for d in ALL if not _crosses(d)]
# Trilu's type constraint: numpy's dtypes here, and bfloat16 of the bit views
ONNX = [d for d in DTYPES if d not in VIEWED or d is torch.bfloat16]


def test_the_dtype_tables() -> None:
    """The premise: bfloat16 and float8 cross as bits, complex32 is refused."""
    assert {torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2} <= set(VIEWED)
    assert torch.complex32 in REFUSED
    assert {torch.float32, torch.bool, torch.uint64} <= set(DTYPES) - set(VIEWED)


def bits(t: Any) -> np.ndarray:
    """A numpy copy of t's bytes: its values, or its bits for a dtype numpy
    lacks."""
    view = _torch._view(t.dtype)
    return (t.view(view) if view is not None else t).detach().numpy().copy()


def make(dtype: Any, shape: tuple[int, ...], gen: Any) -> Any:
    """A tensor of random bits (NaN payloads, -0.0, infinities included)."""
    size = int(np.prod(shape)) * dtype.itemsize
    raw = torch.randint(0, 256, (size,), dtype=torch.uint8, generator=gen)
    if dtype is torch.bool:
        return (raw[: int(np.prod(shape))] & 1).bool().reshape(shape)
    return raw.view(dtype).reshape(shape)


@pytest.fixture
def gen(request: pytest.FixtureRequest) -> Any:
    return torch.Generator().manual_seed(hash(request.node.name) & 0xFFFF)


# the layouts torch has (no negative strides): each makes shape
LAYOUTS = {
    "C": make,
    "transposed": lambda dt, s, g: make(dt, (*s[:-2], s[-1], s[-2]), g).mT,
    "sliced": lambda dt, s, g: make(dt, (*s[:-2], 2 * s[-2], 3 * s[-1]), g)[
        ..., 1::2, ::3
    ],
    "batch_inner": lambda dt, s, g: make(dt, (*s[-2:], *s[:-2]), g).movedim(
        (0, 1), (-2, -1)
    ),
    "expanded": lambda dt, s, g: make(dt, (1, s[-1]), g).expand(s),
}
SHAPES = [(4, 5), (6, 3), (2, 3, 4, 4)]


def _takes(fill: Any, dtype: Any) -> bool:
    try:
        torch.tensor(fill, dtype=dtype)
    except RuntimeError:  # float4_e2m1fn_x2 takes no scalar
        return False
    return True


def _fills(dtype: Any) -> list[Any]:
    if not _takes(1, dtype):
        return []
    if dtype is torch.bool:
        return [True]
    if dtype.is_floating_point:
        return [float("-inf"), -0.0, 1.5] if dtype.itemsize > 1 else [-0.0, 1.5]
    if dtype.is_complex:
        return [complex(-0.0, float("nan"))]
    return [-1 if dtype.is_signed else 7]


def _fill_bits(fill: Any, dtype: Any) -> Any:
    """The oracle's fill: torch's conversion, as bits, where numpy lacks the
    dtype; else the fill itself (numpy converts it, as trilu does)."""
    view = _torch._view(dtype)
    if fill is None or view is None:
        return fill
    return torch.tensor(fill, dtype=dtype).view(view).numpy()


def _check(result: Any, x: Any, exp: np.ndarray) -> None:
    assert type(result) is torch.Tensor
    assert result.dtype == x.dtype
    assert_same(bits(result), exp)


CASES = [
    ("triu", 1, None),
    ("triu", -2, None),
    ("tril", 0, None),
    ("tril", -1, None),
    ("band", (-1, 2), None),
]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.usefixtures("threads")
def test_band_family_bit_exact(dtype: Any, gen: Any) -> None:
    """triu, tril, band (each with numpy's zero and with fills) and trilu,
    over torch's layouts and shapes: numpy's answer on the same bits."""

    def check(label: tuple[str, tuple[int, ...], str, Any, Any]) -> None:
        layout, shape, name, k, fill = label
        x = LAYOUTS[layout](dtype, shape, gen)
        src = bits(x)
        bits_fill = _fill_bits(fill, dtype)
        if name == "band":
            exp = band_oracle(src, *k, bits_fill)
            _check(trilu.band(x, *k, fill=fill), x, exp)
        else:
            exp = triangle_oracle(src, k, name == "triu", bits_fill)
            _check(getattr(trilu, name)(x, k, fill=fill), x, exp)
            if fill is None and dtype in ONNX:
                _check(trilu.trilu(x, k, name == "triu"), x, exp)
        assert_same(bits(x), src)  # the input untouched

    labels = [
        (layout, shape, name, k, fill)
        for layout in LAYOUTS
        for shape in SHAPES
        for name, k, _ in CASES
        for fill in [None, *_fills(dtype)]
    ]
    every(labels, check)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.usefixtures("threads")
def test_pack_unpack_mirror_bit_exact(dtype: Any, gen: Any) -> None:
    def check(label: tuple[str, tuple[int, ...], int, bool, str]) -> None:
        layout, shape, k, upper, order = label
        x = LAYOUTS[layout](dtype, shape, gen)
        src = bits(x)
        packed = trilu.pack(x, k, upper=upper, order=order)
        _check(packed, x, pack_oracle(src, k, upper, order))
        rows, cols = shape[-2:]
        # "conj" needs numbers (bits of a real float are their own conjugates)
        mirrors = [False] if rows != cols else [True, "conj"][: 1 + dtype.is_complex]
        for mirror in [False, *mirrors]:
            exp = unpack_oracle(bits(packed), rows, cols, k, upper, None, order, mirror)
            got = trilu.unpack(packed, rows, cols, k, upper=upper, order=order,
                               mirror=mirror)  # fmt: skip
            _check(got, x, exp)
        if rows == cols:
            conj = dtype.is_complex
            exp = mirror_oracle(src, upper, conj)
            _check(trilu.mirror(x, upper=upper, conj=conj), x, exp)

    labels = [
        (layout, shape, k, upper, order)
        for layout in LAYOUTS
        for shape in [*SHAPES, (5, 5)]
        for k in (0, 1, -2)
        for upper in (True, False)
        for order in ("C", "F")
    ]
    every(labels, check)


@pytest.mark.parametrize("dtype", [torch.float64, torch.int8, torch.bfloat16], ids=str)
def test_band_storage_and_squareform_bit_exact(dtype: Any, gen: Any) -> None:
    """to_banded, from_banded and squareform give tensors too, bit for bit
    (they have no gradient: test_storage_refuses_autograd)."""
    x = make(dtype, (2, 5, 4), gen)
    ab = trilu.to_banded(x, 1, 2)
    _check(ab, x, to_banded_oracle(bits(x), 1, 2))
    exp = from_banded_oracle(bits(ab), 1, 2, 6)
    _check(trilu.from_banded(ab, 1, 2, n=6), x, exp)
    v = make(dtype, (10,), gen)
    matrix = trilu.squareform(v)
    _check(matrix, v, unpack_oracle(bits(v), 5, 5, 1, True, mirror=True))
    _check(trilu.squareform(matrix), v, bits(v))


def test_one_dimensional_input_is_the_rows_of_a_square() -> None:
    v = torch.arange(1.0, 4.0)
    _check(trilu.triu(v), v, np.triu(v.numpy()))
    _check(trilu.mirror(v), v, mirror_oracle(v.numpy(), True))


# --- zero copies -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    ("module", "name", "args"),
    [(_api, "triu", (1,)), (_pack, "pack", (0,)), (_api, "mirror", ())],
)
def test_read_in_place_and_the_result_is_the_kernels_buffer(
    dtype: Any,
    module: Any,
    name: str,
    args: tuple[Any, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The numpy array the function runs on is the tensor's memory; the
    tensor returned is the buffer of the numpy result. (The public function
    hands itself, by its module's name, to the crossing: a spy there sees
    both arrays.)"""
    seen = []
    function = getattr(module, name)

    def spy(m: Any, *rest: Any, **kw: Any) -> Any:
        seen.append(m)
        seen.append(function(m, *rest, **kw))
        return seen[-1]

    monkeypatch.setattr(module, name, spy)
    x = torch.ones(6, 7, dtype=dtype).mT[1:]  # 6 x 6, not contiguous
    result = function(x, *args)
    numpy_in, numpy_out = seen
    assert numpy_in.ctypes.data == x.data_ptr()
    assert numpy_in.strides == tuple(s * x.element_size() for s in x.stride())
    assert result.data_ptr() == numpy_out.ctypes.data


# --- out= and in place ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float64, torch.int8, torch.bfloat16], ids=str)
@pytest.mark.usefixtures("threads")
def test_out_and_in_place(dtype: Any, gen: Any) -> None:
    x = make(dtype, (3, 5, 5), gen)
    src = bits(x)
    exp = triangle_oracle(src, -1, False)
    out = make(dtype, (5, 5, 3), gen).permute(2, 0, 1)  # strided
    assert trilu.tril(x, -1, out=out) is out
    _check(out, x, exp)
    y = x.clone()
    assert trilu.tril(y, -1, out=y) is y  # in place
    _check(y, x, exp)
    packed = make(dtype, (3, 15), gen)
    assert trilu.pack(x, out=packed) is packed
    _check(packed, x, pack_oracle(src, 0, True))
    z = x.clone()
    assert trilu.mirror(z, upper=False, out=z) is z
    _check(z, x, mirror_oracle(src, False))
    numpy_out = np.empty_like(src)  # a numpy out takes a tensor's result too
    assert trilu.tril(x, -1, out=numpy_out) is numpy_out
    assert_same(numpy_out, exp)


def test_out_refused_before_any_write(gen: Any) -> None:
    x = make(torch.float32, (4, 4), gen)
    out = torch.zeros(4, 4, dtype=torch.float64)
    with pytest.raises(TypeError, match=r"out has dtype"):
        trilu.triu(x, out=out)
    bf = torch.zeros(4, 4, dtype=torch.bfloat16)
    with pytest.raises(
        TypeError, match=r"out has dtype torch.bfloat16, but the result"
    ):
        trilu.triu(x, out=bf)
    with pytest.raises(ValueError, match=r"out has shape"):
        trilu.triu(x, out=torch.zeros(4, 5))
    assert not out.any()
    assert not bf.any()
    leaf = torch.zeros(4, 4, requires_grad=True)
    with pytest.raises(TypeError, match=r"requires grad"):
        trilu.triu(x, out=leaf)
    with pytest.raises(TypeError, match=r"not differentiable"):
        trilu.triu(leaf, out=torch.zeros(4, 4))


# --- fills and dtypes --------------------------------------------------------------


def test_fills_follow_numpys_rule_for_numpys_dtypes_and_torchs_for_its_own() -> None:
    with pytest.raises(TypeError, match=r"fill=-inf"):
        trilu.triu(torch.ones(3, 3, dtype=torch.int32), fill=float("-inf"))
    with pytest.raises(OverflowError):
        trilu.triu(torch.ones(3, 3, dtype=torch.int8), fill=300)
    masked = trilu.tril(torch.ones(3, 3, dtype=torch.bfloat16), fill=float("-inf"))
    assert masked.dtype is torch.bfloat16
    assert masked[0, 1].item() == float("-inf")
    assert masked[1, 0].item() == 1.0


@pytest.mark.parametrize("dtype", REFUSED, ids=str)
def test_dtypes_without_a_crossing_are_refused(dtype: Any) -> None:
    x = torch.zeros(3, 3 * dtype.itemsize, dtype=torch.uint8).view(dtype)  # any dtype
    with pytest.raises(TypeError, match=rf"got {dtype}"):
        trilu.triu(x)


@pytest.mark.parametrize("dtype", sorted(set(VIEWED) - set(ONNX), key=str), ids=str)
def test_trilu_keeps_onnxs_type_constraint_for_bit_views(dtype: Any) -> None:
    """bfloat16 is one of Trilu's 16 types (test_band_family_bit_exact); the
    other bit views are not."""
    x = torch.zeros(2, 2, dtype=torch.uint8).view(dtype)
    with pytest.raises(TypeError, match=rf"{dtype}.*Trilu's type constraint"):
        trilu.trilu(x)


def test_a_fill_torch_cannot_convert_is_a_type_error() -> None:
    dtype = getattr(torch, "float4_e2m1fn_x2", None)  # torch >= 2.8
    if dtype is None:
        pytest.skip("this torch has no float4_e2m1fn_x2")
    x = torch.zeros(2, 2, dtype=torch.uint8).view(dtype)
    with pytest.raises(TypeError, match=r"fill=1.5 cannot be converted"):
        trilu.triu(x, fill=1.5)


def test_lazy_conjugate_and_negative_are_read_resolved() -> None:
    x = (torch.arange(9.0).reshape(3, 3) * (1 + 2j)).to(torch.complex64)
    for lazy in (x.conj(), x.conj().imag, -x.conj()):
        _check(
            trilu.triu(lazy), lazy, np.triu(lazy.resolve_conj().resolve_neg().numpy())
        )


# --- creation ------------------------------------------------------------------


def test_tri_like_a_tensor_and_indices_are_numpys() -> None:
    t = torch.ones(2)
    made = trilu.tri(3, 4, 1, like=t)
    _check(made, torch.empty(0, dtype=torch.float64), np.tri(3, 4, 1))
    _check(trilu.tri(3, dtype=np.int8, like=t), torch.empty(0, dtype=torch.int8),
           np.tri(3, dtype=np.int8))  # fmt: skip
    for name in ("triu_indices_from", "tril_indices_from"):
        got = getattr(trilu, name)(torch.ones(3, 4), 1)
        exp = getattr(np, name)(np.ones((3, 4)), 1)
        for g, e in zip(got, exp, strict=True):
            assert_same(g, e)


def test_the_numpy_patch_keeps_numpys_rule() -> None:
    """np.triu(tensor) is numpy's answer, a numpy array, with the patch on;
    np.tri(like=tensor) numpy's error."""
    t = torch.arange(9.0).reshape(3, 3)
    with trilu.patched():
        assert_same(np.triu(t, 1), np.triu(t.numpy(), 1))
        assert_same(np.tril(t), np.tril(t.numpy()))
        with pytest.raises(TypeError, match=r"like"):
            np.tri(3, like=t)
    assert type(trilu.triu(t)) is torch.Tensor


# --- gradients ---------------------------------------------------------------------

GRAD_CASES = [
    ("triu", (1,), {}),
    ("triu", (-1,), {"fill": -5.0}),
    ("tril", (0,), {}),
    ("tril", (2,), {"fill": -7.0}),
    ("band", (-1, 1), {}),
    ("band", (0, 2), {"fill": 3.0}),
    ("trilu", (0, True), {}),
    ("trilu", (1, False), {}),
    ("mirror", (), {"upper": True}),
    ("mirror", (), {"upper": False}),
    ("pack", (0,), {"upper": True}),
    ("pack", (1,), {"upper": False}),
    ("pack", (0,), {"upper": True, "order": "F"}),
    ("pack", (-1,), {"upper": False, "order": "F"}),
]


@pytest.mark.parametrize(("name", "args", "kwargs"), GRAD_CASES)
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5)], ids=str)
def test_gradcheck(name: str, args: Any, kwargs: Any, shape: Any) -> None:
    if name == "mirror" and shape[-1] != shape[-2]:
        shape = (*shape[:-1], shape[-2])
    x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    function = getattr(trilu, name)
    assert torch.autograd.gradcheck(lambda z: function(z, *args, **kwargs), (x,))
    assert torch.autograd.gradgradcheck(lambda z: function(z, *args, **kwargs), (x,))


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("k", [0, 1, -1])
def test_gradcheck_unpack(upper: bool, k: int) -> None:
    count = len(np.triu_indices(4, k, 5)[0] if upper else np.tril_indices(4, k, 5)[0])
    v = torch.randn(2, count, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda z: trilu.unpack(z, 4, 5, k, upper=upper, fill=-1.0), (v,)
    )


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("k", [0, 2, -1])
@pytest.mark.parametrize("mirror", [True, "conj"])
def test_gradcheck_unpack_mirror(upper: bool, k: int, mirror: Any) -> None:
    """The mirrored elements' gradients join the kept ones' (k=-1 upper
    keeps a diagonal on each side, which mirror does not write), in either
    order."""
    dtype = torch.complex128 if mirror == "conj" else torch.float64
    count = len(np.triu_indices(4, k)[0] if upper else np.tril_indices(4, k)[0])
    v = torch.randn(2, count, dtype=dtype, requires_grad=True)
    for order in ("C", "F"):
        function = lambda z, order=order: trilu.unpack(  # noqa: E731
            z, 4, 4, k, upper=upper, order=order, mirror=mirror, fill=-1.0
        )
        assert torch.autograd.gradcheck(function, (v,))
        assert torch.autograd.gradgradcheck(function, (v,))


def test_storage_refuses_autograd() -> None:
    """to_banded, from_banded and squareform have no registered operation:
    a tensor that requires grad is a TypeError saying so."""
    x = torch.randn(4, 4, dtype=torch.float64, requires_grad=True)
    calls = [
        lambda: trilu.to_banded(x, 1, 1),
        lambda: trilu.from_banded(x[:3], 1, 1),
        lambda: trilu.squareform(x[0, :3]),
    ]
    for call in calls:
        with pytest.raises(TypeError, match=r"has no gradient and no torch.compile"):
            call()


@pytest.mark.parametrize("function", [trilu.band_mask, trilu.attention_mask])
def test_masks_like_a_tensor(function: Any) -> None:
    t = torch.empty(0, dtype=torch.float16)
    made = function(3, 5, dtype=np.float16, like=t)
    _check(made, t, function(3, 5, dtype=np.float16))


@pytest.mark.parametrize("upper", [True, False])
def test_gradcheck_hermitian_mirror(upper: bool) -> None:
    x = torch.randn(3, 4, 4, dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda z: trilu.mirror(z, upper=upper, conj=True), (x,)
    )


def test_gradient_of_a_1d_input_sums_the_rows() -> None:
    """The adjoint itself has the input's shape (autograd would also sum a
    broadcast gradient, which would hide a formula that does not)."""
    g = torch.ones(4, 4, dtype=torch.float64)
    values = {"k": 1, "fill": None, "order": None}
    assert_same(_torch._grad("triu", g, (4,), values).numpy(), np.arange(4.0))
    v = torch.randn(4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda z: trilu.triu(z, 1), (v,))
    assert torch.autograd.gradcheck(trilu.mirror, (v,))


def test_gradient_results_equal_the_direct_path() -> None:
    x = torch.randn(3, 5, 5, dtype=torch.float64)
    for name, args, kwargs in GRAD_CASES:
        direct = getattr(trilu, name)(x, *args, **kwargs)
        traced = getattr(trilu, name)(x.requires_grad_(), *args, **kwargs)
        x.requires_grad_(False)
        assert traced.grad_fn is not None
        assert torch.equal(direct.view(-1).view(torch.int64),
                           traced.detach().reshape(-1).view(torch.int64))  # fmt: skip


def test_direct_path_for_plain_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plain tensors that need no gradient never reach the registered
    operation: under no_grad and inference_mode neither."""
    monkeypatch.setattr(_torch, "_OPS", {})  # any use of an operation fails
    x = torch.ones(3, 3, requires_grad=True)
    trilu.triu(torch.ones(3, 3))
    with torch.no_grad():
        trilu.pack(x)
    with torch.inference_mode():
        trilu.mirror(torch.ones(3, 3))
    with pytest.raises(TypeError, match="triu has no gradient"):  # (no operation)
        trilu.triu(x)


# --- torch.compile -----------------------------------------------------------------


def _model(x: Any) -> Any:
    """Every operation, under one graph."""
    lower = trilu.tril(x, fill=float("-inf")).softmax(-1)
    band = trilu.band(lower, -1, 1) + trilu.triu(x, 1)
    sym = trilu.mirror(band, upper=False)
    packed = trilu.pack(sym * 2, upper=False, order="F")
    full = trilu.unpack(packed, upper=False, order="F", mirror=True)
    return full.sum() + trilu.unpack(packed).sum() + trilu.trilu(x, 0, False).sum()


# inductor's own use of torch.jit
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method`:DeprecationWarning")
def test_compile_fullgraph_forward_and_backward() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(_model, fullgraph=True)
    x = torch.randn(2, 5, 5, dtype=torch.float64, requires_grad=True)
    eager = _model(x)
    (eager_grad,) = torch.autograd.grad(eager, x)
    got = compiled(x)
    (got_grad,) = torch.autograd.grad(got, x)
    torch.testing.assert_close(got, eager)
    torch.testing.assert_close(got_grad, eager_grad)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), eager)


# --- devices ---------------------------------------------------------------------


def test_a_meta_tensor_goes_to_torchs_triu_and_tril() -> None:
    """The device rule on a real tensor: off the CPU (the meta device here),
    triu and tril are torch's, anything else a TypeError."""
    x = torch.empty(4, 4, device="meta")
    assert trilu.triu(x, 1).device.type == "meta"
    assert trilu.trilu(x, 1, False).device.type == "meta"
    with pytest.raises(TypeError, match=r"device meta.*runs on the CPU"):
        trilu.pack(x)
    with pytest.raises(TypeError, match=r"device meta"):
        trilu.tri(3, like=x)
