"""The benchmark case matrix, shared by bench.py and the asv benchmarks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# x86 cores take a load whose address agrees in its low 12 bits with an
# earlier store's as dependent on it (4K aliasing); numpy's allocator puts two
# large arrays at one offset into their pages (mmap'd, 16 bytes in), so a copy
# between them can run up to 17x slower than between the same bytes elsewhere.
PAGE = 4096


def placed(like: np.ndarray, near: np.ndarray, by: int = PAGE // 2) -> np.ndarray:
    """``np.empty_like(like)`` (its layout too), its data `by` bytes past
    `near`'s modulo a page: an array written from `near` (by the default,
    half a page) or read beside it (0: at its offset) without 4K aliasing."""
    empty = np.empty_like(like)
    buffer = np.empty(empty.nbytes + PAGE, np.uint8)
    start = (near.ctypes.data + by - buffer.ctypes.data) % PAGE
    return np.ndarray(empty.shape, empty.dtype, buffer, start, empty.strides)


def placed_copy(x: np.ndarray, near: np.ndarray) -> np.ndarray:
    """A copy of x (its layout too) at `near`'s offset into a page: the source
    of a copy into an array ``placed`` beside `near`."""
    copy = placed(x, near, 0)
    copy[...] = x
    return copy


@dataclass(frozen=True)
class Case:
    label: str
    shape: tuple[int, ...]
    dtype: str
    upper: bool = True
    k: int = 0
    layout: str = "C"  # "C", "F" (Fortran order) or "step2" (a [::2, ::2] view)

    @property
    def op(self) -> str:
        return "triu" if self.upper else "tril"

    def make(self, seed: int = 0) -> np.ndarray:
        """The input: random values, in the case's dtype and memory layout."""
        rng = np.random.default_rng(seed)
        shape = self.shape
        if self.layout == "step2":
            shape = (*shape[:-2], 2 * shape[-2], 2 * shape[-1])
        if self.dtype == "bool":
            x = rng.random(shape) < 0.5
        elif self.dtype.startswith("complex"):
            x = (rng.random(shape) + 1j * rng.random(shape)).astype(self.dtype)
        elif self.dtype.startswith("int"):
            x = rng.integers(0, 10, shape).astype(self.dtype)
        else:
            x = rng.random(shape).astype(self.dtype)
        if self.layout == "F":
            x = np.asfortranarray(x)
        elif self.layout == "step2":
            x = x[..., ::2, ::2]
        return x


def _cases() -> list[Case]:
    cases = [
        Case("4x5 int64 (ONNX example)", (4, 5), "int64"),
        Case("64x64 float32", (64, 64), "float32"),
        Case("512x512 float32", (512, 512), "float32"),
        Case("2048x2048 float64", (2048, 2048), "float64"),
        Case("2048x2048 float64 k=-100", (2048, 2048), "float64", False, -100),
        Case("2048x2048 float64 Fortran", (2048, 2048), "float64", layout="F"),
        Case("2048x2048 float32 [::2,::2]", (2048, 2048), "float32", layout="step2"),
        # a stack in Fortran order: its matrices side by side
        Case("64x128x128 float32 Fortran", (64, 128, 128), "float32", layout="F"),
    ]
    for label, shape, dtype in [
        ("1024x64x64 float32", (1024, 64, 64), "float32"),
        ("100000x3x3 float64", (100000, 3, 3), "float64"),
        ("8x1024x1024 float32", (8, 1024, 1024), "float32"),
        ("2048x2048 bool", (2048, 2048), "bool"),
        ("1024x1024 complex128", (1024, 1024), "complex128"),
        ("2048x2048 float16", (2048, 2048), "float16"),
    ]:
        cases.append(Case(label, shape, dtype, True))
        cases.append(Case(label, shape, dtype, False))
    return cases


CASES = _cases()
