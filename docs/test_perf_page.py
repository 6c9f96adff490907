"""The Performance page's generator with zero, one or several sweep files,
with and without the toolkit's files (toolkit.json, its sweep classes).

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


def _toolkit_cases(classes: list[str]) -> list[dict[str, Any]]:
    peers = {"fill": "where", "band": "triu(tril)", "pack": "x[r, c]",
             "unpack": "scatter", "mirror": "where"}  # fmt: skip
    modes = {"fresh": peers, "out": dict.fromkeys(peers, "copyto"),
             "inplace": {"mirror": "where"}}  # fmt: skip
    return [
        {"name": f"{cls}: 300x300 float64", "class": cls, "op": cls, "mode": mode,
         "shape": [300, 300], "dtype": "float64", "k": 0, "layout": "C",
         "result_bytes": 720000, "kept_fraction": 0.5, "trilu_s": 5e-5,
         "ratios": {peer[cls]: 3.0 + i}}
        for i, cls in enumerate(classes)
        for mode, peer in modes.items()
        if cls in peer
    ]  # fmt: skip


def _toolkit_sweep(seed: int, classes: list[str]) -> dict[str, Any]:
    return {**_sweep(seed, []), "cases": _toolkit_cases(classes)}


def _toolkit() -> dict[str, Any]:
    cases = _toolkit_cases(["fill", "band", "pack", "unpack", "mirror"])
    for case in cases:
        case["class"] = "toolkit"
    return {**_sweep(9, []), "kind": "grid", "seed": None, "cases": cases}


def _write(folder: Path, name: str, data: dict[str, Any]) -> None:
    (folder / name).write_text(json.dumps(data), encoding="utf-8")


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
    assert "No toolkit results file" in text
    assert "No toolkit sweep results yet" in text
    assert "No index family results file" in text
    assert "No small-calls results (" in text
    assert "No mid-size results" in text


def test_toolkit_file(results: Path, tmp_path: Path) -> None:
    _write(results, "toolkit.json", _toolkit())
    text = perf_page.render(report, results, tmp_path)
    assert "No toolkit results file" not in text
    for mode in ("fresh output", "``out=``", "in place"):
        assert f"Beyond numpy, {mode}" in text
    assert ".. list-table:: ``toolkit.json``: 2026-12-09, CPU 9\n" in text
    assert "     - x[r, c] / trilu" in text
    assert (tmp_path / "toolkit.png").read_bytes().startswith(b"\x89PNG")


def test_toolkit_sweep_classes_get_their_own_section(
    results: Path, tmp_path: Path
) -> None:
    """Toolkit classes in a file of their own or beside the triangle classes:
    shown apart from them, with their own columns."""
    _write(results, "sweep-toolkit-1.json", _toolkit_sweep(1, ["fill", "mirror"]))
    text = perf_page.render(report, results, tmp_path)
    assert "No sweep results yet" in text  # no triangle class yet
    toolkit = text.split("Beyond numpy: the shape sweep")[1]
    assert "1 sweep file(s) of the toolkit classes" in toolkit
    assert "sweep-toolkit-1.json: toolkit classes, inplace" in toolkit
    assert "     - where / trilu (inplace)" in toolkit
    assert (tmp_path / "sweep-toolkit.png").read_bytes().startswith(b"\x89PNG")

    mixed = _sweep(2, ["tall", "wide"])
    mixed["cases"] += _toolkit_cases(["band", "pack"])
    _write(results, "sweep-2.json", mixed)
    text = perf_page.render(report, results, tmp_path)
    triangle, toolkit = text.split("Beyond numpy: the shape sweep")
    triangle = triangle.split("The shape sweep")[1]
    assert "1 sweep file(s):" in triangle
    assert "     - band" not in triangle
    assert "     - tall" not in toolkit
    assert "2 sweep file(s) of the toolkit classes" in toolkit
    assert "sweep-2.json: toolkit classes, fresh" in toolkit
    assert "     - band" in toolkit


def test_every_table_names_its_runs(results: Path, tmp_path: Path) -> None:
    """No table without the file, date and machine it comes from."""
    _write(results, "sweep-1.json", _sweep(1, ["tall"]))
    _write(results, "sweep-toolkit-1.json", _toolkit_sweep(1, ["unpack"]))
    _write(results, "toolkit.json", _toolkit())
    _write(results, "small.json", _small("small", "mid"))
    indices = perf_page.RESULTS / "indices.json"
    if indices.is_file():
        shutil.copy(indices, results / "indices.json")
    text = perf_page.render(report, results, tmp_path)
    tables = [line for line in text.splitlines() if line.startswith(".. list-table::")]
    assert tables
    for line in tables:
        assert ".json``: 2026-" in line, line


def _small(*classes: str) -> dict[str, Any]:
    """A small.json: a small call (without a class, as the files before the
    mid-size cases have it) and, if asked, a mid-size case."""
    cases = [
        {"name": "triu(x)", "op": "triu", "mode": "fresh", "call": "triu(x)",
         "floor": "empty_like(x)", "target": 1.4, "trilu_s": 2e-7,
         "ratios": {"floor": 1.25}, "lowest": 1.2, "previous": 2.7},
        {"name": "triu(x, out=o) 4x32x32 int8", "class": "mid", "op": "triu",
         "mode": "out", "call": "triu(x, out=o)", "floor": "copyto(o, x)",
         "target": 2.0, "shape": [4, 32, 32], "dtype": "int8",
         "result_bytes": 4096, "trilu_s": 1e-6, "ratios": {"floor": 1.5},
         "lowest": 1.4, "previous": None},
    ]  # fmt: skip
    cases = [c for c in cases if c.get("class", "small") in classes]
    return {**_sweep(7, []), "kind": "small", "seed": None, "cases": cases}


def test_small_calls_file(results: Path, tmp_path: Path) -> None:
    _write(results, "small.json", _small("small"))
    text = perf_page.render(report, results, tmp_path)
    assert "No small-calls results (" not in text
    assert ".. list-table:: ``small.json``: 2026-12-07, CPU 7\n" in text
    assert "   * - triu(x)\n     - empty\\_like(x)\n     - 1.25x\n" in text
    assert "No mid-size results" in text  # none in that file


def test_mid_size_results(results: Path, tmp_path: Path) -> None:
    """small.json's mid-size cases: a section after the small calls', which
    says what the ratio is, with each result's shape, size and dtype."""
    _write(results, "small.json", _small("small", "mid"))
    text = perf_page.render(report, results, tmp_path)
    small, mid = text.split("Mid-size results\n----------------\n")
    assert "   * - triu(x)\n" in small
    assert "triu(x, out=o)" not in small
    assert "No mid-size results" not in mid
    assert "trilu's time over numpy's copy of the same bytes" in mid
    assert ".. list-table:: ``small.json``: 2026-12-07, CPU 7\n" in mid
    assert (
        "   * - triu(x, out=o)\n     - 4x32x32, 4 KiB\n     - int8\n"
        "     - copyto(o, x)\n     - 1.50x\n"
    ) in mid
    _write(results, "small.json", _small("mid"))  # a run of --only mid
    text = perf_page.render(report, results, tmp_path)
    assert "No small-calls results (" in text
    assert "     - 4x32x32, 4 KiB\n" in text
