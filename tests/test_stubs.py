"""The type stubs match the built module, and the public API is what it says.

``mypy.stubtest`` imports the compiled ``trilu._kernel`` and checks
``_kernel.pyi`` against it (names, signatures, argument kinds); the inline
annotations of the Python layer, and the overloads of the public functions
(``trilu/__init__.py``, for type checkers only), are checked against runtime
the same way. mypy itself, on a snippet, shows what a user's checker infers.
"""

from __future__ import annotations

import ast
import atexit
import importlib.metadata
import importlib.util
import inspect
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from importlib.resources import files
from pathlib import Path

import pytest
from _cases import TIMEOUT

import trilu
from trilu import _kernel

# Cython adds a ``__test__`` dict (for doctest discovery) to every compiled
# module; it is not part of the API and has no place in the stub. The
# controller class is made when threadpoolctl is imported, and ``exc`` is the
# name of the ImportError trilu.onnx re-raises.
ALLOWLIST = """\
trilu._kernel.__test__
trilu._threadpoolctl.TriluController@\\d+
trilu.onnx.exc
"""


# --- the two mypy runs ----------------------------------------------------------
# Each takes 10-30 s of one CPU (mypy reads numpy's, dask's and distributed's
# code too), most of it waiting in a subprocess: tests/conftest.py calls
# start_early once the tests are collected (not in a pytest-xdist worker), so
# the selected runs go on beside the other tests, and each test waits for its
# own (one not started yet is started then). The commands, and what is
# asserted of their output, are the same either way.


def _stubtest_command(cwd: Path) -> list[str]:
    allowlist = cwd / "allowlist.txt"
    missing = (
        "" if importlib.util.find_spec("onnx") else "trilu.onnx\n"
    )  # its module cannot load
    allowlist.write_text(ALLOWLIST + missing)
    return [
        sys.executable,
        "-m",
        "mypy.stubtest",
        "trilu",  # and every module in it
        "--allowlist",
        str(allowlist),
    ]


def _mypy_command(cwd: Path) -> list[str]:
    (cwd / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    return [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-incremental",
        "--hide-error-context",
        "--no-pretty",
        "--no-color-output",
        "snippet.py",
    ]


# test name -> (the module the run needs, the command it runs in a directory)
RUNS: dict[str, tuple[str, Callable[[Path], list[str]]]] = {
    "test_stubtest": ("mypy.stubtest", _stubtest_command),
    "test_mypy_infers_the_result_types": ("mypy", _mypy_command),
}
# test name -> (its process, its directory, when it started)
_started: dict[str, tuple[subprocess.Popen[bytes], Path, float]] = {}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # its package is missing
        return False


def _start(name: str) -> None:
    command = RUNS[name][1]
    # a directory of its own keeps .mypy_cache out of the checkout
    cwd = Path(tempfile.mkdtemp(prefix=f"trilu-{name}-"))
    argv = command(cwd)
    with (cwd / "stdout").open("wb") as out, (cwd / "stderr").open("wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err)
    _started[name] = (proc, cwd, time.monotonic())


def start_early(names: Collection[str]) -> None:
    """Start the runs of the named tests (those selected) in the background."""
    for name in RUNS.keys() & set(names):
        if name not in _started and _installed(RUNS[name][0]):
            _start(name)


def _result(name: str) -> subprocess.CompletedProcess[str]:
    """The finished run of a test, as subprocess.run(..., text=True) returns it."""
    if name not in _started:
        _start(name)
    proc, cwd, began = _started.pop(name)
    try:
        try:
            proc.wait(max(0.0, began + TIMEOUT - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        out = (cwd / "stdout").read_text()
        err = (cwd / "stderr").read_text()
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@atexit.register
def _stop_unfinished() -> None:
    """Runs whose tests never ran (an interrupted session): ended, not left."""
    for proc, cwd, _ in _started.values():
        proc.kill()
        proc.wait()
        shutil.rmtree(cwd, ignore_errors=True)
    _started.clear()


def test_stubtest() -> None:
    """stubtest finds no difference between the stubs and the runtime."""
    pytest.importorskip("mypy.stubtest")
    proc = _result("test_stubtest")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


def test_kernel_names_match_stub() -> None:
    """The kernel's public names are exactly those its stub declares (besides
    the modules it imports)."""
    stub = ast.parse(Path(_kernel.__file__).with_name("_kernel.pyi").read_text())
    declared = {
        node.name if isinstance(node, ast.FunctionDef) else node.target.id
        for node in stub.body
        if isinstance(node, ast.FunctionDef)
        or (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name))
    }
    public = {n for n in vars(_kernel) if not n.startswith("_")}
    assert public - {"np", "cnp", "os"} == declared


def test_public_api() -> None:
    """trilu exports these functions and __version__, with their
    signatures."""
    assert set(trilu.__all__) == {
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
    }
    P = inspect.Parameter
    expected = {
        "triu": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                 ("k", P.POSITIONAL_OR_KEYWORD, 0), ("fill", P.KEYWORD_ONLY, None),
                 ("order", P.KEYWORD_ONLY, None), ("out", P.KEYWORD_ONLY, None)],
        "tril": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                 ("k", P.POSITIONAL_OR_KEYWORD, 0), ("fill", P.KEYWORD_ONLY, None),
                 ("order", P.KEYWORD_ONLY, None), ("out", P.KEYWORD_ONLY, None)],
        "band": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                 ("lo", P.POSITIONAL_OR_KEYWORD, None),
                 ("hi", P.POSITIONAL_OR_KEYWORD, None), ("fill", P.KEYWORD_ONLY, None),
                 ("order", P.KEYWORD_ONLY, None), ("out", P.KEYWORD_ONLY, None)],
        "mirror": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                   ("upper", P.KEYWORD_ONLY, True), ("conj", P.KEYWORD_ONLY, False),
                   ("order", P.KEYWORD_ONLY, None), ("out", P.KEYWORD_ONLY, None)],
        "pack": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                 ("k", P.POSITIONAL_OR_KEYWORD, 0), ("upper", P.KEYWORD_ONLY, True),
                 ("order", P.KEYWORD_ONLY, "C"), ("out", P.KEYWORD_ONLY, None)],
        "unpack": [("v", P.POSITIONAL_OR_KEYWORD, P.empty),
                   ("n", P.POSITIONAL_OR_KEYWORD, None),
                   ("m", P.POSITIONAL_OR_KEYWORD, None),
                   ("k", P.POSITIONAL_OR_KEYWORD, 0), ("upper", P.KEYWORD_ONLY, True),
                   ("order", P.KEYWORD_ONLY, "C"), ("fill", P.KEYWORD_ONLY, None),
                   ("mirror", P.KEYWORD_ONLY, False), ("out", P.KEYWORD_ONLY, None)],
        "squareform": [("X", P.POSITIONAL_OR_KEYWORD, P.empty),
                       ("force", P.POSITIONAL_OR_KEYWORD, "no"),
                       ("checks", P.POSITIONAL_OR_KEYWORD, True)],
        "trilu": [("input", P.POSITIONAL_OR_KEYWORD, P.empty),
                  ("k", P.POSITIONAL_OR_KEYWORD, 0),
                  ("upper", P.POSITIONAL_OR_KEYWORD, True),
                  ("order", P.KEYWORD_ONLY, None),
                  ("out", P.KEYWORD_ONLY, None)],
        "band_mask": [("n", P.POSITIONAL_OR_KEYWORD, P.empty),
                      ("m", P.POSITIONAL_OR_KEYWORD, None),
                      ("lo", P.POSITIONAL_OR_KEYWORD, None),
                      ("hi", P.POSITIONAL_OR_KEYWORD, None),
                      ("dtype", P.KEYWORD_ONLY, bool), ("keep", P.KEYWORD_ONLY, None),
                      ("fill", P.KEYWORD_ONLY, None), ("like", P.KEYWORD_ONLY, None),
                      ("chunks", P.KEYWORD_ONLY, None)],
        "attention_mask": [("q_len", P.POSITIONAL_OR_KEYWORD, P.empty),
                           ("k_len", P.POSITIONAL_OR_KEYWORD, None),
                           ("window", P.KEYWORD_ONLY, None),
                           ("align", P.KEYWORD_ONLY, "bottom_right"),
                           ("dtype", P.KEYWORD_ONLY, bool),
                           ("like", P.KEYWORD_ONLY, None),
                           ("chunks", P.KEYWORD_ONLY, None)],
        "to_banded": [("a", P.POSITIONAL_OR_KEYWORD, P.empty),
                      ("lower", P.POSITIONAL_OR_KEYWORD, P.empty),
                      ("upper", P.POSITIONAL_OR_KEYWORD, P.empty),
                      ("out", P.KEYWORD_ONLY, None)],
        "from_banded": [("ab", P.POSITIONAL_OR_KEYWORD, P.empty),
                        ("lower", P.POSITIONAL_OR_KEYWORD, P.empty),
                        ("upper", P.POSITIONAL_OR_KEYWORD, P.empty),
                        ("n", P.KEYWORD_ONLY, None), ("fill", P.KEYWORD_ONLY, None),
                        ("out", P.KEYWORD_ONLY, None)],
        "set_num_threads": [("n", P.POSITIONAL_OR_KEYWORD, None)],
        "get_num_threads": [],
        "use_in_numpy": [],
        "restore_numpy": [],
        "patched": [],
    }  # fmt: skip
    for name, params in expected.items():
        got = inspect.signature(getattr(trilu, name)).parameters.values()
        assert [(p.name, p.kind, p.default) for p in got] == params, name


def test_version() -> None:
    """__version__ is a PEP 440 string equal to the installed distribution's."""
    assert isinstance(trilu.__version__, str)
    assert re.fullmatch(
        r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?(\+.+)?", trilu.__version__
    )
    assert importlib.metadata.version("trilu") == trilu.__version__


def test_py_typed_shipped() -> None:
    """The package is marked typed and ships the kernel's stub."""
    assert files("trilu").joinpath("py.typed").is_file()
    assert files("trilu").joinpath("_kernel.pyi").is_file()


# What a user's type checker infers: each line is checked by mypy's
# assert_type, and the last must be refused, with exactly this error. Types
# are written out so that the text is the same with numpy 1.26's stubs and 2.x's.
SNIPPET = """\
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import trilu

x: npt.NDArray[np.float32] = np.zeros((3, 3), np.float32)
n: npt.NDArray[np.int64] = np.arange(9, dtype=np.int64).reshape(3, 3)
batch: npt.NDArray[np.int64] = np.ones((2, 3, 3), np.int64)
out: npt.NDArray[np.float64] = np.empty((3, 3))
k0: npt.NDArray[np.int64] = np.array(1)

assert_type(trilu.triu(x), npt.NDArray[np.float32])
assert_type(trilu.tril(n, -1), npt.NDArray[np.int64])
assert_type(trilu.trilu(x, 1, False), npt.NDArray[np.float32])
assert_type(trilu.triu([[1.0, 2.0], [3.0, 4.0]]), npt.NDArray[Any])
assert_type(trilu.tril([[1.0, 2.0, 3.0]] * 3, out=out), npt.NDArray[np.float64])
assert_type(trilu.triu(batch, 1), npt.NDArray[np.int64])
assert_type(trilu.tril(batch, np.int64(-1)), npt.NDArray[np.int64])
assert_type(trilu.triu(x, k=k0), npt.NDArray[np.float32])
assert_type(trilu.trilu(batch, k0, upper=0), npt.NDArray[np.int64])
assert_type(trilu.triu(x, order="F"), npt.NDArray[np.float32])
assert_type(trilu.tril(x, fill=-np.inf), npt.NDArray[np.float32])
assert_type(trilu.band(n, -1, None, fill=7), npt.NDArray[np.int64])
assert_type(trilu.mirror(x, upper=False, out=out), npt.NDArray[np.float64])
assert_type(trilu.pack(batch, 1), npt.NDArray[np.int64])
assert_type(trilu.unpack(trilu.pack(x), 3, k=0, fill=np.nan), npt.NDArray[np.float32])
assert_type(trilu.pack(x, order="F"), npt.NDArray[np.float32])
assert_type(trilu.unpack(trilu.pack(n, 1), k=1, mirror=True), npt.NDArray[np.int64])
assert_type(trilu.unpack(trilu.pack(x), order="F", mirror="conj"), npt.NDArray[np.float32])
assert_type(trilu.squareform(x), npt.NDArray[np.float32])
assert_type(trilu.squareform([1.0, 2.0, 3.0], "tomatrix"), npt.NDArray[Any])
assert_type(trilu.band_mask(3), npt.NDArray[np.bool_])
assert_type(trilu.band_mask(3, 4, -1, 1, dtype=np.float32), npt.NDArray[np.float32])
assert_type(trilu.band_mask(3, dtype="f4", keep=0, fill=-np.inf), npt.NDArray[Any])
assert_type(trilu.attention_mask(3, 5, window=2), npt.NDArray[np.bool_])
assert_type(trilu.attention_mask(4, dtype=np.float16), npt.NDArray[np.float16])
assert_type(trilu.band_mask(3, chunks=2), Any)
assert_type(trilu.to_banded(x, 1, 2), npt.NDArray[np.float32])
assert_type(trilu.from_banded(n, 1, 1, fill=0), npt.NDArray[np.int64])
assert_type(trilu.from_banded(x, 1, 1, n=4, out=out), npt.NDArray[np.float64])
assert_type(trilu.get_num_threads(), int)
assert_type(trilu.set_num_threads(2), None)
assert_type(trilu.onnx.Trilu.op_domain, str)
with trilu.patched():
    trilu.use_in_numpy()
trilu.restore_numpy()
trilu.triu([[1, 2], [3, 4]], k="oops")
"""
REFUSED = SNIPPET.splitlines().index('trilu.triu([[1, 2], [3, 4]], k="oops")') + 1
ERROR = (
    f'snippet.py:{REFUSED}: error: No overload variant of "triu" matches argument '
    'types "list[list[int]]", "str"  [call-overload]'
)


def test_mypy_infers_the_result_types() -> None:
    """NDArray of the input's scalar type, NDArray[Any] for a list, out's own
    type with out=; k an integer, SupportsIndex or 0-D integer array; and a
    string k refused."""
    pytest.importorskip("mypy")
    proc = _result("test_mypy_infers_the_result_types")
    errors = [line for line in proc.stdout.splitlines() if ": error:" in line]
    assert errors == [ERROR], proc.stdout + proc.stderr
    assert proc.returncode == 1
