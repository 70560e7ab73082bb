// The server: the session core (Session/) put on a libuv loop: the listening socket, whose connections become
// sessions on TCP transports, the once-per-loop-turn flush of every session's output (a hook just before the loop
// polls, as redis's beforeSleep), the timer that drives progress notifications and housekeeping, and the stop.
public import Logging
public import ObjectGraph
public import Persistence
public import TLS
public import UVLoop
#if canImport(Glibc)
import Glibc
#endif

/// What a server listens on and enforces.
public struct ServerConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 7070
    public var limits = Limits()
    /// Notifications kept for resuming subscriptions (`subscribe` with `since`); 0 turns resuming off.
    public var historyCapacity = 10_000
    /// The tokens clients must `hello` with; none means no access control (Protocol/README.md#access-control).
    public var accessControl = AccessControl()
    /// Where the Prometheus metrics endpoint listens (MetricsEndpoint.swift); nil port: no endpoint.
    public var metricsHost = "127.0.0.1"
    public var metricsPort: Int?
    /// A second port that serves only WebSocket (kvod's own port serves both); nil: none.
    public var webSocketPort: Int?
    /// Origins a browser's WebSocket handshake may come from; empty: any (Protocol/README.md#websocket). The web
    /// inspector's own origin is added when there is a list.
    public var webSocketOrigins: [String] = []
    /// The web inspector's port and files (WebServer.swift), on `host`; nil: none.
    public var web: WebConfiguration?
    /// The CPUs a snapshot process for a follower may run on (`--snapshot-cpus`); empty: those of kvod.
    public var snapshotCPUs: [Int] = []
    /// Microseconds the loop keeps polling without blocking after each read (`--busy-poll`, UVLoop's BusyPoll); 0:
    /// it blocks as soon as nothing is ready.
    public var busyPollMicroseconds = 0
    /// TLS for clients (Protocol/README.md#tls): a connection whose first byte starts a handshake gets it, on
    /// kvod's port, the WebSocket port, the metrics port and the inspector's; nil: plaintext only. Replaced on
    /// reload (`Server.replaceTLSContext`) for the connections that follow.
    public var tls: TLSContext?
    /// With `tls`: refuse plaintext on every port (`--tls-only`).
    public var tlsOnly = false

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
    /// Running totals and gauges.
    public var stats: ServerStats { self.core.context.stats }
    let logger: Logger
    let loop: EventLoop
    let configuration: ServerConfiguration
    let core: SessionCore
    private var listener: TCPListener?
    private var webSocketListener: TCPListener?
    private var flushHook: BeforePollHook?
    /// Started while some session yielded the rest of its input to a later turn (Session.yieldTurn): resumes those
    /// that yielded before the last poll, once per loop iteration, and keeps the loop from blocking in its poll
    /// meanwhile.
    private var resumeHook: IdleHook?
    private var tickTimer: LoopTimer?
    /// Lets busy TLS client connections keep their record buffers (swept by the tick, once a second).
    let tlsBuffers = TLSBufferKeeper()
    var lastTLSSweep: UInt64 = 0
    private var busyPoll: BusyPoll?
    private var forceCloseTimer: LoopTimer?
    private var isStopping = false
    /// The journal and snapshots, when kvod runs with a data directory (Durability.swift); told of every committed
    /// mutation.
    public var durability: Durability? {
        didSet {
            if let log = self.clusterNode?.log {
                log.durability = self.durability
            } else {
                self.core.context.mutationLog = self.durability
            }
        }
    }
    /// In a cluster (`joinCluster`): the election and replication (Cluster/ClusterNode.swift), ticked every 250 ms.
    var clusterNode: ClusterNode?
    private var clusterTimer: LoopTimer?
    private var resignTimer: LoopTimer?
    /// Installs a snapshot a follower received from its leader (the bytes of `snapshot.kvs`); kvod writes it to the
    /// data directory and restarts itself on it. Throws when it cannot.
    public var onSnapshotReceived: (([UInt8]) throws -> Void)? {
        didSet { self.clusterNode?.onSnapshotReceived = self.onSnapshotReceived }
    }
    /// The metrics endpoint, when configured.
    var metricsServer: HTTPServer?
    /// The web inspector's port, when configured.
    var webServer: HTTPServer?
    /// `configuration.webSocketOrigins`, plus the inspector's origin once it listens.
    var webSocketOrigins: [String]
    /// The TLS context new connections get (`configuration.tls`, then what `replaceTLSContext` put there).
    public private(set) var tlsContext: TLSContext?
    /// How late the 250 ms tick fired (its lag, Server+Observability.swift): when it last fired, and the lags of
    /// the last second.
    var loopLag = LoopLagProbe()

    /// Creates a server for `graph` on `loop`; nothing listens until `start()`.
    public init(configuration: ServerConfiguration, graph: Graph, loop: EventLoop, logger: Logger) {
        self.configuration = configuration
        self.limits = configuration.limits
        self.graph = graph
        self.loop = loop
        self.logger = logger
        self.webSocketOrigins = configuration.webSocketOrigins
        self.tlsContext = configuration.tls
        let context = SessionContext(
            graph: graph, limits: configuration.limits, accessControl: configuration.accessControl,
            historyCapacity: configuration.historyCapacity, clock: loop, logger: logger)
        self.core = SessionCore(context: context)
    }

    /// Binds and listens; returns the bound address ("127.0.0.1:7070"), with the real port when 0 was asked.
    public func start() throws(UVError) -> String {
        self.flushHook = try BeforePollHook(loop: self.loop) { [unowned self] in self.core.flush() }
        self.resumeHook = try IdleHook(loop: self.loop) { [unowned self] in
            // Fills of live queries go on first (a share of the loop per turn), then the sessions that yielded,
            // among them the subscribers waiting for those fills.
            let fills = self.core.context.advanceQueryFills()
            if !self.core.context.sessions.resumeYielded() && !fills { self.resumeHook?.stop() }
        }
        self.core.context.sessions.onYield = { [unowned self] in self.resumeHook?.start() }
        // Work the graph carries on over turns (live-query fills, drains of dropped ones) keeps the loop turning.
        self.graph.onQueryFillWork = { [unowned self] in self.resumeHook?.start() }
        if self.configuration.busyPollMicroseconds > 0 {
            self.busyPoll = try BusyPoll(loop: self.loop, microseconds: UInt64(self.configuration.busyPollMicroseconds))
        }
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
        if let port = self.configuration.webSocketPort {
            let webSocketListener = try TCPListener(loop: self.loop, host: self.configuration.host, port: port) {
                [unowned self] stream in
                self.accept(stream, webSocketOnly: true)
            }
            webSocketListener.onAcceptError = listener.onAcceptError
            self.webSocketListener = webSocketListener
        }
        let timer = try LoopTimer(loop: self.loop)
        try timer.start(afterMilliseconds: 250, repeatMilliseconds: 250) { [unowned self] in
            self.recordLoopLag()
            self.core.tick()
            self.sweepTLSBuffers()
        }
        self.tickTimer = timer
        try self.startMetrics()
        try self.startWeb(kvodAddress: listener.localAddress, kvodPort: listener.localPort)
        return listener.localAddress
    }

    /// Before `start()`: runs the `onDisconnect` ops of connections a crash left open (from `Durability.recover`),
    /// each as one transaction journaled like any other (no client is there to be notified), then writes the journal
    /// so the next start does not run them again. A failure is logged and counted (`onDisconnectFailures`).
    public func runOnDisconnect(ofLostConnections registrations: OnDisconnectRegistrations) {
        guard !registrations.isEmpty else { return }
        let seq = self.graph.seq
        let failed = self.core.runOnDisconnect(ofLostConnections: registrations.lostConnections)
        self.core.flush()
        self.logger.info(
            "ran the onDisconnect ops of connections open at the crash",
            metadata: [
                "connections": "\(registrations.count)", "failed": "\(failed)", "seq.before": "\(seq)",
                "seq": "\(self.graph.seq)",
            ])
    }

    /// Before `start()` and before anything mutates: keeps the subscription history in `directory`'s `history.log`
    /// from now on, after restoring what it holds (the recorders, observing again, and their newest changes), so
    /// that `since` reaches back across a restart (docs/DURABILITY.md#the-history-on-disk). Returns how many changes
    /// were restored, and why the file was not usable when it was damaged (the history then starts empty).
    public func keepHistory(
        inDirectory directory: String, policy: FsyncPolicy
    ) throws(PersistenceError) -> (restored: Int, recorders: Int, damaged: String?) {
        let history = self.core.context.subscriptions.history
        guard history.isEnabled else { return (0, 0, nil) }
        let (log, contents, damaged) = try HistoryLog.open(directory: directory, policy: policy)
        history.onLogFailure = { [logger = self.logger] error in
            logger.error(
                "the subscription history cannot be written: it goes on in memory only", metadata: ["error": "\(error)"])
        }
        let restored = history.restore(from: log, contents: contents)
        return (restored, history.recordedPaths.count, damaged)
    }

    /// Deletes the history's log and stops writing it (before a member restarts on its leader's snapshot: the next
    /// start begins with an empty history, and `since` from before it gets 1010).
    public func discardHistory() throws(PersistenceError) {
        try self.core.context.subscriptions.history.discardLog()
    }

    /// Writes the history's log whole (at shutdown, after the last flush; fsynced), ready for the next start.
    public func finishHistory() {
        self.core.context.subscriptions.history.finishLog()
    }

    /// Hands `context` (certificates reloaded on SIGHUP) to the connections that arrive from now on, on every port;
    /// open connections keep the context they started with, so none is dropped.
    public func replaceTLSContext(_ context: TLSContext) {
        self.tlsContext = context
        self.metricsServer?.tlsContext = context
        self.webServer?.tlsContext = context
    }

    /// The port actually bound (after `start()`).
    public var port: Int { self.listener?.localPort ?? 0 }

    /// The WebSocket-only port's bound address, or nil without one.
    public var webSocketAddress: String? { self.webSocketListener?.localAddress }

    /// Stops accepting, sends every client what is queued plus a `closing` notice, closes all connections, and
    /// stops the loop once they are closed (or after `graceMilliseconds`, forcing what is left).
    public func stop(graceMilliseconds: UInt64 = 2000) {
        guard !self.isStopping else { return }
        self.isStopping = true
        let sessions = self.core.context.sessions
        self.logger.info("stopping", metadata: ["connections": "\(sessions.count)"])
        self.listener?.close()
        self.listener = nil
        self.webSocketListener?.close()
        self.webSocketListener = nil
        self.tickTimer?.close()
        self.tickTimer = nil
        self.tlsBuffers.forgetAll()
        self.clusterTimer?.close()
        self.clusterTimer = nil
        self.clusterNode?.stop()
        self.stopMetrics()
        self.stopWeb()
        sessions.onRemove = { [unowned self, unowned sessions] in
            if sessions.isEmpty { self.finishStopping() }
        }
        self.core.closeAll(.serverShutdown)
        if sessions.isEmpty {
            self.finishStopping()
            return
        }
        if let timer = try? LoopTimer(loop: self.loop) {
            self.forceCloseTimer = timer
            try? timer.start(afterMilliseconds: graceMilliseconds) { [unowned self] in self.finishStopping() }
        }
    }

    private func finishStopping() {
        self.core.context.sessions.onRemove = nil
        self.forceCloseTimer?.close()
        self.forceCloseTimer = nil
        self.flushHook?.close()
        self.flushHook = nil
        self.graph.onQueryFillWork = nil
        self.resumeHook?.close()
        self.resumeHook = nil
        self.busyPoll?.close()
        self.busyPoll = nil
        // A cluster member's resignation (ClusterMember.stop) gets up to a second to reach etcd.
        guard let member = self.clusterNode?.member, member.isResigning else { return self.loop.stop() }
        member.whenResigned { [unowned self] in
            self.resignTimer?.close()
            self.resignTimer = nil
            self.loop.stop()
        }
        if let timer = try? LoopTimer(loop: self.loop) {
            self.resignTimer = timer
            try? timer.start(afterMilliseconds: 1000) { [unowned member] in member.resigned() }
        }
    }

    // MARK: - Cluster

    /// Joins the cluster (docs/SCALING.md): from now on mutations are refused (1012) unless this member is the
    /// leader and can prove its lease. `recovered` (the journal records loaded at start, after the snapshot at
    /// `baseSeq`) seed the backlog a follower can resume from. `leftovers` (the `onDisconnect` registrations a crash
    /// left in the journal) run if this member leads before a leader's set replaces them.
    public func joinCluster(
        _ configuration: ClusterConfiguration, recovered: [JournalRecord], baseSeq: UInt64,
        leftovers: OnDisconnectRegistrations = OnDisconnectRegistrations()
    ) throws(UVError) {
        let loop = self.loop
        let etcd = EtcdClient(
            endpoints: configuration.endpoints, loop: loop,
            timeoutMilliseconds: min(1000, max(200, UInt64(configuration.leaseSeconds) * 250)),
            tls: configuration.etcdTLS)
        let peerTLS = configuration.peerTLS
        let (graph, logger, cpus) = (self.graph, self.logger, self.configuration.snapshotCPUs)
        let directory = self.durability?.directory.path ?? "/tmp"
        let node = ClusterNode(
            configuration: configuration, core: self.core, coordinator: etcd, logger: logger,
            durability: self.durability, recovered: recovered, baseSeq: baseSeq, leftovers: leftovers,
            shipper: { status in
                SnapshotShipper(
                    graph: graph, status: status, loop: loop, logger: logger, directory: directory, cpus: cpus)
            },
            openLink: { request in ReplicationLink(loop: loop, request: request, tls: peerTLS) })
        node.onSnapshotReceived = self.onSnapshotReceived
        self.clusterNode = node
        let timer = try LoopTimer(loop: loop)
        try timer.start(afterMilliseconds: 0, repeatMilliseconds: 250) { [unowned node] in node.member.tick() }
        self.clusterTimer = timer
    }

    /// This member's role, for logs and tests.
    public var clusterRole: ClusterRole? { self.core.context.cluster?.role }

    private func accept(_ stream: TCPStream, webSocketOnly: Bool = false) {
        let settings = SocketTransportSettings(
            maxMessageBytes: self.limits.maxLineBytes, webSocketOrigins: self.webSocketOrigins, tls: self.tlsContext,
            tlsOnly: self.configuration.tlsOnly && self.tlsContext != nil, tlsBuffers: self.tlsBuffers)
        let transport = SocketTransport(stream: stream, loop: self.loop, settings: settings, webSocketOnly: webSocketOnly)
        let session = self.core.open(transport)
        guard session.closeReason == nil else { return }  // over the connection limit: closing already
        do {
            try transport.start()
        } catch {
            self.logger.warning("cannot start connection", metadata: ["error": "\(error)"])
            session.transportEnded(error: true)
        }
    }
}

extension EventLoop: SessionClock {
    /// `CLOCK_REALTIME` in milliseconds.
    var epochMilliseconds: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
    }
}
