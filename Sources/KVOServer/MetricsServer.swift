// The Prometheus metrics endpoint: a tiny HTTP/1.1 server on the same loop as the protocol (`GET /metrics`, anything
// else 404), with keep-alive, bounded request heads, a cap on connections and an idle timeout. Request parsing is
// HTTPRequestParser.swift; the figures are StatsSnapshot.swift.
import Logging
import UVLoop

/// Serves `GET /metrics` on its own port. Loop-owned.
@MainActor
final class MetricsServer {
    /// The most metrics connections open at once; more are closed on accept.
    static let maxConnections = 64
    /// A connection with no complete request for this long is closed.
    static let idleMilliseconds: UInt64 = 30_000
    /// A connection whose unsent responses pass this is closed (a client that pipelines and never reads).
    static let maxPendingBytes = 1 << 20

    private let loop: EventLoop
    private let logger: Logger
    private let render: @MainActor () -> String
    private var listener: TCPListener?
    private var idleTimer: LoopTimer?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]

    /// Listens on `host:port`; throws when it cannot.
    init(
        loop: EventLoop, host: String, port: Int, logger: Logger, render: @escaping @MainActor () -> String
    ) throws(UVError) {
        self.loop = loop
        self.logger = logger
        self.render = render
        self.listener = try TCPListener(loop: loop, host: host, port: port) { [unowned self] stream in
            self.accept(stream)
        }
        let timer = try LoopTimer(loop: loop)
        try timer.start(afterMilliseconds: 1000, repeatMilliseconds: 1000) { [unowned self] in self.closeIdle() }
        self.idleTimer = timer
    }

    /// The bound address, "127.0.0.1:9100".
    var localAddress: String { self.listener?.localAddress ?? "" }

    /// Stops listening and closes every metrics connection.
    func close() {
        self.listener?.close()
        self.listener = nil
        self.idleTimer?.close()
        self.idleTimer = nil
        for connection in self.connections.values { connection.stream.close() }
        self.connections.removeAll()
    }

    private func accept(_ stream: TCPStream) {
        guard self.connections.count < Self.maxConnections else {
            self.logger.warning("metrics connection refused: too many", metadata: ["connection.remote": "\(stream.remoteAddress)"])
            stream.close()
            return
        }
        let connection = HTTPConnection(stream: stream, now: self.loop.nowMilliseconds)
        let key = ObjectIdentifier(connection)
        self.connections[key] = connection
        stream.onRead = { [unowned self] bytes in self.received(bytes, on: connection) }
        stream.onEnd = { _ in stream.close() }
        stream.onClose = { [weak self] in self?.connections.removeValue(forKey: key) }
        do {
            try stream.startReading()
        } catch {
            stream.close()
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer, on connection: HTTPConnection) {
        connection.lastActivity = self.loop.nowMilliseconds
        let heads: [HTTPRequestHead]
        do {
            heads = try connection.parser.feed(bytes)
        } catch {
            let status = error.status
            connection.respond(
                status: status.code, reason: status.reason, body: "\(status.reason)\n", keepAlive: false, head: false)
            return
        }
        for head in heads {
            let isHead = head.method == "HEAD"
            switch (head.path, head.method) {
            case ("/metrics", "GET"), ("/metrics", "HEAD"):
                connection.respond(
                    status: 200, reason: "OK", body: self.render(), keepAlive: head.keepsAlive, head: isHead,
                    contentType: "text/plain; version=0.0.4; charset=utf-8")
            case ("/metrics", _):
                connection.respond(
                    status: 405, reason: "Method Not Allowed", body: "only GET and HEAD\n", keepAlive: head.keepsAlive,
                    head: false, extraHeaders: "Allow: GET, HEAD\r\n")
            default:
                connection.respond(
                    status: 404, reason: "Not Found", body: "not found: try /metrics\n", keepAlive: head.keepsAlive,
                    head: isHead)
            }
            if connection.isClosing { return }
        }
        if connection.stream.pendingWriteBytes > Self.maxPendingBytes { connection.stream.close() }
    }

    private func closeIdle() {
        let now = self.loop.nowMilliseconds
        for connection in self.connections.values where now &- connection.lastActivity > Self.idleMilliseconds {
            connection.stream.close()
        }
    }
}

/// One HTTP client of the metrics endpoint. Loop-owned.
@MainActor
private final class HTTPConnection {
    let stream: TCPStream
    var parser = HTTPRequestParser()
    var lastActivity: UInt64
    /// Set once a response said `Connection: close`; nothing more is answered.
    private(set) var isClosing = false

    init(stream: TCPStream, now: UInt64) {
        self.stream = stream
        self.lastActivity = now
    }

    /// Writes one response; without keep-alive, half-closes after it and closes once the client is done.
    func respond(
        status: Int, reason: String, body: String, keepAlive: Bool, head: Bool,
        contentType: String = "text/plain; charset=utf-8", extraHeaders: String = ""
    ) {
        guard !self.isClosing else { return }
        let bodyBytes = Array(body.utf8)
        var response = "HTTP/1.1 \(status) \(reason)\r\n"
        response += "Content-Type: \(contentType)\r\nContent-Length: \(bodyBytes.count)\r\n"
        response += extraHeaders
        response += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        var bytes = Array(response.utf8)
        if !head { bytes += bodyBytes }
        self.stream.write(bytes)
        if !keepAlive {
            self.isClosing = true
            self.stream.stopReading()
            self.stream.shutdownWrites { [stream = self.stream] in stream.close() }
        }
    }
}
