// One client socket: framing its input into lines for the dispatcher, buffering its output until the loop's next
// flush, its subscriptions, and its two-phase close. What a request means lives in Dispatcher.swift.
import Logging
import ObjectGraph
import UVLoop
import WireProtocol

/// One client connection and what the server remembers about it.
/// Loop-owned: all members run on the loop thread (the main actor in kvod).
@MainActor
final class Connection {
    let id: Int
    unowned let server: Server
    private let stream: TCPStream
    private var framer: LineFramer
    /// Output accepted but not yet handed to the socket; written once per loop turn by `flush()`.
    private var output: [UInt8] = []
    /// True while the connection is on the server's flush list.
    var isFlushPending = false
    /// The connection's subscriptions by id (the connection side of the two-way index; the engine has the other).
    private(set) var subscriptions: [ObservationID: Subscription] = [:]
    /// Non-nil once closing; nothing more is read or queued.
    private(set) var closeReason: CloseReason?
    /// The client's name from `hello`, for logs.
    var clientName: String?
    let remoteAddress: String

    init(id: Int, server: Server, stream: TCPStream) {
        self.id = id
        self.server = server
        self.stream = stream
        self.framer = LineFramer(maxLineBytes: server.limits.maxLineBytes)
        self.remoteAddress = stream.remoteAddress
    }

    /// Starts reading; lines go to the dispatcher as they complete.
    func start() throws(UVError) {
        self.stream.onRead = { [unowned self] bytes in self.received(bytes) }
        self.stream.onEnd = { [unowned self] error in self.close(error == nil ? .clientClosed : .ioError) }
        self.stream.onClose = { [unowned self] in
            self.lingerTimer?.close()
            self.lingerTimer = nil
            self.server.connectionDidClose(self)
        }
        self.stream.setNoDelay(true)
        try self.stream.startReading()
    }

    // MARK: - Input

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard self.closeReason == nil else { return }
        self.server.stats.bytesIn += bytes.count
        do {
            try self.framer.feed(bytes) { line in
                // A line after a close (in the same read) is dropped: the connection is going away.
                guard self.closeReason == nil else { return }
                self.server.dispatcher.handle(line: line, on: self)
            }
        } catch {
            let limit = self.server.limits.maxLineBytes
            let error = RPCError(
                .limitExceeded, "line exceeds \(limit) bytes", data: .object(["limit": .int(Int64(limit))]))
            self.enqueue { RPCEncoder.appendError(id: nil, error: error, to: &$0); $0.append(UInt8(ascii: "\n")) }
            self.close(.lineTooLong)
        }
    }

    // MARK: - Output

    /// Appends bytes to the output buffer and schedules a flush before the loop next polls.
    func enqueue(_ write: (inout [UInt8]) -> Void) {
        guard self.closeReason == nil else { return }
        write(&self.output)
        if !self.isFlushPending {
            self.isFlushPending = true
            self.server.markNeedsFlush(self)
        }
    }

    /// Hands buffered output to the socket (one write per loop turn) and enforces the output limit.
    func flush() {
        self.isFlushPending = false
        guard !self.output.isEmpty, !self.stream.isClosing else { return }
        self.server.stats.bytesOut += self.output.count
        self.output.withUnsafeBytes { _ = self.stream.write($0) }
        // Keep a small buffer's capacity for the next turn; give a large one back.
        self.output.removeAll(keepingCapacity: self.output.capacity <= 64 << 10)
        if self.closeReason == nil && self.stream.pendingWriteBytes > self.server.limits.outputHardLimitBytes {
            self.close(.outputLimit)
        }
    }

    // MARK: - Subscriptions

    func add(_ subscription: Subscription) {
        self.subscriptions[subscription.id] = subscription
    }

    /// Removes one of this connection's subscriptions; false when it has no such subscription.
    func removeSubscription(_ id: ObservationID) -> Bool {
        guard self.subscriptions.removeValue(forKey: id) != nil else { return false }
        try? self.server.graph.removeObservation(id)  // the engine has it: both sides are added together
        return true
    }

    // MARK: - Closing

    /// Closes the connection: stops reading, removes every subscription at once, sends what is queued (and a
    /// `closing` notice when the server decided to close) unless the socket is broken or clogged, then closes the
    /// socket. Memory goes when libuv's close callback runs. Idempotent.
    func close(_ reason: CloseReason) {
        guard self.closeReason == nil else { return }
        let notice: Bool
        switch reason {
        case .lineTooLong, .serverShutdown: notice = true
        case .clientClosed, .ioError, .outputLimit: notice = false
        }
        if notice {
            self.enqueue { buffer in
                RPCEncoder.appendNotification(method: "closing", to: &buffer) {
                    $0.append(contentsOf: #"{"reason":""#.utf8)
                    $0.append(contentsOf: reason.rawValue.utf8)
                    $0.append(contentsOf: #""}"#.utf8)
                }
                buffer.append(UInt8(ascii: "\n"))
            }
        }
        self.closeReason = reason
        self.stream.stopReading()
        for id in self.subscriptions.keys { try? self.server.graph.removeObservation(id) }
        self.subscriptions.removeAll()
        self.server.connectionWillClose(self, reason: reason)
        switch reason {
        case .ioError, .outputLimit:
            self.output.removeAll()
            self.stream.close()
        case .clientClosed:
            // The client sent EOF, so nothing unread is left: send what is queued, then close.
            self.flush()
            self.stream.shutdownWrites { [stream = self.stream] in stream.close() }
        case .lineTooLong, .serverShutdown:
            self.flush()
            self.stream.shutdownWrites { [weak self] in self?.linger() }
        }
    }

    /// Closing a socket that still has unread input makes the kernel send a reset, which can destroy the last
    /// messages in flight (the error and `closing` notice). So after a server-initiated close the connection reads
    /// and discards input until the client closes its end or `lingerMilliseconds` pass (Apache's lingering close).
    private func linger() {
        let stream = self.stream
        stream.onRead = { _ in }
        stream.onEnd = { _ in stream.close() }
        do {
            try stream.startReading()
            let timer = try LoopTimer(loop: self.server.loop)
            try timer.start(afterMilliseconds: Self.lingerMilliseconds) { stream.close() }
            self.lingerTimer = timer
        } catch {
            stream.close()
        }
    }

    /// How long a server-initiated close waits for the client to close its end.
    static let lingerMilliseconds: UInt64 = 2000
    private var lingerTimer: LoopTimer?
}
