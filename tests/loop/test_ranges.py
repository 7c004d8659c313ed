"""Every number a user can pass is range-checked before it reaches C: NaN,
negative, infinite or absurdly large is a ValueError (or exit 2 on the
command line) naming the argument."""

from __future__ import annotations

import math

import pytest

import httpbench
from httpbench import _core
from helpers import hb


URL = "http://127.0.0.1:1/"


BAD_RUN_ARGUMENTS = [
    ("requests", 2**64), ("requests", 2**64 + 5), ("requests", -1), ("requests", 0),
    ("requests", 1.5), ("requests", 10**13),
    ("concurrency", 0), ("concurrency", 2**40), ("concurrency", 1.0),
    ("threads", 0), ("threads", 99999999999), ("threads", -3),
    ("duration", math.nan), ("duration", math.inf), ("duration", -1), ("duration", 0),
    ("duration", 1e10),
    ("timeout", math.nan), ("timeout", math.inf), ("timeout", 0), ("timeout", -1),
    ("grace", math.nan), ("grace", math.inf), ("grace", -1), ("grace", 3601), ("grace", True),
    ("grace", None),
    ("rate", math.nan), ("rate", math.inf), ("rate", 0), ("rate", -5), ("rate", 1e12),
    ("rate", 1e-300),
    ("warmup", math.nan), ("warmup", -1), ("warmup", -1.0), ("warmup", math.inf),
    ("warmup", 0), ("warmup", True), ("warmup", 2**64),
]


@pytest.mark.parametrize("name,value", BAD_RUN_ARGUMENTS)
def test_run_refuses_a_number_out_of_range_naming_it(name, value):
    """Items 4, 5 and 7: requests=2**64 wrapped to 0 ("no limit") and ran
    for ever, 2**64+5 sent 5; warmup=nan never ended; duration=inf or 1e10
    overflowed the clock and returned at once; a tiny rate overflowed the
    interval between starts."""
    with pytest.raises(ValueError, match=name):
        httpbench.run(URL, **{name: value}, progress=False)


@pytest.mark.parametrize("args", [
    (1, 0.0, 0, 1, True, 0.0, 1.0),        # concurrency 0
    (2**64, 0.0, 1, 1, True, 0.0, 1.0),    # requests past 64 bits
    (-1, 0.0, 1, 1, True, 0.0, 1.0),
    (1, math.nan, 1, 1, True, 0.0, 1.0),
    (1, math.inf, 1, 1, True, 0.0, 1.0),
    (1, 0.0, 1, 2**31, True, 0.0, 1.0),
    (1, 0.0, 1, 1, True, math.nan, 1.0),
    (1, 0.0, 1, 1, True, 1e-300, 1.0),
    (1, 0.0, 1, 1, True, 0.0, math.inf),
    (1, 0.0, 1, 1, True, 0.0, 0.0),
])
def test_the_loop_type_checks_its_own_numbers(args):
    """Item 4: the C types check what reaches them, whoever calls."""
    requests, duration, concurrency, threads, keepalive, rate, timeout = args
    with pytest.raises(ValueError):
        _core._Bench(dict(host="127.0.0.1", port=1, request=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                          requests=requests, duration=duration, concurrency=concurrency,
                          threads=threads, keepalive=keepalive, rate=rate, timeout=timeout))


@pytest.mark.parametrize("grace", [-1.0, math.nan, math.inf, 1e10])
def test_the_loop_checks_its_grace(grace):
    with pytest.raises(ValueError, match="grace"):
        _core._Bench(dict(host="127.0.0.1", port=1, request=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
                          requests=1, duration=0.0, concurrency=1, threads=1, timeout=1.0,
                          grace=grace))


@pytest.mark.parametrize("kwargs,name", [
    (dict(port=0), "port"), (dict(port=65536), "port"), (dict(port=2**70), "port"),
    (dict(port=1, timeout=math.nan), "timeout"), (dict(port=1, timeout=math.inf), "timeout"),
    (dict(port=1, timeout=-1), "timeout"), (dict(port=1, timeout=0), "timeout"),
    (dict(port=1, max_body=-1), "max_body"), (dict(port=1, max_body=2**64), "max_body"),
])
def test_connection_refuses_a_number_out_of_range_naming_it(kwargs, name):
    """Item 4: Connection has no Python layer; max_body=-1 wrapped to 2**64-1."""
    with pytest.raises(ValueError, match=name):
        httpbench.Connection("127.0.0.1", **kwargs)


def test_histogram_refuses_values_out_of_range_naming_them():
    h = httpbench.Histogram()
    for bad in (-1, 2**64):
        with pytest.raises(ValueError, match="value"):
            h.record(bad)
    for p in (math.nan, -1, 101, math.inf):
        with pytest.raises(ValueError, match="p must"):
            h.percentile(p)
    good = h.state()
    with pytest.raises(ValueError, match="count"):
        h.restore((-1, 0, 0, 0.0, 0.0, 0, []))
    with pytest.raises(ValueError, match="bucket count"):
        h.restore((1, 5, 5, 5.0, 25.0, 0, [(3, -1)]))
    with pytest.raises(ValueError):
        h.restore((1, 5, 5, math.nan, 25.0, 0, [(3, 1)]))
    with pytest.raises(ValueError, match="add up"):
        h.restore((1, 5, 5, 5.0, 25.0, 0, [(3, 2**63), (4, 2**63), (5, 2)]))
    assert h.state() == good  # nothing half-restored


@pytest.mark.parametrize("kwargs,name", [
    (dict(threads=0), "threads"), (dict(port=-1), "port"), (dict(port=70000), "port"),
    (dict(max_body=-1), "max_body"), (dict(max_body=2**64), "max_body"),
    (dict(max_buffered=0), "max_buffered"), (dict(header_timeout=math.nan), "header_timeout"),
    (dict(send_timeout=math.inf), "send_timeout"), (dict(idle_timeout=-1), "idle_timeout"),
    (dict(idle_timeout=1e10), "idle_timeout"),
])
def test_server_refuses_a_number_out_of_range_naming_it(kwargs, name):
    with pytest.raises(ValueError, match=name):
        httpbench.Server(**kwargs)


@pytest.mark.parametrize("kwargs,name", [
    (dict(requests=0), "requests"), (dict(requests=2**64), "requests"),
    (dict(concurrency=0), "concurrency"), (dict(concurrency=10**6), "concurrency"),
    (dict(duration=math.nan), "duration"), (dict(timeout=math.inf), "timeout"),
])
def test_compare_refuses_a_number_out_of_range_before_any_agent_runs(kwargs, name):
    with pytest.raises(ValueError, match=name):
        httpbench.compare("http://127.0.0.1:1/", agents=["http.client"], **kwargs)


@pytest.mark.parametrize("name,value", [
    ("keepalive", "false"), ("keepalive", [1]), ("http2", math.nan), ("http2", "1"),
    ("lengths_vary", 2), ("verify", "ca.pem"), ("tls_resume", "no"), ("verify", None),
])
def test_run_refuses_a_switch_that_is_not_true_or_false(name, value):
    """Each was taken as its truth: keepalive="false" kept connections
    alive, verify="ca.pem" (requests' way) verified against the system's
    CAs with the file unread, http2=nan spoke HTTP/2."""
    with pytest.raises(ValueError, match=f"{name} must be True or False") as e:
        httpbench.run(URL, **{name: value}, progress=False)
    assert ("cafile" in str(e.value)) == (name == "verify")


def test_switches_take_true_false_0_1_and_numpys_bools(server):
    np = pytest.importorskip("numpy")
    for value in (True, False, 0, 1, np.True_, np.False_, np.int64(1)):
        r = httpbench.run(server.url("/rnd?c=8"), requests=4, keepalive=value,
                          progress=False)
        assert r.complete == 4 and r.keepalive_requests == (4 if value else 0)


@pytest.mark.parametrize("call,name", [
    (lambda: httpbench.Server(tls="yes"), "tls"),
    (lambda: httpbench.Server(http2="no"), "http2"),
    (lambda: httpbench.Server(proxy=2), "proxy"),
    (lambda: httpbench.Server(zero_copy=None), "zero_copy"),
    (lambda: httpbench.compare(URL, agents=["http.client"], verify="ca.pem"), "verify"),
    (lambda: httpbench.compare(URL, agents=["http.client"], http2="no"), "http2"),
    (lambda: httpbench.compare(URL, agents=["http.client"], pin="yes"), "pin"),
    (lambda: httpbench.capacity(URL, slo="p99<10ms", confirm="no"), "confirm"),
    (lambda: httpbench.Connection("127.0.0.1", 1, tls="no"), "tls"),
    (lambda: httpbench.Connection("127.0.0.1", 1, verify="ca.pem"), "verify"),
    (lambda: httpbench.Connection.from_url(URL, http2="no"), "http2"),
])
def test_the_other_switches_are_true_or_false_too(call, name):
    with pytest.raises(ValueError, match=f"{name} must be True or False"):
        call()


def test_timeout_none_is_the_documented_no_limit():
    with httpbench.Server() as srv:
        r = httpbench.run(srv.url("/rnd?c=10"), requests=20, concurrency=2, timeout=None,
                          progress=False)
    assert r.complete == 20


@pytest.mark.parametrize("args,name", [
    (["--warmup", "nans"], "--warmup"), (["--warmup=-1s"], "--warmup"),
    (["--warmup", "infs"], "--warmup"), (["--warmup=-5"], "--warmup"),
    (["-t", "inf"], "-t"), (["-t", "nan"], "-t"), (["-s", "nan"], "-s"),
    (["-n", "18446744073709551621"], "-n"), (["--threads", "99999999999"], "--threads"),
    (["--rate", "nan"], "rate"), (["-c", "0"], "-c"),
])
def test_command_line_numbers_out_of_range_exit_2_in_one_line(tmp_path, args, name):
    r = hb(*args, URL, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and name in r.stderr and r.stdout == "", r.stderr
