// The mutation log of a cluster member: every committed mutation goes to the journal (Durability) and to the
// replication backlog and links (ReplicationSource); the turn's flush writes the journal first, then the catch-ups
// and the next chunks of the snapshots being sent. On a follower it also holds the leader's snapshot being received.
import WireProtocol

/// Durability plus replication. Loop-owned.
@MainActor
final class ClusterLog: MutationLog {
    var durability: Durability?
    let source: ReplicationSource
    /// On a follower: the leader's snapshot being received for a bootstrap (SnapshotReceiver.swift).
    var incomingSnapshot: SnapshotReceiver?

    init(source: ReplicationSource) {
        self.source = source
    }

    func committed(seq: UInt64, method: String, params: JSONValue?) {
        self.durability?.committed(seq: seq, method: method, params: params)
        self.source.committed(seq: seq, method: method, params: params)
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
    }
}
