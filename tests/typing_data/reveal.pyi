# What a user's type checker infers from trilu's functions: each line is an
# assert_type that mypy checks (tests/test_stubs.py), as numpy's
# typing/tests/data/reveal files. Types are written so that they read the same
# under numpy 1.26's stubs and 2.x's.

from typing import Any, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import trilu

# Whether dask, torch, jax and onnx are installed: the test runs mypy with
# --always-true or --always-false DASK (TORCH, JAX, ONNX), and without the
# package the lines under `if DASK:` (...) are not checked, nor is the package
# imported.
DASK: bool
TORCH: bool
JAX: bool
ONNX: bool

_ScalarT = TypeVar("_ScalarT", bound=np.generic)
_Array2D: TypeAlias = np.ndarray[tuple[int, int], np.dtype[_ScalarT]]
_Indices: TypeAlias = tuple[
    np.ndarray[tuple[int], np.dtype[np.intp]], np.ndarray[tuple[int], np.dtype[np.intp]]
]

AR_f4: npt.NDArray[np.float32]
AR_i8: npt.NDArray[np.int64]
AR_c16: npt.NDArray[np.complex128]
AR_b: npt.NDArray[np.bool_]
AR_LIKE_f: list[list[float]]
AR_LIKE_i: list[int]
OUT_f8: npt.NDArray[np.float64]
OUT_2D_i8: np.ndarray[tuple[int, int], np.dtype[np.int64]]
K_0D: np.ndarray[tuple[()], np.dtype[np.int64]]
K_1D: np.ndarray[tuple[int], np.dtype[np.int64]]  # of one element (ONNX's k)

# --- numpy's index family -----------------------------------------------------------
# tri: float64 by default, the scalar type a dtype names, and for other
# dtype-likes (float, "f4") what numpy's own stub gives them

assert_type(trilu.tri(4), _Array2D[np.float64])
assert_type(trilu.tri(4, 3, -1), _Array2D[np.float64])
assert_type(trilu.tri(4, dtype=np.int8), _Array2D[np.int8])
assert_type(trilu.tri(4, 3, 1, np.uint16), _Array2D[np.uint16])
assert_type(trilu.tri(4, dtype=np.dtype(np.complex64)), _Array2D[np.complex64])
assert_type(trilu.tri(np.int64(4), None, np.intp(0)), _Array2D[np.float64])
assert_type(trilu.tri(4, dtype=float), _Array2D[Any])
assert_type(trilu.tri(4, dtype="f4"), _Array2D[Any])
assert_type(trilu.tri(4, like=AR_f4), _Array2D[np.float64])

assert_type(trilu.triu_indices(4), _Indices)
assert_type(trilu.tril_indices(4, -1, 5), _Indices)
assert_type(trilu.triu_indices(np.int64(4), k=1), _Indices)
assert_type(trilu.triu_indices_from(AR_f4), _Indices)
assert_type(trilu.tril_indices_from(AR_i8, 1), _Indices)

# --- numpy arrays and array-likes ---------------------------------------------------
# an array of a known scalar type gives an array of that type, any other
# array-like NDArray[Any], and out= its own type

assert_type(trilu.triu(AR_f4), npt.NDArray[np.float32])
assert_type(trilu.triu(AR_i8, 1), npt.NDArray[np.int64])
assert_type(trilu.triu(AR_f4, k=K_0D), npt.NDArray[np.float32])
assert_type(trilu.triu(AR_f4, np.int8(2), order="F"), npt.NDArray[np.float32])
assert_type(trilu.triu(AR_LIKE_f), npt.NDArray[Any])
assert_type(
    trilu.triu(AR_LIKE_i, out=OUT_2D_i8),
    np.ndarray[tuple[int, int], np.dtype[np.int64]],
)

assert_type(trilu.tril(AR_c16, -1), npt.NDArray[np.complex128])
assert_type(trilu.tril(AR_f4, fill=-np.inf), npt.NDArray[np.float32])
assert_type(trilu.tril(AR_LIKE_f), npt.NDArray[Any])
assert_type(trilu.tril(AR_LIKE_f, out=OUT_f8), npt.NDArray[np.float64])

assert_type(trilu.band(AR_i8, -1, 1), npt.NDArray[np.int64])
assert_type(trilu.band(AR_i8, None, 2, fill=7, order="C"), npt.NDArray[np.int64])
assert_type(trilu.band(AR_LIKE_f, 0), npt.NDArray[Any])
assert_type(trilu.band(AR_f4, hi=0, out=OUT_f8), npt.NDArray[np.float64])

assert_type(trilu.mirror(AR_c16, conj=True), npt.NDArray[np.complex128])
assert_type(trilu.mirror(AR_b, upper=np.True_), npt.NDArray[np.bool_])
assert_type(trilu.mirror(AR_LIKE_f), npt.NDArray[Any])
assert_type(trilu.mirror(AR_f4, upper=False, out=OUT_f8), npt.NDArray[np.float64])

assert_type(trilu.trilu(AR_f4), npt.NDArray[np.float32])
assert_type(trilu.trilu(AR_i8, K_0D, 0), npt.NDArray[np.int64])
assert_type(trilu.trilu(AR_i8, K_1D, upper=np.False_), npt.NDArray[np.int64])
assert_type(trilu.trilu(AR_LIKE_f), npt.NDArray[Any])
assert_type(trilu.trilu(AR_f4, out=OUT_f8), npt.NDArray[np.float64])

assert_type(trilu.pack(AR_i8, 1), npt.NDArray[np.int64])
assert_type(trilu.pack(AR_f4, upper=False), npt.NDArray[np.float32])
assert_type(trilu.pack(AR_LIKE_f), npt.NDArray[Any])
assert_type(trilu.pack(AR_f4, out=OUT_f8), npt.NDArray[np.float64])

assert_type(trilu.unpack(AR_f4), npt.NDArray[np.float32])
assert_type(trilu.unpack(AR_f4, 3, k=0, fill=np.nan), npt.NDArray[np.float32])
assert_type(trilu.unpack(AR_i8, 3, 4, -1, upper=False), npt.NDArray[np.int64])
assert_type(trilu.unpack(AR_LIKE_i), npt.NDArray[Any])
assert_type(
    trilu.unpack(AR_LIKE_i, out=OUT_2D_i8),
    np.ndarray[tuple[int, int], np.dtype[np.int64]],
)

assert_type(trilu.pack(AR_f4, order="F"), npt.NDArray[np.float32])
assert_type(trilu.unpack(AR_i8, k=1, mirror=True), npt.NDArray[np.int64])
assert_type(trilu.unpack(AR_c16, order="F", mirror="conj"), npt.NDArray[np.complex128])
assert_type(trilu.unpack(AR_f4, mirror=np.True_, out=OUT_f8), npt.NDArray[np.float64])

assert_type(trilu.squareform(AR_f4), npt.NDArray[np.float32])
assert_type(trilu.squareform(AR_i8, "tovector", checks=False), npt.NDArray[np.int64])
assert_type(trilu.squareform(AR_LIKE_f, "tomatrix"), npt.NDArray[Any])

assert_type(trilu.to_banded(AR_f4, 1, 2), npt.NDArray[np.float32])
assert_type(trilu.to_banded(AR_LIKE_f, 0, np.int64(1)), npt.NDArray[Any])
assert_type(
    trilu.to_banded(AR_LIKE_i, 1, 1, out=OUT_2D_i8),
    np.ndarray[tuple[int, int], np.dtype[np.int64]],
)
assert_type(trilu.from_banded(AR_i8, 1, 1, fill=0), npt.NDArray[np.int64])
assert_type(trilu.from_banded(AR_LIKE_f, 1, 0, n=4), npt.NDArray[Any])
assert_type(trilu.from_banded(AR_f4, 1, 1, n=4, out=OUT_f8), npt.NDArray[np.float64])

# --- masks made from nothing --------------------------------------------------------
# numpy's types for tri, bool by default; with chunks=, dask's array (Any)

assert_type(trilu.band_mask(3), _Array2D[np.bool_])
assert_type(trilu.band_mask(3, 4, -1, 1, dtype=np.float32), _Array2D[np.float32])
assert_type(trilu.band_mask(3, dtype="f4", keep=0, fill=-np.inf), _Array2D[Any])
assert_type(trilu.band_mask(3, None, None, 0, like=AR_f4), _Array2D[np.bool_])
assert_type(trilu.band_mask(3, chunks=2), Any)

assert_type(trilu.attention_mask(3, 5, window=2), _Array2D[np.bool_])
assert_type(trilu.attention_mask(4, dtype=np.float16), _Array2D[np.float16])
assert_type(trilu.attention_mask(4, align="top_left", dtype=float), _Array2D[Any])
assert_type(trilu.attention_mask(4, chunks=(2, 2)), Any)

# --- other libraries' arrays: each comes back as its own kind --------------------

if DASK:  # noqa: PYI002  (mypy's --always-true/--always-false)
    import dask.array as da

    DA: da.Array

    assert_type(trilu.triu(DA), da.Array)
    assert_type(trilu.triu(DA, -1, fill=np.nan), da.Array)
    assert_type(trilu.tril(DA, 1), da.Array)
    assert_type(trilu.band(DA, -1, 1), da.Array)
    assert_type(trilu.mirror(DA, conj=True), da.Array)
    assert_type(trilu.trilu(DA, 1, upper=False), da.Array)
    assert_type(trilu.pack(DA, 1, upper=False), da.Array)
    assert_type(trilu.unpack(DA, 4, 5, fill=np.nan), da.Array)

if TORCH:  # noqa: PYI002
    import torch

    T: torch.Tensor

    assert_type(trilu.triu(T), torch.Tensor)
    assert_type(trilu.tril(T, 1, fill=-np.inf, order="C"), torch.Tensor)
    assert_type(trilu.tril(T, out=T), torch.Tensor)
    assert_type(trilu.band(T, -1, 1), torch.Tensor)
    assert_type(trilu.mirror(T, conj=True), torch.Tensor)
    assert_type(trilu.trilu(T, 1, upper=False), torch.Tensor)
    assert_type(trilu.pack(T, 1), torch.Tensor)
    assert_type(trilu.unpack(T, upper=False), torch.Tensor)
    assert_type(trilu.tri(3, like=T), torch.Tensor)
    assert_type(trilu.tril(T, out=OUT_f8), npt.NDArray[np.float64])

if JAX:  # noqa: PYI002
    import jax

    J: jax.Array

    assert_type(trilu.triu(J), jax.Array)
    assert_type(trilu.tril(J, -1, fill=-np.inf), jax.Array)
    assert_type(trilu.band(J, None, 2), jax.Array)
    assert_type(trilu.mirror(J, upper=False), jax.Array)
    assert_type(trilu.trilu(J, 0, False), jax.Array)
    assert_type(trilu.pack(J, upper=False), jax.Array)
    assert_type(trilu.unpack(J, 3, k=1), jax.Array)
    assert_type(trilu.tri(3, 4, dtype=np.float32, like=J), jax.Array)

# --- the rest of the API -----------------------------------------------------------

assert_type(trilu.get_num_threads(), int)
assert_type(trilu.set_num_threads(2), None)
assert_type(trilu.set_num_threads(), None)
assert_type(trilu.use_in_numpy(), None)
assert_type(trilu.restore_numpy(), None)
with trilu.patched():
    pass

if ONNX:  # noqa: PYI002
    import onnx

    NODE: onnx.NodeProto

    assert_type(trilu.onnx.Trilu.op_domain, str)
    assert_type(trilu.onnx.Trilu(NODE, upper=0).to_python(["x"]), tuple[str, str])
