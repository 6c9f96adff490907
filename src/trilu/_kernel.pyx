# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, freethreading_compatible=True
"""trilu's compiled kernel: copy the kept triangle of each matrix, zero the rest.

The Python layer (``trilu._api``) hands over arrays whose bytes can move as
they are: same shape and itemsize, no object references, same byte order, and
``k`` an int (clamped here). Everything here works on raw bytes, so one
specialization per element width serves every such dtype.

Element loads and stores go through ``memcpy`` of a constant width, which
compiles to a single unaligned-safe move: unaligned arrays need no special case.
Arrays reach C through numpy's C API rather than typed memoryviews, because
acquiring two fused 3-D memoryviews costs ~390 ns a call, twice the time of
``np.empty_like`` and more than half the budget of a whole 4x5 call.
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

import os

import numpy as np

cimport numpy as cnp
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


cdef extern from "_recycle.h":
    # Results this big come from a handler that recycles freed results' memory,
    # and from 32 MiB, where malloc maps fresh zero pages, calloc is free.
    enum: TRILU_RECYCLE_MIN    # 4 MiB
    enum: TRILU_CALLOC_MIN     # 32 MiB
    bint trilu_spare_fits(size_t size) nogil
    object trilu_recycler_capsule(int hugepages)
    object trilu_zero_pages_capsule()


cdef extern from *:
    """
    #if defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
    #include <xmmintrin.h>
    #define trilu_prefetch(p) _mm_prefetch((const char *)(p), _MM_HINT_T0)
    #elif defined(__GNUC__)
    #define trilu_prefetch(p) __builtin_prefetch(p)
    #else
    #define trilu_prefetch(p) ((void)(p))
    #endif
    """
    void trilu_prefetch(const void *p) nogil


cdef extern from "_stream.h" nogil:
    enum: TRILU_STREAM         # 0 where streaming stores are not built
    void trilu_stream_row(char *d, const char *s, size_t lo, size_t hi,
                          size_t n)
    void trilu_stream_and(char *d, const char *s, const char *mask, size_t n)
    void trilu_stream_fence()


cdef extern from "_mask.h" nogil:
    void trilu_and_avx2(char *d, const char *s, const char *mask, size_t n)
    int trilu_avx2_usable()    # 0 where the AVX2 loop is not built


cdef extern from "_threads.h" nogil:
    ctypedef void (*trilu_task_fn)(void *) noexcept nogil
    enum: TRILU_MAX_THREADS    # 64
    void trilu_pool_init()
    void trilu_parallel(trilu_task_fn fn, void **args, int n)
    Py_ssize_t trilu_fetch_add(Py_ssize_t *p, Py_ssize_t v)
    int trilu_threads_get()    # the thread count, a relaxed atomic
    void trilu_set_num_threads(int n)    # clamped; exported for threadpoolctl
    int trilu_cap_threads(int n)    # this thread's cap (0: none); the old one
    int trilu_threads_mine()   # the count under this thread's cap


def _numpy_hugepages():
    """numpy's setting: whether its allocator asks for huge pages (Linux)."""
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            return bool(__import__(name, fromlist=["_"])._get_madvise_hugepage())
        except (ImportError, AttributeError):
            pass
    return True


trilu_pool_init()
# The memory handler of large results: None where recycling is not built, or
# when the environment says TRILU_RECYCLE=0 (read once, at import).
# Mostly zero results come from a second handler, which maps each block anew:
# zero pages, only the kept part's ever touched (_recycle.h).
cdef object _recycler = None
cdef object _zero_pages = None
if os.environ.get("TRILU_RECYCLE", "").strip() != "0":
    _recycler = trilu_recycler_capsule(_numpy_hugepages())
    _zero_pages = trilu_zero_pages_capsule()
# The OS's page size, for the pages a result's kept part touches (Windows: 4 KiB).
cdef Py_ssize_t _page = 4096
if hasattr(os, "sysconf"):
    _page = os.sysconf("SC_PAGE_SIZE")
# The keep-mask AND runs 32 bytes at a time where the CPU has AVX2, unless the
# environment says TRILU_AVX2=0 at import (which tests the portable loop).
cdef bint _and_avx2 = (trilu_avx2_usable()
                       and os.environ.get("TRILU_AVX2", "").strip() != "0")


def _mask_loop():
    """Which loop ANDs the keep-mask: "avx2" or "portable"."""
    return "avx2" if _and_avx2 else "portable"


# --- element types ---------------------------------------------------------

ctypedef struct u128:          # complex128, long double, 16-byte strings
    uint64_t lo
    uint64_t hi

ctypedef struct any_width:     # any other itemsize: copied with a runtime width
    char byte

ctypedef fused elem_t:         # one element, moved whole
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    u128
    any_width


# --- tuning (bytes; the mechanism beside each, the measurements in bench/) ----

cdef enum:
    # A call to memset or memcpy costs ~5 ns whatever it moves (11-14 ns for
    # a row's two, measured at 256-1024 bytes). A row shorter than this costs
    # more in calls than in bytes: the diagonal band of such rows is ANDed
    # with a keep-mask in one pass instead. The mask, reread for every matrix
    # while the rows are read once, must stay in the nearest cache: no larger
    # than the smallest L1D of the targets (32 KiB).
    MASK_ROW_BYTES = 256
    MASK_MAX_BYTES = 32768
    # A matrix this small is ANDed whole, a block of MASK_BLOCK_BYTES of
    # consecutive matrices per pass: its bands would cost three calls (~15 ns,
    # the time to move ~1 KiB from L2) where one pass over it costs less. At
    # the threshold both measured alike (11x11 and 12x12 float64 batches of
    # 200 KB, out=: 28.9 and 28.5 GB/s).
    TINY_MATRIX_BYTES = 1024
    MASK_BLOCK_BYTES = 4096
    # Each thread gets at least this many bytes to move (written + read): below
    # ~1 MiB of work one thread beats two, waking a pooled worker included.
    PARALLEL_MIN_BYTES = 1 << 19
    # A row's fixed cost (its memset and memcpy calls) in bytes moved.
    ROW_BYTES = 128
    # Contiguous rows prefetch the head of the kept part this many rows ahead,
    # this many cache lines: each row's copy starts a new stream, which the
    # hardware prefetcher only picks up after a few misses.
    PREFETCH_ROWS = 2
    PREFETCH_LINES = 8
    # Threads claim their work in grains of this much, then help the others,
    # so none waits long on one whose core another process took.
    GRAIN_BYTES = 1 << 16
    # Results this big are written with streaming stores (_stream.h): with
    # the input they outgrow the last-level cache (32 MiB where measured; at
    # 16 MiB normal stores measured faster).
    STREAM_MIN_BYTES = 1 << 25
    # A TILED tile is a square of at most this many bytes, gathered in a
    # buffer on the stack that stays in L1D (half the smallest of the
    # targets, 32 KiB) beside the lines it is read from and written to.
    TILE_BYTES = 16384
    # The element walk (STRIDED) reads a line of src per column and finds it
    # in cache again for the next rows while the matrix fits the L2 (512 KiB
    # to 2 MiB on the targets): tiles pay off from this size.
    TILE_MIN_BYTES = 1 << 20
    # Elements wider than this are a quarter line or more each: the element
    # walk wastes little of each line it reads, and needs no tile.
    TILE_MAX_WIDTH = 8
    # Elements this wide fill a line of dst in 8 columns or fewer, so a tile
    # of 8 rows, one line each, fits an 8-way L1D set even where the rows'
    # stride is a power of two: it is written in place, without the buffer.
    TILE_DIRECT_WIDTH = 8
    TILE_DIRECT_ROWS = 8
    # Below this the GIL is kept: releasing it costs more than the work.
    NOGIL_MIN_BYTES = 1 << 14
    # Fresh zero pages are a mapping of their own: an mmap, a fault and a
    # munmap, 2-8 us, the time to memset about this much from cache (glibc's
    # default mmap threshold, 128 KiB, weighs the same cost).
    ZERO_PAGES_MIN = 1 << 17
    # A page first written costs a fault in which the OS zeroes it: 1-2.6 us
    # for a page here and there, 9-12 times a memset of a page already mapped
    # (measured: 64 pages of mappings of 512 KiB to 64 MiB). So fresh zero
    # pages beat rewriting a block only where the zeros to write outweigh this
    # many times the bytes of the pages the kept part touches (pages of the
    # OS's size: 4 KiB, 16 KiB or 64 KiB by system).
    FAULT_COST = 10
    MAX_BATCH_DIMS = 64        # NPY_MAXDIMS of numpy 2 (numpy 1 has 32)


cdef enum Method:              # how the diagonal band is written
    ROWS            # contiguous elements: memset + memcpy per row
    STRIDED         # any strides: element by element
    TILED           # dst rows contiguous, src runs down its columns: tiles
    BAND_MASK       # contiguous short rows: dst = src & keep-mask of the band
    MATRICES        # tiny contiguous matrices, whole: dst = src & keep-mask

cdef enum Part:                # what a run of rows holds
    DIAGONAL        # the diagonal crosses each row
    KEPT            # every element kept
    ZEROED          # every element zeroed

cdef enum Allocation:          # where a fresh result's memory comes from
    MALLOC          # numpy's allocator; every byte written
    # RECYCLED: the recycling handler, the spare block of a freed result of
    # this size if there is one; every byte written. CALLOC: fresh pages, huge
    # where numpy advises them; the zeroed bands never written. ZERO_PAGES: a
    # mapping of small fresh pages; only the kept part's touched.
    RECYCLED
    CALLOC
    ZERO_PAGES


cdef struct Job:
    const char *src
    char *dst
    Py_ssize_t rows, cols, k, width
    Py_ssize_t src_row, src_col, dst_row, dst_col
    bint upper
    bint copy_kept             # False in place: the kept part is already there
    bint zero_rest             # False into fresh zero pages
    bint stream                # write with streaming stores (not in place)
    Method method
    # The bands of every matrix: rows [0, lead) and [trail, rows) are wholly
    # kept or wholly zeroed, the diagonal crosses rows [lead, trail).
    Py_ssize_t lead, trail
    bint lead_kept             # the leading band is kept (upper) or zeroed
    # src rows laid out as dst's and contiguous: kept rows are one memcpy;
    # dst rows contiguous: zeroed rows are one memset
    bint bulk_src
    bint bulk_dst
    # batch dimensions, size-1 dims dropped and mergeable dims merged
    int ndim
    Py_ssize_t shape[MAX_BATCH_DIMS]
    Py_ssize_t src_step[MAX_BATCH_DIMS]
    Py_ssize_t dst_step[MAX_BATCH_DIMS]
    # BAND_MASK: the band's keep-mask; MATRICES: `block` matrices' keep-mask
    const char *mask
    Py_ssize_t matrix_bytes, block
    bint flat                  # MATRICES: the whole batch is one contiguous run


cdef struct Chunk:             # a run of work: units [start, stop)
    const Job *job
    Py_ssize_t start, stop     # matrices (MATRICES) or rows of the flat batch


cdef struct Queue:             # the work of a threaded call, claimed in grains
    const Job *job
    Py_ssize_t units, grain
    int nthreads
    # Thread t owns units [next[t], end[t]), claimed from the front (atomic).
    Py_ssize_t next[TRILU_MAX_THREADS]
    Py_ssize_t end[TRILU_MAX_THREADS]


cdef struct Worker:            # what one thread is handed
    Queue *queue
    int index


def set_num_threads(int n):
    """Set the number of threads large calls may use (validated by trilu)."""
    trilu_set_num_threads(n)


def get_num_threads():
    """The number of threads large calls may use."""
    return trilu_threads_get()


def cap_threads(int n):
    """Cap the calling thread's calls at n threads (0: no cap); the old cap."""
    return trilu_cap_threads(n)


# --- walking the batch -------------------------------------------------------

cdef inline void batch_seek(const Job *job, Py_ssize_t b, Py_ssize_t *idx,
                            Py_ssize_t *so, Py_ssize_t *do) noexcept nogil:
    """Offsets of flat batch index b: one division per dimension, once a chunk."""
    cdef int d
    so[0] = 0
    do[0] = 0
    for d in range(job.ndim - 1, -1, -1):
        idx[d] = b % job.shape[d]
        b //= job.shape[d]
        so[0] += idx[d] * job.src_step[d]
        do[0] += idx[d] * job.dst_step[d]


cdef inline void batch_next(const Job *job, Py_ssize_t *idx,
                            Py_ssize_t *so, Py_ssize_t *do) noexcept nogil:
    """Advance to the next matrix of the batch (odometer order)."""
    cdef int d = job.ndim - 1
    while d >= 0:
        idx[d] += 1
        so[0] += job.src_step[d]
        do[0] += job.dst_step[d]
        if idx[d] < job.shape[d]:
            return
        so[0] -= job.shape[d] * job.src_step[d]
        do[0] -= job.shape[d] * job.dst_step[d]
        idx[d] = 0
        d -= 1


# --- what each row keeps ----------------------------------------------------------

cdef inline void kept_cols(bint upper, Py_ssize_t k, Py_ssize_t cols,
                           Py_ssize_t i, Py_ssize_t *lo,
                           Py_ssize_t *hi) noexcept nogil:
    """Row i keeps columns [lo, hi): j - i >= k (upper) or j - i <= k (lower)."""
    if upper:
        lo[0] = min(max(i + k, 0), cols)
        hi[0] = cols
    else:
        lo[0] = 0
        hi[0] = min(max(i + k + 1, 0), cols)


cdef inline void row_span(Part part, bint upper, Py_ssize_t k, Py_ssize_t cols,
                          Py_ssize_t i, Py_ssize_t *lo,
                          Py_ssize_t *hi) noexcept nogil:
    """Columns [lo, hi) that row i of a run of this part keeps. Callers pass
    the job's fields as locals: the compiler cannot assume that memcpy and
    memset leave *job alone, and would reload them every row."""
    if part == DIAGONAL:
        kept_cols(upper, k, cols, i, lo, hi)
    else:
        lo[0] = 0
        hi[0] = cols if part == KEPT else 0


cdef Py_ssize_t kept_upper(Py_ssize_t r, Py_ssize_t cols,
                           Py_ssize_t k) noexcept nogil:
    """How many elements rows [0, r) keep for upper with this k: rows with
    i + k <= 0 keep all, rows with i + k >= cols none, the rest cols - i - k."""
    cdef Py_ssize_t full = min(r, max(0, 1 - k))
    cdef Py_ssize_t stop = min(r, max(0, cols - k))
    cdef Py_ssize_t n = max(0, stop - full)
    return full * cols + n * (cols - k) - (full + stop - 1) * n // 2


cdef Py_ssize_t kept_in(bint upper, Py_ssize_t k, Py_ssize_t r,
                        Py_ssize_t cols) noexcept nogil:
    """How many elements rows [0, r) of a matrix keep."""
    if upper:
        return kept_upper(r, cols, k)
    return r * cols - kept_upper(r, cols, k + 1)


cdef Py_ssize_t row_cost(const Job *job, Py_ssize_t r) noexcept nogil:
    """Elements moved by rows [0, r) of a matrix: written, plus kept ones read.
    Wholly zeroed rows cost nothing into zero pages, kept ones nothing in place."""
    cdef Py_ssize_t lead = min(r, job.lead), trail = max(0, r - job.trail)
    cdef Py_ssize_t diag = min(r, job.trail)
    cdef Py_ssize_t kept = job.cols * (lead if job.lead_kept else trail)
    cdef Py_ssize_t zeroed
    if diag > job.lead:
        kept += (kept_in(job.upper, job.k, diag, job.cols)
                 - kept_in(job.upper, job.k, job.lead, job.cols))
    zeroed = r * job.cols - kept
    if not job.zero_rest:
        zeroed -= job.cols * (trail if job.lead_kept else lead)
    return zeroed + (2 * kept if job.copy_kept else 0)


# --- runs of rows -----------------------------------------------------------------

cdef inline void zero_run(elem_t *tag, char *d, Py_ssize_t ds, Py_ssize_t w,
                          Py_ssize_t count) noexcept nogil:
    """Zero count elements from d, ds bytes apart: one memset when they touch."""
    cdef Py_ssize_t j
    cdef elem_t zero
    if count <= 0:
        return
    if ds == w:
        memset(d, 0, count * w)
    elif elem_t is any_width:
        for j in range(count):
            memset(d + j * ds, 0, w)
    else:
        memset(&zero, 0, sizeof(elem_t))
        for j in range(count):
            memcpy(d + j * ds, &zero, sizeof(elem_t))


cdef void strided_rows(elem_t *tag, const Job *job, Py_ssize_t so,
                       Py_ssize_t do, Py_ssize_t r0, Py_ssize_t r1,
                       Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix, elements of any strides: zero [0, lo), copy
    [lo, hi), zero [hi, cols), in address order (stores that jump back defeat
    the hardware's streaming)."""
    cdef Py_ssize_t i, j, lo, hi, w = job.width, n = job.cols, k = job.k
    cdef Py_ssize_t ss = job.src_col, ds = job.dst_col
    cdef bint upper = job.upper, copy = job.copy_kept, zero = job.zero_rest
    cdef const char *s = job.src + so + r0 * job.src_row
    cdef char *d = job.dst + do + r0 * job.dst_row
    cdef Py_ssize_t src_row = job.src_row, dst_row = job.dst_row
    cdef elem_t v
    for i in range(r0, r1):
        row_span(part, upper, k, n, i, &lo, &hi)
        if zero:
            zero_run(tag, d, ds, w, lo)
        if copy:
            if elem_t is any_width:
                for j in range(lo, hi):
                    memcpy(d + j * ds, s + j * ss, w)
            elif (ss == -<Py_ssize_t>sizeof(elem_t)
                  and ds == <Py_ssize_t>sizeof(elem_t)):
                # a row read backwards ([:, ::-1]): constant strides the
                # compiler can unroll (1.02-1.23x the general loop measured,
                # 1500x1500 out=, int8 to complex128)
                for j in range(lo, hi):
                    memcpy(&v, s - j * <Py_ssize_t>sizeof(elem_t), sizeof(elem_t))
                    memcpy(d + j * sizeof(elem_t), &v, sizeof(elem_t))
            else:
                for j in range(lo, hi):
                    memcpy(&v, s + j * ss, sizeof(elem_t))
                    memcpy(d + j * ds, &v, sizeof(elem_t))
        if zero:
            zero_run(tag, d + hi * ds, ds, w, n - hi)
        s += src_row
        d += dst_row


cdef inline Py_ssize_t tile_side(Py_ssize_t width) noexcept nogil:
    """The rows and columns of a TILED tile: a square of TILE_BYTES."""
    cdef Py_ssize_t side = 1
    while 4 * side * side * width <= TILE_BYTES:
        side *= 2
    return side


cdef inline void tile_head(const Job *job, char *d, Py_ssize_t b0, Py_ssize_t b1,
                           Part part, Py_ssize_t *first,
                           Py_ssize_t *last) noexcept nogil:
    """Rows [b0, b1) of a tile, d the first's: each row's zeroed part is one
    memset (not into zero pages); [first, last) the columns any row keeps."""
    cdef Py_ssize_t i, lo, hi, w = job.width, cols = job.cols
    first[0] = cols
    last[0] = 0
    for i in range(b0, b1):
        row_span(part, job.upper, job.k, cols, i, &lo, &hi)
        if job.zero_rest:
            memset(d + (i - b0) * job.dst_row, 0, lo * w)
            memset(d + (i - b0) * job.dst_row + hi * w, 0, (cols - hi) * w)
        if hi > lo:
            first[0] = min(first[0], lo)
            last[0] = max(last[0], hi)


cdef inline void column_rows(const Job *job, Part part, Py_ssize_t j, Py_ssize_t b0,
                             Py_ssize_t b1, Py_ssize_t *top,
                             Py_ssize_t *bottom) noexcept nogil:
    """The rows [top, bottom) of [b0, b1) that keep column j: [b0, j - k + 1)
    (upper) or [j - k, b1) (lower), clamped: two bounds, no test per element."""
    top[0] = b0
    bottom[0] = b1
    if part == DIAGONAL:
        if job.upper:
            bottom[0] = min(b1, max(b0, j - job.k + 1))
        else:
            top[0] = max(b0, min(b1, j - job.k))


cdef void tiled_rows(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                     Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix with contiguous dst rows whose src runs down
    its columns (a transposed read), a tile of rows at a time: the zeroed
    parts by memset (tile_head), then the kept parts a column at a time, so
    each column reads one run of src. Elements of TILE_DIRECT_WIDTH bytes or
    more go straight to dst, TILE_DIRECT_ROWS rows at a time; narrower ones
    need more rows per run, whose lines would evict one another in cache at a
    power-of-two row stride, so a square tile is gathered into a buffer in
    cache and each of its rows goes out with one memcpy."""
    cdef Py_ssize_t b0, b1, c0, c1, i, j, lo, hi, top, bottom, first, last
    cdef Py_ssize_t w = job.width, ss = job.src_col, sr = job.src_row
    cdef Py_ssize_t dr = job.dst_row
    cdef bint direct = w >= TILE_DIRECT_WIDTH
    cdef Py_ssize_t side = TILE_DIRECT_ROWS if direct else tile_side(w)
    cdef Py_ssize_t line = side * w
    cdef const char *s
    cdef char *d
    cdef char buf[TILE_BYTES]
    cdef elem_t v
    b0 = r0
    while b0 < r1:
        b1 = min(b0 + side, r1)
        s = job.src + so + b0 * sr
        d = job.dst + do + b0 * dr
        tile_head(job, d, b0, b1, part, &first, &last)
        if direct:
            for j in range(first, last):
                column_rows(job, part, j, b0, b1, &top, &bottom)
                for i in range(top - b0, bottom - b0):
                    if elem_t is any_width:
                        memcpy(d + i * dr + j * w, s + i * sr + j * ss, w)
                    else:
                        memcpy(&v, s + i * sr + j * ss, sizeof(elem_t))
                        memcpy(d + i * dr + j * sizeof(elem_t), &v, sizeof(elem_t))
            b0 = b1
            continue
        c0 = first
        while c0 < last:
            c1 = min(c0 + side, last)
            for j in range(c0, c1):
                column_rows(job, part, j, b0, b1, &top, &bottom)
                for i in range(top - b0, bottom - b0):
                    if elem_t is any_width:
                        memcpy(buf + i * line + (j - c0) * w, s + i * sr + j * ss, w)
                    else:
                        memcpy(&v, s + i * sr + j * ss, sizeof(elem_t))
                        memcpy(buf + i * line + (j - c0) * sizeof(elem_t), &v,
                               sizeof(elem_t))
            for i in range(b0, b1):
                row_span(part, job.upper, job.k, job.cols, i, &lo, &hi)
                lo = max(lo, c0)
                hi = min(hi, c1)
                if hi > lo:
                    memcpy(d + (i - b0) * dr + lo * w,
                           buf + (i - b0) * line + (lo - c0) * w, (hi - lo) * w)
            c0 = c1
        b0 = b1


cdef inline void contiguous_rows(const Job *job, Py_ssize_t so, Py_ssize_t do,
                                 Py_ssize_t r0, Py_ssize_t r1,
                                 Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix, elements contiguous: a memset, a memcpy and a
    memset each, in address order; for large results, one pass of streaming
    stores each (_stream.h)."""
    cdef Py_ssize_t i, lo, hi, ahead, t, rows = job.rows, w = job.width
    cdef Py_ssize_t cols = job.cols, k = job.k, n = job.cols * w
    cdef Py_ssize_t src_row = job.src_row, dst_row = job.dst_row
    cdef bint copy = job.copy_kept, zero = job.zero_rest, stream = job.stream
    cdef bint upper = job.upper
    cdef const char *s = job.src + so + r0 * src_row
    cdef char *d = job.dst + do + r0 * dst_row
    for i in range(r0, r1):
        if copy and i + PREFETCH_ROWS < rows:
            # the head of the kept part PREFETCH_ROWS rows on
            row_span(part, upper, k, cols, i + PREFETCH_ROWS, &lo, &hi)
            ahead = PREFETCH_ROWS * src_row + lo * w
            for t in range(min(PREFETCH_LINES, (hi - lo) * w // 64)):
                trilu_prefetch(s + ahead + 64 * t)
        row_span(part, upper, k, cols, i, &lo, &hi)
        lo *= w                    # in bytes from here
        hi *= w
        if not stream:
            if zero and lo > 0:
                memset(d, 0, lo)
            if copy and hi > lo:
                memcpy(d + lo, s + lo, hi - lo)
            if zero and hi < n:
                memset(d + hi, 0, n - hi)
        elif zero:
            trilu_stream_row(d, s, lo, hi, n)
        elif hi > lo:              # fresh zero pages: the kept part only
            trilu_stream_row(d + lo, s + lo, 0, hi - lo, hi - lo)
        s += src_row
        d += dst_row


cdef void each_row(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                   Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix one at a time (a tile at a time where TILED),
    by the specialization for the element width where they are strided."""
    cdef Py_ssize_t w = job.width
    if job.method == TILED:
        if w == 8:
            tiled_rows(<uint64_t *>NULL, job, so, do, r0, r1, part)
        elif w == 4:
            tiled_rows(<uint32_t *>NULL, job, so, do, r0, r1, part)
        elif w == 2:
            tiled_rows(<uint16_t *>NULL, job, so, do, r0, r1, part)
        elif w == 1:
            tiled_rows(<uint8_t *>NULL, job, so, do, r0, r1, part)
        elif w == 16:
            tiled_rows(<u128 *>NULL, job, so, do, r0, r1, part)
        else:
            tiled_rows(<any_width *>NULL, job, so, do, r0, r1, part)
    elif job.method != STRIDED:
        contiguous_rows(job, so, do, r0, r1, part)
    elif w == 8:
        strided_rows(<uint64_t *>NULL, job, so, do, r0, r1, part)
    elif w == 4:
        strided_rows(<uint32_t *>NULL, job, so, do, r0, r1, part)
    elif w == 2:
        strided_rows(<uint16_t *>NULL, job, so, do, r0, r1, part)
    elif w == 1:
        strided_rows(<uint8_t *>NULL, job, so, do, r0, r1, part)
    elif w == 16:
        strided_rows(<u128 *>NULL, job, so, do, r0, r1, part)
    else:
        strided_rows(<any_width *>NULL, job, so, do, r0, r1, part)


cdef void bulk(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
               Py_ssize_t r1, bint kept) noexcept nogil:
    """Rows [r0, r1) of a matrix, wholly kept or wholly zeroed: one memcpy or
    memset where the rows are contiguous; nothing to write in place (kept) or
    into zero pages (zeroed)."""
    cdef Py_ssize_t n = (r1 - r0) * job.cols * job.width
    cdef Py_ssize_t low = r0 if job.dst_row > 0 else r1 - 1  # the run's first
    cdef char *d = job.dst + do + low * job.dst_row
    cdef const char *s = job.src + so + low * job.src_row
    if kept and not job.copy_kept or not kept and not job.zero_rest:
        return
    if not (job.bulk_src if kept else job.bulk_dst):
        each_row(job, so, do, r0, r1, KEPT if kept else ZEROED)
    elif job.stream:
        trilu_stream_row(d, s, 0, n if kept else 0, n)
    elif kept:
        memcpy(d, s, n)
    else:
        memset(d, 0, n)


cdef inline void and_bytes(char *d, const char *s, const char *mask,
                           Py_ssize_t n) noexcept nogil:
    """d = s & mask over n bytes: branchless, keeps NaN payloads and -0.0.
    Word by word here (SSE2 once vectorized), or with AVX2 (_mask.h)."""
    cdef Py_ssize_t t, words = n // 8
    cdef uint64_t v, m
    if _and_avx2:
        trilu_and_avx2(d, s, mask, n)
        return
    for t in range(words):
        memcpy(&v, s + 8 * t, 8)
        memcpy(&m, mask + 8 * t, 8)
        v = v & m
        memcpy(d + 8 * t, &v, 8)
    for t in range(8 * words, n):
        d[t] = s[t] & mask[t]


cdef void diagonal(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                   Py_ssize_t r1) noexcept nogil:
    """Rows [r0, r1) of a matrix's diagonal band."""
    cdef Py_ssize_t row = job.cols * job.width
    cdef const char *mask = job.mask + (r0 - job.lead) * row
    if job.method == ROWS:     # (inlined here with the part known)
        contiguous_rows(job, so, do, r0, r1, DIAGONAL)
    elif job.method != BAND_MASK:
        each_row(job, so, do, r0, r1, DIAGONAL)
    elif job.stream:
        trilu_stream_and(job.dst + do + r0 * row, job.src + so + r0 * row, mask,
                         (r1 - r0) * row)
    else:
        and_bytes(job.dst + do + r0 * row, job.src + so + r0 * row, mask,
                  (r1 - r0) * row)


cdef void bands_chunk(const Chunk *c) noexcept nogil:
    """Rows [start, stop) of the flattened (batch, row) index, band by band:
    the wholly kept and wholly zeroed rows of each matrix in bulk, the rows
    the diagonal crosses by the job's method."""
    cdef const Job *job = c.job
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, stop, unit = c.start
    cdef Py_ssize_t rows = job.rows, lead = job.lead, trail = job.trail
    cdef Py_ssize_t first = unit % rows
    batch_seek(job, unit // rows, idx, &so, &do)
    while unit < c.stop:
        stop = min(rows, first + c.stop - unit)
        if first < lead:
            bulk(job, so, do, first, min(stop, lead), job.lead_kept)
        if max(first, lead) < min(stop, trail):
            diagonal(job, so, do, max(first, lead), min(stop, trail))
        if max(first, trail) < stop:
            bulk(job, so, do, max(first, trail), stop, not job.lead_kept)
        unit += stop - first
        first = 0
        batch_next(job, idx, &so, &do)
    if job.stream:
        trilu_stream_fence()


cdef void matrices_chunk(const Chunk *c) noexcept nogil:
    """Matrices [start, stop), each contiguous, ANDed whole with the keep-mask."""
    cdef const Job *job = c.job
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, _, count, left, size = job.matrix_bytes
    if job.flat:
        # one run: a block of matrices per pass of the (repeated) mask
        so = c.start * size
        left = c.stop - c.start
        while left > 0:
            count = min(left, job.block)
            if job.stream:
                trilu_stream_and(job.dst + so, job.src + so, job.mask, count * size)
            else:
                and_bytes(job.dst + so, job.src + so, job.mask, count * size)
            so += count * size
            left -= count
        if job.stream:
            trilu_stream_fence()
        return
    batch_seek(job, c.start, idx, &so, &do)
    for _ in range(c.start, c.stop):
        and_bytes(job.dst + do, job.src + so, job.mask, size)
        batch_next(job, idx, &so, &do)


# --- threads -----------------------------------------------------------------------

cdef void run_chunk(const Chunk *c) noexcept nogil:
    if c.job.method == MATRICES:
        matrices_chunk(c)
    else:
        bands_chunk(c)


cdef void worker(void *arg) noexcept nogil:
    """One thread: its own share first, grain by grain, then what is left of
    the others' (a thread whose core is busy elsewhere gets help)."""
    cdef const Worker *w = <const Worker *>arg
    cdef Queue *q = w.queue
    cdef Chunk c
    cdef int r, v
    c.job = q.job
    for r in range(q.nthreads):
        v = (w.index + r) % q.nthreads
        while True:
            c.start = trilu_fetch_add(&q.next[v], q.grain)
            if c.start >= q.end[v]:
                break
            c.stop = min(c.start + q.grain, q.end[v])
            run_chunk(&c)


cdef Py_ssize_t share_start(const Queue *q, int t) noexcept nogil:
    """The first unit of thread t's share: shares cost alike, and rows do not
    (a row keeps anything from none to all of its elements, and a bulk row
    may need no writing at all)."""
    cdef const Job *job = q.job
    cdef Py_ssize_t per_matrix, target, b, lo, hi, mid
    if job.method == MATRICES:
        return q.units * t // q.nthreads
    per_matrix = row_cost(job, job.rows)
    if per_matrix == 0:
        return q.units * t // q.nthreads
    target = <Py_ssize_t>(<double>per_matrix * (q.units // job.rows) * t / q.nthreads)
    b = target // per_matrix
    target -= b * per_matrix
    lo = 0                     # the first row whose cumulative cost >= target
    hi = job.rows
    while lo < hi:
        mid = (lo + hi) // 2
        if row_cost(job, mid) < target:
            lo = mid + 1
        else:
            hi = mid
    return min(b * job.rows + lo, q.units)


cdef void run(Queue *q) noexcept nogil:
    """Each thread owns a contiguous share, so each first-touches pages of its
    own (threads faulting in the same huge page wait on each other)."""
    cdef Worker workers[TRILU_MAX_THREADS]
    cdef void *args[TRILU_MAX_THREADS]
    cdef Chunk whole
    cdef int t
    if q.nthreads == 1:
        whole.job = q.job
        whole.start = 0
        whole.stop = q.units
        run_chunk(&whole)
        return
    q.next[0] = 0
    for t in range(q.nthreads):   # shares tile [0, units), whatever the costs
        if t + 1 < q.nthreads:
            q.end[t] = min(max(share_start(q, t + 1), q.next[t]), q.units)
            q.next[t + 1] = q.end[t]
        else:
            q.end[t] = q.units
        workers[t].queue = q
        workers[t].index = t
        args[t] = &workers[t]
    trilu_parallel(worker, args, q.nthreads)


# --- planning ----------------------------------------------------------------------

cdef Py_ssize_t gcd(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    while b:
        a, b = b, a % b
    return a


cdef void plan_batch(Job *job, cnp.ndarray src,
                     const cnp.npy_intp *dst_strides) noexcept:
    """Fill the batch dims: drop size-1 dims, merge dims that walk as one."""
    cdef int a, nd = cnp.PyArray_NDIM(src) - 2
    cdef Py_ssize_t n, ss, ds
    cdef cnp.npy_intp *shape = cnp.PyArray_DIMS(src)
    cdef cnp.npy_intp *sst = cnp.PyArray_STRIDES(src)
    cdef const cnp.npy_intp *dst_ = dst_strides
    job.ndim = 0
    for a in range(nd):
        n = shape[a]
        ss = sst[a]
        ds = dst_[a]
        if n == 1:
            continue
        if (job.ndim > 0
                and job.src_step[job.ndim - 1] == n * ss
                and job.dst_step[job.ndim - 1] == n * ds):
            job.shape[job.ndim - 1] *= n
            job.src_step[job.ndim - 1] = ss
            job.dst_step[job.ndim - 1] = ds
            continue
        job.shape[job.ndim] = n
        job.src_step[job.ndim] = ss
        job.dst_step[job.ndim] = ds
        job.ndim += 1


cdef void plan_bands(Job *job) noexcept:
    """The rows wholly kept, crossed by the diagonal, wholly zeroed. Where no
    row is crossed, the matrices are one kind throughout: consecutive ones
    whose rows continue one another merge into one, so a batch that is one
    run of memory is one memcpy, one memset, or nothing."""
    cdef bint whole
    job.lead_kept = job.upper
    if job.upper:              # row i keeps [i + k, cols)
        job.lead = min(max(1 - job.k, 0), job.rows)
        job.trail = min(max(job.cols - job.k, job.lead), job.rows)
    else:                      # row i keeps [0, i + k + 1)
        job.lead = min(max(-job.k, 0), job.rows)
        job.trail = min(max(job.cols - job.k - 1, job.lead), job.rows)
    if job.lead != job.trail or 0 < job.lead < job.rows:
        return
    whole = job.lead == job.rows   # every row in the leading band
    while (job.ndim > 0
           and job.src_step[job.ndim - 1] == job.rows * job.src_row
           and job.dst_step[job.ndim - 1] == job.rows * job.dst_row):
        job.rows *= job.shape[job.ndim - 1]
        job.ndim -= 1
    job.lead = job.trail = job.rows if whole else 0


cdef Py_ssize_t plan(Job *job, cnp.ndarray src, char *dst,
                     const cnp.npy_intp *dst_strides, Py_ssize_t k,
                     bint upper) noexcept:
    """Fill the job for src -> dst (non-empty, of these strides): the walk,
    the bands, the method; return the number of matrices."""
    cdef int a, nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t nb = 1, row, lines
    job.src = <const char *>cnp.PyArray_DATA(src)
    job.dst = dst
    job.width = cnp.PyArray_ITEMSIZE(src)
    job.rows = cnp.PyArray_DIMS(src)[nd - 2]
    job.cols = cnp.PyArray_DIMS(src)[nd - 1]
    job.src_row = cnp.PyArray_STRIDES(src)[nd - 2]
    job.src_col = cnp.PyArray_STRIDES(src)[nd - 1]
    job.dst_row = dst_strides[nd - 2]
    job.dst_col = dst_strides[nd - 1]
    job.k = k
    job.upper = upper
    job.mask = NULL
    # The stride of a length-1 axis is never used: make it the contiguous one.
    if job.cols == 1:
        job.src_col = job.dst_col = job.width
    if job.rows == 1:
        job.src_row = job.cols * job.src_col
        job.dst_row = job.cols * job.dst_col
    # Walk along whichever axis is closer to contiguous in dst (then in src):
    # triu(x, k) is tril(x.T, -k).T, so a Fortran-order matrix needs no copy.
    if (abs(job.dst_col) > abs(job.dst_row)
            or (abs(job.dst_col) == abs(job.dst_row)
                and abs(job.src_col) > abs(job.src_row))):
        job.rows, job.cols = job.cols, job.rows
        job.src_row, job.src_col = job.src_col, job.src_row
        job.dst_row, job.dst_col = job.dst_col, job.dst_row
        job.upper = not job.upper
        job.k = -job.k

    plan_batch(job, src, dst_strides)
    plan_bands(job)
    for a in range(job.ndim):
        nb *= job.shape[a]

    row = job.cols * job.width
    job.matrix_bytes = job.rows * row
    job.bulk_dst = job.dst_col == job.width and abs(job.dst_row) == row
    job.bulk_src = (job.bulk_dst and job.src_col == job.width
                    and job.src_row == job.dst_row)
    job.method = STRIDED
    if (job.dst_col == job.width and job.rows > 1
            and job.width <= TILE_MAX_WIDTH
            and job.rows * job.cols * job.width >= TILE_MIN_BYTES
            and abs(job.src_row) < abs(job.src_col)):
        job.method = TILED
    elif job.src_col == job.width and job.dst_col == job.width:
        job.method = ROWS
        if (job.lead != job.trail and job.src_row == row
                and job.dst_row == row and row < MASK_ROW_BYTES):
            if nb >= 2 and job.matrix_bytes <= TINY_MATRIX_BYTES:
                job.method = MATRICES
            elif (job.trail - job.lead) * row <= MASK_MAX_BYTES:
                job.method = BAND_MASK

    job.flat = False
    job.block = 1
    if job.method == MATRICES:
        job.flat = (
            job.ndim == 1
            and job.src_step[0] == job.matrix_bytes
            and job.dst_step[0] == job.matrix_bytes)
        if job.flat:
            # A block of whole cache lines where the mask stays small, so
            # each pass starts as aligned as the first (streaming wants that).
            job.block = MASK_BLOCK_BYTES // job.matrix_bytes
            lines = 64 // gcd(job.matrix_bytes, 64)
            if job.block >= lines:
                job.block = job.block // lines * lines
            job.block = min(nb, max(1, job.block))
    # Not in place: only the zeroed part is written there, and streaming it
    # measured slower (2048x2048 float64 triu in a loop: 0.18 -> 0.37 ms).
    job.stream = (TRILU_STREAM and job.copy_kept
                  and cnp.PyArray_NBYTES(src) >= STREAM_MIN_BYTES
                  and job.method != STRIDED and job.method != TILED
                  and (job.method != MATRICES
                       or (job.flat and job.block * job.matrix_bytes % 64 == 0)))
    return nb


cdef Py_ssize_t mask_bytes(const Job *job) noexcept nogil:
    """The size of the job's keep-mask: 0 where it needs none."""
    if job.method == MATRICES:
        return job.block * job.matrix_bytes
    if job.method == BAND_MASK:
        return (job.trail - job.lead) * job.cols * job.width
    return 0


cdef void build_mask(const Job *job, char *mask) noexcept nogil:
    """0xFF over the bytes of kept elements, 0x00 elsewhere: the diagonal band
    (BAND_MASK), or whole matrices `block` times (MATRICES)."""
    cdef Py_ssize_t i, lo, hi, w = job.width, row = job.cols * job.width
    cdef Py_ssize_t r0 = 0 if job.method == MATRICES else job.lead
    cdef Py_ssize_t r1 = job.rows if job.method == MATRICES else job.trail
    for i in range(r0, r1):
        kept_cols(job.upper, job.k, job.cols, i, &lo, &hi)
        memset(mask + (i - r0) * row, 0, row)
        memset(mask + (i - r0) * row + lo * w, 0xFF, (hi - lo) * w)
    for i in range(1, job.block):
        memcpy(mask + i * job.matrix_bytes, mask, job.matrix_bytes)


cdef Py_ssize_t work_bytes(const Job *job, Py_ssize_t nb) noexcept nogil:
    """Bytes the job moves, written and read, with each row's fixed cost."""
    if job.method == MATRICES:     # every element read and written
        return 2 * nb * job.matrix_bytes
    return nb * (row_cost(job, job.rows) * job.width
                 + (job.trail - job.lead) * ROW_BYTES)


cdef int thread_count(Py_ssize_t work, Py_ssize_t units) noexcept nogil:
    return <int>max(1, min(trilu_threads_mine(), work // PARALLEL_MIN_BYTES, units))


cdef void run_job(Job *job, Py_ssize_t nb, Py_ssize_t work) noexcept nogil:
    """Run a planned job of `work` bytes whose mask, if any, is built: split
    into grains."""
    cdef Queue queue
    queue.job = job
    if job.method == MATRICES:
        queue.units = nb
        # whole blocks, so each grain starts as aligned as the first
        queue.grain = max(job.block, GRAIN_BYTES // job.matrix_bytes
                          // job.block * job.block)
    else:
        queue.units = nb * job.rows
        queue.grain = max(1, GRAIN_BYTES // (job.cols * job.width))
        if job.method == TILED:    # whole tiles
            queue.grain = max(1, queue.grain // tile_side(job.width)) * tile_side(
                job.width)
    queue.nthreads = thread_count(work, queue.units)
    run(&queue)


# --- arrays in, arrays out ---------------------------------------------------------

cdef void extent(cnp.ndarray a, char **lo, char **hi) noexcept:
    """The bytes a spans: [lo, hi), whatever the signs of its strides."""
    cdef int d
    cdef Py_ssize_t step
    lo[0] = hi[0] = <char *>cnp.PyArray_DATA(a)
    for d in range(cnp.PyArray_NDIM(a)):
        step = cnp.PyArray_STRIDES(a)[d] * (cnp.PyArray_DIMS(a)[d] - 1)
        if step < 0:
            lo[0] += step
        else:
            hi[0] += step
    hi[0] += cnp.PyArray_ITEMSIZE(a)


cdef bint same_memory(cnp.ndarray a, cnp.ndarray b) noexcept:
    """a and b are the same bytes walked the same way: b is a, in place."""
    cdef int d
    if cnp.PyArray_DATA(a) != cnp.PyArray_DATA(b):
        return False
    for d in range(cnp.PyArray_NDIM(a)):
        if cnp.PyArray_STRIDES(a)[d] != cnp.PyArray_STRIDES(b)[d]:
            return False
    return True


cdef enum OutState:            # what an out of m's shape is to m
    APART           # writable, and no byte shared with m
    IN_PLACE        # m's own memory, walked the same way
    OVERLAPS        # sharing some of m's bytes: m must be copied first
    READ_ONLY
    ZERO_STRIDE     # its elements overlap one another


cdef OutState out_state(cnp.ndarray m, cnp.ndarray out) noexcept:
    cdef int d
    cdef char *m_lo
    cdef char *m_hi
    cdef char *o_lo
    cdef char *o_hi
    if not cnp.PyArray_ISWRITEABLE(out):
        return READ_ONLY
    if cnp.PyArray_SIZE(out) == 0 or cnp.PyArray_ITEMSIZE(out) == 0:
        return APART           # (no bytes to share)
    for d in range(cnp.PyArray_NDIM(out)):
        if cnp.PyArray_STRIDES(out)[d] == 0 and cnp.PyArray_DIMS(out)[d] > 1:
            return ZERO_STRIDE
    if same_memory(m, out):
        return IN_PLACE
    extent(m, &m_lo, &m_hi)
    extent(out, &o_lo, &o_hi)
    return OVERLAPS if m_lo < o_hi and o_lo < m_hi else APART


def check_out(cnp.ndarray m not None, cnp.ndarray out not None):
    """Reject a read-only out, or one whose elements overlap (a zero stride);
    return whether out overlaps m's bytes without being exactly m's memory.
    The caller has checked that out has m's shape."""
    cdef OutState state = out_state(m, out)
    if state == READ_ONLY:
        raise ValueError("out is read-only")
    if state == ZERO_STRIDE:
        raise ValueError("out has a zero stride: its elements overlap")
    return state == OVERLAPS


cdef Py_ssize_t clamp(object k, Py_ssize_t rows, Py_ssize_t cols) except? -1:
    """k clamped to [-rows, cols], where every k beyond gives the same answer."""
    cdef int overflow
    cdef long long v = PyLong_AsLongLongAndOverflow(k, &overflow)
    if overflow:
        return cols if overflow > 0 else -rows
    return <Py_ssize_t>min(max(v, -rows), cols)


cdef enum Order:               # a fresh result's memory layout
    TRIU_ORDER      # numpy.triu's own (docs: user_guide/numpy.rst, Layout)
    KEEP_ORDER      # "K": as numpy.empty_like
    C_ORDER         # "C"
    F_ORDER         # "F"
    ANY_ORDER       # "A": "F" where src is Fortran- and not C-contiguous, else "C"


cdef int order_code(object order) except -2:
    """The Order of the order= argument, -1 where it names none."""
    if order is None:
        return TRIU_ORDER
    if type(order) is str and len(<str>order) == 1:
        return {"K": KEEP_ORDER, "C": C_ORDER, "F": F_ORDER,
                "A": ANY_ORDER}.get(order, -1)
    return -1


cdef Order resolve(cnp.ndarray src, Order order) noexcept:
    """order as numpy resolves it for src: "A" to "C" or "F", and "K" to "C"
    or "F" where src is contiguous so (PyArray_NewLikeArray)."""
    cdef bint c = cnp.PyArray_IS_C_CONTIGUOUS(src)
    cdef bint f = cnp.PyArray_IS_F_CONTIGUOUS(src)
    if order == ANY_ORDER:
        return F_ORDER if f and not c else C_ORDER
    if order == KEEP_ORDER and (c or cnp.PyArray_NDIM(src) <= 1):
        return C_ORDER
    if order == KEEP_ORDER and f:
        return F_ORDER
    return order


cdef inline Py_ssize_t iter_stride(cnp.ndarray src, int op, int axis) noexcept:
    """numpy.triu's where(mask, zeros(1), m) iterator: the stride of operand op
    (0: the (N, M) boolean mask, C-contiguous; 1: m) along axis, 0 where the
    operand is broadcast or its axis has length 1 (nditer's rule). The zeros
    and the output have no strides there."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef cnp.npy_intp *dims = cnp.PyArray_DIMS(src)
    if dims[axis] == 1:
        return 0
    if op == 1:
        return cnp.PyArray_STRIDES(src)[axis]
    if dims[nd - 2] == 0 or dims[nd - 1] == 0:
        return 0                   # an empty mask's strides are 0
    if axis == nd - 1:
        return 1
    return dims[nd - 1] if axis == nd - 2 else 0


cdef void result_strides(cnp.ndarray src, Order order, Py_ssize_t w,
                         cnp.npy_intp *out) noexcept:
    """The strides of a fresh result for src with elements of w bytes, in a
    resolved order: its axes ranked fastest first, then strides built up.

    TRIU_ORDER ranks them as numpy.triu's iterator (nditer's
    npyiter_find_best_axis_ordering, for order "K" with no output given): a
    stable insertion sort from C order, fastest axis first, in which an axis
    moves ahead of another only if every operand striding along both agrees
    that its stride is smaller (C order wins a conflict; the mask makes the
    last two axes C order). KEEP_ORDER ranks them by |stride|, ties in C
    order (numpy's PyArray_CreateSortedStridePerm)."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef int i0, i1, pos, a0, a1, op
    cdef int fast[cnp.NPY_MAXDIMS]     # fast[p]: the axis of rank p
    cdef bint ambiguous, swap
    cdef Py_ssize_t s0, s1, stride = w
    cdef cnp.npy_intp *dims = cnp.PyArray_DIMS(src)
    cdef cnp.npy_intp *st = cnp.PyArray_STRIDES(src)
    for i0 in range(nd):
        fast[i0] = i0 if order == F_ORDER else nd - 1 - i0
    if order == TRIU_ORDER or order == KEEP_ORDER:
        for i0 in range(1, nd):
            a0 = fast[i0]
            pos = i0
            for i1 in range(i0 - 1, -1, -1):
                a1 = fast[i1]
                if order == KEEP_ORDER:
                    # a1 is C-ahead of a0 (a1 > a0) unless they moved
                    if abs(st[a0]) < abs(st[a1]) or (
                            abs(st[a0]) == abs(st[a1]) and a0 > a1):
                        pos = i1
                        continue
                    break
                ambiguous = True
                swap = False
                for op in range(2):
                    s0 = iter_stride(src, op, a0)
                    s1 = iter_stride(src, op, a1)
                    if s0 != 0 and s1 != 0:
                        if abs(s1) <= abs(s0):
                            swap = False
                        elif ambiguous:
                            swap = True
                        ambiguous = False
                if not ambiguous:
                    if not swap:
                        break
                    pos = i1
            for i1 in range(i0, pos, -1):
                fast[i1] = fast[i1 - 1]
            fast[pos] = a0
    for i0 in range(nd):
        out[fast[i0]] = stride
        stride *= dims[fast[i0]]


cdef Allocation allocation(cnp.ndarray src, const cnp.npy_intp *strides,
                           Order order, Py_ssize_t k, bint upper) noexcept:
    """Where a fresh result for src, of these strides, comes from: chosen by
    the bytes each choice makes the kernel write and the faults it takes
    (docs: user_guide/memory.rst). calloc's zero pages need np.zeros, which
    makes C or Fortran order only; other layouts are written whole."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(src)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    cdef Py_ssize_t size = cnp.PyArray_NBYTES(src), w = cnp.PyArray_ITEMSIZE(src)
    cdef Py_ssize_t nb, kept, kept_rows, touched = 0
    cdef Allocation how
    if size < ZERO_PAGES_MIN:
        return MALLOC
    if abs(strides[nd - 2]) < abs(strides[nd - 1]):
        rows, cols, k, upper = cols, rows, -k, not upper  # rows in memory: columns
    nb = cnp.PyArray_SIZE(src) // (rows * cols)
    kept = kept_in(upper, k, rows, cols) * w
    # The rows holding a kept element, one run each: the pages they touch.
    if upper:
        kept_rows = min(rows, max(0, cols - k))
    else:
        kept_rows = rows - min(rows, max(0, -k))
    if kept_rows:              # (+ a page for where the run starts in one)
        touched = min(kept_rows * cols * w, kept + kept_rows * _page) + _page
    kept *= nb
    if size - kept >= FAULT_COST * min(size, nb * touched):
        how = ZERO_PAGES if _zero_pages is not None else CALLOC
    elif size < <Py_ssize_t>TRILU_RECYCLE_MIN:
        return MALLOC
    elif _recycler is not None and (trilu_spare_fits(size)
                                    or size < <Py_ssize_t>TRILU_CALLOC_MIN):
        return RECYCLED
    elif size < <Py_ssize_t>TRILU_CALLOC_MIN:
        return MALLOC
    else:
        how = CALLOC
    if how == CALLOC and not (order == C_ORDER or order == F_ORDER
                              or contiguous(nd, cnp.PyArray_DIMS(src), strides, w)):
        return RECYCLED if _recycler is not None else MALLOC
    return how


cdef bint contiguous(int nd, const cnp.npy_intp *dims, const cnp.npy_intp *strides,
                     Py_ssize_t w) noexcept:
    """The strides np.zeros makes in C order, to the letter (those of a
    length-1 axis included)."""
    cdef int d
    cdef Py_ssize_t stride = w
    for d in range(nd - 1, -1, -1):
        if strides[d] != stride:
            return False
        stride *= dims[d]
    return True


cdef cnp.ndarray new_array(cnp.ndarray src, cnp.dtype descr, Order order,
                           cnp.npy_intp *strides):
    """An uninitialised array of src's shape in a resolved order (strides as
    result_strides gave them), from the memory handler in force."""
    Py_INCREF(descr)           # (stolen)
    return PyArray_NewFromDescr(
        &PyArray_Type, <void *>descr, cnp.PyArray_NDIM(src), cnp.PyArray_DIMS(src),
        NULL if order == C_ORDER or order == F_ORDER else strides, NULL,
        cnp.NPY_ARRAY_F_CONTIGUOUS if order == F_ORDER else 0, NULL)


cdef cnp.ndarray new_result(cnp.ndarray src, Allocation how, Order order,
                            cnp.npy_intp *strides):
    """A fresh array for src's result, from `how`: results of 4 MiB or more,
    and zero pages, from trilu's handlers (_recycle.h)."""
    cdef object handler = None, previous = None
    if how == ZERO_PAGES:
        handler = _zero_pages  # its malloc maps fresh zero pages
    elif how != MALLOC:
        handler = _recycler
    if handler is not None:
        previous = PyDataMem_SetHandler(handler)
    try:
        if how == CALLOC:
            return np.zeros((<object>src).shape, (<object>src).dtype,
                            order="F" if order == F_ORDER else "C")
        return new_array(src, src.descr, order, strides)
    finally:
        if handler is not None:
            PyDataMem_SetHandler(previous)


def empty(cnp.ndarray m not None, cnp.dtype dtype not None, object order):
    """An uninitialised result for m in dtype, laid out as order= says (the
    Python layer's object and recast paths); order validated by the caller."""
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef Order o = resolve(m, <Order>order_code(order))
    result_strides(m, o, dtype.itemsize, strides)
    return new_array(m, dtype, o, strides)


cdef bint plain_out(cnp.ndarray a, cnp.ndarray out) noexcept:
    """out is what check_out and the Python layer accept with no more work: a's
    shape and dtype, writable, no zero strides, a itself or apart from it."""
    cdef int d
    cdef OutState state
    if (cnp.PyArray_NDIM(out) != cnp.PyArray_NDIM(a)
            or not cnp.PyArray_EquivTypes(a.descr, out.descr)):
        return False
    for d in range(cnp.PyArray_NDIM(a)):
        if cnp.PyArray_DIMS(out)[d] != cnp.PyArray_DIMS(a)[d]:
            return False
    state = out_state(a, out)
    return state == APART or state == IN_PLACE


def fill_plain(object m, object k, bint upper, object out=None, object order=None):
    """``fill(m, out, k, upper, order)`` for the common case, decided here at C
    speed: an exact ndarray of 2 or more dimensions whose dtype is plain bytes
    (native byte order, no fields, no references, no metadata), an exact int
    k, a valid order, and no out or an exact ndarray that needs no more checks
    (plain_out). None for anything else, which the Python layer then routes."""
    cdef cnp.ndarray a
    cdef cnp.dtype descr
    cdef int code
    if type(m) is not np.ndarray or type(k) is not int:
        return None
    a = <cnp.ndarray>m
    descr = a.descr
    if (cnp.PyArray_NDIM(a) < 2 or not cnp.PyArray_ISNOTSWAPPED(a)
            or cnp.PyDataType_HASFIELDS(descr)
            or cnp.PyDataType_FLAGS(descr) & NPY_ITEM_REFCOUNT
            or descr_metadata(descr) != NULL):
        return None
    if out is not None and (type(out) is not np.ndarray
                            or not plain_out(a, <cnp.ndarray>out)):
        return None
    code = order_code(order)
    if code < 0:
        return None
    return triangle(a, out, k, upper, <Order>code)


def fill(cnp.ndarray src not None, cnp.ndarray dst, object k, bint upper,
         object order=None):
    """Write the triangle of src into dst (a new array laid out as `order`
    says when None); return dst.

    Preconditions, checked by the caller: src.ndim >= 2, k is an int, order
    valid; dst has src's shape and itemsize, is writable, and either is src's
    exact memory (in place: only the zeroed part is written) or does not
    overlap it.
    """
    return triangle(src, dst, k, upper, <Order>order_code(order))


cdef Allocation decide(cnp.ndarray src, Order order, Py_ssize_t k, bint upper,
                       cnp.npy_intp *strides, Order *resolved) noexcept:
    """A fresh result's layout (into strides, and the order resolved) and
    where its memory comes from."""
    resolved[0] = resolve(src, order)
    result_strides(src, resolved[0], cnp.PyArray_ITEMSIZE(src), strides)
    return allocation(src, strides, resolved[0], k, upper)


cdef cnp.ndarray triangle(cnp.ndarray src, cnp.ndarray dst, object k, bint upper,
                          Order order):
    """fill, called from C without a Python call's cost."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t kk = clamp(k, cnp.PyArray_DIMS(src)[nd - 2],
                               cnp.PyArray_DIMS(src)[nd - 1])
    cdef Job job
    cdef Py_ssize_t nb, need, work
    cdef Allocation how
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef char small[MASK_BLOCK_BYTES]
    cdef char *mask = small

    job.copy_kept = job.zero_rest = True
    if dst is None:
        how = decide(src, order, kk, upper, strides, &order)
        job.zero_rest = how == MALLOC or how == RECYCLED
        dst = new_result(src, how, order, strides)
    else:
        job.copy_kept = not same_memory(src, dst)
    if cnp.PyArray_SIZE(src) == 0 or cnp.PyArray_ITEMSIZE(src) == 0:
        return dst             # nothing to write (V0 has no bytes at all)
    nb = plan(&job, src, <char *>cnp.PyArray_DATA(dst), cnp.PyArray_STRIDES(dst),
              kk, upper)
    need = mask_bytes(&job)
    if need > MASK_BLOCK_BYTES:
        mask = <char *>malloc(need)
        if mask == NULL:
            raise MemoryError("trilu: cannot allocate the keep-mask")
    if need:
        build_mask(&job, mask)
        job.mask = mask
    work = work_bytes(&job, nb)
    if work >= NOGIL_MIN_BYTES:
        with nogil:
            run_job(&job, nb, work)
    else:
        run_job(&job, nb, work)
    if mask != small:
        free(mask)
    return dst


_METHODS = {ROWS: "rows", STRIDED: "strided", TILED: "tiled",
            BAND_MASK: "band_mask", MATRICES: "matrices"}
_ALLOCATIONS = {MALLOC: "malloc", RECYCLED: "recycled", CALLOC: "calloc",
                ZERO_PAGES: "zero_pages"}


def explain(cnp.ndarray src not None, object k, bint upper, cnp.ndarray out=None,
            object order=None):
    """What ``fill(src, out, k, upper, order)`` would do, as a dict, for tests
    and the bench: the method, the bands (after the walk is chosen and
    uniform matrices merged), the threads, streaming, and for a fresh result
    its strides and the allocation it would get now. Nothing is allocated,
    written or kept."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t kk = clamp(k, cnp.PyArray_DIMS(src)[nd - 2],
                               cnp.PyArray_DIMS(src)[nd - 1])
    cdef Job job
    cdef Py_ssize_t nb
    cdef Allocation how
    cdef Order o = <Order>order_code(order)
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef cnp.npy_intp *dst_strides = strides
    cdef dict info = {}
    job.copy_kept = job.zero_rest = True
    if out is None:
        how = decide(src, o, kk, upper, strides, &o)
        job.zero_rest = how == MALLOC or how == RECYCLED
        info["allocation"] = _ALLOCATIONS[how]
        info["strides"] = tuple([strides[d] for d in range(nd)])
    else:
        job.copy_kept = not same_memory(src, out)
        dst_strides = cnp.PyArray_STRIDES(out)
    if cnp.PyArray_SIZE(src) == 0 or cnp.PyArray_ITEMSIZE(src) == 0:
        return info
    nb = plan(&job, src, NULL, dst_strides, kk, upper)
    info.update(
        method=_METHODS[job.method], matrices=nb, rows=job.rows, cols=job.cols,
        lead=job.lead, trail=job.trail, lead_kept=job.lead_kept,
        bulk_src=job.bulk_src, bulk_dst=job.bulk_dst, stream=job.stream,
        threads=thread_count(work_bytes(&job, nb),
                             nb if job.method == MATRICES else nb * job.rows))
    return info


include "_indices.pxi"
