"""The exceptions httpbench raises.

Every error of the library is an :class:`HttpbenchError`; the ones about the
network also derive from the built-in exception a caller would already catch
(``ConnectionError``, ``TimeoutError``).
"""

__all__ = [
    "HttpbenchError",
    "ConnectError",
    "Timeout",
    "ProtocolError",
    "IncompleteResponse",
    "StreamReset",
    "TLSError",
    "ClusterError",
]


class HttpbenchError(Exception):
    """Base of every httpbench error."""


class ConnectError(HttpbenchError, ConnectionError):
    """The host could not be resolved or would not accept a connection."""


class Timeout(HttpbenchError, TimeoutError):
    """A request (connect included) did not complete within its timeout."""


class ProtocolError(HttpbenchError):
    """The peer sent invalid or unsupported HTTP; the message names the defect."""


class IncompleteResponse(ProtocolError):
    """The peer closed or reset the connection before the response was complete."""


class StreamReset(ProtocolError):
    """The server reset an HTTP/2 stream (RST_STREAM) before its response
    was whole; error_code is the frame's code (RFC 9113 section 7:
    1 PROTOCOL_ERROR, 2 INTERNAL_ERROR, 8 CANCEL, ...). The connection
    stays open for the next request."""

    def __init__(self, message: str, error_code: int = 0) -> None:
        super().__init__(message)
        self.error_code = error_code


class TLSError(HttpbenchError):
    """A TLS handshake or record failed; the message carries OpenSSL's
    reason ("certificate verify failed: self-signed certificate", "no shared
    cipher") or says what came instead of TLS."""


class ClusterError(HttpbenchError):
    """A run over a Dask cluster lost its scheduler (or every worker) before
    any figure came back, so there is no Result to return; the message says
    what was lost and how."""
