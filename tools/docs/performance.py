"""The performance page's figures: tables and charts drawn from the benchmarks' results.

Each benchmark writes what it measured as JSON under ``benchmarks/results/`` (``--results``):
``{"measured": <ISO date>, "machine": <where>, "rows": [{...}, ...]}``, with optional
``benchmark``, ``command``, ``note`` and, where a file holds several tables, a ``table`` key on
each row. Every file found there is rendered: by a renderer of its own where its shape is known
(the overhead, a stream's memory, a rate-limited endpoint, the journal), with charts drawn by
matplotlib at build time; any other file by the generic one, a Markdown table per ``table``, so
that a new benchmark's results appear on the page without editing it.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from tools.docs.paths import ROOT

RESULTS = ROOT / "benchmarks" / "results"

#: How a column is headed where its key alone says too little; any other key is shown with its
#: underscores as spaces.
LABELS = {
    "us_per_subtask": "µs/subtask",
    "us_per_slot": "µs/slot",
    "s_per_run": "s per run",
    "peak_rss_mib": "peak RSS (MiB)",
    "peak_bytes_per_subtask": "peak bytes/subtask",
    "peak_bytes_per_slot": "peak bytes/slot above start",
    "share": "goodput (share of capacity)",
    "rate_limited": "429s sent",
    "rate_limited_share": "429s (share of requests)",
    "p50": "p50 (s)",
    "p99": "p99 (s)",
    "consumed": "results consumed",
}

# colours that read on the light and the dark scheme alike; text is the page's own colour
SUPERVISOR, OTHER, ACCENT = "#5c6bc0", "#9e9e9e", "#ef8f00"
FIGURE = re.compile(
    r"^-?[\d.,]+ ?[%x]$"
)  # a share or a ratio, written as text: aligned as a number
TEXT = "#010203"  # drawn with this, then given the page's colour (currentColor) when inlined


@dataclass
class Result:
    """One results file: its name (the file's stem) and what it holds."""

    name: str
    data: dict[str, Any]
    path: Path | None = None

    @property
    def rows(self) -> list[dict[str, Any]]:
        rows = self.data.get("rows", [])
        return [row for row in rows if isinstance(row, dict)]

    def table(self, name: str) -> list[dict[str, Any]]:
        return [row for row in self.rows if row.get("table") == name]


def load(directory: Path = RESULTS) -> dict[str, Result]:
    """Every results file under ``directory``, by name, in name order."""
    found = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
            raise TypeError(f"{path.name}: a results file is an object with a list of rows")
        found[path.stem] = Result(path.stem, data, path)
    return found


# -- tables -----------------------------------------------------------------------------------


def cell(value: Any) -> str:
    """A value as a table cell: numbers to three significant digits (whole numbers as they
    are, with thousands separated), yes/no for a flag, a dash for nothing."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value == int(value) and abs(value) >= 1:
            return f"{int(value):,}"
        digits = max(0, 2 - math.floor(math.log10(abs(value)))) if value else 0
        return f"{value:,.{digits}f}"
    if isinstance(value, (dict, list)):
        return "`" + json.dumps(value, ensure_ascii=False) + "`"
    return str(value).replace("|", "\\|").replace("\n", " ")


def label(key: str) -> str:
    return LABELS.get(key, key.replace("_", " "))


def table(
    rows: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    headers: Mapping[str, str] | None = None,
) -> str:
    """``rows`` as a Markdown table: its columns are ``columns``, or every key of the rows in
    the order first met; numeric columns are aligned right. The table is in a ``ts-figures``
    box, which the site draws compact (small figures, headings that wrap) to fit its column."""
    if not rows:
        return ""
    keys = list(columns) if columns is not None else list(dict.fromkeys(k for r in rows for k in r))
    named = {**{key: label(key) for key in keys}, **(headers or {})}

    def figure(value: Any) -> bool:
        if isinstance(value, bool):
            return False
        return isinstance(value, (int, float)) or bool(FIGURE.match(str(value)))

    numeric = {
        key
        for key in keys
        if all(row.get(key) is None or figure(row.get(key)) for row in rows)
        and any(row.get(key) is not None for row in rows)
    }
    lines = [
        "| " + " | ".join(named[key] for key in keys) + " |",
        "|" + "|".join("---:" if key in numeric else "---" for key in keys) + "|",
    ]
    lines += ["| " + " | ".join(cell(row.get(key)) for key in keys) + " |" for row in rows]
    # in a box the page's CSS sets compact (``extra.css``), so that it fits the column
    return '<div class="ts-figures" markdown>\n\n' + "\n".join(lines) + "\n\n</div>\n"


def measured(result: Result) -> str:
    """When, where and how a file's figures were measured, as a sentence, and its note."""
    data = result.data
    when = str(data.get("measured", "at an unrecorded time"))
    day = when[:10] if re.match(r"\d{4}-\d\d-\d\d", when) else when
    said = f"Measured on {day}, on {data.get('machine', 'an unrecorded machine')}"
    if data.get("command"):
        said += f", by `{data['command']}`"
    said += f" (`benchmarks/results/{result.name}.json`)."
    if data.get("note"):
        said += f" {data['note']}"
    return said + "\n"


def generic(result: Result) -> str:
    """Any results file: a table per ``table`` of its rows (one, if they name none); a single
    row of many figures is shown as a list of figure and value."""
    parts = [measured(result)]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in result.rows:
        groups.setdefault(str(row.get("table", "")), []).append(row)
    for name, rows in groups.items():
        shown = [{k: v for k, v in row.items() if k != "table"} for row in rows]
        if name:
            parts.append(f"**{label(name).capitalize()}**\n")
        if len(shown) == 1 and len(shown[0]) > 5:
            parts.append(table([{"figure": label(k), "value": v} for k, v in shown[0].items()]))
        else:
            parts.append(table(shown))
    return "\n".join(parts)


# -- charts -----------------------------------------------------------------------------------


@dataclass
class Chart:
    """A drawn chart: its file name under ``generated/performance/`` and its SVG."""

    name: str
    svg: str
    caption: str = ""
    alt: str = field(default="")

    def figure(self) -> str:
        """The chart inlined (so that its text takes the page's colour), with its caption."""
        svg = re.sub(r"\n\s*", " ", self.svg)  # one line: no blank line ends the HTML block
        return (
            f'<figure class="chart" markdown="0">\n{svg}\n'
            f"<figcaption>{self.caption} "
            f'(<a href="../generated/performance/{self.name}">SVG file</a>)</figcaption>\n'
            "</figure>\n"
        )


def draw(name: str, plot: Callable[[Any], None], caption: str, size: tuple[float, float]) -> Chart:
    """Draw with matplotlib into a reproducible SVG: text kept as text in the page's font and
    colour, no date, ids salted by the chart's name, so two builds draw the same bytes."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    style = {
        "svg.fonttype": "none",
        "svg.hashsalt": name,
        "font.size": 11,
        "font.family": "sans-serif",
        "text.color": TEXT,
        "axes.labelcolor": TEXT,
        "axes.edgecolor": OTHER,
        "xtick.color": TEXT,
        "ytick.color": TEXT,
        "axes.grid": True,
        "grid.color": OTHER,
        "grid.alpha": 0.35,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.frameon": False,
    }
    with matplotlib.rc_context(cast(Any, style)):
        figure, axes = pyplot.subplots(figsize=size, layout="constrained")
        figure.patch.set_alpha(0)
        axes.patch.set_alpha(0)
        plot(axes)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None, "Creator": None})
        pyplot.close(figure)
    svg = out.getvalue()
    svg = svg[svg.index("<svg") :]  # inline: no XML prolog or doctype
    svg = svg.replace(TEXT, "currentColor")
    svg = re.sub(r"font-family: *[^;\"']+", "font-family: inherit", svg)
    svg = re.sub(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"', r"\1", svg, count=1)
    return Chart(f"{name}.svg", svg, caption)


def bars(
    axes: Any, names: Sequence[str], values: Sequence[float], ours: Iterable[bool], unit: str
) -> None:
    """Horizontal bars, first on top, the supervisor's in its colour, each with its value."""
    colours = [SUPERVISOR if mine else OTHER for mine in ours]
    places = range(len(names))
    axes.barh(places, values, color=colours)
    axes.set_yticks(list(places), list(names))
    axes.invert_yaxis()
    axes.grid(axis="y", visible=False)
    axes.set_xlabel(unit)
    for place, value in zip(places, values, strict=True):
        axes.annotate(
            cell(value), (value, place), xytext=(4, 0), textcoords="offset points", va="center"
        )
    axes.margins(x=0.12)


# -- the known results ------------------------------------------------------------------------


def overhead(result: Result) -> tuple[str, list[Chart]]:
    """``overhead.py``: the time per subtask of every contender at every N and K, a chart of
    them at the N and K the targets are judged at, the memory and failure tables, the targets."""
    times = result.table("time")
    places = list(dict.fromkeys((row["N"], row["K"]) for row in times))
    contenders = list(dict.fromkeys(row["contender"] for row in times))
    cost = {(row["contender"], row["N"], row["K"]): row["us_per_subtask"] for row in times}
    charts = []
    parts = [measured(result)]
    if places:
        judged = max(places, key=lambda place: (place[0], place[1] == 100, place[1]))
        named = [name for name in contenders if (name, *judged) in cost]
        values = [cost[(name, *judged)] for name in named]

        def plot(axes: Any) -> None:
            bars(axes, named, values, (n.startswith("Supervisor") for n in named), "µs per subtask")

        n, k = judged
        charts.append(
            draw(
                "overhead",
                plot,
                f"Median µs per subtask at N={n:,}, K={k}: the supervisor's runs in blue.",
                (8.5, 0.38 * len(named) + 1.0),
            )
        )
        parts.append(charts[-1].figure())
        headers = {f"{n}/{k}": f"N={n:,} K={k}" for n, k in places}
        rows = [
            {"contender": name}
            | {f"{n}/{k}": cost.get((name, n, k)) for n, k in places}
            | {"/ floor": ratio(cost.get((name, *judged)), cost.get(("floor", *judged)))}
            for name in contenders
        ]
        parts.append(
            f"Median µs per subtask, and each contender against the floor at N={n:,}, K={k}:\n"
        )
        headers["/ floor"] = f"/ floor (N={n:,} K={k})"
        parts.append(table(rows, headers=headers))
    for name, said, keys in (
        ("memory", "Peak memory per subtask, each contender in a fresh process:", None),
        (
            "failures",
            "What failures cost: every slot failing both of its 2 attempts, against every "
            "slot succeeding, and the floor making the same calls (medians, a fresh process "
            "each):",
            None,
        ),
    ):
        rows = result.table(name)
        if rows:
            at = f" (N={rows[0]['N']:,}, K={rows[0]['K']})" if "N" in rows[0] else ""
            parts.append(said.rstrip(":") + at + ":\n")
            parts.append(table([strip(row, "table", "N", "K") for row in rows], keys))
    judged_targets = result.table("targets")
    if judged_targets:
        met = sum(1 for row in judged_targets if row.get("met"))
        parts.append(f"The targets, judged within this run: {met} of {len(judged_targets)} met.\n")
        rows = [
            {
                "target": row["target"],
                "figures": f"{cell(row['top'])} / {cell(row['bottom'])} {row['unit']}",
                "ratio": None if row["ratio"] is None else f"{row['ratio']:.2f}x",
                "goal": row["goal"],
                "met": row["met"],
            }
            for row in judged_targets
        ]
        parts.append(table(rows))
    return "\n".join(parts), charts


def ratio(top: float | None, bottom: float | None) -> str | None:
    return None if top is None or not bottom else f"{top / bottom:.2f}x"


def strip(row: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {key: value for key, value in row.items() if key not in keys}


def stream_memory(result: Result) -> tuple[str, list[Chart]]:
    """``stream_memory.py``: the peak RSS as a lazy input's results are consumed."""
    rows = result.rows
    consumed = [row["consumed"] for row in rows]
    peak = [row["peak_rss_mib"] for row in rows]

    def plot(axes: Any) -> None:
        axes.plot(consumed, peak, marker="o", color=SUPERVISOR)
        axes.set_ylim(0, max(peak) * 1.25)
        axes.set_xlabel("results consumed")
        axes.set_ylabel("peak RSS (MiB)")
        axes.xaxis.set_major_formatter(lambda value, _: f"{value:,.0f}")

    n, k = rows[0]["N"], rows[0]["K"]
    chart = draw(
        "stream_memory",
        plot,
        f"The process's peak RSS as {n:,} lazy subtasks go through Supervisor.stream, K={k} "
        "(0: before the run).",
        (8.5, 3.2),
    )
    growth = peak[-1] - peak[1] if len(peak) > 2 else peak[-1] - peak[0]
    parts = [
        measured(result),
        chart.figure(),
        f"From the first tenth of the results to the last, the peak RSS grew by {growth:+.1f} MiB"
        + (f"; the run took {result.data['seconds']:.1f} s." if "seconds" in result.data else "."),
        "",
        table([strip(row, "N", "K") for row in rows]),
    ]
    return "\n".join(parts), [chart]


RATE_COLUMNS = ["contender", "share", "rate_limited", "rate_limited_share", "p50", "p99", "lost"]


def rate_limited(runs: Sequence[Result]) -> tuple[str, list[Chart]]:
    """``rate_limited.py``: goodput, 429s and latency of each contender, on virtual time and on
    real processes, and a chart of the goodput of both."""
    known = [run for run in runs if run.rows]
    if not known:
        return "", []
    contenders = list(dict.fromkeys(row["contender"] for run in known for row in run.rows))
    kinds = [("virtual" if "virtual" in run.name else "real processes", run) for run in known]

    def plot(axes: Any) -> None:
        height = 0.8 / len(kinds)
        for number, (kind, run) in enumerate(kinds):
            share = {row["contender"]: row["share"] * 100 for row in run.rows}
            places = [i + number * height for i in range(len(contenders))]
            axes.barh(
                places,
                [share.get(name, 0) for name in contenders],
                height=height,
                color=(SUPERVISOR, ACCENT, OTHER)[number % 3],
                label=kind,
            )
        axes.set_yticks(
            [i + height * (len(kinds) - 1) / 2 for i in range(len(contenders))],
            [re.sub(r" \(.*", "", name) for name in contenders],
        )
        axes.invert_yaxis()
        axes.grid(axis="y", visible=False)
        axes.set_xlim(0, 100)
        axes.set_xlabel("goodput, % of the endpoint's capacity")
        axes.legend(loc="lower left", bbox_to_anchor=(0, 1), ncols=len(kinds))

    chart = draw(
        "rate_limited",
        plot,
        "Goodput of each contender against an endpoint that answers at most "
        f"{known[0].data.get('server', {}).get('concurrency', '?')} requests at once.",
        (8.5, 0.55 * len(contenders) + 1.2),
    )
    parts = [chart.figure()]
    for kind, run in kinds:
        parts.append(f"**{kind.capitalize()}.** " + measured(run))
        rows = [
            row
            | {
                "share": f"{row['share']:.1%}",
                "rate_limited_share": f"{row['rate_limited_share']:.1%}",
            }
            for row in run.rows
        ]
        parts.append(table(rows, [key for key in RATE_COLUMNS if key in rows[0]]))
    return "\n".join(parts), [chart]


JOURNAL = {
    "plain s": "a plain run, fast slots (s)",
    "group s": "the same run journaled, group commit (s)",
    "group / plain": "journaled / plain, fast slots (target <= 1.5)",
    "each / plain": "flush='each' / plain",
    "each us per slot": "flush='each', µs more per slot",
    "slow group / plain": "journaled / plain, 10 ms slots (target <= 1.05)",
    "bytes per slot": "journal bytes per slot",
    "resume s": "resume of a run whose slots are all journaled (s)",
}


def journal(result: Result) -> tuple[str, list[Chart]]:
    """``journal.py``: its one row of figures, each named."""
    (row,) = result.rows[:1] or [{}]
    sizes = {"plain s": "N", "group s": "N", "group / plain": "N", "resume s": "N"}
    sizes |= {
        "each / plain": "each N",
        "each us per slot": "each N",
        "slow group / plain": "slow N",
    }
    rows = [
        {"figure": JOURNAL[key], "N": row.get(sizes.get(key, "N")), "value": row[key]}
        for key in JOURNAL
        if key in row
    ]
    return measured(result) + "\n" + table(rows), []


STORES = {
    "group / plain": "journaled / plain, fast slots",
    "slow group / plain": "journaled / plain, 10 ms slots",
    "leases / none": "leases / none, fast slots (target <= 1.5)",
    "slow leases / none": "leases / none, 10 ms slots (target <= 1.05)",
    "each us per slot": "flush='each', µs more per slot",
    "plain s": "a plain run, fast slots (s)",
    "group s": "the same run journaled (s)",
    "resume s": "resume of a run whose slots are all journaled (s)",
    "bytes per slot": "journal bytes per slot",
}


def journal_stores(result: Result) -> tuple[str, list[Chart]]:
    """``journal.py --store both``: each figure a row, each store and N of fast slots a column
    (a column per measured row: four columns of figures fit the page's)."""
    runs = result.rows
    named = [f"{run.get('store', 'sqlite')}, N = {cell(run.get('N'))}" for run in runs]
    rows = [
        {"figure": said, **{name: run.get(key) for name, run in zip(named, runs, strict=True)}}
        for key, said in STORES.items()
        if any(key in run for run in runs)
    ]
    slow = sorted({cell(run["slow N"]) for run in runs if "slow N" in run})
    sizes = f"The 10 ms slots and `flush='each'`: N = {', '.join(slow)}.\n" if slow else ""
    return measured(result) + "\n" + table(rows, ["figure", *named]) + "\n" + sizes, []


def journal_processes(result: Result) -> tuple[str, list[Chart]]:
    """``journal.py --processes``: per store and worker, the runs of 1, 2, 4 processes on one
    run: the wall time, the slots each process ran, and the two checks."""
    parts = [measured(result)]
    groups: dict[tuple[str, str, Any], list[Mapping[str, Any]]] = {}
    for row in result.rows:
        key = (str(row.get("store", "")), str(row.get("worker", "")), row.get("N"))
        groups.setdefault(key, []).append(row)
    for (store, worker, n), runs in groups.items():
        parts.append(f"**{store}**, {worker} slots, N = {cell(n)}\n")
        rows = [
            {
                "processes": run.get("processes"),
                "wall (s)": run.get("wall s"),
                "slots per process": " · ".join(cell(c) for c in run.get("slots per process", [])),
                "every slot once": run.get("every slot once"),
                "each gave the whole run": run.get("each gave the whole run"),
            }
            for run in runs
        ]
        parts.append(table(rows))
    return "\n".join(parts), []


def processes(result: Result) -> tuple[str, list[Chart]]:
    """``processes.py``: per function, a table of its contenders (time per subtask and the
    ratio to a plain call), then each pool's cold start and the run's load average."""
    data = result.data
    parts = [measured(result)]
    groups: dict[tuple[str, Any], list[Mapping[str, Any]]] = {}
    for row in result.rows:
        groups.setdefault((str(row.get("function", "")), row.get("n")), []).append(row)
    for (function, n), rows in groups.items():
        parts.append(f"**`{function}`**, N = {cell(n)}, K = {cell(data.get('k'))}\n")
        parts.append(
            table(
                rows,
                columns=("contender", "us_per_subtask", "vs_plain_call"),
                headers={"vs_plain_call": "/ plain call"},
            )
        )
    cold = data.get("cold_start_s") or {}
    if cold:
        said = ", ".join(f"`{name}` {cell(seconds)} s" for name, seconds in cold.items())
        parts.append(f"Cold start (new worker processes answering once): {said}.\n")
    load = data.get("load_average")
    if load:
        parts.append(f"Load average during the run: {', '.join(str(x) for x in load)}.\n")
    return "\n".join(parts), []


# -- the page's parts -------------------------------------------------------------------------


@dataclass
class Parts:
    """What the performance page includes: a Markdown fragment per known benchmark (empty
    when its results are missing), the rest together, and the charts drawn."""

    fragments: dict[str, str]
    charts: list[Chart]


ENDPOINT_MODES = {
    "batching32": "batches of 32, the rest queued",
    "batching256": "batches of 256, the rest queued",
    "sequential": "one at a time, the rest queued",
    "queue_bounded": "batches of 32, 32 queued, then 503",
    "rate_limited": "all at once, 600 a minute, then 429",
}


def endpoints(result: Result) -> tuple[str, list[Chart]]:
    """``endpoints.py``: per mode of the loopback server, the targets the adaptive rules are
    held to, then the figures of the fixed K that the targets name (the best one and the
    smallest within 90% of it), of K=256 and of every other contender."""
    data = result.data
    targets: dict[str, Any] = data.get("targets", {})
    checks = []
    for mode, verdict in targets.items():
        for contender, figures in verdict.items():
            if not isinstance(figures, dict) or not contender.startswith(("Adaptive", "oracle")):
                continue
            checks.append(
                {
                    "mode": mode,
                    "contender": contender,
                    "of best fixed": f"{figures['throughput_share']:.1%}",
                    "p95 / reference": f"{figures['p95_ratio']:.2f}x",
                    "refused": f"{figures['refused_share']:.1%}",
                    "lost": figures["lost"],
                }
            )
    parts = [measured(result)]
    parts.append(
        "**The targets.** Throughput at least 90% of the best fixed K's, p95 at most 2x the "
        "reference's (the smallest fixed K within 90% of the best throughput), at most 2% "
        "refused against the rate limit, nothing lost.\n"
    )
    parts.append(table(checks))
    makespan: dict[str, float] = data.get("makespan_256", {})
    fixed = makespan.get("fixed K=256")
    if fixed:
        rows = [
            {
                "contender": name,
                "makespan (s)": round(seconds, 2),
                "/ fixed K=256": ratio(seconds, fixed),
            }
            for name, seconds in makespan.items()
        ]
        parts.append("**256 requests against batches of 256** (target: within 1.2x of K=256).\n")
        parts.append(table(rows))
    parts.append(out_of_reach(result))
    for mode, verdict in targets.items():
        named = {verdict.get("best_fixed"), verdict.get("reference"), "fixed K=256"}
        rows = [
            {
                "contender": row["contender"],
                "answers/s": round(row["throughput"], 2),
                "p50 (s)": round(row["p50"], 2),
                "p95 (s)": round(row["p95"], 2),
                "refused": f"{row['refused_share']:.1%}",
                "lost": row["lost"],
            }
            for row in result.rows
            if row["mode"] == mode
            and (row["contender"] in named or not row["contender"].startswith("fixed"))
        ]
        parts.append(f"**`{mode}`**: {ENDPOINT_MODES.get(mode, mode)}.\n")
        parts.append(table(rows))
    return "\n".join(parts), []


def out_of_reach(result: Result) -> str:
    """Why no one default meets the targets of ``batching256``, with the oracles' figures: the
    sequential target bounds the start, the batching32 target the leap (nothing when the results
    hold no oracles)."""
    data = result.data
    bounds: dict[str, dict[str, int]] = data.get("bounds", {})
    run, burst = str(data.get("subtasks")), "256"
    if run not in bounds or burst not in bounds:
        return ""
    targets = data.get("targets", {})
    makespan: dict[str, float] = data.get("makespan_256", {})
    fixed = makespan.get("fixed K=256")
    of_run, of_burst = bounds[run], bounds[burst]

    def oracle(start: int, probe: int | None = None, *, told: bool = False) -> str:
        until = "its first answers come" if told else "a batch of 32 would answer"
        between = "" if probe is None else f"{probe} until {until}, "
        return f"oracle L0={start}, then {between}256 (a bound)"

    def span(name: str) -> str:
        return ratio(makespan.get(name), fixed) or "–"

    leap = oracle(2)
    try:
        batching256 = targets["batching256"]
        figures = {
            name: f"{batching256[contender]['throughput_share']:.1%}"
            for name, contender in (
                ("largest", oracle(of_run["largest_start"])),
                ("leap", leap),
                ("staged", oracle(2, of_run["largest_probe"])),
                ("adaptive", "Adaptive(256)"),
            )
        }
        told = oracle(2, of_run["largest_probe"], told=True)
        figures["told"] = (
            f"{batching256[told]['throughput_share']:.1%}" if told in batching256 else ""
        )
        figures["p95"] = f"{targets['batching32'][leap]['p95_ratio']:.1f}x"
    except KeyError:
        return ""
    return (
        "**Why one default cannot meet the two targets of `batching256`.** The oracles are "
        "bounds, not policies: each goes to 256 in flight as if it knew the endpoint batches "
        "256, as soon as a target of another endpoint lets a default do so; their rows against "
        "the other endpoints show what that knowledge would cost there.\n\n"
        f"- *The sequential target bounds the start.* A p95 within 2x fixed K=1's lets at most "
        f"{of_run['allowed']} of {run} requests ({of_burst['allowed']} of 256) wait behind "
        "more than one other; the i-th of the requests sent before the first answer waits "
        f"behind i - 1, so a default sends at most {of_run['largest_start']} before its first "
        f"answer ({of_burst['largest_start']} of 256). Starting there and going to 256 at the "
        f"first answer reaches {figures['largest']} of the best fixed K's throughput, and "
        f"{span(oracle(of_burst['largest_start']))} K=256's makespan for 256 requests (targets: "
        "90% and 1.2x).\n"
        f"- *The batching32 target bounds the leap.* A start of 2 does better: alone it would "
        f"meet both ({figures['leap']}, {span(leap)}), its first answers coming sooner. But it "
        "leaps before any answer can tell batches of 256 from batches of 32, which answer alike "
        "below 33 in flight, and against batches of 32 the same leap puts the p95 at "
        f"{figures['p95']} the reference's (target: 2x).\n"
        "- *Both together.* Keeping the batching32 target, a default holds at most "
        f"{of_run['largest_probe']} in flight ({of_burst['largest_probe']} of 256) until a batch "
        "of 32 would have answered, the first moment the two endpoints differ: two batches of "
        f"32, each answered within two batches' time, and the {of_run['allowed']} the p95 lets "
        "wait longer. The oracle that does just that from a start of 2, then leaps to 256, "
        f"reaches {figures['staged']} and {span(oracle(2, of_burst['largest_probe']))}.\n"
        + (
            "- *A rule learns the batch from its answers.* Only a client that knew how long a "
            "batch of 32 takes could leap then; one that reads answers sees more than 32 answer "
            "together when the probe's first answers come, a batch of its size later. The "
            f"oracle that leaps then reaches {figures['told']} and "
            f"{span(oracle(2, of_burst['largest_probe'], told=True))}: the bound of a rule "
            "that starts unsure of the batch.\n"
            if figures["told"]
            else ""
        )
        + any_policy(data.get("reach"))
        + "\nSo no one default that keeps the sequential and batching32 targets meets those of "
        f"`batching256`; `Adaptive(256)` reaches {figures['adaptive']} and "
        f"{span('Adaptive(256)')}.\n"
    )


def any_policy(reach: Mapping[str, Any] | None) -> str:
    """The bound of every policy, whatever its rule, from ``benchmarks/reach.py``'s figures in
    the results (nothing when they hold none)."""
    if not reach:
        return ""
    start, probe = reach["makespan_schedule"][:2]
    return (
        "- *Any policy.* A default knows neither how long a reply takes alone nor how a batch "
        "slows it: it learns from its answers alone. Until its first answer a server that "
        "answers one at a time looks the same, so it sends at most "
        f"{reach['largest_start']} before it; until more than 32 answers come together a "
        f"server that batches 32 looks the same, so it holds at most {reach['largest_probe']} "
        "in flight until then. `benchmarks/reach.py` computes, from the server's batching "
        "curve, the best that any schedule within those two bounds reaches: "
        f"{reach['throughput_share']:.1%} of the best fixed K's throughput and "
        f"{reach['makespan_ratio']:.2f}x K=256's makespan (starting at {start}, probing "
        f"{probe}, then 256: stages that follow each other take the sum of their times, each "
        "its size to a power under 1, least with the stages as unequal as the bounds allow). "
        "Only a client that knew the curve could do better, reading silence (no answer when a "
        "batch of 32 would have answered), as the oracle that leaps then does: a client tuned "
        "to one server, not a default.\n"
    )


KNOWN = (
    "overhead",
    "stream_memory",
    "rate_limited",
    "journal",
    "journal_stores",
    "journal_processes",
    "processes",
    "endpoints",
)


def parts(results: Mapping[str, Result]) -> Parts:
    """Each known benchmark's fragment, and under ``others`` every other results file, each
    under a heading of its own, after a heading for them all (nothing where there is none)."""
    fragments = dict.fromkeys(KNOWN, "")
    charts: list[Chart] = []
    renderers: dict[str, Callable[[Result], tuple[str, list[Chart]]]] = {
        "overhead": overhead,
        "stream_memory": stream_memory,
        "journal": journal,
        "journal_stores": journal_stores,
        "journal_processes": journal_processes,
        "processes": processes,
    }
    if "endpoints_virtual" in results:
        fragments["endpoints"], drawn = endpoints(results["endpoints_virtual"])
    for name, render in renderers.items():
        if name in results:
            fragments[name], drawn = render(results[name])
            charts += drawn
    rates = [results[name] for name in ("rate_limited_virtual", "rate_limited") if name in results]
    fragments["rate_limited"], drawn = rate_limited(rates)
    charts += drawn
    taken = {*KNOWN, "rate_limited_virtual", "endpoints_virtual"}
    others = [result for name, result in results.items() if name not in taken]
    fragments["others"] = "".join(
        f"### {result.data.get('title') or title(result)} {{#results-{result.name}}}\n\n"
        + generic(result)
        + "\n"
        for result in others
    )
    if others:
        fragments["others"] = (
            "## More benchmarks\n\nEvery other file under `benchmarks/results/`, as it was "
            "measured.\n\n" + fragments["others"]
        )
    return Parts(fragments, charts)


def title(result: Result) -> str:
    benchmark = result.data.get("benchmark") or f"{result.name}.py"
    return f"`{benchmark}`"


def generate(out: Path, directory: Path = RESULTS) -> list[Path]:
    """Write the page's fragments (``<name>.md``) and charts under ``out``; returns their
    paths, written or not."""
    from tools.docs.pages import write_if_changed

    made = parts(load(directory))
    paths = []
    for name, text in made.fragments.items():
        paths.append(out / f"{name}.md")
        write_if_changed(paths[-1], text)
    for chart in made.charts:
        paths.append(out / chart.name)
        write_if_changed(paths[-1], chart.svg + "\n")
    return paths
