"""httpbench.spec: the rules a run's settings are given by, where they are
rules rather than checks (the default thread count)."""

from __future__ import annotations

import os
import socket

import pytest

import httpbench
from httpbench.spec import default_threads, is_this_machine


@pytest.mark.parametrize("concurrency, cpus, local, threads", [
    (1, 2, True, 1), (50, 2, True, 1), (1000, 2, True, 1),   # measured: one beats two
    (50, 2, False, 2), (1, 2, False, 1),                     # a server elsewhere: every CPU
    (50, 8, True, 4), (3, 8, True, 3), (50, 8, False, 8),    # more CPUs than the server needs
    (50, 1, True, 1), (50, 1, False, 1), (50, 64, False, 50),
])
def test_the_default_thread_count_is_half_the_cpus_beside_a_local_server(concurrency, cpus,
                                                                         local, threads):
    assert default_threads(concurrency, cpus, local) == threads


def test_what_counts_as_this_machine():
    for host in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost", "app.localhost"):
        assert is_this_machine(host), host
    for host in ("example.com", "192.0.2.1", "2001:db8::1", "8.8.8.8"):
        assert not is_this_machine(host), host
    # An address of one of this machine's own interfaces (not loopback).
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # (no packet is sent: it only picks a route)
            own = s.getsockname()[0]
    except OSError:
        own = None
    if own is not None and not own.startswith("127."):
        assert is_this_machine(own)


def test_a_run_takes_the_rule_and_a_given_count_wins(tmp_path):
    cpus = len(os.sched_getaffinity(0))
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/rnd?c=10"), requests=100, concurrency=50, progress=False)
        assert r.threads == max(1, min(cpus // 2, 50))
        r = httpbench.run(srv.url("/rnd?c=10"), requests=100, concurrency=50, threads=2,
                          progress=False)
        assert r.threads == min(2, 50)
        path = tmp_path / "s.sock"
        with httpbench.Server(unix_socket=path) as u:
            r = httpbench.run("http://localhost/rnd?c=10", unix_socket=u.unix_socket,
                              requests=50, concurrency=8, progress=False)
            assert r.threads == max(1, cpus // 2)
