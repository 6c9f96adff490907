#!/usr/bin/env python3
"""The Windows thread pool, tested from Linux (nox -s windows).

    python scripts/windows_check.py [calls]

Builds tests/c/test_pool.c, the C test of _threads.h, _stream.h, _simd.h
and _mask.h, for Windows two ways, and runs each under wine64 with `calls` back-to-back
calls (default 100000). Its native build (pthreads, this machine's compiler)
is the test suite's: tests/kernel/test_pool_c.py.

- ``mingw``: cross-compiled with mingw-w64 (Windows threads, SRW locks,
  condition variables), run under wine64;
- ``msvc``: Clang in MSVC mode (``--target=x86_64-pc-windows-msvc``), so the
  ``_MSC_VER`` branches (Interlocked* atomics, the acquire load,
  ``__declspec(align)``) are compiled and run, under wine64. Microsoft's
  headers and C runtime cannot be had on Linux from Debian or PyPI, so it is
  compiled against mingw-w64's headers (``-fgnuc-version`` lets them parse) and
  linked by lld-link against msvcrt.dll alone, with an entry point of its own
  in place of the MSVC startup code. The same is compiled for ARM64
  (``--target=aarch64-pc-windows-msvc``), not run.

Every build is warning-free (``-Wall -Wextra -Werror``). Needs root the first
time, to install gcc-mingw-w64-x86-64, wine64, clang and lld.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _system import CACHE, ROOT, apt_install, finish, log, run

SOURCE = ROOT / "tests" / "c" / "test_pool.c"
WARN = ["-O2", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'src' / 'trilu'}"]
MINGW = Path("/usr/x86_64-w64-mingw32/lib")
# Clang in MSVC mode against mingw-w64's headers (-fgnuc-version lets them
# parse), with no C runtime startup code: see the docstring.
CLANG_MSVC = [
    "clang", "-fgnuc-version=4.2.1", "-D__USE_MINGW_ANSI_STDIO=0",
    "-DTRILU_TEST_NO_CRT", *WARN, "-isystem", "/usr/share/mingw-w64/include",
]  # fmt: skip


def wine() -> str:
    for candidate in ("/usr/lib/wine/wine64", "wine64", "wine"):
        found = shutil.which(candidate)
        if found:
            return found
    sys.exit("wine64 not found")


def builds(out: Path) -> dict[str, list[str]]:
    """Build each program; returns how to run each one."""
    mingw, msvc, obj = out / "mingw.exe", out / "msvc.exe", out / "msvc.obj"
    run(["x86_64-w64-mingw32-gcc", *WARN, SOURCE, "-o", mingw])
    # The ARM64 branches (__dmb) too, compiled only: nothing here runs them.
    for arch, dest in (("x86_64", obj), ("aarch64", out / "msvc-arm64.obj")):
        run([*CLANG_MSVC, f"--target={arch}-pc-windows-msvc", "-c", SOURCE, "-o", dest])
    run(
        ["lld-link", "/nologo", f"/out:{msvc}", "/entry:trilu_test_entry",
         "/subsystem:console", "/nodefaultlib", obj,
         MINGW / "libkernel32.a", MINGW / "libmsvcrt.a"]
    )  # fmt: skip
    w = wine()
    return {
        "mingw": [w, str(mingw)],
        "msvc": [w, str(msvc)],
    }


def main() -> None:
    calls = sys.argv[1] if len(sys.argv) > 1 else "100000"
    apt_install("clang", "lld", "gcc-mingw-w64-x86-64", "wine64")
    prefix = CACHE / "wineprefix"
    env = dict(os.environ, WINEPREFIX=str(prefix), WINEDEBUG="-all")
    if not prefix.exists():
        log(f"creating the wine prefix {prefix} (once)")
        prefix.parent.mkdir(parents=True, exist_ok=True)
        run([wine(), "wineboot", "--init"], env=env)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in builds(Path(tmp)).items():
            start = time.monotonic()
            proc = run([*cmd, calls], env=env, check=False, capture_output=True)
            print(proc.stdout + proc.stderr, flush=True)
            ok = proc.returncode == 0 and proc.stdout.rstrip().endswith("ok")
            results.append((name, ok, f"{time.monotonic() - start:.1f} s"))
    finish(results)


if __name__ == "__main__":
    main()
