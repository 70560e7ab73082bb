#!/usr/bin/env python3
"""Cluster phase 1 on loopback (docs/SCALING.md#tests): a 3-member etcd, three kvods with --cluster-etcd.

Checks, in order: one leader is elected and hello names role, term and appliedSeq everywhere; writes on the leader
reach both followers with the same seqs; a subscriber on a follower sees every change, in order; a mutation on a
follower gets 1012 naming the leader; SIGKILL of the leader: a follower leads within lease + 2 s and accepts writes,
and every write replicated before the kill is there; two etcd members killed: the leader stops acknowledging (1012
with a reason) while reads continue; etcd restored: writes resume; a fourth member joining late catches up to the leader's seq
(from the leader's backlog: the snapshot bootstrap is not exercised here, docs/SCALING.md). Standard library only. Exits 0 when every check passed.
"""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time

KVOD = os.environ.get("KVOD_BIN", ".build/debug/kvod")
LEASE = 3
START = time.monotonic()


def log(message):
    print(f"[{time.monotonic() - START:6.1f}s] {message}", flush=True)


def free_ports(count):
    sockets, ports = [], []
    for _ in range(count):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        sockets.append(s)
        ports.append(s.getsockname()[1])
    for s in sockets:
        s.close()
    return ports


class Client:
    """A line client of kvod's JSON-RPC protocol."""

    def __init__(self, port, timeout=3.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""
        self.next_id = 1
        self.notifications = []

    def read_line(self, timeout=3.0):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, method, params=None, timeout=3.0):
        ident = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = params
        self.sock.sendall(json.dumps(message).encode() + b"\n")
        while True:
            line = self.read_line(timeout)
            if line.get("id") == ident:
                return line
            self.notifications.append(line)

    def close(self):
        self.sock.close()


def call(port, method, params=None):
    client = Client(port)
    try:
        return client.call(method, params)
    finally:
        client.close()


def value(port, path):
    """The value at `path` on the kvod at `port`."""
    return call(port, "get", {"path": path})["result"]["value"]


def wait_for(what, condition, seconds):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            last = condition()
            if last:
                return last
        except (OSError, ConnectionError, ValueError) as error:
            last = error
        time.sleep(0.05)
    raise AssertionError(f"timed out after {seconds} s waiting for {what} (last: {last})")


class Cluster:
    def __init__(self, root):
        self.root = root
        self.cleanups = []  # called first by stop(): what a scenario started beside the cluster (a kvoctl watch)
        self.etcd = {}
        peer, client = free_ports(3), free_ports(3)
        self.etcd_names = ["e0", "e1", "e2"]
        self.peer = dict(zip(self.etcd_names, peer))
        self.client = dict(zip(self.etcd_names, client))
        self.kvods = {}
        self.kvod_ports = {}

    def etcd_urls(self):
        return ",".join(f"http://127.0.0.1:{self.client[n]}" for n in self.etcd_names)

    def start_etcd(self, name):
        initial = ",".join(f"{n}=http://127.0.0.1:{self.peer[n]}" for n in self.etcd_names)
        out = open(os.path.join(self.root, f"{name}.log"), "ab")
        self.etcd[name] = subprocess.Popen(
            ["etcd", "--name", name, "--data-dir", os.path.join(self.root, name),
             "--listen-client-urls", f"http://127.0.0.1:{self.client[name]}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.client[name]}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer[name]}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[name]}",
             "--initial-cluster", initial, "--initial-cluster-state", "new",
             "--initial-cluster-token", "kvod-test", "--heartbeat-interval", "50", "--election-timeout", "500",
             "--log-level", "warn"],
            stdout=out, stderr=out)

    def etcd_healthy(self):
        for name in self.etcd_names:
            if self.etcd.get(name) is None or self.etcd[name].poll() is not None:
                continue
            try:
                import urllib.request
                body = json.dumps({"key": "aGVhbHRo"}).encode()
                request = urllib.request.Request(f"http://127.0.0.1:{self.client[name]}/v3/kv/range", data=body)
                urllib.request.urlopen(request, timeout=1).read()
                return True
            except OSError:
                continue
        return False

    def start_kvod(self, name, extra=()):
        port = self.kvod_ports.setdefault(name, free_ports(1)[0])
        out = open(os.path.join(self.root, f"{name}.log"), "ab")
        process = subprocess.Popen(
            [KVOD, "--port", str(port), "--data-dir", os.path.join(self.root, name), "--log-level", "debug",
             "--cluster-etcd", self.etcd_urls(), "--cluster", "test", "--advertise", f"127.0.0.1:{port}",
             "--cluster-lease-seconds", str(LEASE), *extra],
            stdout=out, stderr=out)
        self.kvods[name] = process
        wait_for(f"{name} listening", lambda: call(port, "ping").get("result") == "pong", 20)
        return port

    def start_members(self, extra=(), names=("k0", "k1", "k2")):
        """Starts the etcd members (waiting for a quorum) and the kvods `names` with `extra` options; waits for one
        writable leader and returns the member names, the leader and the others."""
        for name in self.etcd_names:
            self.start_etcd(name)
        wait_for("etcd quorum", self.etcd_healthy, 20)
        members = list(names)
        for name in members:
            self.start_kvod(name, extra)
        leader = wait_for("one writable leader", self.leader, 15)
        return members, leader, [n for n in members if n != leader]

    def wait_linked(self, leader, followers, seconds=10):
        """Waits until every one of `followers` is a follower naming `leader` as its leader."""
        address = f"127.0.0.1:{self.kvod_ports[leader]}"
        wait_for("followers linked", lambda: all(
            self.hello(n).get("role") == "follower" and self.hello(n).get("leader") == address for n in followers),
            seconds)

    def hello(self, name):
        return call(self.kvod_ports[name], "hello")["result"]

    def roles(self):
        result = {}
        for name, process in self.kvods.items():
            if process.poll() is None:
                try:
                    result[name] = self.hello(name)
                except (OSError, ConnectionError):
                    pass
        return result

    def leader(self):
        leaders = [n for n, h in self.roles().items() if h.get("role") == "leader" and h.get("writable")]
        return leaders[0] if len(leaders) == 1 else None

    def stop(self):
        for cleanup in self.cleanups:
            cleanup()
        for process in list(self.kvods.values()) + list(self.etcd.values()):
            if process.poll() is None:
                process.kill()
        for process in list(self.kvods.values()) + list(self.etcd.values()):
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                pass


def check(condition, message):
    if not condition:
        raise AssertionError(message)
    log(f"ok: {message}")


def run_scenario(name, scenario):
    """Runs `scenario(cluster, root)` on a cluster in a new temporary directory (kept with KVOD_CLUSTER_KEEP): an
    AssertionError fails it; the members are killed, and on failure the last lines of every kvod's log printed."""
    root = tempfile.mkdtemp(prefix=f"kvod-{name}-")
    cluster = Cluster(root)
    ok = False
    try:
        scenario(cluster, root)
        ok = True
    except AssertionError as failure:
        log(f"FAIL: {failure}")
    finally:
        cluster.stop()
        if not ok:
            for entry in sorted(os.listdir(root)):
                if entry.endswith(".log") and entry.startswith("k"):
                    print(f"---- {entry} (last 30 lines)")
                    with open(os.path.join(root, entry), errors="replace") as f:
                        print("".join(f.readlines()[-30:]))
        if os.environ.get("KVOD_CLUSTER_KEEP"):
            log(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    log("PASS" if ok else "FAILED")
    return 0 if ok else 1


def scenario(cluster, root):
    members, leader, followers = cluster.start_members()
    log("etcd: 3 members up, kvods started")
    wait_for("two followers", lambda: sum(h.get("role") == "follower" for h in cluster.roles().values()) == 2, 5)
    roles = cluster.roles()
    check(all(roles[n]["role"] == "follower" for n in followers), f"one leader ({leader}), two followers")
    term = roles[leader]["term"]
    check(all(roles[n]["term"] == term for n in members) and term > 0, f"every member names term {term}")
    cluster.wait_linked(leader, followers, 5)

    # A subscriber on a follower, before the writes.
    sub = Client(cluster.kvod_ports[followers[0]])
    lp = cluster.kvod_ports[leader]
    writer = Client(lp)
    created = writer.call("set", {"path": "counter", "value": {"value": 0}})
    check("result" in created, f"the leader accepts a write ({created.get('result', created.get('error'))})")
    wait_for("the follower has counter", lambda: value(
        cluster.kvod_ports[followers[0]], "counter.value") == 0, 5)
    sub_response = sub.call("subscribe", {"path": "counter.value", "options": ["new"]})
    check("result" in sub_response, "subscribe works on a follower")
    seqs = []
    for i in range(1, 101):
        response = writer.call("set", {"path": "counter.value", "value": i})
        seqs.append(response["result"]["seq"] if isinstance(response.get("result"), dict) else None)
    leader_seq = cluster.hello(leader)["appliedSeq"]
    wait_for("followers at the leader's seq", lambda: all(
        cluster.hello(n)["appliedSeq"] == leader_seq for n in followers), 5)
    for name in followers:
        got = call(cluster.kvod_ports[name], "get", {"path": "counter.value", "meta": True})
        check(got["result"]["value"] == 100, f"{name} has the last value at appliedSeq {leader_seq}")
    leader_meta = call(lp, "get", {"path": "counter.value", "meta": True})["result"]
    follower_meta = call(cluster.kvod_ports[followers[1]], "get", {"path": "counter.value", "meta": True})["result"]
    check(leader_meta == follower_meta, f"leader and follower agree on value and modSeq ({leader_meta})")

    # The subscriber saw every change, in order.
    values, change_seqs = [], []
    deadline = time.monotonic() + 5
    while len(values) < 100 and time.monotonic() < deadline:
        line = sub.notifications.pop(0) if sub.notifications else sub.read_line(5)
        if line.get("method") == "change":
            values.append(line["params"].get("new"))
            change_seqs.append(line["params"].get("seq"))
    values, change_seqs = values[-100:], change_seqs[-100:]
    check(values == list(range(1, 101)) and change_seqs == seqs,
          f"a subscriber on a follower saw the 100 changes in order, with the leader's seqs ({values[:3]}, {change_seqs[:3]}, {seqs[:3]})")

    # A mutation on a follower: 1012 naming the leader.
    refused = call(cluster.kvod_ports[followers[1]], "set", {"path": "counter.value", "value": -1})
    error = refused.get("error", {})
    check(error.get("code") == 1012 and error.get("data", {}).get("leader") == f"127.0.0.1:{lp}",
          f"a mutation on a follower gets 1012 naming the leader ({error})")

    # SIGKILL the leader: a follower leads within lease + 2 s, with every replicated write.
    writer.close()
    sub.close()
    killed_at = time.monotonic()
    cluster.kvods[leader].send_signal(signal.SIGKILL)
    cluster.kvods[leader].wait()
    del cluster.kvods[leader]
    new_leader = wait_for("a new leader", cluster.leader, LEASE + 6)
    took = time.monotonic() - killed_at
    check(took <= LEASE + 2, f"{new_leader} leads {took:.2f} s after the kill (lease {LEASE} s)")
    np = cluster.kvod_ports[new_leader]
    check(value(np, "counter.value") == 100, "the new leader has every replicated write")
    response = call(np, "set", {"path": "counter.value", "value": 101})
    check("result" in response, "the new leader accepts writes")
    other = [n for n in followers if n != new_leader][0]
    wait_for("the other follower follows the new leader", lambda: value(cluster.kvod_ports[other], "counter.value") == 101, 8)
    check(cluster.hello(other)["leader"] == f"127.0.0.1:{np}", f"{other} follows {new_leader}")

    # Two etcd members down: the leader stops acknowledging; reads continue. Restored: writes resume.
    for name in ["e1", "e2"]:
        cluster.etcd[name].kill()
        cluster.etcd[name].wait()
    acknowledged = [101]
    def refused_with_reason():
        r = call(np, "set", {"path": "counter.value", "value": 102})
        if "result" in r:
            acknowledged.append(102)  # the lease was still proven
        return r.get("error") if r.get("error", {}).get("code") == 1012 else None
    error = wait_for("the leader refusing writes", refused_with_reason, LEASE + 3)
    check("reason" in error.get("data", {}), f"without etcd quorum the leader refuses: {error['data']}")
    check(value(np, "counter.value") == acknowledged[-1], "reads continue on the leader")
    wait_for("the follower has the last acknowledged write",
             lambda: value(cluster.kvod_ports[other], "counter.value") == acknowledged[-1], 3)
    check(True, "reads continue on the follower")
    for name in ["e1", "e2"]:
        cluster.start_etcd(name)
    def write_accepted():
        leader_now = cluster.leader()
        if leader_now is None:
            return None
        r = call(cluster.kvod_ports[leader_now], "set", {"path": "counter.value", "value": 103})
        return leader_now if "result" in r else None
    resumed = wait_for("writes to resume", write_accepted, 20)
    check(True, f"etcd restored: writes resume on {resumed}")

    # A fourth member joining late catches up (from the leader's backlog).
    joined = "k3"
    cluster.start_kvod(joined)
    wait_for("k3 catches up", lambda: value(cluster.kvod_ports[joined], "counter.value") == 103 and cluster.hello(joined)["role"] == "follower", 15)
    check(cluster.hello(joined)["appliedSeq"] == cluster.hello(resumed)["appliedSeq"],
          "a member joining late has the leader's seq")


def main():
    return run_scenario("cluster", scenario)


if __name__ == "__main__":
    sys.exit(main())
