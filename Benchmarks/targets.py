#!/usr/bin/env python3
"""Issue 10's targets against one compare.sh run: kvod beside Redis, one line per target, from the files of its --out
directory (fanout.jsonl and sets.jsonl: medians of the runs that passed their check; memory.json, snapshot.json,
set-instructions.json). A figure the run did not take shows as "-".

    python3 Benchmarks/targets.py OUT_DIR
"""

import json
import os
import statistics
import sys


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as source:
        return [json.loads(line) for line in source if line.strip().startswith("{")]


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as source:
        return json.load(source)


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def rate(value):
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    return f"{value:,.0f}"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def verdict(ok):
    return "-" if ok is None else ("met" if ok else "NOT met")


def fanout_rows(fanout, series, name):
    """The two fan-out rows (notifications/s and p99 against Redis PUBLISH, cell by cell) of one kvod series."""
    cells = sorted({(run["subscribers"], run["publishers"], run["pipeline"]) for run in fanout})
    throughput, latency = [], []
    for cell in cells:
        of = lambda target: [run for run in fanout if (run["subscribers"], run["publishers"], run["pipeline"]) == cell
                             and run["target"] == target]
        kvod, publish = of(series), of("redis-publish")
        if not kvod or not publish:
            continue
        label = f"M={cell[0]} {cell[1]}x{cell[2]}"
        throughput.append((label, median(r["notifications_per_s"] for r in kvod) /
                           median(r["notifications_per_s"] for r in publish)))
        latency.append((label, median(r["latency_us"]["p99"] for r in kvod) /
                        median(r["latency_us"]["p99"] for r in publish)))
    if not throughput:
        return []
    met = sum(1 for _, value in throughput if value >= 1.0)
    worst = min(throughput, key=lambda item: item[1])
    rows = [(f"{name} notifications/s, every cell >= 1.0x Redis PUBLISH", f"{met} of {len(throughput)} cells", "",
             f"{min(v for _, v in throughput):.2f}-{max(v for _, v in throughput):.2f}x",
             verdict(met == len(throughput)) + f" (lowest {worst[0]})")]
    met = sum(1 for _, value in latency if value <= 1.0)
    worst = max(latency, key=lambda item: item[1])
    rows.append((f"{name} p99 send->notification, no worse than PUBLISH", f"{met} of {len(latency)} cells", "",
                 f"{min(v for _, v in latency):.2f}-{max(v for _, v in latency):.2f}x",
                 verdict(met == len(latency)) + f" (highest {worst[0]})"))
    return rows


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    rows = []

    sets = [run for run in lines(os.path.join(out, "sets.jsonl")) if run.get("ok")]
    for shape in sorted({(run["connections"], run["pipeline"]) for run in sets}):
        of = lambda target: [run for run in sets if (run["connections"], run["pipeline"]) == shape
                             and run["target"] == target]
        kvod = median(run["sets_per_s"] for run in of("kvod"))
        redis = median(run["sets_per_s"] for run in of("redis-set"))
        rows.append((f"sets/s, nobody subscribed, {shape[0]}x{shape[1]} (>= 1.0x Redis SET)", rate(kvod), rate(redis),
                     ratio(kvod, redis), verdict(None if kvod is None or redis is None else kvod >= redis)))

    fanout = [run for run in lines(os.path.join(out, "fanout.jsonl")) if run.get("ok")]
    for series, name in (("kvod", "fan-out"), ("kvod-busy-poll", "fan-out, kvod --busy-poll")):
        rows.extend(fanout_rows(fanout, series, name))

    instructions = load(os.path.join(out, "set-instructions.json"))
    if instructions:
        rows.append(("instructions per plain set, nobody observing (<= 5,000)", f"{instructions['per_set']:,}", "", "",
                     verdict(instructions["per_set"] <= 5000)))

    memory = load(os.path.join(out, "memory.json"))
    if memory:
        for name, key in (("object {name,n,tags} / HSET", "per_object"), ("short string key / SET", "per_key")):
            kvod, redis = memory.get("kvod_" + key), memory.get("redis_" + key)
            rows.append((f"resident bytes per {name} ({memory['count']:,}; <= Redis)", f"{kvod} B",
                         f"{redis} B" if redis is not None else "-", ratio(kvod, redis),
                         verdict(None if redis is None else kvod <= redis)))

    snapshot = load(os.path.join(out, "snapshot.json"))
    if snapshot:
        objects = f"{snapshot['objects']:,} objects"
        over = snapshot.get("pings_over_10ms")
        redis = snapshot.get("redis") or {}
        redis_shown = (f"{redis['ping_max_ms']} ms ({redis['pings_over_10ms']} over 10 ms)"
                       if "ping_max_ms" in redis else "-")
        rows.append((f"longest ping wait while snapshots run, {objects} (<= 10 ms)",
                     f"{snapshot['ping_max_ms']} ms" + ("" if over is None else f" ({over} over 10 ms)"),
                     redis_shown, ratio(snapshot["ping_max_ms"], redis.get("ping_max_ms")),
                     verdict(snapshot["ping_max_ms"] <= 10)))
        taken = snapshot.get("snapshot_ms") or []
        shown = f"{median(taken):,.0f} ms (median of {len(taken)})" if taken else "none finished"
        rows.append((f"background snapshot time, {objects}", shown, "", "", "-"))
        for line in snapshot.get("shutdown_snapshot_log") or []:
            found = [part for part in line.split() if part.startswith("duration.ms=")]
            if found:
                rows.append((f"snapshot at shutdown (in process), {objects}",
                             f"{int(found[0].split('=')[1]):,} ms", "", "", "-"))
        rows.append((f"restart from the snapshot, {objects}", f"{snapshot['restart_seconds']} s", "", "", "-"))
        rows.append((f"restart from the snapshot + journal, {objects} (<= 5 s)",
                     f"{snapshot['restart_with_journal_seconds']} s", "", "",
                     verdict(snapshot["restart_with_journal_seconds"] <= 5)))
        before = snapshot["resident_bytes_loaded"]
        for name, key in (("restart", "resident_bytes_restarted"), ("restart + journal", "resident_bytes_after_replay")):
            after = snapshot.get(key)
            if after is None:
                continue
            change = (after - before) / before * 100 if before else 0
            rows.append((f"resident memory after {name} vs before (within 10 %)",
                         f"{before / 1e6:.0f} -> {after / 1e6:.0f} MB ({change:+.0f} %)", "", "",
                         verdict(abs(change) <= 10)))

    if not rows:
        print("issue 10 targets: no figures found in", out)
        return
    header = ("issue 10 target", "kvod", "Redis", "kvod/Redis", "verdict")
    widths = [max(len(str(row[column])) for row in rows + [header]) for column in range(len(header))]
    print("issue 10 targets, this run (medians of the runs that passed their check)")
    for index, row in enumerate([header] + rows):
        print("  " + "  ".join(str(cell).ljust(widths[column]) for column, cell in enumerate(row)).rstrip())
        if index == 0:
            print("  " + "  ".join("-" * width for width in widths))


if __name__ == "__main__":
    main()
