"""`httpbench hey`'s report: hey 0.1.4's layout (its requester's print.go
and report.go: the summary, a ten-step response-time histogram, the
latency distribution, the details, the status codes and errors), then,
after a blank line, what httpbench adds."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..hints import Words
from .text import mode_additions

if TYPE_CHECKING:
    from ..result import Latency, Result

__all__ = ["hey_report", "HEY_PERCENTILES"]

# hey's "Latency distribution" rows.
HEY_PERCENTILES = (10, 25, 50, 75, 90, 95, 99)
# hey's histogram: ten steps of equal width from the fastest to the slowest.
_STEPS = 10


def _n(seconds: float) -> str:
    """hey's formatNumber: Go's %4.4f, which writes NaN as " NaN" (the
    mean of no requests)."""
    return " NaN" if math.isnan(seconds) else f"{seconds:4.4f}"


def _picks(n: int) -> list[tuple[int, int]]:
    """hey's percentile rows (report.go's latencies) for n latencies, as
    (percentile, rank from 1; 0: none): walking them sorted, the i-th (from
    0) serves the next percentile p once i * 100 / n (in integers) reaches
    p, one percentile each, so under 100 some rows get none (hey prints
    those `0% in 0.0000 secs`) and the others a later rank than p's."""
    picks, i = [], 0
    for p in HEY_PERCENTILES:
        i = max(i, -(-p * n // 100))  # the first i with i * 100 // n >= p
        picks.append((p, i + 1 if i < n else 0))
        i += 1
    return picks


def _ranked(lat: Latency, rank: int) -> float:
    """The rank-th fastest (from 1), within the histogram's 0.4%: the
    percentile whose rank it is (rounded down to a ppm, its rank stays)."""
    return lat.percentile(rank * 10**6 // lat.count / 1e4)


def _histogram(lat: Latency) -> list[tuple[float, int]]:
    """(mark, count) for hey's eleven marks: the fastest, then ten equal
    steps to the slowest; a request counts at the first mark at or above
    it. From the run's histogram, each bucket by its middle (the figures
    are within its 0.4%), but for the fastest and the slowest requests,
    which are the first and last marks exactly: hey's first mark counts
    the fastest, its last the slowest, so neither is ever empty."""
    fastest, slowest = lat.min, lat.max
    width = (slowest - fastest) / _STEPS
    marks = [fastest + width * i for i in range(_STEPS)] + [slowest]
    counts = [0] * len(marks)

    def count(value: float, n: int) -> None:
        i = next((k for k, m in enumerate(marks) if value <= m), len(marks) - 1)
        counts[i] += n

    buckets = list(lat.buckets())
    last = len(buckets) - 1
    for b, (lo, hi, n) in enumerate(buckets):
        # The lowest bucket holds the fastest request, the highest the
        # slowest: each counted at its own figure, the rest by the middle.
        exact = (([fastest] if b == 0 else [])
                 + ([slowest] if b == last and lat.count > 1 else []))[:n]
        for v in exact:
            count(v, 1)
        count(min(max((lo + hi) / 2, fastest), slowest), n - len(exact))
    return list(zip(marks, counts, strict=True))


def _detail(label: str, part: Latency) -> str:
    if not part.count:
        return f"  {label}:\t{_n(math.nan)} secs, 0.0000 secs, 0.0000 secs"
    return f"  {label}:\t{_n(part.mean)} secs, {_n(part.min)} secs, {_n(part.max)} secs"


def hey_report(r: Result, words: Words) -> str:
    """hey's report, then httpbench's lines (their advice in words: hey's
    flags)."""
    return "\n".join(_lines(r, words)) + "\n"


def _lines(r: Result, words: Words) -> Iterable[str]:
    lat = r.latency_uncorrected if not r.rate else r.latency
    done = r.complete + r.failed
    yield ""
    yield "Summary:"
    yield f"  Total:\t{_n(r.time_taken)} secs"
    yield f"  Slowest:\t{_n(lat.max if lat.count else 0)} secs"
    yield f"  Fastest:\t{_n(lat.min if lat.count else 0)} secs"
    yield f"  Average:\t{_n(lat.mean if lat.count else math.nan)} secs"
    yield f"  Requests/sec:\t{_n(done / r.time_taken if r.time_taken > 0 else 0.0)}"
    yield "  "
    if r.body_bytes > 0:
        yield f"  Total data:\t{r.body_bytes} bytes"
        yield f"  Size/request:\t{r.body_bytes // max(r.complete, 1)} bytes"
    yield ""
    yield "Response time histogram:"
    if lat.count:
        marks = _histogram(lat)
        most = max(n for _, n in marks) or 1
        for mark, n in marks:
            yield f"  {mark:4.3f} [{n}]\t|{'■' * ((n * 40 + most // 2) // most)}"
    yield ""
    yield ""
    yield "Latency distribution:"
    for p, rank in _picks(lat.count) if lat.count else ():
        yield f"  {p if rank else 0}% in {_n(_ranked(lat, rank) if rank else 0.0)} secs"
    yield ""
    yield "Details (average, fastest, slowest):"
    yield _detail("DNS+dialup", r.connect_time)
    # The name is resolved once, before the run: no request waits on it
    # (hey's mean of no requests is NaN, as the others').
    yield f"  DNS-lookup:\t{_n(0.0 if lat.count else math.nan)} secs, 0.0000 secs, 0.0000 secs"
    yield "  req write:\t-, -, -  (not measured apart: inside resp wait)"
    yield _detail("resp wait", r.waiting)
    # Reading the rest of the response: the total less its connect and the
    # wait for its first byte (means only: the three are not paired per
    # request; from the send, not the intended start, under a rate too).
    sent = r.latency_uncorrected
    read = (max(sent.mean - r.connect_time.mean - r.waiting.mean, 0.0)
            if sent.count and r.waiting.count else math.nan)
    yield f"  resp read:\t{_n(read)} secs, -, -"
    yield ""
    yield "Status code distribution:"
    for code, n in sorted(r.status_counts.items()):
        if n:
            yield f"  [{code}]\t{n} responses"
    yield ""
    if r.failed:
        # By httpbench's failure classes (hey's are Go's error strings; the
        # first failure's words follow httpbench's lines).
        yield "Error distribution:"
        for cls, n in r.failures.items():
            if n:
                yield f"  [{n}]\t{cls}"
    yield ""
    yield (f"Requests: {r.issued} issued, {r.complete} complete, {r.failed} failed; "
           f"{r.bytes_received} bytes received in all (headers too)")
    yield from mode_additions(r, "-q x -c", words)
