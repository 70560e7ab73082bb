// TLS as a kvod process serves it (Protocol/README.md#tls), with certificates made by the openssl CLI for each test
// (TestCertificates): JSON lines, WebSocket, metrics and the inspector over TLS beside plaintext on the same ports;
// `--tls-only`; a wrong CA; the start's refusals (missing, expired, mismatched); a client certificate standing for a
// restricted token; SIGHUP reloading the certificates under an open connection; the minimum version; hostile bytes
// before a handshake ends; a session's output through a lent buffer; record buffers given back while idle; and a
// flush's records encrypted in batches.
import Foundation
import KVOClient
import TLS
import TestSupport
import Testing
import WireProtocol

/// `--tls-cert` and `--tls-key` with the test CA's server certificate.
private func tlsArguments(_ certificates: TestCertificates, _ name: String = "server") -> [String] {
    ["--tls-cert", certificates.path("\(name).pem"), "--tls-key", certificates.path("\(name).key")]
}

/// A client context trusting the test CA, presenting the client certificate `certificate` when given.
private func clientContext(_ certificates: TestCertificates, certificate: String? = nil) throws -> TLSContext {
    try TLSContext.client(
        TLSClientSettings(
            caPath: certificates.path("ca.pem"), certificatePath: certificate.map { certificates.path("\($0).pem") },
            keyPath: certificate.map { certificates.path("\($0).key") }))
}

/// A JSON-RPC client to `server` over TLS.
private func tlsClient(
    _ server: KVODProcess, _ certificates: TestCertificates, host: String = "127.0.0.1", certificate: String? = nil
) throws -> KVOClient {
    try KVOClient(
        host: host, port: server.port, timeout: .seconds(5),
        tls: try clientContext(certificates, certificate: certificate))
}

/// One HTTP GET over TLS on `port`: the status line, then the rest of the response as text.
private func httpsGet(_ path: String, port: Int, _ certificates: TestCertificates) throws -> (status: String, text: String) {
    let connection = try LineConnection(
        host: "127.0.0.1", port: port, timeout: .seconds(5), tls: try clientContext(certificates))
    try connection.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8))
    var lines: [String] = []
    while let line = try? connection.readLine(timeout: .seconds(5)) {
        lines.append(String(decoding: line, as: UTF8.self).trimmingCharacters(in: ["\r"]))
    }
    return (lines.first ?? "", lines.dropFirst().joined(separator: "\n"))
}

/// The port in the stdout line that starts with `marker` ("kvod metrics on 127.0.0.1:PORT").
private func announcedPort(_ stdout: String, _ marker: String) -> Int? {
    guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(marker) }) else { return nil }
    let digits = line.reversed().drop { !$0.isNumber }.prefix { $0.isNumber }
    return Int(String(digits.reversed()))
}

/// Reads until the server closes the connection (or `seconds` pass): true when it closed.
private func serverCloses(_ connection: LineConnection, seconds: Int = 5) -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        do {
            _ = try connection.readLine(timeout: .seconds(1))
        } catch .closed {
            return true
        } catch .timeout {
            continue
        } catch {
            return true  // a reset
        }
    }
    return false
}

@Suite(.serialized) struct TLSTests {
    @Test func jsonLinesOverTLSBesidePlaintextOnTheSamePort() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates))
        let secure = try tlsClient(server, certificates, host: "localhost")  // the name is checked too
        let plain = try server.client()
        _ = try secure.call("subscribe", ["path": "greeting", "options": ["new"]])
        _ = try plain.call("subscribe", ["path": "greeting", "options": ["new"]])
        #expect(try plain.call("set", ["path": "greeting", "value": "over plaintext"])["seq"] == 1)
        #expect(try secure.nextNotification().params["new"] == "over plaintext")
        #expect(try secure.call("set", ["path": "greeting", "value": "over TLS"])["seq"] == 2)
        #expect(try plain.nextNotification().params["new"] == "over plaintext")
        #expect(try plain.nextNotification().params["new"] == "over TLS")
        #expect(try secure.nextNotification().params["new"] == "over TLS")
        #expect(try secure.call("get", ["path": "greeting"])["value"] == "over TLS")
        // A long message crosses several TLS records both ways, and several hand-overs of the loop's ciphertext
        // buffer, to each of two TLS subscribers in turn.
        let watcher = try tlsClient(server, certificates)
        _ = try watcher.call("subscribe", ["path": "long", "options": ["new"]])
        _ = try secure.call("subscribe", ["path": "long", "options": ["new"]])
        let long = String((0..<100_000).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
        _ = try secure.call("set", ["path": "long", "value": .string(long)])
        #expect(try secure.nextNotification().params["new"] == .string(long))
        #expect(try watcher.nextNotification().params["new"] == .string(long))
        #expect(try secure.call("get", ["path": "long"])["value"] == .string(long))
        #expect(secure.connection.tlsPeerSubject == "CN=localhost")
    }

    @Test("WebSocket over TLS, on kvod's port and on --ws-port", arguments: [false, true])
    func webSocketOverTLS(onWebSocketPort: Bool) throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates) + ["--ws-port", "0"])
        let port = onWebSocketPort
            ? try #require(announcedPort(server.stdoutText, "kvod websocket on "), "\(server.stdoutText)") : server.port
        let connection = try LineConnection(
            host: "127.0.0.1", port: port, timeout: .seconds(5), tls: try clientContext(certificates))
        try connection.send(
            Array(
                ("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8))
        #expect(String(decoding: try connection.readLine(timeout: .seconds(5)), as: UTF8.self) == "HTTP/1.1 101 Switching Protocols\r")
        while try !connection.readLine(timeout: .seconds(5)).elementsEqual([13]) {}
        // One masked text frame carrying a set; a plaintext client sees its effect.
        let message = Array(#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"via","value":"wss"}}"#.utf8)
        let mask: [UInt8] = [1, 2, 3, 4]
        var frame: [UInt8] = [0x81, 0x80 | UInt8(message.count)] + mask
        frame += message.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        try connection.send(frame)
        let plain = try server.client()
        var value: JSONValue = .null
        for _ in 0..<50 where value != "wss" {
            value = try plain.call("get", ["path": "via"])["value"] ?? .null
            if value != "wss" { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(value == "wss")
    }

    @Test func metricsAndTheInspectorOverHTTPS() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates) + ["--metrics-port", "0", "--web-port", "0"])
        let metricsPort = try #require(server.metricsPort)
        let metrics = try httpsGet("/metrics", port: metricsPort, certificates)
        #expect(metrics.status == "HTTP/1.1 200 OK")
        #expect(metrics.text.contains("kvod_closes_total"))
        let webPort = try #require(announcedPort(server.stdoutText, "kvod inspector on "), "\(server.stdoutText)")
        let page = try httpsGet("/", port: webPort, certificates)
        #expect(page.status == "HTTP/1.1 200 OK")
        #expect(page.text.contains("wss://127.0.0.1:\(server.port)"), "the page may connect over wss")
        // Plaintext stays allowed without --tls-only.
        let plain = try LineConnection(host: "127.0.0.1", port: metricsPort, timeout: .seconds(5))
        try plain.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".utf8))
        #expect(String(decoding: try plain.readLine(timeout: .seconds(5)), as: UTF8.self) == "HTTP/1.1 200 OK\r")
    }

    @Test func aCertificateFromAnotherCAIsRefused() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates, "other-server"))
        do {
            _ = try tlsClient(server, certificates)
            Issue.record("a certificate of another CA was accepted")
        } catch let error as KVOClientError {
            guard case .tls(let reason) = error else { throw error }
            #expect(reason.contains("certificate verify failed"), "\(reason)")
        }
        #expect(server.waitForLog("TLS handshake failed"), "\(server.stderrText)")
        #expect(try server.client().call("ping") == "pong", "kvod carries on")
    }

    @Test func theStartRefusesMissingExpiredAndMismatchedCertificates() throws {
        let certificates = try TestCertificates()
        try certificates.issue("expired", subject: "/CN=expired", san: "DNS:localhost", days: -1)
        let cases: [(arguments: [String], says: String)] = [
            (["--tls-cert", certificates.path("missing.pem"), "--tls-key", certificates.path("server.key")],
             "cannot read the certificate \(certificates.path("missing.pem")): No such file or directory"),
            (["--tls-cert", certificates.path("server.pem"), "--tls-key", certificates.path("missing.key")],
             "cannot read the key \(certificates.path("missing.key")): No such file or directory"),
            (tlsArguments(certificates, "expired"), "(CN=expired) expired on "),
            (["--tls-cert", certificates.path("server.pem"), "--tls-key", certificates.path("client.key")],
             "the key \(certificates.path("client.key")) does not match the certificate"),
            (["--tls-cert", certificates.path("server.pem"), "--tls-key", certificates.path("server.pem")],
             "holds no PEM private key"),
            (["--tls-cert", certificates.path("ca.key"), "--tls-key", certificates.path("server.key")],
             "holds no PEM certificate"),
        ]
        for (arguments, says) in cases {
            let result = try runKVOD(["--port", "0"] + arguments)
            #expect(result.status == 1, "\(arguments): \(result)")
            #expect(result.stderr.contains("kvod: TLS: ") && result.stderr.contains(says), "\(arguments): \(result)")
            #expect(!result.stdout.contains("listening"))
        }
        // Settings that need others are refused before anything is read (status 64).
        let needs: [(arguments: [String], says: String)] = [
            (["--tls-cert", certificates.path("server.pem")], "tls-cert and tls-key go together"),
            (["--tls-only"], "tls-only needs tls-cert and tls-key"),
            (tlsArguments(certificates) + ["--tls-client-auth", "require"], "needs tls-ca"),
            (tlsArguments(certificates) + ["--tls-min-version", "1.1"], "1.1"),
        ]
        for (arguments, says) in needs {
            let result = try runKVOD(["--port", "0"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result)")
            #expect(result.stderr.contains(says), "\(arguments): \(result)")
        }
    }

    @Test func plaintextOnATLSOnlyPortIsToldSoAndClosed() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates) + ["--tls-only", "--metrics-port", "0"])
        let plain = try LineConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        try plain.sendLine(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        let answer = try JSONParser.parse(plain.readLine(timeout: .seconds(5)))
        #expect(answer["error"]?["code"] == -32600)
        #expect(answer["error"]?["message"]?.stringValue?.contains("TLS only") == true, "\(answer)")
        #expect(serverCloses(plain))
        let upgrade = try LineConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        try upgrade.send(Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(String(decoding: try upgrade.readLine(timeout: .seconds(5)), as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        let metrics = try LineConnection(host: "127.0.0.1", port: try #require(server.metricsPort), timeout: .seconds(5))
        try metrics.send(Array("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(String(decoding: try metrics.readLine(timeout: .seconds(5)), as: UTF8.self).hasPrefix("HTTP/1.1 400"))
        #expect(try tlsClient(server, certificates).call("ping") == "pong")
    }

    @Test func aClientCertificateStandsForARestrictedToken() throws {
        let certificates = try TestCertificates()
        let tokens = try certificates.directory.write(
            "tokens", "admin-secret read-write\ntls:CN=orders read-write orders.**\n")
        let server = try KVODProcess.start(
            tlsArguments(certificates) + [
                "--token-file", tokens, "--tls-ca", certificates.path("ca.pem"), "--tls-client-auth", "request",
            ])
        let service = try tlsClient(server, certificates, certificate: "client")
        // No hello: the certificate authenticated the connection as its token, restricted to orders.**.
        #expect(try service.call("set", ["path": "orders", "value": ["count": 1]])["seq"] == 1)
        #expect(try service.call("get", ["path": "orders.count"])["value"] == 1)
        #expect(serverErrorCode { _ = try service.call("set", ["path": "secrets", "value": 1]) } == 1008)
        let hello = try service.call("hello", [:])
        #expect(hello["access"] == "read-write")
        #expect(hello["paths"] == ["orders.**"])
        #expect(server.waitForLog("client certificate accepted as a token"))
        // Without a certificate (request, not require) a connection needs its hello.
        let anonymous = try tlsClient(server, certificates)
        #expect(serverErrorCode { _ = try anonymous.call("get", ["path": "orders"]) } == 1008)
        // The name is no secret a hello could present.
        #expect(serverErrorCode { _ = try anonymous.call("hello", ["token": "tls:CN=orders"]) } == 1008)
    }

    @Test func requireRefusesAClientWithoutCertificate() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(
            tlsArguments(certificates) + ["--tls-ca", certificates.path("ca.pem"), "--tls-client-auth", "require"])
        #expect(try tlsClient(server, certificates, certificate: "client").call("ping") == "pong")
        // TLS 1.3 finishes the client's side of the handshake before the server checks its certificate: the refusal
        // arrives as an alert on the first read.
        do {
            let client = try tlsClient(server, certificates)
            _ = try client.call("ping")
            Issue.record("a client without a certificate got in")
        } catch {
            #expect("\(error)".contains("certificate required") || "\(error)".contains("closed"), "\(error)")
        }
    }

    @Test func sighupReloadsTheCertificatesWithoutDroppingConnections() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates))
        let before = try tlsClient(server, certificates)
        _ = try before.call("subscribe", ["path": "n", "options": ["new"]])
        #expect(before.connection.tlsPeerSubject == "CN=localhost")

        try certificates.issue("server", subject: "/CN=reloaded", san: "DNS:localhost,IP:127.0.0.1")
        server.command.send(signal: SIGHUP)
        #expect(server.waitForLog("TLS certificates reloaded"), "\(server.stderrText)")
        #expect(try before.call("set", ["path": "n", "value": 1])["seq"] == 1, "the open connection carries on")
        #expect(try before.nextNotification().params["new"] == 1)
        let after = try tlsClient(server, certificates)
        #expect(after.connection.tlsPeerSubject == "CN=reloaded")

        // A reload that fails its checks keeps the certificates in use.
        _ = try certificates.directory.write("server.key", "not a key\n")
        server.command.send(signal: SIGHUP)
        #expect(server.waitForLog("TLS reload failed"), "\(server.stderrText)")
        #expect(try tlsClient(server, certificates).connection.tlsPeerSubject == "CN=reloaded")
        #expect(try before.call("get", ["path": "n"])["value"] == 1)
    }

    @Test func aMinimumOfTLS13RefusesTLS12() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates) + ["--tls-min-version", "1.3"])
        let old = try runCommand(
            URL(fileURLWithPath: "/usr/bin/openssl"),
            ["s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_2", "-CAfile", certificates.path("ca.pem")],
            stdin: "", timeout: .seconds(20))
        #expect(old.status != 0, "\(old)")
        #expect((old.stdout + old.stderr).contains("alert protocol version"), "\(old)")
        #expect(try tlsClient(server, certificates).call("ping") == "pong")
    }

    @Test func aLentScratchCarriesEveryRecordAndIsLeftAloneAfterTheSend() throws {
        let certificates = try TestCertificates()
        let (server, client) = try establishedSessions(certificates)
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: TLSSession.scratchBytes, alignment: 16)
        defer { scratch.deallocate() }
        let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { plaintext.deallocate() }
        // Sends of one byte, a record and a half, and several hand-overs, each through the lent scratch.
        for size in [1, 24_000, 150_000] {
            let message = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) }
            var ciphertext: [UInt8] = []
            var handOvers = 0
            try message.withUnsafeBytes { bytes in
                try server.send(bytes, scratch: scratch) { chunk in
                    handOvers += 1
                    ciphertext.append(contentsOf: chunk)
                }
            }
            // (A hand-over each time two 16 KiB records have collected, and one at the end.)
            #expect(handOvers == (size + 32 * 1024 - 1) / (32 * 1024))
            // Nothing refers to the scratch now: scribbling over it changes nothing sent or to be sent.
            scratch.initializeMemory(as: UInt8.self, repeating: 0xEE)
            #expect(!server.hasOutput)
            var received: [UInt8] = []
            try ciphertext.withUnsafeBytes {
                try client.receive($0, scratch: plaintext) { received.append(contentsOf: $0) }
            }
            #expect(received == message, "\(size) bytes")
        }
        // Without a scratch the session's own buffer carries it, as for kvoctl.
        var ciphertext: [UInt8] = []
        try [UInt8](repeating: 7, count: 5).withUnsafeBytes { bytes in
            try server.send(bytes) { ciphertext.append(contentsOf: $0) }
        }
        var received: [UInt8] = []
        try ciphertext.withUnsafeBytes {
            try client.receive($0, scratch: plaintext) { received.append(contentsOf: $0) }
        }
        #expect(received == [7, 7, 7, 7, 7])
    }

    /// A session kept busy keeps its record buffers, gives them back when asked except while they hold part of a
    /// record, and carries on after either.
    @Test func aSessionKeepsItsBuffersOnlyWhenToldAndReleasesThemBetweenRecords() throws {
        let certificates = try TestCertificates()
        let (server, client) = try establishedSessions(certificates)
        let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { plaintext.deallocate() }
        func record(_ text: String, from sender: TLSSession) throws -> [UInt8] {
            var ciphertext: [UInt8] = []
            try Array(text.utf8).withUnsafeBytes { bytes in try sender.send(bytes) { ciphertext += $0 } }
            return ciphertext
        }
        func received(_ ciphertext: ArraySlice<UInt8>, by receiver: TLSSession) throws -> String {
            var text: [UInt8] = []
            try ciphertext.withUnsafeBytes { try receiver.receive($0, scratch: plaintext) { text += $0 } }
            return String(decoding: text, as: UTF8.self)
        }
        #expect(!server.keepsBuffers, "released after each record unless told")
        server.keepsBuffers = true
        client.keepsBuffers = true
        #expect(try received(try record("first line\n", from: client)[...], by: server) == "first line\n")
        #expect(server.releaseBuffers())
        // Half a record in: its first part waits in OpenSSL's read buffer, which is kept.
        let second = try record("second line, sent in two parts\n", from: client)
        let half = second.count / 2
        #expect(try received(second[..<half], by: server) == "")
        #expect(!server.releaseBuffers(), "part of a record is buffered")
        server.keepsBuffers = false  // (the buffers go after the record)
        #expect(try received(second[half...], by: server) == "second line, sent in two parts\n")
        #expect(server.releaseBuffers())
        // Two records fed a byte at a time: OpenSSL reads each piece where it lies and keeps what it has of a record.
        let third = try record("third, ", from: client) + (try record("a byte at a time\n", from: client))
        var text = ""
        for index in third.indices { text += try received(third[index...index], by: server) }
        #expect(text == "third, a byte at a time\n")
        // Both ways still work after a release, kept or not.
        #expect(try received(try record("answer\n", from: server)[...], by: client) == "answer\n")
        #expect(client.releaseBuffers())
        client.keepsBuffers = false
        #expect(try received(try record("again\n", from: client)[...], by: server) == "again\n")
        #expect(try received(try record("and back\n", from: server)[...], by: client) == "and back\n")
    }

    /// A busy TLS connection keeps OpenSSL's buffers between records (counted in `tlsBufferedConnections`), gives
    /// them back a second after it quietens, keeps none for light use, and works as before throughout.
    @Test func aBusyTLSConnectionKeepsItsBuffersUntilItQuietens() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates))
        let plain = try server.client()
        let secure = try tlsClient(server, certificates)
        let watcher = try tlsClient(server, certificates)
        _ = try watcher.call("subscribe", ["path": "n", "options": ["new"]])
        func buffered() throws -> JSONValue? { try plain.call("stats")["tlsBufferedConnections"] }
        var value: Int64 = 0
        func setAndSee() throws {
            value += 1
            #expect(try secure.call("set", ["path": "n", "value": .int(value)])["seq"] == .int(value))
            #expect(try watcher.nextNotification().params["new"] == .int(value))
        }
        // Sets back to back: a read and a write each on `secure`, a write on `watcher`, hundreds a second.
        var busySeen = false
        let deadline = ContinuousClock.now + .seconds(15)
        while !busySeen && ContinuousClock.now < deadline {
            for _ in 0..<200 { try setAndSee() }
            busySeen = try buffered() == 2
        }
        #expect(busySeen, "both busy connections keep their buffers")
        var released = false
        for _ in 0..<50 where !released {
            Thread.sleep(forTimeInterval: 0.1)
            released = try buffered() == 0
        }
        #expect(released, "quiet, they give them back")
        // A set every 100 ms is light use: no buffers kept over three sweeps, and nothing lost.
        for _ in 0..<30 {
            try setAndSee()
            #expect(try buffered() == 0)
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    /// A flush encrypts its TLS records in batches and writes each batch after (DeferredTLSWrites). With
    /// more subscribers than a batch holds, pipelined sets, values too large to defer between small ones, plaintext
    /// subscribers among them and two TLS subscribers gone before the sets, every subscriber left gets every change,
    /// whole and in order, and the setter every response in order.
    @Test func batchedTLSRecordsReachEverySubscriberWholeAndInOrder() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates))
        var subscribers: [KVOClient] = []
        for index in 0..<44 {
            let client = index % 11 == 5 ? try server.client() : try tlsClient(server, certificates)
            _ = try client.call("subscribe", ["path": "v", "options": ["new"]])
            subscribers.append(client)
        }
        for gone in subscribers.suffix(2) { gone.close() }
        subscribers.removeLast(2)
        let setter = try tlsClient(server, certificates)
        let large = String(repeating: "x", count: 20_000)
        let values: [JSONValue] = (0..<60).map { $0 % 10 == 9 ? .string(large + "\($0)") : .int(Int64($0)) }
        for (index, value) in values.enumerated() {
            var line: [UInt8] = []
            RPCEncoder.appendRequest(id: .int(Int64(index + 1)), method: "set", params: ["path": "v", "value": value],
                                     to: &line)
            try setter.sendRaw(String(decoding: line, as: UTF8.self))
        }
        for index in values.indices {
            let response = try JSONParser.parse(Array(try setter.readRawLine().utf8))
            #expect(response["id"] == .int(Int64(index + 1)) && response["result"]?["seq"] != nil)
        }
        for (number, subscriber) in subscribers.enumerated() {
            for value in values {
                let notification = try subscriber.nextNotification()
                #expect(notification.params["new"] == value, "subscriber \(number)")
            }
        }
        #expect(try server.client().call("ping") == "pong")
    }

    /// What reaches kvod before a handshake ends, whatever it is, gets the connection closed (or left waiting for
    /// the rest, bounded by the handshake timeout): never a crash, a hang of the loop, or a plaintext reply.
    @Test func hostileBytesBeforeTheHandshakeEnds() throws {
        let certificates = try TestCertificates()
        let server = try KVODProcess.start(tlsArguments(certificates))
        // A real ClientHello, as our client's TLS session makes it, to mangle.
        let hello = try clientHello(try clientContext(certificates))
        var generator = SystemRandomNumberGenerator()
        var cases: [[UInt8]] = [
            [0x16],
            [0x16, 0x03, 0x01, 0xFF, 0xFF],  // a record longer than TLS allows
            [0x16, 0x03, 0x01, 0x00, 0x00],  // an empty record
            [0x16, 0x03, 0x03, 0x00, 0x04, 0x01, 0xFF, 0xFF, 0xFF],  // a handshake message longer than its record
            [0x16, 0x00, 0x00, 0x00, 0x01, 0x00],  // an impossible version
            Array(hello.prefix(hello.count / 2)),
            hello + [0x17, 0x03, 0x03, 0x00, 0x10] + Array(repeating: 0x41, count: 16),  // data before the handshake
            hello + hello,  // a second ClientHello
            [0x16] + Array("{\"jsonrpc\":\"2.0\"}\n".utf8),
        ]
        for _ in 0..<40 {
            var mangled = hello
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                let index = Int.random(in: 1..<mangled.count, using: &generator)
                mangled[index] = UInt8.random(in: 0...255, using: &generator)
            }
            cases.append(mangled)
            cases.append([0x16] + (0..<Int.random(in: 1...600, using: &generator)).map { _ in UInt8.random(in: 0...255) })
        }
        for bytes in cases {
            let connection = try LineConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
            try? connection.send(bytes)
            if let line = try? connection.readLineIfAvailable() {
                #expect(!line.starts(with: Array("{".utf8)), "a plaintext reply to \(bytes.prefix(16))")
            }
            connection.close()
        }
        // The whole ClientHello a byte at a time still completes.
        let slow = try LineConnection(host: "127.0.0.1", port: server.port, timeout: .seconds(5))
        for byte in hello { try slow.send([byte]) }
        #expect(!serverCloses(slow, seconds: 1), "a ClientHello cut into bytes is still a ClientHello")
        #expect(server.isRunning)
        #expect(try tlsClient(server, certificates).call("ping") == "pong")
        #expect(try server.client().call("ping") == "pong")
    }
}

/// The code of the JSON-RPC error `body` got, or nil when it got none.
/// A server and a client session with their handshake done, flight by flight, through memory.
private func establishedSessions(_ certificates: TestCertificates) throws -> (server: TLSSession, client: TLSSession) {
    let server = try TLSSession(
        context: try TLSContext.server(
            TLSServerSettings(certificatePath: certificates.path("server.pem"), keyPath: certificates.path("server.key"))),
        isServer: true)
    let client = try TLSSession(context: try clientContext(certificates), serverName: "localhost", isServer: false)
    let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
    defer { plaintext.deallocate() }
    try client.handshake()
    for _ in 0..<8 where !(client.isEstablished && server.isEstablished) {
        var flight: [UInt8] = []
        client.drainOutput { flight.append(contentsOf: $0) }
        try flight.withUnsafeBytes { try server.receive($0, scratch: plaintext) { _ in } }
        var answer: [UInt8] = []
        server.drainOutput { answer.append(contentsOf: $0) }
        try answer.withUnsafeBytes { try client.receive($0, scratch: plaintext) { _ in } }
    }
    #expect(client.isEstablished && server.isEstablished)
    return (server, client)
}

private func serverErrorCode(_ body: () throws -> Void) -> Int? {
    do {
        try body()
        return nil
    } catch {
        guard let error = error as? KVOClientError, case .server(let rpcError) = error else { return nil }
        return rpcError.code
    }
}

/// The first flight of a client's handshake with `context`.
private func clientHello(_ context: TLSContext) throws -> [UInt8] {
    let session = try TLSSession(context: context, serverName: "localhost", isServer: false)
    try session.handshake()
    var bytes: [UInt8] = []
    session.drainOutput { bytes.append(contentsOf: $0) }
    return bytes
}
