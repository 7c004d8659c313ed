"""Live metrics for Prometheus: run(metrics="127.0.0.1:9464") serves the
OpenMetrics 1.0.0 text exposition at /metrics while the run lasts (or
Prometheus's classic text format 0.0.4 to a scraper that does not ask
for OpenMetrics: httpbench.scrape negotiates it and serves).

    httpbench_requests_total{run, outcome}   complete, each failure class, cancelled
    httpbench_responses_total{run, status}
    httpbench_in_flight{run}
    httpbench_bytes_received_total{run}
    httpbench_target_rate{run}               under a rate or a shape
    httpbench_latency_seconds{run}           a histogram (from the intended start)
    httpbench_latency_uncorrected_seconds    beside it under a rate

A scenario's requests are series of their own (a `name` label each). The
figures come from what each loop thread publishes as each second of the
timeline begins (csrc bench_result.c, hb_br_publish): nothing per request,
no second clock. The histogram's buckets are fixed edges, 1-2-5 from
100 us to 60 s, counted from the run's own latency histogram. After the
run the final figures are served for `metrics_linger` seconds so that a
scraper catches the end. Every family of a scrape comes from one snapshot
of the loop's figures: its in-flight gauge too."""

from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ._check import check_label, parse_address
from ._core import Histogram
from .figures import FAILURE_CLASSES
from .scrape import CLASSIC, OPENMETRICS, MetricsServer

__all__ = ["MetricsServer", "Figures", "exposition", "parse_address", "check_label", "EDGES",
           "CONTENT_TYPE", "CLASSIC_CONTENT_TYPE", "new_run_label", "Endpoint", "RunMetrics",
           "Parts", "render", "target_of", "in_flight_of"]

CONTENT_TYPE = OPENMETRICS
CLASSIC_CONTENT_TYPE = CLASSIC
# The histogram's edges in seconds: 1-2-5 from 100 us to 50 s, then 60 s.
EDGES: tuple[float, ...] = tuple(float(f"{m}e{k}") for k in range(-4, 2) for m in (1, 2, 5)) \
    + (60.0,)
OUTCOMES = ("complete", *FAILURE_CLASSES, "cancelled")


def new_run_label() -> str:
    """A short id for a run's `run` label: 8 hex digits."""
    return os.urandom(4).hex()


class Figures:
    """What one series set shows: outcomes, statuses, bytes, the latency
    histograms (ns), and what was in flight as of them; from the loop's
    snapshot dict or from a Result (nothing in flight)."""

    def __init__(self, outcomes: dict[str, int], statuses: dict[int, int], received: int,
                 latency: Histogram, uncorrected: Histogram, in_flight: int = 0) -> None:
        self.outcomes, self.statuses, self.received = outcomes, statuses, received
        self.latency, self.uncorrected = latency, uncorrected
        self.in_flight = in_flight

    @classmethod
    def of_raw(cls, raw: dict[str, Any]) -> Figures:
        """From Bench.snapshot()'s (or result()'s) dict."""
        return cls({o: int(raw.get(o, 0)) for o in OUTCOMES}, dict(raw["status_counts"]),
                   int(raw["bytes_received"]), raw["latency"], raw["latency_uncorrected"],
                   in_flight_of(raw))

    def to_plain(self) -> dict[str, Any]:
        """A form that pickles and travels (a worker's report over Dask)."""
        return {"outcomes": self.outcomes, "statuses": self.statuses, "received": self.received,
                "latency": self.latency.state(), "uncorrected": self.uncorrected.state(),
                "in_flight": self.in_flight}

    @classmethod
    def of_plain(cls, d: dict[str, Any]) -> Figures:
        hists = []
        for name in ("latency", "uncorrected"):
            h = Histogram()
            count, lo, hi, total, sq, clamped, buckets = d[name]
            h.restore((count, lo, hi, total, sq, clamped, [tuple(b) for b in buckets]))
            hists.append(h)
        return cls(dict(d["outcomes"]), dict(d["statuses"]), int(d["received"]), hists[0],
                   hists[1], int(d.get("in_flight", 0)))

    @classmethod
    def of_result(cls, r: Any) -> Figures:
        return cls({"complete": r.complete, **r.failures, "cancelled": r.cancelled},
                   dict(r.status_counts), r.bytes_received, r.latency.histogram,
                   r.latency_uncorrected.histogram)


def _labels(labels: Sequence[tuple[str, str]]) -> str:
    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return ",".join(f'{k}="{esc(v)}"' for k, v in labels)


def _num(v: float) -> str:
    if isinstance(v, int):
        return str(v)
    return repr(float(v)) if math.isfinite(v) else ("+Inf" if v > 0 else "NaN")


def _buckets(h: Histogram) -> list[int]:
    """Cumulative counts at each edge (and +Inf) from the histogram's own
    buckets: a bucket counts at the first edge at or above its highest
    value."""
    counts = [0] * (len(EDGES) + 1)
    for _, hi, n in h.buckets():
        top = (hi - 1) / 1e9
        i = next((k for k, edge in enumerate(EDGES) if top <= edge), len(EDGES))
        counts[i] += n
    out, total = [], 0
    for n in counts:
        total += n
        out.append(total)
    return out


Series = tuple[list[tuple[str, str]], Figures]


def exposition(series: Sequence[Series], in_flight: Sequence[tuple[list[tuple[str, str]], int]],
               target: Sequence[tuple[list[tuple[str, str]], float]], uncorrected: bool,
               openmetrics: bool = True,
               client: Sequence[tuple[list[tuple[str, str]], Any]] = ()) -> str:
    """The text of the series (labels, figures), the in-flight gauges and
    the target rates: OpenMetrics 1.0.0, ending in # EOF, or (openmetrics
    False) Prometheus's classic text format 0.0.4, where a counter's family
    is named with its _total, HELP comes first and there is no UNIT or EOF."""
    out: list[str] = []

    def family(name: str, kind: str, help_text: str, unit: str = "") -> None:
        if not openmetrics:
            if kind == "counter":
                name += "_total"
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            return
        out.append(f"# TYPE {name} {kind}")
        if unit:
            out.append(f"# UNIT {name} {unit}")
        out.append(f"# HELP {name} {help_text}")

    family("httpbench_requests", "counter",
           "Requests by outcome: complete, each failure class, cancelled.")
    for labels, f in series:
        for o in OUTCOMES:
            out.append(f"httpbench_requests_total{{{_labels(labels + [('outcome', o)])}}} "
                       f"{f.outcomes.get(o, 0)}")
    family("httpbench_responses", "counter", "Complete responses by status code.")
    for labels, f in series:
        for code, n in sorted(f.statuses.items()):
            out.append(f"httpbench_responses_total{{{_labels(labels + [('status', str(code))])}}}"
                       f" {n}")
    family("httpbench_in_flight", "gauge", "Requests issued and not yet ended.")
    for labels, n in in_flight:
        out.append(f"httpbench_in_flight{{{_labels(labels)}}} {n}")
    family("httpbench_bytes_received", "counter", "Bytes received, heads and bodies.")
    for labels, f in series:
        out.append(f"httpbench_bytes_received_total{{{_labels(labels)}}} {f.received}")
    if target:
        family("httpbench_target_rate", "gauge", "The rate asked for now, requests a second.")
        for labels, v in target:
            out.append(f"httpbench_target_rate{{{_labels(labels)}}} {_num(v)}")
    hists = [("httpbench_latency_seconds", "latency",
              "Latency from each request's intended start (its send in a closed loop).")]
    if uncorrected:
        hists.append(("httpbench_latency_uncorrected_seconds", "uncorrected",
                      "Latency from each request's actual send."))
    for name, which, help_text in hists:
        family(name, "histogram", help_text, "seconds")
        for labels, f in series:
            h: Histogram = getattr(f, which)
            for edge, n in zip((*EDGES, math.inf), _buckets(h), strict=True):
                out.append(f"{name}_bucket{{{_labels(labels + [('le', _num(edge))])}}} {n}")
            out.append(f"{name}_count{{{_labels(labels)}}} {h.count}")
            out.append(f"{name}_sum{{{_labels(labels)}}} {_num(h.mean * h.count / 1e9)}")
    if client:
        # The client's own figures (httpbench.ClientFigures), once a run has
        # ended: they are known then.
        for name, kind, help_text, value in (
                ("httpbench_client_busy", "gauge",
                 "The share of the run the loop threads were busy (on a CPU or waiting for "
                 "one), their mean.", lambda c: c.busy),
                ("httpbench_client_busy_max", "gauge", "The busiest loop thread's share.",
                 lambda c: c.busy_max),
                ("httpbench_client_unsent", "counter",
                 "Requests the schedule made due that were never sent.", lambda c: c.unsent),
                ("httpbench_client_bound", "gauge",
                 "1 when the client rather than the server limited the run (reason: cpu, "
                 "connections, schedule).", lambda c: int(c.bound))):
            family(name, kind, help_text)
            sample = name + ("_total" if kind == "counter" else "")
            for labels, c in client:
                extra = [("reason", c.reason or "none")] if name == "httpbench_client_bound" \
                    else []
                out.append(f"{sample}{{{_labels(labels + extra)}}} {_num(value(c))}")
    if openmetrics:
        out.append("# EOF")
    return "\n".join(out) + "\n"


Labels = list[tuple[str, str]]


@dataclasses.dataclass
class Parts:
    """One run's samples before they are written: its series, its
    in-flight gauges and its target rates."""

    series: list[Series]
    in_flight: list[tuple[Labels, int]]
    target: list[tuple[Labels, float]]
    client: list[tuple[Labels, Any]] = dataclasses.field(default_factory=list)


def render(parts: Sequence[Parts], uncorrected: bool, openmetrics: bool = True) -> str:
    """The exposition of several runs' samples (capacity's stages), each
    family once."""
    return exposition([s for p in parts for s in p.series],
                      [g for p in parts for g in p.in_flight],
                      [t for p in parts for t in p.target], uncorrected, openmetrics,
                      [c for p in parts for c in p.client])


class RunMetrics:
    """A run's samples: its labels (`run`, and a capacity search's
    `stage`), a scenario's names, the target rate over time (seconds from
    the start to req/s; None: no target), and whether the uncorrected
    latency goes beside the corrected one."""

    def __init__(self, base: Labels, names: Sequence[str],
                 target: Callable[[float], float] | None, uncorrected: bool) -> None:
        self.base = list(base)
        self.names, self.target, self.uncorrected = list(names), target, uncorrected
        self.start: float | None = None  # time.time() of the measured part's start

    def _target(self, final: bool) -> list[tuple[Labels, float]]:
        if self.target is None:
            return []
        since = math.inf if final or self.start is None else max(0.0, time.time() - self.start)
        return [(self.base, self.target(since))]

    def _series(self, whole: Figures, parts: Sequence[Figures]) -> list[Series]:
        if self.names:
            return [(self.base + [("name", n)], f) for n, f in zip(self.names, parts,
                                                                    strict=True)]
        return [(self.base, whole)]

    def live(self, snapshot: dict[str, Any]) -> Parts:
        """From one Bench.snapshot(): its figures, and what was in flight as
        of them."""
        whole, parts = snapshot_figures(snapshot)
        return Parts(self._series(whole, parts), [(self.base, whole.in_flight)],
                     self._target(False))

    def workers(self, each: dict[str, tuple[Figures, list[Figures]]],
                final: bool = False) -> Parts:
        """Over Dask: each worker's series (a `worker` label, its address),
        from its last report: (figures, a scenario's)."""
        series: list[Series] = []
        flying = []
        for address, (whole, parts) in sorted(each.items()):
            label = [("worker", address)]
            series += [(labels + label, f) for labels, f in self._series(whole, parts)]
            flying.append((self.base + label, whole.in_flight))
        return Parts(series, flying, self._target(final))

    def final(self, r: Any) -> Parts:
        """From the run's Result: nothing in flight, and the client's own
        figures."""
        parts = [Figures.of_result(x) for x in r.by_name.values()]
        return Parts(self._series(Figures.of_result(r), parts), [(self.base, 0)],
                     self._target(True),
                     [(self.base, r.client)] if r.client is not None else [])


class Endpoint:
    """One /metrics for one run, or for several in turn (a capacity
    search's stages, each with its `stage` label): the runs ended keep
    their final samples beside the current run's live ones."""

    def __init__(self, address: str, run: str | None = None) -> None:
        try:
            self.server = MetricsServer(parse_address("metrics", address),
                                        lambda om: "# EOF\n" if om else "")
        except OSError as e:
            raise OSError(e.errno, f"metrics: cannot listen on {address}: {e.strerror}") \
                from None
        self.server.start()
        self.run = run or new_run_label()
        self.done: list[Parts] = []
        self.uncorrected = False

    def show(self, shape: RunMetrics, live: Callable[[], Parts]) -> None:
        """Serves live() beside the ended runs' samples."""
        self.uncorrected |= shape.uncorrected
        done = list(self.done)
        self.server.set(lambda om: render([*done, live()], self.uncorrected, om))

    def finish(self, parts: Parts) -> None:
        """A run ended: its final samples stay."""
        self.done.append(parts)
        done = list(self.done)
        self.server.set(lambda om: render(done, self.uncorrected, om))

    def linger(self, seconds: float) -> None:
        self.server.linger(seconds)

    def close(self) -> None:
        self.server.close()


def in_flight_of(figures: dict[str, Any]) -> int:
    """Requests issued and not yet ended, as of a snapshot's (or a
    result's) own counts."""
    return max(0, int(figures["issued"]) - int(figures["complete"]) - int(figures["failed"]) -
               int(figures["cancelled"]))


def snapshot_figures(snapshot: dict[str, Any]) -> tuple[Figures, list[Figures]]:
    """Bench.snapshot()'s figures: the whole run's and each scenario
    request's."""
    return (Figures.of_raw(snapshot),
            [Figures.of_raw(p) for p in snapshot.get("by_request") or []])


def target_of(rate: float | None, stages: Sequence[tuple[float, float]] | None
              ) -> Callable[[float], float] | None:
    """The rate asked for at t seconds into the run: a constant rate, or a
    shape's stages ramping from the level before (0 at the start); the
    last stage's level after the shape ends. None for a closed loop."""
    if stages:
        corners = [(0.0, 0.0)]
        t = 0.0
        for seconds, level in stages:
            t += seconds
            corners.append((t, level))

        def at(since: float) -> float:
            for (t0, r0), (t1, r1) in zip(corners, corners[1:], strict=False):
                if since <= t1:
                    return r0 + (r1 - r0) * ((since - t0) / (t1 - t0) if t1 > t0 else 1.0)
            return corners[-1][1]
        return at
    if rate:
        return lambda since: rate
    return None
