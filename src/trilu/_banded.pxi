# --- masks from nothing, and LAPACK's band storage (included by _kernel.pyx,
# after its entry points) ------------------------------------------------------------
#
# A mask (MASK) is a band's runs of rows with nothing to copy: each row's span
# gets `keep` and the rest `fill`, both written as fills (mask_rows), the value
# that is zeros left to fresh zero pages where they pay.
#
# LAPACK's band storage holds the diagonals -lower..upper of a matrix as the
# rows of ab: ab[upper + i - j, j] = a[i, j]. Seen through a sheared view, one
# side is a band of the other's shape, and a band job moves it, on the walks
# of every band (the transposed walk's tiles included):
# - from_banded reads ab as the matrix: element (i, j) at ab + (upper + i - j)
#   * ab_row + j * ab_col, the band (-lower, upper), the rest `fill`;
# - to_banded reads a as ab with ab's rows reversed, where the matrix's rows
#   make a band: row p of the reversed ab holds a's row i = j + lower - p at
#   column j, so 0 <= i < M is -lower <= j - p <= M - 1 - lower; element (p, j)
#   at a + (lower - p) * a_row + j * (a_row + a_col). The rest of ab, the
#   positions outside the matrix, gets zeros.
# A sheared view's elements outside its band lie outside the array: the job
# never reads them (prepare's `sheared`: no whole-row masks).


cdef cnp.ndarray sheared(cnp.ndarray x, Py_ssize_t offset, Py_ssize_t rows,
                         Py_ssize_t cols, Py_ssize_t row, Py_ssize_t col):
    """x's matrices seen as rows x cols ones, from `offset` bytes into each,
    elements `row` and `col` bytes apart; the batch axes as they are."""
    cdef int d, nd = cnp.PyArray_NDIM(x)
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    cdef cnp.npy_intp strides[cnp.NPY_MAXDIMS]
    for d in range(nd - 2):
        dims[d] = cnp.PyArray_DIMS(x)[d]
        strides[d] = cnp.PyArray_STRIDES(x)[d]
    dims[nd - 2], dims[nd - 1] = rows, cols
    strides[nd - 2], strides[nd - 1] = row, col
    return view(x.descr, <const char *>cnp.PyArray_DATA(x) + offset, nd, dims,
                strides)


def to_banded(cnp.ndarray src not None, cnp.ndarray dst, Py_ssize_t lower,
              Py_ssize_t upper):
    """Write the diagonals -lower..upper of src's matrices into dst in LAPACK's
    band storage, ``dst[..., upper + i - j, j] = src[..., i, j]``, and zeros
    where i is beyond the matrix; return dst, or where it is None a fresh
    C-ordered result.

    Preconditions, checked by the caller: src.ndim >= 2; lower, upper >= 0;
    dst of shape src.shape[:-2] + (lower + upper + 1, src.shape[-1]) and
    src's itemsize, writable and apart from src.
    """
    cdef int nd = matrix_dims(src)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(src)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    cdef Py_ssize_t mrow = cnp.PyArray_STRIDES(src)[nd - 2]
    cdef Py_ssize_t mcol = cnp.PyArray_STRIDES(src)[nd - 1]
    cdef Py_ssize_t count = lower + upper + 1
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    cdef Py_ssize_t brow, bcol
    cdef cnp.ndarray rev
    cdef Allocation how
    cdef bint zeroed = False, along
    if dst is None:            # (every byte written)
        memcpy(dims, cnp.PyArray_DIMS(src), nd * sizeof(cnp.npy_intp))
        dims[nd - 2] = count
        dst = fresh(src.descr, nd, dims, 0, 0, False, &how)
        if how == MALLOC and cnp.PyArray_NBYTES(dst) < NOGIL_MIN_BYTES:
            # small: a memset of it all costs less than a job's plan for its
            # corners (about as much as releasing the GIL)
            memset(cnp.PyArray_DATA(dst), 0, cnp.PyArray_NBYTES(dst))
            zeroed = True
    brow = cnp.PyArray_STRIDES(dst)[nd - 2]
    bcol = cnp.PyArray_STRIDES(dst)[nd - 1]
    # ab's rows reversed: the positions outside the matrices get zeros (in
    # place, the band kept as it is), unless the memset gave them theirs
    along = magnitude(mcol) <= magnitude(mrow)
    if not (zeroed and along):
        rev = sheared(dst, (count - 1) * brow, count, cols, -brow, bcol)
    if not zeroed:
        band_of(rev, rev, -lower, min(rows - 1 - lower, cols), None, C_ORDER)
    if along:                  # a read along its rows
        band_of(sheared(src, upper * mcol, rows, count, mrow + mcol, -mcol),
                sheared(dst, upper * bcol, rows, count, bcol, brow - bcol),
                max(upper - cols + 1, -rows), upper, None, C_ORDER, False, NULL,
                True)
    else:                          # along its columns
        band_of(sheared(src, lower * mrow, count, cols, -mrow, mrow + mcol), rev,
                -lower, min(rows - 1 - lower, cols), None, C_ORDER, False, NULL,
                True)
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
    cdef int nd = matrix_dims(src)
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    cdef Py_ssize_t brow = cnp.PyArray_STRIDES(src)[nd - 2]
    cdef Py_ssize_t bcol = cnp.PyArray_STRIDES(src)[nd - 1]
    if dst is not None:
        rows = cnp.PyArray_DIMS(dst)[nd - 2]
    return band_of(sheared(src, upper * brow, rows, cols, brow, bcol - brow), dst,
                   max(-lower, -rows), min(upper, cols), fill, C_ORDER, True,
                   NULL, True)


def mask(Py_ssize_t rows, Py_ssize_t cols, object lo, object hi,
         cnp.dtype descr not None, bytes keep not None, bytes fill not None):
    """A fresh C-ordered rows x cols array of dtype descr holding `keep` where
    lo <= j - i <= hi (ints, or None: unbounded) and `fill` elsewhere, each
    one element's bytes.

    Preconditions, checked by the caller: rows, cols >= 0; descr plain bytes
    (no references), the result's size within numpy's.
    """
    return mask_of(rows, cols, lo, hi, descr, keep, fill)


cdef cnp.ndarray mask_of(Py_ssize_t rows, Py_ssize_t cols, object lo, object hi,
                         cnp.dtype descr, bytes keep, bytes fill):
    """mask, its arguments checked (tri's door calls it in C)."""
    cdef Plan p
    cdef Job *job = &p.job
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
    set_fill(&job.keep, keep, w, keep_pattern, rows * cols * w)
    set_fill(&job.fill, fill, w, fill_pattern, rows * cols * w)
    # Zero pages hold the fill where it is zeros. Where the kept value is
    # zeros instead, and the band touches a side of the matrix, the rest is a
    # band too: the two trade places (an additive attention mask's -inf).
    if job.keep.byte == 0 and job.fill.byte != 0 and (a <= 1 - rows
                                                      or b >= cols - 1):
        other = job.keep
        job.keep = job.fill
        job.fill = other
        a, b = (b + 1, cols) if a <= 1 - rows else (-rows, a - 1)
    if b < a:                  # nothing kept, one way of saying it
        b = a - 1
    dims[0] = rows
    dims[1] = cols
    out = fresh(descr, 2, dims, a, b, job.fill.byte == 0, &how)
    if rows == 0 or cols == 0 or w == 0:
        return out
    written = how == MALLOC or how == RECYCLED
    job.packed = MASK
    job.fill_rest = job.fill.byte != 0 or written
    job.copy_kept = job.keep.byte != 0 or written
    job.band_only = job.columns = job.mirror = False
    job.check = NULL
    job.xor = NULL
    job.src = NULL
    job.dst = <char *>cnp.PyArray_DATA(out)
    job.width = w
    job.rows = rows
    job.cols = cols
    job.a = a
    job.b = b
    job.src_row = job.src_col = 0
    job.dst_row = cols * w
    job.dst_col = w
    job.matrix_bytes = rows * cols * w
    job.ndim = 0
    job.method = ROWS
    job.across = False
    job.mask = job.fill_mask = NULL
    job.offsets = job.sources = NULL
    job.flat = job.bulk_src = job.bulk_dst = job.prefetch = job.vector = False
    job.block = 1
    runs_of(rows, cols, a, b, job.edge)
    # streamed as the kernel's other large results (_stream.h: a fill of one
    # byte value, or of an element whose width divides 16)
    job.stream = (TRILU_STREAM and job.matrix_bytes >= STREAM_MIN_BYTES
                  and (job.fill.byte >= 0 or 16 % w == 0)
                  and (job.keep.byte >= 0 or 16 % w == 0))
    p.nb = 1
    share(&p)
    run_plan(&p)
    return out
