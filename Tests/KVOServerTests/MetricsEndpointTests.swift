// The Prometheus endpoint (`--metrics-port`) over a raw socket, and the `stats` method: both show the same figures,
// and the figures follow what clients did.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

/// A raw HTTP/1.1 exchange on one socket.
private final class HTTPPeer {
    let connection: LineConnection

    init(_ server: KVODProcess) throws {
        let port = try #require(server.metricsPort, "kvod printed no 'kvod metrics on' line")
        self.connection = try LineConnection(host: server.host, port: port, timeout: .seconds(5))
    }

    func send(_ text: String) throws {
        try self.connection.send(Array(text.utf8))
    }

    /// Reads one response: status code, headers (names lowercased) and body (by Content-Length; none for HEAD).
    func response(head: Bool = false) throws -> (status: Int, headers: [String: String], body: String) {
        let statusLine = try self.line()
        let status = Int(statusLine.split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        while true {
            let line = try self.line()
            if line.isEmpty { break }
            let parts = line.split(separator: ":", maxSplits: 1)
            headers[parts[0].lowercased()] = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
        let length = head ? 0 : Int(headers["content-length"] ?? "0") ?? 0
        var body = ""
        while body.utf8.count < length { body += try self.line() + "\n" }
        return (status, headers, body)
    }

    /// One line without its `\r\n`.
    private func line() throws -> String {
        var text = String(decoding: try self.connection.readLine(timeout: .seconds(5)), as: UTF8.self)
        if text.hasSuffix("\r") { text.removeLast() }
        return text
    }
}

/// The samples of a Prometheus text: "name{labels}" → value.
private func samples(_ body: String) -> [String: Double] {
    var result: [String: Double] = [:]
    for line in body.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " ") else { continue }
        result[String(line[..<space])] = Double(line[line.index(after: space)...])
    }
    return result
}

@Suite(.serialized) struct MetricsEndpointTests {
    @Test func metricsFollowWhatClientsDoAndMatchStats() throws {
        let server = try KVODProcess.start(["--metrics-port", "0"])
        let watcher = try server.client()
        let setter = try server.client()
        _ = try watcher.subscribe("n", options: ["new"])
        _ = try watcher.subscribe("n", options: ["old"])
        for value in 1...3 { try setter.set("n", .int(Int64(value))) }
        _ = try watcher.call("ping")  // the six notifications came before this response

        let stats = try setter.call("stats")
        let http = try HTTPPeer(server)
        try http.send("GET /metrics HTTP/1.1\r\nHost: kvod\r\n\r\n")
        let response = try http.response()
        #expect(response.status == 200)
        #expect(response.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        let figures = samples(response.body)
        #expect(figures["kvod_connections"] == 2)
        #expect(figures["kvod_subscriptions"] == 2)
        #expect(figures["kvod_mutations_total"] == 3)
        #expect(figures["kvod_notifications_total"] == 6)
        #expect(figures["kvod_seq"] == 3)
        #expect(figures["kvod_closes_total{reason=\"slow_consumer\"}"] == 0)
        #expect(figures["kvod_journal_fsync_seconds_count"] == 0)
        #expect(!response.body.contains("kvod_cluster_"), "a kvod outside a cluster shows no cluster figures")
        for name in ["kvod_bytes_in_total", "kvod_bytes_out_total", "kvod_connections_accepted_total"] {
            #expect((figures[name] ?? 0) > 0, "\(name)")
        }
        // `stats` (read just before) shows the same figures; only the bytes moved since (the stats exchange).
        for (json, metric) in [
            ("connections", "kvod_connections"), ("subscriptions", "kvod_subscriptions"),
            ("mutations", "kvod_mutations_total"), ("notifications", "kvod_notifications_total"), ("seq", "kvod_seq"),
        ] {
            #expect(stats[json]?.intValue.map(Double.init) == figures[metric], "\(json)")
        }

        watcher.close()
        var closed = false
        for _ in 0..<100 where !closed {
            try http.send("GET /metrics HTTP/1.1\r\n\r\n")  // the same connection: keep-alive
            let figures = samples(try http.response().body)
            closed = figures["kvod_closes_total{reason=\"client_closed\"}"] == 1 && figures["kvod_subscriptions"] == 0
            if !closed { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(closed, "the closed watcher is counted and its subscriptions are gone")
    }

    @Test func anythingButMetricsIsNotFoundAndRequestsMayComeInPieces() throws {
        let server = try KVODProcess.start(["--metrics-port", "0"])
        let http = try HTTPPeer(server)
        try http.send("GET / HTTP/1.1\r\n\r\n")
        #expect(try http.response().status == 404)
        try http.send("GET /metricsx HTTP/1.1\r\n\r\n")
        #expect(try http.response().status == 404)
        try http.send("POST /metrics HTTP/1.1\r\n\r\n")
        let post = try http.response()
        #expect(post.status == 405)
        #expect(post.headers["allow"] == "GET, HEAD")
        try http.send("HEAD /metrics HTTP/1.1\r\n\r\n")
        let head = try http.response(head: true)
        #expect(head.status == 200)
        #expect(Int(head.headers["content-length"] ?? "0") ?? 0 > 0)
        // A request in pieces, with pauses between them.
        for piece in ["GE", "T /metr", "ics?x=1 HTTP/1.1\r", "\nHost: a\r\n", "\r\n"] {
            try http.send(piece)
            Thread.sleep(forTimeInterval: 0.05)
        }
        let pieced = try http.response()
        #expect(pieced.status == 200)
        #expect(pieced.body.contains("# TYPE kvod_connections gauge"))
        // Connection: close is honoured: the response, then end of stream.
        try http.send("GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(try http.response().headers["connection"] == "close")
        #expect(throws: KVOClientError.self) { try http.connection.readLine(timeout: .seconds(5)) }
    }

    @Test func oversizedAndMalformedRequestsAreRefusedAndClosed() throws {
        let server = try KVODProcess.start(["--metrics-port", "0"])
        let big = try HTTPPeer(server)
        try big.send("GET /metrics HTTP/1.1\r\nX-Padding: \(String(repeating: "x", count: 10_000))")
        #expect(try big.response().status == 431)
        #expect(throws: KVOClientError.self) { try big.connection.readLine(timeout: .seconds(5)) }
        let bad = try HTTPPeer(server)
        try bad.send("HELLO\r\n\r\n")
        #expect(try bad.response().status == 400)
        #expect(throws: KVOClientError.self) { try bad.connection.readLine(timeout: .seconds(5)) }
        // The protocol port is unaffected.
        #expect(try server.client().call("ping") == "pong")
    }

    @Test func withoutMetricsPortThereIsNoEndpoint() throws {
        let server = try KVODProcess.start()
        #expect(server.metricsPort == nil)
        #expect(!server.stdoutText.contains("metrics"))
    }
}
