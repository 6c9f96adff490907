#!/usr/bin/env python3
"""Install the oldest numpy trilu supports, beside an installed trilu.

    python scripts/oldest_numpy.py

The floor of trilu's ``numpy>=X.Y`` requirement (``dependencies`` in
pyproject.toml, read from the installed trilu's metadata), as ``numpy==X.Y.*``
from a wheel, with every installed package that requires numpy resolved again
around it. trilu is built against numpy 2 and must also run on this one:
cibuildwheel's oldest-numpy override, the tests workflow and ``nox -s tests``
run the suite again after it. Exits with 3, installing nothing, where that
numpy has no wheel for this interpreter. Standard library only: it runs in
cibuildwheel's test environment.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys

NO_WHEEL = 3


def main() -> int:
    floors = [
        f"numpy=={m[1]}.*"
        for r in importlib.metadata.requires("trilu") or []
        if (m := re.fullmatch(r"numpy\s*>=\s*(\d+\.\d+)[.\d]*", r))
    ]
    if len(floors) != 1:
        sys.exit("the installed trilu declares no single numpy>=X.Y requirement")
    spec = floors[0]
    pip = [sys.executable, "-m", "pip", "install", "--only-binary=:all:"]
    if subprocess.run(
        [*pip, "--dry-run", "--no-deps", "-q", spec], check=False
    ).returncode:
        print(f"{spec} has no wheel for Python {sys.version.split()[0]}")
        return NO_WHEEL
    # Unpinned, so that pip keeps each installed version that goes with it.
    dependents = {
        d.metadata["Name"]
        for d in importlib.metadata.distributions()
        if any(re.match(r"numpy\b", r) for r in d.requires or [])
    } - {"trilu"}
    return subprocess.run([*pip, spec, *sorted(dependents)], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
