"""Write the Performance page's tables and plots from the results files.

At ``builder-inited`` this reads ``bench/results/*.json`` (``grid.json`` from
``bench/bench.py --json``, ``sweep-*.json`` from ``bench/sweep.py``) and writes
``docs/_generated/performance.rst`` and its PNGs, which ``performance.rst``
includes. Zero sweep files give a page that says so. Nothing in the tables is
typed by hand: every figure comes from ``bench/report.py``.

It also checks that the README's headline (the line after
``<!-- perf:headline -->``) is the one ``bench/report.py`` makes from
``grid.json``, and warns (which fails a ``-W`` build) when it is not.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from sphinx.util import logging

DOCS = Path(__file__).resolve().parent.parent
ROOT = DOCS.parent
RESULTS = ROOT / "bench" / "results"
OUT = DOCS / "_generated"
logger = logging.getLogger(__name__)


def _report() -> Any:
    spec = importlib.util.spec_from_file_location(
        "trilu_bench_report", ROOT / "bench" / "report.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _heading(text: str, char: str) -> str:
    return f"{text}\n{char * len(text)}\n"


def _shown(result: dict[str, Any]) -> str:
    path = Path(result["path"])
    return str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name)


def _machine(report: Any, result: dict[str, Any]) -> str:
    return f"*Run of {report.machine_line(result)}* (``{_shown(result)}``)\n"


def _run(results: list[dict[str, Any]]) -> str:
    """Which runs a table comes from, as its caption: files, date, machine."""
    runs: dict[str, list[str]] = {}
    for r in results:
        when = f"{r['date'][:10]}, {r['machine'].get('cpu', '?')}"
        runs.setdefault(when, []).append(f"``{Path(r['path']).name}``")
    return "; ".join(f"{', '.join(files)}: {when}" for when, files in runs.items())


def render(report: Any, results: Path = RESULTS, out: Path = OUT) -> str:
    """The generated part of the Performance page, as reST; plots go to out.
    Each table's caption names the runs (file, date, machine) it comes from."""
    grid_path = results / "grid.json"
    sweeps = report.load_all(results.glob("sweep-*.json"))
    parts = []

    parts.append(_heading("The grid", "-"))
    if grid_path.is_file():
        grid = report.load(grid_path)
        report.plot_grid(grid, out / "grid.png")
        parts.append(_machine(report, grid))
        parts.append(f"**{report.headline(grid)}.**\n")
        parts.append(
            ".. image:: /_generated/grid.png\n"
            "   :alt: each grid case's ratios against numpy, onnxruntime, "
            "x.copy() and np.copyto\n"
        )
        titles = {
            "fresh": "Fresh output: ``trilu.triu(x)`` against each peer making a new array",
            "out": "``out=`` into a preallocated array, against ``np.copyto(out, x)``",
            "inplace": "In place: ``trilu.triu(x, out=x)`` against PyTorch's ``x.triu_()``",
        }
        for mode, table in report.case_tables(grid).items():
            parts.append(_heading(titles.get(mode, mode), "~"))
            parts.append(report.rst(table, _run([grid])))
        parts.append(_heading("Worst case per ratio: the grid", "~"))
        parts.append(report.rst(report.summary_table([grid]), _run([grid])))
    else:
        parts.append("No grid results file (``bench/results/grid.json``) yet.\n")

    parts.append(_heading("The shape sweep", "-"))
    if sweeps:
        report.plot_sweep(sweeps, out / "sweep.png")
        parts.append(
            f"{len(sweeps)} sweep file(s): shapes drawn per class from a seed, so "
            "that no fixed case can be tuned for.\n"
        )
        parts += [_machine(report, s) for s in sweeps]
        parts.append(
            ".. image:: /_generated/sweep.png\n"
            "   :alt: ratio against shape class, one marker per case\n"
        )
        parts.append(_heading("Worst case per shape class", "~"))
        parts.append(
            f"The lowest ratio of each class over seeds {report.sweep_seeds(sweeps)}: "
            "fresh results against numpy, ``x.copy()`` and ``np.zeros_like``, "
            "``out=`` against ``np.copyto``.\n"
        )
        parts.append(report.rst(report.sweep_worst_table(sweeps), _run(sweeps)))
        parts.append(_heading("Worst case per ratio and shape class", "~"))
        parts.append(report.rst(report.summary_table(sweeps), _run(sweeps)))
        for sweep in sweeps:
            name = Path(sweep["path"]).name
            for mode, table in report.case_tables(sweep).items():
                parts.append(_heading(f"{name}: {mode}", "~"))
                parts.append(report.rst(table, _run([sweep])))
    else:
        parts.append(
            "No sweep results yet: ``bench/sweep.py`` writes "
            "``bench/results/sweep-*.json`` files, and each one committed "
            "appears here with its plot and its worst cases.\n"
        )
    return "\n".join(parts)


def check_readme(report: Any) -> None:
    grid_path = RESULTS / "grid.json"
    if not grid_path.is_file():
        return
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    try:
        line = lines[lines.index("<!-- perf:headline -->") + 1]
    except (ValueError, IndexError):
        logger.warning("README.md has no <!-- perf:headline --> line")
        return
    want = report.headline(report.load(grid_path)) + "."
    if line != want:
        logger.warning(
            "README.md's performance headline is not grid.json's: run "
            "python bench/report.py bench/results/grid.json --readme README.md"
            " (it has %r, grid.json gives %r)",
            line,
            want,
        )


def generate(app: Any) -> None:
    del app
    report = _report()
    OUT.mkdir(exist_ok=True)
    text = render(report)
    target = OUT / "performance.rst"
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.write_text(text, encoding="utf-8")
    check_readme(report)


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
