// `stats`: the server's figures over the protocol (Protocol/methods.md#stats), the same snapshot the metrics
// endpoint renders (StatsSnapshot.swift); in a cluster, also this member's part (the metrics endpoint's
// kvod_cluster_* figures, ClusterMetrics.swift), which the web inspector charts per member.
import WireProtocol

extension Dispatcher {
    func stats(_ request: RPCRequest, on session: Session) throws {
        try Params(request.params, names: [], method: "stats").rejectUnknown()
        var json = self.context.statsSnapshot().json
        if let cluster = self.context.cluster, case .object(var object) = json {
            object["cluster"] = self.clusterFigures(cluster)
            json = .object(object)
        }
        self.writeResult { JSONWriter.append(json, to: &$0) }
    }

    /// `{"role", "term", "advertise", "leader", "appliedSeq", "leaderSeq", "lag", "writable", "followers"}`: as
    /// `hello` says it, plus on a leader each streaming follower (its remote address) and how far behind it is.
    private func clusterFigures(_ cluster: ClusterStatus) -> JSONValue {
        let applied = self.context.graph.seq
        let leaderSeq = cluster.role == .leader ? applied : max(cluster.leaderSeq, applied)
        let followers = cluster.role == .leader ? self.context.replication?.progress.followers ?? [] : []
        let lag: UInt64 =
            switch cluster.role {
            case .leader: followers.lazy.map(\.lag).max() ?? 0
            case .follower, .candidate: leaderSeq - applied
            }
        var object = JSONObject()
        object["role"] = .string(cluster.role.rawValue)
        object["term"] = .int(Int64(clamping: cluster.term))
        object["advertise"] = .string(cluster.configuration.advertise)
        object["leader"] = cluster.leaderAddress.map(JSONValue.string) ?? .null
        object["appliedSeq"] = .int(Int64(clamping: applied))
        object["leaderSeq"] = .int(Int64(clamping: leaderSeq))
        object["lag"] = .int(Int64(clamping: lag))
        object["writable"] = .bool(cluster.acceptsWrites(now: self.context.clock.nowMilliseconds))
        object["followers"] = .array(
            followers.map { .object(["address": .string($0.address), "lag": .int(Int64(clamping: $0.lag))]) })
        return .object(object)
    }
}
