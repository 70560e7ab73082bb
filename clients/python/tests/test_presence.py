"""Presence across reconnections, with the blocking and the asyncio client against a real kvod, the client's
connection going through a proxy that cuts it: the onDisconnect ops are registered again on every new connection
(each end of a connection runs them: one more entry in `log`), a cancel sticks across reconnections, the connected
hook runs on each connection and may call the client (Firebase's `.info/connected` pattern). A stand-in follower
(test_leader.py) refuses the re-registration with 1012: the client moves to the leader it names, or, with none named
for `leader_wait`, goes on without it and says so. `Presence`'s decisions are checked on their own too."""

import asyncio
import json
import logging
import socket
import threading
import time

import pytest

import kvod
from kvod._core import Endpoint, Presence
from test_leader import Follower, StandIn

GONE = [("insert", {"path": "log", "value": "gone"}), ("set", {"path": "presence.alice", "value": "offline"})]


def wait_for(condition, seconds=20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_on_disconnect_is_registered_again_on_every_connection(kvod_server, make_proxy, transport):
    proxy = make_proxy(kvod_server.port)
    with kvod.Client(kvod_server.address, transport=transport) as writer, \
            kvod.Client(proxy.address, timeout=20, transport=transport) as alice:
        writer.set("log", [])
        seen = []

        def connected(info):
            seen.append(info)
            alice.set("presence.alice", "online")  # a hook may call the client
        alice.on_connected(connected)  # connected now: called at once
        wait_for(lambda: len(seen) == 1 and writer.get("presence.alice") == "online")
        assert alice.on_disconnect(GONE) == 2
        for cut in (1, 2):
            proxy.cut()
            wait_for(lambda: len(seen) == cut + 1)  # after the ops were registered on the new connection
            assert writer.get("log") == ["gone"] * cut
        wait_for(lambda: writer.get("presence.alice") == "online")
        assert [info.connections for info in seen] == [1, 2, 3] and alice.connections == 3
        assert all(info.on_disconnect_error is None and info.endpoint.port == proxy.port for info in seen)
        assert seen[0].server["server"] == "kvod"

        alice.cancel_on_disconnect()
        for cut in (3, 4):  # the cancel holds on the next connection too
            proxy.cut()
            wait_for(lambda: len(seen) == cut + 1)
        alice.on_disconnect([("insert", {"path": "log", "value": "last"})])
        proxy.cut()
        wait_for(lambda: writer.get("log")[-1:] == ["last"])
        assert writer.get("log") == ["gone", "gone", "last"]  # the cancelled connections ran nothing
        assert alice.on_disconnect_error is None


def test_the_asyncio_client_registers_again_too(kvod_server, make_proxy, transport):
    proxy = make_proxy(kvod_server.port)

    async def scenario():
        async with await kvod.aio.connect(kvod_server.address, transport=transport) as writer, \
                await kvod.aio.connect(proxy.address, timeout=20, transport=transport) as alice:
            await writer.set("log", [])
            seen = []

            async def connected(info):
                seen.append(info.connections)
                await alice.set("presence.alice", "online")
            remove = alice.on_connected(connected)

            async def until(condition):
                for _ in range(1000):
                    if await condition():
                        return
                    await asyncio.sleep(0.02)
                raise AssertionError("timed out")

            async def online():
                return await writer.get("presence.alice") == "online"
            await until(online)
            assert await alice.on_disconnect(GONE) == 2
            for cut in (1, 2):
                await asyncio.get_running_loop().run_in_executor(None, proxy.cut)

                async def reconnected(cut=cut):
                    return len(seen) == cut + 1
                await until(reconnected)
                assert await writer.get("log") == ["gone"] * cut
            await alice.cancel_on_disconnect()
            await asyncio.get_running_loop().run_in_executor(None, proxy.cut)

            async def fourth():
                return len(seen) == 4
            await until(fourth)
            remove()
            await alice.on_disconnect([("insert", {"path": "log", "value": "last"})])
            await asyncio.get_running_loop().run_in_executor(None, proxy.cut)

            async def last():
                return (await writer.get("log"))[-1:] == ["last"]
            await until(last)
            assert await writer.get("log") == ["gone", "gone", "last"]

            async def fifth():
                return alice.connections == 5
            await until(fifth)
            await alice.ping()
            assert seen == [1, 2, 3, 4]  # removed: no fifth call

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_refused_registration_moves_to_the_leader_it_names(kvod_server, make_proxy):
    proxy = make_proxy(kvod_server.port)
    stand_in = Follower(proxy.address)  # a follower naming the leader (kvod, through the proxy)
    try:
        with kvod.Client(kvod_server.address) as writer, \
                kvod.Client([proxy.address, stand_in.address], timeout=20) as alice:
            writer.set("log", [])
            alice.on_disconnect(GONE)
            proxy.cut()  # the next address is tried first: the stand-in, which refuses onDisconnect
            wait_for(lambda: alice.connections == 2)
            assert stand_in.refusals == 1 and str(alice.endpoint) == proxy.address
            assert alice.on_disconnect_error is None
            proxy.cut()
            wait_for(lambda: writer.get("log") == ["gone", "gone"])
    finally:
        stand_in.close()


def test_without_a_leader_the_connection_goes_on_unarmed_and_says_so(kvod_server, make_proxy, caplog):
    proxy = make_proxy(kvod_server.port)
    stand_in = Follower(None)  # an election that does not end
    try:
        with kvod.Client([proxy.address, stand_in.address], timeout=20, leader_wait=0.5) as alice:
            seen = []
            alice.on_connected(seen.append)
            alice.on_disconnect(GONE)
            proxy.refuse()
            with caplog.at_level(logging.WARNING, logger="kvod"):
                proxy.cut()
                wait_for(lambda: len(seen) == 2)
            assert str(seen[1].endpoint) == stand_in.address
            assert isinstance(seen[1].on_disconnect_error, kvod.NotLeader)
            assert alice.on_disconnect_error is seen[1].on_disconnect_error
            assert stand_in.refusals >= 3  # pauses of 0.1, 0.2, 0.4 s: a few tries, not a busy loop
            assert any("onDisconnect ops could not be registered again" in r.message for r in caplog.records)
    finally:
        stand_in.close()


def test_presence_decisions():
    here, leader = Endpoint("h", 1), Endpoint("10.0.0.1", 7070)
    presence = Presence()
    presence.accepted({"ops": [{"method": "set", "params": {"path": "p", "value": None}}]})
    assert presence.rearm_params() == {"ops": [{"method": "set", "params": {"path": "p", "value": None}}]}
    named = kvod.NotLeader("not the leader", 1012, {"leader": "10.0.0.1:7070"})
    election = kvod.NotLeader("not the leader", 1012, {"reason": "election"})
    assert presence.refused(named, here, "tcp", 5.0, now=100.0).action == "move"
    assert presence.refused(named, leader, "tcp", 5.0, now=100.5).action == "pause"  # it is the one connected to
    assert presence.refused(named, here, "tcp", 5.0, now=101.0).action == "pause"  # tried once already
    assert [presence.refused(election, here, "tcp", 5.0, now=102.0).seconds for _ in range(4)] == [0.4, 0.8, 1.0, 1.0]
    assert presence.refused(election, here, "tcp", 5.0, now=104.9).seconds == pytest.approx(0.1)
    given_up = presence.refused(election, here, "tcp", 5.0, now=105.0)
    assert given_up.action == "give_up" and presence.error is election
    assert presence.refused(named, here, "tcp", 5.0, now=200.0).action == "move"  # a new outage starts afresh
    unauthorized = kvod.Unauthorized("read-only token", 1008)
    assert presence.refused(unauthorized, here, "tcp", 5.0, now=201.0).action == "give_up"
    assert presence.error is unauthorized and presence.ops is not None  # kept: the next connection tries again
    presence.accepted({"ops": []})
    assert presence.ops is None and presence.error is None and presence.rearm_params() is None
    with pytest.raises(TypeError):
        kvod.Client.on_disconnect(None, {"method": "set", "params": {}})


def test_a_key_per_connection_from_the_hook(kvod_server, make_proxy):
    """The README's recipe for a drop kvod notices late: each connection sets and clears a key of its own."""
    proxy = make_proxy(kvod_server.port)
    with kvod.Client(kvod_server.address) as writer, kvod.Client(proxy.address, timeout=20) as ada:
        def connected(info):
            me = f"c{info.connections}"
            ada.on_disconnect([("set", {"path": f"presence.ada.{me}", "value": None})])
            ada.set(f"presence.ada.{me}", True)
        ada.on_connected(connected)
        for cut in (1, 2):
            wait_for(lambda: (writer.get("presence.ada") or {}).get(f"c{cut}") is True)
            proxy.cut()

        def entries():
            return {key: value for key, value in (writer.get("presence.ada") or {}).items() if key != "$id"}
        wait_for(lambda: entries() == {"c1": None, "c2": None, "c3": True})


class Recorder(StandIn):
    """A stand-in kvod that records the methods of each connection and answers them; `drop()` closes the
    connections; while `gate` is clear, hello is answered only once it is set (a window for callers to queue)."""

    def __init__(self):
        self.connections = []
        self.sockets = []
        self.gate = threading.Event()
        self.gate.set()
        super().__init__()

    def _accepted(self, connection):
        self.sockets.append(connection)
        self.connections.append([])
        return (self.connections[-1],)

    def _serve(self, connection, methods):
        results = {"hello": {"server": "kvod"}, "subscribe": {"subscription": 1, "seq": 0}, "set": {"seq": 1}}
        with connection, connection.makefile("rwb") as stream:
            for line in stream:
                request = json.loads(line)
                methods.append(request["method"])
                if request["method"] == "hello":
                    self.gate.wait(10)
                result = results.get(request["method"], {"ops": len((request.get("params") or {}).get("ops", []))})
                stream.write(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode() + b"\n")
                stream.flush()

    def drop(self):
        # The connections open now: the reconnection it causes may be accepted while this loop runs.
        for connection in list(self.sockets):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        super().close()
        self.drop()


@pytest.mark.parametrize("flavour", ["blocking", "asyncio"])
def test_the_order_on_a_new_connection(flavour):
    """hello, the onDisconnect ops, the subscriptions, then a call that waited for the connection."""
    recorder = Recorder()
    try:
        if flavour == "blocking":
            with kvod.Client(recorder.address, timeout=20) as client:
                client.subscribe("x")
                client.on_disconnect(GONE)
                recorder.gate.clear()
                recorder.drop()
                wait_for(lambda: recorder.connections[1:] == [["hello"]])  # reconnected; hello waits at the gate
                results = []
                caller = threading.Thread(target=lambda: results.append(client.set("y", 1)))
                caller.start()
                time.sleep(0.2)  # a window for the call to queue (the order holds either way)
                recorder.gate.set()
                caller.join(20)
                assert results == [1]
        else:
            async def scenario():
                async with await kvod.aio.connect(recorder.address, timeout=20) as client:
                    await client.subscribe("x")
                    await client.on_disconnect(GONE)
                    recorder.gate.clear()
                    recorder.drop()
                    for _ in range(1000):
                        if recorder.connections[1:] == [["hello"]]:
                            break
                        await asyncio.sleep(0.02)
                    call = asyncio.ensure_future(client.set("y", 1))
                    await asyncio.sleep(0.2)
                    recorder.gate.set()
                    assert await call == 1
            asyncio.run(asyncio.wait_for(scenario(), 60))
        assert recorder.connections[1] == ["hello", "onDisconnect", "subscribe", "set"]
    finally:
        recorder.close()


def test_disconnected_listeners_hear_why_a_connection_ended(make_kvod, transport):
    server = make_kvod()
    heard = []
    with kvod.Client(server.address, timeout=20, transport=transport) as client:
        remove = client.on_disconnected(heard.append)
        server.stop()  # SIGTERM: kvod says `closing` server_shutdown first
        deadline = time.monotonic() + 10
        while not heard and time.monotonic() < deadline:
            time.sleep(0.01)
        assert heard and heard[0].reason == "server_shutdown" and heard[0].reconnecting
        assert heard[0].endpoint is not None and heard[0].endpoint.port == server.port
        server.restart()
        client.call("ping")  # waits for the reconnection
        server.kill()  # no closing message this time
        deadline = time.monotonic() + 10
        while len(heard) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(heard) == 2 and heard[1].reason is None
        remove()
    assert len(heard) == 2  # close() tells nobody


def test_the_asyncio_client_tells_its_disconnected_listeners(make_kvod, transport):
    server = make_kvod()

    async def scenario():
        heard = []
        client = await kvod.aio.connect(server.address, timeout=20, transport=transport)
        try:
            async def listener(info):
                heard.append(info)
            client.on_disconnected(listener)
            server.stop()
            for _ in range(1000):
                if heard:
                    break
                await asyncio.sleep(0.01)
            assert heard and heard[0].reason == "server_shutdown" and heard[0].reconnecting
        finally:
            await client.close()
    asyncio.run(scenario())
