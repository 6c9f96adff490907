# --- the public functions' common calls (included last by _kernel.pyx) ----------------
#
# Each public function is one of these doors (``door``, the Python layer's
# decorator): a call of the common kind, an exact numpy array of plain bytes
# and int arguments, is checked and run here; any other goes to the Python
# function the door wraps (its __wrapped__), which holds every rule and every
# message. A door answers only calls that the Python function would hand to
# the same kernel function with the same arguments: it adds no rule.
# Why in C: CPython (3.11 on) never specializes a call of a function with
# keyword-only parameters (each call binds them the generic way, looking
# every default up by name, and builds a frame); a door's arguments are
# parsed by Cython, and the door calls the kernel's C functions directly.
# Each door's defaults are its Python function's.

import functools

from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_AsDouble
from libc.math cimport copysign, sqrt

cdef enum:
    # The index family and tri's doors take results of at most this many
    # elements, each side within it too: numpy's mask of as many bools fits
    # any machine, so the Python layer takes the kernel for them as well;
    # beside a larger result its cost is small. unpack's door, the same.
    SMALL_SIZE = 1 << 20
    # Distinct fills (and dtypes) the doors remember: a program uses a few
    # (-inf, nan, 1); one that passes many (a loop over values) empties the
    # memory rather than grow it.
    FILLS_MAX = 256


cdef dict _wrapped = {}        # a door's name -> the Python function it wraps
# An argument not given: each door takes every call (extra arguments in
# *args and **kwargs, none required), so that a call which binds badly
# reaches the Python function as it was made, and gets its error.
cdef object MISSING = object()


def door(function):
    """The door of the public function named as ``function``, a decorator:
    the door takes function's name, docstring and signature
    (``__wrapped__``), and hands it every call it does not answer."""
    cdef object d = _DOORS[function.__name__]
    _wrapped[function.__name__] = function
    functools.update_wrapper(d, function)
    # torch.compile traces, in place of a callable it cannot, the
    # __original_fn of one whose __script_if_tracing_wrapper is true (as
    # torch.jit's wrappers have them): the door is C to it, function is not
    d.__dict__.update(__script_if_tracing_wrapper=True, __original_fn=function)
    return d


cdef object wrapped(str name, tuple positional, tuple args, dict kwargs,
                    dict named):
    """The answer of the Python function `name` to the call as it was made:
    its positional parameters given (up to the first MISSING), args, and the
    keywords given (named ones, then kwargs)."""
    cdef list passed = []
    cdef object value
    for value in positional:
        if value is MISSING:
            break
        passed.append(value)
    cdef dict keywords = {key: value for key, value in named.items()
                          if value is not MISSING}
    keywords.update(kwargs)
    return _wrapped[name](*passed, *args, **keywords)


cdef list with_keywords(tuple names, list given, dict kwargs):
    """given, the positional parameters `names` as given by position
    (MISSING: not), with kwargs' values for those not given; None where
    kwargs holds another name or one given by position (the Python function
    then answers)."""
    cdef object key
    cdef Py_ssize_t at
    for key in kwargs:
        if key not in names:
            return None
        at = names.index(key)
        if given[at] is not MISSING:
            return None
        given[at] = kwargs[key]
    return given


cdef inline object given(object value, object default):
    """value, or default where it was not given."""
    return default if value is MISSING else value


cdef bint plain(object m, int dims) noexcept:
    """m is an exact numpy array of `dims` dimensions or more whose elements
    the kernel moves as they are: native byte order, no fields, no
    references, no metadata (numpy drops it from results)."""
    cdef cnp.dtype descr
    if type(m) is not cnp.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>m) < dims:
        return False
    descr = (<cnp.ndarray>m).descr
    return (cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>m)
            and not cnp.PyDataType_HASFIELDS(descr)
            and not cnp.PyDataType_FLAGS(descr) & NPY_ITEM_REFCOUNT
            and descr_metadata(descr) == NULL)


cdef int out_for(cnp.ndarray a, object out, int nd,
                 const cnp.npy_intp *dims) noexcept:
    """What out is to a (its OutState) where it is an exact numpy array of
    shape dims (nd of them) and a's dtype; -1 where it is not."""
    cdef int d
    cdef cnp.ndarray o
    if type(out) is not cnp.ndarray:
        return -1
    o = <cnp.ndarray>out
    if (cnp.PyArray_NDIM(o) != nd
            or not cnp.PyArray_EquivTypes(a.descr, o.descr)):
        return -1
    for d in range(nd):
        if cnp.PyArray_DIMS(o)[d] != dims[d]:
            return -1
    return out_state(a, o)


cdef bint plain_out(cnp.ndarray a, object out) noexcept:
    """out is None, or what the Python layer accepts with no more work: an
    exact numpy array of a's shape and dtype, writable, no zero strides, a
    itself or apart from it."""
    cdef int state
    if out is None:
        return True
    state = out_for(a, out, cnp.PyArray_NDIM(a), cnp.PyArray_DIMS(a))
    return state == APART or state == IN_PLACE


cdef bint apart_out(cnp.ndarray a, object out, int nd,
                    const cnp.npy_intp *dims) noexcept:
    """out is None, or what the Python layer accepts with no more work for a
    result of shape dims that is not a's (pack's, unpack's): an exact numpy
    array of that shape and a's dtype, writable, no zero strides, apart
    from a."""
    return out is None or out_for(a, out, nd, dims) == APART


cdef bint small_int(object x, Py_ssize_t *v) noexcept:
    """x is an int within SMALL_SIZE either side of 0, then in v."""
    cdef int overflow
    cdef long long value
    if type(x) is not int:
        return False
    value = PyLong_AsLongLongAndOverflow(x, &overflow)
    if overflow or not -SMALL_SIZE <= value <= SMALL_SIZE:
        return False
    v[0] = <Py_ssize_t>value
    return True


cdef bint small_result(Py_ssize_t *rows, Py_ssize_t *cols) noexcept:
    """rows x cols (each raised to 0, as numpy does) is SMALL_SIZE elements
    or fewer."""
    rows[0] = max(rows[0], 0)
    cols[0] = max(cols[0], 0)
    return rows[0] <= SMALL_SIZE and cols[0] <= SMALL_SIZE and (
        rows[0] * cols[0] <= SMALL_SIZE)


# --- fills ----------------------------------------------------------------------------

# A fill's element bytes in a dtype, as the Python layer converted them (NEP
# 50's answer) without a floating-point error: the same bytes under any
# np.errstate, and no warning to give (numpy's numbers and bools warn of
# nothing else; other dtypes are never remembered: numpy 2.5 deprecates an
# int into a timedelta with no unit). A table by the fill's exact type (float,
# int, bool, and numpy's scalar types of those kinds; a 0-d numpy array is
# its element, as the Python layer converts it) maps the fill to its dtypes
# and bytes, (dtype, bytes, dtype, bytes, ...): equal fills of one type are
# the same number (a NaN equals only itself, the same object; float zeros,
# 0.0 equalling -0.0, are keyed by their sign in a table of their own, as
# True would equal 1.0), whose bytes are the same. Equal fills of two types
# may not be (np.float64(5.0) into int8 is refused, np.int8(5) is not), so
# each type has its tables. A dtype is found by identity (numpy's are mostly
# one object each) or equality. One lookup, and no key a call would have to
# allocate (but a 0-d array's element).
cdef dict _float_fills = {}
cdef dict _int_fills = {}
cdef dict _bool_fills = {}
cdef dict _zero_fills = {}     # 0.0 and -0.0, keyed by their sign: False, True
# numpy's bool, integer and real floating scalar types (not timedelta64, an
# integer whose equal values differ by unit) -> (the table of their nonzero
# fills, that of their zeros; the latter's keys the sign, floats')
cdef dict _numpy_fills = {
    t: ({}, {}) for t in set(np.sctypeDict.values()) if np.dtype(t).kind in "biuf"}


cdef inline object fill_scalar(object fill):
    """fill, or a 0-d numpy array's element: the fill the Python layer
    converts (_validate.fill)."""
    if type(fill) is cnp.ndarray and cnp.PyArray_NDIM(<cnp.ndarray>fill) == 0:
        return fill[()]
    return fill


cdef dict fills_of(object fill):
    """The table of a fill_scalar's type; None for a fill the doors do not
    remember."""
    cdef type t = type(fill)
    cdef tuple tables
    if t is float:
        return _float_fills if PyFloat_AS_DOUBLE(fill) != 0 else _zero_fills
    if t is int:
        return _int_fills
    if t is bool:
        return _bool_fills
    tables = _numpy_fills.get(t)
    if tables is None:
        return None
    return <dict>tables[1] if fill == 0 else <dict>tables[0]


cdef inline object fill_key(object fill):
    """A fill_scalar's key in its table: itself, or a float zero's sign
    bit."""
    if type(fill) is float and PyFloat_AS_DOUBLE(fill) == 0:
        return copysign(1.0, PyFloat_AS_DOUBLE(fill)) < 0
    if type(fill) is not int and type(fill) is not bool and fill == 0:
        return copysign(1.0, PyFloat_AsDouble(fill)) < 0   # (a numpy zero)
    return fill


def remembers(cnp.dtype descr not None, object fill):
    """Whether the doors remember fill's bytes in descr: a fill of the exact
    type float, int or bool, or a numpy scalar of such a kind (or a 0-d
    array of one), into one of numpy's numbers or bool."""
    cdef int t = descr.type_num
    return (t <= cnp.NPY_CLONGDOUBLE or t == cnp.NPY_FLOAT16) and (
        fills_of(fill_scalar(fill)) is not None)


def remember_fill(cnp.dtype descr not None, object fill, bytes data not None):
    """Remember data, fill's bytes in descr (remembers(descr, fill)), as the
    Python layer converted it without a floating-point error."""
    if known_fill(descr, fill) is not None:
        return                 # (remembered meanwhile, by another thread)
    fill = fill_scalar(fill)
    cdef dict table = fills_of(fill)
    cdef object key = fill_key(fill)
    cdef tuple known = table.get(key, ())
    if len(table) >= FILLS_MAX:
        table.clear()
    if len(known) >= 2 * FILLS_MAX:
        known = ()
    table[key] = known + (descr, data)


def remembered(cnp.dtype descr not None, object fill):
    """fill's bytes in descr, as remembered (the Python layer's conversion
    made before); None if they are not."""
    return known_fill(descr, fill)


cdef object known_fill(cnp.dtype descr, object fill):
    """fill's bytes in descr, as remembered; None if they are not."""
    fill = fill_scalar(fill)
    cdef dict table = fills_of(fill)
    cdef object known
    cdef Py_ssize_t at
    if table is None:
        return None
    known = table.get(fill_key(fill))
    if known is None:
        return None
    for at in range(0, len(<tuple>known), 2):
        if (<tuple>known)[at] is descr or (<tuple>known)[at] == descr:
            return (<tuple>known)[at + 1]
    return None


# --- triu, tril, band, trilu, mirror --------------------------------------------------

cdef object band_door(object m, object lo, object hi, object fill, object out,
                      object order):
    """band (lo, hi) of m, the rest `fill`, into out or a fresh result laid
    out as order says, for the common call: m plain with 2 or more
    dimensions, lo and hi ints or None, fill None or remembered, out
    plain_out, order one of numpy's or None. None for any other call."""
    cdef cnp.ndarray a
    cdef object data = None
    cdef int code, nd
    cdef Py_ssize_t rows, cols
    if (not plain(m, 2) or (lo is not None and type(lo) is not int)
            or (hi is not None and type(hi) is not int)):
        return None
    a = <cnp.ndarray>m
    if fill is not None:
        data = known_fill(a.descr, fill)
        if data is None:
            return None
    code = order_code(order)
    if code < 0 or not plain_out(a, out):
        return None
    nd = cnp.PyArray_NDIM(a)
    rows = cnp.PyArray_DIMS(a)[nd - 2]
    cols = cnp.PyArray_DIMS(a)[nd - 1]
    return band_of(a, out, bound(lo, -rows, rows, cols), bound(hi, cols, rows, cols),
                   data, <Order>code)


cdef object triangle_door(object m, object k, bint upper, object fill,
                          object order, object out):
    """triu (upper) or tril's common call, as band_door; None for any other."""
    k = given(k, 0)
    if m is MISSING or type(k) is not int:
        return None
    return band_door(m, k if upper else None, None if upper else k,
                     given(fill, None), given(out, None), given(order, None))


def _triu(m=MISSING, k=MISSING, /, *args, fill=MISSING, order=MISSING,
          out=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = triangle_door(m, k, True, fill, order, out)
        elif (p := with_keywords(("m", "k"), [m, k], kwargs)) is not None:
            result = triangle_door(p[0], p[1], True, fill, order, out)
    if result is None:
        result = wrapped("triu", (m, k), args, kwargs,
                         {"fill": fill, "order": order, "out": out})
    return result


def _tril(m=MISSING, k=MISSING, /, *args, fill=MISSING, order=MISSING,
          out=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = triangle_door(m, k, False, fill, order, out)
        elif (p := with_keywords(("m", "k"), [m, k], kwargs)) is not None:
            result = triangle_door(p[0], p[1], False, fill, order, out)
    if result is None:
        result = wrapped("tril", (m, k), args, kwargs,
                         {"fill": fill, "order": order, "out": out})
    return result


cdef object band_call(object m, object lo, object hi, object fill, object order,
                      object out):
    """band's common call, as band_door; None for any other."""
    if m is MISSING:
        return None
    return band_door(m, given(lo, None), given(hi, None), given(fill, None),
                     given(out, None), given(order, None))


def _band(m=MISSING, lo=MISSING, hi=MISSING, /, *args, fill=MISSING,
          order=MISSING, out=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = band_call(m, lo, hi, fill, order, out)
        elif (p := with_keywords(("m", "lo", "hi"), [m, lo, hi], kwargs)) is not None:
            result = band_call(p[0], p[1], p[2], fill, order, out)
    if result is None:
        result = wrapped("band", (m, lo, hi), args, kwargs,
                         {"fill": fill, "order": order, "out": out})
    return result


cdef bint onnx_plain(object x) noexcept:
    """x is an exact numpy array of a type of Trilu's type constraint that
    numpy has: bool, the integers, float16/32/64, complex64/128 and fixed
    strings (bfloat16 is the Python layer's to recognise)."""
    cdef int t
    if type(x) is not cnp.ndarray:
        return False
    t = (<cnp.ndarray>x).descr.type_num
    return (cnp.NPY_BOOL <= t <= cnp.NPY_ULONGLONG or t == cnp.NPY_FLOAT16
            or t == cnp.NPY_FLOAT or t == cnp.NPY_DOUBLE or t == cnp.NPY_CFLOAT
            or t == cnp.NPY_CDOUBLE or t == cnp.NPY_STRING or t == cnp.NPY_UNICODE)


cdef object trilu_door(object input, object k, object upper, object order,
                       object out):
    """trilu's common call (upper a bool, input of a type onnx_plain
    knows), as band_door; None for any other."""
    k = given(k, 0)
    upper = given(upper, True)
    if (type(k) is not int or not (upper is True or upper is False)
            or not onnx_plain(input)):
        return None
    return band_door(input, k if upper else None, None if upper else k, None,
                     given(out, None), given(order, None))


def _trilu(input=MISSING, k=MISSING, upper=MISSING, /, *args, order=MISSING,
           out=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = trilu_door(input, k, upper, order, out)
        elif (p := with_keywords(("input", "k", "upper"), [input, k, upper],
                                 kwargs)) is not None:
            result = trilu_door(p[0], p[1], p[2], order, out)
    if result is None:
        result = wrapped("trilu", (input, k, upper), args, kwargs,
                         {"order": order, "out": out})
    return result


cdef object mirror_door(object m, object upper, object conj, object order,
                        object out):
    """mirror's common call: m plain and square, upper a bool, no conj, out
    plain_out, order one of numpy's or None; None for any other."""
    cdef cnp.ndarray a
    cdef int nd, code = order_code(given(order, None))
    upper = given(upper, True)
    out = given(out, None)
    if (not (upper is True or upper is False) or given(conj, False) is not False
            or code < 0 or not plain(m, 2)):
        return None
    a = <cnp.ndarray>m
    nd = cnp.PyArray_NDIM(a)
    if (cnp.PyArray_DIMS(a)[nd - 1] != cnp.PyArray_DIMS(a)[nd - 2]
            or not plain_out(a, out)):
        return None
    return mirror_of(a, out, upper, NULL, <Order>code)


def _mirror(m=MISSING, /, *args, upper=MISSING, conj=MISSING, order=MISSING,
            out=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = mirror_door(m, upper, conj, order, out)
        elif (p := with_keywords(("m",), [m], kwargs)) is not None:
            result = mirror_door(p[0], upper, conj, order, out)
    if result is None:
        result = wrapped("mirror", (m,), args, kwargs,
                         {"upper": upper, "conj": conj, "order": order, "out": out})
    return result


# --- pack, unpack ---------------------------------------------------------------------

cdef int storage_order(object order) noexcept:
    """pack's and unpack's order= as given: 1 for "F" (columns), 0 for "C"
    or not given, -1 for any other (the Python layer's to check)."""
    if order is MISSING:
        return 0
    if type(order) is str:
        if order == "C":
            return 0
        if order == "F":
            return 1
    return -1


cdef object pack_door(object m, object k, object upper, object order, object out):
    """pack's common call: m plain, k an int, upper a bool, order "C" or "F",
    out apart_out; None for any other."""
    cdef cnp.ndarray a
    cdef int nd, columns = storage_order(order)
    cdef Py_ssize_t rows, cols, lo, hi
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    k = given(k, 0)
    upper = given(upper, True)
    out = given(out, None)
    if (type(k) is not int or not (upper is True or upper is False) or columns < 0
            or not plain(m, 2)):
        return None
    a = <cnp.ndarray>m
    nd = cnp.PyArray_NDIM(a)
    rows = cnp.PyArray_DIMS(a)[nd - 2]
    cols = cnp.PyArray_DIMS(a)[nd - 1]
    lo = bound(k if upper else None, -rows, rows, cols)
    hi = bound(None if upper else k, cols, rows, cols)
    if out is None:
        out = packed_result(a, lo, hi)
    else:
        packed_dims(a, lo, hi, dims)
        if not apart_out(a, out, nd - 1, dims):
            return None
    return packed_of(a, out, PACK, lo, hi, None, columns)


def _pack(m=MISSING, k=MISSING, /, *args, upper=MISSING, order=MISSING, out=MISSING,
          **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = pack_door(m, k, upper, order, out)
        elif (p := with_keywords(("m", "k"), [m, k], kwargs)) is not None:
            result = pack_door(p[0], p[1], upper, order, out)
    if result is None:
        result = wrapped("pack", (m, k), args, kwargs,
                         {"upper": upper, "order": order, "out": out})
    return result


cdef inline Py_ssize_t triangle_kept(Py_ssize_t rows, Py_ssize_t cols,
                                     Py_ssize_t k, bint upper) noexcept:
    """How many elements of a rows x cols matrix triu(k) (upper) or tril(k)
    keeps (k clamped as bound clamps it)."""
    cdef Py_ssize_t kk = clip(k, -rows, cols)
    return kept_in(kk, cols, rows, cols) if upper else kept_in(-rows, kk, rows, cols)


cdef Py_ssize_t side_of(Py_ssize_t count, Py_ssize_t k, bint upper) noexcept:
    """The smallest n whose n x n matrix keeps count elements or more of
    triu(k) (upper) or tril(k); past the largest that can, that one."""
    cdef unsigned long long twice = 2 * <unsigned long long>count
    cdef Py_ssize_t low = 0, high, mid
    # kept(n) >= n(n+1)/2 once n passes the diagonals the band leaves out, of
    # which there are k (upper) or -k (lower); n past 2**31 has more elements
    # than an array can
    cdef Py_ssize_t skipped = clip(k if upper else -k, 0, 1 << 31)
    high = <Py_ssize_t>sqrt(<double>twice)
    while <unsigned long long>high * high > twice:
        high -= 1
    while <unsigned long long>(high + 1) * (high + 1) <= twice:
        high += 1
    high += skipped + 2
    while low < high:          # kept grows with n
        mid = low + (high - low) // 2
        if triangle_kept(mid, mid, k, upper) < count:
            low = mid + 1
        else:
            high = mid
    return low


def square_side(Py_ssize_t count, object k, bint upper):
    """The smallest n whose n x n matrix keeps count elements or more of
    triu(k) (upper) or tril(k); past the largest that can, that one."""
    # k clamped where every n an array can have keeps the same
    return side_of(count, bound(k, 0, 1 << 62, 1 << 62), upper)


cdef object unpack_door(object v, object n, object m, object k, object upper,
                        object order, object fill, object mirror, object out):
    """unpack's common call: v plain, n and m sides within SMALL_SIZE, both
    None for the one square matrix that keeps v's elements (their count
    within SMALL_SIZE), k within it too, upper a bool, order "C" or "F", fill
    None or remembered, mirror a bool (True: square matrices), out
    apart_out; None for any other."""
    cdef cnp.ndarray a
    cdef object data = None
    cdef Py_ssize_t rows, cols = 0, kk = 0, count
    cdef int nd, columns = storage_order(order)
    cdef cnp.npy_intp dims[cnp.NPY_MAXDIMS]
    n = given(n, None)
    m = given(m, None)
    k = given(k, 0)
    upper = given(upper, True)
    mirror = given(mirror, False)
    out = given(out, None)
    fill = given(fill, None)
    if (not (upper is True or upper is False) or columns < 0
            or not (mirror is False or mirror is True)
            or not small_int(k, &kk) or not plain(v, 1)):
        return None
    a = <cnp.ndarray>v
    if fill is not None:
        data = known_fill(a.descr, fill)
        if data is None:
            return None
        if fill_byte(PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)) == 0:
            data = None        # zeros: as the Python layer, which fresh zero pages hold
    nd = cnp.PyArray_NDIM(a)
    count = cnp.PyArray_DIMS(a)[nd - 1]
    if n is None:
        if m is not None or count > SMALL_SIZE:
            return None
        rows = cols = side_of(count, kk, upper)
        if triangle_kept(rows + 1, rows + 1, kk, upper) == count:  # two sides do
            return None
    elif not (small_int(n, &rows) and rows >= 0):
        return None
    elif m is None:
        cols = rows
    elif not (small_int(m, &cols) and cols >= 0):
        return None
    if n is not None and not small_result(&rows, &cols):
        return None
    if triangle_kept(rows, cols, kk, upper) != count or (mirror and rows != cols):
        return None
    if out is not None:
        unpacked_dims(a, rows, cols, dims)
        if not apart_out(a, out, nd + 1, dims):
            return None
    return unpack_of(a, out, k if upper else None, None if upper else k, data,
                     rows, cols, columns, mirror, NULL)


def _unpack(v=MISSING, n=MISSING, m=MISSING, k=MISSING, /, *args, upper=MISSING,
            order=MISSING, fill=MISSING, mirror=MISSING, out=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = unpack_door(v, n, m, k, upper, order, fill, mirror, out)
        elif (p := with_keywords(("v", "n", "m", "k"), [v, n, m, k],
                                 kwargs)) is not None:
            result = unpack_door(p[0], p[1], p[2], p[3], upper, order, fill, mirror,
                                 out)
    if result is None:
        result = wrapped("unpack", (v, n, m, k), args, kwargs,
                         {"upper": upper, "order": order, "fill": fill,
                          "mirror": mirror, "out": out})
    return result


# --- tri, the index family ------------------------------------------------------------

# The dtype argument of tri -> (its dtype, numpy's casts of True and False to
# it), or None for dtypes numpy fills itself: filled by the Python layer
# (_indices), read here in C.
cdef dict _tri_dtypes = {}
tri_dtypes = _tri_dtypes


cdef bint keyed_dtype(object dtype) noexcept:
    """dtype can be a key of tri_dtypes as it is: None, a class, a str, or a
    dtype without metadata (which would equal, and hash as, the same dtype
    without)."""
    return (dtype is None or type(dtype) is type or type(dtype) is str
            or (isinstance(dtype, cnp.dtype)
                and descr_metadata(<cnp.dtype>dtype) == NULL))


def keyed(object dtype):
    """keyed_dtype, for the Python layer that fills the doors' tables."""
    return keyed_dtype(dtype)


cdef object tri_door(object N, object M, object k, object dtype, object like):
    """tri's common call: small ints (small_int, small_result), a dtype
    tri_dtypes knows, no like; None for any other."""
    cdef Py_ssize_t rows = 0, cols = 0, kk = 0
    cdef tuple plain_dtype
    M, k, dtype = given(M, None), given(k, 0), given(dtype, float)
    if not (given(like, None) is None and small_int(N, &rows)
            and small_int(k, &kk) and (M is None or small_int(M, &cols))
            and keyed_dtype(dtype)):
        return None
    if M is None:
        cols = rows
    plain_dtype = _tri_dtypes.get(dtype)
    if plain_dtype is None or not small_result(&rows, &cols):
        return None
    try:
        return mask_of(rows, cols, None, k, plain_dtype[0], plain_dtype[1],
                       plain_dtype[2])
    except MemoryError:        # the Python layer's answer: numpy's
        return None


def _tri(N=MISSING, M=MISSING, k=MISSING, dtype=MISSING, /, *args, like=MISSING,
         **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = tri_door(N, M, k, dtype, like)
        elif (p := with_keywords(("N", "M", "k", "dtype"), [N, M, k, dtype],
                                 kwargs)) is not None:
            result = tri_door(p[0], p[1], p[2], p[3], like)
    if result is None:
        result = wrapped("tri", (N, M, k, dtype), args, kwargs, {"like": like})
    return result


# The dtype argument of band_mask -> (its dtype, the bytes of its default
# keep and fill), and of attention_mask -> (its dtype, the bytes of where
# attention is allowed and where not): filled by the Python layer (_masks),
# read here in C.
cdef dict _mask_dtypes = {}
mask_dtypes = _mask_dtypes
cdef dict _attention_dtypes = {}
attention_dtypes = _attention_dtypes


cdef bint mask_sides(object n, object m, Py_ssize_t *rows,
                     Py_ssize_t *cols) noexcept:
    """n and m (None: n) are small ints (small_int) and not negative, then
    in rows and cols."""
    if not small_int(n, rows) or rows[0] < 0:
        return False
    cols[0] = rows[0]
    return m is None or (small_int(m, cols) and cols[0] >= 0)


cdef object mask_door(Py_ssize_t rows, Py_ssize_t cols, object lo, object hi,
                      tuple values, object keep, object fill):
    """A mask's common call, as band_mask's Python function makes it: sides
    as mask_sides takes them, of a small result (small_result), lo and hi
    ints or None, values (its dtype, the bytes of keep and fill where not
    given), keep and fill None or remembered; None for any other."""
    cdef object keep_bytes, fill_bytes
    if (values is None or (lo is not None and type(lo) is not int)
            or (hi is not None and type(hi) is not int)):
        return None
    keep_bytes = values[1] if keep is None else known_fill(values[0], keep)
    fill_bytes = values[2] if fill is None else known_fill(values[0], fill)
    if keep_bytes is None or fill_bytes is None or not small_result(&rows, &cols):
        return None
    try:
        return mask_of(rows, cols, lo, hi, values[0], keep_bytes, fill_bytes)
    except MemoryError:        # the Python layer's answer, and its error
        return None


cdef object band_mask_door(object n, object m, object lo, object hi, object dtype,
                           object keep, object fill, object like, object chunks):
    """band_mask's common call: a dtype mask_dtypes knows, no like, no
    chunks, the rest as mask_door takes it; None for any other."""
    cdef Py_ssize_t rows = 0, cols = 0
    dtype = given(dtype, bool)
    if (given(like, None) is not None or given(chunks, None) is not None
            or not keyed_dtype(dtype) or not mask_sides(n, given(m, None), &rows,
                                                        &cols)):
        return None
    return mask_door(rows, cols, given(lo, None), given(hi, None),
                     _mask_dtypes.get(dtype), given(keep, None), given(fill, None))


def _band_mask(n=MISSING, m=MISSING, lo=MISSING, hi=MISSING, /, *args,
               dtype=MISSING, keep=MISSING, fill=MISSING, like=MISSING,
               chunks=MISSING, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = band_mask_door(n, m, lo, hi, dtype, keep, fill, like, chunks)
        elif (p := with_keywords(("n", "m", "lo", "hi"), [n, m, lo, hi],
                                 kwargs)) is not None:
            result = band_mask_door(p[0], p[1], p[2], p[3], dtype, keep, fill,
                                    like, chunks)
    if result is None:
        result = wrapped("band_mask", (n, m, lo, hi), args, kwargs,
                         {"dtype": dtype, "keep": keep, "fill": fill, "like": like,
                          "chunks": chunks})
    return result


cdef object attention_door(object q_len, object k_len, object window, object align,
                           object dtype, object like, object chunks):
    """attention_mask's common call: lengths as mask_door takes them, window
    None or an int of 1 or more, align one of the two, a dtype
    attention_dtypes knows, no like, no chunks; None for any other."""
    cdef Py_ssize_t rows = 0, cols = 0, size = 0, diag
    k_len, window, align = given(k_len, None), given(window, None), given(
        align, "bottom_right")
    dtype = given(dtype, bool)
    if (given(like, None) is not None or given(chunks, None) is not None
            or not keyed_dtype(dtype) or type(align) is not str
            or not mask_sides(q_len, k_len, &rows, &cols)):
        return None
    if window is not None and not (small_int(window, &size) and size >= 1):
        return None
    if align == "bottom_right":
        diag = cols - rows
    elif align == "top_left":
        diag = 0
    else:
        return None
    return mask_door(rows, cols, None if window is None else diag - size + 1, diag,
                     _attention_dtypes.get(dtype), None, None)


def _attention_mask(q_len=MISSING, k_len=MISSING, /, *args, window=MISSING,
                    align=MISSING, dtype=MISSING, like=MISSING, chunks=MISSING,
                    **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = attention_door(q_len, k_len, window, align, dtype, like, chunks)
        elif (p := with_keywords(("q_len", "k_len"), [q_len, k_len],
                                 kwargs)) is not None:
            result = attention_door(p[0], p[1], window, align, dtype, like, chunks)
    if result is None:
        result = wrapped("attention_mask", (q_len, k_len), args, kwargs,
                         {"window": window, "align": align, "dtype": dtype,
                          "like": like, "chunks": chunks})
    return result


cdef object small_triangle_indices(Py_ssize_t rows, Py_ssize_t cols, object k,
                                   bint upper):
    """triangle_indices; None where it cannot allocate (the Python layer then
    asks numpy)."""
    try:
        return triangle_indices(rows, cols, k, upper)
    except MemoryError:
        return None


cdef object indices_door(object n, object k, object m, bint upper):
    """triu_indices (upper) or tril_indices' common call: small ints
    (small_int, small_result); None for any other."""
    cdef Py_ssize_t rows = 0, cols = 0, kk = 0
    k, m = given(k, 0), given(m, None)
    if not (small_int(n, &rows) and small_int(k, &kk)):
        return None
    if m is None:
        cols = rows
    elif not small_int(m, &cols):
        return None
    if not small_result(&rows, &cols):
        return None
    return small_triangle_indices(rows, cols, k, upper)


def _triu_indices(n=MISSING, k=MISSING, m=MISSING, /, *args, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = indices_door(n, k, m, True)
        elif (p := with_keywords(("n", "k", "m"), [n, k, m], kwargs)) is not None:
            result = indices_door(p[0], p[1], p[2], True)
    if result is None:
        result = wrapped("triu_indices", (n, k, m), args, kwargs, {})
    return result


def _tril_indices(n=MISSING, k=MISSING, m=MISSING, /, *args, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = indices_door(n, k, m, False)
        elif (p := with_keywords(("n", "k", "m"), [n, k, m], kwargs)) is not None:
            result = indices_door(p[0], p[1], p[2], False)
    if result is None:
        result = wrapped("tril_indices", (n, k, m), args, kwargs, {})
    return result


cdef object indices_from(object arr, object k, bint upper):
    """The _from forms' common call: a 2-D exact numpy array of a small
    result (small_result), a small int k; None for any other."""
    cdef Py_ssize_t rows = 0, cols = 0, kk = 0
    k = given(k, 0)
    if (type(arr) is not cnp.ndarray or cnp.PyArray_NDIM(<cnp.ndarray>arr) != 2
            or not small_int(k, &kk)):
        return None
    rows = cnp.PyArray_DIMS(<cnp.ndarray>arr)[0]
    cols = cnp.PyArray_DIMS(<cnp.ndarray>arr)[1]
    if not small_result(&rows, &cols):
        return None
    return small_triangle_indices(rows, cols, k, upper)


def _triu_indices_from(arr=MISSING, k=MISSING, /, *args, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = indices_from(arr, k, True)
        elif (p := with_keywords(("arr", "k"), [arr, k], kwargs)) is not None:
            result = indices_from(p[0], p[1], True)
    if result is None:
        result = wrapped("triu_indices_from", (arr, k), args, kwargs, {})
    return result


def _tril_indices_from(arr=MISSING, k=MISSING, /, *args, **kwargs):
    cdef object result = None
    cdef list p
    if not args:
        if not kwargs:
            result = indices_from(arr, k, False)
        elif (p := with_keywords(("arr", "k"), [arr, k], kwargs)) is not None:
            result = indices_from(p[0], p[1], False)
    if result is None:
        result = wrapped("tril_indices_from", (arr, k), args, kwargs, {})
    return result


cdef dict _DOORS = {
    "triu": _triu, "tril": _tril, "band": _band, "trilu": _trilu,
    "mirror": _mirror, "pack": _pack, "unpack": _unpack, "tri": _tri,
    "triu_indices": _triu_indices, "tril_indices": _tril_indices,
    "triu_indices_from": _triu_indices_from,
    "tril_indices_from": _tril_indices_from,
    "band_mask": _band_mask, "attention_mask": _attention_mask,
}
