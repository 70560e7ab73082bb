// A tiny HTTP/1.1 server on the same loop as the protocol, for kvod's side ports: the Prometheus metrics endpoint
// (MetricsEndpoint.swift) and the web inspector's static files (WebServer.swift). It owns the sockets — keep-alive,
// bounded request heads, a cap on connections, an idle timeout — and asks a responder for each request; HEAD gets the
// GET response without its body; with a TLS context, a connection whose first byte starts a TLS handshake is served
// over it (https), and with `tlsOnly` one that does not is refused. Request parsing is HTTPRequestParser.swift.
import Logging
import TLS
import UVLoop

/// One response: status, the headers besides `Content-Length` and `Connection` (which the server writes), and body.
struct HTTPResponse {
    var status: Int
    var reason: String
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []

    /// A `text/plain` response.
    static func text(_ status: Int, _ reason: String, _ body: String, headers: [(name: String, value: String)] = [])
        -> HTTPResponse
    {
        HTTPResponse(
            status: status, reason: reason, headers: [("Content-Type", "text/plain; charset=utf-8")] + headers,
            body: Array(body.utf8))
    }
}

/// Serves HTTP/1.1 on its own port, answering each request with `respond`. Loop-owned.
@MainActor
final class HTTPServer {
    /// The most connections open at once; more are closed on accept.
    static let maxConnections = 64
    /// A connection with no complete request for this long is closed.
    static let idleMilliseconds: UInt64 = 30_000
    /// A connection whose unsent responses pass this is closed (a client that pipelines and never reads).
    static let maxPendingBytes = 1 << 20

    private let loop: EventLoop
    private let logger: Logger
    /// What the server is, for log lines: "metrics", "inspector".
    private let name: String
    private let respond: @MainActor (HTTPRequestHead) -> HTTPResponse
    private var listener: TCPListener?
    private var idleTimer: LoopTimer?
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    /// The TLS context new connections get (replaced on reload); nil: plaintext only.
    var tlsContext: TLSContext?
    private let tlsOnly: Bool
    /// Lets busy TLS connections keep their record buffers (swept with the idle check).
    private let tlsBuffers = TLSBufferKeeper()

    /// Listens on `host:port`; throws when it cannot.
    init(
        loop: EventLoop, host: String, port: Int, name: String, logger: Logger, tls: TLSContext? = nil,
        tlsOnly: Bool = false, respond: @escaping @MainActor (HTTPRequestHead) -> HTTPResponse
    ) throws(UVError) {
        self.tlsContext = tls
        self.tlsOnly = tlsOnly && tls != nil
        self.loop = loop
        self.logger = logger
        self.name = name
        self.respond = respond
        self.listener = try TCPListener(loop: loop, host: host, port: port) { [unowned self] stream in
            self.accept(stream)
        }
        let timer = try LoopTimer(loop: loop)
        try timer.start(afterMilliseconds: 1000, repeatMilliseconds: 1000) { [unowned self] in
            self.closeIdle()
            self.tlsBuffers.sweep()
        }
        self.idleTimer = timer
    }

    /// The bound address, "127.0.0.1:9100".
    var localAddress: String { self.listener?.localAddress ?? "" }

    /// The bound port.
    var localPort: Int { self.listener?.localPort ?? 0 }

    /// Stops listening and closes every connection.
    func close() {
        self.listener?.close()
        self.listener = nil
        self.idleTimer?.close()
        self.idleTimer = nil
        self.tlsBuffers.forgetAll()
        for connection in self.connections.values { connection.stream.close() }
        self.connections.removeAll()
    }

    private func accept(_ stream: TCPStream) {
        guard self.connections.count < Self.maxConnections else {
            self.logger.warning(
                "\(self.name) connection refused: too many", metadata: ["connection.remote": "\(stream.remoteAddress)"])
            stream.close()
            return
        }
        let connection = HTTPConnection(stream: stream, now: self.loop.nowMilliseconds)
        let key = ObjectIdentifier(connection)
        self.connections[key] = connection
        if self.tlsContext != nil {
            stream.onRead = { [unowned self] bytes in self.receivedFirst(bytes, on: connection) }
        } else {
            stream.onRead = { [unowned self] bytes in self.received(bytes, on: connection) }
        }
        stream.onEnd = { _ in stream.close() }
        stream.onClose = { [weak self] in self?.connections.removeValue(forKey: key) }
        do {
            try stream.startReading()
        } catch {
            stream.close()
        }
    }

    /// The first bytes of a connection while TLS is configured: a handshake record starts TLS, anything else is
    /// plaintext HTTP (refused with `tlsOnly`).
    private func receivedFirst(_ bytes: UnsafeRawBufferPointer, on connection: HTTPConnection) {
        let stream = connection.stream
        guard bytes.first == TLSLayer.handshakeRecordByte, let context = self.tlsContext else {
            if self.tlsOnly {
                connection.send(
                    .text(400, "Bad Request", "this port takes TLS only: use https://\n"), keepAlive: false, head: false)
                return
            }
            stream.onRead = { [unowned self] bytes in self.received(bytes, on: connection) }
            return self.received(bytes, on: connection)
        }
        do {
            connection.tls = try TLSLayer(context: context, stream: stream, buffers: self.tlsBuffers)
        } catch {
            stream.close()
            return
        }
        stream.onRead = { [unowned self] bytes in self.receivedCiphertext(bytes, on: connection) }
        self.receivedCiphertext(bytes, on: connection)
    }

    private func receivedCiphertext(_ bytes: UnsafeRawBufferPointer, on connection: HTTPConnection) {
        guard let layer = connection.tls else { return }
        connection.lastActivity = self.loop.nowMilliseconds
        let failure = layer.receive(bytes) { plaintext in
            guard !connection.isClosing else { return }
            self.received(plaintext, on: connection)
        }
        if let failure {
            self.logger.debug(
                "\(self.name) TLS handshake failed",
                metadata: ["connection.remote": "\(connection.stream.remoteAddress)", "error": "\(failure)"])
            connection.stream.shutdownWrites { [stream = connection.stream] in stream.close() }
        } else if layer.session.peerClosed {
            connection.stream.close()
        }
    }

    private func received(_ bytes: UnsafeRawBufferPointer, on connection: HTTPConnection) {
        connection.lastActivity = self.loop.nowMilliseconds
        let heads: [HTTPRequestHead]
        do {
            heads = try connection.parser.feed(bytes)
        } catch {
            let status = error.status
            connection.send(.text(status.code, status.reason, "\(status.reason)\n"), keepAlive: false, head: false)
            return
        }
        for head in heads {
            connection.send(self.respond(head), keepAlive: head.keepsAlive, head: head.method == "HEAD")
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

/// One HTTP client. Loop-owned.
@MainActor
private final class HTTPConnection {
    let stream: TCPStream
    var parser = HTTPRequestParser()
    var lastActivity: UInt64
    /// The connection's TLS, when it started with a handshake.
    var tls: TLSLayer?
    /// Set once a response said `Connection: close`; nothing more is answered.
    private(set) var isClosing = false

    init(stream: TCPStream, now: UInt64) {
        self.stream = stream
        self.lastActivity = now
    }

    /// Writes one response (without its body for HEAD); without keep-alive, half-closes after it and closes once the
    /// client is done.
    func send(_ response: HTTPResponse, keepAlive: Bool, head: Bool) {
        guard !self.isClosing else { return }
        var text = "HTTP/1.1 \(response.status) \(response.reason)\r\n"
        for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
        text += "Content-Length: \(response.body.count)\r\n"
        text += keepAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
        var bytes = Array(text.utf8)
        if !head { bytes += response.body }
        if let tls = self.tls { tls.write(bytes) } else { self.stream.write(bytes) }
        if !keepAlive {
            self.isClosing = true
            self.stream.stopReading()
            self.tls?.close()
            self.stream.shutdownWrites { [stream = self.stream] in stream.close() }
        }
    }
}
