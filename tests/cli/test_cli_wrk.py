"""`httpbench wrk ...`: wrk 4.1's command line (and wrk2's -R) and report
layout. Side by side with the real wrk against nginx and the embedded
server: the same bytes per response and status shares, every line a
script greps parsed by one pattern from both; wrk's defaults; -s
refused with nothing sent."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import httpbench
from helpers import (OK, env_of, free_port, grep_each, hb, nginx, recording, server_context,
                     side_by_side)
from httpbench.cli.flags import markdown
from httpbench.cli.wrk import FLAGS
from httpbench.render.wrk import (format_binary, format_metric, format_time_s, format_time_us,
                                  header)

WRK = shutil.which("wrk")
needs_wrk = pytest.mark.skipif(WRK is None, reason="wrk not installed (apt-get install wrk)")

_UNITS = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}
# What a script greps from wrk's report, one pattern for both outputs.
PATTERNS = {
    "header": r"^Running (\S+) test @ (\S+)$",
    "threads": r"^  (\d+) threads and (\d+) connections$",
    "stats": r"^  Thread Stats\s+Avg\s+Stdev\s+Max\s+\+/- Stdev$",
    "latency": r"^    Latency\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+\w+)\s+([\d.]+)%$",
    "req_sec": r"^    Req/Sec\s+([\d.]+\w*)\s+([\d.]+\w*)\s+([\d.]+\w*)\s+([\d.]+)%$",
    "requests": r"^  (\d+) requests in ([\d.]+\w+), ([\d.]+)([KMG]?B) read$",
    "rps": r"^Requests/sec:\s+([\d.]+)$",
    "tps": r"^Transfer/sec:\s+([\d.]+)([KMG]?B)$",
}


def parse(out: str) -> dict[str, tuple[str, ...]]:
    found = grep_each(PATTERNS, out)
    non = re.search(r"^  Non-2xx or 3xx responses: (\d+)$", out, re.M)
    found["non"] = (non.group(1),) if non else ("0",)
    return found


def both(args: list[str], url: str, cwd: Path) -> tuple[str, str]:
    return side_by_side("wrk", args, url, cwd)


def per_response(found: dict[str, tuple[str, ...]]) -> float:
    n, _, amount, unit = found["requests"]
    return float(amount) * _UNITS[unit] / int(n)


# Time-bounded command lines from wrk's README and help, covering each flag
# honoured here (durations cut short).
LINES = [
    ["-t2", "-c10", "-d1s"],
    ["-t1", "-c4", "-d1s", "--latency"],
    ["-c", "20", "-d", "1", "-t", "2", "-H", "Accept: */*"],
    ["-t2", "-c10", "-d1s", "--timeout", "1s"],
    ["--threads", "2", "--connections", "8", "--duration", "1s"],
    ["-t1", "-c1", "-d1s", "-L"],
    ["-t2", "-c2", "-d1s", "--header", "X-Test: 1", "--header", "X-Other: 2"],
    ["-t1", "-c1k", "-d1s"],
    ["-t2", "-c16", "-d1s", "--latency", "--timeout", "2s"],
    ["-c10", "-d1s"],
]


@pytest.mark.timing
@needs_wrk
@pytest.mark.parametrize("args", LINES, ids=" ".join)
def test_bytes_per_response_and_statuses_agree_with_wrk_against_nginx(tmp_path, args):
    with nginx() as up:
        if up is None:
            pytest.skip("nginx not installed")
        port, _ = up
        for path in ("/rnd", "/missing"):
            w, h = both(args, f"http://127.0.0.1:{port}{path}", tmp_path)
            fw, fh = parse(w), parse(h)
            assert fw["threads"] == fh["threads"] and fw["header"] == fh["header"], (w, h)
            # wrk's read is rounded to two places of its unit.
            n_w = int(fw["requests"][0])
            assert per_response(fw) == pytest.approx(per_response(fh), rel=0.005,
                                                     abs=0.006 * 1024 ** 2 / n_w), (w, h)
            shares = [int(f["non"][0]) / int(f["requests"][0]) for f in (fw, fh)]
            assert shares[0] == shares[1], (w, h)
            assert ("Latency Distribution" in w) == ("Latency Distribution" in h)


@pytest.mark.timing
@needs_wrk
def test_side_by_side_on_the_embedded_server(tmp_path):
    with httpbench.Server() as srv:
        for args, url in ((["-t1", "-c4", "-d1s", "--latency"], srv.url("/rnd?c=2048")),
                          (["-t2", "-c4", "-d1s"], srv.url("/status/503"))):
            w, h = both(args, url, tmp_path)
            fw, fh = parse(w), parse(h)
            n_w = int(fw["requests"][0])
            assert per_response(fw) == pytest.approx(per_response(fh), rel=0.005,
                                                     abs=0.006 * 1024 ** 2 / n_w)
            # (What each saw and what the server counted, should one differ.)
            said = (w, h, srv.stats())
            for f in (fw, fh):
                if "503" in url:
                    assert f["non"][0] == f["requests"][0], said
                else:
                    assert f["non"] == ("0",), said
            assert columns(w) == columns(h), (w, h)


# The lines wrk sets in columns: each number right-aligned in its own (a
# unit hangs to its right, in print_units' padding), so where each number
# ends is the layout (Transfer/sec's sat a column short).
COLUMNS = ("  Thread Stats", "    Latency ", "    Req/Sec ", "  Latency Distribution",
           "     50%", "     75%", "     90%", "     99%", "Requests/sec:", "Transfer/sec:")


def columns(out: str) -> list[tuple[str, list[int]]]:
    rows = [line for line in out.splitlines() if line.startswith(COLUMNS)]
    assert rows, out
    return [(next(p for p in COLUMNS if line.startswith(p)), [m.end() for m in re.finditer(r"\d[\d.]*", line)] or [len(line)])
            for line in rows]


@needs_wrk
def test_a_server_it_cannot_reach_ends_it_before_the_run_as_wrk(tmp_path):
    """wrk resolves the host and connects once to each address before its
    run; with none connecting it says so on stderr and exits 1, no header,
    nothing run (httpbench ran its duration reconnecting at full speed and
    counted tens of thousands of connect failures). The same lines here."""
    port = free_port()
    for url in (f"http://127.0.0.1:{port}/", f"https://LocalHost:{port}/x",
                f"http://[::1]:{port}/", "http://nonexistent.invalid/"):
        args = ["-t1", "-c2", "-d1s", url]
        real = subprocess.run([WRK, *args], capture_output=True, text=True, timeout=60)
        ours = hb("wrk", *args, cwd=tmp_path)
        assert real.returncode == 1 and real.stderr.startswith("unable to "), real
        assert (ours.returncode, ours.stdout, ours.stderr) == (1, "", real.stderr), (ours, real)


@needs_wrk
def test_tls_failures_are_the_socket_errors_wrk_counts_them(tmp_path, scripted, pki):
    """wrk counts a TLS handshake that fails a connect error and a record
    its TLS refuses on an open connection a read error; the wrk mode
    counted both connect (the tls class holds both: tls_failed_handshakes
    tells them apart)."""
    junk = b"\x17\x03\x03\x00\x10" + bytes(16)  # an application record no key sealed
    refusing = scripted(*[[("recv",), ("send_plain", junk)]] * 5000,
                        tls=server_context(pki["server"], pki["server_key"]))
    with httpbench.Server() as plain:  # (it answers a ClientHello in plain HTTP)
        for url, column in ((f"https://127.0.0.1:{refusing.port}/", "read"),
                            (plain.url("/").replace("http:", "https:"), "connect")):
            real, ours = side_by_side("wrk", ["-t1", "-c1", "-d1s"], url, tmp_path,
                                      ours_ok=(1,))  # (a run with failures)
            for out in (real, ours):
                m = re.search(r"^  Socket errors: connect (\d+), read (\d+), write 0, "
                              r"timeout (\d+)$", out, re.M)
                assert m, (real, ours)
                errors = dict(zip(("connect", "read", "timeout"), map(int, m.groups()),
                                  strict=True))
                assert errors[column] > 0 and sum(errors.values()) == errors[column], \
                    (column, real, ours)


@needs_wrk
@pytest.mark.parametrize("delay_ms,done", [
    # (Whether a 700 ms answer beats a 1 s end is the wall clock's: on a
    # machine loaded to 12-14 it came after, in one tool or the other.)
    pytest.param(700, 1, marks=pytest.mark.timing), (5000, 0)])
def test_what_is_in_flight_at_the_end_is_not_counted_as_wrks(tmp_path, delay_ms, done):
    """wrk stops its threads at the duration's end: an answer due after it
    is not counted, and the run lasts the duration. The wrk mode gave it
    the loop's second of grace (`2 requests in 1.40s`, 1.43 a second,
    where wrk says `1 requests in 1.00s`, 1.00); with none answered it said
    `0 requests in 0.00us` and +/- Stdev 0.00%, where wrk prints -nan%
    (0 / 0) in both rows."""
    # (A server of its own: the answers left behind come after the run,
    # where the next test counts the shared one's requests.)
    with httpbench.Server() as srv:
        real, ours = both(["-t1", "-c1", "-d1s"], srv.url(f"/delay?ms={delay_ms}"), tmp_path)
    figures = []
    for out in (real, ours):
        rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("    ")}
        count = re.search(r"^  (\d+) requests in ([\d.]+)s, ", out, re.M)
        rps = re.search(r"^Requests/sec:\s+([\d.]+)$", out, re.M)
        assert count and rps, out
        took = float(count.group(2))
        assert 1.0 <= took < 1.15 and abs(float(rps.group(1)) - done / took) < 0.01, out
        figures.append((count.group(1), rows["Latency"].split()[-1], rows["Req/Sec"]))
    assert figures[0] == figures[1] and figures[0][0] == str(done), (real, ours)
    assert figures[0][1] == ("100.00%" if done else "-nan%"), real



@needs_wrk
def test_its_requests_are_wrks_byte_for_byte(tmp_path, scripted):
    """wrk's request is the request line and Host (and -H's fields): the
    mode's are the same bytes, with no User-Agent or Accept, which the
    server would otherwise parse in every request (the mode sent both,
    httpbench's own, before)."""
    seen = []
    for cmd in ([WRK], [sys.executable, "-m", "httpbench", "wrk"]):
        for extra in ([], ["-H", "Accept: text/html", "-H", "X-Y: 1"]):
            # (The first connection is the look before the run, as wrk's.)
            srv = scripted([("recv",)], [("recv",), ("send", OK)])
            subprocess.run([*cmd, "-t1", "-c1", "-d1s", *extra, f"http://127.0.0.1:{srv.port}/w"],
                           capture_output=True, cwd=tmp_path, timeout=60)
            # (The look's connection sends nothing, and may close after the
            # run's connection has sent its request: the request is the one
            # that is not empty.)
            sent = [raw for raw in srv.requests if raw]
            assert len(sent) == 1, srv.requests
            seen.append(sent[0].replace(b"%d" % srv.port, b"PORT"))
    assert seen[0] == seen[2] == b"GET /w HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n\r\n", seen
    fields = [sorted(raw.split(b"\r\n\r\n")[0].split(b"\r\n")) for raw in (seen[1], seen[3])]
    assert fields[0] == fields[1], seen

def test_wrks_formats():
    """units.c's formats, figure for figure."""
    assert format_time_us(635.91) == "635.91us" and format_time_us(890) == "0.89ms"
    assert format_time_us(12920) == "12.92ms" and format_time_us(1_500_000) == "1.50s"
    assert format_metric(56200) == "56.20k" and format_metric(900) == "0.90k"
    assert format_metric(800) == "800.00" and format_binary(17.76 * 1024 ** 3) == "17.76G"
    assert format_time_s(10) == "10s" and format_time_s(60) == "1m" and format_time_s(30) == "30s"


def test_a_duration_wrk_would_not_take_is_named_as_it_runs():
    """wrk takes whole seconds (and prints -d 90 as "2m", as here); -d 0.5
    or 500ms, taken here, printed "Running 0s test", -d 1.5 "Running 2s"."""
    for seconds, shown in ((0.5, "500ms"), (1.5, "1.5s"), (0.025, "25ms"), (10, "10s"),
                           (90, "2m")):
        assert header("http://h/", seconds, 1, 1).startswith(f"Running {shown} test @ http://h/\n")


def test_wrks_defaults_and_layout(tmp_path, server):
    r = hb("wrk", "-d", "1s", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["concurrency"] == 10 and d["threads"] == 2 and d["requests"] is None
    assert r.stdout.startswith(f"Running 1s test @ {server.url('/rnd?c=100')}\n"
                               "  2 threads and 10 connections\n")
    assert "Latency Distribution" not in r.stdout
    body, _, ours = r.stdout.partition("Transfer/sec:")
    assert "Client:" in ours and "Client:" not in body
    assert ours.split("\n", 1)[1].startswith("\n")  # httpbench's lines after a blank one


def test_the_output_options_work_in_wrk_mode(tmp_path, server):
    r = hb("wrk", "-t1", "-c2", "-d1s", "--json", "r.json", "--html", "r.html", "--log",
           "l.jsonl", "--hgrm", "h.hgrm", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    # Every request issued, each once: those in flight at the end (wrk's
    # stop) as cancelled.
    log = httpbench.read_log(tmp_path / "l.jsonl")
    assert len(log) == d["issued"] == d["complete"] + d["cancelled"] and d["complete"] > 0
    assert sum(rec.failure == "cancelled" for rec in log) == d["cancelled"] <= 2
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert "Value" in (tmp_path / "h.hgrm").read_text()


def test_latency_is_from_each_requests_send_not_its_connect_as_wrks(tmp_path):
    """wrk times a request from its write, once connected (wrk.c's
    c->start, set as the connection turns writable after its connect and
    TLS handshake): a connection's first request does not carry them,
    which httpbench's own latency counts (ab's habit). Over TLS, on a route
    that answers after 30 ms: the Latency row and the distribution are the
    run's processing (total less connect)."""
    with httpbench.Server(tls=True) as srv:
        r = hb("wrk", "-t1", "-c2", "-d1s", "--latency", "--json", "r.json",
               srv.url("/delay?ms=30"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = httpbench.Result.from_json((tmp_path / "r.json").read_text())
    assert d.complete > 2 and d.connects == 2 and d.connect_time.max > 0
    avg, _, most, _ = parse(r.stdout)["latency"]
    assert (avg, most) == (format_time_us(d.processing.mean * 1e6),
                           format_time_us(d.processing.max * 1e6)), r.stdout
    rows = dict(re.findall(r"^\s+(\d+)%\s+(\S+)$", r.stdout, re.M))
    assert rows["99"] == format_time_us(d.processing.percentile(99) * 1e6), r.stdout


def test_rate_is_wrk2s_open_loop(tmp_path, server):
    r = hb("wrk", "-t1", "-c4", "-d1s", "-R", "200", "--json", "r.json",
           server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["rate"] == 200 and 170 <= d["issued"] <= 215
    assert "intended start" in r.stdout


@pytest.mark.parametrize("args,words", [
    (["-t4", "-c2"], "connections must be >= threads"),
    (["-c", "ten"], "-c takes a whole number"),
    (["-d", "soon"], "-d takes a time"),
    (["-t", "0"], "-t must be"),
    (["--timeout", "-1"], "--timeout"),
])
def test_bad_values_are_usage_errors_with_nothing_sent(tmp_path, server, args, words):
    before = server.stats()["requests"]
    r = hb("wrk", *args, server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert server.stats()["requests"] == before


def test_a_lua_script_is_refused_naming_a_scenario(tmp_path, server):
    before = server.stats()["requests"]
    for flag in ("-s", "--script"):
        r = hb("wrk", flag, "post.lua", "-d1s", server.url("/rnd?c=10"), cwd=tmp_path)
        assert r.returncode == 2 and "-s" in r.stderr and "Scenario" in r.stderr, r.stderr
        assert "not honoured" in r.stderr and not r.stdout
    assert server.stats()["requests"] == before


def test_version_and_python_m(tmp_path):
    r = subprocess.run([sys.executable, "-m", "httpbench", "wrk", "-v"], capture_output=True,
                       text=True, cwd=tmp_path)
    assert r.returncode == 0 and "wrk 4.1's mode" in r.stdout


def test_the_manual_page_holds_the_table_made_from_the_flags():
    page = (Path(__file__).parents[2] / "docs" / "wrk.md").read_text()
    assert markdown(FLAGS, "wrk") in page, markdown(FLAGS, "wrk")


@needs_wrk
def test_credentials_in_the_url_are_not_sent_as_wrk_sends_none(tmp_path):
    """wrk sends no Authorization for http://user:pass@host/ (its Host is
    host:port); the mode sent Basic auth."""
    sent = []
    for tool in ([WRK], [sys.executable, "-m", "httpbench", "wrk"]):
        with recording() as (url, seen):
            creds = url.replace("http://", "http://u:p@")
            done = subprocess.run([*tool, "-t", "1", "-c", "1", "-d", "1", creds],
                                  capture_output=True, text=True, timeout=60, cwd=tmp_path,
                                  env=env_of(tool))
            assert done.returncode == 0 and seen, done.stderr
            host = url[len("http://"):].rstrip("/")
            sent.append({(h.get("Authorization"), h.get("Host") == host) for _, h, _ in seen})
    assert sent[0] == sent[1] == {(None, True)}, sent


def test_a_url_it_refuses_is_refused_before_the_running_line(tmp_path):
    """"Running 2s test @ ..." was printed, then the URL refused: now the
    refusal alone, nothing on standard output."""
    r = hb("wrk", "-c", "100", "-d", "2", "127.0.0.1:18801/x", cwd=tmp_path)
    assert r.returncode == 2 and not r.stdout, r.stdout
    assert r.stderr.startswith("httpbench wrk: only http:// and https:// URLs"), r.stderr
