#!/usr/bin/env bash
# kvod over WebSocket against kvod over TCP on the same fan-out: 1 publisher with 16 sets in flight, M subscribers,
# the two transports alternated run by run (and in reverse order on even rounds), medians per cell and the WS/TCP
# ratios. One kvod serves every run; everything is on 127.0.0.1 and stopped at exit. Benchmarks/README.md.
#
#   bash Benchmarks/websocket.sh            M in 1 10 100, 3 s runs, 3 rounds (about 2 minutes once built)
#   bash Benchmarks/websocket.sh --quick    M in 1 100, 2 s runs, 1 round (about 15 s once built)
#   bash Benchmarks/websocket.sh --callgrind   instead: kvod's instructions per notification on each transport
#                                              (callgrind, fixed workloads that repeat exactly; a few minutes)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUBSCRIBERS="1 10 100"
SHAPE="1x16"
RUN_SECONDS=3
WARMUP=1
ROUNDS=3
BUILD=1
CALLGRIND=0
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) SUBSCRIBERS="1 100"; RUN_SECONDS=2; WARMUP=0.5; ROUNDS=1; shift ;;
        --subscribers) SUBSCRIBERS="$2"; shift 2 ;;
        --shape) SHAPE="$2"; shift 2 ;;
        --seconds) RUN_SECONDS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --rounds) ROUNDS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --callgrind) CALLGRIND=1; shift ;;
        --no-pin) NO_PIN=1; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
case "$ROUNDS" in ''|*[!0-9]*) die "--rounds must be a number" ;; esac
[ "$ROUNDS" -ge 1 ] && [ "$ROUNDS" -le 20 ] || die "--rounds must be 1...20"
case "$SHAPE" in [0-9]*x[0-9]*) ;; *) die "--shape must look like 1x16" ;; esac

OUT="${OUT:-${TMPDIR:-/tmp}/kvod-websocket-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
RESULTS="$OUT/fanout.jsonl"
: >"$RESULTS"
prepare_run

if [ "$CALLGRIND" = 1 ]; then
    source "$(dirname "${BASH_SOURCE[0]}")/websocket-callgrind.sh"
    exit 0
fi

# kvod on CPU 0, the load generator on CPU 1 (when the machine has two), as in compare.sh.
start_kvod "$OUT/kvod.stdout" $(pin 0)
log "kvod pid $KVOD_PID port $KVOD_PORT; results in $OUT"

FAILED=0
RUN_TIMEOUT=$(awk -v s="$RUN_SECONDS" -v w="$WARMUP" 'BEGIN { printf "%d", s + w + 120 }')
# run_one TRANSPORT M: one fan-out run, appended to the results as one JSON line.
run_one() {
    local transport="$1" m="$2" status=0
    timeout "$RUN_TIMEOUT" $(pin 1) "$BENCH_BIN" fanout --target kvod --transport "$transport" --port "$KVOD_PORT" \
        --server-pid "$KVOD_PID" --subscribers "$m" --publishers "${SHAPE%x*}" --pipeline "${SHAPE#*x}" \
        --seconds "$RUN_SECONDS" --warmup "$WARMUP" --json >>"$RESULTS" 2>>"$OUT/discrepancies.txt" || status=$?
    if [ "$status" -ne 0 ]; then
        FAILED=1
        log "FAILED ($status): $transport M=$m P×D=$SHAPE (see $OUT/discrepancies.txt)"
    fi
    kill -0 "$KVOD_PID" 2>/dev/null || die "kvod died (stderr: $OUT/kvod.stdout.stderr)"
}

for round in $(seq 1 "$ROUNDS"); do
    for m in $SUBSCRIBERS; do
        log "round $round/$ROUNDS: M=$m P×D=$SHAPE"
        # Alternate which transport goes first, so neither always follows the other.
        if [ $((round % 2)) -eq 1 ]; then order=(tcp websocket); else order=(websocket tcp); fi
        for transport in "${order[@]}"; do run_one "$transport" "$m"; done
    done
done

SUMMARY_STATUS=0
"$BENCH_BIN" summarize --transports "$RESULTS" >"$OUT/summary.txt" || SUMMARY_STATUS=$?
"$BENCH_BIN" summarize --transports --markdown "$RESULTS" >"$OUT/summary.md" || true
echo
echo "kvod WebSocket vs TCP, $(nproc) CPUs, ${RUN_SECONDS} s runs, $ROUNDS round(s), $(date -u +%Y-%m-%dT%H:%MZ)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$OUT/summary.txt"
echo
echo "raw results: $RESULTS"
if [ "$FAILED" = 1 ] || [ "$SUMMARY_STATUS" -ne 0 ]; then
    echo "SOME RUNS FAILED their delivery check: $OUT/discrepancies.txt" >&2
    exit 2
fi
