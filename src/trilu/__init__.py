"""trilu: the ONNX Trilu operator and exact, faster numpy.triu/tril drop-ins.

>>> import numpy as np, trilu
>>> trilu.triu(np.arange(1, 10).reshape(3, 3))
array([[1, 2, 3],
       [0, 5, 6],
       [0, 0, 9]])
"""

from . import _threadpoolctl
from ._api import get_num_threads, set_num_threads, tril, trilu, triu
from ._indices import (
    tri,
    tril_indices,
    tril_indices_from,
    triu_indices,
    triu_indices_from,
)
from ._numpy_patch import patched, restore_numpy, use_in_numpy
from ._version import __version__

__all__ = [
    "__version__",
    "get_num_threads",
    "patched",
    "restore_numpy",
    "set_num_threads",
    "tri",
    "tril",
    "tril_indices",
    "tril_indices_from",
    "trilu",
    "triu",
    "triu_indices",
    "triu_indices_from",
    "use_in_numpy",
]

set_num_threads()
_threadpoolctl.install()  # threadpool_info() lists trilu's pool; never imports it
