#!/usr/bin/env python3
"""A subscription that saw a write lost in an asynchronous failover (docs/SCALING.md#clients), on loopback with
cluster_test.py's harness: a 3-member etcd and three kvods without --sync-replicas.

A subscriber on the leader sees a replicated write; both followers are SIGKILLed; the leader acknowledges two more
writes, which the subscriber sees (its last seq is now beyond what any other member has), and is SIGKILLed; the
followers return and elect one of them. There, `subscribe` with `since` = the subscriber's last seq gets 1010 resync
required with `data.oldest` and `data.seq` (the new leader's seq), not an error to retry; on the other member, a
follower, it gets the "behind" refusal (-32602) a client retries (a follower cannot tell a lost write from lag). The
resync (subscribe without `since`, then `get`) shows the replicated value, and the new leader's next write reuses
the lost seq. Standard library only; exits 0 when every check passed.
"""
import os, signal, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_test import LEASE, Client, call, check, log, value, wait_for, run_scenario  # noqa: E402


def next_change(client, timeout=5.0):
    """The next change notification as (new, seq)."""
    while not client.notifications:
        client.notifications.append(client.read_line(timeout))
    note = client.notifications.pop(0)
    assert note.get("method") == "change", note
    return note["params"]["new"], note["params"]["seq"]


def kill(cluster, name):
    cluster.kvods[name].send_signal(signal.SIGKILL)
    cluster.kvods[name].wait()
    del cluster.kvods[name]


def scenario(cluster, root):
    members, leader, followers = cluster.start_members()
    cluster.wait_linked(leader, followers)
    port = cluster.kvod_ports
    subscriber = Client(port[leader])
    check("result" in subscriber.call("subscribe", {"path": "w", "options": ["new"]}), "subscribed on the leader")
    replicated = call(port[leader], "set", {"path": "w", "value": 1})["result"]["seq"]
    wait_for("the followers applied it", lambda: all(cluster.hello(n)["appliedSeq"] >= replicated for n in followers), 10)
    check(next_change(subscriber) == (1, replicated), f"the subscriber sees the replicated write at seq {replicated}")

    for name in followers:
        kill(cluster, name)
    lost = [call(port[leader], "set", {"path": "w", "value": v})["result"]["seq"] for v in (2, 3)]
    check([next_change(subscriber), next_change(subscriber)] == [(2, lost[0]), (3, lost[1])],
          f"with the followers dead the leader acknowledges seqs {lost}, and the subscriber sees them")
    since = lost[-1]
    kill(cluster, leader)
    subscriber.close()
    log(f"SIGKILLed the followers, then the leader {leader} (seqs {lost} are on it only)")
    for name in followers:
        cluster.start_kvod(name)
    new_leader = wait_for("a leader among the returned followers", cluster.leader, LEASE + 10)
    other = [n for n in followers if n != new_leader][0]
    check(cluster.hello(new_leader)["appliedSeq"] == replicated, f"{new_leader} leads at seq {replicated}")

    resuming = Client(port[new_leader])
    answer = resuming.call("subscribe", {"path": "w", "options": ["new"], "since": since})
    error = answer.get("error", {})
    data = error.get("data", {})
    check(error.get("code") == 1010 and data.get("seq") == replicated and data.get("since") == since
          and isinstance(data.get("oldest"), int) and data["oldest"] <= replicated,
          f"on the new leader, since {since} gets 1010 resync required with data.oldest ({answer})")
    cluster.wait_linked(new_leader, [other])
    answer = call(port[other], "subscribe", {"path": "w", "options": ["new"], "since": since})
    check(answer.get("error", {}).get("code") == -32602,
          f"on the follower {other}, the 'behind' refusal a client retries ({answer})")

    # The resync: subscribe without `since`, read the value; the new leader's next write takes a lost seq.
    answer = resuming.call("subscribe", {"path": "w", "options": ["new"]})
    check(answer.get("result", {}).get("seq") == replicated and value(port[new_leader], "w") == 1,
          "resynced: the value is the replicated one")
    reused = call(port[new_leader], "set", {"path": "w", "value": 4})["result"]["seq"]
    check(reused == lost[0] and next_change(resuming) == (4, reused),
          f"the new leader's write takes seq {reused}, which named the lost write, and the resynced subscription sees it")
    resuming.close()


def main():
    return run_scenario("lost-write", scenario)


if __name__ == "__main__":
    sys.exit(main())
