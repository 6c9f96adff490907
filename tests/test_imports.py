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


# --- trilu's own import graph --------------------------------------------------------

SRC = Path(trilu.__file__).parent


def _type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` block: imports for type checkers only."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path) -> set[str]:
    """The modules a source file imports at run time, wherever the import is
    (trilu's own as ``trilu.<name>``), and those it names to importlib;
    ``if TYPE_CHECKING:`` blocks left out."""
    found = set()
    nodes: list[ast.AST] = [ast.parse(path.read_text())]
    while nodes:
        node = nodes.pop()
        if _type_checking(node):
            nodes.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        nodes.extend(ast.iter_child_nodes(node))
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


# _private imports them; _typing is for type checkers only, never loaded at
# run time (numpy's own stubs type an array-like of a scalar type with
# numpy._typing's names), as the TYPE_CHECKING blocks are
RUN_TIME = sorted(set(GRAPH) - {"_private", "_typing"})


def test_type_checking_blocks_are_left_out() -> None:
    """The premise: numpy._typing is imported for the types, not at run time."""
    assert "numpy._typing" in _imports_all(SRC / "_api.py")
    assert "numpy._typing" not in GRAPH["_api"]


def _imports_all(path: Path) -> set[str]:
    return {
        str(node.module)
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and not node.level
    }


@pytest.mark.parametrize("module", RUN_TIME)
def test_private_modules_of_other_projects_only_in_private(module: str) -> None:
    assert not {name for name in GRAPH[module] if _private(name)}
