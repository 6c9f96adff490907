"""Arrays of array-api-strict (needs array-api-strict), the Array API's
reference: every function that takes an array gives an array of the same
library, dtype, shape and device, bit for bit numpy's answer on the same
memory, read in place; ``out=`` in place; ``tri(like=)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _cases import (
    assert_same,
    band_oracle,
    every,
    make,
    mirror_oracle,
    pack_oracle,
    triangle_oracle,
    unpack_oracle,
)

import trilu
from trilu import _dispatch

xp = pytest.importorskip("array_api_strict")

# every dtype the library has, and its devices (all in the CPU's memory),
# each with the dtypes it has
INFO = xp.__array_namespace_info__()
DTYPES = list(INFO.dtypes().values())
DEVICES = list(INFO.devices())


def asarray(a: np.ndarray, device: Any = None) -> Any:
    return xp.asarray(a, device=device)


def memory(x: Any) -> np.ndarray:
    """x's memory, as numpy reads it through DLPack."""
    return np.from_dlpack(x)


LAYOUTS = {
    "C": lambda x: x,
    "transposed": lambda x: x.mT,
    "sliced": lambda x: x[..., 1::2, ::3],
    "reversed": lambda x: x[..., ::-1, :],
}


def _check(got: Any, x: Any, exp: np.ndarray) -> None:
    assert type(got) is type(x)
    assert got.dtype == x.dtype
    assert got.device == x.device
    assert_same(np.array(memory(got)), exp)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.usefixtures("threads")
def test_bit_exact(dtype: Any, rng: Any) -> None:
    np_dtype = memory(xp.zeros(1, dtype=dtype)).dtype

    def check(label: tuple[str, tuple[int, ...], Any]) -> None:
        layout, shape, device = label
        base = asarray(
            make(np_dtype, (*shape[:-2], 2 * shape[-1], 3 * shape[-2]), rng), device
        )
        x = LAYOUTS[layout](
            base if layout == "sliced" else base[..., : shape[-2], : shape[-1]]
        )
        src = np.array(memory(x))
        _check(trilu.triu(x, 1), x, triangle_oracle(src, 1, True))
        _check(trilu.tril(x, -1, fill=True), x, triangle_oracle(src, -1, False, True))
        _check(trilu.band(x, -1, 1), x, band_oracle(src, -1, 1))
        _check(trilu.trilu(x, 0, False), x, triangle_oracle(src, 0, False))
        packed = trilu.pack(x, 1)
        _check(packed, x, pack_oracle(src, 1, True))
        rows, cols = src.shape[-2:]
        exp = unpack_oracle(np.array(memory(packed)), rows, cols, 1, True)
        _check(trilu.unpack(packed, rows, cols, 1), x, exp)
        if rows == cols:
            conj = np_dtype.kind == "c"
            _check(trilu.mirror(x, conj=conj), x, mirror_oracle(src, True, conj))
        assert_same(np.array(memory(x)), src)

    shapes = [(4, 4), (3, 5), (2, 3, 4, 4)]
    devices = [d for d in DEVICES if dtype in INFO.dtypes(device=d).values()]
    every([(lay, s, d) for lay in LAYOUTS for s in shapes for d in devices], check)


def test_read_in_place_and_the_result_is_the_kernels_buffer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read, made = [], []
    crossing = type(_dispatch.library(xp.zeros(1)))
    to_numpy, from_numpy = crossing.to_numpy, crossing.from_numpy

    def spy_to_numpy(x: Any, writable: bool = False) -> np.ndarray:
        read.append(to_numpy(x, writable))
        return read[-1]

    def spy_from_numpy(result: np.ndarray, x: Any) -> Any:
        made.append(result)
        return from_numpy(result, x)

    monkeypatch.setattr(crossing, "to_numpy", staticmethod(spy_to_numpy))
    monkeypatch.setattr(crossing, "from_numpy", staticmethod(spy_from_numpy))
    x = xp.reshape(xp.arange(30.0), (5, 6)).mT
    got = trilu.triu(x)
    assert read[0].ctypes.data == memory(x).ctypes.data
    assert memory(got).ctypes.data == made[0].ctypes.data


def test_out_in_place(rng: Any) -> None:
    src = rng.random((3, 4, 4))
    x = asarray(src.copy(), DEVICES[1])  # not the default one
    assert trilu.tril(x, out=x) is x
    _check(x, x, np.tril(src))
    out = xp.zeros(6 * 3)
    out = xp.reshape(out, (3, 6))  # a fresh array, writable
    with pytest.raises(ValueError, match=r"out has shape"):
        trilu.pack(x, out=xp.zeros((3, 5)))
    assert trilu.pack(x, -1, upper=False, out=out) is out
    assert_same(np.array(memory(out)), pack_oracle(np.tril(src), -1, False))


def test_tri_like() -> None:
    for device in DEVICES:
        if xp.float32 not in INFO.dtypes(device=device).values():
            continue
        like = xp.zeros(1, dtype=xp.float32, device=device)
        got = trilu.tri(3, 4, dtype=np.float32, like=like)
        assert got.device == device
        assert got.dtype == xp.float32
        assert_same(np.array(memory(got)), np.tri(3, 4, dtype=np.float32))
