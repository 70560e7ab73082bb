"""The seam between a client and the wire. A transport carries whole JSON-RPC messages, encoded and unframed (as
`Session.request` makes them and `Session.route` takes them): send one, receive the next (None once the connection
has ended), close. TCP frames a message as a line; WebSocket as one text frame (Protocol/README.md#websocket),
through the optional `websockets` package, imported only when that transport is chosen. Everything else (ids,
routing, reconnecting, resubscribing) is the clients' and the sans-IO core's, the same for every transport.

Over TLS (`ssl_context`, an `ssl.SSLContext`; Protocol/README.md#tls) the TCP transports wrap their socket (the
server's name checked as the context says) and the WebSocket ones connect to a `wss://` URL.

Every failure to connect or send is an OSError (ConnectionError for WebSocket ones; ssl.SSLError is an OSError),
which the clients already treat as a lost connection."""

import asyncio
import functools
import socket
from typing import Any, Awaitable, Callable, Optional, Union

from ._core import Endpoint
from .errors import MissingExtra

Message = Union[bytes, str]
# What the asyncio TCP reader buffers at most for one line; a longer one ends the connection (then a reconnect).
MAX_ASYNC_LINE_BYTES = 1 << 24


def _websockets(module: str) -> Any:
    """Imports a `websockets` module, or raises MissingExtra naming the extra that installs it."""
    try:
        return __import__(module, fromlist=["connect"])
    except ImportError as error:
        raise MissingExtra(
            "transport=\"websocket\" needs the websockets package (>= 13), an optional extra: "
            f"pip install 'kvod[websocket]' (from a checkout: pip install './clients/python[websocket]'); {error}",
            extra="websocket", name="websockets") from error


# MARK: - Blocking transports


class LineTransport:
    """TCP: one message per line. `receive` blocks in the client's reader thread; `close` from any thread ends it."""

    def __init__(self, endpoint: Endpoint, timeout: float, ssl_context: Any = None):
        self._socket = socket.create_connection((endpoint.host, endpoint.port), timeout=timeout)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if ssl_context is not None:
            try:
                self._socket = ssl_context.wrap_socket(self._socket, server_hostname=endpoint.host)
            except BaseException:
                self._socket.close()
                raise
        self._socket.settimeout(None)
        self._reader = self._socket.makefile("rb")

    def send(self, message: bytes) -> None:
        self._socket.sendall(message + b"\n")

    def receive(self) -> Optional[Message]:
        try:
            line = self._reader.readline()
        except (OSError, ValueError):
            line = b""
        # A line cut short by the end of the connection (kvod killed mid-write) is not a message.
        return line if line.endswith(b"\n") else None

    def close(self) -> None:
        try:
            self._socket.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in receive
        except OSError:
            pass
        self._socket.close()


class FrameTransport:
    """WebSocket: one message per text frame, with `websockets.sync.client`. Its own keepalive pings run in the
    background; kvod answers them (and pings a silent client itself)."""

    def __init__(self, endpoint: Endpoint, timeout: float, ssl_context: Any = None):
        client = _websockets("websockets.sync.client")
        self._closed = _websockets("websockets.exceptions").ConnectionClosed
        handshake_failed = _websockets("websockets.exceptions").WebSocketException
        try:
            # No size limit, as on TCP: kvod's answers (a large value, describe) are as long as they need to be.
            self._connection = client.connect(
                _websocket_url(endpoint, ssl_context), open_timeout=timeout, max_size=None, compression=None,
                **({"ssl": ssl_context} if ssl_context is not None else {}))
        except handshake_failed as error:  # an HTTP error status, a bad upgrade: as good as refused
            raise ConnectionError(f"WebSocket handshake failed: {error}") from error

    def send(self, message: bytes) -> None:
        try:
            self._connection.send(message.decode())  # str: a text frame (kvod closes on a binary one)
        except self._closed as error:
            raise ConnectionError(f"WebSocket closed: {error}") from error

    def receive(self) -> Optional[Message]:
        try:
            return self._connection.recv()
        except self._closed:
            return None

    def close(self) -> None:
        self._connection.close()


BlockingTransport = Union[LineTransport, FrameTransport]


def _websocket_url(endpoint: Endpoint, ssl_context: Any) -> str:
    """The endpoint's URL, `wss://` when the client speaks TLS."""
    url = endpoint.url or f"ws://{endpoint.host}:{endpoint.port}/"
    return "wss://" + url[len("ws://"):] if ssl_context is not None and url.startswith("ws://") else url


def blocking_transport(transport: str, ssl_context: Any = None) -> Callable[[Endpoint, float], BlockingTransport]:
    """The opener for `transport` ("tcp" or "websocket"), over TLS with `ssl_context`; raises MissingExtra at once
    when its package is missing."""
    if transport == "websocket":
        _websockets("websockets.sync.client")
        return functools.partial(FrameTransport, ssl_context=ssl_context)
    return functools.partial(LineTransport, ssl_context=ssl_context)


# MARK: - asyncio transports


class AsyncLineTransport:
    """TCP over asyncio streams: one message per line."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader, self._writer = reader, writer

    @classmethod
    async def open(cls, endpoint: Endpoint, timeout: float, ssl_context: Any = None) -> "AsyncLineTransport":
        opening = asyncio.open_connection(
            endpoint.host, endpoint.port, limit=MAX_ASYNC_LINE_BYTES, ssl=ssl_context,
            server_hostname=endpoint.host if ssl_context is not None else None)
        return cls(*await asyncio.wait_for(opening, timeout))

    async def send(self, message: bytes) -> None:
        # No drain: requests are small, and concurrent drains from several callers fail before Python 3.10.
        self._writer.write(message + b"\n")

    async def receive(self) -> Optional[Message]:
        try:
            line = await self._reader.readline()
        except (OSError, asyncio.IncompleteReadError, ValueError):
            line = b""
        return line if line.endswith(b"\n") else None

    def is_closing(self) -> bool:
        return self._writer.is_closing()

    async def close(self) -> None:
        self._writer.close()


class AsyncFrameTransport:
    """WebSocket over `websockets.asyncio.client`: one message per text frame."""

    def __init__(self, connection: Any):
        self._connection = connection
        self._closed = _websockets("websockets.exceptions").ConnectionClosed
        self._open_state = _websockets("websockets.protocol").State.OPEN

    @classmethod
    async def open(cls, endpoint: Endpoint, timeout: float, ssl_context: Any = None) -> "AsyncFrameTransport":
        client = _websockets("websockets.asyncio.client")
        handshake_failed = _websockets("websockets.exceptions").WebSocketException
        try:
            connection = await client.connect(
                _websocket_url(endpoint, ssl_context), open_timeout=timeout, max_size=None, compression=None,
                **({"ssl": ssl_context} if ssl_context is not None else {}))
        except handshake_failed as error:
            raise ConnectionError(f"WebSocket handshake failed: {error}") from error
        return cls(connection)

    async def send(self, message: bytes) -> None:
        try:
            await self._connection.send(message.decode())
        except self._closed as error:
            raise ConnectionError(f"WebSocket closed: {error}") from error

    async def receive(self) -> Optional[Message]:
        try:
            return await self._connection.recv()
        except self._closed:
            return None

    def is_closing(self) -> bool:
        return self._connection.protocol.state is not self._open_state

    async def close(self) -> None:
        await self._connection.close()


AsyncTransport = Union[AsyncLineTransport, AsyncFrameTransport]


def async_transport(transport: str, ssl_context: Any = None) -> Callable[[Endpoint, float], Awaitable[AsyncTransport]]:
    """The asyncio opener for `transport`, over TLS with `ssl_context`; raises MissingExtra at once when its package
    is missing."""
    if transport == "websocket":
        _websockets("websockets.asyncio.client")
        return functools.partial(AsyncFrameTransport.open, ssl_context=ssl_context)
    return functools.partial(AsyncLineTransport.open, ssl_context=ssl_context)
