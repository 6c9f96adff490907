"""import trilu, and calling it, loads none of the packages it works with.

onnx, dask and threadpoolctl are reached only when the caller uses them
(``trilu.onnx``, a dask array, ``import threadpoolctl``); ml_dtypes' types
are handled without importing it.
"""

from __future__ import annotations

import functools
import json

import pytest
from _cases import run_python

COMPANIONS = ["onnx", "dask", "distributed", "threadpoolctl", "ml_dtypes"]


@functools.cache
def _fresh_process() -> dict[str, list[str]]:
    """The top-level modules and import finders of a fresh process that
    imported trilu and called each of its functions."""
    proc = run_python(
        """
        import json, sys
        import numpy as np
        import trilu
        trilu.triu(np.ones((3, 3)))
        trilu.tril(np.ones((3, 3)), out=np.empty((3, 3)))
        trilu.trilu([[1, 2], [3, 4]])
        print(json.dumps({
            "modules": sorted({m.partition(".")[0] for m in sys.modules}),
            "trilu": sorted(m for m in sys.modules if m.startswith("trilu.")),
            "finders": [type(f).__name__ for f in sys.meta_path],
        }))
        """
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", COMPANIONS)
def test_import_trilu_does_not_import(name: str) -> None:
    assert name not in _fresh_process()["modules"]


def test_the_types_are_for_type_checkers_only() -> None:
    """The public functions' types (``trilu._typing``) are never imported:
    their annotations are strings, read only by type checkers and help()."""
    assert "trilu._typing" not in _fresh_process()["trilu"]


def test_the_threadpoolctl_hook_is_one_finder_in_front() -> None:
    """The only trace of threadpoolctl's support: one finder, first in line."""
    finders = _fresh_process()["finders"]
    assert finders[0] == "_ImportHook"
    assert finders.count("_ImportHook") == 1
