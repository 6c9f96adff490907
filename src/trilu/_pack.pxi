# --- packing: each matrix's kept elements, line after line, to and from a vector ----
# (included by _kernel.pyx, after _write.pxi; _work.pxi's chunks call its writers)
#
# The packed lines are the kept spans of the rows (numpy's order), or of the
# columns (LAPACK's): line l starts at packed_line(l), so any line's place is
# known at once, threads split the rows of the batch as for a band, and a
# run of whole rows whose two sides are contiguous is one memcpy. The walk's
# rows are the packed lines for PACK (its writes) and the matrices' axis
# closer to contiguous for UNPACK (its writes): where the packed lines (or
# PACK's matrix) run the other way, or an UNPACK's mirrored band does, the
# TILED walk reads them across by tiles, or in cache an UNPACK's row groups
# (COLUMNS; by square blocks on AVX-512). Small matrices of short rows go
# whole instead (MATRICES), through a table of their elements' offsets.

cdef enum:
    # Matrices of short rows (under SPAN_CALL_BYTES, copied element by element
    # anyway) and of at most this many elements (a mirror's kept ones
    # counted thrice) are walked through a table of their elements' offsets
    # (MATRICES): no run, span or call a row. The table, 8 bytes an element,
    # lives on the stack, within L1D.
    OFFSETS_MAX = 2048
    # A SIDE_BY_SIDE group: this many elements' runs, revisited once a
    # register block of the other side's spans (64 elements of 4 bytes: 4
    # cache lines each), so they stay in L1D for runs up to 512 bytes.
    SIDE_RUNS = 64


cdef inline bint unpacked_along(const Job *job) noexcept nogil:
    """Whether an UNPACK's rows, contiguous, get their spans from contiguous
    lines: a band's rows (contiguous_rows), src another cursor."""
    return (job.packed == UNPACK and job.dst_col == job.width
            and job.src_col == job.width and job.xor == NULL)


cdef inline void edge_elem(elem_t *tag, char *d, const char *s, Py_ssize_t w,
                           const char *xor) noexcept nogil:
    """One element from s to d, XOR `xor` where given."""
    if xor != NULL:
        copy_xor(tag, d, 0, s, 0, 1, w, xor)
    else:
        copy_elem(tag, d, s, w)


cdef inline bint whole_groups(const Job *job) noexcept nogil:
    """Whether COLUMNS may write its groups' rows whole, the fill with the
    lines (over what they read past the spans): without a mirror, the fill
    written, both sides contiguous."""
    return (job.method == COLUMNS and not job.mirror and job.fill_rest
            and job.src_col == job.width and job.dst_col == job.width)


cdef inline bint blocked_columns(const Job *job) noexcept nogil:
    """Whether column_rows moves every line of its groups by blocks
    (blocked_group), none element by element: whole_groups, blocks of 8
    elements or more (a 4x4 block of 8-byte ones saves too little over the
    element walk to pay for reading and filling past the spans)."""
    return whole_groups(job) and block_columns(job.width) >= 8


cdef void packed_extent(const Job *job, const char **lo,
                        const char **hi) noexcept nogil:
    """The bytes an UNPACK's packed vectors span, [lo, hi), their lines'
    elements contiguous."""
    cdef int d
    cdef Py_ssize_t step, lines, length, la, lb
    packed_lines(job, &lines, &length, &la, &lb)
    lo[0] = job.src
    hi[0] = job.src + kept_in(la, lb, lines, length) * job.width
    for d in range(job.ndim):
        step = job.src_step[d] * (job.shape[d] - 1)
        if step < 0:
            lo[0] += step
        else:
            hi[0] += step


cdef bint blocked_group(elem_t *tag, const Job *job, char *d, const char *src,
                        Py_ssize_t i, Py_ssize_t n, Py_ssize_t first, Py_ssize_t hi,
                        Py_ssize_t block, const char *src_lo,
                        const char *src_hi) noexcept nogil:
    """column_rows' group of rows [i, i + n) at d: the columns [first, hi)
    by blocks (transpose_block), the last moved left to end at cols (its
    lines the last block's and the next ones), every line read down all n
    rows, past its span (elements the rows' fill then overwrites); False,
    nothing written, where n is no multiple of `block`, the rows are
    shorter than a block, or the reads would leave src's vectors, [src_lo,
    src_hi) (packed_extent)."""
    cdef Py_ssize_t g, j, shared, w = job.width, step = job.src_col
    cdef Py_ssize_t cols = job.cols, lines, length, la, lb
    # the columns the blocks cover: [j, last)
    cdef Py_ssize_t last = min(cols, first + (hi - first + block - 1) // block * block)
    cdef const char *line
    cdef const char *runs[16]
    if n % block or cols < block:
        return False
    packed_lines(job, &lines, &length, &la, &lb)
    j = min(first, cols - block)
    line = src + packed_line(job, j, step) + i * step
    if line < src_lo or (src + packed_line(job, last - 1, step) + (i + n) * step
                         > src_hi):
        return False
    g = 0
    while j < hi:
        for g in range(g, block):
            runs[g] = line
            line += line_gap(j + g, la, lb, length) * step
        transpose_block(tag, d + j * w, job.dst_row, runs, n)
        j += block
        g = 0
        if hi > j > cols - block:      # the last block, moved left
            shared = j - (cols - block)    # (its first lines, this one's last)
            for g in range(shared):
                runs[g] = runs[g + block - shared]
            g = shared
            j = cols - block
    return True


cdef inline bint column_tiles(const Job *job, Py_ssize_t r0,
                              Py_ssize_t r1) noexcept nogil:
    """Whether column_rows' rows [r0, r1) go as tiles of square blocks
    (column_tile): AVX-512, a block's rows and columns at least, and
    whole_groups, or a mirror (both sides contiguous) not conjugated.
    (AVX2's pairs of 4x4 blocks lost to column_rows' 4x4 blocks and
    memsets: unpack(order=F) of 8x100x100 int64 25 -> 28 us.)"""
    cdef Py_ssize_t n = tile_lanes(job.width)
    return (n and _vectors == AVX512 and job.cols >= n and r1 - r0 >= n and (
        whole_groups(job) or (job.method == COLUMNS and mirror_tiles(job))))


cdef inline bint mirror_tiles(const Job *job) noexcept nogil:
    """Whether a mirror in cache goes by column_tile: AVX-512, not
    conjugated, both sides contiguous."""
    return (tile_lanes(job.width) and _vectors == AVX512 and job.mirror
            and job.xor == NULL and job.src_col == job.width
            and job.dst_col == job.width)


cdef inline Py_ssize_t mirror_tiled_bytes(const Job *job) noexcept nogil:
    """The size from which a mirrored UNPACK goes TILED: where column_tile
    applies to elements of 2 bytes or more, MIRROR_TILE_MAX_BYTES; else
    TILE_MIN_BYTES, as the element walk's."""
    if not mirror_tiles(job) or job.width == 1:
        return TILE_MIN_BYTES
    return MIRROR_TILE_MAX_BYTES


cdef void along_rows(elem_t *tag, const Job *job, const char *src, char *dst,
                     Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    """A mirror's rows [r0, r1) (of the matrix at dst, its packed lines at
    src) but the band read across: the other band along each row's own
    line, the fill elsewhere; where each span is its whole line, the lines
    one after the other, in one vector loop a row (trilu_along_rows)."""
    cdef Py_ssize_t i, lo, hi, xlo, xhi, count, length, la, lb
    cdef Py_ssize_t w = job.width, cols = job.cols, step = job.src_col
    cdef bint mirrored_across = not job.columns
    # the band read across, and the other one, read along
    cdef Py_ssize_t a = job.ma if mirrored_across else job.a
    cdef Py_ssize_t b = job.mb if mirrored_across else job.b
    cdef Py_ssize_t aa = job.a if mirrored_across else job.ma
    cdef Py_ssize_t ab = job.b if mirrored_across else job.mb
    cdef const char *line = src + packed_line(job, r0, step)
    packed_lines(job, &count, &length, &la, &lb)
    if aa == la and ab == lb:  # (from row r0's span's first element)
        trilu_along_rows_avx512(dst + r0 * job.dst_row,
                                line + clip(r0 + aa, 0, cols) * w, job.dst_row,
                                r0, r1, aa, ab, a, b, cols, w, job.fill.pattern)
        return
    for i in range(r0, r1):    # (spans a part of their lines)
        row_span(CROSSED, aa, ab, cols, i, &lo, &hi)
        row_span(CROSSED, a, b, cols, i, &xlo, &xhi)
        unpacked_row(tag, job, dst + i * job.dst_row, line, lo, hi, NULL, xlo, xhi)
        line += line_gap(i, la, lb, length) * step


cdef void column_tile(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                      Py_ssize_t r0, Py_ssize_t r1) noexcept nogil:
    """column_rows' rows [r0, r1) where column_tiles: up to 512 lines at a
    time (their places found once), n rows of them at a time (tile, n x n
    blocks: in registers, each line read under masks inside the band, the
    fill in the other lanes, a block's row one store; no fill pass, no
    element walk at the band's edges), the last n columns and the last n
    rows moved back to end at cols and at r1 (some written twice, alike).
    A mirror's rows are first written along their own lines but the band
    read across (along_rows), then the tiles write that band (column_rows'),
    nothing outside it (under masks at its edge)."""
    cdef Py_ssize_t w = job.width, n = tile_lanes(w), step = job.src_col
    cdef Py_ssize_t g, c, c1, i, j = 0, cols = job.cols, count, length, la, lb
    cdef bint mirrored_across = job.mirror and not job.columns
    # the band read across
    cdef Py_ssize_t a = job.ma if mirrored_across else job.a
    cdef Py_ssize_t b = job.mb if mirrored_across else job.b
    cdef char *drow[16]
    # up to 512 lines' places found once (4 KiB of stack), the rows then
    # a group at a time across them: each group's lines read while in L1D
    cdef const char *lines[512]
    cdef const char *src = job.src + so
    cdef const char *line = src + packed_line(job, 0, step)  # line j's p: + p * w
    packed_lines(job, &count, &length, &la, &lb)
    if job.mirror:
        along_rows(tag, job, src, job.dst + do, r0, r1)
    while j < cols:
        c1 = min(j + 512, cols - cols % n)   # whole blocks
        if c1 <= j:            # the last block, moved back
            j = cols - n
            c1 = cols
            line = src + packed_line(job, j, step)
        for c in range(j, c1):
            lines[c - j] = line
            line += line_gap(c, la, lb, length) * step
        i = r0
        while i < r1:
            i = min(i, r1 - n)
            for g in range(n):
                drow[g] = job.dst + do + (i + g) * job.dst_row
            tile(w, drow, lines, i, i + n, j, c1, a, b,
                 NULL if job.mirror else job.fill.pattern, False)
            i += n
        j = c1


cdef void column_rows(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                      Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of an UNPACK in cache (COLUMNS) whose lines, or whose
    mirrored band's lines, run across its rows: transposed_rows' walk, a
    group of rows at a time, each line's run of the group read once, the
    line's place found from the last one's; where all of the group's rows
    keep them, lines a block at a time (transpose_block), and without a
    mirror, where the fill is written, every line so (blocked_group). The
    band read across is the kept one where the lines are columns, else the
    mirrored one, whose lines are the kept rows (the columns of the kept
    band's transpose), conjugated where job.xor says; a mirrored job's rows
    read their other band along their own line (unpacked_row). Each row's
    fill outside its spans."""
    cdef Py_ssize_t g, j, k, n, done, hi, top, bottom, first, lo, up
    cdef Py_ssize_t lines, length, la, lb
    cdef Py_ssize_t group = min(16, LINE_BYTES // job.width)
    cdef Py_ssize_t w = job.width, cols = job.cols
    cdef Py_ssize_t step = job.src_col
    cdef Py_ssize_t ds = job.dst_col, dst_row = job.dst_row
    cdef bint rest = job.fill_rest, mirror = job.mirror
    cdef bint mirrored_across = mirror and not job.columns
    # the band read across (each row's span)
    cdef Py_ssize_t a = job.ma if mirrored_across else job.a
    cdef Py_ssize_t b = job.mb if mirrored_across else job.b
    cdef const char *xor = job.xor if mirrored_across else NULL
    cdef Py_ssize_t block = transpose_columns(tag)
    cdef bint blocks = block and step == w and ds == w and xor == NULL
    cdef bint whole = blocked_columns(job)
    cdef const char *src_lo = NULL
    cdef const char *src_hi = NULL
    cdef Fill f = job.fill
    cdef const char *src = job.src + so
    cdef const char *line
    cdef const char *runs[16]
    cdef const char *edges[32]     # the lines of the group's edge columns
    cdef char *d
    cdef Py_ssize_t los[16]
    cdef Py_ssize_t his[16]
    cdef Py_ssize_t i = r0
    packed_lines(job, &lines, &length, &la, &lb)
    if whole:
        packed_extent(job, &src_lo, &src_hi)
    while i < r1:
        if whole and r1 - i < group <= r1 - r0:
            i = r1 - group     # the last group whole: its first rows again
        n = min(group, r1 - i)
        d = job.dst + do + i * dst_row
        first, bottom, top, hi = cols, cols, 0, 0
        for g in range(n):
            row_span(part, a, b, cols, i + g, &los[g], &his[g])
            if mirror:     # the other band along, the fill outside both
                if mirrored_across:
                    row_span(part, job.a, job.b, cols, i + g, &lo, &up)
                else:
                    row_span(part, job.ma, job.mb, cols, i + g, &lo, &up)
                unpacked_row(tag, job, d + g * dst_row,
                             src + packed_line(job, i + g, step), lo, up,
                             NULL if mirrored_across else job.xor, los[g], his[g])
            elif rest and not whole:
                fill_run(tag, d + g * dst_row, ds, w, los[g], f)
                fill_run(tag, d + g * dst_row + his[g] * ds, ds, w,
                         cols - his[g], f)
            if his[g] > los[g]:
                first = min(first, los[g])
                hi = max(hi, his[g])
            top = max(top, los[g])         # the columns every row keeps
            bottom = min(bottom, his[g])
        bottom = max(top, bottom)
        if first < hi and not (whole and blocked_group(
                tag, job, d, src, i, n, first, hi, block, src_lo, src_hi)):
            # line j's element p at line + p * step: packed_line's, then
            # the next line's from this one's end
            line = src + packed_line(job, first, step) + i * step
            j = first
            while j < hi:
                if blocks and top <= j and j + block <= bottom:
                    for g in range(block):
                        runs[g] = line
                        line += line_gap(j + g, la, lb, length) * step
                    done = transpose_block(tag, d + j * w, dst_row, runs, n)
                    for g in range(done, n):   # (the rows under the blocks')
                        for k in range(block):
                            copy_elem(tag, d + g * dst_row + (j + k) * w,
                                      runs[k] + g * w, w)
                    j += block
                    continue
                if j < top or j >= bottom:
                    # an edge's line (under 16 columns each), for the rows'
                    # spans below
                    edges[j - first if j < top else 16 + j - bottom] = line
                elif xor != NULL:
                    copy_xor(tag, d + j * ds, dst_row, line, step, n, w, xor)
                else:
                    for g in range(n):
                        copy_elem(tag, d + g * dst_row + j * ds, line + g * step, w)
                line += line_gap(j, la, lb, length) * step
                j += 1
            # the edges row by row: each row's span in them, no branch an
            # element
            for g in range(n):
                for j in range(los[g], min(his[g], top)):
                    edge_elem(tag, d + g * dst_row + j * ds,
                              edges[j - first] + g * step, w, xor)
                for j in range(max(los[g], bottom), his[g]):
                    edge_elem(tag, d + g * dst_row + j * ds,
                              edges[16 + j - bottom] + g * step, w, xor)
        for g in range(n if whole else 0):
            # the fill outside the spans (after blocked_group's elements past them)
            fill_run(tag, d + g * dst_row, ds, w, los[g], f)
            fill_run(tag, d + g * dst_row + his[g] * ds, ds, w, cols - his[g], f)
        i += n


cdef inline void side_block(elem_t *tag, char *d, const char **runs, Py_ssize_t n,
                            Py_ssize_t block, const Job *job) noexcept nogil:
    """n elements of matrices or vectors side by side, runs[k] the k-th's run
    (job.sides elements, one a matrix), to the other side's spans of n at d,
    job.side_step apart: by blocks transposed in registers (transpose_block,
    `block` wide; 0: none), a block of the spans written whole before the
    next (spans a power of two apart share L1D's sets: few live at once),
    the rest element by element."""
    cdef Py_ssize_t g = 0, k, e, t, nb = job.sides, w = job.width // job.sides
    cdef Py_ssize_t step = job.side_step, dcol = job.dst_col
    cdef const char *moved[16]
    while block and g + block <= nb:
        k = 0
        while k + block <= n:
            for t in range(block):
                moved[t] = runs[k + t] + g * w
            transpose_block(tag, d + g * step + k * dcol, step, moved, block)
            k += block
        for t in range(g, g + block):
            for e in range(k, n):
                copy_elem(tag, d + t * step + e * dcol, runs[e] + t * w, w)
        g += block
    for g in range(g, nb):
        for k in range(n):
            copy_elem(tag, d + g * step + k * dcol, runs[k] + g * w, w)


cdef inline void into_runs(elem_t *tag, char *d, const char *s, Py_ssize_t n,
                           Py_ssize_t block, const Job *job) noexcept nogil:
    """n elements of each of the vectors (s the first's, the next
    job.side_step on) into their runs in matrices side by side (d the
    first's, job.dst_col apart): a block of vectors at a time transposed in
    registers (transpose_block, `block` wide; 0: none), the rest element by
    element."""
    cdef Py_ssize_t g = 0, e, t, done, nb = job.sides, w = job.width // job.sides
    cdef Py_ssize_t step = job.side_step, dcol = job.dst_col, pcol = job.src_col
    cdef const char *runs[16]
    while block and g + block <= nb:
        for t in range(block):
            runs[t] = s + (g + t) * step
        done = transpose_block(tag, d + g * w, dcol, runs, n)
        for e in range(done, n):
            for t in range(block):
                copy_elem(tag, d + e * dcol + (g + t) * w, runs[t] + e * pcol, w)
        g += block
    for g in range(g, nb):
        for e in range(n):
            copy_elem(tag, d + e * dcol + g * w, s + g * step + e * pcol, w)


cdef void side_rows(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                    Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a PACK of matrices side by side, or an UNPACK of
    vectors or into matrices side by side (SIDE_BY_SIDE): each element's run
    of the batch read or written once, a group of them at a time across the
    other side (side_block, into_runs), where the batch one after another
    would read or write every cache line of the runs once a matrix. A
    PACK's groups run on across its rows; an UNPACK's are a row's, and its
    rows get the fill outside their spans, in each matrix."""
    cdef Py_ssize_t g, i, j, lo, hi, n = 0, cols = job.cols, a = job.a, b = job.b
    cdef Py_ssize_t w = job.width // job.sides, step = job.src_col
    cdef Py_ssize_t mrow = job.src_row, mcol = job.src_col, dcol = job.dst_col
    cdef Py_ssize_t side = job.side_step, group
    # a block of the other side's elements in registers where they are contiguous
    cdef Py_ssize_t block = transpose_columns(tag) if dcol == w else 0
    cdef bint rest = job.fill_rest
    cdef Fill f = job.fill
    cdef const char *runs[SIDE_RUNS]
    cdef const char *m = job.src + so + r0 * mrow
    cdef const char *line
    cdef char *p
    cdef char *d = job.dst + do + r0 * job.dst_row
    if job.packed == PACK:
        p = job.dst + do + kept_in(a, b, r0, cols) * dcol
        for i in range(r0, r1):
            row_span(part, a, b, cols, i, &lo, &hi)
            for j in range(lo, hi):
                runs[n] = m + j * mcol
                n += 1
                if n == SIDE_RUNS:
                    side_block(tag, p, runs, n, block, job)
                    p += n * dcol
                    n = 0
            m += mrow
        if n:
            side_block(tag, p, runs, n, block, job)
        return
    if not job.sides_read:     # into runs, from the row's packed line
        block = transpose_columns(tag) if step == w else 0
        # runs apart (a stack's columns, as far apart as its whole rows, a
        # power of two as often as not) fall in the same L1D set: a group
        # as many as its ways
        group = SIDE_RUNS if dcol == job.width else L1_WAYS
        for i in range(r0, r1):
            row_span(part, a, b, cols, i, &lo, &hi)
            if rest and dcol == job.width:     # the row's runs one run
                fill_run(tag, d, w, w, lo * job.sides, f)
                fill_run(tag, d + hi * dcol, w, w, (cols - hi) * job.sides, f)
            elif rest:
                for j in range(cols):
                    if j < lo or j >= hi:
                        fill_run(tag, d + j * dcol, w, w, job.sides, f)
            line = job.src + so + packed_line(job, i, step)
            j = lo
            while j < hi:
                n = min(group, hi - j)
                into_runs(tag, d + j * dcol, line + j * step, n, block, job)
                j += n
            d += job.dst_row
        return
    for i in range(r0, r1):
        row_span(part, a, b, cols, i, &lo, &hi)
        if rest:
            for g in range(job.sides):
                fill_run(tag, d + g * side, dcol, w, lo, f)
                fill_run(tag, d + g * side + hi * dcol, dcol, w, cols - hi, f)
        line = job.src + so + packed_line(job, i, step)     # (row lines)
        j = lo
        while j < hi:
            n = min(SIDE_RUNS, hi - j)
            for g in range(n):
                runs[g] = (job.src + so + packed_line(job, j + g, step) + i * step
                           if job.columns else line + (j + g) * step)
            side_block(tag, d + j * dcol, runs, n, block, job)
            j += n
        d += job.dst_row


cdef inline bint pack_tiles(const Job *job, Py_ssize_t r0,
                            Py_ssize_t r1) noexcept nogil:
    """Whether packed_span's lines [r0, r1) of a PACK that reads src down
    its columns in cache (STRIDED, the walk's rows src's columns) go by
    pack_tile: AVX-512, src's rows and the packed vector contiguous, two
    blocks' lines and columns at least (a last block moved back redoes up
    to a block's: 28x36x30 float32 13.2 -> 15.8 us), and elements of 1 to
    4 bytes, or of 8 where the element walk's lines a stride apart would
    not stay in L1D (grouped_rows' test; else it won: 100x100 float64
    1.9 us against 3.0)."""
    cdef Py_ssize_t w = job.width, n = tile_lanes(w)
    return (n and _vectors == AVX512 and job.packed == PACK and job.check == NULL
            and job.method == STRIDED and job.src_row == w and job.dst_col == w
            and job.cols >= 2 * n and r1 - r0 >= 2 * n
            and (w <= 4 or job.cols > l1_lines(magnitude(job.src_col))))


cdef void pack_tile(const Job *job, Py_ssize_t so, Py_ssize_t do, Py_ssize_t r0,
                    Py_ssize_t r1) noexcept nogil:
    """packed_span's lines [r0, r1) where pack_tiles: by tile's n x n blocks
    (in registers, src's rows, the runs read across, loaded under masks
    inside the band), n lines at a time across up to 512 of src's rows,
    nothing outside the band written (under masks at its edge: the lines
    lie one after the other); the last n rows and lines moved back to end
    at cols and at r1 (some written twice, alike)."""
    cdef Py_ssize_t w = job.width, n = tile_lanes(w), g, c, c1, i, j = 0
    cdef Py_ssize_t cols = job.cols, count, length, la, lb
    cdef char *lines[16]
    cdef const char *runs[512]
    cdef const char *src = job.src + so
    packed_lines(job, &count, &length, &la, &lb)
    while j < cols:
        c1 = min(j + 512, cols - cols % n)   # whole blocks
        if c1 <= j:            # the last block, moved back
            j = cols - n
            c1 = cols
        for c in range(j, c1):
            runs[c - j] = src + c * job.src_col
        i = r0
        while i < r1:
            i = min(i, r1 - n)
            # line i's element p at + p * w, the next lines from it
            lines[0] = job.dst + do + packed_line(job, i, w)
            for g in range(1, n):
                lines[g] = lines[g - 1] + line_gap(i + g - 1, la, lb, length) * w
            tile(w, lines, runs, i, i + n, j, c1, job.a, job.b, NULL, False)
            i += n
        j = c1


cdef void packed_span(elem_t *tag, const Job *job, Py_ssize_t so, Py_ssize_t do,
                      Py_ssize_t r0, Py_ssize_t r1, Part part) noexcept nogil:
    """Rows [r0, r1) of a matrix to (PACK) or from (UNPACK) the packed
    vector, each row's span along its line; unpacked rows get the fill
    outside their span."""
    cdef Py_ssize_t i, lo, hi, w = job.width, cols = job.cols, a = job.a, b = job.b
    cdef bint pack = job.packed == PACK
    cdef Py_ssize_t at = kept_in(a, b, r0, cols)
    # the matrix side and the packed side: src and dst as the job goes
    cdef Py_ssize_t mrow = job.src_row if pack else job.dst_row
    cdef Py_ssize_t mcol = job.src_col if pack else job.dst_col
    cdef Py_ssize_t pcol = job.dst_col if pack else job.src_col
    cdef char *m = (<char *>job.src + so if pack else job.dst + do) + r0 * mrow
    cdef char *p = (job.dst + do if pack else <char *>job.src + so) + at * pcol
    if job.method == COLUMNS and part != FILLED:
        if column_tiles(job, r0, r1):
            column_tile(tag, job, so, do, r0, r1)
        else:
            column_rows(tag, job, so, do, r0, r1, part)
        return
    if job.method == SIDE_BY_SIDE:
        side_rows(tag, job, so, do, r0, r1, part)
        return
    if part == KEPT and mcol == w and mrow == cols * w and pcol == w:
        if pack:               # whole rows, both sides contiguous
            memcpy(p, m, (r1 - r0) * cols * w)
        else:
            put(tag, m, w, p, w, (r1 - r0) * cols, w, job.stream)
        return
    if part == FILLED and mcol == w and mrow == cols * w:
        if job.stream:         # (unpack's) in one run
            trilu_stream_row(m, m, 0, 0, (r1 - r0) * cols * w, job.fill.pattern)
        else:
            fill_bytes(m, (r1 - r0) * cols * w, job.fill)
        return
    if unpacked_along(job):
        contiguous_rows(job, so, do, r0, r1, part, p)
        return
    if pack_tiles(job, r0, r1):
        pack_tile(job, so, do, r0, r1)
        return
    if pack and job.vector:    # (contiguous both sides: plan_packed)
        trilu_pack_rows_avx512(p, m, mrow, r0, r1, a, b, cols, w)
        return
    if pack:                   # (the band in locals: memcpy may write *job)
        for i in range(r0, r1):
            row_span(part, a, b, cols, i, &lo, &hi)
            copy_elems(tag, p, pcol, m + lo * mcol, mcol, hi - lo, w)
            p += (hi - lo) * pcol
            m += mrow
        return
    for i in range(r0, r1):    # (the rows or the lines strided)
        row_span(part, a, b, cols, i, &lo, &hi)
        unpacked_row(tag, job, m, p - lo * pcol, lo, hi, NULL, 0, 0)
        p += (hi - lo) * pcol
        m += mrow


cdef inline Py_ssize_t mirrored_in(const Job *job) noexcept nogil:
    """The elements of a matrix in a mirror's band (none without one)."""
    return kept_in(job.ma, job.mb, job.rows, job.cols) if job.mirror else 0


cdef Py_ssize_t kept_offsets(const Job *job, Py_ssize_t *off, Py_ssize_t mrow,
                             Py_ssize_t mcol) noexcept nogil:
    """The kept elements' byte offsets in matrices of strides (mrow, mcol),
    line after line as packed, into off; return their number."""
    cdef Py_ssize_t line, p, lo, hi, lines, length, la, lb, n = 0
    packed_lines(job, &lines, &length, &la, &lb)
    for line in range(lines):
        row_span(CROSSED, la, lb, length, line, &lo, &hi)
        for p in range(lo, hi):
            off[n] = (p * mrow + line * mcol if job.columns
                      else line * mrow + p * mcol)
            n += 1
    return n


cdef void mirror_offsets(const Job *job, Py_ssize_t *off, Py_ssize_t m,
                         Py_ssize_t mrow, Py_ssize_t mcol) noexcept nogil:
    """A mirror's m transposes in its band: their byte offsets into off (in
    kept_offsets' order of the kept elements they copy), and after them
    those elements' places in that order."""
    cdef Py_ssize_t i, j, line, p, lo, hi, lines, length, la, lb, t = 0, u = 0
    packed_lines(job, &lines, &length, &la, &lb)
    for line in range(lines):
        row_span(CROSSED, la, lb, length, line, &lo, &hi)
        for p in range(lo, hi):
            i, j = (p, line) if job.columns else (line, p)
            if job.ma <= i - j <= job.mb:
                off[u] = j * mrow + i * mcol     # (square matrices)
                off[m + u] = t
                u += 1
            t += 1


cdef void build_offsets(const Job *job, Py_ssize_t *off) noexcept nogil:
    """job.offsets: each element's byte offset in its matrix (the matrix
    side's strides), the kept ones first, line after line as packed; with
    `mirror`, then the transposes that fall in its band, and after those
    their kept elements' places (mirrored_in of each); then the others."""
    cdef Py_ssize_t i, j, lo, hi, mlo, mhi, m = mirrored_in(job)
    cdef bint pack = job.packed == PACK
    cdef Py_ssize_t mrow = job.src_row if pack else job.dst_row
    cdef Py_ssize_t mcol = job.src_col if pack else job.dst_col
    cdef Py_ssize_t kept = kept_offsets(job, off, mrow, mcol), n = kept
    if not job.mirror:
        for i in range(job.rows):
            row_span(CROSSED, job.a, job.b, job.cols, i, &lo, &hi)
            for j in range(job.cols):
                if j < lo or j >= hi:
                    off[n] = i * mrow + j * mcol
                    n += 1
        return
    mirror_offsets(job, off + kept, m, mrow, mcol)
    n += 2 * m
    for i in range(job.rows):
        row_span(CROSSED, job.a, job.b, job.cols, i, &lo, &hi)
        row_span(CROSSED, job.ma, job.mb, job.cols, i, &mlo, &mhi)
        for j in range(job.cols):
            if (j < lo or j >= hi) and (j < mlo or j >= mhi):
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
        trilu_line_start()
        for t in range(kept):
            memcpy(&v, s + off[t], sizeof(elem_t))
            memcpy(d + t * pcol, &v, sizeof(elem_t))
    else:
        trilu_line_start()
        for t in range(kept):
            memcpy(&v, s + t * pcol, sizeof(elem_t))
            memcpy(d + off[t], &v, sizeof(elem_t))
        if filled:
            fill_elem(<char *>&f, sizeof(elem_t), fill)
            for t in range(kept, kept + filled):
                memcpy(d + off[t], &f, sizeof(elem_t))


cdef inline void mirrored_matrix(elem_t *tag, const char *s, char *d,
                                 const Py_ssize_t *off, Py_ssize_t kept,
                                 Py_ssize_t mirrored, Py_ssize_t filled,
                                 const Py_ssize_t *sources, Py_ssize_t pcol,
                                 Py_ssize_t w, bint copy_kept, Fill fill,
                                 const char *xor) noexcept nogil:
    """One matrix of an UNPACK with mirror through the offsets, from its
    packed vector or, where `sources` (else NULL) gives their offsets, from
    a matrix's kept elements: the kept ones (with copy_kept), the `mirrored`
    transposes after them (XOR `xor` where given), then the fill at the
    `filled` offsets after those."""
    cdef Py_ssize_t t, at
    if copy_kept:
        if sources != NULL:
            for t in range(kept):
                copy_elem(tag, d + off[t], s + sources[t], w)
        else:
            for t in range(kept):
                copy_elem(tag, d + off[t], s + t * pcol, w)
    for t in range(kept, kept + mirrored):
        at = off[mirrored + t]
        edge_elem(tag, d + off[t], s + (sources[at] if sources != NULL else at * pcol),
                  w, xor)
    for t in range(kept + 2 * mirrored, kept + 2 * mirrored + filled):
        fill_elem(d + off[t], w, fill)


cdef void mirrored_matrices(elem_t *tag, const Job *job, Py_ssize_t start,
                            Py_ssize_t stop) noexcept nogil:
    """Matrices [start, stop) of an UNPACK with mirror through job.offsets
    (mirrored_matrix), from packed vectors or job.sources' matrices."""
    cdef Py_ssize_t idx[MAX_BATCH_DIMS]
    cdef Py_ssize_t so, do, n
    cdef Py_ssize_t kept = kept_in(job.a, job.b, job.rows, job.cols)
    cdef Py_ssize_t mirrored = mirrored_in(job)
    cdef Py_ssize_t filled = (job.rows * job.cols - kept - mirrored
                              if job.fill_rest else 0)
    # (in locals: the writes may alias *job)
    cdef const Py_ssize_t *off = job.offsets
    cdef const Py_ssize_t *sources = job.sources
    cdef const char *xor = job.xor
    cdef Py_ssize_t pcol = job.src_col, w = job.width
    cdef bint copy_kept = job.copy_kept
    cdef Fill fill = job.fill
    batch_seek(job, start, idx, &so, &do)
    for n in range(start, stop):
        mirrored_matrix(tag, job.src + so, job.dst + do, off, kept, mirrored, filled,
                        sources, pcol, w, copy_kept, fill, xor)
        batch_next(job, idx, &so, &do)


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


cdef inline bint whole_matrices(Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t w,
                                Py_ssize_t a, Py_ssize_t b, bint mirror) noexcept nogil:
    """Whether matrices of rows x cols elements of w bytes, band (a, b), go
    whole through the table of offsets (MATRICES): rows short, the table
    within OFFSETS_MAX (a mirror's holds its transposes' places and a matrix
    source's kept elements too, as many as kept ones each at most)."""
    return (cols * w < SPAN_CALL_BYTES
            and rows * cols + (2 * kept_in(a, b, rows, cols) if mirror else 0)
            <= OFFSETS_MAX)


cdef inline bint walks_columns(Py_ssize_t rows, Py_ssize_t cols,
                               Py_ssize_t mrow, Py_ssize_t mcol,
                               Py_ssize_t w) noexcept nogil:
    """Whether an UNPACK into matrices of these strides (elements of w
    bytes) walks their columns as its rows: the axis closer to contiguous
    (a length-1 axis's stride never used)."""
    if cols == 1:
        mcol = w
    if rows == 1:
        mrow = cols * mcol
    return magnitude(mcol) > magnitude(mrow)


cdef Py_ssize_t plan_packed(Job *job, cnp.ndarray mat, const cnp.npy_intp *mat_strides,
                            cnp.ndarray vec, Py_ssize_t a, Py_ssize_t b, bint columns,
                            Py_ssize_t *offsets, bint along) noexcept:
    """Fill the job for matrices of mat's shape (strides mat_strides) and the
    packed vectors vec, whose lines are the band's spans of mat's rows, or of
    its columns (the band clamped; the fill, job.packed and an UNPACK's
    mirror, its band and xor set): the walk's rows (the packed lines for
    PACK, and with `along`, else the axis closer to contiguous in mat for
    UNPACK), the method;
    small matrices of short rows whole through `offsets` (OFFSETS_MAX of
    them; NULL: a plan not to be run, its table not built). Return the
    number of matrices."""
    cdef int d, nd = cnp.PyArray_NDIM(mat)
    cdef Py_ssize_t nb = 1, w = cnp.PyArray_ITEMSIZE(vec)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(mat)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(mat)[nd - 1]
    cdef Py_ssize_t mrow = mat_strides[nd - 2], mcol = mat_strides[nd - 1]
    cdef const cnp.npy_intp *vs = cnp.PyArray_STRIDES(vec)
    cdef bint pack = job.packed == PACK
    # The stride of a length-1 axis is never used: make it the contiguous one.
    if cols == 1:
        mcol = w
    if rows == 1:
        mrow = cols * mcol
    # (a, b) of x is (-b, -a) of x.T, whose rows are x's columns.
    if (columns if pack or along else walks_columns(rows, cols, mrow, mcol, w)):
        rows, cols, mrow, mcol, a, b = cols, rows, mcol, mrow, -b, -a
        job.ma, job.mb = -job.mb, -job.ma
        columns = not columns
    job.width = w
    job.rows = rows
    job.cols = cols
    job.a = a
    job.b = b
    job.columns = columns
    job.mask = job.fill_mask = NULL
    job.offsets = job.sources = NULL
    job.flat = False
    job.block = 1
    job.matrix_bytes = rows * cols * w
    job.bulk_src = job.bulk_dst = False
    if pack:
        job.src = <const char *>cnp.PyArray_DATA(mat)
        job.src_row, job.src_col = mrow, mcol
        job.dst_col = vs[nd - 2]
        job.dst_row = 0
        plan_batch(job, nd - 2, cnp.PyArray_DIMS(mat), mat_strides, vs)
    else:
        job.src = <const char *>cnp.PyArray_DATA(vec)
        job.dst_row, job.dst_col = mrow, mcol
        job.src_col = vs[nd - 2]
        job.src_row = 0
        plan_batch(job, nd - 2, cnp.PyArray_DIMS(mat), vs, mat_strides)
    if job.mirror or job.check != NULL:
        # both bands, or the band and the checked diagonal, in every row: one run
        job.edge[0] = job.edge[1] = 0
        job.edge[2] = job.edge[3] = job.edge[4] = job.edge[5] = rows
    else:
        runs_of(rows, cols, a, b, job.edge)
    job.method = STRIDED
    job.across = False
    if job.check != NULL or (job.mirror
                             and job.matrix_bytes >= mirror_tiled_bytes(job)):
        job.method = TILED     # the transpose read across, in every row
    elif whole_matrices(rows, cols, w, a, b, job.mirror):
        job.method = MATRICES
        if offsets != NULL:
            build_offsets(job, offsets)
        job.offsets = offsets
    elif job.mirror:
        job.method = COLUMNS   # in cache: the transpose by groups of rows
    elif columns and job.matrix_bytes < TILE_MIN_BYTES:
        job.method = COLUMNS   # (UNPACK's) the lines read across, in cache
    elif columns or (rows > 1 and magnitude(mrow) < magnitude(mcol)
                     and job.matrix_bytes >= TILE_MIN_BYTES):
        job.method = TILED     # the lines, or PACK's matrix, read across
    for d in range(job.ndim):
        nb *= job.shape[d]
    # Unpacked matrices that outgrow the last-level cache, their rows
    # contiguous: with streaming stores (_stream.h), where the fill's
    # pattern allows (a byte, or an element whose width divides 16). Not
    # packed vectors, whose lines start anywhere in a cache line, which
    # would then be written by normal stores and streaming ones both; nor
    # rows written a group at a time, whose stores are not whole lines.
    job.stream = (TRILU_STREAM and not pack and job.method != MATRICES
                  and job.method != COLUMNS
                  and mcol == w and (job.fill.byte >= 0 or 16 % w == 0)
                  and nb * job.matrix_bytes >= STREAM_MIN_BYTES)
    # Rows along their contiguous lines, in cache, on AVX-512: an UNPACK's
    # crossed ones one row loop each (contiguous_rows), its masked loads
    # reading the span alone, where a fill, a memcpy and a fill are three
    # calls a row; a PACK's spans copied inline (packed_span), where memcpy
    # is a call.
    job.vector = (_vectors == AVX512 and job.method == STRIDED
                  and nb * job.matrix_bytes < STREAM_MIN_BYTES
                  and (job.src_col == w and job.dst_col == w if pack else
                       unpacked_along(job) and job.fill_rest
                       and (job.fill.byte >= 0 or 16 % w == 0)))
    job.prefetch = False       # (contiguous_rows's: band jobs')
    return nb
