"""Load shapes: run(stages=[(seconds, rate), ...]) ramps the arrival rate
linearly from stage to stage (from 0 before the first); the per-second
timeline follows the target on the embedded server, the counts are the
shape's integral, and the arguments are checked."""

from __future__ import annotations

import json
import math

import pytest

import httpbench
from httpbench.result import Result


def target_in(stages: list[tuple[float, float]], t0: float, t1: float, steps: int = 1000) -> float:
    """Requests the shape asks for in [t0, t1): its integral there."""
    def rate(t: float) -> float:
        start, previous = 0.0, 0.0
        for secs, r in stages:
            if t < start + secs:
                return previous + (r - previous) * (t - start) / secs
            start, previous = start + secs, r
        return 0.0
    h = (t1 - t0) / steps
    return sum(rate(t0 + (i + 0.5) * h) for i in range(steps)) * h


@pytest.fixture(scope="module")
def srv():
    with httpbench.Server() as s:
        yield s


def test_the_timeline_follows_the_shape(srv):
    stages = [(3.0, 3000.0), (2.0, 3000.0), (2.0, 600.0), (1.0, 0.0), (1.0, 1000.0)]
    r = httpbench.run(srv.url("/rnd?c=100"), stages=stages, concurrency=20, progress=False)
    assert r.failed == 0 and r.cancelled == 0
    assert r.stages == stages and r.rate == pytest.approx(r.complete / 9.0, rel=0.01)
    seconds = {s.t: s.complete for s in r.timeline}
    for t in range(1, 9):
        want = target_in(stages, t, t + 1)
        got = seconds.get(t, 0)
        assert abs(got - want) <= max(0.05 * want, 5), (t, got, want, seconds)


def test_the_counts_are_the_shapes_integral(srv):
    # 0 -> 400 over 2 s (400), 1 s at 400 (400), 400 -> 0 over 1 s (200).
    r = httpbench.run(srv.url("/rnd?c=10"), stages=[(2, 400), (1, 400), (1, 0)], concurrency=4,
                      progress=False)
    assert (r.issued, r.complete, r.failed, r.cancelled) == (1000, 1000, 0, 0)
    assert "Load shape:             2 s to 400/s, 1 s at 400/s, 1 s to 0/s" in r.report()
    assert "corrected" in r.report()  # latency from each intended start, as under a rate
    again = Result.from_json(r.to_json())
    assert again.stages == r.stages and json.loads(r.to_json())["schema"] == httpbench.result.SCHEMA


def test_a_stage_at_0_holds_no_request(srv):
    # Up to 200/s, down to 0, a second at 0, up to 200/s again: 100 each ramp.
    r = httpbench.run(srv.url("/rnd?c=10"), stages=[(1, 200), (1, 0), (1, 0), (1, 200)],
                      concurrency=2, progress=False)
    seconds = {s.t: s.complete for s in r.timeline}
    assert seconds.get(2, 0) == 0 and abs(seconds[1] - 100) <= 5 and abs(seconds[3] - 100) <= 5
    assert r.complete == 300 and r.failed == 0


def test_the_arguments_are_checked(srv):
    url = srv.url("/")
    for kwargs in (dict(duration=3), dict(requests=10), dict(rate=5.0)):
        with pytest.raises(ValueError, match="stages set"):
            httpbench.run(url, stages=[(1, 10)], **kwargs)
    with pytest.raises(ValueError, match="pipeline"):
        httpbench.run(url, stages=[(1, 10)], pipeline=4)
    for bad in ([], [(1, 0)], [(0, 10)], [(math.nan, 10)], [(1, -1)], [(1, math.inf)],
                [(1, math.nan)], [(1e12, 1)], [(1, 10, 3)], "1,10", [(1, True)],
                [(1, 1)] * 1001):
        with pytest.raises(ValueError, match="stage"):
            httpbench.run(url, stages=bad)  # type: ignore[arg-type]


def test_connections_ramp_with_concurrency_stages(tmp_path):
    """Connection i runs while the shape is at i + 1 or above: from
    (i + 1) / 5 s on the way up to 6 - (i + 1) / 5 s on the way down.
    Judged on the log (each connection's requests inside its window, and
    no more of them than 100 ms answers fit), not on each second's count,
    which a loaded machine's late wake-ups moved."""
    shape = [(2, 10), (2, 10), (2, 0)]
    log = tmp_path / "log.csv"
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/delay?ms=100"), concurrency_stages=shape, progress=False,
                          log=str(log))
        opened = srv.stats()["connections"]
    assert r.failed == 0 and r.concurrency == 10 and opened == 10
    by_conn: dict[int, list[httpbench.LogRecord]] = {}
    for x in httpbench.read_log(str(log)):
        by_conn.setdefault(x.connection, []).append(x)
    assert sorted(by_conn) == list(range(10))
    for i, xs in by_conn.items():
        opens, closes = (i + 1) / 5, 6 - (i + 1) / 5
        assert min(x.start for x in xs) >= opens - 1e-3, (i, min(x.start for x in xs))
        assert max(x.start for x in xs) < closes, (i, max(x.start for x in xs))
        assert 1 <= len(xs) <= (closes - opens) / 0.1 + 1, (i, len(xs))
    # (Unloaded: 380, floor(5t) connections on the way up and down.)
    assert r.complete == sum(map(len, by_conn.values())) <= 380 + 10
    assert "Connections shape:      2 s to 10, 2 s at 10, 2 s to 0" in r.report()
    assert Result.from_json(r.to_json()).concurrency_stages == shape


def test_each_connections_req_s_is_over_its_own_time():
    """As h2load reckons a client's: responses over the time from its
    connect to its close (or the run's end). Over a ramp of four
    connections, one every half second, each completes 10 a second of its
    own time (100 ms a request), though the last opened ran a third of the
    run (over the run's length its rate would be 3.3)."""
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/delay?ms=100"), concurrency_stages=[(2, 4), (1, 4)],
                          progress=False)
    assert r.failed == 0 and r.complete >= 60
    assert 9.0 <= r.conn_rps_min <= r.conn_rps_mean <= r.conn_rps_max <= 10.1
    assert r.conn_rps_sd < 0.5


def test_concurrency_stages_arguments_are_checked(srv):
    url = srv.url("/")
    for kwargs in (dict(duration=3), dict(requests=10), dict(rate=5.0), dict(concurrency=4),
                   dict(stages=[(1, 10)]), dict(pipeline=2)):
        with pytest.raises(ValueError, match="concurrency_stages"):
            httpbench.run(url, concurrency_stages=[(1, 2)], **kwargs)
    for bad in ([], [(1, 0)], [(1, -1)], [(1, 2e6)], [(math.inf, 1)], [(1, math.nan)]):
        with pytest.raises(ValueError, match="concurrency_stages"):
            httpbench.run(url, concurrency_stages=bad)
    # Connection i runs while the shape is at i + 1 or above: a peak under
    # one opens none, so the run would count nothing (it ran, empty, for
    # the shape's length).
    for bad in ([(1, 0.5)], [(1, 0.99), (1, 0)]):
        with pytest.raises(ValueError, match="concurrency_stages: the shape never reaches one"):
            httpbench.run(url, concurrency_stages=bad)
