#!/usr/bin/env python3
"""Resident memory per object and per short string key, kvod beside Redis (issue 10's memory targets).

Starts kvod (release, --empty) and redis-server on loopback, each fresh, and measures VmRSS before and after loading
N objects `{"name":"object I","n":I,"tags":["a","b"]}` under keys `oI` of kvod's open root (Redis: HSET oI name ...
n ... tags a,b), then, on fresh servers, N short string keys `kI` = `"vI"` (Redis: SET). Loads are pipelined; the
figure is (RSS after - RSS before) / N. Run it on a quiet machine and compare the two columns, not absolute figures.

    python3 Benchmarks/memory.py [--kvod .build-bench/release/kvod] [--count 200000] [--no-redis] [--json FILE]
"""

import argparse
import json
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def wait_for_port(port, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"nothing listens on {port}")


def pipeline(port, lines, reply_end):
    """Sends `lines` (bytes, each complete) 256 at a time and reads as many replies (each ending with `reply_end`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        for start in range(0, len(lines), 256):
            chunk = lines[start:start + 256]
            sock.sendall(b"".join(chunk))
            pending = len(chunk)
            buffer = b""
            while pending:
                data = sock.recv(1 << 16)
                if not data:
                    sys.exit("the server closed the connection")
                buffer += data
                count = buffer.count(reply_end)
                if b'"error"' in buffer or buffer.startswith(b"-ERR"):
                    sys.exit(f"an error: {buffer[:200]!r}")
                pending -= count
                buffer = buffer[buffer.rfind(reply_end) + len(reply_end):] if count else buffer


def measure(start, load):
    process, port = start()
    try:
        wait_for_port(port)
        time.sleep(0.3)
        before = rss_kib(process.pid)
        load(port)
        time.sleep(0.3)
        after = rss_kib(process.pid)
        return (after - before) * 1024
    finally:
        process.terminate()
        process.wait(timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kvod", default=".build-bench/release/kvod")
    parser.add_argument("--count", type=int, default=200000)
    parser.add_argument("--no-redis", action="store_true")
    parser.add_argument("--json", help="also write the figures to FILE as one JSON object (bytes per item)")
    args = parser.parse_args()
    n = args.count

    def kvod():
        port = free_port()
        process = subprocess.Popen([args.kvod, "--empty", "--port", str(port), "--log-level", "error"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return process, port

    def redis():
        port = free_port()
        process = subprocess.Popen(["redis-server", "--port", str(port), "--save", "", "--appendonly", "no"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return process, port

    def request(i, params):
        return b'{"jsonrpc":"2.0","id":%d,"method":"set","params":%s}\n' % (i, params)

    kvod_objects = [request(i, b'{"path":"o%d","value":{"name":"object %d","n":%d,"tags":["a","b"]}}' % (i, i, i))
                    for i in range(n)]
    kvod_strings = [request(i, b'{"path":"k%d","value":"v%d"}' % (i, i)) for i in range(n)]

    def resp(*parts):
        return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)

    redis_objects = [resp(b"HSET", b"o%d" % i, b"name", b"object %d" % i, b"n", b"%d" % i, b"tags", b"a,b")
                     for i in range(n)]
    redis_strings = [resp(b"SET", b"k%d" % i, b"v%d" % i) for i in range(n)]

    rows = [("per object", measure(kvod, lambda port: pipeline(port, kvod_objects, b"\n")) / n)]
    rows.append(("per short string key", measure(kvod, lambda port: pipeline(port, kvod_strings, b"\n")) / n))
    with_redis = not args.no_redis and shutil.which("redis-server")
    if with_redis:
        redis_rows = [measure(redis, lambda port: pipeline(port, redis_objects, b"\r\n")) / n,
                      measure(redis, lambda port: pipeline(port, redis_strings, b"\r\n")) / n]
    print(f"resident memory, {n:,} items (VmRSS delta / items)")
    print(f"  {'':22} {'kvod':>8} {'redis':>8} {'kvod/redis':>10}")
    for index, (name, kvod_bytes) in enumerate(rows):
        if with_redis:
            ratio = kvod_bytes / redis_rows[index]
            print(f"  {name:22} {kvod_bytes:7.0f}B {redis_rows[index]:7.0f}B {ratio:9.2f}x")
        else:
            print(f"  {name:22} {kvod_bytes:7.0f}B")
    if args.json:
        figures = {"count": n, "kvod_per_object": round(rows[0][1]), "kvod_per_key": round(rows[1][1])}
        if with_redis:
            figures.update(redis_per_object=round(redis_rows[0]), redis_per_key=round(redis_rows[1]))
        with open(args.json, "w") as output:
            json.dump(figures, output)


if __name__ == "__main__":
    main()
