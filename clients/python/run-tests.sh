#!/usr/bin/env bash
# The Python client's tests against a real kvod ($KVOD_BIN, default .build/debug/kvod): installs pytest and websockets
# (the websocket extra, pinned as tested) when they are missing (as Tests/python/run.sh does), then runs
# clients/python/tests with the package from this checkout, over TCP and over WebSocket.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."
if ! python3 -c 'import pytest, websockets' 2>/dev/null; then
    pip_install() { python3 -m pip install -q --disable-pip-version-check "$@" pytest websockets==15.0.1; }
    pip_install || pip_install --user || pip_install --user --break-system-packages \
        || { echo "run-tests.sh: cannot install pytest and websockets==15.0.1" >&2; exit 2; }
fi
exec python3 -m pytest -q -p no:cacheprovider "$here/tests" "$@"
