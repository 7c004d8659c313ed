"""httpbench.capacity: the highest arrival rate a server takes within an SLO.

    c = httpbench.capacity("http://127.0.0.1:8080/api", slo="p99<5ms", concurrency=50)
    c.rate          # the highest rate that held, req/s
    c.steps         # every stage run: target and achieved rate, p50, p99, errors
    c.plot()        # throughput against latency: the knee

It runs open-loop stages (run(rate=R, duration=stage_s)), raising R by
`step` while the SLO and the error rate hold, then bisects between the last
rate that held and the first that broke until they are within 5%. Latency
is counted from each request's intended start, as run() counts it under a
rate, so a server that falls behind shows it in its percentiles.
"""

from __future__ import annotations

import math
from typing import Any

from . import _check
from ._settings import SettingError
from ._view import draw
from .capacity_result import (MIN_STAGE_S, PERCENT, STATS, CapacityResult, CapacityStep,
                              parse_slo)
from .result import Result
from .runner import run
from .scenario import Scenario, origin_of

__all__ = ["capacity", "CapacityResult", "CapacityStep", "parse_slo", "STATS", "MIN_STAGE_S"]

# capacity()'s connections unless told: one connection waits for each
# answer before the next request, so it cannot reach most servers' capacity.
DEFAULT_CONCURRENCY = 50
# Bisection stops when the broken rate is within this of the held one.
_CLOSE = 1.05
# A stage whose requests answered fall this far short of those its
# schedule made due did not hold its rate. (Judged by what was offered and
# answered, not by req/s: under a rate that divides by a time running to
# the last answer, stage_s plus the latency, so a slow healthy server's
# stages all "reached" under 90%: 600 ms answers at 5 s stages read 21/s
# of a true 83.)
_SHORTFALL = 0.9
_MAX_STEPS = 60
# Repeats of one rate, one holding and one breaking, whose statistic read
# more than this factor apart: the SLO cannot separate them, and the
# machine's noise rather than the server decided (p99 at 2.4/s read 29.7,
# 166.3 and 102.1 ms beside other work, against a bound of 40).
_NOISE_FACTOR = 2.0


# A breach does not count when the client bound its stage by these and
# could have caused it: it measured the client. ("connections", every
# connection busy when requests fell due, is the server's capacity at this
# concurrency: it counts.) A busy CPU ("cpu") explains any breach; late
# sends ("schedule") explain a shortfall, and a latency breach only when
# the statistic less the sends' lateness (its p99) would have held: 2 ms
# late cannot explain a p99 over 500 ms, nor the server's 5xx answers or
# failures (an error rate). A stage that held counts whatever the
# client's state (held includes reaching the rate): its latency runs from
# the schedule (corrected), so the client's lateness and its own time are
# inside it, and the server alone did at least as well.
_CLIENT_REASONS = ("cpu", "schedule")


def _value(r: Result, stat: str) -> float:
    return r.latency.mean if stat == "mean" else r.latency.percentile(PERCENT[stat])


def _judge(r: Result, target: float, bounds: list[tuple[str, float]],
           max_error_rate: float, stage_s: float, repeat: int = 0) -> CapacityStep:
    errors = r.failed + sum(n for code, n in r.status_counts.items() if 500 <= code <= 599)
    total = r.complete + r.failed
    # Due: what the stage's schedule offered, sent or not.
    due = r.issued + (r.client.unsent if r.client is not None else 0)
    why = ""
    client = r.client.reason if r.client is not None and r.client.reason in _CLIENT_REASONS \
        else ""
    late = r.client.late_p99 if r.client is not None and r.client.late_p99 is not None else 0.0
    # Whether the client's late sends could explain the breach found (above).
    explains = client == "cpu"
    for stat, limit in bounds:
        value = _value(r, stat)
        if value >= limit:
            why = f"{stat} {value * 1e3:.2f} ms"
            explains = explains or value - late < limit
            break
    if not why and total and errors / total > max_error_rate:
        why = f"error rate {errors / total:.4f}"
    if not why and r.complete < _SHORTFALL * due:
        why = f"answered {r.complete:,} of {due:,} due"
        explains = True
    if why and not explains:
        client = ""
    # Achieved: the stage's answers over the stage's length (its schedule's).
    return CapacityStep(target, r.complete / stage_s, r.latency.p50, r.latency.p99, errors,
                        total, not why, why, repeat, client, r.latency.count,
                        draw("headline", r))


def capacity(url: str | Scenario, slo: str = "p99<5ms", max_error_rate: float = 0.001,
             start: float | None = None, step: float = 1.25, stage_s: float = 5.0,
             confirm: bool = True, **run_kwargs: Any) -> CapacityResult:
    """Finds the highest arrival rate url takes while `slo` holds and
    failures plus 5xx responses stay at most max_error_rate of requests.

    slo: one or more comma-separated STAT<NUMBER UNIT (STAT mean, p50, p75,
    p90, p95, p99 or p999; UNIT us, ms or s). start: the first stage's rate;
    None begins at a tenth of what a one-second closed-loop probe reached
    with the same connections. Each stage runs stage_s seconds; the rate
    grows by `step` until a stage breaks, then the last rate that held and
    the first that broke are bisected until within 5%. When the first stage
    breaks, the lowest sensible rate (one request per connection per stage,
    or start if lower) runs next: if it breaks too the search stops there,
    with met False and rate 0; else the two are bisected.

    Noise: a breach counts only if the client kept up in its stage (its
    CPU and its schedule: Result.client); one where it did not is measured
    again, and if it still did not the search stops: limited_by "client",
    the server untested beyond. (A stage that held counts: the latency runs
    from the schedule, so the client's lateness is inside it.) With confirm
    (the default) a stage that broke the SLO is measured again before the
    search steps down, and when the two disagree a third decides, so one
    stall does not end the climb; confirm=False keeps one measurement per
    stage. Every measurement is in `steps` (repeat 1 and 2 for the
    repeats). Ctrl-C stops the search in the stage it comes in: that
    stage is not judged, and the result (interrupted True) holds the
    stages before it. run()'s keyword arguments (concurrency, default
    50, threads, headers, timeout, ...) pass through; rate, duration and
    requests are capacity's to set.

    metrics="HOST:PORT" serves every stage's figures on one endpoint, each
    with a `stage` label ("probe", then 1, 2, ... in the order run), kept
    after its stage ends, for metrics_linger seconds after the last.

    A scenario's capacity: capacity(url, scenario=s), or capacity(s) when
    its Requests' targets are full URLs (the first of them gives the
    server); the SLO and the error rate are the whole mix's.
    """
    if isinstance(url, Scenario):
        if "scenario" in run_kwargs:
            raise ValueError("capacity takes a URL and scenario=, or a scenario alone")
        base = origin_of(url)
        if base is None:
            raise ValueError("the scenario's targets are paths: give the server, "
                             "capacity(url, scenario=s)")
        url, run_kwargs["scenario"] = base, url
    bounds = parse_slo(slo)
    if isinstance(max_error_rate, bool) or not isinstance(max_error_rate, (int, float)) or \
            not 0 <= max_error_rate < 1:
        raise ValueError(f"max_error_rate must be a fraction from 0 to below 1, "
                         f"not {max_error_rate!r}")
    if isinstance(step, bool) or not isinstance(step, (int, float)) or not 1.01 <= step <= 10:
        raise ValueError(f"step must be a factor from 1.01 to 10, not {step!r}")
    stage_s = _check.seconds("stage_s", stage_s)
    if stage_s < MIN_STAGE_S:
        raise SettingError("stage_s", f"{{stage_s}} must be at least {MIN_STAGE_S:g} s (a "
                                      f"stage shorter measures a handful of requests), not "
                                      f"{stage_s!r}")
    if start is not None and (isinstance(start, bool) or not isinstance(start, (int, float))
                              or not 1 <= start <= _check.MAX_RATE):
        raise ValueError(f"start must be a rate from 1 to {_check.MAX_RATE:.0e} a second, "
                         f"not {start!r}")
    confirm = _check.flag("confirm", confirm)
    taken = {"rate", "duration", "requests"} & run_kwargs.keys()
    if taken:
        raise ValueError(f"capacity sets {', '.join(sorted(taken))} itself: leave "
                         f"{'it' if len(taken) == 1 else 'them'} out")
    run_kwargs.setdefault("progress", False)
    run_kwargs.setdefault("concurrency", DEFAULT_CONCURRENCY)
    # The answers in flight at a stage's end get as long as the SLO allows
    # (twice its widest bound, or run()'s second): cancelled sooner, a
    # slow server's answers within the SLO would count against it.
    run_kwargs.setdefault("grace", min(3600.0, max(1.0, 2 * max(b for _, b in bounds))))
    endpoint = _endpoint(run_kwargs)
    try:
        return _search(url, slo, bounds, max_error_rate, start, step, stage_s, confirm,
                       run_kwargs, endpoint)
    finally:
        if endpoint is not None:
            endpoint[0].close()


def _endpoint(run_kwargs: dict[str, Any]) -> tuple[Any, float] | None:
    """capacity(metrics=): one endpoint for every stage (each a `stage`
    label: "probe", then 1, 2, ... in the order run), and the linger after
    the last; the settings checked as run() checks them."""
    address = run_kwargs.pop("metrics", None)
    label = run_kwargs.pop("metrics_run", None)
    linger = run_kwargs.pop("metrics_linger", 0.0)
    if address is None:
        if label is not None or linger:
            raise ValueError("metrics_run and metrics_linger go with metrics='HOST:PORT'")
        return None
    from .metrics import Endpoint, check_label, parse_address
    parse_address("metrics", address)
    if label is not None:
        check_label("metrics_run", label)
    return Endpoint(address, label), _check.within_an_hour("metrics_linger", linger)


class _ClientBound(Exception):
    """The client could not keep up twice at one rate: the search stops."""


class _Noisy(Exception):
    """Repeats of one rate disagreed beyond what the SLO can separate: the
    search stops, saying what they read."""


class _Interrupted(Exception):
    """Ctrl-C came during a stage (run() returned what it had measured,
    interrupted): the search stops, that stage not judged."""


def _search(url: str, slo: str, bounds: list[tuple[str, float]], max_error_rate: float,
            start: float | None, step: float, stage_s: float, confirm: bool,
            run_kwargs: dict[str, Any], endpoint: tuple[Any, float] | None) -> CapacityResult:
    steps: list[CapacityStep] = []

    def measured(label: str, **kw: Any) -> Result:
        at = (endpoint[0], label) if endpoint is not None else None
        r = run(url, _endpoint=at, **kw, **run_kwargs)
        if r.interrupted:
            raise _Interrupted
        return r

    read: list[tuple[bool, dict[str, float]]] = []  # (held, the bounds' values) of a rate

    def once(rate: float, repeat: int) -> CapacityStep:
        """One measurement of rate that counts: one where the client could
        not keep up is measured again, and twice is _ClientBound."""
        for attempt in range(2):
            r = measured(str(len(steps) + 1), rate=rate, duration=stage_s)
            steps.append(_judge(r, rate, bounds, max_error_rate, stage_s, repeat + attempt))
            if steps[-1].counts:
                if r.latency.count:
                    read.append((steps[-1].held, {stat: _value(r, stat) for stat, _ in bounds}))
                return steps[-1]
        raise _ClientBound

    def stage(rate: float) -> bool:
        """Whether rate holds: a breach confirmed by a second measurement,
        a third deciding when they disagree (confirm); _Noisy when the
        third breaks too and they disagree by more than the SLO can
        separate."""
        read.clear()
        first = once(rate, 0)
        if first.held or not confirm:
            return first.held
        second = once(rate, first.repeat + 1)
        if not second.held:
            return False
        third = once(rate, second.repeat + 1).held
        if not third:
            # A breach decided against a measurement that held: where they
            # read past what the SLO separates, noise decided it. (One stall
            # outvoted by two holds is no such case: the climb goes on.)
            _check_noise(rate, bounds, read)
        return third

    held: float | None = None
    broke: float | None = None
    client = interrupted = False
    noisy = ""
    try:
        if start is None:
            probe = measured("probe", duration=1.0)
            start = max(1.0, probe.rps / 10)
        # One request per connection per stage: below it a stage measures
        # too few requests to say anything, and the connections sit idle.
        conns = run_kwargs["concurrency"]
        lowest = min(start, max(1.0, conns / stage_s) if isinstance(conns, int) else 1.0)
        rate = start
        for _ in range(_MAX_STEPS):
            if stage(rate):
                held = rate
                rate *= step
                if rate > _check.MAX_RATE:
                    break
            else:
                broke = rate
                break
        if held is None and broke is not None and broke > lowest:
            # The first stage broke: the lowest rate decides whether any holds.
            if stage(lowest):
                held = lowest
            else:
                broke = lowest
        if held is not None and broke is not None and broke > held:
            while broke / held > _CLOSE and len(steps) < _MAX_STEPS:
                mid = math.sqrt(held * broke)
                if stage(mid):
                    held = mid
                else:
                    broke = mid
    except _ClientBound:
        client = True
    except _Noisy as e:
        noisy = str(e)
    except (_Interrupted, KeyboardInterrupt):
        # (KeyboardInterrupt: Ctrl-C between two stages, outside a run.)
        interrupted = True
    limited = "client" if client else "noise" if noisy else "server" if broke is not None \
        else None
    # (Interrupted before the lowest rate broke, nothing shows that no rate
    # holds.)
    met = held is not None or interrupted or bool(noisy)
    found = CapacityResult(held or 0.0, slo, max_error_rate, steps, url, met=met,
                           limited_by=limited, interrupted=interrupted, noisy=noisy)
    if endpoint is not None:
        endpoint[0].linger(endpoint[1])
    return found


def _check_noise(rate: float, bounds: list[tuple[str, float]],
                 read: list[tuple[bool, dict[str, float]]]) -> None:
    """_Noisy when the measurements of one rate, some holding and some
    breaching, read a bound's statistic more than _NOISE_FACTOR apart on
    both sides of its limit: the SLO cannot separate them."""
    if len({held for held, _ in read}) < 2:
        return
    for stat, limit in bounds:
        values = [v[stat] for _, v in read]
        low, high = min(values), max(values)
        if low < limit <= high and high > _NOISE_FACTOR * low:
            raise _Noisy(f"the machine was too noisy to judge: {stat} at {rate:,.1f}/s read "
                         f"{low * 1e3:.1f}-{high * 1e3:.1f} ms in {len(values)} measurements "
                         f"(the bound {limit * 1e3:g} ms)")
