#!/usr/bin/env python3
"""The tables of Benchmarks/peers.sh: kvod beside its peers, per tier, from `kvod-bench fanout --json` lines whose
`target` is "TIER/SERIES" (peers.sh names them so).

Per cell (M subscribers, P publishers x D in flight) and series: the median notifications/s, generator CPU, server
CPU (the share of a CPU the server got in the window), server CPU per notification and p99 over the alternations. Each kvod/peer ratio is judged by one rule, printed beside it:
  rate  notifications/s, kvod's over the peer's (both generators below 0.9 of a CPU);
  cpu   server CPU time per notification, the peer's over kvod's, where the generator ran at >= 0.9 of its CPU in
        either server's runs (notifications/s cannot tell two servers apart when the generator is the limit).
Either way > 1.0 means kvod is ahead. Ratios never cross tiers. Standard library only.

  python3 Benchmarks/peers.py RESULTS.jsonl [--markdown]
"""

import json
import statistics
import sys

TIER_ORDER = ["ephemeral", "memory", "durable", "whole"]
TIER_TITLES = {
    "ephemeral": "ephemeral: kvod in memory, Redis PUBLISH, NATS core",
    "memory": "state in memory / tmpfs: kvod --fsync no (data on tmpfs), Redis SET + keyspace, etcd (data on tmpfs)",
    "durable": "durable on disk: kvod --fsync always, etcd defaults",
    "whole": "whole machine: nothing pinned, Go servers with their default GOMAXPROCS",
}
# The peers whose ratios the targets of issue 28 count (ephemeral and in-memory tiers).
TARGET_PEERS = ("nats", "etcd")
SATURATED = 0.9


def load(path):
    runs = []
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("{"):
                runs.append(json.loads(line))
    return runs


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(runs):
    """{tier: {cell: {series: stats}}} and each tier's series in first-seen order."""
    cells = {}
    series_order = {}
    for run in runs:
        tier, _, series = run["target"].partition("/")
        if not series:
            tier, series = "untiered", tier
        cell = (run["subscribers"], run["publishers"], run["pipeline"])
        series_order.setdefault(tier, [])
        if series not in series_order[tier]:
            series_order[tier].append(series)
        cells.setdefault(tier, {}).setdefault(cell, {}).setdefault(series, []).append(run)
    stats = {}
    for tier, by_cell in cells.items():
        for cell, by_series in by_cell.items():
            for series, group in by_series.items():
                rates = [r["notifications_per_s"] for r in group]
                cpu_per = [
                    r["server_cpu"] / r["notifications_per_s"] * 1e6
                    for r in group
                    if r.get("server_cpu") is not None and r["notifications_per_s"] > 0
                ]
                stats.setdefault(tier, {}).setdefault(cell, {})[series] = {
                    "rate": median(rates),
                    "bench_cpu": median([r["bench_cpu"] for r in group]),
                    "max_bench_cpu": max(r["bench_cpu"] for r in group),
                    "server_cpu": median([r.get("server_cpu") for r in group]),
                    "cpu_us": median(cpu_per),
                    "p99": median([r["latency_us"]["p99"] for r in group]),
                    "runs": len(group),
                    "failed": sum(1 for r in group if not r.get("ok", False)),
                }
    return stats, series_order


def judge(kvod, peer):
    """(ratio, rule): > 1 means kvod ahead."""
    saturated = max(kvod["bench_cpu"] or 0, peer["bench_cpu"] or 0) >= SATURATED
    if saturated and kvod["cpu_us"] and peer["cpu_us"]:
        return peer["cpu_us"] / kvod["cpu_us"], "cpu"
    if not peer["rate"]:
        return None, "rate"
    return kvod["rate"] / peer["rate"], "rate"


def rate_text(value):
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}"


def latency_text(us):
    if us is None:
        return "-"
    return f"{us / 1000:.1f} ms" if us >= 1000 else f"{us:.0f} µs"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main(argv):
    paths = [a for a in argv[1:] if not a.startswith("--")]
    if len(paths) != 1:
        print(__doc__, file=sys.stderr)
        return 64
    stats, series_order = summarize(load(paths[0]))
    counts = {peer: [0, 0] for peer in TARGET_PEERS}
    losses = []
    failed = 0
    for tier in sorted(stats, key=lambda t: TIER_ORDER.index(t) if t in TIER_ORDER else 99):
        names = series_order[tier]
        kvod_name = next((n for n in names if n.startswith("kvod")), None)
        peers = [n for n in names if n != kvod_name]
        print(f"### {TIER_TITLES.get(tier, tier)}")
        print()
        header = ["M", "P×D"] + [f"{n} notif/s" for n in names]
        for peer in peers:
            header += [f"kvod/{peer}", "rule"]
        header += ["generator CPU (" + " / ".join(names) + ")", "server CPU", "server µs/notif", "p99"]
        rows = []
        for cell in sorted(stats[tier]):
            by_series = stats[tier][cell]
            row = [str(cell[0]), f"{cell[1]}×{cell[2]}"]
            row += [rate_text(by_series[n]["rate"]) if n in by_series else "-" for n in names]
            for peer in peers:
                if kvod_name in by_series and peer in by_series:
                    ratio, rule = judge(by_series[kvod_name], by_series[peer])
                    row += [f"**{ratio:.2f}×**" if ratio is not None else "-", rule]
                    family = next((p for p in TARGET_PEERS if peer.startswith(p)), None)
                    if family and tier in ("ephemeral", "memory") and ratio is not None:
                        counts[family][1] += 1
                        if ratio >= 1.0:
                            counts[family][0] += 1
                        else:
                            losses.append(f"{tier} M={cell[0]} {cell[1]}×{cell[2]} vs {peer}: {ratio:.2f}× ({rule})")
                else:
                    row += ["-", "-"]
            row.append(" / ".join(f"{by_series[n]['bench_cpu']:.2f}" if n in by_series else "-" for n in names))
            row.append(
                " / ".join(
                    f"{by_series[n]['server_cpu']:.2f}" if n in by_series and by_series[n]["server_cpu"] is not None
                    else "-" for n in names
                )
            )
            row.append(
                " / ".join(
                    f"{by_series[n]['cpu_us']:.2f}" if n in by_series and by_series[n]["cpu_us"] else "-" for n in names
                )
            )
            row.append(" / ".join(latency_text(by_series[n]["p99"]) if n in by_series else "-" for n in names))
            failed += sum(by_series[n]["failed"] for n in by_series)
            rows.append(row)
        print(table(header, rows))
        print()
    print("rule: rate = notifications/s, kvod's over the peer's; cpu = server CPU per notification, the peer's over")
    print(f"kvod's, used where the generator ran at >= {SATURATED} of its CPU in either run. > 1.0: kvod ahead.")
    for peer, (met, total) in counts.items():
        if total:
            print(f"target kvod >= 1.0x {peer} in every ephemeral and in-memory cell: {met} of {total} cells"
                  + (" (met)" if met == total else " (not met)"))
    for loss in losses:
        print(f"  below 1.0: {loss}")
    if failed:
        print(f"delivery check FAILED in {failed} runs (see discrepancies.txt)")
    else:
        print("delivery check: every subscriber got every message, in order, in every run")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
