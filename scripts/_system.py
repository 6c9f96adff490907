"""What the nox sessions that test other targets share (scripts/*_check.py).

Debian packages installed on demand (as root), the cache under
``~/.cache/trilu-nox``, a copy of the checkout to build from (so a sanitizer or
cross build never leaves objects in ``build/`` for the next normal build), and
pytest's own summary line picked out of a log. Standard library only.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("TRILU_NOX_CACHE", Path.home() / ".cache" / "trilu-nox"))
# pytest's last line: "==== 4047 passed, 3 skipped in 900.1s ====" (or -q's bare one)
SUMMARY = re.compile(
    r"^=*\s*(\d+ (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)"
    r".* in [\d.]+s.*?)\s*=*$"
)
_apt_updated = False


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    """Run a command, echoed, failing on a non-zero exit unless check=False."""
    check = kw.pop("check", True)
    log("+ " + shlex.join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], text=True, check=check, **kw)


def missing_packages(packages: list[str]) -> list[str]:
    """The Debian packages of this list that are not installed."""
    missing = []
    for name in packages:
        proc = subprocess.run(
            ["dpkg-query", "-W", "-f=${Status}", name],
            capture_output=True,
            text=True,
            check=False,
        )
        if "install ok installed" not in proc.stdout:
            missing.append(name)
    return missing


def apt_install(*packages: str) -> None:
    """Install the Debian packages not yet installed (needs root)."""
    global _apt_updated  # noqa: PLW0603 (one `apt-get update` per process)
    missing = missing_packages(list(packages))
    if not missing:
        return
    if os.geteuid() != 0:
        sys.exit(f"needs root to install: {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if not _apt_updated:
        run(["apt-get", "update", "-q"], env=env)
        _apt_updated = True
    run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing], env=env
    )


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


def summary_line(text: str) -> str | None:
    """pytest's summary line, the last one in text."""
    found = None
    for line in text.splitlines():
        match = SUMMARY.match(line.strip())
        if match:
            found = match.group(1)
    return found


def run_logged(cmd: list[str], logfile: Path, **kw) -> tuple[int, str, float]:
    """Run cmd with its output both shown and written to logfile; returns the
    exit status, pytest's summary line (or "no summary line") and seconds."""
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
    seconds = time.monotonic() - start
    text = logfile.read_text(errors="replace")
    return status, summary_line(text) or "no summary line", seconds
