#!/usr/bin/env python3
"""Resuming on another member (docs/SCALING.md#clients, Protocol/README.md#resuming), on loopback with
cluster_test.py's harness: a 3-member etcd and three kvods.

Recorders are cluster-wide, so a subscription resumes with `since` on a member where nobody ever subscribed its path.
Checks, each with its own path: a subscriber on follower A sees the leader's writes, disconnects, more writes follow;
it resubscribes on follower B with `since` = its last seq: B replays exactly the missed changes (same values and
seqs, no gap, no duplicate), then live ones. The same moving from follower A to the leader. A fourth member started
later replays the first path from before it joined (it records the leader's paths from the seq it resumes from,
here 0). A subscriber on the
leader, more writes after it left, the leader SIGKILLed: on the new leader (which recorded the path only as a
follower) and on the other survivors, a `since` resubscription replays every missed change, those of the old leader
and the new one's, then live ones; the killed leader, restarted on its data directory, replays them all too (from
the history it kept on disk before the kill and what it recorded following the new leader). Standard library only;
exits 0 when every check passed.
"""
import os, signal, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_test import LEASE, Client, check, wait_for, run_scenario  # noqa: E402


def notifications(client, count, timeout=5.0):
    """The next `count` change notifications (those already read during calls first), as (new, seq) pairs."""
    deadline = time.monotonic() + timeout
    while len(client.notifications) < count and time.monotonic() < deadline:
        client.notifications.append(client.read_line(max(0.05, deadline - time.monotonic())))
    taken, client.notifications = client.notifications[:count], client.notifications[count:]
    assert all(n.get("method") == "change" for n in taken), f"not only changes: {taken}"
    return [(n["params"]["new"], n["params"]["seq"]) for n in taken]


def nothing_more(client, wait=0.5):
    """True when nothing else arrives within `wait` seconds (a duplicate would)."""
    if client.notifications:
        return False
    try:
        line = client.read_line(wait)
    except (TimeoutError, OSError):
        return True
    client.notifications.append(line)
    return False


def write(port, path, values):
    """Sets `path` to each value on the leader at `port`; returns [(value, seq)]."""
    client = Client(port)
    try:
        written = []
        for v in values:
            answer = client.call("set", {"path": path, "value": v})
            assert "result" in answer, answer
            written.append((v, answer["result"]["seq"]))
        return written
    finally:
        client.close()


def applied(cluster, names, seq):
    return all(cluster.hello(n)["appliedSeq"] >= seq for n in names)


def move(cluster, leader, path, start, to, check_name, also_live_on=None):
    """Subscribes on `start`, sees 3 writes, disconnects, 3 more writes; resubscribes on `to` with `since`."""
    port = cluster.kvod_ports
    subscriber = Client(port[start])
    answer = subscriber.call("subscribe", {"path": path, "options": ["new"]})
    assert "result" in answer, answer
    first = write(port[leader], path, [1, 2, 3])
    got = notifications(subscriber, 3)
    check(got == first, f"{check_name}: the subscriber on {start} sees the writes {first}")
    since = got[-1][1]
    subscriber.close()
    missed = write(port[leader], path, [4, 5, 6])
    wait_for(f"{to} at seq {missed[-1][1]}", lambda: applied(cluster, [to], missed[-1][1]), 10)
    observers = Client(port[to]).call("observers", {"path": path})["result"]
    check(not any(c.get("subscriptions") for c in observers["connections"]),
          f"{check_name}: nobody subscribed {path} on {to}")
    resumed = Client(port[to])
    answer = resumed.call("subscribe", {"path": path, "options": ["new"], "since": since})
    check("result" in answer, f"{check_name}: subscribe on {to} with since {since} succeeds ({answer})")
    replayed = notifications(resumed, 3)
    check(replayed == missed, f"{check_name}: {to} replays exactly the missed changes {missed} ({replayed})")
    live = write(port[leader], path, [7])
    check(notifications(resumed, 1) == live and nothing_more(resumed),
          f"{check_name}: then the live change {live}, and nothing twice")
    resumed.close()
    return live[-1][1]


def scenario(cluster, root):
    _, leader, (a, b) = cluster.start_members()
    cluster.wait_linked(leader, (a, b))
    # Both links streaming (a write applied everywhere), so each subscription below is announced when it starts,
    # not when a link is established (a member also asks its new leader to record every path it records).
    ready = write(cluster.kvod_ports[leader], "moves.ready", [True])[0][1]
    wait_for("two linked followers", lambda: applied(cluster, [a, b], ready), 10)
    last = move(cluster, leader, "moves.toFollower", a, b, "follower to follower")
    move(cluster, leader, "moves.toLeader", a, leader, "follower to leader")

    # A member joining later records the leader's recorded paths from where it resumes (here: seq 0).
    cluster.start_kvod("k3")
    seq = cluster.hello(leader)["appliedSeq"]
    wait_for("k3 caught up", lambda: applied(cluster, ["k3"], seq), 10)
    missed = write(cluster.kvod_ports[leader], "moves.toFollower", [8, 9])
    wait_for("k3 at the last write", lambda: applied(cluster, ["k3"], missed[-1][1]), 10)
    joiner = Client(cluster.kvod_ports["k3"])
    answer = joiner.call("subscribe", {"path": "moves.toFollower", "options": ["new"], "since": last})
    check("result" in answer and notifications(joiner, 2) == missed and nothing_more(joiner),
          f"late joiner: k3, started after the path was recorded, replays {missed} from seq {last} ({answer})")
    joiner.close()

    # Failover: the path is subscribed on the leader only; the survivors record it from its record line.
    port = cluster.kvod_ports
    path = "moves.failover"
    subscriber = Client(port[leader])
    assert "result" in subscriber.call("subscribe", {"path": path, "options": ["new"]})
    write(port[leader], path, [1, 2])
    since = notifications(subscriber, 2)[-1][1]
    subscriber.close()
    missed = write(port[leader], path, [3, 4])
    survivors = [a, b, "k3"]
    wait_for("the followers applied the writes", lambda: applied(cluster, survivors, missed[-1][1]), 10)
    cluster.kvods[leader].send_signal(signal.SIGKILL)
    cluster.kvods[leader].wait()
    del cluster.kvods[leader]
    new_leader = wait_for("a new leader", cluster.leader, LEASE + 10)
    others = [n for n in survivors if n != new_leader]
    new_address = f"127.0.0.1:{port[new_leader]}"
    wait_for(f"{others} following {new_leader}", lambda: all(
        cluster.hello(n).get("leader") == new_address for n in others), 10)
    missed += write(port[new_leader], path, [5, 6])
    wait_for(f"{others} at seq {missed[-1][1]}", lambda: applied(cluster, others, missed[-1][1]), 10)
    resumed = {}
    for name in [new_leader] + others:
        client = Client(port[name])
        answer = client.call("subscribe", {"path": path, "options": ["new"], "since": since})
        check("result" in answer, f"failover: subscribe on {name} with since {since} succeeds ({answer})")
        resumed[name] = client
    for name, client in resumed.items():
        role = "the new leader" if name == new_leader else "the follower"
        replayed = notifications(client, 4)
        check(replayed == missed,
              f"failover: {role} {name} replays the missed changes of both leaders {missed} ({replayed})")
    live = write(port[new_leader], path, [7])
    for name, client in resumed.items():
        check(notifications(client, 1) == live and nothing_more(client),
              f"failover: {name} then delivers the live change {live}, and nothing twice")
        client.close()

    # The killed leader restarts on its data directory and follows: its history on disk (docs/DURABILITY.md#the-
    # history-on-disk) covers what it recorded before the kill, and it records what it replicates after, so a
    # `since` from before the kill replays every change of both leaders there too.
    cluster.start_kvod(leader)
    wait_for(f"{leader} back and at seq {live[-1][1]}", lambda: applied(cluster, [leader], live[-1][1]), 15)
    back = Client(port[leader])
    answer = back.call("subscribe", {"path": path, "options": ["new"], "since": since})
    check("result" in answer, f"restart: subscribe on the restarted {leader} with since {since} succeeds ({answer})")
    replayed = notifications(back, 5)
    check(replayed == missed + live and nothing_more(back),
          f"restart: the restarted {leader} replays {missed + live} from its history on disk ({replayed})")
    back.close()


def main():
    return run_scenario("resume", scenario)


if __name__ == "__main__":
    sys.exit(main())
