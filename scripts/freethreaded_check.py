#!/usr/bin/env python3
"""The suite on a free-threaded CPython with the GIL off (nox -s freethreaded).

    python scripts/freethreaded_check.py [--python 3.14|3.13] [pytest args]

1. Fetches the CPython source with ``apt-get source --download-only
   python3.14`` (or python3.13 where the mirror lacks 3.14's; Debian's
   source package carries the upstream tarball as its ``.orig.tar.xz``; apt
   checks it against the signed index) through a private sources list
   (Debian sid's deb-src) and a private apt state, under
   ``~/.cache/trilu-nox/apt``: the system's own sources are never touched.
2. Builds it with ``--disable-gil`` into ``~/.cache/trilu-nox/python3.1Xt``,
   once (about 10 minutes on two cores; reused afterwards).
3. In a fresh virtual environment of that interpreter, installs numpy's
   free-threaded wheel, trilu from this checkout, and the test extra as far
   as it installs (``sdists_allowed``).
4. Runs ``scripts/run_wheel_tests.py`` there, as the wheel CI does: the test
   extra as far as it has free-threaded wheels (the rest are named so their
   tests skip), a check that importing trilu leaves the GIL off, and pytest
   with ``-X gil=0``, from a directory holding only the tests, with the stress
   test (tests/test_stress.py) run for ``TRILU_STRESS_SECONDS`` (default 20).

Needs root the first time, for the compiler and CPython's build dependencies.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from _system import CACHE, ROOT, apt_install, log, run, run_logged, source_copy

BUILD_DEPS = [
    "gcc", "make", "libc6-dev", "pkg-config", "xz-utils", "libssl-dev",
    "zlib1g-dev", "libffi-dev", "libbz2-dev", "liblzma-dev", "libsqlite3-dev",
    "debian-archive-keyring",
]  # fmt: skip
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
# numpy's version and the test extra, from the installed trilu's metadata, as
# run_wheel_tests.py reads them: run by the venv's interpreter.
WHEEL_TEST_INPUTS = """import sys
sys.path.insert(0, sys.argv[1])
import run_wheel_tests as w
print(w.installed_version("numpy"), *w.requirements()[0], sep="\\n")
"""


def apt_options(state: Path) -> list[str]:
    """apt options for a private sources list, index and cache under state."""
    sources = state / "sources.list"
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    sources.write_text(
        f"deb-src [signed-by={KEYRING}] http://deb.debian.org/debian sid main\n"
    )
    return [
        "-o", f"Dir::Etc::SourceList={sources}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={state / 'lists'}",
        "-o", f"Dir::Cache={state / 'cache'}",
        # sid's Release file is valid for a week: a lagging mirror's is expired
        "-o", "Acquire::Check-Valid-Until=false",
    ]  # fmt: skip


def _debian_version(v: str) -> list[int]:
    """Sort key of a Debian version like 3.14.10-1 (enough for these)."""
    return [int(x) for x in re.findall(r"\d+", v)]


def fetch_source(version: str) -> Path | None:
    """The upstream tarball of CPython `version`, from Debian's source package
    (None when the mirror has none of the versions its index lists)."""
    where = CACHE / "src"
    found = sorted(where.glob(f"python{version}_*.orig.tar.xz"))
    if found:
        return found[-1]
    where.mkdir(parents=True, exist_ok=True)
    options = apt_options(CACHE / "apt")
    run(["apt-get", *options, "update", "-q"])
    # The newest version the index lists may not have reached the mirror yet
    # (HTTP 404): try each, newest first.
    shown = run(
        ["apt-cache", *options, "showsrc", f"python{version}"], capture_output=True
    ).stdout
    versions = [
        line.split()[1] for line in shown.splitlines() if line.startswith("Version:")
    ]
    versions.sort(key=_debian_version, reverse=True)
    for candidate in versions:
        proc = run(
            ["apt-get", *options, "source", "--download-only",
             f"python{version}={candidate}"],
            cwd=where, check=False,
        )  # fmt: skip
        if proc.returncode == 0:
            break
    found = sorted(where.glob(f"python{version}_*.orig.tar.xz"))
    return found[-1] if found else None


def build_python(version: str) -> Path | None:
    """A free-threaded CPython `version`, built once: its interpreter, or None
    when its source cannot be had."""
    prefix = CACHE / f"python{version}t"
    python = prefix / "bin" / f"python{version}t"
    probe = "import sys, sysconfig; sys.exit(not sysconfig.get_config_var('Py_GIL_DISABLED'))"
    if python.exists() and run([python, "-c", probe], check=False).returncode == 0:
        log(f"cached: {python}")
        return python
    apt_install(*BUILD_DEPS)
    tarball = fetch_source(version)
    if tarball is None:
        log(f"no python{version} source on the mirror")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        log(f"unpacking {tarball}")
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp, filter="data")
        (src,) = [p for p in Path(tmp).iterdir() if (p / "configure").exists()]
        jobs = str(len(os.sched_getaffinity(0)))
        build_log = CACHE / f"python{version}t-build.log"
        log(f"building CPython {src.name} with --disable-gil (log: {build_log})")
        with build_log.open("w") as out:
            for cmd in (
                ["./configure", "--disable-gil", f"--prefix={prefix}",
                 "--with-ensurepip=install"],
                ["make", f"-j{jobs}"],
                ["make", "altinstall"],
            ):  # fmt: skip
                run(["nice", "-n", "19", *cmd], cwd=src, stdout=out, stderr=out)
    run([python, "-c", probe])
    return python


def sdists_allowed(vpy: Path) -> None:
    """The test extra, as much of it as installs, before run_wheel_tests.py.

    dask and distributed are pure Python, but need pyyaml, msgpack and
    tornado, which may have no free-threaded wheel yet (none for 3.13t here):
    their sdists are allowed, and build in seconds. mypy's newest needs a
    Rust crate (ast-serialize) that cannot be fetched here, so its stub test
    may still skip. onnx comes from a wheel only (CMake and protobuf from
    source take too long), of any version: the newest with a 3.13t wheel is
    1.21, below the floor, where the one test that needs 1.22 xfails and the
    rest run. run_wheel_tests.py then names what is below its floor as
    missing, which only lets those tests skip if the import fails.
    """
    numpy, *extra = run(
        [vpy, "-c", WHEEL_TEST_INPUTS, ROOT / "scripts"], capture_output=True
    ).stdout.splitlines()
    for req in extra:  # one at a time: one that fails leaves the others in
        if req.startswith("onnx"):
            wanted = ["--only-binary=:all:", "onnx"]  # any version, see above
        else:
            wanted = ["--prefer-binary", req]
        proc = run(
            [vpy, "-m", "pip", "install", "-q", *wanted, f"numpy=={numpy}"],
            check=False,
        )
        if proc.returncode != 0:
            log(f"{req}: not installed, even from sdists")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--python", help="3.13 or 3.14 (default: 3.14, else 3.13 where the "
        "mirror lacks python3.14's source)"
    )  # fmt: skip
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest")
    args = parser.parse_args()
    python = None
    for version in [args.python] if args.python else ["3.14", "3.13"]:
        python = build_python(version)
        if python is not None:
            break
    if python is None:
        sys.exit("no CPython source could be fetched")
    args.python = version
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        run([python, "-m", "venv", venv])
        vpy = venv / "bin" / "python"
        run([vpy, "-m", "pip", "install", "-q", "--upgrade", "pip"])
        # Wheels only (numpy's free-threaded one), and no build isolation: an
        # isolated build may pick a newer numpy that has only an sdist for
        # this interpreter, and compile it.
        run([vpy, "-m", "pip", "install", "-q", "--only-binary=:all:",
             "numpy", "setuptools>=77", "Cython>=3.1"])  # fmt: skip
        run([vpy, "-m", "pip", "install", "-q", "--no-build-isolation",
             source_copy(Path(tmp) / "trilu")])  # fmt: skip
        sdists_allowed(vpy)
        # Like cibuildwheel's test-sources: only these, so trilu is imported
        # from the environment, never from the checkout.
        tests = Path(tmp) / "tests-only"
        tests.mkdir()
        shutil.copytree(ROOT / "tests", tests / "tests")
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, tests)
        env = dict(os.environ)
        env.setdefault("TRILU_STRESS_SECONDS", "20")
        status, summary, seconds = run_logged(
            [vpy, ROOT / "scripts" / "run_wheel_tests.py", "--", *args.pytest_args],
            CACHE / f"freethreaded-{args.python}t.log",
            cwd=tests,
            env=env,
        )
    version = subprocess.run(
        [python, "-VV"], capture_output=True, text=True, check=True
    ).stdout.strip()
    print(f"\n{version}: {summary} ({seconds:.0f} s)")
    sys.exit(status)


if __name__ == "__main__":
    main()
