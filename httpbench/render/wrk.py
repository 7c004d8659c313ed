"""`httpbench wrk`'s report: wrk 4.1's layout (wrk.c's main and units.c's
formats), then, after a blank line, what httpbench adds (what the latency
is measured from, the failure classes, the client's own figures)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ..hints import Words
from .text import mode_additions

if TYPE_CHECKING:
    from ..result import Latency, Result

__all__ = ["wrk_report", "header", "format_units", "format_time_us", "format_time_s",
           "format_binary", "format_metric", "WRK_PERCENTILES"]

# --latency's rows.
WRK_PERCENTILES = (50, 75, 90, 99)

_TIME_US = (1000, "us", ("ms", "s"))
_TIME_S = (60, "s", ("m", "h"))
_BINARY = (1024, "", ("K", "M", "G", "T", "P"))
_METRIC = (1000, "", ("k", "M", "G", "T", "P"))


def format_units(n: float, units: tuple[int, str, tuple[str, ...]], places: int) -> str:
    """wrk's format_units: divided by the scale while at least 0.85 of it,
    to the second-last unit at most, with `places` decimals."""
    scale, unit, names = units
    amount = float(n)
    for i in range(len(names) - 1):
        if amount < scale * 0.85:
            break
        amount /= scale
        unit = names[i]
    return f"{amount:.{places}f}{unit}"


def format_time_us(us: float) -> str:
    if us >= 1e6:
        return format_units(us / 1e6, _TIME_S, 2)
    return format_units(us, _TIME_US, 2)


def format_time_s(s: float) -> str:
    return format_units(s, _TIME_S, 0)


def format_binary(n: float) -> str:
    return format_units(n, _BINARY, 2)


def format_metric(n: float) -> str:
    return format_units(n, _METRIC, 2)


def _cell(text: str, width: int) -> str:
    """wrk's print_units: right-aligned, the unit's letters taking the
    padding's place."""
    pad = 2 - sum(1 for ch in text[-2:] if ch.isalpha())
    return f"{text:>{width - pad}}" + " " * pad


def _within_stdev(lat: Latency, mean: float, sd: float) -> float:
    """The share of requests within one standard deviation of the mean, in
    percent, from the histogram (a bucket counts by its middle)."""
    if not lat.count:
        return math.nan  # (wrk's 0 / 0)
    if sd == 0:
        return 100.0  # every one is the mean
    lo, hi = mean - sd, mean + sd
    inside = sum(n for a, b, n in lat.buckets() if lo <= (a + b) / 2 <= hi)
    return 100.0 * inside / lat.count


def _rates(r: Result, threads: int) -> list[float]:
    """Req/Sec's samples: each whole second's completions over the threads
    (wrk samples each thread every 100 ms; the loop keeps the run's
    seconds, so each is the mean thread's rate in that second). wrk takes
    no sample while a thread completed nothing, its time going into the
    next one's: a second with none here joins the next."""
    seconds = r.timeline[:-1] if len(r.timeline) > 1 else r.timeline
    rates, waited = [], 0
    for s in seconds:
        waited += 1
        if s.complete:
            rates.append(s.complete / waited / max(threads, 1))
            waited = 0
    return rates


def _stats_row(name: str, mean: float, sd: float, most: float, within: float,
               fmt: Callable[[float], str]) -> str:
    share = "-nan" if math.isnan(within) else f"{within:.2f}"  # (glibc's 0 / 0)
    return (f"    {name:<10}{_cell(fmt(mean), 8)}{_cell(fmt(sd), 10)}{_cell(fmt(most), 9)}"
            f"{share:>8}%")


def wrk_report(r: Result, duration: float, threads: int, connections: int,
               latency: bool, words: Words) -> str:
    """wrk's report, then httpbench's lines (their advice in words: wrk's
    flags)."""
    return "\n".join(_lines(r, duration, threads, connections, latency, words)) + "\n"


def header(url: str, duration: float, threads: int, connections: int) -> str:
    """wrk's two lines before the run."""
    # (wrk takes whole seconds; another -d, taken here, read "0s" for 0.5
    # and "2s" for 1.5.)
    length = (format_time_s(duration) if duration == int(duration) else
              f"{duration:g}s" if duration >= 1 else f"{duration * 1e3:g}ms")
    return (f"Running {length} test @ {url}\n"
            f"  {threads} threads and {connections} connections\n")


def _lines(r: Result, duration: float, threads: int, connections: int,
           latency: bool, words: Words) -> Iterable[str]:
    # wrk times a request from its write, its connection made (wrk.c's
    # c->start, set once connected): the send here, a connection's first
    # request without its connect (and TLS handshake), which httpbench's
    # own latency counts (ab's habit): processing, total less connect.
    # Under a rate (wrk2's -R), from each request's intended start.
    lat = r.latency if r.rate else r.processing
    yield f"  Thread Stats{'Avg':>6}{'Stdev':>11}{'Max':>8}{'+/- Stdev':>12}"
    mean, sd = lat.mean * 1e6, lat.stdev * 1e6
    yield _stats_row("Latency", mean, sd, lat.max * 1e6,
                     _within_stdev(lat, lat.mean, lat.stdev), format_time_us)
    rates = _rates(r, threads)
    if rates:
        m = sum(rates) / len(rates)
        s = math.sqrt(sum((x - m) ** 2 for x in rates) / (len(rates) - 1)) \
            if len(rates) > 1 else 0.0
        within = 100.0 * sum(1 for x in rates if m - s <= x <= m + s) / len(rates)
        yield _stats_row("Req/Sec", m, s, max(rates), within, format_metric)
    else:
        yield _stats_row("Req/Sec", 0, 0, 0, math.nan, format_metric)
    if latency:
        yield "  Latency Distribution"
        for p in WRK_PERCENTILES:
            yield f"{p:7.0f}%{_cell(format_time_us(lat.percentile(p) * 1e6), 10)}"
    taken = format_time_us(r.time_taken * 1e6)
    yield f"  {r.complete} requests in {taken}, {format_binary(r.bytes_received)}B read"
    f = r.failures
    # wrk counts a failed TLS handshake a connect error, a record refused
    # on an open connection a read error (one request a connection: no
    # pipelining here).
    shakes = min(r.tls_failed_handshakes, f["tls"])
    connect = f["connect"] + shakes
    read = f["receive"] + f["length"] + f["exceptions"] + f["reset"] + f["tls"] - shakes
    timeout = f["timeout"]
    if connect or read or timeout:
        yield f"  Socket errors: connect {connect}, read {read}, write 0, timeout {timeout}"
    errors = sum(n for code, n in r.status_counts.items() if code > 399)
    if errors:
        yield f"  Non-2xx or 3xx responses: {errors}"
    rps = r.complete / r.time_taken if r.time_taken > 0 else 0.0
    bps = r.bytes_received / r.time_taken if r.time_taken > 0 else 0.0
    yield f"Requests/sec: {rps:9.2f}"
    yield f"Transfer/sec: {format_binary(bps):>10}B"
    yield ""
    yield from mode_additions(r, "as wrk2's -R", words)
