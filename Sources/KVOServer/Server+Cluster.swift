// The server as a cluster member (docs/SCALING.md): joining (the status the dispatcher checks, the replication
// backlog and log, the election), and what a follower does with the lines its leader streams: a record is applied
// through the same request parsers as crash recovery (MutationRequest.replay), so subscribers are notified as for a
// local mutation, and journaled with its seq and its term (TermHistory); a record from an older term than one seen
// is refused (fencing). `onDisconnect` registrations: a follower keeps the leader's (ClusterLog); a member that leads
// runs those it inherited, once (docs/SCALING.md#presence-across-a-failover).
public import Persistence
public import UVLoop
import WireProtocol

/// A replication line a follower cannot apply.
struct ReplicationError: Error, CustomStringConvertible {
    var description: String
}

extension Server {
    /// Joins the cluster: from now on mutations are refused (1012) unless this member is the leader and can prove
    /// its lease. `recovered` (the journal records loaded at start, after the snapshot at `baseSeq`) seed the
    /// backlog a follower can resume from. `leftovers` (the `onDisconnect` registrations a crash left in the
    /// journal) run if this member leads before a leader's set replaces them.
    public func joinCluster(
        _ configuration: ClusterConfiguration, recovered: [JournalRecord], baseSeq: UInt64,
        leftovers: OnDisconnectRegistrations = OnDisconnectRegistrations()
    ) throws(UVError) {
        let context = self.core.context
        let status = ClusterStatus(configuration: configuration)
        let mutations = recovered.filter { record in
            (try? OnDisconnectRecord(method: record.method, params: record.params)).flatMap { $0 } == nil
        }
        let terms = TermHistory(directory: self.durability?.directory.path, snapshotSeq: baseSeq)
        let source = ReplicationSource(
            graph: self.graph, status: status, capacity: configuration.backlogRecords, recovered: mutations,
            baseSeq: baseSeq, terms: terms, sessions: context.sessions, clock: context.clock)
        source.shipper = SnapshotShipper(
            graph: self.graph, status: status, loop: self.loop, logger: self.logger,
            directory: self.durability?.directory.path ?? "/tmp", cpus: self.configuration.snapshotCPUs)
        let log = ClusterLog(source: source, terms: terms, status: status)
        // With sync replicas, responses of mutations after this seq wait for followers' acks.
        if configuration.syncReplicas > 0 { context.sessions.release(upTo: self.graph.seq) }
        log.durability = self.durability
        log.adopt(leftovers)
        self.clusterLog = log
        context.mutationLog = log
        context.cluster = status
        context.replication = source
        self.recordClusterWide(status: status, source: source)
        let member = ClusterMember(configuration: configuration, server: self, status: status)
        self.clusterMember = member
        log.afterJournal = { [unowned member] in member.afterJournal() }
        try member.start()
    }

    /// This member's role, for logs and tests.
    public var clusterRole: ClusterRole? { self.core.context.cluster?.role }

    /// On a leader that can write: runs the `onDisconnect` ops it inherited (the previous leader's connections, a
    /// crash's leftovers, its sessions that ended while it could not write), each connection's as one transaction
    /// journaled and shipped like any other, as the single-node crash path does (failures logged and counted).
    func runInheritedOnDisconnect() {
        guard let log = self.clusterLog, !log.inherited.isEmpty,
            self.core.context.cluster?.acceptsWrites(now: self.loop.nowMilliseconds) == true
        else { return }
        let inherited = log.inherited
        let seq = self.graph.seq
        let failed = self.core.runOnDisconnect(ofLostConnections: inherited.lostConnections)
        self.logger.notice(
            "ran the onDisconnect ops of connections lost with the previous leader",
            metadata: [
                "connections": "\(inherited.count)", "failed": "\(failed)", "seq.before": "\(seq)",
                "seq": "\(self.graph.seq)",
            ])
    }

    /// When this member stops being the leader: closes (`not_leader`) the client sessions with `onDisconnect` ops.
    /// Their ops are not run here (ClusterLog.orphaned): the next leader runs them, since it holds them from the
    /// stream; the clients reconnect, to the new leader, and register again.
    func closeSessionsWithOnDisconnect() {
        for session in self.core.context.sessions.all where session.onDisconnectOps != nil && !session.isReplica {
            session.close(.notLeader)
        }
    }

    /// Handles one line from the leader (ReplicationLink); a thrown error ends the link.
    func handleReplicationLine(_ line: JSONObject, status: ClusterStatus) throws {
        if let id = line["id"] {
            if let error = line["error"] { throw ReplicationError(description: "the leader refused \(id): \(error)") }
            if id == "replicate", case .object(let result)? = line["result"] {
                status.isLinked = true
                // The leader's seq now, so that the lag shows at once (a bootstrap's snapshot comes after).
                if case .int(let seq)? = result["seq"], seq >= 0 { status.leaderSeq = max(status.leaderSeq, UInt64(seq)) }
                self.clusterLog?.terms.leaderEntries = Self.termEntries(result["terms"])
                self.logger.info(
                    "replicating", metadata: ["cluster.leader": "\(status.leaderAddress ?? "?")",
                        "cluster.term": "\(result["term"] ?? .null)", "leader.seq": "\(result["seq"] ?? .null)",
                        "fromSeq": "\(result["fromSeq"] ?? .null)", "snapshot": "\(result["snapshot"] ?? .null)"])
                self.requestRecordingOfRecordedPaths()
            }
            return
        }
        guard case .int(let rawTerm)? = line["term"], case .int(let rawSeq)? = line["seq"], rawTerm >= 0, rawSeq >= 0
        else { throw ReplicationError(description: "a line without term and seq") }
        let term = UInt64(rawTerm)
        let seq = UInt64(rawSeq)
        guard term >= status.highestTerm else {
            throw ReplicationError(description: "fencing: a record of term \(term), but term \(status.highestTerm) was seen")
        }
        status.observe(term: term)
        status.leaderSeq = max(status.leaderSeq, seq)
        if line["snapshotChunk"] != nil {
            try self.receiveSnapshotChunk(line, seq: seq)  // SnapshotReceiver.swift
            return
        }
        if case .string(let path)? = line["record"] { return try self.recordReplicated(path) }
        if let items = line["registrations"] {
            do {
                self.clusterLog?.replicated(all: try OnDisconnectRegistrations(json: items))
            } catch {
                throw ReplicationError(description: "a registrations line: \(error.message)")
            }
            self.noteRegistrationNumber(line, term: term)
            return
        }
        guard case .string(let method)? = line["method"] else { return }  // a heartbeat
        let change: OnDisconnectRecord?
        do {
            change = try OnDisconnectRecord(method: method, params: line["params"])
        } catch {
            throw ReplicationError(description: "a \(method) record: \(error.message)")
        }
        if let change {
            self.clusterLog?.replicated(change)  // takes no seq: where it comes in the stream is what counts
            self.noteRegistrationNumber(line, term: term)
            return
        }
        var recordTerm = term
        if case .int(let raw)? = line["recordTerm"], raw >= 0, raw <= rawTerm { recordTerm = UInt64(raw) }
        try self.applyReplicated(seq: seq, method: method, params: line["params"], term: recordTerm)
    }

    /// The number of the leader's registration change a line carries (`registration`), acknowledged once journaled
    /// (`--sync-replicas` holds the `onDisconnect` response until then).
    private func noteRegistrationNumber(_ line: JSONObject, term: UInt64) {
        if case .int(let number)? = line["registration"], number >= 0 {
            self.clusterLog?.leaderRegistration = (term, UInt64(number))
        }
    }

    /// Before a snapshot bootstrap: the leader's term history (from the `replicate` result), cut at the snapshot's
    /// seq, becomes this member's at its next start if that start loads the snapshot (TermHistory).
    func prepareTermsForBootstrap(snapshotSeq: UInt64) {
        guard let terms = self.clusterLog?.terms else { return }
        terms.prepareBootstrap(leaderEntries: terms.leaderEntries ?? [], seq: snapshotSeq)
    }

    /// `[[term, firstSeq], …]` from a `replicate` result; nil when absent or malformed.
    private static func termEntries(_ value: JSONValue?) -> [(term: UInt64, firstSeq: UInt64)]? {
        guard case .array(let items)? = value else { return nil }
        var entries: [(term: UInt64, firstSeq: UInt64)] = []
        for item in items {
            guard case .array(let pair) = item, pair.count == 2, case .int(let term) = pair[0],
                case .int(let firstSeq) = pair[1], term >= 0, firstSeq >= 0
            else { return nil }
            entries.append((UInt64(term), UInt64(firstSeq)))
        }
        return entries
    }

    /// Applies one replicated mutation at `seq`, written by `term` (skipped when already applied), and journals it.
    func applyReplicated(seq: UInt64, method: String, params: JSONValue?, term: UInt64) throws {
        let graph = self.graph
        guard seq > graph.seq else { return }
        guard seq == graph.seq + 1 else {
            throw ReplicationError(description: "a gap: record seq \(seq) after applied seq \(graph.seq)")
        }
        do {
            try MutationRequest.replay(method: method, params: params, into: graph)
        } catch {
            throw ReplicationError(description: "record seq \(seq) (\(method)) does not apply: \(error)")
        }
        guard graph.seq == seq else {
            throw ReplicationError(description: "record \(method) applied as seq \(graph.seq), shipped as \(seq)")
        }
        self.core.context.stats.mutations += 1
        self.clusterLog?.replicatedTerm = term
        self.core.context.mutationLog?.committed(seq: seq, method: method, params: params)
        self.clusterLog?.replicatedTerm = nil
    }
}
