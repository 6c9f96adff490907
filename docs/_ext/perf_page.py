"""Write the Performance page's tables and plots from the results files.

At ``builder-inited`` this reads ``bench/results/*.json`` (``grid.json`` from
``bench/bench.py --json``, ``small.json`` from ``bench/small_ab.py``,
``toolkit.json`` from ``bench/bench_toolkit.py``, ``indices.json`` from
``bench/bench_indices.py``, ``sweep-*.json`` from ``bench/sweep.py``) and
writes ``docs/_generated/performance.rst`` and its PNGs, which
``performance.rst`` includes. ``small.json``'s classes, small calls and
mid-size results, get a section each. The sweeps' triu/tril classes and
their toolkit classes (fill, band, pack, unpack, mirror) get a section each,
whichever files hold them. A missing file, or zero sweep files, give a page
that says so. Nothing in the tables is typed by hand: every figure comes from
``bench/report.py``.

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


GRID_TITLES = {
    "fresh": "Fresh output: ``trilu.triu(x)`` against each peer making a new array",
    "out": "``out=`` into a preallocated array, against ``np.copyto(out, x)``",
    "inplace": "In place: ``trilu.triu(x, out=x)`` against PyTorch's ``x.triu_()``",
}
TOOLKIT_TITLES = {
    "fresh": "Beyond numpy, fresh output: against the numpy way",
    "out": "Beyond numpy, ``out=``: against ``np.copyto`` of the same bytes",
    "inplace": "Beyond numpy, in place: ``mirror(x, out=x)`` against ``np.where``",
}


def _fixed(
    report: Any, out: Path, result: dict[str, Any], *, toolkit: bool
) -> list[str]:
    """A fixed-case section: bench.py's grid, or bench_toolkit.py's cases;
    the run, plot, a table a mode and the worst case per ratio."""
    png = "toolkit.png" if toolkit else "grid.png"
    report.plot_grid(result, out / png)
    parts = [_machine(report, result)]
    if toolkit:
        parts.append(
            "Fixed cases of ``tril(x, fill=-inf)``, ``band(x, -8, 8)``, ``pack``, "
            "``unpack`` and ``mirror``, each against the numpy way of it, its "
            "masks and index arrays made outside the timing; ``out=`` where the "
            "result has 40 KiB to 1 MiB.\n"
        )
        alt = "each toolkit case's ratios against the numpy way and np.copyto"
    else:
        parts.append(f"**{report.headline(result)}.**\n")
        alt = (
            "each grid case's ratios against numpy, onnxruntime, x.copy() and np.copyto"
        )
    parts.append(f".. image:: /_generated/{png}\n   :alt: {alt}\n")
    titles = TOOLKIT_TITLES if toolkit else GRID_TITLES
    for mode, table in report.case_tables(result).items():
        parts.append(_heading(titles.get(mode, mode), "~"))
        parts.append(report.rst(table, _run([result])))
    by = ("op",) if toolkit else ()
    parts.append(
        _heading(
            f"Worst case per ratio: {'beyond numpy' if toolkit else 'the grid'}", "~"
        )
    )
    parts.append(report.rst(report.summary_table([result], *by), _run([result])))
    return parts


def _sweep(
    report: Any,
    out: Path,
    sweeps: list[dict[str, Any]],
    *,
    toolkit: bool,
) -> list[str]:
    """A sweep section: triu/tril's classes, or the toolkit's (fill, band,
    pack, unpack, mirror); the files, plot, worst cases and every case."""
    png = "sweep-toolkit.png" if toolkit else "sweep.png"
    report.plot_sweep(sweeps, out / png)
    seeds = report.sweep_seeds(sweeps)
    if toolkit:
        intro = (
            f"{len(sweeps)} sweep file(s) of the toolkit classes (fill, band, pack, "
            "unpack, mirror): 2-D and batched shapes of 1 KiB to 32 MiB drawn per "
            "class from a seed, each operation against the numpy way of it, "
            "``out=`` against ``np.copyto`` where the result has 40 KiB to 1 MiB.\n"
        )
        worst = (
            f"The lowest ratio of each class over seeds {seeds}: "
            "fresh results and ``mirror`` in place against the numpy way, "
            "``tril``/``triu`` with a fill against the same call with zeros, "
            "``out=`` against ``np.copyto``.\n"
        )
    else:
        intro = (
            f"{len(sweeps)} sweep file(s): shapes drawn per class from a seed, so "
            "that no fixed case can be tuned for.\n"
        )
        worst = (
            f"The lowest ratio of each class over seeds {seeds}: "
            "fresh results against numpy, ``x.copy()`` and ``np.zeros_like``, "
            "``out=`` against ``np.copyto``.\n"
        )
    what = "toolkit class" if toolkit else "shape class"
    columns = (report.TOOLKIT_COLUMNS,) if toolkit else ()
    parts = [intro, *[_machine(report, s) for s in sweeps]]
    parts.append(
        f".. image:: /_generated/{png}\n"
        f"   :alt: ratio against {what}, one marker per case\n"
    )
    parts.append(_heading(f"Worst case per {what}", "~"))
    parts.append(worst)
    parts.append(report.rst(report.sweep_worst_table(sweeps, *columns), _run(sweeps)))
    parts.append(_heading(f"Worst case per ratio and {what}", "~"))
    parts.append(report.rst(report.summary_table(sweeps), _run(sweeps)))
    label = "toolkit classes, " if toolkit else ""  # a file may hold both kinds
    for sweep in sweeps:
        name = Path(sweep["path"]).name
        for mode, table in report.case_tables(sweep).items():
            parts.append(_heading(f"{name}: {label}{mode}", "~"))
            parts.append(report.rst(table, _run([sweep])))
    return parts


SMALL_SECTIONS = {  # small.json's classes: heading, what is measured, if none
    "small": (
        "Small calls",
        (
            "Each public function's call on a small input, its time over "
            "numpy's allocation of its result (the floor), timed interleaved in "
            "one process: the median and the lowest over fresh interpreters, "
            "beside the build before (``before``) and the most it may be.\n"
        ),
        (
            "No small-calls results (``bench/small_ab.py --only small`` writes "
            "them into ``bench/results/small.json``) yet.\n"
        ),
    ),
    "mid": (
        "Mid-size results",
        (
            "``triu`` (and ``tril`` for two dtypes) of results of 4 KiB to "
            "512 KiB, which stay in cache, where each row's cost decides: every "
            "plain numeric dtype, square and a batch of 4 matrices of the same "
            "bytes. The ratio is trilu's time over numpy's copy of the same "
            "bytes, ``x.copy()`` for a fresh result and ``np.copyto(o, x)`` "
            "with ``out=o``, so lower is better: at most the target (1 over "
            "the copy's speed the targets below ask for; 2.00x is 0.5x) is "
            "within it. The median and the lowest over fresh interpreters, "
            "timed interleaved in one process, beside the build before.\n"
        ),
        (
            "No mid-size results (``bench/small_ab.py --only mid`` writes them "
            "into ``bench/results/small.json``) yet.\n"
        ),
    ),
}


def _small(report: Any, small: dict[str, Any] | None, cls: str) -> list[str]:
    """A class of small.json's cases, its section: the run and its table."""
    heading, what, none = SMALL_SECTIONS[cls]
    parts = [_heading(heading, "-")]
    if small is None or cls not in report.small_classes(small):
        return [*parts, none]
    parts += [_machine(report, small), what]
    parts.append(report.rst(report.small_table(small, cls), _run([small])))
    return parts


def _indices(report: Any, indices: dict[str, Any]) -> list[str]:
    parts = [_machine(report, indices)]
    parts.append("``tri``, ``triu_indices`` and ``tril_indices`` against numpy's.\n")
    run = _run([indices])
    parts += [report.rst(table, run) for table in report.case_tables(indices).values()]
    return parts


def render(report: Any, results: Path = RESULTS, out: Path = OUT) -> str:
    """The generated part of the Performance page, as reST; plots go to out.
    Each table's caption names the runs (file, date, machine) it comes from."""
    every_sweep = report.load_all(results.glob("sweep-*.json"))
    sweeps = report.with_classes(every_sweep, report.TOOLKIT_CLASSES, keep=False)
    toolkit_sweeps = report.with_classes(every_sweep, report.TOOLKIT_CLASSES)
    parts = []

    parts.append(_heading("The grid", "-"))
    if (results / "grid.json").is_file():
        parts += _fixed(report, out, report.load(results / "grid.json"), toolkit=False)
    else:
        parts.append("No grid results file (``bench/results/grid.json``) yet.\n")

    path = results / "small.json"
    small = report.load(path) if path.is_file() else None
    for cls in SMALL_SECTIONS:
        parts += _small(report, small, cls)

    parts.append(_heading("The shape sweep", "-"))
    if sweeps:
        parts += _sweep(report, out, sweeps, toolkit=False)
    else:
        parts.append(
            "No sweep results yet: ``bench/sweep.py`` writes "
            "``bench/results/sweep-*.json`` files, and each one committed "
            "appears here with its plot and its worst cases.\n"
        )

    parts.append(_heading("Beyond numpy: fill, band, pack, unpack, mirror", "-"))
    if (results / "toolkit.json").is_file():
        parts += _fixed(
            report, out, report.load(results / "toolkit.json"), toolkit=True
        )
    else:
        parts.append(
            "No toolkit results file (``bench/results/toolkit.json``, from "
            "``bench/bench_toolkit.py``) yet.\n"
        )

    parts.append(_heading("Beyond numpy: the shape sweep", "-"))
    if toolkit_sweeps:
        parts += _sweep(report, out, toolkit_sweeps, toolkit=True)
    else:
        parts.append(
            "No toolkit sweep results yet: ``bench/sweep.py --classes toolkit`` "
            "writes them (``bench/results/sweep-toolkit-*.json``).\n"
        )

    parts.append(_heading("The index family", "-"))
    if (results / "indices.json").is_file():
        parts += _indices(report, report.load(results / "indices.json"))
    else:
        parts.append(
            "No index family results file (``bench/results/indices.json``, from "
            "``bench/bench_indices.py``) yet.\n"
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
