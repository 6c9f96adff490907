"""The ONNX Trilu operator as an ``onnx.reference`` op, computed by trilu.

``onnx.reference.ReferenceEvaluator(model, new_ops=[Trilu])`` runs every Trilu
node with :func:`trilu.trilu`. The class also keeps mlprodict's surface for the
same operator: it can be built from a bare ``NodeProto``, checks ``upper`` at
construction and offers ``args_*``, ``atts_value`` and ``to_python``.

This module needs ``onnx``: ``pip install 'trilu[onnx]'``.
"""

from __future__ import annotations

from typing import Any, ClassVar

try:
    import onnx
    from onnx.reference.op_run import OpRun, RefAttrName
except ImportError as exc:
    raise ImportError(
        "trilu.onnx needs the onnx package; install it with pip install 'trilu[onnx]'"
    ) from exc

import numpy as np

from ._api import trilu as _trilu
from ._validate import onnx_upper as _onnx_upper

__all__ = ["Trilu"]


def _quiet_log(pattern: str, *args: Any) -> None:
    """The log of an op built outside a ReferenceEvaluator: silent."""


class Trilu(OpRun):
    """ONNX Trilu (opset 14), for all 16 types; strings are zeroed to "".

    ``ReferenceEvaluator`` builds it as ``Trilu(node, run_params)``. It can also
    be built as in mlprodict, ``Trilu(node, desc=None, **options)``: the node's
    attributes are read, then overridden by ``desc["atts"]`` and by options
    named after an attribute; other options are kept in ``self.options``.

    Parameters
    ----------
    onnx_node : onnx.NodeProto
        A ``Trilu`` node: input ``x``, optional input ``k``, attribute
        ``upper`` (default 1).
    run_params : dict, optional
        What ``ReferenceEvaluator`` passes (``log``, ``opsets``, ...). A dict
        without ``"opsets"`` is taken as mlprodict's `desc`.
    schema : onnx.defs.OpSchema, optional
        Passed on to ``onnx.reference.op_run.OpRun``.
    desc : dict, optional
        mlprodict's node description: ``desc["atts"][name]["value"]``
        overrides the node's attribute `name`.
    **options
        An option named after an attribute (``upper=0``) overrides it; others
        are kept in ``self.options``.

    Raises
    ------
    TypeError, ValueError
        If ``upper`` is not a bool or 0/1 (the node's name is in the message).

    See Also
    --------
    trilu.trilu : The function each node runs.

    Examples
    --------
    >>> import numpy as np
    >>> from onnx import helper
    >>> from onnx.reference import ReferenceEvaluator
    >>> from trilu.onnx import Trilu
    >>> node = helper.make_node("Trilu", ["x"], ["y"], upper=0)
    >>> x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    >>> ReferenceEvaluator(node, new_ops=[Trilu]).run(None, {"x": x})[0]
    array([[1., 0., 0.],
           [4., 5., 0.],
           [7., 8., 9.]], dtype=float32)
    >>> Trilu(node).to_python(["x"])
    ('import trilu', 'return trilu.trilu(x, 0, upper=False)')
    """

    atts: ClassVar[dict[str, int]] = {"upper": 1}  # mlprodict's: attribute defaults
    upper: int | RefAttrName  # set from the node by OpRun, then checked here

    def __init__(
        self,
        onnx_node: onnx.NodeProto,
        run_params: dict[str, Any] | None = None,
        schema: onnx.defs.OpSchema | None = None,
        *,
        desc: dict[str, Any] | None = None,
        **options: object,
    ) -> None:
        if run_params is not None and "opsets" not in run_params:
            desc, run_params = run_params, None  # mlprodict: Trilu(node, desc)
        if run_params is None:
            run_params = {
                "log": _quiet_log,
                "opsets": {"": onnx.defs.onnx_opset_version()},
                "new_ops": None,
                "verbose": 0,
            }
        super().__init__(onnx_node, run_params, schema)
        if desc is not None:
            for name, value in desc.get("atts", {}).items():
                if not isinstance(value, dict) or "value" not in value:
                    raise ValueError(f"desc['atts'][{name!r}] has no 'value'")
                options[name] = value.get("value_rt", value["value"])
        self.options: dict[str, Any] = {}
        for name, value in options.items():
            if name in self.atts:
                setattr(self, name, value)
                self.attributes_names_.add(name)
            else:
                self.options[name] = value
        if not isinstance(self.upper, RefAttrName):  # else known only when run
            try:
                self.upper = int(_onnx_upper(self.upper))
            except (TypeError, ValueError) as exc:
                node = onnx_node.name or ", ".join(onnx_node.output)
                raise type(exc)(f"Trilu node {node!r}: {exc}") from None

    def _run(
        self, x: np.ndarray, k: np.ndarray | None = None, upper: int | None = None
    ) -> tuple[np.ndarray]:
        """``k`` is None when the optional input is absent or named ""."""
        # upper is None only when _run is called directly; a linked upper (a
        # RefAttrName) comes as the argument (else trilu refuses it)
        upper_ = self.upper if upper is None else upper
        return (_trilu(x, 0 if k is None else k, upper_),)  # type: ignore[arg-type]

    # --- mlprodict's surface ----------------------------------------------------------

    @property
    def args_default(self) -> list[str]:
        """Each attribute with its default value, as in a signature."""
        return [f"{name}={value!r}" for name, value in self.atts.items()]

    @property
    def args_default_modified(self) -> list[str]:
        """Each attribute whose value is not its default, with that value."""
        return [
            f"{name}={getattr(self, name)!r}"
            for name, value in self.atts.items()
            if getattr(self, name) != value
        ]

    @property
    def args_mandatory(self) -> list[str] | None:
        """None: the signature's positional arguments are the node's inputs."""
        return None

    @property
    def args_optional(self) -> list[str]:
        """No optional argument beyond the node's inputs (mlprodict's answer)."""
        return []

    @property
    def atts_value(self) -> dict[str, Any]:
        """Each attribute with its value for this node."""
        return {name: getattr(self, name) for name in self.atts}

    def to_python(self, inputs: list[str]) -> tuple[str, str]:
        """``(imports, code)``: code that returns this node's output from the
        variables named ``inputs``, once placed in a function body."""
        if isinstance(self.upper, RefAttrName):
            raise NotImplementedError(
                f"upper is linked to the function attribute {self.upper.name!r}"
            )
        k = inputs[1] if len(inputs) > 1 and inputs[1] else "0"
        upper = bool(self.upper)
        return "import trilu", f"return trilu.trilu({inputs[0]}, {k}, upper={upper})"
