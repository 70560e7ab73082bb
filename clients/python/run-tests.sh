#!/usr/bin/env bash
# The Python client's tests against a real kvod ($KVOD_BIN, default .build/debug/kvod): installs pytest when it is
# missing (as Tests/python/run.sh does), then runs clients/python/tests with the package from this checkout.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."
if ! python3 -c 'import pytest' 2>/dev/null; then
    pip_install() { python3 -m pip install -q --disable-pip-version-check "$@" pytest; }
    pip_install || pip_install --user || pip_install --user --break-system-packages \
        || { echo "run-tests.sh: cannot install pytest" >&2; exit 2; }
fi
exec python3 -m pytest -q -p no:cacheprovider "$here/tests" "$@"
