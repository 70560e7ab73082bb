#!/usr/bin/env bash
# The TypeScript client's checks: installs Debian's node-typescript (tsc) when missing, checks that dist/ is exactly
# what tsc makes from src/ (so the committed build cannot go stale), then runs the node:test suites against a real kvod
# ($KVOD_BIN, default .build/debug/kvod). Also checks that what the web inspector embeds as its client
# (Sources/kvod/Inspector/kvod.js, a symbolic link to dist/index.js) is dist/index.js.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# A relative KVOD_BIN (as `make test` passes it) is relative to where this was started, not to this folder.
if [ -n "${KVOD_BIN:-}" ]; then KVOD_BIN="$(realpath -m "$KVOD_BIN")"; export KVOD_BIN; fi
cd "$here"
if ! command -v tsc >/dev/null; then
    as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq node-typescript >/dev/null
fi
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
tsc -p . --outDir "$fresh"
if ! diff -r "$fresh" dist >/dev/null; then
    diff -r "$fresh" dist | head -n 20 >&2
    echo "test.sh: dist/ is not what tsc makes from src/: run 'tsc -p clients/typescript' and commit dist/" >&2
    exit 1
fi
inspector_copy=../../Sources/kvod/Inspector/kvod.js
if ! cmp -s dist/index.js "$inspector_copy"; then
    echo "test.sh: Sources/kvod/Inspector/kvod.js (what the web inspector embeds) is not dist/index.js: make it" \
        "the link again ('ln -sf ../../../clients/typescript/dist/index.js Sources/kvod/Inspector/kvod.js')" >&2
    exit 1
fi
# The API reference page (docs/api/typescript.md) is what clients/api_reference.py makes from dist/index.d.ts, and
# every public call of Client and Subscription has TSDoc.
python3 ../api_reference.py --check typescript
# Node 20 has the standard WebSocket behind a flag (Node 22 has it by default); NODE_OPTIONS reaches the test files.
export NODE_OPTIONS="${NODE_OPTIONS:-} --experimental-websocket"
exec node --test test/*.test.mjs
