#!/usr/bin/env bash
# The cluster tests (docs/SCALING.md#tests): installs Debian's etcd-server when `etcd` is missing, then runs every
# *_test.py here (cluster_test.py: roles, replication, failover, etcd outage; failover_test.py: --sync-replicas 1,
# SIGKILL under load, SIGSTOP partition, one etcd member down; clients_test.py: kvoctl and the client libraries
# following the leader; bootstrap_test.py: snapshot bootstrap, metrics, role-change logs; resume_test.py: resuming
# on another member; presence_test.py: onDisconnect across failovers; client_presence_test.py: the Python and the
# TypeScript client registering their onDisconnect ops again on each new leader; lost_write_test.py: 1010 for a since
# lost in a failover; sync_presence_test.py: onDisconnect responses held for --sync-replicas;
# pipelined_sync_test.py: pipelined writes under --sync-replicas, raw and with the asyncio and TypeScript clients,
# all answered; double_failure_test.py: the leader and the in-sync follower lost while the third is behind: it must
# not lead); each starts a 3-member etcd and kvods on loopback in a temporary directory and kills them all at the
# end. KVOD_BIN (default .build/debug/kvod). Bounded: each file is stopped after 240 s.
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
# Every *_test.py here, each bounded on its own; fails if any fails.
status=0
for test in "$here"/*_test.py; do
    echo "cluster: $(basename "$test")" >&2
    timeout -k 10 240 python3 "$test" "$@" || { echo "cluster: $(basename "$test") FAILED" >&2; status=1; }
done
exit $status
