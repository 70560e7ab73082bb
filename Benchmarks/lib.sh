# Shared helpers of Benchmarks/compare.sh and Benchmarks/resources.sh (sourced, not run): building, finding a free
# port, starting kvod and Redis on loopback, and stopping only what this script started. Every wait is bounded.

BENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SCRATCH="${KVOD_BENCH_SCRATCH:-$BENCH_ROOT/.build-bench}"
KVOD_BIN="$SCRATCH/release/kvod"
BENCH_BIN="$SCRATCH/release/kvod-bench"
STARTED_PIDS=()

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Builds the release kvod and kvod-bench into the private scratch directory (no lock fights with other builds).
build_release() {
    log "building kvod and kvod-bench (release, scratch $SCRATCH)"
    (cd "$BENCH_ROOT" && bash .ci/fresh-build-dir.sh release "$SCRATCH" \
        && swift build -c release --scratch-path "$SCRATCH" --product kvod >&2 \
        && swift build -c release --scratch-path "$SCRATCH" --product kvod-bench >&2) || die "build failed"
}

# Installs a Debian package when its command is missing: ensure_command COMMAND PACKAGE.
ensure_command() {
    command -v "$1" >/dev/null 2>&1 && return 0
    log "installing $2 (apt-get)"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >&2 && $sudo apt-get install -y -qq "$2" >&2 || die "cannot install $2"
    command -v "$1" >/dev/null 2>&1 || die "$1 still missing after installing $2"
}

# Prints a TCP port on 127.0.0.1 that nothing listens on (at most 50 tries).
free_port() {
    local port try
    for try in $(seq 1 50); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free port found"
}

# `taskset -c CPU` when the machine has at least two CPUs and taskset exists; nothing otherwise.
pin() {
    if [ "${NO_PIN:-0}" = 1 ] || ! command -v taskset >/dev/null 2>&1 || [ "$(nproc)" -lt 2 ]; then
        return 0
    fi
    echo "taskset -c $1"
}

# Extra kvod flags for start_kvod (limits, say); flags win over KVOD_* variables and config files.
KVOD_ARGS=()

# Starts kvod on a free port: start_kvod OUTFILE [wrapper...]; sets KVOD_PID and KVOD_PORT. The wrapper (taskset,
# valgrind) goes before the binary. Waits up to WAIT_SECONDS (default 20) for the "listening on" line.
start_kvod() {
    local out="$1"
    shift
    "$@" "$KVOD_BIN" --host 127.0.0.1 --port 0 --log-level warning "${KVOD_ARGS[@]}" >"$out" 2>"$out.stderr" &
    KVOD_PID=$!
    STARTED_PIDS+=("$KVOD_PID")
    local deadline=$((SECONDS + ${WAIT_SECONDS:-20}))
    KVOD_PORT=""
    while [ $SECONDS -lt $deadline ]; do
        # (|| true: the background job may not have created "$out" yet, and pipefail would end the script.)
        KVOD_PORT=$(sed -n 's/^kvod listening on .*:\([0-9][0-9]*\)$/\1/p' "$out" 2>/dev/null | awk 'NR == 1' || true)
        [ -n "$KVOD_PORT" ] && return 0
        kill -0 "$KVOD_PID" 2>/dev/null || die "kvod exited at start: $(cat "$out.stderr")"
        sleep 0.1
    done
    die "kvod did not announce its port within ${WAIT_SECONDS:-20} s"
}

# Starts redis-server (persistence off, loopback only) on a free port: start_redis LOGFILE [wrapper...]; sets
# REDIS_PID and REDIS_PORT and waits up to 10 s for PONG.
start_redis() {
    local logfile="$1" attempt try
    shift
    # A port taken between free_port's check and the bind (its range overlaps the ephemeral ports, which another
    # benchmark's connections may hold) means another try on another port.
    for attempt in 1 2 3; do
        REDIS_PORT=$(free_port)
        "$@" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
            --protected-mode yes --logfile "$logfile" &
        REDIS_PID=$!
        STARTED_PIDS+=("$REDIS_PID")
        for try in $(seq 1 100); do
            [ "$(redis-cli -p "$REDIS_PORT" ping 2>/dev/null)" = "PONG" ] && return 0
            kill -0 "$REDIS_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$REDIS_PID" 2>/dev/null && die "redis-server did not answer PING within 10 s"
        stop_pid "$REDIS_PID"
        grep -q "Address already in use" "$logfile" || die "redis-server exited at start (see $logfile)"
    done
    die "redis-server found no free port (see $logfile)"
}

# Stops one process this script started (SIGTERM, then SIGKILL after 10 s), waits for it, and forgets it, so that
# the exit trap never signals a recycled pid.
stop_pid() {
    local pid="$1" try remaining=() other
    for other in "${STARTED_PIDS[@]}"; do [ "$other" = "$pid" ] || remaining+=("$other"); done
    STARTED_PIDS=("${remaining[@]}")
    kill -0 "$pid" 2>/dev/null || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for try in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

# The exit trap: stops everything still running that this script started.
stop_all() {
    local pid
    for pid in "${STARTED_PIDS[@]}"; do stop_pid "$pid"; done
    return 0
}

# A script's start: stop everything it starts when it exits or is interrupted, build the release binaries unless
# BUILD=0 (--no-build), and check they are there.
prepare_run() {
    trap stop_all EXIT
    trap 'exit 130' INT TERM
    [ "$BUILD" = 1 ] && build_release
    [ -x "$KVOD_BIN" ] && [ -x "$BENCH_BIN" ] || die "missing $KVOD_BIN or $BENCH_BIN (run without --no-build)"
}

# Resident memory of a process in KiB (VmRSS of /proc/PID/status).
rss_kib() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}
