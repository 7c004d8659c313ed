"""A run spread over a Dask cluster's workers (httpbench.distributed): on a
LocalCluster of two worker processes, each running the C loop."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

import httpbench
from helpers import exact, free_port, wait_for_port
from httpbench import Request, Scenario

import distributed  # the test extra brings it: these tests always run


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    c = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                 dashboard_address=":0")
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="module")
def client(cluster) -> Iterator[object]:
    with distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def srv() -> Iterator[httpbench.Server]:
    with httpbench.Server(threads=2) as s:
        yield s


def same_histograms(merged: httpbench.Result) -> None:
    """The merged latencies are the workers' own histograms merged."""
    for name in ("latency", "latency_uncorrected", "connect_time", "waiting", "processing"):
        h = httpbench.Histogram()
        for w in merged.workers:
            h.merge(getattr(w.result, name).histogram)
        assert getattr(merged, name).histogram.state() == h.state(), name


def test_requests_split_exactly_and_merged(client, srv):
    r = httpbench.run(srv.url("/rnd?c=100"), requests=10_001, concurrency=5, cluster=client,
                      progress=False)
    assert (r.issued, r.complete, r.failed, r.cancelled) == (10_001, 10_001, 0, 0)
    assert [(w.requests, w.concurrency) for w in r.workers] == [(5001, 3), (5000, 2)]
    assert [w.result.complete for w in r.workers] == [5001, 5000]
    assert r.body_bytes == 100 * 10_001 and r.concurrency == 5
    assert r.cpu_time == pytest.approx(sum(w.result.cpu_time for w in r.workers))
    assert not any(w.lost for w in r.workers) and r.ok
    same_histograms(r)
    text = r.report()
    assert "Workers (times in ms)" in text and text.count(" ok\n") + text.endswith(" ok\n") >= 2
    back = httpbench.Result.from_json(r.to_json())
    assert [w.result.complete for w in back.workers] == [5001, 5000]
    assert back.report() == r.report()


def test_http2_over_the_cluster_keeps_each_workers_streams(client, srv):
    """Over Dask each worker's connections carry `streams` (streams are not
    split); the merge keeps the protocol and the server's limit."""
    r = httpbench.run(srv.url("/rnd?c=100"), requests=6000, concurrency=4, http2=True,
                      streams=10, cluster=client, progress=False)
    assert (r.issued, r.complete, r.failed) == (6000, 6000, 0)
    assert r.http_version == "2" and r.streams == 10 and r.streams_allowed == 100
    assert r.streams_max_used == 10
    assert all(w.result.streams == 10 and w.result.http_version == "2" for w in r.workers)
    assert r.header_bytes_wire == sum(w.result.header_bytes_wire for w in r.workers)


def test_fewer_connections_than_workers_use_that_many(client, srv):
    r = httpbench.run(srv.url("/rnd?c=10"), requests=101, concurrency=1, cluster=client,
                      progress=False)
    assert r.complete == 101 and len(r.workers) == 1 and r.workers[0].concurrency == 1
    r = httpbench.run(srv.url("/rnd?c=10"), requests=101, concurrency=4, cluster=client,
                      workers=1, progress=False)
    assert r.complete == 101 and len(r.workers) == 1 and r.workers[0].concurrency == 4


def test_duration_and_the_timeline_line_up(cluster, srv):
    # The cluster as its scheduler's address.
    r = httpbench.run(srv.url("/rnd?c=10"), duration=2.0, concurrency=4,
                      cluster=cluster.scheduler_address, progress=False)
    exact(r)
    assert r.failed == 0
    assert 2.0 <= r.time_taken < 3.5
    assert sum(s.complete for s in r.timeline) == r.complete
    # Both workers began at the common instant: both have seconds 0 and 1.
    for w in r.workers:
        assert {0, 1} <= {s.t for s in w.result.timeline}
    for s in r.timeline:
        parts = [x for w in r.workers for x in w.result.timeline if x.t == s.t]
        assert s.complete == sum(x.complete for x in parts)
        assert s.p99 is not None and s.p99 >= min(x.p99 for x in parts if x.p99 is not None)
    same_histograms(r)


def test_a_rate_is_split_and_achieved(client, srv):
    r = httpbench.run(srv.url("/rnd?c=10"), rate=1000, duration=3.0, concurrency=4,
                      cluster=client, progress=False)
    assert [w.rate for w in r.workers] == [500, 500] and r.rate == 1000
    assert r.complete == pytest.approx(3000, rel=0.05), r.complete
    assert "corrected" in r.report()


def test_shapes_are_split(client, srv):
    r = httpbench.run(srv.url("/rnd?c=10"), stages=[(1, 400), (1, 400)], concurrency=4,
                      cluster=client, progress=False)
    # 200 over the ramp, 400 at the plateau: each worker half of it.
    assert r.complete == 600 and [w.result.complete for w in r.workers] == [300, 300]
    assert [w.result.stages for w in r.workers] == [[(1.0, 200.0), (1.0, 200.0)]] * 2
    assert r.stages == [(1.0, 400.0), (1.0, 400.0)]
    r = httpbench.run(srv.url("/rnd?c=10"), concurrency_stages=[(1, 4)], cluster=client,
                      progress=False)
    assert [w.result.concurrency_stages for w in r.workers] == [[(1.0, 2.0)]] * 2
    assert r.ok and r.complete == sum(w.result.complete for w in r.workers) > 0


def test_a_scenario_over_the_cluster(client, srv):
    s = Scenario([Request("GET", "/rnd?c=5", name="five"),
                  Request("POST", "/echo", body=b"abc", name="echo", expect_body=b"b")])
    r = httpbench.run(srv.url("/"), scenario=s, requests=2001, concurrency=4, cluster=client,
                      progress=False)
    assert r.complete == 2001 and r.ok
    for name in ("five", "echo"):
        assert r.by_name[name].complete == sum(w.result.by_name[name].complete
                                               for w in r.workers) > 0
    assert r.by_name["five"].body_bytes == 5 * r.by_name["five"].complete
    # One connection and one loop thread a worker: each worker's picks are
    # its seed's, and the seed differs by worker (the first keeps it).
    picks = [[w.result.by_name[n].complete for n in ("five", "echo")] for w in
             httpbench.run(srv.url("/"), scenario=s, requests=400, concurrency=2,
                           cluster=client, progress=False).workers]
    local = httpbench.run(srv.url("/"), scenario=s, requests=200, progress=False)
    assert picks[0] == [local.by_name[n].complete for n in ("five", "echo")]
    assert picks[1] != picks[0] and sum(picks[1]) == 200, picks


def test_the_arguments_are_checked_before_any_worker_runs(client, srv):
    url = srv.url("/")
    for kwargs, match in ((dict(requests=-1), "requests"), (dict(concurrency=0), "concurrency"),
                          (dict(rate=float("nan")), "rate"), (dict(workers=3), "workers"),
                          (dict(workers=0), "workers"), (dict(timeout=-1.0), "timeout")):
        with pytest.raises(ValueError, match=match):
            httpbench.run(url, cluster=client, progress=False, **kwargs)
    with pytest.raises(ValueError, match="cluster"):
        httpbench.run(url, workers=2)
    with pytest.raises(ValueError, match="cluster must be"):
        httpbench.run(url, cluster=42, progress=False)


def test_another_version_on_a_worker_is_refused(client, srv):
    def pretend(version: str) -> None:
        sys.modules["httpbench"].__version__ = version

    real = httpbench.__version__
    client.run(pretend, "0.0.1")
    try:
        with pytest.raises(ValueError, match=r"must run httpbench .*has 0\.0\.1"):
            httpbench.run(srv.url("/"), requests=10, cluster=client, progress=False)
    finally:
        client.run(pretend, real)


def test_importing_httpbench_does_not_import_dask(tmp_path):
    code = "import sys, httpbench; print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_without_dask_the_error_names_the_extra(tmp_path):
    code = ("import sys; sys.modules['distributed'] = None\n"
            "import httpbench\n"
            "try:\n"
            "    httpbench.run('http://127.0.0.1:9/', cluster='tcp://127.0.0.1:1')\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert "pip install 'httpbench[dask]'" in out.stdout, out.stderr


def kill_a_worker_later(c: distributed.Client, srv: httpbench.Server, served: int) -> str:
    """Kills the second worker with SIGKILL once `served` more requests
    have reached srv; returns its address."""
    import threading

    victim = sorted(c.scheduler_info()["workers"])[1]
    pid = c.run(os.getpid, workers=[victim])[victim]
    start = srv.stats()["requests"]

    def kill() -> None:
        while srv.stats()["requests"] < start + served:
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=kill, daemon=True).start()
    return victim


def test_a_worker_killed_mid_run(srv, monkeypatch):
    import httpbench.distributed as hd

    monkeypatch.setattr(hd, "SILENCE_S", 3.0)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as lc, distributed.Client(lc) as c:
        # Once the run is well under way (600 of its requests served, 1.5 s
        # at its 400 a second), so the victim has reported.
        victim = kill_a_worker_later(c, srv, 600)
        t0 = time.monotonic()
        # 2 workers x 2 connections x 100/s: 2,000 each take 10 s.
        r = httpbench.run(srv.url("/delay?ms=10"), requests=4000, concurrency=4, cluster=c,
                          progress=False)
        took = time.monotonic() - t0
    alive, dead = r.workers
    assert not alive.lost and alive.result.complete == 2000
    assert dead.lost and dead.address == victim and dead.error
    assert 0 < dead.result.complete < 2000 and dead.not_run > 0
    assert dead.result.issued + dead.not_run == 2000
    exact(r)
    assert r.not_run == dead.not_run and r.issued + r.not_run == 4000
    assert "lost" in r.report() and took < 25
    # When it was lost, marked on the report's timeline.
    assert dead.lost_at is not None and 1.0 < dead.lost_at < took and alive.lost_at is None
    assert f"lost {dead.address}" in r.to_html()


def test_the_command_line_and_ctrl_c(cluster, srv, tmp_path):
    argv = [sys.executable, "-m", "httpbench", "-q", "-n", "3001", "-c", "3", "--dask",
            cluster.scheduler_address, "--workers", "2", "--json", "r.json",
            srv.url("/rnd?c=10")]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "Workers (times in ms)" in p.stdout and "Complete requests:      3001" in p.stdout
    import json
    d = json.loads((tmp_path / "r.json").read_text())
    assert [w["requests"] for w in d["workers"]] == [1501, 1500]
    # Ctrl-C on the caller stops every worker's loop; the partial result is merged.
    proc = subprocess.Popen([sys.executable, "-m", "httpbench", "-q", "-d", "30", "-c", "2",
                             "--dask", cluster.scheduler_address, srv.url("/rnd?c=10")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    # Once the run has begun (the workers' requests reach the server): a
    # Ctrl-C before it would stop the command, not the run.
    served, deadline = srv.stats()["requests"], time.monotonic() + 60
    while srv.stats()["requests"] < served + 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert "Interrupted:" in out and "Workers (times in ms)" in out


def test_fewer_requests_than_workers_give_the_rest_nothing_to_do(client, srv):
    """requests=1 over two workers raised "requests must be from 1 to ...,
    not 0": a worker without a share gets no task, not a run of 0; the same
    for a shape whose share would hold under one request."""
    r = httpbench.run(srv.url("/rnd?c=10"), requests=1, concurrency=2, cluster=client,
                      progress=False)
    assert (r.issued, r.complete) == (1, 1) and len(r.workers) == 1 and r.ok
    # 0 -> 2/s over 1 s: one request in all.
    r = httpbench.run(srv.url("/rnd?c=10"), stages=[(1.0, 2.0)], concurrency=2, cluster=client,
                      progress=False)
    assert r.complete == 1 and len(r.workers) == 1 and r.ok, r.first_error


def test_a_run_where_every_worker_failed_to_begin_is_not_ok(client, tmp_path, cluster):
    """The name did not resolve on any worker: Result.ok was True with
    issued 0, and the command line exited 0 (1 without --dask)."""
    r = httpbench.run("http://nowhere.invalid/", requests=10, concurrency=2, cluster=client,
                      progress=False)
    assert r.issued == 0 and all(w.lost for w in r.workers) and not r.ok
    p = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "10", "-c", "2",
                        "--dask", cluster.scheduler_address, "http://nowhere.invalid/"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 1, (p.stdout, p.stderr)
    direct = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "10",
                             "http://nowhere.invalid/"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)
    assert direct.returncode == 1


def test_a_lost_worker_counts_in_the_whole_and_by_name_alike(srv, monkeypatch):
    """After a lost worker by_name summed to 1,000 of the whole's 1,099: the
    totals took the lost worker's last report, the names only the parts that
    returned. Both merge every part now, a lost one under its own name."""
    import httpbench.distributed as hd

    monkeypatch.setattr(hd, "SILENCE_S", 3.0)
    s = Scenario([Request("GET", "/delay?ms=10", name="a"),
                  Request("GET", "/delay?ms=10", name="b")])
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as lc, distributed.Client(lc) as c:
        kill_a_worker_later(c, srv, 600)
        r = httpbench.run(srv.url("/"), scenario=s, requests=4000, concurrency=4, cluster=c,
                          progress=False)
    assert any(w.lost for w in r.workers)
    assert hd.LOST_NAME in r.by_name
    for field in ("issued", "complete", "failed", "cancelled"):
        assert getattr(r, field) == sum(getattr(x, field) for x in r.by_name.values()), field
    exact(r)


@contextlib.contextmanager
def scheduler_and_workers(tmp_path) -> Iterator[tuple[subprocess.Popen, distributed.Client]]:
    """A scheduler and two workers, each a process of its own (so the
    scheduler can be killed alone), and a Client of it; all killed after."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"], cwd=tmp_path,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                 "--nthreads", "1", "--no-nanny", "--dashboard-address", ":0"],
                                cwd=tmp_path, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        # The client's timeout is also how long it tries to reach a lost
        # scheduler again before its calls fail: the tests' wait for the
        # loss (30 s at distributed's default, 10 here). So it connects
        # once the scheduler listens, which on a loaded machine may take
        # longer than that.
        wait_for_port(port, scheduler, timeout=60)
        with distributed.Client(address, timeout=10) as c:
            c.wait_for_workers(2, timeout=60)
            yield scheduler, c
    finally:
        for p in (scheduler, *workers):
            p.kill()
            p.wait(timeout=30)


def test_the_scheduler_lost_mid_run_returns_what_was_reported(srv, tmp_path):
    """The scheduler gone mid-run raised distributed's CommClosedError after
    about 11 s and every worker's figures were lost. What the workers
    reported is returned, the loss named; with nothing reported, a
    ClusterError."""
    import io

    with scheduler_and_workers(tmp_path) as (scheduler, c):

        class KillOnFirstProgress(io.StringIO):
            """The progress lines ("Completed 600 requests") are written
            from the workers' reports as the caller has received them: the
            scheduler dies once it has some, not after a guessed sleep."""

            def write(self, text: str) -> int:
                if "Completed" in text and scheduler.poll() is None:
                    scheduler.kill()
                return super().write(text)

        t0 = time.monotonic()
        r = httpbench.run(srv.url("/delay?ms=10"), requests=6000, concurrency=4, cluster=c,
                          progress="auto", stream=KillOnFirstProgress())
        took = time.monotonic() - t0
    assert all(w.lost for w in r.workers) and not r.ok
    assert all("scheduler was lost" in w.error for w in r.workers), [w.error for w in r.workers]
    exact(r)
    assert r.issued > 0
    assert "lost" in r.first_error and took < 60


def test_the_scheduler_lost_before_any_report_is_a_cluster_error(srv, tmp_path, monkeypatch):
    import httpbench.distributed as hd

    with scheduler_and_workers(tmp_path) as (scheduler, c):
        real_run = hd._run

        def dying(*args, **kwargs):
            scheduler.kill()
            scheduler.wait(timeout=30)
            return real_run(*args, **kwargs)

        monkeypatch.setattr(hd, "_run", dying)
        with pytest.raises(httpbench.ClusterError, match="scheduler was lost"):
            httpbench.run(srv.url("/rnd?c=10"), requests=100, concurrency=2, cluster=c,
                          progress=False)
def test_a_client_that_gave_up_on_its_scheduler_is_a_cluster_error(monkeypatch):
    """A Client that lost its scheduler and gave up reconnecting (after its
    30 s: the sanitizer pass, starved of CPU, showed it) answers
    scheduler_info() with an empty dict, not an error: that too is the
    scheduler lost, a ClusterError, never a KeyError."""
    distributed = pytest.importorskip("distributed")
    import httpbench.distributed as hd

    class GaveUp(distributed.Client):  # (only isinstance is asked of it)
        def __init__(self) -> None:
            pass

        def scheduler_info(self, n_workers: int = -1) -> dict[str, object]:
            return {}

    with pytest.raises(httpbench.ClusterError, match="scheduler was lost"):
        hd.run_on_cluster("http://127.0.0.1:1/", GaveUp(), None, {"concurrency": 1})


