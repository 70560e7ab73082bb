// The leader's side of replication: the backlog of recent mutations (what a reconnecting follower resumes from), the
// replication sessions (`replicate`, Protocol/methods.md#replicate) and what is sent on them: a catch-up from the
// backlog (or a snapshot when the follower is behind it), each committed mutation as it is committed, and a
// heartbeat every 250 ms with the leader's seq. Records are JSON lines {seq, term, method, params}.
import ObjectGraph
import Persistence
import WireProtocol

/// The mutations sent to followers. Loop-owned.
@MainActor
final class ReplicationSource {
    private let graph: Graph
    private let status: ClusterStatus
    private let capacity: Int
    /// The backlog: mutations `baseSeq + 1 ... baseSeq + records.count`, oldest first.
    private var records: [JournalRecord] = []
    private(set) var baseSeq: UInt64
    /// Streaming followers, and those waiting for their catch-up (sent at the turn's flush, after their response).
    private var replicas: [Session] = []
    private var pending: [(session: Session, fromSeq: UInt64?)] = []

    init(graph: Graph, status: ClusterStatus, capacity: Int, recovered: [JournalRecord], baseSeq: UInt64) {
        self.graph = graph
        self.status = status
        self.capacity = max(1, capacity)
        self.baseSeq = baseSeq
        for record in recovered where record.seq == self.baseSeq + UInt64(self.records.count) + 1 {
            self.records.append(record)
        }
        if self.baseSeq + UInt64(self.records.count) != graph.seq {
            // Only a contiguous run up to the graph's seq can be resumed from.
            self.records.removeAll()
            self.baseSeq = graph.seq
        }
        self.trim()
    }

    /// Followers streaming or about to.
    var replicaCount: Int { self.replicas.count + self.pending.count }

    /// Whether a follower at `fromSeq` can resume from the backlog (else it needs a snapshot).
    func canResume(from fromSeq: UInt64) -> Bool {
        fromSeq >= self.baseSeq && fromSeq <= self.graph.seq
    }

    /// Adds a follower: from the backlog after `fromSeq`, or (nil) from a snapshot first.
    func attach(_ session: Session, fromSeq: UInt64?) {
        self.pending.append((session, fromSeq))
    }

    /// One committed mutation (leader or follower alike: a follower that becomes leader can serve from its backlog).
    func committed(seq: UInt64, method: String, params: JSONValue?) {
        let record = JournalRecord(seq: seq, method: method, params: params)
        if seq == self.baseSeq + UInt64(self.records.count) + 1 {
            self.records.append(record)
        } else {
            self.records = [record]
            self.baseSeq = seq - 1
        }
        self.trim()
        guard !self.replicas.isEmpty else { return }
        var line: [UInt8] = []
        Self.append(record, term: self.status.term, to: &line)
        for session in self.replicas where session.closeReason == nil { session.enqueue(bytes: line) }
    }

    /// At the turn's flush (after the journal write): sends pending catch-ups; their responses are queued already.
    func beforeOutput() {
        guard !self.pending.isEmpty else { return }
        let pending = self.pending
        self.pending.removeAll()
        for (session, fromSeq) in pending where session.closeReason == nil {
            var output: [UInt8] = []
            var from = fromSeq ?? self.graph.seq
            if fromSeq == nil || !self.canResume(from: from) {
                from = self.graph.seq
                let bytes = BinarySnapshotCodec.encode(self.graph.makeSnapshot())
                output.append(contentsOf: #"{"snapshot":"#.utf8)
                JSONWriter.appendString(Base64.encode(bytes), to: &output)
                output.append(contentsOf: #","seq":"#.utf8)
                JSONWriter.appendInt(Int64(from), to: &output)
                output.append(contentsOf: #","term":"#.utf8)
                JSONWriter.appendInt(Int64(self.status.term), to: &output)
                output.append(contentsOf: "}\n".utf8)
            }
            let start = Int(from - self.baseSeq)
            for record in self.records[start...] { Self.append(record, term: self.status.term, to: &output) }
            session.enqueue(bytes: output)
            self.replicas.append(session)
        }
    }

    /// Every 250 ms: a heartbeat on each link (`{term, seq}`), so followers know their lag and that the link lives.
    func heartbeat() {
        self.replicas.removeAll { $0.closeReason != nil }
        guard !self.replicas.isEmpty else { return }
        var line: [UInt8] = []
        line.append(contentsOf: #"{"term":"#.utf8)
        JSONWriter.appendInt(Int64(self.status.term), to: &line)
        line.append(contentsOf: #","seq":"#.utf8)
        JSONWriter.appendInt(Int64(self.graph.seq), to: &line)
        line.append(contentsOf: "}\n".utf8)
        for session in self.replicas { session.enqueue(bytes: line) }
    }

    /// Closes every replication session (this member is no longer the leader).
    func detachAll() {
        for session in self.replicas + self.pending.map(\.session) { session.close(.notLeader) }
        self.replicas.removeAll()
        self.pending.removeAll()
    }

    private func trim() {
        let excess = self.records.count - self.capacity
        guard excess > self.capacity / 4 else { return }
        self.records.removeFirst(excess)
        self.baseSeq += UInt64(excess)
    }

    /// `{"seq":N,"term":T,"method":M,"params":P}` and a newline.
    static func append(_ record: JournalRecord, term: UInt64, to line: inout [UInt8]) {
        line.append(contentsOf: #"{"seq":"#.utf8)
        JSONWriter.appendInt(Int64(record.seq), to: &line)
        line.append(contentsOf: #","term":"#.utf8)
        JSONWriter.appendInt(Int64(term), to: &line)
        line.append(contentsOf: #","method":"#.utf8)
        JSONWriter.appendString(record.method, to: &line)
        if let params = record.params {
            line.append(contentsOf: #","params":"#.utf8)
            JSONWriter.append(params, to: &line)
        }
        line.append(contentsOf: "}\n".utf8)
    }
}
