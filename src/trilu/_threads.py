"""The thread count of large calls: its default from the environment, and
whether it was chosen for trilu (which dask blocks honour, ``_dask``)."""

from __future__ import annotations

import numbers
import os
import warnings

from . import _kernel

# Whether the count was chosen for trilu (set_num_threads(n), threadpoolctl's
# limits, TRILU_NUM_THREADS) rather than taken from the ecosystem's cap or the
# CPUs: a dask block runs on one thread unless it was chosen (_dask.py), as
# dask already runs blocks in parallel.
chosen = False


def _cpus() -> int:
    """The CPUs this process may run on (its affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    count = getattr(os, "process_cpu_count", os.cpu_count)()  # 3.13+: affinity
    return max(1, count or 1)


def _default_threads() -> tuple[int, bool]:
    """The default count, and whether it was chosen for trilu.

    TRILU_NUM_THREADS, else OMP_NUM_THREADS (the ecosystem's cap, which
    OpenBLAS, MKL and numexpr also honour), else the CPUs this process may
    run on. A bad value warns, naming the variable and the count taken
    instead.
    """
    bad = []
    for name in ("TRILU_NUM_THREADS", "OMP_NUM_THREADS"):
        raw = os.environ.get(name, "")
        if not raw.strip():
            continue
        first = raw.partition(",")[0] if name == "OMP_NUM_THREADS" else raw
        try:  # OMP_NUM_THREADS nested: "4,2" is 4, at the outer level
            count = int(first)
        except ValueError:
            count = 0
        if count >= 1:
            source = name
            break
        bad.append(f"{name}={raw!r}")
    else:
        count, source = _cpus(), "the CPUs this process may run on"
    for setting in bad:
        warnings.warn(
            f"{setting} is not a positive integer; using the default, "
            f"{count} ({source})",
            RuntimeWarning,
            stacklevel=3,
        )
    return count, source == "TRILU_NUM_THREADS"


def set_num_threads(n: int | None = None) -> None:
    """Set how many threads a large call may use; 1 disables threading.

    A call uses one thread per 512 KiB it moves (bytes written plus bytes
    read), up to this count, so small calls stay on the calling thread.
    ``threadpoolctl.threadpool_limits`` sets the same count when threadpoolctl
    is installed (see :doc:`/user_guide/threads`).

    Parameters
    ----------
    n : int or None, optional
        The thread count, at least 1; counts above 64 are taken as 64.
        ``None`` (the default) restores the default count: the
        ``TRILU_NUM_THREADS`` environment variable if it is set, else
        ``OMP_NUM_THREADS`` (its first level), else the number of CPUs this
        process may run on. A count given here, by threadpoolctl or by
        ``TRILU_NUM_THREADS`` is also used inside dask tasks, which otherwise
        run each block on one thread.

    Raises
    ------
    TypeError
        If `n` is not an integer (``bool`` included).
    ValueError
        If `n` is less than 1.

    See Also
    --------
    get_num_threads

    Examples
    --------
    >>> import trilu
    >>> trilu.set_num_threads(1)
    >>> trilu.get_num_threads()
    1
    >>> trilu.set_num_threads()  # the default again
    """
    global chosen  # noqa: PLW0603  (the process's count, as the kernel's)
    count, chosen_now = _default_threads() if n is None else (n, True)
    value: object = count  # whatever a caller passed: checked below
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"n must be an integer, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"n must be at least 1, got {value}")
    _kernel.set_num_threads(min(int(value), 64))  # the kernel takes a C int
    chosen = chosen_now


def get_num_threads() -> int:
    """How many threads a large call may use.

    Returns
    -------
    int
        The count set by :func:`set_num_threads` (or by threadpoolctl), at
        least 1.

    Examples
    --------
    >>> import trilu
    >>> trilu.get_num_threads() >= 1
    True
    """
    return _kernel.get_num_threads()
