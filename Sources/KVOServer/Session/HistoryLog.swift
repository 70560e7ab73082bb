// The subscription history on disk (docs/DURABILITY.md#the-history-on-disk): `history.log` in the data directory, in
// the journal's line format (CRC, JSON), so that `since` reaches back across a restart. Three kinds of record:
//   {"seq":S,"method":"record","params":{"path":P,"evicted":E}}   a recorder of P, complete for seqs after S
//                                                                   (none of its changes after E left the ring)
//   {"seq":N,"method":"change","params":{"path":P,"kind":K,"new":V,"old":V,"indexes":[…]}}   one after notification
//   {"seq":W,"method":"through"}                                    every change up to W is above this line
// The loop's flush writes the turn's records before the journal's (and fsyncs them first under `--fsync always`), so
// a change is on disk here no later than its mutation is in the journal; at a start the history is trusted up to
// the last `through` and only as far as the recovered graph goes (a mutation the journal lost takes its history
// records with it). When the log holds more than twice the ring, it is rewritten from the ring (the recorders, then
// the ring's changes, then `through`), atomically.
import ObjectGraph
import Persistence
import ValueCoding
import WireProtocol

/// The history's file. Loop-owned.
@MainActor
final class HistoryLog {
    /// What a start finds in the file.
    struct Contents {
        struct RecorderState {
            var path: String
            var since: UInt64
            var evicted: UInt64
        }
        /// The recorders, in the order they started.
        var recorders: [RecorderState] = []
        /// The changes, oldest first, each with its path.
        var changes: [(path: String, change: Change)] = []
        /// Every change up to this seq is in `changes` (or left the ring).
        var through: UInt64 = 0
        /// Records dropped from the end because the last one was torn.
        var tornBytes = 0
        /// Records in the file (all kinds).
        var recordCount = 0
    }

    static let fileName = "history.log"
    let path: String
    let directory: String
    let policy: FsyncPolicy
    private var journal: Journal
    /// The seq of the last `through` buffered.
    private var through: UInt64

    private init(journal: Journal, path: String, directory: String, policy: FsyncPolicy, through: UInt64) {
        self.journal = journal
        self.path = path
        self.directory = directory
        self.policy = policy
        self.through = through
    }

    /// Opens (creating) `history.log` in `directory` and reads it. A damaged file is not fatal: the history starts
    /// empty (`damaged` says why) and the file is started afresh.
    static func open(
        directory: String, policy: FsyncPolicy
    ) throws(PersistenceError) -> (log: HistoryLog, contents: Contents, damaged: String?) {
        let path = directory + "/" + Self.fileName
        var damaged: String?
        let opened: (Journal, JournalScan)
        do {
            opened = try Journal.open(path: path)
        } catch {
            damaged = error.description
            opened = try Journal.replace(path: path, directory: directory, with: [])
        }
        var contents = Self.read(opened.1.records)
        contents.tornBytes = opened.1.tornBytes
        contents.recordCount = opened.1.records.count
        let log = HistoryLog(journal: opened.0, path: path, directory: directory, policy: policy, through: contents.through)
        return (log, contents, damaged)
    }

    /// The records as a start sees them: recorders, changes up to the last `through`, and that seq.
    private static func read(_ records: [JournalRecord]) -> Contents {
        var contents = Contents()
        var changes: [(path: String, change: Change)] = []
        var recorders: [String: Int] = [:]
        for record in records {
            switch record.method {
            case "record":
                guard case .string(let path)? = record.params?["path"] else { continue }
                let evicted = record.params?["evicted"]?.intValue.map { UInt64(max(0, $0)) } ?? 0
                let state = Contents.RecorderState(path: path, since: record.seq, evicted: evicted)
                if let index = recorders[path] {
                    contents.recorders[index] = state
                } else {
                    recorders[path] = contents.recorders.count
                    contents.recorders.append(state)
                }
            case "change":
                guard let params = record.params, case .string(let path)? = params["path"],
                    case .string(let kindName)? = params["kind"], let kind = ChangeKind(rawValue: kindName)
                else { continue }
                let indexes = params["indexes"]?.arrayValue?.compactMap { $0.intValue.map(Int.init) }
                let change = Change(
                    kind: kind, seq: record.seq, new: params["new"].map(Self.value(_:)),
                    old: params["old"].map(Self.value(_:)), indexes: indexes)
                changes.append((path, change))
            case "through":
                contents.through = max(contents.through, record.seq)
                contents.changes += changes
                changes.removeAll()
            default:
                continue
            }
        }
        // Changes after the last `through` belong to a turn whose flush did not finish: not trusted.
        return contents
    }

    /// A value as it was recorded: records keep their `$id` (Value(json:) drops it for input).
    private static func value(_ json: JSONValue) -> Value {
        switch json {
        case .object(let object):
            if case .int(let id)? = object["$ref"], object.count == 1 { return .object(ObjectID(truncatingIfNeeded: id)) }
            var record = Record()
            if case .int(let id)? = object["$id"] { record.id = ObjectID(truncatingIfNeeded: id) }
            for (key, member) in object.members where key != "$id" {
                record.keys.append(key)
                record.values.append(Self.value(member))
            }
            return .record(record)
        case .array(let elements):
            return .array(elements.map(Self.value(_:)))
        default:
            return Value(json: json)
        }
    }

    // MARK: - Appending (buffered until `flush`)

    /// A recorder of `path` complete for seqs after `since`.
    func recorder(path: String, since: UInt64, evicted: UInt64) {
        self.journal.append(seq: since, method: "record", params: ["path": .string(path), "evicted": .int(Int64(evicted))])
    }

    /// One after notification of `path`.
    func change(pathMember: [UInt8], _ change: Change) {
        self.journal.append(seq: change.seq, method: "change") { buffer in
            Self.appendParams(pathMember: pathMember, change, to: &buffer)
        }
    }

    /// `{"path":"P"`: the start of a `change` record's params, encoded once per recorder.
    nonisolated static func pathMember(_ path: String) -> [UInt8] {
        var bytes = Array(#"{"path":"#.utf8)
        JSONWriter.appendString(path, to: &bytes)
        return bytes
    }

    /// A `change` record's params, written straight as JSON text into the log's buffer (no tree, no temporary: this
    /// runs for every recorded change).
    private static func appendParams(pathMember: [UInt8], _ change: Change, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: pathMember)
        buffer.append(contentsOf: #","kind":""#.utf8)
        buffer.append(contentsOf: change.kind.rawValue.utf8)
        buffer.append(UInt8(ascii: "\""))
        if let new = change.new {
            buffer.append(contentsOf: #","new":"#.utf8)
            new.appendJSON(to: &buffer)
        }
        if let old = change.old {
            buffer.append(contentsOf: #","old":"#.utf8)
            old.appendJSON(to: &buffer)
        }
        if let indexes = change.indexes {
            buffer.append(contentsOf: #","indexes":["#.utf8)
            for (position, index) in indexes.enumerated() {
                if position > 0 { buffer.append(UInt8(ascii: ",")) }
                JSONWriter.appendInt(Int64(index), to: &buffer)
            }
            buffer.append(UInt8(ascii: "]"))
        }
        buffer.append(UInt8(ascii: "}"))
    }

    /// Whether records wait to be written.
    var hasPending: Bool { self.journal.hasPending }

    /// Records in the file and buffered: what compaction compares with the ring.
    var recordCount: Int { self.journal.recordCount }

    /// Before the journal's own write: marks every change up to `seq` as recorded, writes, and fsyncs under
    /// `always` (so the history is on disk before the mutations it describes).
    func flush(through seq: UInt64) throws(PersistenceError) {
        if seq > self.through {
            self.through = seq
            self.journal.append(seq: seq, method: "through", params: nil)
        }
        guard self.journal.hasPending else { return }
        try self.journal.write()
        if self.policy == .always { try self.journal.sync() }
    }

    /// Deletes the file (the directory fsynced): the next start finds no history.
    func remove() throws(PersistenceError) {
        try Journal.remove(path: self.path, directory: self.directory)
    }

    /// Rewrites the file as `recorders`, then `changes`, then `through` (atomically).
    func rewrite(
        recorders: [Contents.RecorderState], changes: [(path: String, change: Change)], through: UInt64
    ) throws(PersistenceError) {
        try self.journal.write()
        var lines: [UInt8] = []
        var params: [UInt8] = []
        for state in recorders {
            params.removeAll(keepingCapacity: true)
            params.append(contentsOf: #"{"path":"#.utf8)
            JSONWriter.appendString(state.path, to: &params)
            params.append(contentsOf: #","evicted":"#.utf8)
            JSONWriter.appendInt(Int64(state.evicted), to: &params)
            params.append(UInt8(ascii: "}"))
            Journal.encodeLine(seq: state.since, method: "record", encodedParams: params, to: &lines)
        }
        for (path, change) in changes {
            params.removeAll(keepingCapacity: true)
            Self.appendParams(pathMember: Self.pathMember(path), change, to: &params)
            Journal.encodeLine(seq: change.seq, method: "change", encodedParams: params, to: &lines)
        }
        Journal.encodeLine(seq: through, method: "through", encodedParams: Array("{}".utf8), to: &lines)
        self.journal = try Journal.replace(
            path: self.path, directory: self.directory, withLines: lines, count: recorders.count + changes.count + 1)
        self.through = through
    }
}
