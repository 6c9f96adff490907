"""The public functions' doors (``_kernel.door``): each runs the common call
in C and hands any other to the Python function it wraps.

So, for every public function: the common calls (the issue's small calls, in
the forms people write them) run no Python code of trilu's, which a profile
hook sees (a door that stops taking one fails here); every call through a
door is answered as its Python function answers it, result or error, bit for
bit, binding errors included; and a fill the doors remember gives, call after
call and under any ``np.errstate``, what the Python function's conversion
gives (NEP 50's answer, its warnings and errors).
"""

from __future__ import annotations

import contextlib
import ctypes
import inspect
import itertools
import pickle
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _cases import (
    ALL_DTYPES,
    ONNX_DTYPES,
    assert_same,
    every,
    make,
    ml_dtype,
    outcome,
    python_calls,
    warned,
)

import trilu

ROOT = str(Path(trilu.__file__).parent)
PUBLIC = [
    "triu", "tril", "band", "trilu", "mirror", "pack", "unpack", "tri",
    "triu_indices", "tril_indices", "triu_indices_from", "tril_indices_from",
    "band_mask", "attention_mask",
]  # fmt: skip
RNG = np.random.default_rng(31)


def trilu_python_calls() -> contextlib.AbstractContextManager[list[str]]:
    """The names of trilu's Python functions that run in the block."""
    return python_calls(lambda code: code.co_filename.startswith(ROOT))


def same_outcome(got: Any, exp: Any) -> None:
    """Two outcomes (a result, a tuple of results, or an error's type and
    message) are the same, bit for bit."""
    if isinstance(exp, np.ndarray):
        assert_same(got, exp)
    elif isinstance(exp, tuple) and exp and isinstance(exp[0], np.ndarray):
        assert len(got) == len(exp)
        for g, e in zip(got, exp, strict=True):
            assert_same(g, e)
    else:
        assert got == exp


class Subclass(np.ndarray):
    """An ndarray subclass: not exactly a numpy array."""


def through(name: str) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """A public function (its door) and the Python function it wraps."""
    door = getattr(trilu, name)
    return door, door.__wrapped__


# --- the common calls never reach Python ------------------------------------------------

# Plain dtypes: the bytes the kernel moves as they are (no references, no
# fields, native byte order, no metadata).
PLAIN = {
    name: dt
    for name, dt in ALL_DTYPES.items()
    if not dt.hasobject and dt.names is None and dt.isnative and dt.metadata is None
}
# Trilu's type constraint, less bfloat16 (the Python layer's to recognise)
ONNX_PLAIN = [
    dt for dt in ONNX_DTYPES.values() if dt in PLAIN.values() and not ml_dtype(dt)
]
FILLS = {"f": [float("-inf"), float("nan"), 1.5, 0.0, -0.0, np.float32(-np.inf),
               np.float64(-0.0), np.array(-np.inf)],
         "c": [-2.5, -0.0, np.float64(0.5)], "i": [7, -1, np.int8(-1), np.array(3)],
         "u": [7, np.uint8(7)], "b": [True, np.True_, np.array(False)]}  # fmt: skip


def _arrays() -> Iterator[tuple[str, np.ndarray]]:
    """Plain arrays, small, 2-D and batched, in a few layouts."""
    for (name, dt), shape in itertools.product(PLAIN.items(), [(4, 5), (2, 3, 3)]):
        x = make(dt, shape, RNG)
        yield f"{name} {shape}", x
        yield f"{name} {shape} F", np.asfortranarray(x)
        yield (
            f"{name} {shape} step",
            make(dt, (*shape[:-1], 2 * shape[-1]), RNG)[..., ::2],
        )


def _shown(value: Any) -> str:
    return (
        f"<{value.dtype} {value.shape}>"
        if isinstance(value, np.ndarray)
        else repr(value)
    )


def _label(name: str, args: tuple, kwargs: dict) -> str:
    shown = [_shown(a) for a in args] + [f"{k}={_shown(v)}" for k, v in kwargs.items()]
    return f"{name}({', '.join(shown)})"


def common_calls() -> Iterator[tuple[str, str, tuple, dict]]:
    """(label, name, args, kwargs) of the common calls: the issue's table in
    the forms people write them."""
    for label, x in _arrays():
        square = x[..., :3, :3]
        # fills remembered: numpy's numbers' (remembers)
        fills = [] if ml_dtype(x.dtype) else FILLS.get(x.dtype.kind, [])
        rows, cols = x.shape[-2:]
        for name, args, kwargs in [
            ("triu", (x,), {}),
            ("tril", (x, -1), {}),
            ("triu", (x,), {"k": 2}),
            ("tril", (x, 10**6), {}),
            ("triu", (x, -(2**70)), {}),
            ("triu", (x,), {"out": np.empty_like(x)}),
            ("tril", (x,), {"order": "F"}),
            ("triu", (x,), {"order": "K"}),
            ("band", (x, -1, 1), {}),
            ("band", (x,), {"hi": 0}),
            ("band", (x, None, None), {"order": "C"}),
            ("trilu", (x, 0), {}),
            ("trilu", (x, -1, False), {}),
            ("trilu", (x,), {"upper": False, "k": 1}),
            ("mirror", (square,), {}),
            ("mirror", (square,), {"upper": False, "out": np.empty_like(square)}),
            ("pack", (x,), {}),
            ("pack", (x, -1), {"upper": False}),
            ("pack", (x, 1), {"order": "F"}),
            ("pack", (x,), {"order": "C"}),
            ("unpack", (trilu.pack(square),), {}),
            ("unpack", (trilu.pack(square, order="F"),), {"order": "F"}),
            ("unpack", (trilu.pack(square),), {"mirror": False}),
            ("pack", (x,), {"out": np.empty_like(trilu.pack(x))}),
            ("pack", (x, 1), {"order": "F", "out": np.empty_like(trilu.pack(x, 1))}),
            ("unpack", (trilu.pack(square),), {"out": np.empty_like(square)}),
            ("unpack", (trilu.pack(square, 1),), {"k": 1, "mirror": True}),
            (
                "unpack",
                (trilu.pack(square, -1, upper=False, order="F"),),
                {
                    "k": -1,
                    "upper": False,
                    "order": "F",
                    "mirror": True,
                    "out": np.empty(square.shape, x.dtype, order="F"),
                },
            ),
            ("unpack", (trilu.pack(x, 1),), {"k": 1, "n": rows, "m": cols}),
            (
                "unpack",
                (trilu.pack(x, -1, upper=False), rows, cols, -1),
                {"upper": False},
            ),
            *[(name, (x,), {"fill": f}) for f in fills for name in ("triu", "tril")],
            *[("band", (x, 0, 1), {"fill": fill}) for fill in fills],
            *[
                (
                    "unpack",
                    (trilu.pack(square, 1),),
                    {"k": 1, "fill": fill, "mirror": True},
                )
                for fill in fills
            ],
            *[
                ("unpack", (trilu.pack(x),), {"n": rows, "m": cols, "fill": fill})
                for fill in fills[:1]
            ],
        ]:
            if name == "trilu" and x.dtype not in ONNX_PLAIN:
                continue
            yield f"{label}: {_label(name, args, kwargs)}", name, args, kwargs
    a = np.ones((4, 4))
    for name, args, kwargs in [
        ("triu", (a,), {"out": a}),
        ("tri", (4,), {}),
        ("tri", (3, 5, -1), {}),
        ("tri", (4,), {"dtype": int}),
        ("tri", (4,), {"dtype": np.float32}),
        ("tri", (4, None, 1, "i2"), {}),
        ("tri", (4,), {"k": 1, "dtype": np.dtype(bool)}),
        ("tri", (-2,), {}),
        ("triu_indices", (4,), {}),
        ("triu_indices", (4, 1, 6), {}),
        ("tril_indices", (4,), {"k": -1}),
        ("tril_indices", (3,), {"m": 5, "k": 10}),
        ("triu_indices_from", (a,), {}),
        ("tril_indices_from", (a, -1), {}),
        ("tril_indices_from", (np.ones((2, 5)),), {"k": 1}),
        ("band_mask", (5,), {}),
        ("band_mask", (4, 6, -1, 2), {}),
        ("band_mask", (4,), {"hi": 0, "dtype": np.float32}),
        ("band_mask", (4, None, 1), {"dtype": "i2", "keep": 7, "fill": -1}),
        ("band_mask", (3, 5, None, 0), {"dtype": np.float32, "fill": float("-inf")}),
        ("band_mask", (0, 3, -(2**70), 2**70), {"dtype": bool}),
        ("band_mask", (3,), {"dtype": "U2"}),
        ("attention_mask", (4,), {}),
        ("attention_mask", (3, 5), {"window": 2}),
        ("attention_mask", (4,), {"dtype": np.float32}),
        ("attention_mask", (5, 3), {"align": "top_left", "dtype": "float16"}),
        ("attention_mask", (0,), {"window": 1, "dtype": np.dtype(bool)}),
    ]:
        yield _label(name, args, kwargs), name, args, kwargs


def test_common_calls_run_no_python() -> None:
    """Each common call, made twice (the first may fill what the doors
    remember: a fill's bytes, tri's dtype), runs no Python code of trilu's
    the second time, and gives the Python function's answer."""

    cases = {
        label: (name, args, kwargs) for label, name, args, kwargs in common_calls()
    }

    def check(label: str) -> None:
        name, args, kwargs = cases[label]
        door, python = through(name)
        out = kwargs.get("out")
        apart = out is not None and all(out is not a for a in args)
        exp = python(*args, **kwargs)
        if apart:  # the door must write out anew: its bytes scrambled
            exp = exp.copy(order="K")
        door(*args, **kwargs)
        if apart:
            ctypes.memset(out.ctypes.data, 0x5A, out.nbytes)
        with trilu_python_calls() as calls:
            got = door(*args, **kwargs)
        assert not calls, f"the door handed it to Python: {calls}"
        same_outcome(got, exp)
        assert out is None or got is out

    every(cases, check)


def test_other_calls_reach_python() -> None:
    """What a door does not answer goes to its Python function, untouched:
    other array types and byte orders, 1-D inputs, numpy's integers, fills
    the doors do not remember."""
    x = np.arange(12.0).reshape(3, 4)
    for name, args, kwargs in [
        ("triu", (x.tolist(),), {}),
        ("triu", (x.astype(">f8"),), {}),
        ("triu", (x[0],), {}),
        ("triu", (x, np.int64(1)), {}),
        ("triu", (x.view(Subclass),), {}),
        ("tril", (x,), {"fill": np.float64(2)}),
        ("trilu", (x.astype(np.longdouble), 0), {}),
        ("trilu", (x, 0, 1), {}),
        ("mirror", (x[:, :3],), {"conj": True}),
        ("pack", (x,), {"upper": np.True_}),
        ("unpack", (x[0, :3],), {"fill": np.float64(1.0)}),
        ("unpack", (x[0, :3],), {"mirror": "conj"}),
        ("unpack", (x[0, :3],), {"mirror": 1}),
        ("unpack", (x[0, :4],), {"mirror": True, "n": 2, "m": 3}),
        ("unpack", (x[0, :3],), {"out": np.empty((2, 2), np.float32)}),
        ("unpack", (x[0, :3],), {"out": np.empty((2, 2), ">f8")}),
        ("unpack", (x[0, :3],), {"out": np.empty((2, 3))}),
        ("pack", (x,), {"out": np.empty(8)}),
        ("pack", (x,), {"out": np.broadcast_to(np.empty(1), (9,))}),
        ("pack", (x,), {"out": np.empty(9).astype(">f8")}),
        ("pack", (x,), {"out": np.empty((1, 9))}),
        ("pack", (x, 1), {"out": np.empty(6, int)}),
        ("pack", (x,), {"out": [0.0] * 9}),
        ("unpack", (x[0, :3],), {"order": "c"}),
        ("pack", (x,), {"order": "A"}),
        ("tri", (4,), {"like": x}),
        ("tri", (np.intp(4),), {}),
        ("triu_indices", (2**21,), {}),
        ("tril_indices_from", (x[0],), {}),
        ("band_mask", (-1,), {}),
        ("band_mask", (3, -2), {}),
        ("band_mask", (np.intp(3),), {}),
        ("band_mask", (3, None, np.int64(0)), {}),
        ("band_mask", (3,), {"keep": np.float64(2)}),
        ("band_mask", (3,), {"fill": -0.0}),
        ("band_mask", (3,), {"dtype": object}),
        ("band_mask", (3,), {"like": x}),
        ("band_mask", (2**21,), {}),
        ("attention_mask", (3,), {"window": 0}),
        ("attention_mask", (3,), {"window": np.int64(2)}),
        ("attention_mask", (3,), {"align": "middle"}),
        ("attention_mask", (3,), {"dtype": int}),
        ("attention_mask", (-3,), {}),
        ("attention_mask", (3, -1), {}),
        ("attention_mask", (3,), {"like": x}),
    ]:
        door, python = through(name)
        with trilu_python_calls() as calls:
            got = outcome(door, *args, **kwargs)
        assert calls, (name, args, kwargs)
        same_outcome(got, outcome(python, *args, **kwargs))


# --- a door is its Python function ----------------------------------------------------


@pytest.mark.parametrize("name", PUBLIC)
def test_the_door_has_its_functions_signature(name: str) -> None:
    """The door shows its Python function's signature, name and docstring,
    and takes the same parameters: the positional ones by position (a keyword
    of theirs lands in **kwargs, and so never binds twice), the keyword-only
    ones by name."""
    door, python = through(name)
    assert inspect.signature(door) == inspect.signature(python)
    own = inspect.signature(door, follow_wrapped=False).parameters.values()
    theirs = inspect.signature(python).parameters.values()

    def names(parameters: Any, kind: Any) -> list[str]:
        return [p.name for p in parameters if p.kind is kind]

    P = inspect.Parameter
    assert names(own, P.POSITIONAL_ONLY) == names(theirs, P.POSITIONAL_OR_KEYWORD)
    assert names(own, P.KEYWORD_ONLY) == names(theirs, P.KEYWORD_ONLY)
    assert [p.kind for p in own][-1] is P.VAR_KEYWORD
    assert any(p.kind is P.VAR_POSITIONAL for p in own)
    assert door.__name__ == python.__name__ == name
    assert door.__doc__ == python.__doc__
    assert door.__module__ == python.__module__
    assert pickle.loads(pickle.dumps(door)) is door  # by module and name


BAD_CALLS: list[tuple[tuple, dict]] = [
    ((), {}),
    ((np.ones((3, 3)), 0, 0, 0, 0, 0), {}),
    ((np.ones((3, 3)),), {"nonsense": 1}),
    ((np.ones((3, 3)), 1), {"k": 1}),
    ((np.ones((3, 3)), 1, 2), {"n": 1, "lo": 0, "M": 1, "upper": True}),
    ((), {"m": np.ones((3, 3)), "input": np.ones((3, 3)), "N": 3, "arr": 1}),
    ((np.ones((3, 3)),), {"out": None, "fill": None, "upper": True, "nonsense": 1}),
]


@pytest.mark.parametrize("name", PUBLIC)
def test_calls_that_bind_badly_get_the_functions_error(name: str) -> None:
    """Missing, extra, unknown and repeated arguments: the door hands the call
    over as made, so the error is the Python function's own, to the letter."""
    door, python = through(name)
    for args, kwargs in BAD_CALLS:
        exp = outcome(python, *args, **kwargs)
        if isinstance(exp, tuple) and exp[0] is TypeError:
            assert outcome(door, *args, **kwargs) == exp, (args, kwargs)


# --- remembered fills -----------------------------------------------------------------

_MEMORY_NAMES = """float16 float32 float64 complex64 complex128 int8 uint8 int32 int64
uint64 bool bfloat16 M8[s] m8[ns]"""
MEMORY_DTYPES = [name for name in _MEMORY_NAMES.split() if name in ALL_DTYPES]
MEMORY_FILLS = [
    float("-inf"), float("inf"), float("nan"), -0.0, 0.0, 1.5, 0.1, -3.0, 1e300,
    -1e300, 1e-320, 2.0**-140, 65520.0, 0, 1, -1, 7, 255, 256, -129, 2**53 + 1,
    2**63, 2**64, -(2**63) - 1, 10**400, True, False,
    # numpy's scalars, and 0-d arrays (their elements, to the Python layer)
    np.float32(-np.inf), np.float64(np.nan), np.float64(-0.0), np.float32(0.0),
    np.float64(1e300), np.float32(65520.0), np.float16(-2.5), np.longdouble(0.1),
    np.int8(-128), np.int64(-1), np.uint64(2**64 - 1), np.int64(300), np.True_,
    np.False_, np.complex64(1.5), np.array(-np.inf), np.array(-0.0, np.float32),
    np.array(7, np.int16), np.array(2**63, np.uint64), np.array(True),
    np.timedelta64(5, "s"), np.timedelta64(5000, "ms"),
]  # fmt: skip
ERRSTATES = [{}, {"all": "ignore"}, {"all": "raise"}, {"over": "warn", "under": "warn"}]


def test_fills_answer_as_their_conversion() -> None:
    """Every fill in every dtype, under each errstate, twice over: the door's
    answer (result, error or warning) is the Python function's, which
    converts the fill anew each time (NEP 50: -inf into no integer, 2**64
    into no int64; an overflow warns, or raises, as the errstate says)."""
    door, python = through("tril")

    def check(case: tuple[str, Any]) -> None:
        name, fill = case
        x = make(ALL_DTYPES[name], (3, 3), RNG)
        for errstate in ERRSTATES * 2:
            with np.errstate(**errstate):
                got = warned(lambda: outcome(door, x, fill=fill))
                exp = warned(lambda: outcome(python, x, fill=fill))
            same_outcome(got[0], exp[0])
            assert got[1] == exp[1], (errstate, got[1], exp[1])

    every(itertools.product(MEMORY_DTYPES, MEMORY_FILLS), check)


def test_a_remembered_conversion_is_the_conversion() -> None:
    """The Python layer's fill, converted (and remembered) or found
    remembered, is numpy's conversion anew (_validate.fill): the same 0-d
    array's bytes, or the same error and warnings, under each errstate."""
    from trilu import _route, _validate  # noqa: PLC0415

    def check(case: tuple[str, Any]) -> None:
        name, fill = case
        dtype = ALL_DTYPES[name]
        for errstate in ERRSTATES * 2:
            with np.errstate(**errstate):
                got = warned(lambda: outcome(_route._fill, fill, dtype, None))
                exp = warned(lambda: outcome(_validate.fill, fill, dtype))
            if isinstance(exp[0], np.ndarray):
                assert isinstance(got[0], np.ndarray)
                assert (got[0].shape, got[0].dtype) == ((), dtype)
                assert _validate.fill_bytes(got[0], dtype) == _validate.fill_bytes(
                    exp[0], dtype
                )
            else:
                assert got[0] == exp[0]
            assert got[1] == exp[1], (errstate, got[1], exp[1])

    every(itertools.product(MEMORY_DTYPES, MEMORY_FILLS), check)


def test_a_large_calls_fill_is_converted_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The doors hand large masks and unpacks on: the Python layer converts
    their fills once, then finds them remembered (and a dtype's default
    values, once)."""
    from trilu import _masks, _validate  # noqa: PLC0415

    conversions: list[Any] = []
    convert = _validate.fill

    def counted(fill: Any, *args: Any, **kwargs: Any) -> Any:
        conversions.append(fill)
        return convert(fill, *args, **kwargs)

    defaults = _masks._defaults

    def counted_defaults(dtype: np.dtype) -> Any:
        conversions.append(dtype)
        return defaults(dtype)

    monkeypatch.setattr(_validate, "fill", counted)
    monkeypatch.setattr(_masks, "_defaults", counted_defaults)
    v = np.ones(1200 * 1201 // 2, np.float32)
    for call in [
        lambda: trilu.band_mask(1200, None, -3, 3, dtype=np.float16, keep=np.float16(0),
                                fill=-np.inf),
        lambda: trilu.unpack(v, fill=np.array(-2.5)),
    ]:  # fmt: skip
        first = call()
        conversions.clear()
        assert_same(call(), first)
        assert not conversions


@pytest.mark.parametrize(
    "first", [-0.0, 0.0, np.float32(-0.0), np.float64(0.0), np.array(-0.0)], ids=repr
)
def test_float_zeros_keep_their_sign(first: Any) -> None:
    """0.0 equals -0.0 (and hashes alike), and their bytes differ: whichever
    comes first, each gives its own."""
    x = np.ones((3, 3))
    for fill in (first, -first, first):
        got = trilu.tril(x, fill=fill)
        assert np.signbit(got[0, 1]) == np.signbit(fill)


def test_equal_fills_of_other_types_are_apart() -> None:
    """1, 1.0 and True are equal (and hash alike), and an int dtype takes only
    the int, a bool dtype converts each its own way: each keeps its
    answer, whichever came first."""
    for dtype in ("int32", "bool", "float32"):
        x = np.ones((3, 3), dtype)
        door, python = through("triu")
        for fill in (1, 1.0, True, np.float64(1.0), np.int8(1), np.True_,
                     np.array(1.0), np.float32(1.0), 1.0, 1, True, np.int8(1)):  # fmt: skip
            same_outcome(outcome(door, x, fill=fill), outcome(python, x, fill=fill))


def test_a_0d_array_fill_is_read_each_call() -> None:
    """A 0-d array fill is its element at the call: one changed between
    calls gives its new value."""
    x = np.ones((3, 3))
    fill = np.array(2.5)
    for value in (2.5, -1.0, np.inf, 2.5):
        fill[()] = value
        assert trilu.tril(x, fill=fill)[0, 1] == value
        assert trilu.tril(x, fill=fill)[0, 1] == value


def test_remembered_fills_are_bounded() -> None:
    """More distinct fills than the doors keep: each still its own bytes."""
    x = np.zeros((2, 2))
    for i in range(1000):
        assert trilu.tril(x, fill=i + 0.5)[0, 1] == i + 0.5


def test_a_fill_that_warns_warns_each_time() -> None:
    """numpy's conversion of 1e300 to float32 overflows: never remembered, so
    the warning comes with every call, and the error under np.errstate."""
    x = np.ones((2, 2), np.float32)
    for _ in range(3):
        with pytest.warns(RuntimeWarning, match="overflow"):
            trilu.triu(x, fill=1e300)
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            trilu.triu(x, fill=1e300)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(over="ignore"):
                assert np.isinf(trilu.triu(x, fill=1e300)[1, 0])


def test_only_numbers_are_remembered() -> None:
    """A fill is remembered into numpy's numbers and bool, whose conversions
    warn of nothing but floating-point errors; into another dtype (a
    timedelta, whose int fills numpy 2.5 deprecates without a unit) every
    call converts it anew, in Python."""
    for dtype, fill, remembered in [
        ("float64", -7, True), ("int8", -7, True), ("bool", True, True),
        ("m8", -7, False), ("m8[s]", -7, False), ("M8[s]", 7, False),
        ("V8", 7, False), ("float64", np.float32(-7), True),
        ("int8", np.int16(-7), True), ("float32", np.array(-7.5), True),
        ("complex64", np.complex64(1), False), ("m8[s]", np.int64(7), False),
        ("int64", np.timedelta64(0), False),
    ]:  # fmt: skip
        x = np.zeros((3, 3), dtype)
        outcome(trilu.triu, x, fill=fill)
        with trilu_python_calls() as calls:
            outcome(trilu.triu, x, fill=fill)
        assert (not calls) == remembered, (dtype, fill, calls)


def test_a_fill_is_found_by_an_equal_dtype() -> None:
    """A dtype equal to a remembered one, another object (numpy's are mostly
    one each): its fill is found, no Python run."""
    x = np.ones((3, 3))
    trilu.tril(x, fill=-2.5)
    other = x.view(np.dtype(np.float64, copy=True))
    assert other.dtype is not x.dtype
    with trilu_python_calls() as calls:
        got = trilu.tril(other, fill=-2.5)
    assert not calls
    assert_same(got, trilu.tril.__wrapped__(x, fill=-2.5))
