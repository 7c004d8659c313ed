"""Live metrics for Prometheus (run(metrics=)): the exposition read while a
run lasts and after, parsed by prometheus_client's OpenMetrics parser, and
scraped by a real Prometheus (Debian's package) whose HTTP API then
answers with the run's own figures."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import httpbench
from httpbench import Request, Scenario
from httpbench.metrics import CONTENT_TYPE, EDGES

parser = pytest.importorskip("prometheus_client.openmetrics.parser")


@pytest.fixture(scope="module")
def srv() -> Iterator[httpbench.Server]:
    with httpbench.Server(threads=2) as s:
        yield s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape(port: int) -> tuple[str, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return resp.headers["Content-Type"], resp.read().decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample by (name, sorted labels), through the OpenMetrics parser
    (which refuses anything off the format, # EOF included)."""
    out = {}
    for fam in parser.text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


def during(port: int, at: float, into: dict[str, Any]) -> threading.Thread:
    """Scrapes port `at` seconds from now, into into["text"]."""
    def go() -> None:
        time.sleep(at)
        into["type"], into["text"] = scrape(port)
    t = threading.Thread(target=go)
    t.start()
    return t


def test_the_exposition_while_a_run_lasts_and_after(srv):
    port = free_port()
    got: dict[str, Any] = {}
    t = during(port, 1.6, got)
    after: dict[str, Any] = {}
    t2 = during(port, 4.0, after)  # in the linger, after the 3 s run
    r = httpbench.run(srv.url("/rnd?c=100"), requests=3000, rate=1000, concurrency=4,
                      progress=False, metrics=f"127.0.0.1:{port}", metrics_run="live",
                      metrics_linger=2.5)
    t.join()
    t2.join()
    assert got["type"] == CONTENT_TYPE and got["text"].endswith("# EOF\n")
    mid = samples(got["text"])
    run = (("outcome", "complete"), ("run", "live"))
    # At 1.6 s each thread has published its first second: about 1,000.
    assert 800 <= mid["httpbench_requests_total", run] <= 1700
    assert mid["httpbench_target_rate", (("run", "live"),)] == 1000.0
    final = samples(after["text"])
    assert final["httpbench_requests_total", run] == r.complete == 3000
    assert final["httpbench_responses_total", (("run", "live"), ("status", "200"))] == 3000
    assert final["httpbench_bytes_received_total", (("run", "live"),)] == r.bytes_received
    assert final["httpbench_in_flight", (("run", "live"),)] == 0
    for name, lat in (("httpbench_latency_seconds", r.latency),
                      ("httpbench_latency_uncorrected_seconds", r.latency_uncorrected)):
        assert final[f"{name}_count", (("run", "live"),)] == 3000
        assert final[f"{name}_sum", (("run", "live"),)] == pytest.approx(lat.mean * 3000)
        counts = [final[f"{name}_bucket", (("le", str(e) if e != math.inf else "+Inf"),
                                           ("run", "live"))] for e in (*EDGES, math.inf)]
        assert counts == sorted(counts) and counts[-1] == 3000
        # The bucket holding p99 is the first whose count reaches 99%.
        k = next(i for i, n in enumerate(counts) if n >= 0.99 * 3000)
        lo = EDGES[k - 1] if k else 0.0
        assert lo * 0.99 <= lat.p99 <= (EDGES[k] if k < len(EDGES) else math.inf) * 1.01
    # The endpoint is gone once run() has returned.
    with pytest.raises(OSError):
        scrape(port)


def test_a_scenario_has_a_series_per_request_name(srv):
    port = free_port()
    scen = Scenario([Request("GET", "/rnd?c=10", name="small"),
                     Request("GET", "/status/404", name="missing")], order="sequence")
    after: dict[str, Any] = {}
    t = during(port, 1.8, after)  # in the linger
    r = httpbench.run(srv.url("/"), scenario=scen, duration=1.0, concurrency=2,
                      progress=False, metrics=f"127.0.0.1:{port}", metrics_linger=2.0)
    t.join()
    # The default run label is a short id.
    final = samples(after["text"])
    runs = {dict(k[1]).get("run") for k in final}
    assert len(runs) == 1 and len(runs.pop()) == 8
    by = {dict(k[1])["name"]: v for k, v in final.items()
          if k[0] == "httpbench_requests_total" and dict(k[1])["outcome"] == "complete"}
    assert by == {"small": r.by_name["small"].complete, "missing": r.by_name["missing"].complete}
    statuses = {(dict(k[1])["name"], dict(k[1])["status"]): v for k, v in final.items()
                if k[0] == "httpbench_responses_total"}
    assert statuses == {("small", "200"): r.by_name["small"].complete,
                        ("missing", "404"): r.by_name["missing"].complete}
    # A closed loop: no target and no uncorrected latency.
    assert not any(k[0].startswith(("httpbench_target_rate", "httpbench_latency_uncorrected"))
                   for k in final)


def test_a_shape_s_target_rate_follows_its_ramp(srv):
    port = free_port()
    got: dict[str, Any] = {}
    t = during(port, 1.5, got)
    httpbench.run(srv.url("/rnd?c=10"), stages=[(2, 400), (1, 400)], concurrency=4,
                  progress=False, metrics=f"127.0.0.1:{port}")
    t.join()
    rate = [v for k, v in samples(got["text"]).items() if k[0] == "httpbench_target_rate"]
    # 1.5 s into a 2 s ramp to 400: about 300 (the scrape's own instant).
    assert len(rate) == 1 and 250 <= rate[0] <= 350


def test_only_metrics_is_served_and_bad_settings_are_refused(srv, tmp_path):
    port = free_port()
    out: dict[str, Any] = {}

    def other() -> None:
        # Until the endpoint is up (the run binds it as it starts), then once.
        deadline = time.monotonic() + 10
        while "status" not in out and time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
            except urllib.error.HTTPError as e:
                out["status"] = e.code
            except OSError:
                time.sleep(0.05)
    t = threading.Thread(target=other)
    t.start()
    httpbench.run(srv.url("/rnd?c=10"), duration=1.0, progress=False,
                  metrics=f"127.0.0.1:{port}", metrics_linger=1.0)
    t.join()
    assert out["status"] == 404
    url = srv.url("/")
    for kwargs, said in (({"metrics": "nonsense"}, "metrics must be 'HOST:PORT'"),
                         ({"metrics": "127.0.0.1:70000"}, "port must be 0 to 65535"),
                         ({"metrics": 9464}, "metrics must be 'HOST:PORT'"),
                         ({"metrics_run": "x"}, "pass metrics="),
                         ({"metrics": "127.0.0.1:0", "metrics_run": ""}, "metrics_run must be"),
                         ({"metrics": "127.0.0.1:0", "metrics_linger": math.nan},
                          "metrics_linger must be"),
                         ({"metrics": "127.0.0.1:0", "metrics_linger": -1},
                          "metrics_linger must be"),
                         ({"metrics": "127.0.0.1:0", "metrics_linger": 1e9},
                          "metrics_linger must be")):
        with pytest.raises(ValueError, match=said):
            httpbench.run(url, requests=1, progress=False, **kwargs)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        with pytest.raises(OSError, match=f"metrics: cannot listen on 127.0.0.1:{taken}"):
            httpbench.run(url, requests=1, progress=False, metrics=f"127.0.0.1:{taken}")
        before = srv.stats()["requests"]
        cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "5", "--metrics",
                              f"127.0.0.1:{taken}", url], capture_output=True, text=True,
                             timeout=60, cwd=tmp_path)
        assert cli.returncode == 1 and "cannot listen" in cli.stderr
        assert srv.stats()["requests"] == before  # nothing was sent
    cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "5", "--metrics",
                          "x", url], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert cli.returncode == 2 and "--metrics must be 'HOST:PORT'" in cli.stderr
    cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "5",
                          "--metrics-linger", "3s", url], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert cli.returncode == 2 and "go with --metrics" in cli.stderr


PROMETHEUS = shutil.which("prometheus")


@pytest.mark.skipif(PROMETHEUS is None, reason="prometheus is not installed "
                                               "(apt-get install prometheus)")
def test_a_real_prometheus_scrapes_the_run(srv, tmp_path):
    target, web = free_port(), free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
        "scrape_configs:\n  - job_name: httpbench\n"
        f"    static_configs:\n      - targets: ['127.0.0.1:{target}']\n")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # not the sanitizer's
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={tmp_path / 'prometheus.yml'}",
                             f"--storage.tsdb.path={tmp_path / 'data'}",
                             f"--web.listen-address=127.0.0.1:{web}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    api = f"http://127.0.0.1:{web}/api/v1"

    def ask(path: str) -> Any:
        with urllib.request.urlopen(api + path, timeout=5) as resp:
            return json.loads(resp.read())["data"]

    def query(q: str) -> list[Any]:
        return ask("/query?" + urllib.parse.urlencode({"query": q}))["result"]

    try:
        deadline = time.monotonic() + 30
        while True:  # Prometheus's API up
            try:
                ask("/targets")
                break
            except OSError:
                assert time.monotonic() < deadline, "prometheus did not start"
                time.sleep(0.2)
        result: dict[str, Any] = {}

        def the_run() -> None:
            result["r"] = httpbench.run(srv.url("/rnd?c=512"), requests=20_000, rate=2000,
                                        concurrency=8, progress=False,
                                        metrics=f"127.0.0.1:{target}", metrics_run="prom",
                                        metrics_linger=3.0)
        t = threading.Thread(target=the_run)
        t.start()
        # The target is up (scraped once) early in the run.
        deadline = time.monotonic() + 8
        while not any(x["health"] == "up" for x in ask("/targets")["activeTargets"]):
            assert time.monotonic() < deadline, ask("/targets")
            time.sleep(0.2)
        t.join()
        r = result["r"]
        total = query('httpbench_requests_total{run="prom",outcome="complete"}')
        assert len(total) == 1 and int(float(total[0]["value"][1])) == r.complete == 20_000
        q99 = query('histogram_quantile(0.99, httpbench_latency_seconds_bucket{run="prom"})')
        p99 = float(q99[0]["value"][1])
        k = next(i for i, e in enumerate(EDGES) if r.latency.p99 <= e)
        lo = EDGES[k - 1] if k else 0.0
        assert lo <= p99 <= EDGES[k], (p99, r.latency.p99)
        rate = query('httpbench_target_rate{run="prom"}')
        assert float(rate[0]["value"][1]) == 2000.0
    finally:
        prom.terminate()
        prom.wait(timeout=30)


def test_metrics_docs_name_every_family():
    text = (Path(__file__).parents[1] / "docs" / "metrics.md").read_text()
    for name in ("httpbench_requests_total", "httpbench_responses_total", "httpbench_in_flight",
                 "httpbench_bytes_received_total", "httpbench_target_rate",
                 "httpbench_latency_seconds", "httpbench_latency_uncorrected_seconds"):
        assert name in text, name


def test_over_dask_each_worker_has_its_series(srv):
    distributed = pytest.importorskip("distributed")
    port = free_port()
    texts: list[str] = []
    done = threading.Event()

    def keep_scraping() -> None:
        while not done.is_set():
            try:
                texts.append(scrape(port)[1])
            except OSError:
                pass
            time.sleep(0.3)
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as lc, distributed.Client(lc) as c:
        t = threading.Thread(target=keep_scraping)
        t.start()
        try:
            r = httpbench.run(srv.url("/rnd?c=100"), requests=6000, rate=2000, concurrency=4,
                              cluster=c, progress=False, metrics=f"127.0.0.1:{port}",
                              metrics_run="dask", metrics_linger=1.5)
        finally:
            done.set()
            t.join()
    addresses = {w.address for w in r.workers}

    def complete(text: str) -> dict[str, float]:
        return {dict(k[1])["worker"]: v for k, v in samples(text).items()
                if k[0] == "httpbench_requests_total" and dict(k[1])["outcome"] == "complete"}
    live = [complete(x) for x in texts]
    # While it ran: both workers' series, counting up.
    mid = [x for x in live if set(x) == addresses and 0 < sum(x.values()) < 6000]
    assert mid, live
    # In the linger: each worker's final count, their sum the run's.
    final = live[-1]
    assert final == {w.address: w.result.complete for w in r.workers}
    assert sum(final.values()) == r.complete == 6000
    last = samples(texts[-1])
    assert all(dict(k[1])["run"] == "dask" for k in last)
    assert last["httpbench_target_rate", (("run", "dask"),)] == 2000.0
    with pytest.raises(OSError):
        scrape(port)


def test_a_capacity_search_serves_every_stage_on_one_endpoint(srv):
    port = free_port()
    got: dict[str, Any] = {}
    c_holder: dict[str, Any] = {}

    def search() -> None:
        c_holder["c"] = httpbench.capacity(srv.url("/delay?ms=20"), slo="p99<40ms", start=300,
                                           stage_s=0.5, concurrency=10,
                                           metrics=f"127.0.0.1:{port}", metrics_run="cap",
                                           metrics_linger=2.0)
    t = threading.Thread(target=search)
    t.start()
    # In the linger: the search has ended once its result is set... poll.
    deadline = time.monotonic() + 60
    while "c" not in c_holder and time.monotonic() < deadline:
        try:
            got["text"] = scrape(port)[1]
        except OSError:
            pass
        time.sleep(0.2)
    t.join()
    c = c_holder["c"]
    final = samples(got["text"])
    by_stage = {dict(k[1])["stage"]: v for k, v in final.items()
                if k[0] == "httpbench_requests_total" and dict(k[1])["outcome"] == "complete"}
    assert set(by_stage) == {str(i + 1) for i in range(len(c.steps))}
    assert [by_stage[str(i + 1)] for i in range(len(c.steps))] == [s.requests - s.errors
                                                                   for s in c.steps]
    rates = {dict(k[1])["stage"]: v for k, v in final.items()
             if k[0] == "httpbench_target_rate"}
    assert [rates[str(i + 1)] for i in range(len(c.steps))] == [s.target for s in c.steps]
    with pytest.raises(ValueError, match="go with metrics"):
        httpbench.capacity(srv.url("/"), metrics_run="x")
