#!/usr/bin/env python3
"""Where the CPU that TLS adds goes, for kvod and for Redis, split by library (issue 25): the check behind its ratio.

Issue 25 asks that TLS cost kvod no more than it costs Redis, as the ratio of TLS to plaintext. That ratio is
(plaintext + what TLS adds) / plaintext, so kvod's is no larger than Redis's only when

    what TLS adds to kvod  <=  what TLS adds to Redis  x  kvod's plaintext / Redis's plaintext     (the allowance)

This script measures both sides of that, and which parts of what TLS adds no server's own code decides: the kernel,
OpenSSL (libssl and libcrypto, the same library for both), and the C library with the allocator behind OpenSSL's
allocations. The same servers and generator as tls.py (kvod release with `--tls-cert`, redis-server with `--port` and
`--tls-port`, both pinned to CPU 0; kvod-bench on CPU 1 speaking OpenSSL 3 to both), four series per round in
alternation (kvod, kvod/tls, redis, redis/tls; even rounds reversed). While each run is in its steady window,
`perf record -e cpu-clock` samples the server's process every 100 µs of its CPU time; the samples' periods are summed by
shared object:

  kernel           [kernel.kallsyms]
  OpenSSL          libssl, libcrypto
  libc+allocator   libc, libjemalloc (Redis's allocator; kvod uses glibc's), ld.so, the vDSO
  server           the rest: kvod, the Swift runtime and libuv; redis-server

Figures are µs of server CPU per notification (the window's CPU split by the notifications the generator counted in
it), the median over the rounds (what TLS adds is paired: each round's four series side by side; every run's figures
go to runs.jsonl). Cells: fan-out at M subscribers, one publisher with 16 in flight (closed), or paced at
R mutations/s (kvod-bench --rate), as tls.py runs them.

    python3 Benchmarks/tls-split.py [--rounds 3] [--seconds 4] [--cells 100,100@8000] [--no-build] [--out DIR]

Needs perf (linux-perf) and the right to profile the servers (run as root, or perf_event_paranoid <= 1). About a
minute per round and cell. Everything listens on 127.0.0.1 and is stopped at exit.
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tls  # noqa: E402  (the servers, certificates and pinning of tls.py)

PARTS = ("kernel", "OpenSSL", "libc+allocator", "server")
SHARED = ("kernel", "OpenSSL", "libc+allocator")  # what no server's own code decides
PERIOD_NS = 100_000  # one sample per 100 µs of the server's CPU time


def part_of(dso):
    if dso.startswith("[kernel"):
        return "kernel"
    if dso.startswith(("libssl", "libcrypto")):
        return "OpenSSL"
    if dso.startswith(("libc.so", "libc-", "libjemalloc", "ld-linux", "[vdso]")):
        return "libc+allocator"
    return "server"


def split(data):
    """Seconds of CPU per part in a perf.data file."""
    report = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--sort", "dso", "-F", "period,dso", "--stdio", "-g", "none"],
        capture_output=True, text=True, timeout=120)
    if report.returncode != 0:
        tls.die(f"perf report failed: {report.stderr[-500:]}")
    seconds = dict.fromkeys(PARTS, 0.0)
    for line in report.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2 and not line.startswith("#") and fields[0].isdigit():
            seconds[part_of(fields[1])] += int(fields[0]) / 1e9
    return seconds


def run(bench, cell, series, servers, path, arguments, out, number):
    """One kvod-bench run with the server profiled through its steady window; µs per notification per part."""
    subscribers, rate = cell
    process, port, tls_port = servers[series.split("/")[0]]
    secure = series.endswith("/tls")
    command = [bench, "fanout", "--port", str(tls_port if secure and series.startswith("redis") else port),
               "--server-pid", str(process.pid), "--seconds", str(arguments.seconds), "--warmup", "1", "--json",
               "--subscribers", str(subscribers), "--publishers", "1"]
    command += ["--pipeline", "64", "--rate", str(rate)] if rate else ["--pipeline", "16"]
    if secure:
        command += ["--tls-ca", path("ca.pem")]
    if series.startswith("redis"):
        command += ["--target", "redis"]
    data = os.path.join(out, f"perf-{number}-{series.replace('/', '-')}.data")
    generator = subprocess.Popen(tls.pinned(1, command, True), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True)
    # Past the connections, the handshakes and the warm-up, and out before the window ends.
    time.sleep(1.8)
    window = max(1.0, arguments.seconds - 1.6)
    profile = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-c", str(PERIOD_NS), "-p",
                              str(process.pid), "-o", data, "--", "sleep", f"{window:.2f}"],
                             capture_output=True, text=True, timeout=window + 60)
    stdout, stderr = generator.communicate(timeout=arguments.seconds + 180)
    if generator.returncode != 0 or profile.returncode != 0:
        tls.die(f"{' '.join(command)}: {stderr[-1000:]} {profile.stderr[-500:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    notifications = result["notifications_per_s"] * window
    seconds = split(data)
    os.remove(data)
    return {part: seconds[part] / notifications * 1e6 for part in PARTS}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=4)
    parser.add_argument("--cells", default="100,100@8000", help="fan-out cells: M (closed, 16 in flight) or M@R")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--out")
    arguments = parser.parse_args()
    if not shutil.which("perf"):
        tls.die("perf is needed (apt-get install linux-perf)")
    out = arguments.out or tempfile.mkdtemp(prefix="kvod-tls-split-")
    os.makedirs(out, exist_ok=True)
    if not arguments.no_build:
        tls.build()
    kvod, bench = (os.path.join(tls.SCRATCH, "release", name) for name in ("kvod", "kvod-bench"))
    cells = []
    for entry in arguments.cells.split(","):
        subscribers, _, rate = entry.partition("@")
        cells.append((int(subscribers), int(rate) if rate else None))
    path = tls.make_certificates(out)
    results = {cell: {series: [] for series in tls.SERIES} for cell in cells}
    try:
        kvod_process, kvod_port = tls.start_kvod(kvod, path, out, True)
        redis_process, redis_port, redis_tls_port = tls.start_redis(path, out, True)
        servers = {"kvod": (kvod_process, kvod_port, kvod_port),
                   "redis": (redis_process, redis_port, redis_tls_port)}
        number = 0
        with open(os.path.join(out, "runs.jsonl"), "w") as record:
            for round_number in range(arguments.rounds):
                order = tls.SERIES if round_number % 2 == 0 else tuple(reversed(tls.SERIES))
                for cell in cells:
                    for series in order:
                        number += 1
                        parts = run(bench, cell, series, servers, path, arguments, out, number)
                        results[cell][series].append(parts)
                        record.write(json.dumps({"round": round_number + 1, "cell": name(cell), "series": series,
                                                 "us_per_notification": parts}) + "\n")
                        record.flush()
                        print(f"  round {round_number + 1} {name(cell):<22} {series:<10} "
                              + "  ".join(f"{part} {parts[part]:.3f}" for part in PARTS)
                              + f"  total {sum(parts.values()):.3f} µs", file=sys.stderr, flush=True)
    finally:
        tls.stop_all()
    report(results, out)


def name(cell):
    subscribers, rate = cell
    return f"fan-out M={subscribers} @{rate:,}/s" if rate else f"fan-out M={subscribers}, 1x16"


def totals(parts):
    return dict(parts, total=sum(parts[part] for part in PARTS))


def report(results, out):
    """Per cell: the series' medians, then per round (its four series side by side) what TLS adds to each server by
    part, the allowance and the shared parts; the paired figures are the medians of the rounds'."""
    lines = ["# Where the CPU TLS adds goes (µs of server CPU per notification; medians over the rounds, the TLS "
             "adds rows paired per round)", ""]
    summary = {}
    for cell, series in results.items():
        rounds = [{key: totals(series[key][index]) for key in tls.SERIES} for index in range(len(series["kvod"]))]
        median = lambda values: statistics.median(list(values))  # noqa: E731
        figures = {key: {part: median(r[key][part] for r in rounds) for part in PARTS + ("total",)}
                   for key in tls.SERIES}
        keys = PARTS + ("total",)
        added = {server: {part: median(r[f"{server}/tls"][part] - r[server][part] for r in rounds) for part in keys}
                 for server in ("kvod", "redis")}
        allowances = [(r["redis/tls"]["total"] - r["redis"]["total"]) * r["kvod"]["total"] / r["redis"]["total"]
                      for r in rounds]
        within = sum(1 for r, allowance in zip(rounds, allowances)
                     if r["kvod/tls"]["total"] - r["kvod"]["total"] <= allowance)
        shared = {server: median(sum(r[f"{server}/tls"][part] - r[server][part] for part in SHARED) for r in rounds)
                  for server in ("kvod", "redis")}
        shared_over = sum(1 for r, allowance in zip(rounds, allowances)
                          if sum(r["kvod/tls"][part] - r["kvod"][part] for part in SHARED) > allowance)
        allowance = median(allowances)
        ratio = {server: median(r[f"{server}/tls"]["total"] / r[server]["total"] for r in rounds)
                 for server in ("kvod", "redis")}
        summary[name(cell)] = {"series": figures, "tls_adds": added, "allowance": allowance, "shared_adds": shared,
                               "ratio": ratio, "rounds": len(rounds), "rounds_within": within,
                               "rounds_shared_over": shared_over}
        lines += [f"## {name(cell)}", "", "| series | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
        for key in tls.SERIES:
            lines.append(f"| {key} | " + " | ".join(f"{figures[key][part]:.3f}" for part in keys) + " |")
        for server in ("kvod", "redis"):
            lines.append(f"| TLS adds, {server} | " + " | ".join(f"{added[server][part]:+.3f}" for part in keys) + " |")
        lines += ["",
                  f"- Ratio TLS / plaintext: kvod {ratio['kvod']:.2f}, Redis {ratio['redis']:.2f}.",
                  f"- The allowance (what TLS may add to kvod for its ratio to be no larger than Redis's): "
                  f"{allowance:.3f} µs; TLS adds {added['kvod']['total']:.3f} µs to kvod, within the allowance in "
                  f"{within} of {len(rounds)} rounds.",
                  f"- The kernel, OpenSSL and the C library with the allocator add {shared['kvod']:.3f} µs to kvod "
                  f"and {shared['redis']:.3f} µs to Redis (which sends fewer bytes per notification); for kvod they "
                  f"alone exceed the allowance in {shared_over} of {len(rounds)} rounds. kvod's own code adds "
                  f"{added['kvod']['server']:+.3f} µs, Redis's {added['redis']['server']:+.3f} µs.", ""]
    text = "\n".join(lines)
    tls.write_results(out, text, summary, "tls-split")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    main()
