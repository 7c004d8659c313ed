"""Live metrics for Prometheus (run(metrics=)): the exposition read while a
run lasts and after, parsed by prometheus_client's OpenMetrics parser, and
scraped by a real Prometheus (Debian's package) whose HTTP API then
answers with the run's own figures."""

from __future__ import annotations

import contextlib
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


OPENMETRICS_ACCEPT = ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                      "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")


def scrape(port: int, accept: str | None = OPENMETRICS_ACCEPT) -> tuple[str, str]:
    """The exposition as Prometheus 2.42 asks for it (its Accept header),
    or with another Accept (None: none, as curl and promtool send)."""
    headers = {"Accept": accept} if accept is not None else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.headers["Content-Type"], resp.read().decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample by (name, sorted labels), through the OpenMetrics parser
    (which refuses anything off the format, # EOF included)."""
    out = {}
    for fam in parser.text_string_to_metric_families(text):
        for s in fam.samples:
            out[s.name, tuple(sorted(s.labels.items()))] = s.value
    return out


@contextlib.contextmanager
def scraping(port: int, every: float) -> Iterator[list[str]]:
    """Scrapes port every `every` seconds from a thread while the block
    runs; yields the texts got (a refused connection is skipped)."""
    texts: list[str] = []
    done = threading.Event()

    def keep_scraping() -> None:
        while not done.is_set():
            try:
                texts.append(scrape(port)[1])
            except OSError:
                pass
            time.sleep(every)
    t = threading.Thread(target=keep_scraping)
    t.start()
    try:
        yield texts
    finally:
        done.set()
        t.join()


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
    # The client's own figures, once the run has ended (Result.client).
    assert final["httpbench_client_busy", (("run", "live"),)] == r.client.busy
    assert final["httpbench_client_unsent_total", (("run", "live"),)] == r.client.unsent
    assert final["httpbench_client_bound", (("reason", r.client.reason or "none"),
                                            ("run", "live"))] == int(r.client.bound)
    assert "httpbench_client" not in got["text"]  # (not while the run lasts)
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
                         ({"metrics": "127.0.0.1:70000"}, "port must be 1 to 65535, not 70000"),
                         ({"metrics": "127.0.0.1:0"}, "port must be 1 to 65535, not 0: a scraper"),
                         ({"metrics": 9464}, "metrics must be 'HOST:PORT'"),
                         ({"metrics_run": "x"}, "pass metrics="),
                         ({"metrics": "127.0.0.1:9464", "metrics_run": ""}, "metrics_run must be"),
                         ({"metrics": "127.0.0.1:9464", "metrics_linger": math.nan},
                          "metrics_linger must be"),
                         ({"metrics": "127.0.0.1:9464", "metrics_linger": -1},
                          "metrics_linger must be"),
                         ({"metrics": "127.0.0.1:9464", "metrics_linger": 1e9},
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
        assert cli.returncode == 1, cli.stderr
        # (its words, without str(OSError)'s "[Errno 98] " before them)
        assert cli.stderr == (f"httpbench: metrics: cannot listen on 127.0.0.1:{taken}: "
                              "Address already in use\n")
        assert srv.stats()["requests"] == before  # nothing was sent
    cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "5", "--metrics",
                          "x", url], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert cli.returncode == 2 and "--metrics must be 'HOST:PORT'" in cli.stderr
    cli = subprocess.run([sys.executable, "-m", "httpbench", "capacity", "--metrics",
                          "127.0.0.1:0", url], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert cli.returncode == 2 and "--metrics's port must be 1 to 65535, not 0" in cli.stderr
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
    text = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    for name in ("httpbench_requests_total", "httpbench_responses_total", "httpbench_in_flight",
                 "httpbench_bytes_received_total", "httpbench_target_rate",
                 "httpbench_latency_seconds", "httpbench_latency_uncorrected_seconds"):
        assert name in text, name


def test_over_dask_each_worker_has_its_series(srv):
    distributed = pytest.importorskip("distributed")
    port = free_port()
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as lc, distributed.Client(lc) as c, \
            scraping(port, 0.3) as texts:
        r = httpbench.run(srv.url("/rnd?c=100"), requests=6000, rate=2000, concurrency=4,
                          cluster=c, progress=False, metrics=f"127.0.0.1:{port}",
                          metrics_run="dask", metrics_linger=1.5)
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


# ---- what the adversarial pass found (issue 33)

def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_slowloris_connections_are_cut_and_do_not_outlive_the_run(srv):
    """15 connections that send "GET /metr" and nothing more: scrapes are
    answered at once meanwhile; each of them is cut within the head's
    deadline; a kept-alive scraper's connection is closed with the
    endpoint; after run() returns no thread or descriptor of the
    endpoint's is left."""
    from httpbench.scrape import HEAD_SECONDS
    port = free_port()
    threads, fds = threading.active_count(), _open_fds()
    out: dict[str, Any] = {}

    def attack() -> None:
        deadline = time.monotonic() + 10
        slow: list[socket.socket] = []
        while len(slow) < 15 and time.monotonic() < deadline:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                time.sleep(0.05)
                continue
            s.sendall(b"GET /metr")
            slow.append(s)
        t0 = time.monotonic()
        _, text = scrape(port)  # answered beside them
        out["scrape_s"] = time.monotonic() - t0
        out["text"] = text
        keep = socket.create_connection(("127.0.0.1", port), timeout=5)  # a kept-alive one
        keep.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        out["keep_first"] = keep.recv(65536)[:17]
        cut = 0
        for s in slow:
            s.settimeout(HEAD_SECONDS + 3)
            try:
                cut += s.recv(1) == b""
            except (ConnectionResetError, TimeoutError):
                cut += 1
            s.close()
        out["cut"], out["cut_s"] = cut, time.monotonic() - t0
        keep.settimeout(15)
        try:
            out["keep_end"] = keep.recv(65536)  # b"" once the endpoint closes
        except OSError as e:
            out["keep_end"] = e
        keep.close()
    t = threading.Thread(target=attack)
    t.start()
    httpbench.run(srv.url("/rnd?c=10"), duration=2.0, progress=False,
                  metrics=f"127.0.0.1:{port}", metrics_linger=HEAD_SECONDS + 3)
    t.join()
    assert out["scrape_s"] < 1.0, out
    assert out["text"].endswith("# EOF\n") and out["keep_first"] == b"HTTP/1.1 200 OK\r\n"
    assert out["cut"] == 15 and out["cut_s"] < HEAD_SECONDS + 2, out
    assert out["keep_end"] == b"", out
    assert threading.active_count() == threads and _open_fds() == fds


def test_more_connections_than_the_bound_still_get_their_scrape(srv):
    """Twice MAX_CONNECTIONS silent connections: each new one takes the
    place of the longest silent, so a scraper arriving after them is
    answered, and at no time are more than MAX_CONNECTIONS held."""
    from httpbench.scrape import MAX_CONNECTIONS
    port = free_port()
    out: dict[str, Any] = {}

    def crowd() -> None:
        deadline = time.monotonic() + 10
        held: list[socket.socket] = []
        while len(held) < 2 * MAX_CONNECTIONS and time.monotonic() < deadline:
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                time.sleep(0.05)
        time.sleep(0.3)
        out["type"], out["text"] = scrape(port)
        alive = 0
        for s in held:
            s.setblocking(False)
            try:
                alive += s.recv(1) != b""
            except BlockingIOError:
                alive += 1  # still open, nothing to read
            except OSError:
                pass
            s.close()
        out["alive"] = alive
    t = threading.Thread(target=crowd)
    t.start()
    httpbench.run(srv.url("/rnd?c=10"), duration=1.5, progress=False,
                  metrics=f"127.0.0.1:{port}", metrics_linger=1.0)
    t.join()
    assert out["text"].endswith("# EOF\n")
    assert out["alive"] <= MAX_CONNECTIONS - 1, out["alive"]


def _consistent(text: str, parse: Any) -> tuple[float, float]:
    """One scrape's figures agree with each other: complete requests, the
    latency histograms' counts and the statuses. Returns (complete,
    in flight)."""
    got = {}
    for fam in parse(text):
        for s in fam.samples:
            got[s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "run"))] = \
                s.value
    complete = got["httpbench_requests_total", (("outcome", "complete"),)]
    assert got["httpbench_latency_seconds_count", ()] == complete, got
    assert got["httpbench_latency_uncorrected_seconds_count", ()] == complete, got
    assert sum(v for k, v in got.items() if k[0] == "httpbench_responses_total") == complete
    return complete, got["httpbench_in_flight", ()]


def test_one_scrape_is_one_instant(srv):
    """Under a rate (so the uncorrected histogram is served too), on two
    loop threads, every scrape's counts agree with each other: the
    corrected and uncorrected latency counts, the complete requests and
    the statuses; in flight is of the same figures (never negative, and 0
    at the end)."""
    port = free_port()
    with scraping(port, 0.05) as texts:
        r = httpbench.run(srv.url("/rnd?c=100"), requests=9000, rate=3000, concurrency=8,
                          threads=2, progress=False, metrics=f"127.0.0.1:{port}",
                          metrics_linger=0.5)
    # (A scrape before the run's first figures has no samples yet.)
    seen = [_consistent(x, parser.text_string_to_metric_families) for x in texts
            if "httpbench_requests_total" in x]
    assert len({c for c, _ in seen if 0 < c < 9000}) >= 2, seen  # some mid-run
    assert all(flying >= 0 for _, flying in seen)
    assert seen[-1] == (r.complete, 0.0)


PROMTOOL = shutil.which("promtool")


def test_the_format_is_negotiated_and_each_passes_its_own_tools(srv, tmp_path):
    """OpenMetrics to a scraper that asks for it (Prometheus's Accept),
    the classic text format 0.0.4 otherwise (curl's */*, no Accept):
    each read by prometheus_client's parser for it, to the same samples,
    and the classic one through promtool's linter (Prometheus 2.42's
    `promtool check metrics`, which reads only that format)."""
    from prometheus_client.parser import text_string_to_metric_families as classic_parser

    from httpbench.metrics import CLASSIC_CONTENT_TYPE
    port = free_port()
    got: dict[str, Any] = {}

    def in_linger() -> None:
        time.sleep(2.0)
        got["om"] = scrape(port)
        got["none"] = scrape(port, accept=None)
        got["any"] = scrape(port, accept="*/*")
        got["text"] = scrape(port, accept="text/plain;version=0.0.4")
    t = threading.Thread(target=in_linger)
    t.start()
    scen = Scenario([Request("GET", "/rnd?c=10", name="small"),
                     Request("GET", "/status/404", name="missing \"x\"")], order="sequence")
    r = httpbench.run(srv.url("/"), scenario=scen, requests=400, rate=400, concurrency=2,
                      progress=False, metrics=f"127.0.0.1:{port}", metrics_linger=3.0)
    t.join()
    assert got["om"][0] == CONTENT_TYPE
    for key in ("none", "any", "text"):
        assert got[key][0] == CLASSIC_CONTENT_TYPE, key
        assert "# EOF" not in got[key][1] and "# UNIT" not in got[key][1]
    assert got["none"][1] == got["any"][1] == got["text"][1]

    def by_sample(families: Any) -> dict[Any, float]:
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for fam in families for s in fam.samples}
    om = by_sample(parser.text_string_to_metric_families(got["om"][1]))
    classic = by_sample(classic_parser(got["none"][1]))
    assert om == classic and len(om) > 50
    assert sum(v for k, v in classic.items() if k[0] == "httpbench_requests_total"
               and dict(k[1])["outcome"] == "complete") == r.complete
    if PROMTOOL is None:
        pytest.skip("promtool: apt-get install prometheus")
    for text in (got["none"][1],):
        lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True,
                              text=True, timeout=30)
        assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(), \
            lint.stdout + lint.stderr
    # And the OpenMetrics one is what promtool cannot read as it is.
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=got["om"][1],
                          capture_output=True, text=True, timeout=30)
    assert lint.returncode != 0
