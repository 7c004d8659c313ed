"""A run on this machine: a RunSpec turned into what the C loop reads (the
request's bytes, one mapping of hb_bench_config's fields by name), the
loop driven to its end with progress shown, and its figures made a
Result."""

from __future__ import annotations

import dataclasses
import datetime
import math
import os
import resource
import sys
import time
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, Protocol

from . import _core
from ._request import (IDEMPOTENT, USER_AGENT, basic_auth, host_field, public_url, tls_context,
                       sent_fields, url_credentials, with_header)
from ._url import ProxyRoute, proxy_route
from .bound import client_figures
from .progress import Progress, Reporter
from .result import FAILURE_CLASSES, Latency, Result, Second
from .scenario import describe, loop_form
from .spec import RunSpec

if TYPE_CHECKING:
    from .metrics import Endpoint, Parts, RunMetrics
    from .reqlog import LogFile

    Live = tuple[Endpoint, RunMetrics, bool]

__all__ = ["run_local", "Coordinator", "schedule_length"]


class Coordinator(Protocol):
    """What a run spread over machines (httpbench.distributed) gives
    run() on each worker: the common start, progress out, a stop in."""

    def prepared(self) -> float | None:
        """Every connection is warm: returns the start instant (seconds
        since the epoch) once every worker is, or None to give up."""

    def progress(self, issued: int, complete: int, failed: int) -> bool:
        """A few times a second; returns True to stop the run."""

    # Whether the caller serves live metrics: the loop then publishes its
    # figures, and figures() gets Bench.snapshot() once a second.
    publish: bool

    def figures(self, snapshot: dict[str, Any]) -> None:
        """Once a second when publish: the loop's published figures."""


def schedule_length(requests: int | None, duration: float | None, rate: float | None,
                    stages: Sequence[tuple[float, float]] | None) -> float:
    """The length in seconds of an open loop's schedule (0 for a closed
    loop): requests at rate R take requests / R, a shape its stages' sum,
    either cut short by a duration."""
    if stages:
        length = sum(seconds for seconds, _ in stages)
    elif rate:
        length = requests / rate if requests else math.inf
    else:
        return 0.0
    return min(length, duration) if duration else (0.0 if math.isinf(length) else length)


def _drive(bench: _core._Bench, reporter: Reporter | None,
           coordinator: Coordinator | None = None) -> tuple[dict[str, Any], float | None]:
    """Waits for the run, updating progress; Ctrl-C stops it early (the C
    loop gives requests in flight a second, then cancels them). Returns
    the loop's figures and when Ctrl-C came (seconds since the epoch;
    None when it did not)."""
    stopped: float | None = None
    publish = coordinator is not None and coordinator.publish
    ticks = 0
    try:
        while not bench.wait(0.25):
            issued, complete, failed = bench.progress()
            if reporter:
                _tell_opened(bench, reporter)
                reporter.update(complete, failed)
            if coordinator is not None and coordinator.progress(issued, complete, failed):
                bench.stop()
            ticks += 1
            if publish and ticks % 4 == 0:
                assert coordinator is not None
                coordinator.figures(bench.snapshot())
    except KeyboardInterrupt:
        stopped = time.time()
        bench.stop()
        while not bench.wait(0.25):
            pass
    if reporter:
        _tell_opened(bench, reporter)
        reporter.close(*bench.progress()[1:])
    if coordinator is not None:
        coordinator.progress(*bench.progress())
    return bench.result(), stopped


def _tell_opened(bench: _core._Bench, reporter: Reporter) -> None:
    """The reporter's on_open, once, when the run's first connection has
    opened."""
    if reporter.on_open is not None and (tls := bench.opened()) is not None:
        reporter.on_open(*tls)
        reporter.on_open = None


def _warm(bench: _core._Bench) -> bool:
    """Waits for a prepared start's warmup; False when Ctrl-C came first
    (the run is then stopped)."""
    try:
        while not bench.prepared():
            time.sleep(0.01)
        return True
    except KeyboardInterrupt:
        bench.stop()
        while not bench.wait(0.25):
            pass
        return False


def _nothing_measured() -> dict[str, Any]:
    """The figures of a run that never began (Ctrl-C during the warmup), in
    Bench.result()'s layout: every name of the loop's tables, at zero."""
    raw: dict[str, Any] = dict.fromkeys(_core.RESULT_COUNTS, 0)
    raw.update(dict.fromkeys(_core.RESULT_SECONDS, 0.0))
    raw.update(dict.fromkeys(_core.RESULT_TEXTS, ""))
    raw.update({name: _core.Histogram() for name in _core.RESULT_HISTOGRAMS})
    raw.update(status_counts={}, document_length=-1, timeline=[], busy_mean=0.0, busy_max=0.0,
               unsent=0, late=_core.Histogram())
    return raw


def _fd_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _headers(spec: RunSpec) -> Any:
    """The fields every request of the run carries: the user's and those
    added (less any the user gave None)."""
    headers = spec.headers
    credentials = url_credentials(spec.url)
    if credentials is not None:
        headers = with_header(headers, "Authorization", basic_auth(*credentials))
    # ab sends both; a server that routes or logs by them sees a client.
    # (Connection.request sends only what it must: Host, Content-Length.)
    headers = with_header(with_header(headers, "User-Agent", USER_AGENT), "Accept", "*/*")
    if not spec.keepalive:
        # RFC 9112 section 9.6: the server then closes first, so TIME_WAIT
        # stays on its side (as under ab without -k), not on the client's
        # ephemeral ports, and it answers without a keep-alive field.
        headers = with_header(headers, "Connection", "close")
    return sent_fields(headers)


def _requests(spec: RunSpec, route: ProxyRoute | None) -> dict[str, Any]:
    """The request's settings for the loop: its bytes (or a scenario's),
    whether it is HEAD, and whether it may be sent again."""
    t = spec.target
    host = host_field(t.host, t.port, t.tls)
    # Through a forward proxy to an http:// server: the absolute form and
    # the proxy's credentials, added by the request builder.
    via = {"origin": ((route and route.origin) or "").encode("ascii"),
           "proxy_auth": ((route and route.auth) or "").encode("ascii")}
    if spec.scenario is not None:
        loop = loop_form(spec.scenario, spec.url, _headers(spec), host, via)
        return {"request": loop[0][0][0], "head": loop[0][2], "scenario": loop,
                "sequence": spec.scenario.order != "weighted",
                "turns": spec.scenario.order == "turns", "seed": spec.scenario.seed,
                "idempotent": False}
    request, flags = _core.build_request(spec.method, t.path, _headers(spec), spec.body, host,
                                         **via)
    return {"request": request, "head": bool(flags & _core.REQ_HEAD),
            "idempotent": spec.method.upper() in IDEMPOTENT}


def loop_settings(spec: RunSpec, prepared: bool) -> tuple[dict[str, Any], ProxyRoute | None]:
    """What _core._Bench reads (csrc/py_bench.c's table: one name per field
    of hb_bench_config), and the proxy's route."""
    t = spec.target
    threads = spec.loop_threads
    # A socket per connection, an epoll and a timerfd per thread, and room
    # for what the process has open already.
    limit, files = _fd_limit(), spec.concurrency + 2 * threads + 16
    if files > limit:
        raise ValueError(f"concurrency {spec.concurrency} over {threads} threads needs {files} "
                         f"files, above the open-file limit ({limit}); raise it with ulimit -n")
    tls = tls_context(t, spec.verify, spec.cafile, spec.certfile, spec.keyfile,
                      spec.server_hostname, spec.tls_min, spec.tls_max, spec.ciphers,
                      spec.ciphersuites, spec.tls_resume, spec.http2)
    route = None
    if spec.proxy is not None:
        # HTTP/2 goes inside a CONNECT tunnel, to an http:// server too.
        route = proxy_route(spec.proxy, t.host, t.port, t.tls or spec.http2, USER_AGENT)
    warmup = spec.warmup
    settings = {
        "host": route.host if route else t.host, "port": route.port if route else t.port,
        "tunnel": route.tunnel if route else None, "tls": tls, "unix_socket": spec.unix_socket,
        "requests": spec.requests or 0, "duration": spec.duration or 0.0,
        "concurrency": spec.concurrency, "threads": threads, "keepalive": spec.keepalive,
        "rate": (spec.rate or 0.0) if spec.stages is None else 0.0, "timeout": spec.timeout,
        "grace": spec.grace,
        "lengths_vary": spec.lengths_vary, "pipeline": spec.pipeline,
        "stages": spec.stages, "vus": spec.concurrency_stages, "prepared": prepared,
        "warmup_requests": warmup if isinstance(warmup, int) else 0,
        "warmup_seconds": warmup if isinstance(warmup, float) else 0.0,
        "http2": spec.http2, "streams": spec.streams, "window": spec.window or 0,
        "socket_buffer": spec.socket_buffer or 0,
        **_requests(spec, route)}
    return settings, route


def _begin(bench: _core._Bench, prepared: bool, coordinator: Coordinator | None) -> float | None:
    """The measured part's start (seconds since the epoch), or None when it
    never began (Ctrl-C during the warmup, or the coordinator gave up)."""
    if not prepared:
        return time.time()
    at = None
    if _warm(bench):
        at = time.time() if coordinator is None else coordinator.prepared()
    if at is None:
        bench.stop()
    else:
        bench.go(at)
    return at


def run_local(spec: RunSpec, progress: Progress = "auto", stream: IO[str] | None = None,
              coordinator: Coordinator | None = None,
              endpoint: tuple[Endpoint, str] | None = None) -> Result:
    """Runs spec through the C loop on this machine (httpbench.run's work
    when no cluster is given, and each cluster worker's)."""
    # A warmup runs on the run's own connections (a prepared start: the
    # loop warms up, then waits for go()); a run spread over machines
    # always starts so, every connection open before the common instant.
    prepared = bool(spec.warmup) or coordinator is not None
    settings, route = loop_settings(spec, prepared)
    live = _metrics(spec, endpoint)
    log = None
    try:
        if live is not None or (coordinator is not None and coordinator.publish):
            settings["publish"] = True
        if spec.log is not None:
            log = _log_file(spec)
            settings["log"] = log.setting(_LOG_DELAY_NS)
        try:
            bench = _core._Bench(settings)
        except BaseException:
            if log is not None:
                log.abandon()
            raise
        if log is not None:
            log.given()
        result = _measure(spec, bench, prepared, route, progress, stream, coordinator, live)
    finally:
        if live is not None and live[2]:
            live[0].close()
    if log is not None:
        written, dropped, err = bench.log_status()
        result.log, result.log_records, result.log_dropped = log.path, written, dropped
        why = [os.strerror(err)] if err else []
        why += [w for w in (log.finish(written),) if w]
        result.log_error = "; ".join(why)
    return result


# Tests only: the log's writer made slow on purpose (ns of sleep per pass
# over the rings), to show that records are then dropped and counted, the
# run not slowed.
_LOG_DELAY_NS = int(os.environ.get("HTTPBENCH_TEST_LOG_DELAY_NS", "0") or 0)


def _log_file(spec: RunSpec) -> LogFile:
    """The log's file, opened before anything is sent (a path that cannot
    be written is an OSError naming it)."""
    from .reqlog import LogFile
    assert spec.log is not None
    names = [r.name for r in spec.scenario.requests] if spec.scenario is not None else [""]
    seed = spec.scenario.seed if spec.scenario is not None else 0
    return LogFile(spec.log, names, spec.log_sample, seed)


def _metrics(spec: RunSpec, given: tuple[Endpoint, str] | None) -> Live | None:
    """run(metrics=): the endpoint, bound before anything is sent (a port
    in use is an OSError naming it), or the one given with this run's
    `stage` label (a capacity search's); this run's samples; whether the
    endpoint is this run's own."""
    if spec.metrics is None and given is None:
        return None
    from .metrics import Endpoint, RunMetrics, target_of
    if given is not None:
        endpoint, stage = given
        base = [("run", endpoint.run), ("stage", stage)]
    else:
        assert spec.metrics is not None
        endpoint = Endpoint(spec.metrics, spec.metrics_run)
        base = [("run", endpoint.run)]
    names = [r.name for r in spec.scenario.requests] if spec.scenario is not None else []
    shape = RunMetrics(base, names, target_of(spec.rate, spec.stages),
                       bool(spec.rate or spec.stages))
    return endpoint, shape, given is None


def _measure(spec: RunSpec, bench: _core._Bench, prepared: bool, route: ProxyRoute | None,
             progress: Progress, stream: IO[str] | None, coordinator: Coordinator | None,
             live: Live | None) -> Result:
    """The run driven to its end (its live metrics served meanwhile, and
    its final ones for metrics_linger after)."""
    if live is not None:
        endpoint, shape, own = live

        def now() -> Parts:
            return shape.live(bench.snapshot())
        endpoint.show(shape, now)
    at = _begin(bench, prepared, coordinator)
    if live is not None:
        shape.start = at
    started: str | None = None
    interrupted_at: float | None = None
    if at is None:
        interrupted, interrupted_at = True, 0.0
        while not bench.wait(0.25):
            pass
        raw = _nothing_measured()
    else:
        out = stream if stream is not None else sys.stderr
        reporter = Reporter(progress, spec.requests, spec.duration, out) if progress else None
        started = datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat(
            timespec="milliseconds")
        raw, stopped = _drive(bench, reporter, coordinator)
        interrupted = stopped is not None
        if stopped is not None:
            interrupted_at = max(0.0, stopped - at)
    if not interrupted:
        # Under a rate or a shape the run lasts its schedule, and one its
        # duration ended lasts that: requests over the time to the last
        # answer would make 1 request a second for 1 s read as 1 / latency,
        # and a server that stopped answering read as fast as its last
        # answer (ab -t, wrk and h2load -D count the time to the end).
        length = schedule_length(spec.requests, spec.duration,
                                 spec.rate if spec.stages is None else None, spec.stages)
        if not length and spec.duration and not (spec.requests and
                                                 raw["issued"] >= spec.requests):
            length = spec.duration
        for part in [raw, *raw.get("by_request", ())]:
            part["time_taken"] = max(part["time_taken"], length)
    result = _results(spec, raw, started=started, interrupted=interrupted, route=route,
                      interrupted_at=interrupted_at)
    if live is not None:
        endpoint.finish(shape.final(result))
        if own:
            endpoint.linger(spec.metrics_linger)
    return result


def _results(spec: RunSpec, raw: dict[str, Any], started: str | None, interrupted: bool,
             route: ProxyRoute | None, interrupted_at: float | None = None) -> Result:
    """The run's Result, and a scenario's per-name Results in it."""
    t, scenario = spec.target, spec.scenario
    common = dict(
        start_time=started, host=t.host, port=t.port, requests=spec.requests,
        concurrency=spec.concurrency, threads=spec.loop_threads, rate=spec.rate,
        interrupted=interrupted, interrupted_at=interrupted_at,
        unix_socket=spec.unix_socket or "", pipeline=spec.pipeline,
        proxy=route.label if route else "", stages=list(spec.stages or []),
        concurrency_stages=list(spec.concurrency_stages or []),
        http_version="2" if spec.http2 else "1.1", streams=spec.streams)
    method, path = spec.method, t.path
    if scenario is not None:
        methods = {r.method for r in scenario.requests}
        method = methods.pop() if len(methods) == 1 else "MIXED"
        path = f"{len(scenario.requests)} requests ({scenario.order})"
    url = public_url(spec.url)
    result = _result(raw, url=url, method=method, path=path, **common)
    result.client = client_figures(raw, bool(spec.rate or spec.stages),
                                   min(spec.loop_threads, spec.concurrency))
    if spec.http2 and not result.issued and not result.first_error and result.connects and \
            result.streams_allowed is None and not result.streams_unlimited:
        # Connected, and no SETTINGS came: no stream could open (RFC 9113
        # section 3.4: the server's preface is its SETTINGS), so nothing
        # was issued and nothing counted, and the report said nothing.
        result.first_error = (f"no server SETTINGS within {result.time_taken:.1f} s on "
                              f"{result.connects:,} connection{'s' * (result.connects != 1)}: "
                              "nothing could be sent; is it an HTTP/2 server?")
    # Each second's buckets, for a merge with other machines' seconds.
    result.timeline_buckets = raw.get("timeline_buckets", [])
    if scenario is not None:
        # Each request's own figures (no timeline or CPU time: the run's).
        each = raw.get("by_request") or [_nothing_measured() for _ in scenario.requests]
        for r, part in zip(scenario.requests, each, strict=True):
            part.update(cpu_user=0.0, cpu_sys=0.0, timeline=[])
            result.by_name[r.name] = _result(part, url=url, method=r.method, path=describe(r),
                                             **common)
    return result


def _result(raw: dict[str, Any], **about: Any) -> Result:
    """A Result from the loop's figures (Bench.result()'s dict, named as
    Result names them: csrc/py_bench.c's tables) and what the run was (url,
    method, path, concurrency, ...). A count without a field of its own
    goes to Result.counts."""
    fields: dict[str, Any] = {}
    counts: dict[str, int] = {}
    for name in _core.RESULT_COUNTS:
        if name not in FAILURE_CLASSES:
            (fields if name in _RESULT_FIELDS else counts)[name] = raw[name]
    for name in _core.RESULT_SECONDS + _core.RESULT_TEXTS:
        fields[name] = raw[name]
    for name in _core.RESULT_HISTOGRAMS:
        fields[name] = Latency(raw[name])
    doc = raw["document_length"]
    for name in ("streams_allowed", "streams_unlimited", "streams_max_used", "reset_codes",
                 "conn_rps_min", "conn_rps_max", "conn_rps_mean", "conn_rps_sd"):
        if name in raw:
            fields[name] = raw[name]
    return Result(
        failures={name: raw.get(name, 0) for name in FAILURE_CLASSES},
        status_counts=raw["status_counts"],
        document_length=doc if isinstance(doc, int) and doc >= 0 else None,
        timeline=[Second(t, c, f, p50 / 1e9, p99 / 1e9, n)
                  for t, c, f, p50, p99, n in raw["timeline"]],
        counts=counts, **fields, **about)


_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(Result))
