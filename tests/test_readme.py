"""The README's Python examples run as written and print what they show."""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(
    r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL
)


def imported_modules(code: str) -> list[str]:
    """The modules a block imports (doctest or plain), trilu's own left out."""
    if ">>>" in code:
        examples = doctest.DocTestParser().get_examples(code)
        code = "".join(example.source for example in examples)
    names = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return [name for name in names if name.partition(".")[0] != "trilu"]


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example(code: str) -> None:
    """>>> blocks are doctests; other blocks must run, and each `print(...)  #
    value` line must print that value.

    A block that imports an optional package (onnx, dask) skips where that may
    be missing, as the tests of that package do.
    """
    for name in imported_modules(code):
        pytest.importorskip(name)
    if ">>>" in code:
        test = doctest.DocTestParser().get_doctest(code, {}, "README", str(README), 0)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        assert runner.summarize(verbose=False).failed == 0
        return
    expected = [
        m.group(1).strip()
        for m in re.finditer(r"^print\(.*\)\s+#\s*(.*)$", code, re.MULTILINE)
    ]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "readme"})  # noqa: S102
    printed = out.getvalue().splitlines()
    assert printed[: len(expected)] == expected
