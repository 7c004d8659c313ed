"""`httpbench ab ...`: ab 2.3's command line and report layout. Side by side
with the real ab (apache2-utils) against nginx and the embedded server:
the same counts and bytes for the same command line; ab's flags with ab's
defaults; the flags it cannot honour refused with nothing sent."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import httpbench
from helpers import env_of, hb, nginx, recording, side_by_side, tool_env
from httpbench.cli.ab import FLAGS
from httpbench.cli.flags import markdown

AB = shutil.which("ab")
needs_ab = pytest.mark.skipif(AB is None, reason="ab not installed (apt-get install apache2-utils)")

# What a script greps from ab's report: the label and a pattern for its value.
GREPPED = {
    "Complete requests": r"(\d+)",
    "Failed requests": r"(\d+)",
    "Non-2xx responses": r"(\d+)",
    "Keep-Alive requests": r"(\d+)",
    "Total transferred": r"(\d+) bytes",
    "HTML transferred": r"(\d+) bytes",
    "Total body sent": r"(\d+)",
    "Requests per second": r"([\d.]+) \[#/sec\] \(mean\)",
    "Time taken for tests": r"([\d.]+) seconds",
}
EXACT = ("Complete requests", "Failed requests", "Non-2xx responses", "Keep-Alive requests",
         "Total transferred", "HTML transferred")


def grep(out: str) -> dict[str, str | None]:
    found = {}
    for label, pattern in GREPPED.items():
        m = re.search(rf"^{label}:\s+{pattern}$", out, re.M)
        found[label] = m.group(1) if m else None
    return found


def labels(out: str) -> list[str]:
    """ab's block's labels in order (up to the blank line after its last
    table), each line's text before its colon."""
    block = out.split("\n\n\n", 1)[-1]
    return [m.group(1) for m in re.finditer(r"^([A-Z][A-Za-z /-]+):", block, re.M)
            if m.group(1) in LABELS]


LABELS = {"Server Software", "Server Hostname", "Server Port", "Document Path",
          "Document Length", "Concurrency Level", "Time taken for tests", "Complete requests",
          "Failed requests", "Non-2xx responses", "Keep-Alive requests", "Total transferred",
          "Total body sent", "HTML transferred", "Requests per second", "Time per request",
          "Transfer rate", "Connect", "Processing", "Waiting", "Total"}


def both(args: list[str], url: str, cwd: Path) -> tuple[str, str]:
    return side_by_side("ab", args, url, cwd, ours_ok=(0, 1))


# Count-bounded command lines, each flag ab honours here at least once.
COUNTED = [
    ["-n", "300", "-c", "4"],
    ["-n", "300", "-c", "4", "-k"],
    ["-n", "200", "-c", "1", "-k", "-q"],
    ["-n", "100", "-i", "-k"],
    ["-n", "100", "-c", "2", "-p", "{body}", "-T", "text/plain"],
    ["-n", "100", "-c", "2", "-u", "{body}", "-T", "application/octet-stream", "-k"],
    ["-n", "50", "-H", "Accept-Encoding: gzip", "-C", "a=1", "-C", "b=2", "-k"],
    ["-n", "100", "-c", "5", "-k", "-l", "-r"],
    ["-n", "100", "-m", "DELETE", "-A", "u:p"],
    ["-n", "120", "-c", "3", "-k", "-d", "-S", "-s", "10"],
    ["-n", "151", "-c", "7", "-v", "1", "-e", "p.csv"],
]


@pytest.mark.timing
@needs_ab
@pytest.mark.parametrize("args", COUNTED, ids=" ".join)
@pytest.mark.parametrize("path", ["/rnd", "/missing"])
def test_counts_and_bytes_equal_abs_against_nginx(tmp_path, args, path):
    """For every count-bounded command line, on a route that answers 200 and
    one that answers 404: the counts, Non-2xx, Keep-Alive requests and the
    bytes ab greps for are ab's, exactly."""
    (tmp_path / "body.txt").write_bytes(b"x" * 300)
    args = [a.format(body=tmp_path / "body.txt") for a in args]
    with nginx() as up:
        if up is None:
            pytest.skip("nginx not installed")
        port, _ = up
        a, h = both(args, f"http://127.0.0.1:{port}{path}", tmp_path)
    ga, gh = grep(a), grep(h)
    assert {k: ga[k] for k in EXACT} == {k: gh[k] for k in EXACT}, (a, h)
    assert ga["Complete requests"] is not None and gh["Requests per second"] is not None
    assert labels(h) == labels(a), (a, h)
    if "-p" in args or "-u" in args:
        # docs/ab.md: the requests differ in their User-Agent and in the
        # Connection field HTTP/1.1 says where ab's HTTP/1.0 does not (or
        # the reverse, under -k), nothing else.
        agent = len(f"httpbench/{httpbench.__version__}") - len("ApacheBench/2.3")
        field = (-len("Connection: Keep-Alive\r\n") if "-k" in args
                 else len("Connection: close\r\n"))
        sent = int(gh["Total body sent"] or 0) - int(ga["Total body sent"] or 0)
        assert sent == (agent + field) * int(ga["Complete requests"] or 0), (a, h)


def concurrency(args: list[str]) -> int:
    return int(args[args.index("-c") + 1]) if "-c" in args else 1


TIMED = [["-t", "1", "-c", "4", "-k"], ["-t", "1s", "-c", "2"], ["-c", "3", "-t", "1", "-k", "-q"]]


def progress_lines(args: list[str], url: str, cwd: Path) -> tuple[list[str], list[str]]:
    """What ab and `httpbench ab` write to stderr: ab's progress lines."""
    real = subprocess.run([str(AB), *args, url], capture_output=True, text=True, cwd=cwd,
                          env=tool_env(), timeout=120)
    ours = hb("ab", *args, url, cwd=cwd, timeout=120)
    assert real.returncode == 0 and ours.returncode == 0, (real.stderr, ours.stderr)
    return real.stderr.splitlines(), ours.stderr.splitlines()


@needs_ab
def test_progress_lines_are_abs(tmp_path):
    """ab's heartbeat: past 150 requests "Completed N requests" on stderr
    at every tenth (never more often than every 100), then "Finished N
    requests"; none with -q or at 150 or fewer (its "(be patient)....." on
    stdout then). Under -t, a line every 5,000 (a tenth of the 50,000 it
    plans), and Finished with the count it completed."""
    with httpbench.Server() as srv:
        url = srv.url("/rnd?c=100")
        for args in (["-n", "1000"], ["-n", "500", "-c", "5"], ["-n", "2345", "-k", "-c", "3"],
                     ["-n", "151"], ["-n", "150"], ["-n", "1000", "-q"]):
            real, ours = progress_lines(args, url, tmp_path)
            assert ours == real, (args, real, ours)
        assert progress_lines(["-n", "1000"], url, tmp_path)[1][-2:] == [
            "Completed 1000 requests", "Finished 1000 requests"]
        ours = hb("ab", "-t", "1", "-k", url, cwd=tmp_path)
    n = int(grep(ours.stdout)["Complete requests"] or 0)
    assert ours.stderr.splitlines() == [f"Completed {k} requests"
                                        for k in range(5000, n + 1, 5000)] + [
        f"Finished {n} requests"], ours.stderr


@pytest.mark.timing
@needs_ab
@pytest.mark.parametrize("args", TIMED, ids=" ".join)
def test_time_bounded_runs_agree_per_response(tmp_path, args):
    """ab's -t against nginx and the embedded server: bytes per response and
    status shares agree, and each grepped line parses with one pattern from
    both outputs. (The embedded server answers ab's HTTP/1.0 keep-alive
    request with a Connection: keep-alive header that httpbench's HTTP/1.1
    request needs not: there, with -k, the bodies are compared.)"""
    with nginx() as up, httpbench.Server() as srv:
        if up is None:
            pytest.skip("nginx not installed")
        urls = [f"http://127.0.0.1:{up[0]}/rnd", f"http://127.0.0.1:{up[0]}/missing",
                srv.url("/rnd?c=2048"), srv.url("/status/503")]
        for url in urls:
            a, h = both(args, url, tmp_path)
            ga, gh = grep(a), grep(h)
            for label in ("Complete requests", "Failed requests", "Total transferred",
                          "HTML transferred", "Requests per second", "Time taken for tests"):
                assert ga[label] is not None and gh[label] is not None, (label, a, h)
            n_a, n_h = int(ga["Complete requests"] or 0), int(gh["Complete requests"] or 0)
            assert n_a > 0 and n_h > 0, (a, h)
            whole = "-k" not in args or url.startswith(f"http://127.0.0.1:{up[0]}")
            for label in ("Total transferred", "HTML transferred") if whole else \
                    ("HTML transferred",):
                # httpbench's bytes are its complete responses' exactly; ab's
                # include what it had read of the responses in flight when
                # its time ran out (at most one a connection).
                per_h = int(gh[label] or 0) / n_h
                assert per_h == int(per_h), (label, h)
                extra = int(ga[label] or 0) - per_h * n_a
                assert 0 <= extra <= per_h * concurrency(args), (label, a, h)
            # ab counts a status when it reads it, so a response in flight
            # when its time ran out (at most one a connection) can be among
            # its Non-2xx but not its complete requests.
            share_h = int(gh["Non-2xx responses"] or 0) / n_h
            assert share_h in (0.0, 1.0), h
            extra = int(ga["Non-2xx responses"] or 0) - share_h * n_a
            assert 0 <= extra <= concurrency(args) * share_h, (a, h)
            assert labels(h) == labels(a), (a, h)


@pytest.mark.timing
@needs_ab
def test_the_same_counts_as_ab_against_the_embedded_server(tmp_path):
    (tmp_path / "b").write_bytes(b"y" * 2048)
    with httpbench.Server() as srv:
        for args in (["-n", "500", "-c", "5"], ["-n", "300", "-c", "3", "-p", str(tmp_path / "b")],
                     ["-n", "200", "-c", "2", "-i"]):
            url = srv.url("/echo" if "-p" in args else "/rnd?c=2048")
            a, h = both(args, url, tmp_path)
            assert {k: grep(a)[k] for k in EXACT} == {k: grep(h)[k] for k in EXACT}, (a, h)


@needs_ab
@pytest.mark.parametrize("keep_alive", [[], ["-k"]], ids=["close", "k"])
def test_a_chunked_answer_counts_abs_bodies(tmp_path, keep_alive):
    """ab's HTTP/1.0 requests get /chunked unframed and closed (RFC 9112
    section 6.1), httpbench's HTTP/1.1 ones chunked: the bodies and the
    document's length are ab's; the total counts, in each answer, the
    Transfer-Encoding field (28 bytes) and the one chunk's lines (12)
    where ab's has none, and with -k ab's Connection: close (19) where
    httpbench's has no Connection field."""
    args = ["-n", "200", "-c", "3", *keep_alive]
    with httpbench.Server() as srv:
        a, h = both(args, srv.url("/chunked?c=3000"), tmp_path)
    ga, gh = grep(a), grep(h)
    for label in ("Complete requests", "Failed requests", "HTML transferred"):
        assert ga[label] == gh[label], (label, a, h)
    assert re.search(r"^Document Length:\s+3000 bytes$", a, re.M), a
    assert re.search(r"^Document Length:\s+3000 bytes$", h, re.M), h
    extra = 28 + 12 - (19 if keep_alive else 0)
    assert int(gh["Total transferred"]) - int(ga["Total transferred"]) == 200 * extra, (a, h)
    if keep_alive:
        assert (ga["Keep-Alive requests"], gh["Keep-Alive requests"]) == ("0", "200")


def test_abs_defaults_one_request_and_no_keep_alive(tmp_path, server):
    r = hb("ab", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["requests"] == 1 and d["complete"] == 1 and d["concurrency"] == 1
    assert "Keep-Alive requests" not in r.stdout
    r = hb("ab", "-n", "20", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["connects"] == 20 and d["keepalive_requests"] == 0
    r = hb("ab", "-n", "20", "-k", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["connects"] == 1 and "Keep-Alive requests:    20" in r.stdout


def test_t_implies_50000_requests_unless_a_later_n(tmp_path, server):
    r = hb("ab", "-q", "-t", "1", "--json", "r.json", server.url("/delay?ms=50"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["requests"] == 50000
    hb("ab", "-q", "-n", "5", "-t", "1", "--json", "r.json", server.url("/rnd?c=1"),
       cwd=tmp_path)
    assert json.loads((tmp_path / "r.json").read_text())["requests"] == 50000
    hb("ab", "-q", "-t", "1", "-n", "5", "--json", "r.json", server.url("/rnd?c=1"),
       cwd=tmp_path)
    assert json.loads((tmp_path / "r.json").read_text())["requests"] == 5


@pytest.mark.parametrize("args,flag,words", [
    (["-n", "5", "-c", "10"], "-c 10", "-n 5"),
    (["-t", "500ms"], "-t", "whole seconds"),
    (["-s", "2m"], "-s", "whole seconds"),
    (["-n", "x"], "-n", "whole number"),
    (["-f", "TLS1.1"], "-f", "TLS1.2"),
    (["-p", "a", "-u", "b"], "-u", "Cannot mix PUT with other methods"),
    (["-A", "nocolon"], "-A", "user:password"),
    (["-Z", "AES128-SHA"], "-f, -Z and -E", "https://"),
])
def test_bad_values_are_usage_errors_with_nothing_sent(tmp_path, server, args, flag, words):
    before = server.stats()["requests"]
    r = hb("ab", *args, server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert flag in r.stderr and words in r.stderr, r.stderr
    assert server.stats()["requests"] == before


REFUSED = [f for f in FLAGS if f.refused]


@pytest.mark.parametrize("flag", REFUSED, ids=lambda f: f.names[0])
def test_a_flag_ab_has_and_httpbench_cannot_honour_is_refused(tmp_path, server, flag):
    before = server.stats()["requests"]
    args = [flag.names[0]] + (["x"] if flag.value else [])
    r = hb("ab", *args, "-n", "5", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert flag.names[0] in r.stderr and "not honoured" in r.stderr, r.stderr
    assert flag.here in r.stderr, r.stderr
    assert server.stats()["requests"] == before
    assert not r.stdout


def test_the_refusals_name_what_to_use_instead():
    here = {f.names[0]: f.here for f in REFUSED}
    assert "--html" in here["-w"]
    assert {"-B", "-w", "-x", "-y", "-z", "-I"} == set(here)  # (-b: socket_buffer)


GNUPLOT_HEAD = "starttime\tseconds\tctime\tdtime\tttime\twait"
GNUPLOT_ROW = re.compile(r"^(\w{3} \w{3} \d{2} \d{2}:\d{2}:\d{2} \d{4})\t(\d+)\t(\d+)\t(\d+)\t"
                         r"(\d+)\t(\d+)$")


def gnuplot_rows(path: Path) -> list[tuple[str, int, int, int, int, int]]:
    """ab -g's file: its header, then its rows, each held to ab's form
    (apr_ctime's start, the epoch's seconds, four whole milliseconds)."""
    lines = path.read_text().split("\n")
    assert lines[0] == GNUPLOT_HEAD and lines[-1] == "", lines
    rows = []
    for line in lines[1:-1]:
        m = GNUPLOT_ROW.match(line)
        assert m is not None, line
        rows.append((m[1], *(int(x) for x in m.groups()[1:])))
    return rows


@needs_ab
@pytest.mark.parametrize("keep", [[], ["-k"]], ids=["a connection each", "keep-alive"])
def test_g_writes_abs_gnuplot_file(tmp_path, keep):
    """-g writes ab's gnuplot file: a row a complete request, in the order
    of their times, beside the real ab's on a route that answers after 20
    ms: the same header and count, each row's start within the run (its
    words those of its seconds), its processing, total and wait at 20 ms
    or more, its total its connect and processing to a rounding's
    millisecond; a file that was there is written over."""
    with httpbench.Server() as srv:
        url = srv.url("/delay?ms=20")
        for name, cmd in (("real", [AB]), ("ours", [sys.executable, "-m", "httpbench", "ab"])):
            path = tmp_path / f"{name}.tsv"
            path.write_text("a file that was there\n")
            began = time.time()
            r = subprocess.run([*cmd, "-q", "-n", "12", "-c", "3", *keep, "-g", str(path), url],
                               capture_output=True, text=True, cwd=tmp_path,
                               env=tool_env() if name == "real" else None, timeout=60)
            ended = time.time()
            assert r.returncode == 0, r.stderr
            rows = gnuplot_rows(path)
            assert len(rows) == 12, (name, rows)
            for words, seconds, ctime, dtime, ttime, wait in rows:
                assert int(began) <= seconds <= ended, (name, rows)
                assert words == time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(seconds))
                assert dtime >= 20 and ttime >= 20 and wait >= 20, (name, rows)
                assert abs(ttime - ctime - dtime) <= 1, (name, rows)
            assert [row[4] for row in rows] == sorted(row[4] for row in rows), (name, rows)


def test_g_that_cannot_be_written_is_said_before_anything_is_sent(tmp_path, server):
    before = server.stats()["requests"]
    r = hb("ab", "-n", "5", "-g", str(tmp_path / "no" / "such.tsv"), server.url("/rnd?c=10"),
           cwd=tmp_path)
    assert r.returncode == 2 and "-g: cannot write" in r.stderr, r.stderr
    assert server.stats()["requests"] == before
    # A run that never starts (its name does not resolve) leaves no file it made.
    r = hb("ab", "-n", "5", "-g", "made.tsv", "http://no-such-host.invalid/", cwd=tmp_path)
    assert r.returncode == 1 and not (tmp_path / "made.tsv").exists(), r.stderr
    assert server.stats()["requests"] == before


def test_the_layout_is_abs_then_httpbenchs_after_a_blank_line(tmp_path, server):
    r = hb("ab", "-n", "200", "-c", "2", "-k", "-q", server.url("/status/404"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    ab_block, _, ours = out.partition("(longest request)\n")
    assert "Client CPU per request" not in ab_block and "Client CPU per request" in ours
    assert ours.startswith("\n"), ours
    assert "Non-2xx responses by status: 200 (404: 200)" in ours
    assert re.search(r"^Non-2xx responses:      200$", ab_block, re.M)
    assert "Percentage of the requests served" in ab_block


def test_d_S_l_and_v_change_the_report_as_abs(tmp_path, server):
    url = server.url("/rnd?c=100")
    out = hb("ab", "-n", "20", "-d", url, cwd=tmp_path).stdout
    assert "Percentage of the requests" not in out and "Connection Times" in out
    out = hb("ab", "-n", "20", "-S", url, cwd=tmp_path).stdout
    assert re.search(r"^\s+min\s+avg\s+max$", out, re.M) and "[+/-sd]" not in out
    out = hb("ab", "-n", "20", "-l", url, cwd=tmp_path).stdout
    assert "Document Length:        Variable" in out
    out = hb("ab", "-n", "20", "-v", "2", url, cwd=tmp_path).stdout
    assert "LOG: header received:\nHTTP/1.1 200 OK" in out
    out = hb("ab", "-V", cwd=tmp_path).stdout
    assert "ApacheBench 2.3's mode" in out


def test_the_output_options_work_in_ab_mode(tmp_path, server):
    r = hb("ab", "-n", "50", "-k", "-e", "p.csv", "--json", "r.json", "--html", "r.html",
           "--log", "l.csv", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.csv").read_text().startswith("Percentage served,Time in ms\n0,")
    assert json.loads((tmp_path / "r.json").read_text())["complete"] == 50
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert len(httpbench.read_log(tmp_path / "l.csv")) == 50


def test_nothing_completed_exits_1_where_ab_exits_0(tmp_path):
    r = hb("ab", "-n", "3", "http://127.0.0.1:1/", cwd=tmp_path)
    assert r.returncode == 1
    assert "Complete requests:      0" in r.stdout


def test_the_manual_page_holds_the_table_made_from_the_flags():
    page = (Path(__file__).parents[2] / "docs" / "ab.md").read_text()
    assert markdown(FLAGS, "ab") in page, markdown(FLAGS, "ab")


@pytest.mark.timing
@needs_ab
def test_through_a_proxy_and_over_tls_as_abs(tmp_path):
    """-X and -P through the embedded relay to nginx, and https:// with -f
    and -Z against the embedded TLS server (ab never checks its
    certificate): the same counts and bytes as ab's. (Without -k: the
    relay and the embedded server answer ab's HTTP/1.0 keep-alive with a
    header HTTP/1.1 needs not, docs/ab.md.)"""
    with nginx() as up, httpbench.Server(tls=True) as tls, \
            httpbench.Server(proxy=True) as relay:
        if up is None:
            pytest.skip("nginx not installed")
        via = relay.url()[len("http://"):].rstrip("/")
        direct = f"http://127.0.0.1:{up[0]}/rnd"
        for args, url in ((["-n", "300", "-c", "3", "-X", via], direct),
                          (["-n", "200", "-c", "2", "-X", via, "-P", "u:p"], direct),
                          (["-n", "200", "-c", "2", "-f", "TLS1.2", "-Z",
                            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256"],
                           tls.url("/rnd?c=2048")),
                          (["-n", "100", "-c", "2", "-f", "TLS1.3"], tls.url("/rnd?c=512"))):
            a, h = both(args, url, tmp_path)
            assert {k: grep(a)[k] for k in EXACT} == {k: grep(h)[k] for k in EXACT}, (a, h)
            assert grep(h)["Complete requests"] == args[1], h
            if "https" in url:
                # The version as ab says it (the suite may differ: without -Z
                # httpbench offers TLS 1.3's in browsers' order, ab OpenSSL's).
                version = [re.search(r"^SSL/TLS Protocol:\s+(TLSv[\d.]+),", out, re.M)
                           for out in (a, h)]
                assert version[0] and version[1], (a, h)
                asked = "TLSv" + args[args.index("-f") + 1][len("TLS"):]
                assert version[0].group(1) == version[1].group(1) == asked, (a, h)


Sent = list[tuple[str, dict[str, str], bytes]]


def sent_by(tool: list[str], args: list[str],
            cwd: Path) -> tuple[subprocess.CompletedProcess[str], Sent]:
    """What `tool args URL` sent to a recording server, and how it ended."""
    with recording() as (url, seen):
        done = subprocess.run([*tool, *args, url], capture_output=True, text=True, timeout=60,
                              cwd=cwd, env=env_of(tool))
        return done, list(seen)


HB_AB = [sys.executable, "-m", "httpbench", "ab"]


@needs_ab
@pytest.mark.parametrize("args", [
    ["-C", "a=1", "-C", "b=2"],
    ["-i", "-m", "PUT"],
    ["-p", "{body}", "-m", "GET"],
    ["-m", "X", "-m", "DELETE"],
], ids=" ".join)
def test_what_ab_sends_where_its_help_and_its_code_differ(tmp_path, args):
    """ab keeps the last -C (its help says repeatable), lets a later -m
    name the method of -i or -p (-p's body still sent), the last -m
    wins: the same cookie, method and body as ab's."""
    (tmp_path / "body.txt").write_bytes(b"hello\n")
    args = [a.replace("{body}", str(tmp_path / "body.txt")) for a in args]
    (a_done, a_seen), (h_done, h_seen) = (sent_by(t, ["-n", "1", *args], tmp_path)
                                          for t in ([AB], HB_AB))
    assert a_done.returncode == 0 and h_done.returncode == 0, (a_done.stderr, h_done.stderr)
    assert len(a_seen) == len(h_seen) == 1
    (am, ah, ab_body), (hm, hh, hb_body) = a_seen[0], h_seen[0]
    assert (am, ab_body) == (hm, hb_body)
    assert ah.get("Cookie") == hh.get("Cookie")


@needs_ab
@pytest.mark.parametrize("args,said", [
    (["-m", "PUT", "-i"], "Cannot mix HEAD with other methods"),
    (["-m", "GET", "-p", "{body}"], "Cannot mix POST with other methods"),
    (["-m", "GET", "-u", "{body}"], "Cannot mix PUT with other methods"),
    (["-i", "-p", "{body}"], "Cannot mix POST with other methods"),
    (["-p", "{body}", "-i"], "Cannot mix HEAD with other methods"),
    (["-p", "{body}", "-u", "{body}"], "Cannot mix PUT with other methods"),
], ids=" ".join)
def test_methods_that_do_not_mix_are_refused_as_ab_refuses_them(tmp_path, args, said):
    (tmp_path / "body.txt").write_bytes(b"hello\n")
    args = [a.replace("{body}", str(tmp_path / "body.txt")) for a in args]
    (a_done, a_seen), (h_done, h_seen) = (sent_by(t, ["-n", "1", *args], tmp_path)
                                          for t in ([AB], HB_AB))
    assert a_done.returncode != 0 and said in a_done.stderr and not a_seen, a_done.stderr
    assert h_done.returncode == 2 and said in h_done.stderr and not h_seen, h_done.stderr
    assert h_done.stderr.count("\n") == 1 and not h_done.stdout


@needs_ab
@pytest.mark.parametrize("args,bounded_by", [
    (["-n", "20", "-kt", "1"], "time"),
    (["-t", "1", "-kn", "20"], "count"),
    (["-kn", "20", "-t1"], "time"),
], ids=" ".join)
def test_the_later_of_n_and_t_counts_in_combined_flags_too(tmp_path, server, args, bounded_by):
    """-kt 1 is -k then -t (getopt's reading): ab runs for the second, and
    "-t 1 -kn 20" sends 20; the order is argparse's own, not a guess from
    the words."""
    url = server.url("/delay?ms=10")
    counts = []
    for tool in ([AB], HB_AB):
        before = server.stats()["requests"]
        done = subprocess.run([*tool, "-q", *args, url], capture_output=True, text=True,
                              timeout=60, cwd=tmp_path, env=env_of(tool))
        assert done.returncode == 0, done.stderr
        counts.append(server.stats()["requests"] - before)
    if bounded_by == "count":
        assert counts == [20, 20], counts
    else:  # a second of 10 ms answers on one connection: far more than 20
        assert min(counts) > 40, counts


def test_an_error_after_the_banner_starts_a_line_of_its_own(tmp_path):
    """A setting run() refuses is refused before "Benchmarking ... (be
    patient)" is printed; one found only by running (a name that does not
    resolve) comes after the line is ended, not stuck to its end."""
    env = env_of(HB_AB)
    both = subprocess.run([*HB_AB, "-n", "5", "--log-sample", "0.5", "http://127.0.0.1:1/"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60, cwd=tmp_path, env=env)
    assert both.returncode == 2 and both.stdout.startswith("httpbench ab: --log-sample"), \
        both.stdout
    assert "Benchmarking" not in both.stdout
    both = subprocess.run([*HB_AB, "-n", "5", "http://no-such-host.invalid/"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=60, cwd=tmp_path, env=env)
    assert both.returncode == 1, both.stdout
    lines = both.stdout.splitlines()
    assert lines[-2] == "Benchmarking no-such-host.invalid (be patient)", lines
    assert lines[-1].startswith("httpbench ab: cannot resolve no-such-host.invalid"), lines


@needs_ab
def test_over_tls_each_connection_makes_a_full_handshake_as_abs(tmp_path):
    """ab makes a full handshake on every connection; the mode resumed
    sessions (10 full of 2,000) and ran 2.7x ab's req/s. Now it does as
    ab, with ab's TLS 1.3 suite (OpenSSL's order: AES-256 first), and
    --tls-resume, httpbench's own, resumes."""
    with httpbench.Server(tls=True) as tls:
        url = tls.url("/rnd?c=64")
        a, h = both(["-n", "200", "-c", "2"], url, tmp_path)
        suite = [re.search(r"^SSL/TLS Protocol:\s+(.*)$", out, re.M) for out in (a, h)]
        assert suite[0] and suite[1] and suite[0].group(1) == suite[1].group(1), (a, h)
        assert "TLS_AES_256_GCM_SHA384" in suite[1].group(1), h
        r = hb("ab", "-n", "200", "-c", "2", "--json", "r.json", url, cwd=tmp_path)
        d = json.loads((tmp_path / "r.json").read_text())
        assert r.returncode == 0 and d["connects"] == 200, r.stderr
        assert d["tls_resumed_handshakes"] == 0, d["tls_resumed_handshakes"]
        r = hb("ab", "-n", "200", "-c", "2", "--tls-resume", "--json", "r.json", url,
               cwd=tmp_path)
        d = json.loads((tmp_path / "r.json").read_text())
        assert r.returncode == 0 and d["tls_resumed_handshakes"] >= 190, d
