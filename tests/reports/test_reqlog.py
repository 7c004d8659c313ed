"""The per-request log (run(log=)): a record per request, exact against the
run's own counts and the server's, in CSV, JSON lines and SQLite; sampled;
and a writer made slow on purpose drops and counts, the run not slowed."""

from __future__ import annotations

import collections
import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import httpbench
import httpbench.local
import httpbench.reqlog
from httpbench import Request, Scenario, read_log
from httpbench.reqlog import FIELDS, FIELDS_BEFORE, LogRecord

from helpers import python

FORMATS = ("csv", "jsonl", "db", "sqlite")


@pytest.fixture(scope="module")
def srv() -> Iterator[httpbench.Server]:
    with httpbench.Server(threads=2) as s:
        yield s


SCENARIO = Scenario([Request("GET", "/rnd?c=10", name="small"),
                     Request("GET", "/rnd?c=3000", name="large"),
                     Request("POST", "/echo", body=b"x" * 500, name="post, \"quoted\""),
                     Request("GET", "/status/404", name="missing")], order="sequence")


@pytest.mark.parametrize("ext", FORMATS)
def test_every_request_is_one_record_and_every_field_adds_up(srv, tmp_path, ext):
    path = tmp_path / f"requests.{ext}"
    before = srv.stats()["requests"]
    r = httpbench.run(srv.url("/"), scenario=SCENARIO, requests=4000, concurrency=4,
                      progress=False, log=path)
    served = srv.stats()["requests"] - before
    recs = read_log(path)
    assert all(isinstance(x, LogRecord) for x in recs)
    assert len(recs) == r.issued == r.log_records == served == 4000 and r.log_dropped == 0
    assert r.log == str(path) and not r.log_error
    # The whole run's counts, field by field.
    assert sum(x.bytes_received for x in recs) == r.bytes_received
    assert sum(x.bytes_sent for x in recs) == r.bytes_sent
    assert collections.Counter(x.status for x in recs) == r.status_counts
    assert {x.failure for x in recs} == {""}
    # Each request's name, its own counts and its own bytes.
    by = collections.defaultdict(list)
    for x in recs:
        by[x.name].append(x)
    assert set(by) == set(r.by_name)
    for name, xs in by.items():
        part = r.by_name[name]
        assert len(xs) == part.complete
        assert sum(x.bytes_received for x in xs) == part.bytes_received
        # Every record of a name is the same exchange: the same bytes each.
        assert len({x.bytes_received for x in xs}) == 1, name
        assert len({x.bytes_sent for x in xs}) == 1, name
    assert {x.status for x in by["missing"]} == {404}
    # The bodies' difference, and Content-Length's two more digits.
    assert by["large"][0].bytes_received - by["small"][0].bytes_received == 3000 - 10 + 2
    assert by['post, "quoted"'][0].bytes_sent > 500
    # Connections and threads: every one of the run's, and each instant
    # within the run, in order of intent.
    assert {x.connection for x in recs} == {0, 1, 2, 3}
    assert {x.thread for x in recs} == set(range(r.threads))
    assert all(x.stream is None for x in recs)
    assert all(0 <= x.intended_start <= x.start <= r.time_taken for x in recs)
    assert all(0 < x.latency < 5 for x in recs)
    assert sorted(x.latency for x in recs)[len(recs) // 2] == pytest.approx(r.latency.p50,
                                                                            rel=0.05)


def test_the_formats_read_back_the_same_records(srv, tmp_path):
    """A run's CSV written as JSON lines and SQLite by hand reads back the
    same: read_log's three readers agree with each other and with the
    files' own layouts (CSV's header, the table's columns)."""
    r = httpbench.run(srv.url("/rnd?c=10"), requests=500, concurrency=2, progress=False,
                      log=tmp_path / "a.csv")
    recs = read_log(tmp_path / "a.csv")
    assert (tmp_path / "a.csv").read_text().splitlines()[0] == ",".join(FIELDS)
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(x._asdict()) + "\n" for x in recs))
    db = sqlite3.connect(tmp_path / "c.db")
    db.execute(f"CREATE TABLE requests ({', '.join(FIELDS)})")
    db.executemany(f"INSERT INTO requests VALUES ({','.join('?' * len(FIELDS))})", recs)
    db.commit()
    db.close()
    assert read_log(tmp_path / "b.jsonl") == recs == read_log(tmp_path / "c.db")
    # One at a time (the drop-in modes' outputs read a long log so): the same.
    for name in ("a.csv", "b.jsonl", "c.db"):
        assert list(httpbench.reqlog.iter_log(tmp_path / name)) == recs
    assert len(recs) == r.issued
    # The loop's own SQLite file has the table and types the docs name.
    httpbench.run(srv.url("/rnd?c=10"), requests=50, progress=False, log=tmp_path / "d.sqlite")
    db = sqlite3.connect(tmp_path / "d.sqlite")
    cols = [(c[1], c[2]) for c in db.execute("PRAGMA table_info(requests)")]
    db.close()
    assert [c for c, _ in cols] == list(FIELDS)
    assert dict(cols)["latency"] == "REAL" and dict(cols)["status"] == "INTEGER"
    assert not (tmp_path / "d.sqlite.httpbench.csv").exists()
    pd = pytest.importorskip("pandas")
    frame = read_log(tmp_path / "a.csv", frame=True)
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == list(FIELDS)
    assert len(frame) == 500 and frame["bytes_received"].sum() == r.bytes_received


@pytest.mark.parametrize("keepalive", [True, False], ids=["keep-alive", "a connect each"])
def test_connect_and_first_byte_time_a_requests_parts(srv, tmp_path, keepalive):
    """`connect`: with keep-alive each connection's first request alone
    carries its connect (the others 0), without it every request; added to
    `start` it is the send, which a route's 30 ms delay comes after, before
    `first_byte`; the run's connect_time, processing and waiting are the
    records' connect, their time less it, and the first byte less the
    send."""
    r = httpbench.run(srv.url("/delay?ms=30"), requests=12, concurrency=3, keepalive=keepalive,
                      progress=False, log=tmp_path / "a.csv")
    recs = read_log(tmp_path / "a.csv")
    opened = [x for x in recs if x.connect > 0]
    assert len(opened) == (3 if keepalive else 12) == r.connects, recs
    assert {x.connection for x in opened} == {0, 1, 2}
    for x in recs:
        end = x.intended_start + x.latency
        assert x.first_byte is not None, x
        # (A response read whole has its first byte at its end: 1e-9 for
        # the sum's rounding.)
        assert x.start <= x.start + x.connect <= x.first_byte - 0.030 <= end - 0.030 + 1e-9, x
    assert max(x.connect for x in recs) == pytest.approx(r.connect_time.max, rel=0.02, abs=2e-6)
    processing = [x.intended_start + x.latency - x.start - x.connect for x in recs]
    assert min(processing) == pytest.approx(r.processing.min, rel=0.02, abs=2e-6)
    waiting = [x.first_byte - x.start - x.connect for x in recs]
    assert max(waiting) == pytest.approx(r.waiting.max, rel=0.02, abs=2e-6)


@pytest.mark.parametrize("ext", ["csv", "jsonl", "db"])
def test_a_log_written_before_connect_and_first_byte_reads_with_their_defaults(
        srv, tmp_path, ext):
    """A log of the eleven fields before `connect` and `first_byte` (CSV's
    header, JSON's keys, the table's columns) reads back, connect 0 and
    first_byte None; a CSV row of another width than its header's is no
    record."""
    httpbench.run(srv.url("/rnd?c=10"), requests=20, progress=False, log=tmp_path / "a.csv")
    recs = read_log(tmp_path / "a.csv")
    old = FIELDS_BEFORE
    path = tmp_path / f"old.{ext}"
    if ext == "csv":
        lines = (tmp_path / "a.csv").read_text().splitlines()
        path.write_text("\n".join([",".join(old)] + [x.rsplit(",", 2)[0] for x in lines[1:]])
                        + "\n")
    elif ext == "jsonl":
        path.write_text("".join(json.dumps({k: v for k, v in x._asdict().items() if k in old})
                                + "\n" for x in recs))
    else:
        db = sqlite3.connect(path)
        db.execute(f"CREATE TABLE requests ({', '.join(old)})")
        db.executemany(f"INSERT INTO requests VALUES ({','.join('?' * len(old))})",
                       [x[:len(old)] for x in recs])
        db.commit()
        db.close()
    assert read_log(path) == [x._replace(connect=0.0, first_byte=None) for x in recs]
    if ext == "csv":
        lines = (tmp_path / "a.csv").read_text().splitlines()
        lines[5] = lines[5].rsplit(",", 1)[0]
        (tmp_path / "b.csv").write_text("\n".join(lines) + "\n")
        with pytest.raises(ValueError, match="line 6: 12 fields, where the header has 13"):
            read_log(tmp_path / "b.csv")


def _timeouts_logged(srv, tmp_path):
    """Four requests that time out at 0.1 s, logged: each a timeout."""
    r = httpbench.run(srv.url("/delay?ms=400"), requests=4, concurrency=2, timeout=0.1,
                      progress=False, log=tmp_path / "slow.csv")
    recs = read_log(tmp_path / "slow.csv")
    assert [x.failure for x in recs] == ["timeout"] * 4 == ["timeout"] * r.failures["timeout"]
    assert [x.first_byte for x in recs] == [None] * 4  # (no byte came)
    return recs


@pytest.mark.timing
def test_a_timeout_is_logged_at_its_deadline(srv, tmp_path):
    # (Timed: on one CPU shared with the suite's other worker the loop once
    # woke past 0.3 s.)
    assert all(0.1 <= x.latency < 0.3 for x in _timeouts_logged(srv, tmp_path))


def test_failures_and_cancelled_requests_are_logged_by_class(srv, tmp_path):
    # Nothing listens: connect failures, no status.
    with httpbench.Server() as gone:
        url = gone.url("/")
    r = httpbench.run(url, requests=20, progress=False, log=tmp_path / "refused.jsonl")
    recs = read_log(tmp_path / "refused.jsonl")
    assert len(recs) == r.failures["connect"] == 20
    assert {(x.failure, x.status, x.bytes_received) for x in recs} == {("connect", None, 0)}
    # Timeouts (each at its deadline: the next test, timed).
    recs = _timeouts_logged(srv, tmp_path)
    assert all(x.latency >= 0.1 for x in recs)
    # In flight when the duration's grace ended: cancelled, logged too.
    r = httpbench.run(srv.url("/delay?ms=5000"), duration=0.3, concurrency=3, progress=False,
                      log=tmp_path / "cut.csv")
    recs = read_log(tmp_path / "cut.csv")
    assert r.cancelled == 3 and len(recs) == r.issued == 3
    assert [x.failure for x in recs] == ["cancelled"] * 3


def test_a_warmup_is_not_logged(srv, tmp_path):
    r = httpbench.run(srv.url("/rnd?c=10"), requests=300, warmup=200, concurrency=2,
                      progress=False, log=tmp_path / "w.csv")
    assert len(read_log(tmp_path / "w.csv")) == r.issued == 300


def test_http2_streams_are_logged_with_their_ids(srv, tmp_path):
    r = httpbench.run(srv.url("/rnd?c=700"), requests=1000, concurrency=2, http2=True,
                      streams=10, progress=False, log=tmp_path / "h2.csv")
    recs = read_log(tmp_path / "h2.csv")
    assert len(recs) == r.complete == 1000
    assert all(x.stream is not None and x.stream % 2 == 1 for x in recs)
    # Per connection, each stream id once.
    ids = collections.Counter((x.connection, x.stream) for x in recs)
    assert max(ids.values()) == 1
    assert {x.bytes_received for x in recs} == {700}  # DATA


def test_a_sample(srv, tmp_path):
    r = httpbench.run(srv.url("/rnd?c=10"), requests=20_000, concurrency=4, progress=False,
                      log=tmp_path / "s.csv", log_sample=0.05)
    n = len(read_log(tmp_path / "s.csv"))
    assert n == r.log_records and r.log_dropped == 0
    # 5% of 20,000: 1,000, with a standard deviation of 31.
    assert 850 <= n <= 1150


def test_a_slow_writer_drops_and_counts_and_the_run_keeps_its_pace(srv, tmp_path, monkeypatch):
    """The writer sleeps 30 s a pass and the rings hold 4,096 records: at
    5,000 a second for 3 s they fill, the rest are dropped and counted,
    and the run holds its rate as a run without a log does."""
    monkeypatch.setattr(httpbench.local, "_LOG_DELAY_NS", 30_000_000_000)
    monkeypatch.setattr(httpbench.reqlog, "RING_RECORDS", 4096)
    r = httpbench.run(srv.url("/rnd?c=10"), requests=15_000, rate=5000, concurrency=8,
                      progress=False, log=tmp_path / "slow.csv")
    recs = read_log(tmp_path / "slow.csv")
    assert r.log_dropped > 0 and r.log_records + r.log_dropped == r.issued == 15_000
    assert len(recs) == r.log_records <= 4096 * r.threads
    assert f"{r.log_dropped} dropped" in r.report()
    plain = httpbench.run(srv.url("/rnd?c=10"), requests=15_000, rate=5000, concurrency=8,
                          progress=False)
    # An open loop's pace is its schedule's: both took at least the 3 s it
    # sets (to the last answer: a few ms after, quiet), and the writer's
    # 30 s pass never held the loop (it would have held a send that long).
    # (Judged on the schedule and the sends' lateness, not to 50 ms of the
    # wall clock, which a loaded machine's last answer missed.)
    for x in (r, plain):
        assert 3.0 <= x.time_taken < 10, x.time_taken
    assert r.client is not None and r.client.late_max is not None and r.client.late_max < 5
    assert r.complete == plain.complete == 15_000


def test_bad_settings_are_refused_by_name(srv, tmp_path):
    url = srv.url("/")
    for kwargs, said in (({"log": tmp_path / "x.txt"}, "log must end in .csv, .jsonl"),
                         ({"log": 3}, "log must be a file's path"),
                         ({"log_sample": 0.5}, "pass log=FILE too"),
                         ({"log": tmp_path / "a.csv", "log_sample": 0}, "log_sample must be"),
                         ({"log": tmp_path / "a.csv", "log_sample": 1.5}, "log_sample must be"),
                         ({"log": tmp_path / "a.csv", "log_sample": math.nan},
                          "log_sample must be"),
                         ({"log": tmp_path / "a.csv", "log_sample": True}, "log_sample must be"),
                         ({"log": tmp_path / "a.csv", "cluster": "tcp://127.0.0.1:1"},
                          "log with a cluster")):
        with pytest.raises(ValueError, match=said):
            httpbench.run(url, requests=1, progress=False, **kwargs)
    assert not (tmp_path / "a.csv").exists()
    with pytest.raises(OSError, match="log: cannot write"):
        httpbench.run(url, requests=1, progress=False, log=tmp_path / "no" / "a.csv")
    # A run that could not start (its host does not resolve) leaves no file.
    with pytest.raises(httpbench.ConnectError):
        httpbench.run("http://nowhere.invalid/", requests=1, progress=False,
                      log=tmp_path / "b.csv")
    assert not (tmp_path / "b.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    for args, said in ((["--log", "x.txt"], "--log must end in .csv"),
                       (["--log-sample", "0.1"], "add --log FILE"),
                       (["--log", str(tmp_path / "no" / "a.csv")], "--log: cannot write")):
        cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "5", *args, url],
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert cli.returncode == 2 and said in cli.stderr, cli.stderr
    (tmp_path / "junk.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a request log"):
        read_log(tmp_path / "junk.csv")
    with pytest.raises(ValueError, match="must end in"):
        read_log(tmp_path / "junk.txt")


def test_the_command_line_writes_the_log(srv, tmp_path):
    cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "300", "-c", "3",
                          "--log", "r.jsonl", "--log-sample", "1", "--json", "r.json",
                          srv.url("/rnd?c=10")], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert "Request log:            r.jsonl: 300 records" in cli.stdout
    d = json.loads((tmp_path / "r.json").read_text())
    assert d["log_records"] == 300 and d["log_dropped"] == 0
    assert len(read_log(tmp_path / "r.jsonl")) == 300


# ---- what the adversarial pass found (issue 34)

def _special(tmp_path: Path, kind: str, ext: str) -> Path:
    """A path of `kind` (fifo, socket, directory) named with ext."""
    path = tmp_path / f"{kind}.{ext}"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(path))
        s.close()  # (the socket file stays)
    else:
        path.mkdir()
    return path


@pytest.mark.parametrize("kind, words", [("fifo", "a FIFO"), ("socket", "a socket"),
                                          ("directory", "a directory")])
@pytest.mark.parametrize("ext", ["csv", "db"])
def test_a_fifo_a_socket_or_a_directory_is_refused_before_anything_is_sent(
        srv, tmp_path, kind, words, ext):
    """A FIFO blocked run() for ever, a directory named .db ran the whole
    load and then raised: each is a ValueError naming the path and what it
    is, before a request goes; exit 2 on the command line."""
    path = _special(tmp_path, kind, ext)
    before = srv.stats()["requests"]
    with pytest.raises(ValueError, match=f"log: {path} is {words}"):
        httpbench.run(srv.url("/rnd?c=10"), requests=50, progress=False, log=path)
    cli = subprocess.run([sys.executable, "-m", "httpbench", "-q", "-n", "50", "--log",
                          str(path), srv.url("/rnd?c=10")], capture_output=True, text=True,
                         timeout=60, cwd=tmp_path)
    assert cli.returncode == 2 and f"{path} is {words}" in cli.stderr, cli.stderr
    assert srv.stats()["requests"] == before
    # The SQLite log's own CSV beside it is a path of its own.
    if ext == "db" and kind == "directory":
        beside = tmp_path / "ok.db.httpbench.csv"
        beside.mkdir()
        with pytest.raises(ValueError, match=f"{beside} is a directory"):
            httpbench.run(srv.url("/rnd?c=10"), requests=5, progress=False,
                          log=tmp_path / "ok.db")


def test_a_character_device_is_written_as_a_file(srv):
    """/dev/null throws the log away; /dev/full refuses every write, said
    in log_error, every record counted dropped."""
    for device, records, error in (("/dev/null", 300, ""),
                                   ("/dev/full", 0, "No space left on device")):
        link = Path(f"/tmp/httpbench-test-{os.getpid()}-{Path(device).name}.csv")
        link.unlink(missing_ok=True)
        link.symlink_to(device)
        try:
            r = httpbench.run(srv.url("/rnd?c=10"), requests=300, progress=False, log=link)
        finally:
            link.unlink()
        assert (r.log_records, r.log_error) == (records, error)
        assert r.log_records + r.log_dropped == r.issued == 300


_FULL_DISK = """
    import resource, signal, sys
    import httpbench
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a short write, then EFBIG
    with httpbench.Server() as srv:
        resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))
        r = httpbench.run(srv.url("/rnd?c=10"), requests={n}, concurrency=2,
                          progress=False, log={path!r})
    print(r.issued, r.log_records, r.log_dropped, r.log_error, sep="|")
"""


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_a_full_disk_leaves_whole_records_and_exact_counts(tmp_path, ext):
    """Under RLIMIT_FSIZE (64 KiB, in a child: no mount needed) the file
    ended in half a record, so read_log refused all of it, and log_records
    was less than the whole records in it. Now the file ends at the last
    whole record, log_records is what read_log returns, and log_records +
    log_dropped == issued."""
    path = tmp_path / f"full.{ext}"
    out = python(_FULL_DISK.format(limit=65536, n=5000, path=str(path)), tmp_path)
    assert out.returncode == 0, out.stderr
    issued, records, dropped, error = out.stdout.strip().split("|")
    assert error == "File too large"
    assert os.path.getsize(path) <= 65536
    recs = read_log(path)
    assert len(recs) == int(records) > 0
    assert int(records) + int(dropped) == int(issued) == 5000
    assert path.read_bytes().endswith(b"\n")


def test_sqlite_on_a_full_disk_keeps_the_result_and_its_records(tmp_path):
    """The table cannot be written (the file size limit lets the CSV by,
    16 KiB of SQLite not): the Result comes back with log_error naming the
    CSV the records are in, the CSV reads back whole, and a .db that was
    there is left as it was."""
    path = tmp_path / "keep.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE mine (x)")
    db.commit()
    db.close()
    before = path.read_bytes()
    out = python(_FULL_DISK.format(limit=12288, n=100, path=str(path)), tmp_path)
    assert out.returncode == 0, out.stderr
    issued, records, dropped, error = out.stdout.strip().split("|")
    assert (issued, records, dropped) == ("100", "100", "0")
    csv_path = f"{path}.httpbench.csv"
    assert "the SQLite table could not be written" in error and csv_path in error
    assert len(read_log(Path(csv_path))) == 100
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.db", "keep.db.httpbench.csv"]


@pytest.mark.parametrize("ext", FORMATS)
def test_a_file_that_was_not_written_is_left_as_it_was(srv, tmp_path, ext):
    """A run that never starts (its host does not resolve) deleted an
    existing keep.db, and emptied a CSV or JSON lines file (opened with
    O_TRUNC); now a file is emptied only when the first record is written.
    One that a run did write holds that run's records alone."""
    path = tmp_path / f"keep.{ext}"
    path.write_bytes(b"another run's records\n")
    with pytest.raises(httpbench.ConnectError):
        httpbench.run("http://nowhere.invalid/", requests=1, progress=False, log=path)
    assert path.read_bytes() == b"another run's records\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    r = httpbench.run(srv.url("/rnd?c=10"), requests=20, progress=False, log=path)
    assert len(read_log(path)) == r.log_records == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


@pytest.mark.parametrize("ext", FORMATS)
@pytest.mark.parametrize("made", [True, False], ids=["there before", "made by the run"])
def test_a_run_that_logs_no_record_leaves_an_empty_log(srv, tmp_path, ext, made):
    """A run that started and logged nothing (log_sample=1e-300) left the
    previous run's records: read_log returned 300 beside log_records == 0.
    Now the file holds an empty log of its format (a CSV its header, a
    JSONL nothing, SQLite an empty table), whether it was there or not."""
    path = tmp_path / f"a.{ext}"
    url = srv.url("/rnd?c=10")
    if made:
        before = httpbench.run(url, requests=300, concurrency=2, progress=False, log=path)
        assert len(read_log(path)) == before.log_records == 300
    r = httpbench.run(url, requests=300, concurrency=2, progress=False, log=path,
                      log_sample=1e-300)
    assert r.complete == 300 and r.log_records == 0 and r.log_error == ""
    assert read_log(path) == []
    if ext == "csv":
        assert path.read_text() == ",".join(FIELDS) + "\n"
    elif ext == "jsonl":
        assert path.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_each_exchange_has_its_own_stamps(srv, tmp_path):
    """One clock read served every event of an epoll wake-up: at 50
    connections 97% of the records shared their start and their end with
    another connection's. The clock is read per event and per start now."""
    path = tmp_path / "r.csv"
    r = httpbench.run(srv.url("/rnd?c=100"), requests=20_000, concurrency=50, threads=1,
                      progress=False, log=path)
    recs = read_log(path)
    assert len(recs) == r.complete == 20_000
    for stamp in (lambda x: x.start, lambda x: x.intended_start + x.latency):
        seen = collections.Counter(map(stamp, recs))
        shared = sum(n for n in seen.values() if n > 1)
        assert shared < 0.05 * len(recs), shared


@pytest.mark.parametrize("ext", ["csv", "jsonl"])
def test_a_log_cut_short_keeps_its_whole_records(srv, tmp_path, ext):
    """A run killed while writing its log leaves the last record without
    its newline, maybe mid-number; read_log refused the whole file ("not a
    request log (list index out of range)"). Now the whole records are
    read and the cut one is left out with a warning naming its line; a bad
    record elsewhere is an error naming its line."""
    path = tmp_path / f"r.{ext}"
    httpbench.run(srv.url("/rnd?c=10"), requests=50, progress=False, log=path)
    whole = read_log(path)
    data = path.read_bytes()
    header = 1 if ext == "csv" else 0
    for keep in (len(data) - 1, len(data) - 9):  # its newline lost; a number cut too
        path.write_bytes(data[:keep])
        if ext == "jsonl" and keep == len(data) - 1:
            assert read_log(path) == whole  # (a whole object: a whole record)
            continue
        with pytest.warns(UserWarning, match=f"line {50 + header}, the last, is cut short"):
            assert read_log(path) == whole[:49]
    path.write_bytes(data)
    assert read_log(path) == whole  # (a whole file: no warning, every record)
    lines = data.decode().splitlines(keepends=True)
    lines[header + 9] = lines[header + 9].replace("200", "2x0", 1)
    path.write_text("".join(lines))
    with pytest.raises(ValueError, match=f"not a request log \\(line {header + 10}: "):
        read_log(path)
