// The async kvod client: one connection at a time, requests matched by id, change notifications routed to their
// subscriptions, and automatic reconnection that resubscribes every live subscription with `since`, so a
// subscription sees no gap and no duplicate across a reconnection (or a `.resync` event when kvod cannot replay),
// as the Python and TypeScript clients do (clients/python, clients/typescript). Method helpers live in
// AsyncKVOClient+Methods.swift; the wire is WireProtocol's JSON-RPC codec; the socket, LineSocket.swift.

import KVOClient
public import WireProtocol

/// An async client for kvod (an actor: use it from any task).
///
/// ```swift
/// let client = try await AsyncKVOClient.connect(to: "127.0.0.1:7070")
/// let seq = try await client.set("person.firstName", to: "Ada")
/// for try await event in try await client.changes(of: "person.firstName", options: [.new, .old]) { print(event) }
/// ```
public actor AsyncKVOClient {
    /// How the client connects and behaves; the defaults are the other clients'.
    public struct Options: Sendable {
        /// Sent with `hello` on every (re)connection (access control).
        public var token: String?
        /// Names the client in kvod's logs and `observers`.
        public var clientName: String
        /// Bounds each call, including waiting for a reconnection.
        public var timeout: Duration
        /// Reconnect by itself after the connection ends (true), or end every subscription (false).
        public var reconnect: Bool
        /// The pause between reconnection attempts starts at 50 ms and doubles up to this.
        public var maxBackoff: Duration
        /// How long a call refused with 1012 (not the leader) is retried, on the leader kvod names, before it throws.
        public var leaderWait: Duration

        public init(
            token: String? = nil, clientName: String = "kvod-swift", timeout: Duration = .seconds(10),
            reconnect: Bool = true, maxBackoff: Duration = .seconds(2), leaderWait: Duration = .seconds(10)
        ) {
            self.token = token
            self.clientName = clientName
            self.timeout = timeout
            self.reconnect = reconnect
            self.maxBackoff = maxBackoff
            self.leaderWait = leaderWait
        }
    }

    /// A `host:port` the client may connect to.
    struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        var host: String
        var port: Int
        var description: String { formatEndpoint(host: self.host, port: self.port) }

        /// Parses `host:port`, `[v6]:port`, or a bare host (port 7070).
        init(parsing text: String) throws(KVOClientError) {
            var host = Substring(text)
            var port = 7070
            if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
                host = text[text.index(after: text.startIndex)..<close]
                let rest = text[text.index(after: close)...]
                if rest.hasPrefix(":") {
                    guard let number = Int(rest.dropFirst()) else { throw .connectionFailed(host: text, port: 0, reason: "bad port") }
                    port = number
                }
            } else if let colon = text.lastIndex(of: ":"), text.firstIndex(of: ":") == colon {
                host = text[..<colon]
                guard let number = Int(text[text.index(after: colon)...]) else {
                    throw .connectionFailed(host: text, port: 0, reason: "bad port")
                }
                port = number
            }
            guard !host.isEmpty, (1...65535).contains(port) else {
                throw .connectionFailed(host: text, port: port, reason: "not a host:port")
            }
            self.host = String(host)
            self.port = port
        }
    }

    /// One subscription, across connections (actor-isolated; @unchecked only so that its lifetime can refer to it).
    final class SubscriptionState: @unchecked Sendable {
        let localID: Int
        let path: String
        let options: [KVOOption]
        let context: JSONValue?
        let progress: Int?
        /// The last seq delivered (the resume point); nil until known.
        var lastSeq: UInt64?
        /// The seq of a prior notification delivered whose after notification has not come yet.
        var priorSeq: UInt64?
        /// kvod's id on the current connection.
        var serverID: Int64?
        /// A resync to announce once kvod answers the fresh `subscribe` (the `since` that failed, kvod's oldest).
        var resync: (since: UInt64, oldest: UInt64?)?
        var isActive = true
        let continuation: AsyncThrowingStream<KVOEvent, any Error>.Continuation

        init(
            localID: Int, path: String, options: [KVOOption], context: JSONValue?, progress: Int?, since: UInt64?,
            continuation: AsyncThrowingStream<KVOEvent, any Error>.Continuation
        ) {
            self.localID = localID
            self.path = path
            self.options = options
            self.context = context
            self.progress = progress
            self.lastSeq = since
            self.continuation = continuation
        }
    }

    private struct Pending {
        let method: String
        let continuation: CheckedContinuation<JSONValue, any Error>
        let subscription: SubscriptionState?
    }

    /// The addresses given (the members of a cluster), tried in turn.
    let endpoints: [Endpoint]
    public let options: Options

    private var socket: LineSocket?
    private var generation = 0
    private var isReady = false
    private var isClosed = false
    private var isReconnecting = false
    private var nextID: Int64 = 1
    private var pending: [Int64: Pending] = [:]
    private var subscriptions: [Int: SubscriptionState] = [:]
    private var byServerID: [Int64: SubscriptionState] = [:]
    private var nextLocalID = 1
    private var waiters: [Int: CheckedContinuation<Void, any Error>] = [:]
    private var nextWaiter = 1
    /// The leader a 1012 named: tried first on the next connection.
    private var preferred: Endpoint?
    private var stateContinuations: [Int: AsyncStream<ConnectionState>.Continuation] = [:]

    /// How many connections were made (1 + reconnections).
    public private(set) var connections = 0
    /// The address of the current (or last) connection.
    public private(set) var endpoint: String?
    /// `hello`'s result on the current connection.
    public private(set) var server: JSONValue?
    /// The `closing` reason kvod sent last (`server_shutdown`, `slow_consumer`, ...).
    public private(set) var closingReason: String?
    /// The onDisconnect ops kvod last accepted, registered again on every new connection (nil: none).
    private var onDisconnectOps: [JSONValue]?
    /// Why the onDisconnect ops could not be registered on the current connection (nil when they were, or none).
    public private(set) var onDisconnectError: RPCError?

    /// Whether the client is connected, and what happens next.
    public enum ConnectionState: Sendable, Equatable {
        /// Connected and set up (hello answered, subscriptions resumed); `connections` counts this one.
        case connected(endpoint: String, connections: Int)
        /// The connection ended; `reconnecting` tells whether the client will try again by itself.
        case disconnected(reason: String, reconnecting: Bool)
    }

    init(endpoints: [Endpoint], options: Options) {
        self.endpoints = endpoints
        self.options = options
    }

    /// Connects to kvod at `address` (`host:port`) and says hello. Throws `.connectionFailed` when it cannot,
    /// `.server` when kvod refuses the hello (a wrong token).
    public static func connect(to address: String, options: Options = Options()) async throws -> AsyncKVOClient {
        try await self.connect(to: [address], options: options)
    }

    /// Connects to the first of `addresses` that accepts (the members of a cluster; the leader is found and followed
    /// by itself).
    public static func connect(to addresses: [String], options: Options = Options()) async throws -> AsyncKVOClient {
        guard !addresses.isEmpty else { throw KVOClientError.connectionFailed(host: "", port: 0, reason: "no address given") }
        var endpoints: [Endpoint] = []
        for address in addresses { endpoints.append(try Endpoint(parsing: address)) }
        let client = AsyncKVOClient(endpoints: endpoints, options: options)
        try await client.establish()
        return client
    }

    /// Closes the connection for good: calls waiting fail with `.closed`, every subscription's sequence ends.
    public func close() {
        self.isClosed = true
        self.socket?.shutdown()
        self.failPending(with: .closed)
        for state in self.subscriptions.values { state.continuation.finish() }
        self.subscriptions.removeAll()
        self.byServerID.removeAll()
        for waiter in self.waiters.values { waiter.resume(throwing: KVOClientError.closed) }
        self.waiters.removeAll()
        for continuation in self.stateContinuations.values { continuation.finish() }
        self.stateContinuations.removeAll()
    }

    /// The connection's state changes from now on (a user interface's "connected" light). Ends at `close()`.
    public func connectionStates() -> AsyncStream<ConnectionState> {
        let (stream, continuation) = AsyncStream<ConnectionState>.makeStream()
        let id = self.nextWaiter
        self.nextWaiter += 1
        self.stateContinuations[id] = continuation
        if self.isReady, let endpoint = self.endpoint {
            continuation.yield(.connected(endpoint: endpoint, connections: self.connections))
        }
        continuation.onTermination = { _ in Task { await self.removeStateListener(id) } }
        return stream
    }

    private func removeStateListener(_ id: Int) {
        self.stateContinuations[id] = nil
    }

    private func announce(_ state: ConnectionState) {
        for continuation in self.stateContinuations.values { continuation.yield(state) }
    }

    // MARK: - Connecting

    /// The addresses in the order to try: the leader a 1012 named, then the last one used, then the others.
    private var connectionOrder: [Endpoint] {
        var order: [Endpoint] = []
        if let preferred = self.preferred { order.append(preferred) }
        if let last = self.endpoint, let endpoint = self.endpoints.first(where: { $0.description == last }),
            !order.contains(endpoint)
        {
            order.append(endpoint)
        }
        for endpoint in self.endpoints where !order.contains(endpoint) { order.append(endpoint) }
        return order
    }

    /// Connects to the first address that accepts, then sets the connection up (hello, subscriptions resumed).
    private func establish() async throws {
        var failures: [String] = []
        for endpoint in self.connectionOrder {
            let socket: LineSocket
            do {
                socket = try LineSocket(host: endpoint.host, port: endpoint.port, timeout: self.options.timeout)
            } catch {
                failures.append("\(error)")
                continue
            }
            self.generation += 1
            let generation = self.generation
            self.socket = socket
            self.endpoint = endpoint.description
            self.preferred = nil
            let (events, sink) = AsyncStream<SocketEvent>.makeStream()
            socket.start { event in
                sink.yield(event)
                if case .closed = event { sink.finish() }
            }
            Task { [weak self] in
                for await event in events {
                    guard let self else { return }
                    await self.handle(event, generation: generation)
                }
            }
            do {
                try await self.setUp()
            } catch {
                socket.shutdown()
                if self.generation == generation { self.socket = nil }
                throw error
            }
            guard self.generation == generation, !self.isClosed else { throw KVOClientError.closed }
            self.connections += 1
            self.isReady = true
            for waiter in self.waiters.values { waiter.resume() }
            self.waiters.removeAll()
            self.announce(.connected(endpoint: endpoint.description, connections: self.connections))
            return
        }
        throw KVOClientError.connectionFailed(
            host: self.endpoints.map(\.description).joined(separator: ","), port: 0,
            reason: failures.joined(separator: "; "))
    }

    /// hello, the onDisconnect ops again, then every live subscription again with `since`.
    private func setUp() async throws {
        var hello = JSONObject(["client": .string(self.options.clientName)])
        if let token = self.options.token { hello["token"] = .string(token) }
        self.server = try await self.send("hello", .object(hello))
        self.onDisconnectError = nil
        if let ops = self.onDisconnectOps {
            // Before anything else on this connection, so presence is armed first. A refusal (1012 on a member that
            // cannot take it, a token that no longer may): the connection goes on without them, and says why.
            do {
                _ = try await self.send("onDisconnect", .object(["ops": .array(ops)]))
            } catch KVOClientError.server(let error) {
                self.onDisconnectError = error
            }
        }
        for state in self.subscriptions.values.sorted(by: { $0.localID < $1.localID }) where state.isActive {
            try await self.resubscribe(state)
        }
    }

    /// Subscribes again from the last seq delivered. 1010 (kvod cannot replay from there): a `.resync` event, then a
    /// fresh subscription (with `.initial` if it asked for it). Another refusal kvod would repeat (a token that no
    /// longer allows the path): the subscription ends with that error. 1012 (not the leader): the connection is
    /// dropped, to reconnect to the leader.
    private func resubscribe(_ state: SubscriptionState) async throws {
        let since = state.lastSeq
        do {
            _ = try await self.send("subscribe", self.subscribeParams(state, since: since), subscription: state)
        } catch KVOClientError.server(let error) where error.code == 1010 && since != nil {
            state.lastSeq = nil
            state.priorSeq = nil
            // The resync event goes out when kvod answers, before the initial notification that follows the answer.
            state.resync = (since ?? 0, error.data?["oldest"]?.intValue.map { UInt64(clamping: $0) })
            _ = try await self.send("subscribe", self.subscribeParams(state, since: nil), subscription: state)
        } catch KVOClientError.server(let error) where error.code != 1012 {
            self.end(state, throwing: KVOClientError.server(error))
        }
    }

    private func subscribeParams(_ state: SubscriptionState, since: UInt64?) -> JSONValue {
        let options = state.options.filter { since == nil || $0 != .initial }
        var params = JSONObject([
            "path": .string(state.path), "options": .array(options.map { .string($0.rawValue) }),
        ])
        if let context = state.context { params["context"] = context }
        if let progress = state.progress { params["progress"] = .int(Int64(progress)) }
        if let since { params["since"] = .int(Int64(clamping: since)) }
        return .object(params)
    }

    /// The connection ended: fail what waits on it, then reconnect (or end every subscription).
    private func lost(reason: String) {
        let wasReady = self.isReady
        self.isReady = false
        self.socket = nil
        self.byServerID.removeAll()
        for state in self.subscriptions.values { state.serverID = nil }
        self.failPending(with: .connectionLost(reason))
        // Only a client that was connected reconnects: a first connection that fails is the caller's error.
        let reconnecting = !self.isClosed && self.options.reconnect && self.connections > 0
        if wasReady { self.announce(.disconnected(reason: reason, reconnecting: reconnecting)) }
        guard reconnecting else {
            for state in self.subscriptions.values { state.continuation.finish(throwing: KVOClientError.closed) }
            self.subscriptions.removeAll()
            for waiter in self.waiters.values { waiter.resume(throwing: KVOClientError.closed) }
            self.waiters.removeAll()
            return
        }
        guard !self.isReconnecting else { return }
        self.isReconnecting = true
        // Reconnects with backoff until a connection is set up; one loop at a time. The loop holds the client weakly
        // between attempts, so a client its owner released while kvod was down goes away.
        let maxBackoff = self.options.maxBackoff
        Task { [weak self] in
            var backoff = Duration.milliseconds(50)
            while let client = self, await client.attemptReconnection() == false {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, maxBackoff)
            }
        }
    }

    /// One reconnection attempt: true when done (connected, or closed meanwhile), false to try again.
    private func attemptReconnection() async -> Bool {
        if self.isClosed || self.isReady {
            self.isReconnecting = false
            return true
        }
        do {
            try await self.establish()
            self.isReconnecting = false
            return true
        } catch {
            return false
        }
    }

    deinit {
        // Released without close(): end the connection, so its reader thread stops and the socket is closed.
        self.socket?.shutdown()
    }

    private func failPending(with error: KVOClientError) {
        let pending = self.pending
        self.pending.removeAll()
        for request in pending.values { request.continuation.resume(throwing: error) }
    }

    private func end(_ state: SubscriptionState, throwing error: any Error) {
        state.isActive = false
        self.subscriptions[state.localID] = nil
        if let id = state.serverID { self.byServerID[id] = nil }
        state.continuation.finish(throwing: error)
    }

    // MARK: - Requests

    /// Sends on the current connection (during set-up too) and waits for the answer, at most `timeout`.
    private func send(_ method: String, _ params: JSONValue?, subscription: SubscriptionState? = nil) async throws
        -> JSONValue
    {
        guard let socket = self.socket else { throw KVOClientError.connectionLost("not connected") }
        let id = self.nextID
        self.nextID += 1
        var bytes: [UInt8] = []
        RPCEncoder.appendRequest(id: .int(id), method: method, params: params, to: &bytes)
        bytes.append(UInt8(ascii: "\n"))
        let timeout = self.options.timeout
        return try await withCheckedThrowingContinuation { continuation in
            self.pending[id] = Pending(method: method, continuation: continuation, subscription: subscription)
            do {
                try socket.send(bytes, timeout: timeout)
            } catch {
                self.pending[id] = nil
                continuation.resume(throwing: error)
                return
            }
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                await self?.expire(id, method: method)
            }
        }
    }

    private func expire(_ id: Int64, method: String) {
        guard let request = self.pending.removeValue(forKey: id) else { return }
        request.continuation.resume(throwing: KVOClientError.timeout("waiting for the response to \(method)"))
    }

    /// Waits (at most `timeout`) until a connection is set up.
    private func whenConnected() async throws {
        if self.isReady { return }
        if self.isClosed { throw KVOClientError.closed }
        let id = self.nextWaiter
        self.nextWaiter += 1
        let timeout = self.options.timeout
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            self.waiters[id] = continuation
            Task { [weak self] in
                try? await Task.sleep(for: timeout)
                await self?.expireWaiter(id)
            }
        }
    }

    private func expireWaiter(_ id: Int) {
        self.waiters.removeValue(forKey: id)?.resume(throwing: KVOClientError.timeout("waiting for a connection to kvod"))
    }

    /// Sends one request and returns its result. Throws `.server(RPCError)` for an error response; a 1012 "not the
    /// leader" refusal (nothing changed) is retried on the leader kvod names, for up to `leaderWait`.
    public func call(_ method: String, _ params: JSONValue? = nil) async throws -> JSONValue {
        let deadline = ContinuousClock.now.advanced(by: self.options.leaderWait)
        var tried: Set<String> = []
        var pause = Duration.milliseconds(100)
        while true {
            try await self.whenConnected()
            do {
                return try await self.send(method, params)
            } catch KVOClientError.server(let error) where error.code == 1012 && ContinuousClock.now < deadline {
                if let leader = error.data?["leader"]?.stringValue, leader != self.endpoint, !tried.contains(leader),
                    let endpoint = try? Endpoint(parsing: leader)
                {
                    tried.insert(leader)
                    self.preferred = endpoint
                    self.socket?.shutdown()  // reconnects, to the leader first, resubscribing everything
                    continue
                }
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .seconds(1))
            }
        }
    }

    // MARK: - Presence

    /// Registers `ops` (transaction's `{method, params}` format) that kvod runs as one transaction when this
    /// connection ends (Protocol/methods.md#ondisconnect); returns their count. The client registers them again on
    /// every new connection, right after hello, until `cancelOnDisconnect()`, as the Python and TypeScript clients do.
    @discardableResult
    public func onDisconnect(_ ops: [(method: String, params: JSONValue)]) async throws -> Int {
        let list: [JSONValue] = ops.map { .object(["method": .string($0.method), "params": $0.params]) }
        let result = try await self.call("onDisconnect", .object(["ops": .array(list)]))
        self.onDisconnectOps = list.isEmpty ? nil : list
        self.onDisconnectError = nil
        return Int(clamping: result["ops"]?.intValue ?? 0)
    }

    /// Cancels the onDisconnect ops, on this connection and the next ones.
    public func cancelOnDisconnect() async throws {
        try await self.onDisconnect([])
    }

    // MARK: - Subscriptions

    /// Subscribes to `path`: events arrive on the returned sequence until it is cancelled or released, across
    /// reconnections. `since` resumes from a seq (kvod replays what came after it; 1010 when it cannot).
    public func changes(
        of path: String, options: [KVOOption] = [.new], context: JSONValue? = nil, since: UInt64? = nil,
        progress: Int? = nil
    ) async throws -> KVOChanges {
        let (stream, continuation) = AsyncThrowingStream<KVOEvent, any Error>.makeStream()
        let localID = self.nextLocalID
        self.nextLocalID += 1
        let state = SubscriptionState(
            localID: localID, path: path, options: options, context: context, progress: progress, since: since,
            continuation: continuation)
        try await self.whenConnected()
        _ = try await self.send("subscribe", self.subscribeParams(state, since: since), subscription: state)
        let lifetime = SubscriptionLifetime { [weak self] in Task { await self?.unsubscribe(localID) } }
        continuation.onTermination = { [weak self] _ in Task { await self?.unsubscribe(localID) } }
        return KVOChanges(path: path, stream: stream, lifetime: lifetime)
    }

    /// Observes `path` and calls `handler` for each event until the returned token is released or invalidated.
    public func observe(
        _ path: String, options: [KVOOption] = [.new], context: JSONValue? = nil,
        handler: @escaping @Sendable (KVOEvent) -> Void
    ) async throws -> KVOObservation {
        KVOObservation(changes: try await self.changes(of: path, options: options, context: context), handler: handler)
    }

    /// Ends a subscription: its sequence finishes and kvod is told (when connected).
    func unsubscribe(_ localID: Int) async {
        guard let state = self.subscriptions.removeValue(forKey: localID) else { return }
        state.isActive = false
        state.continuation.finish()
        guard let serverID = state.serverID else { return }
        self.byServerID[serverID] = nil
        _ = try? await self.send("unsubscribe", .object(["subscription": .int(serverID)]))
    }

    /// How many subscriptions are live (for tests and diagnostics).
    public var subscriptionCount: Int { self.subscriptions.count }

    // MARK: - Receiving

    private func handle(_ event: SocketEvent, generation: Int) {
        guard generation == self.generation else { return }
        switch event {
        case .closed(let reason):
            self.lost(reason: reason)
        case .line(let bytes):
            guard let message = try? RPCServerMessage.decode(bytes) else { return }
            self.route(message)
        }
    }

    private func route(_ message: RPCServerMessage) {
        switch message {
        case .response(.int(let id), let result):
            guard let request = self.pending.removeValue(forKey: id) else { return }
            if request.method == "subscribe", let state = request.subscription { self.registered(state, result) }
            request.continuation.resume(returning: result)
        case .error(.int(let id), let error):
            guard let request = self.pending.removeValue(forKey: id) else { return }
            request.continuation.resume(throwing: KVOClientError.server(error))
        case .notification("change", let params?):
            guard let id = params["subscription"]?.intValue, let state = self.byServerID[id], state.isActive,
                let change = Self.change(params)
            else { return }
            if self.accept(change, for: state) { state.continuation.yield(.change(change)) }
        case .notification("progress", let params?):
            if let id = params["subscription"]?.intValue, let state = self.byServerID[id],
                let seq = params["seq"]?.intValue
            {
                state.lastSeq = max(state.lastSeq ?? 0, UInt64(clamping: seq))
            }
        case .notification("closing", let params?):
            self.closingReason = params["reason"]?.stringValue
        case .batch(let messages):
            for message in messages { self.route(message) }
        default:
            return
        }
    }

    private func registered(_ state: SubscriptionState, _ result: JSONValue) {
        guard let id = result["subscription"]?.intValue else { return }
        if let old = state.serverID { self.byServerID[old] = nil }
        state.serverID = id
        self.byServerID[id] = state
        let seq = UInt64(clamping: result["seq"]?.intValue ?? 0)
        if let resync = state.resync {
            state.resync = nil
            state.continuation.yield(.resync(path: state.path, since: resync.since, oldest: resync.oldest, seq: seq))
        }
        if state.lastSeq == nil, !state.options.contains(.initial) { state.lastSeq = seq }
        if state.isActive { self.subscriptions[state.localID] = state }
    }

    /// Advances the resume point; false for a replayed notification already delivered.
    private func accept(_ change: KVOChange, for state: SubscriptionState) -> Bool {
        if change.isPrior {
            if state.priorSeq == change.seq { return false }
            if let last = state.lastSeq, change.seq <= last { return false }
            state.priorSeq = change.seq
            return true
        }
        if let last = state.lastSeq, change.seq <= last, !change.isInitial { return false }
        state.priorSeq = nil
        state.lastSeq = max(state.lastSeq ?? change.seq, change.seq)
        return true
    }

    static func change(_ params: JSONValue) -> KVOChange? {
        guard let path = params["path"]?.stringValue, let kindName = params["kind"]?.stringValue,
            let kind = KVOChangeKind(rawValue: kindName), let seq = params["seq"]?.intValue
        else { return nil }
        return KVOChange(
            path: path, kind: kind, seq: UInt64(clamping: seq), new: params["new"], old: params["old"],
            indexes: params["indexes"]?.arrayValue?.compactMap { $0.intValue.map { Int(clamping: $0) } },
            isPrior: params["prior"]?.boolValue == true, isInitial: params["initial"]?.boolValue == true,
            context: params["context"])
    }
}
