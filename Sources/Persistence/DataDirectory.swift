// The data directory: the snapshot (`snapshot.kvs`, the graph at some seq; `snapshot.json` from older versions), the
// journal (`journal.log`, the mutations after it) and the journal segments rolled at a background snapshot's seq
// (`journal.<seq>.log`, kept until a snapshot covers them), locked against a second kvod. Loading reads the newest
// snapshot and hands back every record from its seq on, segments first, in seq order. A roll can carry records into
// the new journal (live `onDisconnect` registrations, which no snapshot holds). docs/DURABILITY.md has the files and
// the crash matrix.
public import ObjectGraph
#if canImport(Glibc)
import Glibc
#endif

/// A locked data directory with its snapshot and journal.
public final class DataDirectory {
    public let path: String
    /// The journal, open for appending (a new one after each roll).
    public private(set) var journal: Journal
    /// The seqs of the rolled journal segments still on disk, ascending.
    public private(set) var segments: [UInt64]
    private let lock: FileHandle

    /// A snapshot file as read from disk, decoded on demand: `restore` streams it into a graph.
    public struct SnapshotFile: Sendable {
        /// The file's path.
        public let path: String
        /// The seq the snapshot was taken at.
        public let seq: UInt64
        private let bytes: [UInt8]
        /// An older-format (JSON) snapshot, decoded when read (its seq is inside the document).
        private let legacy: GraphSnapshot?

        init(path: String, bytes: [UInt8]) throws(PersistenceError) {
            self.path = path
            if let seq = BinarySnapshotCodec.peekSeq(bytes) {
                (self.seq, self.bytes, self.legacy) = (seq, bytes, nil)
            } else {
                let snapshot = try SnapshotCodec.decode(bytes)
                (self.seq, self.bytes, self.legacy) = (snapshot.seq, [], snapshot)
            }
        }

        /// The whole snapshot as data.
        public func decode() throws(PersistenceError) -> GraphSnapshot {
            if let legacy { return legacy }
            return try BinarySnapshotCodec.decode(self.bytes)
        }

        /// The graph the snapshot holds, with `model`'s classes, built object by object.
        /// - Throws: `PersistenceError` (damage) or `SnapshotError` (a snapshot that does not fit the model).
        public func restore(model: Model) throws -> Graph {
            if let legacy { return try Graph(model: model, snapshot: legacy) }
            return try BinarySnapshotCodec.restore(self.bytes, model: model)
        }
    }

    /// What was found on disk.
    public struct Contents: Sendable {
        /// The last snapshot, if any.
        public var snapshot: SnapshotFile?
        /// The journal records from the snapshot's seq on (records before it are skipped). Those *at* its seq are
        /// either mutations the snapshot already holds or records that take no seq and were written at that seq
        /// (carried by the roll): the caller tells them apart.
        public var records: [JournalRecord]
        /// Bytes of a torn last record that were cut off.
        public var tornBytes: Int
    }

    static let snapshotFile = "snapshot.kvs"
    static let legacySnapshotFile = "snapshot.json"

    /// Opens (creating) and locks the directory, and reads what it holds. Temporary files left by a snapshot process
    /// that never finished are removed. The lock is waited for up to `lockWaitMilliseconds`, since its holder may be
    /// on its way out: a kvod restarted while the previous one is still exiting, or a process this one forked (while
    /// an earlier opening held the lock) that has not reached its `exec` yet, which closes the descriptor.
    public static func open(
        path: String, lockWaitMilliseconds: Int = 2_000
    ) throws(PersistenceError) -> (DataDirectory, Contents) {
        try Files.makeDirectory(path)
        let lock = try FileHandle.openOrCreate(path + "/kvod.lock")
        try lock.lockExclusively(waitMilliseconds: lockWaitMilliseconds)
        // A snapshot process puts its file in place and then deletes the segments it covers. It dies with its kvod,
        // but one caught between the two can finish the rename: a listed segment gone when read means the snapshot
        // changed under this read, so it starts again (the second read finds the new snapshot).
        for _ in 0..<3 {
            if let found = try Self.read(path: path) {
                return (DataDirectory(path: path, journal: found.journal, segments: found.segments, lock: lock), found.contents)
            }
        }
        throw PersistenceError("\(path): the journal segments keep changing while they are read")
    }

    /// The snapshot, the segments and the journal; nil when a listed segment vanished meanwhile.
    private static func read(path: String) throws(PersistenceError) -> (segments: [UInt64], journal: Journal, contents: Contents)? {
        let names = try Files.names(in: path)
        for name in names where name.hasPrefix("snapshot-") && name.hasSuffix(".tmp") { unlink(path + "/" + name) }
        let snapshot = try Self.findSnapshot(path: path)
        let segments = names.compactMap(Self.segmentSeq).sorted()
        let after = snapshot?.seq ?? 0
        var records: [JournalRecord] = []
        var tornBytes = 0
        for seq in segments {
            let segmentPath = Self.segmentPath(path, seq)
            guard let bytes = try Files.contents(segmentPath) else { return nil }
            let scan = try Journal.scan(bytes, path: segmentPath)
            // Only the newest segment can end torn: a roll does not wait for the disk, so a power cut before its
            // snapshot process fsynced the segment can cut its last write (never one acknowledged under `always`,
            // which fsyncs every turn). Older segments were fsynced before the next roll could happen.
            guard scan.tornBytes == 0 || seq == segments.last else {
                throw PersistenceError("\(segmentPath): the last record is damaged; refusing to load a journal with holes")
            }
            tornBytes += scan.tornBytes
            records.append(contentsOf: scan.records.lazy.filter { $0.seq >= after })
        }
        let (journal, scan) = try Journal.open(path: path + "/journal.log")
        records.append(contentsOf: scan.records.lazy.filter { $0.seq >= after })
        let contents = Contents(snapshot: snapshot, records: records, tornBytes: tornBytes + scan.tornBytes)
        return (segments, journal, contents)
    }

    /// The snapshot in `path` as it is on disk (for `kvod --dump-snapshot`), without locking or touching anything.
    public static func readSnapshot(path: String) throws(PersistenceError) -> GraphSnapshot? {
        guard let file = try Self.findSnapshot(path: path) else { return nil }
        do {
            return try file.decode()
        } catch {
            throw PersistenceError("\(file.path): \(error.message)")
        }
    }

    /// The newest snapshot file in `path` (the binary one, else an older JSON one), unread beyond its header.
    private static func findSnapshot(path: String) throws(PersistenceError) -> SnapshotFile? {
        for name in [Self.snapshotFile, Self.legacySnapshotFile] {
            let file = path + "/" + name
            guard let bytes = try Files.contents(file) else { continue }
            do {
                return try SnapshotFile(path: file, bytes: bytes)
            } catch {
                throw PersistenceError("\(file): \(error.message)")
            }
        }
        return nil
    }

    private init(path: String, journal: Journal, segments: [UInt64], lock: FileHandle) {
        self.path = path
        self.journal = journal
        self.segments = segments
        self.lock = lock
    }

    // MARK: - Journal segments

    static func segmentPath(_ directory: String, _ seq: UInt64) -> String {
        "\(directory)/journal.\(seq).log"
    }

    private static func segmentSeq(_ name: String) -> UInt64? {
        guard name.hasPrefix("journal."), name.hasSuffix(".log"), name != "journal.log" else { return nil }
        return UInt64(name.dropFirst("journal.".count).dropLast(".log".count))
    }

    /// Closes the journal at `seq` (every record in it is at or before `seq`): writes it, renames it to the segment
    /// `journal.<seq>.log`, and opens a new `journal.log` for the records after it, which starts with `carrying`
    /// (written). Nothing here waits for the disk but the directory fsync when `syncDirectory` (under `--fsync
    /// always`, so that the new journal's name is on disk before a record in it is acknowledged): the snapshot process
    /// started next fsyncs `rolledFiles(at:)` and the directory before anything else (SnapshotProcess), and
    /// `syncRoll(at:)` does the same here when there is none. `seq` must be above every segment's: a segment is never
    /// overwritten.
    public func rollJournal(at seq: UInt64, carrying: [JournalRecord] = [], syncDirectory: Bool = true) throws(PersistenceError) {
        precondition(self.segments.last.map { $0 < seq } ?? true, "a journal segment at seq \(seq) exists already")
        try self.journal.write()
        try self.journal.trimAllocation()
        let current = self.path + "/journal.log"
        let segment = Self.segmentPath(self.path, seq)
        guard rename(current, segment) == 0 else { throw PersistenceError.posix("rename", current) }
        self.segments.append(seq)
        if syncDirectory { try Files.syncDirectory(self.path) }
        self.journal = try Journal.open(path: current).0
        guard !carrying.isEmpty else { return }
        for record in carrying { self.journal.append(seq: record.seq, method: record.method, params: record.params) }
        try self.journal.write()
    }

    /// The files a roll at `seq` wrote without fsyncing them: the segment and the new journal.
    public func rolledFiles(at seq: UInt64) -> [String] {
        [Self.segmentPath(self.path, seq), self.path + "/journal.log"]
    }

    /// Makes the roll at `seq` durable in this process (when no snapshot process could be started to do it).
    public func syncRoll(at seq: UInt64) throws(PersistenceError) {
        for path in self.rolledFiles(at: seq) where Files.exists(path) {
            try FileHandle(path: path, flags: O_RDONLY).sync()
        }
        try Files.syncDirectory(self.path)
    }

    /// Appends records that take no seq to the (new or emptied) journal, and writes and fsyncs them.
    private func carry(_ records: [JournalRecord]) throws(PersistenceError) {
        guard !records.isEmpty else { return }
        for record in records { self.journal.append(seq: record.seq, method: record.method, params: record.params) }
        try self.journal.write()
        try self.journal.sync()
    }

    // MARK: - Snapshots

    /// What a background snapshot at `seq` (the newest segment's) needs to know: the files the roll left to fsync, the
    /// snapshot's name, and what it makes redundant (every segment, an older-format snapshot).
    public func snapshotPlan(at seq: UInt64) -> SnapshotProcess.Plan {
        SnapshotProcess.Plan(
            directory: self.path, rolled: self.rolledFiles(at: seq), target: self.path + "/" + Self.snapshotFile,
            covered: [self.path + "/" + Self.legacySnapshotFile]
                + self.segments.filter { $0 <= seq }.map { Self.segmentPath(self.path, $0) })
    }

    /// A background snapshot at `seq` is in place and its process deleted the segments it covers.
    public func snapshotCompleted(at seq: UInt64) {
        self.segments.removeAll { $0 <= seq }
    }

    /// Writes `snapshot` in this process, atomically, then empties the journal, whose mutations it now contains (at
    /// shutdown, when nothing mutates the graph any more), and starts it again with `carrying` (records that take no
    /// seq and that no snapshot holds). They are appended to the old journal first too, so a crash between the
    /// snapshot's rename and the reset still finds them at the snapshot's seq.
    public func writeSnapshot(_ snapshot: GraphSnapshot, carrying: [JournalRecord] = []) throws(PersistenceError) {
        try self.journal.write()
        try self.carry(carrying)
        try self.journal.sync()
        try Files.replaceAtomically(
            self.path + "/" + Self.snapshotFile, with: BinarySnapshotCodec.encodeParts(snapshot), directory: self.path)
        try self.journal.reset()
        try self.carry(carrying)
        self.removeCovered(upTo: snapshot.seq)
    }

    /// Replaces everything with `bytes` (a binary snapshot from a cluster's leader, checked by the caller): the
    /// journal and every segment go first, then the snapshot is written atomically. A crash in between leaves an
    /// older snapshot and no journal, which is consistent (the follower asks its leader again from there).
    public func replaceAll(withSnapshot bytes: [UInt8]) throws(PersistenceError) {
        try self.journal.reset()
        for segment in self.segments { unlink(Self.segmentPath(self.path, segment)) }
        self.segments.removeAll()
        try Files.syncDirectory(self.path)
        try Files.replaceAtomically(self.path + "/" + Self.snapshotFile, with: [bytes], directory: self.path)
        unlink(self.path + "/" + Self.legacySnapshotFile)
    }

    private func removeCovered(upTo seq: UInt64) {
        unlink(self.path + "/" + Self.legacySnapshotFile)
        let covered = self.segments.filter { $0 <= seq }
        for segment in covered { unlink(Self.segmentPath(self.path, segment)) }
        self.segments.removeAll { $0 <= seq }
    }
}
