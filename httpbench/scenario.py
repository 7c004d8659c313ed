"""Scenarios: several requests per run, written in Python, run in C.

    s = httpbench.Scenario([
        httpbench.Request("GET", "/api/items", name="list", weight=8),
        httpbench.Request("GET", [f"/api/items/{i}" for i in range(1000)], name="item", weight=4),
        httpbench.Request("POST", "/api/items", body=[json.dumps(x).encode() for x in rows],
                          headers={"Content-Type": "application/json"}, name="create",
                          expect_status=201, expect_body=b'"id"'),
    ], order="weighted")

A Request's target, body and headers may each be one value or a list of
variants made beforehand; lists given together are zipped (the same
length). Every variant's bytes are built once, before the run: no Python
runs per request, and a million variants are a million requests' bytes in
memory.

The run's statistics are kept per request name as well as in total
(Result.by_name); each connection's bytes come from these prebuilt
variants, so a scenario has no think time and carries no state from one
response to the next request.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from . import _core
from ._request import sent_fields
from ._url import split_url

__all__ = ["Request", "Scenario", "MAX_REQUESTS_IN_SCENARIO", "MAX_EXPECT_BODY", "join_target",
           "origin_of"]

MAX_REQUESTS_IN_SCENARIO = _core.MAX_SCENARIO
MAX_EXPECT_BODY = 65536
MAX_WEIGHT = 1e6

Order = Literal["weighted", "sequence", "turns"]
Variants = Literal["cycle", "random"]


def _variants(name: str, value: Any, one: tuple[type, ...]) -> list[Any] | None:
    """value as a list of variants when it is a list (or tuple), else None
    (one value for every request)."""
    if isinstance(value, (list, tuple)) and not (one and isinstance(value, one)):
        if not value:
            raise ValueError(f"{name}: a list of variants must not be empty")
        return list(value)
    return None


class Request:
    """One kind of request of a scenario (see the module's doc)."""

    name: str
    weight: float
    nvariants: int
    expect_status: frozenset[int] | None
    expect_body: bytes | None
    expect_length: int | None

    def __init__(self, method: str = "GET", target: str | Sequence[str] = "/", *,
                 body: bytes | str | Sequence[bytes | str] | None = None,
                 headers: Any = None, name: str | None = None, weight: float = 1,
                 expect_status: int | Collection[int] | None = None,
                 expect_body: bytes | None = None, expect_length: int | None = None,
                 variants: Variants = "cycle") -> None:
        if not isinstance(method, str) or not method or not all(
                c.isalnum() or c in "!#$%&'*+-.^_`|~" for c in method):
            raise ValueError(f"method must be a token such as GET, not {method!r}")
        self.method = method
        targets = _variants("target", target, ())
        bodies = _variants("body", body, ())
        # A list of header sets is variants; a list of (name, value) pairs is one set.
        header_sets = None
        if isinstance(headers, list) and headers and all(
                isinstance(h, (Mapping, list)) for h in headers):
            header_sets = list(headers)
        lengths = {len(v) for v in (targets, bodies, header_sets) if v is not None}
        if len(lengths) > 1:
            raise ValueError("the target, body and headers variants are zipped: give lists of "
                             f"the same length, not {sorted(lengths)}")
        self.nvariants = lengths.pop() if lengths else 1
        for t in targets or [target]:
            if not isinstance(t, str) or not t:
                raise ValueError(f"a target is a path or a URL, not {t!r}")
        self.targets: list[str] = targets or [target]
        self.bodies: list[bytes | str | None] = bodies or [body]
        self.header_sets: list[Any] = header_sets or [headers]
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or \
                not 0 < float(weight) <= MAX_WEIGHT or math.isnan(float(weight)):
            raise ValueError(f"weight must be above 0 and at most {MAX_WEIGHT:g}, not {weight!r}")
        self.weight = float(weight)
        self.expect_status = _statuses(expect_status)
        if expect_body is not None and (not isinstance(expect_body, (bytes, bytearray)) or
                                        not 1 <= len(expect_body) <= MAX_EXPECT_BODY):
            raise ValueError(f"expect_body must be 1 to {MAX_EXPECT_BODY} bytes, "
                             f"not {expect_body!r:.60}")
        self.expect_body = bytes(expect_body) if expect_body is not None else None
        if expect_length is not None and (isinstance(expect_length, bool) or
                                          not isinstance(expect_length, int) or
                                          expect_length < 0):
            raise ValueError(f"expect_length must be a byte count, not {expect_length!r}")
        self.expect_length = expect_length
        if variants not in ("cycle", "random"):
            raise ValueError(f"variants must be 'cycle' or 'random', not {variants!r}")
        self.variants: Variants = variants
        if name is None:
            name = (f"{method} {self.targets[0]}" if self.nvariants == 1
                    else f"{method} {self.nvariants} variants")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, not {name!r}")
        self.name = name

    def __repr__(self) -> str:
        return f"<httpbench.Request {self.name!r}, weight {self.weight:g}>"


def _statuses(value: int | Collection[int] | None) -> frozenset[int] | None:
    if value is None:
        return None
    codes = [value] if isinstance(value, int) else value
    if isinstance(codes, (str, bytes)) or not isinstance(codes, Iterable):
        raise ValueError(f"expect_status must be a status or a collection of them, not {value!r}")
    out = set()
    for code in codes:
        if isinstance(code, bool) or not isinstance(code, int) or not 100 <= code <= 599:
            raise ValueError(f"expect_status: a status is 100 to 599, not {code!r}")
        out.add(code)
    if not out:
        raise ValueError("expect_status must name a status at least")
    return frozenset(out)


class Scenario:
    """Requests a run picks from: by weight (order="weighted", a generator
    per loop thread seeded from (seed, thread index)), in their order on
    each lane (order="sequence", a user's journey: a connection, or over
    HTTP/2 each stream slot, its next step chosen once its last ended), or
    in turn on each connection as it sends them (order="turns", h2load's
    URIs: over HTTP/2 its streams share the turns)."""

    def __init__(self, requests: Iterable[Request], order: Order = "weighted",
                 seed: int = 0) -> None:
        reqs = list(requests)
        if not 1 <= len(reqs) <= MAX_REQUESTS_IN_SCENARIO:
            raise ValueError(f"a scenario has 1 to {MAX_REQUESTS_IN_SCENARIO} requests, "
                             f"not {len(reqs)}")
        if not all(isinstance(r, Request) for r in reqs):
            raise ValueError("a scenario's requests are httpbench.Request objects")
        names = [r.name for r in reqs]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"request names must differ (they key by_name): {twice}")
        if order not in ("weighted", "sequence", "turns"):
            raise ValueError(f"order must be 'weighted', 'sequence' or 'turns', not {order!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise ValueError(f"seed must be an integer from 0 to 2**64 - 1, not {seed!r}")
        self.requests = reqs
        self.order: Order = order
        self.seed = seed

    def __repr__(self) -> str:
        return f"<httpbench.Scenario of {len(self.requests)} requests, {self.order}>"


def join_target(base: str, target: str) -> str:
    """The request target to send for `target` on the server of `base`: a
    path as it is; a URL of the same origin (scheme, host, port) as its
    path; another origin is a ValueError (h2load would send its path to
    the first URL's server, which hides a mistyped host)."""
    if target.startswith("/"):
        return target
    if "://" not in target:
        raise ValueError(f"a target is a path (/...) or a URL, not {target!r}")
    b, t = split_url(base), split_url(target)
    if (b.tls, b.host.lower(), b.port) != (t.tls, t.host.lower(), t.port):
        raise ValueError(f"{target} is not on {urlsplit(base).netloc}: a scenario's requests "
                         "go to one origin")
    return t.path


def origin_of(scenario: Scenario) -> str | None:
    """scheme://host:port of the first of the scenario's targets that is
    a full URL, or None when every one is a path."""
    for r in scenario.requests:
        for t in r.targets:
            if "://" in t:
                parts = urlsplit(t)
                return f"{parts.scheme}://{parts.netloc}/"
    return None


def merged_headers(common: Any, own: Any) -> list[tuple[Any, Any]]:
    """The run's headers, then a Request's own: a name the Request gives
    replaces the run's (any case; its None leaves the run's User-Agent or
    Accept out)."""
    def pairs(h: Any) -> list[tuple[Any, Any]]:
        if h is None:
            return []
        return list(h.items()) if isinstance(h, Mapping) else list(h)

    def key(name: Any) -> str:
        return (name.decode("latin-1") if isinstance(name, bytes) else str(name)).lower()

    mine = pairs(own)
    named = {key(n) for n, _ in mine}
    return sent_fields([(n, v) for n, v in pairs(common) if key(n) not in named] + mine)


def build_variants(request: Request, base: str, common: Any, host: bytes,
                   via: Mapping[str, bytes] | None = None) -> tuple[list[bytes], bool]:
    """Every variant of request as the bytes to send to base's server
    (via: the request builder's origin and proxy_auth, for a forward
    proxy), and
    whether it is a HEAD request: built and checked once, before the run,
    by the builder run() uses."""
    from . import _core
    from ._core import build_request

    def pick(values: list[Any], i: int) -> Any:
        return values[i] if len(values) > 1 else values[0]

    out, head = [], False
    for i in range(request.nvariants):
        target = join_target(base, pick(request.targets, i))
        data, flags = build_request(request.method, target,
                                    merged_headers(common, pick(request.header_sets, i)),
                                    pick(request.bodies, i), host, **(via or {}))
        out.append(data)
        head = bool(flags & _core.REQ_HEAD)
    return out, head


def normal_weights(weights: list[float]) -> list[float]:
    """The weights as fractions of their sum, each a normal float. The loop
    picks by a fraction in [0, 1) times the total: a total of subnormals
    rounds in steps of the smallest subnormal, so two equal weights of
    5e-324 split 25/75. ValueError when one is so far below another that
    its fraction is not a normal float (it would never be picked)."""
    top = max(weights)
    scaled = [w / top for w in weights]
    total = math.fsum(scaled)
    fractions = [w / total for w in scaled]
    for w, f in zip(weights, fractions, strict=True):
        if f < sys.float_info.min:
            raise ValueError(f"weight {w!r} is too small beside {top!r} ever to be picked: "
                             "weights must be within a factor of 1e300 of each other")
    return fractions


LoopRequest = tuple[list[bytes], bool, bool, float, bytes | None, bytes | None, int]


def loop_form(scenario: Scenario, base: str, common: Any, host: bytes,
              via: Mapping[str, bytes] | None = None) -> list[LoopRequest]:
    """The scenario as the C loop takes it (httpbench._core._Bench's
    `scenario`): per request, its variants' bytes, random, head, weight,
    the statuses allowed as 600 flags, expect_body, expect_length (-1)."""
    out = []
    weights = normal_weights([r.weight for r in scenario.requests])
    for r, weight in zip(scenario.requests, weights, strict=True):
        variants, head = build_variants(r, base, common, host, via)
        ok = None
        if r.expect_status is not None:
            flags = bytearray(600)
            for code in r.expect_status:
                flags[code] = 1
            ok = bytes(flags)
        out.append((variants, r.variants == "random", head, weight, ok, r.expect_body,
                    -1 if r.expect_length is None else r.expect_length))
    return out


def describe(r: Request) -> str:
    """A Request's target for reports: the target, or "N variants"."""
    return r.targets[0] if len(r.targets) == 1 and r.nvariants == 1 else \
        f"{r.nvariants} variants"
