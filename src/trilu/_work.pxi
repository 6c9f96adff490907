# --- the work: writers by width, runs of rows, chunks, their cost, grains and
# thread shares (included by _kernel.pyx, after the writers)

cdef extern from "_threads.h" nogil:
    ctypedef void (*trilu_task_fn)(void *) noexcept nogil
    enum: TRILU_MAX_THREADS    # 64
    void trilu_pool_init()
    void trilu_parallel(trilu_task_fn fn, void **args, int n)
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


# --- the one ladder: each writer by the specialization for the element width ---------

cdef enum Writer:              # the writers that move elements of a given width
    STRIDED_ROWS    # _write.pxi
    TILED_ROWS
    PACKED_SPAN     # _pack.pxi
    OFFSET_MATRICES
    MIRRORED_MATRICES


cdef struct Span:              # what one writer's call covers
    const Job *job
    Py_ssize_t so, do          # the matrix's offsets in src and dst
    Py_ssize_t r0, r1          # its rows (the _MATRICES writers: the batch's matrices)
    Part part


cdef inline void write_as(elem_t *tag, Writer writer, const Span *s) noexcept nogil:
    if writer == STRIDED_ROWS:
        if elem_t is not any_width and grouped_rows(s.job):
            transposed_rows(tag, s.job, s.so, s.do, s.r0, s.r1, s.part)
        else:
            strided_rows(tag, s.job, s.so, s.do, s.r0, s.r1, s.part)
    elif writer == TILED_ROWS:
        if checked_blocks(s.job):
            checked_rows(s.job, s.so, s.do, s.r0, s.r1)
        else:
            tiled_rows(tag, s.job, s.so, s.do, s.r0, s.r1, s.part)
    elif writer == PACKED_SPAN:
        packed_span(tag, s.job, s.so, s.do, s.r0, s.r1, s.part)
    elif writer == OFFSET_MATRICES:
        offset_matrices(tag, s.job, s.r0, s.r1)
    else:
        mirrored_matrices(tag, s.job, s.r0, s.r1)


cdef void write(Writer writer, const Job *job, Py_ssize_t so, Py_ssize_t do,
                Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """The writer by the specialization for the job's element width: one
    fused type per width (elem_t), one ladder for every writer."""
    cdef Span s
    cdef Py_ssize_t w = job.width
    if job.method == SIDE_BY_SIDE:     # (its width: the batch's run)
        w //= job.sides
    s.job, s.so, s.do, s.r0, s.r1, s.part = job, so, do, r0, r1, part
    if w == 8:
        write_as(<uint64_t *>NULL, writer, &s)
    elif w == 4:
        write_as(<uint32_t *>NULL, writer, &s)
    elif w == 2:
        write_as(<uint16_t *>NULL, writer, &s)
    elif w == 1:
        write_as(<uint8_t *>NULL, writer, &s)
    elif w == 16:
        write_as(<u128 *>NULL, writer, &s)
    else:
        write_as(<any_width *>NULL, writer, &s)


# --- runs of rows ---------------------------------------------------------------------

cdef void each_row(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                   Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix one at a time (a tile at a time where TILED),
    by the specialization for the element width where they are strided."""
    if job.method == TILED:
        write(TILED_ROWS, job, so, do, r0, r1, part)
    elif job.method != STRIDED:
        contiguous_rows(job, so, do, r0, r1, part, NULL)
    else:
        write(STRIDED_ROWS, job, so, do, r0, r1, part)


cdef void bulk(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
               Py_ssize_t r1, bint kept) noexcept nogil:
    """Rows [r0, r1) of a matrix, wholly kept or wholly filled: one memcpy or
    fill where the rows are contiguous; nothing to write in place (kept) or
    into zero pages (filled)."""
    cdef Py_ssize_t n = (r1 - r0) * job.cols * job.width
    cdef Py_ssize_t low = r0 if job.dst_row > 0 else r1 - 1  # the run's first
    cdef char *d = job.dst + do + low * job.dst_row
    cdef const char *s = job.src + so + low * job.src_row
    if kept and not job.copy_kept or not kept and not job.fill_rest:
        return
    if not (job.bulk_src and job.xor == NULL if kept else job.bulk_dst):
        each_row(job, so, do, r0, r1, KEPT if kept else FILLED)
    elif job.stream:
        trilu_stream_row(d, s, 0, n if kept else 0, n, job.fill.pattern)
    elif kept:
        memcpy(d, s, n)
    else:
        fill_bytes(d, n, job.fill)


cdef void crossed(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                  Py_ssize_t r1) noexcept nogil:
    """Rows [r0, r1) of a matrix's crossed runs."""
    cdef Py_ssize_t row = job.cols * job.width
    cdef Py_ssize_t at = mask_at(job, r0)
    cdef const char *fill = NULL
    if job.method == ROWS:     # (inlined here with the part known)
        contiguous_rows(job, so, do, r0, r1, CROSSED, NULL)
    elif job.method != BAND_MASK:
        each_row(job, so, do, r0, r1, CROSSED)
    else:
        if job.fill_mask != NULL:
            fill = job.fill_mask + at
        if job.stream:
            trilu_stream_and(job.dst + do + r0 * row, job.src + so + r0 * row,
                             job.mask + at, fill, (r1 - r0) * row)
        else:
            and_bytes(job.dst + do + r0 * row, job.src + so + r0 * row,
                      job.mask + at, fill, (r1 - r0) * row)


cdef inline void packed_rows(const Job *job, Py_ssize_t so, Py_ssize_t do,
                             Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a PACK or UNPACK job: along their lines, or by tiles
    (TILED); wholly filled ones have nothing packed, or nothing to write
    into zero pages."""
    if part == FILLED and (job.packed == PACK or not job.fill_rest):
        return
    write(TILED_ROWS if job.method == TILED and part != FILLED else PACKED_SPAN,
          job, so, do, r0, r1, part)


# --- chunks of work -----------------------------------------------------------------

cdef struct Chunk:             # a run of work: units [start, stop)
    const Job *job
    Py_ssize_t start, stop     # matrices (MATRICES) or rows of the flat batch


cdef void runs_chunk(const Chunk *c) noexcept nogil:
    """Rows [start, stop) of the flattened (batch, row) index, run by run: the
    wholly kept and wholly filled rows of each matrix in bulk, the crossed
    rows by the job's method."""
    cdef const Job *job = c.job
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, stop, lo, hi, unit = c.start
    cdef Py_ssize_t rows = job.rows
    cdef Py_ssize_t first = unit % rows
    cdef int r
    cdef Part part
    batch_seek(job, unit // rows, idx, &so, &do)
    while unit < c.stop:
        stop = min(rows, first + c.stop - unit)
        for r in range(RUNS):
            lo = max(first, job.edge[r])
            hi = min(stop, job.edge[r + 1])
            if lo < hi:
                part = run_part(r)
                if job.packed == MASK:
                    mask_rows(job, do, lo, hi, part)
                elif job.packed != UNPACKED:
                    packed_rows(job, so, do, lo, hi, part)
                elif part == CROSSED:
                    crossed(job, so, do, lo, hi)
                else:
                    bulk(job, so, do, lo, hi, part == KEPT)
        unit += stop - first
        first = 0
        batch_next(job, idx, &so, &do)
    if job.stream:
        trilu_stream_fence()


cdef void matrices_chunk(const Chunk *c) noexcept nogil:
    """Matrices [start, stop), each contiguous, ANDed whole with the keep-mask
    (and ORed with the fill-mask)."""
    cdef const Job *job = c.job
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, _, count, left, size = job.matrix_bytes
    if job.flat:
        # one run: a block of matrices per pass of the (repeated) masks
        so = c.start * size
        left = c.stop - c.start
        while left > 0:
            count = min(left, job.block)
            if job.stream:
                trilu_stream_and(job.dst + so, job.src + so, job.mask,
                                 job.fill_mask, count * size)
            else:
                and_bytes(job.dst + so, job.src + so, job.mask, job.fill_mask,
                          count * size)
            so += count * size
            left -= count
        if job.stream:
            trilu_stream_fence()
        return
    batch_seek(job, c.start, idx, &so, &do)
    for _ in range(c.start, c.stop):
        and_bytes(job.dst + do, job.src + so, job.mask, job.fill_mask, size)
        batch_next(job, idx, &so, &do)


cdef void run_chunk(const Chunk *c) noexcept nogil:
    if c.job.method == MATRICES and c.job.packed != UNPACKED:
        write(MIRRORED_MATRICES if c.job.mirror else OFFSET_MATRICES, c.job, 0, 0,
              c.start, c.stop, KEPT)
    elif c.job.method == MATRICES:
        matrices_chunk(c)
    else:
        runs_chunk(c)


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
    cdef Py_ssize_t rest, run, stop, lines, length, la, lb
    for run in range(1, 4, 2):     # the crossed runs (their band unmerged)
        stop = min(r, e[run + 1])
        if stop > e[run]:
            kept += (kept_in(job.a, job.b, stop, job.cols)
                     - kept_in(job.a, job.b, e[run], job.cols))
    if job.packed == PACK:         # the kept elements, read and written
        # (checked: their mirrors read too, and each pair compared)
        return (2 if job.check == NULL else 4) * kept
    if job.mirror:
        # a row is a packed line's too: its elements, written along and
        # across (the other triangle, about as many)
        packed_lines(job, &lines, &length, &la, &lb)
        kept = 2 * kept_in(la, lb, r, length)
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
        queue.grain = max(1, GRAIN_BYTES // (job.cols * job.width))
        if job.method == TILED:    # whole tiles
            queue.grain = max(1, queue.grain // across_rows(job.width)) * across_rows(
                job.width)
        elif column_tiles(job, 0, job.rows):
            # whole blocks of rows: a grain's last block moved back rewrites
            # rows (300x300 float64 mirrored, grains of 27 rows: a sixth more)
            queue.grain = max(1, queue.grain // tile_lanes(job.width)) * tile_lanes(
                job.width)
    queue.nthreads = nthreads
    run(&queue)
