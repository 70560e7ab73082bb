#!/usr/bin/env python3
"""Instructions per plain `set` nobody observes (issue 10's "cheap set" target: at most 5,000).

kvod (a release build) runs under callgrind twice on an empty open root: once for SETS sets and once for SETS/10,
each over one connection with 16 requests in flight (`{"jsonrpc":"2.0","id":N,"method":"set","params":{"path":
"bench.value","value":N}}`, as Benchmarks/compare.sh sends); the difference divided by the difference in sets is the
cost of one set with start-up, connection and shutdown subtracted. callgrind counts instructions, not time, so the
figure repeats exactly for the same binary whatever else the machine does.

With --journal-in DIR (e.g. /dev/shm) each kvod keeps a fresh data directory under DIR (--fsync, default no;
--snapshot-every passed on when given): the cost of a set with its journal record, in kvod's loop (callgrind follows
the snapshot processes kvod forks into files of their own, which hold what the parent ran before the fork too: they
are counted, not added).
    python3 Benchmarks/set-instructions.py [--kvod .build-bench/release/kvod] [--sets 20000] [--path bench.value]
                                           [--journal-in DIR [--fsync no|everysec|always] [--snapshot-every N]]
                                           [--keep DIR] [--json FILE]
"""

import argparse
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run(kvod, sets, path, out_dir, label, durability=()):
    out = os.path.join(out_dir, f"callgrind.{label}.out")
    port = free_port()
    process = subprocess.Popen(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}.%p", kvod, "--empty", "--host", "127.0.0.1",
         "--port", str(port), "--log-level", "error", *durability],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        seen = b""
        while b"kvod listening" not in seen:
            if time.monotonic() > deadline:
                sys.exit(f"kvod did not start under callgrind: {seen!r}")
            ready, _, _ = select.select([process.stdout], [], [], 1)
            if ready:
                chunk = os.read(process.stdout.fileno(), 4096)
                if not chunk:
                    sys.exit(f"kvod exited: {seen!r}")
                seen += chunk
        with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
            in_flight, sent, answered, pending = 16, 0, 0, b""
            while answered < sets:
                batch = b""
                while sent < sets and sent - answered < in_flight:
                    sent += 1
                    batch += (b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"%s","value":%d}}\n'
                              % (sent, path.encode(), sent))
                if batch:
                    sock.sendall(batch)
                chunk = sock.recv(1 << 16)
                if not chunk:
                    sys.exit("kvod closed the connection")
                pending += chunk
                lines = pending.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if b'"error"' in line:
                        sys.exit(f"a set failed: {line!r}")
                answered += len(lines)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    main_file = f"{out}.{process.pid}"
    totals = {}
    for name in os.listdir(out_dir):
        if name.startswith(os.path.basename(out) + "."):
            with open(os.path.join(out_dir, name)) as profile:
                for line in profile:
                    match = re.match(r"(?:summary|totals):\s+(\d+)", line)
                    if match:
                        totals[os.path.join(out_dir, name)] = int(match.group(1))
                        break
    if main_file not in totals:
        sys.exit(f"no totals in {main_file}")
    return totals[main_file], len(totals) - 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kvod", default=".build-bench/release/kvod")
    parser.add_argument("--sets", type=int, default=20000)
    parser.add_argument("--path", default="bench.value")
    parser.add_argument("--journal-in", help="keep a fresh data directory under this directory (e.g. /dev/shm)")
    parser.add_argument("--fsync", default="no", choices=["no", "everysec", "always"])
    parser.add_argument("--snapshot-every", type=int)
    parser.add_argument("--keep", help="a directory for the callgrind files (default: a temporary one)")
    parser.add_argument("--json", help="also write the figures to FILE as one JSON object")
    args = parser.parse_args()
    out_dir = args.keep or tempfile.mkdtemp(prefix="kvod-set-instructions-")
    os.makedirs(out_dir, exist_ok=True)
    small = max(1, args.sets // 10)
    durability = {}
    if args.journal_in:
        for label in ("big", "small"):
            directory = tempfile.mkdtemp(prefix="kvod-set-instructions-", dir=args.journal_in)
            durability[label] = ["--data-dir", directory, "--fsync", args.fsync]
            if args.snapshot_every is not None:
                durability[label] += ["--snapshot-every", str(args.snapshot_every)]
    try:
        big_total, big_forks = run(args.kvod, args.sets, args.path, out_dir, "big", durability.get("big", ()))
        small_total, small_forks = run(
            args.kvod, small, args.path, out_dir, "small", durability.get("small", ()))
    finally:
        for arguments in durability.values():
            shutil.rmtree(arguments[1], ignore_errors=True)
    per_set = (big_total - small_total) / (args.sets - small)
    where = f"journal in {args.journal_in}, --fsync {args.fsync}" if args.journal_in else "in memory"
    print(f"kvod instructions per plain set, nobody observing, 16 in flight, {where}: {per_set:,.0f} Ir "
          f"({args.sets:,} sets {big_total:,} Ir minus {small:,} sets {small_total:,} Ir; target <= 5,000)")
    if big_forks or small_forks:
        print(f"snapshot processes forked meanwhile: {big_forks} and {small_forks} (not counted above)")
    print(f"callgrind files: {out_dir}")
    if args.json:
        with open(args.json, "w") as output:
            json.dump({"sets": args.sets, "small_sets": small, "ir": big_total, "small_ir": small_total,
                       "per_set": round(per_set), "journal_in": args.journal_in, "snapshots": big_forks}, output)


if __name__ == "__main__":
    main()
