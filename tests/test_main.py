"""``python -m trilu``: a command line through argparse, in fresh interpreters.

The default runs the ONNX self-check, then the speed table; ``--check`` and
``--bench`` run one of them, ``--threads N`` sets trilu's count. Unknown flags
exit 2 with argparse's usage, and a closed pipe ends quietly, as
``python -m json.tool`` does.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from _cases import TIMEOUT, run_python

import trilu
from trilu.__main__ import ONNX_TYPES, _dtype

USAGE = "usage: python -m trilu [-h] [--version] [--check] [--bench] [--threads N]"
VERDICT = "self-check against the ONNX Trilu-14 spec: PASS"
TABLE = "speed (median of repeated calls; ratio > 1 means trilu is faster):"


def _trilu(*args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    return run_python(
        f"import runpy, sys; sys.argv[1:] = {list(args)!r}; "
        "runpy.run_module('trilu', run_name='__main__')",
        **env,
    )


def test_help() -> None:
    proc = _trilu("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(USAGE + "\n")
    for flag in ("--version", "--check", "--bench", "--threads N"):
        assert flag in proc.stdout
    assert proc.stderr == ""


def test_version() -> None:
    proc = _trilu("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"trilu {trilu.__version__}\n"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["check"], "unrecognized arguments: check"),
        (["--threads"], "argument --threads: expected one argument"),
        (["--threads", "0"], "argument --threads: must be a positive integer, got '0'"),
        (["--threads", "two"], "must be a positive integer, got 'two'"),
    ],
)
def test_bad_arguments_exit_2_with_usage(args: list[str], error: str) -> None:
    """Nothing runs: argparse's usage and the error, on stderr, exit 2."""
    proc = _trilu(*args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(USAGE + "\n")
    assert error in proc.stderr.splitlines()[-1]


def test_default_checks_then_times() -> None:
    """The default, as the README runs it: the check, then the table."""
    proc = _trilu()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"trilu {trilu.__version__}, numpy ")
    verdict = next(i for i, line in enumerate(lines) if line.startswith(VERDICT))
    assert lines.index(TABLE) > verdict
    assert "numpy/trilu" in lines[lines.index(TABLE) + 1]


@functools.cache
def _check_on_3_threads() -> subprocess.CompletedProcess[str]:
    """``--check --threads 3`` over TRILU_NUM_THREADS=1: one run (the check
    takes 1-2 s) for two tests, --check alone and --threads. The check on the
    default count is test_default_checks_then_times's."""
    return _trilu("--check", "--threads", "3", TRILU_NUM_THREADS="1")


def test_check_alone() -> None:
    proc = _check_on_3_threads()
    assert proc.returncode == 0, proc.stderr
    assert any(line.startswith(VERDICT) for line in proc.stdout.splitlines())
    assert TABLE not in proc.stdout


def test_check_fails_with_exit_1() -> None:
    """A wrong answer is a FAIL line, and exit status 1; the verdict counts
    each case the check ran once, over every ONNX type that loads here (the
    others, bfloat16 without ml_dtypes, said to be skipped)."""
    proc = run_python(
        """
        import json, sys, numpy as np, trilu
        from trilu.__main__ import main
        right = trilu.trilu
        calls, wrong_calls, dtypes = 0, 0, set()
        def wrong(x, k, upper):  # one element off for int8, upper, k=0
            global calls, wrong_calls
            calls += 1
            dtypes.add(str(x.dtype))
            r = right(x, k, upper)
            if x.dtype == np.int8 and upper and k == 0:
                wrong_calls += 1
                r = r.copy()
                r.flat[0] += 1
            return r
        trilu.trilu = wrong
        status = main(["--check"])
        print(json.dumps([calls, wrong_calls, sorted(dtypes)]))
        sys.exit(status)
        """
    )
    assert proc.returncode == 1, proc.stderr
    *lines, ran = proc.stdout.splitlines()
    calls, wrong, dtypes = json.loads(ran)
    assert wrong > 0
    assert "  FAIL int8 shape=(4, 5) k=0 upper=True" in lines
    assert sum(line.startswith("  FAIL ") for line in lines) == wrong
    assert (
        VERDICT.replace("PASS", f"FAIL ({calls - wrong} passed, {wrong} failed)")
        in lines
    )
    types = {name: _loaded(name) for name in ONNX_TYPES}
    assert dtypes == sorted(str(np.dtype(t)) for t in types.values() if t is not None)
    for name in (name for name, t in types.items() if t is None):
        assert f"  {name}: skipped (pip install ml_dtypes to check it)" in lines


def _loaded(name: str) -> Any:
    """The self-check's type of that name, None if its package is missing."""
    try:
        return _dtype(name)
    except ImportError:
        return None


def test_bench_alone() -> None:
    proc = _trilu("--bench")
    assert proc.returncode == 0, proc.stderr
    assert "self-check" not in proc.stdout
    assert TABLE in proc.stdout
    assert "2048x2048 float64" in proc.stdout


def test_threads() -> None:
    """--threads N sets the count the run uses, as its first line says."""
    proc = _check_on_3_threads()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].endswith(", 3 thread(s)")


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["--check"], {errno.EPIPE}),
        # argparse itself drops an OSError of its message: as for json.tool
        (["--help"], {0, errno.EPIPE}),
        (["--version"], {0, errno.EPIPE}),
    ],
)
def test_closed_pipe_ends_quietly(args: list[str], status: set[int]) -> None:
    """Output into a pipe already closed (``| head`` gone): no traceback, no
    "Exception ignored" at exit; the status is EPIPE's, as json.tool's."""
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "trilu", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
    finally:
        os.close(write)
    assert proc.stderr == ""
    assert proc.returncode in status


def test_head_of_a_pipe() -> None:
    """``python -m trilu --check | head -1``, through a shell where there is one."""
    if sys.platform == "win32":
        pytest.skip("needs a POSIX shell and head")
    proc = subprocess.run(
        f"'{sys.executable}' -m trilu --check | head -1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"trilu {trilu.__version__}, numpy ")
    assert proc.stdout.count("\n") == 1
    assert proc.stderr == ""
