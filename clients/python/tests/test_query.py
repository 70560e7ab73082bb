"""Queries with both Python flavours against a real kvod (Protocol/methods.md#queries): the one-shot `query`, and a
model-checked live query test: random mutations (sets of sort and filter keys and of keys nobody reads, inserts,
removals, replacements, transactions, the whole collection replaced, set mutations) with several live queries of
random orderBy, offset, limit and select; after every mutation each LiveQuery's window and count, built only from the
notifications, equal the brute-force answer (`get` with the same query), and so does a window rebuilt from the
change callbacks alone. Also: reconnection (the window comes again), closing, errors.

The predicates are the simple `KEY OP VALUE` ones (==, !=, <, >) and TRUEPREDICATE, which the full predicate
language keeps. KVOD_QUERY_STEPS sets the number of mutations per run (default 150) and KVOD_QUERY_SEED the seed."""

import asyncio
import os
import random
import time

import pytest

import kvod
import kvod.aio
from conftest import Kvod
from kvod._core import Change, Session, SubscriptionState
from kvod._query import MirrorError, QueryMirror, query_params

STEPS = int(os.environ.get("KVOD_QUERY_STEPS", "150"))
SEED = int(os.environ.get("KVOD_QUERY_SEED", str(random.randrange(1 << 30))))
NAMES = ["ada", "bob", "cy", "di", "eve", "fay", "gus"]
# An open root with an array of open objects and a set of ints (a set must be declared).
MODEL = '{"root": "Root", "classes": {"Root": {"open": true, "properties": {' \
    '"players": {"type": "[Object]", "default": []}, "nums": {"type": "set<int>", "default": []}}}}}'


@pytest.fixture
def kvod_server(tmp_path):
    """kvod on MODEL."""
    model = tmp_path / "model.json"
    model.write_text(MODEL)
    server = Kvod(["--model", str(model)])
    yield server
    server.stop()


def random_query(rng):
    """Keyword arguments of `query`/`live_query`, on `players` (objects) or `nums` (a set of ints)."""
    if rng.random() < 0.25:
        return "nums", dict(where=rng.choice(["TRUEPREDICATE", f"SELF > {rng.randrange(20)}",
                                              f"SELF < {rng.randrange(20)}"]),
                            order_by=rng.choice([None, "self", "-self"]),
                            offset=rng.choice([None, 0, 1, 3]), limit=rng.choice([None, 1, 2, 4]))
    where = rng.choice(["TRUEPREDICATE", f"team == {rng.randrange(3)}", f"team != {rng.randrange(3)}",
                        f"score > {rng.randrange(10)}", f"score < {rng.randrange(10)}",
                        f"name == {rng.choice(NAMES)}", None])
    keys = rng.sample(["score", "-score", "team", "-team", "name", "-name"], rng.randrange(0, 3))
    order_by = [key if rng.random() < 0.7 else {"key": key.lstrip("-"), "ascending": not key.startswith("-")}
                for key in keys] or None
    select = rng.choice([None, ["name"], ["score", "team"], ["name", "score", "team"]])
    return "players", dict(where=where, order_by=order_by, offset=rng.choice([None, 0, 1, 2, 5]),
                           limit=rng.choice([None, 1, 3, 5, 20]), select=select)


def player(rng):
    return {"name": rng.choice(NAMES), "score": rng.randrange(10), "team": rng.randrange(3),
            "other": rng.randrange(100)}


def random_op(rng, players, nums_present):
    """One mutation as (method, params), on the current `players` (a list of dicts with `$id`)."""
    n = len(players)
    choice = rng.random()
    if n and choice < 0.45:
        target = rng.choice(players)["$id"]
        key = rng.choice(["score", "score", "team", "name", "other"])
        value = {"score": rng.randrange(10), "team": rng.randrange(3), "name": rng.choice(NAMES),
                 "other": rng.randrange(100)}[key]
        return "set", {"path": f"${target}.{key}", "value": value}
    if choice < 0.6 or n == 0:
        if n and rng.random() < 0.5:
            return "insert", {"path": "players", "value": player(rng), "index": rng.randrange(n + 1)}
        return "insert", {"path": "players", "values": [player(rng) for _ in range(rng.randrange(1, 3))]}
    if choice < 0.72:
        indexes = sorted(rng.sample(range(n), min(n, rng.randrange(1, 3))))
        return "remove", {"path": "players", "indexes": indexes}
    if choice < 0.8:
        return "replace", {"path": "players", "value": player(rng), "index": rng.randrange(n)}
    if choice < 0.82:
        return "set", {"path": "players", "value": [player(rng) for _ in range(rng.randrange(0, 6))]}
    values = [rng.randrange(20) for _ in range(rng.randrange(1, 4))]
    method = rng.choice(["union", "union", "minus", "intersect", "setMembers"])
    if method == "intersect":
        values += rng.sample(sorted(nums_present), min(len(nums_present), 3)) if nums_present else []
    return method, {"path": "nums", "values": values}


def random_mutation(rng, players, nums_present):
    if rng.random() < 0.15:
        ops, simulated = [], [dict(p) for p in players]
        for _ in range(rng.randrange(2, 4)):
            method, params = random_op(rng, simulated, nums_present)
            if method in ("remove", "replace") or (method == "set" and params["path"] == "players"):
                continue  # indexes would refer to the state the earlier ops left: keep the ops independent
            ops.append({"method": method, "params": params})
        if ops:
            return "transaction", {"ops": ops}
    return random_op(rng, players, nums_present)


def apply_event(rows, event):
    """A window rebuilt from the QueryChange events alone."""
    if event.kind == "setting":
        return list(event.new)
    rows = list(rows)
    if event.kind == "insertion":
        for index, row in sorted(zip(event.indexes, event.new), key=lambda pair: pair[0]):
            rows.insert(index, row)
    elif event.kind == "removal":
        for index in sorted(event.indexes, reverse=True):
            del rows[index]
    else:
        for index, row in zip(event.indexes, event.new):
            rows[index] = row
    return rows


def wait_until(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_query_params_and_the_mirror_alone():
    assert query_params(where="a > 1", vars={"x": 1}, order_by="-a", offset=0, limit=2, select="a") == {
        "where": "a > 1", "vars": {"x": 1}, "orderBy": ["-a"], "offset": 0, "limit": 2, "select": ["a"]}
    assert query_params(order_by=["a", {"key": "b", "ascending": False}]) == {
        "orderBy": ["a", {"key": "b", "ascending": False}]}
    assert query_params() == {}
    mirror = QueryMirror()

    def change(kind, indexes=None, new=None, count=0, **extra):
        params = {"path": "p", "kind": kind, "seq": 1, "count": count, **extra}
        if indexes is not None:
            params["indexes"] = indexes
        if new is not None:
            params["new"] = new
        return Change.from_params(params)

    mirror.apply(change("setting", new=["a", "b", "c"], count=3))
    event = mirror.apply(change("removal", [0, 2], count=1))
    assert mirror.rows == ["b"] and event.old == ["a", "c"] and mirror.count == 1
    mirror.apply(change("insertion", [0, 2], ["x", "y"], count=3))
    assert mirror.rows == ["x", "b", "y"]
    event = mirror.apply(change("replacement", [1], ["B"], count=3))
    assert mirror.rows == ["x", "B", "y"] and event.old == ["b"]
    assert mirror.apply(change("removal", [0], prior=True)) is None and mirror.rows == ["x", "B", "y"]
    event = mirror.apply(change("replacement", [], [], count=7))
    assert mirror.count == 7 and event.indexes == [] and mirror.rows == ["x", "B", "y"]
    for bad in (change("removal", [3]), change("insertion", [5], ["z"]), change("insertion", [0]),
                change("replacement", [0], ["a", "b"]), change("removal")):
        with pytest.raises(MirrorError):
            mirror.apply(bad)


def test_a_one_shot_query(kvod_server):
    with kvod.Client(kvod_server.address) as client:
        client.insert("players", values=[{"name": n, "score": s, "team": t}
                                         for n, s, t in [("ada", 5, 0), ("bob", 9, 1), ("cy", 1, 0), ("di", 7, 1)]])
        result = client.query("players", where="score > 2", order_by="-score", limit=2, select=["name", "score"])
        assert result.rows == [{"$id": 2, "name": "bob", "score": 9}, {"$id": 4, "name": "di", "score": 7}]
        assert (result.count, result.seq, len(result), result[0]["name"]) == (3, 1, 2, "bob")
        assert [row["name"] for row in client.query("players", order_by=["team", "-score"], offset=1)] == \
            ["ada", "cy", "bob", "di"][1:]
        with pytest.raises(kvod.InvalidQuery) as error:
            client.query("players", where="score >")
        assert error.value.code == 1013 and "column" in error.value.data
        with pytest.raises(kvod.InvalidParams):
            client.query("players", offset=-1)
        client.set("name", "x")
        with pytest.raises(kvod.TypeMismatch):
            client.query("name")
        with pytest.raises(kvod.TypeMismatch):
            client.live_query("name")


def check(client, lives, step, seed):
    for (path, kwargs), live, rebuilt in lives:
        expected = client.query(path, **kwargs)
        context = f"seed {seed} step {step}: {path} {kwargs}"
        assert live.error is None, context
        assert (live.rows, live.count) == (expected.rows, expected.count), context
        assert list(live) == expected.rows and len(live) == len(expected.rows), context


def test_live_queries_follow_random_mutations(kvod_server, transport):
    rng = random.Random(SEED)
    with kvod.Client(kvod_server.address, transport=transport) as client:
        client.insert("players", values=[player(rng) for _ in range(8)])
        client.union("nums", [rng.randrange(20) for _ in range(6)])
        lives = []
        for _ in range(8):
            path, kwargs = random_query(rng)
            live = client.live_query(path, **kwargs)
            rebuilt = {"rows": None}
            live.on_change(lambda event, rebuilt=rebuilt: rebuilt.update(rows=apply_event(rebuilt["rows"] or [],
                                                                                           event)))
            lives.append(((path, kwargs), live, rebuilt))
        check(client, lives, 0, SEED)
        for step in range(1, STEPS + 1):
            players = client.get("players") or []
            nums = set(client.get("nums") or [])
            method, params = random_mutation(rng, players, nums)
            client.call(method, params)
            check(client, lives, step, SEED)
        # The callbacks run on the hook thread: once it caught up, their rebuilt windows equal the mirrors.
        for (path, kwargs), live, rebuilt in lives:
            wait_until(lambda: rebuilt["rows"] == live.rows)
            live.close()
        assert client.observers()["connections"][0]["subscriptions"] == []


def test_live_queries_follow_random_mutations_with_asyncio(kvod_server):
    rng = random.Random(SEED + 1)

    async def scenario():
        async with await kvod.aio.connect(kvod_server.address) as client:
            await client.insert("players", values=[player(rng) for _ in range(8)])
            await client.union("nums", [rng.randrange(20) for _ in range(6)])
            lives = []
            for _ in range(6):
                path, kwargs = random_query(rng)
                live = await client.live_query(path, **kwargs)
                rebuilt = {"rows": []}

                async def rebuild(event, rebuilt=rebuilt):  # a coroutine callback: a task of its own
                    rebuilt["rows"] = apply_event(rebuilt["rows"], event)
                live.on_change(rebuild if len(lives) % 2 else
                               (lambda event, rebuilt=rebuilt: rebuilt.update(rows=apply_event(rebuilt["rows"],
                                                                                               event))))
                lives.append(((path, kwargs), live, rebuilt))
            for step in range(1, STEPS + 1):
                players = await client.get("players") or []
                nums = set(await client.get("nums") or [])
                method, params = random_mutation(rng, players, nums)
                await client.call(method, params)
                for (path, kwargs), live, rebuilt in lives:
                    expected = await client.query(path, **kwargs)
                    context = f"seed {SEED + 1} step {step}: {path} {kwargs}"
                    assert live.error is None, context
                    assert (live.rows, live.count) == (expected.rows, expected.count), context
            await asyncio.sleep(0.05)
            for _, live, rebuilt in lives:
                assert rebuilt["rows"] == live.rows
                await live.close()
            assert live.closed
    asyncio.run(scenario())


def test_a_live_query_comes_back_after_a_reconnection(kvod_server, make_proxy, transport):
    proxy = make_proxy(kvod_server.port)
    with kvod.Client(proxy.address, timeout=20, transport=transport) as watcher, \
            kvod.Client(kvod_server.address) as writer:
        writer.insert("players", values=[{"name": n, "score": s} for n, s in [("ada", 5), ("bob", 9), ("cy", 1)]])
        events = []
        with watcher.live_query("players", order_by="-score", limit=2, select=["name"]) as live:
            live.on_change(events.append)
            assert [row["name"] for row in live] == ["bob", "ada"]
            proxy.refuse()
            proxy.cut()
            writer.set("$3.score", 50)            # missed while disconnected
            writer.insert("players", {"name": "di", "score": 7})
            proxy.accept()
            # The client resubscribes with `since`: kvod replays what the window missed, as ordinary changes.
            live.wait_for(lambda q: [row["name"] for row in q] == ["cy", "bob"] and q.count == 4, timeout=20)
            writer.set("$2.score", 100)
            live.wait_for(lambda q: [row["name"] for row in q] == ["bob", "cy"])
            assert watcher.connections == 2
            wait_until(lambda: len(events) >= 3)
            assert events[0].initial and not any(event.initial for event in events[1:])
            assert all(event.count in (3, 4) for event in events)
        assert live.closed
        writer.set("$1.score", 1000)
        time.sleep(0.1)
        assert [row["name"] for row in live] == ["bob", "cy"]  # closed: it stays as it was


def test_a_closed_client_leaves_the_window(kvod_server):
    client = kvod.Client(kvod_server.address)
    client.insert("nums", values=[3, 1, 2])
    live = client.live_query("nums", order_by="self")
    assert list(live) == [1, 2, 3] and live.count == 3 and live[0] == 1 and live.snapshot().rows == [1, 2, 3]
    client.close()
    wait_until(lambda: live.closed)
    assert list(live) == [1, 2, 3]
    with pytest.raises(kvod.Timeout):
        live.wait_for(lambda q: q.count == 4, timeout=0.2)


def test_an_asyncio_live_query_comes_back_after_a_reconnection(kvod_server, make_proxy):
    proxy = make_proxy(kvod_server.port)

    async def scenario():
        async with await kvod.aio.connect(proxy.address, timeout=20) as watcher, \
                await kvod.aio.connect(kvod_server.address) as writer:
            await writer.insert("nums", values=[5, 1, 9])
            async with await watcher.live_query("nums", where="SELF > 2", order_by="-self") as live:
                assert list(live) == [9, 5] and live.count == 2
                proxy.refuse()
                proxy.cut()
                await writer.union("nums", [7, 0])        # missed while disconnected
                proxy.accept()
                await live.wait_for(lambda q: list(q) == [9, 7, 5] and q.count == 3, timeout=20)
                await writer.minus("nums", [9])
                await live.wait_for(lambda q: list(q) == [7, 5])
                assert watcher.connections == 2
            assert live.closed
    asyncio.run(scenario())


def test_a_resume_between_two_notifications_of_one_seq_neither_loses_nor_repeats():
    state = SubscriptionState("players", ("initial", "new"), None, None, query={"limit": 2})
    def change(seq, kind, initial=False):
        return Change.from_params({"path": "players", "kind": kind, "seq": seq, "initial": initial})
    assert Session.accept_query(state, change(5, "setting", initial=True))
    assert state.resume_since() == 5  # nothing after the window yet: from its seq
    assert Session.accept_query(state, change(6, "removal"))  # a move: its removal arrived, the insertion did not
    assert state.resume_since() == 5  # from the seq before, dropping one replay at 6
    assert not Session.accept_query(state, change(6, "removal"))
    assert Session.accept_query(state, change(6, "insertion"))
    assert Session.accept_query(state, change(7, "replacement"))
    assert not Session.accept_query(state, change(4, "replacement"))
    assert state.resume_since() == 6
