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

cnp.import_array()


cdef extern from "numpy/arrayobject.h":
    enum: NPY_ITEM_REFCOUNT
    object PyArray_NewLikeArray(cnp.ndarray prototype, cnp.NPY_ORDER order,
                                void *descr, int subok)
    object PyDataMem_SetHandler(object handler)


cdef extern from "_recycle.h":
    # Results this big come from a handler that recycles freed results' memory,
    # and from 32 MiB, where malloc maps fresh zero pages, calloc is free.
    enum: TRILU_RECYCLE_MIN    # 4 MiB
    enum: TRILU_CALLOC_MIN     # 32 MiB
    bint trilu_spare_fits(size_t size) nogil
    object trilu_recycler_capsule(int hugepages)


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
    void trilu_threads_set(int n)


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
cdef object _recycler = None
if os.environ.get("TRILU_RECYCLE", "").strip() != "0":
    _recycler = trilu_recycler_capsule(_numpy_hugepages())
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

ctypedef fused word_t:         # a machine word, for the branchless keep-mask
    uint8_t
    uint16_t
    uint32_t
    uint64_t


# --- tuning (bytes; measured with bench/, see README) ------------------------

cdef enum:
    # Matrices with rows shorter than this, and small enough for the mask to
    # stay in L1, are done whole by ANDing a keep-mask: no per-row calls.
    MASK_ROW_BYTES = 256
    MASK_MATRIX_BYTES = 32768
    # The mask covers a block of consecutive matrices this long, so batches of
    # 3x3 matrices run as one long vectorizable loop.
    MASK_BLOCK_BYTES = 4096
    # Each thread gets at least this many bytes to move (written + read): below
    # ~1 MiB of work one thread beats two, waking a pooled worker included.
    PARALLEL_MIN_BYTES = 1 << 19
    # A row's fixed cost (its memset and memcpy calls, ~5 ns) in bytes moved.
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
    # Below this the GIL is kept: releasing it costs more than the work.
    NOGIL_MIN_BYTES = 1 << 14
    MAX_BATCH_DIMS = 64        # NPY_MAXDIMS of numpy 2 (numpy 1 has 32)


cdef enum Method:
    ROWS            # contiguous rows: memset + memcpy per row
    STRIDED         # any strides: element by element
    MASKED          # contiguous small matrices: dst = src & keep-mask


cdef struct Job:
    const char *src
    char *dst
    Py_ssize_t rows, cols, k, width
    Py_ssize_t src_row, src_col, dst_row, dst_col
    bint upper
    bint copy_kept             # False in place: the kept part is already there
    bint zero_rest             # False into fresh zeroed pages
    bint stream                # write with streaming stores (ROWS, flat MASKED)
    Method method
    # batch dimensions, size-1 dims dropped and mergeable dims merged
    int ndim
    Py_ssize_t shape[MAX_BATCH_DIMS]
    Py_ssize_t src_step[MAX_BATCH_DIMS]
    Py_ssize_t dst_step[MAX_BATCH_DIMS]
    # MASKED only: keep-mask bytes for `block` consecutive matrices
    const char *mask
    Py_ssize_t matrix_bytes, block
    bint flat                  # the whole batch is one contiguous run
    int word


cdef struct Chunk:             # a run of work: units [start, stop)
    const Job *job
    Py_ssize_t start, stop     # matrices (MASKED) or rows of the flat batch


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
    trilu_threads_set(max(1, min(n, TRILU_MAX_THREADS)))


def get_num_threads():
    """The number of threads large calls may use."""
    return trilu_threads_get()


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


# --- rows ----------------------------------------------------------------------

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


cdef inline void kept_range(const Job *job, Py_ssize_t i, Py_ssize_t *lo,
                            Py_ssize_t *hi) noexcept nogil:
    kept_cols(job.upper, job.k, job.cols, i, lo, hi)


cdef Py_ssize_t kept_upper(Py_ssize_t r, Py_ssize_t cols,
                           Py_ssize_t k) noexcept nogil:
    """How many elements rows [0, r) keep for upper with this k: rows with
    i + k <= 0 keep all, rows with i + k >= cols none, the rest cols - i - k."""
    cdef Py_ssize_t full = min(r, max(0, 1 - k))
    cdef Py_ssize_t stop = min(r, max(0, cols - k))
    cdef Py_ssize_t n = max(0, stop - full)
    return full * cols + n * (cols - k) - (full + stop - 1) * n // 2


cdef Py_ssize_t row_cost(const Job *job, Py_ssize_t r) noexcept nogil:
    """Elements moved by rows [0, r) of a matrix: written, plus kept ones read."""
    cdef Py_ssize_t kept, size = r * job.cols
    if job.upper:
        kept = kept_upper(r, job.cols, job.k)
    else:
        kept = size - kept_upper(r, job.cols, job.k + 1)
    if not job.copy_kept:
        return size - kept         # in place: only the zeroed part is written
    if not job.zero_rest:
        return size + 2 * kept     # zeroed pages: all faulted in, the kept part copied
    return size + kept


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


cdef inline void row_strided(elem_t *tag, const char *s, char *d,
                             Py_ssize_t ss, Py_ssize_t ds, Py_ssize_t w,
                             Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi,
                             const Job *job) noexcept nogil:
    """Zero [0, lo), copy [lo, hi), zero [hi, n): elements of any strides, in
    address order (stores that jump back defeat the hardware's streaming)."""
    cdef Py_ssize_t j
    cdef elem_t v
    if job.zero_rest:
        zero_run(tag, d, ds, w, lo)
    if job.copy_kept:
        if elem_t is any_width:
            for j in range(lo, hi):
                memcpy(d + j * ds, s + j * ss, w)
        else:
            for j in range(lo, hi):
                memcpy(&v, s + j * ss, sizeof(elem_t))
                memcpy(d + j * ds, &v, sizeof(elem_t))
    if job.zero_rest:
        zero_run(tag, d + hi * ds, ds, w, n - hi)


cdef void rows_chunk(elem_t *tag, const Chunk *c) noexcept nogil:
    """Rows [start, stop) of the flattened (batch, row) index, any strides."""
    cdef const Job *job = c.job
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, _, lo, hi
    cdef Py_ssize_t i = c.start % job.rows
    batch_seek(job, c.start // job.rows, idx, &so, &do)
    for _ in range(c.start, c.stop):
        kept_range(job, i, &lo, &hi)
        row_strided(tag, job.src + so + i * job.src_row,
                    job.dst + do + i * job.dst_row, job.src_col, job.dst_col,
                    job.width, job.cols, lo, hi, job)
        i += 1
        if i == job.rows:
            i = 0
            batch_next(job, idx, &so, &do)


cdef void contiguous_chunk(const Chunk *c) noexcept nogil:
    """The same for contiguous rows: a memset, a memcpy and a memset each, in
    address order (stores that jump back defeat the hardware's streaming);
    for large results, one pass of streaming stores each (_stream.h).
    The job's fields are held in locals: the compiler cannot assume that the
    calls leave *job alone, and would reload them every row."""
    cdef const Job *job = c.job
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, i, first, stop, lo, hi, ahead, t
    cdef Py_ssize_t rows = job.rows, cols = job.cols, w = job.width, k = job.k
    cdef Py_ssize_t n = cols * w, src_row = job.src_row, dst_row = job.dst_row
    cdef Py_ssize_t unit = c.start
    cdef bint upper = job.upper, copy = job.copy_kept, zero = job.zero_rest
    cdef bint stream = job.stream
    cdef const char *s
    cdef char *d
    first = unit % rows
    batch_seek(job, unit // rows, idx, &so, &do)
    while unit < c.stop:
        stop = min(rows, first + c.stop - unit)
        s = job.src + so + first * src_row
        d = job.dst + do + first * dst_row
        for i in range(first, stop):
            if copy and i + PREFETCH_ROWS < rows:
                # the head of the kept part PREFETCH_ROWS rows on
                kept_cols(upper, k, cols, i + PREFETCH_ROWS, &lo, &hi)
                ahead = PREFETCH_ROWS * src_row + lo * w
                for t in range(min(PREFETCH_LINES, (hi - lo) * w // 64)):
                    trilu_prefetch(s + ahead + 64 * t)
            kept_cols(upper, k, cols, i, &lo, &hi)
            lo *= w                # in bytes from here
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
            elif hi > lo:          # fresh zeroed pages: the kept part only
                trilu_stream_row(d + lo, s + lo, 0, hi - lo, hi - lo)
            s += src_row
            d += dst_row
        unit += stop - first
        first = 0
        batch_next(job, idx, &so, &do)
    if stream:
        trilu_stream_fence()


# --- whole small matrices --------------------------------------------------------

cdef inline void and_mask(word_t *tag, const char *s, char *d,
                          const char *mask, Py_ssize_t nbytes) noexcept nogil:
    """d = s & mask over nbytes: branchless, keeps NaN payloads and -0.0.
    Word by word here (SSE2 once vectorized), or with AVX2 (_mask.h)."""
    cdef Py_ssize_t t, n = nbytes // <Py_ssize_t>sizeof(word_t)
    cdef word_t v, m
    if _and_avx2:
        trilu_and_avx2(d, s, mask, nbytes)
        return
    for t in range(n):
        memcpy(&v, s + t * sizeof(word_t), sizeof(word_t))
        memcpy(&m, mask + t * sizeof(word_t), sizeof(word_t))
        v = v & m
        memcpy(d + t * sizeof(word_t), &v, sizeof(word_t))


cdef void masked_chunk(word_t *tag, const Chunk *c) noexcept nogil:
    """Matrices [start, stop), each contiguous, ANDed with the keep-mask."""
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
                and_mask(tag, job.src + so, job.dst + so, job.mask, count * size)
            so += count * size
            left -= count
        if job.stream:
            trilu_stream_fence()
        return
    batch_seek(job, c.start, idx, &so, &do)
    for _ in range(c.start, c.stop):
        and_mask(tag, job.src + so, job.dst + do, job.mask, size)
        batch_next(job, idx, &so, &do)


# --- dispatch ----------------------------------------------------------------------

cdef void run_chunk(const Chunk *c) noexcept nogil:
    """Pick the specialization for the element width; runs on any thread."""
    cdef const Job *job = c.job
    cdef Py_ssize_t w = job.width
    if job.method == MASKED:
        if job.word == 8:
            masked_chunk(<uint64_t *>NULL, c)
        elif job.word == 4:
            masked_chunk(<uint32_t *>NULL, c)
        elif job.word == 2:
            masked_chunk(<uint16_t *>NULL, c)
        else:
            masked_chunk(<uint8_t *>NULL, c)
    elif job.method == ROWS:
        contiguous_chunk(c)
    elif w == 8:
        rows_chunk(<uint64_t *>NULL, c)
    elif w == 4:
        rows_chunk(<uint32_t *>NULL, c)
    elif w == 2:
        rows_chunk(<uint16_t *>NULL, c)
    elif w == 1:
        rows_chunk(<uint8_t *>NULL, c)
    elif w == 16:
        rows_chunk(<u128 *>NULL, c)
    else:
        rows_chunk(<any_width *>NULL, c)


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
    """The first unit of thread t's share: shares cost alike, and a triangle's
    rows do not (a row keeps anything from none to all of its elements)."""
    cdef const Job *job = q.job
    cdef Py_ssize_t per_matrix, target, b, lo, hi, mid
    if job.method == MASKED:
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


cdef Py_ssize_t gcd(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    while b:
        a, b = b, a % b
    return a


cdef void plan_batch(Job *job, cnp.ndarray src, cnp.ndarray dst) noexcept:
    """Fill the batch dims: drop size-1 dims, merge dims that walk as one."""
    cdef int a, nd = cnp.PyArray_NDIM(src) - 2
    cdef Py_ssize_t n, ss, ds
    cdef cnp.npy_intp *shape = cnp.PyArray_DIMS(src)
    cdef cnp.npy_intp *sst = cnp.PyArray_STRIDES(src)
    cdef cnp.npy_intp *dst_ = cnp.PyArray_STRIDES(dst)
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


def check_out(cnp.ndarray m not None, cnp.ndarray out not None):
    """Reject a read-only out, or one whose elements overlap (a zero stride);
    return whether out overlaps m's bytes without being exactly m's memory.
    The caller has checked that out has m's shape."""
    cdef int d, nd = cnp.PyArray_NDIM(out)
    cdef char *m_lo
    cdef char *m_hi
    cdef char *o_lo
    cdef char *o_hi
    if not cnp.PyArray_ISWRITEABLE(out):
        raise ValueError("out is read-only")
    if cnp.PyArray_SIZE(out) == 0:
        return False
    for d in range(nd):
        if cnp.PyArray_STRIDES(out)[d] == 0 and cnp.PyArray_DIMS(out)[d] > 1:
            raise ValueError("out has a zero stride: its elements overlap")
    if same_memory(m, out):
        return False       # in place
    extent(m, &m_lo, &m_hi)
    extent(out, &o_lo, &o_hi)
    return m_lo < o_hi and o_lo < m_hi


cdef Py_ssize_t clamp(object k, Py_ssize_t rows, Py_ssize_t cols) except? -1:
    """k clamped to [-rows, cols], where every k beyond gives the same answer."""
    cdef int overflow
    cdef long long v = PyLong_AsLongLongAndOverflow(k, &overflow)
    if overflow:
        return cols if overflow > 0 else -rows
    return <Py_ssize_t>min(max(v, -rows), cols)


cdef cnp.ndarray large_result(cnp.ndarray src, bint fortran, bint *zero_rest):
    """A result of 4 MiB or more, from the recycling handler: the spare block
    of a freed result of this size if there is one; else, from 32 MiB, fresh
    pages from calloc, already zero (the zeroed part is then never written)."""
    cdef object previous = None
    cdef size_t nbytes = cnp.PyArray_NBYTES(src)
    if _recycler is not None:
        previous = PyDataMem_SetHandler(_recycler)
    try:
        zero_rest[0] = (nbytes < TRILU_CALLOC_MIN) or trilu_spare_fits(nbytes)
        if zero_rest[0]:
            return PyArray_NewLikeArray(
                src, cnp.NPY_FORTRANORDER if fortran else cnp.NPY_CORDER, NULL, 0)
        return np.zeros((<object>src).shape, (<object>src).dtype,
                        order="F" if fortran else "C")
    finally:
        if _recycler is not None:
            PyDataMem_SetHandler(previous)


def fill_plain(object m, object k, bint upper):
    """``fill(m, None, k, upper)`` for the common case, decided here at C
    speed: an exact ndarray of 2 or more dimensions whose dtype is plain bytes
    (native byte order, no fields, no references), and an exact int k. None
    for anything else, which the Python layer then routes."""
    cdef cnp.ndarray a
    cdef cnp.dtype descr
    if type(m) is not np.ndarray or type(k) is not int:
        return None
    a = <cnp.ndarray>m
    descr = a.descr
    if (cnp.PyArray_NDIM(a) < 2 or not cnp.PyArray_ISNOTSWAPPED(a)
            or cnp.PyDataType_HASFIELDS(descr)
            or cnp.PyDataType_FLAGS(descr) & NPY_ITEM_REFCOUNT):
        return None
    return fill(a, None, k, upper)


def fill(cnp.ndarray src not None, cnp.ndarray dst, object k, bint upper):
    """Write the triangle of src into dst (a new array when None); return dst.

    Preconditions, checked by the caller: src.ndim >= 2, k is an int; dst has
    src's shape and itemsize, is writable, and either is src's exact memory (in
    place: only the zeroed part is written) or does not overlap it.
    """
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Job job
    cdef Queue queue
    cdef Py_ssize_t work, lines, nb = 1
    cdef int a
    cdef char *mask = NULL
    cdef bint fortran

    job.copy_kept = job.zero_rest = True
    if dst is None:
        fortran = (cnp.PyArray_IS_F_CONTIGUOUS(src)
                   and not cnp.PyArray_IS_C_CONTIGUOUS(src))
        if cnp.PyArray_NBYTES(src) >= <Py_ssize_t>TRILU_RECYCLE_MIN:
            dst = large_result(src, fortran, &job.zero_rest)
        else:
            dst = PyArray_NewLikeArray(
                src, cnp.NPY_FORTRANORDER if fortran else cnp.NPY_CORDER, NULL, 0)
    else:
        job.copy_kept = not same_memory(src, dst)

    job.src = <const char *>cnp.PyArray_DATA(src)
    job.dst = <char *>cnp.PyArray_DATA(dst)
    job.width = cnp.PyArray_ITEMSIZE(src)
    job.rows = cnp.PyArray_DIMS(src)[nd - 2]
    job.cols = cnp.PyArray_DIMS(src)[nd - 1]
    job.src_row = cnp.PyArray_STRIDES(src)[nd - 2]
    job.src_col = cnp.PyArray_STRIDES(src)[nd - 1]
    job.dst_row = cnp.PyArray_STRIDES(dst)[nd - 2]
    job.dst_col = cnp.PyArray_STRIDES(dst)[nd - 1]
    job.k = clamp(k, job.rows, job.cols)
    job.upper = upper
    if cnp.PyArray_SIZE(src) == 0:
        return dst
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

    plan_batch(&job, src, dst)
    for a in range(job.ndim):
        nb *= job.shape[a]

    job.matrix_bytes = job.rows * job.cols * job.width
    if job.src_col == job.width and job.dst_col == job.width:
        job.method = ROWS
        if (nb >= 4
                and job.src_row == job.cols * job.width
                and job.dst_row == job.cols * job.width
                and job.cols * job.width < MASK_ROW_BYTES
                and job.matrix_bytes <= MASK_MATRIX_BYTES):
            job.method = MASKED
    else:
        job.method = STRIDED

    if job.method == MASKED:
        job.flat = job.ndim == 0 or (
            job.ndim == 1
            and job.src_step[0] == job.matrix_bytes
            and job.dst_step[0] == job.matrix_bytes)
        job.block = 1
        if job.flat:
            # A block of whole cache lines where the mask stays small, so
            # each pass starts as aligned as the first (streaming wants that).
            job.block = MASK_BLOCK_BYTES // job.matrix_bytes
            lines = 64 // gcd(job.matrix_bytes, 64)
            if job.block >= lines:
                job.block = job.block // lines * lines
            job.block = min(nb, max(1, job.block))
        job.word = 8
        while job.width % job.word:
            job.word //= 2
        mask = <char *>malloc(job.block * job.matrix_bytes)
        if mask == NULL:
            raise MemoryError("trilu: cannot allocate the keep-mask")
        build_mask(&job, mask)
        job.mask = mask
    # Not in place: only the zeroed part is written there, and streaming it
    # measured slower (2048x2048 float64 triu in a loop: 0.18 -> 0.37 ms).
    job.stream = (TRILU_STREAM and job.copy_kept
                  and cnp.PyArray_NBYTES(dst) >= STREAM_MIN_BYTES
                  and (job.method == ROWS
                       or (job.method == MASKED and job.flat
                           and job.block * job.matrix_bytes % 64 == 0)))

    if job.method == MASKED:   # every element read and written
        work = 2 * nb * job.matrix_bytes
    else:
        work = nb * (row_cost(&job, job.rows) * job.width + job.rows * ROW_BYTES)
    queue.job = &job
    queue.nthreads = <int>max(1, min(trilu_threads_get(), work // PARALLEL_MIN_BYTES))
    if job.method == MASKED:
        queue.units = nb
        # whole blocks, so each grain starts as aligned as the first
        queue.grain = max(job.block, GRAIN_BYTES // job.matrix_bytes
                          // job.block * job.block)
    else:
        queue.units = nb * job.rows
        queue.grain = max(1, GRAIN_BYTES // (job.cols * job.width))
    queue.nthreads = <int>min(queue.nthreads, queue.units)
    if work >= NOGIL_MIN_BYTES:
        with nogil:
            run(&queue)
    else:
        run(&queue)
    free(mask)
    return dst


cdef void build_mask(const Job *job, char *mask) noexcept:
    """0xFF over the bytes of kept elements, 0x00 elsewhere, block times."""
    cdef Py_ssize_t i, lo, hi, w = job.width
    cdef Py_ssize_t row = job.cols * w
    for i in range(job.rows):
        kept_range(job, i, &lo, &hi)
        memset(mask + i * row, 0, row)
        memset(mask + i * row + lo * w, 0xFF, (hi - lo) * w)
    for i in range(1, job.block):
        memcpy(mask + i * job.matrix_bytes, mask, job.matrix_bytes)
