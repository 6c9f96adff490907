"""import trilu, and calling it, loads none of the packages it works with;
and trilu's own modules import each other in one direction.

onnx, dask, threadpoolctl, torch and JAX are reached only when the caller
uses them (``trilu.onnx``, a dask array, ``import threadpoolctl``, a
tensor); ml_dtypes' types are handled without importing it. Other projects'
private modules are imported in ``_private`` alone.
"""

from __future__ import annotations

import ast
import functools
import json
import sys
from pathlib import Path

import pytest
from _cases import run_python

import trilu

COMPANIONS = [
    "onnx",
    "dask",
    "distributed",
    "threadpoolctl",
    "ml_dtypes",
    "torch",
    "jax",
    "jaxlib",
    "array_api_compat",
    "array_api_strict",
]


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
        trilu.pack(np.ones((3, 3)))
        trilu.unpack(np.ones(3))
        trilu.mirror(np.ones((3, 3)))
        trilu.band(np.ones((3, 3)), -1, 1, fill=2.0)
        trilu.tri(3)
        trilu.triu_indices_from(np.ones((3, 3)))
        print(json.dumps({
            "modules": sorted({m.partition(".")[0] for m in sys.modules}),
            "finders": [type(f).__name__ for f in sys.meta_path],
        }))
        """
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("name", COMPANIONS)
def test_import_trilu_does_not_import(name: str) -> None:
    assert name not in _fresh_process()["modules"]


def test_the_threadpoolctl_hook_is_one_finder_in_front() -> None:
    """The only trace of threadpoolctl's support: one finder, first in line."""
    finders = _fresh_process()["finders"]
    assert finders[0] == "_ImportHook"
    assert finders.count("_ImportHook") == 1


# --- trilu's own import graph --------------------------------------------------------

SRC = Path(trilu.__file__).parent


def _imports(path: Path) -> set[str]:
    """The modules a source file imports, wherever the import is (trilu's
    own as ``trilu.<name>``), and those it names to importlib."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # from . import x / from .x import y
                base = "trilu" + (f".{node.module}" if node.module else "")
                found.update(
                    f"{base}.{alias.name}" if not node.module else base
                    for alias in node.names
                )
            else:
                found.add(str(node.module))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", None) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            found.add(str(node.args[0].value))
    return found


GRAPH = {path.stem: _imports(path) for path in SRC.glob("*.py")}


def test_the_graph_is_read() -> None:
    """The premise: the walk finds imports of each kind in the package."""
    assert "trilu._dispatch" in GRAPH["_api"]
    assert "numpy.lib._twodim_base_impl" in GRAPH["_private"]


@pytest.mark.parametrize(
    ("module", "never"),
    [
        ("_pack", "trilu._api"),  # its peer, not its base: both use _dispatch
        ("_dispatch", "trilu._api"),  # it calls the function it is given
        ("_dispatch", "trilu._pack"),
        ("_validate", "trilu._route"),  # the rules import nothing of trilu's
        ("_route", "trilu._dispatch"),  # numpy arrays only
    ],
)
def test_one_direction(module: str, never: str) -> None:
    assert never not in GRAPH[module]


def _private(name: str) -> bool:
    """Another project's private module: a part of its name starts with _
    (Python's own, such as _thread and __future__, are documented)."""
    parts = name.split(".")
    if parts[0] == "trilu" or parts[0] in sys.stdlib_module_names:
        return False
    return any(part.startswith("_") for part in parts)


# The public functions' types, for type checkers only (the typing block):
# numpy's own stubs type an array-like of a scalar type with _ArrayLike.
TYPES_ONLY = {"__init__": {"numpy._typing"}}


@pytest.mark.parametrize("module", sorted(set(GRAPH) - {"_private"}))
def test_private_modules_of_other_projects_only_in_private(module: str) -> None:
    found = {name for name in GRAPH[module] if _private(name)}
    assert found <= TYPES_ONLY.get(module, set())
