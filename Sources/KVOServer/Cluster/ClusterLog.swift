// The mutation log of a cluster member: every committed mutation goes to the journal (Durability), to the term
// history (TermHistory) and to the replication backlog and links (ReplicationSource); the turn's flush writes the
// journal first, then the catch-ups and the next chunks of the snapshots being sent, then (on a follower) the ack of
// what is now journaled (`--sync-replicas`). On a follower it also holds the leader's snapshot being received.
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
    /// On a follower: the leader's snapshot being received for a bootstrap (SnapshotReceiver.swift).
    var incomingSnapshot: SnapshotReceiver?

    init(source: ReplicationSource, terms: TermHistory, status: ClusterStatus) {
        self.source = source
        self.terms = terms
        self.status = status
    }

    func committed(seq: UInt64, method: String, params: JSONValue?) {
        let term = self.replicatedTerm ?? self.status.term
        self.terms.record(term: term, seq: seq)
        self.durability?.committed(seq: seq, method: method, params: params)
        self.source.committed(seq: seq, method: method, params: params, term: term)
    }

    func registered(connection: String, ops: [JSONValue]) {
        self.durability?.registered(connection: connection, ops: ops)
    }

    func disconnected(connection: String) {
        self.durability?.disconnected(connection: connection)
    }

    func beforeOutput() {
        self.durability?.beforeOutput()
        self.source.beforeOutput()
        // Records still pending mean the journal write failed (kvod is stopping): nothing is acknowledged.
        if self.durability?.directory.journal.hasPending != true { self.afterJournal?() }
    }
}
