"""The loop's system calls, counted by strace: over TLS a read hands over
one record, so the loop reads on to EAGAIN (with OpenSSL reading ahead)
and writes the requests the responses freed once, not once a record."""

import re
import shutil
import subprocess
import sys

import pytest

import helpers

pytestmark = pytest.mark.skipif(shutil.which("strace") is None,
                                reason="strace missing (apt-get install strace)")


def _strace_works() -> bool:
    """Whether strace may trace here (a container may forbid ptrace)."""
    try:
        return subprocess.run(["strace", "-o", "/dev/null", "true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def calls(summary: str, name: str) -> int:
    """The count of `name` in strace -c's table."""
    m = re.search(rf"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?{name}$", summary, re.M)
    assert m is not None, summary
    return int(m.group(1))


def test_http2_over_tls_writes_once_a_batch_not_once_a_record(tmp_path):
    """(50, 100) against the embedded server over TLS, 20,000 requests: a
    write carries the requests of every response a wake read: 401 writes
    here, one for 50 requests (h2load: one for 73), where before the loop
    read to EAGAIN it wrote 1,527 (one for 13, after each read of a record
    or two); so under one for 25. And a read takes several records
    (without reading ahead OpenSSL read each record's header and body
    apart: two reads a record)."""
    if not _strace_works():
        pytest.skip("strace cannot trace here (ptrace not permitted)")
    port = helpers.free_port()
    out = tmp_path / "strace.txt"
    n = 20_000
    # Pinned apart, as benchmarks/http2.py measures: the server's answers
    # then come while the loop runs, the case where it wrote once a record.
    with helpers.listening(helpers.pinned(1, [sys.executable, "-m", "httpbench", "serve",
                                              "--port", str(port), "--tls", "--threads", "1"]),
                           port):
        run = subprocess.run(helpers.pinned(0, [
            "strace", "-f", "-c", "-e", "trace=read,write", "-o", str(out), sys.executable,
            "-m", "httpbench", "-q", "--insecure", "--http2", "--streams", "100", "-c", "50",
            "--threads", "1", "-n", str(n), f"https://127.0.0.1:{port}/rnd?c=2048"]),
            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    summary = out.read_text()
    writes, reads = calls(summary, "write"), calls(summary, "read")
    assert writes < n / 25, summary
    # (2 KiB responses, TLS records of up to 16 KiB read ahead.)
    assert reads < n / 3, summary
