"""Build the compiled kernel; all metadata lives in pyproject.toml."""

import os
import sys

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

# TRILU_DEBUG=1 builds with bounds checks and without optimization.
debug = os.environ.get("TRILU_DEBUG") == "1"

if sys.platform == "win32":
    compile_args = ["/Od"] if debug else ["/O2"]
    link_args = []
else:
    compile_args = ["-pthread", "-O0" if debug else "-O3"]
    link_args = ["-pthread"]

# Flags that must come last on the compile and link lines, after setuptools'
# own and the optimization above: the sanitizer builds of `nox -s sanitize` and
# `nox -s tsan` pass -fsanitize=... here.
compile_args += os.environ.get("TRILU_EXTRA_CFLAGS", "").split()
link_args += os.environ.get("TRILU_EXTRA_LDFLAGS", "").split()

kernel = Extension(
    "trilu._kernel",
    ["src/trilu/_kernel.pyx"],
    include_dirs=[np.get_include(), "src/trilu"],
    depends=[
        "src/trilu/_mask.h",
        "src/trilu/_recycle.h",
        "src/trilu/_stream.h",
        "src/trilu/_threads.h",
    ],
    define_macros=[
        ("NPY_NO_DEPRECATED_API", "NPY_1_25_API_VERSION"),
        # Built against numpy 2, the module runs on numpy >= 1.25 (our floor
        # is 1.26): the C API used is no newer than this.
        ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
    ],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
)

setup(
    ext_modules=cythonize(
        [kernel],
        compiler_directives={"boundscheck": debug, "wraparound": debug},
    )
)
