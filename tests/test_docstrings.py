"""Every example in trilu's docstrings runs and shows what it says.

The examples of the API reference (and of ``help()``), which ``nox -s docs``
runs with Sphinx's doctest builder on one Linux and one numpy, run here
wherever the suite does: every platform, numpy and build it meets. Each
docstring's examples run in a namespace of their own holding ``np`` and
``trilu`` (the docs' ``doctest_global_setup``), with Sphinx's default flags.
A module that needs a missing package (``trilu.onnx``) skips, naming it; a
docstring whose examples import one (scipy, to show LAPACK's routines on
trilu's results) is left out, and once the others have passed the test skips,
naming it.
The pages' own examples stay the docs session's: some show what only Linux
does (the memory handlers), and ``docs/`` is not shipped with the tests.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import io
import pkgutil
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import trilu

# Sphinx's doctest_default_flags
FLAGS = (
    doctest.ELLIPSIS | doctest.IGNORE_EXCEPTION_DETAIL | doctest.DONT_ACCEPT_TRUE_FOR_1
)


def _source(name: str) -> str:
    """A module's Python source, found without importing it ("" if compiled)."""
    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec is not None else None
    if origin is None or not origin.endswith(".py"):
        return ""
    return Path(origin).read_text(encoding="utf-8")


# trilu and its modules whose source holds examples
MODULES = [
    name
    for name in [
        "trilu",
        *(m.name for m in pkgutil.iter_modules(trilu.__path__, "trilu.")),
    ]
    if ">>>" in _source(name)
]


def _import(name: str) -> ModuleType:
    """The module; a skip naming the package it needs, if that is missing."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
        if not isinstance(missing, ModuleNotFoundError) or not missing.name:
            raise
        package = missing.name.partition(".")[0]
        if package == "trilu":
            raise
        pytest.skip(f"could not import {package!r}: {name} needs it")


def _needs(test: doctest.DocTest) -> str | None:
    """A package that the docstring's examples import and that is missing."""
    for example in test.examples:
        found = re.match(r"(?:from|import) (\w+)", example.source)
        if found and importlib.util.find_spec(found[1]) is None:
            return found[1]
    return None


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    """Each docstring's examples, in order, print what they show."""
    module = _import(name)
    finder = doctest.DocTestFinder()
    tests = [
        t for t in finder.find(module, globs={"np": np, "trilu": trilu}) if t.examples
    ]
    assert tests, f"{name}'s source has examples, but no docstring of it does"
    missing = {t.name: package for t in tests if (package := _needs(t))}
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = io.StringIO()
    for test in tests:
        if test.name not in missing:
            runner.run(test, out=report.write)
    assert runner.summarize(verbose=False).failed == 0, report.getvalue()
    if missing:
        pytest.skip(", ".join(f"{n} needs {p!r}" for n, p in missing.items()))
