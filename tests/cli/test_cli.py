"""The httpbench command line, run as a user runs it."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

import httpbench
from helpers import nginx, wait_for_requests


def run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=30)


def test_serve_until_ctrl_c(tmp_path):
    (tmp_path / "f.txt").write_text("static text")
    proc = subprocess.Popen([sys.executable, "-m", "httpbench", "serve", "--port", "0",
                             "--static", str(tmp_path), "--mode", "threads"],
                            stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = proc.stdout.readline()
        m = re.search(r"serving http://127\.0\.0\.1:(\d+)/ \(threads\)", line)
        assert m, line
        with httpbench.Connection("127.0.0.1", int(m.group(1))) as conn:
            assert conn.request("GET", "/static/f.txt").body == b"static text"
            assert conn.request("GET", "/rnd?c=5").status == 200
        # The server counts a response once its last write returns, which
        # can trail the client's read by a moment.
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=10)
        assert proc.returncode == 0
        assert "served 2 requests on 1 connections" in out
    finally:
        proc.kill()


def test_serve_bad_arguments(tmp_path):
    r = run("serve", "--static", str(tmp_path / "missing"), "--port", "0", cwd=tmp_path)
    assert r.returncode == 2 and "not a directory" in r.stderr
    r = run("serve", "--mode", "fibers", cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_serve_port_taken(tmp_path):
    with httpbench.Server() as srv:
        r = run("serve", "--port", str(srv.port), cwd=tmp_path)
    assert r.returncode == 2 and "cannot listen" in r.stderr


def test_usage_and_version(tmp_path):
    r = run("--version", cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == f"httpbench {httpbench.__version__}"
    r = run("--help", cwd=tmp_path)
    assert r.returncode == 0 and "serve" in r.stdout
    r = run("frobnicate", cwd=tmp_path)
    assert r.returncode == 2 and "only http:// and https:// URLs are supported" in r.stderr
    assert "did you mean" not in r.stderr  # a word: perhaps a command mistyped
    # ab takes a URL without its scheme; here it is named, with the fix.
    for bare in ("localhost:8080", "127.0.0.1:8080/x", "example.com/"):
        r = run("-n", "1", bare, cwd=tmp_path)
        assert r.returncode == 2 and f"(did you mean 'http://{bare}'?)" in r.stderr, r.stderr


def hb(*args: str, cwd, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "httpbench", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


def test_ab_style_run(tmp_path):
    with httpbench.Server() as srv:
        r = hb("-n", "500", "-c", "5", "-k", "-H", "X-A: 1", "-e", str(tmp_path / "p.csv"),
               "--json", str(tmp_path / "r.json"), srv.url("/rnd?c=2048"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Complete requests:      500" in r.stdout and "Failed requests:        0" in r.stdout
    assert "Finished 500 requests" in r.stderr  # ab's progress lines, off a terminal
    csv = (tmp_path / "p.csv").read_text().splitlines()
    assert csv[0] == "Percentage served,Time in ms" and csv[1].startswith("0,") and len(csv) == 102
    result = httpbench.Result.from_json((tmp_path / "r.json").read_text())
    assert result.complete == 500 and result.concurrency == 5


def test_post_and_put_files(tmp_path):
    (tmp_path / "body").write_bytes(b"z" * 2048)
    with httpbench.Server() as srv:
        r = hb("-q", "-n", "50", "-p", str(tmp_path / "body"), "-T", "text/plain",
               srv.url("/echo"), cwd=tmp_path)
        assert r.returncode == 0 and "Document Length:        2048 bytes" in r.stdout
        assert r.stderr == ""
        r = hb("-q", "-n", "50", "-u", str(tmp_path / "body"), srv.url("/echo"), cwd=tmp_path)
        assert r.returncode == 0 and "Complete requests:      50" in r.stdout


def test_duration_rate_threads_warmup(tmp_path):
    with httpbench.Server() as srv:
        r = hb("-q", "-t", "0.5", "-c", "4", "--threads", "2", "--rate", "400", "--warmup", "20",
               srv.url("/rnd?c=10"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Target rate:            400.00" in r.stdout and "uncorrected" in r.stdout


def test_failures_exit_1(tmp_path):
    with httpbench.Server() as srv:
        port = srv.port
    r = hb("-q", "-n", "5", f"http://127.0.0.1:{port}/", cwd=tmp_path)
    assert r.returncode == 1
    # Nothing completed: the cause is the first line, not at the page's end.
    assert r.stdout.startswith("Nothing completed: all 5 requests failed (connect): "
                               "Connection refused.")
    assert "(Connect: 5," in r.stdout and "First failure:" not in r.stdout
    with httpbench.Server() as srv:
        r = hb("-q", "-n", "10", "-c", "2", srv.url("/delay?ms=1"), cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.startswith("Server Software:")
        one_fails = hb("-q", "-n", "4", "-s", "0.3", srv.url("/delay?ms=500"), cwd=tmp_path)
        assert one_fails.returncode == 1


def test_http2_against_a_tls_server_of_http11_alone_says_to_leave_out_http2(tmp_path, pki):
    """nginx's TLS port without http2 answers an ALPN offer of h2 alone
    with an alert; the first line says what it means."""
    tls = (f"ssl_certificate {pki['server']}; ssl_certificate_key {pki['server_key']};")
    with nginx(tls=tls) as up:
        if up is None:
            pytest.skip("nginx not installed")
        url = f"https://127.0.0.1:{up[0]}/rnd"
        r = hb("-q", "-n", "5", "--http2", "--insecure", url, cwd=tmp_path)
        assert r.returncode == 1 and r.stdout.splitlines()[0] == (
            "Nothing completed: all 5 requests failed (tls): tlsv1 alert no application "
            "protocol. The server speaks no HTTP/2 over TLS: leave out HTTP/2 (--http2, "
            "http2=True).")
        assert hb("-q", "-n", "5", "--insecure", url, cwd=tmp_path).returncode == 0


def test_nothing_completed_or_nothing_2xx_says_so_first(tmp_path):
    """A refused connection, or every handshake refused by verification (a
    self-signed server: its reason came only at the end of a page of
    dashes): one line first naming the cause, exit 1, the JSON still
    written. Every response non-2xx: the first line says which."""
    with httpbench.Server(tls=True) as tls, httpbench.Server() as srv:
        r = hb("-q", "-n", "20", "--json", "r.json", tls.url("/rnd?c=10"), cwd=tmp_path)
        first = r.stdout.splitlines()[0]
        assert r.returncode == 1 and first.startswith(
            "Nothing completed: all 20 requests failed (tls): certificate verify failed"), first
        assert "--insecure" in first and "-k is ab's keep-alive" in first
        d = httpbench.Result.from_json((tmp_path / "r.json").read_text())
        assert d.complete == 0 and d.failures["tls"] == 20
        assert hb("-q", "-n", "20", "--insecure", tls.url("/rnd?c=10"),
                  cwd=tmp_path).returncode == 0
        r = hb("-q", "-n", "30", srv.url("/status/404"), cwd=tmp_path)
        assert r.returncode == 0 and r.stdout.startswith("All 30 responses were 404 Not Found.\n")
        r = hb("-q", "-n", "30", "--fail-on-non-2xx", srv.url("/status/503"), cwd=tmp_path)
        assert r.returncode == 1
        assert r.stdout.startswith("All 30 responses were 503 Service Unavailable.")


@pytest.mark.parametrize(
    "args,error",
    [
        (["ftp://127.0.0.1/"], "only http://"),
        (["http:///nohost"], "no host"),
        (["-n", "0", "http://127.0.0.1:1/"], "-n must be"),
        (["-n", "-5", "http://127.0.0.1:1/"], "-n must be"),
        (["-c", "0", "http://127.0.0.1:1/"], "-c must be"),
        (["-c", "900000", "http://127.0.0.1:1/"], "open-file limit"),
        (["-t", "0", "http://127.0.0.1:1/"], "-t must be"),
        (["-H", "NoColon", "http://127.0.0.1:1/"], "-H takes"),
        (["--warmup", "x", "http://127.0.0.1:1/"], "--warmup takes"),
        (["-p", "/no/such/file", "http://127.0.0.1:1/"], "-p:"),
    ],
)
def test_bad_usage_exits_2_and_starts_nothing(tmp_path, args, error):
    r = hb(*args, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert error in r.stderr and r.stdout == ""


def test_ctrl_c_reports_what_completed(tmp_path):
    with httpbench.Server() as srv:
        proc = subprocess.Popen([sys.executable, "-m", "httpbench", "-q", "-t", "30", "-c", "4",
                                 srv.url("/rnd?c=100")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        # (Not a fixed second: under a sanitizer on a shared CPU the import
        # alone took longer, and the Ctrl-C hit it.)
        wait_for_requests(srv, 200, proc)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 3
    assert proc.returncode == 1  # interrupted: not every request the run meant to make
    assert "Interrupted:" in out
    m = re.search(r"Complete requests:\s+(\d+)", out)
    assert m and int(m.group(1)) > 100


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_end_a_run_as_ctrl_c_does(tmp_path, sig):
    """timeout(1) sends SIGTERM: the partial result is printed and written
    to --json, -e and --hgrm, and the status is 1, as after Ctrl-C (it
    printed nothing, status 124)."""
    with httpbench.Server() as srv:
        proc = subprocess.Popen([sys.executable, "-m", "httpbench", "-q", "-d", "30s", "-c", "2",
                                 "--json", "r.json", "-e", "r.csv", "--hgrm", "r.hgrm",
                                 srv.url("/rnd?c=100")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=tmp_path)
        wait_for_requests(srv, 200, proc)
        t0 = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
    assert time.monotonic() - t0 < 3
    assert proc.returncode == 1, (out, err)
    assert "Interrupted:" in out and "Traceback" not in err
    complete = int(re.search(r"Complete requests:\s+(\d+)", out).group(1))
    d = httpbench.Result.from_json((tmp_path / "r.json").read_text())
    assert d.interrupted and d.complete == complete >= 200
    assert (tmp_path / "r.csv").read_text().startswith("Percentage served,")
    assert "Total count" in (tmp_path / "r.hgrm").read_text()


def test_timeout_1_gets_the_partial_result(tmp_path):
    if shutil.which("timeout") is None:
        pytest.skip("coreutils' timeout is not installed")
    with httpbench.Server() as srv:
        # timeout(1)'s own status is 124 whatever the child's, unless told
        # to preserve it. The signal comes 4 s in, well into the 10 s run:
        # at 2 s, on one loaded CPU, it once came before the child had
        # installed its handler (exit 143, nothing printed).
        for flags, status in (([], 124), (["--preserve-status"], 1)):
            done = subprocess.run(["timeout", *flags, "4", sys.executable, "-m", "httpbench",
                                   "-q", "-d", "10s", srv.url("/rnd?c=10")],
                                  capture_output=True, text=True, cwd=tmp_path, timeout=30)
            assert done.returncode == status, done
            assert "Complete requests:" in done.stdout and "Interrupted:" in done.stdout, done


def test_with_neither_a_count_nor_a_duration_a_run_lasts_10_seconds(tmp_path):
    """wrk's default; 200,000 requests took 8 s at -c 1 and --help did not
    say so. The help and run()'s docstring say it now."""
    with httpbench.Server() as srv:
        done = run("-q", srv.url("/rnd?c=10"), cwd=tmp_path)
    taken = float(re.search(r"Time taken for tests:\s+([\d.]+)", done.stdout).group(1))
    assert done.returncode == 0 and 10.0 <= taken < 11.5, done.stdout
    helptext = " ".join(run("--help", cwd=tmp_path).stdout.split())
    assert "the run lasts 10 s" in helptext
    assert "10 seconds" in " ".join(httpbench.run.__doc__.split())
