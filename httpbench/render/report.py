"""The standalone HTML report: one file that opens from disk with no
network (inline SVG, inline CSS, no script), prints on paper, and shows a
run, a comparison, a capacity search, a pytest session, or several of
them side by side (the first the baseline, each figure's ratio to it, and
the pytest gate's noise rule where results carry rounds).

The tables are render.html's and the pictures render.charts', the same
code the notebook's summary draws with."""

from __future__ import annotations

import dataclasses
import datetime
import html
import os
import platform
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._version import __version__
from . import charts
from . import html as tables
from .tables import capacity_found

if TYPE_CHECKING:
    from ..capacity_result import CapacityResult
    from ..comparison import Comparison
    from ..result import Result

__all__ = ["Doc", "render", "write", "page", "run_doc", "comparison_doc", "capacity_doc",
           "session_doc", "FIGURES"]

e = html.escape

_CSS = (
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#222;"
    "max-width:1100px;margin:1.5em auto;padding:0 1em}"
    "h1{font-size:1.5em;margin:0.2em 0}h2{font-size:1.25em;margin:1.4em 0 0.3em;"
    "border-bottom:1px solid #ccc}h3{font-size:1.05em;margin:1em 0 0.2em}"
    ".grid{display:flex;flex-wrap:wrap;gap:0 2em;align-items:flex-start}"
    ".worse{color:#b00020;font-weight:600}.better{color:#006b3c;font-weight:600}"
    ".noise{color:#777}.unlike{color:#8a5a00;font-style:italic}"
    "footer{margin-top:2em;color:#777;font-size:0.9em}"
    "details>summary{cursor:pointer;font-weight:600;margin:0.6em 0}"
    "@media print{body{max-width:none;margin:0;font-size:11px}"
    "h2{break-after:avoid}svg.chart,table{break-inside:avoid}"
    "details{display:block}details>summary{display:none}}"
    + tables.STYLE
)


@dataclasses.dataclass
class Doc:
    """One input of a report: a run (with its rounds when a pytest
    session's), a comparison, a capacity search or a session's runs."""

    label: str
    kind: str  # "run", "comparison", "capacity" or "session"
    result: Result | None = None
    rounds: list[dict[str, float]] | None = None
    comparison: Comparison | None = None
    capacity: CapacityResult | None = None
    runs: list[Doc] = dataclasses.field(default_factory=list)
    machine: dict[str, Any] = dataclasses.field(default_factory=dict)


def run_doc(r: Result, label: str = "", rounds: list[dict[str, float]] | None = None) -> Doc:
    return Doc(label or f"{r.method} {r.url}", "run", result=r, rounds=rounds)


def comparison_doc(c: Comparison, label: str = "comparison") -> Doc:
    return Doc(label, "comparison", comparison=c)


def capacity_doc(c: CapacityResult, label: str = "") -> Doc:
    return Doc(label or f"capacity of {c.url}", "capacity", capacity=c)


def session_doc(runs: Sequence[tuple[str, Result, list[dict[str, float]] | None]],
                label: str = "session", machine: dict[str, Any] | None = None) -> Doc:
    return Doc(label, "session", runs=[run_doc(r, name, rounds) for name, r, rounds in runs],
               machine=machine or {})


def _latency(key: str, label: str, stat: str, metric: str | None) -> tuple[Any, ...]:
    """A latency row of FIGURES: the statistic in seconds (None when nothing
    was timed), shown in ms, lower being better."""
    return (key, label, lambda r: getattr(r.latency, stat) if r.latency.count else None,
            lambda v: f"{v * 1e3:,.3f} ms", metric, False)


# The figures set side by side in a report of several runs: (JSON key,
# label, value of a Result, formatter, what the noise rule calls it or
# None, higher is better: True, False, or None where larger is neither
# better nor worse and the ratio is never coloured).
FIGURES: tuple[tuple[str, str, Callable[[Result], float | None], Callable[[float], str],
                     str | None, bool | None], ...] = (
    ("rps", "Requests per second", lambda r: r.rps, lambda v: f"{v:,.2f}", "rps", True),
    *(_latency(key, label, stat, metric) for key, label, stat, metric in (
        ("latency.mean", "Latency mean", "mean", None),
        ("latency.percentiles.50", "Latency p50", "p50", "p50"),
        ("latency.percentiles.90", "Latency p90", "p90", None),
        ("latency.percentiles.99", "Latency p99", "p99", "p99"),
        ("latency.percentiles.99.9", "Latency p99.9", "p999", None),
        ("latency.max", "Latency max", "max", None))),
    ("complete", "Complete", lambda r: r.complete, lambda v: f"{v:,.0f}", None, None),
    ("failed", "Failed", lambda r: r.failed, lambda v: f"{v:,.0f}", None, False),
    ("non_2xx", "Non-2xx", lambda r: r.non_2xx, lambda v: f"{v:,.0f}", None, False),
    ("cpu_per_request", "Client CPU per request",
     lambda r: r.cpu_time / r.complete if r.complete else None, lambda v: f"{v * 1e6:,.2f} us",
     None, False),
    ("bytes_received", "Total transferred", lambda r: r.bytes_received,
     lambda v: f"{v:,.0f} bytes", None, None),
)


def _run_section(d: Doc, level: int = 2) -> str:
    """A run's whole section: settings, summary, pictures, tables."""
    r = d.result
    assert r is not None
    h = f"h{level}"
    pics = [charts.timeline_charts([("", r)])]
    if r.latency.count:
        pics += [charts.percentile_chart([("", r)]), charts.histogram_chart([("", r)])]
    rounds = ""
    if d.rounds:
        rows = [f"<tr>{tables.fig(i + 1)}{tables.num(x['rps'], ',.2f', 'rps')}"
                f"{tables.msf(x['p50'], 'p50')}{tables.msf(x['p99'], 'p99')}</tr>"
                for i, x in enumerate(d.rounds)]
        rounds = f"<h3>Rounds</h3>{tables.table(['Round', 'Req/s', 'p50 ms', 'p99 ms'], rows)}"
    scenario = ""
    if r.by_name:
        scenario = (f"<h3>Requests of the scenario</h3>{tables.by_name_table(r)}"
                    f"{charts.by_name_chart(r)}")
    workers = f"<h3>Workers</h3>{tables.workers_table(r)}" if r.workers else ""
    # An open loop's tables say which latency each holds.
    pct_which = f": {tables.CORRECTED}, and {tables.UNCORRECTED}" if r.rate else ""
    times_which = f", {tables.UNCORRECTED}" if r.rate else ""
    first = f"<p>First failure: {e(r.first_error)}</p>" if r.first_error and r.failed else ""
    return (
        f"<section class=\"run\" data-label=\"{e(d.label)}\">"
        f"<{h}>{e(d.label)}</{h}><p><b>{e(r.method)} {e(r.url)}</b>: {e(tables.state(r))}</p>"
        f"{tables.warnings(r)}{first}"
        f"<div class=\"grid\"><div><h3>Summary</h3>{tables.key_table(r)}</div>"
        f"<div><h3>Settings and environment</h3>{tables.settings_table(r)}</div></div>"
        f"{''.join(pics)}"
        f"<div class=\"grid\"><div><h3>Statuses</h3>{tables.status_table(r)}</div>"
        f"<div><h3>Failures by class</h3>{tables.failures_table(r)}</div></div>"
        f"<h3>Latency percentiles (ms){pct_which}</h3>{tables.percentiles_table(r)}"
        f"<h3>Connection times (ms){times_which}</h3>{tables.times_table(r)}"
        f"{rounds}{scenario}{workers}</section>")


def _comparison_section(d: Doc) -> str:
    c = d.comparison
    assert c is not None
    each = "".join(f"<details open><summary>{e(a)} {e(s)}</summary>"
                   f"{_run_section(run_doc(r, f'{a} {s}'), 3)}</details>"
                   for (a, s), r in c.results.items())
    return (f"<section class=\"comparison\" data-label=\"{e(d.label)}\"><h2>{e(d.label)}</h2>"
            f"<p>The same scenarios through each HTTP client.</p>{tables.comparison_table(c)}"
            f"{''.join(charts.comparison_chart(c))}<h3>Each run</h3>{each}</section>")


def _capacity_section(d: Doc) -> str:
    c = d.capacity
    assert c is not None
    found = f"capacity within {c.slo}: {capacity_found(c)}"
    return (f"<section class=\"capacity\" data-label=\"{e(d.label)}\"><h2>{e(d.label)}</h2>"
            f"<p><b>{e(c.url)}</b>: <span data-key=\"rate\" data-value=\"{c.rate!r}\">"
            f"{e(found)}</span>, error rate at most {c.max_error_rate:g}</p>"
            f"{charts.capacity_chart(c)}<h3>Stages, in the order run</h3>"
            f"{tables.capacity_table(c)}</section>")


def loop_kind(r: Result) -> str:
    """What a run's latency is timed from, in words: an open loop's (a rate
    or a rate's stages) from each request's intended start, its wait for a
    connection included; a closed loop's from its send."""
    if r.rate or r.stages:
        rate = f" at {r.rate:,.0f} req/s" if r.rate else " under a rate's stages"
        return f"an open loop{rate} (latency timed from each request's intended start)"
    return "a closed loop (latency timed from each request's send)"


def _unlike(runs: Sequence[Doc], kinds: Sequence[str]) -> str:
    """A paragraph naming the runs' kinds (loop_kind's, in order) when
    they differ, or ""."""
    if len(set(kinds)) < 2:
        return ""
    said = "; ".join(f"{e(d.label)} is {e(k)}" for d, k in zip(runs, kinds, strict=True))
    return (f"<p class=\"unlike\"><b>Runs of different kinds</b>: {said}. Their latency "
            "ratios are not like for like (marked so below); their req/s, counts and bytes "
            "are.</p>")


def _ratio_cell(v: float | None, base: float | None, higher: bool | None, verdict: Any,
                threshold: float, unlike: bool = False) -> str:
    """A figure's ratio to the baseline's, marked worse or better by one
    rule: with a verdict of the noise rule (rounds on both sides) only a
    change past the band; without, only a change past the threshold
    (percent, stated on the page); never where larger is neither better
    nor worse (higher None), nor where the two are timed from different
    instants (unlike: a closed loop's latency beside an open loop's)."""
    if v is None or base is None or base == 0:
        return "<td>-</td>"
    ratio = v / base
    cls, note = "", ""
    if unlike:
        cls, note, verdict = "unlike", " (not like for like)", None
    elif higher is None:
        pass
    elif verdict is not None:
        if verdict.fails:
            cls, note = "worse", " (past the noise)"
        elif verdict.better:
            cls, note = "better", " (past the noise)"
        else:
            cls, note = "noise", " (within the noise)" if abs(ratio - 1) > 1e-9 else ""
    elif abs(ratio - 1) > threshold / 100:
        # (As the page states it. On the log of the ratio, a 4.8% drop,
        # 0.9518, was marked: past 1/1.05, not past 5%.)
        cls = "worse" if (ratio < 1 if higher else ratio > 1) else "better"
    c = f' class="{cls}"' if cls else ""
    return (f"<td{c} data-ratio=\"{ratio!r}\" title=\"{e(verdict.text) if verdict else ''}\">"
            f"{ratio:.3f}x{e(note)}</td>")


def _side_by_side(label: str, runs: Sequence[Doc], threshold: float = 5.0) -> str:
    """Several runs of one thing: the figures with their ratios to the
    first, and the pictures overlaid."""
    from ..noise import decide
    base = runs[0]
    named = [(d.label, d.result) for d in runs if d.result is not None]
    kinds = [loop_kind(d.result) if d.result is not None else "" for d in runs]
    head = "<tr><th>Figure</th>" + "".join(
        f"<th>{e(d.label)}</th>" + ("<th>ratio</th>" if i else "")
        for i, d in enumerate(runs)) + "</tr>"
    rows = []
    for key, name, get, fmt, metric, higher in FIGURES:
        assert base.result is not None
        b = get(base.result)
        cells = []
        for i, d in enumerate(runs):
            assert d.result is not None
            v = get(d.result)
            cells.append(tables.fig(v, fmt(v) if v is not None else "-", key)
                         .replace("<td", f"<td data-run=\"{i}\"", 1))
            if i:
                verdict = None
                now, then = v, b
                if metric and d.rounds and base.rounds:
                    # The gate's figures: the medians of the rounds.
                    verdict = decide(metric, [x[metric] for x in d.rounds],
                                     [x[metric] for x in base.rounds], threshold)
                    now, then = verdict.now, verdict.base
                unlike = key.startswith("latency.") and kinds[i] != kinds[0]
                cells.append(_ratio_cell(now, then, higher, None if unlike else verdict,
                                         threshold, unlike))
        rows.append(f"<tr data-key=\"{key}\"><th>{e(name)}</th>{''.join(cells)}</tr>")
    noise = ("<p>Ratios to the first. Where both sides carry rounds (a pytest session's "
             f"runs), req/s, p50 and p99 are judged by the pytest gate's rule (threshold "
             f"{threshold:g}%): a change is marked only when it is past the threshold and "
             "outside the noise band, twice the spread the two sides' rounds have between "
             "them (each side's spread is how far its rounds stray from their median, a "
             "wild round hardly counting; a fall and a rise of the same factor are the same "
             "distance). Elsewhere a ratio is "
             f"marked worse or better past {threshold:g}% either way; counts and bytes, where "
             "larger is neither, never.</p>")
    pics = [charts.timeline_charts(named)]
    if all(r.latency.count for _, r in named):
        pics += [charts.percentile_chart(named), charts.histogram_chart(named)]
    return (f"<section class=\"side-by-side\" data-label=\"{e(label)}\"><h2>{e(label)}</h2>"
            f"{noise}{_unlike(runs, kinds)}<table class=\"ratios\">{head}{''.join(rows)}</table>"
            f"{''.join(pics)}</section>")


def _session_section(d: Doc) -> str:
    rows = []
    for x in d.runs:
        r = x.result
        assert r is not None
        p99 = r.latency.p99 if r.latency.count else None
        rows.append(f"<tr data-name=\"{e(x.label)}\">{tables.txt(x.label)}"
                    f"{tables.fig(len(x.rounds or []) or 1, key='rounds')}"
                    f"{tables.num(r.rps, ',.2f', 'rps')}"
                    f"{tables.msf(p99, 'latency.percentiles.99')}"
                    f"{tables.fig(r.failed, key='failed')}</tr>")
    m = d.machine
    about = ", ".join(f"{k} {m[k]}" for k in ("node", "cpus", "python", "commit", "datetime")
                      if m.get(k))
    each = "".join(f"<details open><summary>{e(x.label)}</summary>{_run_section(x, 3)}</details>"
                   for x in d.runs)
    return (f"<section class=\"session\" data-label=\"{e(d.label)}\"><h2>{e(d.label)}</h2>"
            f"<p>{e(about)}</p>"
            + tables.table(["Test", "Rounds", "Req/s (median round)", "p99 ms", "Failed"], rows)
            + each + "</section>")


def _section(d: Doc) -> str:
    return {"run": _run_section, "comparison": _comparison_section,
            "capacity": _capacity_section, "session": _session_section}[d.kind](d)


def render(docs: Sequence[Doc], title: str | None = None) -> str:
    """The report of docs: one alone in full; several runs (or sessions)
    side by side, the first the baseline, then each in full."""
    if not docs:
        raise ValueError("a report needs at least one result")
    body = []
    runs = [d for d in docs if d.kind == "run"]
    sessions = [d for d in docs if d.kind == "session"]
    if len(runs) > 1:
        body.append(_side_by_side("Side by side (ratios to the first)", runs))
    if len(sessions) > 1:
        # The same test in each session, the first session the baseline.
        names = list(dict.fromkeys(x.label for s in sessions for x in s.runs))
        for name in names:
            same = [dataclasses.replace(x, label=s.label) for s in sessions for x in s.runs
                    if x.label == name]
            if len(same) > 1:
                body.append(_side_by_side(f"{name}: each session beside the first", same))
    body += [_section(d) for d in docs]
    title = title or ("httpbench: " + ", ".join(d.label for d in docs))[:200]
    when = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{e(title)}</title><style>{_CSS}</style></head>"
        f"<body class=\"httpbench-result\"><h1>{e(title)}</h1>{''.join(body)}"
        f"<footer>Written by httpbench {e(__version__)} (Python "
        f"{e(platform.python_version())}) at {e(when)}: one file, no script, nothing fetched."
        "</footer></body></html>\n")


def write(path: str | os.PathLike[str], docs: Sequence[Doc], title: str | None = None) -> None:
    """Writes the report of docs to path (UTF-8)."""
    Path(path).write_text(render(docs, title), encoding="utf-8")


def page(doc: Doc, path: str | os.PathLike[str] | None) -> str:
    """The report of one doc (the to_html methods'), written to path when
    given; returns its text."""
    text = render([doc])
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
