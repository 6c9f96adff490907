#!/usr/bin/env python3
"""Run trilu's test suite against the installed trilu.

cibuildwheel runs this as its test-command, in a fresh virtual environment
holding only the wheel, from a directory holding only its test-sources
(``tests/``, ``pyproject.toml``, ``README.md`` and this script);
``scripts/check_dist.py`` does the same locally. It

1. installs the ``test`` extra, read from the installed trilu's own metadata,
   from wheels only and with numpy held at the version already installed.
   pytest and hypothesis must install. The others (onnx, ml_dtypes, dask,
   distributed, mypy) may have no wheel on a platform (musllinux, Windows
   ARM64, a new or free-threaded CPython): each one that does not install is
   named in ``TRILU_TEST_OPTIONAL_MISSING`` (comma-separated import names) so
   the tests that need it skip there, and only there. ``--require-all`` makes
   every one of them mandatory;
2. on a free-threaded CPython, checks that ``import trilu`` leaves the GIL
   disabled, then runs the tests with ``-X gil=0`` and ``PYTHON_GIL=0`` (so a
   test dependency that has not declared free-threading support cannot turn it
   back on);
3. runs pytest in the current directory (arguments after ``--`` go to pytest);
4. with ``--also-oldest-numpy``, installs the oldest numpy trilu supports (the
   floor of its ``numpy>=`` requirement, e.g. ``numpy==1.26.*``) and runs the
   tests a second time: the wheel is built against numpy 2 and must work with
   both.

Only the standard library is used: nothing but pip is there to begin with.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

PACKAGE = "trilu"
EXTRA = "test"
REQUIRED = {"pytest", "hypothesis"}  # the suite cannot run without these
MISSING_VAR = "TRILU_TEST_OPTIONAL_MISSING"
_EXTRA_MARKER = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def log(message: str) -> None:
    print(f"run_wheel_tests: {message}", flush=True)


def pip(*args: str) -> bool:
    cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check"]
    return subprocess.run([*cmd, *args], check=False).returncode == 0


def installed_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def requirements() -> tuple[list[str], str]:
    """The ``test`` extra's requirements (markers kept), and the numpy floor."""
    extra: list[str] = []
    floor = ""
    for line in importlib.metadata.requires(PACKAGE) or []:
        req, _, marker = (part.strip() for part in line.partition(";"))
        found = _EXTRA_MARKER.search(marker)
        if found is None:
            numpy = re.fullmatch(r"numpy\s*>=\s*(\d+)\.(\d+)(?:\.\d+)?", req)
            if numpy and not marker:
                floor = f"numpy=={numpy[1]}.{numpy[2]}.*"
            continue
        if found[1] != EXTRA:
            continue
        # Drop the extra clause and keep any other condition for pip to judge.
        rest = _EXTRA_MARKER.sub("", marker)
        rest = re.sub(r"^\s*(and|or)\s+|\s+(and|or)\s*$", "", rest).strip()
        extra.append(f"{req}; {rest}" if rest else req)
    if not extra:
        sys.exit(f"{PACKAGE} declares no '{EXTRA}' extra: is it installed?")
    return extra, floor


def dist_name(req: str) -> str:
    match = _NAME.match(req)
    assert match, req
    return match[0]


def import_name(req: str) -> str:
    return dist_name(req).lower().replace("-", "_")


def install_test_deps(reqs: list[str], *, require_all: bool) -> list[str]:
    """Install what installs, numpy held fixed; return the missing import names."""
    numpy_pin = f"numpy=={installed_version('numpy')}"
    missing = []
    for req in reqs:
        required = require_all or import_name(req) in REQUIRED
        binary = "--prefer-binary" if required else "--only-binary=:all:"
        if pip(binary, req, numpy_pin):
            continue
        if required:
            sys.exit(f"cannot install {req!r}, which the tests need")
        log(f"{req!r} has no installable wheel here: its tests will skip")
        missing.append(import_name(req))
    return missing


def switch_numpy(spec: str, reqs: list[str], missing: list[str]) -> list[str]:
    """Install numpy `spec` and test deps that go with it; return missing names."""
    others = [r for r in reqs if import_name(r) not in missing]
    if pip("--only-binary=:all:", spec, *others):
        return missing
    # Something does not go with this numpy: find out what, one at a time.
    if not pip("--only-binary=:all:", spec):
        sys.exit(f"cannot install {spec}")
    missing = list(missing)
    for req in others:
        if pip("--only-binary=:all:", req, spec):
            continue
        if import_name(req) in REQUIRED:
            sys.exit(f"cannot install {req!r} with {spec}")
        log(f"{req!r} does not install with {spec}: its tests will skip")
        subprocess.run(
            [sys.executable, "-m", "pip", "uninstall", "-y", dist_name(req)],
            check=False,
        )
        missing.append(import_name(req))
    return missing


def free_threaded() -> bool:
    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def check_gil_stays_off() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHON_GIL"}
    code = f"import sys, {PACKAGE}; sys.exit(sys._is_gil_enabled())"
    if subprocess.run([sys.executable, "-c", code], env=env, check=False).returncode:
        sys.exit(f"importing {PACKAGE} re-enabled the GIL on a free-threaded build")
    log(f"free-threaded CPython: importing {PACKAGE} keeps the GIL disabled")


def run_pytest(pytest_args: list[str], missing: list[str]) -> int:
    env = dict(os.environ)
    env[MISSING_VAR] = ",".join(missing)
    if free_threaded():
        env["PYTHON_GIL"] = "0"
    code = (
        f"import numpy, {PACKAGE}; "
        f"print(sys.version.split()[0], numpy.__version__, {PACKAGE}.__version__, "
        f"{PACKAGE}.__file__)"
    )
    info = subprocess.run(
        [sys.executable, "-c", f"import sys; {code}"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    python, numpy, version, where = info[0], info[1], info[2], " ".join(info[3:])
    if Path.cwd() in Path(where).resolve().parents:
        sys.exit(f"{PACKAGE} was imported from {where}, not from the installed wheel")
    log(
        f"python {python}, numpy {numpy}, {PACKAGE} {version} from {where}; "
        f"{MISSING_VAR}={env[MISSING_VAR]!r}"
    )
    # -X gil=0 for pytest's own process, PYTHON_GIL=0 for the interpreters
    # the tests start.
    gil = ["-X", "gil=0"] if free_threaded() else []
    cmd = [sys.executable, *gil, "-m", "pytest", *pytest_args]
    result = subprocess.run(cmd, env=env, check=False)
    log(f"numpy {numpy}: pytest exit code {result.returncode}")
    return result.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--require-all",
        action="store_true",
        help="fail when any test dependency cannot be installed",
    )
    parser.add_argument(
        "--also-oldest-numpy",
        action="store_true",
        help="run the tests again with the oldest supported numpy",
    )
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest")
    args = parser.parse_args()

    reqs, floor = requirements()
    missing = install_test_deps(reqs, require_all=args.require_all)
    if free_threaded():
        check_gil_stays_off()
    failed = run_pytest(args.pytest_args, missing) != 0
    if args.also_oldest_numpy:
        if not floor:
            sys.exit(f"{PACKAGE} declares no numpy>= floor")
        missing = switch_numpy(floor, reqs, missing)
        if args.require_all and missing:
            sys.exit(f"with {floor}, cannot install: {', '.join(missing)}")
        failed |= run_pytest(args.pytest_args, missing) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
