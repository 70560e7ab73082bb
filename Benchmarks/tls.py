#!/usr/bin/env python3
"""kvod over TLS against plaintext kvod and against Redis over TLS, side by side in one run (issue 25).

One kvod (release, `--tls-cert`: TLS and plaintext on its one port) and one redis-server (`--port` and `--tls-port`,
the same certificate) run pinned to CPU 0; kvod-bench, pinned to CPU 1, drives four series in alternation in every
cell, round after round: kvod, kvod/tls, redis, redis/tls (even rounds in reverse order). The same generator speaks
TLS to both servers (the TLS module kvod itself uses: OpenSSL 3 over memory buffers), so the client side costs the
same.

Cells:
  sets          8 connections x 16 sets in flight, one path, nobody subscribed (kvod `set`, Redis SET): sets/s
  fanout M      M subscribers of one key, 1 publisher x 16 in flight (kvod `set`, Redis PUBLISH): notifications/s
  fanout M @R   the same at R mutations/s (kvod-bench --rate; at most 64 in flight): every series carries the same
                load, so the server's CPU per notification is compared at equal batching and equal wake-ups
  handshakes    16 connections opening at once: connect, handshake, one ping answered, close: connections/s

Each run reports its rate, the server's CPU (from /proc) and the generator's. The server's CPU time per operation
(a set, a notification, a connection) is what a cell is judged by when the generator saturates its CPU (>= 90 %):
then the rate measures the generator, not the server. Otherwise the rate judges. A paced cell is always judged by
server CPU per operation, as long as every series kept up with the rate (else by rate). The table prints, for each cell,
which rule judged it, whether kvod/tls is level with redis/tls (within 5 %), and what TLS costs each server (the
TLS/plaintext ratio of the judged figure).

The verdicts are paired: each round's four series run back to back, so each round gives its own kvod/tls-to-redis/tls
ratio and its own ratio of what TLS costs kvod to what it costs Redis; a verdict is the median of the rounds' ratios,
printed with the middle half of them (the spread the machine's noise left), and beside it the server CPU per operation
TLS adds to each server (TLS minus plaintext, the rounds' median). A run during which the hypervisor took more than
1 % of the two CPUs' time (steal on CPU 0 and CPU 1, from /proc/stat) is run again, up to --retries times, and the
least disturbed attempt kept.

    python3 Benchmarks/tls.py [--quick] [--rounds 3] [--seconds 3] [--subscribers 1,100]
                              [--paced 1@50000,1@120000,100@8000] [--retries 2] [--no-build] [--no-pin] [--out DIR]

Everything listens on 127.0.0.1 and is stopped at exit. Certificates are made with the openssl CLI.
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
SCRATCH = os.environ.get("KVOD_BENCH_SCRATCH", os.path.join(REPO, ".build-bench"))
SERIES = ("kvod", "kvod/tls", "redis", "redis/tls")
SATURATED = 0.90  # generator CPU share from which a cell is judged by server CPU per operation
LEVEL = 0.95  # kvod within 5 % of Redis counts as level
STEAL_LIMIT = 0.01  # a run whose CPUs lost more than this share of its time to the hypervisor is run again

started = []


def die(message):
    sys.exit(f"tls.py: {message}")


def write_results(out, text, summary, label):
    """Prints a report's `text` and keeps it in `out` as summary.md, beside its figures as summary.json."""
    print(text)
    with open(os.path.join(out, "summary.md"), "w") as handle:
        handle.write(text)
    with open(os.path.join(out, "summary.json"), "w") as handle:
        json.dump(summary, handle, indent=2)
    print(f"{label}: results in {out}", file=sys.stderr)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_all():
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def pinned(cpu, command, pin):
    return (["taskset", "-c", str(cpu)] if pin and shutil.which("taskset") and os.cpu_count() > 1 else []) + command


def steal_seconds():
    """CPU time the hypervisor took from CPU 0 and CPU 1 so far (/proc/stat's steal column), or 0 where unknown."""
    try:
        with open("/proc/stat") as stat:
            ticks = sum(int(fields[8]) for fields in (line.split() for line in stat)
                        if fields and fields[0] in ("cpu0", "cpu1") and len(fields) > 8)
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return 0.0


def build():
    for product in ("kvod", "kvod-bench"):
        subprocess.run(["swift", "build", "-c", "release", "--build-path", SCRATCH, "--product", product], cwd=REPO,
                       check=True, stdout=subprocess.DEVNULL)


def make_certificates(directory):
    def openssl(*arguments):
        subprocess.run(["openssl", *arguments], check=True, capture_output=True, timeout=60)

    path = lambda name: os.path.join(directory, name)  # noqa: E731
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
            path("ca.key"), "-out", path("ca.pem"), "-days", "2", "-subj", "/CN=kvod bench ca")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", path("server.key"),
            "-out", path("server.csr"), "-subj", "/CN=localhost")
    with open(path("server.ext"), "w") as extensions:
        extensions.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", path("server.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
            "-CAcreateserial", "-out", path("server.pem"), "-days", "2", "-extfile", path("server.ext"))
    return path


def kvod_command(kvod, path, port):
    """kvod on 127.0.0.1:`port` (0: any) with the run's certificate: TLS and plaintext on the one port."""
    return [kvod, "--host", "127.0.0.1", "--port", str(port), "--empty", "--log-level", "warning",
            "--tls-cert", path("server.pem"), "--tls-key", path("server.key")]


def redis_command(path, port, tls_port):
    """redis-server, plaintext on `port` and TLS on `tls_port` with the run's certificate, nothing saved."""
    return ["redis-server", "--port", str(port), "--tls-port", str(tls_port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--tls-cert-file", path("server.pem"), "--tls-key-file", path("server.key"),
            "--tls-ca-cert-file", path("ca.pem"), "--tls-auth-clients", "no"]


def start_kvod(kvod, path, out, pin):
    log = open(os.path.join(out, "kvod.log"), "w")
    process = subprocess.Popen(
        pinned(0, kvod_command(kvod, path, 0), pin),
        stdout=subprocess.PIPE, stderr=log, text=True)
    started.append(process)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        match = re.search(r"kvod listening on 127\.0\.0\.1:(\d+)", line)
        if match:
            return process, int(match.group(1))
        if process.poll() is not None:
            break
    die(f"kvod did not start (see {out}/kvod.log)")


def start_redis(path, out, pin):
    if not shutil.which("redis-server"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "redis-server", "redis-tools"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"), stdout=subprocess.DEVNULL)
    port, tls_port = free_port(), free_port()
    process = subprocess.Popen(
        pinned(0, redis_command(path, port, tls_port) + ["--logfile", os.path.join(out, "redis.log")], pin),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(process)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                probe.sendall(b"PING\r\n")
                if probe.recv(16).startswith(b"+PONG"):
                    return process, port, tls_port
        except OSError:
            time.sleep(0.1)
    die("redis-server did not answer PING")


def run_cell(bench, cell, series, servers, path, seconds, warmup, pin):
    """One kvod-bench run; returns (rate, operations in window, window seconds, server CPU, bench CPU)."""
    kind, parameter, rate = cell
    process, port, tls_port = servers[series.split("/")[0]]
    tls = series.endswith("/tls")
    command = [bench, kind, "--port", str(tls_port if tls and series.startswith("redis") else port),
               "--server-pid", str(process.pid), "--seconds", str(seconds), "--warmup", str(warmup), "--json"]
    if tls:
        command += ["--tls-ca", path("ca.pem")]
    if series.startswith("redis"):
        command += ["--target", "redis"]
    if kind == "sets":
        command += ["--connections", "8", "--pipeline", "16"]
    elif kind == "fanout" and rate:
        command += ["--subscribers", str(parameter), "--publishers", "1", "--pipeline", "64", "--rate", str(rate)]
    elif kind == "fanout":
        command += ["--subscribers", str(parameter), "--publishers", "1", "--pipeline", "16"]
    else:
        command += ["--concurrency", "16"]
    steal_before, started_at = steal_seconds(), time.monotonic()
    result = subprocess.run(pinned(1, command, pin), capture_output=True, text=True, timeout=seconds + warmup + 180)
    steal, wall = steal_seconds() - steal_before, time.monotonic() - started_at
    if result.returncode != 0:
        die(f"{' '.join(command)} failed: {result.stderr[-2000:]}")
    line = json.loads(result.stdout.strip().splitlines()[-1])
    rate_key, count_key = {"sets": ("sets_per_s", "sets"), "fanout": ("notifications_per_s", "notifications"),
                           "handshakes": ("connections_per_s", "connections")}[kind]
    return {"series": series, "cell": cell_name(cell), "rate": line[rate_key], "ops": line[count_key],
            "window_s": line["window_s"], "server_cpu": line.get("server_cpu"), "bench_cpu": line["bench_cpu"],
            "steal_s": steal, "wall_s": wall, "raw": line}


def run_steady(bench, cell, series, servers, path, arguments, pin):
    """`run_cell`, run again (at most `arguments.retries` times) while the hypervisor took more than STEAL_LIMIT of
    the CPUs' time during the run; returns the least disturbed attempt, with how many were made."""
    attempts = []
    while True:
        run = run_cell(bench, cell, series, servers, path, arguments.seconds, arguments.warmup, pin)
        attempts.append(run)
        if run["steal_s"] <= STEAL_LIMIT * 2 * run["wall_s"] or len(attempts) > arguments.retries:
            break
    best = min(attempts, key=lambda attempt: attempt["steal_s"])
    best["attempts"] = len(attempts)
    return best


def cell_name(cell):
    kind, parameter, rate = cell
    if kind != "fanout":
        return kind
    return f"fanout M={parameter} @{rate:,}/s" if rate else f"fanout M={parameter}"


def cpu_per_op_us(run):
    if not run["server_cpu"] or not run["ops"]:
        return None
    return run["server_cpu"] * run["window_s"] / run["ops"] * 1e6


def medians(runs):
    """Median rate, server CPU per op (µs) and generator CPU of a series' runs."""
    per_op = [value for value in (cpu_per_op_us(run) for run in runs) if value is not None]
    return {"rate": statistics.median(run["rate"] for run in runs),
            "mutation_rate": statistics.median(run["raw"].get("mutations_per_s", 0) for run in runs),
            "cpu_per_op": statistics.median(per_op) if per_op else None,
            "bench_cpu": statistics.median(run["bench_cpu"] for run in runs)}


def cell_rule(summary, rate=None):
    """How a cell is judged: by server CPU per operation when the generator saturated its CPU in any of the cell's
    series (then the rates measure the generator), else by rate. A paced cell is judged by server CPU per operation
    when every series kept up with its rate (within 5 %: the load was the same), else by rate. One rule for the whole
    cell, so that the cost ratios of the two servers compare like with like."""
    if rate:
        if all(summary[series]["cpu_per_op"] for series in SERIES) and \
                all(summary[series]["mutation_rate"] >= LEVEL * rate for series in SERIES):
            return "server CPU/op at equal load"
        return "rate (a series fell behind the set rate)"
    saturated = [series for series in SERIES if summary[series]["bench_cpu"] >= SATURATED]
    if saturated and all(summary[series]["cpu_per_op"] for series in SERIES):
        return "server CPU/op (generator saturated in " + ", ".join(saturated) + ")"
    return "rate"


def judge(rule, left, right):
    """The ratio of `left` to `right` as 'how much better left is' (>= 1: left is at least as good) under `rule`."""
    if rule != "rate":
        return right["cpu_per_op"] / left["cpu_per_op"]
    return left["rate"] / right["rate"] if right["rate"] else float("inf")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="1 round of 1.5 s per run, M in 1 and 100")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--subscribers", default="1,100")
    parser.add_argument("--paced", default="1@50000,1@120000,100@8000",
                        help="paced fan-out cells M@R (R mutations/s); empty: none")
    parser.add_argument("--retries", type=int, default=2,
                        help="runs again a run the hypervisor disturbed (steal over 1 %%), at most this often")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--no-pin", action="store_true")
    parser.add_argument("--out")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.rounds, arguments.seconds, arguments.warmup = 1, 1.5, 0.5
    pin = not arguments.no_pin
    out = arguments.out or tempfile.mkdtemp(prefix="kvod-tls-bench-")
    os.makedirs(out, exist_ok=True)
    if not arguments.no_build:
        build()
    kvod, bench = os.path.join(SCRATCH, "release", "kvod"), os.path.join(SCRATCH, "release", "kvod-bench")
    for binary in (kvod, bench):
        if not os.access(binary, os.X_OK):
            die(f"missing {binary} (run without --no-build)")
    path = make_certificates(out)
    try:
        kvod_process, kvod_port = start_kvod(kvod, path, out, pin)
        redis_process, redis_port, redis_tls_port = start_redis(path, out, pin)
        servers = {"kvod": (kvod_process, kvod_port, kvod_port),
                   "redis": (redis_process, redis_port, redis_tls_port)}
        paced = [entry.split("@") for entry in arguments.paced.split(",") if entry]
        cells = [("sets", None, None)] + [("fanout", int(m), None) for m in arguments.subscribers.split(",") if m] + \
                [("fanout", int(m), int(r)) for m, r in paced] + [("handshakes", None, None)]
        runs = []
        with open(os.path.join(out, "runs.jsonl"), "w") as record:
            for round_number in range(arguments.rounds):
                order = SERIES if round_number % 2 == 0 else tuple(reversed(SERIES))
                for cell in cells:
                    for series in order:
                        run = run_steady(bench, cell, series, servers, path, arguments, pin)
                        run["round"] = round_number + 1
                        runs.append(run)
                        record.write(json.dumps(run) + "\n")
                        print(f"  round {round_number + 1} {cell_name(cell):<14} {series:<10} "
                              f"{run['rate']:>12,.0f}/s  server CPU {run['server_cpu'] or 0:.0%}  "
                              f"generator CPU {run['bench_cpu']:.0%}  steal {run['steal_s']:.2f} s"
                              + (f" ({run['attempts']} attempts)" if run["attempts"] > 1 else ""), file=sys.stderr)
    finally:
        stop_all()
    report(runs, cells, out, arguments)


def quartiles(values):
    """(lower quartile, median, upper quartile) of `values`."""
    ordered = sorted(values)
    if len(ordered) < 2:
        return ordered[0], ordered[0], ordered[0]
    lower, _, upper = statistics.quantiles(ordered, n=4, method="inclusive")
    return lower, statistics.median(ordered), upper


def paired(rule, rounds):
    """Per round (its four series side by side): kvod/tls against redis/tls, and what TLS costs kvod divided by what
    it costs Redis, both under the cell's `rule`; rounds lacking a figure the rule needs are left out. Also per round,
    the server CPU per operation TLS adds to each (TLS minus plaintext, µs), where all four figures exist."""
    versus, costs, added = [], [], {"kvod": [], "redis": []}
    for summary in rounds:
        have_cpu = all(summary[series]["cpu_per_op"] for series in SERIES)
        if have_cpu:
            for server in added:
                added[server].append(summary[server + "/tls"]["cpu_per_op"] - summary[server]["cpu_per_op"])
        if rule != "rate" and not have_cpu:
            continue
        versus.append(judge(rule, summary["kvod/tls"], summary["redis/tls"]))
        costs.append(judge(rule, summary["kvod"], summary["kvod/tls"])
                     / judge(rule, summary["redis"], summary["redis/tls"]))
    return versus, costs, added


def report(runs, cells, out, arguments):
    print(f"\nkvod TLS vs plaintext vs Redis TLS: {arguments.rounds} round(s) of {arguments.seconds} s, medians; "
          f"server on CPU 0, generator on CPU 1; results in {out}\n")
    header = ["cell", "unit"] + [f"{series} /s" for series in SERIES] + [f"{series} CPU/op" for series in SERIES]
    rows = []
    verdicts = []
    for cell in cells:
        name = cell_name(cell)
        cell_runs = [run for run in runs if run["cell"] == name]
        summary = {series: medians([run for run in cell_runs if run["series"] == series]) for series in SERIES}
        unit = {"sets": "set", "fanout": "notification", "handshakes": "connection"}[cell[0]]
        rows.append([name, unit] + [f"{summary[s]['rate']:,.0f}" for s in SERIES]
                    + [f"{summary[s]['cpu_per_op']:.2f} µs" if summary[s]["cpu_per_op"] else "-" for s in SERIES])
        rule = cell_rule(summary, cell[2])
        by_round = {}
        for run in cell_runs:
            by_round.setdefault(run["round"], {})[run["series"]] = medians([run])
        rounds = [by_round[number] for number in sorted(by_round) if len(by_round[number]) == len(SERIES)]
        versus, costs, added = paired(rule, rounds)
        if not versus:
            continue
        verdicts.append({"cell": name, "rule": rule, "versus": quartiles(versus), "costs": quartiles(costs),
                         "kvod_tls_cost": judge(rule, summary["kvod"], summary["kvod/tls"]),
                         "redis_tls_cost": judge(rule, summary["redis"], summary["redis/tls"]),
                         "added": {server: statistics.median(values) if values else None
                                   for server, values in added.items()},
                         "generator": {s: summary[s]["bench_cpu"] for s in SERIES},
                         "disturbed": sum(1 for run in cell_runs if run.get("attempts", 1) > 1)})
    widths = [max(len(str(row[i])) for row in rows + [header]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths]] + rows:
        print("  ".join(str(cell).rjust(width) if index > 1 else str(cell).ljust(width)
                        for index, (cell, width) in enumerate(zip(row, widths))))
    print("\nverdicts (paired: the median of the rounds' ratios, [middle half] of them; kvod/tls against redis/tls, "
          "and what TLS costs kvod ÷ what it costs Redis, TLS costing each the TLS/plaintext ratio of the judged "
          "figure)")
    for verdict in verdicts:
        versus, costs = verdict["versus"], verdict["costs"]
        level = "level or better" if versus[1] >= LEVEL else "BEHIND"
        cheaper = "no more" if costs[1] <= 1 / LEVEL else "MORE"
        print(f"- {verdict['cell']} [judged by {verdict['rule']}]: kvod/tls {versus[1]:.2f}x redis/tls "
              f"[{versus[0]:.2f}–{versus[2]:.2f}] ({level}); TLS costs kvod {costs[1]:.2f}x what it costs Redis "
              f"[{costs[0]:.2f}–{costs[2]:.2f}] ({cheaper} than Redis; from the medians: kvod "
              f"{verdict['kvod_tls_cost']:.2f}x, Redis {verdict['redis_tls_cost']:.2f}x)"
              + (f"; TLS adds kvod {verdict['added']['kvod']:+.3f} µs, Redis {verdict['added']['redis']:+.3f} µs of "
                 "server CPU per operation" if verdict["added"]["kvod"] is not None else "")
              + "; generator CPU "
              + ", ".join(f"{s} {verdict['generator'][s]:.0%}" for s in SERIES)
              + (f"; {verdict['disturbed']} run(s) repeated for steal" if verdict["disturbed"] else ""))
    with open(os.path.join(out, "summary.json"), "w") as summary_file:
        json.dump([{"cell": v["cell"], "rule": v["rule"], "kvod_tls_vs_redis_tls": v["versus"][1],
                    "kvod_tls_vs_redis_tls_middle_half": [v["versus"][0], v["versus"][2]],
                    "tls_cost_kvod_over_redis": v["costs"][1],
                    "tls_cost_kvod_over_redis_middle_half": [v["costs"][0], v["costs"][2]],
                    "kvod_tls_cost": v["kvod_tls_cost"], "redis_tls_cost": v["redis_tls_cost"],
                    "tls_adds_cpu_per_op_us": v["added"],
                    "runs_repeated_for_steal": v["disturbed"]} for v in verdicts], summary_file, indent=1)


if __name__ == "__main__":
    try:
        main()
    finally:
        stop_all()
