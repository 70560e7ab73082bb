#!/usr/bin/env python3
"""The clients in a cluster (docs/SCALING.md#clients), on loopback with cluster_test.py's harness: a 3-member etcd and
three kvods.

Checks, in order: `kvoctl set` given a follower's address first reaches the leader (and given only a follower, follows
the leader its 1012 names); `kvoctl get` reads from a follower; `kvoctl cluster` prints every member's role, term, seq
and lag (table and JSON) and exits 0; a bad address list is a usage error (64); the Python client and a `kvoctl
watch`, given a follower first, write through the leader and subscribe; SIGKILL of the leader: the Python client's
next write succeeds on the new leader within the lease + 4 s, its subscription goes on with every seq once, in order,
and so does the watch, stopped (SIGSTOP) through the failover and the next writes, from the member it moves to; the TypeScript client (dist/, under node) does the same through the next failover; two etcd members
killed: `kvoctl cluster` exits 3 (no writable leader) and `kvoctl set` gives up after --failover-wait with exit 2.
No member needs a subscriber of its own to replay the watched paths: recorders are cluster-wide (resume_test.py).
Standard library only; exits 0 when every check passed.
"""
import json, os, signal, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from cluster_test import KVOD, LEASE, Client, check, value, wait_for, run_scenario  # noqa: E402
import kvod  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
FAILOVER = LEASE + 4  # seconds from a leader's SIGKILL to a write accepted by its successor


def kvoctl_binary(root):
    """$KVOCTL_BIN, else the kvoctl built beside $KVOD_BIN."""
    return os.environ.get("KVOCTL_BIN") or os.path.join(os.path.dirname(os.path.abspath(KVOD)), "kvoctl")


def run(kvoctl, *arguments, timeout=30):
    result = subprocess.run([kvoctl, *arguments], capture_output=True, text=True, timeout=timeout)
    return result.returncode, result.stdout, result.stderr


def address(cluster, name):
    return f"127.0.0.1:{cluster.kvod_ports[name]}"


class Watch:
    """A background `kvoctl watch`, its output lines collected by a thread."""

    def __init__(self, kvoctl, hosts, path):
        self.process = subprocess.Popen([kvoctl, "watch", path, "--host", hosts, "--failover-wait", "20"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(json.loads(line))

    def stop(self):
        self.process.kill()
        self.process.wait(5)
        return self.process.stderr.read()


def changes(subscription, count):
    items = [subscription.next(timeout=FAILOVER + 10) for _ in range(count)]
    assert all(isinstance(item, kvod.Change) for item in items), f"a Resync among {items}"
    return items


def caught_up(cluster, leader, followers):
    """Waits until `followers` applied every write the leader acknowledged: without --sync-replicas a SIGKILL right
    after a write may lose it (docs/SCALING.md), and a subscription that saw it could not resume on the new leader."""
    seq = cluster.hello(leader)["appliedSeq"]
    wait_for(f"the followers at seq {seq}", lambda: all(cluster.hello(n)["appliedSeq"] >= seq for n in followers), 10)


def typescript_failover(cluster, names, leader):
    """Runs the TypeScript client under node through the leader's SIGKILL; returns its report."""
    script = os.path.join(REPO, "Tests", "cluster", "clients_failover.mjs")
    addresses = ",".join(address(cluster, n) for n in names)
    node = subprocess.Popen(["node", script, addresses], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        ready = json.loads(node.stdout.readline() or "null")
        check(ready is not None and ready.get("endpoint") == address(cluster, leader),
              f"the TypeScript client writes through a follower address to the leader ({ready})")
        caught_up(cluster, leader, [n for n in names if n != leader])
        killed_at = time.monotonic()
        cluster.kvods[leader].send_signal(signal.SIGKILL)
        cluster.kvods[leader].wait()
        del cluster.kvods[leader]
        node.stdin.write("killed\n")
        node.stdin.flush()
        report = json.loads(node.stdout.readline() or "null")
        took = time.monotonic() - killed_at
        if report is None:
            raise AssertionError(f"the TypeScript client failed: {node.stderr.read()[-2000:]}")
        return report, took
    finally:
        if node.poll() is None:
            node.kill()
        node.wait(5)


def scenario(cluster, root):
    kvoctl = kvoctl_binary(root)
    members, leader, followers = cluster.start_members()
    cluster.wait_linked(leader, followers)
    everyone = ",".join(address(cluster, n) for n in followers + [leader])

    # kvoctl set, a follower first: the write lands on the leader.
    status, out, err = run(kvoctl, "set", "cli.a", "1", "--host", everyone)
    check(status == 0 and "seq" in json.loads(out), f"kvoctl set given a follower first succeeds ({out}{err})")
    check(value(cluster.kvod_ports[leader], "cli.a") == 1, "the write is on the leader")
    status, out, err = run(kvoctl, "set", "cli.b", "2", "--host", address(cluster, followers[0]))
    check(status == 0 and value(cluster.kvod_ports[leader], "cli.b") == 2,
          f"kvoctl set given only a follower follows the leader its 1012 names ({status} {err})")
    # kvoctl cluster: a table and JSON, exit 0 with a leader.
    leader_seq = cluster.hello(leader)["appliedSeq"]
    wait_for("followers at the leader's seq", lambda: all(
        cluster.hello(n)["appliedSeq"] == leader_seq for n in followers), 5)
    status, out, err = run(kvoctl, "get", "cli.b", "--host", f"{address(cluster, followers[1])},127.0.0.1:1")
    check(status == 0 and out.strip() == "2", f"kvoctl get reads from the first address, a follower ({out}{err})")
    status, out, err = run(kvoctl, "cluster", "--host", everyone + ",127.0.0.1:1")
    rows = [line.split() for line in out.splitlines()[1:]]
    roles = {row[0]: row[1] for row in rows}
    check(status == 0 and roles.get(address(cluster, leader)) == "leader"
          and all(roles.get(address(cluster, n)) == "follower" for n in followers)
          and roles.get("127.0.0.1:1") == "unreachable",
          f"kvoctl cluster shows the leader, two followers and an unreachable address, exit 0 ({status}):\n{out}{err}")
    status, out, err = run(kvoctl, "cluster", "--host", everyone, "--format", "json")
    table = json.loads(out)
    term = cluster.hello(leader)["term"]
    check(status == 0 and [m["role"] for m in table] == ["follower", "follower", "leader"]
          and all(m["term"] == term and m["appliedSeq"] >= 2 for m in table)
          and all(m["lag"] is not None and m["lag"] >= 0 and m["linked"] is True for m in table[:2])
          and table[2]["writable"] is True,
          f"kvoctl cluster --format json: roles, term {term}, applied seqs, lags ({out})")
    status, out, err = run(kvoctl, "cluster", "--host", "127.0.0.1:1,,x")
    check(status == 64 and "empty address" in err, f"a bad address list is a usage error ({status} {err.strip()})")

    # The Python client and kvoctl watch before the failover.
    python = kvod.Client([address(cluster, n) for n in followers + [leader]], timeout=FAILOVER + 10,
                         leader_wait=FAILOVER + 10)
    subscription = python.subscribe("py.n", ["new"])
    first = [python.set("py.n", n) for n in range(1, 6)]
    check(str(python.endpoint) == address(cluster, leader),
          f"the Python client, given the followers first, writes through the leader ({python.endpoint})")
    watch = Watch(kvoctl, ",".join(address(cluster, n) for n in [leader] + followers), "py.n")
    cluster.cleanups.append(watch.stop)
    def subscriptions_on_leader():
        connections = Client(cluster.kvod_ports[leader]).call("observers", {"path": "py.n"})["result"]
        return sum(len(c.get("subscriptions", [])) for c in connections["connections"])
    # The Python client's subscription and the watch.
    wait_for("kvoctl watch subscribed", lambda: subscriptions_on_leader() >= 2, 10)
    first.append(python.set("py.n", 6))
    got = changes(subscription, 6)
    check([c.new for c in got] == list(range(1, 7)) and [c.seq for c in got] == first,
          "the Python subscription sees the 6 writes")

    # SIGKILL the leader: the next write succeeds on the new leader; the subscription and the watch go on. The
    # watch is stopped (SIGSTOP) through the failover and the next writes, so it misses them and must have them
    # replayed by the member it moves to.
    wait_for("the watch to print the 6th write", lambda: len(watch.lines) >= 1, 10)
    watch.process.send_signal(signal.SIGSTOP)
    caught_up(cluster, leader, followers)
    connections = python.connections
    killed_at = time.monotonic()
    cluster.kvods[leader].send_signal(signal.SIGKILL)
    cluster.kvods[leader].wait()
    del cluster.kvods[leader]
    # A write sent before the client noticed the drop would be lost with its connection (ConnectionLost: kvod
    # may or may not have applied it); the client reconnects to a follower at once.
    wait_for("the Python client to reconnect", lambda: python.connections > connections, 5)
    second = [python.set("py.n", 7)]
    took = time.monotonic() - killed_at
    new_leader = wait_for("a new leader", cluster.leader, 5)
    check(took <= FAILOVER and str(python.endpoint) == address(cluster, new_leader),
          f"the Python client's next write succeeded on the new leader {new_leader} {took:.2f} s after the kill")
    second += [python.set("py.n", n) for n in range(8, 11)]
    got = changes(subscription, 4)
    check([c.new for c in got] == list(range(7, 11)) and [c.seq for c in got] == second,
          f"the Python subscription resumed with no gap and no duplicate ({[c.seq for c in got]} vs {second})")
    try:
        extra = subscription.next(timeout=0.5)
        raise AssertionError(f"a notification delivered twice: {extra}")
    except kvod.Timeout:
        pass
    watch.process.send_signal(signal.SIGCONT)
    wait_for("the watch to print 5 changes", lambda: len(watch.lines) >= 5, 10)
    time.sleep(0.3)  # anything printed twice would come now
    stderr = watch.stop()
    printed = [(line["new"], line["seq"]) for line in watch.lines]
    watch = None
    check(printed == list(zip(range(6, 11), first[5:] + second)) and "resuming after seq" in stderr
          and "looking for a member to resume on, for up to 20 s (--failover-wait)" in stderr,
          f"kvoctl watch, stopped through the failover, moved to another member, which replayed what it missed: "
          f"every seq once ({printed}; {stderr.strip()})")
    python.close()

    # The TypeScript client through the next failover (the two members left).
    survivors = [n for n in members if n in cluster.kvods]
    wait_for("the follower linked to the new leader", lambda: all(
        cluster.hello(n).get("leader") == address(cluster, new_leader) for n in survivors), 10)
    report, took = typescript_failover(cluster, [n for n in survivors if n != new_leader] + [new_leader],
                                       new_leader)
    last = wait_for("the last leader", cluster.leader, 5)
    check(report["endpoint"] == address(cluster, last) and report["tookMs"] / 1000 <= FAILOVER,
          f"the TypeScript client's next write succeeded on {last} {report['tookMs']} ms after noticing ({took:.2f} s after the kill)")
    check(report["values"] == list(range(1, 11)) and report["seqs"] == report["written"] and not report["resyncs"],
          f"the TypeScript subscription saw every write once, in order ({report})")

    # etcd without quorum: no member can accept writes, kvoctl cluster exits 3.
    for name in ["e1", "e2"]:
        cluster.etcd[name].kill()
        cluster.etcd[name].wait()
    hosts = ",".join(address(cluster, n) for n in members)

    def no_leader():
        status, out, err = run(kvoctl, "cluster", "--host", hosts)
        return (status, out, err) if status == 3 else None
    status, out, err = wait_for("kvoctl cluster to exit 3", no_leader, LEASE + 5)
    check("no member accepts mutations" in err and "unreachable" in out,
          f"without etcd quorum kvoctl cluster exits 3:\n{out}{err}")
    started = time.monotonic()
    status, out, err = run(kvoctl, "set", "cli.c", "3", "--host", hosts, "--failover-wait", "1")
    took = time.monotonic() - started
    check(status == 2 and "no leader accepted set within 1 s" in err and "error 1012" in err and took < 5
          and "names no leader to go to; waiting up to 1 s for one (--failover-wait)" in err,
          f"kvoctl set gives up after --failover-wait 1 with exit 2 ({took:.1f} s): {err.strip()}")


def main():
    return run_scenario("clients", scenario)


if __name__ == "__main__":
    sys.exit(main())
