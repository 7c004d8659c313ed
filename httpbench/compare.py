"""httpbench.compare: the seed's client comparison, over httpbench's C core
and Python's HTTP clients, each reported in ab's layout, then side by side."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from urllib.parse import urlsplit

from . import _check
from ._url import split_proxy
from .agents import AGENTS, MAX_WORKERS, chosen_agents, run_agent
from .comparison import Comparison
from .result import Result
from .server import Server

__all__ = ["compare", "Comparison", "SCENARIOS"]

POST_BODY = bytes(33 + i % 94 for i in range(2048))
# name -> (method, path, body): the seed's two scenarios.
SCENARIOS: dict[str, tuple[str, str, bytes | None]] = {
    "get": ("GET", "/rnd?c=2048", None),
    "post": ("POST", "/echo", POST_BODY),
}


def compare(url: str | None = None, agents: Sequence[str] | None = None,
            scenarios: Iterable[str] | None = None, requests: int = 20_000,
            concurrency: int = 1, duration: float | None = None,
            timeout: float = 30.0, progress: bool = False,
            pin: bool | None = None, *, verify: bool = True,
            cafile: str | os.PathLike[str] | None = None, tls: bool = False,
            unix_socket: str | os.PathLike[str] | None = None,
            proxy: str | None = None, http2: bool = False, method: str | None = None,
            body: bytes | None = None) -> Comparison:
    """Runs each agent through each scenario against url (None: the embedded
    server). An agent that is not installed is left out with a note; one that
    fails counts its failures in its own result and the others still run.
    duration caps each run's time (the slow clients then make fewer
    requests).

    The scenarios: against the embedded server the seed's two, "get"
    (GET /rnd?c=2048) and "post" (2 KiB to /echo). Against a url given,
    the one request method and body describe (GET unless given; POST with
    a body), named by its method ("get", "put"): a static server is not
    sent POSTs it cannot take. scenarios=("get", "post") asks for the
    seed's pair against a url too (the POST to the url itself).

    pin (default: with the embedded server and one connection) runs the
    comparison on one CPU, server and clients together, as the seed's
    single-connection runs did: across CPUs every request pays a wake-up that
    dwarfs the clients' differences. Only the calling thread's affinity is
    changed, and it is restored on return; the threads started meanwhile
    inherit it and end with the comparison.

    Over an https:// url every agent verifies the server (against cafile,
    else the system's CAs) unless verify=False. tls=True runs the
    comparison on the embedded server over TLS (its self-signed
    certificate given to every agent to verify).

    unix_socket: every agent connects to the server's Unix socket (the URL
    still gives Host and the path); with no url, the embedded server listens
    on it. http.client, urllib3 and requests cannot, and are left out with a
    note.

    proxy: every agent goes through this forward proxy,
    "http://[user:pass@]host:port" (each library's own way: the absolute
    form for http://, a CONNECT tunnel for https://).

    http2: every agent speaks HTTP/2 (h2 by ALPN over TLS, h2c by prior
    knowledge over http://): the C core, httpx (through the h2 package)
    and pycurl (libcurl's nghttp2); the others speak HTTP/1.1 only and are
    left out with a note. Without it every agent speaks HTTP/1.1, pycurl
    and httpx included."""
    requests = _check.count("requests", requests)
    concurrency = _check.count("concurrency", concurrency, 1, MAX_WORKERS)
    if duration is not None:
        duration = _check.seconds("duration", duration)
    timeout = _check.seconds("timeout", timeout)
    verify = _check.flag("verify", verify)
    tls, http2 = _check.flag("tls", tls), _check.flag("http2", http2)
    progress = _check.flag("progress", progress)
    if pin is not None:
        pin = _check.flag("pin", pin)
    if tls and url is not None:
        raise ValueError("tls=True is for the embedded server: give an https:// url instead")
    if cafile is not None and not os.path.isfile(cafile):
        raise FileNotFoundError(f"cafile: no such file: {os.fspath(cafile)}")
    known = list(AGENTS)
    names = chosen_agents(agents) if agents is not None else known
    plan = _plan(url, scenarios, method, body)
    scenario_list = list(plan)
    unix_path = _check.unix_socket("unix_socket", unix_socket)
    if proxy is not None:
        split_proxy(proxy)  # a bad one is refused before anything runs
        if unix_path is not None:
            raise ValueError("proxy and unix_socket are two ways to the server: give one")
    notes = []
    runnable = []
    for name in names:
        if not AGENTS[name].available():
            notes.append(f"{name} is not installed here (pip install 'httpbench[agents]'); "
                         "left out")
        elif unix_path is not None and not AGENTS[name].unix_sockets:
            notes.append(f"{name} cannot connect to a Unix socket; left out")
        elif http2 and not AGENTS[name].speaks_http2():
            notes.append(f"{name} does not speak HTTP/2; left out")
        else:
            runnable.append(name)
    results: dict[tuple[str, str], Result] = {}
    if pin is None:
        pin = url is None and concurrency == 1
    restore = None
    if pin and hasattr(os, "sched_setaffinity"):
        restore = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {max(restore)})
    server = Server(tls=tls, unix_socket=unix_path) if url is None else None
    if server is not None and tls:
        verify, cafile = True, server.cafile
    try:
        for name in runnable:
            for scenario in scenario_list:
                verb, path, payload = plan[scenario]
                # Against another server the scenario's method goes to the URL
                # given; the echo is checked where the URL is an /echo.
                target = server.url(path) if server is not None else str(url)
                echo = server is not None or urlsplit(target).path == "/echo"
                if progress:
                    print(f"  {name} {scenario} ...", file=sys.stderr, flush=True)
                try:
                    r = run_agent(name, target, verb, payload, requests, duration,
                                  concurrency, timeout, check_echo=echo and payload is not None,
                                  verify=verify, cafile=cafile, unix_socket=unix_path,
                                  proxy=proxy, http2=http2)
                except Exception as e:  # noqa: BLE001 - one agent's trouble is its own
                    notes.append(f"{name} {scenario} failed to run: {e}")
                    continue
                results[name, scenario] = r
                if echo and payload is not None and \
                        r.document_length not in (None, len(payload)):
                    notes.append(f"{name} {scenario}: the echo was {r.document_length} bytes, "
                                 f"not {len(payload)}")
                if r.interrupted:
                    return Comparison(results, notes, runnable, scenario_list,
                                      interrupted=True)
    except KeyboardInterrupt:
        # Ctrl-C between two runs (an agent's library importing, its
        # threads starting): a run answers it by returning what it
        # measured, and so does the comparison.
        notes.append("interrupted (Ctrl-C) between two runs: the runs after it did not run")
        return Comparison(results, notes, runnable, scenario_list, interrupted=True)
    finally:
        if server is not None:
            server.close()
        if restore is not None:
            os.sched_setaffinity(0, restore)
    return Comparison(results, notes, runnable, scenario_list)


def _plan(url: str | None, scenarios: Iterable[str] | None, method: str | None,
          body: bytes | None) -> dict[str, tuple[str, str, bytes | None]]:
    """The scenarios by name, each (method, path on the embedded server,
    body): the seed's by name, or against a url given the one request
    method and body describe."""
    if method is not None or body is not None:
        if url is None:
            raise ValueError("method and body describe the request sent to a url given; the "
                             "embedded server runs the seed's GET and POST")
        if scenarios is not None:
            raise ValueError("scenarios or method/body: the seed's named scenarios, or the "
                             "one request described")
        if body is not None and not isinstance(body, (bytes, bytearray)):
            raise ValueError(f"body must be bytes, not {type(body).__name__}")
        verb = (method or ("POST" if body is not None else "GET"))
        if not isinstance(verb, str) or not verb.isalpha():
            raise ValueError(f"method must be a method's name (GET, POST), not {verb!r}")
        verb = verb.upper()
        return {verb.lower(): (verb, "/", bytes(body) if body is not None else None)}
    names = list(scenarios) if scenarios is not None else \
        (["get", "post"] if url is None else ["get"])
    bad = [s for s in names if s not in SCENARIOS]
    if bad:
        raise ValueError(f"unknown scenario(s) {bad}; known: {', '.join(SCENARIOS)}")
    return {s: SCENARIOS[s] for s in names}
