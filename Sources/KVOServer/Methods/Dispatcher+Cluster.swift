// The cluster's methods and members (docs/SCALING.md, Protocol/methods.md#replicate): `replicate`, which turns a
// session into a follower's replication link, `ack` and `record` on such a link, and the role members of `hello`'s
// result, and the 1010 a leader answers a `since` beyond its seq. Mutations are refused with 1012 in Dispatcher.call.
import ObjectGraph
import WireProtocol

extension Dispatcher {
    /// `replicate {fromSeq, term, lastTerm}`: on the leader, answers `{term, seq, fromSeq, snapshot, terms}` and
    /// then streams, on this session, a snapshot when the follower cannot resume (`snapshot: true`: it is behind the
    /// backlog, ahead of the leader, or its record at `fromSeq` is from another term than the leader's there: a
    /// divergent tail), then every mutation after `fromSeq` as JSON lines `{seq, term, recordTerm, method, params}`,
    /// and a `{term, seq}` heartbeat every 250 ms. Elsewhere, or when the follower has seen a newer term than the
    /// leader's, 1012.
    func replicate(_ request: RPCRequest, on session: Session) throws {
        let params = Params(request.params, names: ["fromSeq", "term", "lastTerm"], method: "replicate")
        try params.rejectUnknown()
        guard case .int(let fromSeq)? = params["fromSeq"], fromSeq >= 0 else {
            throw RPCError.badParams("replicate: 'fromSeq' must be an integer of at least 0")
        }
        let followerTerm = try Self.term(params["term"], name: "term") ?? 0
        let lastTerm = try Self.term(params["lastTerm"], name: "lastTerm")
        guard let cluster = self.context.cluster, let source = self.context.replication else {
            throw RPCError(.notLeader, "not the leader", data: .object(["reason": "not in a cluster"]))
        }
        if let refusal = cluster.leadershipRefusal(now: self.context.clock.nowMilliseconds) { throw refusal }
        guard followerTerm <= cluster.term else {
            throw RPCError(
                .notLeader, "not the leader",
                data: .object(["reason": "stale term", "term": .int(Int64(cluster.term))]))
        }
        let from = UInt64(fromSeq)
        // Same term at fromSeq: the same records up to it (TermHistory). Without `lastTerm` (an older follower):
        // resumed as before.
        let resumes = source.canResume(from: from) && (lastTerm.map { $0 == source.terms.term(at: from) } ?? true)
        source.attach(session, fromSeq: resumes ? from : nil)
        session.isReplica = true
        self.context.logger.info(
            "follower attached",
            metadata: ["connection.id": "\(session.id)", "connection.remote": "\(session.remoteAddress)",
                "fromSeq": "\(from)", "lastTerm": "\(lastTerm.map { "\($0)" } ?? "none")",
                "seq": "\(self.context.graph.seq)", "snapshot": "\(!resumes)"])
        let terms = source.terms.json.map { JSONValue.array($0.map { .int(Int64($0)) }) }
        let result: JSONObject = [
            "term": .int(Int64(cluster.term)), "seq": .int(Int64(self.context.graph.seq)), "fromSeq": .int(fromSeq),
            "snapshot": .bool(!resumes), "terms": .array(terms),
        ]
        self.writeResult { JSONWriter.append(.object(result), to: &$0) }
    }

    /// `ack {seq, registration}` (a notification, on a replication link only): the follower has every record up to
    /// `seq` in its journal, and every `onDisconnect` registration change up to number `registration` (optional);
    /// the leader releases the responses held for `--sync-replicas`.
    func acknowledge(_ request: RPCRequest, on session: Session) throws {
        guard session.isReplica, let source = self.context.replication else {
            throw RPCError.badParams("ack: only on a replication link")
        }
        guard case .object(let params)? = request.params, case .int(let seq)? = params["seq"], seq >= 0 else {
            throw RPCError.badParams("ack: 'seq' must be an integer of at least 0")
        }
        var registration: UInt64?
        if case .int(let number)? = params["registration"], number >= 0 { registration = UInt64(number) }
        source.acknowledged(UInt64(seq), registration: registration, by: session)
    }

    /// `record {path}` (a notification, on a replication link only): the follower started recording `path`
    /// (Cluster/RecordedPaths.swift); the leader starts too, unless it records it already, and announces it to every
    /// follower with a `{term, seq, record}` line at its seq.
    func recordPath(_ request: RPCRequest, on session: Session) throws {
        guard session.isReplica, let source = self.context.replication else {
            throw RPCError.badParams("record: only on a replication link")
        }
        let params = Params(request.params, names: ["path"], method: "record")
        try params.rejectUnknown()
        let path = try self.keyPath(try params.string("path"))
        if self.context.subscriptions.history.record(path) { source.announceRecording(path) }
    }

    private static func term(_ value: JSONValue?, name: String) throws -> UInt64? {
        switch value {
        case nil, .null?: return nil
        case .int(let term)? where term >= 0: return UInt64(term)
        default: throw RPCError.badParams("replicate: '\(name)' must be an integer of at least 0")
        }
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
            // Until the leader answered `replicate`, leaderSeq is only what this member knew before: no lag to show.
            bytes.append(contentsOf: #","linked":"#.utf8)
            bytes.append(contentsOf: (cluster.isLinked ? "true" : "false").utf8)
        }
        bytes.append(contentsOf: #","writable":"#.utf8)
        bytes.append(
            contentsOf: (cluster.acceptsWrites(now: self.context.clock.nowMilliseconds) ? "true" : "false").utf8)
    }
}
