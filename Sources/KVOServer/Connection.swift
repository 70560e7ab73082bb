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
    unowned(unsafe) let server: Server  // the server outlives its connections
    private let stream: TCPStream
    private var framer: LineFramer
    /// Output accepted but not yet handed to the socket; written once per loop turn by `flush()`.
    @exclusivity(unchecked) private var output = OutputBuffer()  // loop-owned; never accessed re-entrantly
    /// True while the connection is on the server's flush list.
    @exclusivity(unchecked) var isFlushPending = false
    /// The connection's subscriptions in id order (the connection side of the two-way index; the engine has the
    /// other). An array, not a dictionary: ids only grow, so adding appends, and a lookup is a binary search; a
    /// dictionary entry would cost more memory than the subscription.
    private(set) var subscriptions: [Subscription] = []
    /// Non-nil once closing; nothing more is read or queued.
    private(set) var closeReason: CloseReason?
    /// The client's name from `hello`, for logs.
    var clientName: String?
    /// What the connection's token allows; nil until a `hello` with a valid token (when access control is on).
    var access: Access?
    /// The key paths the connection's token is restricted to; nil: every path (Protocol/README.md#access-control).
    var allowedPaths: [PathPattern]?
    /// Wrong tokens this connection sent in `hello`.
    var authenticationFailures = 0
    /// A close the dispatcher asked for, done once the current line's response is queued.
    var closeAfterResponse: CloseReason?
    /// Decides when the client reads too slowly (OutputLimiter.swift).
    private var limiter: OutputLimiter
    /// Set when the output passed its limits; the connection is closed at the next flush, outside any commit.
    private var outputLimitBreach: OutputLimitBreach?
    /// libuv's queue after the last flush, and the output size from which enqueues check the limits.
    private var lastPendingWriteBytes = 0
    private let limitCheckThreshold: Int
    let remoteAddress: String
    /// The loop's clock when the connection was accepted (for the authentication timeout).
    let openedAtMilliseconds: UInt64

    init(id: Int, server: Server, stream: TCPStream) {
        self.id = id
        self.server = server
        self.stream = stream
        self.framer = LineFramer(maxLineBytes: server.limits.maxLineBytes)
        self.limiter = OutputLimiter(limits: server.limits)
        let soft = server.limits.outputSoftLimitBytes
        self.limitCheckThreshold = soft > 0 ? min(soft, server.limits.outputHardLimitBytes) : server.limits.outputHardLimitBytes
        self.remoteAddress = stream.remoteAddress
        self.openedAtMilliseconds = server.loop.nowMilliseconds
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

    /// Appends bytes to the output buffer and schedules a flush before the loop next polls. Past the output limits
    /// nothing more is buffered and the flush closes the connection (`slow_consumer`): closing here could happen
    /// inside the engine's commit, which is delivering notifications.
    func enqueue(_ write: (inout [UInt8]) -> Void) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        self.server.withScratch { scratch in
            write(&scratch)
            self.output.append(scratch)
        }
        self.outputQueued()
    }

    /// Appends bytes to the output buffer (see `enqueue(_:)`).
    func enqueue(bytes: [UInt8]) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        self.output.append(bytes)
        self.outputQueued()
    }

    /// Queues one notification (the hot path of fan-out: four memcpys, nothing encoded; Subscription.swift).
    /// Counts it in the stats.
    @inline(__always)
    func enqueueNotification(of subscription: Subscription, tail: Int, from encoder: NotificationEncoder) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        self.output.append(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":"#)
        if subscription.idDigitCount > 0 {
            self.output.append(packed: subscription.idDigits, count: Int(subscription.idDigitCount))
        } else {
            self.output.appendDecimal(subscription.id)
        }
        self.output.append(subscription.middle)
        encoder.appendTail(tail, to: &self.output)
        self.server.stats.notifications += 1
        self.outputQueued()
    }

    /// After output was queued: checks the limits only once the buffer could matter (the full check also runs at
    /// every flush and once a second), and schedules a flush.
    @inline(__always)
    private func outputQueued() {
        if self.output.count + self.lastPendingWriteBytes >= self.limitCheckThreshold { self.checkOutputLimits() }
        if !self.isFlushPending {
            self.isFlushPending = true
            self.server.markNeedsFlush(self)
        }
    }

    /// Hands buffered output to the socket (one write per loop turn), then enforces the output limits.
    func flush() {
        self.isFlushPending = false
        guard !self.stream.isClosing else { return }
        if !self.output.isEmpty && self.outputLimitBreach == nil {
            self.server.stats.bytesOut += self.output.count
            self.output.withBytes { _ = self.stream.write($0) }
            // Keep a small buffer's capacity for the next turn; give a large one back (an idle connection should not
            // hold a burst's worth of memory).
            self.output.removeAll(keepingCapacity: self.output.capacity <= 8 << 10)
            self.checkOutputLimits()
        }
        self.lastPendingWriteBytes = self.stream.pendingWriteBytes
        if self.closeReason == nil, let breach = self.outputLimitBreach {
            self.server.outputLimitExceeded(self, breach)
            self.close(.slowConsumer)
        }
    }

    /// Bytes queued for the client and not yet taken by the kernel: ours plus libuv's write queue.
    var pendingOutputBytes: Int { self.output.count + self.stream.pendingWriteBytes }

    /// Asks the limiter about the output now queued; remembers a breach and drops what is buffered (the client
    /// will not get it anyway). Also run once a second by the server, for a client that no new output reaches.
    func checkOutputLimits() {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        let action = self.limiter.check(
            pendingBytes: self.pendingOutputBytes, nowMilliseconds: self.server.loop.nowMilliseconds)
        guard case .exceeded(let breach) = action else { return }
        self.outputLimitBreach = breach
        self.output.removeAll()
        if !self.isFlushPending {
            self.isFlushPending = true
            self.server.markNeedsFlush(self)
        }
    }

    // MARK: - Subscriptions

    func add(_ subscription: Subscription) {
        precondition(self.subscriptions.last.map { $0.id < subscription.id } ?? true, "subscription ids must grow")
        self.subscriptions.append(subscription)
        self.server.stats.subscriptionsOpen += 1
    }

    /// The position of the subscription with `id`, if this connection has it.
    private func subscriptionIndex(_ id: Int) -> Int? {
        var low = 0
        var high = self.subscriptions.count
        while low < high {
            let middle = (low + high) / 2
            if self.subscriptions[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < self.subscriptions.count && self.subscriptions[low].id == id ? low : nil
    }

    /// Removes one of this connection's subscriptions; false when it has no such subscription.
    func removeSubscription(_ id: Int) -> Bool {
        guard let index = self.subscriptionIndex(id) else { return false }
        let subscription = self.subscriptions.remove(at: index)
        self.server.stats.subscriptionsOpen -= 1
        self.server.subscriptionEnded(subscription)
        return true
    }

    // MARK: - Closing

    /// Closes the connection: stops reading, removes every subscription at once, sends what is queued (and a
    /// `closing` notice when the server decided to close) unless the socket is broken or clogged, then closes the
    /// socket. Memory goes when libuv's close callback runs. Idempotent.
    func close(_ reason: CloseReason) {
        guard self.closeReason == nil else { return }
        switch reason {
        case .lineTooLong, .serverShutdown, .tooManyConnections, .unauthorized, .authTimeout:
            self.enqueue { $0.append(contentsOf: Self.closingNotice(reason)) }
        case .clientClosed, .ioError, .slowConsumer:
            break
        }
        self.closeReason = reason
        self.stream.stopReading()
        self.server.stats.subscriptionsOpen -= self.subscriptions.count
        for subscription in self.subscriptions { self.server.subscriptionEnded(subscription) }
        self.subscriptions.removeAll()
        self.server.connectionWillClose(self, reason: reason)
        switch reason {
        case .ioError:
            self.output.removeAll()
            self.stream.close()
        case .slowConsumer:
            // No linger: the client is not reading. The notice goes out only if the socket takes it right now (with
            // libuv's queue non-empty it would queue behind, and closing cancels the queue).
            self.output.removeAll()
            if self.stream.pendingWriteBytes == 0 { self.stream.write(Self.closingNotice(reason)) }
            self.stream.close()
        case .clientClosed:
            // The client sent EOF, so nothing unread is left: send what is queued, then close.
            self.flush()
            self.armCloseDeadline()
            self.stream.shutdownWrites { [stream = self.stream] in stream.close() }
        case .lineTooLong, .serverShutdown, .tooManyConnections, .unauthorized, .authTimeout:
            self.flush()
            self.armCloseDeadline()
            self.stream.shutdownWrites { [weak self] in self?.linger() }
        }
    }

    /// A graceful close waits for queued output to reach the socket, which never happens if the client stopped
    /// reading with its buffers full: after `closeDeadlineMilliseconds` the socket is closed regardless.
    private func armCloseDeadline() {
        guard let timer = try? LoopTimer(loop: self.server.loop) else { return self.stream.close() }
        do {
            try timer.start(afterMilliseconds: Self.closeDeadlineMilliseconds) { [stream = self.stream] in stream.close() }
            self.lingerTimer = timer
        } catch {
            timer.close()
            self.stream.close()
        }
    }

    /// How long a graceful close may wait for the client to take what is queued.
    static let closeDeadlineMilliseconds: UInt64 = 5000

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
            self.lingerTimer?.close()
            self.lingerTimer = timer
        } catch {
            stream.close()
        }
    }

    /// `{"jsonrpc":"2.0","method":"closing","params":{"reason":R}}` and a newline.
    static func closingNotice(_ reason: CloseReason) -> [UInt8] {
        var buffer: [UInt8] = []
        RPCEncoder.appendNotification(method: "closing", to: &buffer) {
            $0.append(contentsOf: #"{"reason":""#.utf8)
            $0.append(contentsOf: reason.rawValue.utf8)
            $0.append(contentsOf: #""}"#.utf8)
        }
        buffer.append(UInt8(ascii: "\n"))
        return buffer
    }

    /// How long a server-initiated close waits for the client to close its end.
    static let lingerMilliseconds: UInt64 = 2000
    private var lingerTimer: LoopTimer?
}
