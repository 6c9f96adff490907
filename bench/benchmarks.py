"""asv benchmarks over bench.py's grid and sweep.py's classes (``asv run``).

Each case times trilu and numpy on the same input, so asv's history shows both.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from cases import CASES

_LABELS = [f"{c.label} {c.op}" for c in CASES]


class Triangle:
    """Fresh output: trilu.triu/tril against numpy.triu/tril."""

    params = (_LABELS, ["trilu", "numpy"])
    param_names = ("case", "implementation")

    def setup(self, label: str, implementation: str) -> None:
        case = CASES[_LABELS.index(label)]
        self.x = case.make()
        self.k = case.k
        module = trilu if implementation == "trilu" else np
        self.fn = module.triu if case.upper else module.tril

    def time_fresh(self, *_: str) -> None:
        self.fn(self.x, self.k)


class Out:
    """out= into a preallocated array, and in place."""

    params = (_LABELS,)
    param_names = ("case",)

    def setup(self, label: str) -> None:
        case = CASES[_LABELS.index(label)]
        self.x = case.make()
        self.k = case.k
        self.out = np.empty_like(self.x)
        self.fn = trilu.triu if case.upper else trilu.tril

    def time_out(self, *_: str) -> None:
        self.fn(self.x, self.k, out=self.out)

    def time_inplace(self, *_: str) -> None:
        self.fn(self.out, self.k, out=self.out)


def _sweep_cases() -> dict[str, Any]:
    """Two drawn cases of each sweep class (seed 0), by name."""
    from sweep import CLASSES, draw  # noqa: PLC0415

    rng = np.random.default_rng(0)
    return {c.name: c for c in (draw(cls, rng) for cls in CLASSES for _ in range(2))}


_SWEEP = _sweep_cases()


class Sweep:
    """The shape sweep's classes (bench/sweep.py, seed 0): fresh and out=."""

    params = (list(_SWEEP), ["trilu", "numpy"])
    param_names = ("case", "implementation")

    def setup(self, name: str, implementation: str) -> None:
        case = _SWEEP[name]
        self.x = case.make()
        self.k = case.k
        self.out = np.empty_like(self.x)
        module = trilu if implementation == "trilu" else np
        self.fn = module.triu if case.upper else module.tril
        self.trilu = implementation == "trilu"

    def time_fresh(self, *_: str) -> None:
        self.fn(self.x, self.k)

    def time_out(self, *_: str) -> None:
        if self.trilu:
            self.fn(self.x, self.k, out=self.out)
        else:
            np.copyto(self.out, self.fn(self.x, self.k))
