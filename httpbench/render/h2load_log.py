"""`httpbench h2load --log-file PATH`: h2load 1.52's per-request log (its
Client::on_stream_close) from httpbench's own (reqlog): a line a request,
three tab-separated columns: when it was sent, in microseconds since the
epoch; its status, or -1 when its stream failed; microseconds from its
send to its response's end. Lines in the order the responses ended, as
h2load writes them with one thread.

h2load logs -1 for an HTTP/2 stream closed with an error (the server's
RST_STREAM, or a GOAWAY that left it unprocessed: httpbench's failure
class `reset` on a stream); the requests a failed connection took with
it (a connect refused, a response cut short, a timeout) are counted
failed and not logged, nor one in flight when -D's time ran out; a
warm-up's are not in httpbench's log either."""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import IO

from ..reqlog import LogRecord

__all__ = ["h2load_log_lines", "write_h2load_log"]

def _epoch(start_time: str) -> float:
    """Result.start_time (UTC, ISO 8601) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(start_time).timestamp()


def h2load_log_lines(records: Iterable[LogRecord], start_time: str) -> list[str]:
    """h2load's lines for a run's records (read_log's), its start_time
    (Result.start_time) the instant the records' times count from."""
    base = _epoch(start_time)
    kept = [x for x in records if x.failure == "" or (x.failure == "reset" and x.stream)]
    kept.sort(key=lambda x: x.intended_start + x.latency)
    lines = []
    for x in kept:
        sent = x.start + x.connect
        end = x.intended_start + x.latency
        status = x.status if x.failure == "" and x.status is not None else -1
        lines.append(f"{round((base + sent) * 1e6)}\t{status}\t"
                     f"{max(0, round((end - sent) * 1e6))}\n")
    return lines


def write_h2load_log(f: IO[str], records: Iterable[LogRecord], start_time: str) -> None:
    """Appends h2load's lines for records to f (opened for appending, as
    h2load opens its --log-file: a second run adds to the first's)."""
    f.writelines(h2load_log_lines(records, start_time))
