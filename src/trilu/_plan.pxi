# --- planning: spans, runs of rows, the batch, the method (included by _kernel.pyx) ---
#
# Row i of every matrix keeps the columns [lo(i), hi(i)) = [clamp(i + a),
# clamp(i + b + 1)), clamped to [0, cols), and fills the rest with one
# element's bytes: triu(k) is the band (a, b) = (k, cols), tril(k) is (-rows, k).
# Offsets are clamped to [-rows, cols], beyond which every one keeps the same,
# and a band that keeps nothing has b = a - 1. As i grows, lo and hi never
# fall, so the rows of a matrix are five runs: wholly filled, crossed by the
# band's edges, wholly kept, crossed, wholly filled (any of them empty).

cdef extern from "_mask.h":
    enum: TRILU_MASK_BYTES     # 65536: a thread's kept masks (_mask.h)


cdef enum:
    RUNS = 5
    # L1D of the targets: 32 KiB, 64 sets of 8 lines (ways); lines a
    # multiple of 2**s lines apart share 64 >> s sets, the rest evicted
    # (cores with 48 KiB in 12 ways hold more)
    L1_SETS = 64
    L1_WAYS = 8
    L1D_BYTES = L1_SETS * L1_WAYS * 64
    # A row shorter than this costs more in calls (a memset and a memcpy of
    # fixed cost each) than in bytes: its crossed rows are ANDed with a
    # keep-mask in one pass instead. The mask, kept between calls and reread
    # for every matrix, must stay in cache beside the rows it masks: a small
    # part of the smallest L2 of the targets (the slot that keeps it, _mask.h).
    MASK_ROW_BYTES = 512
    MASK_MAX_BYTES = TRILU_MASK_BYTES
    # Rows written in one loop of 64-byte stores (AVX-512: no call, no mask
    # read) cost less than the AND from three vectors a row on: below, the
    # loop's per-row cost (the edges' masks, its branches) outweighs the
    # keep-mask's extra load a store. From two vectors a row, they cost less
    # than a mask that L1D cannot hold beside the source and result of the
    # matrix it masks: reread for every matrix, it comes from L2 (two loads
    # from L2 a store, against the copy's one).
    VECTOR_ROW_BYTES = 192
    VECTOR_ROW_MIN_BYTES = 128
    # AVX2's rows of triu and tril, each ANDed with a window of a ramp (no
    # mask read beyond it), cost less than the keep-mask AND from eight
    # vectors a row on: below, the row's fixed cost (its window, the loop's
    # exit, the overlapping last vector) outweighs the mask's loads. From
    # VECTOR_ROW_MIN_BYTES, as AVX-512's, where the mask would come from L2.
    # Up to the ramp's 512 bytes; longer rows are a fill and a memcpy each.
    EDGE_ROW_BYTES = 256
    # A matrix this small is ANDed whole, a block of MASK_BLOCK_BYTES of
    # consecutive matrices per pass: its runs would cost three calls, where
    # one pass over it from L2 costs less.
    TINY_MATRIX_BYTES = 1024
    MASK_BLOCK_BYTES = 4096
    # The element walk (STRIDED, and an UNPACK's COLUMNS) reads a line of
    # src per column and finds it in cache again for the next rows while
    # the memory src's columns span (the matrix, or more for a sheared or
    # sliced one) fits the L2 (512 KiB to 2 MiB on the targets): tiles pay
    # off from this size.
    TILE_MIN_BYTES = 1 << 20
    # A mirrored UNPACK by register blocks (column_tile) reads its packed
    # lines across a block's row at a time, half a line or more of elements
    # of 2 bytes or more (a quarter of one of bytes, which go as before).
    # The rest of each line waits in cache for the next block down, which
    # the L2s of 2 threads hold up to this size: the blocks beat the tiled
    # walk there (the sweep's unpack_mirror and squareform_v classes).
    MIRROR_TILE_MAX_BYTES = 5 << 19
    # Elements wider than this are a quarter line or more each: the element
    # walk wastes little of each line it reads, and needs no tile.
    TILE_MAX_WIDTH = 8
    # An across_tile reads this many bytes of each source run and writes as
    # many of each destination row: several lines a page visited, so a
    # transposed walk pays a TLB miss per run, not per line ...
    ACROSS_RUN_BYTES = 512
    # ... within a tile that its buffer, on the stack, holds in L1D beside
    # the lines it is read from.
    ACROSS_TILE_BYTES = 32768
    ACROSS_MAX = 256           # its rows and columns at most (of 1 or 2 bytes)
    # The run of the column this many ahead is fetched while one is copied:
    # about a memory latency's worth of the runs' copies.
    ACROSS_AHEAD = 16
    # Results this big are written with streaming stores (_stream.h): with
    # the input they outgrow the last-level cache, where a normal store's
    # read of the line it writes doubles the traffic.
    STREAM_MIN_BYTES = 1 << 25
    LINE_BYTES = 64            # a cache line (x86-64, most arm64)
    # A source smaller than the L2 (512 KiB to 2 MiB on the targets) is read
    # from cache after its first call: its rows are not fetched ahead.
    PREFETCH_MIN_BYTES = 1 << 20
    MAX_BATCH_DIMS = 64        # NPY_MAXDIMS of numpy 2 (numpy 1 has 32)


cdef enum Method:              # how the crossed rows are written
    ROWS            # contiguous elements: fill + memcpy + fill per row
    STRIDED         # any strides: element by element
    TILED           # dst rows contiguous, src down its columns: by tiles
    BAND_MASK       # contiguous short rows: dst = src & keep | fill-mask
    MATRICES        # tiny matrices whole: ANDed, or (pack) through offsets
    COLUMNS         # (unpack) lines, or a mirror, across rows, in cache: by row groups
    SIDE_BY_SIDE    # (pack, unpack) a batch side by side: each element a run

cdef enum Packed:              # which side of the job is not matrices
    UNPACKED        # neither: matrices to matrices
    PACK            # dst: each matrix's kept elements, line after line
    UNPACK          # src: the same, into matrices
    MASK            # src: none; the kept elements get a second fill, `keep`

cdef enum Part:                # what a run of rows holds
    FILLED          # every element filled
    CROSSED         # a band's edge crosses each row
    KEPT            # every element kept


cdef struct Fill:              # what the rows' other elements get
    int byte                   # every byte this value (0: zeros), or -1
    const char *elem           # one element's bytes (where byte < 0)
    # the element repeated, pattern_bytes of it (a multiple of the width);
    # streaming stores read 32 bytes of it, a byte fill's too
    const char *pattern
    Py_ssize_t pattern_bytes


cdef struct Check:             # elements compared as numpy compares numbers
    # each element is numbers of `part` bytes (a complex number's two),
    # floats (IEEE's ==: NaN never equal, zeros of either sign equal) or not
    # (integers: equal bytes)
    Py_ssize_t part
    bint floats
    uint64_t mag               # a number's bits but its sign
    uint64_t inf               # above this (x & mag), a NaN


cdef struct Job:
    const char *src
    char *dst
    Py_ssize_t rows, cols, width
    Py_ssize_t a, b            # row i keeps j with a <= j - i <= b
    Py_ssize_t src_row, src_col, dst_row, dst_col
    bint copy_kept             # False in place: the kept part is already there
    bint fill_rest             # False into fresh zero pages
    # Only the band's elements may be touched: dst's others are not written
    # (mirror's halves), or src's are not read (band storage seen as
    # matrices, whose other elements lie outside it). No whole-row masks.
    bint band_only
    # PACK, UNPACK: the packed side's element stride is its _col, its batch
    # steps its _step. Its lines are the kept spans of the rows (columns False)
    # or of the columns (columns True), one after another: packed_line says
    # where each starts. An UNPACK with `mirror` also writes the band
    # (ma, mb) (the kept band's transpose, less the kept band) from the
    # packed lines read the other way, XOR `xor`.
    Packed packed
    bint columns
    bint mirror
    Py_ssize_t ma, mb
    const char *xor            # copied elements XOR this (conj), or NULL
    # A PACK of square matrices' strict upper triangle may also check them
    # symmetric with a zero diagonal (squareform), counting what is not: in
    # found[0], the unequal numbers of pairs (a NaN on the diagonal
    # included), in found[1], the nonzero diagonal elements; NULL: no check.
    const Check *check
    Py_ssize_t *found
    bint stream                # write with streaming stores (not in place)
    bint prefetch              # ROWS: fetch each row's kept head ahead
    bint vector                # ROWS in cache: crossed rows one vector loop each
    Method method
    # TILED: the walk's rows are src's runs, written across into dst's,
    # which run down the walk's columns (else dst's rows, src read across)
    bint across
    Fill fill
    # The runs of every matrix: run r is rows [edge[r], edge[r + 1]) of part
    # run_part(r).
    Py_ssize_t edge[RUNS + 1]
    # src rows laid out as dst's and contiguous: kept rows are one memcpy;
    # dst rows contiguous: filled rows are one fill
    bint bulk_src
    bint bulk_dst
    # batch dimensions, size-1 dims dropped and mergeable dims merged
    int ndim
    Py_ssize_t shape[MAX_BATCH_DIMS]
    Py_ssize_t src_step[MAX_BATCH_DIMS]
    Py_ssize_t dst_step[MAX_BATCH_DIMS]
    # BAND_MASK: the keep-mask of the crossed rows, run 1's then run 3's;
    # MATRICES: of `block`
    # matrices. fill_mask: the fill where not kept, 0 where kept (NULL for
    # zeros).
    const char *mask
    const char *fill_mask
    Py_ssize_t matrix_bytes, block
    bint flat                  # MATRICES: the whole batch is one contiguous run
    # MATRICES of a PACK or UNPACK job: each element's byte offset in its
    # matrix, the kept ones first in packed order, then the others
    # (build_offsets); sources: an UNPACK's kept elements' offsets in the
    # matrices it reads instead of packed vectors (a mirror's), or NULL
    const Py_ssize_t *offsets
    const Py_ssize_t *sources
    Fill keep                  # MASK: what the kept elements get
    # SIDE_BY_SIDE: a PACK's matrices, or an UNPACK's vectors or matrices,
    # lie side by side (one matrix and one vector of wide elements, width
    # the whole run's), `sides` of them, the other side's side_step bytes
    # apart; sides_read: the runs are src's (else an UNPACK's matrices)
    Py_ssize_t sides, side_step
    bint sides_read


cdef inline Py_ssize_t clip(Py_ssize_t v, Py_ssize_t lo,
                            Py_ssize_t hi) noexcept nogil:
    return min(max(v, lo), hi)


cdef inline Part run_part(int r) noexcept nogil:
    """Runs 0 and 4 are filled, 1 and 3 crossed, 2 kept."""
    return KEPT if r == 2 else (CROSSED if r & 1 else FILLED)


cdef inline void row_span(Part part, Py_ssize_t a, Py_ssize_t b, Py_ssize_t cols,
                          Py_ssize_t i, Py_ssize_t *lo,
                          Py_ssize_t *hi) noexcept nogil:
    """Columns [lo, hi) that row i of a run of this part keeps. Callers pass
    the job's fields as locals: the compiler cannot assume that memcpy and
    memset leave *job alone, and would reload them every row."""
    if part == CROSSED:
        lo[0] = clip(i + a, 0, cols)
        hi[0] = clip(i + b + 1, lo[0], cols)
    else:
        lo[0] = 0
        hi[0] = cols if part == KEPT else 0


cdef void runs_of(Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t a, Py_ssize_t b,
                  Py_ssize_t *edge) noexcept nogil:
    """The edges of the five runs: rows i < -b keep nothing (i + b + 1 <= 0),
    nor rows i >= cols - a; rows cols - b - 1 <= i < 1 - a keep every column."""
    edge[0] = 0
    edge[RUNS] = rows
    if b < a:                  # nothing kept: one filled run
        edge[1] = edge[2] = edge[3] = edge[4] = 0
        return
    edge[1] = clip(-b, 0, rows)
    edge[4] = clip(cols - a, edge[1], rows)
    edge[2] = clip(cols - b - 1, edge[1], edge[4])
    edge[3] = clip(1 - a, edge[2], edge[4])


cdef Py_ssize_t clamp_sum(Py_ssize_t c, Py_ssize_t r, Py_ssize_t cols) noexcept nogil:
    """The sum of clamp(i + c, 0, cols) over rows [0, r): 0 while i + c <= 0,
    cols from i + c >= cols, i + c between."""
    cdef Py_ssize_t m0 = clip(1 - c, 0, r)
    cdef Py_ssize_t m1 = clip(cols - c, m0, r)
    return (m1 - m0) * c + (m0 + m1 - 1) * (m1 - m0) // 2 + cols * (r - m1)


cdef Py_ssize_t kept_in(Py_ssize_t a, Py_ssize_t b, Py_ssize_t r,
                        Py_ssize_t cols) noexcept nogil:
    """How many elements rows [0, r) of a matrix keep: the sum of hi - lo."""
    if b < a:
        return 0
    return clamp_sum(b + 1, r, cols) - clamp_sum(a, r, cols)


cdef inline void packed_lines(const Job *job, Py_ssize_t *lines, Py_ssize_t *length,
                              Py_ssize_t *la, Py_ssize_t *lb) noexcept nogil:
    """The packed lines: how many, their length and their band (la, lb):
    the rows of the band (a, b), or the columns, which are the transpose's
    rows of the band (-b, -a)."""
    if job.columns:
        lines[0], length[0], la[0], lb[0] = job.cols, job.rows, -job.b, -job.a
    else:
        lines[0], length[0], la[0], lb[0] = job.rows, job.cols, job.a, job.b


cdef inline Py_ssize_t packed_line(const Job *job, Py_ssize_t at,
                                   Py_ssize_t step) noexcept nogil:
    """Where packed line `at`'s element p is, less p * step, in bytes
    (elements step bytes apart): a row's kept span of the band (a, b), or a
    column's, which is the transpose's row of the band (-b, -a)."""
    if job.columns:
        return (kept_in(-job.b, -job.a, at, job.rows)
                - clip(at - job.b, 0, job.rows)) * step
    return (kept_in(job.a, job.b, at, job.cols)
            - clip(at + job.a, 0, job.cols)) * step


cdef inline Py_ssize_t line_gap(Py_ssize_t c, Py_ssize_t la, Py_ssize_t lb,
                                Py_ssize_t length) noexcept nogil:
    """How far packed line c + 1's biased place (packed_line's) lies past line
    c's, in elements, lines of `length` in the band (la, lb) (packed_lines':
    line c holds [c + la, c + lb]): line c's end less line c + 1's start."""
    return (clip(c + lb + 1, clip(c + la, 0, length), length)
            - clip(c + 1 + la, 0, length))


cdef inline Py_ssize_t across_rows(Py_ssize_t width) noexcept nogil:
    """The rows of an across_tile: ACROSS_RUN_BYTES of each source run."""
    return max(8, min(ACROSS_MAX, ACROSS_RUN_BYTES // width))


cdef inline Py_ssize_t across_cols(Py_ssize_t width) noexcept nogil:
    """The columns of an across_tile: as many as its buffer holds."""
    return max(8, min(ACROSS_MAX, ACROSS_TILE_BYTES // (across_rows(width) * width)))


cdef inline Py_ssize_t crossed_rows(const Job *job) noexcept nogil:
    return job.edge[2] - job.edge[1] + job.edge[4] - job.edge[3]


cdef Py_ssize_t gcd(Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    while b:
        a, b = b, a % b
    return a


cdef void plan_batch(Job *job, int nd, const cnp.npy_intp *shape,
                     const cnp.npy_intp *sst,
                     const cnp.npy_intp *dst_strides) noexcept:
    """Fill the batch dims (the first nd of shape, with src's and dst's
    strides): drop size-1 dims, merge dims that walk as one."""
    cdef int d
    cdef Py_ssize_t n, ss, ds
    job.ndim = 0
    for d in range(nd):
        n = shape[d]
        ss = sst[d]
        ds = dst_strides[d]
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


cdef void plan_runs(Job *job) noexcept:
    """The five runs of rows. Where no row is crossed and the matrices are one
    kind throughout, consecutive ones whose rows continue one another merge
    into one, so a batch that is one run of memory is one memcpy, one fill, or
    nothing."""
    cdef bint kept
    cdef Py_ssize_t *e = job.edge
    runs_of(job.rows, job.cols, job.a, job.b, e)
    if crossed_rows(job) or not (e[2] == e[3] or e[3] - e[2] == job.rows):
        return
    kept = e[3] > e[2]         # every row kept (else every row filled)
    while (job.ndim > 0
           and job.src_step[job.ndim - 1] == job.rows * job.src_row
           and job.dst_step[job.ndim - 1] == job.rows * job.dst_row):
        job.rows *= job.shape[job.ndim - 1]
        job.ndim -= 1
    e[1] = e[2] = 0
    e[3] = e[4] = job.rows if kept else 0
    e[RUNS] = job.rows


cdef void transpose(Job *job) noexcept:
    """The walk along the other axis: (a, b) of x is (-b, -a) of x.T."""
    job.rows, job.cols = job.cols, job.rows
    job.src_row, job.src_col = job.src_col, job.src_row
    job.dst_row, job.dst_col = job.dst_col, job.dst_row
    job.a, job.b = -job.b, -job.a


cdef bint tiled(const Job *job) noexcept:
    """The walk as it is reads src across by tiles (TILED): dst's rows are
    contiguous, src runs down its columns over more than the L2 holds, of
    elements narrow enough to waste most of each line read one at a time."""
    return (job.dst_col == job.width and job.rows > 1
            and job.width <= TILE_MAX_WIDTH
            and job.cols * magnitude(job.src_col) >= TILE_MIN_BYTES
            and magnitude(job.src_row) < magnitude(job.src_col))


cdef inline Py_ssize_t l1_lines(Py_ssize_t stride) noexcept nogil:
    """How many lines `stride` bytes apart L1D holds at once."""
    cdef Py_ssize_t sets = L1_SETS, apart = stride // LINE_BYTES
    if stride % LINE_BYTES == 0:
        while sets > 1 and apart % 2 == 0:
            sets //= 2
            apart //= 2
    return sets * L1_WAYS


cdef inline bint grouped_rows(const Job *job) noexcept nogil:
    """The element walk (STRIDED) reads src down its columns into dst's
    contiguous rows, elements of a fused width, copied as they are, and
    either a row's columns are more lines than L1D holds at their stride
    (a power-of-two one maps them to a few sets), so that the next row
    would read each again from L2, or the elements are 1 to 8 bytes and
    the CPU has AVX2, where a block of columns moves in registers, a load
    and a store for a block's row (transpose_columns): rows go a group at
    a time (transposed_rows), each line read once for all of them."""
    return (job.copy_kept and job.xor == NULL and job.src_row == job.width
            and job.dst_col == job.width and magnitude(job.src_col) >= LINE_BYTES
            and (job.width & (job.width - 1)) == 0 and job.width <= 16
            and (job.cols > l1_lines(magnitude(job.src_col))
                 or (_vectors != PORTABLE and job.width <= 8)))


cdef inline Py_ssize_t vector_row_bytes() noexcept nogil:
    """The shortest crossed rows the level's row loop writes wherever a
    keep-mask could (masked_rows)."""
    return EDGE_ROW_BYTES if _vectors == AVX2 else VECTOR_ROW_BYTES


cdef inline bint masked_rows(Py_ssize_t row, bint one_edge, Py_ssize_t keep,
                             Py_ssize_t matrix_bytes) noexcept nogil:
    """Whether crossed rows of `row` bytes (of one edge each or not), which
    the row loop could write, are ANDed with their keep-mask (`keep` bytes,
    the fill-mask's too) of matrices of matrix_bytes instead: under
    vector_row_bytes, where the rows are short for the loop, have two edges
    (two masked stores), or the mask stays in L1D beside the matrix."""
    return row < vector_row_bytes() and (
        row < VECTOR_ROW_MIN_BYTES or not one_edge
        or keep + 2 * matrix_bytes <= L1D_BYTES)


cdef inline bint row_loop(Py_ssize_t row, bint one_edge,
                          bint band_only) noexcept nogil:
    """Whether the level's row loop (_simd.h) can write crossed rows of `row`
    bytes, of a band whose crossed rows all keep their end or all their
    start (one_edge) or not, of a source whose elements outside the band
    may not be read (band_only) or may: AVX-512's any, AVX2's triu's and
    tril's from VECTOR_ROW_MIN_BYTES (where masked_rows leaves them to it)
    to its ramp's length, which reads src's rows whole."""
    if _vectors == AVX512:
        return True
    return (_vectors == AVX2 and one_edge and not band_only
            and VECTOR_ROW_MIN_BYTES <= row <= TRILU_RAMP)


cdef Py_ssize_t plan(Job *job, cnp.ndarray src, const cnp.npy_intp *dst_strides,
                     Py_ssize_t a, Py_ssize_t b) noexcept:
    """Fill the job for src -> dst of these strides (src non-empty; the band
    clamped, the fill set): the walk, the runs, the method; return the number
    of matrices."""
    cdef int d, nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t nb = 1, row, lines, keep
    cdef bint one_edge
    cdef bint masked = job.fill.byte != 0     # a fill-mask beside the keep-mask
    job.src = <const char *>cnp.PyArray_DATA(src)
    job.dst = NULL             # (set once dst exists)
    job.width = cnp.PyArray_ITEMSIZE(src)
    job.rows = cnp.PyArray_DIMS(src)[nd - 2]
    job.cols = cnp.PyArray_DIMS(src)[nd - 1]
    job.src_row = cnp.PyArray_STRIDES(src)[nd - 2]
    job.src_col = cnp.PyArray_STRIDES(src)[nd - 1]
    job.dst_row = dst_strides[nd - 2]
    job.dst_col = dst_strides[nd - 1]
    job.a = a
    job.b = b
    job.mask = job.fill_mask = NULL
    # The stride of a length-1 axis is never used: make it the contiguous one.
    if job.cols == 1:
        job.src_col = job.dst_col = job.width
    if job.rows == 1:
        job.src_row = job.cols * job.src_col
        job.dst_row = job.cols * job.dst_col
    # Walk along whichever axis is closer to contiguous in dst (then in src):
    # a Fortran-order matrix needs no copy.
    if (magnitude(job.dst_col) > magnitude(job.dst_row)
            or (magnitude(job.dst_col) == magnitude(job.dst_row)
                and magnitude(job.src_col) > magnitude(job.src_row))):
        transpose(job)
    # A transposed walk of fewer rows than a strip, which no threads could
    # share and each of whose tiles reads a sliver of src's lines, with none
    # to fill: src's runs walked instead, their strips written across.
    job.across = (tiled(job) and job.rows < across_rows(job.width)
                  and not job.fill_rest
                  and not (job.xor != NULL and job.src_col == job.width))
    if job.across:
        transpose(job)

    plan_batch(job, nd - 2, cnp.PyArray_DIMS(src), cnp.PyArray_STRIDES(src),
               dst_strides)
    plan_runs(job)
    for d in range(job.ndim):
        nb *= job.shape[d]

    row = job.cols * job.width
    job.matrix_bytes = job.rows * row
    job.bulk_dst = job.dst_col == job.width and magnitude(job.dst_row) == row
    job.bulk_src = (job.bulk_dst and job.src_col == job.width
                    and job.src_row == job.dst_row)
    job.stream = (TRILU_STREAM and job.copy_kept
                  and (job.fill.byte >= 0 or 16 % job.width == 0)
                  and cnp.PyArray_NBYTES(src) >= STREAM_MIN_BYTES)
    job.prefetch = cnp.PyArray_NBYTES(src) >= PREFETCH_MIN_BYTES
    job.method = STRIDED
    job.vector = False
    if job.across:
        job.method = TILED
    elif job.xor != NULL and job.src_col == job.width:
        pass                   # each element changed: never a memcpy or a mask
    elif tiled(job):
        job.method = TILED
    elif job.src_col == job.width and job.dst_col == job.width:
        job.method = ROWS
        # crossed rows, each one loop of a 16-byte fill seed (_simd.h), in
        # cache: a source beyond the L2 keeps memcpy's and the prefetch's ways
        # with memory, a result streamed its streaming stores
        one_edge = job.b >= job.cols - 1 or job.a <= 1 - job.rows
        job.vector = (row_loop(row, one_edge, job.band_only)
                      and job.copy_kept and job.fill_rest
                      and not job.prefetch and not job.stream
                      and (job.fill.byte >= 0 or 16 % job.width == 0))
        keep = crossed_rows(job) * row * (1 + masked)     # its masks' bytes
        if (keep and job.src_row == row and job.dst_row == row
                and row < MASK_ROW_BYTES and not job.band_only):
            if nb >= 2 and job.matrix_bytes <= TINY_MATRIX_BYTES:
                job.method = MATRICES
            elif ((not job.vector or masked_rows(row, one_edge, keep, job.matrix_bytes))
                  and keep <= MASK_MAX_BYTES):
                job.method = BAND_MASK

    job.flat = False
    job.block = 1
    if job.method == MATRICES:
        job.flat = (
            job.ndim == 1
            and job.src_step[0] == job.matrix_bytes
            and job.dst_step[0] == job.matrix_bytes)
        if job.flat:
            # A block of whole cache lines where the mask stays small, so
            # each pass starts as aligned as the first (streaming wants that).
            job.block = MASK_BLOCK_BYTES // job.matrix_bytes
            lines = 64 // gcd(job.matrix_bytes, 64)
            if job.block >= lines:
                job.block = job.block // lines * lines
            job.block = min(nb, max(1, job.block))
    # Not in place, where only the filled part is written and normal stores
    # keep it in cache for what reads it next; nor strided rows, whose stores
    # are not whole lines; nor tiled rows, unless their tiles may write every
    # element (not the band alone) and all rows start alike in a line, in
    # whole elements: tiled_rows then aligns the tiles to the lines (a line
    # streamed in two parts at two times is merged in memory, slower than
    # normal stores).
    job.stream = (job.stream and job.method != STRIDED
                  and (job.method != TILED or (
                      not job.band_only and LINE_BYTES % job.width == 0
                      and job.dst_row % LINE_BYTES == 0))
                  and (job.method != MATRICES
                       or (job.flat and job.block * job.matrix_bytes % 64 == 0)))
    job.vector = job.vector and job.method == ROWS   # (not a mask's)
    return nb


cdef Py_ssize_t keep_bytes(const Job *job) noexcept nogil:
    """The size of the job's keep-mask: 0 where it needs none."""
    if job.method == MATRICES:
        return job.block * job.matrix_bytes
    if job.method == BAND_MASK:
        return crossed_rows(job) * job.cols * job.width
    return 0


cdef Py_ssize_t mask_bytes(const Job *job) noexcept nogil:
    """The size of the job's masks: the keep-mask, then the fill-mask where the
    fill is not zeros."""
    return keep_bytes(job) * (1 if job.fill.byte == 0 else 2)
