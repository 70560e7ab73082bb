#!/usr/bin/env bash
# Runs the web inspector's browser test (Tests/browser/test_inspector.py) against a real kvod ($KVOD_BIN, default
# .build/debug/kvod) and kvoctl ($KVOCTL_BIN, default .build/debug/kvoctl) in headless Chromium. Installs what is
# missing first: Debian's chromium and chromium-driver (apt-get update, then install, non-interactive; about 1.5 min
# and 350 MB on a fresh Debian 12), and requirements.txt with pip, as Tests/python/run.sh does. KVOD_SCREENSHOT=1
# also saves the docs/inspector*.png images (docs/INSPECTOR.md). The cluster test (test_inspector_cluster.py) runs
# when etcd is installed and is skipped otherwise. Extra arguments go to pytest. Bounded: the whole run stops after
# BROWSER_TEST_SECONDS (300). Exits with pytest's status.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# A relative KVOD_BIN (as `make test` passes it) is relative to where this was started.
for variable in KVOD_BIN KVOCTL_BIN; do
    if [ -n "${!variable:-}" ]; then export "$variable=$(realpath -m "${!variable}")"; fi
done
cd "$here/../.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "run.sh: need root to run: $*" >&2; return 1
    fi
}

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if [ ${#missing[@]} -gt 0 ]; then
    echo "run.sh: installing ${missing[*]}" >&2
    started=$SECONDS
    as_root timeout 120 apt-get update -qq || true
    if ! as_root env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null; then
        echo "run.sh: could not install ${missing[*]}" >&2
        exit 2
    fi
    echo "run.sh: installed ${missing[*]} in $((SECONDS - started)) s" >&2
fi

have_modules() { python3 -c 'import selenium, pytest' 2>/dev/null; }
if ! have_modules; then
    pip_install() { timeout 300 python3 -m pip install -q --disable-pip-version-check "$@" -r "$here/requirements.txt"; }
    pip_install || pip_install --user || pip_install --user --break-system-packages \
        || echo "run.sh: pip could not install $here/requirements.txt" >&2
    if ! have_modules; then
        echo "run.sh: missing Python modules (selenium, pytest): install $here/requirements.txt" >&2
        exit 2
    fi
fi

# Selenium Manager would go looking for a driver online; the test names Debian's chromedriver itself.
export SE_OFFLINE=true
exec timeout -k 10 "${BROWSER_TEST_SECONDS:-300}" python3 -m pytest -q -p no:cacheprovider Tests/browser "$@"
