"""httpbench: HTTP benchmarking with a C core.

    import httpbench
    with httpbench.Connection("127.0.0.1", 8080) as conn:
        r = conn.request("GET", "/")
"""

from ._version import __version__
from .exceptions import (
    ConnectError,
    HttpbenchError,
    IncompleteResponse,
    ProtocolError,
    Timeout,
)
from ._core import Connection, Response

__all__ = [
    "__version__",
    "Connection",
    "Response",
    "HttpbenchError",
    "ConnectError",
    "Timeout",
    "ProtocolError",
    "IncompleteResponse",
]
