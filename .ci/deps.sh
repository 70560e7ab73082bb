#!/usr/bin/env bash
# Installs what kvod needs to build and test on a fresh Debian 12 machine with the Swift toolchain: libuv's
# headers (Debian libuv1-dev), OpenSSL 3's (libssl-dev, for TLS), pkg-config, the openssl CLI (the TLS tests make
# their certificates with it), and nc for the README's examples (--test); valgrind and python3 for the
# reliability checks (--reliability: .ci/sanitizers.sh, .ci/fuzz.sh). The fuzz and sanitizer builds need nothing
# else: libFuzzer, the ASan/TSan runtimes and ld.lld ship with the Swift toolchain (/opt/swift), and they link
# against the libstdc++ the toolchain already requires. The test suites' own packages are left to their scripts
# (Tests/python/run.sh, clients/typescript/test.sh, Tests/browser/run.sh).
# Idempotent and quiet when everything is already there.
set -euo pipefail

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "deps: need root to run: $*" >&2; return 1
    fi
}

missing=()
pkg-config --exists libuv 2>/dev/null || missing+=(libuv1-dev)
pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev)
command -v openssl >/dev/null || missing+=(openssl)
command -v pkg-config >/dev/null || missing+=(pkg-config)
for option in "$@"; do
    case "$option" in
    --test) command -v nc >/dev/null || missing+=(netcat-openbsd) ;;
    --reliability)
        command -v valgrind >/dev/null || missing+=(valgrind)
        command -v python3 >/dev/null || missing+=(python3)
        ;;
    *)
        echo "usage: .ci/deps.sh [--test] [--reliability]" >&2
        exit 64
        ;;
    esac
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "deps: installing ${missing[*]}" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The Python test packages are installed by Tests/python/run.sh, which copes with the different pips out there;
# Chromium, chromedriver and selenium for the browser test by Tests/browser/run.sh.
