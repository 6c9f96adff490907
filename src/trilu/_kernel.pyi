from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

_F = TypeVar("_F", bound=Callable[..., Any])

STREAMING: bool
ALIGNED: object
PAGE_ALIGN_MIN: int

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
def explain_packed(
    mat: np.ndarray,
    vec: np.ndarray,
    unpack: bool,
    lo: int | None,
    hi: int | None,
    columns: bool = False,
    fill: bytes | None = None,
    mirror: bool = False,
) -> dict[str, object]: ...
def mirror(
    src: np.ndarray,
    dst: np.ndarray | None,
    upper: bool,
    xor: bytes | None = None,
    order: object = None,
) -> np.ndarray: ...
def pack(
    src: np.ndarray,
    dst: np.ndarray | None,
    lo: int | None,
    hi: int | None,
    columns: bool = False,
) -> np.ndarray: ...
def pack_checked(
    src: np.ndarray, part: int, floats: bool, mag: int, inf: int
) -> tuple[np.ndarray, int, int]: ...
def unpack(
    src: np.ndarray,
    dst: np.ndarray | None,
    lo: int | None,
    hi: int | None,
    fill: bytes | None = None,
    rows: int = 0,
    cols: int = 0,
    columns: bool = False,
    mirror: bool = False,
    xor: bytes | None = None,
) -> np.ndarray: ...
def band_count(rows: int, cols: int, lo: int | None, hi: int | None) -> int: ...
def mask(
    rows: int,
    cols: int,
    lo: int | None,
    hi: int | None,
    descr: np.dtype,
    keep: bytes,
    fill: bytes,
) -> np.ndarray: ...
def to_banded(
    src: np.ndarray, dst: np.ndarray | None, lower: int, upper: int
) -> np.ndarray: ...
def from_banded(
    src: np.ndarray,
    dst: np.ndarray | None,
    lower: int,
    upper: int,
    fill: bytes | None = None,
    rows: int = 0,
) -> np.ndarray: ...
def door(function: _F) -> _F: ...
def remembers(descr: np.dtype, fill: object) -> bool: ...
def remember_fill(descr: np.dtype, fill: object, data: bytes) -> None: ...
def remembered(descr: np.dtype, fill: object) -> bytes | None: ...
def square_side(count: int, k: object, upper: bool) -> int: ...
def keyed(dtype: object) -> bool: ...

tri_dtypes: dict[Any, tuple[np.dtype, bytes, bytes] | None]
mask_dtypes: dict[Any, tuple[np.dtype, bytes, bytes]]
attention_dtypes: dict[Any, tuple[np.dtype, bytes, bytes]]
