// The cluster's figures on the metrics endpoint (docs/CONFIGURATION.md#metrics, docs/SCALING.md#observability): the
// member's role, term, applied seq and replication lag; on a leader, its followers and how far behind each is as the
// leader sees it (FollowerProgress), the snapshots it sent to bootstrap followers, and the onDisconnect registrations
// it holds (docs/SCALING.md#presence-across-a-failover).

/// How far behind each streaming follower is, as a leader sees it: the leader's seq minus the seq the follower last
/// acknowledged (followers ack after each journal write and each heartbeat, Protocol/methods.md#replicate), sampled
/// at every 250 ms heartbeat. Before a follower's first ack: the mutations committed since its session last had
/// nothing queued. Loop-owned.
@MainActor
final class FollowerProgress {
    /// The streaming followers at the last sample: their remote address and lag, in session order.
    private(set) var followers: [(address: String, lag: UInt64)] = []
    /// Per session id: the leader's seq when the session last had nothing queued.
    private var drainedAt: [Int: UInt64] = [:]

    /// Samples `sessions` at the leader's `seq` (before the heartbeat is queued on them); `acknowledged` gives the
    /// seq a follower acknowledged, when it did.
    func sample(_ sessions: [Session], seq: UInt64, acknowledged: (Session) -> UInt64?) {
        var drainedAt: [Int: UInt64] = [:]
        var followers: [(address: String, lag: UInt64)] = []
        for session in sessions where session.closeReason == nil {
            let drained = session.pendingOutputBytes == 0 ? seq : min(seq, self.drainedAt[session.id] ?? seq)
            drainedAt[session.id] = drained
            let reached = acknowledged(session).map { min($0, seq) } ?? drained
            followers.append((session.remoteAddress, seq - reached))
        }
        self.drainedAt = drainedAt
        self.followers = followers
    }

    /// The largest lag (0 without followers).
    var maxLag: UInt64 { self.followers.lazy.map(\.lag).max() ?? 0 }
}

extension ClusterStatus {
    /// The cluster part of the Prometheus text, for a member at `appliedSeq` with `source` (its backlog, followers
    /// and bootstraps).
    func prometheusText(appliedSeq: UInt64, source: ReplicationSource?, now: UInt64) -> String {
        var text = ""
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: UInt64)]) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for (labels, value) in samples { text += "\(name)\(labels) \(value)\n" }
        }
        let leaderSeq = self.role == .leader ? appliedSeq : max(self.leaderSeq, appliedSeq)
        let lag: UInt64 =
            switch self.role {
            case .leader: source?.progress.maxLag ?? 0
            case .follower, .candidate: leaderSeq - appliedSeq
            }
        metric(
            "kvod_cluster_role", "gauge", "1 for this member's role (leader, follower, candidate), 0 for the others.",
            [ClusterRole.leader, .follower, .candidate].map { ("{role=\"\($0.rawValue)\"}", $0 == self.role ? 1 : 0) })
        metric(
            "kvod_cluster_term", "gauge", "The current leader's term (the etcd revision it won at).", [("", self.term)])
        metric(
            "kvod_cluster_writable", "gauge", "1 when this member is the leader and its lease is proven.",
            [("", self.acceptsWrites(now: now) ? 1 : 0)])
        metric("kvod_cluster_applied_seq", "gauge", "The seq of the last mutation applied here.", [("", appliedSeq)])
        metric(
            "kvod_cluster_leader_seq", "gauge", "The leader's seq (on a follower: as last heard from it).",
            [("", leaderSeq)])
        metric(
            "kvod_cluster_replication_lag", "gauge",
            "Mutations behind: on a follower the leader's seq minus the applied seq; on a leader the largest "
                + "kvod_cluster_follower_lag.", [("", lag)])
        metric(
            "kvod_cluster_linked", "gauge", "1 when this follower's replication link to the leader is streaming.",
            [("", self.role == .follower && self.isLinked ? 1 : 0)])
        metric(
            "kvod_cluster_promotion_waiting", "gauge",
            "1 when this member may not lead although no member leads (--sync-replicas: it may lack acknowledged "
                + "writes; the log and hello's promotionWait say why).",
            [("", self.role != .leader && self.promotionWait != nil ? 1 : 0)])
        metric(
            "kvod_cluster_sync_set_followers", "gauge",
            "On a leader with --sync-replicas: the followers of the sync set in etcd, whose acks count.",
            [("", UInt64(self.role == .leader ? source?.syncSet.confirmed.count ?? 0 : 0))])
        let followers = self.role == .leader ? source?.progress.followers ?? [] : []
        metric(
            "kvod_cluster_followers", "gauge", "Followers replicating from this leader, bootstrapping ones included.",
            [("", UInt64(self.role == .leader ? source?.replicaCount ?? 0 : 0))])
        metric(
            "kvod_cluster_follower_lag", "gauge",
            "On a leader, per streaming follower (by remote address): the leader's seq minus the seq it last "
                + "acknowledged.",
            followers.map { ("{follower=\"\(StatsSnapshot.escapeLabel($0.address))\"}", $0.lag) })
        metric(
            "kvod_cluster_snapshots_sent_total", "counter", "Snapshots sent whole to bootstrap followers.",
            [("", UInt64(source?.shipper?.shippedCount ?? 0))])
        metric(
            "kvod_cluster_ondisconnect_registrations", "gauge",
            "Live onDisconnect registrations held: on a leader its connections', on a follower the leader's.",
            [("", UInt64(source?.registrations().count ?? 0))])
        return text
    }
}
