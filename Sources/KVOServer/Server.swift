// The server: the listening socket, the connections, the graph they share, and the once-per-loop-turn flush of
// every connection's output (a hook just before the loop polls, as redis's beforeSleep). Requests are handled in
// Dispatcher.swift; sockets in Connection.swift.
public import Logging
public import ObjectGraph
public import UVLoop

/// What a server listens on and enforces.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 7070
    public var limits = Limits()
    /// Notifications kept for resuming subscriptions (`subscribe` with `since`); 0 turns resuming off.
    public var historyCapacity = 10_000
    /// The tokens clients must `hello` with; none means no access control (Protocol/README.md#access-control).
    public var accessControl = AccessControl()
    /// Where the Prometheus metrics endpoint listens (MetricsServer.swift); nil port: no endpoint.
    public var metricsHost = "127.0.0.1"
    public var metricsPort: Int?

    public init(host: String = "127.0.0.1", port: Int = 7070, limits: Limits = Limits(), historyCapacity: Int = 10_000) {
        self.host = host
        self.port = port
        self.limits = limits
        self.historyCapacity = historyCapacity
    }
}

/// A kvod server on one event loop. Loop-owned.
@MainActor
public final class Server {
    /// The observable graph every client reads, writes and observes.
    public let graph: Graph
    public let limits: Limits
    @exclusivity(unchecked) public internal(set) var stats = ServerStats()  // loop-owned counters
    let logger: Logger
    let loop: EventLoop
    let configuration: ServerConfiguration
    private var listener: TCPListener?
    private var flushHook: BeforePollHook?
    private var connections: [Int: Connection] = [:]
    private var nextConnectionID = 1
    @exclusivity(unchecked) private var needsFlush: [Connection] = []
    private(set) lazy var dispatcher = Dispatcher(server: self)
    let notificationEncoder = NotificationEncoder()
    /// A reusable buffer for encoding output (Connection.enqueue).
    private var scratch: [UInt8] = []

    /// Runs `body` with an empty scratch buffer, reused across calls (a nested call gets a fresh one).
    func withScratch(_ body: (inout [UInt8]) -> Void) {
        var buffer = self.scratch
        self.scratch = []
        buffer.removeAll(keepingCapacity: true)
        body(&buffer)
        if buffer.capacity <= 64 << 10 { self.scratch = buffer }
    }
    private var isStopping = false
    /// The journal and snapshots, when kvod runs with a data directory (Durability.swift).
    public var durability: Durability?
    /// The bounded history that `subscribe` with `since` replays from (SubscriptionHistory.swift).
    private(set) lazy var history = SubscriptionHistory(capacity: self.configuration.historyCapacity, graph: self.graph)
    /// Subscriptions that asked for `progress` notifications, and the timer that sends them.
    var progressSubscriptions: [Int: Subscription] = [:]
    /// The id of the next subscription (wire ids are the server's own, independent of engine observations).
    var nextSubscriptionID = 1
    var progressTimer: LoopTimer?
    private var forceCloseTimer: LoopTimer?
    /// Once a second: output limits of clients that no new output reaches (Server+Observability.swift).
    var housekeepingTimer: LoopTimer?
    /// The metrics endpoint, when configured.
    var metricsServer: MetricsServer?
    /// The loop's clock when `start()` ran, for uptime.
    var startedAtMilliseconds: UInt64 = 0

    /// Creates a server for `graph` on `loop`; nothing listens until `start()`.
    public init(configuration: ServerConfiguration, graph: Graph, loop: EventLoop, logger: Logger) {
        self.configuration = configuration
        self.limits = configuration.limits
        self.graph = graph
        self.loop = loop
        self.logger = logger
    }

    /// Binds and listens; returns the bound address ("127.0.0.1:7070"), with the real port when 0 was asked.
    public func start() throws(UVError) -> String {
        self.flushHook = try BeforePollHook(loop: self.loop) { [unowned self] in self.flushAll() }
        let listener = try TCPListener(
            loop: self.loop, host: self.configuration.host, port: self.configuration.port
        ) { [unowned self] stream in
            self.accept(stream)
        }
        // Accepting can fail (EMFILE when out of descriptors); the listener keeps listening, and the log says so.
        listener.onAcceptError = { [unowned self] error in
            self.logger.warning("accept failed", metadata: ["error": "\(error)"])
        }
        self.listener = listener
        try self.startObservability()
        return listener.localAddress
    }

    /// The port actually bound (after `start()`).
    public var port: Int { self.listener?.localPort ?? 0 }

    /// Stops accepting, sends every client what is queued plus a `closing` notice, closes all connections, and
    /// stops the loop once they are closed (or after `graceMilliseconds`, forcing what is left).
    public func stop(graceMilliseconds: UInt64 = 2000) {
        guard !self.isStopping else { return }
        self.isStopping = true
        self.logger.info("stopping", metadata: ["connections": "\(self.connections.count)"])
        self.listener?.close()
        self.listener = nil
        self.stopObservability()
        for connection in Array(self.connections.values) { connection.close(.serverShutdown) }
        if self.connections.isEmpty {
            self.finishStopping()
            return
        }
        if let timer = try? LoopTimer(loop: self.loop) {
            self.forceCloseTimer = timer
            try? timer.start(afterMilliseconds: graceMilliseconds) { [unowned self] in self.finishStopping() }
        }
    }

    private func finishStopping() {
        self.forceCloseTimer?.close()
        self.forceCloseTimer = nil
        self.flushHook?.close()
        self.flushHook = nil
        self.loop.stop()
    }

    // MARK: - Connections

    private func accept(_ stream: TCPStream) {
        let isOverLimit = self.stats.connectionsOpen >= self.limits.maxConnections
        let connection = Connection(id: self.nextConnectionID, server: self, stream: stream)
        self.nextConnectionID += 1
        do {
            try connection.start()
        } catch {
            self.logger.warning("cannot start connection", metadata: ["error": "\(error)"])
            stream.close()
            return
        }
        self.connections[connection.id] = connection
        self.stats.connectionsAccepted += 1
        self.stats.connectionsOpen += 1
        self.logger.debug(
            "connection opened",
            metadata: ["connection.id": "\(connection.id)", "connection.remote": "\(connection.remoteAddress)"])
        // Over the limit the client still learns why: a `closing` notice, then the close (no request is read).
        if isOverLimit { connection.close(.tooManyConnections) }
    }

    /// Counts and logs a close (Server+Observability.swift); the connection stops counting as open.
    func connectionWillClose(_ connection: Connection, reason: CloseReason) {
        self.stats.closes[reason, default: 0] += 1
        self.stats.connectionsOpen -= 1
        self.logClose(connection, reason: reason)
    }

    func connectionDidClose(_ connection: Connection) {
        guard self.connections.removeValue(forKey: connection.id) != nil else { return }
        if self.isStopping && self.connections.isEmpty { self.finishStopping() }
    }

    /// The open connections (for inspection and tests).
    var openConnections: [Connection] { Array(self.connections.values) }

    // MARK: - Output

    /// Puts a connection on the list flushed before the loop next polls.
    func markNeedsFlush(_ connection: Connection) {
        self.needsFlush.append(connection)
    }

    private func flushAll() {
        // Group commit: this turn's journal records reach the file (and disk, under `always`) before any of this
        // turn's responses reach a socket.
        self.durability?.beforeFlush()
        guard !self.needsFlush.isEmpty else { return }
        // A flush can close a connection (output limit), which never adds to the list: iterate a stable copy.
        let pending = self.needsFlush
        self.needsFlush.removeAll(keepingCapacity: true)
        for connection in pending { connection.flush() }
    }

    /// Counts one request, for stats.
    func countRequest(isMutation: Bool) {
        self.stats.requests += 1
        if isMutation { self.stats.mutations += 1 }
    }
}
