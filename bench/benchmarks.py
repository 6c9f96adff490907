"""asv benchmarks over the same case matrix as bench.py (``asv run``).

Each case times trilu and numpy on the same input, so asv's history shows both.
"""

from __future__ import annotations

import sys
from pathlib import Path

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
