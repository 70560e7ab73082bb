// The append-only journal of acknowledged mutations: one record per line,
//   <crc32 as 8 hex digits> <JSON: {"seq":N,"method":M,"params":P}>\n
// Records are buffered during a loop turn and written (and, under `always`, fsynced) before any response of that
// turn reaches a socket (group commit). The file is extended ahead of its records with zero bytes, so that an fsync
// after an append (`fdatasync`) need not also commit a new file size. On open the journal is scanned: the zero tail is
// free room; a bad last record, or one with a zero byte in it, is a torn write (power loss) and is cut off, with
// everything after it; a bad record anywhere else is corruption and refuses to load. A record that takes no seq (an
// `onDisconnect` registration, docs/DURABILITY.md) carries the seq current when it was written, so seqs never go
// down but may repeat, and may be 0 (before the first mutation).
public import WireProtocol
#if canImport(Glibc)
import Glibc
#endif

/// When the journal is fsynced (Redis's appendfsync).
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// Before any response of a loop turn is sent: no acknowledged mutation is lost even on power loss.
    case always
    /// Once a second: a power loss loses at most about a second; a crash of kvod alone loses nothing.
    case everysec
    /// Never explicitly; the OS writes when it likes. A crash of kvod alone loses nothing.
    case no
}

/// One mutation as journaled, or a record that takes no seq (at the seq current when it was written).
public struct JournalRecord: Sendable, Equatable {
    public var seq: UInt64
    public var method: String
    public var params: JSONValue?

    public init(seq: UInt64, method: String, params: JSONValue?) {
        self.seq = seq
        self.method = method
        self.params = params
    }
}

/// What scanning a journal found.
public struct JournalScan: Sendable {
    public var records: [JournalRecord]
    /// Bytes dropped from the end because the last record was torn (0 when the tail was clean); the zero bytes of the
    /// room allocated ahead are not counted.
    public var tornBytes: Int
    /// Where the records end: the next record goes here.
    public var end: Int
}

/// The journal file. Loop-owned by the server.
public final class Journal {
    private let file: FileHandle
    /// Unchecked exclusivity: loop-owned and never re-entered (an append finishes before the next begins); the
    /// checks cost about 190 instructions per journaled mutation (callgrind).
    @exclusivity(unchecked) private var pending: [UInt8] = []
    /// Bytes of records in the file: where the next write goes (the file's offset).
    private var size: Int
    /// The file is allocated and sized up to here, zero bytes past `size` (`fallocate`; `Int.max` where that is not
    /// supported, and the file grows with each write).
    private var allocatedThrough = 0
    /// How far ahead of the records the blocks are allocated. Appends then only fill blocks that exist: on ext4 an
    /// append that allocates leaves the writeback to convert and merge extents under the inode's block-map lock, which
    /// the loop's next append waits for; on ext4 without a journal and with `discard`, that conversion can free an
    /// extent block and wait for its discard (the loop's `write` blocked 5–32 ms, a few times per 10 s of load, while a
    /// snapshot was written; none with the blocks allocated ahead). The step is as large as the journal already is,
    /// from `minimumAllocationStep` to `allocationStep`, so a fresh or small journal reserves little.
    static let allocationStep = 64 << 20
    static let minimumAllocationStep = 1 << 20
    /// Records written since the last fsync.
    public private(set) var isDirty = false
    /// Records in the file (since the last snapshot).
    public private(set) var recordCount: Int

    /// Opens (creating) the journal at `path`, scans it, and cuts off a torn tail and the room allocated ahead (then
    /// allocates it again).
    /// - Throws: corruption before the tail, or I/O errors.
    public static func open(path: String) throws(PersistenceError) -> (Journal, JournalScan) {
        let bytes = try Files.contents(path) ?? []
        let scan = try Self.scan(bytes, path: path)
        let file = try FileHandle(path: path, flags: O_WRONLY | O_CREAT)
        try file.truncate(to: scan.end)
        if scan.tornBytes > 0 { try file.syncData() }
        let journal = Journal(file: file, recordCount: scan.records.count, size: scan.end)
        journal.allocateAhead(of: journal.size)
        return (journal, scan)
    }

    private init(file: FileHandle, recordCount: Int, size: Int) {
        self.file = file
        self.recordCount = recordCount
        self.size = size
    }

    /// Allocates the file from `allocatedThrough` to a step past `end` (the step: `end` itself, within
    /// `minimumAllocationStep...allocationStep`), extending its size over zero bytes (`fallocate`, looked up at run
    /// time: a GNU extension the Glibc module does not import). Appends then change neither the blocks the file owns
    /// nor its size, and `fdatasync` after them writes the data alone (on ext4, 81 against 127 µs per fsynced append
    /// of 90 bytes, measured here). On a file system without it the journal grows as any file does.
    private func allocateAhead(of end: Int) {
        let step = min(Self.allocationStep, max(Self.minimumAllocationStep, end))
        guard end >= self.allocatedThrough - step / 2 else { return }
        typealias Fallocate = @convention(c) (Int32, Int32, off_t, off_t) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "fallocate") else { return }
        let start = max(self.allocatedThrough, end)
        let length = end + step - start
        if unsafeBitCast(symbol, to: Fallocate.self)(self.file.descriptor, 0, off_t(start), off_t(length)) == 0 {
            self.allocatedThrough = start + length
        } else {
            self.allocatedThrough = Int.max  // not supported here (or no space): never try again
        }
    }

    /// Buffers one record; `write()` puts it in the file.
    public func append(seq: UInt64, method: String, params: JSONValue?) {
        Self.appendLine(seq: seq, method: method, params: params, to: &self.pending)
        self.recordCount += 1
    }

    /// Buffers one record whose params are already JSON text (`params`, an object), written as they are.
    public func append(seq: UInt64, method: String, encodedParams params: [UInt8]) {
        Self.appendLine(seq: seq, method: method, encodedParams: params, to: &self.pending)
        self.recordCount += 1
    }

    /// Replaces the file at `path` with `records` (a temporary file, fsynced, renamed over it, the directory fsynced:
    /// a crash leaves the old file or the new one) and opens it. For files in the journal's format that are compacted
    /// by rewriting them whole (the subscription history's log).
    public static func replace(
        path: String, directory: String, with records: [JournalRecord]
    ) throws(PersistenceError) -> (Journal, JournalScan) {
        var bytes: [UInt8] = []
        for record in records { Self.appendLine(seq: record.seq, method: record.method, params: record.params, to: &bytes) }
        let journal = try Self.replace(path: path, directory: directory, withLines: bytes, count: records.count)
        return (journal, JournalScan(records: records, tornBytes: 0, end: journal.size))
    }

    /// Replaces the file at `path` with `count` records already encoded as lines (`Journal.encodeLine`), as
    /// `replace(path:directory:with:)` does, and opens it.
    public static func replace(
        path: String, directory: String, withLines bytes: [UInt8], count: Int
    ) throws(PersistenceError) -> Journal {
        try Files.replaceAtomically(path, with: [bytes], directory: directory)
        // What was just written need not be read back.
        let file = try FileHandle(path: path, flags: O_WRONLY | O_CREAT)
        try file.truncate(to: bytes.count)  // (and the write position after the records)
        let journal = Journal(file: file, recordCount: count, size: bytes.count)
        journal.allocateAhead(of: journal.size)
        return journal
    }

    /// Deletes the file at `path` (if there is one) and fsyncs `directory`.
    public static func remove(path: String, directory: String) throws(PersistenceError) {
        guard unlink(path) == 0 || errno == ENOENT else { throw PersistenceError.posix("unlink", path) }
        try Files.syncDirectory(directory)
    }

    /// Appends one record's line, its params already JSON text, to `buffer` (for `replace(path:directory:withLines:)`).
    public static func encodeLine(seq: UInt64, method: String, encodedParams params: [UInt8], to buffer: inout [UInt8]) {
        Self.appendLine(seq: seq, method: method, encodedParams: params, to: &buffer)
    }

    private static func appendLine(seq: UInt64, method: String, encodedParams params: [UInt8], to buffer: inout [UInt8]) {
        Self.appendLine(seq: seq, method: method, to: &buffer) { buffer in
            JSONWriter.appendLiteral(#","params":"#, to: &buffer)
            buffer.append(contentsOf: params)
        }
    }

    /// Buffers one record whose params `writeParams` writes as JSON text (an object) straight into the buffer.
    public func append(seq: UInt64, method: String, writingParams writeParams: (inout [UInt8]) -> Void) {
        Self.appendLine(seq: seq, method: method, to: &self.pending) { buffer in
            JSONWriter.appendLiteral(#","params":"#, to: &buffer)
            writeParams(&buffer)
        }
        self.recordCount += 1
    }

    /// Appends one record's line: `<crc32 hex> <json>\n`.
    private static func appendLine(seq: UInt64, method: String, params: JSONValue?, to buffer: inout [UInt8]) {
        Self.appendLine(seq: seq, method: method, to: &buffer) { buffer in
            guard let params else { return }
            JSONWriter.appendLiteral(#","params":"#, to: &buffer)
            JSONWriter.append(params, to: &buffer)
        }
    }

    /// Appends a record's line to `buffer` in place: room for the CRC, the JSON (`{"seq":…,"method":…` then what
    /// `writeRest` adds: `,"params":…` or nothing), then the CRC of the JSON written into its room. No temporary
    /// array: this runs for every journaled mutation.
    private static func appendLine(
        seq: UInt64, method: String, to buffer: inout [UInt8], writeRest: (inout [UInt8]) -> Void
    ) {
        let start = buffer.count
        JSONWriter.appendLiteral("00000000 ", to: &buffer)  // the CRC's room
        let jsonStart = buffer.count
        JSONWriter.appendLiteral(#"{"seq":"#, to: &buffer)
        JSONWriter.appendInt(Int64(seq), to: &buffer)
        JSONWriter.appendLiteral(#","method":"#, to: &buffer)
        JSONWriter.appendString(method, to: &buffer)
        writeRest(&buffer)
        buffer.append(UInt8(ascii: "}"))
        buffer.withUnsafeMutableBytes { bytes in
            let crc = CRC32.checksum(UnsafeRawBufferPointer(rebasing: bytes[jsonStart...]))
            for index in 0..<8 {
                let digit = UInt8(truncatingIfNeeded: crc >> UInt32(28 - 4 * index)) & 0xF
                bytes[start + index] = digit < 10 ? 0x30 + digit : 0x57 + digit  // 0-9, a-f
            }
        }
        buffer.append(UInt8(ascii: "\n"))
    }

    /// True when records are buffered but not yet written.
    public var hasPending: Bool { !self.pending.isEmpty }

    /// Writes buffered records to the file (one write).
    public func write() throws(PersistenceError) {
        guard !self.pending.isEmpty else { return }
        self.allocateAhead(of: self.size + self.pending.count)
        try self.file.writeAll(self.pending)
        self.size += self.pending.count
        self.pending.removeAll(keepingCapacity: self.pending.capacity <= 1 << 20)
        self.isDirty = true
    }

    /// Flushes the records to stable storage if anything was written since the last sync (`fdatasync`: the size and
    /// blocks it needs are the file's already, but for a step allocated ahead, which it also flushes).
    public func sync() throws(PersistenceError) {
        guard self.isDirty else { return }
        try self.file.syncData()
        self.isDirty = false
    }

    /// Gives back the room allocated ahead: the file ends with its last record (a journal closed for good, such as a
    /// rolled segment).
    public func trimAllocation() throws(PersistenceError) {
        try self.file.truncate(to: self.size)
        self.allocatedThrough = self.size
    }

    /// An fsync of the journal's file to be run elsewhere (on a worker thread): the descriptor, and the file, which
    /// stays open as long as this value lives (even after a roll replaced the journal).
    public struct DetachedSync {
        let file: FileHandle
        public var descriptor: Int32 { self.file.descriptor }
        public var path: String { self.file.path }
        /// Flushes the records here, in this thread (`fdatasync`, as `Journal.sync`).
        public func sync() throws(PersistenceError) { try self.file.syncData() }
    }

    /// Marks the journal clean and hands back what to fsync, or nil when nothing was written since the last sync.
    /// The fsync covers every byte written before it starts, so records written later make the journal dirty
    /// again; the caller must treat a failure of that fsync as a journal failure.
    public func detachSync() -> DetachedSync? {
        guard self.isDirty else { return nil }
        self.isDirty = false
        return DetachedSync(file: self.file)
    }

    /// Empties the journal (after a snapshot made its records redundant).
    public func reset() throws(PersistenceError) {
        try self.write()
        try self.file.truncate(to: 0)
        try self.file.sync()
        self.isDirty = false
        self.recordCount = 0
        self.size = 0
        self.allocatedThrough = 0
        self.allocateAhead(of: 0)
    }

    // MARK: - Scanning

    static func scan(_ bytes: [UInt8], path: String) throws(PersistenceError) -> JournalScan {
        // The zero bytes at the end are the room allocated ahead. A zero byte before them is never part of a record
        // (JSON escapes it): the write there was torn, and the records from the one holding it on are cut off.
        var written = bytes.count
        while written > 0 && bytes[written - 1] == 0 { written -= 1 }
        let count = bytes[..<written].firstIndex(of: 0) ?? written
        var records: [JournalRecord] = []
        var start = 0
        var lineNumber = 0
        while start < count {
            lineNumber += 1
            let end = bytes[start..<count].firstIndex(of: UInt8(ascii: "\n"))
            let line = bytes[start..<(end ?? count)]
            let isLast = end == nil || end! + 1 >= count
            if let record = Self.parse(line), end != nil {
                records.append(record)
                start = end! + 1
                continue
            }
            if isLast {
                // A torn write: the machine stopped in the middle of the last record.
                return JournalScan(records: records, tornBytes: written - start, end: start)
            }
            throw PersistenceError(
                "\(path): record \(lineNumber) (byte \(start)) is damaged; refusing to load a journal with holes "
                    + "(move the data directory aside to start empty, or restore a backup)")
        }
        return JournalScan(records: records, tornBytes: written - count, end: count)
    }

    private static func parse(_ line: ArraySlice<UInt8>) -> JournalRecord? {
        guard line.count > 9, line[line.startIndex + 8] == UInt8(ascii: " "),
            let crc = UInt32(String(decoding: line.prefix(8), as: UTF8.self), radix: 16)
        else { return nil }
        let json = line.dropFirst(9)
        guard CRC32.checksum(json) == crc, let value = try? JSONParser.parse(Array(json), maxDepth: 1024),
            case .int(let seq)? = value["seq"], seq >= 0, case .string(let method)? = value["method"]
        else { return nil }
        return JournalRecord(seq: UInt64(seq), method: method, params: value["params"])
    }

}
