#!/usr/bin/env python3
"""Cluster bootstrap and observability on loopback (docs/SCALING.md#tests): a 3-member etcd, three kvods with
--replication-backlog 20, --metrics-port 0 and --log-format json.

Checks, in order: the metrics endpoints of the leader and a follower name their role, term, applied seq, lag and
followers, agreeing with hello; a follower SIGKILLed while the leader writes well past its backlog bootstraps, once
restarted, from the leader's snapshot (sent in chunks) and ends with the leader's exact values, modSeqs and seq, then
streams again; a bootstrap of a graph of several MB (several chunks) while the leader keeps writing converges to the
leader's history; every role change is one JSON log line naming the old and new role, term and leader, including
the follower -> leader change after the leader is SIGKILLed. Standard library only; uses cluster_test.py's helpers.
Exits 0 when every check passed.
"""
import hashlib, json, os, re, signal, subprocess, sys, time, urllib.request

from cluster_test import KVOD, LEASE, Client, check, value, wait_for, run_scenario

BACKLOG = 20
EXTRA = ["--replication-backlog", str(BACKLOG), "--metrics-port", "0", "--log-format", "json"]


def log_lines(cluster, name):
    """The JSON log lines of member `name` (its log file also holds the plain start lines on stdout)."""
    lines = []
    with open(os.path.join(cluster.root, f"{name}.log"), errors="replace") as f:
        for text in f:
            if text.startswith("{"):
                try:
                    lines.append(json.loads(text))
                except ValueError:
                    pass
    return lines


def messages(cluster, name, message):
    return [line.get("metadata", {}) for line in log_lines(cluster, name) if line.get("message") == message]


def metrics_address(cluster, name):
    """The metrics address of `name`'s latest start (kvod prints `kvod metrics on ADDRESS`)."""
    with open(os.path.join(cluster.root, f"{name}.log"), errors="replace") as f:
        found = re.findall(r"^kvod metrics on (\S+)$", f.read(), re.MULTILINE)
    return found[-1] if found else None


def metrics(cluster, name):
    """The samples of `name`'s metrics endpoint: {"metric{labels}": value}."""
    body = urllib.request.urlopen(f"http://{metrics_address(cluster, name)}/metrics", timeout=3).read().decode()
    samples = {}
    for line in body.splitlines():
        if line and not line.startswith("#"):
            key, number = line.rsplit(" ", 1)
            samples[key] = float(number)
    return samples


def snapshot_of(port, paths):
    """Value and modSeq of each path on the kvod at `port`."""
    client = Client(port)
    try:
        return {path: client.call("get", {"path": path, "meta": True}).get("result") for path in paths}
    finally:
        client.close()


def wait_caught_up(cluster, name, leader, seconds):
    target = cluster.hello(leader)["appliedSeq"]
    wait_for(f"{name} at the leader's seq {target}", lambda: cluster.hello(name).get("appliedSeq") == target and
             cluster.hello(name).get("role") == "follower", seconds)
    return target


def scenario(cluster, root):
    members, leader, followers = cluster.start_members(EXTRA)
    lp = cluster.kvod_ports[leader]
    cluster.wait_linked(leader, followers, 8)

    # A few writes, then the metrics of a leader and a follower, agreeing with hello.
    writer = Client(lp)
    for i in range(10):
        response = writer.call("set", {"path": f"k{i}", "value": {"value": i}})
        assert "result" in response, response
    wait_caught_up(cluster, followers[0], leader, 5)
    wait_caught_up(cluster, followers[1], leader, 5)
    hello = cluster.hello(leader)
    wait_for("the leader's metrics to count two streaming followers", lambda: len(
        [k for k in metrics(cluster, leader) if k.startswith("kvod_cluster_follower_lag{")]) == 2, 3)
    m = metrics(cluster, leader)
    check(m['kvod_cluster_role{role="leader"}'] == 1 and m['kvod_cluster_role{role="follower"}'] == 0
          and m["kvod_cluster_writable"] == 1, "the leader's metrics: role leader, writable")
    check(m["kvod_cluster_term"] == hello["term"] and m["kvod_cluster_applied_seq"] == hello["appliedSeq"],
          f"the leader's metrics: term {hello['term']} and applied seq {hello['appliedSeq']} as hello says")
    check(m["kvod_cluster_followers"] == 2 and m["kvod_cluster_replication_lag"] == 0,
          "the leader's metrics: 2 followers, lag 0 once idle")
    f = metrics(cluster, followers[0])
    check(f['kvod_cluster_role{role="follower"}'] == 1 and f['kvod_cluster_role{role="leader"}'] == 0
          and f["kvod_cluster_writable"] == 0 and f["kvod_cluster_linked"] == 1,
          "a follower's metrics: role follower, linked, not writable")
    check(f["kvod_cluster_term"] == hello["term"] and f["kvod_cluster_applied_seq"] == hello["appliedSeq"]
          and f["kvod_cluster_leader_seq"] == hello["appliedSeq"] and f["kvod_cluster_replication_lag"] == 0,
          "a follower's metrics: the leader's term, applied seq = leader's seq, lag 0")

    # A follower down while the leader writes far past its backlog: it bootstraps from a snapshot.
    lagging = followers[0]
    cluster.kvods[lagging].send_signal(signal.SIGKILL)
    cluster.kvods[lagging].wait()
    paths = [f"k{i}.value" for i in range(10)] + ["counter.value"]
    writer.call("set", {"path": "counter", "value": {"value": 0}})
    for i in range(1, 8 * BACKLOG + 1):
        response = writer.call("set", {"path": "counter.value" if i % 3 else f"k{i % 10}.value", "value": i})
        assert "result" in response, response
    wait_caught_up(cluster, followers[1], leader, 5)
    f = metrics(cluster, followers[1])
    check(f["kvod_cluster_applied_seq"] == cluster.hello(leader)["appliedSeq"],
          "the other follower's applied-seq metric follows the writes")
    cluster.start_kvod(lagging, EXTRA)
    target = wait_caught_up(cluster, lagging, leader, 20)
    boots = messages(cluster, lagging, "bootstrapping from the leader's snapshot")
    sent = messages(cluster, leader, "snapshot sent to a follower")
    check(len(boots) >= 1 and len(sent) >= 1,
          f"{lagging}, {8 * BACKLOG} mutations behind a backlog of {BACKLOG}, bootstrapped from a snapshot "
          f"({boots[-1] if boots else None})")
    leader_view, follower_view = snapshot_of(lp, paths), snapshot_of(cluster.kvod_ports[lagging], paths)
    check(leader_view == follower_view and all(v is not None for v in leader_view.values()),
          f"{lagging} has the leader's exact values and modSeqs at seq {target}")
    response = writer.call("set", {"path": "counter.value", "value": -5})
    wait_for(f"{lagging} streaming after the bootstrap",
             lambda: value(cluster.kvod_ports[lagging], "counter.value") == -5, 5)
    check(True, f"{lagging} streams the leader's writes after its bootstrap")
    wait_for("the leader's metrics to count the snapshot sent", lambda: metrics(cluster, leader).get(
        "kvod_cluster_snapshots_sent_total", 0) >= 1, 3)
    check(True, "the leader's kvod_cluster_snapshots_sent_total counts it")

    # A graph of several MB: several chunks, while the leader keeps writing.
    cluster.kvods[lagging].send_signal(signal.SIGKILL)
    cluster.kvods[lagging].wait()
    big_paths = []
    for i in range(40):
        text = hashlib.sha256(str(i).encode()).hexdigest() * 1600  # ~100 KB
        response = writer.call("set", {"path": f"big{i}", "value": {"text": text}})
        assert "result" in response, response
        big_paths.append(f"big{i}.text")
    for i in range(3 * BACKLOG):
        writer.call("set", {"path": "counter.value", "value": 1000 + i})
    before = len(messages(cluster, lagging, "bootstrapping from the leader's snapshot"))
    cluster.start_kvod(lagging, EXTRA)
    # Writes go on while the follower bootstraps (the backlog keeps what it needs meanwhile), and `kvoctl cluster`
    # looks at it meanwhile: a follower behind the leader never shows lag 0 (before its link: lag unknown).
    kvoctl = os.environ.get("KVOCTL_BIN") or os.path.join(os.path.dirname(os.path.abspath(KVOD)), "kvoctl")
    views = []
    for i in range(BACKLOG):
        writer.call("set", {"path": "counter.value", "value": 2000 + i})
        leader_seq = cluster.hello(leader)["appliedSeq"]
        shown = subprocess.run([kvoctl, "cluster", "--host", f"127.0.0.1:{cluster.kvod_ports[lagging]}", "--format",
                                "json", "--timeout", "2"], capture_output=True, text=True, timeout=10).stdout
        if shown.strip():
            views.append((leader_seq, json.loads(shown)[0]))
    target = wait_caught_up(cluster, lagging, leader, 60)
    # Far behind: more than the one write in flight a streaming follower may not have received yet (its lag is then
    # legitimately 0 as far as it knows).
    behind = [view for seq, view in views if view["role"] == "follower" and view["appliedSeq"] < seq - 5]
    check(behind and all(view["lag"] is None or view["lag"] > 0 for view in behind)
          and all((view["lag"] is None) == (view["linked"] is False) for view in behind),
          f"kvoctl cluster during the bootstrap: {len(behind)} views of {lagging} behind the leader, none with lag 0 "
          f"(lags {[view['lag'] for view in behind]})")
    boots = messages(cluster, lagging, "bootstrapping from the leader's snapshot")[before:]
    size = int(boots[0]["bytes"]) if boots else 0
    check(len(boots) >= 1 and size > 3 * 768 * 1024,
          f"{lagging} bootstrapped from a snapshot of {size} bytes (at least 4 chunks of 768 KiB)")
    all_paths = paths + big_paths
    leader_view = snapshot_of(lp, all_paths)
    follower_view = snapshot_of(cluster.kvod_ports[lagging], all_paths)
    check(leader_view == follower_view, f"{lagging} has the leader's exact values and modSeqs at seq {target}")

    # Role changes are JSON log lines with the old and new role, term and leader; a failover adds one.
    changes = messages(cluster, leader, "cluster role changed")
    won = [c for c in changes if c.get("cluster.role") == "leader"]
    check(len(won) == 1 and won[0].get("cluster.previous.role") == "candidate"
          and won[0].get("cluster.term") == str(hello["term"]) and won[0].get("cluster.leader") == f"127.0.0.1:{lp}",
          f"the leader logged its change candidate -> leader as JSON ({won[0] if won else changes})")
    writer.close()
    cluster.kvods[leader].send_signal(signal.SIGKILL)
    cluster.kvods[leader].wait()
    del cluster.kvods[leader]
    new_leader = wait_for("a new leader", cluster.leader, LEASE + 6)
    promoted = [c for c in messages(cluster, new_leader, "cluster role changed") if c.get("cluster.role") == "leader"]
    check(len(promoted) >= 1 and promoted[-1].get("cluster.previous.role") in ("follower", "candidate")
          and promoted[-1].get("cluster.previous.leader") in (f"127.0.0.1:{lp}", "none")
          and int(promoted[-1]["cluster.term"]) > hello["term"],
          f"{new_leader} logged its promotion with the old role, term and leader ({promoted[-1] if promoted else None})")
    followed = [c for n in members if n not in (leader, new_leader)
                for c in messages(cluster, n, "cluster role changed")]
    check(any(c.get("cluster.previous.role") == "follower" and c.get("cluster.previous.leader") == f"127.0.0.1:{lp}"
              for c in followed + messages(cluster, new_leader, "cluster role changed")),
          "a member logged leaving the old leader (previous role follower, previous leader named)")
    m = metrics(cluster, new_leader)
    check(m['kvod_cluster_role{role="leader"}'] == 1 and m["kvod_cluster_term"] > hello["term"],
          f"{new_leader}'s metrics say leader, term {int(m['kvod_cluster_term'])}")


def main():
    return run_scenario("bootstrap", scenario)


if __name__ == "__main__":
    sys.exit(main())
