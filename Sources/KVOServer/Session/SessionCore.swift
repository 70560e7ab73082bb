// The socket-free core of the server: sessions on transports, the dispatcher, and the periodic work (progress
// notifications, output limits of quiet clients, the authentication timeout). Server.swift puts it on the loop
// with TCP listeners; tests drive it directly with RecordingTransports and a ManualClock.
import Logging
import ObjectGraph
import WireProtocol

/// Loop-owned.
@MainActor
final class SessionCore {
    let context: SessionContext
    let dispatcher: Dispatcher
    /// The context's subscriptions and history, held here for the check at every flush (a `let`: no access check).
    private let subscriptions: Subscriptions
    private let history: SubscriptionHistory
    private var lastHousekeeping: UInt64

    init(context: SessionContext) {
        self.context = context
        self.dispatcher = Dispatcher(context: context)
        self.subscriptions = context.subscriptions
        self.history = context.subscriptions.history
        self.lastHousekeeping = context.clock.nowMilliseconds
    }

    /// Opens a session on `transport` (which then reports to it). Over `Limits.maxConnections` the client still
    /// learns why: a `closing` notice (`too_many_connections`), then the close; nothing it sends is read.
    @discardableResult
    func open(_ transport: any Transport) -> Session {
        let context = self.context
        let isOverLimit = context.stats.connectionsOpen >= context.limits.maxConnections
        let session = Session(
            id: context.sessions.takeID(), context: context, dispatcher: self.dispatcher, transport: transport)
        transport.events = session
        context.sessions.add(session)
        context.stats.connectionsAccepted += 1
        context.stats.connectionsOpen += 1
        context.logger.debug(
            "connection opened",
            metadata: [
                "connection.id": "\(session.id)", "connection.remote": "\(transport.remoteAddress)",
                "connection.transport": "\(transport.kind)",
            ])
        if isOverLimit { session.close(.tooManyConnections) }
        return session
    }

    /// Before the loop polls: the turn's journal records first (the group commit), then every session's output; then a
    /// slice of the housekeeping left by closes (subscriptions of closed sessions, idle history recorders).
    func flush() {
        // The history's records first: on disk no later than the mutations they describe (HistoryLog.swift).
        self.context.subscriptions.history.persist()
        self.context.mutationLog?.beforeOutput()
        self.context.sessions.flushAll()
        if self.subscriptions.hasRetired || self.history.hasExcessIdleRecorders { self.endLeftovers() }
    }

    /// A slice of what closes left: subscriptions of closed sessions, idle history recorders beyond the limit.
    @inline(never)
    private func endLeftovers() {
        if self.subscriptions.hasRetired { self.subscriptions.endRetired() }
        if self.history.hasExcessIdleRecorders { self.history.dropIdleRecorders() }
    }

    /// Every 250 ms: `progress` notifications; once a second, the output limits of every session (the soft limit's
    /// time runs out even when no new output comes) and, with access control on, the close of sessions that sent no
    /// accepted `hello` in time.
    func tick() {
        let context = self.context
        self.expireDueKeys()
        context.subscriptions.sendProgress(encoder: context.encoder)
        let now = context.clock.nowMilliseconds
        guard now &- self.lastHousekeeping >= 1000 else { return }
        self.lastHousekeeping = now
        let authDeadline =
            context.accessControl.isEnabled && context.limits.authTimeoutSeconds > 0
            ? UInt64(context.limits.authTimeoutSeconds) * 1000 : nil
        for session in context.sessions.unordered where session.closeReason == nil {
            if let authDeadline, session.access == nil, now &- session.openedAtMilliseconds >= authDeadline {
                session.close(.authTimeout)
                continue
            }
            session.checkOutputLimits()
        }
    }

    /// Sets every key whose `ttl` has passed to null, each as an ordinary mutation with its own seq (observers
    /// notified), journaled as the `set` of null it is.
    func expireDueKeys() {
        let graph = self.context.graph
        // In a cluster only the leader expires keys; followers get its `set`s of null like any other mutation.
        if let cluster = self.context.cluster, !cluster.acceptsWrites(now: self.context.clock.nowMilliseconds) { return }
        let now = self.context.clock.epochMilliseconds
        guard let next = graph.nextDeadline, next <= now else { return }
        for due in graph.dueExpirations(now: now) {
            do {
                guard let seq = try graph.expire(object: due.object, key: due.key, now: now) else { continue }
                self.context.stats.mutations += 1
                let params = JSONObject(["path": .string("$\(due.object).\(due.key)"), "value": .null])
                self.context.mutationLog?.committed(seq: seq, method: "set", params: .object(params))
            } catch {
                self.context.logger.warning(
                    "a key could not expire", metadata: ["object": "\(due.object)", "key": "\(due.key)", "error": "\(error)"])
            }
        }
    }

    /// Runs the `onDisconnect` ops of connections that a crash left open (`registrations` by `durableID`, from
    /// journal replay), each as the transaction it would have been at their close, journaled and counted alike;
    /// before any client connects, so nobody is notified. Returns how many failed.
    @discardableResult
    func runOnDisconnect(ofLostConnections registrations: [(connection: String, ops: [JSONValue])]) -> Int {
        let failuresBefore = self.context.stats.onDisconnectFailures
        for registration in registrations {
            self.dispatcher.runOnDisconnect(
                registration.ops, connection: registration.connection, logID: registration.connection)
        }
        return self.context.stats.onDisconnectFailures - failuresBefore
    }

    /// Closes every session (`server_shutdown` when the server stops).
    func closeAll(_ reason: CloseReason) {
        for session in self.context.sessions.all { session.close(reason) }  // in id order: onDisconnect ops run as sessions were opened
    }
}
