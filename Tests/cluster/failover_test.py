#!/usr/bin/env python3
"""Cluster phase 2 on loopback (docs/SCALING.md#tests): three kvods with --sync-replicas 1 on a 3-member etcd.

1. SIGKILL the leader under write load (three writers): a new leader within lease + 2 s holding every acknowledged
   write; a subscriber on a surviving follower saw every seq exactly once, in order (every write also sets the key it
   watches); the killed member, restarted, discards its unacknowledged tail and converges.
2. SIGSTOP the leader while a writer waits on it (a partition), a new leader wins, SIGCONT: the old leader answers no
   request sent after the stop with success, rejoins as a follower, and all three converge to one history (same
   applied seq, same values, same modSeqs), which holds every acknowledged write.
2b. The followers die (the leader's next mutations are journaled only there, unacknowledged), the leader is
   stopped, the followers return and elect one of them, which writes the same seqs in its term; the old leader,
   continued, acknowledges none of its tail, discards it through a snapshot bootstrap, and the three converge.
3. Kill one etcd member: the leader and its term stay, writes and reads go on.
4. SIGTERM the leader: it resigns, and a follower leads in less than the lease.
Standard library only; uses cluster_test.py's helpers. Exits 0 when every check passed.
"""
import os, signal, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_test import LEASE, Client, call, check, log, value, wait_for, run_scenario  # noqa: E402

SYNC = ["--sync-replicas", "1"]


class Writer(threading.Thread):
    """Writes transactions {set wNAME_I = I, set counter.value = "NAME_I"} to one member, one at a time, until told
    to stop or the member stops answering; remembers what was acknowledged and when each request was sent."""

    def __init__(self, name, port):
        super().__init__(daemon=True)
        self.name, self.port = name, port
        self.acknowledged = {}  # key -> (value, seq)
        self.sent_at = {}  # key -> monotonic time the request was sent
        self.successes_after = []  # (key, sent at) of every success, for the partition check
        self.errors = []
        self.stopping = threading.Event()

    def run(self):
        try:
            client = Client(self.port, timeout=LEASE * 3)
        except OSError as error:
            self.errors.append(repr(error))
            return
        i = 0
        while not self.stopping.is_set():
            i += 1
            key = f"w{self.name}_{i}"
            ops = [{"method": "set", "params": {"path": key, "value": i}},
                   {"method": "set", "params": {"path": "counter.value", "value": key}}]
            self.sent_at[key] = time.monotonic()
            try:
                response = client.call("transaction", {"ops": ops}, timeout=LEASE * 3)
            except (OSError, ConnectionError, ValueError) as error:
                self.errors.append(repr(error))
                return
            if "result" in response:
                self.acknowledged[key] = (i, response["result"]["seq"])
                self.successes_after.append((key, self.sent_at[key]))
            else:
                code = response.get("error", {}).get("code")
                self.errors.append(code)
                if code != 1012:
                    return
                time.sleep(0.05)
        client.close()


def converged(cluster, names):
    """Every member's hello and whole graph, when one leads, the others follow, and all have the same applied seq and
    graph; else None."""
    hellos = {n: cluster.hello(n) for n in names}
    seqs = {h["appliedSeq"] for h in hellos.values()}
    roles = sorted(h["role"] for h in hellos.values())
    if len(seqs) != 1 or roles != ["follower"] * (len(names) - 1) + ["leader"]:
        return None
    graphs = [call(cluster.kvod_ports[n], "get", {"path": ""})["result"] for n in names]
    if any(g != graphs[0] for g in graphs):
        return None
    return hellos, graphs[0]


def missing_writes(port, writers):
    """The acknowledged writes (key -> value) the member at `port` does not have."""
    client = Client(port)
    missing = []
    try:
        for writer in writers:
            for key, (expected, _) in writer.acknowledged.items():
                got = client.call("get", {"path": key})
                if got.get("result", {}).get("value") != expected:
                    missing.append((key, expected, got))
    finally:
        client.close()
    return missing


def wait_leader(cluster, exclude, seconds):
    """Waits for one writable leader among the members not in `exclude` (a stopped member is not asked: it would
    not answer)."""
    def other_leader():
        leaders = []
        for name, process in cluster.kvods.items():
            if name in exclude or process.poll() is not None:
                continue
            try:
                client = Client(cluster.kvod_ports[name], timeout=1)
                try:
                    hello = client.call("hello", timeout=1)["result"]
                finally:
                    client.close()
            except (OSError, ConnectionError, ValueError):
                continue
            if hello.get("role") == "leader" and hello.get("writable"):
                leaders.append(name)
        return leaders[0] if len(leaders) == 1 else None
    return wait_for("a new leader", other_leader, seconds)


def scenario(cluster, root):
    members, leader, followers = cluster.start_members(SYNC)
    cluster.wait_linked(leader, followers)
    lp = cluster.kvod_ports[leader]
    first = wait_for("a write accepted with a sync replica attached", lambda: "result" in call(
        lp, "set", {"path": "counter", "value": {"value": "start"}}), 10)
    check(first, f"{leader} leads with --sync-replicas 1 and accepts a write")

    # 1. SIGKILL the leader under write load.
    watcher_on = followers[0]
    sub = Client(cluster.kvod_ports[watcher_on])
    wp = cluster.kvod_ports[watcher_on]
    wait_for("the follower has counter", lambda: value(wp, "counter.value") == "start", 5)
    subscribed = sub.call("subscribe", {"path": "counter.value", "options": ["new"]})
    first_seq = subscribed["result"]["seq"]
    writers = [Writer(f"a{j}", lp) for j in range(3)]
    for writer in writers:
        writer.start()
    wait_for("acknowledged writes", lambda: sum(len(w.acknowledged) for w in writers) >= 150, 20)
    killed_at = time.monotonic()
    cluster.kvods[leader].send_signal(signal.SIGKILL)
    cluster.kvods[leader].wait()
    killed = leader
    for writer in writers:
        writer.stopping.set()
        writer.join(LEASE * 3 + 2)
    acknowledged = sum(len(w.acknowledged) for w in writers)
    leader = wait_leader(cluster, {killed}, LEASE + 8)
    took = time.monotonic() - killed_at
    check(took <= LEASE + 2, f"{leader} leads {took:.2f} s after the SIGKILL under load (lease {LEASE} s)")
    lp = cluster.kvod_ports[leader]
    missing = missing_writes(lp, writers)
    check(not missing, f"all {acknowledged} acknowledged writes are on the new leader (missing: {missing[:3]})")
    after = [Writer("b", lp)]
    after[0].start()
    wait_for("writes on the new leader", lambda: len(after[0].acknowledged) >= 20, 10)
    after[0].stopping.set()
    after[0].join(LEASE * 3 + 2)
    final_seq = call(lp, "get", {"path": "counter.value"})["result"]["seq"]
    seen = []
    deadline = time.monotonic() + 10
    while (not seen or seen[-1] < final_seq) and time.monotonic() < deadline:
        line = sub.notifications.pop(0) if sub.notifications else sub.read_line(5)
        if line.get("method") == "change":
            seen.append(line["params"]["seq"])
    sub.close()
    check(seen == list(range(first_seq + 1, final_seq + 1)),
          f"a subscriber on {watcher_on} saw every seq {first_seq + 1}..{final_seq} once, in order "
          f"({len(seen)} changes; first {seen[:3]}, last {seen[-3:]})")

    # The killed leader returns: its unacknowledged tail (if any) is discarded, it converges.
    cluster.start_kvod(killed, SYNC)
    state = wait_for("three members converged", lambda: converged(cluster, members), 30)
    check(state[0][killed]["role"] == "follower",
          f"{killed} rejoined as a follower at seq {state[0][killed]['appliedSeq']}")
    writers += after

    # 2. SIGSTOP the leader while a writer waits on it; a new leader; SIGCONT.
    stopped = leader
    sp = cluster.kvod_ports[stopped]
    partitioned = Writer("c", sp)
    partitioned.start()
    wait_for("writes on the leader", lambda: len(partitioned.acknowledged) >= 20, 10)
    cluster.kvods[stopped].send_signal(signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        leader = wait_leader(cluster, {stopped}, LEASE + 8)
        took = time.monotonic() - stopped_at
        check(took <= LEASE + 2, f"{leader} leads {took:.2f} s after {stopped} was stopped")
        during = Writer("d", cluster.kvod_ports[leader])
        during.start()
        wait_for("writes on the new leader", lambda: len(during.acknowledged) >= 20, 10)
    finally:
        cluster.kvods[stopped].send_signal(signal.SIGCONT)
    resumed_at = time.monotonic()
    wait_for(f"{stopped} rejoining as a follower",
             lambda: cluster.hello(stopped).get("role") == "follower", LEASE * 3 + 10)
    # The partitioned writer's next request after the stop is answered no earlier than the SIGCONT.
    partitioned.stopping.set()
    partitioned.join(LEASE * 3 + 2)
    late = [key for key, sent in partitioned.successes_after if sent >= stopped_at]
    check(not late, f"{stopped} acknowledged nothing sent after the stop (late successes: {late[:3]}; "
                    f"its writer ended with {partitioned.errors[-1:]})")
    during.stopping.set()
    during.join(LEASE * 3 + 2)
    writers += [partitioned, during]
    state = wait_for("three members converged", lambda: converged(cluster, members), 30)
    hellos, graph = state
    check({h["role"] for h in hellos.values()} == {"leader", "follower"} and hellos[leader]["role"] == "leader",
          f"one history: every member at seq {hellos[leader]['appliedSeq']} with the same graph, {leader} leading")
    metas = {n: call(cluster.kvod_ports[n], "get", {"path": "counter.value", "meta": True})["result"]
             for n in members}
    check(len({repr(m) for m in metas.values()}) == 1, f"same value and modSeq everywhere ({metas[leader]})")
    missing = missing_writes(cluster.kvod_ports[leader], writers)
    acknowledged = sum(len(w.acknowledged) for w in writers)
    check(not missing,
          f"all {acknowledged} writes acknowledged so far are in that history (missing: {missing[:3]})")
    log(f"(resumed {time.monotonic() - resumed_at:.1f} s ago)")

    # 2b. A divergent tail: the followers die, so the leader's next mutations reach only its journal (their
    # responses held); the leader is stopped, the followers return and elect one of them, which writes the same
    # seqs in its own term; the old leader, continued, must discard its tail (a snapshot bootstrap) and converge.
    stopped = leader
    sp = cluster.kvod_ports[stopped]
    cut_off = [n for n in members if n != stopped]
    tail_writers = [Writer(f"f{j}", sp) for j in range(3)]
    for writer in tail_writers:
        writer.start()
    wait_for("writes on the leader", lambda: sum(len(w.acknowledged) for w in tail_writers) >= 30, 10)
    for name in cut_off:
        cluster.kvods[name].kill()
        cluster.kvods[name].wait()
    cut_at = time.monotonic()
    # Whatever the followers could have had is at or below this seq; a new writer's mutations (accepted while
    # the dead followers still count, 2 s) are a tail only the leader has.
    cut_seq = cluster.hello(stopped)["appliedSeq"]
    tail_writers.append(Writer("t", sp))
    tail_writers[-1].start()
    wait_for("a tail only the leader has", lambda: cluster.hello(stopped)["appliedSeq"] > cut_seq, 5)
    time.sleep(0.2)
    tail_seq = cluster.hello(stopped)["appliedSeq"]
    cluster.kvods[stopped].send_signal(signal.SIGSTOP)
    try:
        for name in cut_off:
            cluster.start_kvod(name, SYNC)
        leader = wait_leader(cluster, {stopped}, LEASE + 10)
        during = Writer("g", cluster.kvod_ports[leader])
        during.start()
        wait_for("the new leader writing past the old tail",
                 lambda: cluster.hello(leader)["appliedSeq"] > tail_seq + 5, 10)
    finally:
        cluster.kvods[stopped].send_signal(signal.SIGCONT)
    wait_for(f"{stopped} rejoining as a follower",
             lambda: cluster.hello(stopped).get("role") == "follower", LEASE * 3 + 10)
    during.stopping.set()
    during.join(LEASE * 3 + 2)
    for writer in tail_writers:
        writer.stopping.set()
        writer.join(LEASE * 3 + 2)
    late = [key for w in tail_writers for key, sent in w.successes_after if sent >= cut_at]
    check(not late, f"{stopped} acknowledged nothing sent after its followers died (its tail: seqs "
                    f"{cut_seq + 1}..{tail_seq}; late: {late[:3]})")
    writers += tail_writers + [during]
    hellos, graph = wait_for("three members converged", lambda: converged(cluster, members), 30)
    with open(os.path.join(root, f"{stopped}.log"), errors="replace") as f:
        bootstrapped = "bootstrapping from the leader's snapshot" in f.read()
    check(bootstrapped and hellos[stopped]["role"] == "follower",
          f"{stopped} discarded its tail (snapshot bootstrap) and follows {leader}; one history at seq "
          f"{hellos[leader]['appliedSeq']}")
    missing = missing_writes(cluster.kvod_ports[leader], writers)
    acknowledged = sum(len(w.acknowledged) for w in writers)
    check(not missing, f"all {acknowledged} writes acknowledged so far are in it (missing: {missing[:3]})")

    # 3. One etcd member killed: nothing changes.
    term = cluster.hello(leader)["term"]
    cluster.etcd["e0"].kill()
    cluster.etcd["e0"].wait()
    lp = cluster.kvod_ports[leader]
    steady = Writer("e", lp)
    steady.start()
    time.sleep(LEASE + 1)
    steady.stopping.set()
    steady.join(LEASE * 3 + 2)
    check(not steady.errors and len(steady.acknowledged) > 0,
          f"with one etcd member down, {len(steady.acknowledged)} writes in {LEASE + 1} s, none refused "
          f"({steady.errors[:3]})")
    hello = cluster.hello(leader)
    check(hello["role"] == "leader" and hello["term"] == term and hello["writable"],
          f"{leader} still leads in term {term}")
    for name in members:
        if name != leader:
            wait_for(f"{name} at the leader's seq",
                     lambda: cluster.hello(name)["appliedSeq"] == hello["appliedSeq"], 5)
    check(True, "reads on the followers reach the leader's seq")

    # 4. SIGTERM of the leader: it resigns (revokes its lease), so a follower leads well within the lease.
    stopped_at = time.monotonic()
    cluster.kvods[leader].send_signal(signal.SIGTERM)
    cluster.kvods[leader].wait(10)
    resigned = leader
    leader = wait_leader(cluster, {resigned}, LEASE + 8)
    took = time.monotonic() - stopped_at
    check(took < LEASE, f"{leader} leads {took:.2f} s after {resigned} was stopped cleanly (lease {LEASE} s)")


def main():
    return run_scenario("failover", scenario)


if __name__ == "__main__":
    sys.exit(main())
