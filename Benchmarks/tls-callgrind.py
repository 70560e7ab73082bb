#!/usr/bin/env python3
"""What TLS adds to kvod and to Redis, in instructions (issue 25): the exact companion of tls.py's timed runs.

Each server runs under callgrind (instructions counted, so the figures repeat to the instruction from run to run, where
this machine's CPU time wanders by 20 % and more), once per workload and size, plaintext and TLS: kvod (release,
`--tls-cert`) and redis-server (`--port`, `--tls-port`). kvod-bench drives the same fixed workloads through the same
TLS module kvod uses (OpenSSL 3 over memory buffers), so the client side is alike for both:

  fanout M=1    1 subscriber, 1 publisher with 1 mutation in flight: per notification (a request, a response and a
                notification each)
  fanout M=100  100 subscribers, 1 publisher with 16 in flight: per notification

A figure is (instructions of the large run - those of the small run) / (operations more in the large run), so start-up,
the handshakes and the set-up cancel out. Redis runs with `--hz 1`: its cron's work grows with a run's wall-clock time,
which under valgrind would leak into the difference (kvod's 250 ms tick does next to nothing here). For each server
it gives plaintext, TLS, and what TLS adds, split into
  cipher        EVP_EncryptUpdate and EVP_DecryptUpdate (AES-GCM or ChaCha20-Poly1305 over the bytes: grows with them)
  records       the rest of SSL_write and SSL_read (OpenSSL's fixed cost per record: headers, nonces, buffers, BIOs)
  glue          everything else TLS adds (the server's own code around OpenSSL, its allocations)

What the instructions leave out: the kernel (which moves the same bytes either way, plus 22 per TLS record) and the
cache misses. So the TLS/plaintext ratio here is not tls.py's ratio of CPU time; what TLS *adds* is the comparable
part.

    python3 Benchmarks/tls-callgrind.py [--quick] [--no-build] [--out DIR]

About four minutes (--quick: a third of the operations). Everything listens on 127.0.0.1 and is stopped at exit.
"""

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import tls  # Benchmarks/tls.py: certificates, ports, the build, stopping

WORKLOADS = {  # name: (kvod-bench arguments, operations per mutation, large count, small count)
    "fanout M=1": (["fanout", "--subscribers", "1", "--publishers", "1", "--pipeline", "1"], 1, 20_000, 5_000),
    "fanout M=100": (["fanout", "--subscribers", "100", "--publishers", "1", "--pipeline", "16"], 100, 5_000, 1_000),
}
QUICK_COUNTS = {"fanout M=1": (6_000, 2_000), "fanout M=100": (1_500, 500)}
CIPHER = ("EVP_EncryptUpdate", "EVP_DecryptUpdate")
RECORDS = ("SSL_write", "SSL_read")


def inclusive(profile, names):
    """The inclusive instructions of each function in `names` (0 when never called), from callgrind_annotate."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", profile], capture_output=True, text=True,
                          check=True, timeout=300).stdout
    found = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([\d,]+) \([ \d.]+%\)\s+\S*?:(\w+)\b", line)
        if match and "=>" not in line and match.group(2) in names and match.group(2) not in found:
            found[match.group(2)] = int(match.group(1).replace(",", ""))
    return {name: found.get(name, 0) for name in names}


def totals(profile):
    with open(profile) as handle:
        for line in handle:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    tls.die(f"no totals in {profile}")


def wait_port(port, process, log):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tls.die(f"the server under callgrind exited (see {log})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    tls.die(f"the server under callgrind did not listen (see {log})")


def profile_run(server, kvod, bench, path, out, workload, count, secure):
    """One server under callgrind for one workload of `count` mutations; returns the profile's path."""
    name = f"{server}-{'tls' if secure else 'plain'}-{workload.replace(' ', '').replace('=', '')}-{count}"
    profile, log = os.path.join(out, f"callgrind.{name}"), os.path.join(out, f"{name}.log")
    port, tls_port = tls.free_port(), tls.free_port()
    valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}"]
    if server == "kvod":
        command, tls_port = tls.kvod_command(kvod, path, port), port
    else:
        command = tls.redis_command(path, port, tls_port) + ["--hz", "1"]
    with open(log, "w") as output:
        process = subprocess.Popen(valgrind + command, stdout=output, stderr=subprocess.STDOUT)
    tls.started.append(process)
    wait_port(port, process, log)
    arguments, _, _, _ = WORKLOADS[workload]
    run = [bench, *arguments, "--port", str(tls_port if secure else port), "--count", str(count), "--json"]
    if secure:
        run += ["--tls-ca", path("ca.pem")]
    if server == "redis":
        run += ["--target", "redis"]
    result = subprocess.run(run, capture_output=True, text=True, timeout=900)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    if result.returncode != 0:
        tls.die(f"{' '.join(run)} failed: {result.stderr[-2000:]}")
    return profile


def measure(server, kvod, bench, path, out, workload, counts, secure):
    """Instructions per operation of one server, mode and workload, whole and in TLS's parts."""
    _, per_mutation, large, small = WORKLOADS[workload]
    large, small = counts.get(workload, (large, small))
    big = profile_run(server, kvod, bench, path, out, workload, large, secure)
    little = profile_run(server, kvod, bench, path, out, workload, small, secure)
    operations = (large - small) * per_mutation
    parts = {}
    if secure:
        wide, narrow = inclusive(big, CIPHER + RECORDS), inclusive(little, CIPHER + RECORDS)
        parts = {name: (wide[name] - narrow[name]) / operations for name in CIPHER + RECORDS}
    return {"per_op": (totals(big) - totals(little)) / operations, "parts": parts}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller runs (a third of the operations)")
    parser.add_argument("--no-build", action="store_true", help="use the release build already in .build-bench")
    parser.add_argument("--out", help="where the profiles and results go (default: a new temporary directory)")
    arguments = parser.parse_args()
    for tool in ("valgrind", "callgrind_annotate", "redis-server"):
        if not shutil.which(tool):
            tls.die(f"{tool} is needed (apt-get install valgrind redis-server)")
    if not arguments.no_build:
        tls.build()
    kvod = os.path.join(tls.SCRATCH, "release", "kvod")
    bench = os.path.join(tls.SCRATCH, "release", "kvod-bench")
    out = arguments.out or tempfile.mkdtemp(prefix="kvod-tls-callgrind-")
    os.makedirs(out, exist_ok=True)
    path = tls.make_certificates(out)
    counts = QUICK_COUNTS if arguments.quick else {}
    results = {}
    try:
        for workload in WORKLOADS:
            for server in ("kvod", "redis"):
                for secure in (False, True):
                    key = f"{server}{'/tls' if secure else ''}"
                    print(f"tls-callgrind: {workload}, {key} ...", file=sys.stderr, flush=True)
                    results.setdefault(workload, {})[key] = measure(
                        server, kvod, bench, path, out, workload, counts, secure)
    finally:
        tls.stop_all()
    report(results, out)


def report(results, out):
    lines = ["# What TLS adds, in instructions per operation (callgrind; the server's process only)", "",
             "| cell | server | plaintext | TLS | TLS adds | cipher | records | glue | TLS / plaintext |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    summary = {}
    for workload, series in results.items():
        for server in ("kvod", "redis"):
            plain, secure = series[server], series[f"{server}/tls"]
            added = secure["per_op"] - plain["per_op"]
            cipher = sum(secure["parts"][name] for name in CIPHER)
            records = sum(secure["parts"][name] for name in RECORDS) - cipher
            glue = added - cipher - records
            summary.setdefault(workload, {})[server] = {
                "plaintext": round(plain["per_op"]), "tls": round(secure["per_op"]), "adds": round(added),
                "cipher": round(cipher), "records": round(records), "glue": round(glue)}
            lines.append(f"| {workload} | {server} | {plain['per_op']:,.0f} | {secure['per_op']:,.0f} | "
                         f"{added:,.0f} | {cipher:,.0f} | {records:,.0f} | {glue:,.0f} | "
                         f"{secure['per_op'] / plain['per_op']:.2f} |")
        kvod, redis = summary[workload]["kvod"], summary[workload]["redis"]
        summary[workload]["adds_kvod_over_redis"] = round(kvod["adds"] / redis["adds"], 3)
    lines += ["", "TLS adds, kvod / Redis: " + ", ".join(
        f"{workload} {values['adds_kvod_over_redis']:.2f}" for workload, values in summary.items()), "",
        "cipher: EVP_EncryptUpdate + EVP_DecryptUpdate; records: the rest of SSL_write + SSL_read; glue: the rest of "
        "what TLS adds. Instructions leave out the kernel and cache misses: the ratio in the last column is not "
        "tls.py's ratio of CPU time."]
    text = "\n".join(lines) + "\n"
    tls.write_results(out, text, summary, "tls-callgrind")


if __name__ == "__main__":
    main()
