"""Build the compiled kernel; all metadata lives in pyproject.toml."""

import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

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
        "src/trilu/_banded.pxi",
        "src/trilu/_doors.pxi",
        "src/trilu/_indices.pxi",
        "src/trilu/_mask.h",
        "src/trilu/_memory.pxi",
        "src/trilu/_pack.pxi",
        "src/trilu/_plan.pxi",
        "src/trilu/_recycle.h",
        "src/trilu/_simd.h",
        "src/trilu/_stream.h",
        "src/trilu/_threads.h",
        "src/trilu/_work.pxi",
        "src/trilu/_write.pxi",
    ],
    define_macros=[
        ("NPY_NO_DEPRECATED_API", "NPY_1_25_API_VERSION"),
        # Built against numpy 2, the module runs on numpy >= 1.25, at or below
        # the floor in pyproject.toml's `dependencies`: the C API used is no
        # newer than this.
        ("NPY_TARGET_VERSION", "NPY_1_25_API_VERSION"),
    ],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
)

# Intel's fix for its JCC erratum (Skylake to Cascade Lake, in microcode)
# keeps a jump that crosses or ends on a 32-byte boundary out of the decoded
# µop cache, so a tight loop's speed depends on where the linker placed it.
# The assembler pads jumps away from those boundaries: GCC takes -Wa,...,
# Clang the flag itself.
JCC_FLAGS = ["-Wa,-mbranches-within-32B-boundaries", "-mbranches-within-32B-boundaries"]


class BuildExt(build_ext):
    """build_ext, plus the first JCC padding flag the compiler accepts (x86-64)."""

    def build_extensions(self) -> None:
        if self.compiler.compiler_type == "unix" and platform.machine().lower() in (
            "x86_64",
            "amd64",
        ):
            flag = next((f for f in JCC_FLAGS if self._accepts(f)), None)
            for ext in self.extensions if flag else []:
                ext.extra_compile_args.append(flag)
        super().build_extensions()

    def _accepts(self, flag: str) -> bool:
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp, "probe.c")
            source.write_text("int probe(int x) { return x + 1; }\n")
            try:
                self.compiler.compile(
                    [str(source)], output_dir=tmp, extra_postargs=[flag]
                )
            except CompileError:  # not this compiler's flag
                return False
        return True


setup(
    cmdclass={"build_ext": BuildExt},
    ext_modules=cythonize(
        [kernel],
        compiler_directives={"boundscheck": debug, "wraparound": debug},
    ),
)
