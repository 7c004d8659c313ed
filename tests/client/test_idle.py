"""Idle costs nothing: connections the server closed, or left after the
tickets ran out, and idle connections of the threads-mode server wake no
one and spin no CPU."""

from __future__ import annotations

from pathlib import Path
import os
import re
import socket
import time

import pytest

import httpbench
from helpers import OK, exact


def _tasks() -> set[str]:
    return set(os.listdir("/proc/self/task"))


def _switches(tids: set[str]) -> int:
    total = 0
    for tid in tids:
        try:
            text = Path(f"/proc/self/task/{tid}/status").read_text()
        except FileNotFoundError:
            continue
        total += int(re.search(r"voluntary_ctxt_switches:\s+(\d+)", text).group(1))
    return total


@pytest.mark.timing
def test_idle_connections_the_server_closes_under_a_rate_cost_no_cpu():
    """Item 8: a kept-alive connection waiting for its next start, closed by
    the server, stayed readable in the epoll set and the loop spun on it:
    4.3 s of CPU in a 3 s run at 20 req/s."""
    with httpbench.Server(idle_timeout=0.1) as srv:
        r = httpbench.run(srv.url("/rnd?c=10"), rate=20, duration=2.0, concurrency=10,
                          progress=False)
    exact(r)
    assert r.failed == 0 and r.complete >= 35
    assert r.reconnects > 0  # each closed connection was opened again
    assert r.cpu_time < 0.4, r.cpu_time


@pytest.mark.timing
def test_idle_connections_closed_after_the_tickets_run_out_cost_no_cpu(scripted):
    """Item 8, the other way there: the last tickets taken, one connection
    idles (and its server closes it) while another waits for an answer."""
    quick = [("recv",), ("send", OK), ("sleep", 0.05), ("close",)]
    slow = [("recv",), ("sleep", 1.5), ("send", OK)]
    srv = scripted(quick, slow)
    r = httpbench.run(f"http://127.0.0.1:{srv.port}/", requests=2, concurrency=2, threads=1,
                      progress=False)
    exact(r)
    assert r.complete == 2 and r.time_taken > 1.4
    assert r.cpu_time < 0.3, r.cpu_time


def test_idle_connections_in_threads_mode_do_not_wake_their_threads():
    """Item 16: each connection's thread woke every 100 ms to look at its
    deadline and the stop flag (3,000 idle connections: 1.1 s of CPU per 5
    s). Now each waits for its own deadline. Counted in wake-ups of the
    server's threads, which do not depend on the machine's speed."""
    before = _tasks()
    with httpbench.Server(mode="threads") as srv:
        socks = [socket.create_connection(("127.0.0.1", srv.port)) for _ in range(50)]
        deadline = time.monotonic() + 5
        while len(_tasks() - before) < 51 and time.monotonic() < deadline:
            time.sleep(0.01)
        server_threads = _tasks() - before
        assert len(server_threads) == 51  # the acceptor and a thread per connection
        time.sleep(0.2)
        start = _switches(server_threads)
        time.sleep(1.0)
        woke = _switches(server_threads) - start
        for s in socks:
            s.close()
    assert woke < 10, woke  # was about 500 (50 threads, ten times a second)
