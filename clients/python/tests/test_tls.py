"""TLS (Protocol/README.md#tls) from both clients, with certificates made by the openssl CLI for the module: JSON
lines over `kvods://` and with an `ssl.SSLContext`, WebSocket over `wss://`, the asyncio client, a client
certificate standing for a restricted token (mutual TLS), a wrong CA refused, and a `--tls-only` kvod."""

import asyncio
import ssl
import subprocess

import pytest

import kvod


def openssl(*arguments):
    subprocess.run(["openssl", *arguments], check=True, capture_output=True, timeout=30)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")

    def path(name):
        return str(directory / name)

    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                path(f"{ca}.key"), "-out", path(f"{ca}.pem"), "-days", "2", "-subj", f"/CN=kvod test {ca}")
    for name, subject, san in (("server", "/CN=localhost", "DNS:localhost,IP:127.0.0.1"),
                               ("client", "/CN=orders", "URI:spiffe://test/orders")):
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                path(f"{name}.key"), "-out", path(f"{name}.csr"), "-subj", subject)
        (directory / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        openssl("x509", "-req", "-in", path(f"{name}.csr"), "-CA", path("ca.pem"), "-CAkey", path("ca.key"),
                "-CAcreateserial", "-out", path(f"{name}.pem"), "-days", "2", "-extfile", path(f"{name}.ext"))
    return path


def server_arguments(certificates, *more):
    return ("--tls-cert", certificates("server.pem"), "--tls-key", certificates("server.key")) + more


def context(certificates, client=None, ca="ca.pem"):
    result = ssl.create_default_context(cafile=certificates(ca))
    if client:
        result.load_cert_chain(certificates(f"{client}.pem"), certificates(f"{client}.key"))
    return result


def test_json_lines_over_kvods_and_a_context(make_kvod, certificates):
    server = make_kvod(*server_arguments(certificates, "--tls-only"))
    with kvod.Client(f"kvods://localhost:{server.port}", tls=context(certificates)) as secure, \
            kvod.Client(f"127.0.0.1:{server.port}", tls=context(certificates)) as by_context:
        changes = secure.subscribe("greeting")
        by_context.set("greeting", "over TLS")
        assert next(iter(changes)).new == "over TLS"
        assert secure.get("greeting") == "over TLS"
    # Plaintext is refused by a --tls-only kvod.
    with pytest.raises(kvod.ConnectionLost):
        kvod.Client(server.address, timeout=3, reconnect=False)


def test_websocket_over_wss(make_kvod, certificates):
    server = make_kvod(*server_arguments(certificates))
    with kvod.Client(f"wss://localhost:{server.port}/", transport="websocket", tls=context(certificates)) as client:
        seq = client.set("via", "wss")
        assert client.get_with_seq("via") == ("wss", seq)


def test_the_asyncio_client_over_tls(make_kvod, certificates):
    server = make_kvod(*server_arguments(certificates))

    async def scenario():
        for address, transport in ((f"kvods://127.0.0.1:{server.port}", "tcp"),
                                   (f"wss://127.0.0.1:{server.port}/", "websocket")):
            client = await kvod.aio.connect(address, transport=transport, tls=context(certificates))
            try:
                await client.set("async", transport)
                assert await client.get("async") == transport
            finally:
                await client.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_client_certificate_stands_for_a_restricted_token(make_kvod, certificates, tmp_path):
    tokens = tmp_path / "tokens"
    tokens.write_text("admin read-write\ntls:URI:spiffe://test/orders read-write orders.**\n")
    server = make_kvod(*server_arguments(certificates, "--token-file", str(tokens), "--tls-ca",
                                         certificates("ca.pem"), "--tls-client-auth", "require"))
    with kvod.Client(f"kvods://127.0.0.1:{server.port}", tls=context(certificates, client="client")) as service:
        assert service.hello()["paths"] == ["orders.**"]
        service.set("orders.count", 1)
        with pytest.raises(kvod.Unauthorized):
            service.set("secrets", 1)


def test_a_certificate_of_another_ca_is_refused(make_kvod, certificates):
    server = make_kvod(*server_arguments(certificates))
    with pytest.raises(kvod.ConnectionLost) as refused:
        kvod.Client(f"kvods://127.0.0.1:{server.port}", tls=context(certificates, ca="other-ca.pem"), timeout=3,
                    reconnect=False)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)


def test_pipelined_heavy_reads_over_tls_are_answered_in_order_across_turns(make_kvod, certificates):
    """Protocol/README.md#fairness over TLS: 200 reads of a 100 KB value in one write take kvod more than its 2 ms
    share of a turn, so it stops reading the connection and goes on at the next turns; the decrypted rest waits.
    The 200 requests (12 KB) go out as one TLS record, so kvod decrypts them together: it must yield."""
    import json
    import socket

    server = make_kvod(*server_arguments(certificates))
    raw = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    with context(certificates).wrap_socket(raw, server_hostname="localhost") as secure:
        lines = secure.makefile("rb")

        def send(*messages):
            secure.sendall(b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in messages))

        send({"jsonrpc": "2.0", "id": 1, "method": "set", "params": {"path": "big", "value": "t" * 100_000}})
        assert json.loads(lines.readline())["id"] == 1
        send(*({"jsonrpc": "2.0", "id": i, "method": "get", "params": {"path": "big"}} for i in range(2, 202)))
        for i in range(2, 202):
            response = json.loads(lines.readline())
            assert response["id"] == i and len(response["result"]["value"]) == 100_000
        send({"jsonrpc": "2.0", "id": 300, "method": "stats"})
        stats = json.loads(lines.readline())
        assert stats["id"] == 300 and stats["result"]["turnsYielded"] >= 1
