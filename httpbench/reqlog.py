"""The per-request log: run(log="requests.csv") writes one record per
request, by the file's extension as CSV (a header row first), JSON lines
or an SQLite table `requests`; read_log() reads any of them back.

    intended_start, start   seconds from the result's start time
    latency                 seconds, from the intended start (the run's latency)
    status                  the response's status; None (empty) when none came
    bytes_sent, bytes_received
                            the request's and its response's bytes (HTTP/2: the
                            request's body and the response's DATA)
    failure                 "" when complete, else its failure class, or "cancelled"
    name                    a scenario request's name ("" for a run of one request)
    connection, thread      which connection (over all threads) and loop thread
    stream                  HTTP/2's stream id; None (empty) over HTTP/1.1
    connect                 seconds of its latency that were its connection's
                            connect (handshakes included): 0 on an open connection
    first_byte              its response's first byte (HTTP/2: its head), in seconds
                            from the start time; None (empty) when none came

The records are written by a C thread from rings the loop threads fill
(csrc/rlog.c): the loop never waits for the log, and a record that finds
its ring full is dropped and counted (Result.log_dropped). Cancelled
requests are logged; a warmup's are not.
"""

from __future__ import annotations

import csv
import fcntl
import json
import os
import sqlite3
import stat
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from ._check import log_format

__all__ = ["LogRecord", "read_log", "iter_log", "FIELDS", "log_format", "LogFile", "writable_kind"]

FIELDS = ("intended_start", "start", "latency", "status", "bytes_sent", "bytes_received",
          "failure", "name", "connection", "thread", "stream", "connect", "first_byte")
# The fields of a log written before connect and first_byte were fields.
FIELDS_BEFORE = FIELDS[:11]
# Records a ring holds per loop thread before the writer must have taken
# some (72 bytes each: 4.5 MiB a thread).
RING_RECORDS = 65536


class LogRecord(NamedTuple):
    """One request of a run's log (read_log)."""

    intended_start: float
    start: float
    latency: float
    status: int | None
    bytes_sent: int
    bytes_received: int
    failure: str
    name: str
    connection: int
    thread: int
    stream: int | None
    # (Last, with defaults: a log written before they were fields reads so.)
    connect: float = 0.0
    first_byte: float | None = None


def _csv_name(name: str) -> bytes:
    """A name as one CSV field (RFC 4180: quoted when it must be)."""
    if any(c in name for c in ',"\r\n'):
        name = '"' + name.replace('"', '""') + '"'
    return name.encode("utf-8")


def _json_name(name: str) -> bytes:
    return json.dumps(name)[1:-1].encode("ascii")


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device"))


def writable_kind(name: str, path: str, mode: int) -> None:
    """ValueError naming the argument and the path when `mode` (a stat's)
    is not what a file of figures is written to: a regular file, or a
    character device (/dev/null throws a log away)."""
    for test, what in _KINDS:
        if test(mode):
            raise ValueError(f"{name}: {path} is {what}, not a file to write to")


class LogFile:
    """The log's file for one run: opened before the run (a path that
    cannot be written is an OSError at once; a directory, a FIFO or a
    socket a ValueError), handed to the C loop as a descriptor, and for
    SQLite filled from the loop's CSV after it. A file that exists is left
    as it was until the first record is written (the C writer empties it
    then): a run that never starts changes nothing. A run that started
    and wrote no record leaves an empty log of its format (a CSV its
    header, a JSONL nothing, SQLite an empty table): never the records of
    an earlier run beside log_records == 0."""

    def __init__(self, path: str | os.PathLike[str], names: Sequence[str], sample: float,
                 seed: int) -> None:
        self.path = os.fspath(path)
        self.format = log_format("log", path)
        # SQLite is written after the run from the CSV the loop wrote.
        self.written_path = self.path + ".httpbench.csv" if self.format == "sqlite" \
            else self.path
        for p in {self.path, self.written_path}:
            try:
                writable_kind("log", p, os.stat(p).st_mode)
            except FileNotFoundError:
                pass
        self.created = not os.path.lexists(self.written_path)
        try:
            # Never blocking (a FIFO made meanwhile would hold open() until a
            # reader came): what was opened is looked at before it is used.
            fd = os.open(self.written_path,
                         os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
        except OSError as e:
            raise OSError(e.errno, f"log: cannot write {self.path}: {e.strerror}") from None
        try:
            writable_kind("log", self.written_path, os.fstat(fd).st_mode)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except BaseException:
            os.close(fd)
            raise
        self.fd: int | None = fd
        escape = _json_name if self.format == "jsonl" else _csv_name
        self.names = [escape(n) for n in names] or [b""]
        self.sample, self.seed = sample, seed

    def setting(self, delay_ns: int = 0) -> tuple[Any, ...]:
        """The loop's `log` setting; the descriptor is the loop's from then."""
        assert self.fd is not None
        return (self.fd, 1 if self.format == "jsonl" else 0, self.names, self.sample,
                self.seed, delay_ns, RING_RECORDS)

    def given(self) -> None:
        """The loop took the descriptor (it closes it)."""
        self.fd = None

    def abandon(self) -> None:
        """Nothing ran: a file made for it goes, one that was there stays
        as it was (nothing was written to it)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._drop_unwritten()

    def _drop_unwritten(self) -> None:
        if self.created and os.path.isfile(self.written_path) and \
                os.path.getsize(self.written_path) == 0:
            os.unlink(self.written_path)

    def finish(self, records: int) -> str:
        """After the run (`records` written): for SQLite, the table is made
        from the loop's CSV in a file of its own, then put in place of the
        path, so a run that cannot write it (a full disk) leaves the path
        as it was and the CSV beside it; with no record, the log emptied
        (the C writer empties it only at its first record). Returns "" or
        why the table could not be written."""
        if records == 0 and self.format != "sqlite":
            try:
                if os.path.isfile(self.written_path):
                    with open(self.written_path, "w", encoding="utf-8") as f:
                        f.write(",".join(FIELDS) + "\n" if self.format == "csv" else "")
            except OSError as e:
                return f"the log could not be emptied ({e.strerror or e})"
            return ""
        if self.format != "sqlite":
            return ""
        building = self.path + ".httpbench.db"
        try:
            if os.path.lexists(building):
                os.unlink(building)
            db = sqlite3.connect(building)
            try:
                db.execute("CREATE TABLE requests (intended_start REAL, start REAL, "
                           "latency REAL, status INTEGER, bytes_sent INTEGER, "
                           "bytes_received INTEGER, failure TEXT, name TEXT, "
                           "connection INTEGER, thread INTEGER, stream INTEGER, connect REAL, "
                           "first_byte REAL)")
                if records:
                    with open(self.written_path, newline="", encoding="utf-8") as f:
                        rows = csv.reader(f)
                        next(rows, None)
                        db.executemany("INSERT INTO requests VALUES "
                                       f"({','.join('?' * len(FIELDS))})",
                                       (_typed(r) for r in rows))
                db.commit()
            finally:
                db.close()
            os.replace(building, self.path)
        except (sqlite3.Error, OSError) as e:
            for p in (building, building + "-journal"):
                if os.path.lexists(p):
                    os.unlink(p)
            return (f"the SQLite table could not be written ({e}); the records are in "
                    f"{self.written_path}")
        os.unlink(self.written_path)
        return ""


def _typed(row: Sequence[str], width: int = len(FIELDS)) -> LogRecord:
    """A CSV row of `width` fields (a header's) as a record: its numbers,
    and None for an empty status or stream."""
    if len(row) != width:
        raise ValueError(f"{len(row)} fields, where the header has {width}")
    return LogRecord(float(row[0]), float(row[1]), float(row[2]),
                     int(row[3]) if row[3] else None, int(row[4]), int(row[5]), row[6], row[7],
                     int(row[8]), int(row[9]), int(row[10]) if row[10] else None,
                     *((float(row[11]), float(row[12]) if row[12] else None)
                       if width > 11 else ()))


class _NotALog(ValueError):
    """read_log's own refusal, its words whole (not wrapped as a record's)."""


def _cut_short(path: str | os.PathLike[str]) -> bool:
    """Whether the file's last line has no newline: a record cut short, as
    a run killed while writing it leaves (the writer ends each with one)."""
    with open(path, "rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"


def _drop_cut(path: str | os.PathLike[str], line: int) -> None:
    """Says that the last record (line `line`), cut short, is left out:
    the records before it are whole, and a cut number may still parse."""
    warnings.warn(f"{os.fspath(path)}: line {line}, the last, is cut short (no newline ends "
                  "it, as when the run was killed while writing it): left out", stacklevel=4)


def read_log(path: str | os.PathLike[str], frame: bool = False) -> Any:
    """The records of a run's log, by the file's extension (.csv, .jsonl,
    .db or .sqlite): a list of LogRecord, or with frame=True a pandas
    DataFrame of them (pandas imported here). ValueError for another
    extension or a file that is not a log."""
    records = list(iter_log(path))
    if not frame:
        return records
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("read_log(frame=True) needs pandas: pip install pandas") from None
    return pd.DataFrame(records, columns=list(FIELDS))


def iter_log(path: str | os.PathLike[str]) -> Iterator[LogRecord]:
    """read_log's records one at a time, in the file's order, none held:
    for a log too long to hold (the drop-in modes' per-request outputs
    read it so). The same ValueErrors, raised when the record that is not
    one is reached."""
    fmt = log_format("path", path)
    line = 0
    try:
        if fmt == "csv":
            cut = _cut_short(path)
            with open(path, newline="", encoding="utf-8") as f:
                rows = csv.reader(f)
                head = next(rows, None)
                if head is None or tuple(head) not in (FIELDS, FIELDS_BEFORE):
                    raise _NotALog(f"{os.fspath(path)}: not a request log (its header is "
                                   f"{head!r})")
                last: tuple[int, list[str]] | None = None  # (parsed a row late: it may be cut)
                for row in rows:
                    if last is not None:
                        line = last[0]
                        yield _typed(last[1], len(head))
                    last = (rows.line_num, row)
                if last is not None:
                    line = last[0]
                    if cut:
                        _drop_cut(path, line)
                    else:
                        yield _typed(last[1], len(head))
        elif fmt == "jsonl":
            cut = _cut_short(path)
            with open(path, encoding="utf-8") as f:
                for line, text in enumerate(f, 1):
                    if cut and not text.endswith("\n"):
                        try:
                            record = LogRecord(**json.loads(text))
                        except (TypeError, json.JSONDecodeError):
                            _drop_cut(path, line)
                        else:
                            yield record
                    elif text.strip():
                        yield LogRecord(**json.loads(text))
        else:
            db = sqlite3.connect(f"file:{os.fspath(path)}?mode=ro", uri=True)
            try:
                # (A table written before `connect` and `first_byte` were
                # fields reads their defaults.)
                have = {r[1] for r in db.execute("PRAGMA table_info(requests)")}
                fields = FIELDS if "connect" in have else FIELDS_BEFORE
                for row in db.execute(f"SELECT {', '.join(fields)} FROM requests ORDER BY rowid"):
                    yield LogRecord(*row)
            finally:
                db.close()
    except _NotALog as e:
        raise ValueError(str(e)) from None
    except (KeyError, TypeError, IndexError, ValueError, sqlite3.Error) as e:
        # (JSONDecodeError is a ValueError.)
        at = f"line {line}: " if line else ""
        raise ValueError(f"{os.fspath(path)}: not a request log ({at}{e})") from None
