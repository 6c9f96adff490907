"""Sphinx configuration: pydata-sphinx-theme, numpydoc docstrings, doctests.

``nox -s docs`` builds the HTML and the doctests with ``-W --keep-going`` (a
warning fails the build) and opens the pages in a headless browser
(``docs/test_pages.py``). The Performance page's tables and plots are written
at build time from ``bench/results/*.json`` by ``_ext/perf_page.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import trilu

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

project = "trilu"
author = "the trilu developers"
copyright = "2026, the trilu developers"
version = release = trilu.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "numpydoc",
    "perf_page",
]

exclude_patterns = ["_build", "_generated"]  # _generated/*.rst is included
templates_path: list[str] = []
html_static_path = ["_static"]
html_favicon = "_static/trilu.svg"
html_logo = "_static/trilu.svg"

# Broken cross-references fail the build. Names of other projects are not
# linked (no intersphinx: the build must work offline), so they are listed.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|onnx|dask|threadpoolctl|scipy|ml_dtypes)(\..*)?"),
    (r"py:.*", r"(array_like|optional|callable|iterator|object|Any)"),
    (r"py:class", r"(int|bool|str|float|tuple|list|dict|None)"),
    (r"py:class", r"collections\.abc\..*|contextlib\..*|typing\..*"),
]

# autodoc + numpydoc
autodoc_typehints = "none"  # signatures as written; types live in Parameters
autodoc_member_order = "bysource"
numpydoc_show_class_members = False
numpydoc_attributes_as_param_list = False
numpydoc_validation_checks = {"GL08"}  # every public object has a docstring

# doctest: the pages' >>> examples and every docstring's Examples section;
# torch and jax where installed, for the examples with their arrays (they skip
# without: `:skipif: torch is None`, which sees only this setup)
doctest_global_setup = """
import numpy as np
import trilu
try:
    import torch
except ImportError:
    torch = None
try:
    import jax
except ImportError:
    jax = None
"""
trim_doctest_flags = True

html_theme = "pydata_sphinx_theme"
html_title = f"trilu {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_context = {"default_mode": "light"}
html_show_sourcelink = False
# The user guide has a section navigation; the other pages are one page each.
html_sidebars = {
    page: []
    for page in (
        "index",
        "getting_started",
        "api",
        "performance",
        "development",
        "changelog",
    )
}
