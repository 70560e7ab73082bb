#!/usr/bin/env bash
# kvod against Redis, side by side: the fan-out matrix run on both servers in alternation (kvod, Redis PUBLISH,
# Redis SET + keyspace notifications, then the next cell), medians per cell, and a table of kvod/Redis ratios.
# Everything listens on 127.0.0.1 and is stopped at exit. Usage and meaning: Benchmarks/README.md.
#
#   bash Benchmarks/compare.sh            full matrix: M in 1 10 100 1000, P×D in 1x1 1x16 16x1, 3 s, 3 alternations
#   bash Benchmarks/compare.sh --quick    about a minute: M in 1 100, P×D in 1x1 1x16, 2 s, 1 alternation
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUBSCRIBERS="1 10 100 1000"
SHAPES="1x1 1x16 16x1"
RUN_SECONDS=3
WARMUP=1
ALTERNATIONS=3
BUILD=1
MIXED=1
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) SUBSCRIBERS="1 100"; SHAPES="1x1 1x16"; RUN_SECONDS=2; WARMUP=0.5; ALTERNATIONS=1; shift ;;
        --subscribers) SUBSCRIBERS="$2"; shift 2 ;;
        --shapes) SHAPES="$2"; shift 2 ;;
        --seconds) RUN_SECONDS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --alternations) ALTERNATIONS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --no-mixed) MIXED=0; shift ;;
        --no-pin) NO_PIN=1; shift ;;
        -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
case "$ALTERNATIONS" in ''|*[!0-9]*) die "--alternations must be a number" ;; esac
[ "$ALTERNATIONS" -ge 1 ] && [ "$ALTERNATIONS" -le 20 ] || die "--alternations must be 1...20"

OUT="${OUT:-${TMPDIR:-/tmp}/kvod-compare-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
RESULTS="$OUT/fanout.jsonl"
: >"$RESULTS"
trap stop_all EXIT
trap 'exit 130' INT TERM

[ "$BUILD" = 1 ] && build_release
[ -x "$KVOD_BIN" ] && [ -x "$BENCH_BIN" ] || die "missing $KVOD_BIN or $BENCH_BIN (run without --no-build)"
ensure_command redis-server redis-server
ensure_command redis-cli redis-tools

# The servers share CPU 0, the load generator gets CPU 1 (when the machine has two).
start_kvod "$OUT/kvod.stdout" $(pin 0)
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
}

TARGETS=(kvod redis-publish redis-set)
for alternation in $(seq 1 "$ALTERNATIONS"); do
    for m in $SUBSCRIBERS; do
        for shape in $SHAPES; do
            p="${shape%x*}"
            d="${shape#*x}"
            log "alternation $alternation/$ALTERNATIONS: M=$m P×D=${p}x$d"
            # Alternate which server goes first, so neither always follows the other's cool-down.
            if [ $((alternation % 2)) -eq 1 ]; then order=(0 1 2); else order=(2 1 0); fi
            for index in "${order[@]}"; do run_one "${TARGETS[$index]}" "$m" "$p" "$d"; done
        done
    done
done

if [ "$MIXED" = 1 ]; then
    log "mixed workload on kvod"
    timeout "$RUN_TIMEOUT" $(pin 1) "$BENCH_BIN" mixed --port "$KVOD_PORT" --server-pid "$KVOD_PID" \
        --seconds "$RUN_SECONDS" --warmup "$WARMUP" >"$OUT/mixed.txt" 2>>"$OUT/discrepancies.txt" || FAILED=1
fi

SUMMARY_STATUS=0
"$BENCH_BIN" summarize "$RESULTS" >"$OUT/summary.txt" || SUMMARY_STATUS=$?
"$BENCH_BIN" summarize --markdown "$RESULTS" >"$OUT/summary.md" || true
echo
echo "kvod vs Redis $REDIS_VERSION, $(nproc) CPUs, ${RUN_SECONDS} s runs," \
    "$ALTERNATIONS alternation(s), $(date -u +%Y-%m-%dT%H:%MZ)"
cat "$OUT/summary.txt"
if [ "$MIXED" = 1 ] && [ -s "$OUT/mixed.txt" ]; then
    echo
    cat "$OUT/mixed.txt"
fi
echo
echo "raw results: $RESULTS"
if [ "$FAILED" = 1 ] || [ "$SUMMARY_STATUS" -ne 0 ]; then
    echo "SOME RUNS FAILED their delivery check: $OUT/discrepancies.txt" >&2
    exit 2
fi
