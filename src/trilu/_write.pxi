# --- the writers: runs of rows, by element width (included by _kernel.pyx) -------
#
# Element loads and stores go through memcpy of a constant width, which
# compiles to a single unaligned-safe move: unaligned arrays need no special
# case.

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
    /* A one-element loop (a load, a store: about 20 bytes) that crosses a
       64-byte line of code is fed from two lines of the micro-op cache each
       turn and runs up to 1.6x slower (Zen 4), wherever unrelated code puts
       it: its entry starts a line (GCC's own loop alignment skips loops
       entered by falling through). */
    #if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    #define trilu_line_start() __asm__ volatile(".p2align 6")
    #else
    #define trilu_line_start() ((void)0)
    #endif
    """
    void trilu_prefetch(const void *p) nogil
    void trilu_line_start() nogil


cdef extern from "_threads.h" nogil:
    Py_ssize_t trilu_fetch_add(Py_ssize_t *p, Py_ssize_t v)


cdef extern from "_stream.h" nogil:
    enum: TRILU_STREAM         # 0 where streaming stores are not built
    void trilu_stream_row(char *d, const char *s, size_t lo, size_t hi,
                          size_t n, const char *fill)
    void trilu_stream_and(char *d, const char *s, const char *mask,
                          const char *fill, size_t n)
    void trilu_stream_fence()


cdef extern from "_simd.h" nogil:
    void trilu_and_avx2(char *d, const char *s, const char *mask,
                        const char *fill, size_t n)
    void trilu_and_avx512(char *d, const char *s, const char *mask,
                          const char *fill, size_t n)
    enum: TRILU_RAMP           # 512: the longest rows of trilu_edge_rows_avx2
    void trilu_edge_rows_avx2(char *d, const char *s, Py_ssize_t dst_row,
                              Py_ssize_t src_row, Py_ssize_t i0, Py_ssize_t i1,
                              Py_ssize_t a, Py_ssize_t b, Py_ssize_t cols,
                              Py_ssize_t w, const char *fill)
    void trilu_rows_avx512(char *d, const char *s, Py_ssize_t dst_row,
                           Py_ssize_t src_row, Py_ssize_t i0, Py_ssize_t i1,
                           Py_ssize_t a, Py_ssize_t b, Py_ssize_t cols,
                           Py_ssize_t w, const char *fill)
    void trilu_line_rows_avx512(char *d, const char *line, Py_ssize_t dst_row,
                                Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t a,
                                Py_ssize_t b, Py_ssize_t cols, Py_ssize_t w,
                                const char *fill)
    void trilu_along_rows_avx512(char *d, const char *line, Py_ssize_t dst_row,
                                 Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t a,
                                 Py_ssize_t b, Py_ssize_t xa, Py_ssize_t xb,
                                 Py_ssize_t cols, Py_ssize_t w, const char *fill)
    void trilu_pack_rows_avx512(char *line, const char *s, Py_ssize_t src_row,
                                Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t a,
                                Py_ssize_t b, Py_ssize_t cols, Py_ssize_t w)
    Py_ssize_t trilu_check_pack_avx512(Py_ssize_t w, bint floats, char *line,
                                       const char *s, Py_ssize_t row, Py_ssize_t cols,
                                       Py_ssize_t i0, Py_ssize_t i1,
                                       Py_ssize_t *nonzero)
    Py_ssize_t trilu_transpose4_avx2(char *t, Py_ssize_t line, const char **s,
                                     Py_ssize_t step, Py_ssize_t lo, Py_ssize_t hi)
    Py_ssize_t trilu_transpose8_avx2(char *t, Py_ssize_t line, const char **s,
                                     Py_ssize_t lo, Py_ssize_t hi)
    Py_ssize_t trilu_transpose_words_avx2(char *t, Py_ssize_t line, const char **s,
                                          Py_ssize_t lo, Py_ssize_t hi)
    Py_ssize_t trilu_transpose_bytes_avx2(char *t, Py_ssize_t line, const char **s,
                                          Py_ssize_t lo, Py_ssize_t hi)
    void trilu_tile8_avx2(char **d, const char **s, Py_ssize_t i0, Py_ssize_t i1,
                          Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a, Py_ssize_t b,
                          const char *fill, bint stream)
    void trilu_tile8_avx512(char **d, const char **s, Py_ssize_t i0, Py_ssize_t i1,
                            Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a, Py_ssize_t b,
                            const char *fill, bint stream)
    void trilu_tile4_avx512(char **d, const char **s, Py_ssize_t i0, Py_ssize_t i1,
                            Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a, Py_ssize_t b,
                            const char *fill, bint stream)
    void trilu_tile2_avx512(char **d, const char **s, Py_ssize_t i0, Py_ssize_t i1,
                            Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a, Py_ssize_t b,
                            const char *fill, bint stream)
    void trilu_tile1_avx512(char **d, const char **s, Py_ssize_t i0, Py_ssize_t i1,
                            Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a, Py_ssize_t b,
                            const char *fill, bint stream)
    int trilu_avx2_usable()    # 0 where the loop is not built
    int trilu_avx512_usable()


cdef extern from "_mask.h" nogil:
    enum: TRILU_MASK_KEY_BYTES
    ctypedef struct trilu_mask_slot:
        char key[TRILU_MASK_KEY_BYTES]
        char masks[TRILU_MASK_BYTES]
        size_t builds
    trilu_mask_slot *trilu_mask_slot_mine()


cdef enum Vectors:             # the vector loops in use (_simd.h)
    PORTABLE
    AVX2                       # the keep-mask AND, and triu's and tril's rows
    AVX512                     # the AND, and rows written in one loop


cdef Vectors _chosen_vectors():
    """The widest loops the CPU has, unless the environment says
    TRILU_AVX2=0 (portable) or TRILU_AVX512=0 (AVX2 at most) at import: the
    tests run every level the CPU has."""
    if not trilu_avx2_usable() or os.environ.get("TRILU_AVX2", "").strip() == "0":
        return PORTABLE
    if not trilu_avx512_usable() or os.environ.get("TRILU_AVX512", "").strip() == "0":
        return AVX2
    return AVX512


cdef Vectors _vectors = _chosen_vectors()


# Whether large results are written with streaming stores: built where SSE2 is
STREAMING = bool(TRILU_STREAM)


def _vector_loops():
    """The vector loops in use: "avx512", "avx2" or "portable"."""
    return ("portable", "avx2", "avx512")[_vectors]


def _row_loop(Py_ssize_t row, bint one_edge):
    """Whether the row loop in use can write crossed rows of `row` bytes of a
    matrix's band whose crossed rows all keep their end or all their start
    (one_edge) or not (plan's row_loop)."""
    return row_loop(row, one_edge, False)


def _vector_row_bytes():
    """The shortest crossed rows the row loop in use writes where a keep-mask
    could: whatever the mask's size, and where it outgrows L1D beside the
    matrix it masks (_l1d_bytes; plan's masked_rows)."""
    return vector_row_bytes(), min(VECTOR_ROW_MIN_BYTES, vector_row_bytes())


def _l1d_bytes():
    """The L1D size the plans assume."""
    return L1D_BYTES


def _l1_lines(Py_ssize_t stride):
    """How many lines `stride` bytes apart the plans assume L1D holds."""
    return l1_lines(stride)


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


cdef enum:
    # Contiguous rows of a source beyond the L2 prefetch the head of the kept
    # part this many rows ahead, this many cache lines: each row's copy starts
    # a new stream, which the hardware prefetcher only picks up after a few
    # misses. (A source in cache needs none: there they only cost.)
    PREFETCH_ROWS = 2
    PREFETCH_LINES = 8
    # A span shorter than this is copied element by element: a memcpy call's
    # fixed cost is that of moving about this many bytes in a loop.
    SPAN_CALL_BYTES = 128
    # A fill that is not one byte value repeated is copied from a buffer of
    # it this long: long enough that a call's fixed cost is small beside it,
    # short enough to stay in L1D.
    PATTERN_BYTES = 4096


# --- walking the batch -------------------------------------------------------

cdef inline void batch_seek(const Job *job, Py_ssize_t n, Py_ssize_t *idx,
                            Py_ssize_t *so, Py_ssize_t *do) noexcept nogil:
    """Offsets of flat batch index n: one division per dimension, once a chunk."""
    cdef int d
    so[0] = 0
    do[0] = 0
    for d in range(job.ndim - 1, -1, -1):
        idx[d] = n % job.shape[d]
        n //= job.shape[d]
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


# --- the fill -----------------------------------------------------------------

# 32 zero bytes: the streaming stores' pattern of a zero fill
cdef char _zeros32[32]


cdef inline void fill_bytes(char *d, Py_ssize_t n, Fill f) noexcept nogil:
    """n bytes of contiguous elements from d get the fill: a memset where it is
    one byte value (zeros, -1), else copies of the pattern (memcpy's wide
    stores beat a loop of element stores)."""
    if f.byte >= 0:
        memset(d, f.byte, n)
        return
    while n > f.pattern_bytes:
        memcpy(d, f.pattern, f.pattern_bytes)
        d += f.pattern_bytes
        n -= f.pattern_bytes
    memcpy(d, f.pattern, n)


cdef inline void fill_elem(char *d, Py_ssize_t w, Fill f) noexcept nogil:
    """The one element of w bytes at d gets the fill."""
    if f.byte >= 0:
        memset(d, f.byte, w)
    else:
        memcpy(d, f.elem, w)


cdef inline void fill_run(elem_t *tag, char *d, Py_ssize_t ds, Py_ssize_t w,
                          Py_ssize_t count, Fill f) noexcept nogil:
    """count elements from d, ds bytes apart, get the fill: at once where they
    touch."""
    cdef Py_ssize_t j
    cdef elem_t v
    if count <= 0:
        return
    if ds == w:
        fill_bytes(d, count * w, f)
    elif elem_t is any_width:
        for j in range(count):
            fill_elem(d + j * ds, w, f)
    else:
        fill_elem(<char *>&v, sizeof(elem_t), f)
        for j in range(count):
            memcpy(d + j * ds, &v, sizeof(elem_t))


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


cdef inline void copy_elem(elem_t *tag, char *d, const char *s,
                           Py_ssize_t w) noexcept nogil:
    """One element from s to d, as a whole where its width is fused."""
    cdef elem_t v
    if elem_t is any_width:
        memcpy(d, s, w)
    else:
        memcpy(&v, s, sizeof(elem_t))
        memcpy(d, &v, sizeof(elem_t))


cdef inline void fill_gaps(elem_t *tag, char *d, Py_ssize_t ds, Py_ssize_t w,
                           Py_ssize_t cols, Py_ssize_t lo1, Py_ssize_t hi1,
                           Py_ssize_t lo2, Py_ssize_t hi2, Fill f) noexcept nogil:
    """Elements [0, cols) of a row, ds bytes apart, get the fill but for two
    disjoint spans [lo1, hi1) and [lo2, hi2), either of which may be empty."""
    if hi2 <= lo2:             # an empty span: none, at the other's end
        lo2 = hi2 = max(hi1, lo1)
    if hi1 <= lo1:
        lo1 = hi1 = lo2
    if lo2 < lo1:
        lo1, hi1, lo2, hi2 = lo2, hi2, lo1, hi1
    fill_run(tag, d, ds, w, lo1, f)
    fill_run(tag, d + hi1 * ds, ds, w, lo2 - hi1, f)
    fill_run(tag, d + hi2 * ds, ds, w, cols - hi2, f)


# --- rows one at a time ---------------------------------------------------------

cdef inline void xor_elem(elem_t *v, const elem_t *x) noexcept nogil:
    if elem_t is u128:
        v.lo ^= x.lo
        v.hi ^= x.hi
    elif elem_t is not any_width:
        v[0] ^= x[0]


cdef void copy_xor(elem_t *tag, char *d, Py_ssize_t ds, const char *s,
                   Py_ssize_t ss, Py_ssize_t count, Py_ssize_t w,
                   const char *xor) noexcept nogil:
    """count elements from s to d (strides ss, ds), each XORed with the
    element `xor` on the way (conj: the imaginary part's sign bit)."""
    cdef Py_ssize_t j, t
    cdef elem_t v, x
    if elem_t is any_width:
        for j in range(count):
            for t in range(w):
                d[j * ds + t] = s[j * ss + t] ^ xor[t]
    else:
        memcpy(&x, xor, sizeof(elem_t))
        for j in range(count):
            memcpy(&v, s + j * ss, sizeof(elem_t))
            xor_elem(&v, &x)
            memcpy(d + j * ds, &v, sizeof(elem_t))


cdef inline Py_ssize_t block_columns(Py_ssize_t w) noexcept nogil:
    """The columns transpose_block moves at a time, of elements of w bytes:
    four of 8-byte elements, eight of 4- and 2-byte ones, sixteen of bytes,
    where the CPU has AVX2; else none (0)."""
    if _vectors == PORTABLE:
        return 0
    if w == 8:
        return 4
    if w == 4 or w == 2:
        return 8
    return 16 if w == 1 else 0


cdef inline Py_ssize_t transpose_columns(elem_t *tag) noexcept nogil:
    """block_columns of elem_t's width."""
    return 0 if elem_t is any_width else block_columns(sizeof(elem_t))


cdef inline Py_ssize_t transpose_rows(elem_t *tag, char *d, Py_ssize_t dst_row,
                                      const char **runs, Py_ssize_t step,
                                      Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Rows [lo, hi) of transpose_columns' columns: element i of runs[k] (at
    runs[k] + i * step) to d + i * dst_row + k * w, a square block in
    registers at a time (_simd.h); return where the blocks stopped (rows
    lo.. a multiple of the columns). step is w (runs read forwards), or
    -8 for 8-byte elements (backwards); anything else moves none. The
    blocks start at row 0 of runs moved to lo: every call of a block
    function passes 0 (lo = 0 folds this away), so the compiler keeps one
    specialized copy of each."""
    cdef const char *moved[16]
    cdef Py_ssize_t k, n = transpose_columns(tag)
    if n == 0 or (step != <Py_ssize_t>sizeof(elem_t)
                  and not (elem_t is uint64_t and step == -8)):
        return lo
    if lo != 0:
        for k in range(n):
            moved[k] = runs[k] + lo * step
        runs = moved
        d += lo * dst_row
    if elem_t is uint64_t:
        return lo + trilu_transpose4_avx2(d, dst_row, runs, step, 0, hi - lo)
    elif elem_t is uint32_t:
        return lo + trilu_transpose8_avx2(d, dst_row, runs, 0, hi - lo)
    elif elem_t is uint16_t:
        return lo + trilu_transpose_words_avx2(d, dst_row, runs, 0, hi - lo)
    elif elem_t is uint8_t:
        return lo + trilu_transpose_bytes_avx2(d, dst_row, runs, 0, hi - lo)
    return lo


cdef inline Py_ssize_t transpose_block(elem_t *tag, char *d, Py_ssize_t dst_row,
                                       const char **runs, Py_ssize_t n) noexcept nogil:
    """transpose_rows' rows [0, n) of runs whose elements are contiguous."""
    return transpose_rows(tag, d, dst_row, runs, sizeof(elem_t), 0, n)


cdef inline bint transposed_tiles(const Job *job, Py_ssize_t r0,
                                  Py_ssize_t r1) noexcept nogil:
    """Whether transposed_rows' crossed rows [r0, r1) go by transposed_tile:
    AVX-512, elements of 1 or 2 bytes, rows written whole (the fill with
    the tiles), a block's rows and columns at least. (The groups' AVX2
    blocks measured faster for 4- and 8-byte elements, and for a mirror's
    band alone: 3ff8b65's A/B.)"""
    cdef Py_ssize_t n = tile_lanes(job.width)
    return (n and _vectors == AVX512 and job.width <= 2 and job.fill_rest
            and job.cols >= n and r1 - r0 >= n)


cdef void transposed_tile(const Job *job, Py_ssize_t so, Py_ssize_t do,
                          Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    """transposed_rows' crossed rows [r0, r1) by tile's n x n blocks, in
    registers, n rows at a time across up to 512 of src's runs, the fill
    with them; the last n columns and rows moved back to end at cols and at
    r1 (some written twice, alike)."""
    cdef Py_ssize_t w = job.width, n = tile_lanes(w), cols = job.cols
    cdef Py_ssize_t g, c, i, j = 0, j1
    cdef char *rows[16]
    cdef const char *runs[512]
    cdef const char *src = job.src + so
    while j < cols:
        j1 = min(j + 512, cols - cols % n)   # whole blocks
        if j1 <= j:            # the last block, moved back
            j = cols - n
            j1 = cols
        for c in range(j, j1):
            runs[c - j] = src + c * job.src_col
        i = r0
        while i < r1:
            i = min(i, r1 - n)
            for g in range(n):
                rows[g] = job.dst + do + (i + g) * job.dst_row
            tile(w, rows, runs, i, i + n, j, j1, job.a, job.b, job.fill.pattern,
                 False)
            i += n
        j = j1


cdef void transposed_rows(elem_t *tag, const Job *job, Py_ssize_t so,
                          Py_ssize_t do, Py_ssize_t r0, Py_ssize_t r1,
                          Part part) noexcept nogil:
    """strided_rows' rows [r0, r1) where grouped_rows: src's next row its
    next element (a transpose), dst's rows contiguous, a group of rows at a
    time, each column's run of the group read once, from one line, for all
    of them (the rest, fewer rows than a group, as strided_rows does); the
    crossed rows by square blocks in registers where transposed_tiles."""
    cdef Py_ssize_t g, i, j, top, bottom
    # a line's elements, or 16 rows (stores to as many lines at once)
    cdef Py_ssize_t group = min(16, LINE_BYTES // sizeof(elem_t))
    cdef Py_ssize_t w = sizeof(elem_t), n = job.cols, a = job.a, b = job.b
    cdef Py_ssize_t ss = job.src_col, dst_row = job.dst_row
    cdef bint rest = job.fill_rest
    cdef Fill f = job.fill
    cdef const char *s = job.src + so + r0 * w
    cdef char *d = job.dst + do + r0 * dst_row
    cdef Py_ssize_t los[16]
    cdef Py_ssize_t his[16]
    cdef const char *runs[16]
    cdef Py_ssize_t block = transpose_columns(tag)
    cdef const char *p
    cdef char *row
    if part == CROSSED and transposed_tiles(job, r0, r1):
        transposed_tile(job, so, do, r0, r1)
        return
    i = r0
    while i + group <= r1:
        top, bottom = 0, n     # the columns every row of the group keeps
        for g in range(group):
            row_span(part, a, b, n, i + g, &los[g], &his[g])
            top = max(top, los[g])
            bottom = min(bottom, his[g])
        bottom = max(top, bottom)
        for g in range(group):     # fill, and what the others do not keep
            row = d + g * dst_row
            if rest:
                fill_run(tag, row, w, w, los[g], f)
            copy_elems(tag, row + los[g] * w, w, s + g * w + los[g] * ss, ss,
                       min(his[g], top) - los[g], w)
        j = top
        while block and j + block <= bottom:   # (a group: whole blocks of rows)
            for g in range(block):
                runs[g] = s + (j + g) * ss
            transpose_block(tag, d + j * w, dst_row, runs, group)
            j += block
        for j in range(j, bottom):
            p = s + j * ss
            for g in range(group):
                copy_elem(tag, d + g * dst_row + j * w, p + g * w, w)
        for g in range(group):
            row = d + g * dst_row
            j = max(los[g], bottom)
            copy_elems(tag, row + j * w, w, s + g * w + j * ss, ss, his[g] - j, w)
            if rest:
                fill_run(tag, row + his[g] * w, w, w, n - his[g], f)
        i += group
        s += group * w
        d += group * dst_row
    strided_rows(tag, job, so, do, i, r1, part)


cdef void strided_rows(elem_t *tag, const Job *job, Py_ssize_t so,
                       Py_ssize_t do, Py_ssize_t r0, Py_ssize_t r1,
                       Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix, elements of any strides: fill [0, lo), copy
    [lo, hi), fill [hi, cols), in address order (stores that jump back defeat
    the hardware's streaming)."""
    cdef Py_ssize_t i, j, lo, hi, w = job.width, n = job.cols
    cdef Py_ssize_t a = job.a, b = job.b
    cdef Py_ssize_t ss = job.src_col, ds = job.dst_col
    cdef bint copy = job.copy_kept, rest = job.fill_rest
    cdef Fill f = job.fill
    cdef const char *s = job.src + so + r0 * job.src_row
    cdef char *d = job.dst + do + r0 * job.dst_row
    cdef Py_ssize_t src_row = job.src_row, dst_row = job.dst_row
    cdef elem_t v
    for i in range(r0, r1):
        row_span(part, a, b, n, i, &lo, &hi)
        if rest:
            fill_run(tag, d, ds, w, lo, f)
        if copy and job.xor != NULL:
            copy_xor(tag, d + lo * ds, ds, s + lo * ss, ss, hi - lo, w, job.xor)
        elif copy:
            if elem_t is any_width:
                for j in range(lo, hi):
                    memcpy(d + j * ds, s + j * ss, w)
            elif (ss == -<Py_ssize_t>sizeof(elem_t)
                  and ds == <Py_ssize_t>sizeof(elem_t)):
                # a row read backwards ([:, ::-1]): constant strides the
                # compiler can unroll
                for j in range(lo, hi):
                    memcpy(&v, s - j * <Py_ssize_t>sizeof(elem_t), sizeof(elem_t))
                    memcpy(d + j * sizeof(elem_t), &v, sizeof(elem_t))
            else:
                for j in range(lo, hi):
                    memcpy(&v, s + j * ss, sizeof(elem_t))
                    memcpy(d + j * ds, &v, sizeof(elem_t))
        if rest:
            fill_run(tag, d + hi * ds, ds, w, n - hi, f)
        s += src_row
        d += dst_row


cdef inline void gather_run(char *t, Py_ssize_t line, const char *s, Py_ssize_t sstep,
                            Py_ssize_t i0, Py_ssize_t i1, const char *xor,
                            const elem_t *x) noexcept nogil:
    """Elements [i0, i1) of a run (at s + i * sstep) to a tile's column (at t
    + i * line), XOR x where xor is given: gather_tile's."""
    cdef Py_ssize_t i
    cdef elem_t v
    for i in range(i0, i1):
        memcpy(&v, s + i * sstep, sizeof(elem_t))
        if xor != NULL:
            xor_elem(&v, x)
        memcpy(t + i * line, &v, sizeof(elem_t))


cdef void gather_tile(elem_t *tag, const char **scol, Py_ssize_t sstep,
                      Py_ssize_t i0, Py_ssize_t i1, Py_ssize_t j0, Py_ssize_t j1,
                      Py_ssize_t a, Py_ssize_t b, Py_ssize_t w, const char *xor,
                      char *buf, Py_ssize_t ahead) noexcept nogil:
    """The src side of a tile of a transposed walk into buf (in cache), row
    i's (j1 - j0) elements after row i - 1's: each element (i, j) with i in
    [i0, i1), j in [j0, j1) and a <= j - i <= b, from scol[j - j0] + i *
    sstep (src runs down its columns), XOR `xor` where given. scol also holds
    the `ahead` columns after the tile's, whose runs are fetched ahead. A
    column at a time, one run of src each; runs along rows (of 1 to 8 bytes)
    transpose_columns at a time where the CPU has AVX2, a square block in
    registers (transpose_rows), the band's corners of the group element by
    element."""
    cdef Py_ssize_t i, j, top, bottom, stop, line = (j1 - j0) * w
    # the elements of a run a cache line holds (one, where sstep is a line)
    cdef Py_ssize_t per_line = max(1, 64 // w) if sstep == w or sstep == -w else 1
    cdef Py_ssize_t k, group, lo, hi
    # the runs a block in registers moves at once (transpose_rows), or none
    cdef Py_ssize_t block = transpose_columns(tag) if xor == NULL and (
        sstep == w or (w == 8 and sstep == -8)) else 0
    cdef const char *s
    cdef const char *p
    cdef char *t
    cdef elem_t x
    if elem_t is not any_width and xor != NULL:
        memcpy(&x, xor, sizeof(elem_t))
    j = j0
    while j < j1:
        group = block if block and j + block <= j1 else 1
        for k in range(j, j + group):
            if k + ACROSS_AHEAD < j1 + ahead:
                # the run of a column ahead, a line at a time: runs a stride
                # apart are nothing a hardware prefetcher follows
                p = scol[k + ACROSS_AHEAD - j0]
                i = clip(k + ACROSS_AHEAD - b, i0, i1)
                stop = clip(k + ACROSS_AHEAD - a + 1, i, i1)
                while i < stop:
                    trilu_prefetch(p + i * sstep)
                    i += per_line
        lo = hi = i0               # the rows the blocks moved
        if group > 1:
            # the rows all the group's runs have (the band's runs start and
            # end later run by run)
            lo = clip(j + group - 1 - b, i0, i1)
            hi = transpose_rows(tag, buf + (j - j0) * w - i0 * line, line,
                                scol + (j - j0), sstep, lo, clip(j - a + 1, lo, i1))
        for k in range(j, j + group):
            top = clip(k - b, i0, i1)
            bottom = clip(k - a + 1, top, i1)
            s = scol[k - j0]
            t = buf + (k - j0) * w - i0 * line
            if elem_t is any_width:
                for i in range(top, bottom):
                    if xor != NULL:
                        copy_xor(tag, t + i * line, 0, s + i * sstep, 0, 1, w, xor)
                    else:
                        memcpy(t + i * line, s + i * sstep, w)
            else:              # around the blocks' rows
                gather_run(t, line, s, sstep, top, min(lo, bottom), xor, &x)
                gather_run(t, line, s, sstep, max(top, hi), bottom, xor, &x)
        j += group


cdef inline Py_ssize_t tile_lanes(Py_ssize_t w) noexcept nogil:
    """The rows and columns of tile's blocks of w-byte elements, or 0 where
    the level has none: 8-byte ones with AVX2 (two 4x4 blocks side by side)
    or AVX-512 (a block's row a line), and with AVX-512 16x16 blocks of
    4-byte elements (a row a line), of 2- and 1-byte ones (half and a
    quarter of one: never streamed)."""
    if w == 8 and _vectors != PORTABLE:
        return 8
    if (w == 4 or w == 2 or w == 1) and _vectors == AVX512:
        return 16
    return 0


cdef inline void tile(Py_ssize_t w, char **d, const char **s, Py_ssize_t i0,
                      Py_ssize_t i1, Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a,
                      Py_ssize_t b, const char *fill, bint stream) noexcept nogil:
    """The level's trilu_tile of w-byte elements (_simd.h), where tile_lanes."""
    if w == 4:
        trilu_tile4_avx512(d, s, i0, i1, j0, j1, a, b, fill, stream)
    elif w == 2:
        trilu_tile2_avx512(d, s, i0, i1, j0, j1, a, b, fill, stream)
    elif w == 1:
        trilu_tile1_avx512(d, s, i0, i1, j0, j1, a, b, fill, stream)
    elif _vectors == AVX512:
        trilu_tile8_avx512(d, s, i0, i1, j0, j1, a, b, fill, stream)
    else:
        trilu_tile8_avx2(d, s, i0, i1, j0, j1, a, b, fill, stream)


cdef void across_tile(elem_t *tag, char **drow, Py_ssize_t dstep,
                      const char **scol, Py_ssize_t sstep, Py_ssize_t i0,
                      Py_ssize_t i1, Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t a,
                      Py_ssize_t b, Py_ssize_t w, const char *xor,
                      char *buf, Py_ssize_t ahead, bint stream,
                      const char *fill=NULL) noexcept nogil:
    """One tile of a transposed walk: gather_tile's elements to drow[i - i0]
    + j * dstep (dst along its rows), a row at a time (with streaming
    stores where `stream` and dst's rows are contiguous; where `fill`, a
    pattern, is given, each row's [j0, j1) whole, in streaming stores, its
    elements outside the band getting the fill): dst's rows, a power-of-two
    stride apart, would evict one another in cache if each column went
    straight to all of them. Streamed whole lines of 4- and 8-byte elements
    skip the buffer (tile: a block's row is a line, or two blocks' side by
    side)."""
    cdef Py_ssize_t i, lo, hi, line = (j1 - j0) * w
    cdef Py_ssize_t n = tile_lanes(w) if (
        fill != NULL and sstep == w and dstep == w and xor == NULL
        and w >= 4) else 0     # (a block's rows whole lines, streamed)
    if (n and (i1 - i0) % n == 0 and (j1 - j0) % n == 0
            and <size_t>(drow[0] + j0 * w) % LINE_BYTES == 0):
        # (only streamed: into a result in cache, the buffer's row copies
        # were faster, as for triu of an F-order 1024 x 1024 float64)
        tile(w, drow, scol, i0, i1, j0, j1, a, b, fill, True)
        return
    gather_tile(tag, scol, sstep, i0, i1, j0, j1, a, b, w, xor, buf, ahead)
    for i in range(i0, i1):
        lo = clip(i + a, j0, j1)
        hi = clip(i + b + 1, lo, j1)
        if fill != NULL:
            trilu_stream_row(drow[i - i0] + j0 * w, buf + (i - i0) * line,
                             (lo - j0) * w, (hi - j0) * w, line, fill)
        elif stream and dstep == w and hi > lo:
            trilu_stream_row(drow[i - i0] + lo * w, buf + (i - i0) * line
                             + (lo - j0) * w, 0, (hi - lo) * w, (hi - lo) * w,
                             _zeros32)
        else:
            copy_elems(tag, drow[i - i0] + lo * dstep, dstep,
                       buf + (i - i0) * line + (lo - j0) * w, w, hi - lo, w)


# --- numbers compared (squareform's checks) ---------------------------------------

cdef inline uint64_t number(const char *p, Py_ssize_t part) noexcept nogil:
    """The number of `part` bytes at p, its bits widened."""
    cdef uint8_t u8
    cdef uint16_t u16
    cdef uint32_t u32
    cdef uint64_t u64
    if part == 8:
        memcpy(&u64, p, 8)
        return u64
    if part == 4:
        memcpy(&u32, p, 4)
        return u32
    if part == 2:
        memcpy(&u16, p, 2)
        return u16
    memcpy(&u8, p, 1)
    return u8


cdef inline bint same_bits(uint64_t u, uint64_t v, const Check *c) noexcept nogil:
    """u == v as numpy compares them (Check): for floats, equal bits but
    NaNs, or zeros of either sign."""
    if not c.floats:
        return u == v
    return not (u | v) & c.mag or (u == v and u & c.mag <= c.inf)


cdef Py_ssize_t differ(const char *x, const char *y, Py_ssize_t count,
                       const Check *c) noexcept nogil:
    """How many of `count` numbers (Check's parts, contiguous) at x and y are
    unequal: a loop the compiler widens, a type of number each."""
    cdef Py_ssize_t t, n = 0
    cdef double d0, d1
    cdef float f0, f1
    cdef uint64_t u, v
    cdef uint32_t u32, v32
    if c.floats and c.part == 8:
        for t in range(count):
            memcpy(&d0, x + 8 * t, 8)
            memcpy(&d1, y + 8 * t, 8)
            n += d0 != d1      # (IEEE's: true for a NaN)
    elif c.floats and c.part == 4:
        for t in range(count):
            memcpy(&f0, x + 4 * t, 4)
            memcpy(&f1, y + 4 * t, 4)
            n += f0 != f1
    elif not c.floats and c.part == 8:
        for t in range(count):
            memcpy(&u, x + 8 * t, 8)
            memcpy(&v, y + 8 * t, 8)
            n += u != v
    elif not c.floats and c.part == 4:
        for t in range(count):
            memcpy(&u32, x + 4 * t, 4)
            memcpy(&v32, y + 4 * t, 4)
            n += u32 != v32
    else:                      # float16, 1- and 2-byte integers
        for t in range(count):
            n += not same_bits(number(x + c.part * t, c.part),
                               number(y + c.part * t, c.part), c)
    return n


cdef Py_ssize_t compare_tile(elem_t *tag, char **drow, Py_ssize_t dstep,
                             const char **scol, Py_ssize_t sstep, Py_ssize_t i0,
                             Py_ssize_t i1, Py_ssize_t j0, Py_ssize_t j1,
                             Py_ssize_t a, Py_ssize_t b, Py_ssize_t w,
                             const Check *c, char *buf, Py_ssize_t ahead,
                             char **prow, Py_ssize_t pstep) noexcept nogil:
    """across_tile's elements compared with those at drow[i - i0] + j * dstep
    (contiguous: dstep == w) instead of written there: how many of their
    numbers differ (Check). The latter are copied to prow[i - i0] + j * pstep
    on the way, read from memory once for both."""
    cdef Py_ssize_t i, lo, hi, n = 0, line = (j1 - j0) * w
    gather_tile(tag, scol, sstep, i0, i1, j0, j1, a, b, w, NULL, buf, ahead)
    for i in range(i0, i1):
        lo = clip(i + a, j0, j1)
        hi = clip(i + b + 1, lo, j1)
        copy_elems(tag, prow[i - i0] + lo * pstep, pstep, drow[i - i0] + lo * w, w,
                   hi - lo, w)
        n += differ(drow[i - i0] + lo * w, buf + (i - i0) * line + (lo - j0) * w,
                    (hi - lo) * (w // c.part), c)
    return n


cdef inline void put(elem_t *tag, char *d, Py_ssize_t ds, const char *s,
                     Py_ssize_t ss, Py_ssize_t count, Py_ssize_t w,
                     bint stream) noexcept nogil:
    """copy_elems, with streaming stores where `stream` and both sides are
    contiguous."""
    if stream and ds == w and ss == w and count > 0:
        trilu_stream_row(d, s, 0, count * w, count * w, _zeros32)
    else:
        copy_elems(tag, d, ds, s, ss, count, w)


cdef inline void unpacked_row(elem_t *tag, const Job *job, char *d,
                              const char *line, Py_ssize_t lo, Py_ssize_t hi,
                              const char *xor, Py_ssize_t xlo,
                              Py_ssize_t xhi) noexcept nogil:
    """Row d of an UNPACK but its span [xlo, xhi) read across (at an end of
    the row, or empty): the span [lo, hi) from its packed line (element p at
    line + p * step), XOR `xor` where given, and the fill elsewhere (none
    into zero pages); in one pass of streaming stores where job.stream."""
    cdef Py_ssize_t w = job.width, cols = job.cols, ds = job.dst_col
    cdef Py_ssize_t step = job.src_col, r0 = 0, r1 = cols
    if hi <= lo:
        lo = hi = xhi if xlo == 0 else 0
    if job.stream and xor == NULL and step == w:
        if xhi > xlo:          # the rest of the row: one run
            if xlo == 0:
                r0 = xhi
            else:
                r1 = xlo
        if job.fill_rest:
            trilu_stream_row(d + r0 * w, line + r0 * w, (lo - r0) * w,
                             (hi - r0) * w, (r1 - r0) * w, job.fill.pattern)
        elif hi > lo:
            put(tag, d + lo * w, w, line + lo * w, w, hi - lo, w, True)
        return
    if job.fill_rest:
        fill_gaps(tag, d, ds, w, cols, lo, hi, xlo, xhi, job.fill)
    if xor != NULL:
        copy_xor(tag, d + lo * ds, ds, line + lo * step, step, hi - lo, w, xor)
    else:
        copy_elems(tag, d + lo * ds, ds, line + lo * step, step, hi - lo, w)


cdef void whole_lines(const Job *job, char **drow, Py_ssize_t n,
                      Py_ssize_t *first, Py_ssize_t *last) noexcept nogil:
    """[first, last), the columns a strip's streamed tiles write, widened to
    whole lines of its n rows drow[] (which start alike in a line: plan), or
    [cols, cols) where empty; the rows' elements outside them get the fill
    (unless zero pages hold it already), streamed."""
    cdef Py_ssize_t i, w = job.width, cols = job.cols
    cdef size_t head = <size_t>(drow[0] + first[0] * w) % LINE_BYTES
    cdef size_t tail = <size_t>(drow[0] + last[0] * w) % LINE_BYTES
    if first[0] >= last[0]:
        first[0] = last[0] = cols
    else:
        first[0] = max(0, first[0] - <Py_ssize_t>head // w)
        last[0] = min(cols, last[0] + <Py_ssize_t>(LINE_BYTES - tail) % LINE_BYTES // w)
    if job.fill_rest:
        for i in range(n):
            trilu_stream_row(drow[i], drow[i], 0, 0, first[0] * w, job.fill.pattern)
            trilu_stream_row(drow[i] + last[0] * w, drow[i], 0, 0,
                             (cols - last[0]) * w, job.fill.pattern)


cdef inline bint whole_tiles(const Job *job) noexcept nogil:
    """Whether a TILED job's tiles are whole lines wide, streamed, the fill
    with them (whole_lines): a streamed band's (plan: its rows start alike
    in a line), and a streamed UNPACK's whose lines are its columns (none
    read along) where its rows start alike in a line. (Another streamed
    UNPACK streams each row's fill along and writes its tiles by normal
    stores.)"""
    return job.stream and (job.packed == UNPACKED or (
        job.packed == UNPACK and job.columns and not job.mirror
        and LINE_BYTES % job.width == 0 and job.dst_row % LINE_BYTES == 0))


cdef inline void add_found(const Job *job, Py_ssize_t unequal,
                           Py_ssize_t nonzero) noexcept nogil:
    """A checked PACK's counts into job.found, from any thread: pairs that
    differ, nonzero diagonal elements."""
    if unequal:
        trilu_fetch_add(&job.found[0], unequal)
    if nonzero:
        trilu_fetch_add(&job.found[1], nonzero)


cdef inline bint checked_blocks(const Job *job) noexcept nogil:
    """Whether a checked PACK (squareform's) goes by checked_rows: AVX-512,
    numbers of 4 or 8 bytes, an element each, both sides contiguous."""
    cdef Py_ssize_t w = job.width
    return (job.check != NULL and _vectors == AVX512 and w == job.check.part
            and (w == 4 or w == 8) and job.src_col == w and job.dst_col == w)


cdef void checked_rows(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                       Py_ssize_t r1) noexcept nogil:
    """A checked PACK's rows [r0, r1) where checked_blocks: a block and its
    mirror in registers at a time (trilu_check_pack_avx512), what differs
    counted (add_found)."""
    cdef Py_ssize_t nonzero = 0, unequal = trilu_check_pack_avx512(
        job.width, job.check.floats,
        job.dst + do + packed_line(job, r0, job.width), job.src + so, job.src_row,
        job.cols, r0, r1, &nonzero)
    add_found(job, unequal, nonzero)


cdef void tiled_rows(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                     Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a TILED job, the one transposed walk, a strip of
    across_rows at a time: what each row reads along (a packed line, or a
    matrix row) and its fill, then what the strip reads across by tiles: a
    band's src down its columns, the packed lines' columns, PACK's matrix
    down its columns, or a checked PACK's transpose (and its rows, packed
    by the same tiles: read once for both). A band walked `across`
    instead writes the strip's src rows across, into dst's rows that run
    down the walk's columns; a mirrored UNPACK writes the strip's own lines,
    still in cache, across: the other band, down the strip's columns of
    every row."""
    cdef Py_ssize_t w = job.width, cols = job.cols, side = across_rows(w)
    cdef Py_ssize_t width = across_cols(w)
    cdef bint pack = job.packed == PACK, band = job.packed == UNPACKED
    cdef Py_ssize_t step = job.dst_col if pack else job.src_col   # packed side's
    # the band read across: the kept one (a band's, PACK's, or that of lines
    # that are columns), else the mirrored one
    cdef bint kept_across = band or pack or job.columns
    cdef Py_ssize_t ta = job.a if kept_across else job.ma
    cdef Py_ssize_t tb = job.b if kept_across else job.mb
    cdef const char *txor = job.xor if band or not kept_across else NULL
    cdef bint whole = whole_tiles(job)
    # the tiles' steps: along dst's rows (drow), down src's columns (scol)
    cdef Py_ssize_t dstep = job.src_col if job.check != NULL else (
        step if pack else job.dst_col)
    cdef Py_ssize_t sstep = job.src_col if job.check != NULL else (
        job.src_row if pack or band else step)
    cdef Py_ssize_t b0, b1, c0, c1, i, j, lo, hi, mlo, mhi, first, last, ahead
    cdef Py_ssize_t lines, length, la, lb
    cdef Py_ssize_t unequal = 0, nonzero = 0
    cdef char *drow[ACROSS_MAX]
    cdef char *prow[ACROSS_MAX]    # (a checked PACK's packed lines)
    cdef const char *scol[ACROSS_MAX + ACROSS_AHEAD]
    cdef char buf[ACROSS_TILE_BYTES]
    cdef const char *src = job.src + so
    cdef const char *x
    cdef char *d
    packed_lines(job, &lines, &length, &la, &lb)
    b0 = r0
    while b0 < r1:
        b1 = min(b0 + side, r1)
        first = cols
        last = 0
        if job.across and job.copy_kept:
            # src's runs read along, all a strip needs is its columns: from
            # its first row's start to its last row's end (a band's spans
            # move right row by row)
            row_span(part, job.a, job.b, cols, b0, &first, &hi)
            row_span(part, job.a, job.b, cols, b1 - 1, &lo, &last)
        for i in range(b0, b0 if job.across else b1):
            row_span(part, job.a, job.b, cols, i, &lo, &hi)
            mlo = mhi = 0
            if job.mirror:
                row_span(CROSSED, job.ma, job.mb, cols, i, &mlo, &mhi)
            if job.check != NULL:  # packed by tiles, compared with the transpose
                d = <char *>src + i * job.src_row
                drow[i - b0] = d
                prow[i - b0] = job.dst + do + packed_line(job, i, step)
                if i < cols:   # the diagonal: x == x (no NaN), x == 0
                    x = d + i * job.src_col
                    if differ(x, x, w // job.check.part, job.check):
                        unequal += 1
                    elif differ(x, <const char *>_zeros32, w // job.check.part,
                                job.check):
                        nonzero += 1
            elif pack:         # (PACK's matrix, read across)
                drow[i - b0] = job.dst + do + packed_line(job, i, step)
            elif band:         # the fill along; the band, across
                d = job.dst + do + i * job.dst_row
                drow[i - b0] = d
                if job.fill_rest and not job.stream:
                    fill_gaps(tag, d, dstep, w, cols, lo, hi, 0, 0, job.fill)
                if not job.copy_kept:
                    hi = lo    # (in place: kept already)
            else:
                d = job.dst + do + i * job.dst_row
                drow[i - b0] = d
                if whole:          # (nothing along: the fill with the tiles)
                    pass
                elif job.columns:  # the mirrored span along row i's line
                    unpacked_row(tag, job, d, src + packed_line(job, i, step),
                                 mlo, mhi, job.xor, lo, hi)
                else:              # the kept one
                    unpacked_row(tag, job, d, src + packed_line(job, i, step),
                                 lo, hi, NULL, mlo, mhi)
            if job.mirror and job.columns:     # the span of line i, a column's
                row_span(CROSSED, -job.b, -job.a, job.rows, i, &lo, &hi)
            elif not job.mirror and not kept_across:
                lo, hi = mlo, mhi
            if hi > lo:
                first = min(first, lo)
                last = max(last, hi)
        if job.mirror or job.across:
            # The strip's runs written across: line i's element p goes to row
            # p, column i (the lines just read along, read again from cache;
            # the strip's rows get theirs from the lines of other strips), or
            # src row i's element j to dst's run j, at i (the rows after the
            # strip fetched ahead, into the first tile).
            ahead = 0 if job.mirror else min(ACROSS_AHEAD, r1 - b1)
            for i in range(b0, b1 + ahead):
                scol[i - b0] = src + (packed_line(job, i, step) if job.mirror
                                      else i * job.src_row)
            c0 = first
            while c0 < last:
                c1 = min(c0 + width, last)
                for j in range(c0, c1):
                    drow[j - c0] = job.dst + do + j * (
                        job.dst_row if job.mirror else job.dst_col)
                if job.mirror:
                    across_tile(tag, drow, dstep, scol, sstep, c0, c1, b0, b1, ta,
                                tb, w, txor, buf, 0, job.stream)
                else:
                    across_tile(tag, drow, job.dst_row, scol, job.src_col, c0, c1,
                                b0, b1, -job.b, -job.a, w, txor, buf, ahead, False)
                c0 = c1
            b0 = b1
            continue
        if whole:                  # (a tile is whole lines wide)
            whole_lines(job, drow, b1 - b0, &first, &last)
        c0 = first
        while c0 < last:
            c1 = min(c0 + width, last)
            if job.check == NULL and not (pack or band):
                x = src + packed_line(job, c0, step)   # then line after line
            for j in range(c0, min(c1 + ACROSS_AHEAD, last)):
                if job.check != NULL:  # row j, as the transpose's column
                    scol[j - c0] = src + j * job.src_row
                elif pack or band:
                    scol[j - c0] = src + j * job.src_col
                else:
                    scol[j - c0] = x
                    x += line_gap(j, la, lb, length) * step
            if job.check != NULL:
                unequal += compare_tile(tag, drow, dstep, scol, sstep, b0, b1, c0,
                                        c1, ta, tb, w, job.check, buf,
                                        min(ACROSS_AHEAD, last - c1), prow, step)
            else:
                across_tile(tag, drow, dstep, scol, sstep, b0, b1, c0, c1, ta, tb,
                            w, txor, buf, min(ACROSS_AHEAD, last - c1), False,
                            job.fill.pattern if whole else NULL)
            c0 = c1
        b0 = b1
    add_found(job, unequal, nonzero)


cdef inline void contiguous_rows(const Job *job, Py_ssize_t so, Py_ssize_t do,
                                 Py_ssize_t r0, Py_ssize_t r1, Part part,
                                 const char *line) noexcept nogil:
    """Rows [r0, r1) of a matrix, elements contiguous: a fill, a memcpy and a
    fill each, in address order, or one vector loop each (job.vector; an
    UNPACK's on AVX-512 only, whose masked loads never read past a span);
    for large results, one pass of streaming stores each (_stream.h). The
    kept spans are read from src's rows, or where `line` is given from
    packed lines from there, each right after the one before (an
    UNPACK's)."""
    cdef Py_ssize_t i, lo, hi, ahead, t, rows = job.rows, w = job.width
    cdef Py_ssize_t cols = job.cols, a = job.a, b = job.b, n = job.cols * w
    cdef Py_ssize_t src_row = job.src_row, dst_row = job.dst_row
    cdef bint copy = job.copy_kept, rest = job.fill_rest, stream = job.stream
    cdef bint prefetch = copy and job.prefetch
    cdef Fill f = job.fill
    cdef const char *s = job.src + so + r0 * src_row
    cdef char *d = job.dst + do + r0 * dst_row
    if job.vector and part == CROSSED:
        if _vectors == AVX512:
            if line != NULL:
                trilu_line_rows_avx512(d, line, dst_row, r0, r1, a, b, cols, w,
                                       f.pattern)
            else:
                trilu_rows_avx512(d, s, dst_row, src_row, r0, r1, a, b, cols, w,
                                  f.pattern)
        else:
            trilu_edge_rows_avx2(d, s, dst_row, src_row, r0, r1, a, b, cols, w,
                                 <const char *>NULL if f.byte == 0 else f.pattern)
        return
    for i in range(r0, r1):
        if prefetch and i + PREFETCH_ROWS < rows:
            # the head of the kept part PREFETCH_ROWS rows on
            row_span(part, a, b, cols, i + PREFETCH_ROWS, &lo, &hi)
            ahead = PREFETCH_ROWS * src_row + lo * w
            for t in range(min(PREFETCH_LINES, (hi - lo) * w // 64)):
                trilu_prefetch(s + ahead + 64 * t)
        row_span(part, a, b, cols, i, &lo, &hi)
        lo *= w                    # in bytes from here
        hi *= w
        if line != NULL:           # the span's first byte, src's byte lo
            s = line - lo
            line += hi - lo
        if not stream:
            if rest and lo > 0:
                fill_bytes(d, lo, f)
            if copy and hi > lo:
                memcpy(d + lo, s + lo, hi - lo)
            if rest and hi < n:
                fill_bytes(d + hi, n - hi, f)
        elif rest:
            trilu_stream_row(d, s, lo, hi, n, f.pattern)
        elif hi > lo:              # fresh zero pages: the kept part only
            trilu_stream_row(d + lo, s + lo, 0, hi - lo, hi - lo, f.pattern)
        s += src_row
        d += dst_row


# --- masks ------------------------------------------------------------------------

cdef inline void and_bytes(char *d, const char *s, const char *mask,
                           const char *fill, Py_ssize_t n) noexcept nogil:
    """d = s & mask | fill over n bytes (fill NULL: zeros): branchless, keeps
    NaN payloads and -0.0. Word by word here (SSE2 once vectorized), or with
    AVX2 or AVX-512 (_simd.h)."""
    cdef Py_ssize_t t, words = n // 8
    cdef uint64_t v, m, z
    if _vectors == AVX512:
        trilu_and_avx512(d, s, mask, fill, n)
        return
    if _vectors == AVX2:
        trilu_and_avx2(d, s, mask, fill, n)
        return
    if fill == NULL:
        for t in range(words):
            memcpy(&v, s + 8 * t, 8)
            memcpy(&m, mask + 8 * t, 8)
            v = v & m
            memcpy(d + 8 * t, &v, 8)
        for t in range(8 * words, n):
            d[t] = s[t] & mask[t]
        return
    for t in range(words):
        memcpy(&v, s + 8 * t, 8)
        memcpy(&m, mask + 8 * t, 8)
        memcpy(&z, fill + 8 * t, 8)
        v = (v & m) | z
        memcpy(d + 8 * t, &v, 8)
    for t in range(8 * words, n):
        d[t] = (s[t] & mask[t]) | fill[t]


cdef inline Py_ssize_t mask_at(const Job *job, Py_ssize_t i) noexcept nogil:
    """Where crossed row i's bytes start in a BAND_MASK mask."""
    cdef Py_ssize_t row = job.cols * job.width
    if i < job.edge[2]:
        return (i - job.edge[1]) * row
    return (job.edge[2] - job.edge[1] + i - job.edge[3]) * row


cdef void build_mask(const Job *job, char *mask) noexcept nogil:
    """The job's masks into `mask` (mask_bytes of it). The keep-mask: 0xFF over
    the bytes of kept elements, 0x00 elsewhere, for the crossed rows
    (BAND_MASK) or whole matrices `block` times (MATRICES); then
    the fill-mask, the fill where the keep-mask is 0x00 and 0x00 elsewhere
    (where the fill is not zeros)."""
    cdef Py_ssize_t i, at, lo, hi, w = job.width, row = job.cols * job.width
    cdef char *fill = mask + keep_bytes(job)
    cdef bint whole = job.method == MATRICES
    cdef int r
    for r in range(1, 4, 2):   # the crossed runs, or once every row
        for i in range(0 if whole else job.edge[r],
                       job.rows if whole else job.edge[r + 1]):
            at = i * row if whole else mask_at(job, i)
            row_span(CROSSED, job.a, job.b, job.cols, i, &lo, &hi)
            memset(mask + at, 0, row)
            memset(mask + at + lo * w, 0xFF, (hi - lo) * w)
            if job.fill.byte != 0:
                fill_bytes(fill + at, row, job.fill)
                memset(fill + at + lo * w, 0, (hi - lo) * w)
        if whole:
            break
    for i in range(1, job.block):
        memcpy(mask + i * job.matrix_bytes, mask, job.matrix_bytes)
        if job.fill.byte != 0:
            memcpy(fill + i * job.matrix_bytes, fill, job.matrix_bytes)


cdef struct MaskKey:           # what a job's masks depend on (build_mask)
    Method method
    Py_ssize_t rows, cols, a, b, width, block
    int byte                   # the fill's byte value, or -1: its element,
    char elem[16]              # of 16 bytes at most (else no key)


cdef const char *kept_masks(const Job *job) noexcept nogil:
    """The job's masks (build_mask, mask_bytes of them), from this thread's
    slot (_mask.h): built there unless its last job's were the same; NULL
    for a fill element wider than a key holds (the caller builds them)."""
    cdef MaskKey key
    cdef trilu_mask_slot *slot = trilu_mask_slot_mine()
    if job.fill.byte < 0 and job.width > 16:
        return NULL
    memset(&key, 0, sizeof(key))   # (padding too: keys compare as bytes)
    key.method = job.method
    key.rows, key.cols, key.a, key.b = job.rows, job.cols, job.a, job.b
    key.width, key.block, key.byte = job.width, job.block, job.fill.byte
    if job.fill.byte < 0:
        memcpy(key.elem, job.fill.elem, job.width)
    if memcmp(slot.key, &key, sizeof(key)) != 0:
        build_mask(job, slot.masks)
        memcpy(slot.key, &key, sizeof(key))
        slot.builds += 1
    return slot.masks


def _mask_builds():
    """How many times this thread built a job's masks into its slot."""
    return trilu_mask_slot_mine().builds


# --- masks from nothing (MASK) --------------------------------------------------------

cdef enum:
    # A mask's crossed rows whose band is this narrow are written as one fill
    # of their whole run, then the band over it: a fill call's fixed cost is
    # that of writing about this many bytes from cache. (Not for streamed
    # results, where each byte goes to memory.)
    MASK_OVER_BYTES = 1024


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
    """Rows [r0, r1) of a MASK job (C-ordered): a run of filled or kept rows
    is one fill of its value; crossed rows alternate keep and fill, a row's
    tail and the next row's head one fill, as they touch. A value left to
    zero pages (copy_kept or fill_rest off) is not written."""
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
