"""The HTML tables of a Result, a Comparison and a capacity search: one code
for the notebook's summary (Result._repr_html_) and the standalone report
(render.report). No JavaScript; light borders drawn from the text colour.

Every figure's cell carries its raw JSON value beside the formatted text:
<td data-key="rps" data-value="12345.678">12,345.68</td>, data-key the
figure's name in the result's JSON (a dotted path below its top level:
latency.percentiles.99, failures.connect, status_counts.200), so a reader
or a test takes the number, not the text."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..figures import FAILURE_CLASSES, PERCENTILES
from .tables import capacity_noted, step_outcome
from .text import (by_name_rows, headline, non_2xx_text, percent_label, shape_text,
                   streams_allowed)

if TYPE_CHECKING:
    from ..capacity_result import CapacityResult
    from ..comparison import Comparison
    from ..result import Latency, Result

__all__ = ["summary", "fig", "num", "msf", "txt", "table", "state", "key_rows", "key_table",
           "failures_table", "percentiles_table", "times_table", "status_table", "by_name_table",
           "workers_table", "settings_table", "comparison_table", "capacity_table", "STYLE",
           "warnings"]

e = html.escape

STYLE = (
    ".httpbench-result table{border-collapse:collapse;margin:0.3em 0 0.8em 0}"
    ".httpbench-result th,.httpbench-result td{padding:0.15em 0.7em;"
    "border:1px solid rgba(127,127,127,0.35)}"
    ".httpbench-result td{text-align:right;font-variant-numeric:tabular-nums}"
    ".httpbench-result td.text{text-align:left}"
    ".httpbench-result th{text-align:left;font-weight:600}"
    ".httpbench-result p{margin:0.2em 0}"
    ".httpbench-result p.warning{font-weight:600}"
    ".httpbench-result svg.chart{max-width:100%;height:auto;display:block;margin:0.4em 0}"
    ".httpbench-result svg text{fill:currentColor;font-family:inherit}"
)


def fig(value: Any, text: str | None = None, key: str | None = None) -> str:
    """A figure's cell: its text, and its raw value in data-value (JSON)."""
    shown = text if text is not None else (f"{value:,}" if isinstance(value, int) else
                                           "-" if value is None else str(value))
    k = f' data-key="{e(key)}"' if key else ""
    return f"<td{k} data-value=\"{e(json.dumps(value))}\">{e(shown)}</td>"


def num(value: float, spec: str, key: str | None = None) -> str:
    """A number's cell formatted by spec (",.2f")."""
    return fig(value, format(value, spec), key)


def msf(seconds: float | None, key: str | None = None) -> str:
    """A time's cell in ms ("-" when None); its value stays in seconds."""
    return fig(seconds, "-" if seconds is None else f"{seconds * 1e3:,.3f}", key)


def txt(text: str) -> str:
    return f'<td class="text">{e(text)}</td>'


def table(head: Sequence[str] | None, rows: Sequence[str], cls: str = "") -> str:
    """A table of ready rows (each "<tr>...</tr>"), headed when head."""
    c = f' class="{cls}"' if cls else ""
    top = "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>" if head else ""
    return f"<table{c}>{top}{''.join(rows)}</table>"


def state(r: Result) -> str:
    """How the run ended, in a few words."""
    return ("interrupted" if r.interrupted else f"{r.failed:,} failed" if r.failed else
            f"{r.cancelled:,} cancelled at the end" if r.cancelled else
            f"every request complete, but {r.non_2xx:,} non-2xx" if r.non_2xx else
            "every request completed")


def warnings(r: Result) -> str:
    """What the text report says first and last, when it says it: nothing
    completed, or nothing 2xx (headline); the client bound the run."""
    lines = [headline(r)]
    if r.client is not None and r.client.bound:
        lines.append(f"Warning: {r.client.warning()}.")
    return "".join(f"<p class=\"warning\">{e(x)}</p>" for x in lines if x)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.3f} ms"


def key_rows(r: Result) -> list[tuple[str, str | None, Any, str]]:
    """The key figures as (label, JSON key or None, value, text): the
    notebook's table and the report's summary."""
    cpu = r.cpu_time / r.complete if r.complete else None
    which = " (corrected)" if r.rate else ""
    rows: list[tuple[str, str | None, Any, str]] = [
        ("Requests per second", "rps", r.rps, f"{r.rps:,.2f}"),
        ("Complete", "complete", r.complete, f"{r.complete:,}"),
        ("Issued", "issued", r.issued, f"{r.issued:,}"),
        ("Failed", "failed", r.failed, f"{r.failed:,}"),
        ("Cancelled", "cancelled", r.cancelled, f"{r.cancelled:,}"),
        ("Non-2xx responses", "non_2xx", r.non_2xx, non_2xx_text(r) if r.non_2xx else "0"),
        ("Time taken", "time_taken", r.time_taken, f"{r.time_taken:,.3f} s"),
        *((f"Latency {name}{which}", key, v if r.latency.count else None,
           _ms(v) if r.latency.count else "-")  # (nothing timed: no latency, not 0)
          for name, key, v in (("mean", "latency.mean", r.latency.mean),
                               ("p50", "latency.percentiles.50", r.latency.p50),
                               ("p99", "latency.percentiles.99", r.latency.p99))),
        ("Keep-alive requests", "keepalive_requests", r.keepalive_requests,
         f"{r.keepalive_requests:,}"),
        ("Connects", "connects", r.connects, f"{r.connects:,}"),
        ("Reconnects", "reconnects", r.reconnects, f"{r.reconnects:,}"),
        ("Total transferred", "bytes_received", r.bytes_received, f"{r.bytes_received:,} bytes"),
        ("HTML transferred", "body_bytes", r.body_bytes, f"{r.body_bytes:,} bytes"),
        ("Sent", "bytes_sent", r.bytes_sent, f"{r.bytes_sent:,} bytes"),
        ("Client CPU per request", "cpu_per_request", cpu,
         f"{cpu * 1e6:,.2f} us" if cpu is not None else "-"),
    ]
    if r.tls_protocol or r.tls_failed_handshakes:
        rows.append(("TLS handshakes", "tls_full_handshakes", r.tls_full_handshakes,
                     f"{r.tls_full_handshakes:,} full, {r.tls_resumed_handshakes:,} resumed, "
                     + (f"{r.tls_failed_handshakes:,} failed, " if r.tls_failed_handshakes
                        else "")
                     + f"mean {_ms(r.tls_handshake.mean)}"))
    if r.http_version == "2":
        rows.append(("Refused streams", "refused", r.refused, f"{r.refused:,}"))
        rows.append(("Req/s per connection (mean)", "conn_rps_mean", r.conn_rps_mean,
                     f"{r.conn_rps_mean:,.2f} (min {r.conn_rps_min:,.2f}, "
                     f"max {r.conn_rps_max:,.2f})"))
    if r.not_run:
        rows.append(("Not run (lost workers)", "not_run", r.not_run, f"{r.not_run:,}"))
    c = r.client
    if c is not None:
        rows.append(("Client busy (busiest thread)", "client.busy_max", c.busy_max,
                     f"{c.busy_max:.0%} (mean {c.busy:.0%}, CPU {c.cpu:.0%})"))
        if c.late_p99 is not None:
            rows.append(("Client late, p99", "client.late_p99", c.late_p99, _ms(c.late_p99)))
        if c.unsent:
            rows.append(("Due, never sent", "client.unsent", c.unsent, f"{c.unsent:,}"))
        rows.append(("Client bound the run", "client.bound", c.bound,
                     c.reason if c.bound else "no"))
    if r.log:
        rows.append(("Request log records", "log_records", r.log_records,
                     f"{r.log_records:,} in {r.log}"))
        rows.append(("Request log dropped", "log_dropped", r.log_dropped,
                     f"{r.log_dropped:,}" + (f" ({r.log_error})" if r.log_error else
                                             " (the writer fell behind)" if r.log_dropped
                                             else "")))
    return rows


def key_table(r: Result) -> str:
    return table(None, [f"<tr><th>{e(label)}</th>{fig(v, text, key)}</tr>"
                        for label, key, v, text in key_rows(r)], "figures")


def settings_rows(r: Result) -> list[tuple[str, str]]:
    """What the run was and where it ran, as (label, text)."""
    proto = ("HTTP/2, " + ("h2 by TLS ALPN" if r.tls_protocol else "h2c by prior knowledge")
             if r.http_version == "2" else "HTTP/1.1")
    rows = [("URL", r.url), ("Method", r.method), ("When", r.start_time or "-"),
            ("Connections", f"{r.concurrency:,}" + (f", pipeline {r.pipeline}"
                                                    if r.pipeline > 1 else "")),
            ("Threads", f"{r.threads:,}"),
            ("Target rate", f"{r.rate:,.2f} req/s" + (" (mean)" if r.stages else "")
             if r.rate else "none (closed loop)")]
    if r.requests:
        rows.append(("Requests asked", f"{r.requests:,}"))
    if r.stages:
        rows.append(("Load shape", shape_text(r.stages)))
    if r.concurrency_stages:
        rows.append(("Connections shape", shape_text(r.concurrency_stages, " connections")))
    rows.append(("Protocol", proto))
    if r.http_version == "2":
        allowed = streams_allowed(r)
        rows.append(("Streams", f"{r.streams} per connection asked, {allowed} allowed, "
                                f"{r.streams_max_used} most used"))
    rows.append(("TLS", ", ".join(x for x in (r.tls_protocol, r.tls_temp_key,
                                              r.tls_server_name and f"SNI {r.tls_server_name}")
                                  if x) or "none"))
    if r.unix_socket:
        rows.append(("Unix socket", r.unix_socket))
    if r.proxy:
        rows.append(("Proxy", r.proxy))
    rows += [("Server", r.server_software or "-"),
             ("Agent", f"{r.agent} {r.agent_version}, Python {r.python_version}"),
             ("Machine", f"{r.hostname or '-'}, {r.cpus if r.cpus else '?'} CPUs")]
    if r.workers:
        rows.append(("Workers", f"{len(r.workers)} ({sum(w.lost for w in r.workers)} lost)"))
    if r.interrupted:
        at = f" at {r.interrupted_at:,.1f} s" if r.interrupted_at is not None else ""
        rows.append(("Interrupted", f"stopped before its end{at}"))
    return rows


def settings_table(r: Result) -> str:
    return table(None, [f"<tr><th>{e(k)}</th>{txt(v)}</tr>" for k, v in settings_rows(r)],
                 "settings")


def failures_table(r: Result) -> str:
    head = "".join(f"<th>{c}</th>" for c in FAILURE_CLASSES)
    cells = "".join(fig(r.failures[c], key=f"failures.{c}") for c in FAILURE_CLASSES)
    out = f"<table class=\"failures\"><tr>{head}</tr><tr>{cells}</tr></table>"
    if r.reset_codes:
        out += table(["RST_STREAM code", "Streams"],
                     [f"<tr>{txt(k)}{fig(v, key=f'reset_codes.{k}')}</tr>"
                      for k, v in sorted(r.reset_codes.items())])
    return out


def status_table(r: Result) -> str:
    rows = [f"<tr>{txt(str(code))}{fig(n, key=f'status_counts.{code}')}"
            f"{num(n / r.complete if r.complete else 0.0, '.2%')}"
            "</tr>" for code, n in sorted(r.status_counts.items())]
    return table(["Status", "Responses", "Share"], rows, "statuses") if rows else \
        "<p>No responses.</p>"


def _pct_cells(lat: Latency, name: str) -> str:
    return "".join(msf(lat.percentile(p) if lat.count else None, f"{name}.percentiles.{p}")
                   for p in PERCENTILES)


# An open loop's two latencies, as the tables' headings name them.
CORRECTED = "corrected, from each request's intended start"
UNCORRECTED = "uncorrected, from its send"


def percentiles_table(r: Result) -> str:
    """ab's percentiles (ms): from each request's intended start, and
    under a rate also from its send."""
    head = "<th></th>" + "".join(f"<th>{percent_label(p)}%</th>" for p in PERCENTILES)
    rows = [f"<tr><th>{CORRECTED if r.rate else 'latency'}</th>"
            f"{_pct_cells(r.latency, 'latency')}</tr>"]
    if r.rate:
        rows.append(f"<tr><th>{UNCORRECTED}</th>"
                    f"{_pct_cells(r.latency_uncorrected, 'latency_uncorrected')}</tr>")
    return f"<table class=\"percentiles\"><tr>{head}</tr>{''.join(rows)}</table>"


def times_table(r: Result) -> str:
    """ab's Connection Times (ms)."""
    rows = []
    for label, name in (("Connect", "connect_time"), ("Processing", "processing"),
                        ("Waiting", "waiting"), ("Total", "latency_uncorrected")):
        lat: Latency = getattr(r, name)
        cells = "".join(
            msf(v if lat.count else None, f"{name}.{k}" if k != "p50" else
                f"{name}.percentiles.50")
            for k, v in (("min", lat.min), ("mean", lat.mean), ("stdev", lat.stdev),
                         ("p50", lat.p50), ("max", lat.max)))
        rows.append(f"<tr><th>{label}</th>{cells}</tr>")
    return table(["", "min", "mean", "[+/-sd]", "median", "max"], rows, "times")


def by_name_table(r: Result) -> str:
    """A scenario's per-request table (empty for a run of one request)."""
    if not r.by_name:
        return ""

    body = [
        f"<tr data-name=\"{e(x['name'])}\"><th>{e(x['name'])}</th>{txt(x['method'])}"
        f"{txt(x['target'])}{fig(x['count'], key='count')}{fig(x['failed'], key='failed')}"
        f"{num(x['rps'], ',.2f', 'rps')}{msf(x['mean'], 'latency.mean')}"
        f"{msf(x['p50'], 'latency.percentiles.50')}{msf(x['p99'], 'latency.percentiles.99')}"
        f"{msf(x['max'], 'latency.max')}</tr>" for x in by_name_rows(r)]
    return "<p>Requests by name</p>" + table(
        ["Name", "Method", "Target", "Count", "Failed", "Req/s", "Mean ms", "p50 ms", "p99 ms",
         "Max ms"], body, "by-name")


def workers_table(r: Result) -> str:
    """A cluster run's row per worker."""
    if not r.workers:
        return ""
    rows = []
    for w in r.workers:
        x = w.result
        st = "ok" if not w.lost else "lost" + (
            f" at {w.lost_at:,.1f} s" if w.lost_at is not None else "") + f": {w.error}" + (
            f" ({w.not_run:,} not run)" if w.not_run else "")
        rows.append(
            f"<tr data-worker=\"{e(w.address)}\">{txt(w.address)}{txt(w.host)}"
            f"{fig(w.concurrency, key='concurrency')}{fig(x.complete, key='complete')}"
            f"{fig(x.failed, key='failed')}{num(x.rps, ',.2f', 'rps')}"
            f"{msf(x.latency.p99 if x.latency.count else None, 'latency.percentiles.99')}"
            f"{txt(st)}</tr>")
    return table(["Address", "Host", "Connections", "Complete", "Failed", "Req/s", "p99 ms",
                  "State"], rows, "workers")


def _s(ms: float | None) -> float | None:
    return None if ms is None else ms / 1e3


def comparison_table(cmp: Comparison) -> str:
    """A row per agent and scenario, its ratio to the fastest."""
    rows = []
    for row in cmp.rows():
        ratio = row["of_fastest"]  # (None: no agent completed a request)
        rows.append(
            f"<tr data-agent=\"{e(row['agent'])}\" data-scenario=\"{e(row['scenario'])}\">"
            f"<td>{e(row['agent'])}</td><td>{e(row['version'])}</td>"
            f"<td>{e(row['scenario'])}</td>{fig(row['requests'], key='issued')}"
            f"{num(row['rps'], ',.0f', 'rps')}{msf(_s(row['mean_ms']), 'latency.mean')}"
            f"{msf(_s(row['p99_ms']), 'latency.percentiles.99')}"
            f"{fig(row['failed'], key='failed')}{fig(row['non_2xx'], key='non_2xx')}"
            f"{fig(row['reconnects'], key='reconnects')}"
            f"{fig(ratio, None if ratio is None else f'{ratio:.2f}', 'of_fastest')}</tr>")
    notes = "".join(f"<p>{e(n)}</p>" for n in cmp.warnings() + cmp.notes)
    return table(["agent", "version", "scenario", "requests", "req/s", "mean ms", "p99 ms",
                  "failed", "non-2xx", "reconnects", "x fastest"], rows) + notes


def capacity_table(c: CapacityResult) -> str:
    """The stages in the order run, and what each found."""
    rows = [f"<tr data-step=\"{i}\">{num(s.target, ',.0f', 'target')}"
            f"{num(s.achieved, ',.0f', 'achieved')}"
            f"{msf(s.p50 if s.latency_known else None, 'p50')}"
            f"{msf(s.p99 if s.latency_known else None, 'p99')}"
            f"{fig(s.errors, key='errors')}{fig(s.requests, key='requests')}"
            f"{fig(s.repeat, key='repeat')}{txt(step_outcome(s))}</tr>"
            for i, s in enumerate(c.steps)]
    held, broke = c.bounds
    limit = {"server": "the server (a breach confirmed)", "client":
             "the client, not the server (it could not keep up)"}.get(c.limited_by or "",
                                                                     "nothing broke")
    about = (f"<p>Held up to {f'{held:,.0f}/s' if held is not None else '- (none held)'}; "
             f"broke from {f'{broke:,.0f}/s' if broke is not None else '- (none broke)'}; "
             f"limited by {e(limit)}"
             f"{'; interrupted during the next stage' if c.interrupted else ''}.</p>")
    noted = capacity_noted(c)
    about += f'<p class="warning">{e(noted)}</p>' if noted else ""
    return about + table(["target/s", "achieved/s", "p50 ms", "p99 ms", "errors", "requests",
                          "repeat", "outcome"], rows, "capacity")


def summary(r: Result) -> str:
    """The notebook's summary: how it ended, the key figures, the failure
    classes, the percentiles, a scenario's table and the run's two main
    pictures (the same as the report's)."""
    from .charts import percentile_chart, timeline_charts
    which = ("from each request's intended start (corrected for coordinated omission)"
             if r.rate else "from each request's send")
    pictures = timeline_charts([("", r)], latency=False)
    if r.latency.count:
        pictures += percentile_chart([("", r)])
    return (
        f"<div class='httpbench-result'><style>{STYLE}</style>"
        f"<p><b>{e(r.method)} {e(r.url)}</b>: {e(state(r))}</p>{warnings(r)}"
        f"{key_table(r)}{settings_table(r)}"
        f"<p>Failures by class</p>{failures_table(r)}"
        f"<p>Latency percentiles (ms), {e(which)}</p>{percentiles_table(r)}"
        f"{by_name_table(r)}{workers_table(r)}{pictures}</div>"
    )
