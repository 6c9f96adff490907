"""bench/report.py: results files in, tables, summary and headline out.

The Performance page and the README's headline are made by these functions
from ``bench/results/*.json``. Skipped where the checkout's ``bench/`` is not
there (the wheel tests copy only ``tests/``); plots need matplotlib.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "bench" / "report.py"
if not REPORT.is_file():
    pytest.skip("no bench/ beside the tests", allow_module_level=True)

_spec = importlib.util.spec_from_file_location("trilu_bench_report", REPORT)
assert _spec is not None
assert _spec.loader is not None
report = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = report
_spec.loader.exec_module(report)


def _case(name: str, cls: str, mode: str, **ratios: float | None) -> dict[str, Any]:
    return {
        "name": name, "class": cls, "op": "triu", "mode": mode, "shape": [4, 4],
        "dtype": "float64", "k": 0, "layout": "C", "result_bytes": 128,
        "kept_fraction": 0.625, "trilu_s": 1e-6, "ratios": ratios,
    }  # fmt: skip


def _result(kind: str, cases: list[dict[str, Any]], seed: int | None = None) -> dict:
    return {
        "schema": 1, "kind": kind, "date": "2026-12-01T05:30:00Z", "seed": seed,
        "machine": {"cpu": "CPU X", "arch": "x86_64", "cpus": 2, "python": "3.11.7",
                    "numpy": "2.4.6", "trilu": "0.1.0", "trilu_threads": 2,
                    "torch": None, "onnxruntime": "1.32.0"},
        "cases": cases,
    }  # fmt: skip


SWEEP = _result(
    "sweep",
    [
        _case("tall a", "tall", "fresh", numpy=9.0, copy=1.5, torch=None),
        _case("tall b", "tall", "fresh", numpy=3.0, copy=0.8),
        _case("wide a", "wide", "fresh", numpy=12.0, copy=None),
        _case("wide b", "wide", "out", copyto=1.1),
    ],
    seed=3,
)


def test_summary_worst_case_per_ratio_and_class() -> None:
    rows = {(r["mode"], r["ratio"], r["class"]): r for r in report.summary([SWEEP])}
    assert set(rows) == {
        ("fresh", "numpy", "tall"),
        ("fresh", "numpy", "wide"),
        ("fresh", "copy", "tall"),
        ("out", "copyto", "wide"),
    }  # null ratios (torch, wide's copy) count nowhere
    tall = rows["fresh", "numpy", "tall"]
    assert (tall["worst"], tall["worst_case"], tall["median"], tall["cases"]) == (
        3.0, "tall b triu", 6.0, 2,
    )  # fmt: skip
    assert rows["fresh", "copy", "tall"]["worst"] == 0.8  # below 1 is kept as is


def test_tables_and_renderings() -> None:
    tables = report.case_tables(SWEEP)
    assert list(tables) == ["fresh", "out"]
    header, rows = tables["fresh"]
    assert header == ["case", "class", "op", "trilu", "numpy / trilu", "copy / trilu"]
    assert rows[2] == ["wide a", "wide", "triu", "1.00 us", "12.00x", "n/a"]
    md = report.markdown(tables["fresh"])
    assert md.splitlines()[1] == "|---|---|---|---:|---:|---:|"
    rst = report.rst(report.summary_table([SWEEP]))
    assert rst.startswith(".. list-table::")
    assert "     - tall b triu" in rst


def test_machine_line_and_headline() -> None:
    line = report.machine_line(SWEEP)
    assert line.startswith("2026-12-01 05:30:00 UTC, seed 3: CPU X (x86_64, 2 CPUs)")
    assert "no torch, onnxruntime 1.32.0" in line
    grid = _result("grid", [_case("a", "grid", "fresh", numpy=4.0),
                            _case("b", "grid", "fresh", numpy=8.0),
                            _case("c", "grid", "fresh", numpy=20.0)])  # fmt: skip
    assert report.headline(grid) == (
        "numpy.triu/tril take 8.0x trilu's time at the median of 3 cases, "
        "4.0x at worst (2026-12-01, CPU X)"
    )


def test_load_checks_the_schema(tmp_path: Path) -> None:
    good = tmp_path / "sweep-1.json"
    good.write_text(json.dumps(SWEEP), encoding="utf-8")
    assert report.load(good)["path"] == str(good)
    for broken in ({**SWEEP, "schema": 2}, {**SWEEP, "kind": "other"},
                   {k: v for k, v in SWEEP.items() if k != "machine"}):  # fmt: skip
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(broken), encoding="utf-8")
        with pytest.raises(ValueError, match=r"bad\.json"):
            report.load(path)


def test_write_headline(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(
        "# x\n\n<!-- perf:headline -->\nold line.\n\nrest\n", encoding="utf-8"
    )
    grid = _result("grid", [_case("a", "grid", "fresh", numpy=5.0)])
    report.write_headline(readme, grid)
    assert readme.read_text(encoding="utf-8").splitlines()[3] == (
        report.headline(grid) + "."
    )


def test_committed_results_and_readme_agree() -> None:
    """Every committed results file loads; the README's headline is grid.json's."""
    files = sorted((ROOT / "bench" / "results").glob("*.json"))
    results = report.load_all(files)
    grids = [r for r in results if r["kind"] == "grid"]
    if not grids:
        pytest.skip("no grid results file committed")
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    headline = lines[lines.index(report.HEADLINE_MARKER) + 1]
    assert (
        headline == report.headline(report.load(ROOT / "bench/results/grid.json")) + "."
    )


def test_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    report.plot_sweep([SWEEP, {**SWEEP, "seed": 4}], tmp_path / "sweep.png")
    grid = _result("grid", [_case("a", "grid", "fresh", numpy=5.0, copy=0.9),
                            _case("a", "grid", "inplace", torch=None)])  # fmt: skip
    report.plot_grid(grid, tmp_path / "grid.png")
    for name in ("sweep.png", "grid.png"):
        assert (tmp_path / name).read_bytes().startswith(b"\x89PNG")


def test_with_classes() -> None:
    mixed = _result("sweep", [_case("t", "tall", "fresh", numpy=4.0),
                              _case("f", "fill", "fresh", where=5.0),
                              _case("m", "mirror", "inplace", where=3.5)], seed=1)  # fmt: skip
    toolkit = report.with_classes([mixed, SWEEP], report.TOOLKIT_CLASSES)
    assert [[c["name"] for c in r["cases"]] for r in toolkit] == [["f", "m"]]
    rest = report.with_classes([mixed, SWEEP], report.TOOLKIT_CLASSES, keep=False)
    assert [len(r["cases"]) for r in rest] == [1, 4]
    assert len(mixed["cases"]) == 3  # the input is left as it was


def test_toolkit_worst_table() -> None:
    sweep = _result(
        "sweep",
        [
            _case("f", "fill", "fresh", where=5.0, **{"zero fill": 0.9}),
            _case("f", "fill", "out", copyto=1.1),
            _case("m", "mirror", "fresh", where=3.5),
            _case("m", "mirror", "inplace", where=2.5),
        ],
        seed=1,
    )
    header, rows = report.sweep_worst_table([sweep], report.TOOLKIT_COLUMNS)
    assert header[:3] == ["class", "where / trilu (fresh)", "zero fill / trilu"]
    assert "where / trilu (inplace)" in header
    assert rows[0][:3] == ["fill", "5.00x", "0.90x"]
    assert rows[1][0] == "mirror"
    assert rows[1][header.index("where / trilu (inplace)")] == "2.50x"
    # the triangle classes' table keeps its headers
    assert report.sweep_worst_table([SWEEP])[0] == [
        "class", "numpy / trilu", "copy / trilu", "zeros / trilu", "copyto / trilu",
    ]  # fmt: skip


# --- bench/sweep.py's toolkit classes: what they compare, not how fast ------------


def _bench_module(name: str) -> Any:
    """bench/<name>.py, imported with bench/ on sys.path only while it loads."""
    path, modules = list(sys.path), set(sys.modules)
    spec = importlib.util.spec_from_file_location(
        f"trilu_bench_{name}", ROOT / "bench" / f"{name}.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = path
        # bench's own modules (bench, cases...) go; not the libraries they
        # imported, which cannot be imported twice in a process (torch's
        # extension, initialised again, fails)
        bench = str(ROOT / "bench")
        for loaded in set(sys.modules) - modules - {spec.name}:
            if (getattr(sys.modules[loaded], "__file__", None) or "").startswith(bench):
                del sys.modules[loaded]
    return module


@pytest.fixture(scope="module")
def sweep() -> Any:
    return _bench_module("sweep")


def test_sweep_classes(sweep: Any) -> None:
    assert sweep.CLASSES == report.TRIANGLE_CLASSES
    assert sweep.TOOLKIT_CLASSES == report.TOOLKIT_CLASSES
    for _, peer in report.TOOLKIT_COLUMNS + report.SWEEP_COLUMNS:
        assert peer in sweep.TARGETS
    assert sweep.classes("toolkit,tall,fill") == [*report.TOOLKIT_CLASSES, "tall"]
    with pytest.raises(ValueError, match="no class 'nope'"):
        sweep.classes("nope")
    # a case is the same whichever classes are chosen
    every = [c.name for c in sweep.cases(3, 2, sweep.ALL_CLASSES)]
    some = [c.name for c in sweep.cases(3, 2, ["square", "pack"])]
    assert some == [n for n in every if n.startswith(("square:", "pack:"))]


def _toolkit_cases(sweep: Any) -> list[Any]:
    """Small cases of every toolkit class: 2-D, batched, one element; square
    for mirror; each dtype kind, both triangles, a few k and bands."""
    tool = sweep.ToolCase
    shapes = [(5, 7), (3, 6, 4), (4, 4), (2, 1, 1)]
    dtypes = ["int8", "float16", "float64", "complex128"]
    grid = [(s, d, upper) for s in shapes for d in dtypes for upper in (True, False)]
    return (
        [tool(cls, s, d, k, upper) for s, d, upper in grid
         for cls in ("fill", "pack", "unpack", "unpack_f") for k in (-1, 0, 2)]
        + [tool("pack_f", s, d, k, upper, view=view) for s, d, upper in grid
           for k in (-1, 0, 2) for view in ("C", "F")]
        + [tool(cls, (*s[:-1], s[-2]), d, upper=upper, conj=conj, k=k)
           for s, d, upper in grid for conj in {False, d == "complex128"}
           for cls, k in [("mirror", None), ("unpack_mirror", 1),
                          ("unpack_mirror", -1)]]
        + [tool("band", s, d, lo=lo, hi=hi) for s, d, _ in grid
           for lo, hi in [(-8, 8), (0, 0), (-1, 3), (2, -2)]]
        + [tool(cls, (n, n), d) for cls in ("squareform_v", "squareform_m")
           for n in (1, 2, 5) for d in ("float64", "float32", "int32")]
        + [tool("mask", s, d, lo=lo, hi=hi) for s in [(5, 7), (4, 4), (1, 1)]
           for d in ("bool", "float32", "float16")
           for lo, hi in [(None, 0), (None, 2), (-2, 0), (-1, 3), (2, None)]]
        + [tool(cls, s, d, lo=-lower, hi=upper) for s, d, _ in grid
           for cls in ("to_banded", "from_banded")
           for lower, upper in [(0, 0), (1, 2), (3, 0), (9, 9)]]
    )  # fmt: skip


# the classes whose operation takes out= (squareform's does not)
# the classes timed with out= too (squareform and the masks take none)
WITH_OUT = [
    c for c in report.TOOLKIT_CLASSES if not c.startswith("squareform") and c != "mask"
]


def test_toolkit_peers_compute_what_trilu_computes(sweep: Any) -> None:
    """Each numpy way gives trilu's result, bit for bit, of its dtype; out=
    writes it too."""
    for case in _toolkit_cases(sweep):
        timed = sweep.toolkit_fns(case)
        fresh = timed[0][2]["trilu"]()
        if case.cls in WITH_OUT:
            assert [mode for mode, _, _ in timed][-1] == "out"
        for mode, nbytes, fns in timed:
            if mode == "out" and nbytes == 0:  # never timed (OUT_BYTES)
                continue
            ours = fns["trilu"]()
            assert ours.nbytes == nbytes
            assert ours.dtype == fresh.dtype
            assert ours.tobytes() == fresh.tobytes(), (case, mode)
            for peer, fn in fns.items():
                if peer in ("trilu", "copyto", "zero fill", "zeros+ones") or fn is None:
                    continue  # (None: LAPACK's or scipy's, where they do not apply)
                theirs = fn()
                assert (theirs.dtype, theirs.shape) == (ours.dtype, ours.shape)
                assert theirs.tobytes() == ours.tobytes(), (case, mode, peer)


def test_toolkit_records_load(sweep: Any, tmp_path: Path) -> None:
    """One small case of each toolkit class, run: records report.py reads."""
    records = []
    for cls in report.TOOLKIT_CLASSES:
        shape = (200, 200) if cls in ("pack", "pack_f") else (120, 120)  # out= too
        side = 45 if cls == "to_banded" else 2  # (ab of 91 rows: over 40 KiB)
        case = sweep.ToolCase(cls, shape, "float32", 0, lo=-side, hi=side)
        records += sweep.run_toolkit_case(case, 1, 1e-4)
    assert {(r["class"], r["mode"]) for r in records} == {
        (cls, mode) for cls in WITH_OUT for mode in ("fresh", "out")
    } | {
        ("mirror", "inplace"),
        ("squareform_v", "fresh"),
        ("squareform_m", "fresh"),
        ("mask", "fresh"),
    }
    path = tmp_path / "sweep-toolkit-1.json"
    path.write_text(json.dumps(_result("sweep", records, seed=1)), encoding="utf-8")
    tables = report.case_tables(report.load(path))
    assert list(tables) == ["fresh", "out", "inplace"]
    assert "x[r, c] / trilu" in tables["fresh"][0]


def test_summary_by_op() -> None:
    toolkit = _result("grid", [
        {**_case("f", "toolkit", "fresh", where=5.0), "op": "tril"},
        {**_case("m", "toolkit", "fresh", where=2.0), "op": "mirror"},
        {**_case("m2", "toolkit", "fresh", where=4.0), "op": "mirror"},
    ])  # fmt: skip
    header, rows = report.summary_table([toolkit], "op")
    assert header[2] == "op"
    assert [row[2:7] for row in rows] == [
        ["tril", "5.00x", "f tril", "5.00x", "1"],
        ["mirror", "2.00x", "m mirror", "3.00x", "2"],
    ]


SMALL = _result(
    "small",
    [
        {"name": "triu(x)", "op": "triu", "mode": "fresh", "call": "triu(x)",
         "floor": "empty_like(x)", "target": 1.4, "trilu_s": 2e-7,
         "ratios": {"floor": 1.25}, "lowest": 1.2, "previous": 2.7,
         "instructions": 1.3, "previous_instructions": 1.8},
        {"name": "tri(4)", "op": "tri", "mode": "fresh", "call": "tri(4)",
         "floor": "empty((4, 4))", "target": 3.0, "trilu_s": 3e-7,
         "ratios": {"floor": 3.5}, "lowest": 3.4, "previous": None},
    ],
)  # fmt: skip


def test_small_calls_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A small-calls file: each call over its floor, beside the build before
    and its target, and whether it is within; it loads, and stays out of
    the summary of ratios against peers."""
    header, rows = report.small_table(SMALL)
    assert header == [
        "call", "floor", "trilu / floor", "lowest", "before", "instructions",
        "at most", "within",
    ]  # fmt: skip
    assert rows == [
        [
            "triu(x)",
            "empty_like(x)",
            "1.25x",
            "1.20x",
            "2.70x",
            "1.30x (was 1.80x)",
            "1.40x",
            "yes",
        ],
        ["tri(4)", "empty((4, 4))", "3.50x", "3.40x", "n/a", "n/a", "3.00x", "no"],
    ]
    path = tmp_path / "small.json"
    path.write_text(json.dumps(SMALL), encoding="utf-8")
    assert report.load(path)["kind"] == "small"
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps(_result("grid", [_case("a", "grid", "fresh", numpy=5.0)]))
    )
    assert report.main([str(path), str(grid)]) == 0
    printed = capsys.readouterr().out
    assert "| triu(x) | empty_like(x) | 1.25x |" in printed
    assert "floor / trilu" not in printed  # not a peer's ratio


MID = {
    "name": "triu(x, out=o) 4x32x32 int8", "class": "mid", "op": "triu",
    "mode": "out", "call": "triu(x, out=o)", "floor": "copyto(o, x)", "target": 2.0,
    "shape": [4, 32, 32], "dtype": "int8", "result_bytes": 4096, "trilu_s": 1e-6,
    "ratios": {"floor": 1.5}, "lowest": 1.4, "previous": 2.5,
}  # fmt: skip


def test_small_file_classes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A small-calls file's classes get a table each, the mid-size one with
    each result's shape, size and dtype; a file from before the classes (its
    cases without one) is all small calls."""
    assert report.small_classes(SMALL) == ["small"]
    both = _result("small", [MID, {**SMALL["cases"][0], "class": "small"}])
    assert report.small_classes(both) == ["small", "mid"]
    assert report.small_table(both) == (
        report.small_table(SMALL)[0], report.small_table(SMALL)[1][:1],
    )  # fmt: skip
    header, rows = report.small_table(both, "mid")
    assert header == [
        "call", "result", "dtype", "floor", "trilu / floor", "lowest", "before",
        "instructions", "at most", "within",
    ]  # fmt: skip
    assert rows == [
        ["triu(x, out=o)", "4x32x32, 4 KiB", "int8", "copyto(o, x)", "1.50x",
         "1.40x", "2.50x", "n/a", "2.00x", "yes"],
    ]  # fmt: skip
    lines = report.markdown((header, rows)).splitlines()
    assert lines[1] == "|---|---|---|---|---:|---:|---:|---:|---:|---:|"
    path = tmp_path / "small.json"
    path.write_text(json.dumps(both), encoding="utf-8")
    assert report.main([str(path)]) == 0
    printed = capsys.readouterr().out
    assert printed.index("### small\n") < printed.index("### mid\n")
    assert "| triu(x, out=o) | 4x32x32, 4 KiB | int8 | copyto(o, x) |" in printed


# --- bench/small_ab.py's cases: what they compare, not how fast ------------------


@pytest.fixture(scope="module")
def small_ab() -> Any:
    return _bench_module("small_ab")


def test_mid_cases(small_ab: Any) -> None:
    """Every plain numeric dtype at each size, square and a batch of 4 of the
    same bytes, triu (and tril for two dtypes) fresh and with out=, each held
    to the issue's band as a time: 1 over the copy's speed."""
    # the issue's dtypes, which small_ab derives from numpy's
    issue = ["bool", "int8", "uint8", "int16", "float16", "int32", "float32",
             "int64", "float64", "complex64", "complex128"]  # fmt: skip
    assert issue == small_ab.MID_DTYPES
    # the issue's speeds, fresh and out=, by size: a size where two bands meet
    # is held to the upper, the stricter
    speeds = {4 << 10: (0.4, 0.5), 16 << 10: (0.5, 0.6), 64 << 10: (0.75, 0.8),
              512 << 10: (0.75, 0.8)}  # fmt: skip
    assert list(speeds) == small_ab.MID_SIZES
    mid = [c for c in small_ab.CASES.values() if c.cls == "mid"]
    got = []
    for case in mid:
        record = case.record
        size = min(speeds, key=lambda s: abs(s - record["result_bytes"]))
        assert 0.9 * size <= record["result_bytes"] <= size, case
        assert case.shape[-1] == case.shape[-2]
        assert case.target == 1 / speeds[size][record["mode"] == "out"]
        assert case.number == small_ab.TIMED_BYTES // (size + small_ab.CALL_BYTES)
        got.append((case.call, case.dtype, size, case.shape[:-2]))
    calls = ["triu(x)", "triu(x, out=o)"]
    tril = ["tril(x, -1)", "tril(x, -1, out=o)"]
    assert sorted(got) == sorted(
        (call, dtype, size, batch)
        for dtype in small_ab.MID_DTYPES
        for size in speeds
        for batch in [(), (small_ab.BATCH,)]
        for call in calls + (tril if dtype in small_ab.TRIL_DTYPES else [])
    )


def _nbytes(made: Any) -> int:
    return sum(a.nbytes for a in made) if isinstance(made, tuple) else made.nbytes


def test_every_floor_makes_its_calls_bytes(small_ab: Any) -> None:
    """Each floor is numpy's making of the call's result: as many bytes (an
    out= call gives its o back, which the floor allocates, or writes whole
    with x's bytes)."""
    for name, case in small_ab.CASES.items():
        space: dict[str, Any] = {}
        exec(small_ab._SETUP + case.setup, space)  # noqa: S102
        made, floor = eval(case.call, space), eval(case.floor, space)
        if case.record["mode"] == "out":
            assert made is space["o"], name
        if floor is None:
            floor = space["o"]
            assert floor.tobytes() == space["x"].tobytes(), name
        assert _nbytes(made) == _nbytes(floor), name


def test_small_ab_records_load(small_ab: Any, tmp_path: Path) -> None:
    """A case of each class, timed in a fresh interpreter of this trilu:
    records bench/report.py reads, a table each."""
    import dataclasses  # noqa: PLC0415
    import datetime as dt  # noqa: PLC0415

    import trilu  # noqa: PLC0415

    picked = ["triu(x) 4x5 int64", "tril(x, -1, out=o) 4x32x32 int8"]
    cases = {n: dataclasses.replace(small_ab.CASES[n], number=10) for n in picked}
    run = small_ab.times(str(Path(trilu.__file__).parent.parent), cases)
    records = small_ab._records(cases, [run], [run], [])
    path = tmp_path / "small.json"
    small_ab.write_json(str(path), dt.datetime.now(dt.timezone.utc), records, "small")
    result = report.load(path)
    assert report.small_classes(result) == ["small", "mid"]
    assert [row[:3] for row in report.small_table(result, "mid")[1]] == [
        ["tril(x, -1, out=o)", "4x32x32, 4 KiB", "int8"],
    ]
    assert report.small_table(result)[1][0][0] == "triu(x)"


def test_out_arrays_sit_half_a_page_from_their_input() -> None:
    """bench's out= arrays (cases.placed) take their like's shape, dtype and
    layout, at half a page from the input modulo a page (no 4K aliasing
    between a copy's loads and stores); placed_copy's source sits at the
    input's own offset."""
    import numpy as np  # noqa: PLC0415

    cases = _bench_module("cases")
    page = cases.PAGE
    x = np.arange(3 * 64 * 64, dtype=np.float32).reshape(3, 64, 64)
    r, c = np.triu_indices(64)
    for like in (x, np.asfortranarray(x), x[..., r, c], x[0, :, :7]):
        out = cases.placed(like, x)
        assert type(out) is np.ndarray
        assert (out.shape, out.dtype) == (like.shape, like.dtype)
        assert out.strides == np.empty_like(like).strides
        assert out.flags.writeable
        assert out.flags.aligned
        assert (out.ctypes.data - x.ctypes.data) % page == page // 2
        copy = cases.placed_copy(like, x)
        assert (copy.ctypes.data - x.ctypes.data) % page == 0
        assert copy.strides == out.strides
        assert copy.tobytes() == like.tobytes()
