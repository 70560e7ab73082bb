#!/usr/bin/env python3
"""Live queries under a stream of sets (issue 24): kvod's CPU per mutation and per notification, how it grows with the
collection's size, beside the naive approach of re-running each affected query, and resident bytes per live query.

For each size N it starts a fresh release kvod (--empty) on loopback and loads `players`, an array of N open objects
{"team": i % T, "score": random, "name": "p<i>"} (insert batches under the 1 MiB line limit; T = 1,000 teams, fewer
for small N or few queries). Then, on raw sockets (no client library in the way):

  1. base: M sets of `score` or `team` (half each) of random elements, nobody subscribed: kvod's CPU per set;
  2. Q live queries `{"where": "team == K", "orderBy": ["-score"], "limit": 20}` for K = 0..Q-1, subscribed with
     ["new"] on one connection, which a thread drains and counts: VmRSS before and after, per live query;
  3. the same kind of stream again: CPU per set now, minus the base, is what the live queries cost per mutation;
     divided by the notifications, per notification; the bytes the subscriber got per set, beside what mirroring
     the whole relationship would get (a subscription to players.score or players.team is told each change as the
     whole array of N values);
  4. naive: the CPU of `get` with the same query (a random K) run anew — its `where` written `team == K AND
     TRUEPREDICATE`, so that kvod does not answer it from the live query `team == K` — times the number of queries
     the mutation affects (1 for a score, 2 for a team that changed: the old team's and the new one's), is what
     re-running the affected queries would cost per mutation; the ratio naive / incremental is printed.

While the queries are subscribed, and for three more subscribed alone after them (an unindexed `score > 500000` in the
same order, `team == 1` in a new order by name, and `score > 500000` in the array's own order), a pinger on its own connection measures its longest wait: how
long the loop was held. kvod answers a query that evaluates many elements over several loop turns (the subscribe
waits), so the pinger's wait stays around one share of the loop whatever N.

CPU comes from /proc/PID/stat (utime + stime) over the whole stream: run it on a quiet machine, and trust the ratios
within a run more than the absolute figures. The sets are pipelined 256 at a time on one connection.

    python3 Benchmarks/queries.py            # the full form: N = 10k, 100k, 1M; Q = 1,000; M = 40,000 (minutes)
    python3 Benchmarks/queries.py --quick    # make bench: N = 2k, 20k; Q = 100; M = 5,000 (seconds)
    options: --kvod PATH (default .build/release/kvod, built when missing) --sizes 10000,100000 --queries Q
             --mutations M --seed S --json FILE (one line per size, appended as each is done) --profile DIR (perf record kvod while subscribing and during the observed stream)
"""

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TICK = os.sysconf("SC_CLK_TCK")
BATCH_BYTES = 900_000  # an insert line stays under kvod's 1 MiB line limit


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14 and 15)


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class Kvod:
    """A fresh release kvod on a free loopback port; stopped (SIGTERM, then SIGKILL) by `stop`."""

    def __init__(self, binary):
        self.process = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--empty"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if "kvod listening on" in line:
                self.port = int(line.rsplit(":", 1)[1])
                return
            if self.process.poll() is not None:
                break
        self.stop()
        sys.exit("queries.py: kvod did not start")

    @property
    def pid(self):
        return self.process.pid

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class Connection:
    """A JSON-lines connection whose responses are read in order (notifications go to another connection here)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=600)
        self.buffer = b""
        self.next_id = 1

    def line(self, method, params):
        request_id = self.next_id
        self.next_id += 1
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params},
                          separators=(",", ":")).encode() + b"\n"

    def responses(self, count):
        """Reads `count` responses; fails on an error response."""
        out = []
        while len(out) < count:
            newline = self.buffer.find(b"\n")
            if newline < 0:
                data = self.sock.recv(1 << 20)
                if not data:
                    sys.exit("queries.py: kvod closed the connection")
                self.buffer += data
                continue
            raw, self.buffer = self.buffer[:newline], self.buffer[newline + 1:]
            message = json.loads(raw)
            if "error" in message:
                sys.exit(f"queries.py: kvod answered {message['error']}")
            if "id" in message:
                out.append(message["result"])
        return out

    def call(self, method, params):
        self.sock.sendall(self.line(method, params))
        return self.responses(1)[0]

    def pipeline(self, requests, depth=256):
        """Sends (method, params) requests `depth` at a time, reading as many responses; returns them all."""
        results = []
        for start in range(0, len(requests), depth):
            chunk = requests[start:start + depth]
            self.sock.sendall(b"".join(self.line(method, params) for method, params in chunk))
            results += self.responses(len(chunk))
        return results

    def close(self):
        self.sock.close()


class Pinger(threading.Thread):
    """Pings kvod on its own connection, one at a time, and keeps the longest wait since `reset`: how long the loop was
    held (a subscription answered within one request holds it for its whole fill)."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.connection = Connection(port)
        self.longest = 0.0
        self.pings = 0
        self.running = True

    def run(self):
        while self.running:
            started = time.monotonic()
            self.connection.call("ping", {})
            self.longest = max(self.longest, time.monotonic() - started)
            self.pings += 1
            time.sleep(0.0005)

    def reset(self):
        self.longest, self.pings = 0.0, 0

    def stop(self):
        self.running = False
        self.join()
        self.connection.close()


class Drain(threading.Thread):
    """Reads a subscriber connection to the end, counting notification lines and bytes (kvod's output limits would
    close a subscriber that does not read)."""

    def __init__(self, sock):
        super().__init__(daemon=True)
        self.sock = sock
        self.notifications = 0
        self.bytes = 0
        self.responses = 0
        self.last = time.monotonic()
        self.lock = threading.Lock()

    def run(self):
        partial = b""
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                return
            if not data:
                return
            lines = (partial + data).split(b"\n")
            partial = lines.pop()
            with self.lock:
                self.bytes += len(data)
                self.last = time.monotonic()
                for line in lines:
                    if line.startswith(b'{"jsonrpc":"2.0","method":"change"'):
                        self.notifications += 1
                    elif b'"result"' in line or b'"error"' in line:
                        if b'"error"' in line:
                            print(f"queries.py: subscribe failed: {line[:300]!r}", file=sys.stderr)
                        self.responses += 1

    def counts(self):
        with self.lock:
            return self.notifications, self.bytes

    def quiet(self, seconds=0.3, limit=120):
        """Waits until nothing arrived for `seconds` (kvod wrote everything it had queued)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            with self.lock:
                if time.monotonic() - self.last >= seconds:
                    return
            time.sleep(0.05)


def load(connection, size, teams, rng):
    """`players`: `size` open objects, team i % teams, in insert batches under the line limit; ids 1..size."""
    batch, batch_bytes, requests = [], 0, 0
    for i in range(size):
        element = {"team": i % teams, "score": rng.randrange(1_000_000), "name": f"p{i}"}
        batch.append(element)
        batch_bytes += 48
        if batch_bytes >= BATCH_BYTES:
            connection.call("insert", {"path": "players", "values": batch})
            batch, batch_bytes, requests = [], 0, requests + 1
    if batch:
        connection.call("insert", {"path": "players", "values": batch})
    last = connection.call("get", {"path": "players", "offset": size - 1, "limit": 1})
    if last["count"] != size or last["value"][0].get("$id") != size:
        sys.exit(f"queries.py: expected ids 1..{size}, the last element is {last['value']}")


def stream(rng, size, teams, count, team_of):
    """`count` sets of score or team of random elements, and the number of queries `team == K` each affects."""
    requests, affected = [], 0
    for _ in range(count):
        element = rng.randrange(1, size + 1)
        if rng.random() < 0.5:
            requests.append(("set", {"path": f"${element}.score", "value": rng.randrange(1_000_000)}))
            affected += 1
        else:
            team = rng.randrange(teams)
            requests.append(("set", {"path": f"${element}.team", "value": team}))
            affected += 1 if team == team_of[element] else 2
            team_of[element] = team
    return requests, affected


def query(team, rerun=False):
    where = f"team == {team} AND TRUEPREDICATE" if rerun else f"team == {team}"
    return {"where": where, "orderBy": ["-score"], "limit": 20}


def profiled(pid, output):
    """`perf record` of kvod (call graphs, user space) until stopped; None without --profile."""
    if output is None:
        return None
    return subprocess.Popen(["perf", "record", "-q", "-F", "499", "-g", "--user-callchains", "-e", "cpu-clock:u",
                             "-p", str(pid), "-o", output], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_profile(recorder):
    if recorder is not None:
        recorder.send_signal(2)
        recorder.wait(timeout=60)


def measure(binary, size, queries, mutations, seed, profile=None):
    rng = random.Random(seed)
    teams = max(1, min(1000, queries))
    kvod = Kvod(binary)
    try:
        writer = Connection(kvod.port)
        started = time.monotonic()
        load(writer, size, teams, rng)
        load_seconds = time.monotonic() - started
        team_of = [0] + [i % teams for i in range(size)]
        # Mirroring the whole relationship instead: a subscription to players.score (or players.team) is told each
        # element change as a setting of the whole array of n values.
        mirror_bytes = sum(len(json.dumps(writer.call("get", {"path": f"players.{key}"})["value"],
                                          separators=(",", ":"))) for key in ("score", "team")) / 2

        # 1. The base: the stream with nobody subscribed.
        requests, _ = stream(rng, size, teams, mutations, team_of)
        before = cpu_seconds(kvod.pid)
        writer.pipeline(requests)
        base = (cpu_seconds(kvod.pid) - before) / mutations

        # 2. The live queries.
        subscriber = socket.create_connection(("127.0.0.1", kvod.port), timeout=600)
        drain = Drain(subscriber)
        drain.start()
        rss_before = rss_bytes(kvod.pid)
        recorder = profiled(kvod.pid, profile and f"{profile}/perf-subscribe-{size}.data")
        pinger = Pinger(kvod.port)
        pinger.start()
        cpu_before = cpu_seconds(kvod.pid)
        started = time.monotonic()
        lines = [json.dumps({"jsonrpc": "2.0", "id": k + 1, "method": "subscribe",
                             "params": {"path": "players", "options": ["new"], "query": query(k)}},
                            separators=(",", ":")).encode() + b"\n" for k in range(queries)]
        # Each subscribe fills its query from the whole collection (seconds at N=1M), and kvod answers the requests
        # of one read together: 16 at a time, each batch allowed 30 minutes.
        for start in range(0, len(lines), 16):
            subscriber.sendall(b"".join(lines[start:start + 16]))
            wanted, deadline = min(start + 16, queries), time.monotonic() + 1800
            while drain.responses < wanted and time.monotonic() < deadline:
                time.sleep(0.005)
            if drain.responses < wanted:
                sys.exit(f"queries.py: {drain.responses} of {queries} subscriptions answered after 30 minutes")
        subscribe_seconds = time.monotonic() - started
        subscribe_cpu = cpu_seconds(kvod.pid) - cpu_before
        subscribe_ping = pinger.longest
        stop_profile(recorder)
        time.sleep(0.2)
        rss_after = rss_bytes(kvod.pid)

        # 2b. One more query of each costly kind, subscribed alone beside the pinger (and dropped): an unindexed one
        # in the existing order (every element evaluated) and a keyed one in a new order (every element sorted).
        # kvod answers them over several loop turns: the pinger's longest wait is the loop's longest hold.
        pinger.reset()
        time.sleep(1.0)
        extra = {"idle_ping_max_ms": pinger.longest * 1e3}  # the floor: the pinger's longest wait with nothing to do
        for name, extra_query in (("unindexed", {"where": "score > 500000", "orderBy": ["-score"], "limit": 20}),
                                  ("new_order", {"where": "team == 1", "orderBy": ["name"], "limit": 20}),
                                  ("own_order", {"where": "score > 500000", "limit": 20})):
            connection = Connection(kvod.port)
            pinger.reset()
            started = time.monotonic()
            connection.call("subscribe", {"path": "players", "options": ["initial", "new"], "query": extra_query})
            extra[f"{name}_subscribe_ms"] = (time.monotonic() - started) * 1e3
            extra[f"{name}_ping_max_ms"] = pinger.longest * 1e3
            pinger.reset()
            connection.close()
            time.sleep(0.5)  # its subscription ends with the connection, and what only it used is dropped
            extra[f"{name}_drop_ping_max_ms"] = pinger.longest * 1e3
        pinger.stop()

        # 3. The stream again, observed.
        requests, affected = stream(rng, size, teams, mutations, team_of)
        notifications_before, bytes_before = drain.counts()
        recorder = profiled(kvod.pid, profile and f"{profile}/perf-{size}.data")
        before = cpu_seconds(kvod.pid)
        writer.pipeline(requests)
        drain.quiet()
        stop_profile(recorder)
        with_queries = (cpu_seconds(kvod.pid) - before) / mutations
        notifications, received = drain.counts()
        notifications -= notifications_before
        received -= bytes_before

        # 4. Naive: a get with the same query run anew (a predicate no live query has: a live query would answer it
        # in O(log n)), times the queries each mutation affects.
        gets = max(20, min(4000, 40_000_000 // max(size, 1)))
        requests = [("get", {"path": "players", "query": query(rng.randrange(teams), rerun=True)}) for _ in range(gets)]
        before = cpu_seconds(kvod.pid)
        writer.pipeline(requests, depth=16)
        per_get = (cpu_seconds(kvod.pid) - before) / gets

        writer.close()
        subscriber.close()
        incremental = max(with_queries - base, 0.0)
        naive = per_get * affected / mutations
        return {
            "size": size, "queries": queries, "mutations": mutations, "teams": teams,
            "load_seconds": round(load_seconds, 2),
            "base_us_per_set": base * 1e6, "with_queries_us_per_set": with_queries * 1e6,
            "queries_us_per_set": incremental * 1e6,
            "notifications": notifications,
            "queries_us_per_notification": incremental * mutations / notifications * 1e6 if notifications else None,
            "subscriber_bytes_per_set": received / mutations, "mirror_bytes_per_set": mirror_bytes,
            "affected_per_set": affected / mutations,
            "get_us": per_get * 1e6, "naive_us_per_set": naive * 1e6,
            "naive_ratio": naive / incremental if incremental > 0 else None,
            "subscribe_seconds": round(subscribe_seconds, 2), "subscribe_cpu_ms_per_query": subscribe_cpu / queries * 1e3,
            "rss_bytes_per_query": (rss_after - rss_before) / queries,
            "subscribe_ping_max_ms": subscribe_ping * 1e3, **extra,
        }
    finally:
        kvod.stop()


def number(value, digits=1):
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def table(rows):
    header = ["N", "base µs/set", "with Q µs/set", "queries µs/set", "notif/set", "µs/notif", "bytes/set",
              "mirror bytes/set",
              "get µs", "naive µs/set", "naive ÷ incr.", "RSS B/query", "subscribe ms/query"]
    body = [[f"{row['size']:,}", number(row["base_us_per_set"]), number(row["with_queries_us_per_set"]),
             number(row["queries_us_per_set"]), number(row["notifications"] / row["mutations"], 2),
             number(row["queries_us_per_notification"]), number(row["subscriber_bytes_per_set"], 0),
             number(row.get("mirror_bytes_per_set"), 0),
             number(row["get_us"]), number(row["naive_us_per_set"]), number(row["naive_ratio"]),
             number(row["rss_bytes_per_query"], 0), number(row["subscribe_cpu_ms_per_query"], 2)] for row in rows]
    widths = [max(len(line[k]) for line in [header] + body) for k in range(len(header))]
    for line in [header] + body:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))
    # Subscribing: how long each took, and the longest the loop was held meanwhile (a pinger's longest wait).
    print()
    header = ["N", "idle: ping max ms", "Q subscribed: ping max ms"]
    for kind in ("unindexed", "new order", "own order"):
        header += [f"{kind}: subscribe ms", "ping max ms", "dropped: ping max ms"]
    body = []
    for row in rows:
        line = [f"{row['size']:,}", number(row.get("idle_ping_max_ms")), number(row.get("subscribe_ping_max_ms"))]
        for kind in ("unindexed", "new_order", "own_order"):
            line += [number(row.get(f"{kind}_subscribe_ms")), number(row.get(f"{kind}_ping_max_ms")),
                     number(row.get(f"{kind}_drop_ping_max_ms"))]
        body.append(line)
    widths = [max(len(line[k]) for line in [header] + body) for k in range(len(header))]
    for line in [header] + body:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kvod", default=os.path.join(ROOT, ".build", "release", "kvod"))
    parser.add_argument("--sizes")
    parser.add_argument("--queries", type=int)
    parser.add_argument("--mutations", type=int)
    parser.add_argument("--seed", type=int, default=24)
    parser.add_argument("--json")
    parser.add_argument("--profile", metavar="DIR", help="perf record kvod during each observed stream into DIR")
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.sizes.split(",")] if arguments.sizes else \
        ([2_000, 20_000] if arguments.quick else [10_000, 100_000, 1_000_000])
    queries = arguments.queries or (100 if arguments.quick else 1000)
    mutations = arguments.mutations or (5_000 if arguments.quick else 40_000)
    default = parser.get_default("kvod")
    if not os.path.exists(arguments.kvod) and arguments.kvod == default:
        subprocess.run(["swift", "build", "-c", "release", "--product", "kvod"], cwd=ROOT, check=True)
    if not os.path.exists(arguments.kvod):
        sys.exit(f"queries.py: no kvod at {arguments.kvod}")
    print(f"queries.py: {queries} live queries (team == K, orderBy -score, limit 20), {mutations:,} sets of score or "
          f"team per stream, kvod {arguments.kvod}")
    rows = []
    for size in sizes:
        if arguments.profile:
            os.makedirs(arguments.profile, exist_ok=True)
        row = measure(arguments.kvod, size, queries, mutations, arguments.seed, arguments.profile)
        print(f"  N={size:,}: loaded in {row['load_seconds']} s, {queries} queries subscribed in "
              f"{row['subscribe_seconds']} s, {row['notifications']:,} notifications", flush=True)
        print("  " + json.dumps(row), flush=True)
        rows.append(row)
        if arguments.json:
            with open(arguments.json, "a") as out:
                out.write(json.dumps(row) + "\n")
    print()
    table(rows)
    if len(rows) > 1 and rows[0]["queries_us_per_set"] > 0:
        growth = rows[-1]["queries_us_per_set"] / rows[0]["queries_us_per_set"]
        print(f"\nthe live queries' CPU per set grows {growth:.2f}x from N={rows[0]['size']:,} to "
              f"N={rows[-1]['size']:,} (goal: at most 2x)")


if __name__ == "__main__":
    main()
