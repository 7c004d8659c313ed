"""What a run measured: Result and its Latency, with ab's report layout."""

from __future__ import annotations

import dataclasses
import html
import json
import math
import platform
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ._core import Histogram
from ._version import __version__

__all__ = ["Latency", "Result", "Second", "WorkerPart", "FAILURE_CLASSES", "PERCENTILES",
           "SCHEMA", "OLDEST_SCHEMA"]

FAILURE_CLASSES = ("connect", "receive", "length", "exceptions", "timeout", "tls", "check",
                   "worker")
# The JSON layout's version: 2 added schema, start_time, named timeline
# fields and each latency's histogram as (value, count) pairs; 3 the tls
# failure class and the TLS figures (tls_*); 4 unix_socket, pipeline, proxy;
# 5 stages and concurrency_stages (load shapes); 6 the check failure class
# and a scenario's by_name (each request's figures, in this same layout); 7
# a run over a cluster's workers (workers, not_run, the worker class); 8
# time_taken under a rate or a shape is the schedule's length at least, and
# non_2xx counts complete responses only (one failing a check is failed).
SCHEMA = 8
# The oldest layout from_dict reads (1 had no `schema` and other names).
OLDEST_SCHEMA = 2
# ab's percentiles, with the tail it rounds away.
PERCENTILES = (50, 66, 75, 80, 90, 95, 98, 99, 99.9, 99.99, 100)


class Latency:
    """Latency figures in seconds, read from a Histogram of nanoseconds
    (within 0.4%; min, max and mean are exact)."""

    def __init__(self, histogram: Histogram | None = None) -> None:
        self.histogram = histogram if histogram is not None else Histogram()

    @property
    def count(self) -> int:
        return self.histogram.count

    @property
    def min(self) -> float:
        return self.histogram.min / 1e9

    @property
    def max(self) -> float:
        return self.histogram.max / 1e9

    @property
    def mean(self) -> float:
        return self.histogram.mean / 1e9

    @property
    def stdev(self) -> float:
        return self.histogram.stdev / 1e9

    def percentile(self, p: float) -> float:
        """The latency below which p percent (0..100) of requests completed."""
        return self.histogram.percentile(p) / 1e9

    @property
    def p50(self) -> float:
        return self.percentile(50)

    @property
    def p90(self) -> float:
        return self.percentile(90)

    @property
    def p99(self) -> float:
        return self.percentile(99)

    @property
    def p999(self) -> float:
        return self.percentile(99.9)

    def buckets(self) -> list[tuple[float, float, int]]:
        """(lower, upper, count) per histogram bucket in use, in seconds."""
        return [(lo / 1e9, hi / 1e9, n) for lo, hi, n in self.histogram.buckets()]

    def merge(self, other: Latency) -> None:
        self.histogram.merge(other.histogram)

    def to_pandas(self) -> Any:
        """The histogram as a DataFrame: lower, upper (seconds) and count per
        bucket in use (pandas imported here)."""
        return _pandas().DataFrame(self.buckets(), columns=["lower", "upper", "count"])

    def to_dict(self) -> dict[str, Any]:
        """Seconds throughout. `histogram` is [value, count] per bucket in
        use, value the bucket's highest (as HdrHistogram reports it), for a
        reader without httpbench; `state` is the exact form from_dict
        reads back."""
        return {
            "count": self.count, "min": self.min, "max": self.max, "mean": self.mean,
            "stdev": self.stdev,
            "percentiles": {str(p): self.percentile(p) for p in PERCENTILES},
            "histogram": [[(hi - 1) / 1e9, n] for _, hi, n in self.histogram.buckets()],
            "state": list(self.histogram.state()),
        }

    def to_hgrm(self, scale: float = 1e6, ticks_per_half: int = 5) -> str:
        """HdrHistogram's percentile distribution text (what wrk2 prints and
        HdrHistogram's plotter reads): Value (milliseconds unless `scale`,
        nanoseconds per unit, says otherwise), Percentile, TotalCount and
        1/(1-Percentile), then the mean, deviation, max and count."""
        h = self.histogram
        lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} "
                 f"{'1/(1-Percentile)':>14}", ""]
        buckets = h.buckets()
        total = h.count

        def at_or_below(v: int) -> int:
            return sum(n for lo, _, n in buckets if lo <= v)

        p = 0.0
        while total and p < 100.0 and (100.0 - p) / 100.0 * total >= 1.0:
            v = h.percentile(p)
            lines.append(f"{v / scale:12.3f} {p / 100:2.12f} {at_or_below(v):10d} "
                         f"{1 / (1 - p / 100):14.2f}")
            # HdrHistogram's percentile iterator: ticks_per_half steps in each
            # halving of the distance to 100%.
            halvings = int(math.log2(100.0 / (100.0 - p)))
            p += 100.0 / (ticks_per_half * 2 ** (halvings + 1))
        if total:
            lines.append(f"{h.max / scale:12.3f} {1.0:2.12f} {total:10d}")
        lines.append(f"#[Mean    = {h.mean / scale:12.3f}, "
                     f"StdDeviation   = {h.stdev / scale:12.3f}]")
        lines.append(f"#[Max     = {h.max / scale:12.3f}, Total count    = {total:12d}]")
        lines.append(f"#[Buckets = {len(buckets):12d}, SubBuckets     = {128:12d}]")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Latency:
        h = Histogram()
        count, lo, hi, total, sq, clamped, buckets = d["state"]
        h.restore((count, lo, hi, total, sq, clamped, [tuple(b) for b in buckets]))
        return cls(h)

    def __repr__(self) -> str:
        if not self.count:
            return "<Latency: empty>"
        return (f"<Latency n={self.count} mean={self.mean * 1e3:.3f}ms p50={self.p50 * 1e3:.3f}ms "
                f"p99={self.p99 * 1e3:.3f}ms max={self.max * 1e3:.3f}ms>")


# Figures a result saved by an earlier version may lack, and their value then.
_ADDED: dict[str, Any] = {"cancelled": 0, "start_time": None, "tls_protocol": "",
                          "tls_temp_key": "", "tls_server_name": "", "tls_full_handshakes": 0,
                          "tls_resumed_handshakes": 0, "unix_socket": "",
                          "pipeline": 1, "proxy": "", "stages": [],
                          "concurrency_stages": [], "not_run": 0}


class Second(NamedTuple):
    """One second of a C-loop run: what completed and failed in it, and its
    p50 and p99 latency in seconds (within 12.5%; None when not recorded).
    The last second may be partial: its counts are what happened in its
    part of the run, never scaled up."""

    t: int
    complete: int
    failed: int
    p50: float | None
    p99: float | None


@dataclasses.dataclass(kw_only=True, eq=False)
class Result:
    """The figures of one run, by the names ab users know (docs/running.md)."""

    url: str
    method: str
    start_time: str | None     # when the measured part began: UTC, ISO 8601
    host: str
    port: int
    path: str
    requests: int | None       # asked for; None under a duration alone
    issued: int                # == complete + failed + cancelled
    complete: int
    failed: int
    cancelled: int             # in flight when a stop's or the duration's grace ended
    failures: dict[str, int]   # connect, receive, length, exceptions, timeout, tls, check,
                               # worker
    non_2xx: int
    status_counts: dict[int, int]
    time_taken: float
    bytes_received: int
    body_bytes: int
    bytes_sent: int
    document_length: int | None
    server_software: str
    keepalive_requests: int
    connects: int
    reconnects: int
    concurrency: int
    threads: int
    cpu_user: float
    cpu_sys: float
    rate: float | None
    interrupted: bool
    first_error: str
    latency: Latency              # from the intended start under a rate
    latency_uncorrected: Latency  # from the actual send
    connect_time: Latency
    processing: Latency           # total less connect
    waiting: Latency              # to the first response byte
    # Per second of a C-loop run (any form _second reads; kept as Second).
    timeline: list[Second] = dataclasses.field(default_factory=list)
    # The first response's head as received (the command line's -v 2).
    first_head: str = ""
    # Over TLS: what the first handshake agreed on, as ab prints it
    # ("TLSv1.3,TLS_AES_256_GCM_SHA384,256,256"; "" over plain HTTP), the
    # key exchange, the name sent (SNI); the handshakes by kind and their
    # time (each handshake's; the connect time includes it).
    tls_protocol: str = ""
    tls_temp_key: str = ""
    tls_server_name: str = ""
    tls_full_handshakes: int = 0
    tls_resumed_handshakes: int = 0
    tls_handshake: Latency = dataclasses.field(default_factory=Latency)
    # The Unix socket connected to instead of host:port ("" over TCP).
    unix_socket: str = ""
    # Requests in flight per connection (1: no pipelining).
    pipeline: int = 1
    # The forward proxy the requests went through, host:port ("" if none).
    proxy: str = ""
    # A load shape's (seconds, rate) stages (run(stages=)); rate is then
    # its mean. Empty when the rate was constant or there was none.
    stages: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    # A shape of connections's (seconds, connections) stages
    # (run(concurrency_stages=)); concurrency is then its peak.
    concurrency_stages: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    # A scenario's requests, each's own figures by its name, in the
    # scenario's order (run(scenario=)); this Result is their exact sum.
    # Each one's method and path are the request's (path: its target, or
    # "N variants"); its timeline is empty and its CPU time 0.
    by_name: dict[str, Result] = dataclasses.field(default_factory=dict)
    # A run over a cluster (run(cluster=)): each worker's share and its own
    # Result (this one is their exact merge), and the requests of
    # requests=N that lost workers never issued (not in `issued`).
    workers: list[WorkerPart] = dataclasses.field(default_factory=list)
    not_run: int = 0
    # Each second's (bucket, count) pairs of the timeline's coarse latency
    # buckets, for a merge with other machines' seconds (httpbench.
    # distributed); the loop's own, not kept in the JSON.
    timeline_buckets: list[list[tuple[int, int]]] = dataclasses.field(default_factory=list,
                                                                      repr=False)
    # Who measured: the agent, its version and the Python it ran on.
    agent: str = "httpbench"
    agent_version: str = __version__
    python_version: str = dataclasses.field(default_factory=platform.python_version)

    def __post_init__(self) -> None:
        self.timeline = [_second(x) for x in self.timeline]
        self.stages = [(float(a), float(b)) for a, b in self.stages]
        self.concurrency_stages = [(float(a), float(b)) for a, b in self.concurrency_stages]
        # A result of an earlier version (or another agent) has fewer classes.
        self.failures = {**dict.fromkeys(FAILURE_CLASSES, 0), **self.failures}

    @property
    def rps(self) -> float:
        return self.complete / self.time_taken if self.time_taken > 0 else 0.0

    @property
    def cpu_time(self) -> float:
        """The client's own CPU time, user and system, in seconds."""
        return self.cpu_user + self.cpu_sys

    @property
    def ok(self) -> bool:
        """No request failed and the run was not interrupted. Cancelled
        requests (in flight when the duration's grace ended) are no
        failure. A run that issued nothing is not ok: nothing ran; nor is a
        run over a cluster that lost a worker."""
        return (self.failed == 0 and not self.interrupted and self.issued > 0
                and not any(w.lost for w in self.workers))

    def to_dict(self) -> dict[str, Any]:
        """Every figure, JSON-ready (the layout is docs/schema.md): seconds
        for every time, `schema` its version."""
        d: dict[str, Any] = {"schema": SCHEMA}
        d.update({name: getattr(self, name) for name in _PLAIN + _ABOUT})
        # rps: what completed in that second (the last one may be partial).
        d["timeline"] = [{"t": x.t, "complete": x.complete, "failed": x.failed,
                          "rps": x.complete, "p50": x.p50, "p99": x.p99} for x in self.timeline]
        d["status_counts"] = {str(k): v for k, v in self.status_counts.items()}
        d["rps"] = self.rps
        for name in _LATENCIES:
            d[name] = getattr(self, name).to_dict()
        if self.by_name:
            d["by_name"] = {k: v.to_dict() for k, v in self.by_name.items()}
        if self.workers:
            d["workers"] = [w.to_dict() for w in self.workers]
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        """A Result from to_dict()'s layout, of any schema from OLDEST_SCHEMA
        to SCHEMA (what a later schema added takes its default); ValueError
        for another schema."""
        schema = d.get("schema", SCHEMA)
        if isinstance(schema, bool) or not isinstance(schema, int) or \
                not OLDEST_SCHEMA <= schema <= SCHEMA:
            raise ValueError(f"a result of schema {schema!r}: this httpbench reads schemas "
                             f"{OLDEST_SCHEMA} to {SCHEMA}")
        fields = {name: d[name] if name in d else _ADDED[name] for name in _PLAIN}
        fields.update({name: d[name] for name in _ABOUT if name in d})
        fields["timeline"] = d.get("timeline", [])
        fields["status_counts"] = {int(k): v for k, v in d["status_counts"].items()}
        for name in _LATENCIES:
            fields[name] = Latency.from_dict(d[name]) if name in d else Latency()
        fields["by_name"] = {k: cls.from_dict(v) for k, v in d.get("by_name", {}).items()}
        fields["workers"] = [WorkerPart.from_dict(w) for w in d.get("workers", [])]
        return cls(**fields)

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))

    def report(self) -> str:
        """ab's report, field for field, with sub-millisecond figures where
        ab prints 0, percentiles to 99.99 and the client's CPU per request."""
        return "\n".join(_report_lines(self)) + "\n"

    __str__ = report

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython's text display: the report."""
        p.text(repr(self) if cycle else self.report())

    def _repr_html_(self) -> str:
        """A self-contained summary for notebooks: key figures, failure
        classes, the percentile table. No JavaScript."""
        return _html(self)

    def to_pandas(self, by_name: bool = False) -> Any:
        """The run's figures as a one-row DataFrame (pandas imported here);
        by_name=True: the per-request table of a scenario instead, a row
        per request and one for the whole run (times in seconds)."""
        pd = _pandas()
        if by_name:
            return pd.DataFrame(by_name_rows(self)).set_index("name")
        row = {k: v for k, v in self.to_dict().items() if not isinstance(v, (dict, list))}
        row.update({f"fail_{k}": v for k, v in self.failures.items()})
        for p in (50, 90, 99, 99.9):
            row[f"p{_pct(p)}"] = self.latency.percentile(p)
        row["latency_mean"] = self.latency.mean
        return pd.DataFrame([row])

    def plot(self, kind: str = "percentiles", ax: Any = None) -> Any:
        """A matplotlib picture of the run, returning the Axes:
        "percentiles", latency by percentile on a log scale (HdrHistogram's
        plot); "histogram", how many requests took how long; "timeline",
        req/s and p99 for each second of the run."""
        plt = _pyplot()
        if kind not in ("percentiles", "histogram", "timeline"):
            raise ValueError(f"kind must be 'percentiles', 'histogram' or 'timeline', not {kind!r}")
        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        title = f"{self.method} {self.path} ({self.agent}, -c {self.concurrency})"
        if kind == "percentiles":
            _plot_percentiles(self, ax)
        elif kind == "histogram":
            _plot_histogram(self, ax)
        else:
            _plot_timeline(self, ax)
        ax.set_title(title)
        ax.figure.tight_layout()  # labels and title inside the figure
        return ax

    def __repr__(self) -> str:
        return (f"<Result {self.method} {self.url}: {self.complete} complete, "
                f"{self.failed} failed, "
                f"{self.rps:,.0f} req/s, p99 {self.latency.p99 * 1e3:.3f} ms>")


@dataclasses.dataclass(kw_only=True, eq=False)
class WorkerPart:
    """One worker's share of a run spread over a cluster, and what it did:
    its own Result (for a lost worker, what its last progress report said,
    with no latencies), and why it was lost."""

    address: str
    host: str
    requests: int | None
    concurrency: int
    rate: float | None
    lost: bool
    error: str
    not_run: int  # a lost worker's share of requests=N it never issued
    result: Result

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["result"] = self.result.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WorkerPart:
        return cls(**{**d, "result": Result.from_dict(d["result"])})



# The field lists, from the one place the fields are named: figures kept as
# they are, the histograms (through Latency), who measured. The timeline is
# written out by name; the first head is not saved.
_LATENCIES = tuple(f.name for f in dataclasses.fields(Result) if f.type == "Latency")
_ABOUT = ("agent", "agent_version", "python_version")
_PLAIN = tuple(f.name for f in dataclasses.fields(Result)
               if f.name not in _LATENCIES + _ABOUT + ("timeline", "first_head", "by_name",
                                                       "workers", "timeline_buckets"))


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
    if r.tls_protocol:
        yield f"SSL/TLS Protocol:       {r.tls_protocol}"
        if r.tls_temp_key:
            yield f"Server Temp Key:        {r.tls_temp_key}"
        if r.tls_server_name:
            yield f"TLS Server Name:        {r.tls_server_name}"
    yield ""
    yield f"Document Path:          {r.path}"
    doc = r.document_length
    yield f"Document Length:        {doc if doc is not None else 0} bytes"
    yield ""
    yield f"Concurrency Level:      {r.concurrency}"
    if r.pipeline > 1:
        yield f"Pipeline Depth:         {r.pipeline}"
    yield f"Time taken for tests:   {r.time_taken:.3f} seconds"
    yield f"Complete requests:      {r.complete}"
    yield f"Failed requests:        {r.failed}"
    if r.failed:
        f = r.failures
        tls = f", TLS: {f['tls']}" if f["tls"] or r.tls_protocol else ""
        check = f", Check: {f['check']}" if f["check"] or r.by_name else ""
        worker = f", Worker: {f['worker']}" if f["worker"] or r.workers else ""
        yield (f"   (Connect: {f['connect']}, Receive: {f['receive']}, Length: {f['length']}, "
               f"Exceptions: {f['exceptions']}, Timeout: {f['timeout']}{tls}{check}{worker})")
    if r.cancelled:
        yield f"Cancelled requests:     {r.cancelled} (in flight when the run ended)"
    if r.non_2xx:
        yield f"Non-2xx responses:      {_non_2xx(r)}"
    yield f"Keep-Alive requests:    {r.keepalive_requests}"
    shakes = r.tls_full_handshakes + r.tls_resumed_handshakes
    if shakes:
        yield (f"TLS handshakes:         {shakes} ({r.tls_full_handshakes} full, "
               f"{r.tls_resumed_handshakes} resumed), mean {_ms(r.tls_handshake.mean)} [ms]")
    yield f"Total transferred:      {r.bytes_received} bytes"
    yield f"HTML transferred:       {r.body_bytes} bytes"
    yield f"Requests per second:    {r.rps:.2f} [#/sec] (mean)"
    per = r.time_taken / r.complete if r.complete else 0.0
    if r.rate or r.stages:
        # ab's concurrency x time / requests assumes a closed loop: under a
        # rate the connections wait for their schedule, not for answers.
        yield "Time per request:       n/a (open loop: see the latency table)"
    else:
        yield f"Time per request:       {per * r.concurrency * 1e3:.3f} [ms] (mean)"
    yield f"Time per request:       {per * 1e3:.3f} [ms] (mean, across all concurrent requests)"
    kbps = r.bytes_received / 1024 / r.time_taken if r.time_taken > 0 else 0.0
    yield f"Transfer rate:          {kbps:.2f} [Kbytes/sec] received"
    if r.complete:
        cpu_us = r.cpu_time / r.complete * 1e6
        user_us = r.cpu_user / r.complete * 1e6
        yield (f"Client CPU per request: {cpu_us:.2f} [us] (user {user_us:.2f}"
               f" + system {r.cpu_sys / r.complete * 1e6:.2f})")
    if r.interrupted:
        yield "Interrupted:            the run was stopped before its end"
    if r.rate:
        yield (f"Target rate:            {r.rate:.2f} [#/sec]{' (mean)' if r.stages else ''}, "
               "latency from each request's intended start")
    if r.stages:
        yield "Load shape:             " + _shape_text(r.stages)
    if r.concurrency_stages:
        yield "Connections shape:      " + _shape_text(r.concurrency_stages, "")
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
    if r.rate:
        yield "Percentage of the requests served within a certain time (ms)"
        yield f"{'':>8}{'corrected':>12}{'uncorrected':>13}"
        for p in PERCENTILES:
            tail = " (longest request)" if p == 100 else ""
            yield (f"{_pct(p):>7}%{_cell(r.latency, p):>12}"
                   f"{_cell(r.latency_uncorrected, p):>13}{tail}")
    else:
        yield "Percentage of the requests served within a certain time (ms)"
        for p in PERCENTILES:
            tail = " (longest request)" if p == 100 else ""
            yield f"{_pct(p):>7}%{_cell(r.latency, p):>10}{tail}"
    if r.by_name:
        yield ""
        yield from _by_name_lines(r)
    if r.workers:
        yield ""
        yield from _worker_lines(r)


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
_BY_NAME_COLUMNS: tuple[tuple[str, int, Callable[[str, Result], str]], ...] = (
    ("Count", 9, lambda n, x: str(x.complete + x.failed)),
    ("Failed", 8, lambda n, x: str(x.failed)),
    ("Req/s", 10, lambda n, x: f"{x.rps:.2f}"),
    ("Mean", 9, lambda n, x: _ms(x.latency.mean) if x.latency.count else "-"),
    ("p50", 9, lambda n, x: _ms(x.latency.p50) if x.latency.count else "-"),
    ("p99", 9, lambda n, x: _ms(x.latency.p99) if x.latency.count else "-"),
    ("Max", 9, lambda n, x: _ms(x.latency.max) if x.latency.count else "-"),
)


def by_name_rows(r: Result) -> list[dict[str, Any]]:
    """The per-request table as rows (name, method, target, count, failed,
    rps, and mean, p50, p99, max in seconds), each request's then the
    whole run's ("Aggregated", as Locust names it)."""
    rows = []
    for name, x in [*r.by_name.items(), ("Aggregated", r)]:
        lat = x.latency
        rows.append({"name": name, "method": x.method if x is not r else "",
                     "target": x.path if x is not r else "", "count": x.complete + x.failed,
                     "failed": x.failed, "rps": x.rps,
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
            f"{cell(n, x):>{w}}" for _, w, cell in _BY_NAME_COLUMNS)


def _shape_text(stages: list[tuple[float, float]], unit: str = "/s") -> str:
    """ "10 s to 100/s, 30 s at 100/s, 10 s to 0/s" """
    parts, previous = [], 0.0
    for secs, r in stages:
        parts.append(f"{secs:g} s {'at' if r == previous else 'to'} {r:g}{unit}")
        previous = r
    return ", ".join(parts)


def _second(x: Any) -> Second:
    """A timeline entry from any form it is kept in: a Second, a dict
    (schema 2), [t, complete, failed, p50, p99] (the loop's, in seconds) or
    [t, complete, failed, p99] (schema 1)."""
    if isinstance(x, dict):
        return Second(int(x["t"]), int(x["complete"]), int(x["failed"]), x.get("p50"),
                      x.get("p99"))
    if len(x) == 4:
        t, c, f, p99 = x
        return Second(int(t), int(c), int(f), None, float(p99))
    t, c, f, p50, p99 = x
    return Second(int(t), int(c), int(f), p50, p99)


def _non_2xx(r: Result) -> str:
    """The non-2xx responses by status: "100 (500: 60, 503: 40)". A response
    that failed a check is failed, not non-2xx; its status is still among
    the statuses, and the line says so when that makes them differ."""
    counts = {code: n for code, n in sorted(r.status_counts.items()) if not 200 <= code < 300}
    codes = ", ".join(f"{code}: {n}" for code, n in counts.items())
    if codes and sum(counts.values()) != r.non_2xx:
        codes = f"statuses of every response, failed checks too: {codes}"
    return f"{r.non_2xx} ({codes})" if codes else str(r.non_2xx)


def _pct(p: float) -> str:
    return f"{p:g}" if not math.isclose(p, round(p)) else str(int(p))


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas") from None
    return pandas


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plot() needs matplotlib: pip install 'httpbench[plot]'") from None
    return plt


def _plot_percentiles(r: Result, ax: Any) -> None:
    # HdrHistogram's picture: x is 1/(1-p) on a log scale, so the tail
    # (99%, 99.9%, 99.99%) gets as much room as the body.
    ps = [p for p in (0, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999)
          if r.latency.count * (1 - p / 100) >= 0.5 or p <= 99]
    for lat, label in ((r.latency, "latency"),) + (
            ((r.latency_uncorrected, "uncorrected"),) if r.rate else ()):
        xs = [1 / (1 - p / 100) for p in ps]
        ax.plot(xs, [lat.percentile(p) * 1e3 for p in ps], marker="o", label=label)
    ax.set_xscale("log")
    ticks = [p for p in (0, 90, 99, 99.9, 99.99, 99.999) if p in ps]
    ax.set_xticks([1 / (1 - p / 100) for p in ticks])
    ax.set_xticklabels([f"{_pct(p)}%" for p in ticks])
    ax.minorticks_off()
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms)")
    if r.rate:
        ax.legend()


def _plot_histogram(r: Result, ax: Any, bins: int = 60) -> None:
    buckets = r.latency.buckets()
    if not buckets:
        raise ValueError("no latencies were recorded")
    # The histogram's own buckets are finer than a picture needs: gather
    # them into `bins` equal steps on a log scale.
    lo, hi = buckets[0][0] * 1e3, buckets[-1][1] * 1e3
    step = (math.log(hi) - math.log(lo)) / bins if hi > lo else 1.0
    counts = [0] * bins
    for b_lo, _, n in buckets:
        counts[min(bins - 1, int((math.log(b_lo * 1e3) - math.log(lo)) / step))] += n
    edges = [math.exp(math.log(lo) + i * step) for i in range(bins + 1)]
    widths = [b - a for a, b in zip(edges, edges[1:], strict=False)]
    ax.bar(edges[:-1], counts, width=widths, align="edge")
    ax.set_xscale("log")
    ax.set_xlabel("latency (ms)")
    ax.set_ylabel("requests")


def _shape_points(r: Result) -> tuple[list[float], list[float]]:
    """The target rate over the run, as (instants, rates) of its corners: a
    shape's stages ramp linearly from the level before (0 at the start); a
    constant rate is flat. Empty for a closed loop."""
    if r.stages:
        xs, ys, t = [0.0], [0.0], 0.0
        for seconds, rate in r.stages:
            t += seconds
            xs.append(t)
            ys.append(rate)
        return xs, ys
    if r.rate:
        return [0.0, r.time_taken], [r.rate, r.rate]
    return [], []


def _plot_timeline(r: Result, ax: Any) -> None:
    if not r.timeline:
        raise ValueError("this result has no timeline: only httpbench's own loop records one")
    # Each second is drawn at its middle as what completed in it. A last,
    # partial second is left out of the rate line (its requests stay in the
    # totals): drawn as a second it would read as a collapse.
    seconds = list(r.timeline)
    last = seconds[-1]
    part = r.time_taken - last.t
    note = ""
    if 0 < part < 0.999 and len(seconds) > 1:
        seconds.pop()
        note = f" (the last {part:.2g} s, {last.complete:,} requests, left out: partial)"
    mids = [x.t + 0.5 for x in seconds]
    ax.plot(mids, [x.complete for x in seconds], marker="o", label="requests completed")
    failed = [x.failed for x in seconds]
    if any(failed):
        ax.plot(mids, failed, marker="x", color="C3", label="failed")
    xs, ys = _shape_points(r)
    if xs:
        ax.plot(xs, ys, color="C2", linestyle="--", label="target rate")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.set_xlabel("seconds into the run" + note)
    ax.set_ylabel("requests per second")
    p99 = ax.twinx()
    p99.plot(mids, [(x.p99 or 0.0) * 1e3 for x in seconds], color="black", marker=".",
             label="p99 (within 12.5%)")
    p99.set_ylim(bottom=0)
    p99.set_ylabel("p99 latency (ms)")
    lines = ax.get_legend_handles_labels()
    more = p99.get_legend_handles_labels()
    # Below the axes, where it hides no point.
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="upper center",
              bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False, fontsize=8)


# Borders and shading from the text colour, so the table reads in light and
# dark notebook themes alike; numbers right-aligned in tabular figures.
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


def _html(r: Result) -> str:
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
        ("Non-2xx responses", _non_2xx(r) if r.non_2xx else "0"),
        ("Time taken", f"{r.time_taken:,.3f} s"),
        ("Latency mean", f"{r.latency.mean * 1e3:,.3f} ms"),
        ("Latency p99", f"{r.latency.p99 * 1e3:,.3f} ms"),
        ("Concurrency", f"{r.concurrency:,}" + (f", pipeline {r.pipeline}" if r.pipeline > 1
                                                 else "")),
        ("Target rate", f"{r.rate:,.2f} req/s" if r.rate else "none (closed loop)"),
        *([("Load shape", _shape_text(r.stages))] if r.stages else []),
        *([("Connections shape", _shape_text(r.concurrency_stages, " connections"))]
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
    pct_head = "".join(f"<th>{_pct(p)}%</th>" for p in PERCENTILES)
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
