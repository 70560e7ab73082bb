#!/usr/bin/env bash
# `swift format lint` (the Swift 6.3 toolchain's swift-format) with the repository's .swift-format on every Swift file
# of Sources, Tests and Benchmarks, and Package.swift. Every rule finding fails (an unparsable file too); the layout
# findings of its pretty printer (indentation, line breaks, line length, spacing, trailing commas, end-of-line comment
# spacing) are listed as a count only: the code predates the configuration, and reformatting it all at once would
# collide with every branch in flight. docs/ARCHITECTURE.md#formatting says what is enforced and why.
set -uo pipefail
cd "$(dirname "$0")/.."
layout='\[(Indentation|LineLength|AddLines|RemoveLine|Spacing|TrailingComma|EndOfLineComment)\]'
output=$(swift format lint --parallel --configuration .swift-format -r Sources Tests Benchmarks Package.swift 2>&1)
status=$?
findings=$(printf '%s\n' "$output" | grep -E 'warning: \[|error:' | grep -vE "$layout")
layout_count=$(printf '%s\n' "$output" | grep -cE "warning: $layout")
if [ -n "$findings" ]; then
    printf '%s\n' "$findings"
    echo "lint-swift: FAIL: $(printf '%s\n' "$findings" | wc -l) rule findings (and $layout_count layout findings, not enforced)"
    exit 1
fi
if [ $status -ne 0 ] && [ -z "$(printf '%s\n' "$output" | grep -E 'warning: \[')" ]; then
    printf '%s\n' "$output" | tail -5
    echo "lint-swift: FAIL: swift format lint exited $status"
    exit 1
fi
echo "lint-swift: no rule findings ($layout_count layout findings, not enforced)"
