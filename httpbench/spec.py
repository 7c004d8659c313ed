"""RunSpec: run()'s arguments checked once, into one frozen object.

run() and a cluster's workers build the same spec (the command line maps
its flags onto run()'s arguments); every rule lives here: each number's
range (the limits are the C core's, read through _check), the
combinations that make no sense (a rate with pipelining, stages beside a
duration, ...), and the defaults (10 seconds with neither requests nor a
duration). A wrong value is a ValueError naming the user's argument.
What the C loop then reads is httpbench.local's mapping of the spec, one
name per field of csrc/bench.h's hb_bench_config (csrc/py_bench.c's table
reads it).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
import os
import socket
from typing import Any

from . import _check
from ._request import Headers, Path, cpus_here
from ._url import Target, split_proxy, split_url
from .scenario import Scenario

__all__ = ["RunSpec", "DEFAULT_DURATION", "default_threads", "is_this_machine"]

# With neither requests nor a duration a run lasts this long (wrk's default).
DEFAULT_DURATION = 10.0
Shape = tuple[tuple[float, float], ...]


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """A run, checked. requests/duration/rate/concurrency are what the loop
    runs: under `stages` the duration is the stages' sum and the rate their
    mean; under `concurrency_stages` the duration is their sum and the
    concurrency their peak. `arguments()` gives back run()'s arguments."""

    url: str
    target: Target
    method: str = "GET"
    body: bytes | str | None = None
    headers: Headers | None = None
    requests: int | None = None
    duration: float | None = None
    concurrency: int = 1
    threads: int | None = None  # None: the CPUs of the machine that runs it
    keepalive: bool = True
    rate: float | None = None
    timeout: float = _check.YEAR  # seconds; run()'s None is a year
    warmup: int | float | None = None
    lengths_vary: bool = False
    verify: bool = True
    cafile: Path | None = None
    certfile: Path | None = None
    keyfile: Path | None = None
    server_hostname: str | None = None
    tls_min: str | None = "1.2"
    tls_max: str | None = None
    ciphers: str | None = None
    ciphersuites: str | None = None
    tls_resume: bool = True
    unix_socket: str | None = None
    pipeline: int = 1
    proxy: str | None = None
    stages: Shape | None = None
    concurrency_stages: Shape | None = None
    scenario: Scenario | None = None
    http2: bool = False
    streams: int = 1
    window: int | None = None
    metrics: str | None = None  # HOST:PORT to serve /metrics on while the run lasts
    metrics_run: str | None = None  # the `run` label (None: a short id)
    metrics_linger: float = 0.0  # seconds the final figures stay served
    log: str | None = None  # the per-request log's file (.csv, .jsonl, .db or .sqlite)
    log_sample: float = 1.0  # the fraction of requests logged, at random

    @classmethod
    def from_arguments(cls, url: str, **given: Any) -> RunSpec:
        """The spec of run(url, **given), every rule checked (given holds
        run()'s arguments but cluster, workers, progress and stream)."""
        a = {f.name: f.default for f in dataclasses.fields(cls)
             if f.default is not dataclasses.MISSING}
        unknown = set(given) - set(a)
        if unknown:
            raise TypeError(f"run() got unexpected arguments {sorted(unknown)}")
        a.update(given)
        a["url"], a["target"] = url, split_url(url)
        a["timeout"] = _check.YEAR if a["timeout"] is None else a["timeout"]
        _shapes(a)
        if a["requests"] is None and a["duration"] is None:
            a["duration"] = DEFAULT_DURATION
        _numbers(a)
        _combinations(a)
        return cls(**a)

    def arguments(self) -> dict[str, Any]:
        """run()'s arguments for this spec (url apart): what a cluster's
        worker is given, with its share put in."""
        a = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
             if f.name not in ("url", "target")}
        if self.stages is not None:
            a["duration"] = a["rate"] = None
            a["stages"] = list(self.stages)
        if self.concurrency_stages is not None:
            a["duration"], a["concurrency"] = None, 1
            a["concurrency_stages"] = list(self.concurrency_stages)
        return a

    @property
    def loop_threads(self) -> int:
        """The loop's threads here: those given, or default_threads',
        capped by the connections."""
        if self.threads:
            return min(self.threads, self.concurrency)
        host = split_proxy(self.proxy).host if self.proxy is not None else self.target.host
        local = self.unix_socket is not None or is_this_machine(host)
        return default_threads(self.concurrency, cpus_here(), local)


def default_threads(concurrency: int, cpus: int, local: bool) -> int:
    """The loop threads a run takes unless told, capped by the connections:
    this machine's CPUs, or half of them when the server is on this machine
    too (it needs CPUs of its own: with a server beside the client on two
    CPUs, one loop thread made 1.00 of the best req/s in 11 of 12 cases and
    two threads 0.58-1.00; docs/running.md has the measurements)."""
    return max(1, min(cpus // 2 if local else cpus, concurrency))


def is_this_machine(host: str) -> bool:
    """Whether host is this machine without a name lookup: a loopback
    address, "localhost", or an address one of its interfaces has (one a
    socket can be bound to). A name is not looked up (a remote host is
    the safe guess: all CPUs)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if address.is_loopback:
        return True
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.bind((name, 0))
        return True
    except OSError:
        return False


def _shapes(a: dict[str, Any]) -> None:
    """Load shapes checked; they set the run's length, rate or connections."""
    if a["stages"] is not None:
        given = [n for n in ("duration", "requests", "rate") if a[n] is not None]
        if given:
            raise ValueError(f"stages set the run's length and rate: no {' or '.join(given)} "
                             "beside them")
        if a["pipeline"] != 1:
            raise ValueError("pipeline with stages is not supported: an open loop's requests "
                             "start on their own schedule, not in batches")
        shape = tuple(_check.stages(a["stages"]))
        a["stages"], a["duration"] = shape, sum(secs for secs, _ in shape)
        a["rate"] = _check.shape_total(list(shape)) / a["duration"]
    if a["concurrency_stages"] is not None:
        given = [n for n in ("duration", "requests", "rate") if a[n] is not None]
        given += ["stages"] if a["stages"] is not None else []
        given += ["concurrency"] if a["concurrency"] != 1 else []
        given += ["pipeline"] if a["pipeline"] != 1 else []
        if given:
            raise ValueError("concurrency_stages set the run's length and connections, closed "
                             f"loop: no {' or '.join(given)} beside them")
        vus = tuple(_check.stages(a["concurrency_stages"], "concurrency_stages", "connections",
                                  _check.MAX_CONCURRENCY))
        a["concurrency_stages"], a["duration"] = vus, sum(secs for secs, _ in vus)
        a["concurrency"] = max(1, math.floor(max(v for _, v in vus) + 1e-9))


def _numbers(a: dict[str, Any]) -> None:
    """Each number in its range, by the name the user gave it."""
    if a["requests"] is not None:
        a["requests"] = _check.count("requests", a["requests"])
    if a["duration"] is not None:
        a["duration"] = _check.seconds("duration", a["duration"])
    a["concurrency"] = _check.count("concurrency", a["concurrency"], 1, _check.MAX_CONCURRENCY)
    if a["threads"] is not None:
        a["threads"] = _check.count("threads", a["threads"], 1, _check.MAX_THREADS)
    if a["rate"] is not None and a["stages"] is None:
        a["rate"] = _check.rate(a["rate"], a["concurrency"])
    a["timeout"] = _check.seconds("timeout", a["timeout"])
    a["unix_socket"] = _check.unix_socket("unix_socket", a["unix_socket"])
    a["pipeline"] = _check.count("pipeline", a["pipeline"], 1, _check.MAX_PIPELINE)
    a["warmup"] = _check.warmup(a["warmup"])
    a["http2"] = bool(a["http2"])
    a["streams"] = _check.count("streams", a["streams"], 1, _check.MAX_STREAMS)
    if a["window"] is not None:
        a["window"] = _check.count("window", a["window"], 1, _check.MAX_WINDOW)
    if a["log"] is not None:
        from .reqlog import log_format
        log_format("log", a["log"])
        a["log"] = os.fspath(a["log"])
    if a["log_sample"] != 1.0 or isinstance(a["log_sample"], bool):
        v = a["log_sample"]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
            raise ValueError(f"log_sample must be a fraction above 0 and at most 1, not {v!r}")
        if a["log"] is None:
            raise ValueError("log_sample samples the log: pass log=FILE too")
        a["log_sample"] = float(v)
    if a["metrics"] is not None:
        from .metrics import check_label, parse_address
        parse_address("metrics", a["metrics"])
        if a["metrics_run"] is not None:
            check_label("metrics_run", a["metrics_run"])
    elif a["metrics_run"] is not None:
        raise ValueError("metrics_run labels the metrics: pass metrics='HOST:PORT' too")
    if a["metrics_linger"] != 0.0 or isinstance(a["metrics_linger"], bool):
        a["metrics_linger"] = _check.seconds("metrics_linger", a["metrics_linger"])
        if a["metrics_linger"] > 3600:
            raise ValueError(f"metrics_linger must be at most 3600 seconds, not "
                             f"{a['metrics_linger']!r}")


def _combinations(a: dict[str, Any]) -> None:
    """What cannot go together."""
    if a["proxy"] is not None:
        split_proxy(a["proxy"])  # its form checked here, before anything is sent
    if a["proxy"] is not None and a["unix_socket"] is not None:
        raise ValueError("proxy and unix_socket are two ways to the server: give one")
    if a["http2"] and a["pipeline"] > 1:
        raise ValueError("pipeline with http2 is not supported: HTTP/2 carries many requests "
                         "at once on streams (streams=N)")
    if not a["http2"]:
        given = [n for n in ("streams", "window") if a[n] not in (1, None)]
        if given:
            raise ValueError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} "
                             "HTTP/2's: pass http2=True")
    if a["pipeline"] > 1 and a["rate"] is not None:
        raise ValueError("pipeline with rate is not supported: an open loop's requests start "
                         "on their own schedule, not in batches")
    scenario = a["scenario"]
    if scenario is not None:
        if not isinstance(scenario, Scenario):
            raise ValueError(f"scenario must be an httpbench.Scenario, not {scenario!r}")
        if a["method"] != "GET" or a["body"] is not None:
            raise ValueError("a scenario's Requests give the methods and bodies: no method or "
                             "body beside it")
        if a["pipeline"] > 1:
            raise ValueError("pipeline with a scenario is not supported")

