# `websocket.sh --callgrind` (sourced by it, after the build): kvod under callgrind for the same fixed fan-out
# workloads over TCP and over WebSocket, and the instructions per notification of each, so the WebSocket path's cost
# is known exactly where the timed runs are noisy. Workloads (as in resources.sh): M=10 subscribers, 1 publisher, one
# set in flight, 10,000 sets minus a 1,000-set run (start-up and set-up subtracted); and M=100, pipeline 16, 2,000
# sets, whole run. The top self-cost entries of the M=100 WebSocket run go to the output directory.
ensure_command valgrind valgrind
ensure_command callgrind_annotate valgrind

# profile NAME TRANSPORT SUBSCRIBERS PIPELINE SETS: one kvod under callgrind for one workload; sets TOTAL_IR.
profile() {
    local name="$1" transport="$2" subscribers="$3" pipeline="$4" sets="$5" total
    WAIT_SECONDS=120 start_kvod "$OUT/kvod-callgrind-$name.stdout" \
        valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.$name.out"
    timeout 900 "$BENCH_BIN" fanout --port "$KVOD_PORT" --transport "$transport" --subscribers "$subscribers" \
        --publishers 1 --pipeline "$pipeline" --count "$sets" --json >"$OUT/callgrind-$name.json" 2>&1 \
        || die "workload $name failed: $(cat "$OUT/callgrind-$name.json")"
    stop_pid "$KVOD_PID"
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$OUT/callgrind.$name.out")
    [ -n "$total" ] || die "no totals in $OUT/callgrind.$name.out"
    TOTAL_IR=$total
}
# per NUMERATOR DENOMINATOR DECIMALS
per() { awk -v a="$1" -v n="$2" -v d="$3" 'BEGIN { printf "%.*f", d, a / n }'; }

declare -A NARROW WIDE
for transport in tcp websocket; do
    log "callgrind ($transport): M=10, one in flight, 10000 and 1000 sets; M=100, pipeline 16, 2000 sets"
    profile "$transport-full" "$transport" 10 1 10000
    full=$TOTAL_IR
    profile "$transport-small" "$transport" 10 1 1000
    NARROW[$transport]=$(per $((full - TOTAL_IR)) 90000 0)
    profile "$transport-wide" "$transport" 100 16 2000
    WIDE[$transport]=$(per "$TOTAL_IR" 200000 0)
done
callgrind_annotate "$OUT/callgrind.websocket-wide.out" 2>/dev/null | grep -E '^ *[0-9,]+ \([ 0-9.]+%\) ' \
    | grep -v 'PROGRAM TOTALS' | swift demangle --simplified | sed -E 's/ \[[^]]*\]$//' | awk 'NR <= 25' \
    | cut -c1-200 >"$OUT/websocket-wide-self.txt"
callgrind_annotate "$OUT/callgrind.tcp-wide.out" 2>/dev/null | grep -E '^ *[0-9,]+ \([ 0-9.]+%\) ' \
    | grep -v 'PROGRAM TOTALS' | swift demangle --simplified | sed -E 's/ \[[^]]*\]$//' | awk 'NR <= 25' \
    | cut -c1-200 >"$OUT/tcp-wide-self.txt"
{
    echo "kvod instructions per notification (callgrind Ir), TCP and WebSocket"
    echo "  M=10, one in flight (10000 minus 1000 sets): TCP ${NARROW[tcp]}, WebSocket ${NARROW[websocket]}," \
        "WS/TCP $(per "${NARROW[websocket]}" "${NARROW[tcp]}" 2)"
    echo "  M=100, pipeline 16, 2000 sets (whole run):   TCP ${WIDE[tcp]}, WebSocket ${WIDE[websocket]}," \
        "WS/TCP $(per "${WIDE[websocket]}" "${WIDE[tcp]}" 2)"
    echo
    echo "-- top self cost, M=100 over WebSocket"
    cat "$OUT/websocket-wide-self.txt"
    echo
    echo "-- top self cost, M=100 over TCP"
    cat "$OUT/tcp-wide-self.txt"
} | tee "$OUT/callgrind.txt"
echo "callgrind files: $OUT"
