#!/usr/bin/env python3
"""The Python client's presence across failovers (docs/SCALING.md#presence-across-a-failover), on loopback with
cluster_test.py's harness: a 3-member etcd and three kvods.

Checks, in order: a client given every member's address registers onDisconnect ops with `on_disconnect` (on the
leader, following a 1012 when it connected to a follower); the leader is SIGKILLed: the new leader runs the ops, and
the client, reconnected to it, has registered them again (no `on_disconnect_error`); the killed member rejoins; the
second leader is SIGKILLed: the third leader runs the ops again, which only the client's re-registration put there.
The connected hook saw each connection. Standard library only; exits 0 when every check passed.
"""
import os, signal, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "clients", "python"))
from cluster_test import LEASE, check, log, value, wait_for, run_scenario  # noqa: E402
import kvod  # noqa: E402


def scenario(cluster, root):
    members, leader, followers = cluster.start_members()
    cluster.wait_linked(leader, followers)
    port = cluster.kvod_ports
    with kvod.Client(f"127.0.0.1:{port[leader]}") as setup:
        setup.set("left", [])
    seen = []
    alice = kvod.Client([f"127.0.0.1:{port[n]}" for n in members], timeout=30, leader_wait=30)
    try:
        alice.on_connected(seen.append)
        check(alice.on_disconnect([("insert", {"path": "left", "value": "alice"})]) == 1, "alice registers her ops")
        current = leader
        for round_ in (1, 2):
            connections = alice.connections
            # A registration is shipped after its response: let the followers have it (a write behind it) first.
            seq = alice.set("marker", round_)
            live = [n for n in cluster.kvods if n != current]
            wait_for("the followers at the marker", lambda: all(cluster.hello(n)["appliedSeq"] >= seq for n in live), 10)
            cluster.kvods[current].send_signal(signal.SIGKILL)
            cluster.kvods[current].wait()
            del cluster.kvods[current]
            log(f"SIGKILLed the leader {current}")
            current = wait_for("a new leader", cluster.leader, LEASE + 10)
            wait_for(f"{current} ran alice's ops", lambda: value(port[current], "left") == ["alice"] * round_, 10)
            wait_for("alice registered again on the new leader", lambda: alice.connections > connections
                     and str(alice.endpoint) == f"127.0.0.1:{port[current]}" and alice.on_disconnect_error is None, 30)
            check(True, f"{current} ran alice's ops ({round_}); alice registered them again on it "
                        f"({alice.connections} connections)")
            if round_ == 1:
                cluster.start_kvod([n for n in members if n not in cluster.kvods][0])
                cluster.wait_linked(current, [n for n in members if n != current])
        wait_for("the hooks", lambda: len(seen) == alice.connections, 10)
        check([info.connections for info in seen] == list(range(1, alice.connections + 1))
              and all(info.on_disconnect_error is None for info in seen), "the connected hook saw every connection")
    finally:
        alice.close()


if __name__ == "__main__":
    sys.exit(run_scenario("client-presence", scenario))
