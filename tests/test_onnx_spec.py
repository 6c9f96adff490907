"""trilu.trilu is the ONNX Trilu-14 operator.

Checked three ways: the 18 examples of the operator's documentation with their
literal matrices; the 18 node test cases that ship in the installed onnx
package, run as an onnx backend runs them (a model of the node, trilu's op in
onnx's ReferenceEvaluator); and every type of the type constraint against the
spec's own per-element definition (keep (i, j) iff j - i >= k, or <= k for
lower).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

import numpy as np
import pytest
from _cases import (
    ONNX_DTYPES,
    assert_same,
    k_int,
    layout,
    make,
    onnx_zero,
    snapshot,
    spec_oracle,
)

import trilu

# --- the documentation's 18 examples ---------------------------------------------

X_TRIU = [[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 0, 8, 7], [4, 3, 4, 2, 4]]
X_TRIL = [[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]]
SQ_TRIU = [[[4, 6, 9], [7, 5, 4], [8, 1, 2]], [[1, 4, 9], [9, 6, 3], [8, 9, 8]]]
SQ_TRIL = [[[0, 4, 3], [2, 0, 9], [8, 2, 5]], [[2, 7, 2], [2, 6, 0], [2, 6, 5]]]
ROW_TRIU = [[[1, 4, 9, 7, 1]], [[9, 2, 8, 8, 4]], [[3, 9, 7, 4, 2]]]
ROW_TRIL = [[[6, 2, 4, 1, 6]], [[8, 3, 8, 7, 0]], [[2, 2, 9, 5, 9]]]
ZEROS_4x5 = [[0] * 5] * 4

# name: (x, k or None when the example has no k input, upper, expected result)
SPEC_EXAMPLES: dict[str, tuple[Any, int | None, bool, Any]] = {
    "triu": (
        X_TRIU,
        None,
        True,
        [[4, 7, 3, 7, 9], [0, 2, 8, 6, 9], [0, 0, 0, 8, 7], [0, 0, 0, 2, 4]],
    ),
    "triu_neg": (
        X_TRIU,
        -1,
        True,
        [[4, 7, 3, 7, 9], [1, 2, 8, 6, 9], [0, 4, 0, 8, 7], [0, 0, 4, 2, 4]],
    ),
    "triu_out_neg_out": (X_TRIU, -7, True, X_TRIU),
    "triu_pos": (
        X_TRIU,
        2,
        True,
        [[0, 0, 3, 7, 9], [0, 0, 0, 6, 9], [0, 0, 0, 0, 7], [0, 0, 0, 0, 0]],
    ),
    "triu_out_pos": (X_TRIU, 6, True, ZEROS_4x5),
    "triu_square": (
        SQ_TRIU,
        None,
        True,
        [[[4, 6, 9], [0, 5, 4], [0, 0, 2]], [[1, 4, 9], [0, 6, 3], [0, 0, 8]]],
    ),
    "triu_square_neg": (
        SQ_TRIU,
        -1,
        True,
        [[[4, 6, 9], [7, 5, 4], [0, 1, 2]], [[1, 4, 9], [9, 6, 3], [0, 9, 8]]],
    ),
    "triu_one_row": (
        ROW_TRIU,
        1,
        True,
        [[[0, 4, 9, 7, 1]], [[0, 2, 8, 8, 4]], [[0, 9, 7, 4, 2]]],
    ),
    "triu_zero": (np.zeros((0, 5), np.int64), 6, True, np.zeros((0, 5), np.int64)),
    "tril": (
        X_TRIL,
        None,
        False,
        [[4, 0, 0, 0, 0], [1, 2, 0, 0, 0], [9, 4, 1, 0, 0], [4, 3, 4, 2, 0]],
    ),
    "tril_neg": (
        X_TRIL,
        -1,
        False,
        [[0, 0, 0, 0, 0], [1, 0, 0, 0, 0], [9, 4, 0, 0, 0], [4, 3, 4, 0, 0]],
    ),
    "tril_out_neg": (X_TRIL, -7, False, ZEROS_4x5),
    "tril_pos": (
        X_TRIL,
        2,
        False,
        [[4, 7, 3, 0, 0], [1, 2, 8, 6, 0], [9, 4, 1, 8, 7], [4, 3, 4, 2, 4]],
    ),
    "tril_out_pos": (X_TRIL, 6, False, X_TRIL),
    "tril_square": (
        SQ_TRIL,
        None,
        False,
        [[[0, 0, 0], [2, 0, 0], [8, 2, 5]], [[2, 0, 0], [2, 6, 0], [2, 6, 5]]],
    ),
    "tril_square_neg": (
        SQ_TRIL,
        -1,
        False,
        [[[0, 0, 0], [2, 0, 0], [8, 2, 0]], [[0, 0, 0], [2, 0, 0], [2, 6, 0]]],
    ),
    "tril_one_row": (
        ROW_TRIL,
        None,
        False,
        [[[6, 0, 0, 0, 0]], [[8, 0, 0, 0, 0]], [[2, 0, 0, 0, 0]]],
    ),
    "tril_zero": (
        np.zeros((3, 0, 5), np.int64),
        6,
        False,
        np.zeros((3, 0, 5), np.int64),
    ),
}


@pytest.mark.parametrize("k_form", ["0d-int64", "int"])
@pytest.mark.parametrize(
    "example", list(SPEC_EXAMPLES.values()), ids=list(SPEC_EXAMPLES)
)
def test_spec_example(example: tuple[Any, int | None, bool, Any], k_form: str) -> None:
    """Each documented example gives its documented result (int64)."""
    x_list, k, upper, y_list = example
    x = np.asarray(x_list, np.int64)
    want = np.asarray(y_list, np.int64)
    before = snapshot(x)
    if k is None:
        got = trilu.trilu(x) if upper else trilu.trilu(x, upper=0)
    else:
        kk = np.array(k).astype(np.int64) if k_form == "0d-int64" else k
        got = trilu.trilu(x, kk, upper=upper)
    assert_same(got, want)
    assert snapshot(x) == before


# --- the onnx package's node test cases --------------------------------------------


# The documentation's examples are onnx's node tests, one renamed.
NODE_NAMES = sorted(
    {f"test_{name}" for name in SPEC_EXAMPLES} - {"test_tril_one_row"}
    | {"test_tril_one_row_neg"}
)
NodeCase = tuple[Any, list[np.ndarray], np.ndarray]


@functools.cache
def _onnx_node_cases() -> dict[str, NodeCase]:
    """The Trilu node tests of onnx.backend.test: (node, inputs, output), by name.

    Runs each ``export_*`` of onnx's Trilu test class with its ``expect``
    replaced by a recorder (``collect_testcases`` would run every operator's;
    the onnx wheel ships no test data files).
    """
    onnx_trilu = importlib.import_module("onnx.backend.test.case.node.trilu")
    cases: dict[str, NodeCase] = {}

    def record(node: Any, inputs: Any, outputs: Any, name: str, **_: Any) -> None:
        cases[name] = (node, list(inputs), outputs[0])

    saved = onnx_trilu.expect
    onnx_trilu.expect = record
    try:
        for name, fn in inspect.getmembers(onnx_trilu.Trilu):
            if name.startswith("export"):
                fn()
    finally:
        onnx_trilu.expect = saved
    return cases


def test_onnx_node_cases_are_the_documented_examples() -> None:
    """The installed onnx's Trilu node tests are those run below: none unrun."""
    pytest.importorskip("onnx")
    assert sorted(_onnx_node_cases()) == NODE_NAMES


@pytest.mark.parametrize("name", NODE_NAMES)
def test_onnx_node_case(name: str) -> None:
    """Each node test through trilu's op in onnx's ReferenceEvaluator, as a
    backend runs it: the case's expected output, bit for bit."""
    onnx = pytest.importorskip("onnx")
    from onnx import helper  # noqa: PLC0415 - onnx is optional here
    from onnx.reference import ReferenceEvaluator  # noqa: PLC0415

    from trilu.onnx import Trilu  # noqa: PLC0415

    node, inputs, want = _onnx_node_cases()[name]
    names = [n for n in node.input if n]

    def info(n: str, a: np.ndarray) -> Any:
        return helper.make_tensor_value_info(
            n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape
        )

    graph = helper.make_graph(
        [node],
        name,
        [info(n, a) for n, a in zip(names, inputs, strict=True)],
        [info(node.output[0], want)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model, full_check=True)
    session = ReferenceEvaluator(model, new_ops=[Trilu])
    assert [type(n) for n in session.rt_nodes_] == [Trilu]
    before = [snapshot(x) for x in inputs]
    (got,) = session.run(None, dict(zip(names, inputs, strict=True)))
    assert_same(got, np.asarray(want))
    assert [snapshot(x) for x in inputs] == before


# --- every type of the type constraint ---------------------------------------------

ONNX_K = [0, 1, -1, 2, -2, 4, -4, 100, -100]


@pytest.mark.parametrize("name", ["C", "F", "transposed", "neg_both", "step"])
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 5), (2, 1, 2, 2)], ids=str)
@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
@pytest.mark.parametrize("dtype", list(ONNX_DTYPES.values()), ids=list(ONNX_DTYPES))
def test_type_constraint(
    dtype: np.dtype, upper: bool, shape: tuple[int, ...], name: str
) -> None:
    """Every ONNX type, layout and k: the spec's per-element answer, bit for bit.

    Strings in any form are zeroed to the empty string.
    """
    rng = np.random.default_rng(14)
    x = layout(name, dtype, shape, rng)
    before = snapshot(x)
    for k in ONNX_K:
        want = spec_oracle(x, k, upper, onnx_zero(x.dtype))
        assert_same(trilu.trilu(x, k, upper), want)
        assert_same(trilu.trilu(x, k=k, upper=upper), want)
    assert snapshot(x) == before


@pytest.mark.parametrize("dtype", [">f8", ">i2", ">c16", ">u4", ">U3"])
def test_non_native_byte_order(dtype: str) -> None:
    """A big-endian tensor gives the same values, in native byte order."""
    rng = np.random.default_rng(3)
    x = make(np.dtype(dtype), (3, 4), rng)
    for k in (0, 1, -2):
        for upper in (True, False):
            want = spec_oracle(x, k, upper, onnx_zero(x.dtype))
            assert want.dtype.isnative
            assert_same(trilu.trilu(x, k, upper), want)


@pytest.mark.parametrize("dtype", list(ONNX_DTYPES.values()), ids=list(ONNX_DTYPES))
@pytest.mark.parametrize("upper", [True, False], ids=["upper", "lower"])
def test_in_place(dtype: np.dtype, upper: bool) -> None:
    """out=input works for every ONNX type; strings are zeroed to ""."""
    rng = np.random.default_rng(5)
    x = make(dtype, (2, 4, 3), rng)
    want = spec_oracle(x, 1, upper, onnx_zero(x.dtype))
    assert trilu.trilu(x, 1, upper, out=x) is x
    assert_same(x, want)


def test_object_strings_zeroed_to_empty_string() -> None:
    """An object array of str gets "" (not numpy's int 0) where zeroed."""
    x = np.array([["a", "b"], ["c", "d"]], dtype=object)
    got = trilu.trilu(x)
    assert got.tolist() == [["a", "b"], ["", "d"]]
    assert type(got[1, 0]) is str
    got = trilu.trilu(x, upper=False)
    assert got.tolist() == [["a", ""], ["c", "d"]]


# --- k and upper forms ------------------------------------------------------------

K_FORMS = {
    "int": lambda k: k,
    "np.int64": np.int64,
    "np.int32": np.int32,
    "np.int8": np.int8,
    "np.uint8-or-int": lambda k: np.uint8(k) if k >= 0 else np.int16(k),
    "0d-int64": lambda k: np.array(k, np.int64),
    "0d-int32": lambda k: np.array(k, np.int32),
    "1d-int64": lambda k: np.array([k], np.int64),
    "1d-uint64-or-int64": lambda k: np.array([k], np.uint64 if k >= 0 else np.int64),
}
UPPER_FORMS = {
    "bool": (True, False),
    "int": (1, 0),
    "np.bool": (np.True_, np.False_),
    "np.int64": (np.int64(1), np.int64(0)),
}


@pytest.mark.parametrize(
    "upper_form", list(UPPER_FORMS.values()), ids=list(UPPER_FORMS)
)
@pytest.mark.parametrize("k_form", list(K_FORMS.values()), ids=list(K_FORMS))
def test_k_and_upper_forms(k_form: Any, upper_form: tuple[Any, Any]) -> None:
    """k as int, numpy int, 0-D or 1-element 1-D array; upper as bool, 0/1."""
    x = np.arange(1, 21, dtype=np.float32).reshape(4, 5)
    for k in (0, 2, -1, 7, -7):
        kk = k_form(k)
        assert k_int(kk) == k
        for upper, flag in zip(upper_form, (True, False), strict=True):
            assert_same(trilu.trilu(x, kk, upper), spec_oracle(x, k, flag, 0))
            assert_same(trilu.trilu(x, k=kk, upper=upper), spec_oracle(x, k, flag, 0))


@pytest.mark.parametrize(
    "k",
    [2**70, 2**63, np.array(2**63 - 1), np.array([2**64 - 1], np.uint64)],
    ids=["2**70", "2**63", "int64max", "uint64max"],
)
def test_far_out_k(k: Any) -> None:
    """A k beyond every diagonal: upper gives zeros, lower keeps everything."""
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    assert_same(trilu.trilu(x, k), np.zeros_like(x))
    assert_same(trilu.trilu(x, k, upper=False), x)
    neg = -k_int(k)
    assert_same(trilu.trilu(x, neg), x)
    assert_same(trilu.trilu(x, neg, upper=False), np.zeros_like(x))


def test_defaults() -> None:
    """k defaults to 0 and upper to true, as in the spec."""
    x = np.arange(1, 10).reshape(3, 3)
    assert_same(trilu.trilu(x), spec_oracle(x, 0, True, 0))
    assert_same(trilu.trilu(x.tolist()), spec_oracle(x, 0, True, 0))
