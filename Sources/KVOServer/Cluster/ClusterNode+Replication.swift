// What a follower does with the lines its leader streams (docs/SCALING.md#design): a record is applied through the
// same request parsers as crash recovery (MutationRequest.replay), so subscribers are notified as for a local
// mutation, and journaled with its seq and its term (TermHistory); a record from an older term than one seen is
// refused (fencing). The leader's `onDisconnect` registrations are kept (ClusterLog); a snapshot chunk goes to
// SnapshotReceiver.swift, a record line to RecordedPaths.swift.
import ObjectGraph
import Persistence
import WireProtocol

/// A replication line a follower cannot apply.
struct ReplicationError: Error, CustomStringConvertible {
    var description: String
}

extension ClusterNode {
    /// Handles one line from the leader (ReplicationLink); a thrown error ends the link.
    func handleReplicationLine(_ line: JSONObject) throws {
        let message = try ReplicationMessage(fromLeader: line)
        let status = self.status
        let term: UInt64
        let seq: UInt64
        switch message {
        case .response(let id, let result, let error):
            if let error { throw ReplicationError(description: "the leader refused \(id): \(error)") }
            if id == "replicate", case .object(let result)? = result {
                status.isLinked = true
                // The leader's seq now, so that the lag shows at once (a bootstrap's snapshot comes after).
                if case .int(let seq)? = result["seq"], seq >= 0 { status.leaderSeq = max(status.leaderSeq, UInt64(seq)) }
                self.terms.leaderEntries = Self.termEntries(result["terms"])
                self.logger.info(
                    "replicating", metadata: ["cluster.leader": "\(status.leaderAddress ?? "?")",
                        "cluster.term": "\(result["term"] ?? .null)", "leader.seq": "\(result["seq"] ?? .null)",
                        "fromSeq": "\(result["fromSeq"] ?? .null)", "snapshot": "\(result["snapshot"] ?? .null)"])
                self.requestRecordingOfRecordedPaths()
            }
            return
        case .record(let lineSeq, let lineTerm, _, _, _, _), .heartbeat(let lineTerm, let lineSeq),
            .registrations(let lineTerm, let lineSeq, _, _), .recording(let lineTerm, let lineSeq, _),
            .snapshotChunk(let lineTerm, let lineSeq, _, _, _):
            (term, seq) = (lineTerm, lineSeq)
        case .hello, .replicate, .ack, .recordRequest:
            throw ReplicationError(description: "a follower's line from the leader")
        }
        guard term >= status.highestTerm else {
            throw ReplicationError(description: "fencing: a record of term \(term), but term \(status.highestTerm) was seen")
        }
        status.observe(term: term)
        status.leaderSeq = max(status.leaderSeq, seq)
        switch message {
        case .snapshotChunk(_, _, let offset, let total, let base64):
            try self.receiveSnapshotChunk(base64, offset: offset, total: total, seq: seq)  // SnapshotReceiver.swift
        case .recording(_, _, let path):
            try self.recordReplicated(path)
        case .registrations(_, _, let items, let number):
            do {
                self.log.replicated(all: try OnDisconnectRegistrations(json: items))
            } catch {
                throw ReplicationError(description: "a registrations line: \(error.message)")
            }
            self.noteRegistrationNumber(number, term: term)
        case .record(_, _, let recordTerm, let method, let params, let number):
            let change: OnDisconnectRecord?
            do {
                change = try OnDisconnectRecord(method: method, params: params)
            } catch {
                throw ReplicationError(description: "a \(method) record: \(error.message)")
            }
            if let change {
                self.log.replicated(change)  // takes no seq: where it comes in the stream is what counts
                self.noteRegistrationNumber(number, term: term)
                return
            }
            try self.applyReplicated(seq: seq, method: method, params: params, term: recordTerm)
        case .heartbeat, .response, .hello, .replicate, .ack, .recordRequest:
            break
        }
    }

    /// The number of the leader's registration change a line carries (`registration`), acknowledged once journaled
    /// (`--sync-replicas` holds the `onDisconnect` response until then).
    private func noteRegistrationNumber(_ number: UInt64?, term: UInt64) {
        if let number { self.log.leaderRegistration = (term, number) }
    }

    /// Before a snapshot bootstrap: the leader's term history (from the `replicate` result), cut at the snapshot's
    /// seq, becomes this member's at its next start if that start loads the snapshot (TermHistory).
    func prepareTermsForBootstrap(snapshotSeq: UInt64) {
        self.terms.prepareBootstrap(leaderEntries: self.terms.leaderEntries ?? [], seq: snapshotSeq)
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
        self.log.replicatedTerm = term
        self.log.committed(seq: seq, method: method, params: params)
        self.log.replicatedTerm = nil
    }
}
