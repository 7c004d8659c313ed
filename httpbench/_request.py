"""What a run sends, decided in Python before the C loop is made: the URL's
parts and credentials, the fields added (User-Agent, Accept, Authorization,
Host), and the TLS settings."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from . import _check, _core
from ._url import Target, ascii_host, split_url

__all__ = ["parse_url", "url_credentials", "basic_auth", "cpus_here", "with_header", "sent_fields",
           "host_field", "tls_context", "public_url", "USER_AGENT", "IDEMPOTENT", "Headers",
           "Path"]

USER_AGENT = f"httpbench/{_core.__version__}"
# Methods a client may send again unasked (RFC 9110 section 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})
# A value of None leaves out a field a run would add (ADDED_FIELDS).
Headers = (Mapping[str, str | None] | Mapping[bytes, bytes | None]
           | Iterable[tuple[str | bytes, str | bytes | None]])
# The fields every request of a run carries unless the user gives them:
# ab's two. None for either leaves it out (as requests' None does), which
# the drop-in modes use to send what their tools send (wrk neither).
ADDED_FIELDS = frozenset({"user-agent", "accept"})
Path = str | os.PathLike[str]


def parse_url(url: str) -> tuple[str, int, str]:
    """(host, port, path with query) of an http:// or https:// URL;
    ValueError otherwise (httpbench._url.split_url says which scheme)."""
    t = split_url(url)
    return t.host, t.port, t.path


def url_credentials(url: str) -> tuple[str, str] | None:
    """The user and password of an http://user:pass@host/ URL,
    percent-decoded, as curl reads them; None when it has none."""
    parts = urlsplit(url)
    if parts.username is None:
        return None
    return unquote(parts.username), unquote(parts.password or "")


def basic_auth(user: str, password: str) -> str:
    """An Authorization value for HTTP Basic (RFC 7617), UTF-8 as curl sends."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def with_header(headers: Headers | None, name: str, value: str | None
                ) -> list[tuple[Any, Any]]:
    """headers as a list of pairs, with name: value added unless already
    given (any case)."""
    if headers is None:
        pairs: list[tuple[Any, Any]] = []
    elif isinstance(headers, Mapping):
        pairs = list(headers.items())
    else:
        pairs = list(headers)
    lower = name.lower()
    if not any((k.decode("latin-1") if isinstance(k, bytes) else str(k)).lower() == lower
               for k, _ in pairs):
        pairs.append((name, value))
    return pairs


def sent_fields(pairs: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """pairs without those whose value is None: a field a run adds, left
    out. ValueError for None beside another name, which nothing would
    add (Host and Content-Length are the request's own)."""
    out = []
    for name, value in pairs:
        if value is not None:
            out.append((name, value))
            continue
        text = name.decode("latin-1") if isinstance(name, bytes) else str(name)
        if text.lower() not in ADDED_FIELDS:
            raise ValueError(f"headers: None leaves out User-Agent or Accept, the fields a run "
                             f"adds; {text!r} is not one of them")
    return out


def cpus_here() -> int:
    """The CPUs this process may run on (taskset and cgroups included)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def host_field(host: str, port: int, tls: bool = False) -> bytes:
    """The Host field for host:port, the scheme's default port left out
    (RFC 9110 section 7.2), an IPv6 address in brackets."""
    name = f"[{host}]" if ":" in host else ascii_host(host)
    return (name if port == (443 if tls else 80) else f"{name}:{port}").encode("ascii")


def tls_context(target: Target, verify: bool = True, cafile: Path | None = None,
                certfile: Path | None = None, keyfile: Path | None = None,
                server_hostname: str | None = None, tls_min: str | None = "1.2",
                tls_max: str | None = None, ciphers: str | None = None,
                ciphersuites: str | None = None, tls_resume: bool = True,
                http2: bool = False) -> _core._TLS | None:
    """The C loop's TLS settings for an https:// target (None for http://,
    where the TLS-only arguments are an error rather than silently unused),
    offering h2 by ALPN with http2, else http/1.1.
    Files are checked here, so a wrong path is a FileNotFoundError naming
    it before anything is sent."""
    only_tls = {"cafile": cafile, "certfile": certfile, "keyfile": keyfile,
                "server_hostname": server_hostname, "tls_max": tls_max, "ciphers": ciphers,
                "ciphersuites": ciphersuites}
    if not target.tls:
        given = [k for k, v in only_tls.items() if v is not None]
        if given:
            raise ValueError(f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} for "
                             "https:// URLs")
        return None
    lo, hi = _check.tls_version("tls_min", tls_min), _check.tls_version("tls_max", tls_max)
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"tls_min {tls_min!r} is above tls_max {tls_max!r}")
    for name, path in (("cafile", cafile), ("certfile", certfile), ("keyfile", keyfile)):
        if path is not None and not os.path.isfile(path):
            raise FileNotFoundError(f"{name}: no such file: {os.fspath(path)}")
    return _core._TLS(
        verify=bool(verify), cafile=cafile, certfile=certfile, keyfile=keyfile,
        server_hostname=_check.text("server_hostname", server_hostname) or target.host,
        tls_min=lo, tls_max=hi, ciphers=_check.text("ciphers", ciphers),
        ciphersuites=_check.text("ciphersuites", ciphersuites), resume=bool(tls_resume),
        http2=http2)


def public_url(url: str) -> str:
    """url without a password, for reports and saved results."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.netloc.rpartition('@')[2]}"
    return parts._replace(netloc=netloc).geturl()
