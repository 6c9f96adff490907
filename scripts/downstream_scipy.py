"""Run a slice of scipy's own tests with ``trilu.use_in_numpy()`` in effect.

    python scripts/downstream_scipy.py [more pytest arguments]

scipy.linalg's ``qr``, ``rq`` and ``hessenberg`` and the triangular checks of
``logm``/``fractional_matrix_power`` call ``np.triu``/``np.tril``
through the numpy namespace, so with the patch on they run trilu's functions.
The patch is turned on before pytest imports any test module, its presence is
checked around every test, and the calls that reached trilu are counted (a
profile hook on trilu's two functions). ``nox -s downstream`` runs this; it is
not part of the default test suite (scipy is not a test dependency).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import trilu

SLICE = [
    "--pyargs",
    "scipy.linalg.tests.test_decomp",
    "scipy.linalg.tests.test_matfuncs",
    "-k",
    "QR or RQ or Hessenberg or Logm or FractionalMatrixPower",
]


class PatchPlugin:
    """Patch on for the whole session; every test must see it on."""

    def __init__(self) -> None:
        self.calls = 0
        self.codes = {trilu.triu.__code__, trilu.tril.__code__}

    def _profile(self, frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code in self.codes:
            self.calls += 1

    def pytest_configure(self, config: Any) -> None:
        del config
        trilu.use_in_numpy()
        sys.setprofile(self._profile)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: Any) -> Any:
        assert np.triu is trilu.triu, f"{item.nodeid}: the patch is off"
        assert np.tril is trilu.tril, f"{item.nodeid}: the patch is off"
        return (yield)

    def pytest_unconfigure(self, config: Any) -> None:
        del config
        sys.setprofile(None)
        trilu.restore_numpy()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(
            f"trilu.use_in_numpy(): trilu's triu/tril ran {self.calls} times"
        )


def main() -> int:
    plugin = PatchPlugin()
    args = [*SLICE, *sys.argv[1:]]
    with tempfile.TemporaryDirectory() as tmp:  # away from trilu's pytest config
        ini = Path(tmp) / "pytest.ini"
        ini.write_text("[pytest]\n", encoding="utf-8")
        options = ["-p", "no:cacheprovider", "--rootdir", tmp, "-c", str(ini)]
        code = pytest.main([*args, *options], plugins=[plugin])
    if code == 0 and plugin.calls == 0:
        print("the patch was never reached: no test called np.triu/np.tril")
        return 1
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
