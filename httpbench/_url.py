"""URLs as the loop, Connection.from_url and the command line read them."""

from __future__ import annotations

import base64
from typing import NamedTuple
from urllib.parse import unquote, urlsplit

__all__ = ["Target", "split_url", "Proxy", "split_proxy", "ProxyRoute", "proxy_route"]

DEFAULT_PORTS = {"http": 80, "https": 443}


class Target(NamedTuple):
    """What a URL names: its scheme, whether it is TLS, host, port and the
    path with its query."""

    scheme: str
    tls: bool
    host: str
    port: int
    path: str


def ascii_host(host: str) -> str:
    """host as it goes to the resolver, into Host, SNI and CONNECT: an ASCII
    name or address as it is (a DNS label may be 63 characters, which
    Python's idna codec refuses past 63 with the port glued on), a name
    with other characters as its IDNA A-labels (RFC 5891), encoded once,
    here. ValueError naming the host when it has no such form."""
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError as e:
        raise ValueError(f"the host {host!r} has no IDNA (ASCII) form: {e}") from None


def split_url(url: str) -> Target:
    """The Target of an http:// or https:// URL; ValueError otherwise."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS:
        # (urlsplit takes "localhost:8080" for a scheme and its port.) A
        # word alone may be a mistyped command: no hint.
        bare = "://" not in url and any(c in url for c in ":/.")
        hint = f" (did you mean {'http://' + url.strip()!r}?)" if bare else ""
        raise ValueError(f"only http:// and https:// URLs are supported, not {url!r}{hint}")
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
    return Target(parts.scheme, parts.scheme == "https", ascii_host(parts.hostname), port, path)


class Proxy(NamedTuple):
    """A forward proxy: where it listens, and its credentials if any."""

    host: str
    port: int
    credentials: tuple[str, str] | None

    def __str__(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return f"{name}:{self.port}"


def split_proxy(proxy: str) -> Proxy:
    """The Proxy of "http://[user:pass@]host:port" or ab's "host:port";
    ValueError otherwise (an https:// proxy, which TLS to the proxy itself
    would need, is not supported)."""
    if not isinstance(proxy, str) or not proxy:
        raise ValueError(f"proxy must be a URL like http://host:port, not {proxy!r}")
    text = proxy if "://" in proxy else "http://" + proxy
    parts = urlsplit(text)
    if parts.scheme != "http":
        raise ValueError(f"only http:// proxies are supported, not {proxy!r}")
    if not parts.hostname:
        raise ValueError(f"the proxy has no host: {proxy!r}")
    try:
        port = parts.port if parts.port is not None else 80
    except ValueError as e:
        raise ValueError(f"bad port in the proxy {proxy!r}: {e}") from None
    if port == 0 or parts.path not in ("", "/") or parts.query:
        raise ValueError(f"the proxy must be http://[user:pass@]host:port, not {proxy!r}")
    creds = None
    if parts.username is not None:
        creds = (unquote(parts.username), unquote(parts.password or ""))
    return Proxy(ascii_host(parts.hostname), port, creds)


class ProxyRoute(NamedTuple):
    """How requests to host:port go through a proxy: the address to connect
    to; for an https:// target the CONNECT to send on each new socket; for
    an http:// one the origin to put before each path (absolute form) and
    the Proxy-Authorization to add; the proxy's name for reports."""

    host: str
    port: int
    tunnel: bytes | None
    origin: str | None
    auth: str | None
    label: str


def proxy_route(proxy: str, host: str, port: int, tunnel: bool,
                user_agent: str = "") -> ProxyRoute:
    """The ProxyRoute for reaching host:port through proxy (see
    split_proxy): by a CONNECT tunnel when tunnel (TLS, or HTTP/2, which
    goes inside one even to an http:// server), else in absolute form."""
    via = split_proxy(proxy)
    auth = None
    if via.credentials is not None:
        token = base64.b64encode(":".join(via.credentials).encode()).decode("ascii")
        auth = "Basic " + token
    name = f"[{host}]" if ":" in host else host
    if tunnel:
        # RFC 9110 section 9.3.6: CONNECT names the authority, port always.
        lines = [f"CONNECT {name}:{port} HTTP/1.1", f"Host: {name}:{port}"]
        lines += [f"User-Agent: {user_agent}"] if user_agent else []
        lines += [f"Proxy-Authorization: {auth}"] if auth else []
        # Every part is ASCII: the host encoded once (ascii_host), the
        # credentials in base64. (The idna codec over the whole request
        # refused credentials past about 20 characters as a long label.)
        connect = ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")
        return ProxyRoute(via.host, via.port, connect, None, None, str(via))
    # RFC 9112 section 3.2.2: to a proxy, the absolute form.
    authority = name if port == 80 else f"{name}:{port}"
    return ProxyRoute(via.host, via.port, None, f"http://{authority}", auth, str(via))

