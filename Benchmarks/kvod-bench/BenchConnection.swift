// The client side of one benchmark socket: an output buffer that collects every request of a loop turn and goes to
// the socket in one write just before the loop polls (as a server should batch its output), and a dialer that opens
// many connections with a bounded number of connects in flight. Protocol parsing lives with the scenarios; over
// WebSocket (WebSocketClient.swift) this type frames each request line and hands the scenario lines again; over TLS
// (the TLS module kvod and kvoctl use, for kvod and for Redis's --tls-port alike) it encrypts each turn's output and
// hands the scenario the decrypted bytes.

import TLS
import UVLoop

/// Loop-owned. One client socket whose requests are batched into one write per loop turn.
@MainActor
final class BenchConnection {
    /// The socket.
    let stream: TCPStream
    private unowned let batcher: OutputBatcher
    /// Requests appended this turn, not yet written.
    private var output: [UInt8] = []
    private var isQueued = false
    /// WebSocket only: the protocol state, the request lines before framing, the lines decoded from frames, the
    /// pongs to send, and the scenario's handlers.
    private var webSocket: WebSocketClient?
    private var unframed: [UInt8] = []
    private var decoded: [UInt8] = []
    private var replies: [UInt8] = []
    private var onBytes: (@MainActor (UnsafeRawBufferPointer) -> Void)?
    private var onEnd: (@MainActor (String) -> Void)?
    /// TLS only: the session; output waits until its handshake is done.
    private var tls: TLSSession?
    /// The plaintext of every TLS connection passes through this (one loop, one connection at a time).
    private static let plaintextScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)

    /// Wraps a connected stream and starts reading: every chunk goes to `onBytes`; the end of the stream (EOF or an
    /// error) goes to `onEnd` with a description. Over `.websocket` the upgrade request goes out at once, requests
    /// are held until it is accepted, and `onBytes` gets the frames' messages as lines (each ended by `\n`).
    /// With `tls` (a client context; not with `.websocket`), the TLS handshake starts at once and requests are held
    /// until it is done.
    init(
        stream: TCPStream, batcher: OutputBatcher, transport: BenchTransport = .tcp, tls: TLSContext? = nil,
        onBytes: @escaping @MainActor (UnsafeRawBufferPointer) -> Void, onEnd: @escaping @MainActor (String) -> Void
    ) throws(UVError) {
        self.stream = stream
        self.batcher = batcher
        self.output.reserveCapacity(4096)
        stream.setNoDelay(true)
        stream.onEnd = { error in onEnd(error.map { "\($0)" } ?? "the server closed the connection") }
        if let tls {
            self.onBytes = onBytes
            self.onEnd = onEnd
            stream.onRead = { [unowned self] chunk in self.receiveTLS(chunk) }
            do throws(TLSError) {
                let session = try TLSSession(context: tls, isServer: false)
                try session.handshake()
                self.tls = session
                self.writeTLSOutput()
            } catch {
                onEnd("TLS: \(error)")
            }
            try stream.startReading()
            return
        }
        switch transport {
        case .tcp:
            stream.onRead = onBytes
        case .websocket:
            self.webSocket = WebSocketClient()
            self.onBytes = onBytes
            self.onEnd = onEnd
            self.decoded.reserveCapacity(65536)
            stream.onRead = { [unowned self] chunk in self.receiveWebSocket(chunk) }
            stream.write(WebSocketClient.upgradeRequest(authority: stream.remoteAddress))
        }
        try stream.startReading()
    }

    /// Appends one request to this turn's output; it is written when the loop is about to poll.
    @inline(__always)
    func send(_ write: (inout [UInt8]) -> Void) {
        if self.webSocket != nil {
            self.unframed.removeAll(keepingCapacity: true)
            write(&self.unframed)
            self.unframed.withUnsafeBytes { WebSocketClient.appendFrames(lines: $0, to: &self.output) }
        } else {
            write(&self.output)
        }
        if !self.isQueued {
            self.isQueued = true
            self.batcher.queue(self)
        }
    }

    /// Writes the collected output in one call (what the socket does not take at once, libuv queues). Over
    /// WebSocket, output waits for the upgrade's answer (RFC 6455 §4.1).
    func flush() {
        self.isQueued = false
        guard !self.output.isEmpty, self.webSocket?.isOpen ?? true, self.tls?.isEstablished ?? true else { return }
        if let tls = self.tls {
            let sent = self.output.withUnsafeBytes { plaintext in
                Result { () throws(TLSError) in
                    try tls.send(plaintext) { _ = self.stream.write($0) }
                }
            }
            if case .failure(let error) = sent { self.onEnd?("TLS: \(error)") }
        } else {
            self.output.withUnsafeBytes { _ = self.stream.write($0) }
        }
        self.output.removeAll(keepingCapacity: self.output.capacity <= 1 << 20)
    }

    /// TLS input: the handshake, then the plaintext for the scenario; held requests go out once it is established.
    private func receiveTLS(_ chunk: UnsafeRawBufferPointer) {
        guard let tls = self.tls, let onBytes = self.onBytes else { return }
        let wasEstablished = tls.isEstablished
        do throws(TLSError) {
            try tls.receive(chunk, scratch: Self.plaintextScratch) { onBytes($0) }
        } catch {
            self.writeTLSOutput()
            self.onEnd?("TLS: \(error)")
            return
        }
        self.writeTLSOutput()
        if !wasEstablished && tls.isEstablished && !self.output.isEmpty && !self.isQueued {
            self.isQueued = true
            self.batcher.queue(self)
        }
    }

    /// Writes what TLS produced on its own (handshake messages).
    private func writeTLSOutput() {
        guard let tls = self.tls, tls.hasOutput else { return }
        tls.drainOutput { _ = self.stream.write($0) }
    }

    /// Closes the socket; pending output is dropped. An open WebSocket says goodbye with a close frame first.
    func close() {
        self.output.removeAll()
        if self.webSocket?.isOpen == true {
            var frame: [UInt8] = []
            let code: [UInt8] = [0x03, 0xE8]  // 1000, normal closure
            code.withUnsafeBytes { WebSocketClient.appendMaskedFrame(opcode: 0x8, payload: $0, to: &frame) }
            self.stream.write(frame)
        }
        self.stream.close()
    }

    /// WebSocket input: the upgrade's answer, then frames, whose messages go to the scenario as lines.
    private func receiveWebSocket(_ chunk: UnsafeRawBufferPointer) {
        guard let outcome = self.webSocket?.receive(chunk, lines: &self.decoded, replies: &self.replies) else { return }
        if !self.replies.isEmpty {
            self.output.append(contentsOf: self.replies)
            self.replies.removeAll(keepingCapacity: true)
        }
        switch outcome {
        case .none, .opened:
            // Held requests (and pongs) go out with this turn's output.
            if !self.output.isEmpty && !self.isQueued && self.webSocket?.isOpen == true {
                self.isQueued = true
                self.batcher.queue(self)
            }
        case .closed(let code):
            self.onEnd?("the server sent a close frame (code \(code.map { "\($0)" } ?? "none"))")
            return
        case .failed(let message):
            self.onEnd?("WebSocket: \(message)")
            return
        }
        if !self.decoded.isEmpty, let onBytes = self.onBytes {
            self.decoded.withUnsafeBytes { onBytes($0) }
            self.decoded.removeAll(keepingCapacity: self.decoded.capacity <= 1 << 20)
        }
    }
}

/// Loop-owned. Flushes every connection that has output, once per loop turn, from a before-poll hook.
@MainActor
final class OutputBatcher {
    private var hook: BeforePollHook?
    private var queued: [BenchConnection] = []

    /// Installs the hook on `loop`.
    init(loop: EventLoop) throws(UVError) {
        self.hook = try BeforePollHook(loop: loop) { [weak self] in self?.flushAll() }
    }

    /// Remembers that `connection` has output for this turn.
    func queue(_ connection: BenchConnection) {
        self.queued.append(connection)
    }

    /// Writes every queued connection's output, in the order they were first queued this turn.
    func flushAll() {
        guard !self.queued.isEmpty else { return }
        let connections = self.queued
        self.queued.removeAll(keepingCapacity: true)
        for connection in connections { connection.flush() }
    }

    /// Stops the hook.
    func close() {
        self.hook?.close()
        self.hook = nil
    }
}

/// Loop-owned. Opens `count` connections to one address with at most `concurrency` connects in flight, handing each
/// connected stream (with its index, in completion order) to `onConnected`. The first failure goes to `onFailure`
/// and stops further connects.
///
/// A connect completes when the kernel has the connection, which may be long before the server accepts it; opening
/// thousands at once can overflow the server's accept queue. With `isPaced`, a slot is freed only when the caller
/// calls `release()` (after the server answered on that connection), so at most `concurrency` connections wait to be
/// accepted and served.
@MainActor
final class Dialer {
    private let loop: EventLoop
    private let host: String
    private let port: Int
    private let count: Int
    private let concurrency: Int
    private let onConnected: @MainActor (Int, TCPStream) -> Void
    private let onFailure: @MainActor (String) -> Void
    private let isPaced: Bool
    private var started = 0
    private var connected = 0
    private var inFlight = 0
    private var hasFailed = false

    /// Prepares the dialer; nothing happens until `start()`.
    init(
        loop: EventLoop, host: String, port: Int, count: Int, concurrency: Int = 128, isPaced: Bool = false,
        onConnected: @escaping @MainActor (Int, TCPStream) -> Void, onFailure: @escaping @MainActor (String) -> Void
    ) {
        self.isPaced = isPaced
        self.loop = loop
        self.host = host
        self.port = port
        self.count = count
        self.concurrency = max(concurrency, 1)
        self.onConnected = onConnected
        self.onFailure = onFailure
    }

    /// Starts connecting; returns at once.
    func start() {
        while self.inFlight < self.concurrency && self.started < self.count && !self.hasFailed {
            self.started += 1
            self.inFlight += 1
            do throws(UVError) {
                try TCPStream.connect(loop: self.loop, host: self.host, port: self.port) { [self] stream, error in
                    if !self.isPaced || stream == nil { self.inFlight -= 1 }
                    guard !self.hasFailed else {
                        stream?.close()
                        return
                    }
                    guard let stream else {
                        self.fail("connect to \(self.host):\(self.port) failed: \(error.map { "\($0)" } ?? "?")")
                        return
                    }
                    let index = self.connected
                    self.connected += 1
                    self.onConnected(index, stream)
                    self.start()
                }
            } catch {
                self.inFlight -= 1
                self.fail("connect to \(self.host):\(self.port) failed: \(error)")
            }
        }
    }

    /// Paced mode: one connection has been served; lets the next connect start.
    func release() {
        guard self.isPaced, self.inFlight > 0 else { return }
        self.inFlight -= 1
        self.start()
    }

    private func fail(_ message: String) {
        guard !self.hasFailed else { return }
        self.hasFailed = true
        self.onFailure(message)
    }
}
