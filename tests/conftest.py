"""Shared fixtures; the helpers behind them live in tests/helpers.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pytest
from helpers import ScriptedServer, Step

@pytest.fixture
def scripted() -> Iterator[Callable[..., ScriptedServer]]:
    """scripted(script, script, ...) starts a ScriptedServer for the test."""
    servers: list[ScriptedServer] = []

    def start(*scripts: Sequence[Step], host: str = "127.0.0.1") -> ScriptedServer:
        server = ScriptedServer(scripts, host)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
