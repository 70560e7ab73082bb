#!/usr/bin/env bash
# Runs the documentation's examples against real kvods (Tests/examples/run.py, docs/EXAMPLES.md): $KVOD_BIN and
# $KVOCTL_BIN, default .build/debug/kvod and kvoctl. Installs websockets (the Python client's websocket extra, pinned
# as clients/python/run-tests.sh pins it) when it is missing; node runs the TypeScript examples. Extra arguments go to
# run.py (--list, --only TEXT).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."
if ! python3 -c 'import websockets' 2>/dev/null; then
    pip_install() { python3 -m pip install -q --disable-pip-version-check "$@" websockets==15.0.1; }
    pip_install || pip_install --user || pip_install --user --break-system-packages \
        || { echo "run.sh: cannot install websockets==15.0.1" >&2; exit 2; }
fi
exec python3 "$here/run.py" "$@"
