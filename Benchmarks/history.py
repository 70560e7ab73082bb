#!/usr/bin/env python3
"""The subscription history on disk (docs/DURABILITY.md#the-history-on-disk): bytes per retained change and what it
adds to a restart.

A release kvod with `--data-dir` and `--history N` gets P paths subscribed (each by one connection), then C sets
spread over them (small integers, as a counter's), then SIGTERM. The script reports `history.log`'s size and record
count (bytes per retained change), and the time from exec to the `kvod listening` line over R restarts, with the
history and with `history.log` moved aside (everything else the same: snapshot and journal), medians side by side.

    python3 Benchmarks/history.py [--kvod .build-bench/release/kvod] [--paths 100] [--changes 20000]
                                  [--history 10000] [--restarts 5]
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(kvod, directory, history):
    began = time.monotonic()
    process = subprocess.Popen(
        [kvod, "--host", "127.0.0.1", "--port", "0", "--empty", "--data-dir", directory, "--history", str(history),
         "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    while True:
        line = process.stdout.readline()
        match = re.search(r"kvod listening on 127\.0\.0\.1:(\d+)", line)
        if match:
            return process, int(match.group(1)), time.monotonic() - began
        if not line and process.poll() is not None:
            sys.exit("kvod exited at start")


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def request(sock, reader, method, params):
    sock.sendall(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode() + b"\n")
    while True:
        line = json.loads(reader.readline())
        if line.get("id") == 1:
            return line


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kvod", default=os.path.join(REPO, ".build-bench", "release", "kvod"))
    parser.add_argument("--paths", type=int, default=100)
    parser.add_argument("--changes", type=int, default=20000)
    parser.add_argument("--history", type=int, default=10000)
    parser.add_argument("--restarts", type=int, default=5)
    arguments = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="kvod-history-bench-")
    try:
        process, port, _ = start(arguments.kvod, directory, arguments.history)
        subscribers = []
        for index in range(arguments.paths):
            sock = socket.create_connection(("127.0.0.1", port))
            reader = sock.makefile("r")
            request(sock, reader, "subscribe", {"path": f"counters.c{index}", "options": ["new"]})
            subscribers.append(sock)
        writer = socket.create_connection(("127.0.0.1", port))
        batch = b"".join(
            json.dumps({"jsonrpc": "2.0", "id": n, "method": "set",
                        "params": {"path": f"counters.c{n % arguments.paths}", "value": n}}).encode() + b"\n"
            for n in range(1, arguments.changes + 1))
        writer.sendall(batch)
        reader = writer.makefile("r")
        for _ in range(arguments.changes):
            reader.readline()
        for sock in subscribers + [writer]:
            sock.close()
        stop(process)
        history = os.path.join(directory, "history.log")
        size = os.path.getsize(history)
        with open(history) as log:
            kinds = [json.loads(line.split(" ", 1)[1])["method"] for line in log]
        changes = kinds.count("change")
        print(f"history.log after {arguments.changes} sets over {arguments.paths} subscribed paths, --history "
              f"{arguments.history}: {size:,} bytes, {len(kinds)} records ({changes} changes, "
              f"{kinds.count('record')} recorders, {kinds.count('through')} through): "
              f"{size / max(changes, 1):.0f} bytes per retained change")
        with_history, without = [], []
        for _ in range(arguments.restarts):
            process, _, seconds = start(arguments.kvod, directory, arguments.history)
            with_history.append(seconds)
            stop(process)
            shutil.copy(history, history + ".kept")
            os.remove(history)
            process, _, seconds = start(arguments.kvod, directory, arguments.history)
            without.append(seconds)
            stop(process)
            shutil.move(history + ".kept", history)
        print(f"start to listening, median of {arguments.restarts}: {statistics.median(with_history) * 1000:.1f} ms "
              f"with the history ({changes} changes), {statistics.median(without) * 1000:.1f} ms without "
              f"(+{(statistics.median(with_history) - statistics.median(without)) * 1000:.1f} ms)")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
