#!/usr/bin/env python3
"""Snapshots under load: how long the loop stalls, how long a snapshot and a restart take, memory before and after.

    python3 Benchmarks/snapshot.py [--kvod .build/release/kvod] [--objects 1000000] [--seconds 10]
                                   [--snapshot-every 20000] [--journal 100000] [--json FILE] [--no-replay]
                                   [--redis] [--realtime-probe] [--server-cpus LIST] [--snapshot-cpus LIST]
                                   [--perf-sched FILE]

Phases, each on 127.0.0.1 with a fresh data directory (standard library only; nothing is left running):
  1. load     kvod --snapshot-every 0; N objects {"name":"object i","n":i,"tags":["a","b"]} set under o<i> of the
              open root, pipelined; resident memory; SIGTERM (its final snapshot is written in process: the
              `snapshot written` log line gives its duration)
  2. restart  kvod on that directory with --snapshot-every K: time from start to `kvod listening`, resident memory
  3. stall    a writer keeps setting (pipelined, 100 in flight) while a second connection sends a `ping` every 2 ms;
              background snapshots start every K records; the longest and 99th-percentile ping round trip, and each
              snapshot's duration from the log (after the load, the run waits up to 2 minutes for the snapshots
              it started to finish); kvod's minor page faults meanwhile (copy-on-write copies after each fork
              are among them), its CPU time, and how long its loop thread waited for a CPU while it could run
              (/proc/PID/schedstat: on a busy machine, the share of the stalls that is the machine's)
  4. replay   SIGTERM, then kvod --snapshot-every 0 writes J more records and is SIGKILLed: the restart loads the
              snapshot and replays J journal records; time to `kvod listening`
  --redis    then the same phase 3 on redis-server: N hashes of the same 3 fields, appendonly everysec, an RDB
             BGSAVE (a fork) whenever K writes and a second have passed (`save "1 K"`), the same writer and pinger
--server-cpus LIST pins each server to LIST (kvod for phase 3) and the writer and the pinger to the other CPUs, as
compare.sh pins the servers and kvod-bench. --snapshot-cpus LIST passes kvod's option of that name in phase 3 (its
snapshot processes run only there). --realtime-probe runs the pinger SCHED_FIFO (root), so its own waits for a CPU on a busy machine are not counted as
the server's; --perf-sched FILE records the machine's scheduler events (and kvod's CPU samples, FILE.cpu) during
phase 3, for `python3 Benchmarks/stall-causes.py JSON FILE`, which tells where each ping over 10 ms went.
The figures go to stdout as a table and, with --json, as one JSON object, with the load average at the start and
at the end. Timings are wall-clock on a shared
machine: compare runs made side by side (e.g. two kvod builds in one session), not absolute numbers.
"""
import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def start(kvod, directory, extra, log, cpus=None):
    started = time.monotonic()
    process = subprocess.Popen(
        (["taskset", "-c", cpus] if cpus else []) + [kvod, "--host", "127.0.0.1", "--port", "0", "--empty", "--data-dir", directory, "--log-level", "debug"] + extra,
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = process.stdout.readline()
    match = re.search(r"kvod listening on ([0-9.]+):(\d+)", line)
    if not match:
        process.kill()
        sys.exit(f"snapshot.py: kvod did not start: {line!r}")
    return process, int(match.group(2)), time.monotonic() - started


def resident_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def faults_and_cpu(pid):
    """Minor page faults and CPU seconds (user + system) of a process so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[7]), (int(fields[11]) + int(fields[12])) / ticks


def run_queue_seconds(pid):
    """How long the process's main thread (the loop) waited, runnable, for a CPU so far (/proc/PID/schedstat)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as schedstat:
            return int(schedstat.read().split()[1]) / 1e9
    except OSError:
        return 0.0


def load_average():
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def pipeline(port, lines, window=2000):
    """Sends the lines with `window` requests in flight; returns when every response arrived."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        received = 0
        buffered = b""
        for start in range(0, len(lines), window):
            connection.sendall(b"".join(lines[start:start + window]))
            expected = min(start + window, len(lines))
            while received < expected:
                chunk = connection.recv(1 << 20)
                if not chunk:
                    sys.exit("snapshot.py: kvod closed the connection")
                buffered += chunk
                received += buffered.count(b"\n")
                buffered = buffered[buffered.rfind(b"\n") + 1:]


def object_line(index):
    return (b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"o%d","value":'
            b'{"name":"object %d","n":%d,"tags":["a","b"]}}}\n' % (index, index, index, index))


PING_KVOD = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
PING_REDIS = b"PING\r\n"


def set_kvod(i):
    return b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"w%d","value":%d}}\n' % (i, i % 1000, i)


def set_redis(i):
    return b"SET w%d %d\r\n" % (i % 1000, i)


def pin(cpus):
    """Pins the calling process to `cpus` (a set of CPU numbers), when given."""
    if cpus:
        os.sched_setaffinity(0, cpus)


def cpu_list(text):
    """The CPUs of a `taskset -c` list such as "0" or "0,2-3"."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


def writer(port, stop_at, result, line=set_kvod, cpus=None):
    """Sets with 100 in flight until `stop_at`; puts the count. Every response of both servers is one line."""
    pin(cpus)
    count = 0
    with socket.create_connection(("127.0.0.1", port)) as connection:
        while time.monotonic() < stop_at:
            batch = b"".join(line(i) for i in range(count, count + 100))
            connection.sendall(batch)
            seen = 0
            while seen < 100:
                chunk = connection.recv(1 << 16)
                if not chunk:
                    return
                seen += chunk.count(b"\n")
            count += 100
    result.put(count)


def pinger(port, stop_at, result, ping=PING_KVOD, realtime=False, cpus=None):
    """A `ping` every 2 ms; puts [(sent, round trip)] in seconds, `sent` on CLOCK_MONOTONIC (as perf -k monotonic).
    `realtime`: the pinger runs SCHED_FIFO, so that the time it would wait for a CPU on a busy machine is not counted
    as the server's (needs root or CAP_SYS_NICE)."""
    pin(cpus)
    if realtime:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    rounds = []
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        next_at = time.monotonic()
        while next_at < stop_at:
            sent = time.monotonic()
            connection.sendall(ping)
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    return
                reply += chunk
            rounds.append((sent, time.monotonic() - sent))
            next_at += 0.002
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
    result.put(rounds)


def probe_under_load(port, options, figures, ping, set_line, pid=None):
    """A writer and a pinger for `options.seconds` (with --perf-sched under `perf sched record` of the whole machine,
    and kvod's (`pid`) CPU samples with call stacks in FILE.cpu); adds the ping figures to `figures` and returns when
    the load stopped (monotonic)."""
    recorders = []
    if options.perf_sched:
        clock = ["-k", "CLOCK_MONOTONIC", "-g"]
        recorders.append(subprocess.Popen(
            ["perf", "sched", "record"] + clock + ["-a", "-o", options.perf_sched, "--", "sleep", str(options.seconds + 1)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if pid:
            recorders.append(subprocess.Popen(
                ["perf", "record", "-e", "cpu-clock", "-F", "4000"] + clock + ["-p", str(pid), "-o",
                 options.perf_sched + ".cpu", "--", "sleep", str(options.seconds + 1)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(2)  # perf takes a while to start on a busy machine; the first snapshot forks at once
    stop_at = time.monotonic() + options.seconds
    results = multiprocessing.Queue()
    # With the server pinned, the writer and the pinger run on the other CPUs (as compare.sh pins kvod-bench).
    load_cpus = (set(range(os.cpu_count())) - cpu_list(options.server_cpus)) or None if options.server_cpus else None
    workers = [multiprocessing.Process(target=writer, args=(port, stop_at, results, set_line, load_cpus)),
               multiprocessing.Process(target=pinger, args=(port, stop_at, results, ping, options.realtime_probe,
                                                            load_cpus))]
    for worker in workers:
        worker.start()
    collected = [results.get(timeout=options.seconds + 120) for _ in workers]
    for worker in workers:
        worker.join()
    for recorder in recorders:
        recorder.wait()
    figures["probe_pids"] = {"writer": workers[0].pid, "pinger": workers[1].pid}
    timed = next(item for item in collected if isinstance(item, list))
    rounds = sorted(rtt for _, rtt in timed)
    writes = next(item for item in collected if isinstance(item, int))
    figures["writes_per_second"] = round(writes / options.seconds)
    figures["pings"] = len(rounds)
    figures["ping_max_ms"] = round(rounds[-1] * 1000, 2)
    figures["ping_p99_ms"] = round(rounds[int(len(rounds) * 0.99)] * 1000, 2)
    figures["ping_median_ms"] = round(rounds[len(rounds) // 2] * 1000, 3)
    figures["pings_over_10ms"] = sum(1 for value in rounds if value > 0.010)
    # When each slow ping was sent (CLOCK_MONOTONIC seconds, as `perf sched timehist` prints with --perf-sched).
    figures["slow_pings"] = [[round(sent, 6), round(rtt * 1000, 2)] for sent, rtt in timed if rtt > 0.010]
    return stop_at


def snapshot_lines(log_path, since):
    with open(log_path) as log:
        log.seek(since)
        return [line for line in log if "snapshot written" in line]


def redis_command(port, *words):
    """One command, its reply's first line (enough for PING, CONFIG SET, BGSAVE) or, for a bulk reply, the bulk."""
    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.sendall(b"*%d\r\n" % len(words) + b"".join(
            b"$%d\r\n%s\r\n" % (len(w), w) for w in (word.encode() for word in words)))
        reply = b""
        while b"\r\n" not in reply:
            reply += connection.recv(1 << 16)
        if reply.startswith(b"$"):
            size = int(reply[1:reply.index(b"\r\n")])
            while len(reply) < reply.index(b"\r\n") + 2 + size:
                reply += connection.recv(1 << 16)
            start = reply.index(b"\r\n") + 2
            return reply[start:start + size].decode()
        return reply.split(b"\r\n")[0].decode()


def redis_info(port, section):
    return dict(line.split(":", 1) for line in redis_command(port, "INFO", section).splitlines() if ":" in line)


def redis_under_load(options):
    """Redis beside kvod, as Redis users run it: the same objects as hashes of the same 3 fields, an append-only file
    fsynced every second (kvod's default journal), an RDB snapshot (BGSAVE, a fork) whenever `snapshot_every` writes
    and a second have passed; then the same writer and the same 2 ms ping probe."""
    directory = tempfile.mkdtemp(prefix="kvod-snapshot-bench-redis-")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    figures = {"load_average_start": load_average()}
    server = subprocess.Popen(
        (["taskset", "-c", options.server_cpus] if options.server_cpus else []) + [options.redis_server, "--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", "",
         "--appendonly", "yes", "--appendfsync", "everysec", "--auto-aof-rewrite-percentage", "0",
         "--daemonize", "no", "--logfile", ""], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                if redis_command(port, "PING") == "+PONG":
                    break
            except OSError:
                time.sleep(0.05)
        figures["version"] = redis_info(port, "server").get("redis_version", "?").strip()
        for first in range(0, options.objects, 100_000):
            pipeline(port, [b'HSET o%d name "object %d" n %d tags a,b\r\n' % (i, i, i)
                            for i in range(first, min(first + 100_000, options.objects))])
        figures["resident_bytes_loaded"] = resident_bytes(server.pid)
        redis_command(port, "CONFIG", "SET", "save", f"1 {options.snapshot_every}")
        forks_before = int(redis_info(port, "stats")["total_forks"])
        faults_before, _ = faults_and_cpu(server.pid)
        waited_before = run_queue_seconds(server.pid)
        saved = dict(options.__dict__, perf_sched=None)
        probe_under_load(port, argparse.Namespace(**saved), figures, PING_REDIS, set_redis)
        figures["bgsaves"] = int(redis_info(port, "stats")["total_forks"]) - forks_before
        figures["latest_fork_ms"] = round(int(redis_info(port, "stats")["latest_fork_usec"]) / 1000, 1)
        figures["minor_faults_under_load"] = faults_and_cpu(server.pid)[0] - faults_before
        figures["loop_waited_for_cpu_seconds"] = round(run_queue_seconds(server.pid) - waited_before, 2)
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(directory, ignore_errors=True)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kvod", default=".build/release/kvod")
    parser.add_argument("--objects", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--snapshot-every", type=int, default=20_000)
    parser.add_argument("--journal", type=int, default=100_000)
    parser.add_argument("--json")
    parser.add_argument("--no-replay", action="store_true", help="leave out phase 4 (restart with a journal)")
    parser.add_argument("--redis", action="store_true",
                        help="then the same stall probe on redis-server: N hashes, BGSAVE under the same write load")
    parser.add_argument("--redis-server", default="redis-server")
    parser.add_argument("--server-cpus", "--kvod-cpus", metavar="LIST", dest="server_cpus",
                        help="pin kvod (for the phase under load) and Redis to these CPUs (taskset -c), and the writer"
                             " and the pinger to the others, as compare.sh pins servers and kvod-bench")
    parser.add_argument("--snapshot-cpus", metavar="LIST",
                        help="kvod's --snapshot-cpus in the phase under load (its snapshot processes run only there)")
    parser.add_argument("--realtime-probe", action="store_true",
                        help="run the pinger SCHED_FIFO (root): its own waits for a CPU leave the figures")
    parser.add_argument("--perf-sched", metavar="FILE",
                        help="record the machine's scheduler events during kvod's stall phase (perf sched record -a)")
    options = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="kvod-snapshot-bench-")
    log_path = directory + ".log"
    figures = {"kvod": options.kvod, "objects": options.objects, "load_average_start": load_average(),
               "realtime_probe": options.realtime_probe, "server_cpus": options.server_cpus,
               "snapshot_cpus": options.snapshot_cpus}
    try:
        with open(log_path, "w") as log:
            # 1. load
            process, port, _ = start(options.kvod, directory, ["--snapshot-every", "0"], log)
            started = time.monotonic()
            for first in range(0, options.objects, 100_000):
                pipeline(port, [object_line(i) for i in range(first, min(first + 100_000, options.objects))])
            figures["load_seconds"] = round(time.monotonic() - started, 2)
            figures["resident_bytes_loaded"] = resident_bytes(process.pid)
            mark = os.path.getsize(log_path)
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=600)
            figures["shutdown_snapshot_log"] = [line.strip() for line in snapshot_lines(log_path, mark)]

            # 2. restart from the snapshot
            snapshot_cpus = ["--snapshot-cpus", options.snapshot_cpus] if options.snapshot_cpus else []
            process, port, seconds = start(options.kvod, directory,
                                           ["--snapshot-every", str(options.snapshot_every)] + snapshot_cpus, log,
                                           options.server_cpus)
            figures["restart_seconds"] = round(seconds, 2)
            figures["resident_bytes_restarted"] = resident_bytes(process.pid)

            # 3. stall while background snapshots run under write load
            mark = os.path.getsize(log_path)
            faults_before, cpu_before = faults_and_cpu(process.pid)
            waited_before = run_queue_seconds(process.pid)
            stop_at = probe_under_load(port, options, figures, PING_KVOD, set_kvod, process.pid)
            # Let the snapshots started under load finish and log (a million objects take seconds in the child,
            # which runs at nice 19 beside the load): wait, at most two minutes, until every fork has its line.
            waited_until = time.monotonic() + 120
            while True:
                time.sleep(0.5)
                lines = snapshot_lines(log_path, mark)
                with open(log_path) as log_file:
                    log_file.seek(mark)
                    forks = sum(1 for line in log_file if "fork.ms=" in line)
                if len(lines) >= forks or time.monotonic() > waited_until:
                    break
            figures["snapshot_wait_seconds"] = round(time.monotonic() - stop_at, 1)
            faults_after, cpu_after = faults_and_cpu(process.pid)
            figures["minor_faults_under_load"] = faults_after - faults_before
            figures["cpu_seconds_under_load"] = round(cpu_after - cpu_before, 2)
            figures["loop_waited_for_cpu_seconds"] = round(run_queue_seconds(process.pid) - waited_before, 2)
            durations = [int(m.group(1)) for m in (re.search(r"duration\.ms=(\d+)", line) for line in lines) if m]
            figures["snapshots_during_load"] = len(durations)
            figures["snapshot_ms"] = durations
            with open(log_path) as log_file:
                log_file.seek(mark)
                started_lines = [line for line in log_file if "fork.ms=" in line]
            figures["fork_ms"] = [int(m.group(1)) for m in (re.search(r"fork\.ms=(\d+)", line) for line in started_lines) if m]
            figures["kvod_pid"] = process.pid
            figures["snapshot_pids"] = [int(m.group(1)) for m in
                                        (re.search(r"snapshot\.pid=(\d+)", line) for line in started_lines) if m]
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=600)

            # 4. restart with a journal to replay
            if options.no_replay:
                return finish(figures, options, log_path)
            process, port, _ = start(options.kvod, directory, ["--snapshot-every", "0", "--fsync", "no"], log)
            pipeline(port, [b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"j%d","value":%d}}\n'
                            % (i, i % 5000, i) for i in range(options.journal)])
            process.kill()
            process.wait()
            process, port, seconds = start(options.kvod, directory, ["--snapshot-every", "0"], log)
            figures["restart_with_journal_seconds"] = round(seconds, 2)
            figures["resident_bytes_after_replay"] = resident_bytes(process.pid)
            process.kill()
            process.wait()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    finish(figures, options, log_path)


def finish(figures, options, log_path):
    if options.redis:
        figures["redis"] = redis_under_load(options)
    figures["load_average_end"] = load_average()
    print(f"kvod {figures['kvod']}: {figures['objects']:,} objects; load average {figures['load_average_start']}"
          f" at the start, {figures['load_average_end']} at the end")
    print(f"  load {figures['load_seconds']} s, resident {figures['resident_bytes_loaded'] / 1e6:.0f} MB"
          f" ({figures['resident_bytes_loaded'] / max(figures['objects'], 1):.0f} B/object incl. the process)")
    for line in figures["shutdown_snapshot_log"]:
        print(f"  shutdown: {line}")
    print(f"  restart from the snapshot: {figures['restart_seconds']} s,"
          f" resident {figures['resident_bytes_restarted'] / 1e6:.0f} MB")
    probe = "SCHED_FIFO pinger" if options.realtime_probe else "pinger at normal priority"
    print(f"  under load ({probe}): {figures['writes_per_second']:,} sets/s, {figures['pings']} pings,"
          f" max {figures['ping_max_ms']} ms, p99 {figures['ping_p99_ms']} ms, median {figures['ping_median_ms']} ms,"
          f" {figures['pings_over_10ms']} over 10 ms {[rtt for _, rtt in figures['slow_pings']]};"
          f" {figures['snapshots_during_load']} snapshots: {figures['snapshot_ms']} ms, forks: {figures['fork_ms']} ms;"
          f" kvod took {figures['minor_faults_under_load']:,} minor page faults and"
          f" {figures['cpu_seconds_under_load']} s of CPU; its loop waited {figures['loop_waited_for_cpu_seconds']} s"
          f" for a CPU")
    if "restart_with_journal_seconds" in figures:
        print(f"  restart from the snapshot + {options.journal:,} journal records:"
              f" {figures['restart_with_journal_seconds']} s, resident {figures['resident_bytes_after_replay'] / 1e6:.0f} MB")
    if "redis" in figures:
        redis = figures["redis"]
        print(f"redis {redis['version']} (BGSAVE, save \"1 {options.snapshot_every}\", appendonly everysec):"
              f" {figures['objects']:,} hashes; load average {redis['load_average_start']} at the start")
        print(f"  under load: {redis['writes_per_second']:,} SETs/s, {redis['pings']} pings, max {redis['ping_max_ms']} ms,"
              f" p99 {redis['ping_p99_ms']} ms, median {redis['ping_median_ms']} ms, {redis['pings_over_10ms']} over 10 ms"
              f" {[rtt for _, rtt in redis['slow_pings']]};"
              f" {redis['bgsaves']} BGSAVEs (forks), last fork {redis['latest_fork_ms']} ms; redis took"
              f" {redis['minor_faults_under_load']:,} minor page faults; its main thread waited"
              f" {redis['loop_waited_for_cpu_seconds']} s for a CPU")
    if options.json:
        with open(options.json, "w") as output:
            json.dump(figures, output)
    os.unlink(log_path)


if __name__ == "__main__":
    main()
