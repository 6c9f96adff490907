"""Shared fixtures, and the helpers in ``tests/_cases.py`` made importable.

pytest runs with ``--import-mode=importlib``, which does not put the test
directory on ``sys.path``; the helpers module is imported as ``_cases``, also
from ``tests/kernel/``, the kernel's white-box tests (the plan that
``_kernel.explain`` reports), beside the contract tests here.
"""

import gc
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import trilu

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A generator seeded by the test's file and name (parameters included):
    its own values, the same in every run from any directory."""
    name = f"{request.path.name}::{request.node.name}"
    return np.random.default_rng(zlib.crc32(name.encode()))


@pytest.fixture(params=[1, 4], ids=["1thread", "4threads"])
def threads(request: pytest.FixtureRequest):
    """Run the test with 1 and with 4 kernel threads; restore the count after."""
    before = trilu.get_num_threads()
    trilu.set_num_threads(request.param)
    yield request.param
    trilu.set_num_threads(before)


@pytest.fixture
def threads4():
    """Let large calls use 4 kernel threads (even on 2 CPUs); restore after."""
    before = trilu.get_num_threads()
    trilu.set_num_threads(4)
    yield
    trilu.set_num_threads(before)
    assert trilu.get_num_threads() == before


def pytest_collection_finish(session: pytest.Session) -> None:
    """Once the tests are collected: freeze what collection made, and let a
    test module start what its selected tests will wait on (a module function
    ``start_early(names)``, given their names): test_stubs.py's mypy runs go
    on in subprocesses beside the other tests."""
    if session.config.option.collectonly:
        return
    # What collection made (the test items, their parameters, the modules)
    # lives as long as the session: moved out of the collector's sight, it is
    # not walked again by each gc.collect() of a test (0.2-0.3 s each, over
    # some 200,000 objects) nor by the automatic full collections.
    gc.collect()
    gc.freeze()
    # A pytest-xdist worker collects every test but runs a share it does not
    # know yet, so each worker would start every run: there each test starts
    # its own, while the other workers go on.
    if hasattr(session.config, "workerinput"):
        return
    selected: dict[Any, set[str]] = {}
    for item in session.items:
        module = getattr(item, "module", None)
        if hasattr(module, "start_early"):
            selected.setdefault(module, set()).add(item.originalname)
    for module, names in selected.items():
        module.start_early(names)
