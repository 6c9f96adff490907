"""On a free-threaded CPython, importing trilu leaves the GIL off.

The module is compiled with ``freethreading_compatible=True``; without it,
CPython turns the GIL back on at the import (with a RuntimeWarning) for the
rest of the process. Skipped on an interpreter with a GIL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

import pytest
from _cases import TIMEOUT

pytestmark = pytest.mark.skipif(
    not sysconfig.get_config_var("Py_GIL_DISABLED"),
    reason="not a free-threaded CPython",
)


def test_import_leaves_the_gil_off() -> None:
    # PYTHON_GIL unset: the runs that set it to 0 would hide a re-enabled GIL.
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    code = "import sys, trilu, trilu._kernel; print(sys._is_gil_enabled())"
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "False"), proc.stderr
