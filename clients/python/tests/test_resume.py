"""Reconnection and resuming, with the blocking and the asyncio client, over TCP and over WebSocket: kvod SIGKILLed
and restarted on the same data directory in the middle of a subscription (the iterator goes on with no gap and no
duplicate); kvod restarted while the subscriber was away and written to before it was back (the history on disk
replays the changes, no Resync); a connection cut while kvod lives (the missed changes are replayed); and a gap
kvod's history cannot cover (a Resync item, then live)."""

import asyncio
import time

import pytest

import kvod


def wait_for(condition, seconds=20):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def values(subscription, count):
    return [subscription.next(timeout=10).new for _ in range(count)]


def test_kill_and_restart_mid_subscription_loses_nothing(make_kvod, transport):
    server = make_kvod("--fsync", "always", data_dir=True)
    with kvod.Client(server.address, timeout=20, transport=transport) as watcher, \
            kvod.Client(server.address, timeout=20, transport=transport) as writer:
        subscription = watcher.subscribe("counter", ["new"])
        for value in range(1, 6):
            writer.set("counter", value)
        assert values(subscription, 5) == [1, 2, 3, 4, 5]
        server.kill()
        server.restart()
        # The history is on disk: the subscriber resumes without a gap whenever it is back (the next test returns
        # after writes made while it was away).
        # The writer waits for its own reconnection too: a request sent before it noticed the drop is ConnectionLost.
        wait_for(lambda: watcher.connections == 2 and writer.connections == 2)
        for value in range(6, 11):
            writer.set("counter", value)  # waits for the writer's own reconnection
        assert values(subscription, 5) == [6, 7, 8, 9, 10]
        with pytest.raises(kvod.Timeout):  # and nothing delivered twice after them
            subscription.next(timeout=0.3)
        assert watcher.connections == 2 and writer.connections == 2
        assert watcher.get("counter") == 10


def test_a_restart_while_away_replays_from_the_history_on_disk(make_kvod, make_proxy, transport):
    """kvod restarted (SIGKILL, `--fsync always`) while the watcher is cut off, and written to before the watcher is
    back: the history on disk (docs/DURABILITY.md#the-history-on-disk) replays what it missed, no Resync."""
    server = make_kvod("--fsync", "always", data_dir=True)
    proxy = make_proxy(server.port)
    with kvod.Client(proxy.address, timeout=20, transport=transport) as watcher:
        subscription = watcher.subscribe("counter", ["new"])
        with kvod.Client(server.address, transport=transport) as writer:
            for value in range(1, 4):
                writer.set("counter", value)
        assert values(subscription, 3) == [1, 2, 3]
        proxy.refuse()
        proxy.cut()
        server.kill()
        server.restart()
        with kvod.Client(server.address, transport=transport) as writer:
            seqs = [writer.set("counter", value) for value in range(4, 7)]
        proxy.accept()
        changes = [subscription.next(timeout=10) for _ in range(3)]
        assert not any(isinstance(change, kvod.Resync) for change in changes), changes
        assert [change.new for change in changes] == [4, 5, 6]
        assert [change.seq for change in changes] == seqs
        with pytest.raises(kvod.Timeout):
            subscription.next(timeout=0.3)


def test_a_cut_connection_replays_what_it_missed(kvod_server, make_proxy, transport):
    proxy = make_proxy(kvod_server.port)
    with kvod.Client(proxy.address, timeout=20, transport=transport) as watcher, \
            kvod.Client(kvod_server.address, transport=transport) as writer:
        subscription = watcher.subscribe("n", ["new", "old"])
        writer.set("n", 0)
        assert subscription.next(timeout=10).new == 0
        proxy.refuse()
        proxy.cut()
        seqs = [writer.set("n", value) for value in range(1, 8)]
        proxy.accept()
        changes = [subscription.next(timeout=10) for _ in range(7)]
        assert [change.new for change in changes] == list(range(1, 8))
        assert [change.old for change in changes] == list(range(0, 7))
        assert [change.seq for change in changes] == seqs
        writer.set("n", 99)
        assert subscription.next(timeout=10).new == 99
        assert watcher.connections >= 2


def test_a_gap_beyond_the_history_is_reported_as_a_resync(make_kvod, make_proxy, transport):
    server = make_kvod("--history", "4")
    proxy = make_proxy(server.port)
    with kvod.Client(proxy.address, timeout=20, transport=transport) as watcher, \
            kvod.Client(server.address, transport=transport) as writer:
        subscription = watcher.subscribe("n", ["new"])
        writer.set("n", 0)
        assert subscription.next(timeout=10).new == 0
        proxy.refuse()
        proxy.cut()
        for value in range(1, 30):
            last = writer.set("n", value)
        proxy.accept()
        resync = subscription.next(timeout=10)
        assert isinstance(resync, kvod.Resync)
        assert resync.path == "n" and resync.seq == last and resync.oldest > resync.since
        writer.set("n", 100)
        assert subscription.next(timeout=10).new == 100


def test_the_asyncio_client(make_kvod, transport):
    server = make_kvod("--fsync", "always", data_dir=True)

    async def scenario():
        client = await kvod.aio.connect(server.address, timeout=20, transport=transport)
        async with client:
            assert await client.ping() == "pong"
            await client.set("list", [])
            subscription = await client.subscribe("list", ["new", "initial"])
            first = await subscription.next(timeout=10)
            assert first.initial and first.new == []
            await client.insert("list", "a")
            change = await subscription.next(timeout=10)
            assert (change.kind, change.indexes, change.new) == ("insertion", [0], ["a"])
            try:
                await client.get("a..b")
                raise AssertionError("no error")
            except kvod.InvalidParams as error:
                assert error.code == -32602
            await asyncio.get_running_loop().run_in_executor(None, server.kill)
            await asyncio.get_running_loop().run_in_executor(None, server.restart)
            for _ in range(1000):
                if client.connections == 2:
                    break
                await asyncio.sleep(0.02)
            await client.insert("list", "b")
            received = []
            async for item in subscription:
                received.append(item)
                break
            assert (received[0].kind, received[0].new, received[0].indexes) == ("insertion", ["b"], [1])
            assert await client.get("list") == ["a", "b"]
            assert client.connections == 2

    asyncio.run(asyncio.wait_for(scenario(), 60))
