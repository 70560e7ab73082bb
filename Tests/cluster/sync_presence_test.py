#!/usr/bin/env python3
"""onDisconnect under --sync-replicas 1 (docs/SCALING.md#presence-across-a-failover), on loopback with
cluster_test.py's harness: a 3-member etcd and three kvods with --sync-replicas 1.

Checks, in order: alice registers onDisconnect ops on the leader (set presence.alice "offline", insert "alice" into
`left`) and the leader is SIGKILLed as soon as the response arrives: the next leader runs them once. The killed member
returns; both followers are SIGSTOPped and carol registers: no response while no follower can acknowledge the change;
one follower is continued: the response arrives, and the leader is SIGKILLed at once (the other follower continued
then, so that two of the sync set's three holders are live): the next leader (the follower that had the change)
runs carol's ops. The killed member returns, the stopped one is continued; both followers are SIGSTOPped
again and bob registers: no follower confirms it within the lease, so bob gets `closing` `replication_timeout` and no
response, and since his connection ended on a leader that can write, his ops run there; continued, the followers get
them. Standard library only; exits 0 when every check passed.
"""
import os, signal, socket, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_test import LEASE, Client, call, check, log, value, wait_for, run_scenario  # noqa: E402
from presence_test import RAN, ran_count, kill  # noqa: E402

SYNC = ["--sync-replicas", "1"]


def ops_of(name):
    return [{"method": "set", "params": {"path": f"presence.{name}", "value": "offline"}},
            {"method": "insert", "params": {"path": "left", "value": name}}]


def online(port, name):
    """A client of the leader at `port` that set presence.NAME "online" (retrying the 1012 a leader answers until a
    sync replica is attached); returns it."""
    client = Client(port)

    def accepted():
        answer = client.call("set", {"path": f"presence.{name}", "value": "online"}, timeout=LEASE + 5)
        return "result" in answer

    wait_for(f"{name} online", accepted, 15)
    return client


def writable_with_replica(cluster, leader, followers):
    """Waits until `followers` follow `leader` and it accepts a mutation (a sync replica counted)."""
    cluster.wait_linked(leader, followers)
    port = cluster.kvod_ports[leader]
    wait_for("a mutation accepted", lambda: "result" in call(port, "set", {"path": "ready", "value": 1}), 15)
    wait_for("followers at the leader's seq", lambda: all(
        cluster.hello(n)["appliedSeq"] == cluster.hello(leader)["appliedSeq"] for n in followers), 10)


def register_with_followers_stopped(cluster, restarted, leader, members, name):
    """Restarts `restarted` with sync replicas, waits until `leader` writes with a replica caught up, connects `name`
    there, SIGSTOPs every follower and sends name's onDisconnect registration; returns the client and the stopped
    followers (the caller continues them)."""
    cluster.start_kvod(restarted, SYNC)
    followers = [n for n in members if n != leader]
    writable_with_replica(cluster, leader, followers)
    client = online(cluster.kvod_ports[leader], name)
    for follower in followers:
        cluster.kvods[follower].send_signal(signal.SIGSTOP)
    client.sock.sendall(b'{"jsonrpc":"2.0","id":"' + name.encode() + b'","method":"onDisconnect","params":'
                        + json_bytes({"ops": ops_of(name)}) + b"}\n")
    return client, followers


def scenario(cluster, root):
    members, leader, followers = cluster.start_members(SYNC)
    writable_with_replica(cluster, leader, followers)
    port = cluster.kvod_ports

    # Registered, and the leader killed the moment the response arrives: a follower has it; the next leader runs it.
    alice = online(port[leader], "alice")
    answer = alice.call("onDisconnect", {"ops": ops_of("alice")})
    kill(cluster, leader)
    log(f"SIGKILLed the leader {leader} right after alice's onDisconnect response")
    alice.close()
    check(answer.get("result") == {"ops": 2}, f"alice's registration was acknowledged ({answer})")
    second = wait_for("a new leader", cluster.leader, LEASE + 10)
    check(value(port[second], "presence.alice") == "offline" and value(port[second], "left") == ["alice"],
          f"the next leader {second} ran alice's ops")
    check(ran_count(root, second) == 1, f"{second} logs '{RAN}'")

    # The response waits for a follower's ack of the change: none while both are stopped; one continued releases it.
    carol, followers = register_with_followers_stopped(cluster, leader, second, members, "carol")
    stopped = list(followers)
    try:
        try:
            early = carol.read_line(1.0)
        except socket.timeout:
            early = None
        check(early is None, f"no response to carol while both followers are stopped ({early})")
        first = followers[0]
        cluster.kvods[first].send_signal(signal.SIGCONT)
        stopped.remove(first)
        answer = carol.read_line(LEASE)
        check(answer.get("id") == "carol" and answer.get("result") == {"ops": 2},
              f"continued, {first} acknowledged the change: carol's response ({answer})")
        kill(cluster, second)
        # The other follower continues too: a holder of the sync set may lead only seeing two of its three
        # holders (docs/SCALING.md#who-may-lead); the one with carol's change is the most advanced.
        for name in stopped:
            cluster.kvods[name].send_signal(signal.SIGCONT)
        log(f"SIGKILLed the leader {second} right after carol's response, continued {stopped[0]}")
        stopped = []
        carol.close()
        third = wait_for("a third leader", cluster.leader, LEASE + 10)
        # The follower continued first has carol's change; the other may have read it from its socket after its
        # SIGCONT too, and then either may win the election: whichever leads must have it (checked next).
        check(third != second, f"a surviving member leads ({third}; {first} was continued first)")
        check(value(port[third], "presence.carol") == "offline" and value(port[third], "left") == ["alice", "carol"],
              f"{third} ran carol's ops")
    finally:
        for name in stopped:
            cluster.kvods[name].send_signal(signal.SIGCONT)

    # No follower confirms: `closing` replication_timeout instead of a response; the connection ended, so the ops run.
    bob, followers = register_with_followers_stopped(cluster, second, third, members, "bob")
    try:
        closing = bob.read_line(LEASE + 5)
        check(closing.get("method") == "closing" and closing.get("params", {}).get("reason") == "replication_timeout",
              f"bob's registration unconfirmed: closing replication_timeout, no response ({closing})")
        try:
            rest = bob.read_line(2.0)
        except (ConnectionError, socket.timeout, OSError) as error:
            rest = error
        check(isinstance(rest, (ConnectionError, OSError)), f"then the connection ends ({rest})")
        bob.close()
        wait_for("bob's ops run on the leader", lambda: value(port[third], "presence.bob") == "offline", 10)
        check(value(port[third], "left") == ["alice", "carol", "bob"], f"{third} ran bob's ops once")
    finally:
        for name in followers:
            cluster.kvods[name].send_signal(signal.SIGCONT)
    seq = cluster.hello(third)["appliedSeq"]
    wait_for("followers at the leader's seq", lambda: all(cluster.hello(n)["appliedSeq"] == seq for n in followers),
             LEASE + 10)
    check(all(value(port[n], "left") == ["alice", "carol", "bob"] for n in followers), "the followers have them")


def json_bytes(value):
    import json
    return json.dumps(value).encode()


def main():
    return run_scenario("sync_presence", scenario)


if __name__ == "__main__":
    sys.exit(main())
