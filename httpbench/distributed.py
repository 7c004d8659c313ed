"""One run over many machines: httpbench's C loop on a Dask cluster's
workers, one common start, one Result merged exactly.

    r = httpbench.run(url, requests=1_000_000, concurrency=400,
                      cluster="tcp://scheduler:8786", workers=4)

The caller splits the run (requests, connections, rate, stages) over the
workers, the remainder going to the first ones; each worker runs
httpbench.run() with its share in its own process, warms its connections
up (a prepared start), and says so through a Dask Queue. When every worker
is ready the caller sets the start instant, a little in the future, in a
Dask Variable; each worker's loop begins at that instant on its own clock,
so the per-second timelines line up, while every latency is measured on one
machine's monotonic clock. Workers report (issued, complete, failed) a few
times a second through another Queue; the caller aggregates them into the
progress bar, and notices a worker that has gone silent. Dask is imported
here only, when a run asks for a cluster.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import socket
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from . import _check, _core
from ._version import __version__
from .bound import merge_client
from .exceptions import ClusterError
from .result import FAILURE_CLASSES, MERGE_RULES, Result, Second, WorkerPart
from .scenario import Scenario

__all__ = ["run_on_cluster", "split", "merge", "WorkerPart", "LOST_NAME"]

# A scenario's by_name entry for the parts of lost workers: their last
# progress reports carry totals, not figures per request, so they are
# merged under this name, and the names still sum to the whole.
LOST_NAME = "(lost workers)"

# How far ahead of "every worker is ready" the common start is set: room
# for the Variable to reach every worker.
LEAD_S = 0.5
# A worker silent this long after the start (no progress report) is lost.
SILENCE_S = 10.0
# How long workers may take to warm up before the ones not ready are lost.
READY_S = 60.0


def split(total: int, n: int) -> list[int]:
    """total in n parts, as equal as can be, the remainder to the first."""
    return [total // n + (i < total % n) for i in range(n)]


def _dask() -> Any:
    try:
        import distributed
    except ImportError:
        raise ImportError("cluster= needs Dask distributed: pip install 'httpbench[dask]'") \
            from None
    return distributed


def _client(distributed: Any, cluster: Any) -> tuple[Any, bool]:
    """(the Client, whether it is ours to close) for a Client or an address."""
    if isinstance(cluster, distributed.Client):
        return cluster, False
    if not isinstance(cluster, str) or not cluster:
        raise ValueError(f"cluster must be a dask.distributed.Client or a scheduler address "
                         f"such as 'tcp://host:8786', not {cluster!r}")
    try:
        return distributed.Client(cluster, timeout=10, set_as_default=False), True
    except OSError as e:
        raise _core_connect_error(f"cluster {cluster}: {e}") from None


def _core_connect_error(text: str) -> Exception:
    from .exceptions import ConnectError
    return ConnectError(text)


def _about_worker() -> tuple[str, str]:
    """(httpbench's version, the host name) on a worker: the version its
    package says (imported already, this module being part of it; read
    from sys.modules rather than imported, which would tie this module to
    the package's __init__ in a cycle)."""
    return str(sys.modules[__package__].__version__), socket.gethostname()


class _WorkerCoordinator:
    """run()'s Coordinator on a worker: the barrier and the reports."""

    def __init__(self, run_id: str, index: int, publish: bool = False) -> None:
        distributed = _dask()
        self.index = index
        self.publish = publish
        self.metrics = distributed.Queue(f"httpbench-metrics-{run_id}") if publish else None
        self.ready = distributed.Queue(f"httpbench-ready-{run_id}")
        self.go = distributed.Variable(f"httpbench-go-{run_id}")
        self.stop = distributed.Variable(f"httpbench-stop-{run_id}")
        self.reports = distributed.Queue(f"httpbench-progress-{run_id}")

    def prepared(self) -> float | None:
        self.ready.put(self.index)
        try:
            at = self.go.get(timeout=READY_S + 30)
        except TimeoutError:
            return None
        # A worker ready after the start was set for the others is lost to
        # the caller already: it must not begin late and be counted.
        if at is None or time.time() > at + 1.0:
            return None
        return float(at)

    def progress(self, issued: int, complete: int, failed: int) -> bool:
        self.reports.put((self.index, issued, complete, failed))
        return bool(self.stop.get(timeout=10))

    def figures(self, snapshot: dict[str, Any]) -> None:
        """The coordinator's live metrics: this worker's figures, as they
        travel (their histograms' exact state)."""
        from .metrics import snapshot_figures
        whole, parts = snapshot_figures(snapshot)
        assert self.metrics is not None
        self.metrics.put((self.index, whole.to_plain(), [p.to_plain() for p in parts]))


def _on_worker(run_id: str, index: int, url: str, kwargs: dict[str, Any],
               publish: bool = False) -> dict[str, Any]:
    """A worker's part: httpbench.run with its share, started with the
    others'; returns its Result's dict and its timeline's buckets. With
    publish, its figures go to the coordinator's metrics each second."""
    from .local import run_local
    from .spec import RunSpec
    spec = RunSpec.from_arguments(url, **kwargs)
    r = run_local(spec, progress=False, coordinator=_WorkerCoordinator(run_id, index, publish))
    return {"result": r.to_dict(), "buckets": r.timeline_buckets}


def _shares(n: int, requests: int | None, concurrency: int, rate: float | None,
            stages: list[tuple[float, float]] | None,
            concurrency_stages: list[tuple[float, float]] | None) -> list[dict[str, Any]]:
    """Each worker's run() arguments for its part of the run."""
    conns = split(concurrency, n)
    reqs = split(requests, n) if requests is not None else [None] * n
    out = []
    for i in range(n):
        part = conns[i] / concurrency
        share: dict[str, Any] = {"requests": reqs[i], "concurrency": conns[i],
                                 "rate": rate * part if rate is not None else None}
        if stages is not None:
            share["stages"] = [(s, v * part) for s, v in stages]
            share["requests"] = share["rate"] = None
        if concurrency_stages is not None:
            share["concurrency_stages"] = [(s, v * part) for s, v in concurrency_stages]
            share["requests"] = share["rate"] = None
            share["concurrency"] = 1
        out.append(share)
    return out


def run_on_cluster(url: str, cluster: Any, workers: int | None, kwargs: dict[str, Any],
                   reporter: Callable[[int, int], None] | None = None) -> Result:
    """httpbench.run(url, cluster=..., workers=..., **kwargs): see the
    module's doc. kwargs are run()'s other arguments, checked already."""
    distributed = _dask()
    client, ours = _client(distributed, cluster)
    try:
        return _run(distributed, client, url, workers, kwargs, reporter)
    except OSError as e:
        # Before the run's own loop (which returns what was reported): the
        # scheduler gone while the run was being set up. Never the raw
        # transport's exception.
        if isinstance(e, FileNotFoundError):
            raise
        raise ClusterError(f"the scheduler was lost ({type(e).__name__}) before any worker "
                           "reported: nothing to return") from e
    finally:
        if ours:
            client.close()


def _run(distributed: Any, client: Any, url: str, workers: int | None,
         kwargs: dict[str, Any], reporter: Callable[[int, int], None] | None) -> Result:
    info = client.scheduler_info(n_workers=-1)
    if "workers" not in info:
        # A client that lost its scheduler and gave up reconnecting (after
        # its 30 s) answers with nothing rather than an error: the same loss.
        raise ConnectionError("the client lost its scheduler")
    addresses = sorted(info["workers"])
    if not addresses:
        raise ValueError("the cluster has no workers")
    n = len(addresses) if workers is None else workers
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(addresses):
        raise ValueError(f"workers must be from 1 to the cluster's {len(addresses)}, not "
                         f"{workers!r}")
    stages, vus = kwargs.get("stages"), kwargs.get("concurrency_stages")
    concurrency = kwargs["concurrency"]
    if vus is not None:
        concurrency = max(1, math.floor(max(v for _, v in vus) + 1e-9))
    # Fewer connections than workers: that many workers, one connection each;
    # and no worker without a request to make (requests=1 over two workers,
    # or a shape whose share would hold under one request).
    n = min(n, concurrency)
    if kwargs.get("requests") is not None:
        n = min(n, kwargs["requests"])
    if stages is not None:
        n = max(1, min(n, math.floor(_check.shape_total(list(stages)))))
    chosen = addresses[:n]
    about = client.run(_about_worker, workers=chosen)
    versions = {a: v for a, (v, _) in about.items() if v != __version__}
    if versions:
        raise ValueError(f"every worker must run httpbench {__version__}, as the caller does: "
                         + ", ".join(f"{a} has {v}" for a, v in sorted(versions.items())))
    shares = _shares(n, kwargs.get("requests"), concurrency, kwargs.get("rate"), stages, vus)
    return _Coordinator(distributed, client, url, kwargs, chosen, shares, about,
                        concurrency).run(reporter)


class _Live:
    """run(metrics=) over Dask: the coordinator serves each worker's
    series (a `worker` label), from the figures the workers send each
    second, and after the run their final ones."""

    def __init__(self, kwargs: dict[str, Any], run_id: str, client: Any,
                 chosen: list[str]) -> None:
        from .metrics import Endpoint, RunMetrics, target_of
        distributed = _dask()
        scenario = kwargs.get("scenario")
        names = [r.name for r in scenario.requests] if scenario is not None else []
        rate = kwargs.get("rate") if kwargs.get("stages") is None else None
        self.endpoint = Endpoint(kwargs["metrics"], kwargs.get("metrics_run"))
        self.shape = RunMetrics([("run", self.endpoint.run)], names,
                                target_of(rate, kwargs.get("stages")),
                                bool(kwargs.get("rate") or kwargs.get("stages")))
        self.chosen = chosen
        self.latest: dict[str, Any] = {}
        self.linger = float(kwargs.get("metrics_linger") or 0.0)
        self.endpoint.show(self.shape, lambda: self.shape.workers(self.latest))
        self.queue = distributed.Queue(f"httpbench-metrics-{run_id}", client=client)

    def drain(self) -> None:
        """Takes what the workers sent (each report one snapshot, its in
        flight too)."""
        from .metrics import Figures
        latest = dict(self.latest)
        for index, whole, parts in self.queue.get(batch=True):
            latest[self.chosen[index]] = (Figures.of_plain(whole),
                                          [Figures.of_plain(p) for p in parts])
        self.latest = latest  # one assignment: the server's thread reads it whole

    def final(self, parts: list[WorkerPart]) -> None:
        """Each worker's final figures, kept for metrics_linger seconds."""
        from .metrics import Figures
        final = {p.address: (Figures.of_result(p.result),
                             [Figures.of_result(x) for x in p.result.by_name.values()])
                 for p in parts}
        done = self.shape.workers(final, final=True)
        done.client = [(self.shape.base + [("worker", p.address)], p.result.client)
                       for p in parts if p.result.client is not None]
        self.endpoint.finish(done)
        self.endpoint.linger(self.linger)

    def close(self) -> None:
        self.endpoint.close()
        with contextlib.suppress(Exception):
            self.queue.close()


class _Coordinator:
    """The caller's side of one run over the chosen workers, a method per
    phase: submit each worker's share, wait at the barrier and set the
    start, watch the progress reports (and the silent), collect each
    worker's part (lost ones from their last report), merge them into one
    Result. What the phases share (the futures, what each worker last
    said, who is done or lost) is the object's."""

    def __init__(self, distributed: Any, client: Any, url: str, kwargs: dict[str, Any],
                 chosen: list[str], shares: list[dict[str, Any]], about: dict[str, Any],
                 concurrency: int) -> None:
        self.distributed, self.client, self.url, self.kwargs = distributed, client, url, kwargs
        self.chosen, self.shares, self.about, self.concurrency = chosen, shares, about, concurrency
        self.run_id = uuid.uuid4().hex
        self.ready = distributed.Queue(f"httpbench-ready-{self.run_id}", client=client)
        self.reports = distributed.Queue(f"httpbench-progress-{self.run_id}", client=client)
        self.go = distributed.Variable(f"httpbench-go-{self.run_id}", client=client)
        self.stop = distributed.Variable(f"httpbench-stop-{self.run_id}", client=client)
        self.stop.set(False)
        self.futures: list[Any] = []
        self.lost = _Lost()
        self.scheduler_lost = ""
        self.last: dict[int, tuple[int, int, int]] = {}  # (issued, complete, failed)
        self.heard: dict[int, float] = {}
        self.done: dict[int, dict[str, Any]] = {}
        self.interrupted = False
        self.interrupted_at: float | None = None
        self.at: float | None = None  # the common start, once set
        self.live: _Live | None = None

    def run(self, reporter: Callable[[int, int], None] | None) -> Result:
        """Every phase in order; the live metrics (when asked) closed on
        every way out."""
        if self.kwargs.get("metrics"):
            self.live = _Live(self.kwargs, self.run_id, self.client, self.chosen)
        try:
            self.submit()
            try:
                self.barrier()
                self.watch(reporter)
            except OSError as e:
                self.scheduler_gone(e)
            except KeyboardInterrupt:
                self.interrupt()
            return self.merge(self.collect())
        finally:
            if self.live is not None:
                self.live.close()

    def submit(self) -> None:
        """Each worker's run() with its share, pinned to that worker."""
        vus = self.kwargs.get("concurrency_stages")
        for i, (addr, share) in enumerate(zip(self.chosen, self.shares, strict=True)):
            kw = {**self.kwargs, **share, "metrics": None, "metrics_run": None,
                  "metrics_linger": 0.0}
            if vus is None:
                kw.pop("concurrency_stages", None)
            scenario = kw.get("scenario")
            if scenario is not None and i > 0:
                # Each worker its own picks: the seed moved on by the worker's
                # index (worker 0 keeps it, so one worker picks as a local run).
                kw["scenario"] = Scenario(scenario.requests, scenario.order,
                                          (scenario.seed + i * 0x9E3779B97F4A7C15) % 2**64)
            self.futures.append(self.client.submit(
                _on_worker, self.run_id, i, self.url, kw, self.live is not None,
                workers=[addr], allow_other_workers=False, pure=False, retries=0,
                key=f"httpbench-{self.run_id}-{i}"))

    def barrier(self) -> None:
        """Every worker warm (or lost), then one start instant for all."""
        n = len(self.chosen)
        deadline = time.monotonic() + READY_S + float(self.kwargs.get("warmup") or 0)
        waiting = set(range(n))
        while waiting - set(self.lost) - set(self.done):
            for index in self.ready.get(batch=True):
                waiting.discard(index)
            self.poll()
            if time.monotonic() > deadline:
                for i in waiting - set(self.lost) - set(self.done):
                    self.lost[i] = "not ready within the warmup's time"
                break
            time.sleep(0.02)
        instant = time.time() + LEAD_S
        self.go.set(instant)
        self.at = instant
        if self.live is not None:
            self.live.shape.start = instant
        now = time.monotonic()
        for i in range(n):
            self.heard[i] = now + LEAD_S

    def watch(self, reporter: Callable[[int, int], None] | None) -> None:
        """Until every worker is done or lost: their progress reports to
        the reporter, and a worker silent for SILENCE_S lost."""
        n = len(self.chosen)
        while len(self.done) + len(self.lost) < n:
            time.sleep(0.25)
            self.drain()
            self.poll()
            now = time.monotonic()
            for i in range(n):
                if i not in self.done and i not in self.lost and \
                        now - self.heard[i] > SILENCE_S:
                    self.lost[i] = f"no progress report for {SILENCE_S:g} s: the worker or " \
                                   "its connection to the scheduler was lost"
                    self.futures[i].cancel()
            if reporter is not None:
                reporter(sum(c for _, c, _ in self.last.values()),
                         sum(f for _, _, f in self.last.values()))

    def poll(self) -> None:
        """The workers' runs that ended: their results, or why they were
        lost."""
        for i, f in enumerate(self.futures):
            if i in self.done or i in self.lost or not f.done():
                continue
            try:
                self.done[i] = f.result()
            except (ValueError, TypeError, FileNotFoundError):
                # Settings the worker's run() refused: nothing may run.
                self.stop.set(True)
                self.go.set(None)
                raise
            except Exception as e:  # the worker died, or lost its connection
                self.lost[i] = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__

    def drain(self) -> None:
        """The progress reports (and live figures) sent since the last."""
        for index, issued, complete, failed in self.reports.get(batch=True):
            self.last[index] = (issued, complete, failed)
            self.heard[index] = time.monotonic()
        if self.live is not None:
            self.live.drain()

    def scheduler_gone(self, e: OSError) -> None:
        """The scheduler (or the connection to it) is gone: distributed's
        CommClosedError and its time-outs are OSErrors. What the workers
        reported stands, each not done lost with the reason. (A file a
        worker's run() could not find is the caller's error: raised.)"""
        if isinstance(e, FileNotFoundError):
            raise e
        self.scheduler_lost = f"the scheduler was lost ({type(e).__name__}: {e})" if str(e) \
            else f"the scheduler was lost ({type(e).__name__})"
        for i in range(len(self.chosen)):
            if i not in self.done and i not in self.lost:
                self.lost[i] = self.scheduler_lost

    def interrupt(self) -> None:
        """Ctrl-C: every worker's loop stops as on a local Ctrl-C; their
        partial results are merged."""
        self.interrupted = True
        self.interrupted_at = time.time()
        self.stop.set(True)
        if self.at is None:
            self.go.set(None)  # workers waiting at the barrier give up
        for i, f in enumerate(self.futures):
            if i not in self.done and i not in self.lost:
                try:
                    self.done[i] = f.result(timeout=SILENCE_S)
                except Exception as e:
                    self.lost[i] = f"{type(e).__name__}: {e}"

    def collect(self) -> list[WorkerPart]:
        """Each worker's part: its result, or a lost worker's from its last
        progress report; the run's queues closed."""
        if not self.scheduler_lost:
            try:
                self.drain()
            except OSError as e:
                self.scheduler_lost = f"the scheduler was lost ({type(e).__name__})"
        if self.scheduler_lost and not self.done and not any(any(v) for v in self.last.values()):
            raise ClusterError(f"{self.scheduler_lost} before any worker reported: nothing to "
                               "return")
        parts = []
        for i, (addr, share) in enumerate(zip(self.chosen, self.shares, strict=True)):
            host = self.about[addr][1]
            if i in self.done:
                r = Result.from_dict(self.done[i]["result"])
                r.timeline_buckets = self.done[i]["buckets"]
                parts.append(WorkerPart(address=addr, host=host, requests=share["requests"],
                                        concurrency=share["concurrency"], rate=share["rate"],
                                        lost=False, error="", not_run=0, result=r))
            else:
                issued, complete, failed = self.last.get(i, (0, 0, 0))
                parts.append(WorkerPart(
                    address=addr, host=host, requests=share["requests"],
                    concurrency=share["concurrency"], rate=share["rate"], lost=True,
                    error=self.lost[i], lost_at=self.lost.since(i, self.at),
                    not_run=max(0, (share["requests"] or 0) - issued) if share["requests"] else 0,
                    result=_lost_result(self.url, self.kwargs, issued, complete, failed)))
        if not self.scheduler_lost:
            for name in (f"httpbench-ready-{self.run_id}", f"httpbench-progress-{self.run_id}"):
                self.distributed.Queue(name, client=self.client).close()
        if self.live is not None:
            self.live.final(parts)
        return parts

    def merge(self, parts: list[WorkerPart]) -> Result:
        """The workers' parts as one Result, with the run's own settings."""
        merged = merge([p.result for p in parts], url=self.url, start=self.at)
        merged.client = merge_client([(p.address, p.result.client) for p in parts])
        merged.workers = parts
        merged.not_run = sum(p.not_run for p in parts)
        merged.interrupted = self.interrupted or any(p.result.interrupted for p in parts)
        if self.interrupted_at is not None and self.at is not None:
            merged.interrupted_at = max(0.0, self.interrupted_at - self.at)
        errors = [f"{p.address}: {p.error}" for p in parts if p.lost]
        if errors and not merged.first_error:
            merged.first_error = "lost " + "; ".join(errors)
        merged.requests = self.kwargs.get("requests")
        merged.rate = self.kwargs.get("rate")
        merged.concurrency = self.concurrency
        stages, vus = self.kwargs.get("stages"), self.kwargs.get("concurrency_stages")
        if stages is not None:
            merged.stages = list(stages)
        if vus is not None:
            merged.concurrency_stages = list(vus)
        return merged


class _Lost(dict[int, str]):
    """The lost workers' reasons by index, and when each was found lost
    (seconds since the epoch), for the report's mark on the timeline."""

    def __init__(self) -> None:
        super().__init__()
        self.when: dict[int, float] = {}

    def __setitem__(self, i: int, why: str) -> None:
        self.when.setdefault(i, time.time())
        super().__setitem__(i, why)

    def since(self, i: int, start: float | None) -> float | None:
        """When worker i was lost, in seconds from the start; None before it."""
        if start is None or self.when.get(i, 0.0) < start:
            return None
        return self.when[i] - start


def _lost_result(url: str, kwargs: dict[str, Any], issued: int, complete: int,
                 failed: int) -> Result:
    """A lost worker's part, from its last progress report: what was in
    flight is cancelled, the failures' classes unknown ("worker")."""
    return Result._known(url=url, method=kwargs.get("method", "GET"), issued=issued,
                         complete=complete, failed=failed,
                         cancelled=issued - complete - failed, failures={"worker": failed})


# The loop's counts that are Result fields: summed (failure classes are
# the `failures` field's, merged by its rule).
_SUMS = tuple(n for n in _core.RESULT_COUNTS if n not in FAILURE_CLASSES
              and n in {f.name for f in dataclasses.fields(Result)})


def merge(parts: list[Result], url: str | None = None, start: float | None = None) -> Result:
    """The exact merge of Results of one run's parts (workers, started
    together): counts, failure classes, statuses, bytes and CPU summed,
    histograms merged, the timeline merged by second from each second's
    buckets (a part's `timeline_buckets`; percentiles themselves cannot be
    merged), the time taken the longest part's. A scenario's by_name
    merges name by name."""
    real = [p for p in parts if p.start_time is not None] or parts
    first = real[0]
    fields: dict[str, Any] = {f.name: getattr(first, f.name)
                              for f in dataclasses.fields(Result)
                              if f.name not in ("workers", "by_name")}
    for name in _SUMS:
        fields[name] = sum(getattr(p, name) for p in parts)
    for name, (which, rule) in MERGE_RULES.items():
        fields[name] = rule([getattr(p, name) for p in (real if which == "measured" else parts)])
    fields["streams_unlimited"] = fields["streams_allowed"] is None and \
        any(p.streams_unlimited for p in parts)
    fields["client"] = merge_client([("", p.client) for p in parts])
    # The machines that measured: each host once, and their CPUs.
    hosts = {p.hostname: p.cpus for p in real if p.hostname}
    fields["hostname"] = ", ".join(hosts)
    fields["cpus"] = sum(c for c in hosts.values() if c) or None
    if url is not None:
        fields["url"] = url
    if start is not None:
        import datetime
        fields["start_time"] = datetime.datetime.fromtimestamp(
            start, datetime.timezone.utc).isoformat(timespec="milliseconds")
    buckets = _merged_buckets(parts)
    fields["timeline"] = _timeline(buckets, parts)
    fields["timeline_buckets"] = buckets
    merged = Result(**fields)
    # One rule for the whole and its names: every part counts in both. A
    # part without names (a lost worker's) goes under LOST_NAME.
    names = [n for p in parts for n in p.by_name]
    for name in dict.fromkeys(names):
        merged.by_name[name] = merge([p.by_name[name] for p in parts if name in p.by_name])
    unnamed = [p for p in parts if not p.by_name]
    if names and unnamed:
        merged.by_name[LOST_NAME] = merge(unnamed)
    return merged


def _merged_buckets(parts: list[Result]) -> list[list[tuple[int, int]]]:
    seconds: list[dict[int, int]] = []
    for p in parts:
        for s, pairs in enumerate(p.timeline_buckets):
            while len(seconds) <= s:
                seconds.append({})
            for k, count in pairs:
                seconds[s][k] = seconds[s].get(k, 0) + count
    return [sorted(d.items()) for d in seconds]


def _timeline(buckets: list[list[tuple[int, int]]], parts: list[Result]) -> list[Second]:
    """Each second's counts summed and its percentiles from its buckets."""
    sums: dict[int, list[int]] = {}
    for p in parts:
        for x in p.timeline:
            s = sums.setdefault(x.t, [0, 0, 0])
            s[0] += x.complete
            s[1] += x.failed
            s[2] += x.non_2xx
    out = []
    for t, (complete, failed, non_2xx) in sorted(sums.items()):
        pairs = buckets[t] if t < len(buckets) else []
        p50, p99 = _core.timeline_percentiles(pairs) if pairs else (0, 0)
        out.append(Second(t, complete, failed, p50 / 1e9 if pairs else None,
                          p99 / 1e9 if pairs else None, non_2xx))
    return out
