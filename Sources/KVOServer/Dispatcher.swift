// Turns request lines into responses. The ordering guarantees of Protocol/README.md#ordering hold here:
// a mutation delivers its change notifications into every connection's output synchronously, inside the engine's
// commit, *before* the dispatcher queues the mutation's response; a subscribe's initial notification is queued right
// after its response (after the whole response array for a batch). Handlers live in Methods/.
#if canImport(Glibc)
import Glibc
#endif
import Logging
import ObjectGraph
import WireProtocol

/// The rest of a line whose session's turn ran out, kept by the session until its next turn
/// (Dispatcher.continueLine): a batch's requests still to perform, and the initial notifications waiting for the
/// line's responses (or still to deliver, when the turn ran out while they were delivered).
struct SuspendedLine {
    /// The requests of a batch still to perform (its array is still being built); nil once the array is queued.
    let rest: ArraySlice<RPCParsed>?
    /// A single request that waits (`RequestWaits`) and is performed again.
    var retry: RPCParsed? = nil
    let initials: [(Subscription, Change)]
    /// The first of `initials` still to deliver (the array is kept whole across turns, not copied).
    var nextInitial = 0
}

/// Thrown by a handler whose request cannot be answered yet at a bounded cost (a query subscription whose answer a
/// fill builds over several turns: Graph+QueryFill.swift). The request has done nothing; the session yields and the
/// request is performed again at its next turn (its line waits, and the session reads nothing meanwhile).
struct RequestWaits: Error {}

/// Routes requests to method handlers and writes their responses. Loop-owned.
@MainActor
final class Dispatcher {
    let context: SessionContext
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// Scratch space for one result, and for one response, reused across requests.
    /// (Loop-owned and never accessed re-entrantly: unchecked exclusivity, as for every member on the request path.)
    @exclusivity(unchecked) private var result: [UInt8] = []
    @exclusivity(unchecked) private var response: [UInt8] = []
    /// Parsed key paths by their text: clients use few distinct paths, and parsing allocates.
    private var keyPaths: [String: KeyPath] = [:]
    /// The last path parsed or found: clients repeat paths, and comparing one string is cheaper than hashing it.
    private var lastKeyPath: (text: String, path: KeyPath)?

    /// The parsed key path for `text` (cached; the cache is bounded).
    func keyPath(_ text: String) throws(GraphError) -> KeyPath {
        if let last = self.lastKeyPath, last.text == text { return last.path }
        if let cached = self.keyPaths[text] {
            self.lastKeyPath = (text, cached)
            return cached
        }
        let parsed = try KeyPath(parsing: text)
        if self.keyPaths.count >= 4096 { self.keyPaths.removeAll(keepingCapacity: true) }
        self.keyPaths[text] = parsed
        self.lastKeyPath = (text, parsed)
        return parsed
    }

    /// The last path of a plain set, as it was on the line, and its parse (`keyPath(plain:)`).
    @exclusivity(unchecked) private var lastPlainPath: (bytes: [UInt8], path: KeyPath)?

    /// The parsed key path for the plain-ASCII path `bytes` (cached: the last one by its bytes, others as `keyPath`).
    func keyPath(plain bytes: UnsafeRawBufferPointer) throws(GraphError) -> KeyPath {
        if let last = self.lastPlainPath, Self.equal(last.bytes, bytes) { return last.path }
        let path = try self.keyPath(String(decoding: bytes, as: UTF8.self))
        self.lastPlainPath = (Array(bytes), path)
        return path
    }

    private nonisolated static func equal(_ kept: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard kept.count == bytes.count else { return false }
        guard let base = bytes.baseAddress else { return true }
        return kept.withUnsafeBytes { memcmp($0.baseAddress.unsafelyUnwrapped, base, bytes.count) == 0 }
    }

    /// Initial notifications waiting for their subscribe's response to be queued.
    private var pendingInitials: [(Subscription, Change)] = []
    /// The first of `pendingInitials` still to deliver.
    private var nextPendingInitial = 0

    /// The seq of the mutation the current request committed (set by its handler through `committed(_:)`), and the
    /// params to journal when they are not the request's own (a `ttl` made absolute).
    @exclusivity(unchecked) private var committedSeq: UInt64?
    @exclusivity(unchecked) private var committedParams: JSONValue?

    init(context: SessionContext) {
        self.context = context
    }

    /// Handles one message (a line) from a session. Blank lines are ignored.
    func handle(line: UnsafeRawBufferPointer, on session: Session) {
        if Self.isBlank(line) { return }
        // The usual set, read straight off the line.
        if let set = RPCMessage.decodePlainSet(line, maxDepth: self.context.limits.maxJSONDepth) {
            self.performPlainSet(set, on: session)
            return
        }
        switch RPCMessage.decode(line, maxDepth: self.context.limits.maxJSONDepth) {
        case .parseError(let error):
            session.enqueue { Self.appendErrorLine(id: .null, error, to: &$0) }
        case .emptyBatch:
            session.enqueue { Self.appendErrorLine(id: .null, RPCError(.invalidRequest, "empty batch"), to: &$0) }
        case .single(let parsed):
            guard self.performSingle(parsed, on: session) else { return }
        case .batch(let items):
            if items.count > self.context.limits.maxBatchRequests {
                let limit = self.context.limits.maxBatchRequests
                let error = RPCError(
                    .limitExceeded, "batch of \(items.count) requests exceeds \(limit)",
                    data: .object(["limit": .int(Int64(limit))]))
                session.enqueue { Self.appendErrorLine(id: .null, error, to: &$0) }
                return
            }
            session.beginBatch()
            guard self.performBatch(items[...], on: session) else { return }
        }
        self.finishLine(on: session)
    }

    /// Goes on with a line whose session's turn ran out (Session.resumeTurn).
    func continueLine(_ line: SuspendedLine, on session: Session) {
        self.pendingInitials = line.initials
        self.nextPendingInitial = line.nextInitial
        if let retry = line.retry {
            guard self.performSingle(retry, on: session) else { return }
        } else if let rest = line.rest {
            guard self.performBatch(rest, on: session) else { return }
        }
        self.finishLine(on: session)
    }

    /// Performs a line's single request and queues its response; false when the request waits (the line is
    /// suspended with it, to be performed again at the session's next turn).
    private func performSingle(_ parsed: RPCParsed, on session: Session) -> Bool {
        // One reused buffer for single responses (no allocation per request).
        var response = self.response
        self.response = []
        response.removeAll(keepingCapacity: true)
        self.perform(parsed, on: session, into: &response, direct: true)
        if self.requestWaits {
            self.requestWaits = false
            session.suspend(SuspendedLine(rest: nil, retry: parsed, initials: [], nextInitial: 0))
            if response.capacity <= 64 << 10 { self.response = response }
            return false
        }
        if !response.isEmpty {
            response.append(UInt8(ascii: "\n"))
            session.enqueue(bytes: response)
        }
        if response.capacity <= 64 << 10 { self.response = response }
        return true
    }

    /// Set by `perform` when the request threw `RequestWaits`.
    private var requestWaits = false

    /// Performs `items`, the rest of a batch begun with `session.beginBatch()`, and ends the batch. Each response is
    /// built in the reused buffer and added to the session's batch array, which becomes one line of output at the end
    /// (Session.endBatch; a batch of notifications only gets nothing). When the session's turn runs out first
    /// (Session.turnSpent), the rest is handed to the session with the initial notifications waiting for the array,
    /// to go on at its next turn, and the result is false.
    private func performBatch(_ items: ArraySlice<RPCParsed>, on session: Session) -> Bool {
        var response = self.response
        self.response = []
        var rest = items
        // The rest of the batch (from `rest` on) and the initials waiting for its array go on at the next turn.
        func suspend(_ rest: ArraySlice<RPCParsed>) -> Bool {
            let initials = self.pendingInitials
            self.pendingInitials.removeAll()
            session.suspend(SuspendedLine(rest: rest, initials: initials, nextInitial: self.nextPendingInitial))
            self.nextPendingInitial = 0
            if response.capacity <= 64 << 10 { self.response = response }
            return false
        }
        while let item = rest.first {
            // Asked before each request, the first included: the line's parse or the requests before it may have
            // used the turn.
            if session.turnSpent() { return suspend(rest) }
            let waiting = rest
            rest.removeFirst()
            response.removeAll(keepingCapacity: true)
            self.perform(item, on: session, into: &response, inBatch: true)
            if self.requestWaits {
                // The request goes on at the session's next turn, with the rest of the batch after it.
                self.requestWaits = false
                return suspend(waiting)
            }
            // The responses count against the output limits as they are produced (`perform` asks before it
            // adds one): past them the session is closed `slow_consumer` at the flush, and the rest of the
            // batch is not performed (kvod holds at most the limit and one response;
            // Protocol/README.md#slow-consumers).
            guard !session.isOverOutputLimit else { break }
            session.appendToBatch(response)
        }
        session.endBatch()
        if response.capacity <= 64 << 10 { self.response = response }
        return true
    }

    /// After a line's responses: the initial notifications that wait for them (over several turns when they take
    /// longer than the session's share), then a close a handler asked for.
    private func finishLine(on session: Session) {
        guard self.deliverPendingInitials(on: session) else { return }
        // A close a handler asked for (too many wrong tokens) comes after the line's response.
        if let reason = session.closeAfterResponse { session.close(reason) }
    }

    /// Performs one parsed request; appends its response object (nothing for a notification) to `response`.
    /// Every request is counted here, once, whatever becomes of it (not those on a replication link: `ack`,
    /// `record`); a committed mutation is counted and reported to the mutation log (the journal) before its response
    /// can leave.
    /// With `direct`, a successful response to a request with an integer id goes straight into the session's output
    /// (a single request: nothing is built in between); with `inBatch`, a successful response goes straight into the
    /// session's batch array (the result is not copied once more); otherwise it is appended to `response`.
    private func perform(
        _ parsed: RPCParsed, on session: Session, into response: inout [UInt8], direct: Bool = false,
        inBatch: Bool = false
    ) {
        switch parsed {
        case .invalid(let id, let error, let idText):
            RPCEncoder.appendError(id: id ?? .null, idText: idText, error: error, to: &response)
        case .request(let request):
            // (A result once made large by a large value gives its memory back.)
            self.result.removeAll(keepingCapacity: self.result.capacity <= 64 << 10)
            // A follower's replication link (its `ack`s and `record`s, after `replicate`) is not a client's request.
            if !session.isReplica { self.context.stats.requests += 1 }
            do {
                self.committedSeq = nil
                try self.call(request, on: session)
                if let seq = self.committedSeq {
                    self.context.stats.mutations += 1
                    self.context.mutationLog?.committed(
                        seq: seq, method: request.method, params: self.committedParams ?? request.params)
                    self.committedParams = nil
                    session.heldUntilSeq = seq  // with --sync-replicas its output waits for followers (Session.flush)
                }
                guard let id = request.id else { return }
                if direct, case .int(let number) = id, request.idText == nil {
                    session.enqueueResponse(id: number, result: self.result)
                    return
                }
                // The output (a batch's responses so far included) and this response must fit the output limits
                // before a buffer grows for it (`handle` stops a batch then).
                guard session.admitsOutput(adding: response.count &+ self.result.count &+ 64) else { return }
                // (Not the closure form of appendResult: a main-actor closure is checked for its isolation per call.)
                RPCEncoder.appendResultPrefix(id: id, idText: request.idText, to: &response)
                if inBatch {
                    session.appendToBatch(response, then: self.result, closing: "}")
                    response.removeAll(keepingCapacity: true)
                    return
                }
                response.append(contentsOf: self.result)
                response.append(UInt8(ascii: "}"))
            } catch is RequestWaits {
                // Performed again later, and counted then.
                if !session.isReplica { self.context.stats.requests -= 1 }
                self.requestWaits = true
            } catch {
                guard let id = request.id else { return }
                RPCEncoder.appendError(
                    id: id, idText: request.idText, error: self.rpcError(for: error, request: request), to: &response)
            }
        }
    }

    /// `perform` for a plain set (RPCPlainSet): the same counting, checks (access control, a cluster member's
    /// refusal), journaling (on a cluster leader: shipping) and response, without the request.
    private func performPlainSet(_ set: RPCPlainSet, on session: Session) {
        self.result.removeAll(keepingCapacity: self.result.capacity <= 64 << 10)
        self.context.stats.requests += 1
        do {
            if self.context.accessControl.isEnabled { try self.authorizePlainSet(path: set.path, on: session) }
            if let cluster = self.context.cluster { try self.checkAdmitsMutation(cluster) }
            let seq = try self.set(plainPath: set.path, value: set.value)
            self.context.stats.mutations += 1
            self.context.mutationLog?.committed(seq: seq, plainSet: set)
            session.heldUntilSeq = seq  // as in perform: with --sync-replicas its output waits for followers
            if self.result.isEmpty {
                session.enqueueResponse(id: set.id, objectPrefix: Self.seqResultPrefix, int: Int64(seq))
            } else {
                session.enqueueResponse(id: set.id, result: self.result)
            }
        } catch {
            var response: [UInt8] = []
            RPCEncoder.appendError(id: .int(set.id), error: self.rpcError(for: error, request: set.request), to: &response)
            response.append(UInt8(ascii: "\n"))
            session.enqueue(bytes: response)
        }
    }

    private func rpcError(for error: any Error, request: RPCRequest) -> RPCError {
        if let convertible = error as? any RPCErrorConvertible { return convertible.rpcError }
        self.context.logger.error(
            "unmapped handler error", metadata: ["rpc.method": "\(request.method)", "error": "\(error)"])
        return RPCError(.internalError, "internal error")
    }

    /// Routes a request to its handler, which writes its result JSON into `self.result`. Access control and the
    /// per-connection limits are checked first (Dispatcher+Access.swift).
    private func call(_ request: RPCRequest, on session: Session) throws {
        try self.authorize(request, on: session)
        if let cluster = self.context.cluster, Self.clusterWrites.contains(request.method) {
            try self.checkAdmitsMutation(cluster)
        }
        switch request.method {
        case "get": try self.get(request, on: session)
        case "set": try self.set(request, on: session)
        case "subscribe":
            try self.checkSubscriptionLimit(on: session)
            try self.subscribe(request, on: session)
        case "unsubscribe": try self.unsubscribe(request, on: session)
        case "ping": try self.ping(request, on: session)
        case "hello": try self.hello(request, on: session)
        case "observers": try self.observers(request, on: session)
        case "validate": try self.validate(request, on: session)
        case "describe": try self.describe(request, on: session)
        case "insert", "remove", "replace", "union", "minus", "intersect", "setMembers":
            try self.collectionMutation(request, on: session)
        case "transaction": try self.transaction(request, on: session)
        case "onDisconnect": try self.onDisconnect(request, on: session)
        case "stats": try self.stats(request, on: session)
        case "replicate": try self.replicate(request, on: session)
        case "ack": try self.acknowledge(request, on: session)
        case "record": try self.recordPath(request, on: session)
        default:
            let name = request.method.count > 64 ? String(request.method.prefix(64)) + "…" : request.method
            throw RPCError(.methodNotFound, "method not found: \(name)")
        }
    }

    /// The methods a cluster member refuses with 1012 unless it is the leader and can prove its lease.
    static let clusterWrites: Set<String> = [
        "set", "insert", "remove", "replace", "union", "minus", "intersect", "setMembers", "transaction", "onDisconnect",
    ]

    /// Throws the 1012 `cluster` answers a mutation now (not the leader, lease unproven, sync replicas missing).
    @inline(__always)
    private func checkAdmitsMutation(_ cluster: ClusterStatus) throws(RPCError) {
        if let refusal = cluster.mutationRefusal(now: self.context.clock.nowMilliseconds) { throw refusal }
    }

    // MARK: - Helpers for handlers

    /// Records that the current request committed the mutation with `seq` (counted and journaled by `perform`).
    func committed(_ seq: UInt64, params: JSONValue? = nil) {
        self.committedSeq = seq
        self.committedParams = params
    }

    /// Appends to the current request's result.
    func writeResult(_ write: (inout [UInt8]) -> Void) {
        write(&self.result)
    }

    /// Writes the result `{"KEY":N}` (`prefix` is `{"KEY":`), without a closure: a mutation's `{"seq":N}`.
    func writeResult(objectPrefix prefix: StaticString, int value: Int64) {
        JSONWriter.appendObject(prefix: prefix, int: value, to: &self.result)
    }

    /// Queues an initial notification to follow the current response (or batch response).
    func deferInitial(_ change: Change, for subscription: Subscription) {
        self.pendingInitials.append((subscription, change))
    }

    /// Delivers the initial notifications waiting for the line's responses; false when the session's turn ran out
    /// first (the rest goes on at its next turn).
    private func deliverPendingInitials(on session: Session) -> Bool {
        guard !self.pendingInitials.isEmpty else { return true }
        let initials = self.pendingInitials
        var next = self.nextPendingInitial
        self.pendingInitials.removeAll()
        self.nextPendingInitial = 0
        while next < initials.count {
            let (subscription, change) = initials[next]
            next += 1
            // A subscription removed later in the same batch gets no initial notification.
            if subscription.isLive { subscription.deliver(change) }
            if next < initials.count && session.turnSpent() {
                session.suspend(SuspendedLine(rest: nil, initials: initials, nextInitial: next))
                return false
            }
        }
        return true
    }

    /// Whether a line holds only spaces, tabs and carriage returns. (A loop, not `allSatisfy` with a closure: a
    /// closure formed in a main-actor method is checked for its isolation on every call.)
    private nonisolated static func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        for byte in line where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") && byte != UInt8(ascii: "\r") {
            return false
        }
        return true
    }

    private static func appendErrorLine(id: JSONValue, _ error: RPCError, to buffer: inout [UInt8]) {
        RPCEncoder.appendError(id: id, error: error, to: &buffer)
        buffer.append(UInt8(ascii: "\n"))
    }
}
