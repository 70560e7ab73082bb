// The mutation log of a cluster member: every committed mutation goes to the journal (Durability), to the term
// history (TermHistory) and to the replication backlog and links (ReplicationSource); the turn's flush writes the
// journal first, then the catch-ups and the next chunks of the snapshots being sent, then (on a follower) the ack of
// what is now journaled (`--sync-replicas`). On a follower it also holds the leader's snapshot being received.
// `onDisconnect` registrations (docs/SCALING.md#presence-across-a-failover): the leader journals and ships each
// change; a follower journals the leader's (each change as it comes, the whole set at each catch-up); what a member
// holds for connections that are not its own open sessions is `inherited`, run when it leads. Every member tells the
// replication source where each connection ended (for the catch-ups it serves when it leads) and keeps the number of
// the last registration change it has (acknowledged to the leader, compared in the election).
import WireProtocol

/// Durability plus replication. Loop-owned.
@MainActor
final class ClusterLog: MutationLog {
    var durability: Durability?
    let source: ReplicationSource
    let terms: TermHistory
    private let status: ClusterStatus
    /// The term of the record being applied on a follower (the leader's record term); nil: this member's term.
    var replicatedTerm: UInt64?
    /// After the turn's journal write, when it succeeded: a follower acknowledges what it journaled.
    var afterJournal: (() -> Void)?
    /// The last registration change this member has: the term of the leader that numbered it and its number (the
    /// `registration` of the leader's lines; on a leader, its own last change). A follower acknowledges the number
    /// after the journal write; the election compares it (ClusterMember.Position). Nil before the first.
    var leaderRegistration: (term: UInt64, number: UInt64)?
    /// On a follower: the leader's snapshot being received for a bootstrap (SnapshotReceiver.swift).
    var incomingSnapshot: SnapshotReceiver?

    /// Every live `onDisconnect` registration this member journaled: as leader its connections' (and what it
    /// inherited and has not run yet), as follower the leader's. A catch-up sends it to the follower.
    private(set) var registrations = OnDisconnectRegistrations()
    /// The registrations of connections that are gone and whose ops have not run in this member's history: the
    /// leader's, on a follower; a crash's leftovers, at a start; those of sessions that ended while this member
    /// could not write. They run when this member leads (Server.runInheritedOnDisconnect), once.
    private(set) var inherited = OnDisconnectRegistrations()

    init(source: ReplicationSource, terms: TermHistory, status: ClusterStatus) {
        self.source = source
        self.terms = terms
        self.status = status
        source.registrations = { [unowned self] in self.registrations }
    }

    func committed(seq: UInt64, method: String, params: JSONValue?) {
        let term = self.replicatedTerm ?? self.status.term
        self.terms.record(term: term, seq: seq)
        self.durability?.committed(seq: seq, method: method, params: params)
        self.source.committed(seq: seq, method: method, params: params, term: term)
    }

    /// A session of this member (the leader: followers refuse `onDisconnect`) registered or cancelled.
    func registered(connection: String, ops: [JSONValue]) {
        self.change(.registered(connection: connection, ops: ops), ship: true)
    }

    /// A connection's ops are about to run here (its session ended, or it was inherited and this member leads).
    func disconnected(connection: String) {
        self.change(.disconnected(connection: connection), ship: true)
    }

    /// A session of this member ended while it could not write (not the leader, or its lease not proven): its ops
    /// are not run now (that would fork this history from the leader's); they stay registered, and run if this
    /// member leads. Not when the registration is no longer here (a leader's catch-up replaced it).
    func orphaned(connection: String, ops: [JSONValue]) {
        guard self.registrations.ops(of: connection) != nil else { return }
        self.inherited.apply(.registered(connection: connection, ops: ops))
    }

    /// At a start: the registrations the journal left (a crash's leftovers), already in it; inherited.
    func adopt(_ leftovers: OnDisconnectRegistrations) {
        self.registrations = leftovers
        self.inherited = leftovers
        self.durability?.adopt(leftovers)
    }

    /// On a follower: one change of the leader's registrations, from the stream.
    func replicated(_ record: OnDisconnectRecord) {
        self.change(record, ship: false)
    }

    /// On a follower: the leader's whole set at the start of a catch-up; what this member held that is not in it
    /// was settled or cancelled on the leader (journaled as `disconnected`).
    func replicated(all leaders: OnDisconnectRegistrations) {
        for record in self.registrations.records {
            guard case .registered(let connection, _) = record, leaders.ops(of: connection) == nil else { continue }
            // Where it ended on the leader is unknown (before this point): not kept for catch-ups served later.
            self.change(.disconnected(connection: connection), ship: false, endedHere: false)
        }
        for record in leaders.records {
            guard case .registered(let connection, let ops) = record, self.registrations.ops(of: connection) != ops
            else { continue }
            self.change(record, ship: false)
        }
        self.inherited = self.registrations
    }

    private func change(_ record: OnDisconnectRecord, ship: Bool, endedHere: Bool = true) {
        if endedHere, case .disconnected(let connection) = record, let ops = self.registrations.ops(of: connection) {
            self.source.connectionEnded(connection, ops: ops)  // for catch-ups from before this point
        }
        self.registrations.apply(record)
        switch record {
        case .registered(let connection, let ops):
            // A follower inherits every registration of the leader; a leader's own session's is not inherited.
            if ops.isEmpty || ship {
                self.inherited.apply(.disconnected(connection: connection))
            } else {
                self.inherited.apply(record)
            }
            self.durability?.registered(connection: connection, ops: ops)
        case .disconnected(let connection):
            self.inherited.apply(record)
            self.durability?.disconnected(connection: connection)
        }
        if ship {
            self.source.registrationChanged(record)
            self.leaderRegistration = (self.status.term, self.source.registrationNumber)
        }
    }

    func beforeOutput() {
        self.durability?.beforeOutput()
        self.source.beforeOutput()
        // Records still pending mean the journal write failed (kvod is stopping): nothing is acknowledged.
        if self.durability?.directory.journal.hasPending != true { self.afterJournal?() }
    }
}
