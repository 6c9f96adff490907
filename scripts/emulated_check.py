#!/usr/bin/env python3
"""The suite on another architecture, under qemu-user (nox -s emulated -- ARCH).

    python scripts/emulated_check.py s390x|arm64 [pytest args]

1. A Debian chroot of that architecture, made once by ``debootstrap`` under
   ``~/.cache/trilu-nox/chroot-ARCH-SUITE`` and run through qemu-user-static
   (binfmt_misc): s390x (big-endian) on sid, whose pool is complete for s390x
   (Python 3.14, numpy 2.4, Cython 3.1); arm64 on trixie (Python 3.13, numpy
   2.2). Debian's own packages give Python, numpy, the compiler, pytest,
   hypothesis, dask, scipy and matplotlib.
2. What Debian lacks, or has older than the ``test`` extra's floors (trixie's
   onnx 1.17, mypy 1.15, threadpoolctl 3.1 and Cython 3.0), comes from PyPI
   as wheels for that architecture, downloaded on the host (``pip download
   --platform ... --only-binary :all:``: pip inside the chroot may not reach
   PyPI) and installed inside with ``--no-index``. PyPI has no onnx for
   s390x, so there it is Debian's 1.20, below the floor of 1.22: the one test
   that needs 1.22 xfails, the other onnx tests run on a big-endian host. A
   test dependency with no wheel and no Debian package would be named in
   ``TRILU_TEST_OPTIONAL_MISSING``, so its tests skip, and only those.
3. trilu is built inside the chroot from a copy of this checkout and the
   whole suite runs there; pytest's summary line is printed at the end.

Needs root (debootstrap, chroot, mounts) and, the first time, network access
to deb.debian.org and PyPI. 1.3 GB of disk (s390x), 1.2 GB (arm64).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _system import CACHE, apt_install, log, run, run_logged, source_copy

MIRROR = "http://deb.debian.org/debian"
COMMON = [
    "python3", "python3-dev", "python3-venv", "python3-pip", "gcc", "libc6-dev",
    "python3-numpy", "python3-setuptools", "python3-pytest", "python3-hypothesis",
    "python3-dask", "python3-distributed", "python3-scipy", "python3-matplotlib",
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
        "pypi": [
            "Cython>=3.1",
            "onnx>=1.22",
            "ml_dtypes>=0.4",
            "mypy>=1.20",
            "threadpoolctl>=3.5",
        ],
        "pytest": [],
    },
}
# Import names of the test extra's optional packages, by requirement name.
IMPORT_NAMES = {
    "onnx": "onnx", "ml_dtypes": "ml_dtypes", "mypy": "mypy",
    "threadpoolctl": "threadpoolctl",
}  # fmt: skip


def chroot_run(root: Path, cmd: str, **kw) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
        **kw.pop("env", {}),
    }
    return run(["chroot", root, "/bin/sh", "-ec", cmd], env=env, **kw)


def make_chroot(arch: str, target: dict) -> Path:
    """The chroot with Debian's packages installed, made once and cached."""
    root = CACHE / f"chroot-{arch}-{target['suite']}"
    done = root / ".trilu-packages"
    wanted = " ".join(target["debian"])
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
             "--second-stage"])  # fmt: skip
    resolv = root / "etc" / "resolv.conf"  # apt inside reaches the mirror
    resolv.unlink(missing_ok=True)
    shutil.copy("/etc/resolv.conf", resolv)
    # sid's Release file is valid for a week only: a mirror that lags behind
    # (seen here: 25 days) makes apt refuse it as expired.
    (root / "etc" / "apt" / "apt.conf.d" / "99trilu-no-valid-until").write_text(
        'Acquire::Check-Valid-Until "false";\n'
    )
    with mounted(root):
        chroot_run(root, "apt-get update -q")
        chroot_run(
            root, f"nice -n 19 apt-get install -y -q --no-install-recommends {wanted}"
        )
        chroot_run(root, "apt-get clean")
    done.write_text(wanted)
    return root


class mounted:
    """/proc, /dev and /dev/shm of the host inside the chroot, for a while."""

    def __init__(self, root: Path) -> None:
        self.points = [root / "proc", root / "dev", root / "dev" / "shm"]

    def __enter__(self) -> None:
        proc, dev, shm = self.points
        run(["mount", "-t", "proc", "proc", proc])
        run(["mount", "--bind", "/dev", dev])
        run(["mount", "-t", "tmpfs", "shm", shm])

    def __exit__(self, *exc: object) -> None:
        for point in reversed(self.points):
            run(["umount", "-l", point], check=False)


def python_version(root: Path) -> str:
    out = chroot_run(
        root,
        "python3 -c 'import sys; print(\"%d.%d\" % sys.version_info[:2])'",
        capture_output=True,
    )
    return out.stdout.strip()


def download_wheels(arch: str, target: dict, version: str, dest: Path) -> list[str]:
    """Wheels for the chroot's Python; returns the requirements that have none."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    platforms = [x for p in target["platforms"] for x in ("--platform", p)]
    missing = []
    for req in target["pypi"]:
        proc = run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--dest", dest,
             "--only-binary", ":all:", *platforms, "--python-version", version,
             "--implementation", "cp", req],
            check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            log(f"{req}: no wheel for {arch} and Python {version}; its tests will skip")
            missing.append(req)
    # numpy stays Debian's: drop the wheels pulled in as a dependency.
    for wheel in dest.glob("numpy-*.whl"):
        wheel.unlink()
    return missing


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in TARGETS:
        sys.exit(__doc__)
    arch = sys.argv[1]
    target = TARGETS[arch]
    pytest_args = [*target["pytest"], *sys.argv[2:]]
    if os.geteuid() != 0:
        sys.exit("needs root: debootstrap, chroot and mounts")
    apt_install(
        "debootstrap", "qemu-user-static", "binfmt-support", "debian-archive-keyring"
    )
    binfmt = Path("/proc/sys/fs/binfmt_misc")
    if not (binfmt / "status").exists():
        run(["mount", "-t", "binfmt_misc", "binfmt_misc", binfmt])
    run(["update-binfmts", "--enable", target["qemu"]], check=False)
    started = time.monotonic()
    root = make_chroot(arch, target)
    version = python_version(root)
    wheels = root / "wheels"
    missing = download_wheels(arch, target, version, wheels)
    names = sorted(
        {IMPORT_NAMES.get(r.split(">")[0].split("=")[0].lower(), "") for r in missing}
        - {""}
    )
    source_copy(root / "src" / "trilu")
    installable = [r for r in target["pypi"] if r not in missing]
    quoted = " ".join(f"'{r}'" for r in installable)
    status, summary, seconds = 1, "no summary line", 0.0
    with mounted(root):
        chroot_run(
            root,
            "rm -rf /venv && python3 -m venv --system-site-packages /venv\n"
            + (f"/venv/bin/pip install -q --no-index --find-links /wheels {quoted}\n"
               if quoted else "")
            + "cd /src/trilu && nice -n 19 /venv/bin/pip install -q --no-deps"
            " --no-build-isolation --no-index .",
        )  # fmt: skip
        info = chroot_run(
            root,
            "cd / && /venv/bin/python -c 'import sys, platform, numpy, trilu; "
            "print(platform.machine(), sys.byteorder, sys.version.split()[0], "
            '"numpy", numpy.__version__)\'',
            capture_output=True,
        ).stdout.strip()
        log(f"in the chroot: {info}; optional test packages missing: {names or 'none'}")
        cmd = (
            f"cd /src/trilu && TRILU_TEST_OPTIONAL_MISSING={','.join(names)} "
            "nice -n 19 /venv/bin/python -m pytest -p no:cacheprovider "
            + " ".join(f"'{a}'" for a in pytest_args)
        )
        status, summary, seconds = run_logged(
            ["chroot", root, "/bin/sh", "-ec", cmd],
            CACHE / f"emulated-{arch}.log",
            env={
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME": "/root",
                "LANG": "C.UTF-8",
                "PYTHONUNBUFFERED": "1",  # progress as it comes, not in 8 KiB blocks
            },
        )
    total = time.monotonic() - started
    print(
        f"\n{arch} ({info}): {summary}; pytest {seconds:.0f} s, session {total:.0f} s"
    )
    sys.exit(status)


if __name__ == "__main__":
    main()
