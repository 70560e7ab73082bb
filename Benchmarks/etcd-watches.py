#!/usr/bin/env python3
"""etcd's memory per watch over gRPC (issue 28): N watches of one key multiplexed on one gRPC watch stream (what
etcd's own watch-memory benchmark measures), beside connections.py's one watch per gateway connection.

Starts a one-member etcd on free ports (CPU 0, GOMAXPROCS=1, data on /dev/shm), reads its VmRSS, creates N watches
with the python-etcd3 client (each waits for its `created`), reads VmRSS again, then puts the key once and times
the first, median and last of the N callbacks. Needs grpcio and etcd3, which are not in the standard library:

  python3 -m venv /tmp/etcd3 && /tmp/etcd3/bin/pip install grpcio etcd3 'protobuf<4'
  /tmp/etcd3/bin/python Benchmarks/etcd-watches.py [--count 100000] [--json]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

try:
    import etcd3
except ImportError:
    sys.exit("etcd-watches.py needs grpcio and etcd3 (see --help)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not shutil.which("etcd"):
        sys.exit("etcd is missing (apt-get install etcd-server)")
    port, peer = free_port(), free_port()
    data = tempfile.mkdtemp(prefix="kvod-etcd-watches.", dir="/dev/shm")
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") and (os.cpu_count() or 1) >= 2 else []
    log = open(os.path.join(data, "etcd.log"), "w")
    server = subprocess.Popen(
        pin + ["etcd", "--name", "w", "--data-dir", os.path.join(data, "d"),
               "--listen-client-urls", f"http://127.0.0.1:{port}", "--advertise-client-urls", f"http://127.0.0.1:{port}",
               "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
               "--initial-cluster", f"w=http://127.0.0.1:{peer}"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, GOMAXPROCS="1"), stdin=subprocess.DEVNULL)
    if pin:
        os.sched_setaffinity(0, {1})
    result = {"server": "etcd", "api": "grpc", "watches": args.count, "connections": 1}
    try:
        client = etcd3.client(host="127.0.0.1", port=port, timeout=10)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.put("k", "0")
                break
            except Exception:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        time.sleep(1)
        before = rss_kib(server.pid)
        received = []
        lock = threading.Lock()

        def on_event(response):
            at = time.monotonic_ns()
            with lock:
                received.append(at)

        start = time.monotonic()
        for _ in range(args.count):
            client.add_watch_callback("k", on_event)
        result["watches_per_s"] = round(args.count / (time.monotonic() - start))
        time.sleep(2)
        after = rss_kib(server.pid)
        result["rss_before_kib"] = before
        result["rss_after_kib"] = after
        result["bytes_per_watch"] = round((after - before) * 1024 / args.count)
        sent = time.monotonic_ns()
        client.put("k", "1")
        deadline = time.monotonic() + 60
        while len(received) < args.count and time.monotonic() < deadline:
            time.sleep(0.01)
        times = sorted(t - sent for t in received)
        result["delivered"] = len(times)
        if times:
            result["first_ms"] = round(times[0] / 1e6, 2)
            result["median_ms"] = round(times[len(times) // 2] / 1e6, 2)
            result["last_ms"] = round(times[-1] / 1e6, 2)
        result["ok"] = len(times) == args.count
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        shutil.rmtree(data, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"etcd over gRPC: {args.count:,} watches on one stream: {result['bytes_per_watch']} B each "
              f"(VmRSS {result['rss_before_kib']} -> {result['rss_after_kib']} KiB, {result['watches_per_s']} watches/s); "
              f"one put: first {result.get('first_ms')} ms, median {result.get('median_ms')} ms, "
              f"last {result.get('last_ms')} ms, {result['delivered']:,} of {args.count:,} delivered")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
