"""trilu.use_in_numpy(), restore_numpy() and patched(): numpy's names swapped
for trilu's functions and put back exactly; numpy's own triu/tril tests and
scipy.linalg (where installed) run through the patch with the same results.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from _cases import assert_same, python_calls, run_python

import trilu
from trilu import _numpy_patch, _private

ORIGINAL = (np.triu, np.tril)


@pytest.fixture(autouse=True)
def _unpatched() -> Iterator[None]:
    """Every test starts and ends with numpy's own functions in place."""
    assert (np.triu, np.tril) == ORIGINAL
    yield
    trilu.restore_numpy()
    assert np.triu is ORIGINAL[0]
    assert np.tril is ORIGINAL[1]


def count_trilu_calls() -> contextlib.AbstractContextManager[list[str]]:
    """The calls of trilu.triu/tril made in the block through numpy's names:
    of the patch's wrappers (trilu's own functions are C)."""
    codes = {_numpy_patch._triu.__code__, _numpy_patch._tril.__code__}
    return python_calls(codes.__contains__)


# --- the switch ------------------------------------------------------------------


def test_round_trip() -> None:
    trilu.use_in_numpy()
    assert np.triu.__wrapped__ is trilu.triu
    assert np.tril.__wrapped__ is trilu.tril
    trilu.restore_numpy()
    assert np.triu is ORIGINAL[0]
    assert np.tril is ORIGINAL[1]


def test_the_wrappers_trace_as_themselves() -> None:
    """numpy's triu, tril and tri under the patch are wrappers of trilu's,
    which torch.compile traces as themselves: none of the attributes that
    send it from a door (_kernel.door) to trilu's Python function."""
    with trilu.patched():
        for name in ("triu", "tril", "tri"):
            wrapper = getattr(np, name)
            assert wrapper.__wrapped__ is getattr(trilu, name)
            assert "__original_fn" not in vars(wrapper)


def test_twice_on_and_off_is_harmless() -> None:
    trilu.restore_numpy()  # off already: nothing happens
    assert (np.triu, np.tril) == ORIGINAL
    trilu.use_in_numpy()
    trilu.use_in_numpy()  # must not save trilu's functions as the originals
    trilu.restore_numpy()
    assert (np.triu, np.tril) == ORIGINAL
    trilu.restore_numpy()
    assert (np.triu, np.tril) == ORIGINAL


def test_restores_what_it_replaced() -> None:
    """Someone else's np.triu, set before the patch, is what comes back."""

    def theirs(m: Any, k: int = 0) -> Any:
        return ORIGINAL[0](m, k)

    np.triu = theirs
    try:
        with trilu.patched():
            assert np.triu.__wrapped__ is trilu.triu
        assert np.triu is theirs
    finally:
        np.triu = ORIGINAL[0]


def test_patched_context() -> None:
    with trilu.patched():
        assert np.triu.__wrapped__ is trilu.triu
        assert np.tril.__wrapped__ is trilu.tril
    assert (np.triu, np.tril) == ORIGINAL


def test_patched_restores_after_an_exception() -> None:
    with pytest.raises(KeyError), trilu.patched():
        raise KeyError
    assert (np.triu, np.tril) == ORIGINAL


def test_patched_nested_and_inside_use_in_numpy() -> None:
    """A block entered with the patch on leaves it on."""
    with trilu.patched():
        with trilu.patched():
            pass
        assert np.triu.__wrapped__ is trilu.triu
    assert np.triu is ORIGINAL[0]
    trilu.use_in_numpy()
    with trilu.patched():
        pass
    assert np.triu.__wrapped__ is trilu.triu


def test_nothing_at_import() -> None:
    proc = run_python(
        "import numpy as np; t = np.triu; import trilu; print(np.triu is t)"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"


def test_from_import_before_the_patch_is_not_reached() -> None:
    """The documented limit: a name bound before the patch keeps numpy's."""
    proc = run_python(
        """
        from numpy import triu as early
        import numpy as np, trilu
        trilu.use_in_numpy()
        from numpy import triu as late
        print(early.__wrapped__ is trilu.triu, late.__wrapped__ is trilu.triu, np.triu.__wrapped__ is trilu.triu)
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True", "True"]


# --- __array_function__ dispatch ------------------------------------------------------


class Foreign:
    """An array of another library: its own triu/tril via __array_function__."""

    def __init__(self, data: Any) -> None:
        self.data = np.asarray(data)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func.__name__ not in ("triu", "tril"):
            return NotImplemented
        self.seen = func
        # the library's implementation calls numpy (patched or not) on its data
        m, *rest = args
        return Foreign(getattr(np, func.__name__)(m.data, *rest, **kwargs))


@pytest.mark.parametrize("name", ["triu", "tril"])
def test_foreign_arrays_reach_numpy_not_trilu(name: str) -> None:
    """With the patch on, np.triu(foreign) runs trilu's, which hands the array
    to numpy's own function (dispatch), never back to itself."""
    x = Foreign(np.arange(1.0, 10.0).reshape(3, 3))
    with trilu.patched():
        result = getattr(np, name)(x, 1)
    assert x.seen is getattr(_private.numpy_twodim, name)
    assert x.seen is ORIGINAL[name == "tril"]
    assert_same(result.data, getattr(np, name)(x.data, 1))


def test_foreign_fallback_takes_numpys_own_functions() -> None:
    """numpy's functions by construction: from numpy's module, which the patch
    leaves alone, whether or not it is on and whenever trilu was imported."""
    with trilu.patched():
        assert _private.numpy_twodim.triu is ORIGINAL[0]
        assert _private.numpy_twodim.tril is ORIGINAL[1]


def test_dask_arrays_through_the_patch() -> None:
    da = pytest.importorskip("dask.array")
    x = da.ones((6, 6), chunks=4)
    with trilu.patched():
        u = np.triu(x, 1)
    assert_same(u.compute(), ORIGINAL[0](np.ones((6, 6)), 1))


# --- numpy's own tests, with the patch on -----------------------------------------------

NUMPY_TESTS = [
    "test_tril_triu_ndim2",
    "test_tril_triu_ndim3",
    "test_tril_triu_with_inf",
    "test_tril_triu_dtype",
    "test_mask_indices",
]


@pytest.mark.parametrize("name", NUMPY_TESTS)
def test_numpy_suite_with_patch(name: str) -> None:
    """numpy's own tests of triu/tril (they call np.triu/np.tril), unchanged,
    from the numpy installed; they must call trilu's functions and pass."""
    module = pytest.importorskip(
        "numpy.lib.tests.test_twodim_base",
        reason="this numpy was installed without its tests",
    )
    with trilu.patched(), count_trilu_calls() as calls:
        getattr(module, name)()
    assert len(calls) > 0


# --- scipy, a downstream library -------------------------------------------------


def _scipy_cases() -> list[tuple[str, Any]]:
    """scipy.linalg functions whose code has called np.triu/np.tril by name
    (scipy 1.18's qr no longer does: see _calls_numpy_s_names)."""
    linalg = importlib.import_module("scipy.linalg")
    rng = np.random.default_rng(7)
    tall = rng.standard_normal((9, 5))
    wide = rng.standard_normal((4, 7))
    square = rng.standard_normal((6, 6))
    upper = np.triu(rng.standard_normal((5, 5))) + 5 * np.eye(5)
    complex_ = square + 1j * rng.standard_normal((6, 6))
    return [
        ("qr tall", lambda: linalg.qr(tall)),
        ("qr economic", lambda: linalg.qr(tall, mode="economic")),
        ("qr r wide", lambda: linalg.qr(wide, mode="r")),
        ("qr pivoting complex", lambda: linalg.qr(complex_, pivoting=True)),
        ("rq wide", lambda: linalg.rq(wide)),
        ("rq float32", lambda: linalg.rq(square.astype(np.float32))),
        ("hessenberg", lambda: linalg.hessenberg(square, calc_q=True)),
        ("fractional_matrix_power", lambda: linalg.fractional_matrix_power(upper, 0.3)),
        ("logm triangular", lambda: linalg.logm(upper)),
    ]


def _flatten(result: Any) -> list[np.ndarray]:
    if isinstance(result, tuple):
        return [a for r in result for a in _flatten(r)]
    return [np.asarray(result)]


def _calls_numpy_s_names(call: Any) -> bool:
    """Whether call looks np.triu or np.tril up in numpy's namespace, where
    the patch reaches it: counted, without trilu, by stand-ins put there."""
    calls = [0]

    def counted(function: Any) -> Any:
        def stand_in(*args: Any, **kwargs: Any) -> Any:
            calls[0] += 1
            return function(*args, **kwargs)

        return stand_in

    with pytest.MonkeyPatch.context() as patch:
        for function in ORIGINAL:
            patch.setattr(np, function.__name__, counted(function))
        call()
    return calls[0] > 0


def test_scipy_through_the_patch_bit_identical() -> None:
    """Each call that uses numpy's names in the scipy installed runs trilu's
    triu/tril under the patch, and every array it returns has the same dtype,
    shape and bytes as without the patch."""
    scipy = pytest.importorskip("scipy")
    cases = [case for case in _scipy_cases() if _calls_numpy_s_names(case[1])]
    if not cases:
        pytest.skip(f"scipy {scipy.__version__} calls np.triu/np.tril in none")
    for label, call in cases:
        expected = _flatten(call())
        with trilu.patched(), count_trilu_calls() as calls:
            got = _flatten(call())
        assert len(calls) > 0, f"{label}: trilu was not called"
        assert len(got) == len(expected)
        try:  # a Fortran-ordered R may come back Fortran-ordered
            for g, e in zip(got, expected, strict=True):
                assert_same(g, e)
        except AssertionError as error:
            raise AssertionError(f"{label}: {error}") from None
