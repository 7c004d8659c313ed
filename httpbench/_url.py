"""URLs as the loop, Connection.from_url and the command line read them."""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import urlsplit

__all__ = ["Target", "split_url"]

DEFAULT_PORTS = {"http": 80, "https": 443}


class Target(NamedTuple):
    """What a URL names: its scheme, whether it is TLS, host, port and the
    path with its query."""

    scheme: str
    tls: bool
    host: str
    port: int
    path: str


def split_url(url: str) -> Target:
    """The Target of an http:// or https:// URL; ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS:
        raise ValueError(f"only http:// and https:// URLs are supported, not {url!r}")
    if not parts.hostname:
        raise ValueError(f"the URL has no host: {url!r}")
    try:
        port = parts.port if parts.port is not None else DEFAULT_PORTS[parts.scheme]
    except ValueError as e:
        raise ValueError(f"bad port in {url!r}: {e}") from None
    if port == 0:
        raise ValueError(f"bad port in {url!r}: 0")
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(parts.scheme, parts.scheme == "https", parts.hostname, port, path)
