"""What a run measured: Result and its Latency, with ab's report layout."""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import os
import platform
import socket
import zlib
from typing import Any, NamedTuple

from ._core import Histogram
from ._typed import FieldError, dataclass_fields, shown, typed
from .bound import ClientFigures
from ._version import __version__
from ._view import draw
from .figures import FAILURE_CLASSES, OLDEST_SCHEMA, PERCENTILES, SCHEMA

__all__ = ["Latency", "Result", "Second", "WorkerPart", "FAILURE_CLASSES", "PERCENTILES",
           "SCHEMA", "OLDEST_SCHEMA"]



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

    def to_dict(self, compact: bool = False) -> dict[str, Any]:
        """Seconds throughout. `histogram` is [value, count] per bucket in
        use, value the bucket's highest (as HdrHistogram reports it), for a
        reader without httpbench; `state` is the exact form from_dict
        reads back. compact: neither, but `state_z`, the state's JSON
        compressed (zlib, then base64): a pytest baseline's (schema 14)."""
        d: dict[str, Any] = {
            "count": self.count, "min": self.min, "max": self.max, "mean": self.mean,
            "stdev": self.stdev,
            "percentiles": {str(p): self.percentile(p) for p in PERCENTILES},
        }
        state = list(self.histogram.state())
        if compact:
            packed = json.dumps(state, separators=(",", ":")).encode()
            d["state_z"] = base64.b64encode(zlib.compress(packed, 9)).decode("ascii")
        else:
            d["histogram"] = [[(hi - 1) / 1e9, n] for _, hi, n in self.histogram.buckets()]
            d["state"] = state
        return d

    def to_hgrm(self, scale: float = 1e6, ticks_per_half: int = 5) -> str:
        """HdrHistogram's percentile distribution text (what wrk2 prints and
        HdrHistogram's plotter reads): see httpbench.render.hgrm."""
        text: str = draw("hgrm", self.histogram, scale, ticks_per_half)
        return text

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Latency:
        """From to_dict()'s layout (its `state`, or a compact one's
        `state_z`); FieldError naming what is wrong with it."""
        h = Histogram()
        raw = d.get("state")
        if raw is None and "state_z" in d:
            raw = _unpack_state(d["state_z"])
        state = typed(raw, tuple[int, int, int, float, float, int,
                                 list[tuple[int, int]]], "state")
        count, lo, hi, total, sq, clamped, buckets = state
        try:
            h.restore((count, lo, hi, total, sq, clamped, buckets))
        except (ValueError, TypeError, OverflowError) as e:
            raise FieldError("state", str(e)) from None
        return cls(h)

    def __repr__(self) -> str:
        if not self.count:
            return "<Latency: empty>"
        return (f"<Latency n={self.count} mean={self.mean * 1e3:.3f}ms p50={self.p50 * 1e3:.3f}ms "
                f"p99={self.p99 * 1e3:.3f}ms max={self.max * 1e3:.3f}ms>")


# A compressed state is at most this many bytes unpacked (a histogram's
# buckets in use are a few thousand pairs): a hostile file is not a zip bomb.
_MAX_STATE_BYTES = 16 << 20


def _unpack_state(packed: Any) -> Any:
    """A compact Latency's `state_z`: base64 of the zlib of its JSON."""
    if not isinstance(packed, str):
        raise FieldError("state_z", "a base64 string was expected")
    try:
        z = zlib.decompressobj()
        text = z.decompress(base64.b64decode(packed, validate=True), _MAX_STATE_BYTES)
        if z.unconsumed_tail:
            raise FieldError("state_z", f"unpacks to more than {_MAX_STATE_BYTES} bytes")
        return json.loads(text)
    except (ValueError, zlib.error) as e:
        if isinstance(e, FieldError):
            raise
        raise FieldError("state_z", f"not a packed state: {e}") from None


# Figures a result saved by an earlier version may lack, and their value then.
_ADDED: dict[str, Any] = {"cancelled": 0, "start_time": None, "tls_protocol": "",
                          "tls_temp_key": "", "tls_server_name": "", "tls_full_handshakes": 0,
                          "tls_resumed_handshakes": 0, "unix_socket": "",
                          "pipeline": 1, "proxy": "", "stages": [],
                          "concurrency_stages": [], "not_run": 0, "counts": {},
                          "http_version": "1.1", "streams": 1, "streams_allowed": None,
                          "streams_unlimited": False,
                          "streams_max_used": 0, "refused": 0, "reset_codes": {},
                          "header_bytes_wire": 0, "header_bytes_decoded": 0,
                          "conn_rps_min": 0.0, "conn_rps_max": 0.0, "conn_rps_mean": 0.0,
                          "conn_rps_sd": 0.0, "conn_rps_within": None, "interrupted_at": None,
                          "cpus": None, "hostname": "", "log": "", "log_records": 0,
                          "log_dropped": 0, "log_error": "", "client": None}


def _sum_by_key(values: list[dict[Any, int]]) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for d in values:
        for k, n in d.items():
            out[k] = out.get(k, 0) + n
    return out


def _histograms(values: list[Latency]) -> Latency:
    h = Histogram()
    for lat in values:
        h.merge(lat.histogram)
    return Latency(h)


# How each figure of one run's parts (a cluster's workers, started
# together) merges into the whole, written once, beside the fields: a rule
# takes the parts' values of the field (those of the parts that measured,
# for the rules ending in _measured: a lost worker's part knows no server)
# and gives the whole's. The loop's counts (_core.RESULT_COUNTS that are
# Result fields) are summed too, so a counter added in C merges with no
# edit here. A field named nowhere takes the first measuring part's
# value; distributed.merge adds the few that depend on several fields
# (the timeline, the machines, the client's bound).
MERGE_RULES: dict[str, tuple[str, Any]] = {
    "threads": ("all", sum),
    "concurrency": ("all", sum),
    "cpu_user": ("all", math.fsum),
    "cpu_sys": ("all", math.fsum),
    "failures": ("all", _sum_by_key),
    "counts": ("all", _sum_by_key),
    "status_counts": ("all", lambda v: dict(sorted(_sum_by_key(v).items()))),
    "reset_codes": ("all", _sum_by_key),
    "streams_allowed": ("all", lambda v: min((x for x in v if x is not None), default=None)),
    "streams_max_used": ("all", max),
    "time_taken": ("all", max),
    "interrupted": ("all", any),
    "first_error": ("all", lambda v: next((x for x in v if x), "")),
    "document_length": ("measured", lambda v: next((x for x in v if x is not None), None)),
    "server_software": ("measured", lambda v: next((x for x in v if x), "")),
    **{name: ("all", _histograms) for name in ("latency", "latency_uncorrected", "connect_time",
                                                "processing", "waiting", "tls_handshake",
                                                "conn_first_byte", "conn_connect")},
}


def _empty_of(hint: str) -> Any:
    """A required Result field's empty value, by its type hint (as the
    module's annotations spell it)."""
    if hint.endswith("| None"):
        return None
    empty: dict[str, Any] = {"int": 0, "float": 0.0, "str": "", "bool": False}
    if hint in empty:
        return empty[hint]
    if hint == "Latency":
        return Latency()
    if hint.startswith("dict["):
        return {}
    if hint.startswith("list["):
        return []
    raise TypeError(f"no empty value for a field of type {hint}")


class Second(NamedTuple):
    """One second of a C-loop run: what completed and failed in it, its
    p50 and p99 latency in seconds (within 12.5%; None when not recorded),
    and how many of its complete responses were not 2xx. The last second
    may be partial: its counts are what happened in its part of the run,
    never scaled up."""

    t: int
    complete: int
    failed: int
    p50: float | None
    p99: float | None
    non_2xx: int = 0


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
    # key exchange, the name sent (SNI); the handshakes by kind (failed:
    # those the transport refused, schema 17; the requests they carried are
    # failed in the tls class) and their time (each completed handshake's;
    # the connect time includes it).
    tls_protocol: str = ""
    tls_temp_key: str = ""
    tls_server_name: str = ""
    tls_full_handshakes: int = 0
    tls_resumed_handshakes: int = 0
    tls_failed_handshakes: int = 0
    tls_handshake: Latency = dataclasses.field(default_factory=Latency)
    # Each connection's time from its connect's start to its first
    # response byte (h2load's "time to 1st byte": one a connect).
    conn_first_byte: Latency = dataclasses.field(default_factory=Latency)
    # Each connection's time from its connect's start to the connection
    # made, a tunnel and a TLS handshake included (h2load's "time for
    # connect": one a connect, whether or not a request of it completed).
    conn_connect: Latency = dataclasses.field(default_factory=Latency)
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
    # The protocol spoken: "1.1", or "2" (HTTP/2: h2 by ALPN over TLS, h2c
    # by prior knowledge over plain TCP).
    http_version: str = "1.1"
    # HTTP/2: the streams asked for per connection, the server's
    # SETTINGS_MAX_CONCURRENT_STREAMS (the lowest any connection heard;
    # None until one did, or when the server set none: streams_unlimited
    # then says so), the most one connection had in flight; streams
    # the server refused (REFUSED_STREAM: sent again, not failed) and the
    # RST_STREAMs that failed streams in the reset class, by error code;
    # the response heads' bytes on the wire (HPACK) and decoded.
    streams: int = 1
    streams_allowed: int | None = None
    streams_unlimited: bool = False
    streams_max_used: int = 0
    refused: int = 0
    reset_codes: dict[str, int] = dataclasses.field(default_factory=dict)
    header_bytes_wire: int = 0
    header_bytes_decoded: int = 0
    # Each connection's req/s over the run, as h2load prints them (min,
    # max, mean, standard deviation); 0 when not measured. conn_rps_within:
    # the percentage of connections within one deviation of the mean (None
    # in a result saved before schema 16).
    conn_rps_min: float = 0.0
    conn_rps_max: float = 0.0
    conn_rps_mean: float = 0.0
    conn_rps_sd: float = 0.0
    conn_rps_within: float | None = 0.0
    # When Ctrl-C (or SIGTERM) stopped the run, in seconds from its start;
    # None when nothing stopped it early.
    interrupted_at: float | None = None
    # The machine that measured: its CPUs and host name (None and "" in a
    # result saved before schema 11).
    cpus: int | None = dataclasses.field(default_factory=os.cpu_count)
    hostname: str = dataclasses.field(default_factory=socket.gethostname)
    # The per-request log (run(log=)): its file ("" without one), the
    # records written, those dropped (the writer fell behind, or a write
    # failed: log_error says why).
    log: str = ""
    log_records: int = 0
    log_dropped: int = 0
    log_error: str = ""
    # The client's own figures (httpbench.ClientFigures: busy, lateness
    # against a schedule, due requests never sent, whether the client
    # bound the run); None where they cannot be known (an agent's run in
    # compare, a result saved before schema 13).
    client: ClientFigures | None = None
    # The loop's counters that have no field of their own, by name: a count
    # added to csrc/py_bench.c's table lands here (CONTRIBUTING.md). Summed
    # in a merge; empty for the comparison's agents.
    counts: dict[str, int] = dataclasses.field(default_factory=dict)
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

    def to_dict(self, compact: bool = False) -> dict[str, Any]:
        """Every figure, JSON-ready (the layout is docs/schema.md): seconds
        for every time, `schema` its version. compact: each latency's
        histogram as `state_z` only (Latency.to_dict), as a pytest baseline
        keeps it."""
        d: dict[str, Any] = {"kind": "run", "schema": SCHEMA}
        d.update({name: getattr(self, name) for name in _PLAIN + _ABOUT})
        # rps: what completed in that second (the last one may be partial).
        d["timeline"] = [{"t": x.t, "complete": x.complete, "failed": x.failed,
                          "rps": x.complete, "p50": x.p50, "p99": x.p99, "non_2xx": x.non_2xx}
                         for x in self.timeline]
        d["status_counts"] = {str(k): v for k, v in self.status_counts.items()}
        d["rps"] = self.rps
        for name in _LATENCIES:
            d[name] = getattr(self, name).to_dict(compact)
        if self.by_name:
            d["by_name"] = {k: v.to_dict(compact) for k, v in self.by_name.items()}
        if self.workers:
            d["workers"] = [w.to_dict() for w in self.workers]
        d["client"] = self.client.to_dict() if self.client is not None else None
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def _known(cls, **known: Any) -> Result:
        """A Result from the fields known (an agent's, a lost worker's, a
        run that measured little), every other field its defined empty
        value: a count 0, a time 0.0, a text "", a mapping or list empty, a
        latency with nothing in it, an optional figure None, a flag False.
        The one place a Result is built by hand."""
        fields = {f.name: _empty_of(str(f.type)) for f in dataclasses.fields(cls)
                  if f.default is dataclasses.MISSING
                  and f.default_factory is dataclasses.MISSING}
        return cls(**{**fields, **known})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Result:
        """A Result from to_dict()'s layout, of any schema from OLDEST_SCHEMA
        to SCHEMA (what a later schema added takes its default); ValueError
        for another schema, and a FieldError (a ValueError) naming the field
        for a field that is not what the model holds (its type hint): a
        hostile or damaged file is refused whole, never half read."""
        if not isinstance(d, dict):
            raise FieldError("", "an object was expected")
        if d.get("kind", "run") != "run":
            raise ValueError(f"not a run's result but a {d['kind']!r}'s")
        schema = d.get("schema", SCHEMA)
        if isinstance(schema, bool) or not isinstance(schema, int) or \
                not OLDEST_SCHEMA <= schema <= SCHEMA:
            raise ValueError(f"a result of schema {shown(schema)}: this httpbench reads "
                             f"schemas {OLDEST_SCHEMA} to {SCHEMA}")
        fields = dataclass_fields(cls, d, _PLAIN, _ADDED)
        fields.update(dataclass_fields(cls, d, tuple(n for n in _ABOUT if n in d)))
        fields["timeline"] = _timeline(d.get("timeline", []))
        for name in _LATENCIES:
            fields[name] = typed(d[name], Latency, name) if name in d else Latency()
        fields["by_name"] = typed(d.get("by_name", {}), dict[str, Result], "by_name")
        fields["workers"] = typed(d.get("workers", []), list[WorkerPart], "workers")
        fields["client"] = typed(d.get("client"), ClientFigures | None, "client")
        return cls(**fields)

    @classmethod
    def from_json(cls, text: str) -> Result:
        return cls.from_dict(json.loads(text))

    def report(self) -> str:
        """ab's report, field for field, with sub-millisecond figures where
        ab prints 0, percentiles to 99.99 and the client's CPU per request."""
        text: str = draw("report", self)
        return text

    __str__ = report

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        """IPython's text display: the report."""
        p.text(repr(self) if cycle else self.report())

    def _repr_html_(self) -> str:
        """A self-contained summary for notebooks: key figures, failure
        classes, the percentile table. No JavaScript."""
        text: str = draw("summary", self)
        return text

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The standalone HTML report of this run (one file, no network:
        docs/report.md), written to path when given; returns its text."""
        text: str = draw("run_page", self, path)
        return text

    def to_pandas(self, by_name: bool = False) -> Any:
        """The run's figures as a one-row DataFrame (pandas imported here);
        by_name=True: the per-request table of a scenario instead, a row
        per request and one for the whole run (times in seconds)."""
        pd = _pandas()
        if by_name:
            return pd.DataFrame(draw("by_name_rows", self)).set_index("name")
        row = {k: v for k, v in self.to_dict().items() if not isinstance(v, (dict, list))}
        row.update({f"fail_{k}": v for k, v in self.failures.items()})
        # NaN with nothing timed, not the empty histogram's 0: in a frame of
        # many runs a dead server's would read as the fastest.
        timed = self.latency.count > 0
        for p in (50, 90, 99, 99.9):
            row[f"p{draw('percent_label', p)}"] = self.latency.percentile(p) if timed else math.nan
        row["latency_mean"] = self.latency.mean if timed else math.nan
        return pd.DataFrame([row])

    def plot(self, kind: str = "percentiles", ax: Any = None) -> Any:
        """A matplotlib picture of the run, returning the Axes:
        "percentiles", latency by percentile on a log scale (HdrHistogram's
        plot); "histogram", how many requests took how long; "timeline",
        req/s and p99 for each second of the run."""
        return draw("plot", self, kind, ax)

    def __repr__(self) -> str:
        return (f"<Result {self.method} {self.url}: {self.complete} complete, "
                f"{self.failed} failed, "
                f"{self.rps:,.0f} req/s, p99 "
                f"{f'{self.latency.p99 * 1e3:.3f} ms' if self.latency.count else '-'}>")


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
    # When it was lost, in seconds from the run's start (None: not lost, or
    # lost before the start; absent before schema 11).
    lost_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["result"] = self.result.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> WorkerPart:
        return cls(**dataclass_fields(cls, d))



# The field lists, from the one place the fields are named: figures kept as
# they are, the histograms (through Latency), who measured. The timeline is
# written out by name; the first head is not saved.
_LATENCIES = tuple(f.name for f in dataclasses.fields(Result) if f.type == "Latency")
_ABOUT = ("agent", "agent_version", "python_version")
_PLAIN = tuple(f.name for f in dataclasses.fields(Result)
               if f.name not in _LATENCIES + _ABOUT + ("timeline", "first_head", "by_name",
                                                       "workers", "timeline_buckets", "client"))


def _timeline(raw: Any) -> list[Second]:
    """A saved timeline, each second's figures checked (FieldError naming
    the entry otherwise)."""
    if not isinstance(raw, list):
        raise FieldError("timeline", "a list was expected")
    out = []
    for i, x in enumerate(raw):
        try:
            s = _second(x)
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            raise FieldError(f"timeline[{i}]", f"not a second's figures ({e})") from None
        out.append(Second(*(typed(v, hint, f"timeline[{i}].{name}") for v, hint, name in
                            zip(s, (int, int, int, float | None, float | None, int),
                                Second._fields, strict=True))))
    return out


def _second(x: Any) -> Second:
    """A timeline entry from any form it is kept in: a Second, a dict
    (schema 2; non_2xx from 11), [t, complete, failed, p50, p99, non_2xx]
    (in seconds; without non_2xx before 11) or [t, complete, failed, p99]
    (schema 1)."""
    if isinstance(x, dict):
        return Second(int(x["t"]), int(x["complete"]), int(x["failed"]), x.get("p50"),
                      x.get("p99"), int(x.get("non_2xx", 0)))
    if len(x) == 4:
        t, c, f, p99 = x
        return Second(int(t), int(c), int(f), None, float(p99))
    t, c, f, p50, p99, *rest = x
    return Second(int(t), int(c), int(f), p50, p99, int(rest[0]) if rest else 0)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError("to_pandas() needs pandas: pip install pandas") from None
    return pandas

