"""Objects shared by threads and objects half built: a Connection two threads
call never mixes two requests, racing inits start one server or run, a
server that runs out of files or threads is refused cleanly."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

import httpbench
from httpbench import _core
from helpers import hb, python


def test_a_connection_shared_by_threads_never_mixes_two_requests():
    """Item 1: the guard is taken before the request is built. Building runs
    Python code (here a generator of headers that sleeps), so without it a
    second thread wrote into the same buffer and read the same socket."""
    errors: list[str] = []
    done = [0, 0]  # answered, refused as busy

    def headers(tag: str):
        yield ("X-Tag", tag)
        time.sleep(0.0005)  # lets the other thread in while the request is built
        yield ("Content-Type", "text/plain")

    with httpbench.Server() as srv, httpbench.Connection("127.0.0.1", srv.port) as conn:
        def worker(tag: str) -> None:
            body = tag.encode() * 300
            for _ in range(200):
                try:
                    r = conn.request("POST", "/echo", headers=headers(tag), body=body)
                except RuntimeError as e:
                    if "in use by another thread" not in str(e):
                        errors.append(repr(e))
                    done[1] += 1
                    continue
                except Exception as e:  # noqa: BLE001 - any other outcome is the fault
                    errors.append(repr(e))
                    continue
                if r.status != 200 or r.body != body:
                    errors.append(f"{tag}: got {r.status} {r.body[:20]!r}")
                done[0] += 1

        threads = [threading.Thread(target=worker, args=(t,)) for t in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[:5]
    assert done[0] > 0 and done[1] > 0  # both happened: the threads did contend


@pytest.mark.parametrize("kind", ["server", "bench"])
def test_racing_inits_start_one_server_or_run(kind):
    """Item 1, the other types: _ServerCore and _Bench release the GIL while
    they start, so two threads calling __init__ on one object both got in
    and one server or run was lost (its threads and sockets leaked)."""
    with httpbench.Server() as target:
        for _ in range(30):  # before the fix, 2 to 8 in 10 started twice
            if kind == "server":
                obj = _core._ServerCore.__new__(_core._ServerCore)
                args = (dict(host="127.0.0.1", port=0, threads=1, max_body=1 << 20,
                             max_buffered=1 << 20, header_timeout=1.0, send_timeout=1.0,
                             idle_timeout=1.0, version="t"),)
            else:
                obj = _core._Bench.__new__(_core._Bench)
                args = (dict(host="localhost", port=target.port,
                             request=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", requests=1,
                             duration=0.0, concurrency=1, threads=1, keepalive=True,
                             timeout=5.0, lengths_vary=True),)
            barrier = threading.Barrier(2)
            outcomes: list[str] = []

            def start(obj: object, args: tuple, barrier: threading.Barrier,
                      outcomes: list[str]) -> None:
                barrier.wait()
                try:
                    obj.__init__(*args)  # type: ignore[misc]
                    outcomes.append("started")
                except RuntimeError as e:
                    outcomes.append(str(e))

            threads = [threading.Thread(target=start, args=(obj, args, barrier, outcomes))
                       for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert outcomes.count("started") == 1, outcomes
            if kind == "server":
                obj.stop()
            else:
                assert obj.wait(10.0)


def test_server_threads_out_of_range_is_refused_not_a_crash(tmp_path):
    """Item 2: threads=2**31-1 failed to allocate the loops and the cleanup
    walked a NULL array (a segfault)."""
    for threads in (2**31 - 1, 0, -1, 1025, 2**64):
        with pytest.raises(ValueError, match="threads"):
            httpbench.Server(threads=threads)
        with pytest.raises(ValueError, match="threads"):
            _core._ServerCore({"host": "127.0.0.1", "port": 0, "threads": threads,
                               "max_body": 1, "max_buffered": 1, "header_timeout": 1.0,
                               "send_timeout": 1.0, "idle_timeout": 1.0, "version": "t"})
    r = hb("serve", "--port", "0", "--threads", "2147483647", cwd=tmp_path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "threads" in r.stderr, r.stderr


def test_server_half_built_when_the_loops_run_out_of_files(tmp_path):
    """Item 2, every cleanup path: with descriptors for only some of its
    event loops, the server is refused with the kernel's error and what was
    set up is undone, without a crash (under ASan in CI too)."""
    r = python("""
        import os, resource, httpbench
        n = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (n + 8, n + 8))
        try:
            httpbench.Server(threads=64)
        except OSError as e:
            print("refused:", e)
        os.fstat(0)
        print("stdin open")
    """, tmp_path, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert "refused: cannot start an event loop: Too many open files" in r.stdout, r.stdout
    assert "stdin open" in r.stdout
