"""trilu on PyTorch tensors beside PyTorch's own way of each operation.

    python bench/bench_torch.py [--quick]

trilu takes the tensor itself (its direct path: the tensor's memory read in
place, the result's buffer returned as a tensor); the peers are PyTorch's CPU
operations with its default settings (all cores). Ratios are PyTorch's time
over trilu's (> 1: trilu is faster), medians over interleaved rounds
(bench.py's ``measure``); masks and index tensors the peers need are made
once, outside the timing. The small case compares the two as the cost of a
call, where the allocation is all the work. Nothing here is a test: no time
is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from bench import cli, environment, fmt_ratio, fmt_time, measure, median, ratio


def _tensor(shape: tuple[int, ...]) -> Any:
    return torch.randn(shape, generator=torch.Generator().manual_seed(0))


def cases() -> list[tuple[str, Any, Any]]:
    """(label, trilu's call, PyTorch's call)."""
    big = _tensor((2048, 2048))
    batch = _tensor((64, 128, 128))
    small = _tensor((4, 4))
    above = ~torch.ones(2048, 2048, dtype=torch.bool).tril()  # the mask to fill
    r, c = torch.triu_indices(2048, 2048)
    rb, cb = torch.triu_indices(128, 128)
    return [
        (
            "triu 2048² f32 / torch.triu",
            lambda: trilu.triu(big),
            lambda: torch.triu(big),
        ),
        (
            "tril(fill=-inf) 2048² f32 / masked_fill",
            lambda: trilu.tril(big, fill=float("-inf")),
            lambda: big.masked_fill(above, float("-inf")),
        ),
        (
            "pack 2048² f32 / t[..., r, c]",
            lambda: trilu.pack(big),
            lambda: big[..., r, c],
        ),
        (
            "pack 64x128² f32 / t[..., r, c]",
            lambda: trilu.pack(batch),
            lambda: batch[..., rb, cb],
        ),
        (
            "triu 4x4 f32 / torch.triu",
            lambda: trilu.triu(small),
            lambda: torch.triu(small),
        ),
    ]


def main() -> None:
    _, rounds, min_sample, _ = cli(__doc__, (5, 0.005), (15, 0.02))
    print(f"# trilu on tensors\n\n{environment()}; torch {torch.__version__}\n")
    print("| case | trilu | torch | torch / trilu |")
    print("|---|---:|---:|---:|")
    for label, ours, theirs in cases():
        samples = measure({"trilu": ours, "torch": theirs}, rounds, min_sample)
        print(
            f"| {label} | {fmt_time(median(samples, 'trilu'))} | "
            f"{fmt_time(median(samples, 'torch'))} | "
            f"{fmt_ratio(ratio(samples, 'torch'))} |"
        )


if __name__ == "__main__":
    main()
