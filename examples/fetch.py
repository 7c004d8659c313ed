"""Fetch a URL many times over one keep-alive connection and show what came back.

    python examples/fetch.py                          # against a local http.server it starts
    python examples/fetch.py HOST PORT TARGET         # e.g. 127.0.0.1 8080 /rnd?c=2048
"""

from __future__ import annotations

import http.server
import sys
import threading
import time

import httpbench


class RandomBytes(http.server.BaseHTTPRequestHandler):
    """GET /rnd?c=N: N printable bytes, kept alive (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"
    # The head and the body leave in two writes; with Nagle on, the second
    # waits for the client's delayed ACK, 40 ms a request.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:
        n = int(self.path.partition("c=")[2] or 2048)
        self.send_response(200)
        self.send_header("Content-Length", str(n))
        self.end_headers()
        self.wfile.write(bytes(33 + i % 94 for i in range(n)))

    def log_message(self, format: str, *args: object) -> None:
        pass


def main(host: str, port: int, target: str, count: int = 2000) -> None:
    with httpbench.Connection(host, port, timeout=10.0) as conn:
        r = conn.request("GET", target, headers={"Accept": "*/*"})
        print(r.version, r.status, r.reason)
        for name, value in r.headers:
            print(f"{name}: {value}")
        print(f"({len(r.body)} body bytes)")
        t0 = time.perf_counter()
        for _ in range(count):
            conn.request("GET", target)
        dt = time.perf_counter() - t0
        print(f"{count} more requests in {dt:.3f} s: {count / dt:,.0f} req/s, "
              f"{conn.connects} connection(s), {conn.retries} retried")


if __name__ == "__main__":
    if len(sys.argv) == 4:
        main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) == 1:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RandomBytes)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(f"(a local http.server on port {server.server_address[1]}: "
              "the figure is the server's, not the client's)")
        main("127.0.0.1", server.server_address[1], "/rnd?c=2048")
        server.shutdown()
    else:
        sys.exit(__doc__)
