#!/usr/bin/env python3
"""The Python and the TypeScript client's presence across failovers (docs/SCALING.md#presence-across-a-failover), on
loopback with cluster_test.py's harness: a 3-member etcd and three kvods; the TypeScript client runs under node
(client_presence.mjs, driven through its stdin and stdout).

Checks, in order: each client given every member's address (alice the Python one, bob the TypeScript one, a follower
first) registers onDisconnect ops (on the leader, following a 1012 when it connected to a follower); the leader is
SIGKILLed: the new leader runs both clients' ops, and each client, reconnected to it, has registered them again (no
onDisconnect error); the killed member rejoins; the second leader is SIGKILLed: the third leader runs the ops again,
which only the clients' re-registrations put there. The connected hook and listener saw each connection. Standard
library only (and node); exits 0 when every check passed.
"""
import json, os, signal, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "clients", "python"))
from cluster_test import LEASE, check, log, value, wait_for, run_scenario  # noqa: E402
import kvod  # noqa: E402


class Bob:
    """The TypeScript client under node (client_presence.mjs): one JSON line out per line in."""

    def __init__(self, addresses):
        script = os.path.join(here, "client_presence.mjs")
        self.process = subprocess.Popen(["node", script, ",".join(addresses)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def report(self, line=None):
        if line is not None:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise AssertionError(f"the TypeScript client failed: {self.process.stderr.read()[-2000:]}")
        return json.loads(answer)

    def finish(self):
        self.process.stdin.close()
        return self.report()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(5)


def scenario(cluster, root):
    members, leader, followers = cluster.start_members()
    cluster.wait_linked(leader, followers)
    port = cluster.kvod_ports
    with kvod.Client(f"127.0.0.1:{port[leader]}") as setup:
        setup.set("left", [])
    seen = []
    addresses = [f"127.0.0.1:{port[n]}" for n in followers + [leader]]
    alice = kvod.Client(addresses, timeout=30, leader_wait=30)
    bob = Bob(addresses)
    try:
        alice.on_connected(seen.append)
        check(alice.on_disconnect([("insert", {"path": "left", "value": "alice"})]) == 1, "alice registers her ops")
        ready = bob.report()
        check(ready["ops"] == 1 and ready["endpoint"] == f"127.0.0.1:{port[leader]}",
              f"bob registers his ops, on the leader ({ready})")
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
            wait_for(f"{current} ran alice's and bob's ops",
                     lambda: sorted(value(port[current], "left") or []) == ["alice"] * round_ + ["bob"] * round_, 10)
            wait_for("alice registered again on the new leader", lambda: alice.connections > connections
                     and str(alice.endpoint) == f"127.0.0.1:{port[current]}" and alice.on_disconnect_error is None, 30)
            moved = bob.report(f"leader 127.0.0.1:{port[current]}")
            check(moved["endpoint"] == f"127.0.0.1:{port[current]}" and moved["onDisconnectError"] is None,
                  f"bob registered again on the new leader ({moved})")
            check(True, f"{current} ran alice's and bob's ops ({round_}); both registered them again on it "
                        f"({alice.connections} and {moved['connections']} connections)")
            if round_ == 1:
                cluster.start_kvod([n for n in members if n not in cluster.kvods][0])
                cluster.wait_linked(current, [n for n in members if n != current])
        wait_for("the hooks", lambda: len(seen) == alice.connections, 10)
        check([info.connections for info in seen] == list(range(1, alice.connections + 1))
              and all(info.on_disconnect_error is None for info in seen), "the connected hook saw every connection")
        listened = bob.finish()["seen"]
        check([info["connections"] for info in listened] == list(range(1, len(listened) + 1)) and len(listened) >= 3
              and all(info["onDisconnectError"] is None for info in listened),
              f"bob's onConnected listener saw every connection ({len(listened)})")
    finally:
        alice.close()
        bob.stop()


if __name__ == "__main__":
    sys.exit(run_scenario("client-presence", scenario))
