"""The command line takes the habits of ab, wrk, wrk2 and hey: time units by
every letter, -i, -A, -C, -T, -v 2, concurrency 1 by default, Non-2xx
broken down, --help naming them."""

from __future__ import annotations

import base64
import json
import time

import pytest

import httpbench
from helpers import OK, hb


@pytest.mark.parametrize("args,seconds", [
    (["-t", "1s"], 1.0), (["-t", "0.8"], 0.8), (["-d", "1s"], 1.0), (["--duration", "900ms"], 0.9),
    (["-z", "1"], 1.0),
])
def test_durations_take_units_by_every_letter(tmp_path, server, args, seconds):
    t0 = time.monotonic()
    r = hb(*args, "-q", "-c", "2", "--json", "r.json", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["requests"] is None and d["complete"] > 50
    assert seconds * 0.9 < d["time_taken"] < seconds + 1.2
    assert time.monotonic() - t0 < seconds + 10


def test_a_bare_small_t_with_c_and_no_n_warns_about_threads(tmp_path, server):
    """wrk's -t4 is four threads; here -t keeps ab's meaning and says so."""
    r = hb("-t1", "-c2", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "-t 1 is ab's time limit, 1 s; for 1 threads, as in wrk, use --threads 1" in r.stderr
    r = hb("-t", "1s", "-c2", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert "--threads" not in r.stderr


def test_d_no_longer_swallows_its_value_as_the_url(tmp_path, server):
    r = hb("-d", "10s", "-c", "1", "-n", "20", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Complete requests:      20" in r.stdout  # -n ended it first


def test_wrk2_rate_and_wrk_latency_are_accepted(tmp_path, server):
    r = hb("-R", "200", "-d", "1s", "-c", "4", "--latency", "-q", "--json", "-",
           server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["rate"] == 200 and 170 <= d["issued"] <= 215
    assert "Target rate:" in r.stderr  # the report went to stderr


def test_i_sends_head_and_reports_document_length_0(tmp_path, server):
    """Item 8: a HEAD run's document length is 0, not None."""
    r = hb("-i", "-n", "30", "-q", "--json", "r.json", server.url("/rnd?c=100"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["method"] == "HEAD" and d["document_length"] == 0 and d["body_bytes"] == 0
    res = httpbench.run(server.url("/rnd?c=100"), "HEAD", requests=10, progress=False)
    assert res.document_length == 0


def test_basic_auth_cookies_and_default_content_type_reach_the_server(tmp_path, scripted):
    post = tmp_path / "body"
    post.write_bytes(b"abc")
    srv = scripted([("recv",), ("send", OK)])
    r = hb("-n", "1", "-q", "-A", "alice:s3cret", "-C", "a=1", "-C", "b=2", "-p", str(post),
           f"http://127.0.0.1:{srv.port}/x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    (raw,) = srv.requests
    head = raw.split(b"\r\n\r\n")[0].decode().split("\r\n")
    assert head[0] == "POST /x HTTP/1.1"
    assert f"Authorization: Basic {base64.b64encode(b'alice:s3cret').decode()}" in head
    assert "Cookie: a=1; b=2" in head
    assert "Content-Type: text/plain" in head  # ab's default for -p
    assert f"User-Agent: httpbench/{httpbench.__version__}" in head and "Accept: */*" in head


def test_run_sends_user_agent_and_accept_unless_given(scripted):
    srv = scripted([("recv",), ("send", OK)], [("recv",), ("send", OK)])
    url = f"http://127.0.0.1:{srv.port}/"
    httpbench.run(url, requests=1, progress=False)
    httpbench.run(url, headers={"user-agent": "x/1", "ACCEPT": "text/html"}, requests=1,
                  progress=False)
    first, second = (raw.split(b"\r\n\r\n")[0].split(b"\r\n")[1:] for raw in srv.requests)
    agent = b"User-Agent: httpbench/" + httpbench.__version__.encode()
    assert sorted(first) == sorted([agent, b"Accept: */*", b"Host: 127.0.0.1:%d" % srv.port])
    assert sorted(second) == sorted([b"user-agent: x/1", b"ACCEPT: text/html",
                                     b"Host: 127.0.0.1:%d" % srv.port])



def test_none_leaves_out_user_agent_or_accept_and_nothing_else(scripted):
    """A header given None is not sent: the User-Agent or Accept a run
    adds left out (as requests' None), in a Scenario's Request too; None
    for another name, which nothing adds, is a ValueError before any
    connection (a TypeError from the request builder before)."""
    srv = scripted(*[[("recv",), ("send", OK)]] * 3)
    url = f"http://127.0.0.1:{srv.port}/"
    httpbench.run(url, headers={"Accept": None, "X-A": "1"}, requests=1, progress=False)
    httpbench.run(url, headers=[("user-agent", None), (b"Accept", None)], requests=1,
                  progress=False)
    httpbench.run(url, scenario=httpbench.Scenario([httpbench.Request(
        "GET", "/s", headers={"ACCEPT": None})]), requests=1, progress=False)
    for name in ("Host", "X-A", "Content-Length"):
        with pytest.raises(ValueError, match=f"None leaves out User-Agent or Accept.*{name}"):
            httpbench.run(url, headers={name: None}, requests=1, progress=False)
    host = b"Host: 127.0.0.1:%d" % srv.port
    agent = b"User-Agent: httpbench/" + httpbench.__version__.encode()
    fields = [raw.split(b"\r\n\r\n")[0].split(b"\r\n")[1:] for raw in srv.requests]
    assert [sorted(f) for f in fields] == [sorted([b"X-A: 1", agent, host]), [host],
                                           sorted([agent, host])]
    assert srv.connections == 3

def test_credentials_in_the_url_become_basic_auth(scripted):
    srv = scripted([("recv",), ("send", OK)])
    r = httpbench.run(f"http://bob:p%40ss@127.0.0.1:{srv.port}/", requests=1, progress=False)
    assert r.complete == 1 and "p%40ss" not in r.url and "***" in r.url
    (raw,) = srv.requests
    assert f"Authorization: Basic {base64.b64encode(b'bob:p@ss').decode()}".encode() in raw


def test_v2_prints_the_first_response_head(tmp_path, server):
    r = hb("-v", "2", "-n", "5", "-q", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("LOG: header received:\nHTTP/1.1 200 OK\n")
    assert "Content-Length: 10\n" in r.stdout


def test_defaults_are_concurrency_1(tmp_path, server):
    r = httpbench.run(server.url("/rnd?c=10"), requests=50, progress=False)
    assert r.concurrency == 1 and r.connects == 1
    cli = hb("-n", "50", "-q", "--json", "-", server.url("/rnd?c=10"), cwd=tmp_path)
    assert json.loads(cli.stdout)["concurrency"] == 1


def test_non_2xx_broken_down_and_fail_on_non_2xx(tmp_path, server):
    r = hb("-n", "20", "-q", server.url("/status/503"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Non-2xx responses:      20 (503: 20)" in r.stdout
    r = hb("-n", "20", "-q", "--fail-on-non-2xx", server.url("/status/503"), cwd=tmp_path)
    assert r.returncode == 1


def test_compare_says_when_every_answer_was_non_2xx(server):
    cmp = httpbench.compare(server.url("/status/404"), agents=["httpbench", "http.client"],
                            scenarios=["get"], requests=50)
    assert "non-2xx" in cmp.table()
    assert any("every response was non-2xx (404: 50)" in n for n in cmp.warnings())
    assert "every response was non-2xx" in cmp.report(reports=False)


def test_help_names_compare_serve_and_the_habits(tmp_path):
    out = hb("--help", cwd=tmp_path).stdout
    for words in ("httpbench compare", "httpbench serve", "with no URL", "httpbench wrk",
                  "httpbench ab", "as wrk2", "-d TIME, --duration TIME, -z TIME",
                  "-R RATE, --rate RATE"):
        assert words in out, words


@pytest.mark.parametrize("concurrency", [1, 10, 50])
def test_rate_is_the_whole_runs_rate_at_any_concurrency(server, concurrency):
    """Item 6: every connection started its schedule at once, so 100
    requests at 200/s over 50 connections took 0.25 s and read 398 req/s."""
    r = httpbench.run(server.url("/rnd?c=10"), requests=100, rate=200, concurrency=concurrency,
                      progress=False)
    assert r.complete == 100
    assert 0.45 < r.time_taken < 0.6, r.time_taken
    assert 170 < r.rps < 225, r.rps


@pytest.mark.parametrize("args,flag,suggestion", [
    (["-t2", "-c50", "-d3s"], "-t 2 beside -d", 'did you mean "httpbench wrk -t2 -c50 -d3s'),
    (["-n", "100", "-c", "2", "-t", "5", "-z", "2s"], "-t 5 beside -z",
     'did you mean "httpbench hey -n 100 -c 2 -t 5 -z 2s'),
    (["-n", "100", "-m", "10"], "-m 10", 'did you mean "httpbench h2load -n 100 -m 10'),
    (["-n", "10", "-T", "5"], "-T 5", 'did you mean "httpbench -n 10 -s 5'),
    (["-c", "10", "-q", "10"], "-q 10", 'did you mean "httpbench hey -c 10 -q 10'),
    (["-h2", "-n", "10"], "-h2", 'did you mean "httpbench --http2 -n 10'),
])
def test_another_tools_values_say_which_was_meant_and_send_nothing(tmp_path, server, args, flag,
                                                                   suggestion):
    """h2load's -m 10 once became the method "10" (400s from nginx, exit 0),
    hey's -t 5 a 5-second run, hey's -q 10 "not a URL"; now each names the
    tool it belongs to and what to write, before anything is sent."""
    before = server.stats()["requests"]
    r = hb(*args, server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert flag in r.stderr and suggestion in r.stderr, r.stderr
    assert server.stats()["requests"] == before


def test_help_names_the_modes_and_groups_its_flags(tmp_path):
    out = hb("--help", cwd=tmp_path).stdout
    top = out.split("options:")[0]
    for mode in ("ab", "wrk", "hey", "h2load"):
        assert f"httpbench {mode}" in top, mode
    for group in ("what to send:", "how much load:", "protocol, TLS, proxies:", "outputs:",
                  "over a cluster:"):
        assert group in out, group


@pytest.mark.parametrize("mode", [
    ["ab", "-n", "300", "-c", "2"], ["ab", "-n", "20"], ["wrk", "-d", "1", "-c", "2", "-t", "1"],
    ["hey", "-n", "300", "-c", "2"], ["h2load", "-n", "300", "-c", "2"],
    ["h2load", "-D", "1", "-c", "2"], ["-n", "300"]])
def test_json_to_stdout_is_json_alone_in_every_mode(tmp_path, server, mode):
    """--json - puts the JSON alone on standard output: the report, and all
    a mode prints around it (ab's and wrk's banners, ab's "....done",
    h2load's start and progress lines), go to standard error."""
    r = hb(*mode, "--json", "-", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["complete"] > 0, r.stdout
    assert "requests" in r.stderr.lower(), r.stderr
    # So does every other output given -: the report went to standard
    # output before it (--html -, --hgrm -); and two of them would mix.
    r = hb(*mode, "--html", "-", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>"), r.stdout[:200]
    r = hb(*mode, "--hgrm", "-", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.lstrip().startswith("Value"), r.stdout[:200]
    r = hb(*mode, "--json", "-", "--html", "-", server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == "", r.stdout[:200]
    assert "--json and --html both ask for standard output (-)" in r.stderr, r.stderr


@pytest.mark.parametrize("argv", [
    ["ab", "-n", "5", "-g", "F.csv", "--log", "F.csv"],
    ["--json", "F.csv", "--html", "F.csv", "-n", "5"],
    ["ab", "-n", "5", "-e", "F.csv", "--json", "F.csv"],
    ["hey", "-n", "5", "-c", "1", "-o", "csv", "--log", "F.csv", "--json", "F.csv"],
    ["h2load", "-n", "5", "--log-file", "F.csv", "--json", "F.csv"],
    ["--json", "F.csv", "--html", "./sub/../F.csv", "-n", "5"],
    ["--json", "F.csv", "--hgrm", "G", "-n", "5"],
    ["--json", "F.csv", "--html", "H", "-n", "5"],
    ["--json", "F.csv", "--log", "L.csv", "-n", "5"],
    ["capacity", "--json", "F.csv", "--html", "F.csv", "--stage", "0.2s", "--slo", "p99<1s"],
], ids=["ab -g --log", "--json --html", "ab -e --json", "hey -o csv --log --json",
        "h2load --log-file --json", "one path two ways", "a symbolic link", "a hard link",
        "a log linked to an output", "capacity --json --html"])
def test_two_outputs_naming_one_file_are_refused_before_anything_is_sent(tmp_path, server, argv):
    """Each of these ran, then kept one output alone (or failed with a
    traceback after the run, leaving F empty), and exited 0. Now they are
    refused before anything is sent, naming both flags, and F is left as
    it was."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "F.csv").write_text("kept\n")
    (tmp_path / "G").symlink_to(tmp_path / "F.csv")
    (tmp_path / "H").hardlink_to(tmp_path / "F.csv")
    (tmp_path / "L.csv").symlink_to(tmp_path / "F.csv")
    before = server.stats()["requests"]
    r = hb(*argv, server.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "both name" in r.stderr and "one file cannot hold both" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert (tmp_path / "F.csv").read_text() == "kept\n"
    assert server.stats()["requests"] == before
    # Two files, or /dev/null and a file, are as before.
    ok = hb("-n", "5", "--json", "a.json", "--html", "a.html", "--hgrm", "/dev/null",
            server.url("/rnd?c=10"), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_json_to_stdout_is_json_alone_in_compare_and_capacity(tmp_path, server):
    """compare and capacity printed their table to standard output before
    the JSON (--json -): not JSON."""
    url = server.url("/rnd?c=10")
    for argv, kind in ((["compare", "-n", "50", "--agents", "httpbench,http.client"], "comparison"),
                       (["capacity", "--stage", "0.2s", "--start", "50", "--slo", "p99<1s"],
                        "capacity")):
        r = hb(*argv, "--json", "-", url, cwd=tmp_path, timeout=120)
        assert json.loads(r.stdout)["kind"] == kind, r.stdout[:300]
        assert "x fastest" in r.stderr or "capacity:" in r.stderr, r.stderr
        r = hb(*argv, "--json", "-", "--html", "-", url, cwd=tmp_path)
        assert r.returncode == 2 and "both ask for standard output" in r.stderr, r.stderr
