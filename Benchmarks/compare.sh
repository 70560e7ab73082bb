#!/usr/bin/env bash
# kvod against Redis, side by side, for every figure of issue 10: the fan-out matrix run on both servers in
# alternation (kvod, Redis PUBLISH, Redis SET + keyspace notifications, then the next cell) and the no-subscriber
# case (8 connections × 16 plain sets in flight on one path: kvod `set`, Redis SET), medians and kvod/Redis ratios;
# then memory per object and per short key beside Redis (memory.py), snapshots under load (snapshot.py) and, in the
# full run, instructions per plain set (set-instructions.py, callgrind). Everything listens on 127.0.0.1 and is
# stopped at exit. Usage and meaning: Benchmarks/README.md.
#
#   bash Benchmarks/compare.sh            full: M in 1 10 100 1000, P×D in 1x1 1x16 16x1, 3 s, 3 alternations,
#                                         memory of 200,000 items, snapshots of 1,000,000 objects, callgrind
#   bash Benchmarks/compare.sh --quick    about two minutes: M in 1 100, P×D in 1x1 1x16, 2 s, 2 alternations,
#                                         memory of 200,000 items, snapshots of 200,000 objects, no callgrind
#   options: --no-fanout --no-sets --no-mixed --no-memory --no-snapshot --no-instructions --objects N
#            --busy-poll US (the fan-out matrix also runs on a second kvod started with --busy-poll US, default 500;
#            0: not run)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUBSCRIBERS="1 10 100 1000"
SHAPES="1x1 1x16 16x1"
RUN_SECONDS=3
WARMUP=1
ALTERNATIONS=3
BUILD=1
MIXED=1
FANOUT=1
SETS=1
SETS_SHAPE=8x16
MEMORY=1
MEMORY_COUNT=200000
SNAPSHOT=1
SNAPSHOT_OBJECTS=1000000
SNAPSHOT_SECONDS=10
SNAPSHOT_JOURNAL=100000
INSTRUCTIONS=1
BUSY_POLL=500
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick)
            SUBSCRIBERS="1 100"; SHAPES="1x1 1x16"; RUN_SECONDS=2; WARMUP=0.5; ALTERNATIONS=2
            MEMORY_COUNT=200000; SNAPSHOT_OBJECTS=200000; SNAPSHOT_SECONDS=5; SNAPSHOT_JOURNAL=20000; INSTRUCTIONS=0
            shift ;;
        --subscribers) SUBSCRIBERS="$2"; shift 2 ;;
        --shapes) SHAPES="$2"; shift 2 ;;
        --seconds) RUN_SECONDS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --alternations) ALTERNATIONS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --no-mixed) MIXED=0; shift ;;
        --no-fanout) FANOUT=0; shift ;;
        --no-sets) SETS=0; shift ;;
        --sets-shape) SETS_SHAPE="$2"; shift 2 ;;
        --no-memory) MEMORY=0; shift ;;
        --memory-count) MEMORY_COUNT="$2"; shift 2 ;;
        --no-snapshot) SNAPSHOT=0; shift ;;
        --objects) SNAPSHOT_OBJECTS="$2"; shift 2 ;;
        --no-instructions) INSTRUCTIONS=0; shift ;;
        --instructions) INSTRUCTIONS=1; shift ;;
        --no-pin) NO_PIN=1; shift ;;
        --busy-poll) BUSY_POLL="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
case "$ALTERNATIONS" in ''|*[!0-9]*) die "--alternations must be a number" ;; esac
[ "$ALTERNATIONS" -ge 1 ] && [ "$ALTERNATIONS" -le 20 ] || die "--alternations must be 1...20"
case "$BUSY_POLL" in ''|*[!0-9]*) die "--busy-poll must be a number of microseconds (0: not run)" ;; esac

OUT="${OUT:-${TMPDIR:-/tmp}/kvod-compare-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
RESULTS="$OUT/fanout.jsonl"
SETS_RESULTS="$OUT/sets.jsonl"
: >"$RESULTS"
: >"$SETS_RESULTS"
STARTED_AT=$(date -u +%Y-%m-%dT%H:%MZ)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
prepare_run
ensure_command redis-server redis-server
ensure_command redis-cli redis-tools
[ "$INSTRUCTIONS" = 1 ] && ensure_command valgrind valgrind

# The servers share CPU 0, the load generator gets CPU 1 (when the machine has two).
start_kvod "$OUT/kvod.stdout" $(pin 0)
if [ "$BUSY_POLL" -gt 0 ]; then
    # A second kvod for the fan-out matrix, started with --busy-poll: it spins only after reads, so while the others
    # run it sleeps like them.
    MAIN_KVOD_PID=$KVOD_PID MAIN_KVOD_PORT=$KVOD_PORT
    DEFAULT_KVOD_ARGS=("${KVOD_ARGS[@]}")
    KVOD_ARGS+=(--busy-poll "$BUSY_POLL")
    start_kvod "$OUT/kvod-busy-poll.stdout" $(pin 0)
    BUSY_KVOD_PID=$KVOD_PID BUSY_KVOD_PORT=$KVOD_PORT
    KVOD_ARGS=("${DEFAULT_KVOD_ARGS[@]}")
    KVOD_PID=$MAIN_KVOD_PID KVOD_PORT=$MAIN_KVOD_PORT
fi
start_redis "$OUT/redis.log" $(pin 0)
REDIS_VERSION=$(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')
log "kvod pid $KVOD_PID port $KVOD_PORT; redis-server $REDIS_VERSION pid $REDIS_PID port $REDIS_PORT; results in $OUT"

FAILED=0
RUN_TIMEOUT=$(awk -v s="$RUN_SECONDS" -v w="$WARMUP" 'BEGIN { printf "%d", s + w + 120 }')
# run_one TARGET M P D: one fan-out run, appended to the results as one JSON line.
run_one() {
    local target="$1" m="$2" p="$3" d="$4" args status=0
    case "$target" in
        kvod) args=(--target kvod --port "$KVOD_PORT" --server-pid "$KVOD_PID") ;;
        kvod-busy-poll)
            args=(--target kvod --series kvod-busy-poll --port "$BUSY_KVOD_PORT" --server-pid "$BUSY_KVOD_PID") ;;
        redis-publish) args=(--target redis --redis-command publish --port "$REDIS_PORT" --server-pid "$REDIS_PID") ;;
        redis-set) args=(--target redis --redis-command set --port "$REDIS_PORT" --server-pid "$REDIS_PID") ;;
    esac
    timeout "$RUN_TIMEOUT" $(pin 1) "$BENCH_BIN" fanout "${args[@]}" --subscribers "$m" --publishers "$p" \
        --pipeline "$d" --seconds "$RUN_SECONDS" --warmup "$WARMUP" --json >>"$RESULTS" 2>>"$OUT/discrepancies.txt" \
        || status=$?
    if [ "$status" -ne 0 ]; then
        FAILED=1
        log "FAILED ($status): $target M=$m P×D=${p}x$d (see $OUT/discrepancies.txt)"
    fi
    kill -0 "$KVOD_PID" 2>/dev/null || die "kvod died (stderr: $OUT/kvod.stdout.stderr)"
    [ "$target" != kvod-busy-poll ] || kill -0 "$BUSY_KVOD_PID" 2>/dev/null \
        || die "kvod --busy-poll died (stderr: $OUT/kvod-busy-poll.stdout.stderr)"
}

# run_sets TARGET: one no-subscriber run (C×D plain sets of one path), appended to the sets results.
run_sets() {
    local target="$1" args status=0
    case "$target" in
        kvod) args=(--target kvod --port "$KVOD_PORT" --server-pid "$KVOD_PID") ;;
        redis) args=(--target redis --port "$REDIS_PORT" --server-pid "$REDIS_PID") ;;
    esac
    timeout "$RUN_TIMEOUT" $(pin 1) "$BENCH_BIN" sets run "${args[@]}" --connections "${SETS_SHAPE%x*}" \
        --pipeline "${SETS_SHAPE#*x}" --seconds "$RUN_SECONDS" --warmup "$WARMUP" --json >>"$SETS_RESULTS" \
        2>>"$OUT/discrepancies.txt" || status=$?
    if [ "$status" -ne 0 ]; then
        FAILED=1
        log "FAILED ($status): sets $target C×D=$SETS_SHAPE (see $OUT/discrepancies.txt)"
    fi
    kill -0 "$KVOD_PID" 2>/dev/null || die "kvod died (stderr: $OUT/kvod.stdout.stderr)"
}

TARGETS=(kvod redis-publish redis-set)
[ "$BUSY_POLL" -gt 0 ] && TARGETS=(kvod kvod-busy-poll redis-publish redis-set)
for alternation in $(seq 1 "$ALTERNATIONS"); do
    if [ "$SETS" = 1 ]; then
        log "alternation $alternation/$ALTERNATIONS: sets, nobody subscribed, C×D=$SETS_SHAPE"
        if [ $((alternation % 2)) -eq 1 ]; then run_sets kvod; run_sets redis; else run_sets redis; run_sets kvod; fi
    fi
    [ "$FANOUT" = 1 ] || continue
    for m in $SUBSCRIBERS; do
        for shape in $SHAPES; do
            p="${shape%x*}"
            d="${shape#*x}"
            log "alternation $alternation/$ALTERNATIONS: M=$m P×D=${p}x$d"
            # Alternate which server goes first, so neither always follows the other's cool-down.
            order=("${!TARGETS[@]}")
            if [ $((alternation % 2)) -eq 0 ]; then order=($(printf '%s\n' "${order[@]}" | tac)); fi
            for index in "${order[@]}"; do run_one "${TARGETS[$index]}" "$m" "$p" "$d"; done
        done
    done
done

if [ "$MIXED" = 1 ]; then
    log "mixed workload on kvod"
    timeout "$RUN_TIMEOUT" $(pin 1) "$BENCH_BIN" mixed --port "$KVOD_PORT" --server-pid "$KVOD_PID" \
        --seconds "$RUN_SECONDS" --warmup "$WARMUP" >"$OUT/mixed.txt" 2>>"$OUT/discrepancies.txt" || FAILED=1
fi

# The servers of the throughput runs are done; the rest starts fresh servers of its own.
stop_pid "$KVOD_PID"
[ "$BUSY_POLL" -gt 0 ] && stop_pid "$BUSY_KVOD_PID"
stop_pid "$REDIS_PID"
LOAD_AFTER_THROUGHPUT=$(cut -d' ' -f1-3 /proc/loadavg)

if [ "$MEMORY" = 1 ]; then
    log "memory per object and per short key, kvod and Redis ($MEMORY_COUNT items each, fresh servers)"
    python3 "$BENCH_ROOT/Benchmarks/memory.py" --kvod "$KVOD_BIN" --count "$MEMORY_COUNT" \
        --json "$OUT/memory.json" >"$OUT/memory.txt" 2>>"$OUT/discrepancies.txt" \
        || { FAILED=1; log "memory.py failed"; }
fi
if [ "$SNAPSHOT" = 1 ]; then
    log "snapshots under load: $SNAPSHOT_OBJECTS objects, ${SNAPSHOT_SECONDS} s of writes," \
        "$SNAPSHOT_JOURNAL journal records"
    # Redis beside kvod with the same probe; each server on CPU 0, the writer and the pinger on the others.
    SNAPSHOT_PIN=()
    [ -n "$(pin 0)" ] && SNAPSHOT_PIN=(--server-cpus 0)
    python3 "$BENCH_ROOT/Benchmarks/snapshot.py" --kvod "$KVOD_BIN" --objects "$SNAPSHOT_OBJECTS" \
        --seconds "$SNAPSHOT_SECONDS" --journal "$SNAPSHOT_JOURNAL" --json "$OUT/snapshot.json" --redis \
        "${SNAPSHOT_PIN[@]}" \
        >"$OUT/snapshot.txt" 2>>"$OUT/discrepancies.txt" || { FAILED=1; log "snapshot.py failed"; }
fi
if [ "$INSTRUCTIONS" = 1 ]; then
    log "instructions per plain set (callgrind, two runs)"
    python3 "$BENCH_ROOT/Benchmarks/set-instructions.py" --kvod "$KVOD_BIN" --keep "$OUT/set-instructions" \
        --json "$OUT/set-instructions.json" >"$OUT/set-instructions.txt" 2>>"$OUT/discrepancies.txt" \
        || { FAILED=1; log "set-instructions.py failed"; }
fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

SUMMARY_STATUS=0
if [ "$FANOUT" = 1 ]; then
    "$BENCH_BIN" summarize "$RESULTS" >"$OUT/summary.txt" || SUMMARY_STATUS=$?
    "$BENCH_BIN" summarize --markdown "$RESULTS" >"$OUT/summary.md" || true
fi
if [ "$SETS" = 1 ]; then
    "$BENCH_BIN" sets summarize "$SETS_RESULTS" >"$OUT/sets-summary.txt" || SUMMARY_STATUS=$?
    "$BENCH_BIN" sets summarize --markdown "$SETS_RESULTS" >"$OUT/sets-summary.md" || true
fi
{
    echo
    echo "kvod vs Redis $REDIS_VERSION, $(nproc) CPUs, ${RUN_SECONDS} s runs, $ALTERNATIONS alternation(s)," \
        "$STARTED_AT to $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "load average (1/5/15 min): $LOAD_BEFORE at the start, $LOAD_AFTER_THROUGHPUT after the throughput runs," \
        "$LOAD_AFTER at the end"
    if [ -s "$OUT/sets-summary.txt" ]; then echo; cat "$OUT/sets-summary.txt"; fi
    if [ -s "$OUT/summary.txt" ]; then echo; cat "$OUT/summary.txt"; fi
    if [ "$MIXED" = 1 ] && [ -s "$OUT/mixed.txt" ]; then echo; cat "$OUT/mixed.txt"; fi
    if [ -s "$OUT/memory.txt" ]; then echo; cat "$OUT/memory.txt"; fi
    if [ -s "$OUT/snapshot.txt" ]; then
        echo
        echo "snapshots under load (kvod, then Redis with BGSAVE under the same writer and 2 ms ping probe)"
        cat "$OUT/snapshot.txt"
    fi
    if [ -s "$OUT/set-instructions.txt" ]; then echo; cat "$OUT/set-instructions.txt"; fi
    echo
    python3 "$BENCH_ROOT/Benchmarks/targets.py" "$OUT" || true
    echo
    echo "raw results: $OUT"
} | tee "$OUT/report.txt"
if [ "$FAILED" = 1 ] || [ "$SUMMARY_STATUS" -ne 0 ]; then
    echo "SOME RUNS FAILED (a delivery check, an error response or a script): $OUT/discrepancies.txt" >&2
    exit 2
fi
