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
    assert again.stages == r.stages and json.loads(r.to_json())["schema"] == 5


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
