"""httpbench: HTTP benchmarking with a C core.

    import httpbench
    with httpbench.Server() as srv, httpbench.Connection("127.0.0.1", srv.port) as conn:
        r = conn.request("GET", "/rnd?c=2048")
"""

from ._version import __version__

try:
    # First, so that a core not built reads as what to do.
    from ._core import Histogram, Response
except ModuleNotFoundError as e:
    if e.name != f"{__name__}._core":
        raise
    import os as _os

    raise ImportError(
        f"httpbench's C core (httpbench._core) is not built in {_os.path.dirname(__file__)}. "
        "That is the source tree, and it shadows any installed httpbench when Python runs "
        "from the folder above it (the clone's root). Run from another directory, or build "
        "the core in place with `pip install -e .` in the clone."
    ) from None
from .client import Connection
from .exceptions import (
    ClusterError,
    ConnectError,
    HttpbenchError,
    IncompleteResponse,
    ProtocolError,
    StreamReset,
    Timeout,
    TLSError,
)
from ._settings import SettingError
from .agents import available_agents
from .bound import ClientFigures
from .capacity import CapacityResult, CapacityStep, capacity
from .compare import Comparison, compare
from .reqlog import LogRecord, read_log
from .result import Latency, Result
from .runner import run
from .scenario import Request, Scenario
from .server import Server

# The model's drawings, named for its convenience methods (httpbench/views.py,
# the adapter; importing it loads no drawing code until one is asked for).
from . import views as _views  # noqa: E402,F401  (registers them)

__all__ = [
    "__version__",
    "Connection",
    "Response",
    "Server",
    "run",
    "Scenario",
    "Request",
    "Result",
    "ClientFigures",
    "Latency",
    "Histogram",
    "available_agents",
    "compare",
    "Comparison",
    "capacity",
    "CapacityResult",
    "CapacityStep",
    "read_log",
    "LogRecord",
    "HttpbenchError",
    "ConnectError",
    "Timeout",
    "ProtocolError",
    "IncompleteResponse",
    "StreamReset",
    "TLSError",
    "ClusterError",
    "SettingError",
]
