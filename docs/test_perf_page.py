"""The Performance page's generator with zero, one or several sweep files.

Run by ``nox -s docs`` beside the browser check (it needs sphinx and
matplotlib, which the package's tests do not install).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
perf_page = pytest.importorskip("perf_page")
report = perf_page._report()


def _sweep(seed: int, classes: list[str]) -> dict[str, Any]:
    cases = [
        {"name": f"{cls} {i}", "class": cls, "op": "tril", "mode": mode,
         "shape": [8, 8], "dtype": "float32", "k": 0, "layout": "C",
         "result_bytes": 256, "kept_fraction": 0.56, "trilu_s": 2e-6,
         "ratios": {"numpy": 2.0 + i, "copy": None if mode == "out" else 0.9,
                    "copyto": 1.2 if mode == "out" else None}}
        for i, cls in enumerate(classes)
        for mode in ("fresh", "out")
    ]  # fmt: skip
    return {
        "schema": 1, "kind": "sweep", "date": f"2026-12-0{seed}T01:00:00Z",
        "seed": seed, "cases": cases,
        "machine": {"cpu": f"CPU {seed}", "arch": "x86_64", "cpus": 2,
                    "python": "3.11", "numpy": "2.4", "trilu": "0.1.0",
                    "trilu_threads": 2, "torch": None, "onnxruntime": None},
    }  # fmt: skip


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A results folder holding the committed grid.json, and no sweep."""
    folder = tmp_path / "results"
    folder.mkdir()
    grid = perf_page.RESULTS / "grid.json"
    if grid.is_file():
        shutil.copy(grid, folder / "grid.json")
    return folder


def test_no_sweep_file(results: Path, tmp_path: Path) -> None:
    text = perf_page.render(report, results, tmp_path)
    assert "No sweep results yet" in text
    assert not (tmp_path / "sweep.png").exists()


@pytest.mark.parametrize("count", [1, 3])
def test_sweep_files(results: Path, tmp_path: Path, count: int) -> None:
    for seed in range(1, count + 1):
        sweep = _sweep(seed, ["tall", "wide", "batch", "negstride"][: seed + 1])
        (results / f"sweep-{seed}.json").write_text(json.dumps(sweep), encoding="utf-8")
    text = perf_page.render(report, results, tmp_path)
    assert "No sweep results yet" not in text
    assert f"{count} sweep file(s)" in text
    for seed in range(1, count + 1):
        assert f"seed {seed}: CPU {seed}" in text  # each run's machine and date
        assert f"sweep-{seed}.json: fresh" in text
        # and beside each of its tables, as the table's caption
        assert (
            f".. list-table:: ``sweep-{seed}.json``: 2026-12-0{seed}, CPU {seed}\n"
            in text
        )
    assert "Worst case per shape class" in text
    assert "Worst case per ratio and shape class" in text
    assert (tmp_path / "sweep.png").read_bytes().startswith(b"\x89PNG")


def test_no_results_at_all(tmp_path: Path) -> None:
    empty = tmp_path / "results"
    empty.mkdir()
    text = perf_page.render(report, empty, tmp_path)
    assert "No grid results file" in text
    assert "No sweep results yet" in text


def test_every_table_names_its_runs(results: Path, tmp_path: Path) -> None:
    """No table without the file, date and machine it comes from."""
    (results / "sweep-1.json").write_text(
        json.dumps(_sweep(1, ["tall"])), encoding="utf-8"
    )
    text = perf_page.render(report, results, tmp_path)
    tables = [line for line in text.splitlines() if line.startswith(".. list-table::")]
    assert tables
    for line in tables:
        assert ".json``: 2026-" in line, line
