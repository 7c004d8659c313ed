"""Shared fixtures: a scripted raw-socket server and small real servers.

The scripted server plays exact byte sequences, one script per accepted
connection, so every framing and bad-input case is a real exchange over a
real socket (as urllib3's test_socketlevel.py does it).
"""

from __future__ import annotations

import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import httpbench

# The benchmarks' helpers (nginx as a peer) serve the tests too.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

Step = tuple[Any, ...]


def answers_at_speed(port: int, path: str, count: int, within: float = 0.5) -> None:
    """Asserts that `count` keep-alive GETs of `path` complete within
    `within` seconds: what a stalled or slow connection beside them must not
    hold up."""
    t0 = time.monotonic()
    with httpbench.Connection("127.0.0.1", port) as conn:
        for _ in range(count):
            assert conn.request("GET", path).status == 200
    assert time.monotonic() - t0 < within


def read_message(sock: socket.socket) -> bytes:
    """Reads one request or response (head and Content-Length body) from a
    raw socket; what came before EOF if it closed first."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return head + b"\r\n\r\n" + rest


class ScriptedServer:
    """Accepts connections on 127.0.0.1 and runs one script on each.

    A script is a list of steps:
      ("recv",)            read one request (recorded in `requests`)
      ("send", data)       send data at once
      ("trickle", data)    send data one byte per segment
      ("sleep", seconds)
      ("close",)           close (FIN)
      ("half_close",)      shut down the sending side, keep reading
      ("reset",)           close with RST (SO_LINGER 0)
    After its last step a script waits for the client to close. Connections
    beyond the scripts are closed at once.
    """

    def __init__(self, scripts: Sequence[Sequence[Step]], host: str = "127.0.0.1") -> None:
        self.scripts = list(scripts)
        self.requests: list[bytes] = []
        self.connections = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._sock = socket.create_server((host, 0), family=family)
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            index = self.connections
            self.connections += 1
            script = self.scripts[index] if index < len(self.scripts) else [("close",)]
            threading.Thread(target=self._run, args=(conn, script), daemon=True).start()

    def _run(self, conn: socket.socket, script: Sequence[Step]) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            for step in script:
                kind = step[0]
                if kind == "recv":
                    self.requests.append(read_message(conn))
                elif kind == "send":
                    conn.sendall(step[1])
                elif kind == "trickle":
                    for i in range(len(step[1])):
                        conn.sendall(step[1][i : i + 1])
                        time.sleep(0.0005)
                elif kind == "sleep":
                    self._stop.wait(step[1])
                elif kind == "half_close":
                    conn.shutdown(socket.SHUT_WR)
                elif kind == "close":
                    conn.close()
                    return
                elif kind == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    conn.close()
                    return
                else:
                    raise ValueError(f"unknown step {kind!r}")
            conn.settimeout(0.05)
            while not self._stop.is_set():
                try:
                    if not conn.recv(65536):
                        break
                except TimeoutError:
                    continue
        except OSError:
            pass  # the client went away; what it saw is the test's business
        except BaseException as e:  # noqa: BLE001 - reported by close()
            self.errors.append(e)
        finally:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(5)
        assert not self.errors, self.errors


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
