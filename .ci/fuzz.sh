#!/usr/bin/env bash
# .ci/fuzz.sh [SECONDS]: builds the libFuzzer targets of Tests/Fuzz (docs/RELIABILITY.md) with AddressSanitizer into
# their own scratch directory (.build-fuzz, never the normal .build) and runs each for SECONDS (default 60; 0 only
# replays the seed corpora). Fails if any target crashes, trips an invariant, leaks, times out or runs out of memory;
# the input that did it is copied to the artifacts directory and printed, ready to become a regression test.
#
# Environment: FUZZ_TARGETS (default: all four), FUZZ_CONFIG (release, the default, runs 2-4x more inputs per second
# than debug; debug also checks `assert`s), FUZZ_SCRATCH (.build-fuzz), FUZZ_ARTIFACTS ($FUZZ_SCRATCH/artifacts),
# FUZZ_ARGS (extra libFuzzer options, e.g. "-jobs=2 -workers=2" or "-max_len=8192").
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
targets=${FUZZ_TARGETS:-FuzzJSONRPC FuzzKeyPath FuzzExpression FuzzModelFile}
read -r -a extra <<<"${FUZZ_ARGS:-}"

if ! [[ "$seconds" =~ ^[0-9]+$ ]]; then
    echo "usage: .ci/fuzz.sh [SECONDS]  (SECONDS per target, default 60; 0 replays the seed corpora only)" >&2
    exit 2
fi
mkdir -p "$artifacts"
flags=(-Xswiftc -sanitize=fuzzer,address -Xswiftc -DKVOD_LIBFUZZER -Xswiftc -use-ld=lld)

failed=()
summary=()
for target in $targets; do
    echo "fuzz: building $target ($config, $scratch)"
    mkdir -p "$scratch"
    if ! swift build -c "$config" --scratch-path "$scratch" --product "$target" "${flags[@]}" \
        >"$scratch/$target.build.log" 2>&1; then
        grep -v "Cannot export local symbol" "$scratch/$target.build.log" | tail -n 30 >&2
        echo "fuzz: $target does not build" >&2
        failed+=("$target (build)")
        continue
    fi
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
    SWIFT_BACKTRACE=enable=no \
        LSAN_OPTIONS="suppressions=$(pwd)/Tests/Fuzz/lsan-suppressions.txt" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}abort_on_error=0:detect_stack_use_after_return=1" \
        "$binary" "${options[@]}" "${extra[@]}" "$work" "Tests/Fuzz/corpus/$target" >"$log" 2>&1
    status=$?
    after=$(ls "$artifacts" | grep -c "^$target-" || true)
    runs=$(grep -m1 "stat::number_of_executed_units" "$log" | awk '{print $2}')
    rate=$(grep -m1 "stat::average_exec_per_sec" "$log" | awk '{print $2}')
    corpus=$(ls "$work" | wc -l)
    summary+=("$(printf '%-15s %10s runs %8s exec/s %6s new corpus files  exit %s' \
        "$target" "${runs:-?}" "${rate:-?}" "$corpus" "$status")")
    if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
        failed+=("$target")
        echo "fuzz: $target FAILED (exit $status); the end of its log ($log):" >&2
        grep -E "ERROR|SUMMARY|Fatal error|invariant|Test unit written|Base64" "$log" | head -n 20 >&2
        tail -n 30 "$log" >&2
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
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FAILED: ${failed[*]} (inputs in $artifacts)" >&2
    exit 1
fi
echo "fuzz: no crashes"
