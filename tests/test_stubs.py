"""The type stubs match the built module, and the public API is what it says.

``mypy.stubtest`` imports the compiled ``trilu._kernel`` and checks
``_kernel.pyi`` against it (names, signatures, argument kinds); the inline
annotations of the Python layer, and the overloads of the public functions
(beside each function), are checked against runtime the same way. mypy
itself, on the files in ``typing_data/``, shows what a user's checker infers
(``reveal.pyi``) and refuses (``fail.pyi``).
"""

from __future__ import annotations

import ast
import atexit
import importlib.metadata
import importlib.util
import inspect
import os
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
# controller class is made when threadpoolctl is imported.
ALLOWLIST = """\
trilu._kernel.__test__
trilu._threadpoolctl.TriluController@\\d+
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
    # ``exc``: the ImportError trilu.onnx re-raises; without onnx (dask,
    # torch, jax), trilu.onnx (trilu._dask, trilu._torch, trilu._jax) cannot load
    onnx = "trilu.onnx.exc\n" if _installed("onnx") else "trilu.onnx\n"
    missing = "".join(
        f"trilu._{name}\n" for name in ("dask", "torch", "jax") if not _installed(name)
    )
    allowlist.write_text(ALLOWLIST + onnx + missing)
    # the optional packages trilu's modules import may be absent
    config = cwd / "mypy.ini"
    config.write_text("[mypy]\nignore_missing_imports = True\n")
    return [
        sys.executable,
        "-m",
        "mypy.stubtest",
        "trilu",  # and every module in it
        "--allowlist",
        str(allowlist),
        "--mypy-config-file",
        str(config),
    ]


def _mypy_command(_cwd: Path) -> list[str]:
    # reveal.pyi's lines for an optional package are checked where it is
    # installed, and left out (not analysed, the package not imported) where not
    flags = [
        ("--always-true" if _installed(name) else "--always-false", name.upper())
        for name in ("dask", "torch", "jax", "onnx")
    ]
    return [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-incremental",
        "--hide-error-context",
        "--no-pretty",
        "--no-color-output",
        *(part for flag in flags for part in flag),
        str(REVEAL),
        str(FAIL),
    ]


TYPING_DATA = Path(__file__).resolve().parent / "typing_data"
REVEAL = TYPING_DATA / "reveal.pyi"
FAIL = TYPING_DATA / "fail.pyi"

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
    # the trilu this process imported, first: from that directory a relative
    # PYTHONPATH (``src``) would find none, and mypy another (an installed one)
    path = [
        str(Path(trilu.__file__).resolve().parents[1]),
        os.environ.get("PYTHONPATH"),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))}
    with (cwd / "stdout").open("wb") as out, (cwd / "stderr").open("wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err)
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
    assert public - {"np", "cnp", "os", "functools"} == declared


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


def test_mypy_infers_the_result_types() -> None:
    """mypy finds every assert_type of reveal.pyi true (its dask lines where
    dask is installed), and refuses each line of fail.pyi marked ``# E:``,
    with that message, and nothing else."""
    pytest.importorskip("mypy")
    proc = _result("test_mypy_infers_the_result_types")
    found = re.findall(r"^(.+?):(\d+): error: (.*)$", proc.stdout, re.MULTILINE)
    errors = [(Path(path).name, int(line), message) for path, line, message in found]
    expected = [
        (FAIL.name, number, text.partition("# E: ")[2])
        for number, text in enumerate(FAIL.read_text().splitlines(), 1)
        if "# E: " in text
    ]
    assert [e[:2] for e in errors] == [e[:2] for e in expected], proc.stdout
    for (_, _, message), (_, _, text) in zip(errors, expected, strict=True):
        assert text in message
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_signatures_name_their_types() -> None:
    """help() shows what each public function takes and gives: every
    parameter annotated, and no annotation ``Any``."""
    objects = [getattr(trilu, name) for name in trilu.__all__]
    if _installed("onnx"):
        objects.append(importlib.import_module("trilu.onnx").Trilu)
    for obj in filter(callable, objects):
        signature = inspect.signature(obj)
        for p in signature.parameters.values():
            assert p.annotation is not inspect.Parameter.empty, (obj, p.name)
        assert "'Any'" not in str(signature), (obj, signature)
