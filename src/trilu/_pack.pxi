# --- packing: each matrix's kept elements, row after row, to and from a vector ----
# (included by _kernel.pyx, before _write.pxi's chunks call packed_rows)
#
# Row i's span [lo, hi) sits in the packed vector at kept_in(a, b, i, cols),
# the elements rows [0, i) keep: any row's place is known at once, so threads
# split the rows of the batch as for a band, and a run of whole rows whose
# two sides are contiguous is one memcpy. Small matrices of short rows go
# whole instead (MATRICES), through a table of their elements' offsets.

cdef enum:
    # A span shorter than this is copied element by element: a memcpy call's
    # fixed cost is that of moving about this many bytes in a loop.
    SPAN_CALL_BYTES = 128
    # Matrices of short rows (under SPAN_CALL_BYTES, copied element by element
    # anyway) and of at most this many elements are walked through a table
    # of their elements' offsets (MATRICES): no run, span or call a row. The
    # table, 8 bytes an element, lives on the stack, within L1D.
    OFFSETS_MAX = 2048


cdef inline void copy_elems(elem_t *tag, char *d, Py_ssize_t ds, const char *s,
                            Py_ssize_t ss, Py_ssize_t count,
                            Py_ssize_t w) noexcept nogil:
    """count elements from s to d (strides ss, ds): one memcpy where both
    are contiguous and the span is long enough to pay for the call."""
    cdef Py_ssize_t j
    cdef elem_t v
    if ds == w and ss == w and (elem_t is any_width or count * w >= SPAN_CALL_BYTES):
        memcpy(d, s, count * w)
    elif elem_t is not any_width and ds == w and ss == w:
        for j in range(count):     # constant strides: a loop the compiler widens
            memcpy(&v, s + j * sizeof(elem_t), sizeof(elem_t))
            memcpy(d + j * sizeof(elem_t), &v, sizeof(elem_t))
    elif elem_t is any_width:
        for j in range(count):
            memcpy(d + j * ds, s + j * ss, w)
    else:
        for j in range(count):
            memcpy(&v, s + j * ss, sizeof(elem_t))
            memcpy(d + j * ds, &v, sizeof(elem_t))


cdef void packed_span(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                      Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix to (PACK) or from (UNPACK) the packed
    vector; unpacked rows get the fill outside their span."""
    cdef Py_ssize_t i, lo, hi, w = job.width, cols = job.cols
    cdef bint pack = job.packed == PACK
    cdef Py_ssize_t at = kept_in(job.a, job.b, r0, cols)
    # the matrix side and the packed side: src and dst as the job goes
    cdef Py_ssize_t mrow = job.src_row if pack else job.dst_row
    cdef Py_ssize_t mcol = job.src_col if pack else job.dst_col
    cdef Py_ssize_t pcol = job.dst_col if pack else job.src_col
    cdef char *m = (<char *>job.src + so if pack else job.dst + do) + r0 * mrow
    cdef char *p = (job.dst + do if pack else <char *>job.src + so) + at * pcol
    if part == KEPT and mcol == w and mrow == cols * w and pcol == w:
        if pack:               # whole rows, both sides contiguous
            memcpy(p, m, (r1 - r0) * cols * w)
        else:
            memcpy(m, p, (r1 - r0) * cols * w)
        return
    if part == FILLED and mcol == w and mrow == cols * w:
        fill_bytes(m, (r1 - r0) * cols * w, job.fill)  # (unpack's) in one run
        return
    for i in range(r0, r1):
        row_span(part, job.a, job.b, cols, i, &lo, &hi)
        if pack:
            copy_elems(tag, p, pcol, m + lo * mcol, mcol, hi - lo, w)
        else:
            if job.fill_rest:
                fill_run(tag, m, mcol, w, lo, job.fill)
            copy_elems(tag, m + lo * mcol, mcol, p, pcol, hi - lo, w)
            if job.fill_rest:
                fill_run(tag, m + hi * mcol, mcol, w, cols - hi, job.fill)
        p += (hi - lo) * pcol
        m += mrow


cdef void packed_rows(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                      Py_ssize_t r1, Part part) noexcept nogil:
    """packed_span by the specialization for the element width."""
    cdef Py_ssize_t w = job.width
    if part == FILLED and (job.packed == PACK or not job.fill_rest):
        return                 # nothing of these rows is packed or written
    if w == 8:
        packed_span(<uint64_t *>NULL, job, so, do, r0, r1, part)
    elif w == 4:
        packed_span(<uint32_t *>NULL, job, so, do, r0, r1, part)
    elif w == 2:
        packed_span(<uint16_t *>NULL, job, so, do, r0, r1, part)
    elif w == 1:
        packed_span(<uint8_t *>NULL, job, so, do, r0, r1, part)
    elif w == 16:
        packed_span(<u128 *>NULL, job, so, do, r0, r1, part)
    else:
        packed_span(<any_width *>NULL, job, so, do, r0, r1, part)


cdef void build_offsets(const Job *job, Py_ssize_t *off) noexcept nogil:
    """job.offsets: each element's byte offset in its matrix (the matrix
    side's strides), the kept ones first, row after row as packed, then the
    others."""
    cdef Py_ssize_t i, j, lo, hi, n = 0
    cdef bint pack = job.packed == PACK
    cdef Py_ssize_t mrow = job.src_row if pack else job.dst_row
    cdef Py_ssize_t mcol = job.src_col if pack else job.dst_col
    for i in range(job.rows):
        row_span(CROSSED, job.a, job.b, job.cols, i, &lo, &hi)
        for j in range(lo, hi):
            off[n] = i * mrow + j * mcol
            n += 1
    for i in range(job.rows):
        row_span(CROSSED, job.a, job.b, job.cols, i, &lo, &hi)
        for j in range(job.cols):
            if j < lo or j >= hi:
                off[n] = i * mrow + j * mcol
                n += 1


cdef inline void offset_matrix(elem_t *tag, const char *s, char *d,
                               const Py_ssize_t *off, Py_ssize_t kept,
                               Py_ssize_t filled, Py_ssize_t pcol, Py_ssize_t w,
                               bint pack, Fill fill) noexcept nogil:
    """One matrix to (PACK) or from (UNPACK) its packed vector through the
    offsets; `filled` offsets after the kept ones get the fill."""
    cdef Py_ssize_t t
    cdef elem_t v, f
    if elem_t is any_width:
        for t in range(kept):
            if pack:
                memcpy(d + t * pcol, s + off[t], w)
            else:
                memcpy(d + off[t], s + t * pcol, w)
        for t in range(kept, kept + filled):
            fill_elem(d + off[t], w, fill)
    elif pack:
        for t in range(kept):
            memcpy(&v, s + off[t], sizeof(elem_t))
            memcpy(d + t * pcol, &v, sizeof(elem_t))
    else:
        for t in range(kept):
            memcpy(&v, s + t * pcol, sizeof(elem_t))
            memcpy(d + off[t], &v, sizeof(elem_t))
        if filled:
            fill_elem(<char *>&f, sizeof(elem_t), fill)
            for t in range(kept, kept + filled):
                memcpy(d + off[t], &f, sizeof(elem_t))


cdef void offset_matrices(elem_t *tag, const Job *job, Py_ssize_t start,
                          Py_ssize_t stop) noexcept nogil:
    """Matrices [start, stop) to (PACK) or from (UNPACK) their packed vectors
    through job.offsets; unpacked ones get the fill at the other offsets, in
    one fill over them all where they are one contiguous run."""
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, n, size = job.matrix_bytes
    cdef Py_ssize_t kept = kept_in(job.a, job.b, job.rows, job.cols)
    cdef Py_ssize_t filled = 0
    cdef bint pack = job.packed == PACK
    cdef Py_ssize_t pcol = job.dst_col if pack else job.src_col
    cdef const char *src = job.src
    cdef char *dst = job.dst
    cdef bint flat = job.ndim <= 1     # (after merging) one step a matrix
    cdef Py_ssize_t s_step = job.src_step[0] if job.ndim else 0
    cdef Py_ssize_t d_step = job.dst_step[0] if job.ndim else 0
    batch_seek(job, start, idx, &so, &do)
    if job.fill_rest and not pack:
        if (flat and job.dst_col == job.width and job.dst_row == job.cols * job.width
                and (d_step == size or stop - start == 1)):
            fill_bytes(dst + do, (stop - start) * size, job.fill)
        else:
            filled = job.rows * job.cols - kept
    for n in range(start, stop):
        offset_matrix(tag, src + so, dst + do, job.offsets, kept, filled, pcol,
                      job.width, pack, job.fill)
        if flat:
            so += s_step
            do += d_step
        else:
            batch_next(job, idx, &so, &do)


cdef void packed_matrices(const Job *job, Py_ssize_t start,
                          Py_ssize_t stop) noexcept nogil:
    """offset_matrices by the specialization for the element width."""
    cdef Py_ssize_t w = job.width
    if w == 8:
        offset_matrices(<uint64_t *>NULL, job, start, stop)
    elif w == 4:
        offset_matrices(<uint32_t *>NULL, job, start, stop)
    elif w == 2:
        offset_matrices(<uint16_t *>NULL, job, start, stop)
    elif w == 1:
        offset_matrices(<uint8_t *>NULL, job, start, stop)
    elif w == 16:
        offset_matrices(<u128 *>NULL, job, start, stop)
    else:
        offset_matrices(<any_width *>NULL, job, start, stop)


cdef Py_ssize_t plan_packed(Job *job, cnp.ndarray mat, const cnp.npy_intp *mat_strides,
                            cnp.ndarray vec, Py_ssize_t a, Py_ssize_t b,
                            Py_ssize_t *offsets) noexcept:
    """Fill the job for matrices of mat's shape (strides mat_strides) and the
    packed vectors vec (the band clamped, the fill and job.packed set): rows
    walked as they are (the packed order is the matrices' row order), or
    small matrices of short rows whole through `offsets` (OFFSETS_MAX of
    them); return the number of matrices."""
    cdef int d, nd = cnp.PyArray_NDIM(mat)
    cdef Py_ssize_t nb = 1
    cdef const cnp.npy_intp *vs = cnp.PyArray_STRIDES(vec)
    cdef bint pack = job.packed == PACK
    job.width = cnp.PyArray_ITEMSIZE(vec)
    job.rows = cnp.PyArray_DIMS(mat)[nd - 2]
    job.cols = cnp.PyArray_DIMS(mat)[nd - 1]
    job.a = a
    job.b = b
    job.mask = job.fill_mask = NULL
    job.offsets = NULL
    job.xor = NULL
    job.stream = False
    job.method = STRIDED
    job.flat = False
    job.block = 1
    job.matrix_bytes = job.rows * job.cols * job.width
    job.bulk_src = job.bulk_dst = False
    if pack:
        job.src = <const char *>cnp.PyArray_DATA(mat)
        job.src_row, job.src_col = mat_strides[nd - 2], mat_strides[nd - 1]
        job.dst_col = vs[nd - 2]
        job.dst_row = 0
        plan_batch(job, nd - 2, cnp.PyArray_DIMS(mat), mat_strides, vs)
    else:
        job.src = <const char *>cnp.PyArray_DATA(vec)
        job.dst_row, job.dst_col = mat_strides[nd - 2], mat_strides[nd - 1]
        job.src_col = vs[nd - 2]
        job.src_row = 0
        plan_batch(job, nd - 2, cnp.PyArray_DIMS(mat), vs, mat_strides)
    runs_of(job.rows, job.cols, job.a, job.b, job.edge)
    if job.cols * job.width < SPAN_CALL_BYTES and job.rows * job.cols <= OFFSETS_MAX:
        job.method = MATRICES
        build_offsets(job, offsets)
        job.offsets = offsets
    for d in range(job.ndim):
        nb *= job.shape[d]
    return nb
