"""trilu.onnx.Trilu: the op in onnx's ReferenceEvaluator, and mlprodict's surface.

onnx's own Trilu node tests run through the op in test_onnx_spec.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _cases import ONNX_DTYPES, assert_same, onnx_zero, run_python, spec_oracle

onnx = pytest.importorskip("onnx")
pytest.importorskip("ml_dtypes")  # onnx's numpy type for bfloat16

from onnx import AttributeProto, TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from trilu.onnx import Trilu  # noqa: E402

OPSET = 14

# All of Trilu's type constraint, from the schema itself.
_CONSTRAINT = onnx.defs.get_schema("Trilu", OPSET).type_constraints[0]
TYPES = [
    getattr(TensorProto, name.removeprefix("tensor(").removesuffix(")").upper())
    for name in _CONSTRAINT.allowed_type_strs
]
NUMERIC = [t for t in TYPES if t != TensorProto.STRING]
ids = TensorProto.DataType.Name


def sample(elem_type: int, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """Nonzero values of an ONNX element type, as onnx represents them."""
    values = np.random.default_rng(seed).integers(1, 100, size=shape)
    if elem_type == TensorProto.STRING:
        return values.astype(str).astype(object)
    if elem_type == TensorProto.BOOL:
        return values % 3 != 0
    x = values.astype(helper.tensor_dtype_to_np_dtype(elem_type))
    if x.dtype.kind == "c":
        x += 1j * values[..., ::-1]
    return x


def expected_trilu(x: np.ndarray, k: int, upper: bool) -> np.ndarray:
    """The spec's answer, with "" as the zero of strings."""
    return spec_oracle(x, k, upper, onnx_zero(x.dtype))


def trilu_model(
    elem_type: int, shape: tuple[int, ...], inputs: tuple[str, ...] = ("x", "k"), **atts
) -> onnx.ModelProto:
    """A one-node Trilu model, checked by onnx (types and shapes)."""
    node = helper.make_node("Trilu", list(inputs), ["y"], **atts)
    graph_inputs = [helper.make_tensor_value_info("x", elem_type, shape)]
    if "k" in inputs:
        graph_inputs.append(helper.make_tensor_value_info("k", TensorProto.INT64, []))
    graph = helper.make_graph(
        [node],
        "trilu",
        graph_inputs,
        [helper.make_tensor_value_info("y", elem_type, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model


# --- every type of the constraint, through a real model -------------------------------


def test_types_are_the_tables() -> None:
    """The schema's types are those of _cases.ONNX_DTYPES, which the spec tests
    cover (strings, held by onnx in object arrays, there in every form)."""
    schema = {helper.tensor_dtype_to_np_dtype(t) for t in TYPES}
    numeric = {dt for name, dt in ONNX_DTYPES.items() if not name.startswith("string")}
    assert schema == numeric | {ONNX_DTYPES["string-object"]}


@pytest.mark.parametrize("elem_type", TYPES, ids=ids)
@pytest.mark.parametrize("upper", [1, 0])
def test_every_type(elem_type: int, upper: int) -> None:
    shape = (2, 3, 4)
    session = ReferenceEvaluator(
        trilu_model(elem_type, shape, upper=upper), new_ops=[Trilu]
    )
    x = sample(elem_type, shape)
    for k in (-4, -1, 0, 1, 2, 5):
        (y,) = session.run(None, {"x": x, "k": np.array(k, np.int64)})
        assert_same(y, expected_trilu(x, k, bool(upper)))
        # every output serializes, and comes back the same
        assert_same(numpy_helper.to_array(numpy_helper.from_array(y)), y)


@pytest.mark.parametrize("elem_type", TYPES, ids=ids)
def test_input_from_a_tensor_proto(elem_type: int) -> None:
    """Inputs as onnx itself decodes them (numpy_helper.to_array)."""
    x = numpy_helper.to_array(numpy_helper.from_array(sample(elem_type, (3, 5))))
    session = ReferenceEvaluator(
        trilu_model(elem_type, (3, 5), ("x",)), new_ops=[Trilu]
    )
    (y,) = session.run(None, {"x": x})
    assert_same(y, expected_trilu(x, 0, True))


def test_strings_are_zeroed_to_empty_and_serialize() -> None:
    x = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    session = ReferenceEvaluator(
        trilu_model(TensorProto.STRING, (2, 3), upper=0), new_ops=[Trilu]
    )
    (y,) = session.run(None, {"x": x, "k": np.array(0, np.int64)})
    assert y.tolist() == [["a", "", ""], ["d", "e", ""]]
    proto = numpy_helper.from_array(y, "y")
    assert proto.data_type == TensorProto.STRING
    assert list(proto.string_data) == [b"a", b"", b"", b"d", b"e", b""]
    assert_same(numpy_helper.to_array(proto), y)


@pytest.mark.parametrize("k", [np.array(1, np.int64), np.array([1], np.int64)])
def test_k_zero_d_or_one_element(k: np.ndarray) -> None:
    x = sample(TensorProto.FLOAT, (4, 4))
    op = Trilu(helper.make_node("Trilu", ["x", "k"], ["y"]))
    assert_same(op.run(x, k)[0], np.triu(x, 1))


def test_k_named_empty_is_absent() -> None:
    """An optional input named "" reaches _run as None: k = 0."""
    x = sample(TensorProto.INT32, (3, 4))
    session = ReferenceEvaluator(
        trilu_model(TensorProto.INT32, (3, 4), ("x", ""), upper=0), new_ops=[Trilu]
    )
    (y,) = session.run(None, {"x": x})
    assert_same(y, np.tril(x))


# --- Trilu between other ops ----------------------------------------------------------


def pipeline(elem_type: int, upper: int) -> onnx.ModelProto:
    """Transpose -> Trilu(k = -kin) -> Concat -> Trilu(no k): x and k computed."""
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
        helper.make_node("Neg", ["kin"], ["k"]),
        helper.make_node("Trilu", ["t", "k"], ["u"], upper=upper),
        helper.make_node("Concat", ["u", "t"], ["c"], axis=0),
        helper.make_node("Trilu", ["c", ""], ["z"], upper=1 - upper),
    ]
    graph = helper.make_graph(
        nodes,
        "pipeline",
        [
            helper.make_tensor_value_info("x", elem_type, [2, 3, 4]),
            helper.make_tensor_value_info("kin", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info("u", elem_type, [2, 4, 3]),
            helper.make_tensor_value_info("z", elem_type, [4, 4, 3]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.mark.parametrize("elem_type", NUMERIC, ids=ids)
@pytest.mark.parametrize("upper", [1, 0])
def test_between_other_ops_as_the_reference(elem_type: int, upper: int) -> None:
    model = pipeline(elem_type, upper)
    ours = ReferenceEvaluator(model, new_ops=[Trilu])
    assert sum(type(node) is Trilu for node in ours.rt_nodes_) == 2
    reference = ReferenceEvaluator(model)
    x = sample(elem_type, (2, 3, 4), seed=1)
    for kin in (-2, 0, 1):
        feeds = {"x": x, "kin": np.array(kin, np.int64)}
        for actual, expected in zip(
            ours.run(None, feeds), reference.run(None, feeds), strict=True
        ):
            assert_same(actual, expected)


def test_between_other_ops_strings() -> None:
    """No reference to compare with here: its strings are zeroed to int 0."""
    x = sample(TensorProto.STRING, (2, 3, 4))
    session = ReferenceEvaluator(pipeline(TensorProto.STRING, 1), new_ops=[Trilu])
    u, z = session.run(None, {"x": x, "kin": np.array(1, np.int64)})
    t = x.transpose(0, 2, 1)
    assert_same(u, expected_trilu(t, -1, True))
    assert_same(z, expected_trilu(np.concatenate([u, t]), 0, False))


def test_in_a_subgraph() -> None:
    """The evaluator of an If branch gets new_ops too."""
    branch = helper.make_graph(
        [helper.make_node("Trilu", ["x"], ["b"])],
        "branch",
        [],
        [helper.make_tensor_value_info("b", TensorProto.STRING, [3, 3])],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["b2"])],
        "other",
        [],
        [helper.make_tensor_value_info("b2", TensorProto.STRING, [3, 3])],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other)],
        "if",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.STRING, [3, 3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [3, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model, full_check=True)
    x = sample(TensorProto.STRING, (3, 3))
    (y,) = ReferenceEvaluator(model, new_ops=[Trilu]).run(
        None, {"c": np.array(True), "x": x}
    )
    assert_same(y, expected_trilu(x, 0, True))


# Checked with onnx 1.20 (Debian's): its own Trilu gets upper=0 there too.
@pytest.mark.xfail(
    tuple(int(p) for p in onnx.__version__.split(".")[:2]) < (1, 22),
    reason="onnx < 1.22 passes a function's linked attribute to every op as 0",
    strict=True,
)
def test_in_a_function_with_a_linked_attribute() -> None:
    """upper from the calling node: known only when run, then checked by trilu."""
    inner = helper.make_node("Trilu", ["x"], ["y"])
    inner.attribute.append(helper.make_attribute_ref("upper", AttributeProto.INT))
    function = helper.make_function(
        "custom",
        "Tri",
        ["x"],
        ["y"],
        [inner],
        [helper.make_opsetid("", OPSET)],
        ["upper"],
    )
    # onnx builds a model's local functions without new_ops: give it evaluators
    functions = [ReferenceEvaluator(function, new_ops=[Trilu])]
    opsets = {"": OPSET, "custom": 1}
    x = sample(TensorProto.STRING, (3, 4))
    for upper in (0, 1):
        graph = helper.make_graph(
            [helper.make_node("Tri", ["x"], ["y"], domain="custom", upper=upper)],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.STRING, [3, 4])],
            [helper.make_tensor_value_info("y", TensorProto.STRING, [3, 4])],
        )
        session = ReferenceEvaluator(
            graph, opsets=opsets, functions=functions, new_ops=[Trilu]
        )
        assert_same(session.run(None, {"x": x})[0], expected_trilu(x, 0, bool(upper)))
    op = functions[0].rt_nodes_[0]
    assert type(op) is Trilu
    with pytest.raises(NotImplementedError, match="linked"):
        op.to_python(["x"])
    graph.node[0].attribute[0].i = 2
    session = ReferenceEvaluator(
        graph, opsets=opsets, functions=functions, new_ops=[Trilu]
    )
    with pytest.raises(ValueError, match="upper must be a bool or 0/1"):
        session.run(None, {"x": x})


# --- mlprodict's surface --------------------------------------------------------------


def test_built_from_a_node_proto() -> None:
    op = Trilu(helper.make_node("Trilu", ["x", "k"], ["y"], upper=0))
    assert op.upper == 0
    x = sample(TensorProto.DOUBLE, (3, 5))
    (y,) = op.run(x, np.array(-1, np.int64))
    assert_same(y, np.tril(x, -1))
    (y,) = Trilu(helper.make_node("Trilu", ["x"], ["y"])).run(x)
    assert_same(y, np.triu(x))


def test_built_with_desc_and_options() -> None:
    node = helper.make_node("Trilu", ["x"], ["y"])
    desc = {"atts": {"upper": {"value": 0}}}
    assert Trilu(node, desc).upper == 0  # mlprodict's positional desc
    assert Trilu(node, desc=desc).upper == 0
    assert Trilu(node, desc={"atts": {"upper": {"value": 1, "value_rt": 0}}}).upper == 0
    op = Trilu(node, upper=False, runtime="python", target_opset=OPSET)
    assert op.upper == 0
    assert type(op.upper) is int
    assert op.options == {"runtime": "python", "target_opset": OPSET}
    x = sample(TensorProto.INT8, (3, 3))
    assert_same(op.run(x)[0], np.tril(x))


@pytest.mark.parametrize(
    ("atts", "default_modified", "value"),
    [({}, [], 1), ({"upper": 1}, [], 1), ({"upper": 0}, ["upper=0"], 0)],
)
def test_introspection(
    atts: dict[str, int], default_modified: list[str], value: int
) -> None:
    op = Trilu(helper.make_node("Trilu", ["x", "k"], ["y"], **atts))
    assert op.args_default == ["upper=1"]
    assert op.args_default_modified == default_modified
    assert op.args_mandatory is None  # mlprodict: the node's own inputs
    assert op.args_optional == []
    assert op.atts_value == {"upper": value}


@pytest.mark.parametrize("elem_type", TYPES, ids=ids)
@pytest.mark.parametrize(
    ("inputs", "upper"),
    [(["x"], 1), (["x"], 0), (["x", "k"], 1), (["x", "k"], 0), (["x", ""], 0)],
)
def test_to_python(elem_type: int, inputs: list[str], upper: int) -> None:
    op = Trilu(helper.make_node("Trilu", inputs, ["y"], upper=upper))
    imports, code = op.to_python(inputs)
    args = [name for name in inputs if name]
    source = f"{imports}\n\ndef f({', '.join(args)}):\n    {code}\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "<to_python>", "exec"), namespace)  # noqa: S102
    x = sample(elem_type, (2, 4, 3))
    feeds = [x, np.array(-1, np.int64)][: len(args)]
    k = -1 if len(args) == 2 else 0
    assert_same(namespace["f"](*feeds), expected_trilu(x, k, bool(upper)))
    assert_same(namespace["f"](*feeds), op.run(*feeds)[0])


def test_to_python_other_names() -> None:
    op = Trilu(helper.make_node("Trilu", ["a", "b"], ["y"], upper=0))
    assert op.to_python(["X0", "K1"]) == (
        "import trilu",
        "return trilu.trilu(X0, K1, upper=False)",
    )


# --- bad attribute values -------------------------------------------------------------


@pytest.mark.parametrize(
    ("upper", "error"),
    [
        (2, ValueError),
        (-1, ValueError),
        (1.0, TypeError),
        ("1", TypeError),
        ([1], TypeError),
    ],
)
def test_bad_upper_attribute(upper: Any, error: type[Exception]) -> None:
    node = helper.make_node("Trilu", ["x"], ["y"], upper=upper, name="tri")
    with pytest.raises(error, match=r"Trilu node 'tri': upper must be a bool or 0/1"):
        Trilu(node)
    model = trilu_model(TensorProto.FLOAT, (3, 3), ("x",))
    model.graph.node[0].CopyFrom(node)
    with pytest.raises(error) as info:  # the evaluator wraps a TypeError
        ReferenceEvaluator(model, new_ops=[Trilu])
    assert "upper must be a bool or 0/1" in str(info.value) + str(info.value.__cause__)


def test_bad_upper_from_desc_or_options() -> None:
    node = helper.make_node("Trilu", ["x"], ["y"])
    with pytest.raises(ValueError, match="upper must be a bool or 0/1, got 3"):
        Trilu(node, upper=3)
    with pytest.raises(ValueError, match="upper must be a bool or 0/1, got 2"):
        Trilu(node, desc={"atts": {"upper": {"value": 2}}})
    with pytest.raises(ValueError, match="has no 'value'"):
        Trilu(node, desc={"atts": {"upper": 0}})


# --- onnx is optional -----------------------------------------------------------------


def test_import_trilu_onnx_without_onnx_names_the_extra() -> None:
    done = run_python(
        "import sys\n"
        "sys.modules['onnx'] = None  # as if onnx were not installed\n"
        "import trilu\n"
        "try:\n"
        "    import trilu.onnx\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    raise SystemExit('imported')\n"
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'trilu[onnx]'" in done.stdout


def test_reachable_after_a_plain_import_trilu() -> None:
    """``import trilu`` leaves trilu.onnx out (onnx itself: test_imports);
    ``trilu.onnx`` then imports both on first use (a module __getattr__), and
    only that name."""
    proc = run_python(
        """
        import sys, trilu
        print("trilu.onnx" in sys.modules)
        op = trilu.onnx.Trilu
        print(op.__module__, "onnx" in sys.modules, trilu.onnx is sys.modules["trilu.onnx"])
        try:
            trilu.onnxx
        except AttributeError as exc:
            print(exc)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "False",
        "trilu.onnx True True",
        "module 'trilu' has no attribute 'onnxx'",
    ]
