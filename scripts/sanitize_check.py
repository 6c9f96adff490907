#!/usr/bin/env python3
"""Build trilu with sanitizers and run the tests under them (nox -s sanitize, tsan).

    python scripts/sanitize_check.py address [pytest args]
    python scripts/sanitize_check.py thread [pytest args]

``address``: AddressSanitizer and UndefinedBehaviorSanitizer (GCC's), the
whole suite run twice, with recycling on and with ``TRILU_RECYCLE=0``.
``thread``: ThreadSanitizer, the thread, memory and stress tests.

The interpreter and numpy are not instrumented: the runtime is preloaded
(``LD_PRELOAD``) into the running Python, and only trilu is compiled with
``-fsanitize=...``, passed last on its compile and link lines
(``TRILU_EXTRA_CFLAGS``, read by setup.py). Reports go to log files under
``~/.cache/trilu-nox/sanitize-logs``; any report with a trilu frame in it
(``trilu_*``, ``__pyx_*``, ``_kernel.c``, the ``src/trilu/*.h`` headers) fails
the run, as does a failing test. Reports without one (in CPython or numpy)
are counted and shown, not failed on. Run from the nox session's virtual
environment, which holds setuptools, Cython, numpy and the test extra.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _system import CACHE, ROOT, apt_install, finish, log, run, run_logged, source_copy

FLAGS = {
    "address": "-fsanitize=address,undefined -fno-omit-frame-pointer -g",
    "thread": "-fsanitize=thread -g",
}
RUNTIME = {"address": "libasan.so", "thread": "libtsan.so"}
THREAD_TESTS = ["tests/test_threads.py", "tests/test_memory.py", "tests/test_stress.py"]
TRILU_FRAME = re.compile(
    r"\btrilu_\w+|__pyx_\w+|_kernel\.c\b|_kernel\.pyx|_kernel\.cpython"
    r"|/_(?:threads|recycle|stream|mask)\.h"
)
REPORT_START = re.compile(
    r"^(==\d+==ERROR: \w+Sanitizer|WARNING: ThreadSanitizer|\S+: runtime error:"
    r"|SUMMARY: UndefinedBehaviorSanitizer)",
    re.MULTILINE,
)


def build(mode: str) -> None:
    """Install trilu, built with the sanitizer, into this environment."""
    with tempfile.TemporaryDirectory() as tmp:
        src = source_copy(Path(tmp) / "trilu")
        env = dict(
            os.environ,
            CC="gcc",
            TRILU_EXTRA_CFLAGS=FLAGS[mode],
            TRILU_EXTRA_LDFLAGS=FLAGS[mode],
        )
        run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
             "--no-build-isolation", "--force-reinstall", "--no-cache-dir", src],
            env=env,
        )  # fmt: skip
    so = run(
        [sys.executable, "-c", "import trilu._kernel as k; print(k.__file__)"],
        stdout=subprocess.PIPE,
        env=dict(os.environ, LD_PRELOAD=runtime(mode), ASAN_OPTIONS="detect_leaks=0"),
        cwd=tempfile.gettempdir(),
    ).stdout.strip()
    wanted = RUNTIME[mode].split(".")[0]
    if wanted not in run(["ldd", so], capture_output=True).stdout:
        sys.exit(f"{so} is not linked with {wanted}")
    log(f"built with {FLAGS[mode]}: {so}")


def runtime(mode: str) -> str:
    """LD_PRELOAD: the sanitizer's runtime, then libstdc++. The runtime's
    __cxa_throw interceptor looks up the real one when it starts; python does
    not link libstdc++, so without it there, the first C++ exception (from
    matplotlib's ft2font, say) aborts on a CHECK failure."""
    return ":".join(
        run(["gcc", f"-print-file-name={lib}"], capture_output=True).stdout.strip()
        for lib in (RUNTIME[mode], "libstdc++.so.6")
    )


def reports(logdir: Path) -> tuple[list[str], list[str]]:
    """The sanitizer reports in logdir: (with a trilu frame, without one)."""
    ours, theirs = [], []
    for path in sorted(logdir.iterdir()):
        text = path.read_text(errors="replace")
        starts = [m.start() for m in REPORT_START.finditer(text)] + [len(text)]
        for a, b in itertools.pairwise(starts):
            report = text[a:b].strip()
            (ours if TRILU_FRAME.search(report) else theirs).append(
                f"{path.name}: {report}"
            )
    return ours, theirs


def suite(mode: str, name: str, pytest_args: list[str], extra_env: dict[str, str]):
    """One pytest run under the sanitizer: (name, passed, summary)."""
    logdir = CACHE / "sanitize-logs" / name
    shutil.rmtree(logdir, ignore_errors=True)
    logdir.mkdir(parents=True)
    env = dict(os.environ, LD_PRELOAD=runtime(mode), **extra_env)
    if mode == "address":
        # CPython and numpy leak on purpose at exit: no leak reports. Tests of
        # numpy's MemoryError ask malloc for more than there is: NULL, as
        # glibc answers, not an abort.
        env["ASAN_OPTIONS"] = (
            f"detect_leaks=0:allocator_may_return_null=1:log_path={logdir}/asan"
        )
        env["UBSAN_OPTIONS"] = f"print_stacktrace=1:log_path={logdir}/ubsan"
    else:
        # die_after_fork=0: test_threaded_call_after_fork starts threads in a
        # child forked from a threaded parent, which TSan refuses by default.
        env["TSAN_OPTIONS"] = (
            f"die_after_fork=0:halt_on_error=0:report_signal_unsafe=0"
            f":log_path={logdir}/tsan"
        )
    status, summary = run_logged(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *pytest_args],
        CACHE / "sanitize-logs" / f"{name}.log",
        cwd=ROOT,
        env=env,
    )
    ours, theirs = reports(logdir)
    for report in ours:
        print(f"\n--- report with a trilu frame ---\n{report}\n")
    for report in theirs:
        print(f"--- report outside trilu (not failed on) ---\n{report[:2000]}\n")
    counts = (
        f"sanitizer reports with a trilu frame: {len(ours)}, without: {len(theirs)}"
    )
    return name, status == 0 and not ours, f"{summary}; {counts}"


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in FLAGS:
        sys.exit(__doc__)
    mode, pytest_args = sys.argv[1], sys.argv[2:]
    apt_install("gcc", "libc6-dev")
    build(mode)
    if mode == "address":
        runs = [
            ("asan-recycle-on", pytest_args, {}),
            ("asan-recycle-off", pytest_args, {"TRILU_RECYCLE": "0"}),
        ]
    else:
        runs = [("tsan", pytest_args or THREAD_TESTS, {"TRILU_STRESS_SECONDS": "5"})]
    finish([suite(mode, *r) for r in runs])


if __name__ == "__main__":
    main()
