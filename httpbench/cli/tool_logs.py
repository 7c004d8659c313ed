"""The drop-in modes' per-request outputs, made after a run from
httpbench's own log (reqlog's records) in each tool's format:

- h2load's --log-file (its Client::on_stream_close): a line a response,
  three tab-separated columns: the send in microseconds since the epoch,
  the status or -1 for a stream that failed, the microseconds from the
  send to the response's end; in the order the responses ended (the
  log's: each loop thread's records in the order of their outcomes, the
  threads' a batch at a time, as h2load's threads' lines interleave).
- ab's -g (gnuplot): a header line, then a line a complete request, tab
  separated: its start (ctime's words, local time), its start in whole
  seconds since the epoch, then in whole milliseconds (ab's rounding) its
  connect, its time less the connect, its time, and its wait for the
  first byte from its send; in the order of its time, as ab sorted its
  figures before writing them.
- hey's -o csv: a header row, then a row a response, in the order they
  came (the log's): its time, DNS+dialup (its connect), DNS, Request-write,
  Response-delay (from its send to its first byte), Response-read (from
  its first byte to its end), in seconds with four decimals, its status,
  and its offset from the run's start.

Which requests each tool logs is its own: see each function. h2load's
and hey's lines are made as the records are read, none held; ab's are
sorted, so each complete request's four times are held (ab holds its
own per request too)."""

from __future__ import annotations

import datetime
import itertools
import time
from collections.abc import Iterable, Iterator

from ..reqlog import LogRecord

__all__ = ["h2load_log_lines", "ab_gnuplot_lines", "hey_csv_lines", "HEY_MAX_ROWS"]

# hey keeps at most this many responses' rows (its report.go's maxRes).
HEY_MAX_ROWS = 1_000_000


def _epoch(start_time: str) -> float:
    """Result.start_time (UTC, ISO 8601, to the millisecond) as seconds
    since the epoch: the instant the records' times count from."""
    return datetime.datetime.fromisoformat(start_time).timestamp()


def _end(x: LogRecord) -> float:
    return x.intended_start + x.latency


def _sent(x: LogRecord) -> float:
    return x.start + x.connect


def h2load_log_lines(records: Iterable[LogRecord], start_time: str) -> Iterator[str]:
    """h2load's lines. It logs -1 for an HTTP/2 stream closed with an
    error (the server's RST_STREAM, or a GOAWAY that left it unprocessed:
    httpbench's class `reset` on a stream); the requests a failed
    connection took with it (a connect refused, a response cut short, a
    timeout) are counted failed and not logged, nor one in flight when
    -D's time ran out (a warm-up's are not in httpbench's log either)."""
    base = _epoch(start_time)
    for x in records:
        if x.failure == "" or (x.failure == "reset" and x.stream):
            sent = _sent(x)
            status = x.status if x.failure == "" and x.status is not None else -1
            yield (f"{round((base + sent) * 1e6)}\t{status}\t"
                   f"{max(0, round((_end(x) - sent) * 1e6))}\n")


def _ab_ms(seconds: float) -> int:
    """ab's ap_round_ms: microseconds to the nearest millisecond, half up."""
    return (max(0, round(seconds * 1e6)) + 500) // 1000


def ab_gnuplot_lines(records: Iterable[LogRecord], start_time: str) -> Iterator[str]:
    """ab's -g lines: the complete requests (ab's stats are its `done`,
    the Complete requests line)."""
    base = _epoch(start_time)
    # (Each one's time, start, connect and wait: what the lines need.)
    kept = sorted((_end(x) - x.start, x.start, x.connect,
                   x.first_byte - _sent(x) if x.first_byte is not None else 0.0)
                  for x in records if x.failure == "")
    yield "starttime\tseconds\tctime\tdtime\tttime\twait\n"
    for took, start, connect, wait in kept:
        began = base + start
        # (apr_ctime: zero-padded day; time.strftime's names are the C
        # locale's, as ab's are.)
        yield (f"{time.strftime('%a %b %d %H:%M:%S %Y', time.localtime(began))}\t"
               f"{int(began)}\t{_ab_ms(connect)}\t{_ab_ms(took - connect)}\t"
               f"{_ab_ms(took)}\t{_ab_ms(wait)}\n")


def hey_csv_lines(records: Iterable[LogRecord]) -> Iterator[str]:
    """hey's -o csv rows: the responses (any status; a request that got no
    response is an error hey leaves out), at most HEY_MAX_ROWS. httpbench
    resolves the host once, before the run, so DNS is 0; it does not time
    a request's write apart, so Request-write is 0 and the write's time is
    in Response-delay (hey's is a write's own, under 0.1 ms but for a
    large body)."""
    yield ("response-time,DNS+dialup,DNS,Request-write,Response-delay,Response-read,"
           "status-code,offset\n")
    complete = (x for x in records if x.failure == "")
    for x in itertools.islice(complete, HEY_MAX_ROWS):
        end, sent = _end(x), _sent(x)
        first = x.first_byte if x.first_byte is not None else end
        cells = (end - x.start, x.connect, 0.0, 0.0, max(0.0, first - sent), max(0.0, end - first))
        yield ",".join(f"{c:4.4f}" for c in cells) + f",{x.status or 0},{x.start:4.4f}\n"
