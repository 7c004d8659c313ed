"""ab's text report of a Result, field for field, and the per-request table
of a scenario (as Locust prints one)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ..bound import server_paced
from ..figures import PERCENTILES
from ..hints import HINTS, PLAIN, Words, hint

if TYPE_CHECKING:
    from ..result import Latency, Result

__all__ = ["report", "by_name_rows", "percent_label", "shape_text", "non_2xx_text",
           "streams_allowed", "in_flight", "headline", "client_lines",
           "percentiles_cover", "tls_lines", "cpu_line", "log_lines", "mode_additions"]


def report(r: Result) -> str:
    """ab's report, with sub-millisecond figures where ab prints 0,
    percentiles to 99.99 and the client's CPU per request; first, when
    nothing completed or nothing was 2xx, a line that says so (headline)."""
    first = headline(r)
    return (first + "\n\n" if first else "") + "\n".join(_report_lines(r)) + "\n"


# What to do about a failure class when nothing completed (a hint's name,
# or the words themselves).
_ADVICE = {"tls": "tls", "connect": "Is the server up, on that address and port?",
           "timeout": "timeout"}


def headline(r: Result, words: Words = PLAIN) -> str:
    """One line that says what went wrong before the figures do, or "":
    nothing sent (an HTTP/2 server that never sent its SETTINGS), nothing
    completed (the cause: the failure class most requests ended
    in, the first failure's words, and what to do about it), or no response
    was 2xx ("All 111,611 responses were 404 Not Found")."""
    if not r.issued and r.first_error:
        return f"Nothing was sent: {r.first_error}" + ("" if r.first_error[-1] in ".?" else ".")
    if r.issued and not r.complete:
        if not r.failed:
            return (f"Nothing completed: the {r.cancelled:,} requests were still in flight when "
                    "the run ended (cancelled).")
        classes = sorted(((n, c) for c, n in r.failures.items() if n), reverse=True)
        n, cls = classes[0]
        what = f"all {n:,}" if n == r.failed == r.issued else f"{n:,} of {r.issued:,}"
        why = f": {r.first_error}" if r.first_error else ""
        advice = _ADVICE.get(cls, "") if cls != "tls" or "verif" in why else ""
        if cls == "tls" and r.http_version == "2" and "no application protocol" in why:
            # ALPN (RFC 7301) offered h2 alone, and the server (nginx) would
            # not go on without it.
            advice = "http2"
        advice = f" {hint(advice, words) if advice in HINTS else advice}" if advice else ""
        return f"Nothing completed: {what} requests failed ({cls}){why}.{advice}"
    if r.complete and r.non_2xx == r.complete:
        statuses = sorted((c, n) for c, n in r.status_counts.items() if n)
        if len(statuses) == 1:
            code = statuses[0][0]
            try:
                name = f"{code} {HTTPStatus(code).phrase}"
            except ValueError:
                name = str(code)
            return f"All {r.complete:,} responses were {name}."
        return (f"All {r.complete:,} responses were non-2xx: "
                + ", ".join(f"{c}: {n:,}" for c, n in statuses) + ".")
    return ""


def tls_handshake_lines(r: Result) -> Iterable[str]:
    """The handshakes by kind, when there were any (failed: refused)."""
    shakes = r.tls_full_handshakes + r.tls_resumed_handshakes
    failed = f", {r.tls_failed_handshakes} failed" if r.tls_failed_handshakes else ""
    if shakes or failed:
        yield (f"TLS handshakes:         {shakes} ({r.tls_full_handshakes} full, "
               f"{r.tls_resumed_handshakes} resumed{failed}), "
               f"mean {_ms(r.tls_handshake.mean)} [ms]")


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3f}"


def _cell(lat: Latency, p: float) -> str:
    """A percentile in ms, or "-" when nothing was measured."""
    return _ms(lat.percentile(p)) if lat.count else "-"


def _row(label: str, lat: Latency) -> str:
    if not lat.count:
        return f"{label:<12}{'-':>9}{'-':>9}{'-':>8}{'-':>9}{'-':>9}"
    return (f"{label:<12}{_ms(lat.min):>9}{_ms(lat.mean):>9}{_ms(lat.stdev):>8}"
            f"{_ms(lat.p50):>9}{_ms(lat.max):>9}")


def _report_lines(r: Result) -> Iterable[str]:
    yield f"Server Software:        {r.server_software}"
    yield f"Server Hostname:        {r.host}"
    yield f"Server Port:            {r.port}"
    if r.unix_socket:
        yield f"Unix Socket:            {r.unix_socket}"
    if r.proxy:
        yield f"Proxy:                  {r.proxy}"
    if r.http_version == "2":
        yield f"Protocol:               {'h2 (TLS ALPN)' if r.tls_protocol else 'h2c'}"
    yield from tls_lines(r)
    yield ""
    yield f"Document Path:          {r.path}"
    doc = r.document_length
    yield f"Document Length:        {doc if doc is not None else 0} bytes"
    yield ""
    yield f"Concurrency Level:      {r.concurrency}" + (
        f" (at most {r.issued} at once: {r.issued} requests)"
        if 0 < r.issued < r.concurrency else "")
    if r.pipeline > 1:
        yield f"Pipeline Depth:         {r.pipeline}"
    if r.http_version == "2":
        allowed = streams_allowed(r)
        yield (f"Streams:                {r.streams} per connection asked, {allowed} allowed, "
               f"{r.streams_max_used} most used")
    yield f"Time taken for tests:   {r.time_taken:.3f} seconds"
    yield f"Complete requests:      {r.complete}"
    yield f"Failed requests:        {r.failed}"
    if r.failed:
        f = r.failures
        tls = f", TLS: {f['tls']}" if f["tls"] or r.tls_protocol else ""
        check = f", Check: {f['check']}" if f["check"] or r.by_name else ""
        worker = f", Worker: {f['worker']}" if f["worker"] or r.workers else ""
        reset = f", Reset: {f['reset']}" if f["reset"] or r.http_version == "2" else ""
        yield (f"   (Connect: {f['connect']}, Receive: {f['receive']}, Length: {f['length']}, "
               f"Exceptions: {f['exceptions']}, Timeout: {f['timeout']}{tls}{check}{reset}"
               f"{worker})")
        if r.reset_codes:
            codes = ", ".join(f"{k} {v}" for k, v in sorted(r.reset_codes.items()))
            yield f"   (RST_STREAM by code: {codes})"
        if f["check"]:
            yield f"   (Failed checks' answers: {check_statuses(r)})"
    if r.cancelled:
        yield f"Cancelled requests:     {r.cancelled} (in flight when the run ended)"
    if r.non_2xx:
        yield f"Non-2xx responses:      {non_2xx_text(r)}"
    yield f"Keep-Alive requests:    {r.keepalive_requests}"
    yield from tls_handshake_lines(r)
    if r.refused:
        yield f"Refused streams:        {r.refused} (REFUSED_STREAM, sent again)"
    yield f"Total transferred:      {r.bytes_received} bytes"
    if r.http_version == "2":
        # h2load's "headers (space savings N%)": what HPACK saved.
        saved = 1 - r.header_bytes_wire / r.header_bytes_decoded if r.header_bytes_decoded else 0
        yield (f"Headers transferred:    {r.header_bytes_wire} bytes on the wire, "
               f"{r.header_bytes_decoded} decoded (space savings {saved:.2%})")
    yield f"HTML transferred:       {r.body_bytes} bytes"
    yield f"Requests per second:    {r.rps:.2f} [#/sec] (mean)"
    per = r.time_taken / r.complete if r.complete else 0.0
    flying = in_flight(r)
    if r.rate or r.stages:
        # ab's concurrency x time / requests assumes a closed loop: under a
        # rate the connections wait for their schedule, not for answers.
        yield "Time per request:       n/a (open loop: see the latency table)"
    elif flying != r.concurrency:
        # ab's concurrency is the requests in flight at once: with streams
        # or a pipeline, more than one per connection; with fewer requests
        # than connections, fewer (ab refuses -c over -n).
        yield f"Time per request:       {per * flying * 1e3:.3f} [ms] (mean, {flying} in flight)"
    else:
        yield f"Time per request:       {per * r.concurrency * 1e3:.3f} [ms] (mean)"
    yield f"Time per request:       {per * 1e3:.3f} [ms] (mean, across all concurrent requests)"
    kbps = r.bytes_received / 1024 / r.time_taken if r.time_taken > 0 else 0.0
    yield f"Transfer rate:          {kbps:.2f} [Kbytes/sec] received"
    if r.complete:
        yield cpu_line(r)
    if r.http_version == "2" and r.complete:
        yield (f"Req/s per connection:   min {r.conn_rps_min:.2f}, max {r.conn_rps_max:.2f}, "
               f"mean {r.conn_rps_mean:.2f}, sd {r.conn_rps_sd:.2f}")
    yield from log_lines(r)
    if r.rate:
        yield (f"Target rate:            {r.rate:.2f} [#/sec]{' (mean)' if r.stages else ''}, "
               "latency from each request's intended start")
    if r.stages:
        yield "Load shape:             " + shape_text(r.stages)
    if r.concurrency_stages:
        yield "Connections shape:      " + shape_text(r.concurrency_stages, "")
    yield ""
    yield "Connection Times (ms)"
    yield f"{'':<12}{'min':>9}{'mean':>9}{'[+/-sd]':>8}{'median':>9}{'max':>9}"
    if r.tls_handshake.count:
        # Connect is per request, as ab's (a kept-alive request's is 0, and
        # it includes the handshake); Handshake per handshake done.
        yield _row("Connect:", r.connect_time) + f"  (per request, n={r.connect_time.count:,})"
        yield (_row("Handshake:", r.tls_handshake)
               + f"  (per handshake, n={r.tls_handshake.count:,})")
    else:
        yield _row("Connect:", r.connect_time)
    yield _row("Processing:", r.processing)
    yield _row("Waiting:", r.waiting)
    yield _row("Total:", r.latency_uncorrected)
    yield ""
    cover = percentiles_cover(r)
    if cover:
        yield cover
    if r.rate:
        yield "Percentage of the requests served within a certain time (ms)"
        yield f"{'':>8}{'corrected':>12}{'uncorrected':>13}"
        for p in PERCENTILES:
            tail = " (longest request)" if p == 100 else ""
            yield (f"{percent_label(p):>7}%{_cell(r.latency, p):>12}"
                   f"{_cell(r.latency_uncorrected, p):>13}{tail}")
    else:
        yield "Percentage of the requests served within a certain time (ms)"
        for p in PERCENTILES:
            tail = " (longest request)" if p == 100 else ""
            yield f"{percent_label(p):>7}%{_cell(r.latency, p):>10}{tail}"
    if r.client is not None:
        yield ""
        yield from client_lines(r)
    if r.by_name:
        yield ""
        yield from _by_name_lines(r)
    if r.workers:
        yield ""
        yield from _worker_lines(r)


def tls_lines(r: Result) -> Iterable[str]:
    """ab's lines about the TLS session, when there was one."""
    if r.tls_protocol:
        yield f"SSL/TLS Protocol:       {r.tls_protocol}"
        if r.tls_temp_key:
            yield f"Server Temp Key:        {r.tls_temp_key}"
        if r.tls_server_name:
            yield f"TLS Server Name:        {r.tls_server_name}"


# The least CPU time whose user and system shares are shown. The kernel
# knows a thread's CPU time to the nanosecond but splits it by sampling at
# its ticks: measured here (GET /rnd?c=2048 on one connection), runs of 3 ms
# of CPU read "user 16.09 + system 0.00", runs of 30-50 ms anything from
# 13% to 50% user, runs of 0.4 s 24-28% each time.
SPLIT_MIN_CPU = 0.2


def cpu_line(r: Result) -> str:
    """The client's CPU per complete request (at least one); its user and
    system shares when there was CPU time enough to tell them apart."""
    line = f"Client CPU per request: {r.cpu_time / r.complete * 1e6:.2f} [us]"
    if r.cpu_time < SPLIT_MIN_CPU:
        return line + (f" (user and system not told apart in {r.cpu_time * 1e3:.1f} ms of "
                       "CPU: the kernel splits them by its ticks)")
    return (line + f" (user {r.cpu_user / r.complete * 1e6:.2f} + system "
            f"{r.cpu_sys / r.complete * 1e6:.2f})")


def log_lines(r: Result) -> Iterable[str]:
    """The request log's line and an interrupted run's."""
    if r.log:
        dropped = f", {r.log_dropped} dropped" if r.log_dropped else ""
        why = f" ({r.log_error})" if r.log_error else ""
        yield f"Request log:            {r.log}: {r.log_records} records{dropped}{why}"
    if r.interrupted:
        yield "Interrupted:            the run was stopped before its end"


def mode_additions(r: Result, rate_from: str, words: Words) -> Iterable[str]:
    """httpbench's lines after another tool's report (wrk's, hey's): what
    an open loop's latency runs from (rate_from: the tool's words for the
    rate), what the percentiles cover, the failures by class and the
    first, the requests cancelled, the log and the client's figures (its
    advice in words: the tool's flags)."""
    if r.rate:
        yield (f"Latency from each request's intended start at {r.rate:,.2f} [#/sec] "
               f"({rate_from}): corrected p99 {r.latency.p99 * 1e3:.3f} ms, uncorrected "
               f"{r.latency_uncorrected.p99 * 1e3:.3f} ms")
    cover = percentiles_cover(r)
    if cover:
        yield cover
    if r.failed:
        yield ("Failed requests by class: "
               + ", ".join(f"{c} {n}" for c, n in r.failures.items() if n))
        if r.first_error:
            yield f"First failure: {r.first_error}"
    if r.cancelled:
        yield f"Cancelled requests: {r.cancelled} (in flight when the run ended)"
    yield from log_lines(r)
    if r.client is not None:
        yield from client_lines(r, words)


def check_statuses(r: Result) -> str:
    """The statuses of the answers whose checks failed, by request name
    where a scenario names them ("me: 401 x20; admin: 403 x20"): those
    outside 2xx of each name whose check failed, or all its statuses
    where all were 2xx (a check of the body or a header failed)."""
    named = [(n, x) for n, x in r.by_name.items() if x.failures.get("check")] or [("", r)]
    parts = []
    for name, x in named:
        codes = {c: k for c, k in x.status_counts.items() if not 200 <= c <= 299} or \
            x.status_counts
        said = ", ".join(f"{c} x{k:,}" for c, k in sorted(codes.items())) or "none answered"
        parts.append(f"{name}: {said}" if name else said)
    return "; ".join(parts)


def percentiles_cover(r: Result) -> str:
    """Under a rate, when due requests were never sent, what the
    percentiles cover: "" otherwise."""
    c = r.client
    if c is None or not c.unsent:
        return ""
    why = f": all {r.concurrency} connections were busy" if c.reason == "connections" else ""
    return (f"({c.unsent:,} due requests were never sent{why}; the percentiles cover the "
            f"{r.issued:,} sent)")


def client_lines(r: Result, words: Words = PLAIN) -> Iterable[str]:
    """The client's own figures (Result.client), after ab's block: how busy
    its threads were, how it kept its schedule, the rate it reached
    against the target, and a warning when it bound the run (its advice
    in words)."""
    c = r.client
    assert c is not None
    line = f"Client:                 CPU {c.cpu:.0%}, busy {c.busy:.0%} (busiest thread " \
           f"{c.busy_max:.0%})"
    if c.late_p99 is not None and c.late_p50 is not None:
        on = "on schedule" if c.reason not in ("connections", "schedule") else "behind schedule"
        line += f", {on} (late p50 {c.late_p50 * 1e3:.3f} ms, p99 {c.late_p99 * 1e3:.3f} ms)"
        if c.late_busy:
            line += f"; {c.late_busy:,} started late behind a busy connection"
    yield line
    target = _target_rate(r)
    if target and (c.unsent or c.reason == "connections"):
        yield (f"Rate reached:           {r.rps:,.2f} [#/sec] of {target:,.2f} asked "
               f"({r.rps / target:.0%})")
    if c.bound:
        yield f"Warning: {c.warning(words)}."
    elif server_paced(c, r.issued):
        yield (f"Every connection was waiting on the server when requests fell due: the server "
               f"set the pace ({c.late_busy:,} started late behind a busy connection, their "
               "latency counted from their intended start; the client sent every request)")


def _target_rate(r: Result) -> float:
    """The rate asked for over the run: the rate, or a shape's mean."""
    if r.stages:
        length = sum(s for s, _ in r.stages)
        return sum(s * (a + b) / 2 for (s, b), a in
                   zip(r.stages, [0.0] + [b for _, b in r.stages], strict=False)) / length \
            if length else 0.0
    return r.rate or 0.0


def _worker_lines(r: Result) -> Iterable[str]:
    """A row per worker of a run over a cluster (times in ms)."""
    wa = max(7, *(len(w.address) for w in r.workers))
    wh = max(4, *(len(w.host) for w in r.workers))
    yield "Workers (times in ms)"
    yield (f"{'Address':<{wa}}  {'Host':<{wh}}{'Conns':>7}{'Complete':>10}{'Failed':>8}"
           f"{'Req/s':>11}{'p99':>9}  State")
    for w in r.workers:
        x = w.result
        p99 = _ms(x.latency.p99) if x.latency.count else "-"
        state = "ok" if not w.lost else f"lost: {w.error}" + (
            f" ({w.not_run} not run)" if w.not_run else "")
        yield (f"{w.address:<{wa}}  {w.host:<{wh}}{w.concurrency:>7}{x.complete:>10}"
               f"{x.failed:>8}{x.rps:>11.2f}{p99:>9}  {state}")


# The per-request table's columns: heading, width, and the cell from the
# request's name and Result (Locust's table, times in ms).
def _count(x: Result) -> int:
    """A table row's requests: complete and failed (not those cancelled)."""
    return x.complete + x.failed


def _table_rps(x: Result, whole: Result) -> float:
    """A row's requests over the whole run's time: the rows add up to the
    aggregate."""
    return _count(x) / whole.time_taken if whole.time_taken > 0 else 0.0


_BY_NAME_COLUMNS: tuple[tuple[str, int, Callable[[Result, Result], str]], ...] = (
    ("Count", 9, lambda x, r: str(_count(x))),
    ("Failed", 8, lambda x, r: str(x.failed)),
    ("Req/s", 10, lambda x, r: f"{_table_rps(x, r):.2f}"),
    ("Mean", 9, lambda x, r: _ms(x.latency.mean) if x.latency.count else "-"),
    ("p50", 9, lambda x, r: _ms(x.latency.p50) if x.latency.count else "-"),
    ("p99", 9, lambda x, r: _ms(x.latency.p99) if x.latency.count else "-"),
    ("Max", 9, lambda x, r: _ms(x.latency.max) if x.latency.count else "-"),
)


def by_name_rows(r: Result) -> list[dict[str, Any]]:
    """The per-request table as rows (name, method, target, count, failed,
    rps, and mean, p50, p99, max in seconds), each request's then the
    whole run's ("Aggregated", as Locust names it)."""
    rows = []
    for name, x in [*r.by_name.items(), ("Aggregated", r)]:
        lat = x.latency
        rows.append({"name": name, "method": x.method if x is not r else "",
                     "target": x.path if x is not r else "", "count": _count(x),
                     "failed": x.failed, "rps": _table_rps(x, r),
                     **{k: getattr(lat, k) if lat.count else None
                        for k in ("mean", "p50", "p99", "max")}})
    return rows


def _by_name_lines(r: Result) -> Iterable[str]:
    """Locust's table: a row per request of the scenario, then the total."""
    cells = [(n, x.method if x is not r else "", x.path if x is not r else "", x)
             for n, x in [*r.by_name.items(), ("Aggregated", r)]]
    wn = max(4, *(len(c[0]) for c in cells))
    wm = max(6, *(len(c[1]) for c in cells))
    wt = max(6, *(len(c[2]) for c in cells))
    yield "Requests by name (times in ms)"
    yield (f"{'Name':<{wn}}  {'Method':<{wm}}  {'Target':<{wt}}" +
           "".join(f"{h:>{w}}" for h, w, _ in _BY_NAME_COLUMNS))
    for n, m, t, x in cells:
        if x is r:
            yield "-" * (wn + wm + wt + 4 + sum(w for _, w, _ in _BY_NAME_COLUMNS))
        yield f"{n:<{wn}}  {m:<{wm}}  {t:<{wt}}" + "".join(
            f"{cell(x, r):>{w}}" for _, w, cell in _BY_NAME_COLUMNS)


def shape_text(stages: list[tuple[float, float]], unit: str = "/s") -> str:
    """ "10 s to 100/s, 30 s at 100/s, 10 s to 0/s" """
    parts, previous = [], 0.0
    for secs, r in stages:
        parts.append(f"{secs:g} s {'at' if r == previous else 'to'} {r:g}{unit}")
        previous = r
    return ", ".join(parts)


def in_flight(r: Result) -> int:
    """The requests a closed loop keeps in flight at once (ab's
    concurrency): each connection's streams (no more than the server
    allowed) or its pipeline's depth, times the connections."""
    each = max(r.pipeline, r.streams if r.http_version == "2" else 1)
    if r.http_version == "2" and r.streams_allowed is not None:
        each = min(each, r.streams_allowed)
    most = r.concurrency * max(1, each)
    # No more than were issued: `-n 5 -c 50` has 5 in flight, not 50.
    return min(most, r.issued) if r.issued > 0 else most


def streams_allowed(r: Result) -> str:
    """The server's stream limit as the report words it: a number, or
    "unlimited" (its SETTINGS set none), or "no SETTINGS heard"."""
    if r.streams_allowed is not None:
        return str(r.streams_allowed)
    return "unlimited" if r.streams_unlimited else "(no SETTINGS heard)"


def non_2xx_text(r: Result) -> str:
    """The non-2xx responses by status: "100 (500: 60, 503: 40)". A response
    that failed a check is failed, not non-2xx; its status is still among
    the statuses, and the line says so when that makes them differ."""
    counts = {code: n for code, n in sorted(r.status_counts.items()) if not 200 <= code < 300}
    codes = ", ".join(f"{code}: {n}" for code, n in counts.items())
    if codes and sum(counts.values()) != r.non_2xx:
        codes = f"statuses of every response, failed checks too: {codes}"
    return f"{r.non_2xx} ({codes})" if codes else str(r.non_2xx)


def percent_label(p: float) -> str:
    return f"{p:g}" if not math.isclose(p, round(p)) else str(int(p))
