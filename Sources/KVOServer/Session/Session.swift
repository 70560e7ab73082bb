// One client session, whatever carries it: input messages go to the dispatcher, output is buffered until the loop's
// next flush and then handed to the transport, the session's subscriptions, its access, its output limits and its
// close. It knows nothing of sockets (Transport.swift); what a request means lives in Dispatcher.swift.
import Logging
import ObjectGraph
import TLS
import WireProtocol

/// One client session and what the server remembers about it. Loop-owned.
@MainActor
final class Session {
    let id: Int
    let context: SessionContext
    private let dispatcher: Dispatcher
    let transport: any Transport
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// Output accepted but not yet handed to the transport; written once per loop turn by `flush()`.
    @exclusivity(unchecked) private var output = OutputBuffer()  // loop-owned; never accessed re-entrantly
    /// A batch's response array while the dispatcher builds it (`beginBatch`, `appendToBatch`, `endBatch`): apart
    /// from `output`, where the session's own notifications raised by the batch's mutations go (they come before the
    /// array), then joined with it without a second copy of the array. Counted in the output limits.
    @exclusivity(unchecked) private var batch = OutputBuffer()
    /// True while the session is on the flush list.
    @exclusivity(unchecked) private var isFlushPending = false
    /// True exactly while the session is on Sessions.held (its output waits for sync replicas). Set and cleared by
    /// Sessions alone, which puts a session on that list and takes it off (release, expiry); Session.flush reads it.
    @exclusivity(unchecked) var isHeld = false
    /// The session's subscriptions in id order (the session side of the two-way index; the engine has the other),
    /// ended ones included until they are more than half: an unsubscribe ends its subscription where it is, and the
    /// list is compacted now and then, so pipelined unsubscribes cost O(1) each, amortized, not a shift of the list
    /// each. An array, not a dictionary: ids only grow, so adding appends, and a lookup is a binary search; a
    /// dictionary entry would cost more memory than the subscription.
    private var subscriptionSlots: [Subscription] = []
    /// How many of `subscriptionSlots` are live.
    private(set) var subscriptionCount = 0
    /// The live subscriptions in id order (for people: `observers`).
    var subscriptions: [Subscription] { self.subscriptionSlots.filter(\.isLive) }
    /// Non-nil once closing; nothing more is read or queued.
    @exclusivity(unchecked) private(set) var closeReason: CloseReason? {
        didSet { self.ignoresInput = true }
    }
    /// True once closing or past the output limits: messages still arriving (in the same read) are dropped. One
    /// flag for the two, read per message.
    @exclusivity(unchecked) private var ignoresInput = false
    /// True once the transport was told to close: nothing more is handed to it.
    private var transportClosing = false
    /// The client's name from `hello`, for logs.
    var clientName: String?
    /// A follower's replication link (`replicate`): it receives journal records, not notifications.
    var isReplica = false
    /// The seq of the last mutation this session made: with `--sync-replicas` its output waits until followers have
    /// it (Sessions.releasedSeq).
    @exclusivity(unchecked) var heldUntilSeq: UInt64 = 0  // loop-owned; on every mutation and flush
    /// What the session's token allows; nil until a `hello` with a valid token (when access control is on).
    var access: Access?
    /// The key paths the session's token is restricted to; nil: every path (Protocol/README.md#access-control).
    var allowedPaths: [PathPattern]?
    /// Wrong tokens this session sent in `hello`.
    var authenticationFailures = 0
    /// Ops to run as one transaction when the session ends (`onDisconnect`); nil: none. Set through
    /// `registerOnDisconnect(_:)`, which reports it to the mutation log.
    private(set) var onDisconnectOps: [JSONValue]?
    /// A close the dispatcher asked for, done once the current message's response is queued.
    var closeAfterResponse: CloseReason?
    /// Decides when the client reads too slowly (OutputLimiter.swift).
    @exclusivity(unchecked) private var limiter: OutputLimiter
    /// Set when the output passed its limits; the session is closed at the next flush, outside any commit.
    @exclusivity(unchecked) private var outputLimitBreach: OutputLimitBreach?
    /// The transport's queue after the last flush, and the output size from which enqueues check the limits.
    @exclusivity(unchecked) private var lastPendingWriteBytes = 0
    private let limitCheckThreshold: Int
    /// The clock when the session opened (for the authentication timeout).
    let openedAtMilliseconds: UInt64
    /// True while the rest of the session's input waits for a later loop turn (its reading is paused meanwhile).
    @exclusivity(unchecked) private(set) var isYielding = false
    /// Messages that arrived after the session yielded (the rest of the read), in order from `deferredStart` on.
    private var deferred: [[UInt8]] = []
    private var deferredStart = 0
    /// The rest of a line whose turn ran out (Dispatcher.continueLine).
    private var suspendedLine: SuspendedLine?
    /// How the input ended while messages waited (the peer's orderly end, or a line too long): acted on once they
    /// are answered.
    private var endWhileYielding: InputEnd?
    enum InputEnd {
        case ended
        case tooLong(limit: Int)
    }
    /// Requests and input bytes since the clock was last read, and the clock when this turn's work was first
    /// measured (0: not yet: the first reading starts the measure, so a read of a few light requests, the usual,
    /// reads no clock at all).
    @exclusivity(unchecked) private var requestsSinceClock = 0
    @exclusivity(unchecked) private var inputSinceClock = 0
    @exclusivity(unchecked) private var turnStartNanoseconds: UInt64 = 0
    /// The loop turn (Sessions.loopTurn) the measure belongs to: the reads of one turn share it.
    @exclusivity(unchecked) private var measuredTurn = UInt64.max
    /// The session's output and the server's notifications when the clock was last read (or the turn began): a
    /// request that made either grow much reads the clock at once.
    @exclusivity(unchecked) private var outputAtClock = 0
    @exclusivity(unchecked) private var notificationsAtClock = 0

    init(id: Int, context: SessionContext, dispatcher: Dispatcher, transport: any Transport) {
        self.id = id
        self.context = context
        self.dispatcher = dispatcher
        self.transport = transport
        let limits = context.limits
        self.limiter = OutputLimiter(limits: limits)
        let soft = limits.outputSoftLimitBytes
        self.limitCheckThreshold = soft > 0 ? min(soft, limits.outputHardLimitBytes) : limits.outputHardLimitBytes
        self.openedAtMilliseconds = context.clock.nowMilliseconds
    }

    var remoteAddress: String { self.transport.remoteAddress }

    /// The session's identity in the journal, unique across restarts: `"<boot>/<id>"` (SessionContext.bootID).
    var durableID: String { "\(self.context.bootID)/\(self.id)" }

    /// Registers the ops to run when the session ends (replacing earlier ones; `[]` cancels) and reports the change
    /// to the mutation log, so a crash does not lose it (docs/DURABILITY.md). A cancel without a registration is
    /// not reported.
    func registerOnDisconnect(_ ops: [JSONValue]) {
        guard !ops.isEmpty || self.onDisconnectOps != nil else { return }
        self.onDisconnectOps = ops.isEmpty ? nil : ops
        self.context.mutationLog?.registered(connection: self.durableID, ops: ops)
    }

    // MARK: - Output

    /// Appends bytes to the output buffer and schedules a flush before the loop next polls. Past the output limits
    /// nothing more is buffered and the flush closes the session (`slow_consumer`): closing here could happen
    /// inside the engine's commit, which is delivering notifications.
    func enqueue(_ write: (inout [UInt8]) -> Void) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        self.context.withScratch { scratch in
            write(&scratch)
            if self.admits(scratch.count) { self.output.append(scratch) }
        }
        self.outputQueued()
    }

    /// Appends bytes to the output buffer (see `enqueue(_:)`).
    func enqueue(bytes: [UInt8]) {
        guard self.closeReason == nil, self.outputLimitBreach == nil, self.admits(bytes.count) else { return }
        self.output.append(bytes)
        self.outputQueued()
    }

    /// Whether `count` more bytes keep the output within its limits, asked before a large append: what passes
    /// them is not buffered (nor is the buffer grown for it), so the output never holds more than the limit and the
    /// value being queued. Past them, the breach is remembered (`checkOutputLimits`).
    @inline(__always)
    private func admits(_ count: Int) -> Bool {
        guard self.output.count &+ self.lastPendingWriteBytes &+ count >= self.limitCheckThreshold else { return true }
        self.checkOutputLimits(adding: count)
        return self.outputLimitBreach == nil
    }

    /// Queues `{"jsonrpc":"2.0","id":ID,"result":RESULT}` and a newline (the common response, written in place).
    func enqueueResponse(id: Int64, result: [UInt8]) {
        guard self.closeReason == nil, self.outputLimitBreach == nil, self.admits(result.count &+ 64) else { return }
        self.output.append(RPCEncoder.responseStart)
        self.output.appendInteger(id)
        self.output.append(RPCEncoder.resultStart)
        self.output.append(result)
        self.output.append("}\n")
        self.outputQueued()
    }

    /// Queues `{"jsonrpc":"2.0","id":ID,"result":PREFIX VALUE}}` and a newline, where `prefix` is `{"KEY":`: a
    /// mutation's `{"seq":N}`, written in place.
    func enqueueResponse(id: Int64, objectPrefix prefix: StaticString, int value: Int64) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        self.output.append(RPCEncoder.responseStart)
        self.output.appendInteger(id)
        self.output.append(RPCEncoder.resultStart)
        self.output.append(prefix)
        self.output.appendInteger(value)
        self.output.append("}}\n")
        self.outputQueued()
    }

    /// Queues one change notification (the hot path of fan-out: four memcpys, nothing encoded per subscription;
    /// NotificationEncoder.swift). Counts it in the stats.
    @inline(__always)
    func enqueueNotification(of subscription: Subscription, change: Change, options: ObservationOptions) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        let tail = self.context.encoder.tail(for: change, options: options)
        // A notification that would pass the output limits is not buffered (nor is the buffer grown for it). It is
        // counted twice: the next one like it is encoded (NotificationEncoder) before it is queued, so the output
        // keeps room for that, and kvod holds at most the limit.
        guard self.admits(tail.count &* 2) else { return }
        NotificationEncoder.appendChange(tail: tail, of: subscription, to: &self.output)
        self.context.stats.notifications += 1
        self.outputQueued()
    }

    /// After output was queued: checks the limits only once the buffer could matter (the full check also runs at
    /// every flush and once a second), and schedules a flush.
    @inline(__always)
    private func outputQueued() {
        if self.output.count + self.lastPendingWriteBytes >= self.limitCheckThreshold { self.checkOutputLimits() }
        if !self.isFlushPending {
            self.isFlushPending = true
            self.context.sessions.markNeedsFlush(self)
        }
    }

    /// Hands buffered output to the transport (once per loop turn), then enforces the output limits. Output that
    /// waits for sync replicas is held (it stays marked for a flush), and dropped if the session closes meanwhile.
    func flush() {
        if self.heldUntilSeq > self.context.sessions.releasedSeq {
            if self.closeReason != nil {
                self.output.removeAll()
            } else if !self.isHeld {
                // Not waiting yet, or released by a seq below this later mutation: (back) on the held list.
                self.context.sessions.hold(self, now: self.context.clock.nowMilliseconds)
            }
            return
        }
        self.isFlushPending = false
        guard !self.transportClosing else { return }
        if !self.output.isEmpty && self.outputLimitBreach == nil {
            self.context.stats.bytesOut += self.output.count
            // The transport empties it (keeping a small buffer's capacity for the next turn; a large one is given
            // back or handed over).
            self.transport.write(taking: &self.output)
            self.checkOutputLimits()
        }
        self.lastPendingWriteBytes = self.transport.pendingWriteBytes
        if self.closeReason == nil, let breach = self.outputLimitBreach {
            self.logOutputLimitExceeded(breach)
            self.close(.slowConsumer)
        }
    }

    /// Whether `extra` more bytes (a response about to be added to a batch) keep the session's output, the batch so
    /// far included, within its limits. When they do not, the breach is remembered as for queued output: what is
    /// buffered is dropped and the session is closed `slow_consumer` at the next flush. Checked only once the bytes
    /// could matter.
    func admitsOutput(adding extra: Int) -> Bool {
        guard self.outputLimitBreach == nil else { return false }
        let pending = self.output.count &+ self.batch.count &+ self.lastPendingWriteBytes &+ extra
        guard pending >= self.limitCheckThreshold else { return true }
        self.checkOutputLimits(adding: extra)
        return self.outputLimitBreach == nil
    }

    /// True once the output passed its limits (the session closes at the next flush).
    var isOverOutputLimit: Bool { self.outputLimitBreach != nil }

    // MARK: - A batch's response array

    /// Starts a batch's response array (`[`).
    func beginBatch() {
        self.batch.removeAll()
        self.batch.append("[")
    }

    /// Adds one response object of the batch, `response` then `rest` then `closing` (a comma first when it is not
    /// the first).
    func appendToBatch(_ response: [UInt8], then rest: [UInt8] = [], closing: StaticString = "") {
        guard self.outputLimitBreach == nil, !response.isEmpty else { return }
        if self.batch.count > 1 { self.batch.append(",") }
        self.batch.append(response)
        self.batch.append(rest)
        self.batch.append(closing)
    }

    /// Ends the batch: queues the array as one line after what `output` holds (the array's memory becomes the
    /// output's when that is empty: no copy), unless it holds no response (JSON-RPC: a batch of notifications gets
    /// nothing) or the output passed its limits (nothing of it is sent).
    func endBatch() {
        guard self.batch.count > 1, self.closeReason == nil, self.outputLimitBreach == nil else {
            self.batch.removeAll()
            return
        }
        self.batch.append("]\n")
        if !self.output.isEmpty { self.batch.prepend(self.output.bytes) }
        self.output.exchange(with: &self.batch)
        self.batch.removeAll()
        self.outputQueued()
    }

    /// Bytes queued for the client and not yet taken: ours (a batch being built included) plus the transport's queue.
    var pendingOutputBytes: Int { self.output.count + self.batch.count + self.transport.pendingWriteBytes }

    /// Asks the limiter about the output now queued; remembers a breach and drops what is buffered (the client
    /// will not get it anyway). Also run once a second (SessionCore.housekeeping), for a client that no new output
    /// reaches. `extra`: bytes about to be queued (a batch's responses so far).
    func checkOutputLimits(adding extra: Int = 0) {
        guard self.closeReason == nil, self.outputLimitBreach == nil else { return }
        let action = self.limiter.check(
            pendingBytes: self.pendingOutputBytes + extra, nowMilliseconds: self.context.clock.nowMilliseconds)
        guard case .exceeded(let breach) = action else { return }
        self.outputLimitBreach = breach
        self.ignoresInput = true
        self.output.removeAll()
        self.batch.removeAll()
        if !self.isFlushPending {
            self.isFlushPending = true
            self.context.sessions.markNeedsFlush(self)
        }
    }

    // MARK: - Yielding the loop

    /// How long one session's requests may hold the loop in one turn. After that the rest of what it sent (the rest
    /// of a read of pipelined requests, the rest of a batch) waits for the next turn, and every other connection is
    /// served in between: a read of thousands of requests or a batch of heavy ones costs the others at most this
    /// (Protocol/README.md#fairness). A single request is never cut.
    static let turnBudgetNanoseconds: UInt64 = 2_000_000
    /// The clock is read after this many requests, or after a request that queued at least `heavyOutputBytes` or
    /// `heavyNotifications`: a light request pays a counter, not a clock.
    static let requestsPerClockReading = 64
    static let heavyOutputBytes = 64 << 10
    static let heavyNotifications = 1_024
    /// A read of at least this many bytes starts the turn's measure at once (its parse counts), and a request after
    /// which this much more input arrived reads the clock: a long line or a read of many requests is measured from
    /// its first byte.
    static let heavyInputBytes = 16 << 10

    /// Before or after a request: whether the session's requests used up this turn (`turnBudgetNanoseconds` from
    /// the turn's first clock reading: when a turn's reads were small, the requests before that reading, at most 63
    /// light ones or one heavy one, are not counted).
    @inline(__always)
    func turnSpent() -> Bool {
        self.requestsSinceClock &+= 1
        guard
            self.requestsSinceClock >= Self.requestsPerClockReading
                || self.inputSinceClock >= Self.heavyInputBytes
                || self.output.count &+ self.batch.count &- self.outputAtClock >= Self.heavyOutputBytes
                || self.context.stats.notifications &- self.notificationsAtClock >= Self.heavyNotifications
        else { return false }
        return self.readClockForTurn()
    }

    @inline(never)
    private func readClockForTurn() -> Bool {
        self.requestsSinceClock = 0
        self.inputSinceClock = 0
        self.outputAtClock = self.output.count &+ self.batch.count
        self.notificationsAtClock = self.context.stats.notifications
        let now = self.context.clock.monotonicNanoseconds
        guard self.turnStartNanoseconds != 0 else {
            self.turnStartNanoseconds = now
            return false
        }
        return now &- self.turnStartNanoseconds >= Self.turnBudgetNanoseconds
    }

    /// After a request whose cost is not light though it queued little (a query: an evaluation per element it
    /// reaches): the next `turnSpent` reads the clock.
    func noteCostlyRequest() {
        self.requestsSinceClock = Self.requestsPerClockReading
    }

    /// A new turn's measure, from now (a resumed turn, a large read), or from its first clock reading (`now` false).
    @inline(__always)
    private func startTurn(now: Bool) {
        self.requestsSinceClock = 0
        self.inputSinceClock = 0
        self.outputAtClock = self.output.count &+ self.batch.count
        self.notificationsAtClock = self.context.stats.notifications
        self.turnStartNanoseconds = now ? self.context.clock.monotonicNanoseconds : 0
    }

    /// Ends the session's turn: reading pauses, and what is left goes on at the loop's next turn (`resumeTurn`).
    private func yieldTurn() {
        self.isYielding = true
        self.transport.pauseReading()
        self.context.stats.turnsYielded += 1
        self.context.sessions.markYielding(self)
    }

    /// Keeps the rest of a line whose turn ran out, for the next turn (Dispatcher.performBatch,
    /// Dispatcher.finishLine).
    func suspend(_ line: SuspendedLine) {
        self.suspendedLine = line
        self.yieldTurn()
    }

    /// The next turn of a session that yielded (Sessions.resumeYielded): the rest of its line, then the messages
    /// that waited, until they are done (reading resumes) or the turn runs out again.
    func resumeTurn() {
        guard self.isYielding else { return }
        self.isYielding = false
        self.startTurn(now: true)
        // Resumed (the server's idle hook) before the loop's flush starts the turn it then polls in: the reads of
        // that poll go on with this measure.
        self.measuredTurn = self.context.sessions.loopTurn &+ 1
        guard self.closeReason == nil else {
            self.suspendedLine = nil
            self.deferred = []
            self.deferredStart = 0
            return
        }
        if let line = self.suspendedLine {
            self.suspendedLine = nil
            self.dispatcher.continueLine(line, on: self)
            if self.isYielding { return }
        }
        while self.deferredStart < self.deferred.count {
            let message = self.deferred[self.deferredStart]
            self.deferred[self.deferredStart] = []
            self.deferredStart += 1
            guard !self.ignoresInput else { break }
            message.withUnsafeBytes { self.dispatcher.handle(line: $0, on: self) }
            if self.isYielding { return }
            if self.deferredStart < self.deferred.count && self.turnSpent() {
                self.yieldTurn()
                return
            }
        }
        self.deferred = []
        self.deferredStart = 0
        let end = self.endWhileYielding
        self.endWhileYielding = nil
        switch end {
        case .ended: self.close(.clientClosed)
        case .tooLong(let limit): self.transportReceivedTooLong(limit: limit)
        case nil: if self.closeReason == nil { self.transport.resumeReading() }
        }
    }

    // MARK: - Subscriptions

    /// Adds a subscription the registry created (Subscriptions.create).
    func add(_ subscription: Subscription) {
        precondition(self.subscriptionSlots.last.map { $0.id < subscription.id } ?? true, "subscription ids must grow")
        self.subscriptionSlots.append(subscription)
        self.subscriptionCount += 1
    }

    /// The position of the subscription with `id`, if this session has it.
    private func subscriptionIndex(_ id: Int) -> Int? {
        var low = 0
        var high = self.subscriptionSlots.count
        while low < high {
            let middle = (low + high) / 2
            if self.subscriptionSlots[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < self.subscriptionSlots.count && self.subscriptionSlots[low].id == id ? low : nil
    }

    /// Ends one of this session's subscriptions; false when it has no such live subscription.
    func removeSubscription(_ id: Int) -> Bool {
        guard let index = self.subscriptionIndex(id), self.subscriptionSlots[index].isLive else { return false }
        self.context.subscriptions.end(self.subscriptionSlots[index])
        self.subscriptionCount -= 1
        if self.subscriptionSlots.count > 2 * self.subscriptionCount + 16 {
            self.subscriptionSlots.removeAll { !$0.isLive }  // O(slots), after at least as many unsubscribes
        }
        return true
    }

    // MARK: - Closing

    /// Closes the session: stops reading, ends every subscription at once, sends what is queued (and a `closing`
    /// notice when the server decided to close) unless the connection is broken or clogged, then tells the
    /// transport to close. The session is forgotten when the transport reports it closed. Idempotent.
    func close(_ reason: CloseReason) {
        guard self.closeReason == nil else { return }
        let notice = reason.sendsNotice ? NotificationEncoder.closingNotice(reason) : nil
        if let notice { self.enqueue(bytes: notice) }
        self.closeReason = reason
        self.transport.pauseReading()
        self.context.subscriptions.retire(self.subscriptionSlots)  // the live ones; many: a slice per turn
        self.subscriptionSlots.removeAll()  // the retired ones hold the session until they are ended
        self.subscriptionCount = 0
        if let ops = self.onDisconnectOps {
            self.onDisconnectOps = nil
            self.dispatcher.runOnDisconnect(ops, connection: self.durableID, logID: "\(self.id)")
        }
        self.context.stats.closes[reason, default: 0] += 1
        self.context.stats.connectionsOpen -= 1
        self.logClose(reason)
        switch reason {
        case .ioError:
            self.output.removeAll()
            self.closeTransport(.abort)
        case .protocolError:
            // The transport told the peer what was wrong; nothing queued is for a peer that broke the protocol.
            self.output.removeAll()
            self.closeTransport(.graceful(reason: reason, peerClosed: false))
        case .slowConsumer:
            // The client is not reading: the notice goes out only if the transport takes it right away.
            self.output.removeAll()
            self.closeTransport(.abandon(notice: NotificationEncoder.closingNotice(reason), reason: reason))
        case .replicationTimeout:
            // The responses followers never confirmed are dropped (their outcome is unknown); the notice follows
            // what was already sent.
            self.output.removeAll()
            self.heldUntilSeq = 0
            if let notice { self.output.append(notice) }
            self.flush()
            self.closeTransport(.graceful(reason: reason, peerClosed: false))
        case .clientClosed:
            self.flush()
            self.closeTransport(.graceful(reason: reason, peerClosed: true))
        case .lineTooLong, .serverShutdown, .tooManyConnections, .unauthorized, .authTimeout, .notLeader:
            self.flush()
            self.closeTransport(.graceful(reason: reason, peerClosed: false))
        }
    }

    private func closeTransport(_ close: TransportClose) {
        self.transportClosing = true
        self.transport.close(close)
    }

    // MARK: - Logging

    private var logMetadata: Logger.Metadata {
        var metadata: Logger.Metadata = [
            "connection.id": "\(self.id)", "connection.remote": "\(self.remoteAddress)",
            "connection.transport": "\(self.transport.kind)",
        ]
        if let name = self.clientName { metadata["client.name"] = "\(name)" }
        return metadata
    }

    /// One line per close: debug when the client left or the server stops, info for I/O errors, a warning when a
    /// limit closed it.
    private func logClose(_ reason: CloseReason) {
        var metadata = self.logMetadata
        metadata["close.reason"] = "\(reason.rawValue)"
        let logger = self.context.logger
        switch reason {
        case .clientClosed, .serverShutdown, .notLeader: logger.debug("connection closed", metadata: metadata)
        case .replicationTimeout:
            logger.warning("connection closed: no sync replica confirmed in time", metadata: metadata)
        case .ioError, .protocolError: logger.info("connection closed", metadata: metadata)
        case .slowConsumer: break  // logOutputLimitExceeded logged it, with the figures
        case .lineTooLong, .tooManyConnections, .unauthorized, .authTimeout:
            logger.warning("connection closed by limit", metadata: metadata)
        }
    }

    /// Logs, once per session, the output limit it passed (the close follows).
    private func logOutputLimitExceeded(_ breach: OutputLimitBreach) {
        var metadata = self.logMetadata
        metadata["close.reason"] = "\(CloseReason.slowConsumer.rawValue)"
        switch breach {
        case .hardLimit(let pending, let limit):
            metadata["output.pending_bytes"] = "\(pending)"
            metadata["output.hard_limit_bytes"] = "\(limit)"
            self.context.logger.warning("slow consumer: output over the hard limit, closing", metadata: metadata)
        case .softLimit(let pending, let limit, let seconds):
            metadata["output.pending_bytes"] = "\(pending)"
            metadata["output.soft_limit_bytes"] = "\(limit)"
            metadata["output.soft_limit_seconds"] = "\(seconds)"
            self.context.logger.warning(
                "slow consumer: output over the soft limit for too long, closing", metadata: metadata)
        }
    }

    /// Logs a wrong token (Dispatcher+Access.swift).
    func logAuthenticationFailure() {
        var metadata = self.logMetadata
        metadata["auth.failures"] = "\(self.authenticationFailures)"
        self.context.logger.info("wrong token in hello", metadata: metadata)
    }
}

extension Session: TransportEvents {
    func transportReceived(_ message: UnsafeRawBufferPointer) {
        guard !self.ignoresInput && !self.isYielding else { return self.divert(message) }
        self.dispatcher.handle(line: message, on: self)
        if self.turnSpent() && !self.isYielding { self.yieldTurn() }
    }

    /// A message that is not handled now: after a close, or after the output passed its limits (the close comes at
    /// the flush), it is dropped (the session is going away, and nothing it sends would reach the client); after
    /// the session yielded, it waits for the session's next turn.
    @inline(never)
    private func divert(_ message: UnsafeRawBufferPointer) {
        guard !self.ignoresInput else { return }
        self.deferred.append(Array(message))
    }

    func transportRead(byteCount: Int) {
        self.context.stats.bytesIn += byteCount
        let turn = self.context.sessions.loopTurn
        guard turn == self.measuredTurn else {
            // The turn's first read: a new measure, from now when the read is large.
            self.measuredTurn = turn
            self.startTurn(now: byteCount >= Self.heavyInputBytes)
            return
        }
        // Another read in the same turn (libuv reads a stream until it is empty): the same measure.
        self.inputSinceClock &+= byteCount
    }

    func transportReceivedTooLong(limit: Int) {
        guard self.closeReason == nil else { return }
        if self.isYielding {
            self.endWhileYielding = .tooLong(limit: limit)
            return
        }
        let error = RPCError(.limitExceeded, "line exceeds \(limit) bytes", data: .object(["limit": .int(Int64(limit))]))
        self.enqueue { RPCEncoder.appendError(id: nil, error: error, to: &$0); $0.append(UInt8(ascii: "\n")) }
        self.close(.lineTooLong)
    }

    func transportFailed(_ reason: CloseReason, detail: String) {
        guard self.closeReason == nil else { return }
        var metadata = self.logMetadata
        metadata["error"] = "\(detail)"
        self.context.logger.info("protocol error", metadata: metadata)
        self.close(reason)
    }

    func transportEnded(error: Bool) {
        // An orderly end after requests that wait for a later turn: they are answered first.
        if !error && self.isYielding {
            self.endWhileYielding = .ended
            return
        }
        self.close(error ? .ioError : .clientClosed)
    }

    func transportClosed() {
        self.context.sessions.remove(self)
    }

    /// A verified client certificate whose name is a token's in the token file authenticates the session as that
    /// token, as a `hello` with it would (Protocol/README.md#mutual-tls).
    func transportEstablishedTLS(_ tls: TLSSession) {
        var metadata = self.logMetadata
        metadata["tls.version"] = "\(tls.protocolVersion)"
        metadata["tls.cipher"] = "\(tls.cipher)"
        if let subject = tls.peerSubject { metadata["tls.peer"] = "\(subject)" }
        let control = self.context.accessControl
        if control.isEnabled, let token = control.token(forCertificateNames: tls.peerIdentities) {
            self.access = token.access
            self.allowedPaths = token.paths
            metadata["tls.token"] = "\(AccessToken.certificatePrefix)\(token.certificateName ?? "")"
            self.context.logger.info("client certificate accepted as a token", metadata: metadata)
        } else {
            self.context.logger.debug("TLS established", metadata: metadata)
        }
    }
}
