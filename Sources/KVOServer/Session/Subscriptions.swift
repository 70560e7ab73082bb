// The one owner of subscriptions' lives (Protocol/README.md#subscriptions, #resuming): wire ids, creation (engine
// observation, history recorder, `since` replay, `progress`), ending (wherever it ends: `unsubscribe`, a closing
// session), and the `progress` notifications of quiet subscriptions. A session keeps the list of its own; the
// engine keeps the observations; this type keeps the two in step.
import ObjectGraph
import WireProtocol

/// Loop-owned.
@MainActor
final class Subscriptions {
    private let graph: Graph
    private let clock: any SessionClock
    /// The bounded history that `subscribe` with `since` replays from (SubscriptionHistory.swift), and its
    /// counterpart for query subscriptions (QueryHistory.swift).
    let history: SubscriptionHistory
    let queryHistory: QueryHistory
    /// The id of the next subscription (wire ids are the server's own, independent of engine observations).
    private(set) var nextID = 1
    /// Subscriptions live now.
    private(set) var openCount = 0
    /// Subscriptions that asked for `progress` notifications.
    private var progressSubscriptions: [Int: Subscription] = [:]
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// The subscriptions of closed sessions still to be ended in the engine and the history, from `retiredStart`
    /// on (`retire`, `endRetired`); no longer counted open. Their notifications find their session closed.
    @exclusivity(unchecked) private var retired: [Subscription] = []  // loop-owned; looked at every turn
    @exclusivity(unchecked) private var retiredStart = 0
    /// The most retired subscriptions ended in one loop turn.
    static let endBudget = 1000

    init(graph: Graph, historyCapacity: Int, clock: any SessionClock) {
        self.graph = graph
        self.clock = clock
        self.history = SubscriptionHistory(capacity: historyCapacity, graph: graph)
        self.queryHistory = QueryHistory(capacity: historyCapacity, graph: graph)
    }

    /// What a subscription of `path` resuming after `since` missed, oldest first; 1010 when the history cannot say.
    func missed(_ path: KeyPath, spelled text: String, since: Int64) throws -> [Change] {
        try self.graph.checkObservable(path)
        guard let since = try self.resumable(since) else { return [] }
        if self.history.isEnabled, let changes = self.history.changes(for: path, after: since) { return changes }
        let oldest = self.history.isEnabled ? self.history.oldestResumable(path) : self.graph.seq
        throw self.resyncRequired(text, since: since, oldest: oldest, what: text)
    }

    /// What a subscription of `query` at `path` resuming after `since` missed; 1010 when the history cannot say.
    func missed(_ path: KeyPath, query: Query, spelled text: String, since: Int64) throws -> [Change] {
        guard let since = try self.resumable(since) else { return [] }
        let (changes, oldest) = self.queryHistory.changes(path, query, after: since)
        guard let changes else { throw self.resyncRequired(text, since: since, oldest: oldest, what: "the query on \(text)") }
        return changes
    }

    /// A `since` checked against this member's seq: nil when nothing can have been missed (it is the seq now).
    private func resumable(_ since: Int64) throws -> UInt64? {
        let graph = self.graph
        guard since >= 0 else { throw RPCError.badParams("subscribe: 'since' must be a seq of at least 0") }
        guard UInt64(since) <= graph.seq else {
            // Only a cluster follower (or a leader that cannot prove its lease) gets here: elsewhere a `since` in the
            // future is 1010 (Dispatcher.refuseLostSince). It may be behind: the client retries (data.reason).
            throw RPCError(
                .invalidParams, "subscribe: 'since' \(since) is beyond this member's seq \(graph.seq): it is behind",
                data: .object(["reason": .string("behind"), "since": .int(since), "seq": .int(Int64(graph.seq))]))
        }
        return UInt64(since) < graph.seq ? UInt64(since) : nil
    }

    private func resyncRequired(_ text: String, since: UInt64, oldest: UInt64, what: String) -> RPCError {
        RPCError(
            .resyncRequired, "cannot resume \(what) from seq \(since): the history starts at \(oldest)",
            data: .object([
                "path": .string(text), "since": .int(Int64(since)), "oldest": .int(Int64(oldest)),
                "seq": .int(Int64(self.graph.seq)),
            ]))
    }

    /// Creates a subscription of `session`: the engine observation, the history recorder and the `progress`
    /// bookkeeping. Returns it with its initial notification (option `initial`), which the caller queues after the
    /// response.
    func create(
        path text: String, keyPath: KeyPath, query: Query? = nil, options: ObservationOptions, context: JSONValue?,
        progressSeconds: Int?, for session: Session, encoder: NotificationEncoder
    ) throws -> (Subscription, initial: Change?) {
        let created = Subscription(
            id: self.nextID, path: text, keyPath: keyPath, options: options, context: context, session: session,
            middle: encoder.middle(path: text, context: context))
        let initial: Change?
        if let query {
            let (observer, first) = try self.graph.addQueryObservation(keyPath, query: query, options: options, sink: created)
            created.queryObserver = observer
            self.queryHistory.subscribed(keyPath, query)
            initial = first
        } else {
            let (observer, first) = try self.graph.addObservation(keyPath, options: options, sink: created)
            created.observer = observer
            self.history.subscribed(keyPath)
            initial = first
        }
        self.nextID += 1
        self.openCount += 1
        session.add(created)
        if let progressSeconds {
            created.startProgress(milliseconds: UInt64(progressSeconds) * 1000, now: self.clock.nowMilliseconds)
            self.progressSubscriptions[created.id] = created
        }
        return (created, initial)
    }

    /// Ends a subscription everywhere it is known: the engine, the history, the progress list (its session already
    /// forgot it).
    func end(_ subscription: Subscription) {
        guard subscription.isLive else { return }
        self.openCount -= 1
        self.tearDown(subscription)
    }

    private func tearDown(_ subscription: Subscription) {
        if let observer = subscription.queryObserver {
            self.queryHistory.unsubscribed(observer.keyPath, observer.query)
            self.graph.removeQueryObservation(observer)
            subscription.queryObserver = nil
        } else {
            guard let observer = subscription.observer else { return }
            self.history.unsubscribed(observer.keyPath)
            try? self.graph.removeObservation(observer)  // the engine has it: both sides are added together
            subscription.observer = nil
        }
        self.progressSubscriptions.removeValue(forKey: subscription.id)
    }

    /// Ends the subscriptions of a closing session: at once when they are few, otherwise a slice per loop turn
    /// (`endRetired`, from SessionCore.flush), so a connection closing with 10,000 subscriptions does not hold the
    /// loop for all of them in one turn. They stop counting as open now.
    func retire(_ subscriptions: [Subscription]) {
        let live = subscriptions.lazy.filter(\.isLive)
        guard self.retiredStart == self.retired.count, subscriptions.count <= Self.endBudget else {
            for _ in live { self.openCount -= 1 }
            self.retired.append(contentsOf: live)
            return
        }
        for subscription in live { self.end(subscription) }
    }

    /// Whether retired subscriptions wait to be ended.
    var hasRetired: Bool { !self.retired.isEmpty }

    /// Ends at most `budget` retired subscriptions, the oldest first (once per loop turn).
    func endRetired(budget: Int = Subscriptions.endBudget) {
        let end = min(self.retired.count, self.retiredStart + budget)
        for index in self.retiredStart..<end { self.tearDown(self.retired[index]) }
        self.retiredStart = end
        if end == self.retired.count {
            self.retired = []
            self.retiredStart = 0
        }
    }

    /// Sends `progress` to every subscription that has sent nothing for its interval
    /// (`{"method":"progress","params":{"subscription":ID,"seq":N}}`).
    func sendProgress(encoder: NotificationEncoder) {
        guard !self.progressSubscriptions.isEmpty else { return }
        let now = self.clock.nowMilliseconds
        let seq = self.graph.seq
        for subscription in self.progressSubscriptions.values {
            guard let extras = subscription.extras, now - extras.lastSentMilliseconds >= extras.progressMilliseconds else {
                continue
            }
            extras.lastSentMilliseconds = now
            subscription.session.enqueue { encoder.appendProgress(subscription: subscription.id, seq: seq, to: &$0) }
        }
    }
}
