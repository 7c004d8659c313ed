"""Range checks for every number a user can pass, made before it reaches C.

Out of range (negative, NaN, infinite, absurdly large) or not a number at
all: a ValueError naming the argument. The C types check again on their
own (module.c), with the same limits.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import socket
from collections.abc import Iterable

from . import _core

__all__ = [
    "YEAR", "MAX_REQUESTS", "MAX_CONCURRENCY", "MAX_THREADS", "MAX_BYTES", "MAX_RATE",
    "MAX_PIPELINE",
    "MAX_STREAMS",
    "MAX_WINDOW",
    "MAX_SOCKET_BUFFER",
    "count", "seconds", "rate", "port", "warmup", "byte_size", "tls_version", "text",
    "UNIX_PATH_MAX", "unix_socket", "allow", "MAX_STAGES", "stages", "shape_total",
    "parse_address", "check_label", "log_format", "flag",
]

# The limits live in C (csrc/bench.h), once; read here for the checks and
# their messages. Durations and timeouts: at most a year (None is "no
# limit" where documented).
YEAR = _core.MAX_SECONDS
HOUR = 3600.0  # a grace's or a linger's most
MAX_REQUESTS = _core.MAX_REQUESTS
MAX_CONCURRENCY = _core.MAX_CONCURRENCY
MAX_THREADS = _core.MAX_THREADS
MAX_BYTES = _core.MAX_BYTES
MAX_RATE = _core.MAX_RATE
MAX_PIPELINE = _core.MAX_PIPELINE
MAX_STREAMS = _core.MAX_STREAMS
MAX_WINDOW = _core.MAX_WINDOW
MAX_SOCKET_BUFFER = _core.MAX_SOCKET_BUFFER


def count(name: str, value: object, lo: int = 1, hi: int = MAX_REQUESTS) -> int:
    """A whole number from lo to hi."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number from {lo:,} to {hi:,}, not {value!r}")
    v = int(value)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be from {lo:,} to {hi:,}, not {value!r}")
    return v


# What a switch's message adds: requests' verify takes a CA file's path.
_FLAG_HINTS = {"verify": " (a CA file goes in cafile)"}


def flag(name: str, value: object) -> bool:
    """True or False (a NumPy bool, or the whole numbers 0 and 1, too):
    anything else was taken as its truth, so keepalive="false" kept
    connections alive and verify="ca.pem" verified against the system's
    CAs, the file unread."""
    if isinstance(value, bool):
        return value
    kind = type(value)
    if (kind.__module__ == "numpy" and kind.__name__ in ("bool", "bool_")) or (
            isinstance(value, numbers.Integral) and int(value) in (0, 1)):
        return bool(value)
    raise ValueError(f"{name} must be True or False, not {value!r}{_FLAG_HINTS.get(name, '')}")


def seconds(name: str, value: object) -> float:
    """A finite number of seconds above zero, at most a year."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}")
    try:
        v = float(value)
    except OverflowError:
        v = math.inf
    if not 0 < v <= YEAR:
        raise ValueError(f"{name} must be a number of seconds above 0 and at most a year "
                         f"({YEAR:.0f}), not {value!r}")
    return v


def within_an_hour(name: str, value: object) -> float:
    """0, or seconds up to HOUR (a grace, a linger)."""
    if value == 0 and not isinstance(value, bool):
        return 0.0
    try:
        v = seconds(name, value)
    except ValueError:
        v = math.nan
    if not v <= HOUR:
        raise ValueError(f"{name} must be from 0 to {HOUR:.0f} seconds, not {value!r}")
    return v


def rate(value: object, concurrency: int) -> float:
    """Requests a second: finite, above zero, at most MAX_RATE, and not so
    low that a connection would wait more than a year between starts."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"rate must be a number of requests a second, not {value!r}")
    v = float(value)
    if not 0 < v <= MAX_RATE:
        raise ValueError(f"rate must be above 0 and at most {MAX_RATE:.0e}, not {value!r}")
    if concurrency / v > YEAR:
        raise ValueError(f"rate {value!r} is too low for {concurrency} connections")
    return v


def port(name: str, value: object, lo: int = 1) -> int:
    return count(name, value, lo, 65535)


def warmup(value: object) -> int | float | None:
    """None; an int: requests; a float: seconds."""
    if value is None:
        return None
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return count("warmup", value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return seconds("warmup", value)
    raise ValueError(f"warmup must be a number of requests (int) or seconds (float), "
                     f"not {value!r}")


_UNITS = {"": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
          "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}


def byte_size(name: str, text: str) -> int:
    """A size from the command line: bytes, or with K, M or G (powers of
    1024, as in 256M or 256MiB)."""
    t = text.strip().lower()
    digits = t.rstrip("kmgib")
    unit = t[len(digits):]
    if not digits.isdigit() or unit not in _UNITS:
        raise ValueError(f"{name} takes bytes, or a size like 256M, not {text!r}")
    return count(name, int(digits) * _UNITS[unit], 1, MAX_BYTES)


# TLS versions by the names users give them (Python's ssl, curl, ab's -f).
_TLS_VERSIONS = {"1.2": 0x0303, "1.3": 0x0304}


def tls_version(name: str, value: object) -> int | None:
    """"1.2" or "1.3" (also "TLSv1.2", "TLS1.3") as OpenSSL numbers it, or
    None for OpenSSL's default."""
    if value is None:
        return None
    key = str(value).strip().lower().removeprefix("tls").removeprefix("v")
    if isinstance(value, bool) or key not in _TLS_VERSIONS:
        raise ValueError(f"{name} must be '1.2' or '1.3' (or None), not {value!r}")
    return _TLS_VERSIONS[key]


def text(name: str, value: object) -> str | None:
    """None, or a str without NUL (a cipher list, a host name)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError(f"{name} must be a non-empty str without NUL, not {value!r}")
    return value


# sockaddr_un's sun_path holds 108 bytes, the terminating NUL among them.
UNIX_PATH_MAX = 107


def unix_socket(name: str, value: object) -> str | None:
    """None, or a Unix socket's path (str or PathLike) that fits a
    sockaddr_un: 1 to 107 bytes in the file system's encoding, no NUL."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{name} must be a path (str or PathLike), not {value!r}")
    path = os.fspath(value)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    size = len(os.fsencode(path))
    if not 1 <= size <= UNIX_PATH_MAX or "\0" in path:
        raise ValueError(f"{name} must be a path of 1 to {UNIX_PATH_MAX} bytes without NUL, "
                         f"not {path!r} ({size} bytes)")
    return path


def allow(value: object) -> list[tuple[str, int, str]]:
    """The relay's allow list: destinations as "host" or "host:port"
    ("[v6]:port" for an IPv6 address), each resolved now to one numeric
    address. Returns (host, port or 0, address) triples."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"allow must be a list of 'host' or 'host:port' strings, not {value!r}")
    out = []
    for entry in value:
        if not isinstance(entry, str) or not entry or any(c.isspace() for c in entry):
            raise ValueError(f"allow takes 'host' or 'host:port' strings, not {entry!r}")
        host, port = entry, 0
        if entry.startswith("["):
            end = entry.find("]")
            rest = entry[end + 1:] if end > 0 else "?"
            if end < 0 or (rest and not rest.startswith(":")):
                raise ValueError(f"allow: not host or host:port: {entry!r}")
            host, portpart = entry[1:end], rest[1:]
        elif entry.count(":") == 1:
            host, portpart = entry.split(":")
        else:
            portpart = ""
        if portpart:
            if not portpart.isdigit():
                raise ValueError(f"allow: the port of {entry!r} is not a number")
            port = _port_of(entry, int(portpart))
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:
            raise ValueError(f"allow: cannot resolve {host!r}: {e}") from None
        out.append((host, port, str(infos[0][4][0])))
    return out


def _port_of(entry: str, port: int) -> int:
    if not 1 <= port <= 65535:
        raise ValueError(f"allow: the port of {entry!r} must be from 1 to 65535")
    return port


MAX_STAGES = 1000


def stages(value: object, name: str = "stages", what: str = "rate",
           top: float = MAX_RATE) -> list[tuple[float, float]]:
    """A shape: 1 to MAX_STAGES (seconds, value) pairs, seconds as seconds()
    checks them, a value (a rate; connections) finite from 0 to top, not 0
    throughout; connections reach 1 somewhere (none opens below it)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a list of (seconds, {what}) pairs, not {value!r}")
    out = []
    for stage in value:
        if isinstance(stage, (str, bytes)) or not isinstance(stage, Iterable) or \
                len(pair := tuple(stage)) != 2:
            raise ValueError(f"{name}: each stage is a (seconds, {what}) pair, not {stage!r}")
        secs = seconds(f"{name}: a stage's seconds", pair[0])
        v = pair[1]
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 <= float(v) <= top:
            raise ValueError(f"{name}: a stage's {what} must be from 0 to {top:g}, not {v!r}")
        out.append((secs, float(v)))
    if not 1 <= len(out) <= MAX_STAGES:
        raise ValueError(f"{name}: 1 to {MAX_STAGES} stages, not {len(out)}")
    if name == "stages" and shape_total(out) < 1:
        raise ValueError(f"{name}: the shape holds no request (its rates are all 0)")
    if all(v == 0 for _, v in out):
        raise ValueError(f"{name}: the shape is 0 throughout")
    peak = max(v for _, v in out)
    if what == "connections" and peak < 1:
        # Connection i runs while the shape is at i + 1 or above: under 1
        # throughout, none ever opens (a run of nothing, not an error of
        # the server's).
        raise ValueError(f"{name}: the shape never reaches one connection (its peak is {peak:g})")
    return out


def shape_total(shape: list[tuple[float, float]]) -> float:
    """A shape's integral: each stage ramps linearly from the last one's
    value (0 before the first)."""
    previous, total = 0.0, 0.0
    for secs, v in shape:
        total += secs * (previous + v) / 2
        previous = v
    return total


# The settings of a run's outputs: the metrics' address and label
# (httpbench.metrics serves them), the log's file (httpbench.reqlog writes
# it); checked here, with the rest, before anything runs.

def parse_address(name: str, text: object) -> tuple[str, int]:
    """HOST:PORT (or [IPv6]:PORT) to listen on, PORT 1..65535; ValueError
    naming the argument otherwise. Not 0, any free port: a scraper is
    told where to scrape, and no one would be told which port that was."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be 'HOST:PORT' (127.0.0.1:9464), not {text!r}")
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:(\d{1,5})|([^\s:\[\]]*):(\d{1,5})", text)
    if m is None:
        raise ValueError(f"{name} must be 'HOST:PORT' (127.0.0.1:9464), not {text!r}")
    host = m.group(1) if m.group(1) is not None else m.group(3)
    port = int(m.group(2) or m.group(4))
    if port == 0:
        raise ValueError(f"{name}'s port must be 1 to 65535, not 0: a scraper is told where to "
                         "scrape, and no one would be told which port 0 picked")
    if port > 65535:
        raise ValueError(f"{name}'s port must be 1 to 65535, not {port}")
    return host or "0.0.0.0", port


def check_label(name: str, value: object) -> str:
    """A label value: text of 1 to 128 printable characters."""
    if not isinstance(value, str) or not 0 < len(value) <= 128 or not value.isprintable():
        raise ValueError(f"{name} must be text of 1 to 128 printable characters, not {value!r}")
    return value


# The log's format by its file's extension.
_LOG_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".db": "sqlite", ".sqlite": "sqlite"}


def log_format(name: str, path: object) -> str:
    """The log's format by its file's extension: csv, jsonl or sqlite;
    ValueError naming the argument for another."""
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"{name} must be a file's path, not {path!r}")
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in _LOG_FORMATS:
        raise ValueError(f"{name} must end in .csv, .jsonl, .db or .sqlite (the format is "
                         f"the extension's), not {os.fspath(path)!r}")
    return _LOG_FORMATS[ext]
