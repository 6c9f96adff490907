"""Triangles, bands and mirrors of dask arrays: one task per block, in a
graph built here.

``dask.array.triu`` builds a boolean mask array and runs ``where`` on every
chunk, so it reads (and computes) the input of chunks that end up all zeros and
writes every element through a mask. A graph built block by block lets each
block take its cheapest way, which neither ``map_blocks`` nor ``blockwise`` can
express (both make every output block depend on its input block):

- band (triu, tril, trilu and band, with or without ``fill``): a block wholly
  outside the band is the fill broadcast, with no dependency on the input, so
  its input chunk is never computed or read; a block wholly inside is an alias
  of the input's key (no task, no copy); only blocks a bound crosses run
  trilu's kernel, with the block's own offsets ``lo - (first column - first
  row)`` and ``hi - (...)``;
- mirror: a block of the kept triangle is an alias, one of the other triangle
  is the transpose of the block across the diagonal (which alone it reads),
  and only diagonal blocks run the kernel;
- pack: each row block's kept elements are a contiguous segment of the
  packed axis (row after row), one chunk of the result, packed from the
  blocks of its row the band meets, side by side (the others never read);
- unpack: the result's rows are chunked so that each row block's segment is
  about one chunk of the packed axis, and its columns as its rows; a row
  block's segment is unpacked once, into the columns its band meets, and
  each block of that row is a view of it; a block the band misses is the
  fill broadcast, with no dependency; order="F" as the transpose's
  order="C", and mirror= one block per matrix (its whole vector);
- band_mask and attention_mask (``chunks=``), which have no input: a block
  wholly on or off the band is its value broadcast, and only blocks the
  band's edges cross run the kernel.

Chunks, including irregular ones and chunks along batch axes, are kept exactly
(mirror makes the columns' chunks the rows' first, so blocks pair up across the
diagonal; pack and unpack chunk their new axes as said). Arguments are
validated when the graph is built, with the rules and messages of numpy input
(``_validate``), not when it is computed. Tasks are top-level functions, so
the graph pickles for ``dask.distributed``. A block
runs on one thread unless trilu's count was chosen (set_num_threads,
threadpoolctl, TRILU_NUM_THREADS): dask already runs blocks in parallel.
This module is imported only when a dask array is passed to trilu, or
``chunks=`` asks for one.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from itertools import accumulate, product
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from dask.array.core import Array, normalize_chunks
from dask.array.utils import meta_from_array
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph
from dask.typing import Key

from . import _dispatch, _kernel, _masks, _pack, _private, _route, _threads, _validate

if TYPE_CHECKING:
    from ._typing import Mirror

_tasks = _private.dask_tasks()
Alias, Task, TaskRef = _tasks.Alias, _tasks.Task, _tasks.TaskRef

__all__ = ["band", "mask", "mirror", "pack", "unpack"]


# --- tasks (top level, so they pickle) -----------------------------------------


@contextmanager
def _block_threads() -> Iterator[None]:
    """One kernel thread for this block, as dask runs blocks in parallel,
    unless the count was chosen for trilu (``_threads.chosen``); the cap is
    this thread's alone."""
    cap = _kernel.cap_threads(0 if _threads.chosen else 1)
    try:
        yield
    finally:
        _kernel.cap_threads(cap)


def _not_numpy(block: Any, what: str) -> TypeError:
    """The error for another library's chunk where trilu's kernel is needed:
    such a chunk's library is only ever asked for numpy's triu and tril."""
    cls = type(block)
    return TypeError(
        f"{what} of a dask array needs numpy chunks, got {cls.__module__}.{cls.__name__}"
    )


def _cut(block: Any, lo: int | None, hi: int | None, fill: Any, onnx: bool) -> Any:
    """A block a bound crosses: the kernel with the block's own offsets (the
    graph has validated the arguments). A chunk that is not a numpy array
    (CuPy, ...) goes to its own library's triu/tril, as trilu does elsewhere;
    a fill there has no such function."""
    with _block_threads():
        if isinstance(block, np.ndarray):
            return _route.band(block, lo, hi, fill, None, None, onnx)
        if fill is not None:
            raise _not_numpy(block, "fill=")
        return _dispatch.own_band(block, lo, hi)


def _cut_rows(block: Any, rows: int, lo: int | None, hi: int | None, fill: Any) -> Any:
    """A block of numpy's N x N result for a 1-D input: its rows repeat block."""
    rows_of = np.broadcast_to(block, (rows, block.shape[0]))
    return _cut(rows_of, lo, hi, fill, False)


def _zeros(shape: tuple[int, ...], meta: Any, fill: Any) -> Any:
    """A block wholly outside the band, made without the input: one zero (or
    the fill, a 0-d array of the result's dtype; a mask's keep for a block
    wholly on its band), broadcast.

    Read-only and of one element's memory, as the chunks of ``dask.array.zeros``
    (dask never writes into a chunk, ``compute`` returns a copy), so making it
    costs nothing, storing it reads no memory and moving it between workers
    sends one element.
    """
    if fill is None:
        zero = np.zeros_like(meta, shape=())
    elif type(meta) is np.ndarray:
        zero = fill  # its very bytes: full_like copies no padding
    else:
        zero = np.full_like(meta, fill, shape=())
    return np.broadcast_to(zero, shape)


def _zeros_like(block: Any, meta: Any, fill: Any) -> Any:
    """Zeros of a block whose batch size is unknown until its input exists."""
    return _zeros(block.shape, meta, fill)


def _fill_like(vector: Any, matrix: tuple[int, int], meta: Any, fill: Any) -> Any:
    """A block of unpack's result the band misses, in a batch whose size is
    unknown until a packed chunk of it exists."""
    return _zeros((*vector.shape[:-1], *matrix), meta, fill)


def _diagonal(block: Any, upper: bool, conj: bool) -> Any:
    """A diagonal block of mirror: the kernel's mirror of the block."""
    if not isinstance(block, np.ndarray):
        raise _not_numpy(block, "mirror")
    with _block_threads():
        return _route.mirror(block, upper, conj, None, None)


def _flip(block: Any, conj: bool) -> Any:
    """A block of mirror's other triangle: block (j, i) transposed, a view,
    conjugated with conj.

    A complex numpy block has the sign of its imaginary parts flipped in a
    copy, as the kernel's XOR flips it: NaNs and long double's padding bit
    for bit. Objects get their ``.conjugate()``, other libraries' chunks
    their own ``conjugate``.
    """
    flipped = np.swapaxes(block, -1, -2)
    if not conj:
        return flipped
    if isinstance(block, np.ndarray) and block.dtype.kind == "c":
        flipped = flipped.copy()
        np.negative(flipped.imag, out=flipped.imag)
        return flipped
    return np.conjugate(flipped)


def _side_by_side(blocks: tuple[Any, ...]) -> Any:
    """Blocks of one row of blocks (or chunks of a packed axis), joined along
    the last axis in their own dtype (concatenate's promotion would make a
    structured one native): the one block itself where there is one."""
    if len(blocks) == 1:
        return blocks[0]
    return np.concatenate(blocks, axis=-1, dtype=blocks[0].dtype)


def _pack_rows(k: int, upper: bool, *blocks: Any) -> Any:
    """A row block's segment of pack's result: the kept elements of the
    blocks of its row the band meets (k relative to the first of them)."""
    with _block_threads():
        return _pack.pack(_side_by_side(blocks), k, upper=upper)


def _unpack_rows(start: int, stop: int, rows: int, cols: int, k: int,
                 upper: bool, fill: Any, *chunks: Any) -> Any:  # fmt: skip
    """A row block's columns the band meets, unpacked from elements
    [start, stop) of the packed chunks its segment overlaps (k relative to
    its first row and column)."""
    segment = _side_by_side(chunks)[..., start:stop]
    with _block_threads():
        return _pack.unpack(segment, rows, cols, k, upper=upper, fill=fill)


def _unpack_whole(
    v: Any,
    n: int,
    k: int,
    upper: bool,
    order: Literal["C", "F"],
    fill: Any,
    mirror: Mirror,
) -> Any:
    """A block of mirrored matrices from their whole vectors."""
    with _block_threads():
        return _pack.unpack(
            v, n, n, k, upper=upper, order=order, fill=fill, mirror=mirror
        )


def _columns(strip: Any, start: int, stop: int) -> Any:
    """A block of unpack's result: columns [start, stop) of its row's strip."""
    return strip[..., start:stop]


# --- the graph -------------------------------------------------------------------


def _offsets(chunks: tuple[int, ...]) -> list[int]:
    """The first index of each chunk along an axis."""
    return [0, *accumulate(chunks)][:-1]


def _kind(rows: int, cols: int, lo: int | None, hi: int | None) -> str:
    """'zero', 'keep' or 'cut' for a rows x cols block whose own band is
    (lo, hi), None unbounded.

    In the block, column minus row runs from 1 - rows to cols - 1.
    """
    first, last = 1 - rows, cols - 1
    if (
        rows == 0  # nothing to read: no dependency either
        or cols == 0
        or (lo is not None and lo > last)
        or (hi is not None and hi < first)
        or (lo is not None and hi is not None and lo > hi)
    ):
        return "zero"
    if (lo is None or lo <= first) and (hi is None or hi >= last):
        return "keep"
    return "cut"


def _known(chunks: tuple[tuple[float, ...], ...]) -> None:
    """Raise unless the matrix axes' chunk sizes are known: blocks are told
    apart by where they are."""
    if any(math.isnan(c) for c in chunks[-2] + chunks[-1]):
        raise ValueError(
            "trilu needs the chunk sizes of the last two axes of a dask array; "
            "call x.compute_chunk_sizes() first"
        )


def _numpy_meta(x: Any, what: str) -> None:
    """Raise now for a dask array of another library's chunks (its meta says
    so), where a block would need trilu's kernel for more than triu/tril."""
    if not isinstance(x._meta, np.ndarray):
        raise _not_numpy(x._meta, what)


def _element(value: np.ndarray) -> np.ndarray:
    """A validated fill as the kernel writes it: its bytes by
    ``_validate.fill_bytes`` (a long double's padding zero, not what the
    conversion left there); references (objects, strings of StringDType) as
    they are, copied by numpy."""
    if value.dtype.hasobject:
        return value
    data = _validate.fill_bytes(value, value.dtype)
    return np.frombuffer(data, value.dtype).reshape(())


def _keys_name(x: Any) -> str:
    """The name in the keys of x's blocks: an array expression's own name is
    not that of the graph it lowers to where lowering renames (a rechunk's)."""
    if isinstance(x, Array):
        return str(x.name)
    keys = x.__dask_keys__()
    while isinstance(keys, list) and keys:
        keys = keys[0]
    return str(keys[0]) if isinstance(keys, tuple) else str(x.name)


def _collection(x: Any, dsk: dict[Key, Any], name: str, meta: Any, chunks: Any) -> Any:
    """The dask array of the keys of graph dsk named name, on top of x's
    graph (None: of no other): an Array, or for x of dask's array expressions
    (for no x, where dask makes those), their collection."""
    if x is None:
        import dask.array  # noqa: PLC0415  (loaded already: dask's own import)

        expressions = dask.array.Array is not Array
    else:
        expressions = not isinstance(x, Array)
    if expressions:  # an array expression ("array.query-planning")
        # Only there: the expression machinery is not loaded unless enabled.
        from_graph = _private.dask_from_graph()
        layer = dsk if x is None else {**x.__dask_graph__(), **dsk}
        prefix = name.rpartition("-")[0]
        keys = [key for key in dsk if isinstance(key, tuple) and key[0] == name]
        return from_graph(layer, meta, chunks, keys, prefix)
    # (Any: dask's Array does not match dask's own DaskCollection protocol
    # for mypy)
    depends: list[Any] = [] if x is None else [x]
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=depends)
    return Array(graph, name, chunks, meta=meta)  # type: ignore[no-untyped-call]


def band(
    x: Any,
    lo: int | None,
    hi: int | None,
    fill: Any,
    *,
    onnx: bool = False,
    name: str,
) -> Any:
    """Band (lo, hi) of dask array x (``lo <= j - i <= hi``, None unbounded),
    the rest ``fill`` (None: numpy's zero), lazily, with x's chunks.

    triu is (k, None), tril (None, k). ``x`` is a ``dask.array.Array`` or,
    with dask's opt-in array expressions, their collection; the result is of
    the same kind, its keys named after ``name`` (the public function).

    ``lo`` and ``hi`` are any Python ints (clamped here). ``fill`` is
    converted to the result's dtype now, so a bad one raises at the call, as
    for numpy input. ``onnx`` applies ``trilu.trilu``'s rules: Trilu's type
    constraint, rank >= 2 and object strings zeroed to "". Otherwise numpy's:
    a 1-D x of n elements gives an n x n result, chunked along both axes as
    x is.
    """
    if onnx:
        _validate.onnx_type(x.dtype)
    if x.ndim < 2:
        _validate.rank(x.shape, onnx)
    vector = x.ndim == 1
    chunks = (x.chunks[0], x.chunks[0]) if vector else x.chunks
    _known(chunks)
    rows_total, cols_total = sum(chunks[-2]), sum(chunks[-1])
    # beyond these bounds all is kept or nothing is
    if lo is not None:
        lo = max(-rows_total, min(cols_total, lo))
    if hi is not None:
        hi = max(-rows_total, min(cols_total, hi))

    dtype = _validate.result_dtype(x.dtype)
    value = None  # what blocks outside the band hold, None for zeros
    if fill is not None or (onnx and dtype.kind == "O"):
        value = _element(_validate.fill(fill, dtype, "" if onnx else None))
        if fill is not None:
            _numpy_meta(x, "fill=")
    meta = meta_from_array(x._meta, ndim=len(chunks), dtype=dtype)  # type: ignore[no-untyped-call]
    # A kept block may pass its chunk through only if it is already the result.
    alias = not vector and dtype == x.dtype

    key_name = f"{name}-{tokenize(x, lo, hi, value, onnx)}"
    source_name = _keys_name(x)
    row_offsets, col_offsets = _offsets(chunks[-2]), _offsets(chunks[-1])
    dsk: dict[Key, Any] = {}
    for index in product(*(range(len(c)) for c in chunks)):
        i, j = index[-2], index[-1]
        rows, cols = chunks[-2][i], chunks[-1][j]
        shift = col_offsets[j] - row_offsets[i]
        block_lo = None if lo is None else lo - shift
        block_hi = None if hi is None else hi - shift
        key: Key = (key_name, *index)
        source: Key = (source_name, j) if vector else (source_name, *index)
        shape = tuple(c[n] for c, n in zip(chunks, index, strict=True))
        kind = _kind(rows, cols, block_lo, block_hi)
        if kind == "zero":
            if any(math.isnan(n) for n in shape):  # an unknown batch size
                dsk[key] = Task(key, _zeros_like, TaskRef(source), meta, value)
            else:
                dsk[key] = Task(key, _zeros, shape, meta, value)
        elif kind == "keep" and alias:
            dsk[key] = Alias(key, source)
        elif vector:
            args = (rows, block_lo, block_hi, fill)
            dsk[key] = Task(key, _cut_rows, TaskRef(source), *args)
        else:
            args = (block_lo, block_hi, fill, onnx)
            dsk[key] = Task(key, _cut, TaskRef(source), *args)
    return _collection(x, dsk, key_name, meta, chunks)


def mirror(x: Any, upper: bool, conj: bool) -> Any:
    """mirror of dask array x, lazily: the triangle ``upper`` names kept,
    the other its transpose (conjugated with ``conj``).

    Square matrices only. The columns are rechunked as the rows where their
    chunks differ, so that block (i, j) and block (j, i) are each other's
    transposes; the result has those square chunks. A 1-D x (the rows of an
    n x n matrix) and a dtype numpy changes (byte order, packed structures)
    are first made the matrix of the result's dtype, block by block.
    """
    if x.ndim < 2:
        _validate.rank(x.shape, False)
    else:
        _known(x.chunks)
        _validate.square(x.shape, "mirror")
    if conj:
        _validate.conjugable(x.dtype)
    _numpy_meta(x, "mirror")
    conj = conj and x.dtype.kind in "cO"  # real numbers are their own conjugates
    if x.ndim < 2 or _validate.result_dtype(x.dtype) != x.dtype:
        x = band(x, None, None, None, name="mirror-input")
    chunks = x.chunks
    if chunks[-1] != chunks[-2]:
        x = x.rechunk({x.ndim - 1: chunks[-2]})
        chunks = x.chunks

    meta = meta_from_array(x._meta, ndim=x.ndim, dtype=x.dtype)  # type: ignore[no-untyped-call]
    key_name = f"mirror-{tokenize(x, upper, conj)}"
    source = _keys_name(x)
    dsk: dict[Key, Any] = {}
    for index in product(*(range(len(c)) for c in chunks)):
        *batch, i, j = index
        key: Key = (key_name, *index)
        if i == j:
            dsk[key] = Task(key, _diagonal, TaskRef((source, *index)), upper, conj)
        elif (j > i) == upper:  # the kept triangle
            dsk[key] = Alias(key, (source, *index))
        else:
            dsk[key] = Task(key, _flip, TaskRef((source, *batch, j, i)), conj)
    return _collection(x, dsk, key_name, meta, chunks)


def _masked(
    rows: int, cols: int, lo: int | None, hi: int | None, keep: Any, fill: Any
) -> Any:
    """A block of a mask that the band's edge crosses: the kernel, with the
    block's own offsets."""
    with _block_threads():
        return _masks.numpy_mask(rows, cols, lo, hi, keep, fill)


def mask(
    rows: int,
    cols: int,
    lo: int | None,
    hi: int | None,
    keep: np.ndarray,
    fill: np.ndarray,
    chunks: Any,
    name: str,
) -> Any:
    """band_mask lazily: a rows x cols dask array in `chunks` (any that
    ``dask.array.zeros`` takes) of keep where ``lo <= j - i <= hi`` (None
    unbounded) and fill elsewhere (0-d arrays of the result's dtype), its
    keys named after ``name`` (the public function).

    A block wholly on or off the band is its value broadcast, one element of
    memory, as ``dask.array.full``'s blocks; only blocks that the band's
    edges cross run the kernel.
    """
    dtype = keep.dtype
    chunks = normalize_chunks(chunks, (rows, cols), dtype=dtype)  # type: ignore[no-untyped-call]
    keep, fill = _element(keep), _element(fill)
    meta = np.empty((0, 0), dtype)
    key_name = f"{name}-{tokenize(rows, cols, lo, hi, keep, fill, chunks)}"
    row_offsets, col_offsets = _offsets(chunks[0]), _offsets(chunks[1])
    dsk: dict[Key, Any] = {}
    for i, j in product(range(len(chunks[0])), range(len(chunks[1]))):
        block_rows, block_cols = chunks[0][i], chunks[1][j]
        shift = col_offsets[j] - row_offsets[i]
        block_lo = None if lo is None else lo - shift
        block_hi = None if hi is None else hi - shift
        key: Key = (key_name, i, j)
        kind = _kind(block_rows, block_cols, block_lo, block_hi)
        if kind == "cut":
            args = (block_rows, block_cols, block_lo, block_hi, keep, fill)
            dsk[key] = Task(key, _masked, *args)
        else:
            value = keep if kind == "keep" else fill
            dsk[key] = Task(key, _zeros, (block_rows, block_cols), meta, value)
    return _collection(None, dsk, key_name, meta, chunks)


def _clamp(bound: int | None, rows: int, cols: int) -> int | None:
    """A band offset within [-rows, cols], where every one beyond keeps the
    same (None: unbounded)."""
    return None if bound is None else max(-rows, min(cols, bound))


def _count(rows: int, cols: int, lo: int | None, hi: int | None) -> int:
    """The kept elements of the first `rows` rows of a matrix `cols` wide."""
    return int(_kernel.band_count(rows, cols, lo, hi))


def _met(
    first: int,
    stop: int,
    chunks: tuple[int, ...],
    lo: int | None,
    hi: int | None,
) -> list[int]:
    """The blocks of columns (of these chunks) that band (lo, hi) meets in
    rows [first, stop): consecutive ones, as the columns it keeps there are."""
    met = []
    for j, (start, cols) in enumerate(zip(_offsets(chunks), chunks, strict=True)):
        shift = start - first
        block = (None if b is None else b - shift for b in (lo, hi))
        if _kind(stop - first, cols, *block) != "zero":
            met.append(j)
    return met


def _split(ends: Iterable[int], total: int) -> tuple[int, ...]:
    """The chunks of an axis `total` long that end at these ends (those
    within it)."""
    bounds = sorted({e for e in ends if 0 < e < total})
    return tuple(np.diff([0, *bounds, total]).tolist())


def _unknown(shape: tuple[float, ...]) -> bool:
    return any(math.isnan(n) for n in shape)


def pack(x: Any, k: int, upper: bool, order: Literal["C", "F"] = "C") -> Any:
    """pack of dask array x, lazily: one chunk of the packed axis per row
    block, its kept elements, from the blocks of its row the band meets
    (the others never read); the batch axes' chunks kept. order="F" packs
    the columns: the transpose's rows, of its other triangle."""
    if order == "F":
        x, k, upper = x.swapaxes(-1, -2), -k, not upper
    lo, hi = _pack.band_of(k, upper)
    _pack.packed_shape(x.shape, lo, hi)  # (2 or more dimensions)
    _known(x.chunks)
    _numpy_meta(x, "pack")
    rows_total, cols_total = x.shape[-2:]
    lo, hi = _clamp(lo, rows_total, cols_total), _clamp(hi, rows_total, cols_total)
    row_offsets = _offsets(x.chunks[-2])
    row_ends = [
        first + rows for first, rows in zip(row_offsets, x.chunks[-2], strict=True)
    ]
    counts = [_count(r, cols_total, lo, hi) for r in (0, *row_ends)]
    chunks = (*x.chunks[:-2], tuple(np.diff(counts).tolist()))
    meta = meta_from_array(x._meta, ndim=len(chunks), dtype=x.dtype)  # type: ignore[no-untyped-call]
    key_name = f"pack-{tokenize(x, k, upper)}"
    source = _keys_name(x)
    col_offsets = _offsets(x.chunks[-1])
    dsk: dict[Key, Any] = {}
    for index in product(*(range(len(c)) for c in chunks)):
        *batch, i = index
        key: Key = (key_name, *index)
        shape = tuple(c[n] for c, n in zip(chunks, index, strict=True))
        met = _met(row_offsets[i], row_ends[i], x.chunks[-1], lo, hi)
        if not met and not _unknown(shape):  # nothing kept: nothing read
            dsk[key] = Task(key, _zeros, shape, meta, None)
            continue
        met = met or [0]  # nothing kept, in a batch of unknown size: read for it
        shift = col_offsets[met[0]] - row_offsets[i]
        blocks = [TaskRef((source, *batch, i, j)) for j in met]
        dsk[key] = Task(key, _pack_rows, k - shift, upper, *blocks)
    return _collection(x, dsk, key_name, meta, chunks)


def _segment(start: int, stop: int, chunks: tuple[int, ...]) -> tuple[list[int], int]:
    """The chunks of a packed axis (of these chunks) that elements [start,
    stop) lie in, and where the first of them begins."""
    offsets = _offsets(chunks)
    read = [
        q
        for q, (first, size) in enumerate(zip(offsets, chunks, strict=True))
        if first < stop and first + size > start
    ]
    return read, offsets[read[0]]


def unpack(
    v: Any,
    n: int | None,
    m: int | None,
    k: int,
    upper: bool,
    fill: Any,
    order: Literal["C", "F"] = "C",
    mirror: Mirror = False,
) -> Any:
    """unpack of dask array v, lazily: a row block ends in the row where a
    chunk of the packed axis ends, the columns are chunked as the rows; each
    row block's segment is unpacked once, into the columns its band meets,
    of which its blocks are views, and a block the band misses is the fill
    broadcast, with no dependency. order="F" is the transpose of the other
    triangle's order="C". With mirror, each matrix reads its whole vector
    (its other triangle lies in every row block's segment): one block."""
    if v.ndim and _unknown(v.chunks[-1]):
        raise ValueError(
            "trilu needs the chunk sizes of a dask array's packed axis; "
            "call v.compute_chunk_sizes() first"
        )
    rows_total, cols_total = _pack.unpacked_shape(v.shape, v.dtype, n, m, k, upper)[-2:]
    _numpy_meta(v, "unpack")
    mirrored, conj = _validate.mirror(mirror)
    if mirrored:
        _pack.mirrorable(rows_total, cols_total, v.dtype, conj)
        whole = v.rechunk({v.ndim - 1: -1})
        return whole.map_blocks(
            _unpack_whole,
            rows_total,
            k,
            upper,
            order,
            fill,
            mirror,
            chunks=(*whole.chunks[:-1], (rows_total,), (cols_total,)),
            drop_axis=v.ndim - 1,
            new_axis=[v.ndim - 1, v.ndim],
            dtype=v.dtype,
            meta=meta_from_array(v._meta, ndim=v.ndim + 1, dtype=v.dtype),  # type: ignore[no-untyped-call]
        )
    if order == "F":
        transposed = unpack(v, cols_total, rows_total, -k, not upper, fill)
        return transposed.swapaxes(-1, -2)
    value = None if fill is None else _element(_validate.fill(fill, v.dtype))
    lo, hi = _pack.band_of(k, upper)
    lo, hi = _clamp(lo, rows_total, cols_total), _clamp(hi, rows_total, cols_total)

    def count(rows: int) -> int:
        return _count(rows, cols_total, lo, hi)

    # the row in which each (nonempty) chunk ends: after the last, the rows
    # with nothing kept are a block of their own
    ends = [bisect_left(range(1, rows_total + 1), end, key=count) + 1
            for end in accumulate(v.chunks[-1]) if end]  # fmt: skip
    row_chunks = _split(ends, rows_total)
    col_chunks = _split(accumulate(row_chunks), cols_total)
    chunks = (*v.chunks[:-1], row_chunks, col_chunks)
    meta = meta_from_array(v._meta, ndim=len(chunks), dtype=v.dtype)  # type: ignore[no-untyped-call]
    key_name = f"unpack-{tokenize(v, n, m, k, upper, value)}"
    source = _keys_name(v)
    row_offsets, col_offsets = _offsets(row_chunks), _offsets(col_chunks)
    dsk: dict[Key, Any] = {}
    for index in product(*(range(len(c)) for c in chunks[:-1])):
        *batch, i = index
        first, stop = row_offsets[i], row_offsets[i] + row_chunks[i]
        met = _met(first, stop, col_chunks, lo, hi)
        strip: Key = (f"{key_name}-rows", *index)
        if met:  # columns [left, right) of the rows, from their segment's chunks
            left = col_offsets[met[0]]
            right = col_offsets[met[-1]] + col_chunks[met[-1]]
            read, at = _segment(count(first), count(stop), v.chunks[-1])
            segment = (count(first) - at, count(stop) - at)
            sides = (stop - first, right - left)
            refs = [TaskRef((source, *batch, q)) for q in read]
            args = (*segment, *sides, k + first - left, upper, fill, *refs)
            dsk[strip] = Task(strip, _unpack_rows, *args)
        for j, cols in enumerate(col_chunks):
            key: Key = (key_name, *index, j)
            if j in met:
                start = col_offsets[j] - left
                dsk[key] = Task(key, _columns, TaskRef(strip), start, start + cols)
                continue
            shape = tuple(chunks[d][b] for d, b in enumerate((*index, j)))
            if _unknown(shape):  # a batch of unknown size: as a packed chunk's
                ref = TaskRef((source, *batch, 0))
                dsk[key] = Task(key, _fill_like, ref, shape[-2:], meta, value)
            else:
                dsk[key] = Task(key, _zeros, shape, meta, value)
    return _collection(v, dsk, key_name, meta, chunks)
