"""Tables and plots from benchmark results files (``bench/results/*.json``).

    python bench/report.py bench/results/*.json [--plot PNG] [--sweep-plot PNG]
        [--readme README.md]

prints each file's tables and the summary as Markdown; ``--plot`` draws the
grid's ratios, ``--sweep-plot`` the sweeps' ratios by shape class,
``--readme`` rewrites the README's headline line from the grid file. The
documentation's Performance page is made from the same functions at build time
(``docs/_ext/perf_page.py``), so nothing in it is pasted by hand.

A results file, written by ``bench/bench.py --json`` (``"kind": "grid"``),
``bench/bench_toolkit.py`` and ``bench/bench_indices.py`` (``"kind": "grid"``,
classes "toolkit" and "indices"), ``bench/sweep.py`` (``"kind": "sweep"``) or
``bench/small_ab.py`` (``"kind": "small"``)::

    {"schema": 1, "kind": "grid" | "sweep", "date": "2026-12-01T05:30:00Z",
     "seed": null | 3,
     "machine": {"cpu": ..., "arch": ..., "cpus": 2, "python": ..., "numpy": ...,
                 "trilu": ..., "trilu_threads": 2, "torch": null | "2.x",
                 "onnxruntime": null | "1.x"},
     "cases": [{"name": ..., "class": "tall", "op": "tril",
                "mode": "fresh" | "out" | "inplace" | "order K",
                "shape": [200000, 6], "dtype": "float64", "k": 0, "layout": "C",
                "result_bytes": 9600000, "kept_fraction": 0.99,
                "trilu_s": 0.0012,
                "ratios": {"numpy": 10.2, "copy": 1.2, "zeros": null, ...}}]}

A ratio is the peer's time over trilu's (above 1: trilu is faster); a peer
that was not measured is null or absent. Sweep classes: tall, wide, square,
batch, k, negstride, transposed, dtype (triu/tril against numpy, x.copy(),
np.zeros, np.copyto) and the toolkit classes fill, band, pack, unpack, mirror,
pack_f, unpack_f, unpack_mirror, squareform_v, squareform_m, mask, to_banded,
from_banded (ops "tril"/"triu" with a fill, "band", "pack", "unpack", "mirror",
"pack F", "unpack F", "unpack mirror", "squareform", "band_mask", "to_banded",
"from_banded", each against the numpy way: "where", "zero fill", "triu(tril)",
"x[r, c]", "scatter", "tri+where", "zeros+ones", "diagonals",
"zeros+diagonals", and np.copyto; LAPACK's "trttp" and "tpttr", and scipy's
squareform, "scipy" and "scipy checks"); their cases may carry more fields
(fill, lo, hi, upper, conj, lower), which nothing here reads. The grid's cases
are all "grid".

A small-calls file's ratios are the other way round: ``"floor"`` is trilu's
time over its floor's, the median over the rounds (below the case's
``"target"`` is within it), with the call and floor as code, the lowest over
the rounds and the previous build's median (``"previous"``, or null); where
counted, the instructions' ratio of each build (``"instructions"``,
``"previous_instructions"``, else null). Its classes: "small", calls on small
inputs against numpy's allocation of the result (a case with no class is
one: the files before "mid"), and "mid", mid-size results against
``x.copy()`` or ``np.copyto(o, x)``, with their ``"shape"``, ``"dtype"`` and
``"result_bytes"``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

SCHEMA = 1
KINDS = ("grid", "sweep", "small")
# The order ratio kinds are shown in; any other kind follows, sorted.
RATIO_ORDER = [
    "numpy", "torch", "onnxruntime", "where", "zero fill", "triu(tril)", "x[r, c]",
    "scatter", "trttp", "tpttr", "scipy", "scipy checks", "tri+where", "diagonals",
    "zeros+diagonals", "copy", "zeros", "zeros+ones", "copyto", "empty_like",
]  # fmt: skip
TRIANGLE_CLASSES = [
    "tall", "wide", "square", "batch", "k", "negstride", "transposed", "dtype",
]  # fmt: skip
TOOLKIT_CLASSES = ["fill", "band", "pack", "unpack", "mirror", "pack_f", "unpack_f",
                   "unpack_mirror", "squareform_v", "squareform_m", "mask",
                   "to_banded", "from_banded"]  # fmt: skip
CLASS_ORDER = [*TRIANGLE_CLASSES, *TOOLKIT_CLASSES, "grid", "toolkit", "indices"]
SMALL_CLASSES = ["small", "mid"]  # a small-calls file's
MODE_ORDER = ["fresh", "out", "inplace"]
OP_ORDER = ["triu", "tril", "band", "pack", "unpack", "mirror", "pack F", "unpack F",
            "unpack mirror", "squareform", "band_mask", "to_banded",
            "from_banded"]  # fmt: skip
PEER_LABEL = {
    "numpy": "numpy.triu/tril",
    "torch": "torch.triu/tril",
    "onnxruntime": "onnxruntime Trilu",
    "copy": "x.copy()",
    "zeros": "np.zeros_like",
    "copyto": "np.copyto",
    "empty_like": "np.empty_like",
    "where": "np.where",
    "zero fill": "trilu, zero fill",
    "triu(tril)": "np.triu(np.tril)",
    "x[r, c]": "x[..., r, c]",
    "scatter": "np.zeros; o[..., r, c] = v",
    "trttp": "LAPACK ?trttp",
    "tpttr": "LAPACK ?tpttr",
    "scipy": "scipy's squareform",
    "scipy checks": "scipy's squareform, checked",
    "tri+where": "np.where(np.tri)",
    "zeros+ones": "np.zeros + np.ones, the same bytes",
    "diagonals": "np.diagonal, a loop",
    "zeros+diagonals": "np.zeros; o[..., i, i + k] = ab[...]",
}
# The sweeps' worst-case columns, (mode, ratio kind): triu/tril's classes,
# then the toolkit's.
SWEEP_COLUMNS = [("fresh", "numpy"), ("fresh", "copy"), ("fresh", "zeros"),
                 ("out", "copyto")]  # fmt: skip
TOOLKIT_COLUMNS = [("fresh", "where"), ("fresh", "zero fill"), ("fresh", "triu(tril)"),
                   ("fresh", "x[r, c]"), ("fresh", "scatter"), ("fresh", "trttp"),
                   ("fresh", "tpttr"), ("fresh", "scipy"), ("fresh", "scipy checks"),
                   ("inplace", "where"), ("fresh", "tri+where"),
                   ("fresh", "zeros+ones"), ("fresh", "diagonals"),
                   ("fresh", "zeros+diagonals"), ("out", "copyto")]  # fmt: skip


# --- loading -------------------------------------------------------------------


def load(path: str | Path) -> dict[str, Any]:
    """One results file, checked against the schema; ``path`` is kept in it."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: schema {data.get('schema')!r}, expected {SCHEMA}")
    if data.get("kind") not in KINDS:
        raise ValueError(f"{path}: kind {data.get('kind')!r}, expected one of {KINDS}")
    for key in ("date", "machine", "cases"):
        if key not in data:
            raise ValueError(f"{path}: no {key!r}")
    for case in data["cases"]:
        for key in ("name", "op", "mode", "trilu_s", "ratios"):
            if key not in case:
                raise ValueError(f"{path}: a case has no {key!r}: {case}")
    data["path"] = str(path)
    return data


def load_all(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    return [load(p) for p in sorted(paths, key=str)]


def _ordered(names: Iterable[str], order: Sequence[str]) -> list[str]:
    names = set(names)
    return [n for n in order if n in names] + sorted(names - set(order))


def ratio_kinds(results: Sequence[dict[str, Any]]) -> list[str]:
    """Every ratio kind measured (not null) in any case of these results."""
    kinds = {
        kind
        for result in results
        for case in result["cases"]
        for kind, value in case["ratios"].items()
        if value is not None
    }
    return _ordered(kinds, RATIO_ORDER)


def _class(case: dict[str, Any], default: str = "grid") -> str:
    return str(case.get("class") or default)


def with_classes(
    results: Sequence[dict[str, Any]], classes: Iterable[str], keep: bool = True
) -> list[dict[str, Any]]:
    """Each result with only the cases of these classes (``keep=False``: all
    but them); results left with no case are dropped."""
    chosen = set(classes)
    out = []
    for result in results:
        cases = [c for c in result["cases"] if (_class(c) in chosen) == keep]
        if cases:
            out.append({**result, "cases": cases})
    return out


# --- numbers -------------------------------------------------------------------------


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def machine_line(result: dict[str, Any]) -> str:
    """Which machine, which versions, when: one sentence."""
    m = result["machine"]
    bits = [
        f"{m.get('cpu', '?')} ({m.get('arch', '?')}, {m.get('cpus', '?')} CPUs)",
        f"Python {m.get('python', '?')}",
        f"numpy {m.get('numpy', '?')}",
        f"trilu {m.get('trilu', '?')} ({m.get('trilu_threads', '?')} threads)",
    ]
    bits += [
        f"{peer} {m[peer]}" if m.get(peer) else f"no {peer}"
        for peer in ("torch", "onnxruntime")
    ]
    seed = result.get("seed")
    when = result["date"].replace("T", " ").replace("Z", " UTC")
    tail = f", seed {seed}" if seed is not None else ""
    return f"{when}{tail}: " + ", ".join(bits)


def summary(
    results: Sequence[dict[str, Any]], by: str = "class"
) -> list[dict[str, Any]]:
    """Per mode, ratio kind and class (or another field of the cases, such as
    "op"): the worst (lowest) ratio, its case, the median and the number of
    cases; the group is under the key `by`."""
    groups: dict[tuple[str, str, str], list[tuple[float, str]]] = {}
    for result in results:
        for case in result["cases"]:
            for kind, value in case["ratios"].items():
                if value is None:
                    continue
                group = _class(case) if by == "class" else str(case[by])
                key = (case["mode"], kind, group)
                groups.setdefault(key, []).append((float(value), _label(case)))
    rows = []
    modes = _ordered({k[0] for k in groups}, MODE_ORDER)
    kinds = _ordered({k[1] for k in groups}, RATIO_ORDER)
    classes = _ordered(
        {k[2] for k in groups}, CLASS_ORDER if by == "class" else OP_ORDER
    )
    for mode in modes:
        for kind in kinds:
            for cls in classes:
                values = groups.get((mode, kind, cls))
                if not values:
                    continue
                worst = min(values)
                rows.append(
                    {
                        "mode": mode,
                        "ratio": kind,
                        by: cls,
                        "worst": worst[0],
                        "worst_case": worst[1],
                        "median": statistics.median(v for v, _ in values),
                        "cases": len(values),
                    }
                )
    return rows


def _label(case: dict[str, Any]) -> str:
    name = str(case["name"])
    return name if case["op"] in name else f"{name} {case['op']}"


# --- tables --------------------------------------------------------------------------

Table = tuple[list[str], list[list[str]]]  # header, rows


def case_tables(result: dict[str, Any]) -> dict[str, Table]:
    """One table per mode: each case's trilu time and its ratios."""
    tables = {}
    modes = _ordered({c["mode"] for c in result["cases"]}, MODE_ORDER)
    for mode in modes:
        cases = [c for c in result["cases"] if c["mode"] == mode]
        kinds = ratio_kinds([{"cases": cases}])
        header = ["case", "op", "trilu", *(f"{k} / trilu" for k in kinds)]
        if result["kind"] == "sweep":
            header.insert(1, "class")
        rows = []
        for c in cases:
            row = [str(c["name"]), c["op"], fmt_time(c["trilu_s"])]
            row += [fmt_ratio(c["ratios"].get(k)) for k in kinds]
            if result["kind"] == "sweep":
                row.insert(1, _class(c))
            rows.append(row)
        tables[mode] = (header, rows)
    return tables


def summary_table(results: Sequence[dict[str, Any]], by: str = "class") -> Table:
    """summary() as a table: a row per mode, ratio kind and class (or `by`)."""
    header = ["mode", "ratio", by, "worst", "worst case", "median", "cases"]
    rows = [
        [
            r["mode"],
            f"{r['ratio']} / trilu",
            r[by],
            fmt_ratio(r["worst"]),
            r["worst_case"],
            fmt_ratio(r["median"]),
            str(r["cases"]),
        ]
        for r in summary(results, by)
    ]
    return header, rows


def small_classes(result: dict[str, Any]) -> list[str]:
    """The classes of a small-calls file's cases, in SMALL_CLASSES' order."""
    return _ordered({_class(c, "small") for c in result["cases"]}, SMALL_CLASSES)


def small_table(result: dict[str, Any], cls: str = "small") -> Table:
    """A small-calls file's cases of one class: each call's time over its
    floor's, the median and the lowest over the rounds, the previous build's
    median, the instructions' ratio (the previous build's beside it), the
    most the time may be, and whether it is within; the mid-size cases'
    result (shape and size) and dtype after the call."""
    cases = [c for c in result["cases"] if _class(c, "small") == cls]
    sized = any("shape" in c for c in cases)
    header = ["call", *(["result", "dtype"] if sized else []), "floor",
              "trilu / floor", "lowest", "before", "instructions", "at most",
              "within"]  # fmt: skip
    rows = []
    for c in cases:
        ratio, target = c["ratios"]["floor"], c["target"]
        counted = fmt_ratio(c.get("instructions"))
        if c.get("previous_instructions") is not None:
            counted += f" (was {fmt_ratio(c['previous_instructions'])})"
        result_of = [_result_size(c), c["dtype"]] if sized else []
        rows.append([
            c["call"], *result_of, c["floor"], fmt_ratio(ratio),
            fmt_ratio(c["lowest"]), fmt_ratio(c.get("previous")), counted,
            fmt_ratio(target),
            "yes" if ratio <= target else "no",
        ])  # fmt: skip
    return header, rows


def _result_size(case: dict[str, Any]) -> str:
    """The shape and its bytes to the nearest KiB: "64x64, 4 KiB"."""
    shape = "x".join(map(str, case["shape"]))
    return f"{shape}, {case['result_bytes'] / 1024:.0f} KiB"


# the columns of words, left-aligned; the others (figures) right-aligned
TEXT_COLUMNS = ["case", "op", "class", "mode", "ratio", "worst case", "call",
                "result", "dtype", "floor"]  # fmt: skip


def markdown(table: Table) -> str:
    header, rows = table
    right = [i for i, h in enumerate(header) if h not in TEXT_COLUMNS]
    lines = ["| " + " | ".join(header) + " |"]
    lines.append(
        "|"
        + "|".join("---:" if i in right else "---" for i in range(len(header)))
        + "|"
    )
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def rst(table: Table, title: str = "") -> str:
    """A reST ``list-table``."""
    header, rows = table
    out = [f".. list-table:: {title}".rstrip(), "   :header-rows: 1", ""]
    for row in [header, *rows]:
        out.append("   * - " + _rst_cell(row[0]))
        out += [f"     - {_rst_cell(cell)}" for cell in row[1:]]
    return "\n".join(out) + "\n"


def _rst_cell(text: str) -> str:
    return text.replace("*", r"\*").replace("|", r"\|").replace("_", r"\_") or "\\ "


# --- plots ----------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib as mpl  # noqa: PLC0415  (only for plots)

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _ratio_axis(axis: Any, values: list[float]) -> None:
    """A log axis of ratios that always shows 1 (and 0.5-2 at least),
    labelled 0.5x, 1x, 2x... rather than in powers of ten."""
    from matplotlib.ticker import FixedLocator, FuncFormatter  # noqa: PLC0415

    low = min([0.5, *values]) / 1.15
    high = max([2.0, *values]) * 1.15
    axis.set_view_interval(low, high, ignore=True)
    ticks = [m * 10.0**e for e in range(-3, 4) for m in (1, 2, 5)]
    axis.set_major_locator(FixedLocator([t for t in ticks if low <= t <= high]))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    axis.set_minor_formatter(FuncFormatter(lambda *_: ""))


def _footer(results: Sequence[dict[str, Any]]) -> str:
    lines = {machine_line(r) for r in results}
    return "\n".join(sorted(lines)[:3]) + ("\n..." if len(lines) > 3 else "")


def plot_sweep(results: list[dict[str, Any]], path: str | Path) -> None:
    """Ratio against shape class, one marker per case, one panel per ratio
    kind (log y-axis, a line at 1: above it trilu is faster), from one or more
    results files; each file's mode gets its own marker. Writes a PNG."""
    plt = _pyplot()
    kinds = ratio_kinds(results) or ["numpy"]
    classes = _ordered(
        {_class(c) for r in results for c in r["cases"]}, CLASS_ORDER
    ) or ["grid"]
    markers = {"fresh": "o", "out": "s", "inplace": "^"}
    ncols = min(3, len(kinds))
    nrows = math.ceil(len(kinds) / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows + 0.6), squeeze=False
    )
    for ax, kind in zip(axes.flat, kinds, strict=False):
        seen_modes = set()
        for result in results:
            for i, case in enumerate(result["cases"]):
                value = case["ratios"].get(kind)
                if value is None:
                    continue
                x = classes.index(_class(case)) + ((i * 0.618) % 1 - 0.5) * 0.5
                mode = case["mode"]
                ax.scatter(
                    x, value, s=14, alpha=0.7, marker=markers.get(mode, "o"),
                    color=f"C{MODE_ORDER.index(mode) if mode in MODE_ORDER else 3}",
                    label=None if mode in seen_modes else mode,
                )  # fmt: skip
                seen_modes.add(mode)
        ax.axhline(1, color="black", linewidth=1)
        ax.set_yscale("log")
        _ratio_axis(
            ax.yaxis,
            [
                c["ratios"][kind]
                for r in results
                for c in r["cases"]
                if c["ratios"].get(kind) is not None
            ],
        )
        ax.set_xticks(range(len(classes)), classes, rotation=30)
        ax.set_xlim(-0.6, len(classes) - 0.4)
        ax.set_title(f"{PEER_LABEL.get(kind, kind)} / trilu")
        ax.grid(True, axis="y", which="both", alpha=0.3)
        if len(seen_modes) > 1:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(kinds) :]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("peer time / trilu time (log)")
    fig.text(0.01, 0.005, _footer(results), fontsize=6, va="bottom")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_grid(result: dict[str, Any], path: str | Path) -> None:
    """The grid's ratios, case by case: one row per case and mode, one colour
    per ratio kind, log x-axis, a line at 1. Writes a PNG."""
    plt = _pyplot()
    cases = sorted(
        [
            c
            for c in result["cases"]
            if any(v is not None for v in c["ratios"].values())
        ],
        key=lambda c: MODE_ORDER.index(c["mode"]) if c["mode"] in MODE_ORDER else 9,
    )
    kinds = ratio_kinds([result])
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(cases) + 1.4))
    for j, kind in enumerate(kinds):
        xs, ys = [], []
        for i, case in enumerate(cases):
            value = case["ratios"].get(kind)
            if value is not None:
                xs.append(value)
                ys.append(i)
        ax.scatter(
            xs, ys, s=18, color=f"C{j}", label=f"{PEER_LABEL.get(kind, kind)} / trilu"
        )
    ax.axvline(1, color="black", linewidth=1)
    ax.set_xscale("log")
    _ratio_axis(
        ax.xaxis,
        [v for c in cases for v in c["ratios"].values() if v is not None],
    )
    ax.set_yticks(
        range(len(cases)), [f"{_label(c)} [{c['mode']}]" for c in cases], fontsize=6
    )
    ax.invert_yaxis()
    ax.set_xlabel("peer time / trilu time (log; right of 1: trilu is faster)")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    # Above the axes, not over them: no corner is free of points in every run.
    ax.legend(
        fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3,
        frameon=False,
    )  # fmt: skip
    fig.text(0.01, 0.005, _footer([result]), fontsize=6, va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def headline(result: dict[str, Any]) -> str:
    """One line: numpy / trilu over the grid's fresh cases, worst and median."""
    values = [
        c["ratios"]["numpy"]
        for c in result["cases"]
        if c["mode"] == "fresh" and c["ratios"].get("numpy") is not None
    ]
    if not values:
        return "no numpy ratios in this file"
    return (
        f"numpy.triu/tril take {statistics.median(values):.1f}x trilu's time at the "
        f"median of {len(values)} cases, {min(values):.1f}x at worst "
        f"({result['date'][:10]}, {result['machine'].get('cpu', '?')})"
    )


def sweep_worst_table(
    results: Sequence[dict[str, Any]],
    columns: Sequence[tuple[str, str]] = SWEEP_COLUMNS,
) -> Table:
    """The sweeps' worst ratio per class, over every seed, one column per
    (mode, ratio kind): by default numpy, copy, zeros fresh and copyto out=,
    TOOLKIT_COLUMNS for the toolkit classes."""
    sweeps = [r for r in results if r["kind"] == "sweep"]
    worst = {(r["mode"], r["ratio"], r["class"]): r for r in summary(sweeps)}
    kinds = [kind for _, kind in columns]
    header = ["class"] + [  # the mode where a kind has more than one column
        f"{kind} / trilu" + (f" ({mode})" if kinds.count(kind) > 1 else "")
        for mode, kind in columns
    ]
    rows = []
    for cls in _ordered({r["class"] for r in worst.values()}, CLASS_ORDER):
        row = [cls]
        for mode, kind in columns:
            found = worst.get((mode, kind, cls))
            row.append(fmt_ratio(found["worst"]) if found else "n/a")
        rows.append(row)
    return header, rows


def sweep_seeds(results: Sequence[dict[str, Any]]) -> str:
    return ", ".join(str(r["seed"]) for r in results if r["kind"] == "sweep")


# --- command line ----------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="results files (JSON)")
    parser.add_argument("--plot", metavar="PNG", help="the grid's ratios, case by case")
    parser.add_argument("--sweep-plot", metavar="PNG", help="ratios by shape class")
    parser.add_argument(
        "--readme", metavar="MD", help="rewrite the line after <!-- perf:headline -->"
    )
    args = parser.parse_args(argv)
    results = load_all(args.files)
    for result in results:
        print(f"## {result['path']} ({result['kind']})\n\n{machine_line(result)}\n")
        if result["kind"] == "small":
            for cls in small_classes(result):
                print(f"### {cls}\n\n{markdown(small_table(result, cls))}\n")
            continue
        if result["kind"] == "grid":
            print(f"{headline(result)}\n")
        for mode, table in case_tables(result).items():
            print(f"### {mode}\n\n{markdown(table)}\n")
    results = [r for r in results if r["kind"] != "small"]  # floors, not peers
    print(
        f"## Summary: worst case per ratio and class\n\n{markdown(summary_table(results))}"
    )
    # the grid of bench.py (triu/tril), not toolkit.json's or indices.json's
    grids = [
        r for r in results if r["kind"] == "grid" and _class(r["cases"][0]) == "grid"
    ]
    if args.plot:
        if not grids:
            parser.error("--plot needs bench.py's grid results file")
        plot_grid(grids[-1], args.plot)
    if args.sweep_plot:
        plot_sweep(results, args.sweep_plot)
    if args.readme:
        if not grids:
            parser.error("--readme needs bench.py's grid results file")
        write_headline(Path(args.readme), grids[-1])
    return 0


HEADLINE_MARKER = "<!-- perf:headline -->"


def write_headline(readme: Path, result: dict[str, Any]) -> None:
    """Put headline(result) on the line after the marker in a Markdown file."""
    lines = readme.read_text(encoding="utf-8").split("\n")
    at = lines.index(HEADLINE_MARKER) + 1
    lines[at : at + 1] = [headline(result) + "."]
    readme.write_text("\n".join(lines), encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
