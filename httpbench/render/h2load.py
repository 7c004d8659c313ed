"""`httpbench h2load`'s report: h2load 1.52's layout (its h2load.cc: over
TLS the first connection's protocol, cipher, key exchange and ALPN
protocol; the "finished in" line, the requests, the status codes, the
traffic with the header space savings, and the min/max/mean/sd/+/- sd
table), then, after a blank line, what httpbench adds."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..hints import Words
from .text import mode_additions

if TYPE_CHECKING:
    from ..result import Latency, Result

__all__ = ["h2load_report", "app_info_lines", "format_duration", "utos_funit", "dtos"]


def format_duration(seconds: float) -> str:
    """h2load's util::format_duration: whole microseconds below 1 ms, else
    milliseconds or seconds with two decimals."""
    if seconds >= 1.0:
        return f"{seconds:.2f}s"
    if seconds >= 0.001:
        return f"{seconds * 1e3:.2f}ms"
    return f"{round(seconds * 1e6)}us"


def utos_funit(n: float) -> str:
    """h2load's util::utos_funit: K, M or G of 1024 with two decimals, or
    the whole number below 1024."""
    for shift, unit in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.2f}{unit}"
    return str(int(n))


def _within_sd(lat: Latency, mean: float, sd: float, skip_zero: bool = False) -> float:
    """The share of values within one standard deviation of the mean, in
    percent, from the histogram (each bucket by its middle)."""
    buckets = [(a, b, n) for a, b, n in lat.buckets() if not (skip_zero and b <= 1e-9)]
    total = sum(n for _, _, n in buckets)
    if not total:
        return 0.0
    inside = sum(n for a, b, n in buckets if mean - sd <= (a + b) / 2 <= mean + sd)
    return 100.0 * inside / total


def _stat_row(label: str, w: Latency) -> str:
    """A row of the table from a histogram: min, max, mean, sd and the
    share within one sd (0us throughout with no value)."""
    cells = [format_duration(x) for x in (w.min, w.max, w.mean, w.stdev)] if w.count \
        else ["0us"] * 4
    return _row(label, cells, _within_sd(w, w.mean, w.stdev))


def h2load_report(r: Result, words: Words, app_info: bool = True, warmup: float = 0.0) -> str:
    """The report; app_info False: without the first connection's lines
    (the mode printed them as it opened); warmup: the seconds of
    --warm-up-time run before the result's part, which h2load's
    "finished in" holds (its wall time from start to stop: h2load.cc's
    `end - start`) and its req/s and B/s do not (over -D's duration)."""
    return "\n".join(_lines(r, words, app_info, warmup)) + "\n"


def dtos(x: float) -> str:
    """h2load's util::dtos: two decimals, the hundredths rounded half away
    from zero (llround), for a value not below 0."""
    m = math.floor(100 * x + 0.5)
    return f"{m // 100}.{m % 100:02d}"


def _row(label: str, cells: Iterable[str], within: float | None) -> str:
    """A row of the table as h2load 1.52 writes it (each cell set in 10
    columns, two spaces between, the +/- sd in 9 and a %); within None:
    not known (a result saved before schema 16), a - where the % goes."""
    tail = f"{dtos(within):>9}%" if within is not None else f"{'-':>10}"
    return f"{label:<16}: " + "  ".join(f"{c:>10}" for c in cells) + tail


def app_info_lines(tls_protocol: str, tls_temp_key: str, protocol: str) -> list[str]:
    """h2load's lines for its first connection (print_app_info), printed as
    it opens: over TLS (tls_protocol as ab prints it, "TLSv1.3,CIPHER,...")
    the protocol, the cipher and the server's key exchange; then the
    application protocol (h2 or http/1.1 by ALPN, h2c in clear)."""
    lines = []
    if tls_protocol:
        version, cipher = (tls_protocol.split(",") + [""])[:2]
        lines += [f"TLS Protocol: {version}", f"Cipher: {cipher}"]
        if tls_temp_key:
            lines.append(f"Server Temp Key: {tls_temp_key}")
    return lines + [f"Application protocol: {protocol}"]


def _tls_lines(r: Result) -> Iterable[str]:
    """app_info_lines from a result (a connection known to have opened)."""
    if not r.tls_protocol and r.complete == 0:
        return []  # (no connection known to have opened)
    h2 = "h2" if r.tls_protocol else "h2c"
    return app_info_lines(r.tls_protocol, r.tls_temp_key,
                          h2 if r.http_version == "2" else "http/1.1")


def _lines(r: Result, words: Words, app_info: bool, warmup: float) -> Iterable[str]:
    t = r.time_taken
    rps = r.complete / t if t > 0 else 0.0
    if app_info:
        yield from _tls_lines(r)
    yield ""
    yield (f"finished in {format_duration(warmup + t)}, {rps:.2f} req/s, "
           f"{utos_funit(r.bytes_received / t if t > 0 else 0)}B/s")
    ok = sum(n for code, n in r.status_counts.items() if code < 400)
    bad_status = sum(n for code, n in r.status_counts.items() if code >= 400)
    timeout = r.failures.get("timeout", 0)
    errored = r.failed - timeout
    # A request whose connection never opened (its connect, a proxy's
    # tunnel or its TLS handshake failed) was never started, nor done, in
    # h2load's count (a client that cannot open fails its requests without
    # submitting them: Client::process_abandoned_streams). A result saved
    # before schema 17 has no such count: its connect class stands in.
    unsent = r.counts.get("unopened", r.failures.get("connect", 0))
    # Under -D h2load's total is the requests done (Worker::free_client):
    # those in flight at the end (cancelled) were started, not done.
    yield (f"requests: {r.issued - r.cancelled} total, {r.issued - unsent} started, "
           f"{r.complete + r.failed - unsent} done, "
           f"{ok} succeeded, {bad_status + r.failed} failed, {errored} errored, "
           f"{timeout} timeout")
    classes = [sum(n for code, n in r.status_counts.items() if lo <= code < lo + 100)
               for lo in (200, 300, 400, 500)]
    yield ("status codes: " + ", ".join(f"{n} {k}xx" for n, k in zip(classes, (2, 3, 4, 5),
                                                                     strict=True)))
    head = r.header_bytes_wire if r.http_version == "2" else r.bytes_received - r.body_bytes
    decoded = r.header_bytes_decoded if r.http_version == "2" else head
    savings = (1 - head / decoded) * 100 if decoded else 0.0
    yield (f"traffic: {utos_funit(r.bytes_received)}B ({r.bytes_received}) total, "
           f"{utos_funit(head)}B ({head}) headers (space savings {savings:.2f}%), "
           f"{utos_funit(r.body_bytes)}B ({r.body_bytes}) data")
    yield f"{'':<21}min         max         mean         sd        +/- sd"
    # h2load's request time runs from the request's submission, its
    # connection made (h2load.cc's request_time): the send here, its
    # connect (and over HTTP/2 the wait for the server's SETTINGS) left
    # out, which a connection's first request otherwise carries (ab's
    # habit, httpbench's own latency): processing, total less connect.
    yield _stat_row("time for request", r.processing)
    # h2load's next two are each client's, from its connect's start: to the
    # connection made, then to its first response byte (h2load.cc's
    # connect_time and ttfb, less connect_start_time).
    yield _stat_row("time for connect", r.conn_connect)
    yield _stat_row("time to 1st byte", r.conn_first_byte)
    yield _row("req/s", [f"{x:.2f}" for x in (r.conn_rps_min, r.conn_rps_max, r.conn_rps_mean,
                                              r.conn_rps_sd)], r.conn_rps_within)
    yield ""
    yield from mode_additions(r, "--rps x -c", words)
