# numpy's index family: triu_indices and tril_indices, without a mask (tri is
# a mask, _banded.pxi's).
#
# Included at the end of _kernel.pyx: it shares the kernel's spans (row_span,
# kept_in, bound: triu(k) is the band (k, cols), tril(k) the band (-rows, k))
# and its memory handlers. trilu._indices validates the arguments, so here n
# and m are at least 0 and k is any int (clamped here).
#
# numpy builds an n x m bool mask and runs a boolean index over it for each
# array. Here every index is stored once, from registers, as it is counted.


cdef inline void kept_cols(bint upper, Py_ssize_t k, Py_ssize_t cols, Py_ssize_t i,
                           Py_ssize_t *lo, Py_ssize_t *hi) noexcept nogil:
    """Row i of triu(k) (upper) or tril(k) keeps columns [lo, hi): the band
    (k, cols) or (-i - 1, k) of the kernel's spans."""
    row_span(CROSSED, k if upper else -i - 1, cols if upper else k, cols, i, lo, hi)

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
    cdef Allocation how        # (as the kernel's results: recycled where large)
    cdef object rows = fresh(descr, 1, &count, 0, 0, False, &how)
    cdef object cols = fresh(descr, 1, &count, 0, 0, False, &how)
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
