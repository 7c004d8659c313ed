"""The httpbench command line, run as a user runs it."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import httpbench


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
    assert r.returncode == 2 and "usage" in r.stderr
