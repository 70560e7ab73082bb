#!/usr/bin/env python3
"""What the client libraries cost: round trips/s (sequential `set`, one in flight) and notifications/s received by
one subscriber, for a raw Python socket, the Python client (blocking and asyncio, over TCP and WebSocket) and the
TypeScript client in Node (TCP, and WebSocket with --experimental-websocket), all against the same kvod, each with
its ratio to the raw socket. Benchmarks/README.md and docs/PERFORMANCE.md#websocket-and-the-client-libraries.

    python3 Benchmarks/clients.py [--quick] [--rounds 3] [--seconds 2] [--notifications 50000] [--only raw,node]
                                  [--kvod PATH] [--no-pin] [--markdown] [--json FILE]
    python3 Benchmarks/clients.py --summarize FILE... [--markdown]     (the table of earlier --json runs together)

kvod and this harness share CPU 0; each client runs alone on CPU 1 (when the machine has two). Round trips: the
client sends `set` and waits for the response, for --seconds after a short warm-up. Notifications: the client
subscribes to one key, then this harness (a raw socket, 512 sets per write, up to 4096 in flight) sends
--notifications sets of it; the client's rate is measured from the first notification it hands to the application to
the last, and it checks that the seqs follow one another with none missing. Each figure comes with the client
process's CPU time per round trip or notification (all its threads), which other load on the machine disturbs far
less than the rates. Clients are alternated, in reverse order
on even rounds, and the medians are printed. Standard library only (the WebSocket rows need the `websockets`
package, as the Python client's extra does, and are skipped without it); everything on 127.0.0.1, stopped at exit.
"""

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RTT_KEY = "clientsRoundTrip"
NOTIFY_KEY = "clientsNotify"

# name: (how the worker runs, transport); the raw socket is the baseline.
CLIENTS = {
    "raw": ("python", "tcp"),
    "python": ("python", "tcp"),
    "python-asyncio": ("python", "tcp"),
    "python/ws": ("python", "websocket"),
    "python-asyncio/ws": ("python", "websocket"),
    "node": ("node", "tcp"),
    "node/ws": ("node", "websocket"),
}


def log(message):
    print(time.strftime("%H:%M:%S"), message, file=sys.stderr, flush=True)


# MARK: - Workers (one process per measurement, on CPU 1)

def raw_round_trips(address, seconds):
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    buffer = b""
    count = 0
    warmup_end = time.perf_counter() + 0.3
    start = end = None
    cpu_start = 0.0
    while True:
        now = time.perf_counter()
        if start is None and now >= warmup_end:
            start, count, cpu_start = now, 0, time.process_time()
        elif start is not None and now - start >= seconds:
            end = now
            break
        request = {"jsonrpc": "2.0", "id": count + 1, "method": "set", "params": {"path": RTT_KEY, "value": count}}
        sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
        while b"\n" not in buffer:
            data = sock.recv(65536)
            if not data:
                raise RuntimeError("kvod closed the connection")
            buffer += data
        line, buffer = buffer.split(b"\n", 1)
        response = json.loads(line)
        if "result" not in response:
            raise RuntimeError(f"error response {line!r}")
        count += 1
    cpu = time.process_time() - cpu_start
    sock.close()
    return count / (end - start), cpu / count * 1e6


def raw_notifications(address, count):
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    request = {"jsonrpc": "2.0", "id": 1, "method": "subscribe", "params": {"path": NOTIFY_KEY, "options": ["new"]}}
    sock.sendall(json.dumps(request, separators=(",", ":")).encode() + b"\n")
    buffer = b""
    while b"\n" not in buffer:
        buffer += sock.recv(65536)
    line, buffer = buffer.split(b"\n", 1)
    next_seq = json.loads(line)["result"]["seq"] + 1
    print("ready", flush=True)
    received = 0
    first = last = 0.0
    cpu_first = 0.0
    while received < count:
        data = sock.recv(1 << 16)
        if not data:
            raise RuntimeError("kvod closed the connection")
        lines = (buffer + data).split(b"\n")
        buffer = lines.pop()
        for line in lines:
            message = json.loads(line)
            if message.get("method") != "change":
                raise RuntimeError(f"unexpected message {line[:200]!r}")
            seq = message["params"]["seq"]
            if seq != next_seq:
                raise RuntimeError(f"seq {seq}, expected {next_seq}")
            next_seq = seq + 1
            received += 1
            if received == 1:
                first, cpu_first = time.perf_counter(), time.process_time()
        last = time.perf_counter()
    cpu = time.process_time() - cpu_first
    sock.close()
    return (received - 1) / (last - first), cpu / (received - 1) * 1e6, received


def client_round_trips(address, transport, seconds):
    import kvod
    with kvod.Client(address, transport=transport, reconnect=False) as client:
        return timed_loop(lambda value: client.set(RTT_KEY, value), seconds)


def client_notifications(address, transport, count):
    import kvod
    with kvod.Client(address, transport=transport, reconnect=False) as client:
        subscription = client.subscribe(NOTIFY_KEY, ["new"])
        print("ready", flush=True)
        checker = SeqChecker()
        for change in subscription:
            if checker.received(change.seq) == count:
                break
        return checker.result()


def asyncio_round_trips(address, transport, seconds):
    import kvod.aio

    async def main():
        client = await kvod.aio.connect(address, transport=transport, reconnect=False)
        try:
            warmup_end = time.perf_counter() + 0.3
            value = 0
            while time.perf_counter() < warmup_end:
                await client.set(RTT_KEY, value)
                value += 1
            start, cpu_start = time.perf_counter(), time.process_time()
            done = 0
            while time.perf_counter() - start < seconds:
                await client.set(RTT_KEY, done)
                done += 1
            cpu = time.process_time() - cpu_start
            return done / (time.perf_counter() - start), cpu / done * 1e6
        finally:
            await client.close()
    return asyncio.run(main())


def asyncio_notifications(address, transport, count):
    import kvod.aio

    async def main():
        client = await kvod.aio.connect(address, transport=transport, reconnect=False)
        try:
            subscription = await client.subscribe(NOTIFY_KEY, ["new"])
            print("ready", flush=True)
            checker = SeqChecker()
            async for change in subscription:
                if checker.received(change.seq) == count:
                    break
            return checker.result()
        finally:
            await client.close()
    return asyncio.run(main())


def timed_loop(call, seconds):
    warmup_end = time.perf_counter() + 0.3
    value = 0
    while time.perf_counter() < warmup_end:
        call(value)
        value += 1
    start, cpu_start = time.perf_counter(), time.process_time()
    done = 0
    while time.perf_counter() - start < seconds:
        call(done)
        done += 1
    cpu = time.process_time() - cpu_start
    return done / (time.perf_counter() - start), cpu / done * 1e6


class SeqChecker:
    """Counts notifications, checks that their seqs follow one another and times the first to the last (wall clock
    and this process's CPU time, all threads)."""

    def __init__(self):
        self.count = 0
        self.next_seq = None
        self.first = self.last = 0.0
        self.cpu_first = self.cpu_last = 0.0

    def received(self, seq):
        if self.next_seq is not None and seq != self.next_seq:
            raise RuntimeError(f"seq {seq}, expected {self.next_seq}")
        self.next_seq = seq + 1
        self.count += 1
        self.last = time.perf_counter()
        if self.count == 1:
            self.first, self.cpu_first = self.last, time.process_time()
        return self.count

    def result(self):
        cpu = time.process_time() - self.cpu_first
        return (self.count - 1) / (self.last - self.first), cpu / (self.count - 1) * 1e6, self.count


def run_worker(args):
    sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
    _, transport = CLIENTS[args.worker]
    kind = args.worker.split("/")[0]
    if args.mode == "rtt":
        rate, cpu = {"raw": lambda: raw_round_trips(args.address, args.seconds),
                     "python": lambda: client_round_trips(args.address, transport, args.seconds),
                     "python-asyncio": lambda: asyncio_round_trips(args.address, transport, args.seconds)}[kind]()
        print(json.dumps({"rate": rate, "cpu_us": cpu}), flush=True)
    else:
        rate, cpu, received = {
            "raw": lambda: raw_notifications(args.address, args.count),
            "python": lambda: client_notifications(args.address, transport, args.count),
            "python-asyncio": lambda: asyncio_notifications(args.address, transport, args.count)}[kind]()
        print(json.dumps({"rate": rate, "cpu_us": cpu, "received": received}), flush=True)


# MARK: - The harness (with kvod, on CPU 0)

def pin(cpu, enabled):
    if enabled and hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
        return lambda: os.sched_setaffinity(0, {cpu})
    return None


def start_kvod(binary, pinned):
    process = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", "0", "--log-level", "warning"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=pin(0, pinned))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("kvod listening on "):
            return process, line.strip().rsplit(" ", 1)[1]
        if not line and process.poll() is not None:
            raise SystemExit(f"kvod exited at start: {process.stderr.read()}")
    process.kill()
    raise SystemExit("kvod did not announce its port within 20 s")


def worker_command(name, mode, address, args):
    runner, transport = CLIENTS[name]
    if runner == "node":
        return ["node", "--experimental-websocket", "--no-warnings", os.path.join(HERE, "clients-node.mjs"), mode,
                address, transport, str(args.seconds), str(args.notifications), RTT_KEY, NOTIFY_KEY]
    return [sys.executable, os.path.abspath(__file__), "--worker", name, "--mode", mode, "--address", address,
            "--seconds", str(args.seconds), "--count", str(args.notifications)]


def produce(address, count):
    """Sends `count` sets of NOTIFY_KEY, 512 per write with at most 4096 unanswered; returns sets/s."""
    host, port = address.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    prefix = b'{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"' + NOTIFY_KEY.encode() + b'","value":'
    sent = acknowledged = 0
    start = time.perf_counter()
    while acknowledged < count:
        if sent < count and sent - acknowledged <= 4096 - 512:
            batch = min(512, count - sent)
            sock.sendall(b"".join(prefix + str(sent + i).encode() + b"}}\n" for i in range(batch)))
            sent += batch
            continue
        data = sock.recv(1 << 16)
        if not data:
            raise RuntimeError("kvod closed the producer's connection")
        if b'"error"' in data:
            raise RuntimeError(f"the producer got an error: {data[:300]!r}")
        acknowledged += data.count(b"\n")
    elapsed = time.perf_counter() - start
    sock.close()
    return count / elapsed


def measure(name, mode, address, args):
    """One worker run; returns its result dict (with the producer's rate for notifications), or None on failure."""
    command = worker_command(name, mode, address, args)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=pin(1, not args.no_pin))
    try:
        feed = None
        if mode == "notify":
            line = process.stdout.readline()
            if line.strip() != "ready":
                raise RuntimeError(f"worker not ready: {line!r} {process.stderr.read()[-2000:]}")
            feed = produce(address, args.notifications)
        out, err = process.communicate(timeout=120)
        if process.returncode != 0:
            raise RuntimeError(f"exit {process.returncode}: {err.strip()[-2000:]}")
        result = json.loads(out.strip().splitlines()[-1])
        if mode == "notify":
            if result["received"] != args.notifications:
                raise RuntimeError(f"received {result['received']} of {args.notifications}")
            result["feed"] = feed
        return result
    except Exception as error:  # one failed run is reported and left out of the medians
        process.kill()
        process.wait()
        log(f"FAILED: {name} {mode}: {error}")
        return None


def rate_text(value):
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def table(header, rows, markdown):
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    render = lambda row: "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip()
    return "\n".join([render(header), render(["-" * width for width in widths])] + [render(row) for row in rows])


def report(records, markdown):
    """The table of medians and ratios to the raw socket, from run records (as written by --json)."""
    names = list(dict.fromkeys(record["client"] for record in records))
    results = {name: {"rtt": [], "rtt_cpu": [], "notify": [], "notify_cpu": [], "feed": []} for name in names}
    for record in records:
        entry = results[record["client"]]
        entry[record["mode"]].append(record["rate"])
        entry[record["mode"] + "_cpu"].append(record["cpu_us"])
        if record["mode"] == "notify":
            entry["feed"].append(record["feed"])
    median = lambda values: statistics.median(values) if values else None
    ratio = lambda value, base: f"{value / base:.2f}×" if value and base else "-"
    cpu_text = lambda value: "-" if value is None else f"{value:.1f} µs" if value < 100 else f"{value:.0f} µs"
    keys = ("rtt", "rtt_cpu", "notify", "notify_cpu", "feed")
    raw = {key: median(results.get("raw", {}).get(key, [])) for key in keys}
    rows = []
    for name in sorted(names, key=lambda name: list(CLIENTS).index(name) if name in CLIENTS else len(CLIENTS)):
        rtt, rtt_cpu, notify, notify_cpu, feed = (median(results[name][key]) for key in keys)
        rows.append([name, rate_text(rtt), ratio(rtt, raw["rtt"]), cpu_text(rtt_cpu), ratio(rtt_cpu, raw["rtt_cpu"]),
                     rate_text(notify), ratio(notify, raw["notify"]), cpu_text(notify_cpu),
                     ratio(notify_cpu, raw["notify_cpu"]), rate_text(feed),
                     f"{len(results[name]['rtt'])}/{len(results[name]['notify'])}"])
    legend = ("medians; vs raw: the ratio to a raw Python socket that parses every message with json.loads (rates: "
              "below 1 is slower; CPU: the client process's CPU time per round trip or notification, above 1 is "
              "costlier);\nfeed: the rate at which the harness's sets were acknowledged while the client received\n")
    return legend + table(["client", "round trips/s", "vs raw", "CPU/round trip", "vs raw", "notifications/s",
                           "vs raw", "CPU/notification", "vs raw", "feed sets/s", "runs"], rows, markdown)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round, 1 s of round trips, 20000 notifications")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of all clients (medians over them)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of round trips per run")
    parser.add_argument("--notifications", type=int, default=50000, help="notifications per run")
    parser.add_argument("--only", default="", help="comma-separated clients (default: all): " + ",".join(CLIENTS))
    parser.add_argument("--kvod", default="", help="the kvod binary (default: build the release one, as lib.sh)")
    parser.add_argument("--no-pin", action="store_true", help="do not pin kvod and the clients to CPUs 0 and 1")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", default="", help="also write every run as JSON lines to this file")
    parser.add_argument("--summarize", nargs="+", metavar="FILE",
                        help="measure nothing: print the table of the runs in these --json files together")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--address", help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return run_worker(args)
    if args.summarize:
        records = []
        for path in args.summarize:
            with open(path) as file:
                records.extend(json.loads(line) for line in file if line.strip())
        return print(report(records, args.markdown))
    if args.quick:
        args.rounds, args.seconds, args.notifications = 1, 1.0, 20000
    if not 1 <= args.rounds <= 20 or args.seconds <= 0 or args.notifications < 2:
        parser.error("--rounds must be 1...20, --seconds positive, --notifications at least 2")

    names = [name for name in CLIENTS if not args.only or name in args.only.split(",")]
    if "raw" not in names:
        names.insert(0, "raw")
    try:
        import websockets  # noqa: F401  (only to know whether the Python WebSocket rows can run)
    except ImportError:
        skipped = [name for name in names if name.startswith("python") and name.endswith("/ws")]
        if skipped:
            log(f"skipping {', '.join(skipped)}: the websockets package is missing (pip install websockets)")
        names = [name for name in names if name not in skipped]
    if shutil.which("node") is None:
        log("skipping the Node rows: node is missing")
        names = [name for name in names if CLIENTS[name][0] != "node"]

    binary = args.kvod
    if not binary:
        scratch = os.environ.get("KVOD_BENCH_SCRATCH", os.path.join(ROOT, ".build-bench"))
        log(f"building kvod (release, scratch {scratch})")
        subprocess.run(["swift", "build", "-c", "release", "--scratch-path", scratch, "--product", "kvod"],
                       cwd=ROOT, check=True, stdout=sys.stderr)
        binary = os.path.join(scratch, "release", "kvod")
    pinned = not args.no_pin
    if pinned and pin(0, True):
        os.sched_setaffinity(0, {0})  # this harness (the producer) shares CPU 0 with kvod
    kvod, address = start_kvod(binary, pinned)
    log(f"kvod pid {kvod.pid} at {address}")
    records = []
    failed = False
    try:
        for round_number in range(1, args.rounds + 1):
            order = names if round_number % 2 == 1 else list(reversed(names))
            log(f"round {round_number}/{args.rounds}: {', '.join(order)}")
            for name in order:
                for mode in ("rtt", "notify"):
                    result = measure(name, mode, address, args)
                    if kvod.poll() is not None:
                        raise SystemExit(f"kvod died: {kvod.stderr.read()[-2000:]}")
                    if result is None:
                        failed = True
                        continue
                    records.append({"client": name, "mode": mode, "round": round_number, **result})
    finally:
        kvod.terminate()
        try:
            kvod.wait(timeout=10)
        except subprocess.TimeoutExpired:
            kvod.kill()
    if args.json:
        with open(args.json, "w") as file:
            for record in records:
                file.write(json.dumps(record) + "\n")

    print(f"\nclient libraries against kvod, {os.cpu_count()} CPUs, {args.rounds} round(s), "
          f"{args.seconds:g} s of round trips, {args.notifications} notifications per run, "
          f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}, load average {os.getloadavg()[0]:.1f}")
    print(report(records, args.markdown))
    if failed:
        print("SOME RUNS FAILED (see above); they are left out of the medians", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
