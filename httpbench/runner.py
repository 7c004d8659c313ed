"""httpbench.run: a load of requests through the C timing loop, on this
machine (httpbench.local) or over a Dask cluster (httpbench.distributed).
The arguments are checked once, into a RunSpec (httpbench.spec)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, Any

from . import _check
from ._request import (Headers, Path, basic_auth, cpus_here, host_field, parse_url,
                       tls_context, url_credentials, with_header)
from .local import Coordinator, loop_settings, run_local, schedule_length
from .progress import Progress, Reporter, check_progress
from .result import Result
from .scenario import Scenario
from .spec import DEFAULT_DURATION, RunSpec

__all__ = ["run", "preflight", "parse_url", "url_credentials", "basic_auth", "cpus_here",
           "with_header", "host_field", "tls_context", "schedule_length", "DEFAULT_DURATION"]


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
    grace: float = 1.0,
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
    http2: bool = False,
    streams: int = 1,
    window: int | None = None,
    socket_buffer: int | None = None,
    metrics: str | None = None,
    metrics_run: str | None = None,
    metrics_linger: float = 0.0,
    log: str | os.PathLike[str] | None = None,
    log_sample: float = 1.0,
    cluster: Any = None,
    workers: int | None = None,
    _coordinator: Coordinator | None = None,
    _endpoint: Any = None,
) -> Result:
    """Runs a load against url and returns what it measured (ab's report
    is str(result); docs/running.md says every argument's meaning).

    requests=N issues exactly N requests; duration=S runs for S seconds
    (with both, whichever ends first; with neither, 10 seconds, as wrk).
    concurrency keep-alive connections (1 unless given, as in ab) share
    `threads` OS threads (this machine's CPUs, capped). rate=R runs open
    loop, latency counted from each request's intended start: each
    connection keeps a schedule of its own (wrk2's), connection i's k-th
    start due at (i + k*concurrency)/R, and requests=N takes the first N
    starts the connections make; when all keep up they are the N slots
    before N/R, but a connection that lags keeps its own slots while the
    others take their later ones, so a run can use slots past N/R and
    last longer (docs/running.md). stages and
    concurrency_stages shape the rate or the connections (k6's ramps).
    timeout bounds each request (None: no limit); warmup (an int:
    requests, a float: seconds) runs first and is left out. Every request
    issued ends complete, failed or cancelled: once the duration ends or
    Ctrl-C comes, the requests in flight get `grace` seconds to finish (0:
    none, as wrk and h2load stop) and the rest are cancelled; Ctrl-C
    returns the partial result with interrupted=True. progress ("auto": a tqdm bar or a live
    line on a terminal, ab's lines elsewhere; True, False; or a function
    called with (complete, failed) a few times a second and once at the
    end) is written to stream (stderr unless given).

    https:// speaks TLS, verified (verify, cafile, server_hostname) unlike
    ab and wrk; tls_min/tls_max, ciphers, ciphersuites, certfile/keyfile
    and tls_resume tune it. unix_socket connects to a Unix socket, proxy
    goes through a forward proxy, pipeline keeps N requests in flight per
    connection, scenario runs several requests (httpbench.Scenario),
    http2 speaks HTTP/2 (h2 by ALPN over https://, h2c by prior knowledge
    over http://) with up to `streams` requests in flight on each
    connection and the client's windows `window` bytes (wide open unless
    given), metrics="HOST:PORT" serves live figures for Prometheus at
    /metrics (OpenMetrics, or the classic text format to a scraper that
    does not ask for it; a `run` label of metrics_run, and the final
    figures kept for metrics_linger seconds after the end), log=FILE
    writes a record per request (or a random `log_sample` of them) as CSV,
    JSON lines or SQLite by the file's extension (httpbench.read_log reads
    it back), and
    cluster (a dask.distributed.Client or an address) spreads the run over
    `workers` of a Dask cluster's workers, merged exactly.

    A number out of range or arguments that do not go together are a
    SettingError (a ValueError) naming the argument, before anything is
    sent; docs/arguments.md has every argument's default and range.
    """
    check_progress(progress)
    # Each setting by name (spec.py declares them; a test holds this
    # signature to the declaration).
    spec = RunSpec.from_arguments(
        url, method=method, body=body, headers=headers, requests=requests, duration=duration,
        concurrency=concurrency, threads=threads, keepalive=keepalive, rate=rate,
        timeout=timeout, grace=grace, warmup=warmup, lengths_vary=lengths_vary, verify=verify,
        cafile=cafile, certfile=certfile, keyfile=keyfile, server_hostname=server_hostname,
        tls_min=tls_min, tls_max=tls_max, ciphers=ciphers, ciphersuites=ciphersuites,
        tls_resume=tls_resume, unix_socket=unix_socket, pipeline=pipeline, proxy=proxy,
        stages=stages, concurrency_stages=concurrency_stages, scenario=scenario, http2=http2,
        streams=streams, window=window, socket_buffer=socket_buffer, metrics=metrics,
        metrics_run=metrics_run, metrics_linger=metrics_linger, log=log, log_sample=log_sample)
    if cluster is not None and spec.log is not None:
        raise ValueError("log with a cluster is not supported: each worker's requests are on "
                         "its own machine (give each worker's run its own log)")
    if cluster is not None:
        return _on_cluster(spec, cluster, workers, progress, stream)
    if workers is not None:
        raise ValueError("workers is for a run over a cluster: give cluster= too")
    return run_local(spec, progress, stream, _coordinator, _endpoint)


def preflight(url: str, **given: Any) -> None:
    """Raises what run(url, **given) would raise for its settings alone (a
    SettingError or ValueError naming the argument; a TLS file or a cipher
    list that cannot be loaded), sending nothing and opening nothing: a
    command line's check before it prints its banner. What needs the
    network (a name, a connection) is run()'s to find."""
    if "progress" in given:
        check_progress(given.pop("progress"))
    cluster = given.pop("cluster", None)
    given.pop("workers", None)
    given.pop("stream", None)
    spec = RunSpec.from_arguments(url, **given)
    if cluster is None:
        loop_settings(spec, False)


def _on_cluster(spec: RunSpec, cluster: Any, workers: int | None, progress: Progress,
                stream: IO[str] | None) -> Result:
    """run() over a Dask cluster, its spec checked before any worker is
    asked: httpbench.distributed."""
    from .distributed import run_on_cluster

    if workers is not None:
        workers = _check.count("workers", workers, 1, 100_000)
    reporter = None
    if progress:
        reporter = Reporter(progress, spec.requests, spec.duration,
                            stream if stream is not None else sys.stderr)
    result = run_on_cluster(spec.url, cluster, workers, spec.arguments(),
                            reporter.update if reporter is not None else None)
    if reporter is not None:
        reporter.close(result.complete, result.failed)
    return result
