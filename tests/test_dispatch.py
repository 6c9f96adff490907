"""The one place that decides where an input goes (``trilu._dispatch``),
checked with stand-ins: numpy arrays never reach it; a CPU array that speaks
DLPack crosses to numpy in place and back as its own library's array; an
array on another device goes to its library's triu/tril, never copied, and
every other function refuses it, naming the device.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest
from _cases import assert_same, band_oracle, mirror_oracle, pack_oracle

import trilu
from trilu import _dispatch

ARRAY_FUNCTIONS = {
    "triu": lambda x, **kw: trilu.triu(x, 1, **kw),
    "tril": lambda x, **kw: trilu.tril(x, -1, **kw),
    "trilu": lambda x, **kw: trilu.trilu(x, 1, False, **kw),
    "band": lambda x, **kw: trilu.band(x, -1, 1, **kw),
    "mirror": trilu.mirror,
    "pack": trilu.pack,
    "unpack": lambda x, **kw: trilu.unpack(x, 4, **kw),
    "pack_f": lambda x, **kw: trilu.pack(x, 1, order="F", **kw),
    "unpack_mirror": lambda x, **kw: trilu.unpack(x, 4, order="F", mirror=True, **kw),
    "to_banded": lambda x, **kw: trilu.to_banded(x, 1, 2, **kw),
    "from_banded": lambda x, **kw: trilu.from_banded(x, 2, 1, n=5, **kw),
    "squareform": trilu.squareform,  # of a vector: the symmetric matrix
}
VECTORS = ("unpack", "unpack_mirror", "squareform")  # of packed vectors


# --- numpy arrays never pay ----------------------------------------------------------


@pytest.mark.parametrize("name", ARRAY_FUNCTIONS)
def test_numpy_arrays_never_reach_the_dispatch(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exactly numpy arrays, in every form (fill=, out=, a swapped byte order
    that the kernel's fast path passes by), take the numpy path first."""

    def fail(*_: Any, **__: Any) -> None:
        raise AssertionError("a numpy array reached _dispatch")

    monkeypatch.setattr(_dispatch, "call", fail)
    monkeypatch.setattr(_dispatch, "kind", fail)
    x = np.arange(10.0) if name in VECTORS else np.arange(16.0).reshape(4, 4)
    call = ARRAY_FUNCTIONS[name]
    call(x)
    call(x.astype(">f8"))
    if name != "squareform":  # (scipy's has no out=)
        call(x, out=np.empty_like(call(x)))
    if name in ("triu", "tril", "band"):
        call(x, fill=-1.0)
    trilu.tri(3)
    trilu.tri(3, like=np.empty(0))


# --- what kind of array ----------------------------------------------------------------


class Namespace(types.SimpleNamespace):
    """A library's Array API namespace, recording the calls it gets."""


class CPUArray:
    """Another library's CPU array: DLPack over a numpy array it holds."""

    def __init__(self, data: Any, lib: Any = None) -> None:
        self.data = np.asarray(data)
        self.lib = lib

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self.data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.data.__dlpack_device__()

    def __array_namespace__(self, api_version: Any = None) -> Any:
        return self.lib


def cpu_namespace() -> Namespace:
    lib = Namespace(made=[])

    def from_dlpack(x: Any, device: Any = None) -> CPUArray:
        assert device is None  # the arrays here have no .device
        array = np.from_dlpack(x)
        lib.made.append(array)
        return CPUArray(array, lib)

    lib.from_dlpack = from_dlpack
    return lib


class Protocol:
    """An array that numpy hands to its library (``__array_function__``)."""

    def __array_function__(self, *_: Any) -> Any:
        return NotImplemented


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: np.ones(2), _dispatch.NUMPY),
        (lambda: np.ma.ones(2), _dispatch.NUMPY),  # a subclass: np.asarray
        (lambda: [1, 2], _dispatch.NUMPY),  # what numpy converts
        (lambda: 3.0, _dispatch.NUMPY),
        (lambda: CPUArray([1]), _dispatch.DLPACK),
        (Protocol, _dispatch.OWN),
    ],
    ids=["ndarray", "subclass", "list", "float", "dlpack", "array_function"],
)
def test_kinds(make: Any, expected: str) -> None:
    assert _dispatch.kind(make()) is expected


def test_dask_kind() -> None:
    da = pytest.importorskip("dask.array")
    assert _dispatch.kind(da.ones(2)) is _dispatch.DASK


# --- the DLPack crossing, with a stand-in library --------------------------------------


@pytest.mark.parametrize("name", ARRAY_FUNCTIONS)
def test_a_cpu_array_crosses_in_place_and_back(name: str, rng: Any) -> None:
    lib = cpu_namespace()
    data = rng.random(10) if name in VECTORS else rng.random((4, 4))
    got = ARRAY_FUNCTIONS[name](CPUArray(data, lib))
    assert type(got) is CPUArray
    assert got.data is lib.made[0]  # the kernel's result, not a copy
    assert_same(got.data, ARRAY_FUNCTIONS[name](data))


def test_out_is_written_in_place_and_returned(rng: Any) -> None:
    data = rng.random((4, 4))
    x, out = CPUArray(data.copy(), cpu_namespace()), CPUArray(np.zeros((4, 4)))
    if not trilu._dispatch._dlpack_writable():
        # numpy 1.26 to 2.2 import every DLPack array read-only: out= is
        # refused, saying so, and nothing is written
        with pytest.raises(
            TypeError, match=r"out= must be writable.*numpy .* read-only"
        ):
            trilu.mirror(x, upper=False, out=out)
        assert not out.data.any()
        return
    assert trilu.mirror(x, upper=False, out=out) is out
    assert_same(out.data, mirror_oracle(data, False))
    assert trilu.band(x, 0, 1, out=x) is x  # in place
    assert_same(x.data, band_oracle(data, 0, 1))
    packed = CPUArray(np.zeros(10))
    assert trilu.pack(x, out=packed) is packed
    assert_same(packed.data, pack_oracle(x.data, 0, True))


def test_read_only_memory_is_refused_for_out() -> None:
    """A library whose arrays are immutable exports them read-only: out= is
    a TypeError saying why, and nothing is written."""
    frozen = np.zeros((3, 3))
    frozen.flags.writeable = False
    try:  # numpy before 2.1 exports no read-only array: the import says so
        _dispatch._from_dlpack(frozen)
        match = r"out= must be writable.*read-only"
    except BufferError:
        match = r"numpy cannot import here: .*readonly"
    with pytest.raises(TypeError, match=match):
        trilu.triu(CPUArray(np.ones((3, 3))), out=CPUArray(frozen))
    assert not frozen.any()


def test_tri_like_a_cpu_array() -> None:
    lib = cpu_namespace()
    made = trilu.tri(3, 2, -1, dtype=np.int16, like=CPUArray([0], lib))
    assert type(made) is CPUArray
    assert_same(made.data, np.tri(3, 2, -1, dtype=np.int16))


@pytest.mark.parametrize("function", [trilu.band_mask, trilu.attention_mask])
def test_masks_like_a_cpu_array(function: Any) -> None:
    """The masks' like= crosses as tri's: the library's array of the numpy
    result's buffer; chunks= (a dask array) with it is a TypeError."""
    lib = cpu_namespace()
    made = function(4, 6, dtype=np.float32, like=CPUArray([0], lib))
    assert type(made) is CPUArray
    assert made.data is lib.made[0]
    assert_same(made.data, function(4, 6, dtype=np.float32))
    with pytest.raises(TypeError, match=r"chunks= makes a dask array, like= "):
        function(4, 6, like=CPUArray([0], lib), chunks=2)
    with pytest.raises(TypeError, match=r"\(like=\) got .* on device cuda:0"):
        function(4, like=DeviceArray())


# --- another device --------------------------------------------------------------------

CUDA = 2  # DLPack's kDLCUDA


class DeviceArray:
    """An array in a GPU's memory: it reports its device, and fails if anyone
    tries to read its memory (no transfer may happen)."""

    device = "cuda:0"

    def __init__(self, lib: Any = None) -> None:
        self.lib = lib

    def __dlpack__(self, **_: Any) -> Any:
        raise AssertionError("trilu tried to read a GPU array's memory")

    def __dlpack_device__(self) -> tuple[int, int]:
        return (CUDA, 0)


class NamespacedDeviceArray(DeviceArray):
    def __array_namespace__(self, api_version: Any = None) -> Any:
        return self.lib


def device_namespace() -> Namespace:
    """The Array API's triu and tril (``k=`` a keyword), recording calls."""
    lib = Namespace(calls=[])
    lib.triu = lambda x, *, k=0: lib.calls.append(("triu", k)) or x
    lib.tril = lambda x, *, k=0: lib.calls.append(("tril", k)) or x
    return lib


@pytest.fixture
def module_library(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A library without a namespace: its top-level module's triu/tril,
    k positional (as torch.triu's diagonal)."""
    lib = types.ModuleType("gpulib")
    lib.calls = []  # type: ignore[attr-defined]
    lib.triu = lambda x, k: lib.calls.append(("triu", k)) or x  # type: ignore[attr-defined]
    lib.tril = lambda x, k: lib.calls.append(("tril", k)) or x  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gpulib", lib)
    cls = type("ModuleDeviceArray", (DeviceArray,), {"__module__": "gpulib.core"})
    return lib, cls


def test_triu_and_tril_go_to_the_namespaces_functions() -> None:
    lib = device_namespace()
    x = NamespacedDeviceArray(lib)
    assert trilu.triu(x, 2) is x
    assert trilu.tril(x, np.int8(-1)) is x  # k already valid: an int
    assert trilu.trilu(x, 1, False) is x
    assert trilu.trilu(x) is x
    assert lib.calls == [("triu", 2), ("tril", -1), ("tril", 1), ("triu", 0)]
    assert type(lib.calls[1][1]) is int


def test_triu_and_tril_go_to_the_modules_functions(module_library: Any) -> None:
    lib, cls = module_library
    x = cls()
    assert trilu.triu(x, 1) is x
    assert trilu.tril(x) is x
    assert lib.calls == [("triu", 1), ("tril", 0)]


@pytest.mark.parametrize("name", ARRAY_FUNCTIONS)
def test_everything_else_on_another_device_is_refused(name: str) -> None:
    lib = device_namespace()
    x = NamespacedDeviceArray(lib)
    calls: list[Any] = []
    if name in ("triu", "tril", "trilu"):  # theirs, but not with fill= or out=
        calls.append(lambda: ARRAY_FUNCTIONS[name](x, out=np.zeros((4, 4))))
        if name != "trilu":
            calls.append(lambda: ARRAY_FUNCTIONS[name](x, fill=1.0))
    else:
        calls.append(lambda: ARRAY_FUNCTIONS[name](x))
    for call in calls:
        with pytest.raises(
            TypeError, match=r"device cuda:0: trilu's kernel runs on the CPU"
        ):
            call()
    assert lib.calls == []


def test_creation_like_an_array_on_another_device_is_refused() -> None:
    with pytest.raises(TypeError, match=r"tri\(like=\) got .* on device cuda:0"):
        trilu.tri(3, like=DeviceArray())


def test_the_numpy_patch_keeps_numpys_rule_for_cpu_arrays() -> None:
    """np.triu(array) converts it as numpy does (its __array__, here): a
    numpy array, as without the patch."""

    class Both(CPUArray):
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
            return self.data

    x = Both(np.arange(9.0).reshape(3, 3), cpu_namespace())
    with trilu.patched():
        assert_same(np.triu(x, 1), np.triu(x.data, 1))
    assert type(trilu.triu(x, 1)) is CPUArray  # its library's, from_dlpack's
