"""httpbench.run: a load of requests through the C timing loop."""

from __future__ import annotations

import base64
import datetime
import math
import os
import resource
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

from . import _check, _core
from ._url import Target, ascii_host, proxy_plan, split_url
from .result import FAILURE_CLASSES, Latency, Result, Second
from .scenario import Scenario, describe, loop_form

__all__ = ["run", "parse_url", "url_credentials", "basic_auth", "cpus_here", "with_header",
           "host_field", "tls_context"]

# With neither requests nor a duration a run lasts this long (wrk's default).
DEFAULT_DURATION = 10.0
USER_AGENT = f"httpbench/{_core.__version__}"
# Methods a client may send again unasked (RFC 9110 section 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
Headers = Mapping[str, str] | Mapping[bytes, bytes] | Iterable[tuple[str | bytes, str | bytes]]
Progress = bool | Literal["auto"]
Path = str | os.PathLike[str]


def parse_url(url: str) -> tuple[str, int, str]:
    """(host, port, path with query) of an http:// or https:// URL;
    ValueError otherwise (httpbench._url.split_url says which scheme)."""
    t = split_url(url)
    return t.host, t.port, t.path


def url_credentials(url: str) -> tuple[str, str] | None:
    """The user and password of an http://user:pass@host/ URL,
    percent-decoded, as curl reads them; None when it has none."""
    parts = urlsplit(url)
    if parts.username is None:
        return None
    return unquote(parts.username), unquote(parts.password or "")


def basic_auth(user: str, password: str) -> str:
    """An Authorization value for HTTP Basic (RFC 7617), UTF-8 as curl sends."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def with_header(headers: Headers | None, name: str, value: str) -> list[tuple[Any, Any]]:
    """headers as a list of pairs, with name: value added unless already
    given (any case)."""
    if headers is None:
        pairs: list[tuple[Any, Any]] = []
    elif isinstance(headers, Mapping):
        pairs = list(headers.items())
    else:
        pairs = list(headers)
    lower = name.lower()
    if not any((k.decode("latin-1") if isinstance(k, bytes) else str(k)).lower() == lower
               for k, _ in pairs):
        pairs.append((name, value))
    return pairs


def cpus_here() -> int:
    """The CPUs this process may run on (taskset and cgroups included)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_field(host: str, port: int, tls: bool = False) -> bytes:
    """The Host field for host:port, the scheme's default port left out
    (RFC 9110 section 7.2), an IPv6 address in brackets."""
    name = f"[{host}]" if ":" in host else ascii_host(host)
    return (name if port == (443 if tls else 80) else f"{name}:{port}").encode("ascii")


def tls_context(target: Target, verify: bool = True, cafile: Path | None = None,
                certfile: Path | None = None, keyfile: Path | None = None,
                server_hostname: str | None = None, tls_min: str | None = "1.2",
                tls_max: str | None = None, ciphers: str | None = None,
                ciphersuites: str | None = None, tls_resume: bool = True) -> _core._TLS | None:
    """The C loop's TLS settings for an https:// target (None for http://,
    where the TLS-only arguments are an error rather than silently unused).
    Files are checked here, so a wrong path is a FileNotFoundError naming
    it before anything is sent."""
    only_tls = {"cafile": cafile, "certfile": certfile, "keyfile": keyfile,
                "server_hostname": server_hostname, "tls_max": tls_max, "ciphers": ciphers,
                "ciphersuites": ciphersuites}
    if not target.tls:
        given = [k for k, v in only_tls.items() if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for "
                             "https:// URLs")
        return None
    lo, hi = _check.tls_version("tls_min", tls_min), _check.tls_version("tls_max", tls_max)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"tls_min {tls_min!r} is above tls_max {tls_max!r}")
    for name, path in (("cafile", cafile), ("certfile", certfile), ("keyfile", keyfile)):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"{name}: no such file: {os.fspath(path)}")
    return _core._TLS(
        verify=bool(verify), cafile=cafile, certfile=certfile, keyfile=keyfile,
        server_hostname=_check.text("server_hostname", server_hostname) or target.host,
        tls_min=lo, tls_max=hi, ciphers=_check.text("ciphers", ciphers),
        ciphersuites=_check.text("ciphersuites", ciphersuites), resume=bool(tls_resume))


def _fd_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    ip = getattr(shell, "get_ipython", lambda: None)() if shell else None
    return ip is not None and "IPKernelApp" in getattr(ip, "config", {})


class _Reporter:
    """Progress outside the timed path, read from Python a few times a
    second while the C loop runs: a tqdm bar in a notebook or on a terminal
    when tqdm is installed, else a live line on a terminal, and ab's
    "Completed N requests" lines elsewhere. The bar's total is what was
    planned: the requests, or for a run by duration alone its seconds."""

    def __init__(self, mode: Progress, total: int | None, seconds: float | None,
                 stream: IO[str]) -> None:
        tty = stream.isatty()
        self.bar: Any = None
        # A run by duration alone is measured in seconds on the bar.
        self.seconds = seconds if total is None else None
        if mode == "auto" and (tty or _in_notebook()):
            try:
                from tqdm.auto import tqdm
            except ImportError:
                pass
            else:
                if self.seconds is not None:
                    self.bar = tqdm(total=round(self.seconds, 1), unit="s", file=stream,
                                    dynamic_ncols=True, bar_format="{l_bar}{bar}| {n:.1f}/"
                                    "{total:.1f} s [{elapsed}<{remaining}{postfix}]")
                else:
                    self.bar = tqdm(total=total, unit="req", file=stream, dynamic_ncols=True)
        self.done = 0
        self.live = self.bar is None and (mode is True or (mode == "auto" and tty))
        self.lines = mode == "auto" and not tty and total is not None and total >= 10
        self.total, self.stream = total, stream
        self.step = max(1, (total or 0) // 10)
        self.next_line = self.step
        self.t0 = time.monotonic()
        self.last = (self.t0, 0)

    def update(self, complete: int, failed: int) -> None:
        done = complete + failed
        if self.bar is not None:
            now = time.monotonic()
            if self.seconds is not None:
                # The bar counts seconds: the rate and the count go beside it.
                since = now - self.t0
                self.bar.set_postfix_str(
                    f"{done:,} done, {complete / since if since > 0 else 0:,.0f} req/s, "
                    f"{failed:,} failed", refresh=False)
            else:
                # tqdm's own line has the count and the rate: failures alone.
                self.bar.set_postfix_str(f"{failed:,} failed", refresh=False)
            if self.seconds is not None:
                self.bar.n = round(min(now - self.t0, self.seconds), 1)
                self.bar.refresh()
            else:
                self.bar.update(done - self.done)
            self.done = done
        elif self.live:
            now = time.monotonic()
            t, n = self.last
            rps = (complete - n) / (now - t) if now > t else 0.0
            self.last = (now, complete)
            total = f"/{self.total}" if self.total else ""
            self.stream.write(f"\r{done}{total} done, {rps:,.0f} req/s, {failed} failed   ")
            self.stream.flush()
        elif self.lines:
            while done >= self.next_line and self.next_line <= (self.total or 0):
                self.stream.write(f"Completed {self.next_line} requests\n")
                self.next_line += self.step

    def close(self, complete: int, failed: int) -> None:
        if self.bar is not None:
            self.update(complete, failed)
            self.bar.close()
            return
        if self.live:
            self.stream.write("\r" + " " * 60 + "\r")
        elif self.lines:
            self.update(complete, failed)
            self.stream.write(f"Finished {complete + failed} requests\n")
        self.stream.flush()


class Coordinator(Protocol):
    """What a run spread over machines (httpbench.distributed) gives
    run() on each worker: the common start, progress out, a stop in."""

    def prepared(self) -> float | None:
        """Every connection is warm: returns the start instant (seconds
        since the epoch) once every worker is, or None to give up."""

    def progress(self, issued: int, complete: int, failed: int) -> bool:
        """A few times a second; returns True to stop the run."""


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


def _drive(bench: _core._Bench, reporter: _Reporter | None,
           coordinator: Coordinator | None = None) -> tuple[dict[str, Any], bool]:
    """Waits for the run, updating progress; Ctrl-C stops it early (the C
    loop gives requests in flight a second, then cancels them)."""
    interrupted = False
    try:
        while not bench.wait(0.25):
            issued, complete, failed = bench.progress()
            if reporter:
                reporter.update(complete, failed)
            if coordinator is not None and coordinator.progress(issued, complete, failed):
                bench.stop()
    except KeyboardInterrupt:
        interrupted = True
        bench.stop()
        while not bench.wait(0.25):
            pass
    if reporter:
        reporter.close(*bench.progress()[1:])
    if coordinator is not None:
        coordinator.progress(*bench.progress())
    return bench.result(), interrupted


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
    """The figures of a run that never began (Ctrl-C during the warmup)."""
    raw: dict[str, Any] = dict.fromkeys(
        ("issued", "complete", "failed", "cancelled", "non_2xx", "bytes_received", "body_bytes",
         "bytes_sent", "keepalive_requests", "connects", "reconnects", "tls_full_handshakes",
         "tls_resumed_handshakes", *FAILURE_CLASSES), 0)
    raw.update(status_counts={}, document_length=-1, server_software="", elapsed=0.0,
               cpu_user=0.0, cpu_sys=0.0, error="", timeline=[], tls_protocol="",
               tls_temp_key="", tls_server_name="")
    for name in ("total", "uncorrected", "connect_time", "waiting", "processing",
                 "tls_handshake"):
        raw[name] = _core.Histogram()
    return raw


def run(
    url: str,
    method: str = "GET",
    body: bytes | str | None = None,
    headers: Headers | None = None,
    requests: int | None = None,
    duration: float | None = None,
    concurrency: int = 1,
    threads: int | None = None,
    keepalive: bool = True,
    rate: float | None = None,
    timeout: float | None = 30.0,
    warmup: int | float | None = None,
    progress: Progress = "auto",
    lengths_vary: bool = False,
    stream: IO[str] | None = None,
    *,
    verify: bool = True,
    cafile: Path | None = None,
    certfile: Path | None = None,
    keyfile: Path | None = None,
    server_hostname: str | None = None,
    tls_min: str | None = "1.2",
    tls_max: str | None = None,
    ciphers: str | None = None,
    ciphersuites: str | None = None,
    tls_resume: bool = True,
    unix_socket: Path | None = None,
    pipeline: int = 1,
    proxy: str | None = None,
    stages: Iterable[tuple[float, float]] | None = None,
    concurrency_stages: Iterable[tuple[float, float]] | None = None,
    scenario: Scenario | None = None,
    cluster: Any = None,
    workers: int | None = None,
    _coordinator: Coordinator | None = None,
) -> Result:
    """Runs a load against url and returns what it measured.

    requests=N issues exactly N requests; duration=S runs for S seconds
    (with requests too: whichever ends first); with neither, the run lasts
    10 seconds, as wrk's does. concurrency keep-alive connections (1 unless given, as in ab)
    share `threads` OS threads (the CPUs this process may run on, capped by
    concurrency). rate=R runs open-loop at R requests a second over the
    whole run, spread evenly from the first request; latency is counted
    from each request's intended start. Credentials in the URL
    (http://user:pass@host/) become an Authorization header, as in curl.
    timeout bounds each request (None: no limit). warmup (an int: requests;
    a float: seconds) runs first and is left out.

    Every request issued ends complete, failed or cancelled: when the
    duration ends or Ctrl-C stops the run, requests in flight get a second
    to finish, and those still in flight are cancelled. Ctrl-C, during the
    warmup too, ends the whole run: the partial result comes back with
    interrupted=True.

    https:// URLs speak TLS (OpenSSL, in C). The server's certificate is
    verified against the system's CAs (or `cafile`) and its name (the
    URL's host, or `server_hostname`), unlike ab, wrk and hey:
    verify=False for a self-signed test server. certfile/keyfile: a client
    certificate. tls_min/tls_max: "1.2" or "1.3"; ciphers: OpenSSL's list
    for TLS 1.2; ciphersuites: TLS 1.3's. Each connection shakes hands once
    under keep-alive; with keepalive=False each request's connection
    resumes the last session (tickets) unless tls_resume=False. The
    handshakes are counted (tls_full_handshakes, tls_resumed_handshakes)
    and timed (tls_handshake) apart; the connect time includes them.

    unix_socket="/path" connects to that Unix socket instead of the URL's
    host and port (curl's --unix-socket); the URL still gives the Host
    field, the path and the scheme (https:// speaks TLS over the socket).

    pipeline=N keeps up to N requests in flight on each connection, written
    together and answered in order (HTTP/1.1 pipelining, wrk's pipeline
    script); each request's latency runs from its write to its last
    response byte. Requests a server leaves unanswered when it closes are
    sent again on a new connection if the method allows it (GET, HEAD, PUT,
    DELETE, OPTIONS, TRACE), else counted failed; again and again while
    each new connection answers some, once if it answers none. Not with
    rate.

    proxy="http://[user:pass@]host:port" (ab's -X and -P) sends through a
    forward proxy: an http:// URL's requests in absolute form, an https://
    URL's through a CONNECT tunnel per connection, TLS inside it (its round
    trip counts in the connect time; a refusal, 407 or 502, is a non-2xx
    response with its status). Credentials become Proxy-Authorization.
    Environment variables are not read (the command line's
    --proxy-from-env does).

    stages=[(seconds, rate), ...] shapes the load (k6's ramping arrival
    rate): over each stage the arrival rate ramps linearly from the last
    stage's target (0 before the first) to its own, starts are scheduled
    from the shape and latency counts from each intended start, as under a
    rate. The stages set the run's length and rate: duration, requests and
    rate beside them are a ValueError, and so is pipeline. The timeline
    (per second) shows the ramp; Result.rate is the shape's mean rate and
    Result.stages the shape.

    concurrency_stages=[(seconds, connections), ...] ramps the connections
    instead (k6's ramping VUs), closed loop: connection i runs while the
    shape is at i + 1 or above, finishing its request in flight when the
    shape falls below, then closing. Its peak is the concurrency; the
    stages set the run's length (duration, requests, rate, stages,
    pipeline or a concurrency beside them are a ValueError).
    Result.concurrency_stages is the shape.

    scenario=httpbench.Scenario([...]) runs several requests (see
    httpbench.scenario): the URL gives the scheme, host and port, and
    `headers` apply to every Request under its own; method and body are
    the Requests' (giving them here is a ValueError, as is pipeline).
    Result.by_name[name] holds each request's figures; the Result is their
    exact sum.

    cluster=a dask.distributed.Client or a scheduler address
    ("tcp://host:8786") spreads the run over the cluster's workers
    (`workers` of them, default all; see httpbench.distributed): requests,
    connections, rate and stages are split exactly, every worker warms its
    connections up and all begin at one instant, and the Result is the
    exact merge of theirs, with Result.workers each worker's part.
    """
    if cluster is not None:
        asked = {k: v for k, v in locals().items()
                 if k not in ("url", "cluster", "workers", "_coordinator", "progress", "stream")}
        return _on_cluster(url, cluster, workers, asked, progress, stream)
    if workers is not None:
        raise ValueError("workers is for a run over a cluster: give cluster= too")
    target = split_url(url)
    host, port, path = target.host, target.port, target.path
    shape = None
    if stages is not None:
        given = [n for n, v in (("duration", duration), ("requests", requests), ("rate", rate))
                 if v is not None]
        if given:
            raise ValueError(f"stages set the run's length and rate: no {' or '.join(given)} "
                             "beside them")
        if pipeline != 1:
            raise ValueError("pipeline with stages is not supported: an open loop's requests "
                             "start on their own schedule, not in batches")
        shape = _check.stages(stages)
        duration = sum(secs for secs, _ in shape)
        rate = _check.shape_total(shape) / duration
    vus = None
    if concurrency_stages is not None:
        given = [n for n, v in (("duration", duration), ("requests", requests), ("rate", rate),
                                ("stages", stages)) if v is not None]
        if concurrency != 1:
            given.append("concurrency")
        if pipeline != 1:
            given.append("pipeline")
        if given:
            raise ValueError("concurrency_stages set the run's length and connections, closed "
                             f"loop: no {' or '.join(given)} beside them")
        vus = _check.stages(concurrency_stages, "concurrency_stages", "connections",
                            _check.MAX_CONCURRENCY)
        duration = sum(secs for secs, _ in vus)
        concurrency = max(1, math.floor(max(v for _, v in vus) + 1e-9))
    if requests is None and duration is None:
        duration = DEFAULT_DURATION
    if requests is not None:
        requests = _check.count("requests", requests)
    if duration is not None:
        duration = _check.seconds("duration", duration)
    concurrency = _check.count("concurrency", concurrency, 1, _check.MAX_CONCURRENCY)
    if threads is None:
        threads = min(cpus_here(), concurrency)
    threads = _check.count("threads", threads, 1, _check.MAX_THREADS)
    if rate is not None and shape is None:
        rate = _check.rate(rate, concurrency)
    timeout_s = _check.YEAR if timeout is None else _check.seconds("timeout", timeout)
    unix_path = _check.unix_socket("unix_socket", unix_socket)
    pipeline = _check.count("pipeline", pipeline, 1, _check.MAX_PIPELINE)
    if proxy is not None and unix_path is not None:
        raise ValueError("proxy and unix_socket are two ways to the server: give one")
    if pipeline > 1 and rate is not None:
        raise ValueError("pipeline with rate is not supported: an open loop's requests start "
                         "on their own schedule, not in batches")
    warmup = _check.warmup(warmup)
    if scenario is not None:
        if not isinstance(scenario, Scenario):
            raise ValueError(f"scenario must be an httpbench.Scenario, not {scenario!r}")
        if method != "GET" or body is not None:
            raise ValueError("a scenario's Requests give the methods and bodies: no method or "
                             "body beside it")
        if pipeline > 1:
            raise ValueError("pipeline with a scenario is not supported")
    tls = tls_context(target, verify, cafile, certfile, keyfile, server_hostname, tls_min, tls_max,
                      ciphers, ciphersuites, tls_resume)
    # A socket per connection, an epoll and a timerfd per thread, and room
    # for what the process has open already.
    limit, files = _fd_limit(), concurrency + 2 * min(threads, concurrency) + 16
    if files > limit:
        raise ValueError(f"concurrency {concurrency} over {min(threads, concurrency)} threads "
                         f"needs {files} files, above the open-file limit ({limit}); "
                         "raise it with ulimit -n")
    credentials = url_credentials(url)
    if credentials is not None:
        headers = with_header(headers, "Authorization", basic_auth(*credentials))
    # ab sends both; a server that routes or logs by them sees a client.
    # (Connection.request sends only what it must: Host, Content-Length.)
    headers = with_header(with_header(headers, "User-Agent", USER_AGENT), "Accept", "*/*")
    if not keepalive:
        # RFC 9112 section 9.6: the server then closes first, so TIME_WAIT
        # stays on its side (as under ab without -k), not on the client's
        # ephemeral ports, and it answers without a keep-alive field.
        headers = with_header(headers, "Connection", "close")
    tunnel, to_host, to_port = None, host, port
    plan = None
    # Through a forward proxy to an http:// server: the absolute form and
    # the proxy's credentials, added by the request builder.
    via = {"origin": b"", "proxy_auth": b""}
    if proxy is not None:
        plan = proxy_plan(proxy, host, port, target.tls, USER_AGENT)
        to_host, to_port, tunnel = plan.host, plan.port, plan.tunnel
        via = {"origin": (plan.origin or "").encode("ascii"),
               "proxy_auth": (plan.auth or "").encode("ascii")}
    loop = None
    if scenario is not None:
        loop = loop_form(scenario, url, headers, host_field(host, port, target.tls), via)
        request, head = loop[0][0][0], loop[0][2]
        methods = {r.method for r in scenario.requests}
        method = methods.pop() if len(methods) == 1 else "MIXED"
        path = f"{len(scenario.requests)} requests ({scenario.order})"
    else:
        request, flags = _core.build_request(method, path, headers, body,
                                             host_field(host, port, target.tls), **via)
        head = bool(flags & _core.REQ_HEAD)

    # A warmup runs on the run's own connections (a prepared start: the
    # loop warms up, then waits for go()); a run spread over machines
    # always starts so, every connection open before the common instant.
    prepared = bool(warmup) or _coordinator is not None
    bench = _core._Bench(
        to_host, to_port, request, head, requests or 0, duration or 0.0, concurrency, threads,
        keepalive, (rate or 0.0) if shape is None else 0.0, timeout_s, lengths_vary, tls,
        unix_path, pipeline, method.upper() in IDEMPOTENT, tunnel, shape, vus, loop,
        scenario is not None and scenario.order == "sequence",
        scenario.seed if scenario is not None else 0, prepared,
        warmup if isinstance(warmup, int) else 0,
        warmup if isinstance(warmup, float) else 0.0)

    at: float | None = time.time()
    if prepared:
        at = None
        if _warm(bench):
            at = time.time() if _coordinator is None else _coordinator.prepared()
        if at is None:
            bench.stop()
        else:
            bench.go(at)
    started: str | None = None
    if at is None:
        interrupted = True
        while not bench.wait(0.25):
            pass
        raw = _nothing_measured()
    else:
        stream = stream if stream is not None else sys.stderr
        reporter = _Reporter(progress, requests, duration, stream) if progress else None
        started = datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat(
            timespec="milliseconds")
        raw, interrupted = _drive(bench, reporter, _coordinator)
    if not interrupted:
        # Under a rate or a shape the run lasts its schedule: requests over
        # the time to the last answer would make 1 request a second for 1 s
        # read as 1 / latency.
        length = schedule_length(requests, duration, rate if shape is None else None, shape)
        for part in [raw, *raw.get("by_request", ())]:
            part["elapsed"] = max(part["elapsed"], length)
    common = dict(
        start_time=started, host=host, port=port, requests=requests, concurrency=concurrency,
        threads=min(threads, concurrency), rate=rate, interrupted=interrupted,
        unix_socket=unix_path or "", pipeline=pipeline, proxy=plan.label if plan else "",
        stages=list(shape or []), concurrency_stages=list(vus or []))
    result = _result(raw, url=_public_url(url), method=method, path=path, **common)
    # Each second's buckets, for a merge with other machines' seconds.
    result.timeline_buckets = raw.get("timeline_buckets", [])
    if scenario is not None:
        # Each request's own figures (no timeline or CPU time: the run's).
        each = raw.get("by_request") or [_nothing_measured() for _ in scenario.requests]
        for r, part in zip(scenario.requests, each, strict=True):
            part.update(cpu_user=0.0, cpu_sys=0.0, timeline=[])
            result.by_name[r.name] = _result(part, url=_public_url(url), method=r.method,
                                             path=describe(r), **common)
    return result


def _result(raw: dict[str, Any], **about: Any) -> Result:
    """A Result from the loop's figures (Bench.result()'s dict) and what
    the run was (url, method, path, concurrency, ...)."""
    failures = {name: raw.get(name, 0) for name in FAILURE_CLASSES}
    doc = raw["document_length"]
    return Result(
        issued=raw["issued"], complete=raw["complete"], failed=raw["failed"],
        cancelled=raw["cancelled"], failures=failures, non_2xx=raw["non_2xx"],
        status_counts=raw["status_counts"], time_taken=raw["elapsed"],
        bytes_received=raw["bytes_received"], body_bytes=raw["body_bytes"],
        bytes_sent=raw["bytes_sent"],
        document_length=doc if isinstance(doc, int) and doc >= 0 else None,
        server_software=raw["server_software"], keepalive_requests=raw["keepalive_requests"],
        connects=raw["connects"], reconnects=raw["reconnects"],
        cpu_user=raw["cpu_user"], cpu_sys=raw["cpu_sys"], first_error=raw["error"],
        latency=Latency(raw["total"]), latency_uncorrected=Latency(raw["uncorrected"]),
        connect_time=Latency(raw["connect_time"]), processing=Latency(raw["processing"]),
        waiting=Latency(raw["waiting"]),
        timeline=[Second(t, c, f, p50 / 1e9, p99 / 1e9) for t, c, f, p50, p99 in raw["timeline"]],
        first_head=raw.get("first_head", ""),
        tls_protocol=raw["tls_protocol"], tls_temp_key=raw["tls_temp_key"],
        tls_server_name=raw["tls_server_name"],
        tls_full_handshakes=raw["tls_full_handshakes"],
        tls_resumed_handshakes=raw["tls_resumed_handshakes"],
        tls_handshake=Latency(raw["tls_handshake"]), **about)


def _on_cluster(url: str, cluster: Any, workers: int | None, given: dict[str, Any],
                progress: Progress, stream: IO[str] | None) -> Result:
    """run() over a Dask cluster: its numbers checked here, before any
    worker is asked, then httpbench.distributed."""
    from .distributed import run_on_cluster

    split_url(url)
    if given["requests"] is None and given["duration"] is None and \
            given["stages"] is None and given["concurrency_stages"] is None:
        given["duration"] = DEFAULT_DURATION
    if given["requests"] is not None:
        given["requests"] = _check.count("requests", given["requests"])
    if given["duration"] is not None:
        given["duration"] = _check.seconds("duration", given["duration"])
    given["concurrency"] = _check.count("concurrency", given["concurrency"], 1,
                                        _check.MAX_CONCURRENCY)
    if given["rate"] is not None:
        given["rate"] = _check.rate(given["rate"], given["concurrency"])
    if given["stages"] is not None:
        given["stages"] = _check.stages(given["stages"])
    if given["concurrency_stages"] is not None:
        given["concurrency_stages"] = _check.stages(
            given["concurrency_stages"], "concurrency_stages", "connections",
            _check.MAX_CONCURRENCY)
    if workers is not None:
        workers = _check.count("workers", workers, 1, 100_000)
    reporter = None
    if progress:
        reporter = _Reporter(progress, given["requests"], given["duration"],
                             stream if stream is not None else sys.stderr)
    result = run_on_cluster(url, cluster, workers, given,
                            reporter.update if reporter is not None else None)
    if reporter is not None:
        reporter.close(result.complete, result.failed)
    return result


def _public_url(url: str) -> str:
    """url without a password, for reports and saved results."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"
    return parts._replace(netloc=netloc).geturl()
