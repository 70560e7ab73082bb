#!/usr/bin/env python3
"""The double failure of issue 27 on loopback (docs/SCALING.md#who-may-lead): three kvods with --sync-replicas 1.

Twice: (1) the third member is stopped (SIGSTOP) while writers load the leader, so it is still in the sync set but
cannot acknowledge; then the leader and the in-sync follower are SIGKILLed together, and the third continued (it
may read what its socket still held, but it cannot know it has everything). (2) The third is SIGKILLed under the
writers (it leaves the sync set, behind) and restarted once the leader and the in-sync follower were SIGKILLed
together. Either way it must not lead: for three lease times it stays a candidate and says why in `hello`
(`promotionWait`), in its log (a warning) and in `kvoctl cluster`. The in-sync follower returns: it leads with every
acknowledged write, the third follows it, the old leader returns and all three converge to one history holding
every acknowledged write.
Standard library only; uses cluster_test.py's and failover_test.py's helpers. Exits 0 when every check passed.
"""
import base64, json, os, signal, subprocess, sys, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_test import LEASE, call, check, log, wait_for, run_scenario  # noqa: E402
from failover_test import SYNC, Writer, converged, missing_writes, wait_leader  # noqa: E402

KVOCTL = os.environ.get("KVOCTL_BIN", ".build/debug/kvoctl")


def sync_holders(cluster):
    """The holders of the sync set in etcd (`/kvod/test/sync`), or None while there is none."""
    key = base64.b64encode(b"/kvod/test/sync").decode()
    for name in cluster.etcd_names:
        try:
            request = urllib.request.Request(f"http://127.0.0.1:{cluster.client[name]}/v3/kv/range",
                                             data=json.dumps({"key": key}).encode())
            kvs = json.loads(urllib.request.urlopen(request, timeout=2).read()).get("kvs", [])
        except OSError:
            continue
        return json.loads(base64.b64decode(kvs[0]["value"]))["holders"] if kvs else None
    return None


def scenario(cluster, root, third_killed):
    members, leader, followers = cluster.start_members(SYNC)
    cluster.wait_linked(leader, followers)
    lp = cluster.kvod_ports[leader]
    wait_for("a write accepted with a sync replica", lambda: "result" in call(
        lp, "set", {"path": "counter", "value": {"value": "start"}}), 10)
    in_sync, third = followers
    # Both followers hold everything before the third stops (it is in the sync set, quorum 2 of 3).
    seq = cluster.hello(leader)["appliedSeq"]
    wait_for("both followers at the leader's seq",
             lambda: all(cluster.hello(n)["appliedSeq"] >= seq for n in followers), 10)
    time.sleep(1)

    address = {name: f"127.0.0.1:{cluster.kvod_ports[name]}" for name in members}
    wait_for("both followers in the sync set", lambda: len(sync_holders(cluster) or []) == 3, 10)
    if third_killed:
        cluster.kvods[third].send_signal(signal.SIGKILL)
        cluster.kvods[third].wait()
        # The in-sync follower has every acknowledged write: the gone third leaves the set.
        holders = wait_for("the killed third out of the sync set",
                           lambda: (lambda h: h if h and address[third] not in h else None)(sync_holders(cluster)), 10)
        check(sorted(holders) == sorted([address[leader], address[in_sync]]), f"the sync set is {holders}")
    else:
        cluster.kvods[third].send_signal(signal.SIGSTOP)
    writers = [Writer(f"a{j}", lp) for j in range(2)]
    for writer in writers:
        writer.start()
    wait_for("acknowledged writes with the third stopped",
             lambda: sum(len(w.acknowledged) for w in writers) >= 100, 20)
    for name in (leader, in_sync):
        cluster.kvods[name].send_signal(signal.SIGKILL)
    for name in (leader, in_sync):
        cluster.kvods[name].wait()
    for writer in writers:
        writer.stopping.set()
        writer.join(LEASE * 3 + 2)
    acknowledged = sum(len(w.acknowledged) for w in writers)
    if third_killed:
        cluster.start_kvod(third, SYNC)
    else:
        cluster.kvods[third].send_signal(signal.SIGCONT)
    last_acknowledged = max(seq for w in writers for (_, seq) in w.acknowledged.values())
    log(f"killed {leader} (leader) and {in_sync} (in sync) after {acknowledged} acknowledged writes (last seq "
        f"{last_acknowledged}); {third} {'restarted' if third_killed else 'continued'}")

    # The third must not lead, and says why.
    deadline = time.monotonic() + LEASE * 3 + 2
    hello, led = {}, False
    while time.monotonic() < deadline:
        hello = cluster.hello(third)
        led = led or hello.get("role") == "leader"
        time.sleep(0.25)
    check(not led, f"{third} (at seq {hello['appliedSeq']}) did not lead for {LEASE * 3 + 2} s")
    check(hello.get("role") == "candidate" and "promotionWait" in hello,
          f"{third} waits and says why in hello: {hello.get('promotionWait')!r}")
    if third_killed:
        check(hello["appliedSeq"] < last_acknowledged and "not in the sync set" in hello["promotionWait"],
              f"{third} is behind (applied seq {hello['appliedSeq']}) and out of the sync set")
    with open(os.path.join(root, f"{third}.log"), errors="replace") as f:
        lines = [line for line in f if "may lack acknowledged writes" in line]
    check(any("warning" in line for line in lines), f"{third} logged a warning: {lines[-1].strip() if lines else None}")
    shown = subprocess.run(
        [KVOCTL, "cluster", "--host", f"127.0.0.1:{cluster.kvod_ports[third]}", "--format", "json"],
        capture_output=True, text=True, timeout=20)
    members_json = json.loads(shown.stdout or "[]")
    check(shown.returncode == 3 and members_json and "promotionWait" in members_json[0],
          f"kvoctl cluster shows the wait (exit {shown.returncode})")

    # The in-sync follower returns: it leads with every acknowledged write; the third follows it.
    cluster.start_kvod(in_sync, SYNC)
    new_leader = wait_leader(cluster, set(), LEASE + 10)
    # The in-sync follower, or the third when it read everything its socket held and the tie goes its way.
    check(new_leader in (in_sync, third), f"{new_leader} leads once the in-sync follower {in_sync} is back")
    missing = missing_writes(cluster.kvod_ports[new_leader], writers)
    check(not missing, f"all {acknowledged} acknowledged writes are on {new_leader} (missing: {missing[:3]})")
    if new_leader != third:
        wait_for(f"{third} following", lambda: cluster.hello(third).get("role") == "follower", LEASE * 2 + 5)
    check("promotionWait" not in cluster.hello(third), f"{third} no longer waits")

    # The old leader returns: one history, every acknowledged write on every member.
    cluster.start_kvod(leader, SYNC)
    wait_for("three members converged", lambda: converged(cluster, members), 40)
    for name in members:
        missing = missing_writes(cluster.kvod_ports[name], writers)
        check(not missing, f"{name} has every acknowledged write (missing: {missing[:3]})")


if __name__ == "__main__":
    failed = run_scenario("double-failure-stopped", lambda cluster, root: scenario(cluster, root, third_killed=False))
    failed |= run_scenario("double-failure-killed", lambda cluster, root: scenario(cluster, root, third_killed=True))
    sys.exit(failed)
