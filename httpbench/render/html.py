"""The HTML summary of a Result for notebooks: key figures, failure
classes, the percentile table, a scenario's per-request table. No
JavaScript; light borders drawn from the text colour."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..figures import FAILURE_CLASSES, PERCENTILES
from .text import by_name_rows, non_2xx_text, percent_label, shape_text

if TYPE_CHECKING:
    from ..result import Result

__all__ = ["summary"]


_STYLE = (
    "<style>"
    ".httpbench-result table{border-collapse:collapse;margin:0.3em 0 0.8em 0}"
    ".httpbench-result th,.httpbench-result td{padding:0.15em 0.7em;"
    "border:1px solid rgba(127,127,127,0.35)}"
    ".httpbench-result td{text-align:right;font-variant-numeric:tabular-nums}"
    ".httpbench-result th{text-align:left;font-weight:600}"
    ".httpbench-result p{margin:0.2em 0}"
    "</style>"
)


def summary(r: Result) -> str:
    e = html.escape
    state = ("interrupted" if r.interrupted else f"{r.failed:,} failed" if r.failed else
             f"{r.cancelled:,} cancelled at the end" if r.cancelled else
             f"every request complete, but {r.non_2xx:,} non-2xx" if r.non_2xx else
             "every request completed")
    key = [
        ("Requests per second", f"{r.rps:,.2f}"),
        ("Complete / issued", f"{r.complete:,} / {r.issued:,}"),
        ("Failed", f"{r.failed:,}"),
        ("Cancelled", f"{r.cancelled:,}"),
        ("Non-2xx responses", non_2xx_text(r) if r.non_2xx else "0"),
        ("Time taken", f"{r.time_taken:,.3f} s"),
        ("Latency mean", f"{r.latency.mean * 1e3:,.3f} ms"),
        ("Latency p99", f"{r.latency.p99 * 1e3:,.3f} ms"),
        ("Concurrency", f"{r.concurrency:,}" + (f", pipeline {r.pipeline}" if r.pipeline > 1
                                                 else "")),
        ("Target rate", f"{r.rate:,.2f} req/s" if r.rate else "none (closed loop)"),
        *([("Load shape", shape_text(r.stages))] if r.stages else []),
        *([("Connections shape", shape_text(r.concurrency_stages, " connections"))]
          if r.concurrency_stages else []),
        ("Keep-alive requests", f"{r.keepalive_requests:,}"),
        ("Reconnects", f"{r.reconnects:,}"),
        *([("TLS", f"{r.tls_protocol}; {r.tls_full_handshakes:,} full and "
                   f"{r.tls_resumed_handshakes:,} resumed handshakes, mean "
                   f"{r.tls_handshake.mean * 1e3:,.3f} ms")] if r.tls_protocol else []),
        ("Transferred", f"{r.bytes_received:,} bytes ({r.body_bytes:,} in bodies)"),
        ("Client CPU per request",
         f"{r.cpu_time / r.complete * 1e6:,.2f} us" if r.complete else "-"),
        ("Server", r.server_software or "-"),
        *([("Unix socket", r.unix_socket)] if r.unix_socket else []),
        *([("Proxy", r.proxy)] if r.proxy else []),
        ("Agent", f"{r.agent} {r.agent_version}, Python {r.python_version}"),
    ]
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in key)
    fails = "".join(f"<td>{r.failures[c]:,}</td>" for c in FAILURE_CLASSES)
    fail_head = "".join(f"<th>{c}</th>" for c in FAILURE_CLASSES)
    pct_head = "".join(f"<th>{percent_label(p)}%</th>" for p in PERCENTILES)
    pct_row = "".join(f"<td>{r.latency.percentile(p) * 1e3:,.3f}</td>" for p in PERCENTILES)
    which = ("from each request's intended start (corrected for coordinated omission)"
             if r.rate else "from each request's send")
    return (
        f"<div class='httpbench-result'>{_STYLE}"
        f"<p><b>{e(r.method)} {e(r.url)}</b>: {e(state)}</p>"
        f"<table>{rows}</table>"
        f"<p>Failures by class</p><table><tr>{fail_head}</tr><tr>{fails}</tr></table>"
        f"<p>Latency percentiles (ms), {e(which)}</p>"
        f"<table><tr>{pct_head}</tr><tr>{pct_row}</tr></table>"
        f"{_html_by_name(r)}</div>"
    )


def _html_by_name(r: Result) -> str:
    """A scenario's per-request table (empty for a run of one request)."""
    if not r.by_name:
        return ""
    e = html.escape

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v * 1e3:,.3f}"

    head = "".join(f"<th>{h}</th>" for h in ("Name", "Method", "Target", "Count", "Failed",
                                             "Req/s", "Mean ms", "p50 ms", "p99 ms", "Max ms"))
    body = "".join(
        f"<tr><th>{e(x['name'])}</th><td>{e(x['method'])}</td><td>{e(x['target'])}</td>"
        f"<td>{x['count']:,}</td><td>{x['failed']:,}</td><td>{x['rps']:,.2f}</td>"
        f"<td>{ms(x['mean'])}</td><td>{ms(x['p50'])}</td><td>{ms(x['p99'])}</td>"
        f"<td>{ms(x['max'])}</td></tr>" for x in by_name_rows(r))
    return f"<p>Requests by name</p><table><tr>{head}</tr>{body}</table>"
