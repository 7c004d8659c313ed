"""The client's own figures, and the rule that says when the client rather
than the server limited a run (Result.client).

A run measures the client and the server together. When the client is
saturated the figures describe the client: its loop threads never wait
for the server (they compute, or wait for a CPU another process holds),
or under a rate every connection is busy when requests fall due, so that
they wait or are never sent, or the sends are late against the schedule
though connections are free (the loop did not get a CPU in time). The
thresholds are stated here once, and docs/running.md gives the
measurements behind them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from .hints import PLAIN, Words, hint

__all__ = ["ClientFigures", "client_figures", "merge_client", "server_paced", "BUSY_BOUND",
           "LATE_BUSY_SHARE", "LATE_P99_BOUND", "LATE_SHARE", "LATE_MIN_REQUESTS", "REASONS"]

# A loop thread busy (on a CPU, or runnable and waiting for one) for at
# least this share of the run never waited for the server: the client
# set the pace. Below it the thread waited in poll for the network.
BUSY_BOUND = 0.95
# Under a rate: more than this share of the requests started late because
# their connection was still busy when they fell due, every one of them
# sent: the server set the pace (server_paced), which is no verdict on the
# client (a 0.5 s stall of the server was called the client's bottleneck).
LATE_BUSY_SHARE = 0.01
# Under a rate: sends late (with connections free: the loop was not given
# a CPU in time) at the 99th percentile by at least this, seconds, and by at
# least LATE_SHARE of the corrected latency's p99 (that tail is then mostly
# the client's own delay), over at least LATE_MIN_REQUESTS requests (with
# fewer the 99th percentile is the one latest wake-up).
LATE_P99_BOUND = 0.001
LATE_SHARE = 0.5
LATE_MIN_REQUESTS = 100

REASONS = {
    "cpu": "a loop thread was busy {busy:.0%} of the run (on a CPU, or waiting for one), "
           "never waiting for the server, so these figures may describe the client: {advice}",
    "connections": "its connections were all busy when requests fell due{unsent}, so it "
                   "could not offer the rate asked: {advice}",
    "schedule": "its sends were late against the schedule (p99 {late} ms) though connections "
                "were free: the machine did not give the loop a CPU in time; {advice}",
}
# (What to do, after each reason: httpbench.hints, in its reader's words.)

# The "cpu" reason's words when waiting for a CPU was most of the busy
# time: the loop was short not of work time but of a CPU, which something
# else held; on the machine the server runs on, often the server itself
# (a scheduler that puts the two on one CPU: measured, a lone connection on
# the embedded server's CPU read busy 0.99 at CPU 0.47, and 0.35 at 0.34 on
# a CPU of its own). More threads would wait too.
_CPU_WAIT = ("a loop thread was busy {busy:.0%} of the run, never waiting for the server, "
             "yet the loop's threads were on a CPU {cpu:.0%} of it and waited {wait:.0%} for "
             "one that something else held (the server, if it runs on this machine, or "
             "more loop threads than CPUs), so these figures may describe the machine "
             "rather than the server: give the client CPUs of its own (taskset; the server "
             "others), or run it on another machine")


@dataclasses.dataclass(frozen=True)
class ClientFigures:
    """What the client itself did during a run (Result.client).

    busy: the share of the run the loop threads were busy (on a CPU, or
    runnable and waiting for a CPU another process held: anything but
    waiting for the network), their mean; busy_max the busiest thread's.
    cpu: their CPU time over the run's time, per thread (the mean share).
    Under a rate or a shape: late_p50, late_p99 and late_max, how late
    sends were against their schedule (seconds: actual start less intended
    start; None in a closed loop), late_busy the requests that started late
    because their connection was still busy when they fell due, unsent the
    requests the schedule made due before the run's end that were never
    sent. bound: whether the client rather than the server limited the run,
    and reason why ("cpu", "connections", "schedule"; "" when not bound).
    A run over a cluster: workers_bound, the workers that were."""

    busy: float
    busy_max: float
    cpu: float
    late_p50: float | None = None
    late_p99: float | None = None
    late_max: float | None = None
    late_busy: int = 0
    unsent: int = 0
    bound: bool = False
    reason: str = ""
    workers_bound: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["workers_bound"] = list(self.workers_bound)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClientFigures:
        """From to_dict()'s layout; a FieldError naming the field for one
        that is not what the model holds, a reason outside REASONS among
        them (the report looks its words up: a saved 'bogus' raised
        KeyError in str(Result)), and a `bound` that disagrees with it."""
        from ._typed import FieldError, dataclass_fields, shown
        fields = dataclass_fields(cls, d)
        reason = fields.get("reason", "")
        if reason and reason not in REASONS:
            raise FieldError("reason", f"{shown(reason)} is no reason httpbench gives (one of "
                                       f"{', '.join(map(repr, REASONS))}, or empty)")
        if fields.get("bound", False) != bool(reason):
            raise FieldError("bound", f"{fields.get('bound', False)} beside the reason "
                                      f"{reason!r} (bound is true exactly when there is one)")
        return cls(**fields)

    def warning(self, words: Words = PLAIN) -> str:
        """What `bound` means and what to do, in a sentence, the settings
        it names said in words (a drop-in mode's flags; by default the
        plain command line's and run()'s); "" when not bound."""
        if not self.bound:
            return ""
        where = f" (workers {', '.join(self.workers_bound)})" if self.workers_bound else ""
        unsent = f" ({self.unsent:,} due requests were never sent)" if self.unsent else ""
        late = f"{self.late_p99 * 1e3:.3f}" if self.late_p99 is not None else "-"
        # (The threads' means: the busiest thread's own CPU is not kept.)
        wait = max(0.0, self.busy - self.cpu)
        text = _CPU_WAIT if self.reason == "cpu" and wait > self.cpu else REASONS[self.reason]
        return (f"the client was the bottleneck{where}: "
                + text.format(busy=self.busy_max, unsent=unsent, late=late, cpu=self.cpu,
                              wait=wait, advice=hint(self.reason, words)))


def _reason(busy_max: float, paced: bool, issued: int, unsent: int,
            late_p99: float | None, latency_p99: float) -> str:
    """Why the client bound the run, the strongest first; "" if it did not.
    "connections" only where due requests were never sent: sent late
    behind a busy connection, they waited on the server's answers, and
    the server set the pace (server_paced)."""
    if busy_max >= BUSY_BOUND:
        return "cpu"
    if paced and unsent > 0:
        return "connections"
    if paced and late_p99 is not None and issued >= LATE_MIN_REQUESTS and \
            late_p99 >= max(LATE_P99_BOUND, LATE_SHARE * latency_p99):
        return "schedule"
    return ""


def client_figures(raw: dict[str, Any], paced: bool, threads: int) -> ClientFigures:
    """From the loop's figures (Bench.result()'s dict)."""
    late = raw["late"]
    elapsed = raw["time_taken"]
    # (The threads' CPU time runs from their start to their end, a little
    # past the run's last outcome: a share, so at most 1.)
    cpu = min(1.0, (raw["cpu_user"] + raw["cpu_sys"]) / (elapsed * max(threads, 1))) \
        if elapsed > 0 else 0.0
    p50 = p99 = most = None
    if paced and late.count:
        p50, p99, most = late.percentile(50) / 1e9, late.percentile(99) / 1e9, late.max / 1e9
    unsent, late_busy = int(raw["unsent"]), int(raw["late_busy"])
    latency = raw["latency"]
    # No verdict on a run in which nothing completed (nothing listening, a
    # TLS port spoken to in plain text): a loop retrying connects is busy,
    # and was called the bottleneck beside 50,149 connect failures; the
    # report's first line says what happened.
    reason = _reason(raw["busy_max"], paced, int(raw["issued"]), unsent, p99,
                     latency.percentile(99) / 1e9 if latency.count else 0.0) \
        if raw["complete"] else ""
    return ClientFigures(busy=raw["busy_mean"], busy_max=raw["busy_max"], cpu=cpu,
                         late_p50=p50, late_p99=p99, late_max=most, late_busy=late_busy,
                         unsent=unsent, bound=bool(reason), reason=reason)


def server_paced(c: ClientFigures, issued: int) -> bool:
    """Under a rate, whether the server set the pace: more than
    LATE_BUSY_SHARE of the requests waited for a connection still busy with
    an answer, and none went unsent (the client is not bound by it)."""
    return not c.bound and c.unsent == 0 and c.late_busy > LATE_BUSY_SHARE * max(issued, 1)


def merge_client(parts: Sequence[tuple[str, ClientFigures | None]]) -> ClientFigures | None:
    """Workers' figures as one (a run over a cluster): busy and cpu the
    workers' mean, busy_max and lateness the most any worker saw, unsent and
    late_busy summed; bound when any worker was, with the first one's
    reason and every bound worker named. None when no worker's are known."""
    known = [(a, c) for a, c in parts if c is not None]
    if not known:
        return None

    def most(name: str) -> float | None:
        values = [getattr(c, name) for _, c in known if getattr(c, name) is not None]
        return max(values) if values else None
    bound = [(a, c) for a, c in known if c.bound]
    return ClientFigures(
        busy=sum(c.busy for _, c in known) / len(known),
        busy_max=max(c.busy_max for _, c in known),
        cpu=sum(c.cpu for _, c in known) / len(known),
        late_p50=most("late_p50"), late_p99=most("late_p99"), late_max=most("late_max"),
        late_busy=sum(c.late_busy for _, c in known),
        unsent=sum(c.unsent for _, c in known),
        bound=bool(bound), reason=bound[0][1].reason if bound else "",
        workers_bound=tuple(a for a, _ in bound if a))
