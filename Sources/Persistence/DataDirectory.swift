// The data directory: `snapshot.json` (the graph at some seq) and `journal.log` (the mutations after it), locked
// against a second kvod. Loading reads the snapshot and hands back the journal records to replay.
public import ObjectGraph

/// A locked data directory with its snapshot and journal.
public final class DataDirectory {
    public let path: String
    /// The journal, open for appending.
    public let journal: Journal
    private let lock: FileHandle

    /// What was found on disk.
    public struct Contents: Sendable {
        /// The last snapshot, if any.
        public var snapshot: GraphSnapshot?
        /// The journal records to replay after it (records at or before the snapshot's seq are skipped).
        public var records: [JournalRecord]
        /// Bytes of a torn last record that were cut off.
        public var tornBytes: Int
    }

    /// Opens (creating) and locks the directory, and reads what it holds.
    public static func open(path: String) throws(PersistenceError) -> (DataDirectory, Contents) {
        try Files.makeDirectory(path)
        let lock = try FileHandle.openOrCreate(path + "/kvod.lock")
        try lock.lockExclusively()
        var snapshot: GraphSnapshot?
        if let bytes = try Files.contents(path + "/snapshot.json") {
            do {
                snapshot = try SnapshotCodec.decode(bytes)
            } catch {
                throw PersistenceError("\(path)/snapshot.json: \(error.message)")
            }
        }
        let (journal, scan) = try Journal.open(path: path + "/journal.log")
        let after = snapshot?.seq ?? 0
        let records = scan.records.filter { $0.seq > after }
        return (DataDirectory(path: path, journal: journal, lock: lock), Contents(snapshot: snapshot, records: records, tornBytes: scan.tornBytes))
    }

    private init(path: String, journal: Journal, lock: FileHandle) {
        self.path = path
        self.journal = journal
        self.lock = lock
    }

    /// Writes `snapshot` atomically, then empties the journal, whose records it now contains.
    public func writeSnapshot(_ snapshot: GraphSnapshot) throws(PersistenceError) {
        try self.journal.write()
        try self.journal.sync()
        try Files.replaceAtomically(self.path + "/snapshot.json", with: SnapshotCodec.encode(snapshot), directory: self.path)
        try self.journal.reset()
    }
}
