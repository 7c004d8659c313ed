"""A strict HTTP/2 server on the `h2` package (no code of ours in it),
scripted to misbehave: the hostile and odd servers the HTTP/2 client and
loop are tested against. One thread per connection; each connection runs
the server's behaviour from the first byte."""

from __future__ import annotations

import functools
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import hpack
from helpers import TLSStream

__all__ = ["H2Server", "PREFACE", "frame", "split_block"]

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    """One raw frame (RFC 9113 section 4.1)."""
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + \
        struct.pack(">I", stream) + payload


def split_block(sid: int, flags: int, block: bytes, count: int) -> bytes:
    """A header block as a HEADERS frame (with `flags` beside it) and
    `count` CONTINUATION frames, END_HEADERS on the last (RFC 9113 section
    6.10); the block must be longer than count."""
    step = len(block) // (count + 1)
    cuts = [i * step for i in range(count + 1)] + [len(block)]
    out = frame(1, flags | (0 if count else 4), sid, block[:cuts[1]])
    for i in range(1, count + 1):
        out += frame(9, 4 if i == count else 0, sid, block[cuts[i]:cuts[i + 1]])
    return out


def _hpack_int(value: int, prefix: int, first: int) -> bytes:
    """An HPACK integer on a `prefix`-bit prefix, `first` the bits above it
    (RFC 7541 section 5.1)."""
    top = (1 << prefix) - 1
    if value < top:
        return bytes([first | value])
    out, value = [first | top], value - top
    while value >= 128:
        out.append(value % 128 | 128)
        value //= 128
    return bytes(out + [value])


def _huffman_v(n: int) -> bytes:
    """n bytes of "v" Huffman-coded (RFC 7541 Appendix B: 1110111, 7
    bits), padded with ones."""
    code = 0b1110111
    eight = 0
    for _ in range(8):
        eight = eight << 7 | code
    whole = eight.to_bytes(7, "big") * (n // 8)  # 8 codes in 7 bytes
    rest, width = 0, 7 * (n % 8)
    for _ in range(n % 8):
        rest = rest << 7 | code
    pad = -width % 8
    tail = ((rest << pad) | ((1 << pad) - 1)).to_bytes((width + pad) // 8, "big") if width else b""
    return whole + tail


def _encode_big_values(encoder: Any, headers: Any, huffman: bool = True) -> bytes:
    """hpack's encode, but a field whose value is all "v" (bigheaders') as
    a literal without indexing, its value Huffman-coded by _huffman_v."""
    small, big = [], []
    for name, value in headers:
        text = value.decode() if isinstance(value, bytes) else value
        (big if len(text) > 64 and text.strip("v") == "" else small).append((name, value))
    out = type(encoder).encode(encoder, small, huffman)  # (encode itself is this one)
    for name, value in big:
        raw = name.encode() if isinstance(name, str) else name
        coded = _huffman_v(len(value))
        out += b"\x00" + _hpack_int(len(raw), 7, 0) + raw + _hpack_int(len(coded), 7, 0x80) + coded
    return bytes(out)


class _FrameRecords(TLSStream):
    """TLS whose sendall puts each HTTP/2 frame in a record of its own and
    writes the records of one call at once."""

    def sendall(self, data: bytes) -> None:
        sealed = []
        while data:
            end = 9 + int.from_bytes(data[:3], "big")
            sealed.append(self.sealed(data[:end]))
            data = data[end:]
        self.raw.sendall(b"".join(sealed))


class H2Server:
    """Listens on 127.0.0.1 (over TLS with `context`, ALPN h2) and serves
    each connection by `mode`:

    ok           every request 200 with `body` (a POST's body echoed)
    reset        as ok, but every `every`-th stream gets RST_STREAM `code`
    refuse       as ok, but every `every`-th stream gets REFUSED_STREAM
    goaway       answers `every` streams per connection, then GOAWAY with
                 the last one's id and a close
    limit        SETTINGS_MAX_CONCURRENT_STREAMS = `streams`
    zero         SETTINGS_MAX_CONCURRENT_STREAMS = 0, and a stream opened before
                 it came refused (REFUSED_STREAM, RFC 9113 section 5.1.2)
    nowindow     an initial window of 0, never raised: no DATA can come
    badhpack     a HEADERS frame whose block is not HPACK
    bigheaders   a head of `fields` fields of `value_len` bytes each
    nosettings   a response, with no SETTINGS before it
    http1        answers the preface in HTTP/1.1
    midframe     half a frame, then a close
    silent       reads, never writes
    goaway0      SETTINGS and GOAWAY(last_stream_id=0, NO_ERROR) on each
                 connection: nothing is ever processed
    early        every request answered `status` (413) with END_STREAM as its
                 HEADERS arrive, before its body, then RST_STREAM(NO_ERROR)
                 (RFC 9113 section 8.1: nginx's early 413)
    status       every request answered with :status `status`, as given (any
                 three characters, "600" or "099")
    continuations  every request answered 200 with its head in a HEADERS frame
                 and `fields` CONTINUATION frames
    answer       every request answered with the raw frames `answer(its stream
                 id)` returns, as they are (malformed messages)
    slowfirst    as ok, but the first connection's SETTINGS (and all it
                 says) come `delay` seconds late: a server slow to take up one
                 connection (a saturated nginx with multi_accept off)

    With `records` (over TLS), each frame goes in a TLS record of its own and
    the records of one send in one write: a burst of many small records, as
    a server that writes frame by frame sends them.

    Counts what it served in `answered` and the connections in `accepted`.
    """

    def __init__(self, mode: str = "ok", *, every: int = 3, code: int = 2,
                 streams: int = 100, body: bytes = b"x" * 2048, fields: int = 1,
                 value_len: int = 10, status: str = "413", delay: float = 0.0,
                 answer: Callable[[int], bytes] | None = None,
                 context: ssl.SSLContext | None = None, records: bool = False) -> None:
        self.records = records
        self.mode, self.every, self.code, self.streams = mode, every, code, streams
        self.delay = delay
        self.status = status
        self.answer = answer
        self.body, self.fields, self.value_len = body, fields, value_len
        self.context = context
        if context is not None:
            context.set_alpn_protocols(["h2"])
        self.answered = 0
        self.accepted = 0
        self.seen: list[list[tuple[str, str]]] = []  # each request's fields, as received
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.url = f"{'https' if context else 'http'}://127.0.0.1:{self.port}"
        self.conns: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> H2Server:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        for c in list(self.conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
                late = self.mode == "slowfirst" and self.accepted == 1
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn, late), daemon=True).start()

    def _serve(self, raw: socket.socket, late: bool = False) -> None:
        try:
            if late:
                time.sleep(self.delay)
            sock: Any = raw
            if self.context is not None and self.records:
                sock = _FrameRecords(raw, self.context)
            elif self.context is not None:
                sock = self.context.wrap_socket(raw, server_side=True)
            handler: Callable[[Any], None] = getattr(self, f"_raw_{self.mode}", self._h2)
            handler(sock)
        except (OSError, ssl.SSLError, h2.exceptions.ProtocolError):
            pass
        finally:
            try:
                raw.close()
            except OSError:
                pass

    # ---- behaviours on raw bytes, after the preface

    def _read_preface(self, sock: Any) -> bytes:
        got = b""
        while len(got) < len(PREFACE):
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
        return got

    def _raw_http1(self, sock: Any) -> None:
        self._read_preface(sock)
        sock.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    def _raw_midframe(self, sock: Any) -> None:
        self._read_preface(sock)
        sock.sendall(frame(4, 0, 0, b"") + frame(4, 1, 0, b"")[:5])

    def _raw_silent(self, sock: Any) -> None:
        while sock.recv(65536):
            pass

    def _raw_nosettings(self, sock: Any) -> None:
        self._read_preface(sock)
        # ":status: 200" (static index 8), END_HEADERS | END_STREAM on stream 1.
        sock.sendall(frame(1, 0x5, 1, b"\x88"))
        self._raw_silent(sock)

    def _raw_frames(self, sock: Any, settings: bytes,
                    on_headers: Callable[[int], bytes]) -> None:
        """After the preface, SETTINGS with `settings` as its payload; then
        the client's SETTINGS acknowledged, and each request's HEADERS
        answered with on_headers(its stream id)'s bytes."""
        got = self._read_preface(sock)[len(PREFACE):]
        sock.sendall(frame(4, 0, 0, settings))
        while True:
            while len(got) >= 9:
                size = int.from_bytes(got[:3], "big")
                if len(got) < 9 + size:
                    break
                kind, flags = got[3], got[4]
                sid = int.from_bytes(got[5:9], "big") & 0x7FFFFFFF
                got = got[9 + size:]
                if kind == 4 and not flags & 1:
                    sock.sendall(frame(4, 1, 0, b""))  # SETTINGS ack
                elif kind == 1:
                    sock.sendall(on_headers(sid))
            chunk = sock.recv(65536)
            if not chunk:
                return
            got += chunk

    def _raw_zero(self, sock: Any) -> None:
        self._raw_frames(sock, struct.pack(">HI", 3, 0),
                         lambda sid: frame(3, 0, sid, struct.pack(">I", 7)))  # REFUSED_STREAM

    def _raw_goaway0(self, sock: Any) -> None:
        self._read_preface(sock)
        sock.sendall(frame(4, 0, 0, b"") + frame(7, 0, 0, struct.pack(">II", 0, 0)))
        self._raw_silent(sock)

    def _raw_status(self, sock: Any) -> None:
        def answer(sid: int) -> bytes:
            block = hpack.Encoder().encode([(":status", self.status), ("content-length", "0")])
            with self.lock:
                self.answered += 1
            return frame(1, 0x5, sid, block)  # END_HEADERS | END_STREAM
        self._raw_frames(sock, b"", answer)

    def _raw_answer(self, sock: Any) -> None:
        def answer(sid: int) -> bytes:
            assert self.answer is not None
            with self.lock:
                self.answered += 1
            return self.answer(sid)
        self._raw_frames(sock, b"", answer)

    def _raw_continuations(self, sock: Any) -> None:
        def answer(sid: int) -> bytes:
            block = hpack.Encoder().encode([(":status", "200"), ("content-length", "0"),
                                            ("x-long", "v" * 4 * self.fields)], huffman=False)
            with self.lock:
                self.answered += 1
            return split_block(sid, 0x1, block, self.fields)  # END_STREAM
        self._raw_frames(sock, b"", answer)

    def _raw_badhpack(self, sock: Any) -> None:
        self._read_preface(sock)
        sock.sendall(frame(4, 0, 0, b""))
        # Index 0x7fff... past any table: a COMPRESSION_ERROR (RFC 7541 2.3.3).
        sock.sendall(frame(1, 0x5, 1, b"\xff\xff\xff\xff\x0f"))
        self._raw_silent(sock)

    # ---- behaviours on the h2 package

    def _h2(self, sock: Any) -> None:
        config = h2.config.H2Configuration(client_side=False, validate_inbound_headers=True)
        conn = h2.connection.H2Connection(config=config)
        settings: dict[int, int] = {h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: self.streams}
        if self.mode == "limit":
            settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] = self.streams
        if self.mode == "nowindow":
            settings[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] = 0
        conn.local_settings = h2.settings.Settings(client=False, initial_values=settings)
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        bodies: dict[int, bytes] = {}
        served = 0
        while True:
            data = sock.recv(65536)
            if not data:
                return
            try:
                events = conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                sock.sendall(conn.data_to_send())
                return
            early = b""
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived) and self.mode == "early":
                    # Answered whole at once, then told to stop sending: the
                    # RST_STREAM goes raw, as the stream may be closed for h2.
                    conn.send_headers(ev.stream_id, [(":status", self.status),
                                                     ("content-length", "0")], end_stream=True)
                    early += frame(3, 0, ev.stream_id, struct.pack(">I", 0))
                    with self.lock:
                        self.answered += 1
                elif isinstance(ev, h2.events.RequestReceived):
                    bodies[ev.stream_id] = b""
                    with self.lock:
                        self.seen.append([(k.decode(), v.decode()) if isinstance(k, bytes)
                                          else (k, v) for k, v in ev.headers])
                elif isinstance(ev, h2.events.DataReceived) and self.mode == "early":
                    pass  # (the body nobody waits for: no window given for it)
                elif isinstance(ev, h2.events.DataReceived):
                    bodies[ev.stream_id] = bodies.get(ev.stream_id, b"") + ev.data
                    conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded) and self.mode == "early":
                    pass
                elif isinstance(ev, h2.events.StreamEnded):
                    served += 1
                    if not self._answer(conn, ev.stream_id, bodies.pop(ev.stream_id, b""),
                                        served):
                        sock.sendall(conn.data_to_send())
                        return
            sock.sendall(conn.data_to_send() + early)

    def _answer(self, conn: Any, sid: int, body: bytes, n: int) -> bool:
        """Answers stream sid, the connection's n-th; False to close."""
        if self.mode == "reset" and n % self.every == 0:
            conn.reset_stream(sid, self.code)
            return True
        if self.mode == "refuse" and n % self.every == 0:
            conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
            return True
        if self.mode == "goaway" and n > self.every:
            return True  # (dropped: above the GOAWAY's last stream)
        out = body or self.body
        headers = [(":status", "200"), ("content-length", str(len(out))),
                   ("server", "h2peer")]
        if self.mode == "bigheaders":
            headers += [(f"x-field-{i}", "v" * self.value_len) for i in range(self.fields)]
            # The big values Huffman-coded by hand: hpack's coder in pure Python
            # took 0.64 s for a 70 KB value here (its bit accumulator grows with
            # the string), and under the sanitizer beside a full run the client's
            # 30 s ran out waiting for it. (Coded, 70,000 bytes of "v" is 61,250:
            # under nghttp2's 64 KB limit on a string as sent, so the limit met is
            # the client's own on the header list; as a literal it is the
            # library's, a COMPRESSION_ERROR.)
            conn.encoder.encode = functools.partial(_encode_big_values, conn.encoder)
        conn.send_headers(sid, headers)
        conn.send_data(sid, out, end_stream=True)
        with self.lock:
            self.answered += 1
        if self.mode == "goaway" and n == self.every:
            # Then nothing more: a second GOAWAY (the h2 package's, on what
            # the client sent meanwhile) would raise the last stream id.
            conn.close_connection(last_stream_id=sid)
            return False
        return True
