# --- memory: a fresh result's layout and allocation, out='s overlap ---------------
# (included by _kernel.pyx)

cdef extern from "_recycle.h":
    enum: TRILU_RECYCLE_MIN
    enum: TRILU_CALLOC_MIN
    enum: TRILU_PAGE_ALIGN_MIN
    bint trilu_spare_fits(size_t size) nogil
    object trilu_recycler_capsule(int hugepages)
    object trilu_zero_pages_capsule()
    object trilu_aligned_capsule()


# The memory handler of large results: None where recycling is not built, or
# when the environment says TRILU_RECYCLE=0 (read once, at import).
# Mostly zero results come from a second handler, which maps each block anew:
# zero pages, only the kept part's ever touched (_recycle.h).
cdef object _recycler = None
cdef object _zero_pages = None
if os.environ.get("TRILU_RECYCLE", "").strip() != "0":
    _recycler = trilu_recycler_capsule(_private.numpy_hugepages())
    _zero_pages = trilu_zero_pages_capsule()
# Numpy's memory handler while a call runs whose results go to a library that
# takes only 64-byte aligned memory in place (JAX: XLA's CPU client copies any
# other): malloc's blocks, aligned (_recycle.h). Results from trilu's other
# handlers are aligned already; this one serves the rest.
ALIGNED = trilu_aligned_capsule()
# Blocks of trilu's handlers this big start a page (_recycle.h), for tests.
PAGE_ALIGN_MIN = TRILU_PAGE_ALIGN_MIN


def use_handler(object handler):
    """Make handler numpy's memory handler in the current context (numpy keeps
    it in a context variable); return the one it replaces."""
    return PyDataMem_SetHandler(handler)


# The OS's page size, for the pages a result's kept part touches (Windows: 4 KiB).
cdef Py_ssize_t _page = 4096
if hasattr(os, "sysconf"):
    _page = os.sysconf("SC_PAGE_SIZE")


cdef enum:
    # Fresh zero pages are a mapping of their own (an mmap, a fault and a
    # munmap), which costs as much as a memset of about this much from cache;
    # glibc's default mmap threshold weighs the same cost.
    ZERO_PAGES_MIN = 1 << 17
    # A page first written costs a fault in which the OS zeroes it, about
    # this many times a memset of a page already mapped: fresh zero pages
    # beat rewriting a block only where the zeros to write outweigh this many
    # times the bytes of the pages the kept part touches.
    FAULT_COST = 10


cdef enum Allocation:          # where a fresh result's memory comes from
    MALLOC          # numpy's allocator; every byte written
    # RECYCLED: the recycling handler, the spare block of a freed result of
    # this size if there is one; every byte written. CALLOC: fresh pages, huge
    # where numpy advises them; the filled runs never written. ZERO_PAGES: a
    # mapping of small fresh pages; only the kept part's touched.
    RECYCLED
    CALLOC
    ZERO_PAGES


cdef enum Order:               # a fresh result's memory layout
    TRIU_ORDER      # numpy.triu's own (docs: user_guide/numpy.rst, Layout)
    KEEP_ORDER      # "K": as numpy.empty_like
    C_ORDER         # "C"
    F_ORDER         # "F"
    ANY_ORDER       # "A": "F" where src is Fortran- and not C-contiguous, else "C"


cdef dict _ORDERS = {"K": KEEP_ORDER, "C": C_ORDER, "F": F_ORDER, "A": ANY_ORDER}


cdef int order_code(object order) except -2:
    """The Order of the order= argument, -1 where it names none."""
    if order is None:
        return TRIU_ORDER
    if type(order) is str:
        return _ORDERS.get(order, -1)
    return -1


cdef Order resolve(cnp.ndarray src, Order order) noexcept:
    """order as numpy resolves it for src: "A" to "C" or "F", and "K" to "C"
    or "F" where src is contiguous so (PyArray_NewLikeArray); numpy.triu's
    own to "C" for a C-contiguous src with elements, whose axes
    result_strides ranks in C order (an empty one's ranked strides are not C
    order's, and numpy 1 keeps them as given)."""
    cdef bint c = cnp.PyArray_IS_C_CONTIGUOUS(src)
    cdef bint f = cnp.PyArray_IS_F_CONTIGUOUS(src)
    if order == TRIU_ORDER and c and cnp.PyArray_SIZE(src) > 0:
        return C_ORDER
    if order == ANY_ORDER:
        return F_ORDER if f and not c else C_ORDER
    if order == KEEP_ORDER and (c or cnp.PyArray_NDIM(src) <= 1):
        return C_ORDER
    if order == KEEP_ORDER and f:
        return F_ORDER
    return order


cdef inline Py_ssize_t iter_stride(cnp.ndarray src, int op, int axis) noexcept:
    """numpy.triu's where(mask, zeros(1), m) iterator: the stride of operand op
    (0: the (N, M) boolean mask, C-contiguous; 1: m) along axis, 0 where the
    operand is broadcast or its axis has length 1 (nditer's rule). The zeros
    and the output have no strides there."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef cnp.npy_intp *dims = cnp.PyArray_DIMS(src)
    if dims[axis] == 1:
        return 0
    if op == 1:
        return cnp.PyArray_STRIDES(src)[axis]
    if dims[nd - 2] == 0 or dims[nd - 1] == 0:
        return 0                   # an empty mask's strides are 0
    if axis == nd - 1:
        return 1
    return dims[nd - 1] if axis == nd - 2 else 0


cdef void result_strides(cnp.ndarray src, Order order, Py_ssize_t w,
                         cnp.npy_intp *out) noexcept:
    """The strides of a fresh result for src with elements of w bytes, in a
    resolved order: its axes ranked fastest first, then strides built up.

    TRIU_ORDER ranks them as numpy.triu's iterator (nditer's
    npyiter_find_best_axis_ordering, for order "K" with no output given): a
    stable insertion sort from C order, fastest axis first, in which an axis
    moves ahead of another only if every operand striding along both agrees
    that its stride is smaller (C order wins a conflict; the mask makes the
    last two axes C order). KEEP_ORDER ranks them by |stride|, ties in C
    order (numpy's PyArray_CreateSortedStridePerm)."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef int i0, i1, pos, a0, a1, op
    cdef int fast[cnp.NPY_MAXDIMS]     # fast[p]: the axis of rank p
    cdef bint ambiguous, swap
    cdef Py_ssize_t s0, s1, stride = w
    cdef cnp.npy_intp *dims = cnp.PyArray_DIMS(src)
    cdef cnp.npy_intp *st = cnp.PyArray_STRIDES(src)
    for i0 in range(nd):
        fast[i0] = i0 if order == F_ORDER else nd - 1 - i0
    if order == TRIU_ORDER or order == KEEP_ORDER:
        for i0 in range(1, nd):
            a0 = fast[i0]
            pos = i0
            for i1 in range(i0 - 1, -1, -1):
                a1 = fast[i1]
                if order == KEEP_ORDER:
                    # a1 is C-ahead of a0 (a1 > a0) unless they moved
                    if magnitude(st[a0]) < magnitude(st[a1]) or (
                            magnitude(st[a0]) == magnitude(st[a1]) and a0 > a1):
                        pos = i1
                        continue
                    break
                ambiguous = True
                swap = False
                for op in range(2):
                    s0 = iter_stride(src, op, a0)
                    s1 = iter_stride(src, op, a1)
                    if s0 != 0 and s1 != 0:
                        if magnitude(s1) <= magnitude(s0):
                            swap = False
                        elif ambiguous:
                            swap = True
                        ambiguous = False
                if not ambiguous:
                    if not swap:
                        break
                    pos = i1
            for i1 in range(i0, pos, -1):
                fast[i1] = fast[i1 - 1]
            fast[pos] = a0
    for i0 in range(nd):
        out[fast[i0]] = stride
        stride *= dims[fast[i0]]


cdef bint contiguous(int nd, const cnp.npy_intp *dims, const cnp.npy_intp *strides,
                     Py_ssize_t w) noexcept:
    """The strides np.zeros makes in C order, to the letter (those of a
    length-1 axis included)."""
    cdef int d
    cdef Py_ssize_t stride = w
    for d in range(nd - 1, -1, -1):
        if strides[d] != stride:
            return False
        stride *= dims[d]
    return True


cdef bint mostly_filled(cnp.ndarray src, const cnp.npy_intp *strides,
                        Py_ssize_t a, Py_ssize_t b) noexcept:
    """Fresh zero pages pay for a result of these strides: the zeros they save
    writing outweigh FAULT_COST times the pages the kept part touches."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t rows = cnp.PyArray_DIMS(src)[nd - 2]
    cdef Py_ssize_t cols = cnp.PyArray_DIMS(src)[nd - 1]
    cdef Py_ssize_t size = cnp.PyArray_NBYTES(src), w = cnp.PyArray_ITEMSIZE(src)
    cdef Py_ssize_t nb, kept, kept_rows, touched = 0
    cdef Py_ssize_t edge[RUNS + 1]
    if magnitude(strides[nd - 2]) < magnitude(strides[nd - 1]):
        rows, cols, a, b = cols, rows, -b, -a  # rows in memory: columns
    nb = cnp.PyArray_SIZE(src) // (rows * cols)
    kept = kept_in(a, b, rows, cols) * w
    # The rows holding a kept element, one run each: the pages they touch.
    runs_of(rows, cols, a, b, edge)
    kept_rows = edge[4] - edge[1]
    if kept_rows:              # (+ a page for where the run starts in one)
        touched = min(kept_rows * cols * w, kept + kept_rows * _page) + _page
    return size - kept * nb >= FAULT_COST * min(size, nb * touched)


cdef Allocation allocation(cnp.ndarray src, const cnp.npy_intp *strides,
                           Order order, Py_ssize_t a, Py_ssize_t b,
                           bint zeros) noexcept:
    """Where a fresh result for src, of these strides, comes from, the band
    (a, b) kept and the rest zeros (or another fill): the rule of
    docs/user_guide/memory.rst. calloc's zero pages need np.zeros, which makes
    C or Fortran order only; other layouts are written whole."""
    cdef int nd = cnp.PyArray_NDIM(src)
    cdef Py_ssize_t size = cnp.PyArray_NBYTES(src)
    cdef bint calloc_ok, recycled
    if size < ZERO_PAGES_MIN:
        return MALLOC
    calloc_ok = zeros and (
        order == C_ORDER or order == F_ORDER
        or contiguous(nd, cnp.PyArray_DIMS(src), strides, cnp.PyArray_ITEMSIZE(src)))
    recycled = _recycler is not None
    if zeros and mostly_filled(src, strides, a, b):
        if _zero_pages is not None:
            return ZERO_PAGES
        if calloc_ok:
            return CALLOC
        return RECYCLED if recycled else MALLOC
    if size < <Py_ssize_t>TRILU_RECYCLE_MIN:
        return MALLOC
    if recycled and (trilu_spare_fits(size) or size < <Py_ssize_t>TRILU_CALLOC_MIN):
        return RECYCLED
    if size < <Py_ssize_t>TRILU_CALLOC_MIN:
        return MALLOC
    if calloc_ok:
        return CALLOC
    return RECYCLED if recycled else MALLOC


cdef cnp.ndarray new_array(cnp.ndarray src, cnp.dtype descr, Order order,
                           cnp.npy_intp *strides):
    """An uninitialised array of src's shape in a resolved order (strides as
    result_strides gave them), from the memory handler in force."""
    Py_INCREF(descr)           # (stolen)
    return PyArray_NewFromDescr(
        &PyArray_Type, <void *>descr, cnp.PyArray_NDIM(src), cnp.PyArray_DIMS(src),
        NULL if order == C_ORDER or order == F_ORDER else strides, NULL,
        cnp.NPY_ARRAY_F_CONTIGUOUS if order == F_ORDER else 0, NULL)


cdef cnp.ndarray new_result(cnp.ndarray src, Allocation how, Order order,
                            cnp.npy_intp *strides):
    """A fresh array for src's result, from `how`: recycled blocks and zero
    pages from trilu's handlers (_recycle.h), as docs/user_guide/memory.rst
    says."""
    cdef object handler = None, previous = None
    if how == ZERO_PAGES:
        handler = _zero_pages  # its malloc maps fresh zero pages
    elif how != MALLOC:
        handler = _recycler
    if handler is not None:
        previous = PyDataMem_SetHandler(handler)
    try:
        if how == CALLOC:
            return np.zeros((<object>src).shape, (<object>src).dtype,
                            order="F" if order == F_ORDER else "C")
        return new_array(src, src.descr, order, strides)
    finally:
        if handler is not None:
            PyDataMem_SetHandler(previous)


# --- out= against its input ---------------------------------------------------------

cdef void extent(cnp.ndarray a, char **lo, char **hi) noexcept:
    """The bytes a spans: [lo, hi), whatever the signs of its strides."""
    cdef int d
    cdef Py_ssize_t step
    lo[0] = hi[0] = <char *>cnp.PyArray_DATA(a)
    for d in range(cnp.PyArray_NDIM(a)):
        step = cnp.PyArray_STRIDES(a)[d] * (cnp.PyArray_DIMS(a)[d] - 1)
        if step < 0:
            lo[0] += step
        else:
            hi[0] += step
    hi[0] += cnp.PyArray_ITEMSIZE(a)


cdef bint same_memory(cnp.ndarray a, cnp.ndarray b) noexcept:
    """a and b are the same bytes walked the same way: b is a, in place."""
    cdef int d
    if (cnp.PyArray_DATA(a) != cnp.PyArray_DATA(b)
            or cnp.PyArray_NDIM(a) != cnp.PyArray_NDIM(b)):
        return False
    for d in range(cnp.PyArray_NDIM(a)):
        if (cnp.PyArray_STRIDES(a)[d] != cnp.PyArray_STRIDES(b)[d]
                or cnp.PyArray_DIMS(a)[d] != cnp.PyArray_DIMS(b)[d]):
            return False
    return True


cdef enum OutState:            # what an out is to m
    APART           # writable, and no byte shared with m
    IN_PLACE        # m's own memory, walked the same way
    OVERLAPS        # sharing some of m's bytes: m must be copied first
    READ_ONLY
    ZERO_STRIDE     # its elements overlap one another


cdef OutState out_state(cnp.ndarray m, cnp.ndarray out) noexcept:
    cdef int d
    cdef char *m_lo
    cdef char *m_hi
    cdef char *o_lo
    cdef char *o_hi
    if not cnp.PyArray_ISWRITEABLE(out):
        return READ_ONLY
    if cnp.PyArray_SIZE(out) == 0 or cnp.PyArray_ITEMSIZE(out) == 0:
        return APART           # (no bytes to share)
    for d in range(cnp.PyArray_NDIM(out)):
        if cnp.PyArray_STRIDES(out)[d] == 0 and cnp.PyArray_DIMS(out)[d] > 1:
            return ZERO_STRIDE
    if same_memory(m, out):
        return IN_PLACE
    extent(m, &m_lo, &m_hi)
    extent(out, &o_lo, &o_hi)
    return OVERLAPS if m_lo < o_hi and o_lo < m_hi else APART
