"""Following a cluster's leader without a cluster: a stand-in "follower" on loopback answers `hello` and refuses
everything else with 1012 "not the leader" (naming a real kvod as the leader, or none, as during an election). The
blocking and the asyncio client move to the named leader and send the request again; with no leader named they retry
for `leader_wait` seconds, then raise NotLeader. The real thing (a 3-member etcd, SIGKILL of the leader) is
Tests/cluster/clients_test.py."""

import asyncio
import json
import socket
import threading
import time

import pytest

import kvod
from kvod._core import Endpoint, connection_order, leader_endpoint


class StandIn:
    """A TCP server on loopback that stands in for kvod: each connection is answered by `_serve(connection, *args)`
    on a thread of its own, with the arguments `_accepted(connection)` returns on the accepting thread. A subclass
    sets its own state before calling `__init__`, which starts accepting."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accepted(self, connection):
        return ()

    def _accept(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection, *self._accepted(connection)), daemon=True).start()

    def close(self):
        self.listener.close()


class Follower(StandIn):
    """Speaks just enough of kvod's protocol: `hello` succeeds, every other request gets 1012 with `data.leader` =
    `leader` (omitted when None). Counts the refusals."""

    def __init__(self, leader=None):
        self.leader = leader
        self.refusals = 0
        super().__init__()

    def _serve(self, connection):
        with connection, connection.makefile("rwb") as stream:
            for line in stream:
                request = json.loads(line)
                if request["method"] == "hello":
                    answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"server": "kvod", "role": "follower"}}
                else:
                    self.refusals += 1
                    data = {"reason": "follower" if self.leader else "election", "term": 7}
                    if self.leader:
                        data["leader"] = self.leader
                    answer = {"jsonrpc": "2.0", "id": request["id"],
                              "error": {"code": 1012, "message": "not the leader", "data": data}}
                stream.write(json.dumps(answer).encode() + b"\n")
                stream.flush()


@pytest.fixture
def follower():
    made = []

    def make(leader=None):
        made.append(Follower(leader))
        return made[-1]
    yield make
    for server in made:
        server.close()


def test_a_mutation_refused_by_a_follower_goes_to_the_leader_it_names(kvod_server, follower):
    stand_in = follower(kvod_server.address)
    with kvod.Client([stand_in.address]) as client:
        seq = client.set("x", 1)
        assert stand_in.refusals == 1
        assert str(client.endpoint) == kvod_server.address
        subscription = client.subscribe("x", ["new"])  # on the leader now, like every later call
        assert client.set("x", 2) == seq + 1
        assert subscription.next(timeout=10).new == 2
        assert client.connections == 2


def test_without_a_leader_it_retries_for_leader_wait_then_raises_not_leader(follower):
    stand_in = follower(None)
    with kvod.Client(stand_in.address, leader_wait=0.6) as client:
        started = time.monotonic()
        with pytest.raises(kvod.NotLeader) as raised:
            client.set("x", 1)
        assert time.monotonic() - started >= 0.6
        assert stand_in.refusals >= 3  # 0.1 + 0.2 + 0.4 s pauses: a few tries, not a busy loop
        assert raised.value.code == 1012 and raised.value.data["reason"] == "election"
        assert client.connections == 1


def test_a_named_leader_that_is_down_is_tried_once_per_call(follower):
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        dead = f"127.0.0.1:{placeholder.getsockname()[1]}"
    stand_in = follower(dead)
    with kvod.Client(stand_in.address, leader_wait=0.5) as client:
        with pytest.raises(kvod.NotLeader):
            client.set("x", 1)
        assert client.connections == 2  # back to the stand-in once, then waiting on it
        assert str(client.endpoint) == stand_in.address


def test_the_asyncio_client_follows_the_leader_too(kvod_server, follower):
    stand_in = follower(kvod_server.address)

    async def scenario():
        async with await kvod.aio.connect([stand_in.address, "127.0.0.1:1"]) as client:
            await client.set("y", 5)
            assert str(client.endpoint) == kvod_server.address
            assert await client.get("y") == 5
        lonely = follower(None)
        async with await kvod.aio.connect(lonely.address, leader_wait=0.3) as client:
            with pytest.raises(kvod.NotLeader):
                await client.set("y", 6)
    asyncio.run(scenario())


def test_connection_order_and_leader_endpoint():
    a, b, c = (Endpoint("h", port) for port in (1, 2, 3))
    assert connection_order([a, b, c], None, None) == [a, b, c]
    assert connection_order([a, b, c], None, b) == [c, a, b]
    assert connection_order([a, b, c], c, a) == [c, b, a]
    assert connection_order([a, b], Endpoint("leader", 9), None) == [Endpoint("leader", 9), a, b]
    refusal = kvod.NotLeader("not the leader", 1012, {"leader": "10.0.0.1:7070", "reason": "follower"})
    assert leader_endpoint(refusal, "tcp") == Endpoint("10.0.0.1", 7070)
    assert leader_endpoint(refusal, "websocket").url == "ws://10.0.0.1:7070/"
    assert leader_endpoint(kvod.NotLeader("x", 1012, {"reason": "election"}), "tcp") is None
    assert leader_endpoint(kvod.NotLeader("x", 1012, {"leader": "nonsense"}), "tcp") is None
    assert isinstance(kvod.ERRORS[1012]("x"), kvod.NotLeader)


def test_bad_addresses_are_refused_at_once():
    for bad in ([], "no-port", "host:", ["127.0.0.1:7070", "x:y"]):
        with pytest.raises(ValueError):
            kvod.Client(bad)
