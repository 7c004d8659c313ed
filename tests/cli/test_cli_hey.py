"""`httpbench hey ...`: hey 0.1.4's command line (Go's single-dash flags)
and report layout. Side by side with the real hey against nginx and the
embedded server: the same statuses and body bytes for the same count-bounded
command line, per response for a duration; every line a script greps
parsed by one pattern from both; -o refused with nothing sent."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import httpbench
from helpers import env_of, free_port, grep_each, hb, nginx, recording, side_by_side
from httpbench.cli.flags import markdown
from httpbench.cli.hey import FLAGS

HEY = shutil.which("hey")
needs_hey = pytest.mark.skipif(HEY is None, reason="hey not installed (apt-get install hey)")

PATTERNS = {
    "total": r"^  Total:\t([\d.]+) secs$",
    "slowest": r"^  Slowest:\t([\d.]+) secs$",
    "fastest": r"^  Fastest:\t([\d.]+) secs$",
    "average": r"^  Average:\t([\d.]+) secs$",
    "rps": r"^  Requests/sec:\t([\d.]+)$",
    "histogram": r"^Response time histogram:$",
    "p50": r"^  50% in ([\d.]+) secs$",
    "p99": r"^  99% in ([\d.]+) secs$",
    "details": r"^  DNS\+dialup:\t([\d.]+) secs, ([\d.]+) secs, ([\d.]+) secs$",
    "wait": r"^  resp wait:\t([\d.]+) secs, ([\d.]+) secs, ([\d.]+) secs$",
}


def parse_statuses(out: str) -> dict[int, int]:
    return {int(c): int(n) for c, n in re.findall(r"^  \[(\d{3})\]\t(\d+) responses$", out, re.M)}


def parse(out: str) -> dict[str, object]:
    found: dict[str, object] = dict(grep_each(PATTERNS, out))
    found["statuses"] = parse_statuses(out)
    data = re.search(r"^  Total data:\t(\d+) bytes$", out, re.M)
    size = re.search(r"^  Size/request:\t(\d+) bytes$", out, re.M)
    found["data"] = int(data.group(1)) if data else 0
    found["size"] = int(size.group(1)) if size else 0
    return found


def both(args: list[str], url: str, cwd: Path) -> tuple[str, str]:
    return side_by_side("hey", args, url, cwd)


# Count-bounded command lines from hey's help, each honoured flag once.
COUNTED = [
    ["-n", "200", "-c", "10"],
    ["-n", "300", "-c", "30", "-disable-keepalive"],
    ["-n", "100", "-c", "5", "-m", "HEAD"],
    ["-n", "100", "-c", "4", "-m", "POST", "-d", "hello", "-T", "text/plain"],
    ["-n", "100", "-c", "4", "-m", "put", "-D", "{body}"],
    ["-n", "200", "-c", "20", "-H", "X-A: 1", "-H", "X-B: 2", "-A", "text/plain"],
    ["-n", "100", "-c", "2", "-a", "user:pass", "-host", "localhost"],
    ["-n", "200", "-c", "10", "-cpus", "1", "-disable-compression"],
    ["-n", "100", "-c", "10", "-q", "200"],
    ["-n", "100", "-c", "5", "-t", "5", "-disable-redirects", "-h2"],
    ["-c", "2", "-n", "100"],
]


@pytest.mark.timing
@needs_hey
@pytest.mark.parametrize("args", COUNTED, ids=" ".join)
def test_statuses_and_bytes_equal_heys_against_nginx(tmp_path, args):
    (tmp_path / "body").write_bytes(b"z" * 500)
    args = [a.format(body=tmp_path / "body") for a in args]
    with nginx() as up:
        if up is None:
            pytest.skip("nginx not installed")
        for path in ("/rnd", "/missing"):
            real, ours = both(args, f"http://127.0.0.1:{up[0]}{path}", tmp_path)
            fr, fo = parse(real), parse(ours)
            n = int(args[args.index("-n") + 1])
            assert fr["statuses"] == fo["statuses"] and sum(fo["statuses"].values()) == n, \
                (real, ours)
            if "HEAD" in args:
                # hey counts a HEAD answer's Content-Length as data it never
                # received; httpbench counts the bytes that came (none).
                assert fo["data"] == 0 and fr["data"] == n * fr["size"], (real, ours)
            else:
                assert (fr["data"], fr["size"]) == (fo["data"], fo["size"]), (real, ours)


@pytest.mark.timing
@needs_hey
def test_a_duration_agrees_per_response_on_both_servers(tmp_path):
    with nginx() as up, httpbench.Server() as srv:
        if up is None:
            pytest.skip("nginx not installed")
        for url in (f"http://127.0.0.1:{up[0]}/rnd", srv.url("/rnd?c=2048"),
                    srv.url("/status/503")):
            real, ours = both(["-z", "1s", "-c", "10"], url, tmp_path)
            fr, fo = parse(real), parse(ours)
            assert fr["size"] == fo["size"] and set(fr["statuses"]) == set(fo["statuses"]), \
                (real, ours)


@pytest.mark.timing
@needs_hey
def test_the_same_statuses_and_bytes_on_the_embedded_server(tmp_path):
    with httpbench.Server() as srv:
        for args, url in ((["-n", "500", "-c", "5"], srv.url("/rnd?c=2048")),
                          (["-n", "300", "-c", "3", "-m", "POST", "-d", "x" * 100],
                           srv.url("/echo")),
                          (["-n", "200", "-c", "4"], srv.url("/status/404"))):
            real, ours = both(args, url, tmp_path)
            fr, fo = parse(real), parse(ours)
            assert (fr["statuses"], fr["data"], fr["size"]) == \
                (fo["statuses"], fo["data"], fo["size"]), (real, ours)


DETAILS = ("  Slowest:", "  Fastest:", "  Average:", "  DNS+dialup:", "  DNS-lookup:",
           "  resp wait:", "  resp read:")


@needs_hey
def test_with_nothing_answered_the_means_are_heys_nan(tmp_path):
    """No server on the port: hey prints its report with each mean " NaN"
    (Go's %4.4f of a mean of nothing); httpbench printed Python's " nan"
    in Average and 0.0000 for DNS-lookup's and resp read's. Each line's
    first figure is now hey's."""
    real, ours = side_by_side("hey", ["-n", "10", "-c", "2"], f"http://127.0.0.1:{free_port()}/",
                              tmp_path, ours_ok=(1,))

    def firsts(out: str) -> list[str]:
        return [line.split("\t")[1].split(" secs")[0] for line in out.splitlines()
                if line.startswith(DETAILS)]
    assert firsts(real) == firsts(ours) == ["0.0000", "0.0000"] + [" NaN"] * 5, (real, ours)


@needs_hey
@pytest.mark.parametrize("timeout,outcome", [([], {200: 1}), (["-t", "1"], {})])
def test_what_is_in_flight_at_the_end_of_z_is_waited_for_as_heys(tmp_path, timeout, outcome):
    """hey's workers finish the request they are in when -z ends, bounded
    by -t: a 2 s answer due after a 1 s run is counted and Total runs to
    it; under -t 1 it times out, an error. The hey mode gave it the loop's
    second of grace and cancelled it: Total 1.0000 secs and no response,
    where hey says 2.00 secs and 1 response."""
    # (A server of its own: an answer left behind comes after the run,
    # where the next test counts the shared one's requests.)
    with httpbench.Server() as srv:
        real, ours = side_by_side("hey", ["-z", "1s", "-c", "1", *timeout],
                                  srv.url("/delay?ms=2000"), tmp_path,
                                  ours_ok=(0,) if outcome else (1,))  # (1: a request failed)
    took = 2.0 if outcome else 1.0
    for out in (real, ours):
        total = re.search(PATTERNS["total"], out, re.M)
        assert total and took <= float(total.group(1)) < took + 0.3, (real, ours)
        assert parse_statuses(out) == outcome, (real, ours)
    if not outcome:
        assert "Client.Timeout exceeded" in real and "[1]\ttimeout" in ours, (real, ours)


@needs_hey
def test_the_latency_rows_are_the_ones_hey_picks(tmp_path, server):
    """hey walks its sorted latencies giving each percentile the first one
    whose index i has i * 100 / n at it, one each: under 100 responses some
    rows get none and print `0% in 0.0000 secs` (3 responses: 10% and 25%
    only, the 2nd and 3rd fastest). The hey mode printed every row."""
    for n in (1, 3, 7, 20, 150):
        real, ours = both(["-n", str(n), "-c", "1"], server.url("/delay?ms=3"), tmp_path)
        rows = [re.findall(r"^  (\d+)% in (\d\.\d{4}) secs$", out, re.M) for out in (real, ours)]
        assert [p for p, _ in rows[0]] == [p for p, _ in rows[1]], (n, real, ours)
        # (The figures are each run's own; a row with none is 0 in both.)
        for (_, a), (_, b) in zip(*rows, strict=True):
            assert (a == "0.0000") == (b == "0.0000"), (n, real, ours)


@needs_hey
def test_the_histogram_counts_the_fastest_and_the_slowest_at_the_ends_as_heys(tmp_path, server):
    """hey's histogram has eleven marks, the fastest, ten equal steps, the
    slowest, and counts a response at the first mark at or above it: the
    fastest at the first mark and the slowest at the last, so neither is
    empty. The mode counted each bucket of its histogram by its middle,
    which put the fastest one mark up and left the first at 0 whenever
    the fastest lay below its bucket's middle (half the runs: four here)."""
    for n in (1, 2, 300, 300, 300, 300):
        for out in both(["-n", str(n), "-c", "2" if n > 1 else "1"], server.url("/delay?ms=2"),
                        tmp_path):
            counts = [int(c) for c in re.findall(r"^  \d\.\d{3} \[(\d+)\]\t\|", out, re.M)]
            assert len(counts) == 11 and sum(counts) == n, out
            assert counts[0] >= 1 and counts[-1] >= (1 if n > 1 else 0), out


def test_heys_defaults_and_headers(tmp_path, server):
    r = hb("hey", "--json", "r.json", "--log", "l.csv", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["requests"] == 200 and d["concurrency"] == 50 and d["complete"] == 200
    # Go's durations, -n ignored under -z, the rate q x c.
    r = hb("hey", "-z", "1s", "-n", "7", "-c", "4", "-q", "50", "--json", "r.json",
           server.url("/rnd?c=10"), cwd=tmp_path)
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["requests"] is None and d["rate"] == 200 and 170 <= d["issued"] <= 215


def test_hey_sends_heys_headers(tmp_path):
    """User-Agent hey/0.0.1, Content-Type text/html, Accept-Encoding gzip,
    and Accept only from -A: the echo server answers what it was sent."""
    seen = []
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            seen.append(dict(self.headers))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        r = hb("hey", "-n", "2", "-c", "1", "-host", "example.test", "-A", "text/plain",
               f"http://127.0.0.1:{httpd.server_address[1]}/", cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        r = hb("hey", "-n", "1", "-c", "1", f"http://127.0.0.1:{httpd.server_address[1]}/",
               cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    finally:
        httpd.shutdown()
    h = seen[0]
    assert h["User-Agent"] == "hey/0.0.1" and h["Content-Type"] == "text/html"
    assert h["Accept-Encoding"] == "gzip" and h["Accept"] == "text/plain"
    assert h["Host"] == "example.test"
    # Without -A no Accept, as hey's Go client (the mode sent ab's */*).
    assert sorted(seen[2]) == ["Accept-Encoding", "Content-Type", "Host", "User-Agent"], seen


def test_z_0_is_heys_default_no_duration(tmp_path, server):
    """hey's -z defaults to 0, no duration: -z 0 runs -n's requests, as
    hey runs them."""
    r = hb("hey", "-z", "0", "-n", "6", "-c", "2", "--json", "r.json", server.url("/rnd?c=10"),
           cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert (d["requests"], d["complete"]) == (6, 6)  # (under a duration, requests is None)


@pytest.mark.parametrize("args,words", [
    (["-n", "5", "-c", "10"], "-n cannot be less than -c"),
    (["-z", "soon"], "-z takes a time"),
    (["-z", "nan"], "-z must be a number of seconds above 0"),
    (["-q", "fast"], "-q takes requests per second"),
    (["-q", "nan"], "-q takes a finite rate"),
    (["-q", "inf"], "-q takes a finite rate"),
    (["-q", "-5"], "-q takes a finite rate"),
    (["-q", "1e300"], "-q 1e300 x 50 connections"),
    (["-d", "a", "-D", "b"], "-d and -D"),
    (["-a", "nocolon"], "-a takes username:password"),
    (["-t", "-1"], "-t takes a whole number"),
])
def test_bad_values_are_usage_errors_with_nothing_sent(tmp_path, server, args, words):
    before = server.stats()["requests"]
    r = hb("hey", *args, server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert server.stats()["requests"] == before


HEY_CSV_HEAD = "response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read," \
    "status-code,offset"
HEY_ROW = re.compile(r"^(\d+\.\d{4}),(\d+\.\d{4}),(\d+\.\d{4}),(\d+\.\d{4}),(\d+\.\d{4}),"
                     r"(\d+\.\d{4}),(\d{3}),(\d+\.\d{4})$")


def csv_rows(out: str) -> list[tuple[float, ...]]:
    """hey -o csv's output: its header, then its rows, each held to hey's
    form (seven figures with four decimals about a status)."""
    lines = out.split("\n")
    assert lines[0] == HEY_CSV_HEAD and lines[-1] == "", out
    rows = []
    for line in lines[1:-1]:
        m = HEY_ROW.match(line)
        assert m is not None, line
        rows.append(tuple(float(x) for x in m.groups()))
    return rows


@needs_hey
def test_o_csv_is_heys_rows_a_response(tmp_path):
    """-o csv prints hey's rows in place of its report: a response each,
    in the order they came, beside the real hey's on a route that answers
    after 20 ms: the same header, count and statuses, each response's time
    over 20 ms and, in the mode's, its parts (the connect, the wait for the
    first byte, the read) adding up to it, the offsets within the run; and
    404s, a connection each, are rows too, as hey's."""
    with httpbench.Server() as srv:
        real, ours = both(["-n", "12", "-c", "3", "-o", "csv"], srv.url("/delay?ms=20"), tmp_path)
        posts = both(["-n", "6", "-c", "2", "-o", "csv", "-disable-keepalive"],
                     srv.url("/status/404"), tmp_path)
    for out in (real, ours):
        rows = csv_rows(out)
        assert len(rows) == 12 and {r[6] for r in rows} == {200}, out
        assert all(r[0] >= 0.0195 and r[7] < 1.0 for r in rows), out
    for r in csv_rows(ours):
        assert abs(r[0] - (r[1] + r[2] + r[3] + r[4] + r[5])) <= 0.00025, ours
    assert [len(csv_rows(x)) for x in posts] == [6, 6], posts
    assert {r[6] for x in posts for r in csv_rows(x)} == {404}, posts


@needs_hey
def test_n_not_a_multiple_of_c_is_n_over_c_a_worker_as_heys(tmp_path, server):
    """hey's workers each run n / c requests, the remainder dropped: -n 5
    -c 2 is 4 responses (the mode ran 5)."""
    real, ours = both(["-n", "5", "-c", "2"], server.url("/rnd?c=10"), tmp_path)
    assert parse_statuses(real) == parse_statuses(ours) == {200: 4}, (real, ours)


def test_o_other_than_csv_is_refused(tmp_path, server):
    """hey prints another -o as a Go template of its report (`-o json`
    prints `json`): refused, nothing sent."""
    before = server.stats()["requests"]
    r = hb("hey", "-o", "json", "-n", "10", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2 and "-o: csv is the only output type" in r.stderr, r.stderr
    assert not r.stdout and server.stats()["requests"] == before


def test_the_manual_page_holds_the_table_made_from_the_flags():
    page = (Path(__file__).parents[2] / "docs" / "hey.md").read_text()
    assert markdown(FLAGS, "hey") in page, markdown(FLAGS, "hey")


@pytest.mark.timing
@needs_hey
def test_h2_over_tls_as_heys(tmp_path, pki):
    """-h2 against nginx over TLS (h2 by ALPN, the certificate unchecked as
    hey's client leaves it): the same statuses and body bytes."""
    tls = f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};"
    with nginx(tls=tls, http2=True) as up:
        if up is None:
            pytest.skip("nginx not installed")
        for args in (["-n", "200", "-c", "4", "-h2"], ["-n", "100", "-c", "2"]):
            for path in ("/rnd", "/missing"):
                real, ours = both(args, f"https://127.0.0.1:{up[0]}{path}", tmp_path)
                fr, fo = parse(real), parse(ours)
                assert (fr["statuses"], fr["data"], fr["size"]) == \
                    (fo["statuses"], fo["data"], fo["size"]), (real, ours)


@needs_hey
@pytest.mark.parametrize("args", [
    ["-m", "HEAD"],
    ["-H", "Range: bytes=0-9"],
    ["-H", "Accept-Encoding: br"],
    [],
    ["-disable-compression"],
], ids=" ".join)
def test_accept_encoding_is_sent_as_gos_client_sends_it(tmp_path, args):
    """Go's transport asks for gzip itself, except on HEAD, beside a Range
    or an Accept-Encoding of the caller's, or when told not to: the mode
    sent it on HEAD and with a Range (23 bytes a request more in nginx's
    log). The same fields as hey's, request for request."""
    sent = []
    for tool in ([HEY], [sys.executable, "-m", "httpbench", "hey"]):
        with recording() as (url, seen):
            done = subprocess.run([*tool, "-n", "2", "-c", "1", *args, url],
                                  capture_output=True, text=True, timeout=60, cwd=tmp_path,
                                  env=env_of(tool))
            assert done.returncode == 0, done.stderr
            sent.append([h.get("Accept-Encoding") for _, h, _ in seen])
    assert sent[0] == sent[1] and len(sent[0]) == 2, sent


@needs_hey
def test_h2_sends_every_worker_over_one_connection_as_hey(tmp_path):
    """hey's workers share one Go client, whose HTTP/2 transport carries
    them all over one connection, a stream each (hey dials a TLS
    connection per worker at the start and keeps one, docs/hey.md); the
    mode opened -c connections."""
    counts = []
    for tool in ([HEY], [sys.executable, "-m", "httpbench", "hey"]):
        with httpbench.Server(tls=True) as tls:
            done = subprocess.run([*tool, "-h2", "-n", "100", "-c", "5",
                                   tls.url("/rnd?c=100")], capture_output=True, text=True,
                                  timeout=60, cwd=tmp_path, env=env_of(tool))
            assert done.returncode == 0 and "[200]\t100 responses" in done.stdout, done.stdout
            s = tls.stats()
            counts.append((s["h2_connections"], s["h2_streams"]))
            if tool[0] != HEY:
                assert s["connections"] == 1, s
    assert counts[0] == counts[1] == (1, 100), counts
