#!/usr/bin/env python3
"""Presence across a failover (docs/SCALING.md#presence-across-a-failover), on loopback with cluster_test.py's harness:
a 3-member etcd and three kvods.

Checks, in order: the followers' `ack`s are not counted in the leader's `requests` (only the stats calls and a write
are, while acks arrive every 250 ms); a client of a follower cannot register onDisconnect ops (1012 naming the
leader); alice registers ops on the leader (set presence.alice to "offline", insert "alice" into `left`), bob
registers and cancels; the leader is SIGKILLed: the new leader has run alice's ops once, as one transaction (its seq is
the last replicated one + 1), and not bob's, and says so in its log; the other follower gets that transaction; the
killed member, restarted, follows without running the leftover registration of its journal (the leader's seq does not
move); dave registers on the new leader; it is SIGKILLed: the third leader runs dave's ops once and alice's never
again (`left` is ["alice", "dave"] on both survivors); eve registers, all three members are SIGKILLed and restarted:
the one that leads runs eve's ops once (each journal holds the registration), the others drop it; frank registers
and the leader is stopped with SIGTERM: it does not run them, the next leader does, once, and the stopped member,
back, follows from its journal; grace registers and the leader is SIGSTOPped: the next leader runs grace's ops once,
and the old one, continued, closes grace's connection (`not_leader`) without running them, and follows. Standard library only; exits 0 when every check passed.
"""
import os, signal, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_test import LEASE, Client, call, check, log, value, wait_for, run_scenario  # noqa: E402

RAN = "ran the onDisconnect ops of connections lost with the previous leader"


def go_online(port, name, cancel=False):
    """A client of the kvod at `port` sets presence.NAME to "online" and registers the ops that set it "offline" and
    insert NAME into `left` (then cancels them with `cancel`); returns the open client."""
    client = Client(port)
    answer = client.call("set", {"path": f"presence.{name}", "value": "online"})
    assert "result" in answer, answer
    ops = [{"method": "set", "params": {"path": f"presence.{name}", "value": "offline"}},
           {"method": "insert", "params": {"path": "left", "value": name}}]
    answer = client.call("onDisconnect", {"ops": ops})
    check(answer.get("result") == {"ops": 2}, f"{name} registers 2 onDisconnect ops ({answer})")
    if cancel:
        answer = client.call("onDisconnect", {"ops": []})
        check(answer.get("result") == {"ops": 0}, f"{name} cancels them ({answer})")
    return client


def mark(cluster, leader, names):
    """Writes a marker on `leader` (replicated after every registration change before it) and waits until `names`
    applied it; returns its seq."""
    seq = call(cluster.kvod_ports[leader], "set", {"path": "marker", "value": time.monotonic()})["result"]["seq"]
    wait_for(f"{names} at seq {seq}", lambda: all(cluster.hello(n)["appliedSeq"] >= seq for n in names), 10)
    return seq


def kill(cluster, name):
    cluster.kvods[name].send_signal(signal.SIGKILL)
    cluster.kvods[name].wait()
    del cluster.kvods[name]


def ran_count(root, name):
    with open(os.path.join(root, f"{name}.log"), errors="replace") as f:
        return f.read().count(RAN)


def scenario(cluster, root):
    members, leader, followers = cluster.start_members()
    cluster.wait_linked(leader, followers)
    port = cluster.kvod_ports
    address = f"127.0.0.1:{port[leader]}"

    # Replication acks are not requests: between two stats calls only the write and the second call count, while
    # both followers ack every heartbeat (250 ms) and the write.
    mark(cluster, leader, followers)  # both replicating (their `replicate` requests are counted)
    stats = Client(port[leader])
    before = stats.call("stats")["result"]["requests"]
    call(port[leader], "set", {"path": "acks", "value": 1})
    time.sleep(1.5)
    after = stats.call("stats")["result"]["requests"]
    stats.close()
    check(after - before == 2, f"the leader's requests count the write and the stats call, no ack ({before} -> {after})")

    # A follower's client cannot register: 1012 naming the leader, as for any mutation.
    carol = Client(port[followers[0]])
    answer = carol.call("onDisconnect", {"ops": [{"method": "set", "params": {"path": "presence.carol", "value": 0}}]})
    error = answer.get("error", {})
    check(error.get("code") == 1012 and error.get("data", {}).get("leader") == address,
          f"onDisconnect on a follower gets 1012 naming the leader ({answer})")
    carol.close()

    alice = go_online(port[leader], "alice")
    bob = go_online(port[leader], "bob", cancel=True)
    marker = mark(cluster, leader, followers)

    kill(cluster, leader)
    log(f"SIGKILLed the leader {leader} (alice and bob connected)")
    alice.close()
    bob.close()
    second = wait_for("a new leader", cluster.leader, LEASE + 10)
    other = [n for n in followers if n != second][0]
    p = port[second]
    check(value(p, "presence.alice") == "offline" and value(p, "left") == ["alice"],
          f"the new leader {second} ran alice's ops (presence.alice offline, left {value(p, 'left')})")
    check(value(p, "presence.bob") == "online", "bob's cancelled ops did not run")
    check(cluster.hello(second)["appliedSeq"] == marker + 1, f"as one transaction: seq {marker} + 1")
    check(ran_count(root, second) == 1, f"{second} logs '{RAN}'")
    wait_for(f"{other} at seq {marker + 1}", lambda: cluster.hello(other)["appliedSeq"] >= marker + 1, 10)
    check(value(port[other], "left") == ["alice"], f"the follower {other} got the transaction")

    # The killed member's journal still registers alice: restarted, it follows and does not run it.
    cluster.start_kvod(leader)
    cluster.wait_linked(second, [other, leader])
    settled = cluster.hello(second)["appliedSeq"]
    wait_for(f"{leader} at seq {settled}", lambda: cluster.hello(leader)["appliedSeq"] == settled, 10)
    check(value(port[leader], "left") == ["alice"] and ran_count(root, leader) == 0,
          f"the restarted {leader} follows at seq {settled} without running alice's ops again")

    dave = go_online(p, "dave")
    marker = mark(cluster, second, [other, leader])
    check(cluster.hello(second)["appliedSeq"] == marker, f"the restart ran nothing on {second}")

    kill(cluster, second)
    log(f"SIGKILLed the second leader {second} (dave connected)")
    dave.close()
    third = wait_for("a third leader", cluster.leader, LEASE + 10)
    survivors = [other, leader]
    check(value(port[third], "left") == ["alice", "dave"] and value(port[third], "presence.dave") == "offline",
          f"the third leader {third} ran dave's ops, and alice's not again ({value(port[third], 'left')})")
    check(cluster.hello(third)["appliedSeq"] == marker + 1, f"as one transaction: seq {marker} + 1")
    last = [n for n in survivors if n != third][0]
    wait_for(f"{last} at seq {marker + 1}", lambda: cluster.hello(last)["appliedSeq"] >= marker + 1, 10)
    check(value(port[last], "left") == ["alice", "dave"], f"{last} has the same history")
    check(sum(ran_count(root, n) for n in members) == 2, "two promotions ran inherited ops, nothing else did")

    # Every member crashes with eve's registration in its journal (the leader's own, the followers' replicated): at
    # the restart the member that leads runs it once; the others drop it when they follow.
    cluster.start_kvod(second)
    cluster.wait_linked(third, [last, second])
    eve = go_online(port[third], "eve")
    marker = mark(cluster, third, [last, second])
    for name in members:
        kill(cluster, name)
    eve.close()
    log("SIGKILLed all three members (eve connected)")
    for name in members:
        cluster.start_kvod(name)
    fourth = wait_for("a leader after the restart", cluster.leader, LEASE + 15)
    cluster.wait_linked(fourth, [n for n in members if n != fourth])
    wait_for(f"every member at seq {marker + 1}",
             lambda: all(cluster.hello(n)["appliedSeq"] == marker + 1 for n in members), 10)
    check(all(value(port[n], "left") == ["alice", "dave", "eve"] for n in members),
          f"after the restart {fourth} ran eve's ops once, as one transaction, and every member has it")
    check(sum(ran_count(root, n) for n in members) == 3, "only the member that leads ran the crash's leftovers")

    # A leader stopped cleanly (SIGTERM) leaves its connections' ops to the next leader, which runs them once; back,
    # it resumes from its journal (no divergent tail to discard).
    frank = go_online(port[fourth], "frank")
    marker = mark(cluster, fourth, [n for n in members if n != fourth])
    cluster.kvods[fourth].send_signal(signal.SIGTERM)
    check(cluster.kvods[fourth].wait(10) == 0, f"the leader {fourth} stops on SIGTERM")
    del cluster.kvods[fourth]
    frank.close()
    fifth = wait_for("a leader after the resignation", cluster.leader, LEASE + 10)
    check(value(port[fifth], "left") == ["alice", "dave", "eve", "frank"] and
          cluster.hello(fifth)["appliedSeq"] == marker + 1, f"{fifth} ran frank's ops once, as one transaction")
    cluster.start_kvod(fourth)
    wait_for(f"{fourth} at seq {marker + 1}", lambda: cluster.hello(fourth)["appliedSeq"] == marker + 1, 10)
    with open(os.path.join(root, f"{fourth}.log"), errors="replace") as f:
        bootstrapped = "bootstrapping from the leader's snapshot" in f.read()
    check(value(port[fourth], "left") == ["alice", "dave", "eve", "frank"] and not bootstrapped,
          f"{fourth}, back, follows from its journal with frank's ops once")

    # A leader cut off (SIGSTOP) while grace is connected: the next leader runs grace's ops; continued, the old one
    # closes grace's connection (`not_leader`) without running them, and follows.
    cluster.wait_linked(fifth, [n for n in members if n != fifth])
    grace = go_online(port[fifth], "grace")
    marker = mark(cluster, fifth, [n for n in members if n != fifth])
    ran_before = ran_count(root, fifth)
    cluster.kvods[fifth].send_signal(signal.SIGSTOP)
    log(f"SIGSTOPped the leader {fifth} (grace connected)")
    try:
        sixth = wait_for("a leader while it is stopped", cluster.leader, LEASE + 10)
        everyone = ["alice", "dave", "eve", "frank", "grace"]
        check(value(port[sixth], "left") == everyone and cluster.hello(sixth)["appliedSeq"] == marker + 1,
              f"{sixth} ran grace's ops once, as one transaction")
    finally:
        cluster.kvods[fifth].send_signal(signal.SIGCONT)
    closing = grace.read_line(LEASE + 5)
    check(closing.get("method") == "closing" and closing.get("params", {}).get("reason") == "not_leader",
          f"continued, {fifth} closes grace's connection with not_leader ({closing})")
    grace.close()
    wait_for(f"{fifth} following at seq {marker + 1}", lambda: cluster.hello(fifth).get("role") == "follower"
             and cluster.hello(fifth)["appliedSeq"] == marker + 1, 10)
    check(value(port[fifth], "left") == everyone and ran_count(root, fifth) == ran_before,
          f"{fifth} did not run grace's ops, and has the new leader's history")


def main():
    return run_scenario("presence", scenario)


if __name__ == "__main__":
    sys.exit(main())
