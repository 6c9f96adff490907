# numpy's index family: tri, triu_indices and tril_indices, without a mask.
#
# Included at the end of _kernel.pyx: it shares the kernel's element types,
# its spans (row_span, kept_in, bound: triu(k) is the band (k, cols), tril(k)
# the band (-rows, k)) and its memory handlers. trilu._indices validates the
# arguments, so here n and m are at least 0 and k is any int (clamped here).
#
# numpy builds an n x m bool mask and reads it back: tri casts it to the
# dtype, triu_indices runs a boolean index over it for each array. Here every
# element is stored once, from registers: the indices as they are counted,
# tri's ones and zeros as the byte patterns of numpy's own cast of True and
# False.

from cpython.mem cimport PyMem_RawFree, PyMem_RawMalloc
from cpython.ref cimport Py_INCREF


cdef inline void kept_cols(bint upper, Py_ssize_t k, Py_ssize_t cols, Py_ssize_t i,
                           Py_ssize_t *lo, Py_ssize_t *hi) noexcept nogil:
    """Row i of triu(k) (upper) or tril(k) keeps columns [lo, hi): the band
    (k, cols) or (-i - 1, k) of the kernel's spans."""
    row_span(CROSSED, k if upper else -i - 1, cols if upper else k, cols, i, lo, hi)

cdef extern from "numpy/arrayobject.h":
    # Both steal a reference to descr, even when they fail.
    object PyArray_Empty(int nd, cnp.npy_intp *dims, void *descr, int fortran)
    object PyArray_Zeros(int nd, cnp.npy_intp *dims, void *descr, int fortran)


cdef extern from *:
    """
    /* The index arrays of large results, with streaming stores (_stream.h):
     * d[t] = v for t < count (fill) or d[t] = v + t (iota). Normal stores
     * where d is not yet 16-byte aligned and for the last element. */
    #if TRILU_STREAM && NPY_SIZEOF_INTP == 8
    static void trilu_stream_index(npy_intp *d, npy_intp count, npy_intp v,
                                   int iota)
    {
        npy_intp t = 0;
        __m128i x, step;
        if ((uintptr_t)d % 16 != 0 && count > 0) {
            d[0] = v;
            t = 1;
        }
        x = _mm_set_epi64x(v + (iota ? t + 1 : 0), v + (iota ? t : 0));
        step = _mm_set1_epi64x(iota ? 2 : 0);
        for (; t + 2 <= count; t += 2) {
            _mm_stream_si128((__m128i *)(d + t), x);
            x = _mm_add_epi64(x, step);
        }
        if (t < count)
            d[t] = v + (iota ? t : 0);
    }
    #else
    static void trilu_stream_index(npy_intp *d, npy_intp count, npy_intp v,
                                   int iota)
    {
        npy_intp t;
        for (t = 0; t < count; t++)
            d[t] = v + (iota ? t : 0);
    }
    #endif
    """
    void trilu_stream_index(cnp.npy_intp *d, cnp.npy_intp count,
                            cnp.npy_intp v, int iota) nogil


cdef object new_index_result(int nd, cnp.npy_intp *dims, cnp.dtype descr,
                             Py_ssize_t size, bint zeros):
    """A fresh C-ordered array: results of 4 MiB or more from the recycling
    handler (_recycle.h), as the kernel's own; zeros from calloc, whose large
    blocks are fresh zero pages."""
    cdef object previous = None
    cdef bint recycle = (_recycler is not None
                         and size >= <Py_ssize_t>TRILU_RECYCLE_MIN)
    if recycle:
        previous = PyDataMem_SetHandler(_recycler)
    try:
        Py_INCREF(descr)
        if zeros:
            return PyArray_Zeros(nd, dims, <void *>descr, 0)
        return PyArray_Empty(nd, dims, <void *>descr, 0)
    finally:
        if recycle:
            PyDataMem_SetHandler(previous)


# --- tri --------------------------------------------------------------------------

cdef void tri_rows(elem_t *tag, char *d, Py_ssize_t n, Py_ssize_t m,
                   Py_ssize_t k, Py_ssize_t w, const char *one,
                   bint zeroed) noexcept nogil:
    """Row i: ones where j <= i + k, zeros after (not written where the block
    is zero already)."""
    cdef Py_ssize_t i, j, lo, hi
    cdef elem_t v
    if elem_t is not any_width:
        memcpy(&v, one, sizeof(elem_t))
    for i in range(n):
        kept_cols(False, k, m, i, &lo, &hi)
        if elem_t is any_width:
            for j in range(hi):
                memcpy(d + j * w, one, w)
        else:
            for j in range(hi):
                memcpy(d + j * sizeof(elem_t), &v, sizeof(elem_t))
        if not zeroed and hi < m:
            memset(d + hi * w, 0, (m - hi) * w)
        d += m * w


cdef void tri_write(char *d, Py_ssize_t n, Py_ssize_t m, Py_ssize_t k,
                    Py_ssize_t w, const char *one, bint zeroed) noexcept nogil:
    """tri_rows by the specialization for the element width."""
    if w == 8:
        tri_rows(<uint64_t *>NULL, d, n, m, k, w, one, zeroed)
    elif w == 4:
        tri_rows(<uint32_t *>NULL, d, n, m, k, w, one, zeroed)
    elif w == 1:
        tri_rows(<uint8_t *>NULL, d, n, m, k, w, one, zeroed)
    elif w == 2:
        tri_rows(<uint16_t *>NULL, d, n, m, k, w, one, zeroed)
    elif w == 16:
        tri_rows(<u128 *>NULL, d, n, m, k, w, one, zeroed)
    else:
        tri_rows(<any_width *>NULL, d, n, m, k, w, one, zeroed)


cdef void tri_stream(char *d, const char *ones, Py_ssize_t n, Py_ssize_t m,
                     Py_ssize_t k, Py_ssize_t w, bint zeroed) noexcept nogil:
    """Rows copied from a row of ones with streaming stores (_stream.h),
    zeros after; where the block is zero already, only the ones."""
    cdef Py_ssize_t i, lo, hi
    for i in range(n):
        kept_cols(False, k, m, i, &lo, &hi)
        trilu_stream_row(d, ones, 0, hi * w, hi * w if zeroed else m * w, _zeros32)
        d += m * w
    trilu_stream_fence()


cpdef tri(Py_ssize_t n, Py_ssize_t m, object k, cnp.dtype descr, bytes one):
    """``numpy.tri(n, m, k, descr)`` for n, m >= 0 and a dtype of plain bytes
    whose zero is all zero bytes; `one` is the bytes of numpy's cast of True."""
    cdef cnp.npy_intp dims[2]
    cdef Py_ssize_t kk = bound(k, 0, n, m), w = descr.itemsize
    cdef Py_ssize_t size = n * m * w
    cdef const char *pattern = one
    # From 32 MiB malloc maps fresh pages, which calloc gives as zeros for
    # free: only the ones are written, unless a freed block of the size is
    # there to reuse without a fault.
    cdef bint zeroed = size >= <Py_ssize_t>TRILU_CALLOC_MIN and not (
        _recycler is not None and trilu_spare_fits(size))
    # Results that outgrow the last-level cache are streamed from a row of
    # ones, when that row is small beside the result (a tenth at most).
    cdef bint stream = (TRILU_STREAM and size >= STREAM_MIN_BYTES
                        and n >= 10)
    cdef cnp.ndarray out
    cdef char *d
    cdef char *ones
    dims[0] = n
    dims[1] = m
    out = new_index_result(2, dims, descr, size, zeroed)
    if size == 0:
        return out
    d = cnp.PyArray_BYTES(out)
    if stream:
        ones = <char *>PyMem_RawMalloc(m * w)
        if ones == NULL:
            raise MemoryError()
        with nogil:
            tri_rows(<any_width *>NULL, ones, 1, m, m, w, pattern, True)
            tri_stream(d, ones, n, m, kk, w, zeroed)
        PyMem_RawFree(ones)
    elif size >= NOGIL_MIN_BYTES:
        with nogil:
            tri_write(d, n, m, kk, w, pattern, zeroed)
    else:
        tri_write(d, n, m, kk, w, pattern, zeroed)
    return out


# --- triu_indices, tril_indices ------------------------------------------------------

cdef void index_rows(cnp.npy_intp *r, cnp.npy_intp *c, Py_ssize_t i0,
                     Py_ssize_t i1, Py_ssize_t m, Py_ssize_t k, bint upper,
                     bint stream) noexcept nogil:
    """Rows [i0, i1), each keeping columns [lo, hi): r gets i, c gets lo..hi-1."""
    cdef Py_ssize_t i, j, lo, hi, count
    for i in range(i0, i1):
        kept_cols(upper, k, m, i, &lo, &hi)
        count = hi - lo
        if stream:
            trilu_stream_index(r, count, i, 0)
            trilu_stream_index(c, count, lo, 1)
        else:
            for j in range(count):
                r[j] = i
            for j in range(count):
                c[j] = lo + j
        r += count
        c += count
    if stream:
        trilu_stream_fence()


cpdef triangle_indices(Py_ssize_t n, Py_ssize_t m, object k, bint upper):
    """``numpy.triu_indices(n, k, m)`` (upper) or ``numpy.tril_indices``,
    for n, m >= 0."""
    cdef Py_ssize_t kk = bound(k, 0, n, m)
    cdef cnp.npy_intp count = kept_in(kk if upper else -n, m if upper else kk, n, m)
    cdef Py_ssize_t size = count * sizeof(cnp.npy_intp)
    cdef cnp.dtype descr = cnp.PyArray_DescrFromType(cnp.NPY_INTP)
    cdef object rows = new_index_result(1, &count, descr, size, False)
    cdef object cols = new_index_result(1, &count, descr, size, False)
    # The rows that keep anything: upper, those with i + k < m; lower, those
    # with i + k >= 0.
    cdef Py_ssize_t i0 = 0 if upper else min(n, max(0, -kk))
    cdef Py_ssize_t i1 = min(n, max(0, m - kk)) if upper else n
    # Both results together outgrowing the last-level cache are streamed.
    cdef bint stream = TRILU_STREAM and 2 * size >= STREAM_MIN_BYTES
    cdef cnp.npy_intp *r = <cnp.npy_intp *>cnp.PyArray_DATA(rows)
    cdef cnp.npy_intp *c = <cnp.npy_intp *>cnp.PyArray_DATA(cols)
    if size >= NOGIL_MIN_BYTES:
        with nogil:
            index_rows(r, c, i0, i1, m, kk, upper, stream)
    elif count:
        index_rows(r, c, i0, i1, m, kk, upper, stream)
    return rows, cols
