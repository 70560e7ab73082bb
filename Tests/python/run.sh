#!/usr/bin/env bash
# Runs the Python client tests (Tests/python/) against a real kvod: $KVOD_BIN, default .build/debug/kvod.
# Installs requirements.txt when a module is missing. If pip cannot (offline; a Debian Python that is "externally
# managed", PEP 668) but the modules import anyway, it carries on. Extra arguments go to pytest. Exits with pytest's
# status.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."

have_modules() { python3 -c 'import tinyrpc, jsonschema, referencing, pytest, websockets' 2>/dev/null; }

if ! have_modules; then
    pip_install() { python3 -m pip install -q --disable-pip-version-check "$@" -r "$here/requirements.txt"; }
    pip_install || pip_install --user || pip_install --user --break-system-packages \
        || echo "run.sh: pip could not install $here/requirements.txt" >&2
    if ! have_modules; then
        echo "run.sh: missing Python modules (tinyrpc, jsonschema, referencing, pytest, websockets): install $here/requirements.txt" >&2
        exit 2
    fi
fi

exec python3 -m pytest -q -p no:cacheprovider Tests/python "$@"
