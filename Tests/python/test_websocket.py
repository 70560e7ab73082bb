"""kvod over WebSocket (RFC 6455; Protocol/README.md#websocket), against a stock client: PyPI `websockets`.

kvod serves WebSocket on its own port (an HTTP upgrade is told from a JSON line by its first bytes) and, with
`--ws-port`, on a port of its own. One JSON-RPC message or batch per text frame, the same methods, ordering and close
reasons, mapped to close codes. Raw-socket tests send what a stock client never would (binary frames, unmasked frames,
invalid UTF-8, bad handshakes). Every message kvod sends is validated against Protocol/schemas/. Every socket
operation has a timeout.
"""

import base64
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import time

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect as ws_connect

from test_kvod_client import START_TIMEOUT, TIMEOUT, _kvod_binary, schemas  # noqa: F401 (a fixture)

GOOD_ORIGIN = "http://good.example"


class Daemon:
    def __init__(self, process, port, ws_port, log_path):
        self.process, self.port, self.ws_port, self.log_path = process, port, ws_port, log_path

    def log(self):
        return self.log_path.read_text(errors="replace")[-4000:]


def start(tmp_path, *arguments):
    log_path = tmp_path / "kvod.stderr.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [str(_kvod_binary()), "--host", "127.0.0.1", "--port", "0", "--empty", *arguments],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log)
    deadline = time.monotonic() + START_TIMEOUT
    data = b""
    while b"kvod listening on" not in data or not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"kvod did not start: {data!r}\n{log_path.read_text(errors='replace')}"
        ready, _, _ = select.select([process.stdout], [], [], remaining)
        if ready:
            chunk = os.read(process.stdout.fileno(), 4096)
            assert chunk, f"kvod exited: {data!r}\n{log_path.read_text(errors='replace')}"
            data += chunk
    text = data.decode()
    port = int(re.search(r"kvod listening on 127\.0\.0\.1:(\d+)", text).group(1))
    ws = re.search(r"kvod websocket on 127\.0\.0\.1:(\d+)", text)
    return Daemon(process, port, int(ws.group(1)) if ws else None, log_path)


def stop(daemon):
    if daemon.process.poll() is None:
        daemon.process.send_signal(signal.SIGTERM)
        assert daemon.process.wait(timeout=10) == 0, daemon.log()


@pytest.fixture
def kvod(tmp_path):
    daemon = start(tmp_path, "--ws-port", "0", "--ws-origins", GOOD_ORIGIN, "--max-line-bytes", "2048")
    yield daemon
    try:
        assert daemon.process.poll() is None, f"kvod died during the test:\n{daemon.log()}"
    finally:
        stop(daemon)
        if daemon.process.poll() is None:
            daemon.process.kill()


def request(ws, id, method, params=None):
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    ws.send(json.dumps(message))


def receive(ws):
    return json.loads(ws.recv(timeout=TIMEOUT))


def call(ws, id, method, params=None):
    request(ws, id, method, params)
    reply = receive(ws)
    assert reply.get("id") == id, reply
    return reply


# ----------------------------------------------------------------------------------------------------------------------
# A stock client


@pytest.mark.parametrize("port_name", ["port", "ws_port"])
def test_a_stock_client_gets_values_sets_and_observes_in_order(kvod, schemas, port_name):
    port = getattr(kvod, port_name)
    with ws_connect(f"ws://127.0.0.1:{port}/", open_timeout=TIMEOUT) as watcher, \
            ws_connect(f"ws://127.0.0.1:{port}/", open_timeout=TIMEOUT) as writer:
        hello = call(watcher, 1, "hello", {"client": "browser"})
        assert hello["result"]["server"] == "kvod"
        subscribed = call(watcher, 2, "subscribe", {"path": "ws.value", "options": ["new", "old", "prior"]})
        subscription = subscribed["result"]["subscription"]
        # The writer observes too: its notification arrives before its response, one message per frame.
        call(writer, 1, "subscribe", {"path": "ws.value", "options": ["new"]})
        request(writer, 2, "set", {"path": "ws.value", "value": "héllo"})
        change = receive(writer)
        assert change["method"] == "change" and change["params"]["new"] == "héllo"
        response = receive(writer)
        assert response["id"] == 2 and response["result"]["seq"] >= 1
        prior, after = receive(watcher), receive(watcher)
        for message in (prior, after):
            assert schemas.errors("notification.schema.json", message) == []
            assert message["params"]["subscription"] == subscription
        assert prior["params"].get("prior") is True and "new" not in prior["params"]
        assert after["params"]["new"] == "héllo" and after["params"]["old"] is None
        assert call(writer, 3, "get", {"path": "ws.value"})["result"]["value"] == "héllo"


def test_a_batch_is_one_frame_and_its_responses_one_frame(kvod):
    with ws_connect(f"ws://127.0.0.1:{kvod.port}/", open_timeout=TIMEOUT) as ws:
        ws.send(json.dumps([
            {"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "b", "value": 1}},
            {"jsonrpc": "2.0", "id": 2, "method": "get", "params": {"path": "b"}},
            {"jsonrpc": "2.0", "method": "ping"},
        ]))
        replies = receive(ws)
        assert [reply["id"] for reply in replies] == [1, 2]
        assert replies[1]["result"]["value"] == 1


def test_a_fragmented_message_is_reassembled(kvod):
    with ws_connect(f"ws://127.0.0.1:{kvod.port}/", open_timeout=TIMEOUT) as ws:
        text = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "set", "params": {"path": "f", "value": "ü" * 50}})
        ws.send([text[:10], text[10:11], text[11:60], text[60:]])  # four frames, one message
        assert receive(ws)["result"]["seq"] >= 1
        assert call(ws, 8, "get", {"path": "f"})["result"]["value"] == "ü" * 50


def test_pings_are_answered(kvod):
    with ws_connect(f"ws://127.0.0.1:{kvod.port}/", open_timeout=TIMEOUT) as ws:
        assert ws.ping(b"are you there").wait(TIMEOUT)


def test_the_origin_allow_list(kvod):
    with ws_connect(f"ws://127.0.0.1:{kvod.port}/", origin=GOOD_ORIGIN, open_timeout=TIMEOUT) as ws:
        assert call(ws, 1, "ping")["result"] == "pong"
    with pytest.raises(InvalidStatus) as refused:
        ws_connect(f"ws://127.0.0.1:{kvod.ws_port}/", origin="http://evil.example", open_timeout=TIMEOUT)
    assert refused.value.response.status_code == 403


def test_a_message_too_big_gets_1009_then_closing_then_close_code_1009(kvod):
    with ws_connect(f"ws://127.0.0.1:{kvod.port}/", open_timeout=TIMEOUT, max_size=None) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "x", "value": "y" * 4000}}))
        error = receive(ws)
        assert error["error"]["code"] == 1009
        closing = receive(ws)
        assert closing["method"] == "closing" and closing["params"]["reason"] == "line_too_long"
        with pytest.raises(ConnectionClosed) as closed:
            ws.recv(timeout=TIMEOUT)
        assert closed.value.rcvd.code == 1009


def test_shutdown_sends_closing_and_close_code_1001(tmp_path):
    daemon = start(tmp_path)
    try:
        with ws_connect(f"ws://127.0.0.1:{daemon.port}/", open_timeout=TIMEOUT) as ws:
            assert call(ws, 1, "ping")["result"] == "pong"
            daemon.process.send_signal(signal.SIGTERM)
            closing = receive(ws)
            assert closing["method"] == "closing" and closing["params"]["reason"] == "server_shutdown"
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=TIMEOUT)
            assert closed.value.rcvd.code == 1001
        assert daemon.process.wait(timeout=10) == 0
    finally:
        if daemon.process.poll() is None:
            daemon.process.kill()


# ----------------------------------------------------------------------------------------------------------------------
# What a stock client never sends: raw sockets


KEY = base64.b64encode(b"0123456789abcdef").decode()


def raw_socket(port):
    sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    sock.settimeout(TIMEOUT)
    return sock


def read_until_closed(sock, limit=1 << 16):
    data = b""
    while len(data) < limit:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            break
        if not chunk:
            break
        data += chunk
    return data


def handshake(port, extra="", version="13", upgrade=True):
    sock = raw_socket(port)
    head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    if upgrade:
        head += f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {KEY}\r\n"
        head += f"Sec-WebSocket-Version: {version}\r\n"
    sock.sendall((head + extra + "\r\n").encode())
    return sock


def opened(port):
    sock = handshake(port)
    response = b""
    while b"\r\n\r\n" not in response:
        chunk = sock.recv(4096)
        assert chunk, response
        response += chunk
    assert response.startswith(b"HTTP/1.1 101 "), response
    assert response.split(b"\r\n\r\n", 1)[1] == b""
    return sock


def frame(opcode, payload, fin=True, mask=True):
    first = (0x80 if fin else 0) | opcode
    length = len(payload)
    header = bytes([first])
    mask_bit = 0x80 if mask else 0
    if length < 126:
        header += bytes([mask_bit | length])
    else:
        header += bytes([mask_bit | 126]) + struct.pack("!H", length)
    if not mask:
        return header + payload
    key = os.urandom(4)
    return header + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def close_code(data):
    """The code of the close frame at the end of what the server sent (server frames are unmasked)."""
    index = data.rfind(b"\x88")
    assert index >= 0, data
    length = data[index + 1] & 0x7F
    assert length >= 2, data
    return struct.unpack("!H", data[index + 2:index + 4])[0]


def test_a_plain_http_request_gets_400(kvod):
    for port in (kvod.port, kvod.ws_port):
        with handshake(port, upgrade=False) as sock:
            assert read_until_closed(sock).startswith(b"HTTP/1.1 400 ")


def test_a_wrong_version_gets_426_naming_version_13(kvod):
    with handshake(kvod.port, version="8") as sock:
        response = read_until_closed(sock)
        assert response.startswith(b"HTTP/1.1 426 ") and b"Sec-WebSocket-Version: 13" in response


def test_a_json_line_on_the_websocket_port_gets_400(kvod):
    with raw_socket(kvod.ws_port) as sock:
        sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert read_until_closed(sock).startswith(b"HTTP/1.1 400 ")
    # The JSON line still works on kvod's own port.
    with raw_socket(kvod.port) as sock:
        sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        assert json.loads(sock.recv(4096))["result"] == "pong"


@pytest.mark.parametrize("sent, code", [
    (frame(0x2, b"\x01\x02"), 1003),  # binary
    (frame(0x1, b"\xff\xfe"), 1007),  # not UTF-8
    (frame(0x1, b'{"jsonrpc":"2.0","id":1,"method":"ping"}', mask=False), 1002),  # unmasked
    (frame(0x9, b"x", fin=False), 1002),  # fragmented control frame
    (frame(0x0, b"more"), 1002),  # a continuation with nothing to continue
])
def test_protocol_errors_close_with_their_code(kvod, sent, code):
    with opened(kvod.port) as sock:
        sock.sendall(sent)
        assert close_code(read_until_closed(sock)) == code
    # kvod is unharmed.
    with ws_connect(f"ws://127.0.0.1:{kvod.port}/", open_timeout=TIMEOUT) as ws:
        assert call(ws, 1, "ping")["result"] == "pong"


def test_a_handshake_and_a_frame_in_one_packet(kvod):
    sock = raw_socket(kvod.port)
    head = ("GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode()
    sock.sendall(head + frame(0x1, b'{"jsonrpc":"2.0","id":1,"method":"ping"}'))
    data = b""
    while b"pong" not in data:
        chunk = sock.recv(4096)
        assert chunk, data
        data += chunk
    assert data.startswith(b"HTTP/1.1 101 ")
    sock.close()


def test_pipelined_heavy_reads_are_answered_in_order_across_turns(tmp_path):
    """Protocol/README.md#fairness over WebSocket: 200 reads of a 100 KB value sent without waiting take kvod more
    than its 2 ms share of a turn; whether it gives up turns depends on how the frames fall into reads (the TLS and
    Swift tests send one read and count the turns), but every frame is answered once, in order."""
    daemon = start(tmp_path)
    try:
        with ws_connect(f"ws://127.0.0.1:{daemon.port}/", open_timeout=TIMEOUT, max_size=None) as ws:
            assert call(ws, 1, "set", {"path": "big", "value": "w" * 100_000})["result"]["seq"] == 1
            for i in range(2, 202):
                request(ws, i, "get", {"path": "big"})
            for i in range(2, 202):
                reply = receive(ws)
                assert reply["id"] == i and len(reply["result"]["value"]) == 100_000
            assert call(ws, 300, "ping")["result"] == "pong"
    finally:
        stop(daemon)
        if daemon.process.poll() is None:
            daemon.process.kill()
