# --- the work: its cost, grains, thread shares (included by _kernel.pyx) ------------

cdef extern from "_threads.h" nogil:
    ctypedef void (*trilu_task_fn)(void *) noexcept nogil
    enum: TRILU_MAX_THREADS    # 64
    void trilu_pool_init()
    void trilu_parallel(trilu_task_fn fn, void **args, int n)
    Py_ssize_t trilu_fetch_add(Py_ssize_t *p, Py_ssize_t v)
    int trilu_threads_get()    # the thread count, a relaxed atomic
    int trilu_cap_threads(int n)    # this thread's cap (0: none); the old one
    int trilu_threads_mine()   # the count under this thread's cap
    void trilu_set_num_threads(int n)    # clamped; exported for threadpoolctl


trilu_pool_init()


cdef enum:
    # Each thread gets at least this many bytes to move (written + read):
    # below it, waking a pooled worker costs more than the half it takes on.
    PARALLEL_MIN_BYTES = 1 << 19
    # A crossed row's fixed cost (its fill and memcpy calls) in bytes moved.
    ROW_BYTES = 128
    # Threads claim their work in grains of this much, then help the others,
    # so none waits long on one whose core another process took.
    GRAIN_BYTES = 1 << 16
    # Below this the GIL is kept: releasing and taking it back costs more
    # than the work.
    NOGIL_MIN_BYTES = 1 << 14


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


cdef Py_ssize_t row_cost(const Job *job, Py_ssize_t r) noexcept nogil:
    """Elements moved by rows [0, r) of a matrix: written, plus kept ones read.
    Wholly filled rows cost nothing into zero pages, kept ones nothing in place."""
    cdef const Py_ssize_t *e = <const Py_ssize_t *>job.edge
    cdef Py_ssize_t filled = min(r, e[1]) + max(0, r - e[4])
    cdef Py_ssize_t kept = job.cols * max(0, min(r, e[3]) - e[2])
    cdef Py_ssize_t rest, run, stop
    for run in range(1, 4, 2):     # the crossed runs (their band unmerged)
        stop = min(r, e[run + 1])
        if stop > e[run]:
            kept += (kept_in(job.a, job.b, stop, job.cols)
                     - kept_in(job.a, job.b, e[run], job.cols))
    if job.packed == PACK:         # the kept elements, read and written
        return 2 * kept
    if job.packed == TO_BANDED:    # the kept elements read, whole columns written
        return kept + r * (job.b - job.a + 1)
    rest = r * job.cols - kept
    if not job.fill_rest:
        rest -= job.cols * filled
    if job.packed == MASK:         # the kept elements written, none read
        return rest + (kept if job.copy_kept else 0)
    return rest + (2 * kept if job.copy_kept else 0)


cdef Py_ssize_t work_bytes(const Job *job, Py_ssize_t nb) noexcept nogil:
    """Bytes the job moves, written and read, with each crossed row's fixed cost."""
    if job.method == MATRICES:     # every element read and written
        return 2 * nb * job.matrix_bytes
    return nb * (row_cost(job, job.rows) * job.width
                 + crossed_rows(job) * ROW_BYTES)


cdef Py_ssize_t unit_bytes(const Job *job) noexcept nogil:
    """The bytes a row of the flat batch writes: a matrix row, or a column of
    band storage (TO_BANDED walks a's columns)."""
    if job.packed == TO_BANDED:
        return (job.b - job.a + 1) * job.width
    return job.cols * job.width


cdef int thread_count(Py_ssize_t work, Py_ssize_t units) noexcept nogil:
    return <int>max(1, min(trilu_threads_mine(), work // PARALLEL_MIN_BYTES, units))


cdef Py_ssize_t work_units(const Job *job, Py_ssize_t nb) noexcept nogil:
    """What the work is split in: matrices (MATRICES) or rows of the batch."""
    return nb if job.method == MATRICES else nb * job.rows


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


cdef void run_job(const Job *job, Py_ssize_t nb, int nthreads) noexcept nogil:
    """Run a planned job whose masks, if any, are built: split into grains."""
    cdef Queue queue
    queue.job = job
    queue.units = work_units(job, nb)
    if job.method == MATRICES:
        # whole blocks, so each grain starts as aligned as the first
        queue.grain = max(job.block, GRAIN_BYTES // job.matrix_bytes
                          // job.block * job.block)
    else:
        queue.grain = max(1, GRAIN_BYTES // unit_bytes(job))
        if job.method == TILED:    # whole tiles
            queue.grain = max(1, queue.grain // tile_side(job.width)) * tile_side(
                job.width)
    queue.nthreads = nthreads
    run(&queue)
