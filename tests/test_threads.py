"""Threads: concurrent callers get right answers; the thread count is configurable.

Large calls split their rows over kernel threads; many Python threads may call
trilu at once (on shared and separate inputs); results never depend on the
thread count; ``set_num_threads`` validates its argument and ``None`` restores
the default (``TRILU_NUM_THREADS``, else ``OMP_NUM_THREADS``, else the CPUs
this process may use).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cases import assert_same, layout, make, numpy_oracle, run_python

import trilu
from trilu import _kernel, _threads


def _default_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


@pytest.fixture
def restore_threads():
    """Put the thread count back as it was after the test."""
    before = trilu.get_num_threads()
    yield
    trilu.set_num_threads(before)


# --- many Python threads at once --------------------------------------------------


def _jobs(rng: np.random.Generator) -> list[tuple[str, Any, Any, bool, Any]]:
    """(kind, fn, x, k, expected) for a mix of large and small, shared inputs."""
    big = make(np.float64, (600, 700), rng)  # 3.2 MiB: kernel threads
    big_f = np.asfortranarray(make(np.int32, (2, 700, 600), rng))
    big_u8 = make(np.uint8, (1500, 1500), rng)[::-1]
    small = make(np.int16, (3, 4, 5), rng)
    tiny_obj = make(object, (4, 4), rng)
    jobs = []
    for k in (-3, 0, 2, 5):
        for upper in (True, False):
            for x in (big, big_f, big_u8, small, tiny_obj):
                fn = trilu.triu if upper else trilu.tril
                jobs.append(("numpy", fn, x, k, numpy_oracle(x, k, upper)))
            onnx = functools.partial(_onnx, upper=upper)
            jobs.append(("onnx", onnx, big, k, numpy_oracle(big, k, upper)))
    return jobs


def _onnx(m: np.ndarray, k: int, upper: bool) -> np.ndarray:
    return trilu.trilu(m, np.array(k), upper)


@pytest.mark.usefixtures("threads4")
def test_concurrent_calls_shared_inputs() -> None:
    """8 Python threads run 4 rounds of mixed calls on shared inputs: all right."""
    rng = np.random.default_rng(1)
    jobs = _jobs(rng) * 4
    rng.shuffle(jobs)
    snapshots = {id(j[2]): j[2].tobytes() for j in jobs if j[2].dtype != object}
    barrier = threading.Barrier(8)

    def run(chunk: list[Any]) -> list[Any]:
        barrier.wait()
        return [fn(x, k) for _, fn, x, k, _ in chunk]

    chunks = [jobs[i::8] for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, chunks))
    for chunk, got in zip(chunks, results, strict=True):
        for (_, _, _, _, want), g in zip(chunk, got, strict=True):
            assert_same(g, want)
    for j in jobs:
        if j[2].dtype != object:
            assert j[2].tobytes() == snapshots[id(j[2])], "a shared input changed"


@pytest.mark.usefixtures("threads4")
def test_concurrent_out_and_in_place() -> None:
    """Threads writing to their own out= arrays and in place, all at once."""
    rng = np.random.default_rng(2)
    x = make(np.float32, (900, 800), rng)  # shared, read-only input
    x.flags.writeable = False
    n = 12
    outs = [np.empty((900, 800), np.float32, order="CF"[i % 2]) for i in range(n)]
    owns = [make(np.complex64, (2, 300, 400), rng) for _ in range(n)]
    wants_own = [numpy_oracle(a, i - 6, i % 2 == 0) for i, a in enumerate(owns)]
    barrier = threading.Barrier(n)

    def run(i: int) -> None:
        barrier.wait()
        fn = trilu.triu if i % 2 == 0 else trilu.tril
        for _ in range(3):
            assert fn(x, i - 6, out=outs[i]) is outs[i]
        assert fn(owns[i], i - 6, out=owns[i]) is owns[i]

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(run, range(n)))
    for i in range(n):
        assert_same(np.array(outs[i]), numpy_oracle(x, i - 6, i % 2 == 0))
        assert_same(owns[i], wants_own[i])


@pytest.mark.usefixtures("restore_threads")
def test_set_num_threads_while_running() -> None:
    """Changing the thread count while other threads compute changes no answer."""
    rng = np.random.default_rng(3)
    x = make(np.int64, (3, 400, 500), rng)
    want = numpy_oracle(x, 1, True)
    stop = threading.Event()

    def toggle() -> None:
        i = 0
        while not stop.is_set():
            trilu.set_num_threads(1 + i % 5)
            i += 1

    def compute(_: int) -> None:
        for _ in range(15):
            assert_same(trilu.triu(x, 1), want)

    toggler = threading.Thread(target=toggle)
    toggler.start()
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(compute, range(4)))
    finally:
        stop.set()
        toggler.join()


# --- results do not depend on the thread count -----------------------------------------

BIG = {
    "float64-C": (np.float64, (700, 800), "C"),
    "float64-F": (np.float64, (700, 800), "F"),
    "int8-step": (np.int8, (2000, 1500), "step"),
    "complex128-batch": (np.complex128, (4, 250, 260), "C"),
    "V5-neg": ("V5", (900, 800), "neg_both"),
    "U3-transposed": ("U3", (500, 600), "transposed"),
    "bool-1row": (bool, (1, 3_000_000), "C"),
    "int16-tall": (np.int16, (2_000_000, 2), "C"),
    "float32-batch-inner": (np.float32, (3, 500, 400), "batch_inner"),
}


@pytest.mark.usefixtures("restore_threads")
@pytest.mark.parametrize("case", list(BIG.values()), ids=list(BIG))
def test_same_result_any_thread_count(case: Any) -> None:
    """1-4 and 64 threads, the pool growing and shrinking: identical bytes."""
    dtype, shape, name = case
    x = layout(name, dtype, shape, np.random.default_rng(4))
    for k, upper in ((0, True), (-5, False), (37, True)):
        want = numpy_oracle(x, k, upper)
        fn = trilu.triu if upper else trilu.tril
        for n in (1, 2, 3, 4, 64, 3, 2):
            trilu.set_num_threads(n)
            assert trilu.get_num_threads() == n
            assert_same(fn(x, k), want)
            out = np.empty(want.shape, want.dtype, order="F")
            assert fn(x, k, out=out) is out
            assert_same(np.array(out), want)


# --- set_num_threads -------------------------------------------------------------------


@pytest.mark.usefixtures("restore_threads")
@pytest.mark.parametrize(
    ("n", "exc", "match"),
    [
        (0, ValueError, r"\bn must be at least 1"),
        (-1, ValueError, r"\bn must be at least 1"),
        (-(2**70), ValueError, r"\bn must be at least 1"),
        (1.5, TypeError, r"\bn must be an integer"),
        (2.0, TypeError, r"\bn must be an integer"),
        (True, TypeError, r"\bn must be an integer"),
        (np.True_, TypeError, r"\bn must be an integer"),
        ("2", TypeError, r"\bn must be an integer"),
        (np.array([2]), TypeError, r"\bn must be an integer"),
    ],
    ids=["0", "-1", "-2**70", "1.5", "2.0", "True", "np.True_", "str", "array"],
)
def test_set_num_threads_rejects(n: Any, exc: type, match: str) -> None:
    """Invalid thread counts raise and leave the count unchanged."""
    trilu.set_num_threads(3)
    with pytest.raises(exc, match=match):
        trilu.set_num_threads(n)
    assert trilu.get_num_threads() == 3


@pytest.mark.usefixtures("restore_threads")
@pytest.mark.parametrize("n", [1, 2, 7, np.int64(3), np.uint8(5)], ids=str)
def test_set_num_threads_accepts(n: Any) -> None:
    """Positive integers, numpy ones included, set the count."""
    trilu.set_num_threads(n)
    assert trilu.get_num_threads() == int(n)
    assert type(trilu.get_num_threads()) is int


@pytest.mark.usefixtures("restore_threads")
def test_set_num_threads_huge() -> None:
    """A very large count is accepted (capped), not an error."""
    trilu.set_num_threads(10**30)
    assert 1 <= trilu.get_num_threads() <= 10**30
    x = make(np.float64, (800, 700), np.random.default_rng(0))
    assert_same(trilu.triu(x, 2), numpy_oracle(x, 2, True))


@pytest.mark.usefixtures("restore_threads")
def test_none_restores_default(monkeypatch) -> None:
    """set_num_threads() / (None) restores the CPU count when the env is unset."""
    monkeypatch.delenv("TRILU_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    trilu.set_num_threads(1)
    trilu.set_num_threads()
    assert trilu.get_num_threads() == min(_default_count(), 64)
    trilu.set_num_threads(2)
    trilu.set_num_threads(None)
    assert trilu.get_num_threads() == min(_default_count(), 64)


@pytest.mark.usefixtures("restore_threads")
@pytest.mark.parametrize("value", ["3", " 5 ", "1"])
def test_none_reads_env(monkeypatch, value: str) -> None:
    """The default is TRILU_NUM_THREADS when it is set."""
    monkeypatch.setenv("TRILU_NUM_THREADS", value)
    trilu.set_num_threads(9)
    trilu.set_num_threads()
    assert trilu.get_num_threads() == int(value)


@pytest.mark.usefixtures("restore_threads")
@pytest.mark.parametrize("value", ["abc", "0", "-2", "1.5", "2x"])
def test_invalid_env_warns(monkeypatch, value: str) -> None:
    """An invalid TRILU_NUM_THREADS warns and falls back to the CPU count."""
    monkeypatch.setenv("TRILU_NUM_THREADS", value)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    with pytest.warns(RuntimeWarning, match="TRILU_NUM_THREADS"):
        trilu.set_num_threads()
    assert trilu.get_num_threads() == min(_default_count(), 64)


def _python(
    code: str, env_value: str | None, omp: str | None = None
) -> subprocess.CompletedProcess[str]:
    """code in a fresh interpreter with TRILU_NUM_THREADS=env_value and
    OMP_NUM_THREADS=omp (None: unset)."""
    return run_python(code, TRILU_NUM_THREADS=env_value, OMP_NUM_THREADS=omp)


@pytest.mark.parametrize("value", ["1", "3", "6"])
def test_env_honoured_at_import(value: str) -> None:
    """A fresh process takes its thread count from TRILU_NUM_THREADS."""
    proc = _python("import trilu; print(trilu.get_num_threads())", value)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == value
    assert proc.stderr == ""


def test_env_unset_at_import() -> None:
    """Without TRILU_NUM_THREADS (nor OMP_NUM_THREADS) a fresh process uses
    the CPUs it may run on."""
    proc = _python("import trilu; print(trilu.get_num_threads())", None)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == min(_default_count(), 64)


def test_invalid_env_warns_at_import() -> None:
    """An invalid TRILU_NUM_THREADS warns once at import and is ignored."""
    code = """
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import trilu
        print(trilu.get_num_threads())
        print([(w.category.__name__, str(w.message)) for w in caught])
    """
    proc = _python(code, "lots")
    assert proc.returncode == 0, proc.stderr
    count, caught = proc.stdout.strip().splitlines()
    assert int(count) == min(_default_count(), 64)
    assert "RuntimeWarning" in caught
    assert "TRILU_NUM_THREADS='lots'" in caught
    cpus = min(_default_count(), 64)
    assert f"using the default, {cpus} (the CPUs this process may run on)" in caught


@pytest.mark.usefixtures("threads4")
def test_a_threads_cap_is_its_own() -> None:
    """The kernel's per-thread cap (what a dask block sets) caps that thread's
    calls only, while another thread calls at the same time."""
    large = np.empty((2048, 2048))  # enough bytes for every thread
    seen = {}
    capped, measured = threading.Event(), threading.Event()

    def capped_thread() -> None:
        old = _kernel.cap_threads(1)
        capped.set()
        measured.wait(60)
        seen["capped"] = _kernel.explain(large, 0, True)["threads"]
        assert _kernel.cap_threads(old) == 1

    thread = threading.Thread(target=capped_thread)
    thread.start()
    capped.wait(60)
    seen["other"] = _kernel.explain(large, 0, True)["threads"]
    measured.set()
    thread.join()
    assert seen == {"capped": 1, "other": 4}
    assert trilu.get_num_threads() == 4


# --- the ecosystem's cap: OMP_NUM_THREADS -----------------------------------------

_REPORT = """
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import trilu
    print(trilu.get_num_threads(), trilu._threads.chosen)
    for w in caught:
        print(w.category.__name__, w.message)
"""


@pytest.mark.parametrize(
    ("omp", "count"), [("1", 1), ("3", 3), ("4,2", 4), (" 5 , 1", 5), ("2,", 2)]
)
def test_omp_num_threads_at_import(omp: str, count: int) -> None:
    """Without TRILU_NUM_THREADS the count is OMP_NUM_THREADS, its first level
    where it is nested; not a count chosen for trilu."""
    proc = _python(_REPORT, None, omp)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"{count} False"]
    assert proc.stderr == ""


def test_trilu_num_threads_wins_over_omp() -> None:
    """TRILU_NUM_THREADS is trilu's own setting: it overrides OMP_NUM_THREADS
    and is a count chosen for trilu."""
    proc = _python(_REPORT, "3", "1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["3 True"]


@pytest.mark.parametrize("omp", ["lots", "0", "-1", ",4", "2.5"])
def test_invalid_omp_warns_once(omp: str) -> None:
    """An invalid OMP_NUM_THREADS warns once, naming it and the CPU count."""
    proc = _python(_REPORT, None, omp)
    assert proc.returncode == 0, proc.stderr
    cpus = min(_default_count(), 64)
    warning = (
        f"RuntimeWarning OMP_NUM_THREADS={omp!r} is not a positive integer; "
        f"using the default, {cpus} (the CPUs this process may run on)"
    )
    assert proc.stdout.splitlines() == [f"{cpus} False", warning]


def test_invalid_trilu_falls_back_to_omp() -> None:
    """A bad TRILU_NUM_THREADS falls back to OMP_NUM_THREADS, and says so."""
    proc = _python(_REPORT, "x", "3")
    assert proc.returncode == 0, proc.stderr
    warning = (
        "RuntimeWarning TRILU_NUM_THREADS='x' is not a positive integer; "
        "using the default, 3 (OMP_NUM_THREADS)"
    )
    assert proc.stdout.splitlines() == ["3 False", warning]


@pytest.mark.usefixtures("restore_threads")
def test_chosen_follows_set_num_threads(monkeypatch) -> None:
    """A count given to set_num_threads is chosen; set_num_threads() is the
    default again, chosen only if TRILU_NUM_THREADS gave it."""
    monkeypatch.delenv("TRILU_NUM_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    trilu.set_num_threads(2)
    assert _threads.chosen
    trilu.set_num_threads()
    assert (trilu.get_num_threads(), _threads.chosen) == (3, False)
    monkeypatch.setenv("TRILU_NUM_THREADS", "2")
    trilu.set_num_threads()
    assert (trilu.get_num_threads(), _threads.chosen) == (2, True)
    with pytest.raises(ValueError, match="at least 1"):
        trilu.set_num_threads(0)
    assert _threads.chosen  # a refused count changes nothing


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_threaded_call_after_fork() -> None:
    """A forked child has none of the pool's threads: it starts its own."""
    code = """
        import os
        import numpy as np
        import trilu
        trilu.set_num_threads(4)
        x = np.arange(800 * 900, dtype=np.float64).reshape(800, 900)
        assert np.array_equal(trilu.triu(x, 1), np.triu(x, 1))
        pid = os.fork()
        if pid == 0:
            ok = np.array_equal(trilu.tril(x, -2), np.tril(x, -2))
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """
    proc = _python(code, "4")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


def _asan_loaded() -> bool:
    """AddressSanitizer's runtime is in this process (nox -s sanitize)."""
    try:
        return "libasan" in Path("/proc/self/maps").read_text()
    except OSError:
        return False


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="needs RLIMIT_AS and /proc"
)
@pytest.mark.skipif(
    _asan_loaded(),
    reason="under AddressSanitizer: the RLIMIT_AS cap that stops thread stacks "
    "also stops ASan's own mappings (shadow memory, allocator regions), so the "
    "process dies instead of running alone",
)
def test_no_thread_can_start() -> None:
    """With no room for a thread's stack (glibc's are 8 MiB; musl's small ones
    may still fit), threaded calls run alone, and right; once threads can
    start again, the pool does."""
    code = """
        import os
        import resource
        import numpy as np
        import trilu
        def threads():
            return len(os.listdir("/proc/self/task"))
        trilu.set_num_threads(4)
        x = np.random.default_rng(0).random((600, 700))  # 3.4 MB: threaded
        want_u, want_l = np.triu(x, 2), np.tril(x, -3)
        before = threads()
        status = open("/proc/self/status").read()
        vm = int(status.split("VmSize:")[1].split()[0]) * 1024
        limit = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm + (7 << 20), limit[1]))
        for _ in range(3):
            assert np.array_equal(trilu.triu(x, 2), want_u)
            assert np.array_equal(trilu.tril(x, -3), want_l)
        alone = threads()
        resource.setrlimit(resource.RLIMIT_AS, limit)
        assert np.array_equal(trilu.triu(x, 2), want_u)
        print(before, alone, threads())
    """
    proc = _python(code, "4")
    assert proc.returncode == 0, proc.stderr
    before, _, after = map(int, proc.stdout.split())
    assert after > before


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux and two CPUs",
)
def test_workers_not_left_pinned() -> None:
    """No worker is left pinned, whatever CPU the caller was held to: after
    many calls, every thread may still run on every CPU."""
    code = """
        import os
        import numpy as np
        import trilu
        trilu.set_num_threads(2)
        x = np.random.default_rng(0).random((600, 700))  # 3.4 MB: threaded
        want = np.triu(x, 1)
        allowed = os.sched_getaffinity(0)
        for i in range(200):  # the caller alternately held to one CPU
            os.sched_setaffinity(0, {min(allowed)} if i % 2 else allowed)
            assert np.array_equal(trilu.triu(x, 1), want)
        os.sched_setaffinity(0, allowed)
        masks = set()
        for tid in os.listdir("/proc/self/task"):
            status = open(f"/proc/self/task/{tid}/status").read()
            masks.add(status.split("Cpus_allowed_list:")[1].split()[0])
        print(len(os.listdir("/proc/self/task")), len(masks))
    """
    proc = _python(code, "2")
    assert proc.returncode == 0, proc.stderr
    threads, masks = map(int, proc.stdout.split())
    assert threads >= 2
    assert masks == 1
