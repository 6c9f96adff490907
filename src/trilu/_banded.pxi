# --- masks and band storage (included by _kernel.pyx, after _pack.pxi) -------------
#
# A mask (MASK) is a band's runs of rows with nothing to copy: each row's span
# gets `keep` and the rest `fill`, both written as fills (a memset where the
# value is one byte repeated), a run of whole rows at once, and the value that
# is zeros left to fresh zero pages where they pay.
#
# LAPACK's band storage (TO_BANDED, FROM_BANDED) holds the diagonals
# -lower..upper of a matrix as the rows of ab: ab[upper + i - j, j] = a[i, j].
# The walk goes along the matrix's rows, or its columns where those are the
# closer to contiguous. Row r of the walk keeps the columns r + job.a + t, t
# in [0, count) with count = job.b - job.a + 1, and its element t sits at
# band_at + r * _row + t * _col of the banded side: a row of the matrix is an
# antidiagonal of ab, a column of the matrix a column of ab. Each element of
# ab comes from one row of the walk, so threads split the rows as for a band;
# ab's zeros beyond the matrix are those of a column of ab past the matrix's
# edge (a walk across), or of rows before the first and after the last.

cdef enum:
    # A tile of the band's walk: this many rows by this many diagonals, put
    # in a buffer on the stack (8 KiB at most, within L1D) and taken out
    # across: a row's band is a run on the matrix side, a diagonal of
    # consecutive rows a run of a row of ab. Read the other way, each
    # element is a line at a power-of-two stride from the last, and the
    # lines of a wide band evict one another from their set of L1D.
    BANDED_ROWS = 16
    BANDED_DIAGONALS = 32
    BANDED_BUFFER = BANDED_ROWS * BANDED_DIAGONALS * 16   # 16-byte elements
    # to_banded's tiles fetch the band of the row this many rows on: about
    # a memory latency's worth of rows.
    BANDED_PREFETCH_ROWS = 8
    # A mask's crossed rows whose band is this narrow are written as one fill
    # of their whole run, then the band over it: a fill call's fixed cost is
    # that of writing about this many bytes from cache. (Not for streamed
    # results, where each byte goes to memory.)
    MASK_OVER_BYTES = 1024


cdef char _no_data[1]          # the memory of arrays that only carry a shape


cdef cnp.ndarray shaped(cnp.dtype descr, int nd, const cnp.npy_intp *dims,
                        void *data):
    """An array of this shape and dtype, every stride zero on `data` (never
    read): what allocation and new_result read of the result they make."""
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    cdef int d
    for d in range(nd):
        strides[d] = 0
    Py_INCREF(descr)           # (stolen)
    return PyArray_NewFromDescr(&PyArray_Type, <void *>descr, nd,
                                <cnp.npy_intp *>dims, strides, data, 0, NULL)


cdef cnp.ndarray fresh_c(cnp.ndarray like, Py_ssize_t a, Py_ssize_t b, bint zeros,
                         Allocation *how):
    """A fresh C-ordered result of like's shape and dtype, its band (a, b)
    written and the rest zeros (or another fill): allocated as a band's."""
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    result_strides(like, C_ORDER, cnp.PyArray_ITEMSIZE(like), strides)
    how[0] = allocation(like, strides, C_ORDER, a, b, zeros)
    return new_result(like, how[0], C_ORDER, strides)


cdef void plain_job(Job *job, Packed packed) noexcept:
    """The fields of a job that MASK, TO_BANDED and FROM_BANDED leave unused."""
    job.packed = packed
    job.mask = job.fill_mask = NULL
    job.offsets = NULL
    job.xor = NULL
    job.stream = False
    job.method = STRIDED
    job.flat = False
    job.block = 1
    job.bulk_src = job.bulk_dst = False
    job.rest_untouched = False


cdef void run_plan(Plan *p) noexcept:
    """Run a planned job whose dst is set, on its threads, without the GIL
    where that pays."""
    p.work = work_bytes(&p.job, p.nb)
    p.threads = thread_count(p.work, work_units(&p.job, p.nb))
    if p.work >= NOGIL_MIN_BYTES:
        with nogil:
            run_job(&p.job, p.nb, p.threads)
    else:
        run_job(&p.job, p.nb, p.threads)


# --- masks ---------------------------------------------------------------------------

cdef inline void fill_part(char *d, Py_ssize_t n, Fill f, bint stream) noexcept nogil:
    """n bytes from d get f: with streaming stores (a row with nothing kept),
    or by fill_bytes."""
    if n <= 0:
        return
    if stream:
        trilu_stream_row(d, NULL, 0, 0, n, f.pattern)
    else:
        fill_bytes(d, n, f)


cdef void mask_rows(const Job *job, Py_ssize_t do, Py_ssize_t r0, Py_ssize_t r1,
                    Part part) noexcept nogil:
    """Rows [r0, r1) of a mask (C-ordered): a run of filled or kept rows is
    one fill of its value; crossed rows alternate keep and fill, a row's
    tail and the next row's head one fill, as they touch. A value left to
    zero pages is not written."""
    cdef Py_ssize_t i, lo, hi, w = job.width, n = job.cols * job.width
    cdef bint keep = job.copy_kept, rest = job.fill_rest, stream = job.stream
    cdef char *d = job.dst + do + r0 * n
    cdef char *pending = d     # where the fill not yet written starts
    if part == KEPT:
        if keep:
            fill_part(d, (r1 - r0) * n, job.keep, stream)
        return
    if part == FILLED:
        if rest:
            fill_part(d, (r1 - r0) * n, job.fill, stream)
        return
    if rest and keep and not stream and (job.b - job.a + 1) * w <= MASK_OVER_BYTES:
        fill_part(d, (r1 - r0) * n, job.fill, stream)   # a narrow band: over it
        rest = False
    for i in range(r0, r1):
        row_span(CROSSED, job.a, job.b, job.cols, i, &lo, &hi)
        if rest:
            fill_part(pending, d + lo * w - pending, job.fill, stream)
        if keep:
            fill_part(d + lo * w, (hi - lo) * w, job.keep, stream)
        pending = d + hi * w
        d += n
    if rest:
        fill_part(pending, d - pending, job.fill, stream)


def mask(Py_ssize_t rows, Py_ssize_t cols, object lo, object hi,
         cnp.dtype descr not None, bytes keep not None, bytes fill not None):
    """A fresh C-ordered rows x cols array of dtype descr holding `keep` where
    lo <= j - i <= hi (ints, or None: unbounded) and `fill` elsewhere, each
    one element's bytes.

    Preconditions, checked by the caller: rows, cols >= 0; descr plain bytes
    (no references), the result's size within numpy's.
    """
    cdef Plan p
    cdef char keep_pattern[PATTERN_BYTES]
    cdef char fill_pattern[PATTERN_BYTES]
    cdef cnp.npy_intp dims[2]
    cdef Py_ssize_t a = bound(lo, -rows, rows, cols)
    cdef Py_ssize_t b = bound(hi, cols, rows, cols)
    cdef Py_ssize_t w = descr.itemsize
    cdef Fill other
    cdef Allocation how
    cdef bint written
    cdef cnp.ndarray out
    set_fill(&p.job.keep, keep, w, keep_pattern)
    set_fill(&p.job.fill, fill, w, fill_pattern)
    # Zero pages hold the fill where it is zeros. Where the kept value is
    # zeros instead, and the band touches a side of the matrix, the rest is a
    # band too: the two trade places (an additive attention mask's -inf).
    if p.job.keep.byte == 0 and p.job.fill.byte != 0 and (a <= 1 - rows
                                                          or b >= cols - 1):
        other = p.job.keep
        p.job.keep = p.job.fill
        p.job.fill = other
        a, b = (b + 1, cols) if a <= 1 - rows else (-rows, a - 1)
    if b < a:                  # nothing kept, one way of saying it
        b = a - 1
    dims[0] = rows
    dims[1] = cols
    out = fresh_c(shaped(descr, 2, dims, _no_data), a, b, p.job.fill.byte == 0, &how)
    if rows == 0 or cols == 0 or w == 0:
        return out
    written = how == MALLOC or how == RECYCLED
    plain_job(&p.job, MASK)
    p.job.fill_rest = p.job.fill.byte != 0 or written
    p.job.copy_kept = p.job.keep.byte != 0 or written
    p.job.src = NULL
    p.job.dst = <char *>cnp.PyArray_DATA(out)
    p.job.width = w
    p.job.rows = rows
    p.job.cols = cols
    p.job.a = a
    p.job.b = b
    p.job.src_row = p.job.src_col = 0
    p.job.dst_row = cols * w
    p.job.dst_col = w
    p.job.matrix_bytes = rows * cols * w
    p.job.ndim = 0
    runs_of(rows, cols, a, b, p.job.edge)
    # streamed as the kernel's other large results (_stream.h: a fill of one
    # byte value, or of an element whose width divides 16)
    p.job.stream = (TRILU_STREAM and p.job.matrix_bytes >= STREAM_MIN_BYTES
                    and (p.job.fill.byte >= 0 or 16 % w == 0)
                    and (p.job.keep.byte >= 0 or 16 % w == 0))
    p.nb = 1
    run_plan(&p)
    return out


# --- band storage --------------------------------------------------------------------

cdef inline void band_part(const Job *job, Py_ssize_t r, Py_ssize_t t0, Py_ssize_t t1,
                           Py_ssize_t *x, Py_ssize_t *y) noexcept nogil:
    """The elements [x, y) of [t0, t1) of row r's band that are in the
    matrix: column r + a + t in [0, cols)."""
    x[0] = clip(-job.a - r, t0, t1)
    y[0] = clip(job.cols - job.a - r, x[0], t1)


cdef inline void band_rows(const Job *job, Py_ssize_t t, Py_ssize_t b0, Py_ssize_t b1,
                           Py_ssize_t *lo, Py_ssize_t *hi) noexcept nogil:
    """The rows [lo, hi) of [b0, b1) whose band's element t is in the
    matrix: the same condition, for a diagonal."""
    lo[0] = clip(-job.a - t, b0, b1)
    hi[0] = clip(job.cols - job.a - t, lo[0], b1)


cdef void banded_tile(elem_t *tag, const Job *job, char *m, char *band, Py_ssize_t b0,
                      Py_ssize_t b1, Py_ssize_t t0, Py_ssize_t t1,
                      char *buf) noexcept nogil:
    """Rows [b0, b1) x diagonals [t0, t1) of the walk through buf, diagonal
    after diagonal in it: a row's band is one run of the matrix side, a
    diagonal of consecutive rows one of the banded side (a row of C-ordered
    ab), each read and written as a run. TO_BANDED: rows beyond the matrix,
    and positions past its edge in a walk across, are zeros."""
    cdef bint to = job.packed == TO_BANDED
    cdef Py_ssize_t w = job.width, a = job.a, stride = (b1 - b0) * w
    cdef Py_ssize_t mrow = job.src_row if to else job.dst_row
    cdef Py_ssize_t mcol = job.src_col if to else job.dst_col
    cdef Py_ssize_t brow = job.dst_row if to else job.src_row
    cdef Py_ssize_t bt = job.dst_col if to else job.src_col
    cdef Py_ssize_t r, t, x, y, lo, hi, ahead, line = max(1, 64 // w)
    cdef char *e
    if not to:
        for t in range(t0, t1):
            band_rows(job, t, b0, b1, &lo, &hi)
            if hi > lo:
                copy_elems(tag, buf + (t - t0) * stride + (lo - b0) * w, w,
                           band + (job.band_at + lo * brow + t * bt), brow, hi - lo, w)
        for r in range(b0, b1):
            band_part(job, r, t0, t1, &x, &y)
            if y > x:
                copy_elems(tag, m + r * mrow + (r + a + x) * mcol, mcol,
                           buf + (x - t0) * stride + (r - b0) * w, stride, y - x, w)
        return
    for r in range(b0, b1):
        e = buf + (r - b0) * w
        x = y = t1             # a row beyond the matrix: zeros
        if 0 <= r < job.rows:
            band_part(job, r, t0, t1, &x, &y)
            ahead = r + BANDED_PREFETCH_ROWS
            if ahead < job.rows:   # the band of a row a few on, each line:
                # rows a stride apart are nothing hardware prefetchers follow
                band_part(job, ahead, t0, t1, &lo, &hi)
                while lo < hi:
                    trilu_prefetch(m + ahead * mrow + (ahead + a + lo) * mcol)
                    lo += line
        fill_run(tag, e, stride, w, x - t0, job.fill)
        if y > x:
            copy_elems(tag, e + (x - t0) * stride, stride,
                       m + r * mrow + (r + a + x) * mcol, mcol, y - x, w)
        fill_run(tag, e + (y - t0) * stride, stride, w, t1 - y, job.fill)
    for t in range(t0, t1):
        lo, hi = b0, b1        # across: every row's band is whole in ab
        if not job.across:
            band_rows(job, t, b0, b1, &lo, &hi)
        if hi > lo:
            copy_elems(tag, band + (job.band_at + lo * brow + t * bt), brow,
                       buf + (t - t0) * stride + (lo - b0) * w, w, hi - lo, w)


cdef void banded_span(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                      Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    """Rows [r0, r1) of the walk to (TO_BANDED) or from (FROM_BANDED) band
    storage, a tile at a time: the fill of the matrix's rows outside the
    band (FROM_BANDED), then the band, a block of diagonals at a time,
    through a buffer (banded_tile) unless the banded side runs along the
    diagonals (ab read across, and Fortran-ordered) or the elements are too
    wide for it. A walk along the matrix's rows writes ab's zeros beyond
    the matrix from the chunks holding its first and last rows, as rows
    [-upper, 0) and [rows, cols + lower) of zeros."""
    cdef bint to = job.packed == TO_BANDED
    cdef Py_ssize_t w = job.width, a = job.a, count = job.b - job.a + 1
    cdef Py_ssize_t at = job.band_at
    # the matrix side and the banded side: src and dst as the job goes
    cdef Py_ssize_t mrow = job.src_row if to else job.dst_row
    cdef Py_ssize_t mcol = job.src_col if to else job.dst_col
    cdef Py_ssize_t brow = job.dst_row if to else job.src_row
    cdef Py_ssize_t bt = job.dst_col if to else job.src_col
    cdef char *m = <char *>job.src + so if to else job.dst + do
    cdef char *band = job.dst + do if to else <char *>job.src + so
    cdef bint direct = elem_t is any_width or bt == w or bt == -w
    cdef Py_ssize_t first = r0, last = r1, b0, b1, t0, t1, r, x, y, lo, hi
    cdef char buf[BANDED_BUFFER]
    if to and not job.across:
        if r0 == 0:
            first = -job.b
        if r1 == job.rows:
            last = max(r1, job.cols - a)
    b0 = first
    while b0 < last:
        b1 = min(b0 + BANDED_ROWS, last)
        if not to and job.fill_rest:
            for r in range(b0, b1):
                row_span(CROSSED, a, job.b, job.cols, r, &lo, &hi)
                fill_run(tag, m + r * mrow, mcol, w, lo, job.fill)
                fill_run(tag, m + r * mrow + hi * mcol, mcol, w, job.cols - hi,
                         job.fill)
        t0 = 0
        while t0 < count:
            t1 = min(t0 + BANDED_DIAGONALS, count)
            if not direct:
                banded_tile(tag, job, m, band, b0, b1, t0, t1, buf)
                t0 = t1
                continue
            for r in range(b0, b1):
                band_part(job, r, t0, t1, &x, &y)
                if to and not 0 <= r < job.rows:   # zeros of ab, as above
                    if y > x:
                        fill_run(tag, band + (at + r * brow + x * bt), bt, w, y - x,
                                 job.fill)
                    continue
                if to and job.across:   # ab's positions past the matrix
                    fill_run(tag, band + (at + r * brow + t0 * bt), bt, w, x - t0,
                             job.fill)
                    fill_run(tag, band + (at + r * brow + y * bt), bt, w, t1 - y,
                             job.fill)
                if y <= x:
                    continue
                if to:
                    copy_elems(tag, band + (at + r * brow + x * bt), bt,
                               m + r * mrow + (r + a + x) * mcol, mcol, y - x, w)
                else:
                    copy_elems(tag, m + r * mrow + (r + a + x) * mcol, mcol,
                               band + (at + r * brow + x * bt), bt, y - x, w)
            t0 = t1
        b0 = b1


cdef void banded_rows(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                      Py_ssize_t r1, Part part) noexcept nogil:
    """mask_rows for a MASK job; else banded_span by the specialization for
    the element width (nothing for rows outside the band in zero pages)."""
    cdef Py_ssize_t w = job.width
    if job.packed == MASK:
        mask_rows(job, do, r0, r1, part)
    elif part == FILLED and job.packed == FROM_BANDED and not job.fill_rest:
        return
    elif w == 8:
        banded_span(<uint64_t *>NULL, job, so, do, r0, r1)
    elif w == 4:
        banded_span(<uint32_t *>NULL, job, so, do, r0, r1)
    elif w == 2:
        banded_span(<uint16_t *>NULL, job, so, do, r0, r1)
    elif w == 1:
        banded_span(<uint8_t *>NULL, job, so, do, r0, r1)
    elif w == 16:
        banded_span(<u128 *>NULL, job, so, do, r0, r1)
    else:
        banded_span(<any_width *>NULL, job, so, do, r0, r1)


cdef Py_ssize_t plan_banded(Job *job, cnp.ndarray mat, cnp.ndarray band,
                            Py_ssize_t lower, Py_ssize_t upper) noexcept:
    """Fill the job between mat's matrices and their band storage `band`
    (job.packed and the fill set): the walk along the matrices' rows, or
    their columns where those are the closer to contiguous; return the
    number of matrices."""
    cdef int d, nd = cnp.PyArray_NDIM(mat)
    cdef const cnp.npy_intp *ms = cnp.PyArray_STRIDES(mat)
    cdef const cnp.npy_intp *bs = cnp.PyArray_STRIDES(band)
    cdef bint to = job.packed == TO_BANDED
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(mat)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(mat)[nd - 1]
    cdef Py_ssize_t mrow = ms[nd - 2], mcol = ms[nd - 1]
    cdef Py_ssize_t brow = bs[nd - 2], bcol = bs[nd - 1], step, nb = 1
    plain_job(job, job.packed)
    job.width = cnp.PyArray_ITEMSIZE(band)
    job.matrix_bytes = rows * cols * job.width
    # (to_banded of matrices of no rows: their columns, zeros each in ab)
    job.across = abs(mcol) > abs(mrow) or rows == 0
    if job.across:
        # row r of the walk: column r of the matrix, and of ab
        job.rows, job.cols = cols, rows
        job.a, job.b = -upper, lower
        mrow, mcol = mcol, mrow
        job.band_at = 0
        step = brow
    else:
        # row r of the walk: row r of the matrix, an antidiagonal of ab
        job.rows, job.cols = rows, cols
        job.a, job.b = -lower, upper
        job.band_at = (lower + upper) * brow - lower * bcol
        step = bcol - brow
    if to:
        job.src = <const char *>cnp.PyArray_DATA(mat)
        job.src_row, job.src_col = mrow, mcol
        job.dst_row, job.dst_col = bcol, step
        plan_batch(job, nd - 2, cnp.PyArray_DIMS(mat), ms, bs)
    else:
        job.src = <const char *>cnp.PyArray_DATA(band)
        job.src_row, job.src_col = bcol, step
        job.dst_row, job.dst_col = mrow, mcol
        plan_batch(job, nd - 2, cnp.PyArray_DIMS(mat), bs, ms)
    runs_of(job.rows, job.cols, job.a, job.b, job.edge)
    for d in range(job.ndim):
        nb *= job.shape[d]
    return nb


def to_banded(cnp.ndarray src not None, cnp.ndarray dst not None, Py_ssize_t lower,
              Py_ssize_t upper):
    """Write the diagonals -lower..upper of src's matrices into dst in LAPACK's
    band storage, ``dst[..., upper + i - j, j] = src[..., i, j]``, and zeros
    where i is beyond the matrix; return dst.

    Preconditions, checked by the caller: src.ndim >= 2; lower, upper >= 0;
    dst of shape src.shape[:-2] + (lower + upper + 1, src.shape[-1]) and
    src's itemsize, writable and apart from src.
    """
    cdef Plan p
    if cnp.PyArray_SIZE(dst) == 0 or cnp.PyArray_ITEMSIZE(dst) == 0:
        return dst
    set_fill(&p.job.fill, None, 0, NULL)
    p.job.packed = TO_BANDED
    p.job.copy_kept = p.job.fill_rest = True
    p.nb = plan_banded(&p.job, src, dst, lower, upper)
    p.job.dst = <char *>cnp.PyArray_DATA(dst)
    run_plan(&p)
    return dst


def from_banded(cnp.ndarray src not None, cnp.ndarray dst, Py_ssize_t lower,
                Py_ssize_t upper, object fill=None, Py_ssize_t rows=0):
    """Write the matrices whose band storage is src into dst, the inverse of
    to_banded: ``dst[..., i, j] = src[..., upper + i - j, j]`` for
    -lower <= j - i <= upper, ``fill`` (one element's bytes; None: zeros)
    elsewhere; return dst, or where it is None a fresh C-ordered result of
    shape src.shape[:-2] + (rows, src.shape[-1]), zero pages where they pay.

    Preconditions: as to_banded's, src and dst swapped; rows >= 0.
    """
    cdef Plan p
    cdef char pattern[PATTERN_BYTES]
    cdef int d, nd = cnp.PyArray_NDIM(src)
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    cdef Allocation how = MALLOC
    set_fill(&p.job.fill, fill, cnp.PyArray_ITEMSIZE(src), pattern)
    if dst is None:
        for d in range(nd):
            dims[d] = cnp.PyArray_DIMS(src)[d]
        dims[nd - 2] = rows
        dst = fresh_c(shaped(src.descr, nd, dims, cnp.PyArray_DATA(src)), -lower,
                      upper, fill is None, &how)
    if cnp.PyArray_SIZE(dst) == 0 or cnp.PyArray_ITEMSIZE(dst) == 0:
        return dst
    p.job.packed = FROM_BANDED
    p.job.copy_kept = True
    p.job.fill_rest = how == MALLOC or how == RECYCLED
    p.nb = plan_banded(&p.job, dst, src, lower, upper)
    p.job.dst = <char *>cnp.PyArray_DATA(dst)
    run_plan(&p)
    return dst
