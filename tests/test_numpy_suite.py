"""numpy's own tests of triu/tril, run against trilu.triu / trilu.tril.

Copied from numpy's ``numpy/lib/tests/test_twodim_base.py`` (numpy 2.4:
``test_tril_triu_ndim2``, ``test_tril_triu_ndim3``, ``test_tril_triu_with_inf``,
``test_tril_triu_dtype``, ``test_mask_indices``) with ``np.triu``/``np.tril``
replaced by trilu's; otherwise unchanged.

Copyright (c) 2005-2025, NumPy Developers. All rights reserved. Used under
numpy's BSD 3-clause license (https://github.com/numpy/numpy/blob/main/LICENSE.txt).
"""

import numpy as np
from numpy import array, mask_indices
from numpy.testing import assert_array_equal, assert_equal

import trilu

# fmt: off  (numpy's code as numpy wrote it)


def test_tril_triu_ndim2():
    for dtype in np.typecodes["AllFloat"] + np.typecodes["AllInteger"]:
        a = np.ones((2, 2), dtype=dtype)
        b = trilu.tril(a)
        c = trilu.triu(a)
        assert_array_equal(b, [[1, 0], [1, 1]])
        assert_array_equal(c, b.T)
        # should return the same dtype as the original array
        assert_equal(b.dtype, a.dtype)
        assert_equal(c.dtype, a.dtype)


def test_tril_triu_ndim3():
    for dtype in np.typecodes["AllFloat"] + np.typecodes["AllInteger"]:
        a = np.array(
            [
                [[1, 1], [1, 1]],
                [[1, 1], [1, 0]],
                [[1, 1], [0, 0]],
            ],
            dtype=dtype,
        )
        a_tril_desired = np.array(
            [
                [[1, 0], [1, 1]],
                [[1, 0], [1, 0]],
                [[1, 0], [0, 0]],
            ],
            dtype=dtype,
        )
        a_triu_desired = np.array(
            [
                [[1, 1], [0, 1]],
                [[1, 1], [0, 0]],
                [[1, 1], [0, 0]],
            ],
            dtype=dtype,
        )
        a_triu_observed = trilu.triu(a)
        a_tril_observed = trilu.tril(a)
        assert_array_equal(a_triu_observed, a_triu_desired)
        assert_array_equal(a_tril_observed, a_tril_desired)
        assert_equal(a_triu_observed.dtype, a.dtype)
        assert_equal(a_tril_observed.dtype, a.dtype)


def test_tril_triu_with_inf():
    # Issue 4859
    arr = np.array([[1, 1, np.inf], [1, 1, 1], [np.inf, 1, 1]])
    out_tril = np.array([[1, 0, 0], [1, 1, 0], [np.inf, 1, 1]])
    out_triu = out_tril.T
    assert_array_equal(trilu.triu(arr), out_triu)
    assert_array_equal(trilu.tril(arr), out_tril)


def test_tril_triu_dtype():
    # Issue 4916
    # tril and triu should return the same dtype as input
    for c in np.typecodes["All"]:
        if c == "V":
            continue
        arr = np.zeros((3, 3), dtype=c)
        assert_equal(trilu.triu(arr).dtype, arr.dtype)
        assert_equal(trilu.tril(arr).dtype, arr.dtype)

    # check special cases
    arr = np.array(
        [
            ["2001-01-01T12:00", "2002-02-03T13:56"],
            ["2004-01-01T12:00", "2003-01-03T13:45"],
        ],
        dtype="datetime64",
    )
    assert_equal(trilu.triu(arr).dtype, arr.dtype)
    assert_equal(trilu.tril(arr).dtype, arr.dtype)

    arr = np.zeros((3, 3), dtype="f4,f4")
    assert_equal(trilu.triu(arr).dtype, arr.dtype)
    assert_equal(trilu.tril(arr).dtype, arr.dtype)


def test_mask_indices():
    # simple test without offset
    iu = mask_indices(3, trilu.triu)
    a = np.arange(9).reshape(3, 3)
    assert_array_equal(a[iu], array([0, 1, 2, 4, 5, 8]))
    # Now with an offset
    iu1 = mask_indices(3, trilu.triu, 1)
    assert_array_equal(a[iu1], array([1, 2, 5]))


# fmt: on
# --- not from numpy: the same check for tril ---------------------------------------


def test_mask_indices_tril():
    """mask_indices with trilu.tril, as numpy's docs use it with np.tril."""
    il = mask_indices(3, trilu.tril)
    a = np.arange(9).reshape(3, 3)
    assert_array_equal(a[il], array([0, 3, 4, 6, 7, 8]))
    il1 = mask_indices(3, trilu.tril, -1)
    assert_array_equal(a[il1], array([3, 6, 7]))
    assert_array_equal(il1[0], np.mask_indices(3, np.tril, -1)[0])
