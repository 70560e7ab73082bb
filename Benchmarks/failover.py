#!/usr/bin/env python3
"""The cluster's figures for docs/SCALING.md#figures: failover time, replication delay under write load, the leader's
CPU cost per follower, and subscriber capacity of 1 leader + 2 followers against one kvod, on one machine.

    python3 Benchmarks/failover.py [--kvod .build-bench/release/kvod] [--no-build] [--kills 20] [--lease 3]
                                   [--only failover,lag,cost,fanout] [--json FILE]

Everything runs on 127.0.0.1: a 3-member etcd (Debian's etcd-server, installed when missing) and release kvods with
--cluster-etcd, each with its own data directory under a fresh temporary directory, all stopped at exit.

- failover: --kills times, SIGKILL the leader while a client writes every 20 ms; the figure is the time from the
  kill to the first write acknowledged by another member (what a client waits for), and to the moment a member
  says it leads (hello). The killed member is restarted as a follower and caught up before the next kill.
- lag: a writer process pipelines sets (64 in flight) on the leader, as fast as it can (--lag-writes), then at a
  steady --lag-rate for 5 s; one subscriber on the leader and one on each follower, read by one epoll loop, stamp
  every notification as it arrives; the figure is, per seq, how much later the follower's notification arrived than
  the leader's (median, p99, max), beside the write rate.
- cost: the leader's CPU time (utime + stime from /proc, 10 ms ticks) per mutation for pipelined sets with 0, 1
  and 2 followers, and a kvod outside any cluster; medians of 3 runs of --cost-writes sets.
- fanout: M subscribers of one key receive every change of a publisher pipelining sets on the leader; on one kvod
  all M subscribe to it, in the cluster they are split between the two followers. The figure is notifications
  delivered per second (all M counted, every one checked for), from the first set to the last notification, and
  the CPU time of the kvods serving the subscribers per notification; the publisher sends
  max(--fanout-sets, 2,000,000 / M) sets.

Wall-clock figures are as noisy as the machine is busy: the load average is printed with them. The client side is
Python (counting lines, not parsing them, where it matters), and on a small machine it shares the CPUs with every
kvod, so the fan-out figures compare the two layouts under the same handicap rather than measure kvod's ceiling
(Benchmarks/README.md has kvod-bench for that).
"""

import argparse
import json
import os
import re
import selectors
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "Tests", "cluster"))
import cluster_test  # noqa: E402  (the cluster test's etcd and kvod helpers)
from cluster_test import Client, Cluster, call, wait_for  # noqa: E402


def note(message):
    print(message, file=sys.stderr, flush=True)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Bench:
    def __init__(self, kvod, lease):
        cluster_test.KVOD = kvod
        cluster_test.LEASE = lease
        self.kvod = kvod
        self.lease = lease
        self.root = tempfile.mkdtemp(prefix="kvod-failover-")
        self.cluster = Cluster(self.root)
        for name in self.cluster.etcd_names:
            self.cluster.start_etcd(name)
        wait_for("etcd quorum", self.cluster.etcd_healthy, 30)
        self.single = None

    def start(self, name):
        return self.cluster.start_kvod(name, ["--log-level", "info"])

    def leader(self, seconds=20):
        return wait_for("a writable leader", self.cluster.leader, seconds)

    def caught_up(self, name, leader, seconds=30):
        target = self.cluster.hello(leader)["appliedSeq"]
        wait_for(f"{name} caught up", lambda: self.cluster.hello(name).get("role") == "follower"
                 and self.cluster.hello(name).get("appliedSeq", -1) >= target, seconds)

    def stop(self):
        self.cluster.stop()
        if self.single is not None and self.single.poll() is None:
            self.single.kill()
            self.single.wait()
        shutil.rmtree(self.root, ignore_errors=True)


# MARK: - Failover

def failover(bench, kills):
    members = ["k0", "k1", "k2"]
    for name in members:
        if name not in bench.cluster.kvods or bench.cluster.kvods[name].poll() is not None:
            bench.start(name)
    write_times, leader_times = [], []
    value = 0
    for round_number in range(kills):
        leader = bench.leader()
        for name in members:
            if name != leader:
                bench.caught_up(name, leader)
        survivors = [n for n in members if n != leader]
        process = bench.cluster.kvods[leader]
        killed_at = time.monotonic()
        process.send_signal(signal.SIGKILL)
        process.wait()
        del bench.cluster.kvods[leader]
        led_at = acked_at = None
        deadline = killed_at + bench.lease + 30
        while (led_at is None or acked_at is None) and time.monotonic() < deadline:
            for name in survivors:
                try:
                    hello = bench.cluster.hello(name)
                    if led_at is None and hello.get("role") == "leader" and hello.get("writable"):
                        led_at = time.monotonic()
                    if acked_at is None:
                        value += 1
                        response = call(bench.cluster.kvod_ports[name], "set", {"path": "failover", "value": value})
                        if "result" in response:
                            acked_at = time.monotonic()
                except (OSError, ConnectionError, ValueError):
                    pass
            time.sleep(0.02)
        if led_at is None or acked_at is None:
            raise RuntimeError(f"round {round_number + 1}: no new leader within {bench.lease + 30} s")
        leader_times.append(led_at - killed_at)
        write_times.append(acked_at - killed_at)
        note(f"failover {round_number + 1}/{kills}: a member leads after {led_at - killed_at:.2f} s, "
             f"first write acknowledged after {acked_at - killed_at:.2f} s")
        bench.start(leader)
    return {
        "kills": kills, "leaseSeconds": bench.lease,
        "leadSeconds": {"median": statistics.median(leader_times), "max": max(leader_times),
                        "min": min(leader_times)},
        "writeSeconds": {"median": statistics.median(write_times), "max": max(write_times),
                         "min": min(write_times)},
    }


# MARK: - Replication delay

SEQ = re.compile(rb'"seq":(\d+)')


class Stamper:
    """A subscriber that stamps each change notification's seq with its arrival time."""

    def __init__(self, port, path):
        self.client = Client(port)
        self.client.call("subscribe", {"path": path, "options": ["new"]})
        self.sock = self.client.sock
        self.sock.setblocking(False)
        self.buffer = self.client.buffer
        self.arrivals = {}

    def read(self):
        try:
            chunk = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        now = time.monotonic()
        self.buffer += chunk
        complete, _, self.buffer = self.buffer.rpartition(b"\n")
        # Only change notifications come after the subscribe's response; a regex keeps the reader ahead of them.
        for seq in SEQ.findall(complete):
            self.arrivals.setdefault(int(seq), now)


def request_lines(path, first, count):
    """`count` set requests of `path` (ids and values from `first`), as bytes, one per line."""
    return [b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"%s","value":%d}}\n' % (i, path.encode(), i)
            for i in range(first, first + count)]


def pipelined_sets(port, path, count, depth=64, rate=0):
    """Sends `count` sets of `path` with up to `depth` in flight (and at most `rate` a second, when above 0),
    counting responses; returns seconds."""
    requests = request_lines(path, 1, count)
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = acked = 0
    start = time.monotonic()
    while acked < count:
        if sent < count and sent - acked < depth:
            end = min(count, acked + depth)
            if rate > 0:
                allowed = int((time.monotonic() - start) * rate) + 1
                if allowed <= sent:
                    time.sleep((sent + 1) / rate - (time.monotonic() - start))
                    allowed = sent + 1
                end = min(end, allowed)
            sock.sendall(b"".join(requests[sent:end]))
            sent = end
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the leader closed the connection")
        acked += chunk.count(b"\n")
    elapsed = time.monotonic() - start
    sock.close()
    return elapsed


def replication_delay(bench, writes, rate):
    leader = bench.leader()
    followers = [n for n in bench.cluster.kvods if n != leader and bench.cluster.kvods[n].poll() is None]
    call(bench.cluster.kvod_ports[leader], "set", {"path": "lag", "value": {"n": 0}})
    for name in followers:
        bench.caught_up(name, leader)
    reference = Stamper(bench.cluster.kvod_ports[leader], "lag.n")
    stampers = [Stamper(bench.cluster.kvod_ports[n], "lag.n") for n in followers]
    everyone = [reference] + stampers
    selector = selectors.DefaultSelector()
    for stamper in everyone:
        selector.register(stamper.sock, selectors.EVENT_READ, stamper)
    start = time.monotonic()
    writer = subprocess.Popen([sys.executable, __file__, "--publish", str(bench.cluster.kvod_ports[leader]), "lag.n",
                               str(writes), str(rate)])
    deadline = start + 120
    while any(len(s.arrivals) < writes for s in everyone) and time.monotonic() < deadline:
        for key, _ in selector.select(0.5):
            key.data.read()
    writer.wait()
    elapsed = max(reference.arrivals.values()) - start
    delays = [stamper.arrivals[seq] - reference.arrivals[seq] for stamper in stampers
              for seq in reference.arrivals if seq in stamper.arrivals]
    missing = sum(writes - len(s.arrivals) for s in everyone)
    for stamper in everyone:
        stamper.client.close()
    note(f"lag: {writes / elapsed:,.0f} sets/s: followers' notifications {statistics.median(delays) * 1000:.1f} ms "
         f"after the leader's (median), p99 {percentile(delays, 0.99) * 1000:.1f} ms")
    return {
        "writes": writes, "followers": len(stampers), "writesPerSecond": writes / elapsed, "missing": missing,
        "delayMilliseconds": {"median": statistics.median(delays) * 1000, "p99": percentile(delays, 0.99) * 1000,
                              "max": max(delays) * 1000},
    }


# MARK: - The leader's cost per follower

def cost_per_follower(bench, writes, runs=3):
    results = {}

    def measure(port, pid, label):
        samples = []
        for _ in range(runs):
            before = cpu_seconds(pid)
            pipelined_sets(port, "cost", writes)
            time.sleep(0.3)  # the last records reach the followers, the journal flushes
            samples.append((cpu_seconds(pid) - before) / writes * 1e6)
        results[label] = statistics.median(samples)
        note(f"cost: {label}: {results[label]:.1f} µs of leader CPU per set (runs: "
             f"{', '.join(f'{s:.1f}' for s in samples)})")

    # A kvod outside any cluster, with a data directory as the members have.
    port = cluster_test.free_ports(1)[0]
    single_dir = os.path.join(bench.root, "single")
    bench.single = subprocess.Popen([bench.kvod, "--port", str(port), "--data-dir", single_dir],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for("the single kvod", lambda: call(port, "ping").get("result") == "pong", 20)
    call(port, "set", {"path": "cost", "value": 0})
    measure(port, bench.single.pid, "no cluster")
    bench.single.kill()
    bench.single.wait()
    bench.single = None

    for name in list(bench.cluster.kvods):
        bench.cluster.kvods[name].kill()
        bench.cluster.kvods[name].wait()
        del bench.cluster.kvods[name]
    members = ["c0", "c1", "c2"]
    bench.start(members[0])
    leader = bench.leader()
    port = bench.cluster.kvod_ports[leader]
    call(port, "set", {"path": "cost", "value": 0})
    measure(port, bench.cluster.kvods[leader].pid, "leader, 0 followers")
    for count, name in enumerate(members[1:], start=1):
        bench.start(name)
        bench.caught_up(name, leader)
        measure(port, bench.cluster.kvods[leader].pid, f"leader, {count} follower{'s' if count > 1 else ''}")
    return {"writes": writes, "microsecondsPerSet": results}


# MARK: - Subscriber capacity

def fanout(ports, subscribers, publisher_port, sets, pids):
    """Subscribers spread over `ports`; returns notifications/s delivered from the first set to the last one, and the
    CPU time the kvods `pids` (those serving the subscribers) spent per notification, in µs."""
    selector = selectors.DefaultSelector()
    socks = []
    for index in range(subscribers):
        client = Client(ports[index % len(ports)], timeout=10)
        response = client.call("subscribe", {"path": "fan.n", "options": ["new"]}, timeout=10)
        if "result" not in response:
            raise RuntimeError(f"subscribe failed: {response}")
        client.sock.setblocking(False)
        socks.append(client.sock)
        selector.register(client.sock, selectors.EVENT_READ)
    counts = {sock: 0 for sock in socks}
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    start = time.monotonic()
    publisher = subprocess.Popen([sys.executable, __file__, "--publish", str(publisher_port), "fan.n", str(sets)])
    last = start
    deadline = start + 300
    remaining = len(socks)
    while remaining and time.monotonic() < deadline:
        for key, _ in selector.select(0.5):
            sock = key.fileobj
            try:
                chunk = sock.recv(1 << 20)
            except BlockingIOError:
                continue
            counts[sock] += chunk.count(b"\n")
            if counts[sock] >= sets:
                selector.unregister(sock)
                remaining -= 1
                last = time.monotonic()
    publisher.wait()
    cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
    for sock in socks:
        sock.close()
    delivered = sum(min(c, sets) for c in counts.values())
    if remaining:
        raise RuntimeError(f"{remaining} subscribers missed notifications ({delivered} of {sets * subscribers})")
    return delivered / (last - start), cpu / delivered * 1e6


def capacity(bench, sets, sizes):
    results = {}
    port = cluster_test.free_ports(1)[0]
    bench.single = subprocess.Popen([bench.kvod, "--port", str(port), "--data-dir", os.path.join(bench.root, "fan1")],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for("the single kvod", lambda: call(port, "ping").get("result") == "pong", 20)
    call(port, "set", {"path": "fan", "value": {"n": 0}})
    for size in sizes:
        rate, cost = fanout([port], size, port, max(sets, 2_000_000 // size), [bench.single.pid])
        results.setdefault(str(size), {})["one kvod"] = {"perSecond": rate, "cpuMicroseconds": cost}
        note(f"fanout: {size} subscribers on one kvod: {rate:,.0f} notifications/s, {cost:.2f} µs of kvod CPU each")
    bench.single.kill()
    bench.single.wait()
    bench.single = None

    members = [n for n in bench.cluster.kvods if bench.cluster.kvods[n].poll() is None]
    for name in ["c0", "c1", "c2"][len(members):]:
        bench.start(name)
    leader = bench.leader()
    followers = [n for n in bench.cluster.kvods if n != leader]
    call(bench.cluster.kvod_ports[leader], "set", {"path": "fan", "value": {"n": 0}})
    for name in followers:
        bench.caught_up(name, leader)
    for size in sizes:
        rate, cost = fanout(
            [bench.cluster.kvod_ports[n] for n in followers], size, bench.cluster.kvod_ports[leader],
            max(sets, 2_000_000 // size), [bench.cluster.kvods[n].pid for n in followers])
        results[str(size)]["leader + 2 followers"] = {"perSecond": rate, "cpuMicroseconds": cost}
        note(f"fanout: {size} subscribers on 2 followers: {rate:,.0f} notifications/s, {cost:.2f} µs of the "
             "followers' CPU each")
    return {"sets": sets, "notificationsPerSecond": results}


# MARK: - Main

def build(kvod):
    note(f"building the release kvod into {os.path.dirname(os.path.dirname(kvod))}")
    subprocess.run(["swift", "build", "-c", "release", "--scratch-path", os.path.dirname(os.path.dirname(kvod)),
                    "--product", "kvod"], cwd=ROOT, check=True, stdout=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kvod", default=os.path.join(
        os.environ.get("KVOD_BENCH_SCRATCH", os.path.join(ROOT, ".build-bench")), "release", "kvod"))
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--lease", type=int, default=3)
    parser.add_argument("--lag-writes", type=int, default=50000)
    parser.add_argument("--lag-rate", type=int, default=5000, help="the steady write rate of the second lag run")
    parser.add_argument("--cost-writes", type=int, default=100000)
    parser.add_argument("--fanout-sets", type=int, default=2000)
    parser.add_argument("--fanout-subscribers", default="100,1000,4000")
    parser.add_argument("--only", default="failover,lag,cost,fanout")
    parser.add_argument("--json")
    parser.add_argument("--publish", nargs="+", help=argparse.SUPPRESS)  # a writer process: PORT PATH COUNT [RATE]
    args = parser.parse_args()
    if args.publish:
        rate = int(args.publish[3]) if len(args.publish) > 3 else 0
        pipelined_sets(int(args.publish[0]), args.publish[1], int(args.publish[2]), rate=rate)
        return 0
    if not args.no_build:
        build(args.kvod)
    if shutil.which("etcd") is None:
        subprocess.run(["bash", "-c", "apt-get update -qq && apt-get install -y -qq etcd-server"], check=True)
    only = set(args.only.split(","))
    report = {"loadAverageBefore": load_average()}
    bench = Bench(os.path.abspath(args.kvod), args.lease)
    try:
        if "failover" in only:
            report["failover"] = failover(bench, args.kills)
        if "lag" in only:
            if len(bench.cluster.kvods) < 3:
                for name in ["k0", "k1", "k2"]:
                    if name not in bench.cluster.kvods:
                        bench.start(name)
            report["lag"] = [replication_delay(bench, args.lag_writes, 0),
                             replication_delay(bench, args.lag_rate * 5, args.lag_rate)]
        if "cost" in only:
            report["cost"] = cost_per_follower(bench, args.cost_writes)
        if "fanout" in only:
            sizes = [int(s) for s in args.fanout_subscribers.split(",")]
            report["fanout"] = capacity(bench, args.fanout_sets, sizes)
    finally:
        bench.stop()
    report["loadAverageAfter"] = load_average()
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
