"""Shared fixtures; the helpers behind them live in tests/helpers.py."""

from __future__ import annotations

import signal
import ssl
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
import httpbench
from helpers import ScriptedServer, Step, make_pki


def pytest_configure(config: pytest.Config) -> None:
    # A shell starts a background job (`pytest &` in a script) with SIGINT
    # ignored, and an ignored signal stays ignored across exec: every child
    # the Ctrl-C tests start would then shrug SIGINT off and hang. A handler
    # of our own is reset to the default at exec instead.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="module")
def server() -> Iterator[httpbench.Server]:
    """The embedded server, one per test module, with two event loops. A
    module that needs each mode (test_server.py, test_http2_server.py)
    parametrises its own."""
    with httpbench.Server(threads=2) as srv:
        yield srv


@pytest.fixture
def scripted() -> Iterator[Callable[..., ScriptedServer]]:
    """scripted(script, script, ...) starts a ScriptedServer for the test."""
    servers: list[ScriptedServer] = []

    def start(*scripts: Sequence[Step], host: str = "127.0.0.1",
              tls: ssl.SSLContext | None = None, unix: str | None = None) -> ScriptedServer:
        server = ScriptedServer(scripts, host, tls, unix)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A test CA's certificates, made once with the openssl command (see
    helpers.make_pki)."""
    return make_pki(tmp_path_factory.mktemp("pki"))
