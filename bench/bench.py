"""trilu beside numpy, PyTorch and onnxruntime: times and ratios in one run.

    python bench/bench.py [--quick] [--plot bench/throughput.png] [--json PATH]

Ratios are peer time / trilu time (> 1: trilu is faster), each from medians of
samples taken in interleaved rounds, so drift on a shared machine hits every
implementation alike; each sample starts once the other implementations'
threads have gone idle, after 20 ms of untimed calls. PyTorch and onnxruntime
are used when installed, with their default settings (all cores). Nothing here
is a test: no time is asserted.

``--json PATH`` also writes every row to a results file (the schema is in
``bench/report.py``), which ``bench/report.py`` and the documentation's
Performance page read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from cases import CASES, Case, placed

try:
    import torch
except ImportError:
    torch = None
try:
    import onnxruntime
except ImportError:
    onnxruntime = None

Fn = Callable[[], Any]


# --- peers ------------------------------------------------------------------------


def torch_call(x: np.ndarray, k: int, upper: bool) -> Fn | None:
    """torch.triu/tril on a zero-copy tensor view of x (CPU, all cores)."""
    if torch is None:
        return None
    try:
        t = torch.from_numpy(x)
        op = torch.triu if upper else torch.tril
        op(t[..., :1, :1], k)  # is the dtype supported?
    except (TypeError, RuntimeError):
        return None
    return lambda: op(t, k)


_ort_sessions: dict[tuple[str, bool], Any] = {}


def ort_call(x: np.ndarray, k: int, upper: bool) -> Fn | None:
    """onnxruntime's Trilu (CPU provider, default threads), one node."""
    if onnxruntime is None:
        return None
    key = (x.dtype.str, upper)
    if key not in _ort_sessions:
        _ort_sessions[key] = _ort_session(x.dtype, upper)
    session = _ort_sessions[key]
    if session is None:
        return None
    feeds = {"x": x, "k": np.array(k, dtype=np.int64)}
    try:
        session.run(None, {"x": x[..., :1, :1].copy(), "k": feeds["k"]})
    except Exception:  # noqa: BLE001  (unsupported type: report n/a)
        return None
    return lambda: session.run(None, feeds)


def _ort_session(dtype: np.dtype, upper: bool) -> Any:
    try:
        from onnx import helper, numpy_helper  # noqa: PLC0415

        elem = helper.np_dtype_to_tensor_dtype(dtype)
        node = helper.make_node("Trilu", ["x", "k"], ["y"], upper=int(upper))
        graph = helper.make_graph(
            [node],
            "trilu",
            [
                helper.make_tensor_value_info("x", elem, None),
                helper.make_tensor_value_info("k", 7, []),
            ],
            [helper.make_tensor_value_info("y", elem, None)],
        )
        del numpy_helper
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        return onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
    except Exception:  # noqa: BLE001  (no onnx, or the type is not supported)
        return None


# --- timing -------------------------------------------------------------------------


Samples = dict[str, list[float]]  # seconds per call, one sample per round


TASKS = Path("/proc/self/task")


def _other_threads_cpu() -> int:
    """CPU ticks used so far by this process's threads other than the main one."""
    total = 0
    for task in TASKS.iterdir():
        if int(task.name) == os.getpid():
            continue
        try:
            fields = (task / "stat").read_text().rpartition(")")[2].split()
        except OSError:  # the thread ended
            continue
        total += int(fields[11]) + int(fields[12])  # utime + stime
    return total


def settle() -> None:
    """Let the peers' thread pools go idle before the next sample: their idle
    threads spin for a while after each call (onnxruntime's the longest),
    taking the cores another implementation's threads would use. Waits until
    no other thread used CPU in 20 ms, for at most 0.3 s (Linux; elsewhere a
    fixed 10 ms)."""
    time.sleep(0.01)
    if not TASKS.is_dir():
        return
    deadline = time.perf_counter() + 0.3
    before = _other_threads_cpu()
    while time.perf_counter() < deadline:
        time.sleep(0.02)
        now = _other_threads_cpu()
        if now == before:
            return
        before = now


def warm_up(fn: Fn, seconds: float = 0.02) -> None:
    """Untimed calls for 20 ms: after an idle pause the cores wake and ramp
    up their clocks, so the first calls of anything run slower than the
    per-call cost."""
    end = time.perf_counter() + seconds
    fn()
    while time.perf_counter() < end:
        fn()


def measure(fns: dict[str, Fn | None], rounds: int, min_sample: float) -> Samples:
    """Seconds per call of each fn, sampled in interleaved rounds."""
    live = {name: fn for name, fn in fns.items() if fn is not None}
    calls = {}
    for name, fn in live.items():  # warm up; calls per sample >= min_sample
        fn()
        n = 1
        while True:
            start = time.perf_counter()
            for _ in range(n):
                fn()
            if time.perf_counter() - start >= min_sample or n >= 1 << 16:
                break
            n *= 4
        calls[name] = n
    samples: dict[str, list[float]] = {name: [] for name in live}
    for _ in range(rounds):
        for name, fn in live.items():
            n = calls[name]
            settle()
            warm_up(fn)
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - start) / n)
    return samples


def median(samples: Samples, name: str) -> float:
    return statistics.median(samples[name])


def ratio(samples: Samples, peer: str, ours: str = "trilu") -> float | None:
    """Median over rounds of peer / ours: each round's two samples are taken
    moments apart, so the machine's drift cancels out of the ratio."""
    if peer not in samples:
        return None
    pairs = zip(samples[peer], samples[ours], strict=True)
    return statistics.median(p / o for p, o in pairs)


def summary(samples: Samples, peers: Iterable[str]) -> dict[str, Any]:
    """A results record's times: trilu's median and each peer's ratio."""
    return {
        "trilu_s": median(samples, "trilu"),
        "ratios": {peer: ratio(samples, peer) for peer in peers},
    }


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    return f"{seconds * 1e3:.3f} ms"


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


# --- tables ---------------------------------------------------------------------------


def case_table(rounds: int, min_sample: float) -> list[dict[str, Any]]:
    rows = []
    for case in CASES:
        x = case.make()
        ours = trilu.triu if case.upper else trilu.tril
        theirs = np.triu if case.upper else np.tril
        fns: dict[str, Fn | None] = {
            "trilu": functools.partial(ours, x, case.k),
            "numpy": functools.partial(theirs, x, case.k),
            "torch": torch_call(x, case.k, case.upper),
            "onnxruntime": ort_call(x, case.k, case.upper),
            "copy": x.copy if x.nbytes >= 1 << 20 else None,
        }
        times = measure(fns, rounds, min_sample)
        rows.append({"case": case, "times": times})
    return rows


def inplace_table(rounds: int, min_sample: float) -> list[dict[str, Any]]:
    """trilu.triu(x, out=x) against torch's x.triu_(), both in place on the
    same array, so both write the same pages."""
    rows = []
    for case in [c for c in CASES if c.layout == "C" and c.dtype != "int64"]:
        x = case.make()
        ours = trilu.triu if case.upper else trilu.tril
        fns: dict[str, Fn | None] = {"trilu": functools.partial(ours, x, case.k, out=x)}
        if torch is not None:
            t = torch.from_numpy(x)
            method = t.triu_ if case.upper else t.tril_
            try:
                method(case.k)
                fns["torch"] = functools.partial(method, case.k)
            except RuntimeError:
                fns["torch"] = None
        rows.append({"case": case, "times": measure(fns, rounds, min_sample)})
    return rows


def bandwidth_table(rounds: int, min_sample: float) -> list[dict[str, Any]]:
    """out= into a preallocated array: GB/s of the bytes that must move (every
    element written, the kept part read) against np.copyto's GB/s."""
    rows = []
    for case in [c for c in CASES if c.make().nbytes >= 1 << 20]:
        x = case.make()
        out = placed(x, x)
        ours = trilu.triu if case.upper else trilu.tril
        fns: dict[str, Fn | None] = {
            "trilu": functools.partial(ours, x, case.k, out=out),
            "copyto": functools.partial(np.copyto, out, x),
        }
        times = measure(fns, rounds, min_sample)
        kept = np.count_nonzero(
            (trilu.triu if case.upper else trilu.tril)(
                np.ones(x.shape[-2:], dtype=bool), case.k
            )
        ) / (x.shape[-2] * x.shape[-1])
        moved = x.nbytes * (1 + kept)
        rows.append(
            {
                "case": case,
                "times": times,
                "trilu_gbs": moved / median(times, "trilu") / 1e9,
                "copyto_gbs": 2 * x.nbytes / median(times, "copyto") / 1e9,
            }
        )
    return rows


def floor_row(rounds: int, min_sample: float) -> Samples:
    x = CASES[0].make()
    return measure(
        {
            "trilu": functools.partial(trilu.triu, x),
            "empty_like": functools.partial(np.empty_like, x),
        },
        rounds,
        min_sample,
    )


def environment() -> str:
    bits = [
        f"date {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC",
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        f"Python {platform.python_version()}",
        f"trilu {trilu.__version__} ({trilu.get_num_threads()} threads)",
        f"numpy {np.__version__}",
    ]
    if torch is not None:
        bits.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    if onnxruntime is not None:
        bits.append(f"onnxruntime {onnxruntime.__version__}")
    return ", ".join(bits)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# --- plot ---------------------------------------------------------------------------------


def plot(path: str, rounds: int, min_sample: float) -> None:
    """Throughput (GB/s of output) against matrix size, triu of float64."""
    import matplotlib as mpl  # noqa: PLC0415

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    sizes = [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    series: dict[str, list[float | None]] = {}
    for n in sizes:
        x = Case("", (n, n), "float64").make()
        times = measure(
            {
                "trilu": functools.partial(trilu.triu, x),
                "numpy": functools.partial(np.triu, x),
                "torch": torch_call(x, 0, True),
                "onnxruntime": ort_call(x, 0, True),
                "x.copy()": x.copy,
            },
            rounds,
            min_sample,
        )
        for name in ["trilu", "numpy", "torch", "onnxruntime", "x.copy()"]:
            t = median(times, name) if name in times else None
            series.setdefault(name, []).append(
                None if t is None else x.nbytes / t / 1e9
            )
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, ys in series.items():
        if any(y is not None for y in ys):
            ax.plot(
                sizes, [np.nan if y is None else y for y in ys], marker="o", label=name
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (triu of an N x N float64 matrix)")
    ax.set_ylabel("GB/s of output")
    ax.set_title("Upper triangle of a square float64 matrix, fresh output")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.text(0.01, 0.01, f"{cpu_name()}; {environment()}", fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


# --- results file ----------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    """The machine and versions, as the results file's schema names them."""
    return {
        "cpu": cpu_name(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "trilu": trilu.__version__,
        "trilu_threads": trilu.get_num_threads(),
        "torch": None if torch is None else torch.__version__,
        "onnxruntime": None if onnxruntime is None else onnxruntime.__version__,
    }


def kept_fraction(case: Case) -> float:
    """The fraction of each matrix's elements the case keeps."""
    rows, cols = case.shape[-2:]
    offset = np.arange(cols) - np.arange(rows)[:, None]
    kept = offset >= case.k if case.upper else offset <= case.k
    return float(np.count_nonzero(kept)) / (rows * cols)


def record(
    case: Case, mode: str, times: Samples, peers: list[str], name: str | None = None
) -> dict[str, Any]:
    """One case of the results file: trilu's median time, each peer's ratio."""
    itemsize = np.dtype(case.dtype).itemsize
    return {
        "name": name or case.label,
        "class": "grid",
        "op": case.op,
        "mode": mode,
        "shape": list(case.shape),
        "dtype": case.dtype,
        "k": case.k,
        "layout": case.layout,
        "result_bytes": int(np.prod(case.shape)) * itemsize,
        "kept_fraction": round(kept_fraction(case), 6),
        **summary(times, peers),
    }


def write_json(
    path: str, date: dt.datetime, cases: list[dict[str, Any]], kind: str = "grid"
) -> None:
    results = {
        "schema": 1,
        "kind": kind,
        "date": f"{date:%Y-%m-%dT%H:%M:%SZ}",
        "seed": None,
        "machine": machine(),
        "cases": cases,
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"results written to {path}")


# --- main ---------------------------------------------------------------------------------


def cli(
    doc: str, quick: tuple[int, float], full: tuple[int, float], plot: str = ""
) -> tuple[argparse.Namespace, int, float, dt.datetime]:
    """A bench's command line (--quick, --json PATH, and --plot PNG where it
    plots, with `plot` its help): the arguments, the rounds and shortest
    sample of the mode chosen, and the run's date."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    if plot:
        parser.add_argument("--plot", metavar="PNG", help=plot)
    parser.add_argument("--json", metavar="PATH", help="write the results file here")
    args = parser.parse_args()
    rounds, min_sample = quick if args.quick else full
    return args, rounds, min_sample, dt.datetime.now(dt.timezone.utc)


def main() -> None:
    args, rounds, min_sample, date = cli(
        __doc__, (5, 0.002), (15, 0.01), plot="write the throughput plot here"
    )
    results: list[dict[str, Any]] = []

    print(f"# trilu benchmark\n\n{cpu_name()}; {environment()}\n")
    peers = ["numpy", "torch", "onnxruntime", "copy"]
    print("| case | op | trilu | " + " | ".join(f"{p} / trilu" for p in peers) + " |")
    print("|---|---|---:|" + "---:|" * len(peers))
    summary: dict[str, list[float]] = {p: [] for p in peers}
    for row in case_table(rounds, min_sample):
        case, times = row["case"], row["times"]
        results.append(record(case, "fresh", times, peers))
        ours = median(times, "trilu")
        cells = []
        for p in peers:
            r = ratio(times, p)
            cells.append(fmt_ratio(r))
            if r is not None:
                summary[p].append(r)
        print(
            f"| {case.label} | {case.op} | {fmt_time(ours)} | "
            + " | ".join(cells)
            + " |"
        )
    print()
    for p in peers:
        r = summary[p]
        if r:
            print(
                f"- {p} / trilu: min {min(r):.2f}x, median {statistics.median(r):.2f}x "
                f"over {len(r)} cases"
            )

    print("\n## In place: trilu.triu(x, out=x) against torch x.triu_()\n")
    print("| case | op | trilu | torch / trilu |")
    print("|---|---|---:|---:|")
    for row in inplace_table(rounds, min_sample):
        case, times = row["case"], row["times"]
        results.append(record(case, "inplace", times, ["torch"]))
        print(
            f"| {case.label} | {case.op} | {fmt_time(median(times, 'trilu'))} | "
            f"{fmt_ratio(ratio(times, 'torch'))} |"
        )

    print("\n## out= into a preallocated array: bandwidth against np.copyto\n")
    print("| case | op | trilu GB/s | copyto GB/s | trilu / copyto |")
    print("|---|---|---:|---:|---:|")
    for row in bandwidth_table(rounds, min_sample):
        case = row["case"]
        results.append(record(case, "out", row["times"], ["copyto"]))
        print(
            f"| {case.label} | {case.op} | {row['trilu_gbs']:.1f} | "
            f"{row['copyto_gbs']:.1f} | {row['trilu_gbs'] / row['copyto_gbs']:.0%} |"
        )

    floor = floor_row(rounds, min_sample)
    print(
        f"\n4x5 int64 triu: {fmt_time(median(floor, 'trilu'))}, np.empty_like "
        f"{fmt_time(median(floor, 'empty_like'))}: "
        f"{1 / ratio(floor, 'empty_like'):.2f}x the Python-call floor"
    )
    floor_name = "4x5 int64, the call floor"
    results.append(record(CASES[0], "fresh", floor, ["empty_like"], floor_name))
    if args.json:
        write_json(args.json, date, results)

    if args.plot:
        plot(args.plot, rounds, min_sample)


if __name__ == "__main__":
    main()
