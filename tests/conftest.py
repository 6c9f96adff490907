"""Shared fixtures, and the helpers in ``tests/_cases.py`` made importable.

pytest runs with ``--import-mode=importlib``, which does not put the test
directory on ``sys.path``; the helpers module is imported as ``_cases``, also
from ``tests/kernel/``, the kernel's white-box tests (the plan that
``_kernel.explain`` reports), beside the contract tests here.
"""

import sys
from pathlib import Path

import pytest

import trilu

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture
def threads4():
    """Let large calls use 4 kernel threads (even on 2 CPUs); restore after."""
    before = trilu.get_num_threads()
    trilu.set_num_threads(4)
    yield
    trilu.set_num_threads(before)
    assert trilu.get_num_threads() == before
