"""The accounting every Python agent is held to: tickets, the checks on
each answer, the grace after a stop, and the Result they add up to.

The rule is the C loop's (docs/design.md): every request a worker takes ends
complete, failed (in one class) or, if still in flight when the run's
accounting closes, cancelled. All of it under one lock, so an outcome that
arrives after the close is not counted twice.
"""

from __future__ import annotations

import math
import resource
import threading
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from . import _core
from ._core import Histogram
from .result import FAILURE_CLASSES, Latency, Result

__all__ = ["GRACE_S", "Head", "Tally", "Ledger", "ThreadCPU", "agent_result"]

# After Ctrl-C or the end of a duration, how long requests in flight may take
# to finish before they are cancelled: the C loop's rule (bench.h).
GRACE_S = _core.GRACE_SECONDS


class Head(NamedTuple):
    """A response head as the ledger counts it: its size as sent, and
    whether it kept its connection alive (as the C loop's
    keepalive_requests and ab's Keep-Alive requests count it)."""

    size: int
    kept: bool


class Tally:
    """One worker's figures; merged at the end."""

    def __init__(self) -> None:
        self.hist = Histogram()
        self.issued = self.complete = self.non_2xx = self.cancelled = 0
        self.inflight = False
        self.failures = dict.fromkeys(FAILURE_CLASSES, 0)
        self.status: dict[int, int] = {}
        self.body_bytes = self.head_bytes = 0
        self.connects = self.keepalive = 0
        self.cpu_user = self.cpu_sys = 0.0
        self.first_error = ""

    def fail(self, cls: str, error: BaseException | str) -> None:
        self.failures[cls] += 1
        if not self.first_error:
            self.first_error = str(error) or type(error).__name__


class Ledger:
    """The shared ticket counter, the checks, and the close of the
    accounting; started and waited for by the agent that runs."""

    def __init__(self, requests: int | None, duration: float | None, body: bytes | None,
                 echo: bytes | None, lengths_vary: bool) -> None:
        self.left = requests
        self.end = time.monotonic() + duration if duration else None
        self.body = body
        self.echo = echo
        self.lengths_vary = lengths_vary
        self.lock = threading.Lock()
        self.doc_len: int | None = None
        self.stop = False
        self.closed = False
        self.running = 0
        self.all_done = threading.Event()
        # The start gate: no ticket before every worker has started, or a
        # worker started late (a loaded machine) could find them all taken
        # and its connection never opened (-c 3 making one), as the C
        # loop's gate keeps its threads.
        self.gate = threading.Event()
        self.started = 0

    def take(self, tally: Tally) -> bool:
        """A ticket for one request, which is then in flight in tally."""
        if not self.gate.is_set():
            self.gate.wait()
        with self.lock:
            if self.stop or self.closed or (self.end is not None and
                                            time.monotonic() >= self.end):
                return False
            if self.left is not None:
                if self.left <= 0:
                    return False
                self.left -= 1
            tally.issued += 1
            tally.inflight = True
            return True

    def fail(self, tally: Tally, cls: str, error: BaseException | str) -> None:
        """The request in flight in tally failed, in class cls."""
        with self.lock:
            if not self.closed:
                tally.inflight = False
                tally.fail(cls, error)

    def check(self, tally: Tally, status: int, data: bytes, head: Head, t0: int) -> None:
        """The request in flight in tally was answered: complete or failed,
        as the C loop counts it."""
        elapsed = time.perf_counter_ns() - t0
        with self.lock:
            if self.closed:
                return  # counted as cancelled already
            tally.inflight = False
            tally.status[status] = tally.status.get(status, 0) + 1
            tally.body_bytes += len(data)
            tally.head_bytes += head.size
            if not 200 <= status < 300:
                tally.non_2xx += 1
            else:
                if self.doc_len is None:
                    self.doc_len = len(data)
                if self.echo is not None and data != self.echo:
                    tally.fail("length" if len(data) != len(self.echo) else "exceptions",
                               f"the echo differs from the {len(self.echo)} bytes sent")
                    return
                if not self.lengths_vary and len(data) != self.doc_len:
                    tally.fail("length", f"body of {len(data)} bytes, the first was "
                                         f"{self.doc_len}")
                    return
            tally.complete += 1
            tally.keepalive += head.kept
            tally.hist.record(elapsed)

    def finish(self, tallies: Sequence[Tally]) -> None:
        """Closes the accounting: no more tickets, and what is still in
        flight is cancelled."""
        with self.lock:
            self.closed = True
            for t in tallies:
                if t.inflight:
                    t.inflight = False
                    t.cancelled += 1

    def start(self, targets: Sequence[Callable[[], None]]) -> None:
        """Runs each target on a daemon thread of its own, counted until it
        returns."""

        def counted(target: Callable[[], None]) -> None:
            with self.lock:
                self.started += 1
                if self.started == len(targets):
                    self.gate.set()
            try:
                target()
            finally:
                with self.lock:
                    self.running -= 1
                    if self.running == 0:
                        self.all_done.set()

        self.running = len(targets)
        try:
            for target in targets:
                threading.Thread(target=counted, args=(target,), daemon=True).start()
        except BaseException:
            self.gate.set()  # the ones started go on; the caller sees the error
            raise

    def wait(self) -> bool:
        """Waits for the workers. Once the duration has ended, or Ctrl-C has
        stopped the run (which is then reported), they get GRACE_S to
        finish what they have in flight; the caller then calls finish().
        Returns whether the run was interrupted. (An Event, not
        Thread.join: a join cut short by KeyboardInterrupt can leave a
        running thread marked as ended.)"""
        interrupted = False
        grace_end = None
        while not self.all_done.is_set():
            now = time.monotonic()
            if grace_end is None and self.end is not None and now >= self.end:
                grace_end = self.end + GRACE_S
            if grace_end is not None and now >= grace_end:
                break
            wake = min(x for x in (grace_end, self.end, now + 0.25) if x is not None)
            try:
                self.all_done.wait(max(0.001, wake - now))
            except KeyboardInterrupt:
                interrupted = True
                self.stop = True
                grace_end = min(grace_end or math.inf, time.monotonic() + GRACE_S)
        return interrupted


class ThreadCPU:
    """This thread's CPU time, user and system, from here to done()."""

    def __init__(self) -> None:
        self.start = resource.getrusage(resource.RUSAGE_THREAD)

    def done(self, tally: Tally) -> None:
        end = resource.getrusage(resource.RUSAGE_THREAD)
        tally.cpu_user = end.ru_utime - self.start.ru_utime
        tally.cpu_sys = end.ru_stime - self.start.ru_stime


def agent_result(name: str, version: str, url: str, method: str, host: str, port: int,
                 path: str, requests: int | None, concurrency: int, threads: int, ledger: Ledger,
                 tallies: Sequence[Tally], elapsed: float, interrupted: bool,
                 started: str) -> Result:
    """The Result of a Python agent's run: its tallies merged."""
    hist = Histogram()
    status: dict[int, int] = {}
    failures = dict.fromkeys(FAILURE_CLASSES, 0)
    for t in tallies:
        hist.merge(t.hist)
        for code, n in t.status.items():
            status[code] = status.get(code, 0) + n
        for cls, n in t.failures.items():
            failures[cls] += n
    complete = sum(t.complete for t in tallies)
    connects = sum(t.connects for t in tallies)
    return Result._known(
        url=url, method=method, start_time=started, host=host, port=port, path=path,
        requests=requests, issued=sum(t.issued for t in tallies), complete=complete,
        failed=sum(failures.values()), cancelled=sum(t.cancelled for t in tallies),
        failures=failures, non_2xx=sum(t.non_2xx for t in tallies), status_counts=status,
        time_taken=elapsed, bytes_received=sum(t.body_bytes + t.head_bytes for t in tallies),
        body_bytes=sum(t.body_bytes for t in tallies), document_length=ledger.doc_len,
        keepalive_requests=sum(t.keepalive for t in tallies), connects=connects,
        reconnects=max(0, connects - concurrency), concurrency=concurrency, threads=threads,
        cpu_user=sum(t.cpu_user for t in tallies), cpu_sys=sum(t.cpu_sys for t in tallies),
        interrupted=interrupted,
        first_error=next((t.first_error for t in tallies if t.first_error), ""),
        latency=Latency(hist), latency_uncorrected=Latency(hist), agent=name,
        agent_version=version,
    )
