// The cluster's methods and members (docs/SCALING.md, Protocol/methods.md#replicate): `replicate`, which turns a
// session into a follower's replication link, and the role members of `hello`'s result. Mutations are refused with
// 1012 in Dispatcher.call.
import WireProtocol

extension Dispatcher {
    /// `replicate {fromSeq, term}`: on the leader, answers `{term, seq, fromSeq, snapshot}` and then streams, on
    /// this session, a snapshot when the follower is behind the backlog (`snapshot: true`), then every mutation
    /// after `fromSeq` as JSON lines `{seq, term, method, params}`, and a `{term, seq}` heartbeat every 250 ms.
    /// Elsewhere, or when the follower has seen a newer term than the leader's, 1012.
    func replicate(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["fromSeq", "term"], method: "replicate")
        try params.rejectUnknown()
        guard case .int(let fromSeq)? = params["fromSeq"], fromSeq >= 0 else {
            throw RPCError.badParams("replicate: 'fromSeq' must be an integer of at least 0")
        }
        let followerTerm: Int64
        switch params["term"] {
        case nil, .null?: followerTerm = 0
        case .int(let term)? where term >= 0: followerTerm = term
        default: throw RPCError.badParams("replicate: 'term' must be an integer of at least 0")
        }
        guard let cluster = self.context.cluster, let source = self.context.replication else {
            throw RPCError(.notLeader, "not the leader", data: .object(["reason": "not in a cluster"]))
        }
        if let refusal = cluster.mutationRefusal(now: self.context.clock.nowMilliseconds) { throw refusal }
        guard UInt64(followerTerm) <= cluster.term else {
            throw RPCError(
                .notLeader, "not the leader",
                data: .object(["reason": "stale term", "term": .int(Int64(cluster.term))]))
        }
        let from = UInt64(fromSeq)
        let resumes = source.canResume(from: from)
        source.attach(session, fromSeq: resumes ? from : nil)
        session.isReplica = true
        self.context.logger.info(
            "follower attached",
            metadata: ["connection.id": "\(session.id)", "connection.remote": "\(session.remoteAddress)",
                "fromSeq": "\(from)", "seq": "\(self.context.graph.seq)", "snapshot": "\(!resumes)"])
        let result: JSONObject = [
            "term": .int(Int64(cluster.term)), "seq": .int(Int64(self.context.graph.seq)), "fromSeq": .int(fromSeq),
            "snapshot": .bool(!resumes),
        ]
        self.writeResult { JSONWriter.append(.object(result), to: &$0) }
    }

    /// `,"role":…,"term":…,"appliedSeq":…` (and `"leader"` when known) for `hello`.
    func appendClusterMembers(_ cluster: ClusterStatus, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #","role":"#.utf8)
        JSONWriter.appendString(cluster.role.rawValue, to: &bytes)
        bytes.append(contentsOf: #","term":"#.utf8)
        JSONWriter.appendInt(Int64(cluster.term), to: &bytes)
        bytes.append(contentsOf: #","appliedSeq":"#.utf8)
        JSONWriter.appendInt(Int64(self.context.graph.seq), to: &bytes)
        if let leader = cluster.leaderAddress {
            bytes.append(contentsOf: #","leader":"#.utf8)
            JSONWriter.appendString(leader, to: &bytes)
        }
        if cluster.role == .follower {
            bytes.append(contentsOf: #","leaderSeq":"#.utf8)
            JSONWriter.appendInt(Int64(max(cluster.leaderSeq, self.context.graph.seq)), to: &bytes)
        }
        bytes.append(contentsOf: #","writable":"#.utf8)
        bytes.append(
            contentsOf: (cluster.acceptsWrites(now: self.context.clock.nowMilliseconds) ? "true" : "false").utf8)
    }
}
