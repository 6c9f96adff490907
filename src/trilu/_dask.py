"""Triangles of dask arrays: one task per block, in a graph built here.

``dask.array.triu`` builds a boolean mask array and runs ``where`` on every
chunk, so it reads (and computes) the input of chunks that end up all zeros and
writes every element through a mask. A graph built block by block lets each
block take its cheapest way, which neither ``map_blocks`` nor ``blockwise`` can
express (both make every output block depend on its input block):

- a block wholly in the zeroed triangle is a broadcast zero, with no dependency
  on the input, so its input chunk is never computed or read;
- a block wholly kept is an alias of the input's key: no task, no copy;
- only blocks the diagonal crosses run trilu's kernel, with the block's own
  diagonal offset ``k - (first column - first row)``.

Chunks, including irregular ones and chunks along batch axes, are kept exactly.
Tasks are top-level functions, so the graph pickles for ``dask.distributed``.
A block runs on one thread unless trilu's count was chosen (set_num_threads,
threadpoolctl, TRILU_NUM_THREADS): dask already runs blocks in parallel.
This module is imported only when a dask array is passed to trilu.
"""

from __future__ import annotations

import math
from itertools import accumulate, product
from typing import Any

import numpy as np
from dask._task_spec import Alias, Task, TaskRef
from dask.array.core import Array
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.typing import Key

from . import _kernel, _route, _threads, _validate

__all__ = ["band", "mirror", "triangle"]


# --- tasks (top level, so they pickle) -----------------------------------------


def _cut(block: Any, k: int, upper: bool, onnx: bool) -> Any:
    """A block the diagonal crosses: the kernel with the block's own offset k
    (the graph has validated the arguments); a chunk that is not a numpy
    array (CuPy, ...) goes to its own library's triu/tril, as trilu does
    elsewhere. On one thread, as dask runs blocks in parallel, unless the
    count was chosen for trilu (``_threads.chosen``); the cap is this
    thread's alone."""
    cap = _kernel.cap_threads(0 if _threads.chosen else 1)
    try:
        if not isinstance(block, np.ndarray):
            return _route.numpy_function(upper)(block, k)
        return _route.triangle(np.asarray(block), k, upper, None, None, onnx)
    finally:
        _kernel.cap_threads(cap)


def _cut_rows(block: Any, rows: int, k: int, upper: bool) -> Any:
    """A block of numpy's N x N result for a 1-D input: its rows repeat block."""
    return _cut(np.broadcast_to(block, (rows, block.shape[0])), k, upper, False)


def _zeros(shape: tuple[int, ...], meta: Any, fill: Any) -> Any:
    """A block wholly zeroed, made without the input: one zero, broadcast.

    Read-only and of one element's memory, as the chunks of ``dask.array.zeros``
    (dask never writes into a chunk, ``compute`` returns a copy), so making it
    costs nothing, storing it reads no memory and moving it between workers
    sends one element.
    """
    if fill is None:
        zero = np.zeros_like(meta, shape=())
    else:
        zero = np.full_like(meta, fill, shape=())
    return np.broadcast_to(zero, shape)


def _zeros_like(block: Any, meta: Any, fill: Any) -> Any:
    """Zeros of a block whose batch size is unknown until its input exists."""
    return _zeros(block.shape, meta, fill)


# --- the graph -------------------------------------------------------------------


def _offsets(chunks: tuple[int, ...]) -> list[int]:
    """The first index of each chunk along an axis."""
    return [0, *accumulate(chunks)][:-1]


def _kind(rows: int, cols: int, k: int, upper: bool) -> str:
    """'zero', 'keep' or 'cut' for a rows x cols block whose own offset is k.

    In the block, column minus row runs from 1 - rows to cols - 1.
    """
    if rows == 0 or cols == 0:
        return "zero"  # nothing to read: no dependency either
    if upper:
        return "keep" if k <= 1 - rows else "zero" if k >= cols else "cut"
    return "keep" if k >= cols - 1 else "zero" if k <= -rows else "cut"


def triangle(x: Any, k: int, upper: bool, *, onnx: bool = False) -> Any:
    """triu (``upper``) or tril of dask array x, lazily, with x's chunks.

    ``x`` is a ``dask.array.Array`` or, with dask's opt-in array expressions,
    their collection; the result is of the same kind.

    ``k`` is any Python int (clamped here). ``onnx`` applies ``trilu.trilu``'s
    rules: Trilu's type constraint, rank >= 2 and strings zeroed to "".
    Otherwise numpy's: a 1-D x of n elements gives an n x n result, chunked
    along both axes as x is.
    """
    if onnx:
        _validate.onnx_type(x.dtype)
    if x.ndim < 2:
        _validate.rank(x.shape, onnx)
    vector = x.ndim == 1
    chunks = (x.chunks[0], x.chunks[0]) if vector else x.chunks
    if any(math.isnan(c) for c in chunks[-2] + chunks[-1]):
        raise ValueError(
            "trilu needs the chunk sizes of the last two axes of a dask array; "
            "call x.compute_chunk_sizes() first"
        )
    rows_total, cols_total = sum(chunks[-2]), sum(chunks[-1])
    k = max(-rows_total, min(cols_total, k))  # beyond these all is kept or zero

    dtype = _validate.result_dtype(x.dtype)
    meta = meta_from_array(x._meta, ndim=len(chunks), dtype=dtype)  # type: ignore[no-untyped-call]
    fill = "" if onnx and dtype.kind == "O" else None
    # A kept block may pass its chunk through only if it is already the result.
    alias = not vector and dtype == x.dtype

    prefix = "trilu" if onnx else "triu" if upper else "tril"
    name = f"{prefix}-{tokenize(x, k, upper, onnx)}"
    row_offsets, col_offsets = _offsets(chunks[-2]), _offsets(chunks[-1])
    dsk: dict[Key, Any] = {}
    for index in product(*(range(len(c)) for c in chunks)):
        i, j = index[-2], index[-1]
        rows, cols = chunks[-2][i], chunks[-1][j]
        kb = k - (col_offsets[j] - row_offsets[i])
        key: Key = (name, *index)
        source: Key = (x.name, j) if vector else (x.name, *index)
        shape = tuple(c[n] for c, n in zip(chunks, index, strict=True))
        kind = _kind(rows, cols, kb, upper)
        if kind == "zero":
            if any(math.isnan(n) for n in shape):  # an unknown batch size
                dsk[key] = Task(key, _zeros_like, TaskRef(source), meta, fill)
            else:
                dsk[key] = Task(key, _zeros, shape, meta, fill)
        elif kind == "keep" and alias:
            dsk[key] = Alias(key, source)
        elif vector:
            dsk[key] = Task(key, _cut_rows, TaskRef(source), rows, kb, upper)
        else:
            dsk[key] = Task(key, _cut, TaskRef(source), kb, upper, onnx)
    if not isinstance(x, Array):  # an array expression ("array.query-planning")
        # Only there: the expression machinery is not loaded unless enabled.
        from dask.array._array_expr._collection import from_graph  # noqa: PLC0415

        layer = {**x.__dask_graph__(), **dsk}
        return from_graph(layer, meta, chunks, list(dsk), prefix)  # type: ignore[no-untyped-call]
    # dask's Array does not match dask's own DaskCollection protocol for mypy
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[x])  # type: ignore[list-item]
    return Array(graph, name, chunks, meta=meta)  # type: ignore[no-untyped-call]


def band(
    x: Any, lo: int | None, hi: int | None, fill: Any, *, onnx: bool = False, name: str
) -> Any:
    """Band (lo, hi) of dask array x, the rest ``fill``, lazily."""
    if fill is None and (lo is None) != (hi is None):
        return triangle(x, lo if hi is None else hi, hi is None, onnx=onnx)
    raise NotImplementedError(f"{name} with fill= or two bounds on dask arrays")


def mirror(x: Any, upper: bool, conj: bool) -> Any:
    """mirror of dask array x, lazily."""
    raise NotImplementedError("mirror on dask arrays")
