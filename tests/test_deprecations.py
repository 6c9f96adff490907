"""Sizes and k that are not integers: numpy's DeprecationWarning, from 2.5 on.

numpy 2.5 (numpy/numpy#30869) takes N, M and k of ``tri``, of the index family
and so of ``triu``/``tril`` through ``operator.index`` (unsigned integers as
the integers they are) and deprecates what that refuses. trilu follows the
numpy it runs on (``trilu._validate.NOT_INTEGER``, set at import). The running
numpy is the oracle for its own rules; numpy 2.5's rules, where numpy is
older, are checked against ``_cases.numpy25``: numpy 2.5's checks transcribed
from its source, its values the running numpy's on what numpy 2.5 converts,
itself checked against the running numpy wherever that is 2.5 or later. Every
warning must point at the caller's line, as numpy's do.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import warnings
from typing import Any

import numpy as np
import pytest
from _cases import (
    NOT_INTEGER,
    NUMPY_DEPRECATES,
    assert_same,
    clamp_k,
    func,
    numpy25,
    numpy25_warnings,
    outcome,
    warned,
)

import trilu
from trilu import _indices, _validate


class Index:
    """An integer only through __index__, as numpy 2.5 takes it."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"Index({self.value})"


# sizes and k, by the forms numpy 2.5 takes or deprecates
FORMS: dict[str, Any] = {
    "int": 3,
    "float": 3.0,
    "float-half": 2.5,
    "np.float64": np.float64(3.0),
    "np.float64-half": np.float64(1.5),
    "np.float32": np.float32(2.0),
    "0d-float": np.array(3.0),
    "0d-int": np.array(2),
    "0d-bool": np.array(True),
    "True": True,
    "np.True_": np.True_,
    "np.False_": np.False_,
    **{f"np.{t.__name__}": t(3) for t in (np.uint8, np.uint16, np.uint32, np.uint64)},
    "np.uint64(0)": np.uint64(0),
    "uint64max": np.uint64(2**64 - 1),
    "np.int8": np.int8(-2),
    "2**64": 2**64,
    "-2**64": -(2**64),
    "Index": Index(2),
    "Index-negative": Index(-1),
    "None": None,
    "str": "3",
}


def _rules_of_numpy_25(value: Any) -> bool:
    """Whether value can meet numpy 2.5's rules here: numpy < 2.3 gives its
    bools an __index__ that warns, which numpy 2.5 has not."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.suppress(TypeError):
            operator.index(value)
    return not caught


def _family_calls() -> list[tuple[str, tuple[Any, ...]]]:
    """Each form as each size and k of tri and the index family (the others
    ints), and two forms at once, where the first refused names the type."""
    calls: list[tuple[str, tuple[Any, ...]]] = []
    for value in FORMS.values():
        calls += [
            ("tri", (value, 4, 1)),
            ("tri", (4, value, -1)),
            ("tri", (3, None, value)),
        ]
        for name in ("triu_indices", "tril_indices"):
            calls += [
                (name, (value, 0, 4)),
                (name, (4, 1, value)),
                (name, (3, value, None)),
            ]
        for name in ("triu_indices_from", "tril_indices_from"):
            calls += [(name, (np.zeros((3, 4)), value))]
    calls += [
        ("tri", (3.0, np.True_, np.float32(1.0))),
        ("tri", (3, np.True_, np.float32(1.0))),
        ("triu_indices", (3.5, np.True_, None)),
        ("triu_indices", (None, np.True_, None)),
        ("triu_indices", (4, np.array(1.5), 5.0)),
        ("tril_indices", (np.uint8(4), np.array(1.0), np.float64(5.0))),
        ("triu_indices_from", (np.ones((3, 3, 3)), 1.0)),
        ("tril_indices_from", ([[1, 2], [3, 4]], 1.0)),
        ("triu_indices_from", (np.ma.zeros((3, 4)), 1.0)),
    ]
    return calls


FAMILY_CALLS = _family_calls()


def _id(value: Any) -> str:
    if isinstance(value, tuple):
        return f"({', '.join(map(_id, value))})"
    if isinstance(value, dict):
        return ", ".join(f"{key}={_id(v)}" for key, v in value.items())
    if isinstance(value, np.ndarray) and value.ndim:
        return f"{type(value).__name__}{value.shape}"
    return repr(value)


def _same(got: Any, exp: Any) -> None:
    """The same result (bit for bit), or the same error."""
    if isinstance(exp, tuple) and isinstance(exp[0], type):
        assert got == exp
    elif isinstance(exp, tuple):
        assert type(got) is tuple
        for g, e in zip(got, exp, strict=True):
            assert_same(g, e)
    else:
        assert_same(got, exp)


@pytest.mark.parametrize(("name", "args"), FAMILY_CALLS, ids=_id)
def test_family_as_the_running_numpy(name: str, args: tuple[Any, ...]) -> None:
    """numpy's result or error, and numpy's warnings, at the caller's line."""
    got = warned(lambda: getattr(trilu, name)(*args))
    exp = warned(lambda: getattr(np, name)(*args))
    _same(got[0], exp[0])
    assert got[1] == exp[1]


@pytest.mark.parametrize(("name", "args"), FAMILY_CALLS, ids=_id)
def test_family_as_numpy_25(
    name: str, args: tuple[Any, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under numpy 2.5's rules: its result or error, and its warnings."""
    if not all(_rules_of_numpy_25(a) for a in args):
        pytest.skip("this numpy's bools have an __index__ (numpy < 2.3)")
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    got = warned(lambda: getattr(trilu, name)(*args))
    exp = numpy25(name, *args)
    _same(got[0], exp[0])
    assert got[1] == exp[1]


TRI_DTYPES = [np.int8, object, "foo", "M8"]


@pytest.mark.parametrize("dtype", TRI_DTYPES, ids=str)
def test_numpy_25_dtypes(dtype: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """tri's dtype: numpy's cast of its mask, or its error before the warning."""
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    got = warned(lambda: trilu.tri(3.0, 2, np.uint8(1), dtype))
    exp = numpy25("tri", 3.0, 2, np.uint8(1), dtype)
    _same(got[0], exp[0])
    assert got[1] == exp[1]


@pytest.mark.parametrize(
    "like", [np.zeros(0), np.ma.zeros(0)], ids=["ndarray", "masked"]
)
def test_numpy_25_like(like: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """like= an array numpy answers itself: numpy's answer without it."""
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    got = warned(lambda: trilu.tri(3.0, 2, like=like))
    exp = numpy25("tri", 3.0, 2, 0)
    _same(got[0], exp[0])
    assert got[1] == exp[1]


def test_numpy_25_integers_take_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """What numpy 2.5 takes as integers (unsigned ones, __index__) is the
    kernel's: numpy's function (and its n x m mask) is never called. The
    first is numpy 2.5's test of unsigned sizes (test_twodim_base.py at
    v2.5.0), where numpy 2.4's arithmetic in the unsigned type raises."""
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    for name in ("_np_tri", "_np_triu_indices", "_np_tril_indices"):
        monkeypatch.setattr(_indices, name, None)
    got = trilu.triu_indices(np.uint64(4), m=np.uint8(4))
    assert_same(got[0], np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 3]))
    assert_same(got[1], np.array([0, 1, 2, 3, 1, 2, 3, 2, 3, 3]))
    sizes = (np.uint16(4), np.uint32(1), Index(5))
    for name in ("triu_indices", "tril_indices"):
        got = getattr(trilu, name)(*sizes)
        for g, e in zip(got, getattr(np, name)(4, 1, 5), strict=True):
            assert_same(g, e)
    assert_same(trilu.tri(np.uint8(3), Index(4), np.uint64(1)), np.tri(3, 4, 1))


# numpy 2.5's own deprecation tests (numpy/_core/tests/test_deprecations.py at
# v2.5.0, TestTriDeprecationWithNonInteger), each a call that must warn
NUMPY_DEPRECATION_TESTS = [
    ("tri", {"M": 2.3, "k": 3.14, "N": np.object_(8)}),
    ("triu_indices", {"n": np.float64(7.14), "k": 3.2}),
    ("triu_indices", {"n": 4, "k": np.bool_(0)}),
    ("tril_indices", {"n": np.array(3.14)}),
    ("triu_indices_from", {"arr": np.arange(16).reshape(4, 4), "k": np.object_(9.8)}),
    ("tril_indices_from", {"arr": np.arange(16).reshape(4, 4), "k": 9.8}),
]


@pytest.mark.parametrize(("name", "kwargs"), NUMPY_DEPRECATION_TESTS, ids=_id)
def test_numpy_25_deprecation_tests(
    name: str, kwargs: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    if not all(_rules_of_numpy_25(v) for v in kwargs.values()):
        pytest.skip("this numpy's bools have an __index__ (numpy < 2.3)")
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    with pytest.deprecated_call(match="safely to an integer"):
        getattr(trilu, name)(**kwargs)


def test_switch_is_the_running_numpy_s() -> None:
    """numpy 2.5's rules are on exactly where numpy's own tri deprecates a
    float, with numpy's words."""
    words = NOT_INTEGER if NUMPY_DEPRECATES else None
    assert words == _validate.NOT_INTEGER


# --- triu and tril: numpy's warnings for k, trilu's answers ------------------------------

# k as trilu takes it (integral, or a numpy bool) and as it refuses it
K_FORMS = {name: k for name, k in FORMS.items() if name not in ("None", "str")}
NOT_INTEGRAL = [K_FORMS["float-half"], K_FORMS["np.float64-half"]]


def _triangle_expected(k: Any, upper: bool, rules_of_25: bool) -> tuple[Any, list[str]]:
    """trilu's answer (numpy's, k clamped; TypeError for a k that is no
    integer) and numpy's warnings for it (none for an answer numpy has not:
    its error comes first)."""
    if k in NOT_INTEGRAL:
        return TypeError, []
    x = np.arange(20.0).reshape(4, 5)
    exp = (np.triu if upper else np.tril)(x, clamp_k(k))
    if not rules_of_25:
        return exp, []
    first, then = numpy25_warnings("triu" if upper else "tril", 4, 5, k)
    return exp, first + then


def _triangle_check(k: Any, upper: bool, rules_of_25: bool) -> None:
    x = np.arange(20.0).reshape(4, 5)
    got, messages = warned(lambda: func(upper)(x, k))
    exp, expected = _triangle_expected(k, upper, rules_of_25)
    if exp is TypeError:
        assert got[0] is TypeError
        assert "k must be an integer" in got[1]
    else:
        assert_same(got, exp)
    assert messages == expected


@pytest.mark.parametrize("k", list(K_FORMS.values()), ids=list(K_FORMS))
@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_triangle_as_the_running_numpy(k: Any, upper: bool) -> None:
    """numpy's warnings where numpy and trilu have an answer (trilu refuses
    a k that is not integral); none on numpy < 2.5."""
    _triangle_check(k, upper, NUMPY_DEPRECATES)
    x = np.arange(20.0).reshape(4, 5)
    exp = warned(lambda: (np.triu if upper else np.tril)(x, k))
    if k not in NOT_INTEGRAL and not isinstance(exp[0], tuple):
        assert warned(lambda: func(upper)(x, k))[1] == exp[1]


@pytest.mark.parametrize("k", list(K_FORMS.values()), ids=list(K_FORMS))
@pytest.mark.parametrize("upper", [True, False], ids=["triu", "tril"])
def test_triangle_as_numpy_25(
    k: Any, upper: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _rules_of_numpy_25(k):
        pytest.skip("this numpy's bools have an __index__ (numpy < 2.3)")
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    _triangle_check(k, upper, True)


# --- the transcription, checked where numpy is 2.5 ----------------------------------------


@pytest.mark.skipif(not NUMPY_DEPRECATES, reason="checks numpy25 against numpy >= 2.5")
def test_transcription_is_the_running_numpy_s() -> None:
    """numpy25 and numpy25_warnings, the oracle of the tests here where numpy
    is older, are the running numpy 2.5's result or error and warnings: for
    every call above, and for triu and tril every k (the warnings before its
    mask where numpy raises on a bool's -k, all where it answers)."""
    calls = FAMILY_CALLS + [("tri", (3.0, 2, np.uint8(1), d)) for d in TRI_DTYPES]
    for name, args in calls:
        exp = warned(lambda: getattr(np, name)(*args))  # noqa: B023
        got = numpy25(name, *args)
        _same(got[0], exp[0])
        assert got[1] == exp[1], (name, args)
    x = np.arange(20.0).reshape(4, 5)
    for k, upper in itertools.product(K_FORMS.values(), (True, False)):
        name = "triu" if upper else "tril"
        exp, messages = warned(lambda: getattr(np, name)(x, k))  # noqa: B023
        first, then = numpy25_warnings(name, 4, 5, k)
        raised = isinstance(exp, tuple) and isinstance(exp[0], type)
        assert messages == (first if raised else first + then), (name, k)


def test_numpy_25_through_the_patch(monkeypatch: pytest.MonkeyPatch) -> None:
    """trilu's triu called by numpy's own code (mask_indices): the warning
    points past numpy.lib too, at the line that called numpy, as numpy's."""
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    with trilu.patched():
        got = warned(lambda: np.mask_indices(3, np.triu, 1.0))
    assert got[1] == [NOT_INTEGER.format("float")]


def test_toolkit_takes_integral_floats_silently(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """band, pack and unpack are trilu's own: numpy's deprecation is not theirs."""
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    x = np.arange(20.0).reshape(4, 5)
    for call in (
        lambda: trilu.band(x, 1.0, np.float64(2.0)),
        lambda: trilu.pack(x, np.array(1.0)),
        lambda: trilu.unpack(trilu.pack(x, 1), 4.0, 5.0, k=1.0),
    ):
        result, messages = warned(call)
        assert isinstance(result, np.ndarray)
        assert messages == []


def test_a_warning_as_error_comes_before_any_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under -W error, triu's warning raises before out= is written."""
    monkeypatch.setattr(_validate, "NOT_INTEGER", NOT_INTEGER)
    x = np.arange(20.0).reshape(4, 5)
    out = np.full_like(x, -1.0)
    with pytest.raises(DeprecationWarning, match="Cannot convert float"):
        trilu.triu(x, 1.0, out=out)
    assert (out == -1.0).all()
    assert outcome(trilu.tri, 2.0)[0] is DeprecationWarning  # filterwarnings=error
