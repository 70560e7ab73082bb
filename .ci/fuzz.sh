#!/usr/bin/env bash
# .ci/fuzz.sh [SECONDS]: builds the libFuzzer targets of Tests/Fuzz (docs/RELIABILITY.md) with AddressSanitizer into
# their own scratch directory (.build-fuzz, never the normal .build) and runs each for SECONDS (default 60; 0 only
# replays the seed corpora). Fails if any target crashes, trips an invariant, leaks, times out or runs out of memory;
# the input that did it is copied to the artifacts directory and printed, ready to become a regression test.
#
# Prints each target's build and run time, then `fuzz: PASS ...` or `fuzz: FAIL ...` as its last line. Never hangs:
# each build is bounded by FUZZ_BUILD_TIMEOUT (1800 s) and each run by SECONDS + 300 s (600 s for a replay); a run
# that overstays is killed and counts as a failure.
#
# Environment: FUZZ_TARGETS (default: all seven), FUZZ_CONFIG (release, the default, runs 2-4x more inputs per second
# than debug; debug also checks `assert`s), FUZZ_SCRATCH (.build-fuzz), FUZZ_ARTIFACTS ($FUZZ_SCRATCH/artifacts),
# FUZZ_ARGS (extra libFuzzer options, e.g. "-jobs=2 -workers=2" or "-max_len=8192"), FUZZ_BUILD_TIMEOUT,
# FUZZ_RUN_TIMEOUT (per target; default SECONDS + 300).
#
# What works with Swift 6.3 on Linux, and why each flag is here:
# - `-sanitize=fuzzer,address` instruments every module of the product for coverage and memory errors; the normal
#   build is untouched because the flags go to a separate --scratch-path.
# - `-D KVOD_LIBFUZZER` switches Tests/Fuzz/FuzzSupport from replaying files to calling LLVMFuzzerRunDriver.
# - `-use-ld=lld`: gold (the default linker) dies with "internal error in format_file_lineno" on some ASan builds.
# - SWIFT_BACKTRACE=enable=no: Swift's backtracer would otherwise catch the crash before libFuzzer saves the input.
# - LSAN_OPTIONS suppressions: see Tests/Fuzz/lsan-suppressions.txt (globals holding enum values look leaked).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
config=${FUZZ_CONFIG:-release}
scratch=${FUZZ_SCRATCH:-.build-fuzz}
artifacts=${FUZZ_ARTIFACTS:-$scratch/artifacts}
targets=${FUZZ_TARGETS:-FuzzJSONRPC FuzzKeyPath FuzzExpression FuzzModelFile FuzzSnapshot FuzzWebSocket FuzzEngine FuzzTLS}
read -r -a extra <<<"${FUZZ_ARGS:-}"

if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
    echo "usage: .ci/fuzz.sh [SECONDS]  (SECONDS per target, default 60; 0 replays the seed corpora only)" >&2
    exit 2
fi
started=$SECONDS
build_timeout=${FUZZ_BUILD_TIMEOUT:-1800}
if [ "$seconds" -eq 0 ]; then run_timeout=600; else run_timeout=$((seconds + 300)); fi
run_timeout=${FUZZ_RUN_TIMEOUT:-$run_timeout}
bash .ci/deps.sh || { echo "fuzz: FAIL: could not install the build dependencies (.ci/deps.sh)" >&2; exit 1; }
mkdir -p "$artifacts"
flags=(-Xswiftc -sanitize=fuzzer,address -Xswiftc -DKVOD_LIBFUZZER -Xswiftc -use-ld=lld)

failed=()
summary=()
for target in $targets; do
    echo "fuzz: building $target ($config, $scratch)"
    mkdir -p "$scratch"
    build_started=$SECONDS
    timeout -k 30 "$build_timeout" swift build -c "$config" --scratch-path "$scratch" --product "$target" "${flags[@]}" \
        >"$scratch/$target.build.log" 2>&1 </dev/null
    status=$?
    build_time=$((SECONDS - build_started))
    if [ $status -ne 0 ]; then
        grep -v "Cannot export local symbol" "$scratch/$target.build.log" | tail -n 30 | cut -c1-400 >&2
        [ $status -eq 124 ] && echo "fuzz: the build of $target took over ${build_timeout}s and was stopped" >&2
        echo "fuzz: $target does not build (exit $status, ${build_time}s)" >&2
        failed+=("$target (build)")
        summary+=("$(printf '%-15s build FAILED after %ss (exit %s)' "$target" "$build_time" "$status")")
        continue
    fi
    echo "fuzz: built $target in ${build_time}s"
    binary="$scratch/$config/$target"

    # New inputs go to the scratch corpus (first directory); the repository's seeds are only read.
    work="$scratch/corpus/$target"
    mkdir -p "$work"
    log="$scratch/$target.log"
    options=(-print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/$target-")
    if [ "$seconds" -eq 0 ]; then options+=(-runs=0); else options+=(-max_total_time="$seconds"); fi
    [ -f "Tests/Fuzz/dictionaries/$target.dict" ] && options+=(-dict="Tests/Fuzz/dictionaries/$target.dict")
    echo "fuzz: running $target for ${seconds}s"
    before=$(ls "$artifacts" | grep -c "^$target-" || true)
    run_started=$SECONDS
    SWIFT_BACKTRACE=enable=no \
        LSAN_OPTIONS="suppressions=$(pwd)/Tests/Fuzz/lsan-suppressions.txt" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}abort_on_error=0:detect_stack_use_after_return=1" \
        timeout -k 30 "$run_timeout" \
        "$binary" "${options[@]}" "${extra[@]}" "$work" "Tests/Fuzz/corpus/$target" >"$log" 2>&1 </dev/null
    status=$?
    run_time=$((SECONDS - run_started))
    after=$(ls "$artifacts" | grep -c "^$target-" || true)
    runs=$(grep -m1 "stat::number_of_executed_units" "$log" | awk '{print $2}')
    rate=$(grep -m1 "stat::average_exec_per_sec" "$log" | awk '{print $2}')
    corpus=$(ls "$work" | wc -l)
    summary+=("$(printf '%-15s build %4ss  run %4ss %10s runs %8s exec/s %6s new corpus files  exit %s' \
        "$target" "$build_time" "$run_time" "${runs:-?}" "${rate:-?}" "$corpus" "$status")")
    if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
        failed+=("$target")
        [ $status -eq 124 ] && echo "fuzz: $target ran over ${run_timeout}s and was stopped" >&2
        echo "fuzz: $target FAILED (exit $status); the end of its log ($log):" >&2
        grep -E "ERROR|SUMMARY|Fatal error|invariant|Test unit written|Base64" "$log" | head -n 20 | cut -c1-400 >&2
        tail -n 30 "$log" | cut -c1-400 >&2
        for file in $(ls -t "$artifacts" | grep "^$target-" | head -n $((after - before))); do
            echo "fuzz: saved $artifacts/$file ($(wc -c <"$artifacts/$file") bytes); first bytes:" >&2
            head -c 512 "$artifacts/$file" | od -A d -c | head -n 12 >&2
            echo "fuzz: reproduce with: SWIFT_BACKTRACE=enable=no $binary $artifacts/$file" >&2
            echo "fuzz: then add it as a Swift Testing case (Tests/<Module>Tests/FuzzRegressionTests.swift) and, once" \
                "fixed, to Tests/Fuzz/corpus/$target/" >&2
        done
    fi
done

echo "fuzz: summary ($config, ${seconds}s per target, $(date -u +%Y-%m-%dT%H:%MZ))"
printf '  %s\n' "${summary[@]}"
count=$(wc -w <<<"$targets")
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAIL: ${failed[*]} (inputs in $artifacts; $((SECONDS - started))s in all)"
    exit 1
fi
echo "fuzz: PASS: $count targets, ${seconds}s each, no crashes ($((SECONDS - started))s in all)"
