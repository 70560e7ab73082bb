#!/usr/bin/env bash
# What kvod and Redis ask of the kernel per mutation under the same fan-out load: `perf stat` counts each server's
# system calls (all of them, and read, write, epoll_wait, epoll_ctl), context switches (a switch is mostly a sleep in
# epoll_wait) and CPU time while `kvod-bench fanout` drives it (kvod `set`, Redis PUBLISH), divided by the mutations
# acknowledged (warm-up and drain included). Counts, unlike rates, barely move with the machine's load. Both servers
# are pinned to CPU 0 and the generator to CPU 1, as in compare.sh. Needs perf with access to syscall tracepoints.
#
#   bash Benchmarks/kernel-counts.sh [--cells "1:1x1 100:1x1 1000:16x1"] [--seconds 2] [--rounds 2] [--no-build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CELLS="1:1x1 1:1x16 1:16x1 100:1x1 100:1x16 100:16x1 1000:16x1"
RUN_SECONDS=2
ROUNDS=2
BUILD=1
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --cells) CELLS="$2"; shift 2 ;;
        --seconds) RUN_SECONDS="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --out) OUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
OUT="${OUT:-${TMPDIR:-/tmp}/kvod-kernel-counts-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
prepare_run
ensure_command redis-server redis-server
ensure_command redis-cli redis-tools
ensure_command perf linux-perf
perf stat -e 'syscalls:sys_enter_write' -- true >/dev/null 2>&1 \
    || die "perf cannot count syscall tracepoints here (try as root, or lower kernel.perf_event_paranoid)"

start_kvod "$OUT/kvod.stdout" $(pin 0)
start_redis "$OUT/redis.log" $(pin 0)
log "kvod pid $KVOD_PID, redis pid $REDIS_PID; results in $OUT; load average $(cut -d' ' -f1-3 /proc/loadavg)"

EVENTS='raw_syscalls:sys_enter,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait'
EVENTS="$EVENTS,syscalls:sys_enter_epoll_ctl,context-switches,task-clock"
# count TARGET M P D ROUND: one run under perf stat; prints one line of counts per mutation.
count() {
    local target="$1" m="$2" p="$3" d="$4" round="$5" pid port args perf_pid file
    if [ "$target" = kvod ]; then
        pid=$KVOD_PID port=$KVOD_PORT args=(--target kvod)
    else
        pid=$REDIS_PID port=$REDIS_PORT args=(--target redis --redis-command publish)
    fi
    file="$OUT/$target-$m-${p}x$d-$round"
    perf stat -x, -e "$EVENTS" -p "$pid" -o "$file.perf" &
    perf_pid=$!
    sleep 0.2
    $(pin 1) "$BENCH_BIN" fanout "${args[@]}" --port "$port" --server-pid "$pid" --subscribers "$m" --publishers "$p" \
        --pipeline "$d" --seconds "$RUN_SECONDS" --warmup 0.5 --json >"$file.json" 2>>"$OUT/discrepancies.txt" \
        || log "FAILED: $target M=$m P×D=${p}x$d (see $OUT/discrepancies.txt)"
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    python3 - "$file" "$target" "$m" "${p}x$d" <<'PY'
import json, sys
file, target, m, shape = sys.argv[1:5]
run = json.loads(open(file + ".json").read().strip().splitlines()[-1])
n = max(run["total_mutations"], 1)
counts = {}
for line in open(file + ".perf"):
    fields = line.strip().split(",")
    if len(fields) > 3 and fields[0] and not line.startswith("#"):
        try:
            counts[fields[2].split(":")[-1].replace("sys_enter_", "")] = float(fields[0])
        except ValueError:
            pass
per = lambda key: counts.get(key, 0) / n
print(f"{target:6} {m:>5} {shape:>5} {run['notifications_per_s']:>10.0f} {run['latency_us']['p99']:>9.0f} "
      f"{per('sys_enter'):>9.2f} {per('read'):>6.2f} {per('write'):>7.2f} {per('epoll_wait'):>6.2f} "
      f"{per('epoll_ctl'):>6.2f} {per('context-switches'):>6.2f} {per('task-clock') * 1000:>9.1f}")
PY
}

{
    echo "per mutation (set or PUBLISH), server side; notifications/s and p99 (µs) from kvod-bench"
    printf '%-6s %5s %5s %10s %9s %9s %6s %7s %6s %6s %6s %9s\n' target M P×D notif/s p99 syscalls read write \
        epwait epctl csw cpu_us
    for round in $(seq 1 "$ROUNDS"); do
        for cell in $CELLS; do
            m="${cell%%:*}" shape="${cell#*:}"
            # Alternate which server goes first, as compare.sh does.
            if [ $((round % 2)) -eq 1 ]; then order=(kvod redis); else order=(redis kvod); fi
            for target in "${order[@]}"; do count "$target" "$m" "${shape%x*}" "${shape#*x}" "$round"; done
        done
    done
    echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT/summary.txt"
