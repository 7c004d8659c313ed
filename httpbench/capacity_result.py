"""The capacity search's model: its stages, its result and the SLO it was
held to, with their JSON (httpbench.capacity runs the search; render/
draws it)."""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Any

from ._core import MAX_SECONDS
from ._typed import FieldError, dataclass_fields
from ._view import draw
from .figures import SCHEMA

__all__ = ["CapacityResult", "CapacityStep", "parse_slo", "STATS", "PERCENT", "MIN_STAGE_S",
           "needed"]

# The statistics an SLO may bound: the mean, or a percentile by its name.
PERCENT = {"p50": 50.0, "p75": 75.0, "p90": 90.0, "p95": 95.0, "p99": 99.0, "p999": 99.9}
STATS = ("mean", *PERCENT)
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
# The shortest stage capacity() runs (stage_s): shorter, a stage measures
# a handful of requests (0.01 s read "SLO not met" and blamed the server).
MIN_STAGE_S = 0.1


def needed(stat: str) -> int:
    """The responses a statistic needs to be more than the slowest one's
    time: p99 100, p999 1,000 (the mean 1)."""
    return 1 if stat == "mean" else math.ceil(100 / (100 - PERCENT[stat]) - 1e-9)
_TERM = re.compile(r"\s*(" + "|".join(STATS) + r")\s*<\s*([0-9]*\.?[0-9]+)\s*(us|ms|s)\s*")


def parse_slo(slo: str) -> list[tuple[str, float]]:
    """"p99<5ms,mean<2ms" as [("p99", 0.005), ("mean", 0.002)] (seconds);
    ValueError naming what is wrong."""
    if not isinstance(slo, str) or not slo.strip():
        raise ValueError(f"slo must be like 'p99<5ms' (STAT<NUMBER UNIT, comma-separated), "
                         f"not {slo!r}")
    out = []
    for term in slo.split(","):
        m = _TERM.fullmatch(term)
        if m is None:
            raise ValueError(f"slo: {term.strip()!r} is not STAT<NUMBER UNIT with STAT one of "
                             f"{', '.join(STATS)} and UNIT us, ms or s")
        limit = float(m.group(2)) * _UNITS[m.group(3)]
        if not 0 < limit <= MAX_SECONDS:  # (a year, as every time run() takes)
            raise ValueError(f"slo: the bound in {term.strip()!r} must be above 0 and at most "
                             "a year")
        out.append((m.group(1), limit))
    return out


@dataclasses.dataclass(frozen=True)
class CapacityStep:
    """One stage: the rate asked for, what was achieved, and whether it
    held (`why` says what broke, "" when it held). repeat: 0 for a rate's
    first measurement, 1 and 2 for the repeats that confirm a breach or
    check a client that could not keep up; client: why the client bound
    this measurement ("cpu", "schedule"; "" when it did not, or when its
    late sends could not explain the breach: an error rate, or a latency
    over the bound by more than their lateness). `counts` says whether its
    verdict counts. timed: the responses whose latency p50 and p99 are
    of; 0 when none arrived (a server down, every request cancelled), and
    then the two are 0, not a latency (None in a search saved before
    schema 20). note: the line a run's report would open with, where
    nothing completed or nothing was 2xx (render.text.headline: "Nothing
    completed: all 30 requests failed (connect): Connection refused. Is
    the server up...", "All 500 responses were 404 Not Found."), else ""
    (a 404 is no error to the error rate, so a wrong path still "holds")."""

    target: float
    achieved: float
    p50: float
    p99: float
    errors: int
    requests: int
    held: bool
    why: str
    repeat: int = 0
    client: str = ""
    timed: int | None = None
    note: str = ""

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0

    @property
    def latency_known(self) -> bool:
        """Whether p50 and p99 are a latency: some response arrived (or
        the step was saved before schema 20 said)."""
        return self.timed != 0

    @property
    def counts(self) -> bool:
        """Whether this measurement's verdict counts: it held, or the
        client was not bound (a breach while it was is the client's)."""
        return self.held or not self.client


@dataclasses.dataclass
class CapacityResult:
    """The highest rate that held (0.0 when none did), the SLO, and every
    stage in the order run, repeats included. `met` is False when even the
    lowest sensible rate (one request per connection per stage, or `start`
    if lower) broke: no rate holds, and the last step says what broke it.
    limited_by: "server" when a breach was confirmed, "client" when the
    client could not keep up (its CPU, or its schedule: the search then
    stops, the server untested beyond), "noise" when a rate was judged
    broken though one of its measurements held, their statistic more than
    2x apart across its bound (beyond what the SLO can separate: the
    search stops, `noisy` says what they read, and no capacity is found),
    None when nothing broke.
    interrupted: Ctrl-C (or SIGTERM on the command line) stopped the
    search during a stage; that stage is not in `steps` (a part of a
    stage says nothing of its rate), and rate, met and limited_by say what
    the stages before it found."""

    rate: float
    slo: str
    max_error_rate: float
    steps: list[CapacityStep]
    url: str
    met: bool = True
    limited_by: str | None = None
    interrupted: bool = False
    noisy: str = ""

    @property
    def found(self) -> bool:
        """Whether the search found the server's capacity: it ended on a
        confirmed breach (or nothing broke up to the highest rate), not
        stopped by the client, the machine's noise or Ctrl-C."""
        return self.met and self.limited_by not in ("client", "noise") and not self.interrupted

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """(the highest rate that held, or None; the lowest that broke,
        confirmed, or None)."""
        # A stage's verdict is its last measurement that counts (a breach
        # measured again, a third deciding): breach, hold, breach broke.
        verdict: dict[int, CapacityStep] = {}
        stage = -1
        for s in self.steps:
            stage += s.repeat == 0 or stage < 0
            if s.counts:
                verdict[stage] = s
        held = [s.target for s in verdict.values() if s.held]
        broke = [s.target for s in verdict.values() if not s.held]
        low = min((t for t in broke if t > max(held, default=0.0)), default=None)
        return (max(held) if held else None, low)

    def report(self) -> str:
        """The stages as a text table, then the capacity found (or why
        none was): what capacity() prints."""
        text: str = draw("capacity_report", self)
        return text

    def __str__(self) -> str:
        return self.report()

    def slo_bounds(self) -> list[tuple[str, float]]:
        """The SLO's bounds: (statistic, seconds) each."""
        return parse_slo(self.slo)

    def to_dict(self) -> dict[str, Any]:
        """The search as JSON-ready data (capacity --json writes it)."""
        held, broke = self.bounds
        return {"kind": "capacity", "schema": SCHEMA, "url": self.url, "slo": self.slo,
                "max_error_rate": self.max_error_rate, "rate": self.rate, "met": self.met,
                "limited_by": self.limited_by, "interrupted": self.interrupted,
                "noisy": self.noisy, "found": self.found,
                "held": held, "broke": broke,
                "steps": [{**dataclasses.asdict(s), "error_rate": s.error_rate}
                          for s in self.steps]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CapacityResult:
        """From to_dict()'s layout; a FieldError (a ValueError) naming the
        field for one that is not what the model holds (a limited_by the
        search never gives among them)."""
        fields = dataclass_fields(cls, d)
        if fields.get("limited_by") not in (None, "server", "client", "noise"):
            raise FieldError("limited_by", f"{fields['limited_by']!r} is none of 'server', "
                                           "'client', 'noise' or null")
        return cls(**fields)

    def to_html(self, path: str | os.PathLike[str] | None = None) -> str:
        """The standalone HTML report of the search (its knee plot and
        stages), written to path when given; returns its text."""
        text: str = draw("capacity_page", self, path)
        return text

    def plot(self, ax: Any = None) -> Any:
        """p99 and p50 latency against the rate asked for, the stages in
        order of rate (not in the order the bisection ran them), held ones
        as dots and broken ones as crosses, with the SLO's bounds and the
        capacity found (matplotlib)."""
        return draw("capacity_plot", self, ax)
