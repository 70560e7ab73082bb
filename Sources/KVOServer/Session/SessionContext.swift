// Everything a session, the dispatcher and the subscriptions share, passed to each of them when it is made
// (docs/ARCHITECTURE.md#sessions-and-transports): the graph, the limits and access rules, the clock, the counters,
// the one encoder of pushed messages, the subscriptions, the open sessions and their flush list, and the mutation
// log durability listens on (mutations, `onDisconnect` registrations). Nothing in the session core reaches the Server.
import Logging
import ObjectGraph
import WireProtocol

/// Where committed mutations and `onDisconnect` registrations are reported, in order (Durability journals them).
@MainActor
protocol MutationLog: AnyObject {
    /// One successful mutation: its seq and its request, exactly as the client sent it.
    func committed(seq: UInt64, method: String, params: JSONValue?)
    /// One successful plain set (the fast path's): `set.paramsText` is its params as JSON text, valid during the call.
    func committed(seq: UInt64, plainSet set: RPCPlainSet)
    /// A session registered `onDisconnect` ops (as sent, `ttl` unresolved), replacing its earlier ones; `[]`
    /// cancels. `connection` is the session's `durableID`.
    func registered(connection: String, ops: [JSONValue])
    /// A session with `onDisconnect` ops ended (or, at a start, one that a crash left open was settled); the
    /// transaction its ops make, if they succeed, is reported next.
    func disconnected(connection: String)
    /// Called once per loop turn before any of the turn's output reaches a transport (the group commit).
    func beforeOutput()
}

extension MutationLog {
    /// A plain set as any other mutation: its params as an object.
    func committed(seq: UInt64, plainSet set: RPCPlainSet) {
        self.committed(seq: seq, method: "set", params: .object(set.params))
    }
}

/// The shared state of the session core. Loop-owned.
@MainActor
final class SessionContext {
    let graph: Graph
    let limits: Limits
    let accessControl: AccessControl
    let logger: Logger
    let clock: any SessionClock
    /// A random 64-bit hex chosen when the server starts: with a session's id, the session's `durableID`, unique
    /// across restarts (session ids start at 1 again).
    let bootID: String
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// Running totals and gauges (`stats`, the metrics endpoint).
    @exclusivity(unchecked) var stats = ServerStats()  // loop-owned counters
    /// Encodes every message the server pushes (change, progress, closing).
    let encoder = NotificationEncoder()
    /// Where successful mutations are reported (nil: not journaled).
    var mutationLog: (any MutationLog)?
    /// In a cluster (`--cluster-etcd`): this member's role, and the leader's replication side (docs/SCALING.md).
    var cluster: ClusterStatus?
    var replication: ReplicationSource?
    /// The clock when the server started (uptime).
    let startedAtMilliseconds: UInt64
    /// The open sessions and the ones with output to flush this turn.
    let sessions = Sessions()
    /// Subscription ids, the resumable history and `progress` notifications.
    private(set) var subscriptions: Subscriptions!
    /// A reusable buffer for encoding output (Session.enqueue).
    private var scratch: [UInt8] = []

    init(graph: Graph, limits: Limits, accessControl: AccessControl, historyCapacity: Int, clock: any SessionClock, logger: Logger) {
        self.graph = graph
        self.limits = limits
        self.accessControl = accessControl
        self.clock = clock
        self.logger = logger
        self.startedAtMilliseconds = clock.nowMilliseconds
        let boot = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        self.bootID = String(repeating: "0", count: 16 - boot.count) + boot
        self.subscriptions = Subscriptions(graph: graph, historyCapacity: historyCapacity, clock: clock)
    }

    /// Carries the graph's live-query fills on for at most half a session's share of the loop (Graph+QueryFill.swift,
    /// Protocol/README.md#fairness); returns whether some remain (the server's idle hook keeps the loop turning).
    func advanceQueryFills() -> Bool {
        guard self.graph.hasQueryFillWork else { return false }
        let clock = self.clock
        let start = clock.monotonicNanoseconds
        let share = Session.turnBudgetNanoseconds / 2
        return self.graph.advanceQueryFills { clock.monotonicNanoseconds &- start >= share }
    }

    /// Runs `body` with an empty scratch buffer, reused across calls (a nested call gets a fresh one).
    func withScratch(_ body: (inout [UInt8]) -> Void) {
        var buffer = self.scratch
        self.scratch = []
        buffer.removeAll(keepingCapacity: true)
        body(&buffer)
        if buffer.capacity <= 64 << 10 { self.scratch = buffer }
    }

    /// The server's figures now (the `stats` result and the metrics endpoint both render this).
    func statsSnapshot() -> StatsSnapshot {
        let uptime = Double(self.clock.nowMilliseconds &- self.startedAtMilliseconds) / 1000
        var stats = self.stats
        stats.subscriptionsOpen = self.subscriptions.openCount
        stats.queryFills = self.graph.queryFillCount
        return StatsSnapshot(stats: stats, seq: self.graph.seq, uptimeSeconds: uptime, version: KVODVersion.current)
    }
}

/// The open sessions by id, and the ones with output waiting for this turn's flush. Loop-owned.
@MainActor
final class Sessions {
    private var byID: [Int: Session] = [:]
    @exclusivity(unchecked) private var needsFlush: [Session] = []
    /// The list being flushed (flushAll), kept for its capacity.
    @exclusivity(unchecked) private var flushing: [Session] = []
    private(set) var nextID = 1

    var count: Int { self.byID.count }
    var isEmpty: Bool { self.byID.isEmpty }
    /// The open sessions in id order (for people: `observers`).
    var all: [Session] { self.byID.values.sorted { $0.id < $1.id } }
    /// The open sessions in no particular order (the once-a-second housekeeping): no sort.
    var unordered: [Session] { Array(self.byID.values) }

    /// The id for the next session.
    func takeID() -> Int {
        defer { self.nextID += 1 }
        return self.nextID
    }

    func add(_ session: Session) { self.byID[session.id] = session }

    /// Called after a session was forgotten (the server waits for the last one when stopping).
    var onRemove: (() -> Void)?

    /// Forgets a session whose transport closed.
    func remove(_ session: Session) {
        guard self.byID.removeValue(forKey: session.id) != nil else { return }
        self.onRemove?()
    }

    /// Counts the loop's turns (one per `flushAll`, before the loop polls): a session's reads within one turn share
    /// one measure of its share of the loop (Session.transportRead).
    @exclusivity(unchecked) private(set) var loopTurn: UInt64 = 0

    /// Sessions whose turn ran out with input left (Session.yieldTurn), each with the loop turn it yielded in, in
    /// the order they yielded; the spare list `resumeYielded` swaps in.
    private var yielded: [(session: Session, turn: UInt64)] = []
    private var resuming: [(session: Session, turn: UInt64)] = []
    /// Called when the first session yields (the server starts its idle hook, so that the loop does not block).
    var onYield: (() -> Void)?

    /// Lists a session that yielded the rest of its input to a later turn.
    func markYielding(_ session: Session) {
        self.yielded.append((session, self.loopTurn))
        if self.yielded.count == 1 { self.onYield?() }
    }

    /// Gives each session that yielded before the loop's last poll its next turn, in the order they yielded (a
    /// session that yielded since waits for the next call: every other connection's input is read between two turns
    /// of one session); returns whether some still wait (the server's idle hook keeps the poll from blocking).
    func resumeYielded() -> Bool {
        guard !self.yielded.isEmpty else { return false }
        let turn = self.loopTurn
        let due = self.yielded.prefix { $0.turn < turn }.count
        guard due > 0 else { return true }
        swap(&self.yielded, &self.resuming)
        self.yielded.append(contentsOf: self.resuming[due...])
        for entry in self.resuming[..<due] { entry.session.resumeTurn() }
        self.resuming.removeAll(keepingCapacity: true)
        return !self.yielded.isEmpty
    }

    /// Puts a session on the list flushed before the loop next polls.
    func markNeedsFlush(_ session: Session) {
        self.needsFlush.append(session)
    }

    // MARK: - Sync replicas (docs/SCALING.md)

    /// The highest seq enough followers have journaled (`--sync-replicas`): the output of a session whose last
    /// mutation is above it waits (Session.flush). `.max`, the default, holds nothing.
    @exclusivity(unchecked) private(set) var releasedSeq = UInt64.max  // loop-owned; read on every flush
    /// Sessions whose output waits for `releasedSeq`, with the loop time each began to wait, oldest first.
    private(set) var held: [(session: Session, since: UInt64)] = []

    /// Keeps `session`'s output until `release(upTo:)` lets its last mutation go (it stays marked for a flush).
    /// Whatever takes a session off `held` clears its `isHeld` (releaseLowered, expireHeld): a session released
    /// while a later mutation of it is still unconfirmed is held again at its next flush, never forgotten.
    func hold(_ session: Session, now: UInt64) {
        session.isHeld = true
        self.held.append((session, now))
    }

    /// Raises `releasedSeq` to `seq` and puts the sessions it releases back on the flush list.
    func release(upTo seq: UInt64) {
        guard seq > self.releasedSeq || self.releasedSeq == .max else { return }
        self.releasedSeq = seq
        self.releaseLowered()
    }

    /// Puts back on the flush list the held sessions whose `heldUntilSeq` is at most `releasedSeq`: after it rose, or
    /// after a session's was lowered since it began to wait (an `onDisconnect` response its followers acknowledged:
    /// ReplicationSource).
    func releaseLowered() {
        guard !self.held.isEmpty else { return }
        let releasedSeq = self.releasedSeq
        var waiting: [(session: Session, since: UInt64)] = []
        for entry in self.held {
            if entry.session.heldUntilSeq <= releasedSeq {
                entry.session.isHeld = false
                self.needsFlush.append(entry.session)
            } else {
                waiting.append(entry)
            }
        }
        self.held = waiting
    }

    /// Removes and returns the sessions that began to wait before `deadline`.
    func expireHeld(before deadline: UInt64) -> [Session] {
        guard let first = self.held.first, first.since < deadline else { return [] }
        let expired = self.held.prefix { $0.since < deadline }.map(\.session)
        self.held.removeFirst(expired.count)
        for session in expired { session.isHeld = false }
        return expired
    }

    /// From how many sessions in one flush TLS records are deferred: the first is never, so below three there would
    /// be nothing to batch.
    private static let deferringSessions = 3

    /// Hands every session's queued output to its transport, the session listed last first (as redis's
    /// beforeSleep does). A mutation lists its subscribers' sessions before its own (notifications are queued before
    /// the response), so the setter's response reaches the socket first: the client can send its next request while
    /// the loop still writes the fan-out, and the loop then finds it waiting instead of sleeping. (Subscribers first,
    /// kvod slept and woke once per set at M = 10 with one set in flight, redis 0.3–0.6 times, and with 16
    /// publishers at M = 1,000 it wrote twice as often per set: smaller batches.) Each connection's own messages
    /// keep their order; only the order of the `write`s across connections changes.
    func flushAll() {
        self.loopTurn &+= 1
        guard !self.needsFlush.isEmpty else { return }
        // The list is swapped with a spare one (no copy, no allocation per turn); a flush can close a session (output
        // limit), which never adds to the list, and anything listed meanwhile waits for the next flush.
        swap(&self.needsFlush, &self.flushing)
        let sessions = self.flushing.reversed()
        if sessions.count < Self.deferringSessions {
            for session in sessions { session.flush() }
        } else {
            // The first goes to its socket at once (a setter's response); over TLS the others' records are
            // encrypted in batches and written after each (DeferredTLSWrites).
            sessions.first?.flush()
            TLSScratch.deferred.deferringWrites {
                for session in sessions.dropFirst() { session.flush() }
            }
        }
        self.flushing.removeAll(keepingCapacity: true)
    }
}
