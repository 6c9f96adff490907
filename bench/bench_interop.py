"""trilu on PyTorch tensors and JAX arrays beside each library's own way.

    python bench/bench_interop.py [--quick]

PyTorch: trilu takes the tensor itself (its direct path: the tensor's memory
read in place, the result's buffer returned as a tensor); the peers are
PyTorch's CPU operations with its default settings (all cores). The small
case compares the two as the cost of a call, where the allocation is all
the work. JAX: both under ``jax.jit`` (trilu's call a host callback), on
arrays already on the device. Ratios are the library's time over trilu's
(> 1: trilu is faster), medians over interleaved rounds (bench.py's
``measure``); masks and index arrays the peers need are made once, outside
the timing. Each library is used where installed. Nothing here is a test:
no time is asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

import trilu

sys.path.insert(0, str(Path(__file__).parent))
from bench import cli, environment, fmt_ratio, fmt_time, measure, median, ratio


def _random(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape, np.float32)


def torch_cases() -> list[tuple[str, Any, Any]]:
    """(label, trilu's call, PyTorch's call)."""
    import torch  # noqa: PLC0415  (optional)

    def _tensor(shape: tuple[int, ...]) -> Any:
        return torch.from_numpy(_random(shape))

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


def jax_cases() -> list[tuple[str, Any, Any]]:
    """(label, trilu's call, JAX's call), both jitted, results made ready."""
    import jax  # noqa: PLC0415  (optional)

    jnp = jax.numpy
    big = jnp.asarray(_random((2048, 2048)))
    r, c = np.triu_indices(2048)

    def ready(f: Any) -> Any:
        jitted = jax.jit(f)
        return lambda: jitted(big).block_until_ready()

    return [
        ("triu 2048² f32 / jnp.triu (jit)", ready(trilu.triu), ready(jnp.triu)),
        (
            "pack 2048² f32 / x[..., r, c] (jit)",
            ready(trilu.pack),
            ready(lambda x: x[..., r, c]),
        ),
    ]


def main() -> None:
    _, rounds, min_sample, _ = cli(__doc__, (5, 0.005), (15, 0.02))
    print(f"# trilu on other libraries' arrays\n\n{environment()}\n")
    print("| case | trilu | theirs | theirs / trilu |")
    print("|---|---:|---:|---:|")
    for make in (torch_cases, jax_cases):
        try:
            cases = make()
        except ImportError:
            continue
        for label, ours, theirs in cases:
            samples = measure({"trilu": ours, "theirs": theirs}, rounds, min_sample)
            print(
                f"| {label} | {fmt_time(median(samples, 'trilu'))} | "
                f"{fmt_time(median(samples, 'theirs'))} | "
                f"{fmt_ratio(ratio(samples, 'theirs'))} |"
            )


if __name__ == "__main__":
    main()
