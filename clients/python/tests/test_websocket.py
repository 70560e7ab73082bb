"""What only the WebSocket transport has (the shared behaviour runs over both transports in test_client.py and
test_resume.py): ws:// URLs on kvod's own port and on `--ws-port`, tokens (KVOD_TOKEN) across a reconnect, messages
over websockets' default 1 MiB limit, `closing` before the close frame, and the clear error when the `websocket`
extra is not installed (the import blocked)."""

import asyncio
import os
import pathlib
import subprocess
import sys
import time

import pytest

import kvod

REPO = pathlib.Path(__file__).resolve().parents[3]


def wait_for(condition, seconds=20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_ws_urls_on_the_own_port_and_the_websocket_port(make_kvod):
    server = make_kvod("--ws-port", "0")
    assert server.ws_port
    urls = [f"ws://127.0.0.1:{server.port}/", f"ws://127.0.0.1:{server.ws_port}/any/path"]
    for url in urls:
        with kvod.Client(url, transport="websocket") as client:
            seq = client.set("where", url)
            assert client.get_with_seq("where") == (url, seq)
    # Addresses are tried in turn: a dead one first is skipped.
    with kvod.Client(["ws://127.0.0.1:1/", urls[1]], transport="websocket", timeout=5) as client:
        assert client.get("where") == urls[1]

    async def scenario():
        client = await kvod.aio.connect(urls[1], transport="websocket")
        async with client:
            subscription = await client.subscribe("where", ["new", "initial"])
            assert (await subscription.next(timeout=10)).new == urls[1]
            await client.set("where", "aio")
            assert (await subscription.next(timeout=10)).new == "aio"

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_addresses_and_transports_are_checked():
    with pytest.raises(ValueError, match="transport=\"websocket\""):
        kvod.Client("ws://127.0.0.1:7070/")  # a URL needs the websocket transport
    with pytest.raises(ValueError, match="ws://"):
        kvod.Client("http://127.0.0.1:7070/", transport="websocket")
    with pytest.raises(ValueError, match="unknown transport"):
        kvod.Client("127.0.0.1:7070", transport="udp")
    with pytest.raises(ValueError, match="unknown transport"):
        kvod.aio.AsyncClient("127.0.0.1:7070", transport="udp")


def test_a_token_over_websocket_survives_a_reconnect(make_kvod, make_proxy):
    server = make_kvod(env={"KVOD_TOKEN": "s3cret"})
    proxy = make_proxy(server.port)
    with pytest.raises(kvod.Unauthorized):
        kvod.Client(server.address, transport="websocket", token="wrong", reconnect=False)
    with pytest.raises(kvod.Unauthorized):
        kvod.Client(server.address, transport="websocket", reconnect=False)  # a hello without a token
    with kvod.Client(proxy.address, transport="websocket", token="s3cret", timeout=20) as watcher, \
            kvod.Client(server.address, transport="websocket", token="s3cret") as writer:
        subscription = watcher.subscribe("secret", ["new"])
        writer.set("secret", 1)
        assert subscription.next(timeout=10).new == 1
        proxy.cut()  # the reconnection must say hello with the token again before resubscribing
        writer.set("secret", 2)
        assert subscription.next(timeout=10).new == 2
        assert watcher.connections >= 2 and watcher.get("secret") == 2

    async def scenario():
        client = await kvod.aio.connect(server.address, transport="websocket", token="s3cret")
        async with client:
            assert (await client.hello())["server"] == "kvod"
            assert await client.get("secret") == 2

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_message_over_a_mebibyte(make_kvod):
    # websockets refuses messages over 1 MiB by default; the client lifts that, as TCP has no such limit.
    server = make_kvod("--max-line-bytes", str(8 << 20))
    big = "x" * (3 << 20)
    with kvod.Client(server.address, transport="websocket") as client:
        client.set("big", big)
        assert client.get("big") == big

    async def scenario():
        client = await kvod.aio.connect(server.address, transport="websocket")
        async with client:
            assert await client.get("big") == big

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_closing_arrives_before_the_close_frame(make_kvod):
    server = make_kvod()
    client = kvod.Client(server.address, transport="websocket", reconnect=False)
    try:
        subscription = client.subscribe("x", ["new"])
        server.stop()
        wait_for(lambda: client.closing_reason == "server_shutdown")
        assert list(subscription) == []  # without reconnecting, the subscription ends
        with pytest.raises(kvod.ConnectionLost):  # at once, not after waiting for a reconnection
            client.ping()
    finally:
        client.close()

    server = make_kvod()

    async def scenario():
        client = await kvod.aio.connect(server.address, transport="websocket", reconnect=False)
        async with client:
            subscription = await client.subscribe("x", ["new"])
            await asyncio.get_running_loop().run_in_executor(None, server.stop)
            assert [item async for item in subscription] == []
            assert client.closing_reason == "server_shutdown"
            with pytest.raises(kvod.ConnectionLost):
                await client.ping()

    asyncio.run(asyncio.wait_for(scenario(), 5))


BLOCKED = """
import sys

class BlockWebsockets:
    def find_spec(self, name, path=None, target=None):
        if name == "websockets" or name.startswith("websockets."):
            raise ImportError(f"No module named {name!r} (blocked by the test)")

sys.meta_path.insert(0, BlockWebsockets())
"""


def test_without_the_extra_websocket_fails_clearly_and_tcp_works(kvod_server):
    # A fresh interpreter where `import websockets` fails, as when the extra is not installed.
    code = BLOCKED + f"""
import asyncio
import kvod

with kvod.Client({kvod_server.address!r}) as client:
    assert client.ping() == "pong"
for attempt in (lambda: kvod.Client({kvod_server.address!r}, transport="websocket"),
                lambda: asyncio.run(kvod.aio.connect({kvod_server.address!r}, transport="websocket"))):
    try:
        attempt()
        raise SystemExit("no error")
    except kvod.MissingExtra as error:
        assert isinstance(error, ImportError) and error.extra == "websocket" and error.name == "websockets"
        print(error)
assert not [name for name in sys.modules if name.startswith("websockets")]
"""
    environment = dict(os.environ, PYTHONPATH=str(REPO / "clients" / "python"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, env=environment)
    assert result.returncode == 0, result.stderr
    messages = result.stdout.splitlines()
    assert len(messages) == 2
    for message in messages:
        assert "pip install 'kvod[websocket]'" in message and "websockets" in message


def test_without_the_extra_in_process(monkeypatch):
    # The same in this process: every websockets module made unimportable.
    for name in [name for name in sys.modules if name == "websockets" or name.startswith("websockets.")]:
        monkeypatch.setitem(sys.modules, name, None)
    for name in ("websockets", "websockets.sync.client", "websockets.asyncio.client"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"kvod\[websocket\]"):
        kvod.Client("127.0.0.1:1", transport="websocket")  # before any connection attempt
    with pytest.raises(kvod.MissingExtra):
        kvod.aio.AsyncClient("127.0.0.1:1", transport="websocket")
