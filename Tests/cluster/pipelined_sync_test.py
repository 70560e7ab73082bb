#!/usr/bin/env python3
"""Pipelined writes under --sync-replicas 1 (issue 23's hang), on loopback with cluster_test.py's harness: a 3-member
etcd, a leader and one follower, both with --sync-replicas 1.

Before the fix, a connection with two or more writes in flight that reached the leader in different loop turns could
wait forever: a session the follower's ack released while a later write of it was still unconfirmed kept its "held"
flag, and was never flushed again. Checks, in order: a raw connection sends 4 sets 0 to 0.5 ms apart (so they reach
the leader in different turns, interleaved with the follower's acks), 500 times: every response arrives, in order;
the asyncio Python client runs 4 concurrent sets, 200 rounds; the TypeScript client the same (pipelined_sync.mjs, under
node); each answered within 10 s (no response ever takes that long on loopback: the sync timeout closes a connection
with `replication_timeout` after the lease, 3 s). Standard library only (and node); exits 0 when every check passed.
"""
import asyncio, json, os, socket, subprocess, sys, time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "..", "clients", "python"))
from cluster_test import check, log, run_scenario  # noqa: E402
from sync_presence_test import SYNC, writable_with_replica  # noqa: E402
import kvod.aio  # noqa: E402


def raw_pipelines(port, rounds):
    """Rounds of 4 sets on one connection, sent 0 to 0.5 ms apart (each round its own spacing, so the writes and the
    follower's acks meet in every order); returns the rounds whose responses all came, in order, within 10 s."""
    complete = 0
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(10)
        buffered = b""
        next_id = 1
        for round_ in range(rounds):
            ids = list(range(next_id, next_id + 4))
            next_id += 4
            for id_ in ids:
                sock.sendall(b'{"jsonrpc":"2.0","id":%d,"method":"set","params":{"path":"raw.k%d","value":%d}}\n'
                             % (id_, id_ % 4, round_))
                pause = (round_ % 50) * 0.00001  # busy-waited: a sleep this short oversleeps
                until = time.perf_counter() + pause
                while time.perf_counter() < until:
                    pass
            answers = []
            try:
                while len(answers) < 4:
                    while b"\n" not in buffered:
                        chunk = sock.recv(65536)
                        if not chunk:
                            log(f"raw: connection closed in round {round_}")
                            return complete
                        buffered += chunk
                    line, _, buffered = buffered.partition(b"\n")
                    answers.append(json.loads(line))
            except socket.timeout:
                log(f"raw: round {round_} got {len(answers)} of 4 responses within 10 s")
                return complete
            if [a.get("id") for a in answers] != ids or not all("result" in a for a in answers):
                log(f"raw: round {round_}: {answers}")
                return complete
            complete += 1
    return complete


async def python_rounds(port, rounds):
    """Rounds of 4 concurrent sets with the asyncio client; returns how many were all answered."""
    client = await kvod.aio.connect(f"127.0.0.1:{port}", timeout=10, reconnect=False)
    try:
        for round_ in range(rounds):
            try:
                await asyncio.wait_for(asyncio.gather(*(client.set(f"py.k{i}", round_) for i in range(4))), 10)
            except (asyncio.TimeoutError, kvod.KvodError) as error:
                log(f"python: round {round_} failed: {error!r}")
                return round_
        return rounds
    finally:
        await client.close()


def scenario(cluster, root):
    members, leader, followers = cluster.start_members(SYNC, names=("k0", "k1"))
    writable_with_replica(cluster, leader, followers)
    port = cluster.kvod_ports[leader]
    log(f"leader {leader} on {port}, follower {followers[0]}")

    # All three run (each on its own connection) before the checks, so a failure of one does not hide the others'.
    raw = raw_pipelines(port, 500)
    python = asyncio.run(python_rounds(port, 200))
    node = subprocess.run(["node", os.path.join(here, "pipelined_sync.mjs"), f"127.0.0.1:{port}", "200"],
                          capture_output=True, text=True, timeout=120)
    report = json.loads(node.stdout.strip().splitlines()[-1]) if node.stdout.strip() else {"error": node.stderr[-2000:]}
    log(f"answered: raw {raw} of 500 rounds, Python {python} of 200, TypeScript {report}")
    check(raw == 500, f"a raw connection's 4 sets 0 to 0.5 ms apart: {raw} of 500 rounds answered in order")
    check(python == 200, f"the asyncio Python client's 4 concurrent sets: {python} of 200 rounds answered")
    check(report.get("seqs") == 800, f"the TypeScript client's 4 concurrent sets: 200 rounds answered ({report})")


if __name__ == "__main__":
    sys.exit(run_scenario("pipelined-sync", scenario))
