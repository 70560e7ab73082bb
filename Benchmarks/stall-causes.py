#!/usr/bin/env python3
"""Where each slow ping of a snapshot run went.

    python3 Benchmarks/snapshot.py --perf-sched /tmp/s.data --json /tmp/s.json --realtime-probe
    python3 Benchmarks/stall-causes.py /tmp/s.json /tmp/s.data

For every ping over 10 ms (snapshot.py's `slow_pings`, sent on CLOCK_MONOTONIC as `perf -k CLOCK_MONOTONIC` stamps),
from the scheduler events `perf sched record` took: the server's part (sent -> kvod's loop wakes the pinger with the
reply) and the client's part (-> the pinger ran); in each, how long kvod's loop thread and the pinger ran, waited for
a CPU (runnable) or were blocked in the kernel (D), and who held the CPUs meanwhile (the snapshot child, kvod's pool
threads, the load generator, other processes by name). Then each ping's main cause, counted, and the kernel stacks
where the loop blocked 5 ms or more (the time until it ran again). Standard library and `perf script` only.
"""
import bisect
import collections
import json
import re
import subprocess
import sys

SWITCH = re.compile(r"prev_comm=(.*?) prev_pid=(\d+) prev_prio=(\d+) prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)")
WAKE = re.compile(r"comm=(.*?) pid=(\d+) prio=(\d+) target_cpu=(\d+)")
LINE = re.compile(r"^\s*(.*?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$")


def main():
    figures = json.load(open(sys.argv[1]))
    data = sys.argv[2]
    loop, children = figures["kvod_pid"], set(figures.get("snapshot_pids", []))
    pinger, writer = figures["probe_pids"]["pinger"], figures["probe_pids"]["writer"]
    script = subprocess.run(["perf", "script", "-i", data, "-F", "time,cpu,pid,tid,comm,event,trace"],
                            capture_output=True, text=True).stdout
    process_of, names, state = {}, {}, {}
    intervals, on_cpu, current = collections.defaultdict(list), collections.defaultdict(list), {}
    replies, switch_ins, first = [], [], None

    def enter(tid, new, at):
        if tid in state:
            intervals[tid].append((state[tid][0], state[tid][1], at))
        state[tid] = (new, at)

    for line in script.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        _, pid, tid, cpu, at, event, rest = match.groups()
        at, cpu, tid = float(at), int(cpu), int(tid)
        first = first or at
        process_of[tid] = int(pid)
        if event == "sched:sched_switch" and (fields := SWITCH.search(rest)):
            previous, following = int(fields.group(2)), int(fields.group(6))
            names[previous], names[following] = fields.group(1), fields.group(5)
            left = fields.group(4)
            enter(previous, "runnable" if left.startswith("R") else "D" if left.startswith("D") else "sleep", at)
            enter(following, "run", at)
            if following == loop:
                switch_ins.append(at)
            if cpu in current:
                on_cpu[cpu].append((current[cpu][0], current[cpu][1], at))
            current[cpu] = (following, at)
        elif event in ("sched:sched_waking", "sched:sched_wakeup", "sched:sched_wakeup_new") and (fields := WAKE.search(rest)):
            woken = int(fields.group(2))
            names[woken] = fields.group(1)
            if woken == pinger and tid == loop:
                replies.append(at)
            if state.get(woken, ("sleep",))[0] in ("sleep", "D"):
                enter(woken, "runnable", at)

    def overlap(a, b, c, d):
        return max(0.0, min(b, d) - max(a, c))

    def role(tid):
        if tid == loop:
            return "loop"
        if process_of.get(tid) == loop:
            return "kvod pool thread"
        if tid in children or process_of.get(tid) in children:
            return "snapshot child"
        if tid in (pinger, writer):
            return "pinger" if tid == pinger else "writer"
        return re.sub(r"[/:-].*", "", names.get(tid, "?")) or "?"

    def states(tid, a, b):
        spent = collections.Counter()
        for what, start, end in intervals.get(tid, []):
            spent[what] += overlap(a, b, start, end)
        return spent

    def holders(a, b):
        spent = collections.Counter()
        for runs in on_cpu.values():
            for tid, start, end in runs:
                spent[role(tid)] += overlap(a, b, start, end)
        return spent

    def show(spent):
        return ", ".join(f"{name} {seconds * 1000:.1f}" for name, seconds in spent.most_common(5) if seconds >= 0.00005)

    causes = collections.Counter()
    for sent, milliseconds in figures["slow_pings"]:
        end = sent + milliseconds / 1000
        if first is None or sent < first:
            causes["before the recording started"] += 1
            continue
        index = bisect.bisect_left(replies, sent)
        reply = replies[index] if index < len(replies) and replies[index] < end else end
        server, client = states(loop, sent, reply), states(pinger, reply, end)
        print(f"ping at {sent:.4f} waited {milliseconds} ms: server {(reply - sent) * 1000:.1f} ms (loop {show(server)};"
              f" CPUs: {show(holders(sent, reply))}); client {(end - reply) * 1000:.1f} ms (pinger {show(client)};"
              f" CPUs: {show(holders(reply, end))})")
        shares = {"the loop was blocked in the kernel": server["D"], "the loop waited for a CPU": server["runnable"],
                  "the loop ran": server["run"], "the pinger waited for a CPU": client["runnable"]}
        causes[max(shares, key=shares.get)] += 1
    print("main cause of each ping over 10 ms:", dict(causes.most_common()))

    stacks = subprocess.run(["perf", "script", "-i", data, "--tid", str(loop), "-F", "time,event,trace,ip,sym"],
                            capture_output=True, text=True).stdout
    switch_ins.sort()
    blocked = collections.Counter()
    for block in stacks.split("\n\n"):
        lines = block.strip().split("\n")
        if "prev_state=D" not in lines[0]:
            continue
        at = float(lines[0].split()[0].rstrip(":"))
        index = bisect.bisect_right(switch_ins, at)
        if index < len(switch_ins) and switch_ins[index] - at >= 0.005:
            frames = [line.split()[1] for line in lines[1:] if len(line.split()) > 1]
            frames = [f for f in frames if not f.startswith(("__schedule", "schedule", "__traceiter", "io_schedule"))]
            blocked[" < ".join(frames[:6])] += 1
    print("the loop blocked 5 ms or more:", sum(blocked.values()))
    for stack, count in blocked.most_common(5):
        print(f"  {count}x {stack}")


if __name__ == "__main__":
    main()
