"""httpbench: HTTP benchmarking with a C core.

    import httpbench
    with httpbench.Server() as srv, httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/rnd?c=2048")
"""

from ._version import __version__
from .exceptions import (
    ConnectError,
    HttpbenchError,
    IncompleteResponse,
    ProtocolError,
    Timeout,
    TLSError,
)
from ._core import Connection, Histogram, Response
from .agents import available_agents
from .capacity import CapacityResult, CapacityStep, capacity
from .compare import Comparison, compare
from .result import Latency, Result
from .runner import run
from .scenario import Request, Scenario
from .server import Server

__all__ = [
    "__version__",
    "Connection",
    "Response",
    "Server",
    "run",
    "Scenario",
    "Request",
    "Result",
    "Latency",
    "Histogram",
    "available_agents",
    "compare",
    "Comparison",
    "capacity",
    "CapacityResult",
    "CapacityStep",
    "HttpbenchError",
    "ConnectError",
    "Timeout",
    "ProtocolError",
    "IncompleteResponse",
    "TLSError",
]
