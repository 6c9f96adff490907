"""The type stubs match the built module, and the public API is what it says.

``mypy.stubtest`` imports the compiled ``trilu._kernel`` and checks
``_kernel.pyi`` against it (names, signatures, argument kinds); the inline
annotations of the Python layer are checked against runtime the same way.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import subprocess
import sys
from importlib.resources import files

from _cases import need

import trilu
from trilu import _kernel

# Cython adds a ``__test__`` dict (for doctest discovery) to every compiled
# module; it is not part of the API and has no place in the stub.
ALLOWLIST = """\
trilu._kernel.__test__
"""


def test_stubtest(tmp_path) -> None:
    """stubtest finds no difference between the stubs and the runtime."""
    need("mypy.stubtest")
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text(ALLOWLIST)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "trilu._kernel",
            "trilu._api",
            "trilu._version",
            "--allowlist",
            str(allowlist),
        ],
        cwd=tmp_path,  # keeps .mypy_cache out of the checkout
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


def test_kernel_names_match_stub() -> None:
    """The kernel's public names are exactly those the stub declares."""
    public = {n for n in vars(_kernel) if not n.startswith("_")}
    names = {
        "band",
        "check_out",
        "empty",
        "explain",
        "explain_band",
        "fill",
        "fill_plain",
        "set_num_threads",
        "get_num_threads",
    }
    assert public >= names
    assert public - names <= {"np", "cnp", "os"}


def test_public_api() -> None:
    """trilu exports the eight functions and __version__, with their signatures."""
    assert set(trilu.__all__) == {
        "__version__",
        "get_num_threads",
        "patched",
        "restore_numpy",
        "set_num_threads",
        "tril",
        "trilu",
        "triu",
        "use_in_numpy",
    }
    P = inspect.Parameter
    expected = {
        "triu": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                 ("k", P.POSITIONAL_OR_KEYWORD, 0),
                 ("order", P.KEYWORD_ONLY, None), ("out", P.KEYWORD_ONLY, None)],
        "tril": [("m", P.POSITIONAL_OR_KEYWORD, P.empty),
                 ("k", P.POSITIONAL_OR_KEYWORD, 0),
                 ("order", P.KEYWORD_ONLY, None), ("out", P.KEYWORD_ONLY, None)],
        "trilu": [("input", P.POSITIONAL_OR_KEYWORD, P.empty),
                  ("k", P.POSITIONAL_OR_KEYWORD, 0),
                  ("upper", P.POSITIONAL_OR_KEYWORD, True),
                  ("order", P.KEYWORD_ONLY, None),
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
