#!/usr/bin/env python3
"""A cluster over TLS on loopback (docs/SCALING.md#tls), with cluster_test.py's harness: a 3-member etcd serving its
clients over https with client certificates required, and three kvods with `--tls-only --tls-client-auth require`
(so nothing reaches them in plaintext: the replication links are TLS, each follower presenting its certificate),
reaching etcd with `--cluster-etcd https://...` and a client certificate. Certificates are made with the openssl CLI.

Checks: one leader is elected (through etcd over TLS); writes on the leader reach both followers; the leader's log
shows its followers' links as TLS connections with their certificates; SIGKILL of the leader: another member leads
within lease + 2 s over the same TLS links and accepts writes, and what was written before is there; a member with a
certificate of another CA cannot follow (its link's handshake is refused) while the cluster goes on. Standard
library only; exits 0 when every check passed.
"""
import os, ssl, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_test  # noqa: E402
from cluster_test import LEASE, Cluster, check, log, wait_for, run_scenario  # noqa: E402


def openssl(*arguments):
    subprocess.run(["openssl", *arguments], check=True, capture_output=True, timeout=60)


def make_certificates(root):
    path = lambda name: os.path.join(root, name)  # noqa: E731
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                path(f"{ca}.key"), "-out", path(f"{ca}.pem"), "-days", "2", "-subj", f"/CN=kvod test {ca}")
    # kvod members (server and, on replication links, client), etcd, kvod as etcd's client, the test's client.
    for name, subject, ca in (("member", "/CN=kvod-member", "ca"), ("etcd", "/CN=etcd", "ca"),
                              ("etcd-client", "/CN=kvod", "ca"), ("client", "/CN=test-client", "ca"),
                              ("stranger", "/CN=kvod-member", "other-ca")):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                path(f"{name}.key"), "-out", path(f"{name}.csr"), "-subj", subject)
        with open(path(f"{name}.ext"), "w") as extensions:
            extensions.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                             "extendedKeyUsage=serverAuth,clientAuth\n")
        openssl("x509", "-req", "-in", path(f"{name}.csr"), "-CA", path(f"{ca}.pem"), "-CAkey", path(f"{ca}.key"),
                "-CAcreateserial", "-out", path(f"{name}.pem"), "-days", "2", "-extfile", path(f"{name}.ext"))
    return path


class TLSCluster(Cluster):
    """The harness with etcd's client URLs over https (client certificates required)."""

    def __init__(self, root, path):
        super().__init__(root)
        self.path = path

    def etcd_urls(self):
        return ",".join(f"https://127.0.0.1:{self.client[n]}" for n in self.etcd_names)

    def start_etcd(self, name):
        initial = ",".join(f"{n}=http://127.0.0.1:{self.peer[n]}" for n in self.etcd_names)
        out = open(os.path.join(self.root, f"{name}.log"), "ab")
        self.etcd[name] = subprocess.Popen(
            ["etcd", "--name", name, "--data-dir", os.path.join(self.root, name),
             "--listen-client-urls", f"https://127.0.0.1:{self.client[name]}",
             "--advertise-client-urls", f"https://127.0.0.1:{self.client[name]}",
             "--cert-file", self.path("etcd.pem"), "--key-file", self.path("etcd.key"),
             "--trusted-ca-file", self.path("ca.pem"), "--client-cert-auth",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer[name]}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[name]}",
             "--initial-cluster", initial, "--initial-cluster-state", "new",
             "--initial-cluster-token", "kvod-test", "--heartbeat-interval", "50", "--election-timeout", "500",
             "--log-level", "warn"],
            stdout=out, stderr=out)

    def etcd_healthy(self):
        import json, urllib.request
        context = ssl.create_default_context(cafile=self.path("ca.pem"))
        context.load_cert_chain(self.path("etcd-client.pem"), self.path("etcd-client.key"))
        for name in self.etcd_names:
            if self.etcd.get(name) is None or self.etcd[name].poll() is not None:
                continue
            try:
                body = json.dumps({"key": "aGVhbHRo"}).encode()
                request = urllib.request.Request(f"https://127.0.0.1:{self.client[name]}/v3/kv/range", data=body)
                urllib.request.urlopen(request, timeout=1, context=context).read()
                return True
            except OSError:
                continue
        return False


def scenario(cluster, root):
    path = cluster.path
    # The harness's line client speaks TLS with the test's client certificate.
    context = ssl.create_default_context(cafile=path("ca.pem"))
    context.load_cert_chain(path("client.pem"), path("client.key"))
    plain_init = cluster_test.Client.__init__

    def tls_init(self, port, timeout=3.0):
        plain_init(self, port, timeout)
        self.sock = context.wrap_socket(self.sock, server_hostname="127.0.0.1")

    cluster_test.Client.__init__ = tls_init
    member_tls = ["--tls-cert", path("member.pem"), "--tls-key", path("member.key"), "--tls-ca", path("ca.pem"),
                  "--tls-only", "--tls-client-auth", "require", "--cluster-etcd-ca", path("ca.pem"),
                  "--cluster-etcd-cert", path("etcd-client.pem"), "--cluster-etcd-key", path("etcd-client.key")]
    members, leader, followers = cluster.start_members(member_tls)
    log(f"etcd over https, kvods with --tls-only: {leader} leads")
    cluster.wait_linked(leader, followers)
    check(True, f"{followers} follow {leader} over TLS links")
    leader_port = cluster.kvod_ports[leader]
    seqs = [cluster_test.call(leader_port, "set", {"path": "tls.n", "value": n})["result"]["seq"] for n in range(5)]
    for name in followers:
        wait_for(f"{name} has tls.n", lambda name=name: cluster_test.value(cluster.kvod_ports[name], "tls.n") == 4, 10)
    check(True, "writes on the leader reached both followers")
    with open(os.path.join(root, f"{leader}.log"), errors="replace") as log_file:
        text = log_file.read()
    check(text.count("tls.peer=CN=kvod-member") >= 2, "the leader saw its followers' certificates on their links")

    # Plaintext is refused by every member.
    import socket
    with socket.create_connection(("127.0.0.1", leader_port), timeout=3) as plain:
        plain.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        check(b"TLS only" in plain.recv(4096), "a plaintext client is told the port takes TLS only")

    # A failover over the same TLS links.
    cluster.kvods[leader].kill()
    started = time.monotonic()
    new_leader = wait_for("a new writable leader", cluster.leader, LEASE + 8)
    took = time.monotonic() - started
    check(new_leader != leader, f"{new_leader} leads {took:.1f} s after the leader's SIGKILL")
    seq = cluster_test.call(cluster.kvod_ports[new_leader], "set", {"path": "tls.n", "value": 5})["result"]["seq"]
    check(seq > seqs[-1], f"the new leader accepts writes (seq {seq})")
    survivor = [n for n in followers if n != new_leader][0]
    wait_for("the survivor follows the new leader",
             lambda: cluster_test.value(cluster.kvod_ports[survivor], "tls.n") == 5, 10)
    check(True, "the other survivor replicates from the new leader over TLS")

    # A member whose certificate comes from another CA cannot follow: its link's handshake is refused.
    stranger_tls = ["--tls-cert", path("stranger.pem"), "--tls-key", path("stranger.key"), "--tls-ca",
                    path("other-ca.pem")] + member_tls[6:]
    port = cluster_test.free_ports(1)[0]
    cluster.kvod_ports["k9"] = port
    out = open(os.path.join(root, "k9.log"), "ab")
    cluster.kvods["k9"] = subprocess.Popen(
        [cluster_test.KVOD, "--port", str(port), "--data-dir", os.path.join(root, "k9"), "--log-level", "debug",
         "--cluster-etcd", cluster.etcd_urls(), "--cluster", "test", "--advertise", f"127.0.0.1:{port}",
         "--cluster-lease-seconds", str(LEASE), *stranger_tls], stdout=out, stderr=out)

    def stranger_refused():
        with open(os.path.join(root, "k9.log"), errors="replace") as log_file:
            return "certificate verify failed" in log_file.read()

    wait_for("the stranger's link refused", stranger_refused, 15)
    check(True, "a member with another CA's certificate cannot open a replication link")
    cluster_test.call(cluster.kvod_ports[new_leader], "set", {"path": "tls.n", "value": 6})
    check(cluster_test.value(cluster.kvod_ports[new_leader], "tls.n") == 6, "the cluster goes on")


def main():
    import tempfile
    certificates = tempfile.mkdtemp(prefix="kvod-tls-certs-")
    path = make_certificates(certificates)
    original = cluster_test.Cluster
    cluster_test.Cluster = lambda root: TLSCluster(root, path)
    try:
        return run_scenario("tls", scenario)
    finally:
        cluster_test.Cluster = original
        import shutil
        shutil.rmtree(certificates, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
