from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

_F = TypeVar("_F", bound=Callable[..., Any])

STREAMING: bool
ALIGNED: object

def band(
    src: np.ndarray,
    dst: np.ndarray | None,
    lo: int | None,
    hi: int | None,
    fill: bytes | None = None,
    order: object = None,
) -> np.ndarray: ...
def empty(m: np.ndarray, dtype: np.dtype, order: object) -> np.ndarray: ...
def check_out(m: np.ndarray, out: np.ndarray) -> bool: ...
def use_handler(handler: object) -> object: ...
def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def cap_threads(n: int) -> int: ...
def explain(
    src: np.ndarray,
    k: object,
    upper: bool,
    out: np.ndarray | None = None,
    order: object = None,
) -> dict[str, object]: ...
def tri(n: int, m: int, k: object, descr: np.dtype, one: bytes) -> np.ndarray: ...
def triangle_indices(
    n: int, m: int, k: object, upper: bool
) -> tuple[np.ndarray, np.ndarray]: ...
def explain_band(
    src: np.ndarray,
    lo: int | None,
    hi: int | None,
    out: np.ndarray | None = None,
    fill: bytes | None = None,
    order: object = None,
) -> dict[str, object]: ...
def mirror(
    src: np.ndarray,
    dst: np.ndarray | None,
    upper: bool,
    xor: bytes | None = None,
    order: object = None,
) -> np.ndarray: ...
def pack(
    src: np.ndarray, dst: np.ndarray, lo: int | None, hi: int | None
) -> np.ndarray: ...
def unpack(
    src: np.ndarray,
    dst: np.ndarray | None,
    lo: int | None,
    hi: int | None,
    fill: bytes | None = None,
    rows: int = 0,
    cols: int = 0,
) -> np.ndarray: ...
def band_count(rows: int, cols: int, lo: int | None, hi: int | None) -> int: ...
def door(function: _F) -> _F: ...
def remembers(descr: np.dtype, fill: object) -> bool: ...
def remember_fill(descr: np.dtype, fill: object, data: bytes) -> None: ...
def square_side(count: int, k: object, upper: bool) -> int: ...

tri_dtypes: dict[Any, tuple[np.dtype, bytes] | None]
