#!/usr/bin/env bash
# kvod beside its peers, side by side in one run, in three tiers that never share a ratio (issue 28):
#   ephemeral  kvod in memory, Redis PUBLISH, NATS core
#   memory     state kept in memory or on tmpfs: kvod --data-dir on tmpfs --fsync no, Redis SET + keyspace
#              notifications (persistence off), etcd with its data directory on tmpfs
#   durable    state on disk, fsynced before the answer: kvod --fsync always, etcd as it starts by default
# and a "whole machine" row: the ephemeral servers unpinned (Go's GOMAXPROCS left alone), the generator unpinned.
# The same generator (kvod-bench fanout: NATS core text protocol, etcd's JSON gateway) runs the fan-out matrix on
# each server in alternation; every server is pinned to CPU 0 (GOMAXPROCS=1 for nats-server and etcd), the
# generator to CPU 1. peers.py prints the tables: per cell, kvod/peer judged by notifications/s, or by server CPU
# per notification where the generator ran at >= 0.9 of its CPU (it says which). Installs nats-server, etcd-server
# and redis-server with apt-get when missing. Everything listens on 127.0.0.1 and is stopped at exit.
#
#   bash Benchmarks/peers.sh            M in 1 10 100 1000, P×D in 1x1 1x16 16x1, 3 s, 3 alternations
#   bash Benchmarks/peers.sh --quick    about five minutes once built: M in 1 100, P×D in 1x1 1x16, 2 s, 2 alternations
#   options: --subscribers "1 10" --shapes "1x16 16x1" --seconds S --warmup S --alternations N --tiers "ephemeral
#            memory durable whole" --whole-cells "100:16x1 1000:1x16" --out DIR --no-build
#            --nice N (every server and the generator at niceness N, e.g. -10: on a machine busy with other work
#            they then get the CPUs they are pinned to, and the rates measure the servers, not the scheduler)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUBSCRIBERS="1 10 100 1000"
SHAPES="1x1 1x16 16x1"
RUN_SECONDS=3
WARMUP=1
ALTERNATIONS=3
TIERS="ephemeral memory durable whole"
WHOLE_CELLS="100:1x16 1000:16x1"
BUILD=1
NICE=0
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick)
            SUBSCRIBERS="1 100"; SHAPES="1x1 1x16"; RUN_SECONDS=2; WARMUP=0.5; ALTERNATIONS=2
            WHOLE_CELLS="100:1x16"; shift ;;
        --subscribers) SUBSCRIBERS="$2"; shift 2 ;;
        --shapes) SHAPES="$2"; shift 2 ;;
        --seconds) RUN_SECONDS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --alternations) ALTERNATIONS="$2"; shift 2 ;;
        --tiers) TIERS="$2"; shift 2 ;;
        --whole-cells) WHOLE_CELLS="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --nice) NICE="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
        *) die "unknown option $1 (see --help)" ;;
    esac
done
case "$ALTERNATIONS" in ''|*[!0-9]*) die "--alternations must be a number" ;; esac
case "$NICE" in ''|*[!0-9-]*) die "--nice must be a number" ;; esac
[ "$ALTERNATIONS" -ge 1 ] && [ "$ALTERNATIONS" -le 20 ] || die "--alternations must be 1...20"

OUT="${OUT:-${TMPDIR:-/tmp}/kvod-peers-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
RESULTS="$OUT/peers.jsonl"
: >"$RESULTS"
STARTED_AT=$(date -u +%Y-%m-%dT%H:%MZ)
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
prepare_run
ensure_command redis-server redis-server
ensure_command nats-server nats-server
ensure_command etcd etcd-server

# Where each tier keeps its data: tmpfs for "memory", the disk for "durable" (the build scratch directory, which is
# never tmpfs here; said in the report).
TMPFS_DIR=/dev/shm
[ "$(stat -f -c %T "$TMPFS_DIR" 2>/dev/null)" = tmpfs ] || die "$TMPFS_DIR is not a tmpfs"
TMPFS_DATA=$(mktemp -d "$TMPFS_DIR/kvod-peers.XXXXXX")
DISK_DATA=$(mktemp -d "$SCRATCH/peers-data.XXXXXX")
DISK_FS=$(stat -f -c %T "$DISK_DATA")
[ "$DISK_FS" = tmpfs ] && log "warning: $DISK_DATA is on tmpfs: the durable tier is not on disk"
cleanup_data() { rm -rf "$TMPFS_DATA" "$DISK_DATA"; }
trap 'stop_all; cleanup_data' EXIT

# Starts nats-server on a free port: start_nats LOG [wrapper...]; sets NATS_PID and NATS_PORT. A port taken between
# the check and the bind (free_port's range overlaps the ephemeral ports) means another try on another port.
start_nats() {
    local logfile="$1" attempt try
    shift
    for attempt in 1 2 3; do
        NATS_PORT=$(free_port)
        "$@" nats-server -a 127.0.0.1 -p "$NATS_PORT" >"$logfile" 2>&1 &
        NATS_PID=$!
        STARTED_PIDS+=("$NATS_PID")
        for try in $(seq 1 100); do
            grep -q "Server is ready" "$logfile" 2>/dev/null && return 0
            kill -0 "$NATS_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$NATS_PID" 2>/dev/null && die "nats-server did not get ready within 10 s"
        stop_pid "$NATS_PID"
        grep -q "address already in use" "$logfile" || die "nats-server exited at start (see $logfile)"
    done
    die "nats-server found no free port (see $logfile)"
}

# Starts a one-member etcd on free ports: start_etcd DATA_DIR LOG [wrapper...]; sets ETCD_PID and ETCD_PORT.
start_etcd() {
    local data="$1" logfile="$2" peer attempt try
    shift 2
    for attempt in 1 2 3; do
        ETCD_PORT=$(free_port)
        peer=$(free_port)
        [ "$peer" != "$ETCD_PORT" ] || continue
        "$@" etcd --name peers --data-dir "$data" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
            --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$peer" \
            --initial-advertise-peer-urls "http://127.0.0.1:$peer" --initial-cluster "peers=http://127.0.0.1:$peer" \
            >"$logfile" 2>&1 &
        ETCD_PID=$!
        STARTED_PIDS+=("$ETCD_PID")
        for try in $(seq 1 200); do
            if python3 -c "import urllib.request,sys; urllib.request.urlopen(urllib.request.Request(
'http://127.0.0.1:$ETCD_PORT/v3/kv/range', data=b'{\"key\":\"AA==\"}'), timeout=1)" 2>/dev/null; then
                return 0
            fi
            kill -0 "$ETCD_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$ETCD_PID" 2>/dev/null && die "etcd did not answer within 20 s"
        stop_pid "$ETCD_PID"
        grep -q "address already in use" "$logfile" || die "etcd exited at start (see $logfile)"
    done
    die "etcd found no free ports (see $logfile)"
}

# Series of the tier being run: "name kvod-bench-arguments" (a pid and a port each), filled by start_tier.
SERIES=()
TIER_PIDS=()
# start_tier TIER: starts that tier's servers (pinned to CPU 0 unless TIER is "whole").
start_tier() {
    local tier="$1" wrap=() go=(env GOMAXPROCS=1)
    SERIES=()
    TIER_PIDS=()
    if [ "$tier" = whole ]; then go=(env); else wrap=($(pin 0)); fi
    [ "$NICE" = 0 ] || wrap=(nice -n "$NICE" "${wrap[@]}")
    case "$tier" in
        ephemeral|whole)
            KVOD_ARGS=()
            start_kvod "$OUT/$tier-kvod.stdout" "${wrap[@]}"
            SERIES+=("kvod --target kvod --port $KVOD_PORT --server-pid $KVOD_PID")
            start_redis "$OUT/$tier-redis.log" "${wrap[@]}"
            SERIES+=("redis-publish --target redis --redis-command publish --port $REDIS_PORT --server-pid $REDIS_PID")
            start_nats "$OUT/$tier-nats.log" "${go[@]}" "${wrap[@]}"
            SERIES+=("nats --target nats --port $NATS_PORT --server-pid $NATS_PID")
            TIER_PIDS=("$KVOD_PID" "$REDIS_PID" "$NATS_PID") ;;
        memory)
            KVOD_ARGS=(--data-dir "$TMPFS_DATA/kvod" --fsync no)
            start_kvod "$OUT/$tier-kvod.stdout" "${wrap[@]}"
            SERIES+=("kvod-fsync-no --target kvod --port $KVOD_PORT --server-pid $KVOD_PID")
            start_redis "$OUT/$tier-redis.log" "${wrap[@]}"
            SERIES+=("redis-set --target redis --redis-command set --port $REDIS_PORT --server-pid $REDIS_PID")
            start_etcd "$TMPFS_DATA/etcd" "$OUT/$tier-etcd.log" "${go[@]}" "${wrap[@]}"
            SERIES+=("etcd-tmpfs --target etcd --port $ETCD_PORT --server-pid $ETCD_PID")
            TIER_PIDS=("$KVOD_PID" "$REDIS_PID" "$ETCD_PID") ;;
        durable)
            KVOD_ARGS=(--data-dir "$DISK_DATA/kvod" --fsync always)
            start_kvod "$OUT/$tier-kvod.stdout" "${wrap[@]}"
            SERIES+=("kvod-fsync-always --target kvod --port $KVOD_PORT --server-pid $KVOD_PID")
            start_etcd "$DISK_DATA/etcd" "$OUT/$tier-etcd.log" "${go[@]}" "${wrap[@]}"
            SERIES+=("etcd-disk --target etcd --port $ETCD_PORT --server-pid $ETCD_PID")
            TIER_PIDS=("$KVOD_PID" "$ETCD_PID") ;;
        *) die "unknown tier $tier (ephemeral, memory, durable, whole)" ;;
    esac
    KVOD_ARGS=()
}

stop_tier() {
    local pid
    for pid in "${TIER_PIDS[@]}"; do stop_pid "$pid"; done
}

FAILED=0
RUN_TIMEOUT=$(awk -v s="$RUN_SECONDS" -v w="$WARMUP" 'BEGIN { printf "%d", s + w + 150 }')
# run_one TIER SERIES-LINE M P D: one fan-out run, appended to the results as one JSON line.
run_one() {
    local tier="$1" line="$2" m="$3" p="$4" d="$5" status=0 name args wrap=()
    name="${line%% *}"
    read -r -a args <<<"${line#* }"
    [ "$tier" = whole ] || wrap=($(pin 1))
    [ "$NICE" = 0 ] || wrap=(nice -n "$NICE" "${wrap[@]}")
    timeout "$RUN_TIMEOUT" "${wrap[@]}" "$BENCH_BIN" fanout "${args[@]}" --series "$tier/$name" \
        --subscribers "$m" --publishers "$p" --pipeline "$d" --seconds "$RUN_SECONDS" --warmup "$WARMUP" --json \
        >>"$RESULTS" 2>>"$OUT/discrepancies.txt" || status=$?
    if [ "$status" -ne 0 ]; then
        FAILED=1
        log "FAILED ($status): $tier/$name M=$m P×D=${p}x$d (see $OUT/discrepancies.txt)"
    fi
}

# run_cells TIER "M:PxD ...": every cell, every series of the tier, alternating the order.
run_cells() {
    local tier="$1" cells="$2" alternation cell m shape order index
    for alternation in $(seq 1 "$ALTERNATIONS"); do
        for cell in $cells; do
            m="${cell%%:*}"
            shape="${cell#*:}"
            log "$tier, alternation $alternation/$ALTERNATIONS: M=$m P×D=$shape"
            order=("${!SERIES[@]}")
            if [ $((alternation % 2)) -eq 0 ]; then order=($(printf '%s\n' "${order[@]}" | tac)); fi
            for index in "${order[@]}"; do
                run_one "$tier" "${SERIES[$index]}" "$m" "${shape%x*}" "${shape#*x}"
            done
        done
    done
}

MATRIX=""
for m in $SUBSCRIBERS; do for shape in $SHAPES; do MATRIX="$MATRIX $m:$shape"; done; done
for tier in $TIERS; do
    start_tier "$tier"
    if [ "$tier" = whole ]; then run_cells "$tier" "$WHOLE_CELLS"; else run_cells "$tier" "$MATRIX"; fi
    stop_tier
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

{
    echo "kvod and its peers, $STARTED_AT, $(nproc) CPUs; load average $LOAD_BEFORE at the start, $LOAD_AFTER at the end"
    echo "versions: $(redis-server --version | cut -d' ' -f3), nats-server $(nats-server --version 2>&1 | awk '{print $NF}'),"\
        "etcd $(etcd --version 2>/dev/null | awk '/etcd Version/ {print $3}') (JSON gateway, HTTP/1.1);" \
        "tmpfs data in $TMPFS_DIR, disk data on $DISK_FS; niceness $NICE"
    echo
    python3 "$BENCH_ROOT/Benchmarks/peers.py" "$RESULTS" || FAILED=1
} | tee "$OUT/report.txt"
log "results in $OUT"
exit "$FAILED"
