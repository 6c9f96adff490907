"""trilu: the ONNX Trilu operator and exact, faster numpy.triu/tril drop-ins.

>>> import numpy as np, trilu
>>> trilu.triu(np.arange(1, 10).reshape(3, 3))
array([[1, 2, 3],
       [0, 5, 6],
       [0, 0, 9]])
"""

from ._api import get_num_threads, set_num_threads, tril, trilu, triu
from ._version import __version__

__all__ = ["__version__", "get_num_threads", "set_num_threads", "tril", "trilu", "triu"]

set_num_threads()
