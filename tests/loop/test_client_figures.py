"""The client's own figures (Result.client, httpbench.bound): when the
client rather than the server limited a run, and every due request of an
open loop counted, sent or not."""

from __future__ import annotations

import contextlib
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import TWO_CPUS, burner, exact, free_port, listening, pinned

import httpbench
from httpbench import ClientFigures
from httpbench.bound import BUSY_BOUND, merge_client

@pytest.fixture(scope="module")
def srv() -> Iterator[httpbench.Server]:
    with httpbench.Server(threads=2) as s:
        yield s


@contextlib.contextmanager
def served_on(cpu: int) -> Iterator[int]:
    """The embedded server in a process of its own, on `cpu`; yields its
    port."""
    port = free_port()
    with listening(pinned(cpu, [sys.executable, "-m", "httpbench", "serve", "--port", str(port),
                                "--threads", "1"]), port):
        yield port


_CLIENT = """
    import json, httpbench
    r = httpbench.run("http://127.0.0.1:{port}/rnd?c=100", duration={seconds}, concurrency=200,
                      threads=1, progress=False)
    print(json.dumps(r.to_dict()))
"""


def _client_run(port: int, tmp_path: Path, seconds: float = 2.0) -> httpbench.Result:
    """A closed-loop run from a child pinned to CPU 0 at nice 10, 200
    connections: beside a busy loop at the normal priority it gets a tenth
    of the CPU in short slices far apart, so every answer is in when it
    runs again and it never waits for the server. At an equal share (nice
    0) its slices were long enough to answer all 200 and then wait for the
    server, whose CPU, idle meanwhile, is slow to wake in this VM: busy
    0.988-0.996 here, 0.89 on a CI runner (the capacity test's client
    beside a burner, the same: tests/comparison/test_capacity.py)."""
    argv = ["nice", "-n", "10", sys.executable, "-c",
            _CLIENT.replace("\n    ", "\n").format(port=port, seconds=seconds)]
    out = subprocess.run(pinned(0, argv), capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return httpbench.Result.from_json(out.stdout.strip().splitlines()[-1])


@TWO_CPUS
@pytest.mark.timing
def test_a_client_sharing_its_cpu_with_a_burner_is_bound_by_cpu(tmp_path):
    """The client's loop on CPU 0 beside a busy loop, the server alone on
    CPU 1: the loop never waits for the server (it computes or waits for
    the CPU the burner holds), so it is `bound`, reason "cpu", and the
    report says so after ab's block."""
    with served_on(1) as port, burner(0):
        r = _client_run(port, tmp_path)
    c = r.client
    assert c is not None and r.complete > 0
    assert c.busy_max >= BUSY_BOUND and c.bound and c.reason == "cpu", c
    text = r.report()
    assert "Client:                 CPU " in text
    assert "Warning: the client was the bottleneck: a loop thread was busy" in text
    assert text.index("Client:") > text.index("Percentage of the requests")
    # At nice 10 beside the burner the loop waited for the CPU more than it
    # ran: the warning says so, and that more threads would not help.
    assert c.busy - c.cpu > c.cpu, c
    assert "waited" in text and "for one that something else held" in text
    assert "--threads" not in text


# A wake-up probe: sleeps to each 1/2000 s from its start and notes how late
# it woke (CLOCK_MONOTONIC, the loop's clock), until SIGTERM; prints the
# due instants and lateness.
_PROBE = """
import signal, sys, time
class Stop(Exception):
    pass
def stop(*_):
    raise Stop
signal.signal(signal.SIGTERM, stop)
step, seen = 1 / 2000, []
due = time.monotonic() + step
print("ready", flush=True)
try:
    while True:
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        seen.append((due, time.monotonic() - due))
        due += step
except Stop:
    pass
print("\\n".join(f"{d:.9f} {late:.9f}" for d, late in seen), flush=True)
"""

# The paced run; it also prints the major page faults its process took
# meanwhile (a thread that faults waits for the disk, which a probe in
# another process does not see).
_PACED = """
import json, resource, time, httpbench
faults = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
t0 = time.monotonic()
r = httpbench.run("http://127.0.0.1:{port}/rnd?c=100", duration=2, rate=2000,
                  concurrency=100, threads=1, progress=False)
t1 = time.monotonic()
print(resource.getrusage(resource.RUSAGE_SELF).ru_majflt - faults)
print(t0, t1)
print(json.dumps(r.to_dict()))
"""

# The probe's 99th percentile under which CPU 0 counts as quiet: half the
# loop's own bound for its sends (LATE_P99_BOUND).
QUIET_P99 = 0.0005


@TWO_CPUS
@pytest.mark.timing
def test_an_open_loop_that_keeps_up_is_not_bound(tmp_path):
    """At a rate well inside what both can do, on CPUs of their own (the
    client's child pinned to CPU 0, the server to CPU 1): nothing unsent,
    no send late for a busy connection, and its sends as timely as the
    machine's: a probe on the same CPU, waking at the same 2,000 a second
    over the same window, measures what the machine gave (this VM: its
    p99 0.2-12 ms from one minute to the next, the loop's within 1.35x of
    it). Where the probe saw CPU 0 quiet and the loop's process took no
    major page fault, the run is not bound and says it is on schedule;
    where it did not, the loop's verdict is at most
    "schedule" and the report says so: a busy machine's late wake-ups are
    the machine's, and "schedule" is the verdict that names them (the last
    CI run: the loop's p99 13 ms, "schedule"). A major fault is the
    machine's too, and one the probe cannot see: a thread that touches a
    page not in memory waits for the disk (a CI run: the loop's p99 5 ms,
    its max 25 ms, the probe's p99 0.18 ms). 100 connections, each due
    every 50 ms: with 10 (every 5 ms) a full run saw 94 requests fall due
    on a connection still busy while the server's answers came up to 12 ms
    late."""
    with served_on(1) as port:
        probe = subprocess.Popen(pinned(0, [sys.executable, "-c", _PROBE]), stdout=subprocess.PIPE,
                                 text=True)
        try:
            assert probe.stdout is not None and probe.stdout.readline() == "ready\n"
            out = subprocess.run(pinned(0, [sys.executable, "-c", _PACED.format(port=port)]),
                                 capture_output=True, text=True, cwd=tmp_path, timeout=120)
            probe.terminate()
            seen, _ = probe.communicate(timeout=30)
        finally:
            probe.kill()
            probe.wait()
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    t0, t1 = map(float, lines[-2].split())
    faults = int(lines[-3])
    late = sorted(float(v) for d, v in (line.split() for line in seen.split("\n") if line)
                  if t0 <= float(d) <= t1)
    assert len(late) > 3000  # (the probe covered the run)
    machine_p99 = late[len(late) * 99 // 100]
    seen_by = (f"probe p99 {machine_p99 * 1e3:.2f} ms, max {late[-1] * 1e3:.2f} ms; "
               f"major faults {faults}")
    r = httpbench.Result.from_json(lines[-1])
    c = r.client
    assert c is not None and c.unsent == 0 and c.late_busy == 0 and c.busy_max < BUSY_BOUND, c
    assert c.late_p99 is not None
    if faults == 0:
        assert c.late_p99 <= 2 * machine_p99 + 0.001, (c, seen_by)
    if machine_p99 < QUIET_P99 and faults == 0:
        assert not c.bound and c.reason == "" and c.late_p99 < 0.002, (c, seen_by)
        assert ", on schedule (late p50" in r.report() and "Warning" not in r.report()
    else:
        assert c.reason in ("", "schedule"), (c, seen_by)
        assert c.bound == (c.reason == "schedule")
        assert ("its sends were late against the schedule" in r.report()) == c.bound


def test_an_open_loop_slower_than_its_rate_counts_every_due_request(srv):
    """20 ms a request on 4 connections is 200 a second at most; asked for
    1,000 a second for 2 s, 2,000 were due: those never sent are counted
    in client.unsent (due less issued, exactly), the report says what the
    percentiles cover and the rate reached against the target, and the
    client is bound by its connections."""
    r = httpbench.run(srv.url("/delay?ms=20"), duration=2.0, rate=1000, concurrency=4,
                      progress=False)
    exact(r)
    c = r.client
    assert c is not None
    due = 2000  # 500 slots on each of the 4 connections before 2 s
    assert c.unsent == due - r.issued and c.unsent > 1000
    assert c.bound and c.reason == "connections" and c.late_busy > 0
    text = r.report()
    assert (f"({c.unsent:,} due requests were never sent: all 4 connections were busy; "
            f"the percentiles cover the {r.issued:,} sent)") in text
    assert "Rate reached:           " in text and "of 1,000.00 asked" in text
    # A count: every request asked for is sent, late or not.
    n = httpbench.run(srv.url("/delay?ms=20"), requests=100, rate=1000, concurrency=4,
                      progress=False)
    assert n.client is not None and n.client.unsent == 0 and n.issued == 100
    # A shape: its due requests by the shape's own rule.
    s = httpbench.run(srv.url("/delay?ms=20"), stages=[(1.0, 1000)], concurrency=2,
                      progress=False)
    assert s.client is not None and s.client.unsent > 0
    assert abs(s.client.unsent + s.issued - 500) <= 2  # a ramp from 0 to 1,000 over 1 s


@pytest.mark.parametrize(("rate", "concurrency", "seconds"),
                         [(3000, 4, 1.0), (3, 1, 1.0), (30, 1, 1.0), (7, 3, 3.0), (1e6 / 3, 2, 0.3)])
def test_a_rates_due_requests_are_rate_times_duration_exactly(srv, rate, concurrency, seconds):
    """Each slot from the start and its index, rounded once: at rates whose
    interval is no whole number of nanoseconds (4/3000 s, 1/3 s), sent and
    unsent add up to rate x duration exactly, with no grace to hide an
    extra slot. Each connection's interval cut to whole nanoseconds ran
    the schedule fast: -R 3000 -c 4 -d 2 sent 6,001, and --rate 3 -t 1 put
    a phantom fourth slot in unsent ("1 due request never sent")."""
    r = httpbench.run(srv.url("/"), rate=rate, concurrency=concurrency, duration=seconds,
                      grace=0, progress=False)
    exact(r)
    c = r.client
    assert c is not None
    assert r.issued + c.unsent == round(rate * seconds), (r.issued, c.unsent)


_STALLED = """
import json, sys, httpbench
print("go", flush=True)
r = httpbench.run(sys.argv[1], duration=float(sys.argv[2]), rate=200, concurrency=2, threads=1,
                  progress=False, log=sys.argv[3])
print(json.dumps(r.to_dict()))
"""


def busy_outside_the_stall(records: list[httpbench.LogRecord]) -> int:
    """How many requests fell due, outside the stall, while their
    connection had an exchange on the wire (sent before, answered after):
    the most a run can truly call late for a busy connection. The stall is
    the longest gap between sends; what fell due in it waited for the
    client, however its connections stood."""
    starts = sorted(x.start for x in records)
    gap = max(range(1, len(starts)), key=lambda i: starts[i] - starts[i - 1])
    stopped, woke = starts[gap - 1], starts[gap]
    n = 0
    sent: dict[int, list[httpbench.LogRecord]] = {}
    for x in sorted(records, key=lambda x: x.start):
        before = sent.setdefault(x.connection, [])
        due = x.intended_start
        on_wire = [p for p in before if p.start <= due]
        if not stopped < due <= woke and on_wire and due < on_wire[-1].intended_start + on_wire[-1].latency:
            n += 1
        before.append(x)
    return n


# Timing: which wait a request's lateness fell in is read from the wall
# clock; a sanitizer build sharing a CPU adds stalls of its own, outside
# the loop's waits (late_busy 18 and 1 in such a run).
@pytest.mark.timing
@pytest.mark.parametrize("duration, stop_at, stop_for", [(3.0, 0.8, 0.8), (2.0, 1.5, 0.9)],
                         ids=["mid-run", "across-the-end"])
def test_a_client_stopped_by_the_machine_is_late_not_busy(srv, tmp_path, duration, stop_at,
                                                           stop_for):
    """The client's process held off its CPU (SIGSTOP, the extreme of a
    machine that does not run it in time) while requests fall due on its
    two free connections: on waking it sends them, each late by the stall
    and none counted as due on a busy connection, so the verdict is
    "schedule", not "connections"; held across the run's end (and woken
    within the grace its last answers have), the ones due before the end
    are still sent (late), not left unsent. The code before counted the
    catch-up sends late_busy (each connection's last exchange ended after
    the next one's due time) and the ones due before the end unsent. An
    answer the server itself was slow with (10 ms, a connection's interval,
    on a loaded machine) is truly busy, and the per-request log says how
    many could be: late_busy may not exceed them (it was 160 here)."""
    log = tmp_path / "requests.csv"
    proc = subprocess.Popen([sys.executable, "-c", _STALLED, srv.url("/rnd?c=100"), str(duration),
                             str(log)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "go\n"
        time.sleep(stop_at)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(stop_for)
        proc.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    r = httpbench.Result.from_json(out.strip().splitlines()[-1])
    exact(r)
    c = r.client
    assert c is not None and c.late_max is not None
    assert c.late_max >= stop_for / 2, c  # (the stall: its due requests waited for it)
    assert c.unsent == 0 and r.issued == 200 * duration and r.complete == r.issued, c
    assert c.late_busy <= busy_outside_the_stall(httpbench.read_log(log)), c
    assert c.bound and c.reason == "schedule", c
    assert "its sends were late against the schedule" in r.report()


def test_a_server_stopped_by_the_machine_sets_the_pace_and_is_no_client_verdict(tmp_path):
    """The server's process held off its CPU (SIGSTOP 0.5 s) under a rate
    of 200 on 10 connections: every request was still sent (unsent 0),
    those due in the stall late behind a busy connection, and their
    latency the server's. That read bound=True, reason "connections" ("the
    client was the bottleneck ... add connections"); now no client verdict,
    the client's own lateness small (each such send counted from the
    instant its connection freed), and the report says the server set the
    pace. (The client stopped instead reads "schedule":
    test_a_client_stopped_by_the_machine_is_late_not_busy.)"""
    port = free_port()
    argv = [sys.executable, "-m", "httpbench", "serve", "--port", str(port), "--threads", "1"]
    with listening(argv, port) as server:
        def stall() -> None:
            time.sleep(0.7)
            server.send_signal(signal.SIGSTOP)
            time.sleep(0.5)
            server.send_signal(signal.SIGCONT)
        stopper = threading.Thread(target=stall)
        stopper.start()
        try:
            r = httpbench.run(f"http://127.0.0.1:{port}/rnd?c=100", rate=200, concurrency=10,
                              duration=2.0, progress=False)
        finally:
            stopper.join()
    exact(r)
    c = r.client
    assert c is not None and c.unsent == 0 and r.issued == 400, c
    assert c.late_busy > 0.05 * r.issued, c  # (what fell due in the stall, about 100)
    assert not c.bound and c.reason == "", c
    assert c.late_max is not None and c.late_max < 0.25, c  # (the stall was 0.5 s)
    text = r.report()
    assert "Every connection was waiting on the server when requests fell due: the server " \
           "set the pace" in text, text
    assert "bottleneck" not in text and r.latency.max >= 0.4, r.latency


@pytest.mark.parametrize("how", ["nothing listening", "TLS to a plain port"])
def test_a_run_in_which_nothing_completed_gives_no_client_verdict(srv, how):
    """A run against a port nothing listens on (50,149 connect failures)
    or https:// to a plain port said "the client was the bottleneck: a
    loop thread was busy 100%": the loop retrying was busy, and nothing
    was measured. No verdict now; the report's first line says what
    happened."""
    if how == "nothing listening":
        with socket.socket() as s0:
            s0.bind(("127.0.0.1", 0))  # bound, never listening: refused
            url = f"http://127.0.0.1:{s0.getsockname()[1]}/"
            r = httpbench.run(url, duration=1.0, concurrency=2, progress=False)
    else:
        r = httpbench.run(srv.url("/").replace("http://", "https://"), duration=1.0,
                          concurrency=2, verify=False, progress=False)
    exact(r)
    assert r.complete == 0 and r.failed > 0
    assert r.client is not None and not r.client.bound and r.client.reason == "", r.client
    text = r.report()
    assert "bottleneck" not in text and text.startswith("Nothing completed"), text[:300]


def test_a_failed_checks_answers_are_named_in_the_report(srv):
    """A scenario whose steps failed their checks read "Failed requests: 40
    (Check: 40)", the 401s and 403s only in the JSON's status_counts
    (non_2xx 0): the failure lines name the statuses the checks failed on,
    by step."""
    s = httpbench.Scenario([
        httpbench.Request("GET", "/status/401", name="me", expect_status=200),
        httpbench.Request("GET", "/status/403", name="admin", expect_status=200),
        httpbench.Request("GET", "/rnd?c=10", name="ok", expect_status=200)], order="sequence")
    r = httpbench.run(srv.url("/"), scenario=s, requests=60, progress=False)
    assert r.failures["check"] == 40 and r.complete == 20
    text = r.report()
    assert "   (Failed checks' answers: me: 401 x20; admin: 403 x20)" in text, text
    one = httpbench.run(srv.url("/status/404"), requests=5, progress=False,
                        scenario=httpbench.Scenario([httpbench.Request(
                            "GET", "/status/404", expect_status=200)]))
    assert "(Failed checks' answers: GET /status/404: 404 x5)" in one.report(), one.report()


_STARVED = """
    import json, httpbench
    r = httpbench.run("http://127.0.0.1:{port}/rnd?c=10", duration=3, concurrency=1000,
                      threads=1, progress=False)
    print(json.dumps(r.to_dict()))
"""


@TWO_CPUS
@pytest.mark.timing
def test_a_starved_client_is_judged_over_the_part_that_carried_load(tmp_path):
    """The client pinned to a CPU a busy loop shares, 1,000 connections to
    a server that always has an answer ready: its loop was runnable 99% of
    the run's middle, yet busy read 0.92 (the connects before the first
    request and the tail after the last send were in the average), under
    the cpu rule's 0.95, so bound=False. Busy is judged from the first tick
    after a send to the last tick after an answer."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"the open-file limit ({hard}) is below 1,100")
    with served_on(1) as port, burner(0):
        argv = ["nice", "-n", "10", sys.executable, "-c",
                _STARVED.replace("\n    ", "\n").format(port=port)]
        out = subprocess.run(pinned(0, argv), capture_output=True, text=True, cwd=tmp_path,
                             timeout=120, preexec_fn=lambda: resource.setrlimit(
                                 resource.RLIMIT_NOFILE, (max(soft, 4096), max(hard, 4096))
                                 if hard != resource.RLIM_INFINITY else (4096, hard)))
    assert out.returncode == 0, out.stderr
    r = httpbench.Result.from_json(out.stdout.strip().splitlines()[-1])
    c = r.client
    assert c is not None and r.complete > 1000
    assert c.busy_max >= BUSY_BOUND and c.bound and c.reason == "cpu", c


def test_a_closed_loop_has_no_schedule_to_be_late_on(srv):
    r = httpbench.run(srv.url("/rnd?c=10"), requests=2000, concurrency=4, progress=False)
    c = r.client
    assert c is not None and c.late_p99 is None and c.unsent == 0 and c.late_busy == 0
    assert 0 < c.busy <= c.busy_max <= 1 and 0 < c.cpu <= 1
    assert "Client:                 CPU " in r.report() and "schedule" not in r.report()


def test_the_figures_travel_in_json_html_and_metrics(srv, tmp_path):
    r = httpbench.run(srv.url("/delay?ms=20"), duration=1.0, rate=500, concurrency=2,
                      progress=False)
    d = r.to_dict()
    assert d["schema"] >= 13 and d["client"]["unsent"] == r.client.unsent > 0
    back = httpbench.Result.from_dict(d)
    assert back.client == r.client and isinstance(back.client, ClientFigures)
    old = dict(d, schema=12)
    del old["client"]
    assert httpbench.Result.from_dict(old).client is None
    html = r.to_html()
    assert 'data-key="client.unsent"' in html and "the client was the bottleneck" in html
    assert "the client was the bottleneck" in r._repr_html_()
    with pytest.raises(ValueError, match="client.busy"):
        httpbench.Result.from_dict(dict(d, client=dict(d["client"], busy="x")))


def test_a_cluster_s_client_figures_say_which_worker_was_bound():
    calm = ClientFigures(busy=0.2, busy_max=0.3, cpu=0.1, late_p99=0.0001, unsent=0)
    busy = ClientFigures(busy=0.97, busy_max=0.99, cpu=0.9, late_p99=0.004, unsent=7,
                         bound=True, reason="cpu")
    m = merge_client([("tcp://a:1", calm), ("tcp://b:2", busy), ("tcp://c:3", None)])
    assert m is not None and m.bound and m.reason == "cpu"
    assert m.workers_bound == ("tcp://b:2",) and m.unsent == 7
    assert m.busy_max == 0.99 and m.busy == pytest.approx((0.2 + 0.97) / 2)
    assert m.late_p99 == 0.004
    assert "(workers tcp://b:2)" in m.warning()
    assert merge_client([("x", None)]) is None


def test_the_cpu_warning_says_whether_the_loop_ran_or_waited_for_a_cpu():
    """busy counts time on a CPU and time waiting for one alike. A loop that
    computed all the time wants more threads or machines; one that mostly
    waited for a CPU something else held (a scheduler can put a lone
    connection's thread on the CPU of the server it measures: busy 0.99 at
    CPU 0.47 here) wants a CPU of its own, and more threads would wait
    too."""
    ran = ClientFigures(busy=0.98, busy_max=0.99, cpu=0.93, bound=True, reason="cpu")
    assert "give it more threads (--threads, threads=)" in ran.warning()
    assert "give it more threads (-cpus)" in ran.warning({"threads": "-cpus"})
    assert "give it more threads," in ran.warning({})  # (ab's: no flag for it)
    assert "waited" not in ran.warning()
    waited = ClientFigures(busy=0.99, busy_max=0.99, cpu=0.47, bound=True, reason="cpu")
    said = waited.warning()
    assert said.startswith("the client was the bottleneck: a loop thread was busy 99% of")
    assert "on a CPU 47% of it and waited 52% for one that something else held" in said
    assert "taskset" in said and "--threads" not in said
    # Not bound: nothing is said, however the time was spent.
    assert ClientFigures(busy=0.6, busy_max=0.6, cpu=0.1).warning() == ""
