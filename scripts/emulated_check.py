#!/usr/bin/env python3
"""The suite on another architecture, under qemu-user (nox -s emulated -- ARCH).

    python scripts/emulated_check.py s390x|arm64 [pytest args]

1. A Debian chroot of that architecture, made once by ``debootstrap`` under
   ``~/.cache/trilu-nox/chroot-ARCH-SUITE`` and run through qemu-user-static
   (binfmt_misc): s390x (big-endian) on sid, whose pool is complete for s390x
   (Python 3.14, numpy 2.4, Cython 3.1); arm64 on trixie (Python 3.13, numpy
   2.2), on qemu's ``max`` CPU less pointer authentication (``TARGETS``
   says why). Debian's own packages give Python, numpy, the compiler, pytest,
   hypothesis, pytest-xdist, dask, scipy and matplotlib.
2. What Debian lacks, or has older than the ``test`` extra's floors (trixie's
   onnx 1.17, mypy 1.15, threadpoolctl 3.1 and Cython 3.0), comes from PyPI
   as wheels for that architecture, downloaded on the host (``pip download
   --platform ... --only-binary :all:``: pip inside the chroot may not reach
   PyPI) and installed inside with ``--no-index``. PyPI has no onnx for
   s390x, so there it is Debian's 1.20, below the floor of 1.22: the one test
   that needs 1.22 xfails, the other onnx tests run on a big-endian host. A
   test dependency with no wheel and no Debian package is left out, and its
   tests skip.
3. trilu is built inside the chroot from a copy of this checkout and the
   whole suite runs there, a pytest-xdist worker a core; pytest's summary
   line is printed at the end.

Needs root (debootstrap, chroot, mounts) and, the first time, network access
to deb.debian.org and PyPI. 1.3 GB of disk (s390x), 1.2 GB (arm64).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _system import (
    CACHE,
    MIRROR,
    apt_install,
    finish,
    log,
    requirements,
    run,
    run_logged,
    source_copy,
)

COMMON = [
    "python3", "python3-dev", "python3-venv", "python3-pip", "gcc", "libc6-dev",
    "python3-numpy", "python3-setuptools", "python3-pytest", "python3-hypothesis",
    "python3-dask", "python3-distributed", "python3-scipy", "python3-matplotlib",
    "python3-pytest-xdist",
]  # fmt: skip
TARGETS = {
    "s390x": {
        "suite": "sid",
        "qemu": "qemu-s390x",
        "platforms": ["manylinux2014_s390x", "manylinux_2_28_s390x", "linux_s390x"],
        # PyPI has no onnx wheel for s390x: Debian's 1.20 (one test xfails).
        "debian": [
            *COMMON,
            "cython3",
            "python3-ml-dtypes",
            "python3-mypy",
            "python3-onnx",
            "python3-threadpoolctl",
        ],
        "pypi": [],
        # Debian's protobuf calls datetime.utcfromtimestamp at import, which
        # Python 3.12+ deprecates: filterwarnings = error would fail collection.
        "pytest": [
            "-W",
            "ignore:datetime.datetime.utcfromtimestamp:DeprecationWarning",
        ],
    },
    "arm64": {
        "suite": "trixie",
        "qemu": "qemu-aarch64",
        "platforms": ["manylinux2014_aarch64", "manylinux_2_28_aarch64"],
        "debian": COMMON,
        # Older in trixie than the build and test floors: from PyPI, at those.
        "pypi": requirements("Cython", "onnx", "ml_dtypes", "mypy", "threadpoolctl"),
        "pytest": [],
        # qemu's default arm64 CPU signs and checks return addresses with
        # QARMA (FEAT_PAuth), which it emulates in software, and Debian builds
        # everything with branch protection: each call pays it, and Python
        # code runs an order of magnitude slower. Without PAuth those
        # instructions are hints that do nothing, as on an Armv8.0 core; every
        # other feature stays.
        "cpu": "max,pauth=off",
    },
}
CHROOT_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "DEBIAN_FRONTEND": "noninteractive",
    "PYTHONUNBUFFERED": "1",  # pytest's progress as it comes, not in 8 KiB blocks
}


def chroot_env(target: dict) -> dict[str, str]:
    """The environment of commands in the chroot, qemu's CPU included."""
    cpu = target.get("cpu")
    return {**CHROOT_ENV, **({"QEMU_CPU": cpu} if cpu else {})}


def in_chroot(root: Path, script: str) -> list[Any]:
    return ["chroot", root, "/bin/sh", "-ec", script]


def make_chroot(arch: str, target: dict) -> Path:
    """The chroot with Debian's packages installed, made once and cached."""
    root = CACHE / f"chroot-{arch}-{target['suite']}"
    done = root / ".trilu-packages"
    wanted = " ".join(target["debian"])
    env = chroot_env(target)
    if done.exists() and done.read_text() == wanted:
        log(f"cached: {root}")
        return root
    first_stage = root / "debootstrap"  # gone once the second stage is done
    if not (root / "usr" / "bin" / "apt-get").exists() or first_stage.exists():
        if not first_stage.exists():  # download and unpack: no emulation
            shutil.rmtree(root, ignore_errors=True)
            root.parent.mkdir(parents=True, exist_ok=True)
            log(f"debootstrap {arch} {target['suite']} into {root} (once)")
            run(["nice", "-n", "19", "debootstrap", "--foreign", f"--arch={arch}",
                 "--variant=minbase", target["suite"], root, MIRROR])  # fmt: skip
        # configure the packages: runs the target's binaries under qemu
        run(["nice", "-n", "19", "chroot", root, "/debootstrap/debootstrap",
             "--second-stage"], env=env)  # fmt: skip
    resolv = root / "etc" / "resolv.conf"  # apt inside reaches the mirror
    resolv.unlink(missing_ok=True)
    shutil.copy("/etc/resolv.conf", resolv)
    # sid's Release file is valid for a week only: a mirror that lags behind
    # (seen here: 25 days) makes apt refuse it as expired.
    (root / "etc" / "apt" / "apt.conf.d" / "99trilu-no-valid-until").write_text(
        'Acquire::Check-Valid-Until "false";\n'
    )
    with mounted(root):
        run(
            in_chroot(root, "apt-get update -q\n"
                      f"nice -n 19 apt-get install -y -q --no-install-recommends {wanted}\n"
                      "apt-get clean"),
            env=env,
        )  # fmt: skip
    done.write_text(wanted)
    return root


@contextlib.contextmanager
def mounted(root: Path, binds: dict[str, Path] | None = None) -> Iterator[None]:
    """/proc, /dev and /dev/shm of the host inside the chroot, for a while, and
    each host directory of binds, read-only, at its path inside."""
    run(["mount", "-t", "proc", "proc", root / "proc"])
    run(["mount", "--bind", "/dev", root / "dev"])
    run(["mount", "-t", "tmpfs", "shm", root / "dev" / "shm"])
    points = ["dev/shm", "dev", "proc"]
    try:
        for inside, host in (binds or {}).items():
            (root / inside).mkdir(parents=True, exist_ok=True)
            run(["mount", "--bind", "-o", "ro", host, root / inside])
            points.insert(0, inside)
        yield
    finally:
        for point in points:
            run(["umount", "-l", root / point], check=False)


def download_wheels(arch: str, reqs: list[str], version: str, dest: Path) -> list[str]:
    """Wheels of reqs (and what they need) for the chroot's Python, into dest;
    returns the requirements that have one."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    platforms = [x for p in TARGETS[arch]["platforms"] for x in ("--platform", p)]
    found = []
    for req in reqs:
        proc = run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--dest", dest,
             "--only-binary", ":all:", *platforms, "--python-version", version,
             "--implementation", "cp", req],
            check=False,
        )  # fmt: skip
        if proc.returncode == 0:
            found.append(req)
        else:
            log(f"{req}: no wheel for {arch} and Python {version}: left out")
    return found


def prepare(arch: str) -> Path:
    """The chroot of arch (made once), and qemu-user registered to run it."""
    if os.geteuid() != 0:
        sys.exit("needs root: debootstrap, chroot and mounts")
    apt_install(
        "debootstrap", "qemu-user-static", "binfmt-support", "debian-archive-keyring"
    )
    binfmt = Path("/proc/sys/fs/binfmt_misc")
    if not (binfmt / "status").exists():
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", binfmt])
    run(["update-binfmts", "--enable", TARGETS[arch]["qemu"]], check=False)
    return make_chroot(arch, TARGETS[arch])


def python_version(root: Path, target: dict) -> str:
    """The chroot's Python version, as 3.13."""
    return run(
        in_chroot(
            root, "python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'"
        ),
        env=chroot_env(target),
        capture_output=True,
    ).stdout.strip()


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(__doc__)
    arch, target = sys.argv[1], TARGETS[sys.argv[1]]
    # A pytest worker a core: qemu-user runs each process on one core.
    workers = ["-n", str(os.cpu_count() or 1)]
    pytest_args = [*workers, *target["pytest"], *sys.argv[2:]]
    started = time.monotonic()
    root = prepare(arch)
    env = chroot_env(target)
    version = python_version(root, target)
    wheels = shlex.join(download_wheels(arch, target["pypi"], version, root / "wheels"))
    # numpy stays Debian's: drop the wheels pulled in as a dependency.
    for wheel in (root / "wheels").glob("numpy-*.whl"):
        wheel.unlink()
    source_copy(root / "src" / "trilu")
    with mounted(root):
        run(
            in_chroot(root,
                "rm -rf /venv && python3 -m venv --system-site-packages /venv\n"
                + (f"/venv/bin/pip install -q --no-index --find-links /wheels {wheels}\n"
                   if wheels else "")
                + "cd /src/trilu && nice -n 19 /venv/bin/pip install -q --no-deps"
                " --no-build-isolation --no-index ."),
            env=env,
        )  # fmt: skip
        info = run(
            in_chroot(root, "cd / && /venv/bin/python -c 'import sys, platform, numpy; "
                      "print(platform.machine(), sys.byteorder, sys.version.split()[0], "
                      '"numpy", numpy.__version__)\''),
            env=env,
            capture_output=True,
        ).stdout.strip()  # fmt: skip
        status, summary = run_logged(
            in_chroot(root, "cd /src/trilu && nice -n 19 /venv/bin/python -m pytest "
                      f"-p no:cacheprovider {shlex.join(pytest_args)}"),
            CACHE / f"emulated-{arch}.log",
            env=env,
        )  # fmt: skip
    total = time.monotonic() - started
    finish([(f"{arch} ({info})", status == 0, f"{summary}; session {total:.0f} s")])


if __name__ == "__main__":
    main()
