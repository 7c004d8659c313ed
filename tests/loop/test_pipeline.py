"""HTTP/1.1 pipelining in the loop: exact counts, per-request latency,
servers that close mid-pipeline (scripted, and nginx's keepalive_requests),
TLS, the arguments and the command line."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from helpers import exact, nginx

import httpbench

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
OK_CLOSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


@pytest.mark.parametrize("depth", [2, 7, 16])
def test_counts_stay_exact_whatever_the_depth(server, depth):
    before = server.stats()["requests"]
    r = httpbench.run(server.url("/rnd?c=100"), requests=10_001, concurrency=3, pipeline=depth,
                      progress=False)
    assert (r.issued, r.complete, r.failed, r.cancelled) == (10_001, 10_001, 0, 0), r.first_error
    assert r.body_bytes == 10_001 * 100 and r.connects == 3 and r.reconnects == 0
    assert r.latency.count == 10_001 and r.pipeline == depth
    assert server.stats()["requests"] - before == 10_001
    assert f"Pipeline Depth:         {depth}" in r.report()


def test_bodies_both_ways_in_a_pipeline(server):
    # Requests and responses larger than the socket buffers: the loop reads
    # answers while it still writes the pipeline.
    body = b"e" * 300_000
    r = httpbench.run(server.url("/echo"), "POST", body, requests=41, concurrency=2,
                      pipeline=8, progress=False, timeout=20)
    assert (r.complete, r.failed) == (41, 0), r.first_error
    assert r.body_bytes == 41 * len(body)
    r = httpbench.run(server.url("/chunked?c=200000"), requests=33, pipeline=16,
                      progress=False)
    assert (r.complete, r.failed, r.body_bytes) == (33, 0, 33 * 200_000), r.first_error


def test_each_request_is_timed_from_its_own_write(server):
    # The server answers a pipeline in order, each /delay after the one
    # before: four written together end 50, 100, 150 and 200 ms later.
    r = httpbench.run(server.url("/delay?ms=50"), requests=4, pipeline=4, progress=False)
    assert r.complete == 4
    assert 0.045 <= r.latency.min < 0.09
    assert 0.19 <= r.latency.max < 0.30
    assert math.isclose(r.latency.mean, 0.125, rel_tol=0.2)


def test_a_server_closing_mid_pipeline_gets_the_rest_again(scripted):
    # Four GETs written at once; the server answers two, the second saying
    # it closes, then closes: the other two go again on a new socket.
    srv = scripted([("recv_pipeline", 4), ("send", OK + OK_CLOSE),
                    ("close",)],
                   [("recv_pipeline", 2), ("send", OK + OK)])
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=4, pipeline=4,
                      progress=False, timeout=5)
    assert (r.issued, r.complete, r.failed) == (4, 4, 0), r.first_error
    assert r.connects == 2 and r.reconnects == 1 and srv.connections == 2


def test_a_server_closing_without_a_word_mid_pipeline(scripted):
    srv = scripted([("recv_pipeline", 3), ("send", OK), ("close",)],
                   [("recv_pipeline", 2), ("send", OK + OK)])
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=3, pipeline=3,
                      progress=False, timeout=5)
    assert (r.complete, r.failed, r.reconnects) == (3, 0, 1), r.first_error


def test_a_pipeline_cut_short_twice_fails_what_is_left(scripted):
    srv = scripted([("recv_pipeline", 3), ("send", OK), ("close",)],
                   [("recv_pipeline", 2), ("send", OK), ("close",)])
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=3, pipeline=3,
                      progress=False, timeout=5)
    assert (r.issued, r.complete, r.failed) == (3, 2, 1)
    assert r.failures["receive"] == 1


def test_posts_left_unanswered_are_failed_not_sent_again(scripted):
    srv = scripted([("recv_pipeline", 3), ("send", OK_CLOSE), ("close",)])
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", "POST", b"x", requests=3, pipeline=3,
                      progress=False, timeout=5)
    assert (r.issued, r.complete, r.failed) == (3, 1, 2)
    assert r.failures["receive"] == 2 and srv.connections == 1
    assert "pipelined requests unanswered" in r.first_error


def test_a_timeout_mid_pipeline_counts_every_request_left(scripted):
    srv = scripted([("recv_pipeline", 3), ("send", OK), ("sleep", 5)])
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=3, pipeline=3,
                      progress=False, timeout=0.5)
    assert (r.issued, r.complete, r.failed) == (3, 1, 2)
    assert r.failures["timeout"] == 2


def test_a_duration_cancels_what_is_in_flight(server):
    r = httpbench.run(server.url("/delay?ms=400"), duration=1.0, pipeline=8, concurrency=2,
                      progress=False)
    exact(r)
    assert r.failed == 0 and r.cancelled > 0


def test_nginx_closing_after_keepalive_requests(tmp_path):
    # nginx answers 10 requests on a connection, the tenth with
    # "Connection: close": a 16-deep pipeline loses 6 each time, sent again.
    with nginx(keepalive_requests=10) as peer:
        if peer is None:
            pytest.skip("nginx is not installed")
        port, _ = peer
        r = httpbench.run(f"http://127.0.0.1:{port}/rnd", requests=2000, concurrency=4,
                          pipeline=16, progress=False)
        assert (r.issued, r.complete, r.failed) == (2000, 2000, 0), r.first_error
        assert r.status_counts == {200: 2000} and r.body_bytes == 2000 * 2048
        assert r.reconnects > 0 and r.counts["retries"] > 0
        r = httpbench.run(f"http://127.0.0.1:{port}/rnd", requests=1000, concurrency=2,
                          pipeline=4, progress=False)
        assert (r.complete, r.failed) == (1000, 0)


def test_pipelining_over_tls():
    with httpbench.Server(tls=True) as srv:
        r = httpbench.run(srv.url("/rnd?c=3000"), requests=5003, concurrency=2, pipeline=16,
                          cafile=srv.cafile, progress=False)
        assert (r.complete, r.failed) == (5003, 0), r.first_error
        assert r.body_bytes == 5003 * 3000 and r.tls_full_handshakes == 2


@pytest.mark.parametrize("bad", [0, -1, 1025, 2.5, float("nan"), "4", True])
def test_pipeline_is_range_checked(server, bad):
    with pytest.raises(ValueError, match="pipeline"):
        httpbench.run(server.url("/"), requests=1, pipeline=bad, progress=False)


def test_pipeline_with_rate_is_refused(server):
    with pytest.raises(ValueError, match="pipeline with rate is not supported"):
        httpbench.run(server.url("/"), requests=10, pipeline=4, rate=100, progress=False)
    with pytest.raises(ValueError, match="pipeline with rate"):
        httpbench._core._Bench(dict(host="127.0.0.1", port=server.port,
                                    request=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", requests=1,
                                    duration=0.0, concurrency=1, threads=1, rate=10.0,
                                    timeout=5.0, pipeline=4))


def test_command_line_pipeline(server):
    out = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "1001", "-c", "2",
                          "--pipeline", "10", server.url("/rnd?c=10")], capture_output=True,
                         text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    assert "Complete requests:      1001" in out.stdout and "Pipeline Depth:         10" \
        in out.stdout
    out = subprocess.run([sys.executable, "-m", "httpbench", "-n", "10", "--pipeline", "0",
                          server.url("/")], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 2 and "pipeline" in out.stderr
