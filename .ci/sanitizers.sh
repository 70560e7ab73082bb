#!/usr/bin/env bash
# .ci/sanitizers.sh [asan] [tsan] [valgrind]: the reliability checks that need special builds (docs/RELIABILITY.md).
#   asan      the whole Swift test suite built with --sanitize=address (scratch .build-asan); the live tests run
#             the ASan-built kvod too, since they take kvod from the test binary's own build directory.
#   tsan      the same with --sanitize=thread (scratch .build-tsan).
#   valgrind  a release kvod (scratch .build-valgrind) under `valgrind --leak-check=full`, driven for a few seconds
#             by a small client (many connections, subscriptions, every kind of mutation, bad input, disconnects),
#             then stopped with SIGTERM: it must exit 0 with no valgrind error and "definitely lost: 0 bytes".
# With no argument, all three run. Sanitizer reports from the test process and from every kvod it starts go to
# files under the scratch directory (log_path), so a report in a child process cannot go unnoticed: any report fails
# the step, and is printed. --sanitize=undefined is not supported by this toolchain.
# Environment: SANITIZER_TEST_FILTER (a `swift test --filter` for a quicker pass), VALGRIND_SECONDS (default 5).
set -uo pipefail
cd "$(dirname "$0")/.."

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(asan tsan valgrind)
filter=()
[ -n "${SANITIZER_TEST_FILTER:-}" ] && filter+=(--filter "$SANITIZER_TEST_FILTER")
results=()
failed=0

now() { date +%s; }

# Prints any sanitizer report files in $1 and returns 1 if there is one.
reports_in() {
    local found=0
    for file in "$1"/*; do
        [ -s "$file" ] || continue
        found=1
        echo "---- $file" >&2
        head -n 60 "$file" >&2
    done
    return $found
}

run_sanitized_suite() {
    local sanitizer=$1 scratch=$2
    local logs="$scratch/sanitizer-reports"
    rm -rf "$logs"
    mkdir -p "$logs"  # also creates the scratch directory, where the build and test logs go
    local start
    start=$(now)
    echo "sanitizers: building the test suite with --sanitize=$sanitizer ($scratch)"
    if ! swift build --build-tests --sanitize="$sanitizer" --scratch-path "$scratch" >"$scratch/build.log" 2>&1; then
        tail -n 40 "$scratch/build.log" >&2
        results+=("$sanitizer: BUILD FAILED")
        failed=1
        return
    fi
    local built
    built=$(now)
    echo "sanitizers: running the test suite under $sanitizer"
    local status
    # detect_leaks=0: LeakSanitizer cannot follow Swift's multi-payload enum payloads (the case tag sits in the
    # pointer's spare bits), so it reports live values (a model's Expression trees, globals) as direct leaks, and a
    # leak report makes kvod exit 1. Leaks are checked with valgrind instead (below), which does not misfire here.
    # halt_on_error=0 for TSan: report every race, not just the first.
    ASAN_OPTIONS="log_path=$(pwd)/$logs/asan:detect_leaks=0:detect_stack_use_after_return=1" \
        TSAN_OPTIONS="log_path=$(pwd)/$logs/tsan:halt_on_error=0:second_deadlock_stack=1" \
        swift test --skip-build --sanitize="$sanitizer" --scratch-path "$scratch" "${filter[@]}" \
        >"$scratch/test.log" 2>&1
    status=$?
    local done_at
    done_at=$(now)
    tail -n 5 "$scratch/test.log"
    local summary="$sanitizer: build $((built - start)) s, tests $((done_at - built)) s, exit $status"
    if [ $status -ne 0 ]; then
        grep -E "✘|error:|failed" "$scratch/test.log" | head -n 40 >&2
        summary+=", TESTS FAILED"
        failed=1
    fi
    if ! reports_in "$logs"; then
        summary+=", SANITIZER REPORTS in $logs"
        failed=1
    else
        summary+=", no sanitizer reports"
    fi
    results+=("$summary")
}

run_valgrind() {
    local scratch=.build-valgrind seconds=${VALGRIND_SECONDS:-5}
    if ! command -v valgrind >/dev/null; then
        results+=("valgrind: NOT INSTALLED (apt-get install valgrind)")
        failed=1
        return
    fi
    local start
    start=$(now)
    echo "sanitizers: building a release kvod for valgrind ($scratch)"
    mkdir -p "$scratch"
    if ! swift build -c release --product kvod --scratch-path "$scratch" >"$scratch/build.log" 2>&1; then
        tail -n 40 "$scratch/build.log" >&2
        results+=("valgrind: BUILD FAILED")
        failed=1
        return
    fi
    local built
    built=$(now)
    local log="$scratch/valgrind.log" out="$scratch/kvod.out"
    rm -f "$log" "$out"
    valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --error-exitcode=99 \
        --log-file="$log" "$scratch/release/kvod" --empty --host 127.0.0.1 --port 0 >"$out" 2>"$scratch/kvod.err" &
    local pid=$!
    local port=""
    for _ in $(seq 1 300); do
        port=$(sed -n 's/.*kvod listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out" | head -n 1)
        [ -n "$port" ] && break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        kill "$pid" 2>/dev/null
        cat "$log" "$scratch/kvod.err" >&2
        results+=("valgrind: kvod did not start under valgrind")
        failed=1
        return
    fi
    echo "sanitizers: driving kvod under valgrind on port $port for ${seconds}s"
    python3 - "$port" "$seconds" <<'PYTHON'
import json, random, socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
random.seed(1)
def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    return s, s.makefile("rb")
def request(conn, method, params, rid=[0]):
    s, f = conn
    rid[0] += 1
    s.sendall(json.dumps({"jsonrpc": "2.0", "id": rid[0], "method": method, "params": params}).encode() + b"\n")
    while True:
        message = json.loads(f.readline())
        if message.get("id") == rid[0]:
            return message
writer = connect()
watchers = [connect() for _ in range(4)]
paths = ["a", "a.b", "a.b.c", "list", "list.@count", "obj", "obj.inner.v"]
for index, watcher in enumerate(watchers):
    for path in paths:
        request(watcher, "subscribe", {"path": path, "options": ["new", "old", "prior", "initial"][: 1 + index % 4]})
deadline, count = time.time() + seconds, 0
while time.time() < deadline:
    count += 1
    roll = random.random()
    if roll < 0.3:
        request(writer, "set", {"path": random.choice(["a.b.c", "a", "obj", "obj.inner.v"]),
                                "value": random.choice([1, "text", None, [1, 2], {"inner": {"v": count}}, {"x": {"y": {}}}])})
    elif roll < 0.5:
        request(writer, random.choice(["insert", "remove", "replace"]),
                {"path": "list", "indexes": [0], "values": [count]} if roll < 0.4 else {"path": "list", "indexes": [0]})
    elif roll < 0.6:
        request(writer, "transaction", {"ops": [{"method": "set", "params": {"path": "obj", "value": {"inner": {"v": count}}}},
                                                {"method": "insert", "params": {"path": "list", "value": count}},
                                                {"method": "remove", "params": {"path": "list", "index": 99 if roll < 0.55 else 0}}]})
    elif roll < 0.7:
        request(writer, "get", {"path": random.choice(paths + [""])})
    elif roll < 0.8:
        # Bad input: a parse error, an invalid request, a wrong param.
        writer[0].sendall(random.choice([b"not json\n", b'{"jsonrpc":"2.0","id":1,"method":7}\n', b"[1,2]\n"]))
        writer[1].readline()
    elif roll < 0.9:
        # A short-lived connection that subscribes, maybe reads, and drops.
        conn = connect()
        request(conn, "subscribe", {"path": "a.b.c", "options": ["new", "old"]})
        conn[0].close()
    else:
        # A watcher drops and comes back.
        index = random.randrange(len(watchers))
        watchers[index][0].close()
        watchers[index] = connect()
        request(watchers[index], "subscribe", {"path": random.choice(paths), "options": ["new", "old", "prior"]})
    for watcher in watchers:
        watcher[0].setblocking(False)
        try:
            while watcher[0].recv(1 << 16):
                pass
        except (BlockingIOError, ConnectionError):
            pass
        watcher[0].setblocking(True)
print(f"sanitizers: {count} operations sent to kvod under valgrind")
PYTHON
    local driver=$?
    kill -TERM "$pid"
    wait "$pid"
    local status=$?
    local done_at
    done_at=$(now)
    local definitely
    definitely=$(grep -E "definitely lost:" "$log" | sed 's/.*definitely lost: //')
    local errors
    errors=$(grep -E "ERROR SUMMARY:" "$log" | sed 's/.*ERROR SUMMARY: //')
    local summary="valgrind: build $((built - start)) s, run $((done_at - built)) s, kvod exit $status, definitely lost: ${definitely:-0 bytes (no leak summary)}, errors: ${errors:-?}"
    if [ $driver -ne 0 ] || [ $status -ne 0 ] || ! grep -qE "ERROR SUMMARY: 0 errors" "$log" \
        || { [ -n "$definitely" ] && [[ "$definitely" != "0 bytes in 0 blocks" ]]; }; then
        summary+=" FAILED (see $log)"
        grep -A 30 "definitely lost in" "$log" | head -n 80 >&2
        grep -B 2 -A 20 "Invalid\|uninitialised\|Mismatched" "$log" | head -n 60 >&2
        failed=1
    fi
    results+=("$summary")
}

for step in "${steps[@]}"; do
    case "$step" in
    asan) run_sanitized_suite address .build-asan ;;
    tsan) run_sanitized_suite thread .build-tsan ;;
    valgrind) run_valgrind ;;
    *)
        echo "usage: .ci/sanitizers.sh [asan] [tsan] [valgrind]" >&2
        exit 2
        ;;
    esac
done

echo "sanitizers: summary ($(date -u +%Y-%m-%dT%H:%MZ))"
printf '  %s\n' "${results[@]}"
exit $failed
