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
    """
    void trilu_prefetch(const void *p) nogil


cdef extern from "_stream.h" nogil:
    enum: TRILU_STREAM         # 0 where streaming stores are not built
    void trilu_stream_row(char *d, const char *s, size_t lo, size_t hi,
                          size_t n, const char *fill)
    void trilu_stream_and(char *d, const char *s, const char *mask,
                          const char *fill, size_t n)
    void trilu_stream_fence()


cdef extern from "_mask.h" nogil:
    void trilu_and_avx2(char *d, const char *s, const char *mask,
                        const char *fill, size_t n)
    int trilu_avx2_usable()    # 0 where the AVX2 loop is not built


# The keep-mask AND runs 32 bytes at a time where the CPU has AVX2, unless the
# environment says TRILU_AVX2=0 at import (which tests the portable loop).
cdef bint _and_avx2 = (trilu_avx2_usable()
                       and os.environ.get("TRILU_AVX2", "").strip() != "0")


# Whether large results are written with streaming stores: built where SSE2 is
STREAMING = bool(TRILU_STREAM)


def _mask_loop():
    """Which loop ANDs the keep-mask: "avx2" or "portable"."""
    return "avx2" if _and_avx2 else "portable"


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
    # Contiguous rows prefetch the head of the kept part this many rows ahead,
    # this many cache lines: each row's copy starts a new stream, which the
    # hardware prefetcher only picks up after a few misses.
    PREFETCH_ROWS = 2
    PREFETCH_LINES = 8
    # A TILED tile is a square of at most this many bytes, gathered in a
    # buffer on the stack that stays in L1D (half the smallest of the
    # targets) beside the lines it is read from and written to.
    TILE_BYTES = 16384
    # Elements this wide fill a line of dst in 8 columns or fewer, so a tile
    # of 8 rows, one line each, fits an 8-way L1D set even where the rows'
    # stride is a power of two: it is written in place, without the buffer.
    TILE_DIRECT_WIDTH = 8
    TILE_DIRECT_ROWS = 8
    # ... and a block of this many columns at a time, down all the rows of a
    # grain: at a large row stride each column's source is a page of its
    # own, and the block's pages must stay within the L1 DTLB (64 entries)
    # beside the destination's, or each element read is a page walk.
    TILE_DIRECT_COLS = 32
    # Each column's source line is fetched this many columns ahead: about a
    # memory latency's worth of the columns' copies.
    TILE_PREFETCH_COLS = 8
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


cdef inline Py_ssize_t tile_side(Py_ssize_t width) noexcept nogil:
    """The rows and columns of a TILED tile: a square of TILE_BYTES."""
    cdef Py_ssize_t side = 1
    while 4 * side * side * width <= TILE_BYTES:
        side *= 2
    return side


cdef inline void tile_head(const Job *job, char *d, Py_ssize_t b0, Py_ssize_t b1,
                           Part part, Py_ssize_t *first,
                           Py_ssize_t *last) noexcept nogil:
    """Rows [b0, b1) of a tile, d the first's: each row's filled parts are one
    fill each (none into zero pages); [first, last) the columns any row keeps."""
    cdef Py_ssize_t i, lo, hi, w = job.width, cols = job.cols
    first[0] = cols
    last[0] = 0
    for i in range(b0, b1):
        row_span(part, job.a, job.b, cols, i, &lo, &hi)
        if job.fill_rest:
            if lo > 0:
                fill_bytes(d + (i - b0) * job.dst_row, lo * w, job.fill)
            if hi < cols:
                fill_bytes(d + (i - b0) * job.dst_row + hi * w, (cols - hi) * w,
                           job.fill)
        if hi > lo:
            first[0] = min(first[0], lo)
            last[0] = max(last[0], hi)


cdef inline void column_rows(const Job *job, Part part, Py_ssize_t j, Py_ssize_t b0,
                             Py_ssize_t b1, Py_ssize_t *top,
                             Py_ssize_t *bottom) noexcept nogil:
    """The rows [top, bottom) of [b0, b1) that keep column j: those with
    j - b <= i <= j - a, clamped: two bounds, no test per element."""
    top[0] = b0
    bottom[0] = b1
    if part == CROSSED:
        top[0] = clip(j - job.b, b0, b1)
        bottom[0] = clip(j - job.a + 1, top[0], b1)


cdef void tiled_rows(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                     Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix with contiguous dst rows whose src runs down
    its columns (a transposed read), a tile of rows at a time: the filled
    parts first (tile_head), then the kept parts a column at a time, so each
    column reads one run of src. Elements of TILE_DIRECT_WIDTH bytes or more
    go straight to dst, TILE_DIRECT_ROWS rows at a time; narrower ones need
    more rows per run, whose lines would evict one another in cache at a
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
    cdef Py_ssize_t first_all = job.cols, last_all = 0
    if direct:
        # the fills of every strip of rows, then the kept parts a block of
        # columns at a time, strip by strip
        b0 = r0
        while b0 < r1:
            b1 = min(b0 + side, r1)
            tile_head(job, job.dst + do + b0 * dr, b0, b1, part, &first, &last)
            first_all = min(first_all, first)
            last_all = max(last_all, last)
            b0 = b1
        c0 = first_all
        while c0 < last_all:
            c1 = min(c0 + TILE_DIRECT_COLS, last_all)
            b0 = r0
            while b0 < r1:
                b1 = min(b0 + side, r1)
                s = job.src + so + b0 * sr
                d = job.dst + do + b0 * dr
                for j in range(c0, c1):
                    # the source line of a column a few ahead: lines a row
                    # stride apart are nothing a hardware prefetcher follows
                    trilu_prefetch(s + (j + TILE_PREFETCH_COLS) * ss)
                    column_rows(job, part, j, b0, b1, &top, &bottom)
                    if job.xor != NULL:
                        copy_xor(tag, d + (top - b0) * dr + j * w, dr,
                                 s + (top - b0) * sr + j * ss, sr, bottom - top, w,
                                 job.xor)
                        continue
                    for i in range(top - b0, bottom - b0):
                        if elem_t is any_width:
                            memcpy(d + i * dr + j * w, s + i * sr + j * ss, w)
                        else:
                            memcpy(&v, s + i * sr + j * ss, sizeof(elem_t))
                            memcpy(d + i * dr + j * sizeof(elem_t), &v,
                                   sizeof(elem_t))
                b0 = b1
            c0 = c1
        return
    b0 = r0
    while b0 < r1:
        b1 = min(b0 + side, r1)
        s = job.src + so + b0 * sr
        d = job.dst + do + b0 * dr
        tile_head(job, d, b0, b1, part, &first, &last)
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
                row_span(part, job.a, job.b, job.cols, i, &lo, &hi)
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
    """Rows [r0, r1) of a matrix, elements contiguous: a fill, a memcpy and a
    fill each, in address order; for large results, one pass of streaming
    stores each (_stream.h)."""
    cdef Py_ssize_t i, lo, hi, ahead, t, rows = job.rows, w = job.width
    cdef Py_ssize_t cols = job.cols, a = job.a, b = job.b, n = job.cols * w
    cdef Py_ssize_t src_row = job.src_row, dst_row = job.dst_row
    cdef bint copy = job.copy_kept, rest = job.fill_rest, stream = job.stream
    cdef Fill f = job.fill
    cdef const char *s = job.src + so + r0 * src_row
    cdef char *d = job.dst + do + r0 * dst_row
    for i in range(r0, r1):
        if copy and i + PREFETCH_ROWS < rows:
            # the head of the kept part PREFETCH_ROWS rows on
            row_span(part, a, b, cols, i + PREFETCH_ROWS, &lo, &hi)
            ahead = PREFETCH_ROWS * src_row + lo * w
            for t in range(min(PREFETCH_LINES, (hi - lo) * w // 64)):
                trilu_prefetch(s + ahead + 64 * t)
        row_span(part, a, b, cols, i, &lo, &hi)
        lo *= w                    # in bytes from here
        hi *= w
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


# --- masks ------------------------------------------------------------------------

cdef inline void and_bytes(char *d, const char *s, const char *mask,
                           const char *fill, Py_ssize_t n) noexcept nogil:
    """d = s & mask | fill over n bytes (fill NULL: zeros): branchless, keeps
    NaN payloads and -0.0. Word by word here (SSE2 once vectorized), or with
    AVX2 (_mask.h)."""
    cdef Py_ssize_t t, words = n // 8
    cdef uint64_t v, m, z
    if _and_avx2:
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


cdef void crossed(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                  Py_ssize_t r1) noexcept nogil:
    """Rows [r0, r1) of a matrix's crossed runs."""
    cdef Py_ssize_t row = job.cols * job.width
    cdef Py_ssize_t at = mask_at(job, r0)
    cdef const char *fill = NULL
    if job.method == ROWS:     # (inlined here with the part known)
        contiguous_rows(job, so, do, r0, r1, CROSSED)
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
                if job.packed == PACK or job.packed == UNPACK:
                    packed_rows(job, so, do, lo, hi, part)
                elif job.packed != UNPACKED:   # MASK, TO_BANDED, FROM_BANDED
                    banded_rows(job, so, do, lo, hi, part)
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
        packed_matrices(c.job, c.start, c.stop)
    elif c.job.method == MATRICES:
        matrices_chunk(c)
    else:
        runs_chunk(c)
