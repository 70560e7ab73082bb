#!/usr/bin/env bash
# Resource figures of kvod: resident memory per idle connection (10k connections) and per subscription (100k
# subscriptions over 100 connections), from VmRSS; and CPU per notification as instructions counted by callgrind on
# a fixed workload (1 publisher, 10 subscribers, 20k sets, one in flight), which repeats exactly, plus the top
# functions of that profile. Everything is on 127.0.0.1 and stopped at exit. Usage: Benchmarks/README.md.
#
#   bash Benchmarks/resources.sh [--connections N] [--subscriptions N] [--sets N] [--no-callgrind] [--no-build]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CONNECTIONS=10000
SUBSCRIPTIONS=100000
SUBSCRIPTION_CONNECTIONS=100
SETS=20000
CALLGRIND=1
BUILD=1
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --connections) CONNECTIONS="$2"; shift 2 ;;
        --subscriptions) SUBSCRIPTIONS="$2"; shift 2 ;;
        --sets) SETS="$2"; shift 2 ;;
        --no-callgrind) CALLGRIND=0; shift ;;
        --no-build) BUILD=0; shift ;;
        --out) OUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
OUT="${OUT:-${TMPDIR:-/tmp}/kvod-resources-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
prepare_run

# Both kvod and the holder need one descriptor per connection, plus a margin.
HARD=$(ulimit -Hn)
[ "$HARD" = unlimited ] && HARD=1048576
ulimit -n "$HARD" 2>/dev/null || true
if [ "$CONNECTIONS" -gt $((HARD - 200)) ]; then
    log "the descriptor hard limit is $HARD: scaling the idle-connection test down from $CONNECTIONS to $((HARD - 200))"
    CONNECTIONS=$((HARD - 200))
fi
PER_CONNECTION_SUBSCRIPTIONS=$((SUBSCRIPTIONS / SUBSCRIPTION_CONNECTIONS))
SUBSCRIPTIONS=$((PER_CONNECTION_SUBSCRIPTIONS * SUBSCRIPTION_CONNECTIONS))
# kvod's own limits (10,000 of each by default) must not be what the test hits.
KVOD_ARGS=(--max-connections $((CONNECTIONS + 1000)) --max-subscriptions $((PER_CONNECTION_SUBSCRIPTIONS + 1000)))

# hold_and_measure NAME CONNECTIONS PER_CONNECTION PATHS: on a fresh kvod, opens the connections (and subscriptions),
# waits for "ready", lets the server settle, and sets DELTA_KIB to the server's VmRSS delta (after minus before).
# It runs in this shell, never in $(...), so the exit trap knows every process it starts.
hold_and_measure() {
    local name="$1" connections="$2" per_connection="$3" paths="$4" before after holder line deadline
    start_kvod "$OUT/kvod-$name.stdout"
    sleep 0.3
    before=$(rss_kib "$KVOD_PID")
    "$BENCH_BIN" hold --port "$KVOD_PORT" --connections "$connections" \
        --subscriptions-per-connection "$per_connection" --paths "$paths" --hold-seconds 120 \
        >"$OUT/hold-$name.txt" 2>&1 &
    holder=$!
    STARTED_PIDS+=("$holder")
    deadline=$((SECONDS + 120))
    until grep -q '^ready' "$OUT/hold-$name.txt" 2>/dev/null; do
        kill -0 "$holder" 2>/dev/null || die "hold $name failed: $(cat "$OUT/hold-$name.txt")"
        [ $SECONDS -lt $deadline ] || die "hold $name not ready within 120 s"
        sleep 0.2
    done
    sleep 1
    after=$(rss_kib "$KVOD_PID")
    stop_pid "$holder"
    stop_pid "$KVOD_PID"
    log "$name: kvod VmRSS $before KiB -> $after KiB ($(head -n1 "$OUT/hold-$name.txt"))"
    DELTA_KIB=$((after - before))
}

# bytes PER_KIB_DELTA COUNT: KiB delta spread over COUNT, in bytes with one decimal.
per_item() { awk -v kib="$1" -v n="$2" 'BEGIN { printf "%.0f", kib * 1024 / n }'; }

log "memory: $CONNECTIONS idle connections"
hold_and_measure idle "$CONNECTIONS" 0 1
IDLE_KIB=$DELTA_KIB
log "memory: baseline of $SUBSCRIPTION_CONNECTIONS connections without subscriptions"
hold_and_measure base "$SUBSCRIPTION_CONNECTIONS" 0 1
BASE_KIB=$DELTA_KIB
log "memory: $SUBSCRIPTIONS subscriptions on 1000 paths"
hold_and_measure shared "$SUBSCRIPTION_CONNECTIONS" "$PER_CONNECTION_SUBSCRIPTIONS" 1000
SHARED_KIB=$DELTA_KIB
log "memory: $SUBSCRIPTIONS subscriptions on $SUBSCRIPTIONS distinct paths"
hold_and_measure distinct "$SUBSCRIPTION_CONNECTIONS" "$PER_CONNECTION_SUBSCRIPTIONS" "$SUBSCRIPTIONS"
DISTINCT_KIB=$DELTA_KIB

{
    echo "kvod resident memory (VmRSS deltas on a fresh kvod each, $(date -u +%Y-%m-%dT%H:%MZ))"
    echo "  per idle connection:   $(per_item "$IDLE_KIB" "$CONNECTIONS") bytes" \
        " ($CONNECTIONS connections, +$IDLE_KIB KiB)"
    echo "  per subscription:      $(per_item $((SHARED_KIB - BASE_KIB)) "$SUBSCRIPTIONS") bytes  ($SUBSCRIPTIONS" \
        "subscriptions on 1000 paths over $SUBSCRIPTION_CONNECTIONS connections, +$((SHARED_KIB - BASE_KIB)) KiB)"
    echo "  per subscription:      $(per_item $((DISTINCT_KIB - BASE_KIB)) "$SUBSCRIPTIONS") bytes  ($SUBSCRIPTIONS" \
        "subscriptions on as many distinct paths, +$((DISTINCT_KIB - BASE_KIB)) KiB)"
} | tee "$OUT/memory.txt"

[ "$CALLGRIND" = 1 ] || exit 0
ensure_command valgrind valgrind
ensure_command callgrind_annotate valgrind

# profile NAME SUBSCRIBERS PIPELINE SETS: kvod under callgrind for one fixed fan-out workload; sets TOTAL_IR.
profile() {
    local name="$1" subscribers="$2" pipeline="$3" sets="$4" total
    WAIT_SECONDS=120 start_kvod "$OUT/kvod-callgrind-$name.stdout" \
        valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.$name.out"
    timeout 900 "$BENCH_BIN" fanout --port "$KVOD_PORT" --subscribers "$subscribers" --publishers 1 \
        --pipeline "$pipeline" --count "$sets" --json >"$OUT/callgrind-$name.json" 2>&1 \
        || die "workload $name failed: $(cat "$OUT/callgrind-$name.json")"
    stop_pid "$KVOD_PID"
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$OUT/callgrind.$name.out")
    [ -n "$total" ] || die "no totals in $OUT/callgrind.$name.out"
    TOTAL_IR=$total
}

# mallocs FILE: calls to malloc recorded in a callgrind output (names are compressed as "(id) name").
mallocs() {
    awk '
        /^c?fn=\(/ {
            id = $0; sub(/^c?fn=\(/, "", id); rest = id; sub(/\).*$/, "", id)
            sub(/^[0-9]+\) ?/, "", rest)
            if (rest != "") name[id] = rest
            current = ($0 ~ /^cfn=/) ? name[id] : ""
            next
        }
        /^calls=/ { if (current == "malloc") { split($0, c, /[= ]/); sum += c[2] } }
        END { printf "%d", sum }
    ' "$1"
}

log "callgrind: 1 publisher, 10 subscribers, $SETS sets, one in flight" \
    "(and a $((SETS / 10))-set run to subtract start-up)"
SMALL_SETS=$((SETS / 10))
profile full 10 1 "$SETS"
IR_FULL=$TOTAL_IR
profile small 10 1 "$SMALL_SETS"
IR_SMALL=$TOTAL_IR
log "callgrind: 100 subscribers, pipeline 16, 5000 sets"
profile wide 100 16 5000
IR_WIDE=$TOTAL_IR
NOTIFICATIONS=$((SETS * 10))
MALLOCS_FULL=$(mallocs "$OUT/callgrind.full.out")
MALLOCS_SMALL=$(mallocs "$OUT/callgrind.small.out")
MALLOCS_WIDE=$(mallocs "$OUT/callgrind.wide.out")
# ratio NUMERATOR DENOMINATOR DECIMALS
ratio() { awk -v a="$1" -v n="$2" -v d="$3" 'BEGIN { printf "%.*f", d, a / n }'; }
MARGINAL_SETS=$((SETS - SMALL_SETS))
{
    echo "kvod instructions per notification (callgrind Ir; the one-in-flight workload repeats exactly)"
    echo "  M=10, D=1, $SETS sets:   total $IR_FULL Ir / $NOTIFICATIONS notifications =" \
        "$(ratio "$IR_FULL" "$NOTIFICATIONS" 0) Ir"
    echo "  the same, start-up and set-up subtracted ($SETS minus $SMALL_SETS sets):" \
        "$(ratio $((IR_FULL - IR_SMALL)) $((MARGINAL_SETS * 10)) 0) Ir," \
        "$(ratio $((MALLOCS_FULL - MALLOCS_SMALL)) $((MARGINAL_SETS * 10)) 2) mallocs"
    echo "  per set (request + 10 notifications + response):" \
        "$(ratio $((IR_FULL - IR_SMALL)) "$MARGINAL_SETS" 0) Ir," \
        "$(ratio $((MALLOCS_FULL - MALLOCS_SMALL)) "$MARGINAL_SETS" 1) mallocs"
    echo "  M=100, D=16, 5000 sets: total $IR_WIDE Ir / 500000 notifications =" \
        "$(ratio "$IR_WIDE" 500000 0) Ir, $(ratio "$MALLOCS_WIDE" 500000 2) mallocs (start-up included)"
} | tee "$OUT/cpu.txt"

for name in full wide; do
    callgrind_annotate --inclusive=yes "$OUT/callgrind.$name.out" >"$OUT/callgrind-$name-inclusive.txt" 2>/dev/null
    callgrind_annotate "$OUT/callgrind.$name.out" >"$OUT/callgrind-$name-self.txt" 2>/dev/null
done
# entries FILE: the function lines of a callgrind_annotate listing, demangled, without the binary's path.
entries() {
    grep -E '^ *[0-9,]+ \([ 0-9.]+%\) ' "$1" | grep -v 'PROGRAM TOTALS' | swift demangle "${@:2}" \
        | sed -E 's/ \[[^]]*\]$//'
}
# The frames every request passes through on its way to a handler (they would fill the inclusive list).
CHAIN='Sources/kvod/|EventLoop.run|onReadCompleted|TCPStream.didRead|TCPTransport.start|TCPTransport.received'
CHAIN="$CHAIN|Session.transportReceived|LineFramer.feed|Dispatcher.handle|Dispatcher.perform|Dispatcher.call"
{
    for name in wide full; do
        case "$name" in
            wide) echo "== callgrind, M=100 subscribers, 1 publisher, pipeline 16, 5000 sets" ;;
            full) echo "== callgrind, M=10 subscribers, 1 publisher, pipeline 1, $SETS sets" ;;
        esac
        echo "-- top 15 by self cost (Ir)"
        entries "$OUT/callgrind-$name-self.txt" | awk 'NR <= 15' | cut -c1-220
        echo "-- top 15 by inclusive cost, kvod's own code (Sources/) below the read → dispatch chain"
        entries "$OUT/callgrind-$name-inclusive.txt" --simplified | grep -E '  Sources/' | grep -v -E "$CHAIN" \
            | awk 'NR <= 15' | cut -c1-220
        echo
    done
} | tee "$OUT/profile.txt"
echo "full listings and callgrind files: $OUT"
