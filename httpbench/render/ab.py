"""`httpbench ab`'s report: ApacheBench 2.3's lines, only those and in its
order (ab.c's output_results), so that a script that greps ab's output
finds each where ab puts it; then, after a blank line, what httpbench adds
(the failure classes ab has no line for, the percentiles past 99%, the
client's own figures)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..hints import Words
from .text import (_ms, _row, client_lines, cpu_line, log_lines, non_2xx_text, percent_label,
                   percentiles_cover, tls_handshake_lines, tls_lines)

if TYPE_CHECKING:
    from ..result import Result

__all__ = ["AbLayout", "ab_report", "AB_PERCENTILES"]

# ab's "Percentage of the requests served within a certain time" rows.
AB_PERCENTILES = (50, 66, 75, 80, 90, 95, 98, 99, 100)
# The failure classes ab has a word for, in its order.
_AB_CLASSES = ("connect", "receive", "length", "exceptions")


@dataclasses.dataclass(frozen=True)
class AbLayout:
    """What ab's flags change in its report: keepalive (-k: the Keep-Alive
    line), confidence (not -S: mean, sd and median, and the warnings),
    percentiles (not -d: the table), variable (-l: "Variable" length),
    body (-p, -u: the body sent and the rates sent and in all)."""

    keepalive: bool = False
    confidence: bool = True
    percentiles: bool = True
    variable: bool = False
    body: bool = False


def ab_report(r: Result, layout: AbLayout, words: Words) -> str:
    """ab's report, then httpbench's lines (their advice in words: ab's
    flags)."""
    return ("\n".join(_ab_lines(r, layout)) + "\n" + "\n".join(_additions(r, layout, words))
            + "\n")


def _ab_lines(r: Result, layout: AbLayout) -> Iterable[str]:
    yield f"Server Software:        {r.server_software}"
    yield f"Server Hostname:        {r.host}"
    yield f"Server Port:            {r.port}"
    yield from tls_lines(r)
    yield ""
    yield f"Document Path:          {r.path}"
    if layout.variable:
        yield "Document Length:        Variable"
    else:
        doc = r.document_length
        yield f"Document Length:        {doc if doc is not None else 0} bytes"
    yield ""
    yield f"Concurrency Level:      {r.concurrency}"
    yield f"Time taken for tests:   {r.time_taken:.3f} seconds"
    yield f"Complete requests:      {r.complete}"
    yield f"Failed requests:        {r.failed}"
    if r.failed:
        f = r.failures
        yield (f"   (Connect: {f['connect']}, Receive: {f['receive']}, Length: {f['length']}, "
               f"Exceptions: {f['exceptions']})")
    if r.non_2xx:
        yield f"Non-2xx responses:      {r.non_2xx}"
    if layout.keepalive:
        yield f"Keep-Alive requests:    {r.keepalive_requests}"
    yield f"Total transferred:      {r.bytes_received} bytes"
    if layout.body:
        yield f"Total body sent:        {r.bytes_sent}"
    yield f"HTML transferred:       {r.body_bytes} bytes"
    if r.time_taken > 0 and r.complete:
        per = r.time_taken / r.complete
        yield f"Requests per second:    {r.complete / r.time_taken:.2f} [#/sec] (mean)"
        yield f"Time per request:       {per * r.concurrency * 1e3:.3f} [ms] (mean)"
        yield (f"Time per request:       {per * 1e3:.3f} [ms] (mean, across all concurrent "
               "requests)")
        yield (f"Transfer rate:          {r.bytes_received / 1024 / r.time_taken:.2f} "
               "[Kbytes/sec] received")
        if layout.body:
            yield f"                        {r.bytes_sent / 1024 / r.time_taken:.2f} kb/s sent"
            total = (r.bytes_received + r.bytes_sent) / 1024 / r.time_taken
            yield f"                        {total:.2f} kb/s total"
    if not r.complete:
        return
    yield ""
    yield "Connection Times (ms)"
    rows = (("Connect:", r.connect_time), ("Processing:", r.processing),
            ("Waiting:", r.waiting), ("Total:", r.latency_uncorrected))
    if layout.confidence:
        yield f"{'':<12}{'min':>9}{'mean':>9}{'[+/-sd]':>8}{'median':>9}{'max':>9}"
        for label, lat in rows:
            yield _row(label, lat)
        for what, (_, lat) in zip(("the initial connection time", "the processing time",
                                   "the waiting time", "the total time"), rows, strict=True):
            yield from _sane(what, lat.mean, lat.p50, lat.stdev)
    else:
        yield f"{'':<12}{'min':>9}{'avg':>9}{'max':>9}"
        for label, lat in rows:
            yield f"{label:<12}{_ms(lat.min):>9}{_ms(lat.mean):>9}{_ms(lat.max):>9}"
    if layout.percentiles:
        yield ""
        yield "Percentage of the requests served within a certain time (ms)"
        for p in AB_PERCENTILES:
            tail = " (longest request)" if p == 100 else ""
            yield f"{percent_label(p):>7}%{_ms(r.latency.percentile(p)):>10}{tail}"


def _sane(what: str, mean: float, median: float, sd: float) -> Iterable[str]:
    """ab's warning when a mean and its median lie more than one standard
    deviation apart (its SANE macro), in milliseconds as ab compares them."""
    d = abs(mean - median) * 1e3
    if d > 2 * sd * 1e3:
        yield (f"ERROR: The median and mean for {what} are more than twice the standard\n"
               "       deviation apart. These results are NOT reliable.")
    elif d > sd * 1e3:
        yield (f"WARNING: The median and mean for {what} are not within a normal deviation\n"
               "        These results are probably not that reliable.")


def _additions(r: Result, layout: AbLayout, words: Words) -> Iterable[str]:
    """httpbench's lines, after ab's block and a blank line."""
    yield ""
    f = r.failures
    others = {c: n for c, n in f.items() if n and c not in _AB_CLASSES}
    if others:
        yield ("Failed, by the classes ab has no word for: "
               + ", ".join(f"{c} {n}" for c, n in others.items()))
    if r.non_2xx:
        yield f"Non-2xx responses by status: {non_2xx_text(r)}"
    if r.cancelled:
        yield f"Cancelled requests:     {r.cancelled} (in flight when the run ended)"
    yield from tls_handshake_lines(r)
    if r.complete:
        yield cpu_line(r)
        tail = [p for p in (99.9, 99.99) if layout.percentiles]
        if tail:
            yield ("Served within (ms):     "
                   + ", ".join(f"{percent_label(p)}% {_ms(r.latency.percentile(p))}"
                               for p in tail))
    cover = percentiles_cover(r)
    if cover:
        yield cover
    yield from log_lines(r)
    if r.first_error and r.failed:
        yield f"First failure:          {r.first_error}"
    if r.client is not None:
        yield from client_lines(r, words)
