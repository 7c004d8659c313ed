"""HTTP clients ("agents") driven through the same scenario and measured into
the same Histogram as the C loop, so every figure means the same thing: one
client per module here (base.py what they share), AGENTS the table of them.

Each agent runs itself (`Agent.run`): httpbench's own C loop, a worker
thread per connection for the blocking clients, one event loop for aiohttp.
Each keeps one connection alive per concurrent worker, reads the whole
body, checks the status (and the echo of a POST), and is timed per request
with time.perf_counter_ns; the accounting is the C loop's (httpbench/_ledger.py).
A worker's connection and its counters live in a session object of the
agent's own, never in attributes set on another library's objects; a
failure is classed by the exception's type. Header bytes are reconstructed
from the parsed fields for the Python agents (pycurl's are counted by curl);
body bytes are exact for all.

Over https:// every agent is given the same Trust: verify or not, and the
CA file to verify against (a test server's self-signed certificate).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .. import _check
from .._url import split_proxy
from ..result import Result
from .aiohttp_client import AiohttpAgent
from .base import MAX_WORKERS, Agent, SyncAgent, Trust
from .http_client import HttpClientAgent
from .httpx_client import HttpxAgent
from .loop import HttpbenchAgent
from .pycurl_client import PycurlAgent
from .requests_client import RequestsAgent
from .urllib3_client import Urllib3Agent

__all__ = ["AGENTS", "available_agents", "chosen_agents", "run_agent", "MAX_WORKERS", "Agent",
           "SyncAgent", "Trust", "HttpbenchAgent", "HttpClientAgent", "Urllib3Agent",
           "RequestsAgent", "HttpxAgent", "PycurlAgent", "AiohttpAgent"]

AGENTS: dict[str, Agent] = {a.name: a for a in (
    HttpbenchAgent(), HttpClientAgent(), Urllib3Agent(), RequestsAgent(), HttpxAgent(),
    PycurlAgent(), AiohttpAgent(),
)}


def available_agents() -> list[str]:
    """The agents importable here, in the order the comparison runs them."""
    return [name for name, agent in AGENTS.items() if agent.available()]


def chosen_agents(names: Sequence[str], arg: str = "agents") -> list[str]:
    """names checked as a choice of agents: at least one, each known, none
    twice; else a ValueError naming arg (the argument or the flag)."""
    if isinstance(names, str):
        raise TypeError(f"{arg}: a list of agent names, not a string")
    chosen = list(names)
    if not chosen:
        raise ValueError(f"{arg}: no agent named")
    unknown = [a for a in chosen if a not in AGENTS]
    if unknown:
        raise ValueError(f"unknown agent(s) {', '.join(map(repr, unknown))}; available here: "
                         f"{', '.join(available_agents())}")
    twice = sorted({a for a in chosen if chosen.count(a) > 1})
    if twice:
        raise ValueError(f"{arg}: {', '.join(map(repr, twice))} named twice: each agent runs "
                         "once")
    return chosen


def run_agent(agent_name: str, url: str, method: str = "GET", body: bytes | None = None,
              requests: int | None = 20_000, duration: float | None = None,
              concurrency: int = 1, timeout: float = 30.0, lengths_vary: bool = False,
              check_echo: bool = False, verify: bool = True,
              cafile: str | os.PathLike[str] | None = None,
              unix_socket: str | os.PathLike[str] | None = None,
              proxy: str | None = None, http2: bool = False) -> Result:
    """One agent through one scenario, measured as httpbench.run measures,
    by the same accounting rule (issued == complete + failed + cancelled).
    With check_echo the response body must be the request body (the C loop,
    which keeps no bodies, checks its length). Over https:// the server is
    verified (against cafile, else the system's CAs) unless verify=False.
    unix_socket: the server's Unix socket, for the agents that can reach
    one (Agent.unix_sockets); the URL still gives Host and the path.
    proxy: a forward proxy, "http://[user:pass@]host:port", that every
    agent goes through in its own way (absolute form, CONNECT for https).
    http2: over HTTP/2 (h2 by ALPN, h2c by prior knowledge), for the agents
    that speak it (Agent.speaks_http2)."""
    if agent_name not in AGENTS:
        raise ValueError(f"unknown agent {agent_name!r}; available here: "
                         f"{', '.join(available_agents())}")
    agent = AGENTS[agent_name]
    path = _check.unix_socket("unix_socket", unix_socket)
    if proxy is not None:
        split_proxy(proxy)  # checked once, before any agent starts
        if path is not None:
            raise ValueError("proxy and unix_socket are two ways to the server: give one")
    if path is not None and not agent.unix_sockets:
        raise ValueError(f"{agent_name} cannot connect to a Unix socket (the agents that can: "
                         f"{', '.join(a.name for a in AGENTS.values() if a.unix_sockets)})")
    if http2 and not agent.speaks_http2():
        raise ValueError(f"{agent_name} does not speak HTTP/2 here (the agents that do: "
                         f"{', '.join(a.name for a in AGENTS.values() if a.speaks_http2())})")
    trust = Trust(bool(verify), None if cafile is None else os.fspath(cafile), bool(http2))
    return agent.run(url, method, body, requests, duration, concurrency, timeout, lengths_vary,
                     check_echo, trust, path, proxy)
