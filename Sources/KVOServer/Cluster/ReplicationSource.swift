// The leader's side of replication: the backlog of recent mutations (what a reconnecting follower resumes from), the
// replication sessions (`replicate`, Protocol/methods.md#replicate) and what is sent on them: a catch-up from the
// backlog (or, when the follower is behind it, a snapshot first: SnapshotShipper.swift), each committed mutation as
// it is committed, and a heartbeat every 250 ms with the leader's seq. Records are JSON lines {seq, term, recordTerm,
// method, params}. With `--sync-replicas N` it also counts the followers' acks (`ack` notifications, sent after their
// journal write) and releases the held responses (Sessions.releasedSeq) up to the seq N followers have, while the
// lease is proven; only the acks of followers named in etcd's sync set count (SyncSet.swift, written before they do); responses held longer than the lease time are dropped with their sessions (`replication_timeout`).
// Recorded paths (Cluster/RecordedPaths.swift): a catch-up starts with a `{term, seq, record}` line per path the
// leader records, and each recorder the leader starts later is announced in the stream at its seq.
// `onDisconnect` registrations (docs/SCALING.md#presence-across-a-failover): a catch-up starts with a
// `{term, seq, registrations, registration}` line (the leader's whole set), and each change after it is a record line
// of method `onDisconnect` or `disconnected` at the current seq (it takes none), in order with the mutations. Each
// change has a number (`registration`, counted by this process); a follower's `ack` carries the highest it journaled,
// and with `--sync-replicas N` an `onDisconnect` response waits until N followers have its change (by that number,
// or by an ack of a later seq: the change came before that record in the stream).
import ObjectGraph
import Persistence
import WireProtocol

/// A streaming follower as the leader sees it.
struct Follower {
    let session: Session
    /// The highest seq it acknowledged (it has every record up to it in its journal), and when it last did.
    var ackedSeq: UInt64
    var ackedAt: UInt64
    /// The number of the last registration change it acknowledged.
    var registration: UInt64 = 0
    /// Its advertised address, from its first ack; nil from a follower of an earlier version (never in the sync
    /// set).
    var member: String?
}

/// The mutations sent to followers. Loop-owned.
@MainActor
final class ReplicationSource {
    /// A backlog record and the term that wrote it.
    private struct BacklogEntry {
        var record: JournalRecord
        var term: UInt64
    }

    /// A follower whose catch-up is sent at the turn's flush: from the backlog after `fromSeq`, or (nil) from a
    /// snapshot first.
    private struct PendingFollower {
        var session: Session
        var fromSeq: UInt64?
    }

    /// A session whose `onDisconnect` response waits for `--sync-replicas` followers: the change's number, the seq it
    /// came after in the stream, and the session's last mutation seq before it (its `heldUntilSeq` is `.max`
    /// meanwhile).
    private struct HeldRegistration {
        var session: Session
        var number: UInt64
        var seq: UInt64
        var lastMutation: UInt64
    }

    /// A connection whose `disconnected` came after record `seq`, with the ops it had.
    private struct EndedConnection {
        var seq: UInt64
        var connection: String
        var ops: [JSONValue]
    }

    private let graph: Graph
    /// The term history (shared with the mutation log, which records into it).
    let terms: TermHistory
    private let status: ClusterStatus
    private let capacity: Int
    /// The backlog: mutations `baseSeq + 1 ... baseSeq + records.count`, oldest first, each with its term.
    private var records: [BacklogEntry] = []
    private(set) var baseSeq: UInt64
    /// Streaming followers in the order they attached, and those waiting for their catch-up (sent at the turn's
    /// flush, after their response).
    private(set) var followers: [Follower] = []
    private var pending: [PendingFollower] = []
    /// Bootstraps followers behind the backlog from a snapshot; the backlog keeps what they need meanwhile.
    var shipper: SnapshotShipper? {
        didSet { self.shipper?.onShipped = { [unowned self] session, seq in self.shipped(session, seq: seq) } }
    }
    /// Each follower's progress as the leader sees it (metrics).
    let progress = FollowerProgress()
    /// With `--sync-replicas`: the followers whose acks count (those etcd's sync set names), and every
    /// acknowledged mutation's seq is at or below `acknowledgedSeq` (this member's seq when it won, then the
    /// released seq).
    private(set) var syncSet: SyncSet
    private var acknowledgedSeq: UInt64 = 0
    /// Writes the sync set to etcd, fenced by this member's leadership (ClusterMember.writeSyncSet); calls back with
    /// whether it did. Unset: nothing is written and no follower counts.
    var writeSyncSet: ((SyncRecord, @escaping @MainActor (Bool) -> Void) -> Void)?
    private let sessions: Sessions
    private let clock: any SessionClock
    /// A follower counts towards `--sync-replicas` while it acknowledged within this time (it acks every
    /// heartbeat, every 250 ms).
    private static let liveAckMilliseconds: UInt64 = 2000
    /// The key paths this member's history records, announced at the start of each catch-up (RecordedPaths.swift).
    var recordedPaths: () -> [KeyPath] = { [] }
    /// The live `onDisconnect` registrations, sent at the start of each catch-up (ClusterLog).
    var registrations: () -> OnDisconnectRegistrations = { OnDisconnectRegistrations() }
    /// How many registration changes this process shipped (or would have): the number of the last one.
    private(set) var registrationNumber: UInt64 = 0
    /// Sessions whose `onDisconnect` response waits for `--sync-replicas` followers.
    private var heldRegistrations: [HeldRegistration] = []
    /// The connections whose `disconnected` came after record `seq` of the backlog (seq ≥ `baseSeq`), oldest first,
    /// with the ops they had: a catch-up from before that point gets their registration in its set and the
    /// `disconnected` line where it was in the stream, so a follower promoted partway through its catch-up has
    /// either the transaction of their ops or the registration, never neither.
    private var ended: [EndedConnection] = []

    init(
        graph: Graph, status: ClusterStatus, capacity: Int, recovered: [JournalRecord], baseSeq: UInt64,
        terms: TermHistory, sessions: Sessions, clock: any SessionClock
    ) {
        self.graph = graph
        self.status = status
        self.capacity = max(1, capacity)
        self.baseSeq = baseSeq
        self.sessions = sessions
        self.clock = clock
        self.terms = terms
        self.syncSet = SyncSet(needed: status.configuration.syncReplicas)
        for record in recovered where record.seq == self.baseSeq + UInt64(self.records.count) + 1 {
            self.records.append(BacklogEntry(record: record, term: terms.term(at: record.seq)))
        }
        if self.baseSeq + UInt64(self.records.count) != graph.seq {
            // Only a contiguous run up to the graph's seq can be resumed from.
            self.records.removeAll()
            self.baseSeq = graph.seq
        }
        self.trim()
    }

    /// Followers streaming or about to (bootstrapping ones included).
    var replicaCount: Int { self.followers.count + self.pending.count + (self.shipper?.count ?? 0) }

    /// Whether a follower at `fromSeq` can resume from the backlog (else it needs a snapshot).
    func canResume(from fromSeq: UInt64) -> Bool {
        fromSeq >= self.baseSeq && fromSeq <= self.graph.seq
    }

    /// Adds a follower: from the backlog after `fromSeq`, or (nil) from a snapshot first.
    func attach(_ session: Session, fromSeq: UInt64?) {
        self.pending.append(PendingFollower(session: session, fromSeq: fromSeq))
    }

    /// One committed mutation, written by `term` (leader or follower alike: a follower that becomes leader can serve
    /// from its backlog).
    func committed(seq: UInt64, method: String, params: JSONValue?, term: UInt64) {
        let record = JournalRecord(seq: seq, method: method, params: params)
        if seq == self.baseSeq + UInt64(self.records.count) + 1 {
            self.records.append(BacklogEntry(record: record, term: term))
        } else {
            self.records = [BacklogEntry(record: record, term: term)]
            self.baseSeq = seq - 1
        }
        self.trim()
        guard !self.followers.isEmpty else { return }
        var line: [UInt8] = []
        Self.append(record, recordTerm: term, term: self.status.term, to: &line)
        self.send(line)
    }

    /// At the turn's flush (after the journal write): sends pending catch-ups; their responses are queued already.
    func beforeOutput() {
        self.shipper?.pump()
        guard !self.pending.isEmpty else { return }
        let pending = self.pending
        self.pending.removeAll()
        for follower in pending where follower.session.closeReason == nil {
            let session = follower.session
            if let fromSeq = follower.fromSeq, self.canResume(from: fromSeq) {
                self.stream(session, after: fromSeq, bootstrapped: false)
            } else if let shipper = self.shipper {
                shipper.start(session)
            } else {
                session.close(.ioError)  // nothing can bootstrap it (a server without cluster wiring)
            }
        }
        self.countLiveReplicas()
    }

    /// A change of this leader's `onDisconnect` registrations: a record line at the current seq on every link (a
    /// follower of an earlier version skips it as a record it has).
    func registrationChanged(_ change: OnDisconnectRecord) {
        self.registrationNumber += 1
        guard !self.followers.isEmpty else { return }
        var line: [UInt8] = []
        let record = JournalRecord(seq: self.graph.seq, method: change.method, params: change.params)
        Self.append(
            record, recordTerm: self.status.term, term: self.status.term, registration: self.registrationNumber,
            to: &line)
        self.send(line)
    }

    /// A connection with `ops` registered ended here, after record `graph.seq` (leader or follower alike: a member
    /// that leads serves catch-ups from what it applied).
    /// At most `--replication-backlog` ends are kept (ops that fail add no record, so the backlog alone would not
    /// bound them): a catch-up from before a dropped one lacks its registration, as a catch-up did before ends
    /// were kept — its ops may be lost if that follower is promoted partway through, never run twice.
    func connectionEnded(_ connection: String, ops: [JSONValue]) {
        self.ended.append(EndedConnection(seq: self.graph.seq, connection: connection, ops: ops))
        let excess = self.ended.count - self.capacity
        if excess > self.capacity / 4 { self.ended.removeFirst(excess) }
    }

    // MARK: - Recorded paths

    /// Announces on every link that this member started recording `keyPath` now: the followers start too, at this
    /// point of the stream.
    func announceRecording(_ keyPath: KeyPath) {
        guard !self.followers.isEmpty else { return }
        var line: [UInt8] = []
        ReplicationMessage.appendRecording(keyPath.description, term: self.status.term, seq: self.graph.seq, to: &line)
        self.send(line)
    }

    /// A catch-up's first lines: a record line at `seq` (where the follower is then) for every recorded path.
    private func appendRecordedPaths(at seq: UInt64, to output: inout [UInt8]) {
        for keyPath in self.recordedPaths() {
            ReplicationMessage.appendRecording(keyPath.description, term: self.status.term, seq: seq, to: &output)
        }
    }

    // MARK: - Sync replicas

    /// A follower's `ack`: it has every record up to `seq` in its journal (and is alive), and every registration
    /// change up to number `registration` (nil: a follower of an earlier version, which does not say); `member` is
    /// its advertised address (sent with its first ack).
    func acknowledged(_ seq: UInt64, registration: UInt64? = nil, member: String? = nil, by session: Session) {
        guard let index = self.followers.firstIndex(where: { $0.session === session }) else { return }
        let previous = self.followers[index]
        var follower = previous
        follower.ackedSeq = max(previous.ackedSeq, seq)
        follower.ackedAt = self.clock.nowMilliseconds
        follower.registration = max(previous.registration, registration ?? 0)
        if let member { follower.member = member }
        self.followers[index] = follower
        if self.syncSet.needed > 0 && !self.syncSet.counts(follower.member) { self.updateSyncSet() }
        if follower.ackedSeq > previous.ackedSeq || follower.registration > previous.registration { self.release() }
    }

    /// With `--sync-replicas`: `session`'s `onDisconnect` response (and what it queues after it) waits until enough
    /// followers have the registration change just shipped (`registrationNumber`), or it times out as a mutation's
    /// does (`replication_timeout`).
    func holdRegistrationResponse(of session: Session) {
        guard self.status.configuration.syncReplicas > 0 else { return }
        // An earlier registration's response still held: this one replaces its entry (it comes later in the stream).
        let earlier = self.heldRegistrations.firstIndex { $0.session === session }
            .map { self.heldRegistrations.remove(at: $0) }
        let lastMutation = session.heldUntilSeq == .max ? (earlier?.lastMutation ?? 0) : session.heldUntilSeq
        self.heldRegistrations.append(
            HeldRegistration(
                session: session, number: self.registrationNumber, seq: self.graph.seq, lastMutation: lastMutation))
        session.heldUntilSeq = .max  // above any released seq: Session.flush holds its output
    }

    /// This member won an election: no follower counts until the sync set names it, and every mutation it holds
    /// may have been acknowledged by the previous leader.
    func becameLeader() {
        self.syncSet.reset()
        self.acknowledgedSeq = self.graph.seq
    }

    /// The followers whose acks count for `--sync-replicas`: in the sync set, live.
    private var countedFollowers: some Sequence<Follower> {
        self.followers.lazy.filter { $0.session.closeReason == nil && self.syncSet.counts($0.member) }
    }

    /// Writes the sync set when it should change (SyncSet.proposal); once written, the new followers' acks count.
    private func updateSyncSet() {
        guard let write = self.writeSyncSet, self.status.role == .leader else { return }
        var live: [String: UInt64] = [:]
        for follower in self.followers where follower.session.closeReason == nil {
            guard let member = follower.member else { continue }
            live[member] = max(live[member] ?? 0, follower.ackedSeq)
        }
        guard let proposal = self.syncSet.proposal(followers: live, acknowledged: self.acknowledgedSeq) else { return }
        let generation = self.syncSet.generation
        let record = SyncRecord(
            term: self.status.term, leader: self.status.configuration.advertise, followers: Array(proposal),
            needed: self.syncSet.needed)
        write(record) { [weak self] written in
            guard let self else { return }
            self.syncSet.written(proposal, generation: generation, succeeded: written)
            guard written, generation == self.syncSet.generation else { return }
            self.countLiveReplicas()
            self.release()
        }
    }

    /// Releases held responses up to the seq `syncReplicas` followers of the sync set have, and the `onDisconnect`
    /// responses whose change that many of them have, while this member is a leader that can prove its lease
    /// (after that, nothing more is acknowledged: the held sessions time out).
    private func release() {
        let needed = self.status.configuration.syncReplicas
        guard needed > 0, self.status.acceptsWrites(now: self.clock.nowMilliseconds) else { return }
        let counted = Array(self.countedFollowers)
        guard let releasable = self.syncSet.releasable(counted.lazy.map { ($0.member, $0.ackedSeq) }) else { return }
        self.sessions.release(upTo: releasable)
        self.acknowledgedSeq = max(self.acknowledgedSeq, releasable)
        guard !self.heldRegistrations.isEmpty else { return }
        var lowered = false
        self.heldRegistrations.removeAll { held in
            // A later mutation of the session replaced the hold (its record follows the change in the stream).
            guard held.session.closeReason == nil, held.session.heldUntilSeq == .max else { return true }
            // A follower has the change if it acknowledged its number, or any seq after the one it came after.
            let having = counted.count { $0.ackedSeq > held.seq || $0.registration >= held.number }
            guard having >= needed else { return false }
            held.session.heldUntilSeq = held.lastMutation  // released already: those followers have it
            lowered = true
            return true
        }
        if lowered { self.sessions.releaseLowered() }
    }

    /// The followers that acknowledged lately, for the admission check (ClusterStatus.mutationRefusal): with
    /// `--sync-replicas`, those of the sync set.
    private func countLiveReplicas() {
        let now = self.clock.nowMilliseconds
        let fresh = { (follower: Follower) in now &- follower.ackedAt <= Self.liveAckMilliseconds }
        if self.syncSet.needed > 0 {
            self.status.liveReplicas = self.countedFollowers.count(where: fresh)
        } else {
            self.status.liveReplicas = self.followers.count { $0.session.closeReason == nil && fresh($0) }
        }
    }

    /// Queues `line` on every streaming follower.
    private func send(_ line: [UInt8]) {
        for follower in self.followers where follower.session.closeReason == nil { follower.session.enqueue(bytes: line) }
    }

    /// Closes the sessions whose responses waited longer than the lease for their sync replicas.
    private func expireHeld() {
        let now = self.clock.nowMilliseconds
        let timeout = self.status.configuration.syncTimeoutMilliseconds
        guard now > timeout else { return }
        for session in self.sessions.expireHeld(before: now - timeout) { session.close(.replicationTimeout) }
    }

    /// A follower has its whole snapshot at `seq` queued: the records after it follow, then it streams.
    private func shipped(_ session: Session, seq: UInt64) {
        guard session.closeReason == nil else { return }
        guard self.canResume(from: seq) else {
            session.close(.ioError)  // the backlog moved on (a new term reset it): the follower asks again
            return
        }
        self.stream(session, after: seq, bootstrapped: true)
    }

    /// Queues every backlog record after `seq` and makes `session` a streaming replica.
    private func stream(_ session: Session, after seq: UInt64, bootstrapped: Bool) {
        var output: [UInt8] = []
        // The set as the follower needs it at `seq`: the current one (later registrations early, cancels applied)
        // and the connections that ended after `seq`, whose `disconnected` comes where it was, before the
        // transaction of their ops: a follower promoted partway through its catch-up runs each connection's ops
        // once, or not at all when that transaction is in its history (docs/SCALING.md#presence-across-a-failover).
        let endedAfter = self.ended.drop(while: { $0.seq < seq })
        var registrations = self.registrations()
        for end in endedAfter { registrations.apply(.registered(connection: end.connection, ops: end.ops)) }
        ReplicationMessage.registrations(
            term: self.status.term, seq: seq, registrations: registrations.json, number: self.registrationNumber
        ).encode(to: &output)
        self.appendRecordedPaths(at: seq, to: &output)
        var ends = endedAfter[...]
        func appendEnds(upTo position: UInt64) {
            while let end = ends.first, end.seq <= position {
                let record = JournalRecord(
                    seq: end.seq, method: OnDisconnectRecord.disconnectedMethod,
                    params: OnDisconnectRecord.disconnected(connection: end.connection).params)
                Self.append(record, recordTerm: self.status.term, term: self.status.term, to: &output)
                ends.removeFirst()
            }
        }
        appendEnds(upTo: seq)
        for entry in self.records[Int(seq - self.baseSeq)...] {
            Self.append(entry.record, recordTerm: entry.term, term: self.status.term, to: &output)
            appendEnds(upTo: entry.record.seq)
        }
        appendEnds(upTo: .max)
        if !output.isEmpty { session.enqueue(bytes: output) }
        // A resuming follower has `seq` in its journal; a bootstrapping one nothing until it acks.
        self.followers.append(
            Follower(session: session, ackedSeq: bootstrapped ? 0 : seq, ackedAt: self.clock.nowMilliseconds))
    }

    /// Every 250 ms: a heartbeat on each link (`{term, seq}`), so followers know their lag and that the link lives.
    func heartbeat() {
        self.followers.removeAll { $0.session.closeReason != nil }
        self.heldRegistrations.removeAll { $0.session.closeReason != nil }
        self.countLiveReplicas()
        if self.status.configuration.syncReplicas > 0 {
            if self.status.acceptsWrites(now: self.clock.nowMilliseconds) { self.updateSyncSet() }
            self.release()
            self.expireHeld()
        }
        // Before the heartbeat.
        self.progress.sample(self.followers.map(\.session), seq: self.graph.seq) { session in
            self.followers.first { $0.session === session }?.ackedSeq
        }
        guard !self.followers.isEmpty || (self.shipper?.count ?? 0) > 0 else { return }
        var line: [UInt8] = []
        ReplicationMessage.appendHeartbeat(term: self.status.term, seq: self.graph.seq, to: &line)
        for follower in self.followers { follower.session.enqueue(bytes: line) }
        self.shipper?.heartbeat(line)
    }

    /// Closes every replication session (this member is no longer the leader).
    func detachAll() {
        for session in self.followers.map(\.session) + self.pending.map(\.session) { session.close(.notLeader) }
        self.followers.removeAll()
        self.pending.removeAll()
        self.shipper?.cancelAll(closing: .notLeader)
        self.progress.sample([], seq: self.graph.seq) { _ in nil }
        self.heldRegistrations.removeAll()
        self.syncSet.reset()
        self.status.liveReplicas = 0
    }

    private func trim() {
        if let first = self.ended.first, first.seq < self.baseSeq { self.ended.removeAll { $0.seq < self.baseSeq } }
        var excess = self.records.count - self.capacity
        guard excess > self.capacity / 4 else { return }
        // A bootstrap in flight needs every record after its snapshot's seq.
        if let pinned = self.shipper?.lowestSeq, pinned >= self.baseSeq {
            excess = min(excess, Int(pinned - self.baseSeq))
            guard excess > self.capacity / 4 else { return }
        }
        self.records.removeFirst(excess)
        self.baseSeq += UInt64(excess)
        self.ended.removeAll { $0.seq < self.baseSeq }
    }

    /// A backlog record as its line (ReplicationMessage.appendRecord).
    private static func append(
        _ record: JournalRecord, recordTerm: UInt64, term: UInt64, registration: UInt64? = nil, to line: inout [UInt8]
    ) {
        ReplicationMessage.appendRecord(
            seq: record.seq, term: term, recordTerm: recordTerm, method: record.method, params: record.params,
            registration: registration, to: &line)
    }
}
