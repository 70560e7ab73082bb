"""A resubscription kvod refuses after a reconnect, with the blocking and the asyncio client: kvod restarted (same port
and data directory) with a token file that no longer allows one subscription's path, or with a model that no longer
declares one subscription's key. That subscription ends with
the typed error (raised from its iterator, each time, after what it delivered before), the other one goes on, calls
work, and the client does not keep reconnecting. A refusal that may pass (1012 from a stand-in follower during an
election that does not end) is retried on new connections for `leader_wait`, then ends the subscription the same
way. A token kvod no longer accepts is said once (a warning, and the Timeout of a call waiting for the connection) while
the client reconnects. `SubscriptionState.resume_refused`, the one place that decides per code, is checked on its own too."""

import asyncio
import json
import logging
import time

import pytest

import kvod
from kvod._core import Endpoint, SubscriptionState, ops_params
from conftest import Kvod
from test_leader import Follower

TOKEN = "a-token-for-the-resume-tests"


def wait_for(condition, seconds=20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def guarded(make_kvod, tmp_path):
    """kvod with a token file allowing the token `a` and `b`, and a function that restarts it allowing `b` only."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN} read-write a,b\n")
    server = make_kvod("--token-file", str(tokens), "--fsync", "always", data_dir=True)

    def restart_allowing_b_only():
        tokens.write_text(f"{TOKEN} read-write b\n")
        server.kill()
        server.restart()
    return server, restart_allowing_b_only


def test_a_path_the_token_no_longer_allows_ends_that_subscription_only(guarded, transport, caplog):
    server, restart_allowing_b_only = guarded
    with kvod.Client(server.address, token=TOKEN, timeout=20, transport=transport) as client:
        a, b = client.subscribe("a"), client.subscribe("b")
        client.set("a", 1)
        client.set("a", 2)
        client.set("b", 1)  # b's resume point is kvod's seq: b resumes after the restart without a Resync
        assert b.next(timeout=10).new == 1
        with caplog.at_level(logging.WARNING, logger="kvod"):
            restart_allowing_b_only()
            with pytest.raises(kvod.Unauthorized) as raised:
                # What was delivered before the restart first, then the error.
                assert [a.next(timeout=20).new, a.next(timeout=20).new] == [1, 2]
                a.next(timeout=20)
        assert raised.value.data == {"reason": "path not allowed", "path": "a"}
        assert a.error is raised.value
        with pytest.raises(kvod.Unauthorized):
            next(iter(a))  # every later call ends the same way
        assert any("subscription to a cannot resume" in record.message for record in caplog.records)
        client.set("b", 2)
        assert b.next(timeout=10).new == 2 and b.error is None
        with pytest.raises(kvod.Unauthorized):
            client.get("a")
        assert client.connections == 2  # one reconnection, not a loop
        a.unsubscribe()  # harmless on an ended subscription
        assert client.ping() == "pong" and client.connections == 2


def test_the_asyncio_client_ends_it_too(guarded):
    server, restart_allowing_b_only = guarded

    async def scenario():
        client = await kvod.aio.connect(server.address, token=TOKEN, timeout=20)
        async with client:
            a, b = await client.subscribe("a"), await client.subscribe("b")
            await client.set("b", 1)
            assert (await b.next(timeout=10)).new == 1
            await asyncio.get_running_loop().run_in_executor(None, restart_allowing_b_only)
            with pytest.raises(kvod.Unauthorized):
                async for _ in a:
                    raise AssertionError("nothing was written to a")
            assert isinstance(a.error, kvod.Unauthorized)
            with pytest.raises(kvod.Unauthorized):
                await a.next(timeout=1)
            await client.set("b", 2)
            assert (await b.next(timeout=10)).new == 2
            assert client.connections == 2

    asyncio.run(asyncio.wait_for(scenario(), 60))


def model(*person_keys):
    properties = {key: {"type": "string", "default": ""} for key in person_keys}
    return json.dumps({"root": "Root", "classes": {
        "Root": {"properties": {"person": {"type": "Person", "default": {}}}},
        "Person": {"properties": properties}}})


def test_a_key_the_new_model_no_longer_declares_ends_that_subscription(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(model("name", "nickname"))
    server = Kvod(["--model", str(path)])
    try:
        with kvod.Client(server.address, timeout=20) as client:
            name = client.subscribe("person.name")  # at seq 0: it resumes from there on the new graph
            nickname = client.subscribe("person.nickname")
            client.set("person.nickname", "ada")
            assert nickname.next(timeout=10).new == "ada"
            path.write_text(model("name"))
            server.kill()
            server.restart()  # in memory: a new graph, its seq from 0
            with pytest.raises(kvod.UndefinedKey) as raised:
                nickname.next(timeout=20)
            assert raised.value.data == {"path": "person.nickname"}
            client.set("person.name", "Ada")
            assert name.next(timeout=10).new == "Ada"
            assert client.connections == 2
    finally:
        server.stop()


def test_a_token_kvod_no_longer_accepts_is_reported_while_the_client_reconnects(make_kvod, tmp_path, caplog):
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN} read-write\n")
    server = make_kvod("--token-file", str(tokens), "--fsync", "always", data_dir=True)
    with kvod.Client(server.address, token=TOKEN, timeout=2, max_backoff=0.2) as client:
        subscription = client.subscribe("n")
        tokens.write_text("another-token read-write\n")
        with caplog.at_level(logging.WARNING, logger="kvod"):
            server.kill()
            server.restart()
            wait_for(lambda: isinstance(client.hello_error, kvod.Unauthorized))
            with pytest.raises(kvod.Timeout, match="refused hello"):
                client.get("n")  # waits for a connection in vain, and says why
        refusals = [record for record in caplog.records if "refused hello" in record.message]
        assert len(refusals) == 1  # once, not at each attempt
        tokens.write_text(f"{TOKEN} read-write\n")
        server.kill()
        server.restart()  # kvod accepts the token again: the client connects, resubscribes, and goes on
        wait_for(lambda: client.connections == 2)
        assert client.hello_error is None
        client.set("n", 1)
        assert subscription.next(timeout=10).new == 1


def test_a_refusal_that_may_pass_is_retried_for_leader_wait_then_ends_the_subscription(kvod_server, make_proxy,
                                                                                        caplog):
    proxy = make_proxy(kvod_server.port)
    stand_in = Follower(None)  # refuses every subscribe with 1012, naming no leader (an election that does not end)
    try:
        with kvod.Client([proxy.address, stand_in.address], timeout=20, leader_wait=1.0) as client:
            subscription = client.subscribe("n")
            proxy.refuse()
            with caplog.at_level(logging.WARNING, logger="kvod"):
                proxy.cut()
                with pytest.raises(kvod.NotLeader):
                    subscription.next(timeout=20)
            assert stand_in.refusals >= 2  # retried on new connections (with the reconnection's backoff) ...
            refusals = stand_in.refusals
            assert client.connections == 2  # ... then the connection to the stand-in went on without it
            assert any("subscription to n cannot resume" in record.message for record in caplog.records)
            with pytest.raises(kvod.NotLeader):
                client.ping()  # the stand-in refuses every request: retried on this connection for leader_wait
            assert client.connections == 2 and stand_in.refusals > refusals
    finally:
        stand_in.close()


def test_resume_decisions():
    here, leader = Endpoint("h", 1), Endpoint("10.0.0.1", 7070)
    state = SubscriptionState("p", ("new",), None, None, last_seq=41)
    resync = kvod.ResyncRequired("cannot resume", 1010, {"oldest": 50})
    assert state.resume_refused(resync, here, "tcp", 5.0, now=100.0).action == "resync"
    state.restart()
    assert state.resume_refused(resync, here, "tcp", 5.0, now=100.0).action == "end"  # a fresh subscribe: no since
    behind = kvod.InvalidParams("subscribe: 'since' 41 is beyond this member's seq 40: it is behind", -32602,
                                {"reason": "behind", "since": 41, "seq": 40})
    named = kvod.NotLeader("not the leader", 1012, {"leader": "10.0.0.1:7070"})
    assert state.resume_refused(behind, here, "tcp", 5.0, now=100.0).action == "retry"
    assert state.resume_refused(named, here, "tcp", 5.0, now=101.0).leader == leader
    step = state.resume_refused(named, here, "tcp", 5.0, now=102.0)
    assert step.action == "retry" and step.leader is None  # each named leader is tried once
    assert state.resume_refused(behind, here, "tcp", 5.0, now=105.0).action == "end"  # leader_wait passed
    assert state.resume_refused(behind, here, "tcp", 5.0, now=200.0).action == "retry"  # a new outage starts afresh
    for error in (kvod.Unauthorized("path not allowed", 1008), kvod.UndefinedKey("undefined key", 1001),
                  kvod.TypeMismatch("type mismatch", 1005), kvod.LimitExceeded("limit exceeded", 1009),
                  kvod.InternalError("internal error", -32603), kvod.KvodError("a code this client does not know", 4242),
                  kvod.InvalidParams("subscribe: 'since' must be a seq of at least 0", -32602)):
        assert SubscriptionState("p", ("new",), None, None).resume_refused(error, here, "tcp", 5.0, 0.0).action == "end"



def test_ops_in_either_form():
    op = {"method": "set", "params": {"path": "p", "value": 1}}
    assert ops_params([op, ("set", {"path": "p", "value": 1})]) == {"ops": [op, op]}
    with pytest.raises(TypeError):
        ops_params(op)  # one op, not a list of them
