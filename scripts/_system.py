"""What the scripts for the other targets share (scripts/*_check.py).

Commands run echoed, or logged with pytest's summary line picked out; Debian
packages installed on demand (as root); the cache under ``~/.cache/trilu-nox``;
the requirements and cibuildwheel's test-sources, read from pyproject.toml; a
copy of the checkout to build from (so a sanitizer or cross build never leaves
objects in ``build/`` for the next normal build); the closing report. Standard
library only.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

import tomllib

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("TRILU_NOX_CACHE", Path.home() / ".cache" / "trilu-nox"))
MIRROR = "http://deb.debian.org/debian"
# pytest's last line: "==== 4047 passed, 3 skipped in 900.1s ====" (or -q's bare one)
SUMMARY = re.compile(
    r"^=*\s*(\d+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)"
    r".* in [\d.]+s.*?)\s*=*$"
)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(cmd: list[Any], **kw: Any) -> subprocess.CompletedProcess[str]:
    """Run a command, echoed, failing on a non-zero exit unless check=False."""
    check = kw.pop("check", True)
    log("+ " + shlex.join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], text=True, check=check, **kw)


def run_logged(cmd: list[Any], logfile: Path, **kw: Any) -> tuple[int, str]:
    """Run cmd with its output both shown and written to logfile; returns the
    exit status and pytest's summary line (or "no summary line") with the time."""
    logfile.parent.mkdir(parents=True, exist_ok=True)
    log("+ " + shlex.join(str(c) for c in cmd) + f"  (log: {logfile})")
    start = time.monotonic()
    with logfile.open("w") as out:
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            **kw,
        )
        assert proc.stdout is not None
        for line in proc.stdout:  # flushed: a long run shows its progress
            sys.stdout.write(line)
            sys.stdout.flush()
            out.write(line)
            out.flush()
        status = proc.wait()
    found = [m[1] for line in logfile.read_text(errors="replace").splitlines()
             if (m := SUMMARY.match(line.strip()))]  # fmt: skip
    summary = found[-1] if found else "no summary line"
    return status, f"{summary} ({time.monotonic() - start:.0f} s)"


def apt_install(*packages: str) -> None:
    """Install the Debian packages not yet installed (needs root)."""
    missing = [
        name
        for name in packages
        if "install ok installed"
        not in subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    ]
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit(f"needs root to install them: apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-q"], env=env)
    run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], env=env
    )


@functools.cache
def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def requirements(*names: str) -> list[str]:
    """These packages' requirements, as the build system or the test extra has
    them (``Cython>=3.1``, ``onnx>=1.22``)."""
    reqs = [
        *pyproject()["build-system"]["requires"],
        *pyproject()["project"]["optional-dependencies"]["test"],
    ]
    found = {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower(): r for r in reqs}
    return [found[name.lower()] for name in names]


def test_extra() -> list[str]:
    return list(pyproject()["project"]["optional-dependencies"]["test"])


def source_copy(dest: Path) -> Path:
    """A copy of the checkout without build products, at dest."""
    shutil.rmtree(dest, ignore_errors=True)
    ignore = shutil.ignore_patterns(
        ".git", ".nox", "build", "dist", "*.egg-info", "*.so", "*.pyd",
        "_kernel.c", "__pycache__", ".hypothesis", ".pytest_cache", "wheelhouse",
        ".asv", ".venv",
    )  # fmt: skip
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def test_sources(dest: Path, source: Path) -> Path:
    """cibuildwheel's test-sources copied from source (the checkout, or an
    unpacked sdist) to dest, where pytest can run against the installed trilu
    and never import the checkout's."""
    for name in pyproject()["tool"]["cibuildwheel"]["test-sources"]:
        if (source / name).is_dir():
            shutil.copytree(source / name, dest / name)
        else:
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy(source / name, dest / name)
    return dest


def finish(results: list[tuple[str, bool, str]]) -> NoReturn:
    """Print one line per (name, passed, detail) and exit, 1 if any failed."""
    print()
    for name, ok, detail in results:
        print(f"{name}: {'ok' if ok else 'FAILED'}: {detail}")
    sys.exit(0 if all(ok for _, ok, _ in results) else 1)
