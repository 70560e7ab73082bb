#!/usr/bin/env bash
# Removes a build configuration's products when the checked-out commit is not the one they were last built from.
# Swift 6.3's incremental build can leave a dependent module compiled against a type's old layout after a change adds
# a stored property (swiftlang/swift-package-manager#10502, swiftlang/swift#89636): the binary then corrupts memory at
# run time (seen here as a kvod that crashed at start after `git pull`). A rebuild after a new commit is therefore a
# full one; rebuilding the same commit stays incremental, and the packages' checkouts are kept. Outside a git
# checkout it does nothing.
#
#   bash .ci/fresh-build-dir.sh debug|release [SCRATCH]     (SCRATCH: the --scratch-path, .build by default)
set -euo pipefail
config="${1:?usage: fresh-build-dir.sh debug|release [SCRATCH]}"
scratch="${2:-.build}"
case "$config" in debug|release) ;; *) echo "fresh-build-dir: unknown configuration $config" >&2; exit 64 ;; esac
commit=$(git rev-parse HEAD 2>/dev/null) || exit 0
stamp="$scratch/.built-from-$config"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$commit" ]; then exit 0; fi
removed=0
for dir in "$scratch"/*-*/"$config"; do
    [ -d "$dir" ] || continue
    rm -rf "$dir"
    removed=1
done
if [ "$removed" = 1 ]; then
    built_from=$(cat "$stamp" 2>/dev/null || echo "an unrecorded commit")
    echo "fresh-build-dir: the $config products were built from $built_from, not ${commit:0:12}: building afresh" >&2
fi
mkdir -p "$scratch"
echo "$commit" >"$stamp"
