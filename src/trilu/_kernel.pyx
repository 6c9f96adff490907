# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, freethreading_compatible=True
"""trilu's compiled kernel: copy a band of each matrix, fill the rest.

The Python layer (``trilu._route``) hands over arrays whose bytes can move as
they are: same shape and itemsize, no object references, same byte order; the
band's offsets as ints or None (clamped here) and the fill as the bytes of one
element. Everything here works on raw bytes, so one specialization per element
width serves every such dtype.

This file holds the entry points, arrays in and arrays out; the parts it
includes each do one job, and each calls only into those before it:
``_plan.pxi`` (spans, runs of rows, the batch, the method), ``_write.pxi``
(the writers, by element type: rows, tiles, the transposed walk, masks'
rows), ``_pack.pxi`` (spans to and from packed vectors: pack, unpack,
squareform's checks), ``_work.pxi`` (the one ladder from element width to
writer, runs of rows, chunks, cost, grains, threads), ``_memory.pxi`` (a
fresh result's layout and allocation, out='s overlap) and, last, after the
entry points here, ``_banded.pxi`` (masks from nothing, and LAPACK's band
storage as bands of sheared views) and ``_indices.pxi`` (numpy's index
family, tri a mask). mirror is two bands: the kept triangle from src, the
other from its transpose; small matrices go whole in one pass instead, as
an unpack with mirror that reads src's kept elements through the table of
offsets.
Arrays reach C through numpy's C API rather than typed memoryviews: acquiring
two fused 3-D memoryviews costs more than ``np.empty_like`` itself, and a
small call's whole budget is a few times that.
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memset

import os

import numpy as np

from . import _private

cimport numpy as cnp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport Py_INCREF

cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    enum: NPY_ITEM_REFCOUNT
    void *descr_metadata "PyDataType_METADATA" (cnp.dtype descr)
    ctypedef struct PyTypeObject:
        pass
    PyTypeObject PyArray_Type
    # descr: a reference it steals
    object PyArray_NewFromDescr(PyTypeObject *subtype, void *descr, int nd,
                                cnp.npy_intp *dims, cnp.npy_intp *strides,
                                void *data, int flags, void *obj)
    object PyDataMem_SetHandler(object handler)


cdef inline Py_ssize_t magnitude(Py_ssize_t v) noexcept nogil:
    """|v| in C: Cython's abs() of a Py_ssize_t goes through Python ints."""
    return -v if v < 0 else v


include "_plan.pxi"
include "_write.pxi"
include "_pack.pxi"
include "_work.pxi"
include "_memory.pxi"


def set_num_threads(int n):
    """Set the number of threads large calls may use (validated by trilu)."""
    trilu_set_num_threads(n)


def cap_threads(int n):
    """Cap the calling thread's calls at n threads (0: no cap); the old cap."""
    return trilu_cap_threads(n)


def get_num_threads():
    """The number of threads large calls may use."""
    return trilu_threads_get()


def check_out(cnp.ndarray m not None, cnp.ndarray out not None):
    """Reject a read-only out, or one whose elements overlap (a zero stride);
    return whether out overlaps m's bytes without being exactly m's memory
    (out of m's shape, or of pack's and unpack's other shape)."""
    cdef OutState state = out_state(m, out)
    if state == READ_ONLY:
        raise ValueError("out is read-only")
    if state == ZERO_STRIDE:
        raise ValueError("out has a zero stride: its elements overlap")
    return state == OVERLAPS


def empty(cnp.ndarray m not None, cnp.dtype dtype not None, object order):
    """An uninitialised result for m in dtype, laid out as order= says (the
    Python layer's object and recast paths); order validated by the caller."""
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef Order o = resolve(m, <Order>order_code(order))
    result_strides(m, o, dtype.itemsize, strides)
    return new_array(m, dtype, o, strides)


# --- one plan for every entry -------------------------------------------------------

cdef struct Plan:
    Job job
    Py_ssize_t nb              # matrices after merging; 0: nothing to write
    Py_ssize_t work            # bytes moved
    int threads
    bint fresh                 # no dst given: how, order and strides say what
    Allocation how
    Order order                # resolved
    cnp.npy_intp strides[cnp.NPY_MAXDIMS]


cdef Py_ssize_t bound(object v, Py_ssize_t unbounded, Py_ssize_t rows,
                      Py_ssize_t cols) except? -1:
    """A band offset clamped to [-rows, cols], where every one beyond keeps the
    same; None (unbounded) is `unbounded`."""
    cdef int overflow
    cdef long long x
    if v is None:
        return unbounded
    x = PyLong_AsLongLongAndOverflow(v, &overflow)
    if overflow:
        return cols if overflow > 0 else -rows
    return <Py_ssize_t>min(max(x, -rows), cols)


cdef int fill_byte(const char *e, Py_ssize_t width) noexcept:
    """The byte value all of an element's `width` bytes have (0 for none), or
    -1 where they differ."""
    cdef Py_ssize_t t
    for t in range(1, width):
        if e[t] != e[0]:
            return -1
    return <uint8_t>e[0] if width else 0


cdef int set_fill(Fill *f, object fill, Py_ssize_t width, char *buf,
                  Py_ssize_t need) except -1:
    """The Fill of a fill given as one element's bytes (None: zeros), its
    pattern repeated into buf where it needs one: PATTERN_BYTES, or `need`,
    the bytes the job writes, if fewer (a small call's whole cost would be
    the pattern), but 32 at least (what streaming stores read of it)."""
    cdef const char *e
    cdef char seed[16]
    cdef Py_ssize_t t
    f.byte = 0
    f.elem = NULL
    f.pattern = _zeros32
    f.pattern_bytes = 0
    if fill is None:
        return 0
    if type(fill) is not bytes or PyBytes_GET_SIZE(fill) != width:
        raise ValueError(f"trilu: the fill must be {width} bytes, got {fill!r}")
    e = PyBytes_AS_STRING(fill)
    f.elem = e
    f.byte = fill_byte(e, width)
    if f.byte >= 0:
        memset(buf, f.byte, 32)
        f.pattern = buf
        return 0
    if width > PATTERN_BYTES // 2:
        f.pattern = e
        f.pattern_bytes = width
        return 0
    f.pattern_bytes = max(min(PATTERN_BYTES, max(need, 32)) // width, 1) * width
    f.pattern = buf
    if 16 % width == 0:        # 16-byte stores of a seed: no call, no store reread
        memcpy(seed, e, width)
        t = width
        while t < 16:          # (doubled: no division an element)
            memcpy(seed + t, seed, t)
            t *= 2
        f.pattern_bytes = f.pattern_bytes // 16 * 16
        for t in range(0, f.pattern_bytes, 16):
            memcpy(buf + t, seed, 16)
        return 0
    memcpy(buf, e, width)
    t = width
    while t < f.pattern_bytes:     # doubling: a few calls, not one an element
        memcpy(buf + t, buf, min(t, f.pattern_bytes - t))
        t *= 2
    return 0


cdef void prepare(Plan *p, cnp.ndarray src, cnp.ndarray dst, Py_ssize_t a,
                  Py_ssize_t b, Order order, bint rest=True,
                  const char *xor=NULL, bint sheared=False) noexcept:
    """The plan of writing band (a, b) of src (clamped; the fill set in
    p.job.fill) into dst, or into a fresh result laid out as order says where
    dst is None: its layout and allocation, the job, the threads. Nothing is
    allocated or written. Without `rest`, only the band of dst is written;
    with `xor`, each element copied is XORed with it; `sheared`: src is band
    storage seen as matrices, of which only the band is read."""
    cdef const cnp.npy_intp *dst_strides = p.strides
    if b < a:                  # nothing kept, one way of saying it
        b = a - 1
    p.job.copy_kept = p.job.fill_rest = True
    p.job.band_only = sheared or not rest
    p.job.packed = UNPACKED
    p.job.columns = p.job.mirror = False
    p.job.check = NULL
    p.job.xor = xor
    p.fresh = dst is None
    if p.fresh:
        p.order = resolve(src, order)
        result_strides(src, p.order, cnp.PyArray_ITEMSIZE(src), p.strides)
        p.how = allocation(src, p.strides, p.order, a, b, p.job.fill.byte == 0)
        p.job.fill_rest = p.how == MALLOC or p.how == RECYCLED
    else:
        p.job.copy_kept = not same_memory(src, dst)
        p.job.fill_rest = rest
        dst_strides = cnp.PyArray_STRIDES(dst)
    p.nb = p.work = p.threads = 0
    if cnp.PyArray_SIZE(src) == 0 or cnp.PyArray_ITEMSIZE(src) == 0:
        return                 # nothing to write (V0 has no bytes at all)
    p.nb = plan(&p.job, src, dst_strides, a, b)
    share(p)


cdef void share(Plan *p) noexcept:
    """The planned job's bytes moved and the threads it gets: for a small
    job, a bound of them (each element moved at most four times: a mirror
    reads and writes two), short of the GIL's release and of a thread."""
    cdef Py_ssize_t row = 4 * p.job.cols * p.job.width + ROW_BYTES
    cdef Py_ssize_t most = p.nb * p.job.rows * row
    if most < NOGIL_MIN_BYTES:
        p.work = most
        p.threads = 1
        return
    p.work = work_bytes(&p.job, p.nb)
    p.threads = thread_count(p.work, work_units(&p.job, p.nb))


cdef void run_plan(Plan *p) noexcept:
    """Run a planned and shared job whose dst (and masks) are set, without
    the GIL where the work pays for releasing it."""
    if p.work >= NOGIL_MIN_BYTES:
        with nogil:
            run_job(&p.job, p.nb, p.threads)
    else:
        run_job(&p.job, p.nb, p.threads)


# --- batches side by side -----------------------------------------------------------
#
# A batch whose axes are the fastest (numpy's Fortran order of a stack, or a
# stack transposed to the front) holds each position (i, j) of its matrices as
# one run of nb elements, and every matrix has the same band: the job is one
# matrix of wide elements (each a position's run), the fill repeated nb times.
# Walked matrix by matrix instead, each element read or written would be a
# line of its own, shared with the batch's next matrices.


cdef Py_ssize_t side_by_side(cnp.ndarray x, const cnp.npy_intp *strides, int tail,
                             const cnp.npy_intp *other, Py_ssize_t *step) noexcept:
    """How many matrices (tail 2; vectors: tail 1) x's batch holds side by
    side, as its elements would lie with these strides (x's own, or its
    result's): the batch axes longer than 1 one contiguous run of nb
    elements, each next axis stepping over the run so far, and the matrix
    axes (the vector's) over the whole run; 0 where not. Where `other` is
    given (another array's batch strides), also 0 unless its batch runs in
    the same order, each next one `step` bytes on."""
    cdef int d, nd = cnp.PyArray_NDIM(x)
    cdef Py_ssize_t run = cnp.PyArray_ITEMSIZE(x), nb = 1, at = 0
    cdef uint64_t used = 0, batch = 0, one = 1    # (a bit an axis: 64 at most)
    for d in range(nd - tail):
        if cnp.PyArray_DIMS(x)[d] > 1:
            batch |= one << d
    while used != batch:       # the batch axes, fastest first
        for d in range(nd - tail):
            if batch >> d & 1 and not used >> d & 1 and strides[d] == run:
                break
        else:
            return 0
        if other != NULL:
            if at == 0:
                step[0] = at = other[d]
            elif other[d] != at:
                return 0
            at *= cnp.PyArray_DIMS(x)[d]
        used |= one << d
        run *= cnp.PyArray_DIMS(x)[d]
        nb *= cnp.PyArray_DIMS(x)[d]
    for d in range(nd - tail, nd):
        if cnp.PyArray_DIMS(x)[d] > 1 and magnitude(strides[d]) < run:
            return 0
    return nb if nb > 1 and run > 0 else 0


cdef Py_ssize_t packed_side_by_side(cnp.ndarray x, int tail, cnp.ndarray other,
                                    Py_ssize_t *step) noexcept:
    """side_by_side of x (tail 2: matrices; 1: vectors) whose batch `other`'s
    (their vectors, or matrices) runs as, each next one `step` bytes on;
    0 where each holds one element or none too (one run, or nothing to
    move)."""
    cdef Py_ssize_t nb = side_by_side(x, cnp.PyArray_STRIDES(x), tail,
                                      cnp.PyArray_STRIDES(other), step)
    return 0 if cnp.PyArray_SIZE(x) <= nb else nb


cdef Py_ssize_t folds(cnp.ndarray src, cnp.ndarray dst, Order order, object fill,
                      cnp.npy_intp *strides) noexcept:
    """The matrices band_of walks as one matrix of wide elements: src's batch
    side by side, and dst's (or, where None, a fresh result's in `order`,
    whose strides go into `strides`) laid out alike; 0 where not, or where
    the fill is not one element's bytes (set_fill's error then, as any
    call's)."""
    cdef int d, nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t nb
    if nd < 3 or cnp.PyArray_SIZE(src) == 0 or not (
            fill is None or type(fill) is bytes
            and PyBytes_GET_SIZE(fill) == cnp.PyArray_ITEMSIZE(src)):
        return 0
    nb = side_by_side(src, cnp.PyArray_STRIDES(src), 2, NULL, NULL)
    if nb == 0:
        return 0
    if dst is None:
        result_strides(src, resolve(src, order), cnp.PyArray_ITEMSIZE(src), strides)
    else:
        memcpy(strides, cnp.PyArray_STRIDES(dst), nd * sizeof(cnp.npy_intp))
    for d in range(nd - 2):
        if (cnp.PyArray_DIMS(src)[d] > 1
                and strides[d] != cnp.PyArray_STRIDES(src)[d]):
            return 0
    return nb if side_by_side(src, strides, 2, NULL, NULL) == nb else 0


cdef cnp.ndarray folded(cnp.ndarray x, cnp.npy_intp *strides, object wide):
    """x's matrices as one matrix of `wide` elements, on x's data, with
    these strides' matrix axes."""
    cdef int nd = cnp.PyArray_NDIM(x)
    return view(wide, <const char *>cnp.PyArray_DATA(x), 2,
                cnp.PyArray_DIMS(x) + nd - 2, strides + nd - 2)


cdef object wide_fill(object fill, Py_ssize_t nb):
    """A wide element's fill: the element's, nb times."""
    return None if fill is None else fill * nb


cdef Allocation folded_allocation(cnp.ndarray src, const cnp.npy_intp *strides,
                                  Order order, Py_ssize_t a, Py_ssize_t b,
                                  object fill) noexcept:
    """allocation of a fresh result for a batch side by side (folds: strides,
    the fill one element's bytes)."""
    return allocation(src, strides, order, a, b, fill is None or fill_byte(
        PyBytes_AS_STRING(fill), cnp.PyArray_ITEMSIZE(src)) == 0)


cdef object band_folded(cnp.ndarray src, cnp.ndarray dst, Py_ssize_t a,
                        Py_ssize_t b, object fill, Order order, bint rest):
    """band_of of a batch side by side (folds): one matrix of wide elements,
    the fill repeated; return dst, or None where the batch is not so."""
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef Py_ssize_t nb = folds(src, dst, order, fill, strides)
    cdef object wide
    cdef Order o
    cdef Allocation how
    if nb == 0:
        return None
    wide = np.dtype((np.void, nb * cnp.PyArray_ITEMSIZE(src)))
    if dst is None:
        o = resolve(src, order)
        how = folded_allocation(src, strides, o, a, b, fill)
        dst = new_result(src, how, o, strides)
        rest = rest and (how == MALLOC or how == RECYCLED)
    band_of(folded(src, cnp.PyArray_STRIDES(src), wide),
            folded(dst, cnp.PyArray_STRIDES(dst), wide), a, b,
            wide_fill(fill, nb), TRIU_ORDER, rest)
    return dst


cdef cnp.ndarray band_of(cnp.ndarray src, cnp.ndarray dst, Py_ssize_t a,
                         Py_ssize_t b, object fill, Order order, bint rest=True,
                         const char *xor=NULL, bint sheared=False):
    """Write band (a, b) of src (clamped), the rest `fill` (or nothing,
    without `rest`), into dst (a fresh result where None); return dst.
    (`xor`, `sheared`: as prepare's.) A batch side by side (folds) is walked
    as one matrix of wide elements."""
    cdef Plan p
    cdef Py_ssize_t need
    cdef char pattern[PATTERN_BYTES]
    cdef const char *masks = NULL
    cdef char *built = NULL
    cdef object result
    if cnp.PyArray_NDIM(src) > 2 and xor == NULL and not sheared:
        result = band_folded(src, dst, a, b, fill, order, rest)
        if result is not None:
            return result
    set_fill(&p.job.fill, fill, cnp.PyArray_ITEMSIZE(src), pattern,
             cnp.PyArray_NBYTES(src))
    prepare(&p, src, dst, a, b, order, rest, xor, sheared)
    if p.fresh:
        dst = new_result(src, p.how, p.order, p.strides)
    if p.nb == 0:
        return dst
    p.job.dst = <char *>cnp.PyArray_DATA(dst)
    need = mask_bytes(&p.job)
    if need:
        masks = kept_masks(&p.job)
        if masks == NULL:
            masks = built = <char *>malloc(need)
            if built == NULL:
                raise MemoryError("trilu: cannot allocate the keep-mask")
            build_mask(&p.job, built)
        p.job.mask = masks
        if p.job.fill.byte != 0:
            p.job.fill_mask = masks + keep_bytes(&p.job)
    run_plan(&p)
    free(built)
    return dst


cdef int matrix_dims(cnp.ndarray src) except -1:
    """src's number of dimensions, at least 2."""
    if cnp.PyArray_NDIM(src) < 2:
        raise ValueError(
            f"trilu: the kernel needs 2 or more dimensions, got {src.ndim}")
    return cnp.PyArray_NDIM(src)


def band(cnp.ndarray src not None, cnp.ndarray dst, object lo, object hi,
         object fill=None, object order=None):
    """Write src into dst (a new array laid out as `order` says when None)
    where lo <= j - i <= hi, ``fill`` elsewhere; return dst.

    lo and hi are ints or None (unbounded); lo > hi keeps nothing. fill is
    the bytes of one element of src's dtype (exactly its itemsize), None for
    zeros. triu(k) is the band (k, None), tril(k) (None, k).

    Preconditions, checked by the caller: src.ndim >= 2, order valid; dst
    has src's shape and itemsize, is writable, and either is src's exact
    memory (in place: only the filled part is written) or does not overlap
    it.
    """
    cdef int nd = matrix_dims(src)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(src)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    return band_of(src, dst, bound(lo, -rows, rows, cols),
                   bound(hi, cols, rows, cols), fill, <Order>order_code(order))


def mirror(cnp.ndarray src not None, cnp.ndarray dst, bint upper,
           object xor=None, object order=None):
    """Write src's triangle (upper: j >= i; else j <= i) into dst as it is,
    and the other triangle from src's transposed matrices, each element XOR
    the bytes ``xor`` where given (conj); return dst (a new array laid out as
    `order` says when None).

    Preconditions, checked by the caller: square matrices; dst as ``band``'s.
    In place, only the other triangle is written, from the kept one.
    """
    return mirror_of(src, dst, upper, xor_bytes(xor, cnp.PyArray_ITEMSIZE(src)),
                     <Order>order_code(order))


cdef cnp.ndarray mirror_of(cnp.ndarray src, cnp.ndarray dst, bint upper,
                           const char *xor, Order order):
    """mirror, its arguments checked."""
    cdef int nd = matrix_dims(src)
    cdef Py_ssize_t n = cnp.PyArray_DIMS(src)[nd - 1]
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef Order o
    if dst is None:            # every byte written: never zero pages
        o = resolve(src, order)
        result_strides(src, o, cnp.PyArray_ITEMSIZE(src), strides)
        dst = new_result(src, allocation(src, strides, o, 0, n, False), o, strides)
    if mirror_matrices(src, dst, upper, xor):
        return dst
    trilu_fetch_add(&_mirror_bands, 1)
    band_of(src, dst, 0 if upper else -n, n if upper else 0, None, TRIU_ORDER,
            False)
    band_of(cnp.PyArray_SwapAxes(src, nd - 1, nd - 2), dst, -n if upper else 1,
            -1 if upper else n, None, TRIU_ORDER, False, xor)
    return dst


cdef Py_ssize_t _mirror_bands = 0     # mirror_of's calls as two bands


def _two_band_mirrors():
    """How many mirror calls went as two bands, not in one pass."""
    return _mirror_bands


cdef bint mirror_matrices(cnp.ndarray src, cnp.ndarray dst, bint upper,
                          const char *xor) except -1:
    """mirror_of in one pass where its matrices go whole through a table of
    offsets (small ones of short rows: MATRICES), as an UNPACK with mirror
    whose kept elements are read from src's matrices (job.sources), not
    from packed vectors; in place (dst is src) the mirrored ones only.
    False where they do not (two bands then: the kept one, the transposed)."""
    cdef Plan p
    cdef char pattern[PATTERN_BYTES]
    cdef Py_ssize_t offsets[OFFSETS_MAX]
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t n = cnp.PyArray_DIMS(src)[nd - 1]
    cdef Py_ssize_t srow = cnp.PyArray_STRIDES(src)[nd - 2]
    cdef Py_ssize_t scol = cnp.PyArray_STRIDES(src)[nd - 1]
    cdef Py_ssize_t a = 0 if upper else -n, b = n if upper else 0
    if not whole_matrices(n, n, cnp.PyArray_ITEMSIZE(src), a, b, True):
        return False
    if not plan_packed_job(&p, dst, src, UNPACK, a, b, None, False, True, True, xor,
                           NULL, NULL, pattern, offsets):
        return False
    if p.job.method != MATRICES:
        return False
    if p.job.columns:          # (the plan walks dst's columns as its rows)
        srow, scol = scol, srow
    p.job.sources = offsets + n * n + mirrored_in(&p.job)
    kept_offsets(&p.job, <Py_ssize_t *>p.job.sources, srow, scol)
    p.job.copy_kept = not same_memory(src, dst)
    p.job.dst = <char *>cnp.PyArray_DATA(dst)
    run_plan(&p)
    return True


cdef void mirror_band(Py_ssize_t a, Py_ssize_t b, Py_ssize_t n, Py_ssize_t *ma,
                      Py_ssize_t *mb) noexcept:
    """The band an UNPACK with mirror writes of n x n matrices keeping the
    triangle (a, b) (clamped: b = n upper, a = -n lower): the triangle's
    transpose (-b, -a), less the triangle."""
    if b >= n:
        ma[0], mb[0] = -n, min(-a, a - 1)
    else:
        ma[0], mb[0] = max(-b, b + 1), n


cdef const char *xor_bytes(object xor, Py_ssize_t width) except? NULL:
    """The element `xor` (conj's bits) as the kernel reads it; NULL for None."""
    if xor is None:
        return NULL
    if type(xor) is not bytes or PyBytes_GET_SIZE(xor) != width:
        raise ValueError(f"trilu: xor must be one element's bytes, got {xor!r}")
    return PyBytes_AS_STRING(xor)


cdef char _no_data[1]          # what arrays that only carry a shape point at


cdef cnp.ndarray view(cnp.dtype descr, const char *data, int nd,
                      const cnp.npy_intp *dims, const cnp.npy_intp *strides):
    """An array of descr on data, of these dims and strides, owning nothing
    and read-only: a shape for the planners (zero strides), or another view
    of bytes an array of the caller's keeps alive."""
    Py_INCREF(descr)           # (stolen)
    return PyArray_NewFromDescr(&PyArray_Type, <void *>descr, nd,
                                <cnp.npy_intp *>dims, <cnp.npy_intp *>strides,
                                <void *>data, 0, NULL)


cdef cnp.ndarray fresh(cnp.dtype descr, int nd, const cnp.npy_intp *dims,
                       Py_ssize_t a, Py_ssize_t b, bint zeros, Allocation *how):
    """A fresh C-order array of shape dims and dtype descr, allocated as a
    result keeping band (a, b) of its matrices, the rest zeros (zero pages
    where they pay) or, without `zeros`, all written; `how` says how."""
    cdef int d
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef cnp.ndarray like
    if (cnp.PyArray_MultiplyList(<cnp.npy_intp *>dims, nd) * descr.itemsize
            < ZERO_PAGES_MIN):  # numpy's malloc (allocation's first rule)
        how[0] = MALLOC
        Py_INCREF(descr)       # (stolen)
        return PyArray_NewFromDescr(&PyArray_Type, <void *>descr, nd,
                                    <cnp.npy_intp *>dims, NULL, NULL, 0, NULL)
    # the result's shape and dtype, all allocation and new_result read
    for d in range(nd):
        strides[d] = 0
    like = view(descr, _no_data, nd, dims, strides)
    result_strides(like, C_ORDER, descr.itemsize, strides)
    how[0] = allocation(like, strides, C_ORDER, a, b, zeros)
    return new_result(like, how[0], C_ORDER, strides)


cdef bint plan_sides(Plan *p, cnp.ndarray mat, cnp.ndarray vec, Packed packed,
                     Py_ssize_t a, Py_ssize_t b, bint columns) except -1:
    """Plan a PACK or UNPACK of a batch whose matrices or vectors lie side by
    side (packed_side_by_side) as SIDE_BY_SIDE, where it pays; False (the
    job untouched) where not."""
    cdef int nd = cnp.PyArray_NDIM(mat)
    cdef const cnp.npy_intp *dims = cnp.PyArray_DIMS(mat) + nd - 2
    cdef const cnp.npy_intp *strides = cnp.PyArray_STRIDES(mat) + nd - 2
    cdef Py_ssize_t sides = 0, step = 0, block, w = cnp.PyArray_ITEMSIZE(vec)
    cdef bint read = packed == PACK    # (the runs are src's)
    cdef bint swap
    cdef object wide
    if packed == UNPACK:
        sides = packed_side_by_side(vec, 1, mat, &step)
        read = sides != 0
    if sides == 0:
        sides = packed_side_by_side(mat, 2, vec, &step)
    if sides == 0:
        return False
    if packed == UNPACK and read:
        # Vectors side by side into rows without a register block (elements
        # of another width, or rows shorter) go element by element either
        # way, and the fill is a call each of the matrices' rows.
        swap = walks_columns(dims[0], dims[1], strides[0], strides[1], sides * w)
        block = block_columns(w)
        if block == 0 or dims[0 if swap else 1] < block:
            return False
    # one matrix and one vector of wide elements, each a run of the batch
    # (the side not side by side overlapping: its elements apart as one
    # matrix's, or vector's); into matrices side by side, walked along the
    # packed lines (a span's elements one after another in each vector)
    wide = np.dtype((np.void, sides * w))
    p.nb = plan_packed(&p.job, view(wide, <const char *>cnp.PyArray_DATA(mat), 2,
                                    dims, strides),
                       strides,
                       view(wide, <const char *>cnp.PyArray_DATA(vec), 1,
                            cnp.PyArray_DIMS(vec) + nd - 2,
                            cnp.PyArray_STRIDES(vec) + nd - 2),
                       a, b, columns, NULL, not read)
    p.job.method = SIDE_BY_SIDE
    p.job.sides = sides
    p.job.side_step = step
    p.job.sides_read = read
    p.job.stream = False
    return True


cdef bint plan_packed_job(Plan *p, cnp.ndarray mat, cnp.ndarray vec, Packed packed,
                          Py_ssize_t a, Py_ssize_t b, object fill, bint columns,
                          bint rest, bint mirror, const char *xor,
                          const Check *check, Py_ssize_t *found, char *pattern,
                          Py_ssize_t *offsets) except -1:
    """The plan of packed_of's job (its arguments; pattern and offsets its
    buffers, PATTERN_BYTES and OFFSETS_MAX), shared among threads; False
    where there is nothing to move."""
    set_fill(&p.job.fill, fill, cnp.PyArray_ITEMSIZE(vec), pattern,
             cnp.PyArray_NBYTES(mat))
    if b < a:
        b = a - 1
    p.job.packed = packed
    p.job.copy_kept = True
    p.job.fill_rest = rest
    p.job.band_only = False
    p.job.mirror = mirror
    p.job.xor = xor
    p.job.check = check
    p.job.found = found
    if mirror:
        mirror_band(a, b, cnp.PyArray_DIMS(mat)[cnp.PyArray_NDIM(mat) - 1],
                    &p.job.ma, &p.job.mb)
    if cnp.PyArray_SIZE(mat) == 0 or cnp.PyArray_ITEMSIZE(vec) == 0:
        return False
    if not (check == NULL and not mirror and cnp.PyArray_NDIM(mat) > 2
            and plan_sides(p, mat, vec, packed, a, b, columns)):
        p.nb = plan_packed(&p.job, mat, cnp.PyArray_STRIDES(mat), vec, a, b, columns,
                           offsets, False)
    share(p)
    return True


cdef cnp.ndarray packed_of(cnp.ndarray mat, cnp.ndarray vec, Packed packed,
                           Py_ssize_t a, Py_ssize_t b, object fill, bint columns,
                           bint rest=True, bint mirror=False, const char *xor=NULL,
                           const Check *check=NULL, Py_ssize_t *found=NULL):
    """Run a PACK or UNPACK job between matrices and vectors whose lines are
    the band's spans of the rows, or of the columns; the band clamped.
    Without `rest`, unpacked matrices are fresh zero pages: no fill written.
    With `mirror` (square matrices), an UNPACK also writes the band's
    transpose where the band is not, each element XOR `xor` where given.
    With `check`, a PACK of the strict upper triangle also counts in `found`
    what makes the matrices other than symmetric with a zero diagonal."""
    cdef Plan p
    cdef char pattern[PATTERN_BYTES]
    cdef Py_ssize_t offsets[OFFSETS_MAX]
    if plan_packed_job(&p, mat, vec, packed, a, b, fill, columns, rest, mirror, xor,
                       check, found, pattern, offsets):
        p.job.dst = <char *>cnp.PyArray_DATA(mat if packed == UNPACK else vec)
        run_plan(&p)
    return mat if packed == UNPACK else vec


def pack(cnp.ndarray src not None, cnp.ndarray dst, object lo, object hi,
         bint columns=False):
    """Write the elements of src's matrices in band (lo, hi), row after row
    (column after column with `columns`, LAPACK's order), along dst's last
    axis; return dst, or where it is None a fresh C-order result.

    Preconditions, checked by the caller: src.ndim >= 2; dst of shape
    src.shape[:-2] + (count,), count the band's elements, of src's itemsize,
    writable and apart from src.
    """
    cdef int nd = matrix_dims(src)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(src)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    cdef Py_ssize_t a = bound(lo, -rows, rows, cols), b = bound(hi, cols, rows, cols)
    if dst is None:
        dst = packed_result(src, a, b)
    return packed_of(src, dst, PACK, a, b, None, columns)


cdef void packed_dims(cnp.ndarray src, Py_ssize_t a, Py_ssize_t b,
                      cnp.npy_intp *dims) noexcept:
    """The shape of the vectors of src's matrices' band (a, b) (clamped)."""
    cdef int nd = cnp.PyArray_NDIM(src)
    memcpy(dims, cnp.PyArray_DIMS(src), (nd - 2) * sizeof(cnp.npy_intp))
    dims[nd - 2] = kept_in(a, b, cnp.PyArray_DIMS(src)[nd - 2],
                           cnp.PyArray_DIMS(src)[nd - 1])


cdef void unpacked_dims(cnp.ndarray src, Py_ssize_t rows, Py_ssize_t cols,
                        cnp.npy_intp *dims) noexcept:
    """The shape of rows x cols matrices unpacked from src's vectors."""
    cdef int nd = cnp.PyArray_NDIM(src)
    memcpy(dims, cnp.PyArray_DIMS(src), (nd - 1) * sizeof(cnp.npy_intp))
    dims[nd - 1], dims[nd] = rows, cols


cdef cnp.ndarray packed_result(cnp.ndarray src, Py_ssize_t a, Py_ssize_t b):
    """A fresh vector for each of src's matrices' band (a, b) (clamped)."""
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    cdef Allocation how
    packed_dims(src, a, b, dims)
    return fresh(src.descr, cnp.PyArray_NDIM(src) - 1, dims, a, b, False, &how)


def pack_checked(cnp.ndarray src not None, Py_ssize_t part, bint floats,
                 uint64_t mag, uint64_t inf):
    """pack(src, None, 1, None) of square matrices (their strict upper
    triangle, row after row, into a fresh vector), checking in the same pass
    that they are symmetric with a zero diagonal, as numpy compares numbers:
    each element is numbers of `part` bytes (2, 4 or 8; 1 too for
    integers), floats (IEEE's equality: x & mag above inf is a NaN, never
    equal, and zeros of either sign are equal) or integers (equal bytes).
    Return (vector, unequal numbers of pairs, a NaN on the diagonal
    included, nonzero diagonal elements).

    Preconditions, checked by the caller: src C-contiguous, 2-D and square,
    its numbers of native byte order (integers: either)."""
    cdef Check check
    cdef Py_ssize_t found[2]
    cdef cnp.ndarray dst = packed_result(src, 1, cnp.PyArray_DIMS(src)[1])
    check.part, check.floats, check.mag, check.inf = part, floats, mag, inf
    found[0] = found[1] = 0
    packed_of(src, dst, PACK, 1, cnp.PyArray_DIMS(src)[1], None, False, True,
              False, NULL, &check, found)
    return dst, found[0], found[1]


def unpack(cnp.ndarray src not None, cnp.ndarray dst, object lo, object hi,
           object fill=None, Py_ssize_t rows=0, Py_ssize_t cols=0,
           bint columns=False, bint mirror=False, object xor=None):
    """Write src's last axis into band (lo, hi) of dst's matrices, row after
    row (column after column with `columns`), and ``fill`` (one element's
    bytes; None: zeros) elsewhere; with `mirror`, the band's transpose where
    the band is not, each element XOR the bytes `xor` where given (conj).
    Return dst, or where it is None a fresh C-order result of shape
    src.shape[:-1] + (rows, cols), allocated as a band's (zero pages where
    they pay). Preconditions: as ``pack``'s, src and dst swapped; square
    matrices with `mirror`."""
    return unpack_of(src, dst, lo, hi, fill, rows, cols, columns, mirror,
                     xor_bytes(xor, cnp.PyArray_ITEMSIZE(src)))


cdef cnp.ndarray unpack_of(cnp.ndarray src, cnp.ndarray dst, object lo, object hi,
                           object fill, Py_ssize_t rows, Py_ssize_t cols,
                           bint columns, bint mirror, const char *xor):
    """unpack, its arguments checked."""
    cdef int nd = cnp.PyArray_NDIM(src) + 1
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    cdef Py_ssize_t a, b
    cdef Allocation how = MALLOC
    if dst is not None:
        nd = matrix_dims(dst)
        rows = cnp.PyArray_DIMS(dst)[nd - 2]
        cols = cnp.PyArray_DIMS(dst)[nd - 1]
    a = bound(lo, -rows, rows, cols)
    b = bound(hi, cols, rows, cols)
    if dst is None:
        unpacked_dims(src, rows, cols, dims)
        # (a mirrored band fills most of the rest: never zero pages)
        dst = fresh(src.descr, nd, dims, a, b, fill is None and not mirror, &how)
    return packed_of(dst, src, UNPACK, a, b, fill, columns,
                     how == MALLOC or how == RECYCLED, mirror, xor)


def band_count(Py_ssize_t rows, Py_ssize_t cols, object lo, object hi):
    """How many elements of a rows x cols matrix band (lo, hi) keeps."""
    cdef Py_ssize_t a = bound(lo, -rows, rows, cols)
    cdef Py_ssize_t b = bound(hi, cols, rows, cols)
    return kept_in(a, b, rows, cols)


_METHODS = {ROWS: "rows", STRIDED: "strided", TILED: "tiled",
            BAND_MASK: "band_mask", MATRICES: "matrices", COLUMNS: "columns",
            SIDE_BY_SIDE: "side_by_side"}
_ALLOCATIONS = {MALLOC: "malloc", RECYCLED: "recycled", CALLOC: "calloc",
                ZERO_PAGES: "zero_pages"}


cdef dict describe(cnp.ndarray src, cnp.ndarray out, Py_ssize_t a, Py_ssize_t b,
                   object fill, Order order):
    """The plan prepare makes for band_of, as a dict; a batch side by side
    (folds): the plan of its one matrix of wide elements, `folded` the number
    of matrices each holds."""
    cdef Plan p
    cdef char pattern[PATTERN_BYTES]
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef dict info = {}
    cdef Py_ssize_t *e = p.job.edge
    cdef bint lead_kept, grouped
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef Py_ssize_t nb = folds(src, out, order, fill, strides)
    cdef object wide
    if nb:
        wide = np.dtype((np.void, nb * cnp.PyArray_ITEMSIZE(src)))
        # (a fresh result: a stand-in of its strides, on bytes never written)
        info = describe(folded(src, cnp.PyArray_STRIDES(src), wide),
                        view(wide, _zeros32, 2, cnp.PyArray_DIMS(src) + nd - 2,
                             strides + nd - 2) if out is None
                        else folded(out, strides, wide),
                        a, b, wide_fill(fill, nb), TRIU_ORDER)
        if out is None:
            info["allocation"] = _ALLOCATIONS[folded_allocation(
                src, strides, resolve(src, order), a, b, fill)]
            info["strides"] = tuple([strides[d] for d in range(nd)])
        info["folded"] = nb
        return info
    set_fill(&p.job.fill, fill, cnp.PyArray_ITEMSIZE(src), pattern,
             cnp.PyArray_NBYTES(src))
    prepare(&p, src, out, a, b, order)
    if p.fresh:
        info["allocation"] = _ALLOCATIONS[p.how]
        info["strides"] = tuple([p.strides[d] for d in range(nd)])
    if p.nb == 0:
        return info
    # triu's and tril's two runs: kept then crossed (upper), or the reverse
    lead_kept = e[1] == 0 and e[2] == 0
    grouped = p.job.method == STRIDED and grouped_rows(&p.job)
    info.update(
        method=_METHODS[p.job.method], matrices=p.nb, rows=p.job.rows,
        cols=p.job.cols, band=(p.job.a, p.job.b),
        edges=tuple([e[r] for r in range(1, RUNS)]),
        lead=e[3] if lead_kept else e[1], trail=e[4] if lead_kept else e[2],
        lead_kept=lead_kept, bulk_src=p.job.bulk_src, bulk_dst=p.job.bulk_dst,
        stream=p.job.stream, prefetch=p.job.prefetch, vector=p.job.vector,
        grouped=grouped, tiles=grouped and transposed_tiles(&p.job, 0, p.job.rows),
        threads=p.threads,
        fill="zeros" if p.job.fill.byte == 0 else (
            "byte" if p.job.fill.byte > 0 else "pattern"))
    return info


def explain(cnp.ndarray src not None, object k, bint upper, cnp.ndarray out=None,
            object order=None):
    """What triu(k) (upper) or tril(k) of src into out would do, as a dict,
    for tests and the bench: the method, the runs (after the walk is chosen
    and uniform matrices merged; lead and trail: the edges of triu's kept and
    crossed runs, or of tril's filled and crossed ones), the threads,
    streaming, prefetch (rows fetched ahead), vector (crossed rows written
    by _simd.h's row loop), grouped (src read down its columns a line's
    rows at a time: transposed_rows), tiles (its crossed rows by square
    blocks in registers: transposed_tile), and for a fresh result its
    strides and the allocation it would get now. Nothing is allocated,
    written or kept. triu(k) is the band (k, None), tril(k) (None, k)."""
    return explain_band(src, k if upper else None, None if upper else k, out, None,
                        order)


def explain_band(cnp.ndarray src not None, object lo, object hi,
                 cnp.ndarray out=None, object fill=None, object order=None):
    """What ``band(src, out, lo, hi, fill, order)`` would do, as ``explain``
    says; "edges" are the inner edges of the five runs (filled, crossed,
    kept, crossed, filled) and "band" the walked (lo, hi), clamped."""
    cdef int nd = matrix_dims(src)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(src)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    return describe(src, out, bound(lo, -rows, rows, cols),
                    bound(hi, cols, rows, cols), fill, <Order>order_code(order))


def explain_packed(cnp.ndarray mat not None, cnp.ndarray vec not None, bint unpack,
                   object lo, object hi, bint columns=False, object fill=None,
                   bint mirror=False):
    """What ``pack(mat, vec, lo, hi, columns)`` (or ``unpack(vec, mat, lo,
    hi, fill, columns, mirror)``, its result not fresh) would do, as a dict for
    tests: the method, stream, threads, rows: an UNPACK's rows written as
    a band's (contiguous_rows), vector: its rows by AVX-512's row loops
    (an UNPACK's crossed ones, a PACK's spans copied inline), lines: its
    tiles streamed whole lines wide (whole_tiles), tiles: its rows by square
    blocks, the fill with them (column_tiles; a PACK's lines, pack_tiles), and
    blocked: else its row groups' lines all moved by blocks
    (blocked_columns). Nothing is written."""
    cdef Plan p
    cdef char pattern[PATTERN_BYTES]
    cdef Py_ssize_t offsets[OFFSETS_MAX]
    cdef int nd = matrix_dims(mat)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(mat)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(mat)[nd - 1]
    cdef bint tiles
    if not plan_packed_job(&p, mat, vec, UNPACK if unpack else PACK,
                           bound(lo, -rows, rows, cols), bound(hi, cols, rows, cols),
                           fill, columns, True, mirror and unpack, NULL, NULL, NULL,
                           pattern, offsets):
        return {}
    tiles = (column_tiles(&p.job, 0, p.job.rows) if unpack
             else pack_tiles(&p.job, 0, p.job.rows))
    return dict(method=_METHODS[p.job.method], stream=p.job.stream,
                threads=p.threads, rows=p.job.method == STRIDED and unpacked_along(
                    &p.job), lines=p.job.method == TILED and whole_tiles(&p.job),
                vector=p.job.vector, tiles=tiles,
                blocked=blocked_columns(&p.job) and not tiles)


include "_banded.pxi"
include "_indices.pxi"
include "_doors.pxi"
