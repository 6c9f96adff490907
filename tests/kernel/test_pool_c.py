"""The kernel's C headers, tested in C (tests/c/test_pool.c), built and run here.

The thread pool, its count and a thread's cap (``_threads.h``), the streaming
stores and their fill patterns (``_stream.h``), the vector loops
(``_simd.h``) and the threads' slots of kept masks (``_mask.h``), without
Python: built with the C compiler that builds trilu here (``$CC``, else
Python's own, else ``cc``, ``gcc`` or ``clang``), every warning an error, and
run. ``nox -s windows`` builds the same file for Windows
(mingw-w64, and clang in MSVC mode) and runs it under wine.

Skips where there is no C compiler; on Windows, whose builds are that
session's; and where the headers are not beside the tests: cibuildwheel tests
a wheel from a copy of ``tests/`` alone, and the wheel ships no headers (they
are compiled into it), so there the headers' own test has nothing to build.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from _cases import TIMEOUT

TESTS = Path(__file__).resolve().parents[1]
SOURCE = TESTS / "c" / "test_pool.c"
HEADERS = TESTS.parent / "src" / "trilu"
# As scripts/windows_check.py builds it: optimized, as the kernel is (the
# pool's races show at speed), and warning-free.
FLAGS = ["-O2", "-Wall", "-Wextra", "-Werror", "-pthread"]


def compiler() -> list[str] | None:
    """The command of the first C compiler found, None if there is none."""
    for command in (os.environ.get("CC"), sysconfig.get_config_var("CC")):
        words = shlex.split(command or "")
        if words and shutil.which(words[0]):
            return words
    found = next(filter(None, map(shutil.which, ("cc", "gcc", "clang"))), None)
    return [found] if found else None


@pytest.mark.skipif(
    sys.platform == "win32",
    reason="nox -s windows builds it for Windows (mingw-w64, clang-MSVC)",
)
@pytest.mark.skipif(
    not (HEADERS / "_threads.h").is_file(),
    reason=f"needs the source tree's C headers, not beside the tests: {HEADERS}",
)
def test_pool_c(tmp_path: Path) -> None:
    """It builds without a warning, and every check passes."""
    cc = compiler()
    if cc is None:
        pytest.skip("needs a C compiler: none of $CC, Python's CC, cc, gcc, clang")
    exe = tmp_path / "test_pool"
    build = subprocess.run(
        [*cc, *FLAGS, f"-I{HEADERS}", str(SOURCE), "-o", str(exe)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    proc = subprocess.run(
        [str(exe)], capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "ok", proc.stdout
