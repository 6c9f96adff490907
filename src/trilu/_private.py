"""Other projects' private names that trilu uses, imported here and nowhere
else, each with its public alternative or the reason there is none.

A private name can move or go in any release of its project: here each
has one place to mend, with the fallback beside it. dask's are imported
when a dask array first arrives (``_dask``), never by ``import trilu``.
(``numpy._typing``, whose names the public functions' types use as numpy's
own stubs do, is imported for type checkers only: in ``_typing`` and
``TYPE_CHECKING`` blocks.)
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

# numpy's own triu, tril, tri and index family, which trilu.use_in_numpy()
# never replaces: what trilu hands to numpy never comes back to trilu. The
# public names (numpy.triu, ...) are the attributes the patch replaces.
try:
    numpy_twodim: ModuleType = importlib.import_module("numpy.lib._twodim_base_impl")
except ImportError:  # numpy 1.26
    numpy_twodim = importlib.import_module("numpy.lib.twodim_base")


def numpy_hugepages() -> bool:
    """numpy's setting: whether its allocator asks for huge pages (Linux).

    No public alternative: numpy documents only the variable that sets it
    at import (``NUMPY_MADVISE_HUGEPAGE``), not a way to read it after."""
    try:
        multiarray = importlib.import_module("numpy._core.multiarray")
    except ImportError:  # numpy 1.26
        multiarray = importlib.import_module("numpy.core.multiarray")
    get = getattr(multiarray, "_get_madvise_hugepage", None)
    return True if get is None else bool(get())


def dask_tasks() -> ModuleType:
    """dask's task classes (``Task``, ``Alias``, ``TaskRef``).

    The public alternative is the tuple spec (``(func, *args)``, a key for
    an alias), which dask converts into these when it builds the graph; made
    directly, an argument (a shape, a fill) is never scanned for keys."""
    return importlib.import_module("dask._task_spec")


def dask_from_graph() -> Any:
    """The collection of a graph of dask's array expressions (opt-in,
    "array.query-planning"); no public constructor takes a graph there."""
    return importlib.import_module("dask.array._array_expr._collection").from_graph
