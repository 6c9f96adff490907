"""``python -m trilu``: check every ONNX type against the spec, then time it.

The check needs nothing but numpy (bfloat16 also needs ml_dtypes); the answer
for each element is taken from the spec's own words, not from numpy.triu.
Exits 1 if any check fails. ``--check`` runs the check alone, ``--bench`` the
table alone, ``--threads N`` sets trilu's thread count; ``--help`` says more.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import time
from typing import Any

import numpy as np

import trilu

ONNX_TYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float16", "float32", "float64", "bfloat16", "complex64",
    "complex128", "string",
]  # fmt: skip


def _dtype(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes  # noqa: PLC0415  (optional: onnx's own bfloat16)

        return ml_dtypes.bfloat16
    return object if name == "string" else np.dtype(name)


def _spec(x: np.ndarray, k: int, upper: bool, zero: Any) -> np.ndarray:
    """Trilu-14 in the spec's words: keep (i, j) on/above (upper) or on/below
    the k-th diagonal, that is j - i >= k or j - i <= k; zero the rest."""
    rows, cols = x.shape[-2:]
    diagonal = np.arange(cols) - np.arange(rows)[:, None]  # j - i
    keep = diagonal >= k if upper else diagonal <= k
    return np.where(keep, x, np.array(zero, dtype=x.dtype))


def _same(got: np.ndarray, want: np.ndarray) -> bool:
    """The same dtype and shape, and the same bytes (equal strings, for
    object arrays, whose bytes are references)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if got.dtype == object:
        return bool(got.tolist() == want.tolist())
    return got.tobytes() == want.tobytes()


def self_check(rng: np.random.Generator) -> tuple[int, int, list[str]]:
    """Every type x upper/lower x k x shape; returns (passed, failed, notes)."""
    passed = failed = 0
    notes = []
    for name in ONNX_TYPES:
        try:
            dtype = _dtype(name)
        except ImportError:
            notes.append(f"{name}: skipped (pip install ml_dtypes to check it)")
            continue
        for shape in [(4, 5), (2, 3, 3), (3, 1, 5), (5, 2)]:
            size = int(np.prod(shape))
            if dtype is object:
                x = np.array([f"s{v}" for v in range(size)], dtype=object)
                zero: Any = ""
            else:
                raw = rng.integers(1, 100, size=size)
                x = raw.astype(bool) if name == "bool" else raw.astype(dtype)
                zero = np.zeros((), dtype)[()]
            x = x.reshape(shape)
            for upper in (True, False):
                for k in (-7, -1, 0, 1, 2, 6):
                    got = trilu.trilu(x, k, upper)
                    if _same(got, _spec(x, k, upper, zero)):
                        passed += 1
                    else:
                        failed += 1
                        notes.append(f"FAIL {name} shape={shape} k={k} upper={upper}")
    return passed, failed, notes


def _median_time(fn: Any, budget: float = 0.15) -> float:
    times: list[float] = []
    deadline = time.perf_counter() + budget
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < 200):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def speed_table(rng: np.random.Generator) -> list[str]:
    """trilu against numpy on a few sizes: medians, interleaved, as ratios."""
    cases = [
        ("4x5 int64", rng.integers(0, 9, (4, 5)), 0, True),
        ("512x512 float32", rng.random((512, 512), dtype=np.float32), 0, True),
        ("2048x2048 float64", rng.random((2048, 2048)), 0, True),
        ("2048x2048 float64, k=-100", rng.random((2048, 2048)), -100, False),
        ("100000x3x3 float64", rng.random((100000, 3, 3)), 0, True),
    ]
    lines = [
        f"{'case':28s} {'op':5s} {'numpy':>10s} {'trilu':>10s} {'numpy/trilu':>12s}"
    ]
    for label, x, k, upper in cases:
        ours = trilu.triu if upper else trilu.tril
        theirs = np.triu if upper else np.tril
        t_np = _median_time(functools.partial(theirs, x, k))
        t_tr = _median_time(functools.partial(ours, x, k))
        lines.append(
            f"{label:28s} {'triu' if upper else 'tril':5s} {_fmt(t_np):>10s} "
            f"{_fmt(t_tr):>10s} {t_np / t_tr:11.1f}x"
        )
    return lines


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def _count(text: str) -> int:
    """--threads' value: a positive integer."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return count


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m trilu",
        description="Check trilu against the ONNX Trilu-14 spec for every type, "
        "then time it against numpy (both, unless --check or --bench says one).",
    )
    parser.add_argument(
        "--version", action="version", version=f"trilu {trilu.__version__}"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="the self-check alone; exit 1 if any check fails",
    )
    parser.add_argument("--bench", action="store_true", help="the speed table alone")
    parser.add_argument(
        "--threads",
        type=_count,
        metavar="N",
        help="let trilu use N threads (default: TRILU_NUM_THREADS, else "
        "OMP_NUM_THREADS, else the CPUs this process may run on)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (1: a check failed)."""
    args = _parser().parse_args(argv)
    if args.threads is not None:
        trilu.set_num_threads(args.threads)
    check, bench = args.check or not args.bench, args.bench or not args.check
    rng = np.random.default_rng(2026)
    print(
        f"trilu {trilu.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()}, "
        f"{trilu.get_num_threads()} thread(s)"
    )
    failed = 0
    if check:
        passed, failed, notes = self_check(rng)
        for note in notes:
            print("  " + note)
        verdict = "PASS" if failed == 0 else "FAIL"
        print(
            f"self-check against the ONNX Trilu-14 spec: {verdict} "
            f"({passed} passed, {failed} failed)"
        )
    if check and bench:
        print()
    if bench:
        print("speed (median of repeated calls; ratio > 1 means trilu is faster):")
        for line in speed_table(rng):
            print("  " + line)
    return 0 if failed == 0 else 1


def _run() -> int:
    """main(), ending quietly on a closed pipe (``| head``), as json.tool does."""
    try:
        try:
            return main()
        finally:  # after --help's exit too: a closed pipe shows here, not at exit
            sys.stdout.flush()
    except BrokenPipeError as exc:
        # the exit's own flush of what is left would fail again: to devnull
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exc.errno or 1


if __name__ == "__main__":
    sys.exit(_run())
