#!/usr/bin/env bash
# Builds every target (tests included) and fails if the compiler warned about any file of ours: the project builds
# with no warnings. Dependencies' warnings are not ours to fix and are ignored. (An incremental build only shows
# warnings of files it recompiled; CI builds from a fresh clone, so it sees them all.)
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift build --build-tests >"$log" 2>&1
status=$?
if [ $status -ne 0 ]; then
    cat "$log"
    exit $status
fi
if grep -E "^$(pwd)/(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: warning:" "$log" | sort -u; then
    echo "build: the compiler warned about our code (above); kvod builds with no warnings" >&2
    exit 1
fi
tail -n 1 "$log"
