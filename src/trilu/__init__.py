"""trilu: the ONNX Trilu operator and exact, faster numpy.triu/tril drop-ins.

>>> import numpy as np, trilu
>>> trilu.triu(np.arange(1, 10).reshape(3, 3))
array([[1, 2, 3],
       [0, 5, 6],
       [0, 0, 9]])
"""

from typing import TYPE_CHECKING, Any

from . import _threadpoolctl
from ._api import band, mirror, tril, trilu, triu
from ._banded import from_banded, to_banded
from ._indices import (
    tri,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
)
from ._masks import attention_mask, band_mask
from ._numpy_patch import patched, restore_numpy, use_in_numpy
from ._pack import pack, squareform, unpack
from ._threads import get_num_threads, set_num_threads
from ._version import __version__

if TYPE_CHECKING:
    from . import onnx as onnx
else:

    def __getattr__(name: str) -> Any:
        """``trilu.onnx``, imported on first use (it needs onnx)."""
        if name == "onnx":
            import importlib  # noqa: PLC0415  (always loaded: costs nothing)

            return importlib.import_module(".onnx", __name__)
        raise AttributeError(f"module 'trilu' has no attribute {name!r}")


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
