"""trilu: the ONNX Trilu operator and exact, faster numpy.triu/tril drop-ins.

>>> import numpy as np, trilu
>>> trilu.triu(np.arange(1, 10).reshape(3, 3))
array([[1, 2, 3],
       [0, 5, 6],
       [0, 0, 9]])
"""

from typing import TYPE_CHECKING, Any

from . import _threadpoolctl
from ._indices import (
    tri,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
)
from ._numpy_patch import patched, restore_numpy, use_in_numpy
from ._threads import get_num_threads, set_num_threads
from ._version import __version__

if not TYPE_CHECKING:
    from ._api import band, mirror, tril, trilu, triu
    from ._banded import from_banded, to_banded
    from ._masks import attention_mask, band_mask
    from ._pack import pack, squareform, unpack

    def __getattr__(name: str) -> Any:
        """``trilu.onnx``, imported on first use (it needs onnx)."""
        if name == "onnx":
            import importlib  # noqa: PLC0415  (always loaded: costs nothing)

            return importlib.import_module(".onnx", __name__)
        raise AttributeError(f"module 'trilu' has no attribute {name!r}")

else:
    # The public functions' types, in the style of numpy's own triu/tril
    # stubs (numpy/lib/_twodim_base_impl.pyi): an array of a known scalar type
    # gives an array of that type, any other array-like NDArray[Any], and out=
    # its own type. Here, not in a stub beside _api.py, so that mypy still
    # checks _api.py and stubtest checks these against it.
    from typing import Literal, SupportsIndex, TypeAlias, TypeVar, overload

    import numpy as np
    from numpy._typing import ArrayLike, DTypeLike, NDArray, _ArrayLike, _DTypeLike

    from . import onnx as onnx

    _ArrayT = TypeVar("_ArrayT", bound=np.ndarray[Any, Any])
    _ScalarT = TypeVar("_ScalarT", bound=np.generic)
    # numpy's k: an integer or a 0-D integer array (integral floats such as
    # 2.0 pass at run time, as in numpy, but are not typed)
    _K: TypeAlias = SupportsIndex | np.ndarray[tuple[()], np.dtype[np.integer[Any]]]
    # ONNX's k: an integer or a one-element integer array (0-D or 1-D)
    _OnnxK: TypeAlias = SupportsIndex | NDArray[np.integer[Any]]
    _Upper: TypeAlias = bool | np.bool_ | int  # a bool or 0/1
    _Order: TypeAlias = Literal["K", "A", "C", "F"] | None

    @overload
    def triu(
        m: ArrayLike,
        k: _K = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def triu(
        m: _ArrayLike[_ScalarT],
        k: _K = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def triu(
        m: ArrayLike,
        k: _K = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[Any]: ...
    def triu(
        m: Any,
        k: Any = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: Any = None,
    ) -> Any: ...

    # keep in sync with `triu`
    @overload
    def tril(
        m: ArrayLike,
        k: _K = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def tril(
        m: _ArrayLike[_ScalarT],
        k: _K = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def tril(
        m: ArrayLike,
        k: _K = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[Any]: ...
    def tril(
        m: Any,
        k: Any = 0,
        *,
        fill: object = None,
        order: _Order = None,
        out: Any = None,
    ) -> Any: ...

    # band's bounds: numpy's k, or None for unbounded
    _Bound: TypeAlias = _K | None

    @overload
    def band(
        m: ArrayLike,
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        fill: object = None,
        order: _Order = None,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def band(
        m: _ArrayLike[_ScalarT],
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        fill: object = None,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def band(
        m: ArrayLike,
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        fill: object = None,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[Any]: ...
    def band(
        m: Any,
        lo: Any = None,
        hi: Any = None,
        *,
        fill: object = None,
        order: _Order = None,
        out: Any = None,
    ) -> Any: ...

    @overload
    def mirror(
        m: ArrayLike,
        *,
        upper: bool = True,
        conj: bool = False,
        order: _Order = None,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def mirror(
        m: _ArrayLike[_ScalarT],
        *,
        upper: bool = True,
        conj: bool = False,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def mirror(
        m: ArrayLike,
        *,
        upper: bool = True,
        conj: bool = False,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[Any]: ...
    def mirror(
        m: Any,
        *,
        upper: bool = True,
        conj: bool = False,
        order: _Order = None,
        out: Any = None,
    ) -> Any: ...

    _PackedOrder: TypeAlias = Literal["C", "F"]

    @overload
    def pack(
        m: ArrayLike,
        k: _K = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def pack(
        m: _ArrayLike[_ScalarT],
        k: _K = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def pack(
        m: ArrayLike,
        k: _K = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        out: None = None,
    ) -> NDArray[Any]: ...
    def pack(
        m: Any,
        k: Any = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        out: Any = None,
    ) -> Any: ...

    _Side: TypeAlias = SupportsIndex | None
    _Mirror: TypeAlias = bool | Literal["conj"]

    @overload
    def unpack(
        v: ArrayLike,
        n: _Side = None,
        m: _Side = None,
        k: _K = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        fill: object = None,
        mirror: _Mirror = False,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def unpack(
        v: _ArrayLike[_ScalarT],
        n: _Side = None,
        m: _Side = None,
        k: _K = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        fill: object = None,
        mirror: _Mirror = False,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def unpack(
        v: ArrayLike,
        n: _Side = None,
        m: _Side = None,
        k: _K = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        fill: object = None,
        mirror: _Mirror = False,
        out: None = None,
    ) -> NDArray[Any]: ...
    def unpack(
        v: Any,
        n: Any = None,
        m: Any = None,
        k: Any = 0,
        *,
        upper: bool = True,
        order: _PackedOrder = "C",
        fill: object = None,
        mirror: _Mirror = False,
        out: Any = None,
    ) -> Any: ...

    # to_banded and from_banded: pack's and unpack's types, without k
    @overload
    def to_banded(
        a: ArrayLike, lower: SupportsIndex, upper: SupportsIndex, *, out: _ArrayT
    ) -> _ArrayT: ...
    @overload
    def to_banded(
        a: _ArrayLike[_ScalarT],
        lower: SupportsIndex,
        upper: SupportsIndex,
        *,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def to_banded(
        a: ArrayLike, lower: SupportsIndex, upper: SupportsIndex, *, out: None = None
    ) -> NDArray[Any]: ...
    def to_banded(a: Any, lower: Any, upper: Any, *, out: Any = None) -> Any: ...
    @overload
    def from_banded(
        ab: ArrayLike,
        lower: SupportsIndex,
        upper: SupportsIndex,
        *,
        n: _Side = None,
        fill: object = None,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def from_banded(
        ab: _ArrayLike[_ScalarT],
        lower: SupportsIndex,
        upper: SupportsIndex,
        *,
        n: _Side = None,
        fill: object = None,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def from_banded(
        ab: ArrayLike,
        lower: SupportsIndex,
        upper: SupportsIndex,
        *,
        n: _Side = None,
        fill: object = None,
        out: None = None,
    ) -> NDArray[Any]: ...
    def from_banded(
        ab: Any,
        lower: Any,
        upper: Any,
        *,
        n: Any = None,
        fill: object = None,
        out: Any = None,
    ) -> Any: ...

    # the masks: numpy's tri's types (the default dtype bool), and with
    # chunks= a dask array
    @overload
    def band_mask(
        n: SupportsIndex,
        m: _Side = None,
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        dtype: type[bool] = ...,
        keep: object = None,
        fill: object = None,
        like: object = None,
        chunks: None = None,
    ) -> NDArray[np.bool_]: ...
    @overload
    def band_mask(
        n: SupportsIndex,
        m: _Side = None,
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        dtype: _DTypeLike[_ScalarT],
        keep: object = None,
        fill: object = None,
        like: object = None,
        chunks: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def band_mask(
        n: SupportsIndex,
        m: _Side = None,
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        dtype: DTypeLike,
        keep: object = None,
        fill: object = None,
        like: object = None,
        chunks: None = None,
    ) -> NDArray[Any]: ...
    @overload
    def band_mask(
        n: SupportsIndex,
        m: _Side = None,
        lo: _Bound = None,
        hi: _Bound = None,
        *,
        dtype: DTypeLike = ...,
        keep: object = None,
        fill: object = None,
        like: object = None,
        chunks: object,
    ) -> Any: ...
    def band_mask(
        n: Any,
        m: Any = None,
        lo: Any = None,
        hi: Any = None,
        *,
        dtype: Any = bool,
        keep: Any = None,
        fill: Any = None,
        like: Any = None,
        chunks: Any = None,
    ) -> Any: ...

    _Align: TypeAlias = Literal["bottom_right", "top_left"]

    @overload
    def attention_mask(
        q_len: SupportsIndex,
        k_len: _Side = None,
        *,
        window: _Side = None,
        align: _Align = "bottom_right",
        dtype: type[bool] = ...,
        like: object = None,
        chunks: None = None,
    ) -> NDArray[np.bool_]: ...
    @overload
    def attention_mask(
        q_len: SupportsIndex,
        k_len: _Side = None,
        *,
        window: _Side = None,
        align: _Align = "bottom_right",
        dtype: _DTypeLike[_ScalarT],
        like: object = None,
        chunks: None = None,
    ) -> NDArray[_ScalarT]: ...
    @overload
    def attention_mask(
        q_len: SupportsIndex,
        k_len: _Side = None,
        *,
        window: _Side = None,
        align: _Align = "bottom_right",
        dtype: DTypeLike,
        like: object = None,
        chunks: None = None,
    ) -> NDArray[Any]: ...
    @overload
    def attention_mask(
        q_len: SupportsIndex,
        k_len: _Side = None,
        *,
        window: _Side = None,
        align: _Align = "bottom_right",
        dtype: DTypeLike = ...,
        like: object = None,
        chunks: object,
    ) -> Any: ...
    def attention_mask(
        q_len: Any,
        k_len: Any = None,
        *,
        window: Any = None,
        align: _Align = "bottom_right",
        dtype: Any = bool,
        like: Any = None,
        chunks: Any = None,
    ) -> Any: ...

    @overload
    def squareform(
        X: _ArrayLike[_ScalarT], force: str = "no", checks: bool = True
    ) -> NDArray[_ScalarT]: ...
    @overload
    def squareform(
        X: ArrayLike, force: str = "no", checks: bool = True
    ) -> NDArray[Any]: ...
    def squareform(X: Any, force: str = "no", checks: bool = True) -> Any: ...

    @overload
    def trilu(
        input: ArrayLike,
        k: _OnnxK = 0,
        upper: _Upper = True,
        *,
        order: _Order = None,
        out: _ArrayT,
    ) -> _ArrayT: ...
    @overload
    def trilu(
        input: _ArrayLike[_ScalarT],
        k: _OnnxK = 0,
        upper: _Upper = True,
        *,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[_ScalarT]: ...

    @overload
    def trilu(
        input: ArrayLike,
        k: _OnnxK = 0,
        upper: _Upper = True,
        *,
        order: _Order = None,
        out: None = None,
    ) -> NDArray[Any]: ...
    def trilu(
        input: Any,
        k: Any = 0,
        upper: Any = True,
        *,
        order: _Order = None,
        out: Any = None,
    ) -> Any: ...


__all__ = [
    "__version__",
    "attention_mask",
    "band",
    "band_mask",
    "from_banded",
    "get_num_threads",
    "mirror",
    "pack",
    "patched",
    "restore_numpy",
    "set_num_threads",
    "squareform",
    "to_banded",
    "tri",
    "tril",
    "tril_indices",
    "tril_indices_from",
    "trilu",
    "triu",
    "triu_indices",
    "triu_indices_from",
    "unpack",
    "use_in_numpy",
]

set_num_threads()
_threadpoolctl.install()  # threadpool_info() lists trilu's pool; never imports it
