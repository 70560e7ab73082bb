#!/usr/bin/env bash
# The cluster tests (docs/SCALING.md#tests): installs Debian's etcd-server when `etcd` is missing, then runs
# cluster_test.py and bootstrap_test.py, each of which starts a 3-member etcd and kvods on loopback in a temporary
# directory and kills them all at the end. KVOD_BIN (default .build/debug/kvod). Bounded: each is stopped after 240 s.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/../.."
if ! command -v etcd >/dev/null; then
    echo "cluster: installing etcd-server (apt-get)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo -n"
    timeout 300 $sudo apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive timeout 300 $sudo apt-get install -y -qq etcd-server >/dev/null \
        || { echo "cluster: cannot install etcd-server" >&2; exit 2; }
fi
status=0
for test in cluster_test bootstrap_test; do
    echo "cluster: $test" >&2
    timeout -k 10 240 python3 "$here/$test.py" "$@" || status=1
done
exit $status
