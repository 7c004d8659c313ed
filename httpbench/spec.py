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
from collections.abc import Callable, Mapping
from typing import Any

from . import _check
from ._settings import Rule, SettingError, check_values, declared, setting
from ._request import Headers, Path, cpus_here
from ._url import Target, split_proxy, split_url
from .scenario import Scenario

__all__ = ["RunSpec", "RULES", "SETTINGS", "SettingError", "check_settings", "DEFAULT_DURATION",
           "default_threads", "is_this_machine"]

# With neither requests nor a duration a run lasts this long (wrk's default).
DEFAULT_DURATION = 10.0
Shape = tuple[tuple[float, float], ...]


def _optional(check: Callable[..., Any], name: str, value: Any, *more: Any) -> Any:
    """None, or what check(name, value, *more) makes of value."""
    return None if value is None else check(name, value, *more)


def _proxy(name: str, value: Any, a: Mapping[str, Any]) -> Any:
    if value is not None:
        split_proxy(value)  # its form checked here, before anything is sent
    return value


def _scenario(name: str, value: Any, a: Mapping[str, Any]) -> Any:
    if value is not None and not isinstance(value, Scenario):
        raise ValueError(f"{name} must be an httpbench.Scenario, not {value!r}")
    return value


def _metrics_address(name: str, value: Any, a: Mapping[str, Any]) -> Any:
    if value is not None:
        _check.parse_address(name, value)
    return value


def _metrics_label(name: str, value: Any, a: Mapping[str, Any]) -> Any:
    if value is not None:
        _check.check_label(name, value)
    return value


def _log_file(name: str, value: Any, a: Mapping[str, Any]) -> str | None:
    """The log's path, of a known extension (a file that cannot be opened
    is an OSError when the run opens it)."""
    if value is None:
        return None
    _check.log_format(name, value)
    path: str = os.fspath(value)
    return path


def _fraction(name: str, value: Any, a: Mapping[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ValueError(f"{name} must be a fraction above 0 and at most 1, not {value!r}")
    return float(value)




@dataclasses.dataclass(frozen=True)
class RunSpec:
    """A run, checked. requests/duration/rate/concurrency are what the loop
    runs: under `stages` the duration is the stages' sum and the rate their
    mean; under `concurrency_stages` the duration is their sum and the
    concurrency their peak. `arguments()` gives back run()'s arguments.

    Each field but url and target is a run setting, declared here once
    (httpbench/_settings.py's setting(): its check, its flags, its help,
    what of the loop's config it feeds); RULES below say which go
    together. run()'s signature, the command line's flags, the manual's
    table (docs/arguments.md) and the glue's table follow from it or are
    held to it by tests/loop/test_settings.py."""

    url: str
    target: Target
    method: str = setting(
        "GET", "the method (HEAD sends no body and reads none)", flags=("-m",),
        feeds=("request", "head"))
    body: bytes | str | None = setting(
        None, "the request's body (a str as UTF-8); checked where the request is built",
        flags=("-p",), feeds=("request",))
    headers: Headers | None = setting(
        None, "headers added to every request: a dict or (name, value) pairs (None for "
        "User-Agent or Accept: the one a run adds left out); checked where the request is "
        "built", flags=("-H",), feeds=("request",))
    requests: int | None = setting(
        None, "requests to perform (with {duration} too, whichever ends first; with "
        "neither, 10 s, as wrk)", check=lambda n, v, a: _optional(_check.count, n, v),
        flags=("-n",), cli={"type": int, "metavar": "N"})
    duration: float | None = setting(
        None, "seconds to run", check=lambda n, v, a: _optional(_check.seconds, n, v),
        flags=("-t", "-d", "--duration", "-z"))
    concurrency: int = setting(
        1, "connections: requests at a time (1, as in ab)",
        check=lambda n, v, a: _check.count(n, v, 1, _check.MAX_CONCURRENCY),
        flags=("-c", "--concurrency"), cli={"type": int, "metavar": "N"})
    threads: int | None = setting(
        None, "OS threads (None: the CPUs this process may use, half when the server is "
        "on this machine, capped by {concurrency})",
        check=lambda n, v, a: _optional(_check.count, n, v, 1, _check.MAX_THREADS),
        flags=("--threads",), cli={"type": int, "metavar": "N"})
    keepalive: bool = setting(
        True, "keep connections alive (False: a new connection per request)",
        check=lambda n, v, a: _check.flag(n, v), flags=("--no-keepalive",),
        cli={"action": "store_false"})
    rate: float | None = setting(
        None, "open loop at this many requests a second over the whole run (wrk2), "
        "latency from each request's intended start",
        check=lambda n, v, a: None if v is None else _check.rate(v, a["concurrency"]),
        flags=("-R", "--rate"), named="--rate", cli={"type": float})
    timeout: float = setting(
        30.0, "seconds each request may take, connect included (None: no limit)",
        check=lambda n, v, a: _check.seconds(n, _check.YEAR if v is None else v),
        flags=("-s", "--timeout"))
    grace: float = setting(
        1.0, "seconds the requests in flight get to finish once the duration ends or a stop "
        "(Ctrl-C) comes; those still in flight are then cancelled (at most 3600; 0: at once, "
        "as wrk and h2load stop)", check=lambda n, v, a: _check.within_an_hour(n, v),
        flags=("--grace",))
    warmup: int | float | None = setting(
        None, "run first and left out: requests (an int) or seconds (a float)",
        check=lambda n, v, a: _check.warmup(v), flags=("--warmup",),
        feeds=("warmup_requests", "warmup_seconds"))
    lengths_vary: bool = setting(
        False, "do not count a body length unlike the first as a failure (ab's -l)",
        check=lambda n, v, a: _check.flag(n, v), flags=("-l",),
        cli={"action": "store_true"})
    verify: bool = setting(
        True, "verify an https:// server's certificate and name",
        check=lambda n, v, a: _check.flag(n, v),
        flags=("--insecure",), feeds=("tls",))
    cafile: Path | None = setting(
        None, "the CA certificates (PEM) to verify against, not the system's",
        flags=("--cacert",), feeds=("tls",))
    certfile: Path | None = setting(
        None, "a client certificate (PEM)", flags=("--cert",), feeds=("tls",))
    keyfile: Path | None = setting(
        None, "its private key (PEM; None: in {certfile}'s file)", flags=("--key",),
        feeds=("tls",))
    server_hostname: str | None = setting(
        None, "the name to verify and send in SNI (None: the URL's host)", feeds=("tls",))
    tls_min: str | None = setting(
        "1.2", "the lowest TLS version offered: '1.2' or '1.3'", flags=("-f",),
        feeds=("tls",))
    tls_max: str | None = setting(
        None, "the highest TLS version offered (None: OpenSSL's)", flags=("-f",),
        feeds=("tls",))
    ciphers: str | None = setting(
        None, "OpenSSL's cipher list for TLS 1.2", flags=("-Z",), feeds=("tls",))
    ciphersuites: str | None = setting(
        None, "TLS 1.3's cipher suites, in order", flags=("--tls13-ciphers",), feeds=("tls",))
    tls_resume: bool = setting(
        True, "resume the connection's last TLS session on a new connection (False: a full "
        "handshake each time, as ab)", check=lambda n, v, a: _check.flag(n, v),
        flags=("--no-tls-resume",), feeds=("tls",))
    unix_socket: str | None = setting(
        None, "connect to this Unix socket, not the URL's host and port (the URL still "
        "gives Host and the path)", check=lambda n, v, a: _check.unix_socket(n, v),
        flags=("--unix-socket",), cli={"metavar": "PATH"})
    pipeline: int = setting(
        1, "up to N requests in flight per connection, written together and answered in "
        "order (HTTP/1.1 pipelining)",
        check=lambda n, v, a: _check.count(n, v, 1, _check.MAX_PIPELINE),
        flags=("--pipeline",), cli={"type": int, "metavar": "N", "default": 1})
    proxy: str | None = setting(
        None, "through the forward proxy host:port or http://[user:pass@]host:port",
        check=_proxy, flags=("-X", "--proxy"), cli={"metavar": "PROXY"},
        feeds=("host", "port", "tunnel"))
    stages: Shape | None = setting(
        None, "the rate's shape: (seconds, rate) pairs, each ramping from the last (k6's "
        "stages); sets the run's length and rate",
        check=lambda n, v, a: _optional(lambda n, v: tuple(_check.stages(v)), n, v),
        feeds=("stages", "duration", "rate"))
    concurrency_stages: Shape | None = setting(
        None, "the connections' shape: (seconds, connections) pairs, closed loop; sets the "
        "run's length and connections",
        check=lambda n, v, a: _optional(lambda n, v: tuple(_check.stages(
            v, n, "connections", _check.MAX_CONCURRENCY)), n, v),
        feeds=("vus", "duration", "concurrency"))
    scenario: Scenario | None = setting(
        None, "several requests by weight or in sequence (an httpbench.Scenario)",
        check=_scenario, flags=("--scenario",), feeds=("scenario",))
    http2: bool = setting(
        False, "speak HTTP/2 (h2 by ALPN over https://; over http://, h2c by prior "
        "knowledge, as curl's --http2-prior-knowledge)",
        check=lambda n, v, a: _check.flag(n, v), flags=("--http2",), cli={"action": "store_true"})
    streams: int = setting(
        1, "with {http2}: requests in flight on each connection (h2load's -m), at most what "
        "the server allows",
        check=lambda n, v, a: _check.count(n, v, 1, _check.MAX_STREAMS),
        flags=("--streams",), cli={"type": int, "metavar": "N", "default": 1})
    window: int | None = setting(
        None, "with {http2}: the client's flow-control windows in bytes (None: wide open, "
        "as h2load's)", check=lambda n, v, a: _optional(_check.count, n, v, 1,
                                                          _check.MAX_WINDOW),
        flags=("--window",), cli={"type": int, "metavar": "BYTES"})
    socket_buffer: int | None = setting(
        None, "each connection's socket buffers (SO_SNDBUF and SO_RCVBUF) in bytes, set "
        "before connecting, as ab's -b (None: the kernel's autotuning)",
        check=lambda n, v, a: _optional(_check.count, n, v, 1, _check.MAX_SOCKET_BUFFER),
        flags=("--socket-buffer",), cli={"type": int, "metavar": "BYTES"})
    metrics: str | None = setting(
        None, "serve live figures for Prometheus at http://HOST:PORT/metrics (OpenMetrics) "
        "while the run lasts", check=_metrics_address, flags=("--metrics",),
        cli={"metavar": "HOST:PORT"}, feeds=("publish",))
    metrics_run: str | None = setting(
        None, "with {metrics}: the run label (None: a short id)", check=_metrics_label,
        flags=("--metrics-run",), cli={"metavar": "NAME"}, feeds=())
    metrics_linger: float = setting(
        0.0, "with {metrics}: seconds the final figures stay served after the run, so a "
        "scraper catches the end (at most 3600)", check=lambda n, v, a: _check.within_an_hour(n, v),
        flags=("--metrics-linger",), feeds=())
    log: str | None = setting(
        None, "write a record per request to this file: CSV, JSON lines or SQLite by its "
        "extension (.csv, .jsonl, .db, .sqlite); httpbench.read_log reads it",
        check=_log_file, flags=("--log",), cli={"metavar": "FILE"})
    log_sample: float = setting(
        1.0, "with {log}: log this fraction of the requests, at random (0.01: 1%)",
        check=_fraction, flags=("--log-sample",),
        cli={"type": float, "metavar": "FRACTION", "default": 1.0}, feeds=("log",))

    @classmethod
    def from_arguments(cls, url: str, **given: Any) -> RunSpec:
        """The spec of run(url, **given), every rule checked (given holds
        run()'s settings by name, any of them)."""
        unknown = set(given) - {name for name, _, _ in SETTINGS}
        if unknown:
            raise TypeError(f"run() got unexpected arguments {sorted(unknown)}")
        a = {name: default for name, default, _ in SETTINGS}
        a.update(given)
        check_settings(a)
        _shapes(a)
        if a["requests"] is None and a["duration"] is None:
            a["duration"] = DEFAULT_DURATION
        return cls(url=url, target=split_url(url), **a)

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


# Which settings need or exclude others ("given": not its default).
RULES = (
    Rule("stages", "excludes", ("duration", "requests", "rate"),
         "{stages} set the run's length and rate: no {given} beside them"),
    Rule("stages", "excludes", ("pipeline",),
         "{pipeline} with {stages} is not supported: an open loop's requests start on their "
         "own schedule, not in batches"),
    Rule("concurrency_stages", "excludes",
         ("duration", "requests", "rate", "stages", "concurrency", "pipeline"),
         "{concurrency_stages} set the run's length and connections, closed loop: no {given} "
         "beside them"),
    Rule("proxy", "excludes", ("unix_socket",),
         "{proxy} and {unix_socket} are two ways to the server: give one"),
    Rule("pipeline", "excludes", ("http2",),
         "{pipeline} with {http2} is not supported: HTTP/2 carries many requests at once on "
         "streams ({streams})"),
    Rule("streams", "needs", ("http2",), "{streams} is HTTP/2's: {add_http2}"),
    Rule("window", "needs", ("http2",), "{window} is HTTP/2's: {add_http2}"),
    Rule("pipeline", "excludes", ("rate",),
         "{pipeline} with {rate} is not supported: an open loop's requests start on their "
         "own schedule, not in batches"),
    Rule("scenario", "excludes", ("method", "body"),
         "a {scenario}'s Requests give the methods and bodies: no {given} beside it"),
    Rule("pipeline", "excludes", ("scenario",),
         "{pipeline} with a {scenario} is not supported"),
    Rule("log_sample", "needs", ("log",), "{log_sample} samples the log: {add_log} too"),
    Rule("metrics_run", "needs", ("metrics",),
         "{metrics_run} (the metrics' run label) goes with {metrics}: {add_metrics} too"),
    Rule("metrics_linger", "needs", ("metrics",),
         "{metrics_linger} and {metrics_run} go with {metrics}: {add_metrics} too"),
)

# (name, default, Setting) of every run setting, in run()'s order.
SETTINGS = declared(RunSpec)


def check_settings(values: dict[str, Any]) -> None:
    """The settings values holds (by run()'s names, any of them) checked
    and converted in place, then the RULES among them: a SettingError
    naming the first fault. run() checks every setting so; the command
    line checks those it has, naming its flags (SettingError.said)."""
    check_values(SETTINGS, RULES, values)


def _shapes(a: dict[str, Any]) -> None:
    """Load shapes (checked) set the run's length, rate or connections."""
    if a["stages"] is not None:
        shape = list(a["stages"])
        a["duration"] = sum(secs for secs, _ in shape)
        a["rate"] = _check.shape_total(shape) / a["duration"]
    if a["concurrency_stages"] is not None:
        vus = a["concurrency_stages"]
        a["duration"] = sum(secs for secs, _ in vus)
        a["concurrency"] = max(1, math.floor(max(v for _, v in vus) + 1e-9))

