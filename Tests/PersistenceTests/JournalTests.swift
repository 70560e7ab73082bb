import Foundation
import ObjectGraph
import Persistence
import Testing
import WireProtocol

struct JournalTests {
    /// Writes records 1, 2 and 3 (`set a`) to a new journal at `path` and returns the file's bytes.
    static func writeThreeRecords(to path: String) throws -> [UInt8] {
        do {
            let (journal, _) = try Journal.open(path: path)
            for seq in 1...3 { journal.append(seq: UInt64(seq), method: "set", params: .object(["path": "a", "value": .int(Int64(seq))])) }
            try journal.write()
        }
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    static func scratch() -> String {
        let path = NSTemporaryDirectory() + "kvod-journal-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func crcMatchesTheKnownCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        // Continued over a split, as a snapshot's head and body are checked.
        let (head, body) = (Array("1234".utf8), Array("56789".utf8))
        let continued = body.withUnsafeBytes { body in
            head.withUnsafeBytes { CRC32.checksum(body, continuing: CRC32.checksum($0)) }
        }
        #expect(continued == 0xCBF4_3926)
    }

    /// The eight-bytes-a-step checksum of bytes in memory agrees with the byte-a-step one (of a sequence that is not
    /// contiguous), at every length up to 40 and every alignment of its start (its tail is read a byte a step), for an
    /// array slice as for a buffer, and continued over any split.
    @Test func theSlicedChecksumAgreesWithTheBytewiseOne() {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let bytewise = CRC32.checksum(bytes.lazy.map { $0 })
        bytes.withUnsafeBytes { all in
            for start in 0..<8 {
                for length in 0...40 {
                    let slice = UnsafeRawBufferPointer(rebasing: all[start..<(start + length)])
                    let expected = CRC32.checksum(slice.lazy.map { $0 })
                    #expect(CRC32.checksum(slice) == expected, "start \(start), length \(length)")
                    #expect(CRC32.checksum(bytes[start..<(start + length)]) == expected, "slice \(start), \(length)")
                }
            }
            for split in [0, 1, 7, 8, 9, 150, 299, 300] {
                let (head, tail) = (UnsafeRawBufferPointer(rebasing: all[..<split]), UnsafeRawBufferPointer(rebasing: all[split...]))
                #expect(CRC32.checksum(tail, continuing: CRC32.checksum(head)) == bytewise)
            }
        }
    }

    @Test func recordsRoundTripAcrossReopen() throws {
        let directory = Self.scratch()
        do {
            let (journal, scan) = try Journal.open(path: directory + "/journal.log")
            #expect(scan.records.isEmpty)
            journal.append(seq: 1, method: "set", params: .object(["path": "a", "value": 1]))
            journal.append(seq: 2, method: "insert", params: .object(["path": "l", "values": ["x", "ü"]]))
            try journal.write()
            try journal.sync()
        }
        let (_, scan) = try Journal.open(path: directory + "/journal.log")
        #expect(scan.records.map(\.seq) == [1, 2])
        #expect(scan.records[1].params?["values"] == ["x", "ü"])
        #expect(scan.tornBytes == 0)
    }

    /// Where fallocate works (ext4, xfs, tmpfs), the file is sized ahead of its records over zero bytes, so an append
    /// changes neither its size nor its blocks; reopening finds the records and the room again, and appends go on
    /// right after the last record.
    @Test func theFileIsSizedAheadOfItsRecordsOverZeroBytes() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal.log"
        func fileSize() -> Int {
            var status = stat()
            #expect(stat(path, &status) == 0)
            return Int(status.st_size)
        }
        let written: Int
        do {
            let (journal, _) = try Journal.open(path: path)
            journal.append(seq: 1, method: "set", params: .object(["path": "a", "value": 1]))
            try journal.write()
            try journal.sync()
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            written = bytes.firstIndex(of: 0) ?? bytes.count
            #expect(written > 0 && written < 100 && bytes[written - 1] == UInt8(ascii: "\n"))
            #expect(bytes[written...].allSatisfy { $0 == 0 })
            if bytes.count > written {
                // A fresh journal is sized the smallest step ahead.
                #expect(bytes.count >= 1 << 20 && bytes.count < 64 << 20)  // Journal.minimumAllocationStep, allocationStep
                journal.append(seq: 2, method: "set", params: .object(["path": "a", "value": 2]))
                try journal.write()
                #expect(fileSize() == bytes.count)
            }
        }
        let (journal, scan) = try Journal.open(path: path)
        #expect(scan.records.map(\.seq).prefix(1) == [1])
        #expect(scan.tornBytes == 0)
        #expect(scan.end >= written)
        journal.append(seq: 3, method: "set", params: .object(["path": "a", "value": 3]))
        try journal.write()
        let reopened = try Journal.open(path: path).1
        #expect(reopened.records.map(\.seq).last == 3 && reopened.tornBytes == 0)
    }

    /// A zero byte before the zero tail is a write the machine never finished (a block that did not reach the disk
    /// while a later one did): the record holding it and everything after are cut off as a torn tail, and the file
    /// goes on cleanly from there.
    @Test("a zero byte inside the records cuts the journal there", arguments: [0, 3, 25])
    func aZeroByteInsideTheRecordsIsATornWrite(offset: Int) throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal.log"
        var bytes = try Self.writeThreeRecords(to: path)
        let records = bytes.firstIndex(of: 0) ?? bytes.count
        let secondStart = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
        bytes[secondStart + offset] = 0  // record 2 never reached the disk there; record 3 did
        bytes += Array(repeating: 0, count: 4096)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (journal, scan) = try Journal.open(path: path)
        #expect(scan.records.map(\.seq) == [1])
        #expect(scan.tornBytes == records - secondStart)
        #expect(scan.end == secondStart)
        journal.append(seq: 2, method: "set", params: .object(["path": "b", "value": 2]))
        try journal.write()
        let (_, again) = try Journal.open(path: path)
        #expect(again.records.map(\.seq) == [1, 2] && again.tornBytes == 0)
        #expect(again.records[1].params?["path"] == "b")
    }

    /// A journal closed for good gives back its room: it ends with its last record.
    @Test func trimmingGivesBackTheRoomAllocatedAhead() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/journal.log"
        let (journal, _) = try Journal.open(path: path)
        journal.append(seq: 1, method: "set", params: .object(["path": "a", "value": 1]))
        try journal.write()
        try journal.trimAllocation()
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.last == UInt8(ascii: "\n") && !bytes.contains(0))
        #expect(try Journal.open(path: path).1.records.map(\.seq) == [1])
    }

    @Test("a torn last record is cut off", arguments: [1, 5, 9, 20, 40])
    func tornTail(keep: Int) throws {
        let directory = Self.scratch()
        let path = directory + "/journal.log"
        do {
            let (journal, _) = try Journal.open(path: path)
            journal.append(seq: 1, method: "set", params: .object(["path": "a", "value": 1]))
            journal.append(seq: 2, method: "set", params: .object(["path": "b", "value": 2]))
            try journal.write()
        }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let secondStart = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
        bytes = Array(bytes[..<min(bytes.count - 1, secondStart + keep)])  // the second record, torn
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let (journal, scan) = try Journal.open(path: path)
        #expect(scan.records.map(\.seq) == [1])
        #expect(scan.tornBytes == bytes.count - secondStart)
        // Appending after the cut continues a clean file.
        journal.append(seq: 2, method: "set", params: .object(["path": "c", "value": 3]))
        try journal.write()
        let (_, again) = try Journal.open(path: path)
        #expect(again.records.map(\.seq) == [1, 2])
        #expect(again.records[1].params?["path"] == "c")
    }

    @Test func recordsThatTakeNoSeqRepeatTheSeqAndMayBeZero() throws {
        let path = Self.scratch() + "/journal.log"
        do {
            let (journal, _) = try Journal.open(path: path)
            // An onDisconnect registration before the first mutation, and one more at the seq of the mutation before it.
            journal.append(seq: 0, method: "onDisconnect", params: .object(["connection": "b/1", "ops": []]))
            journal.append(seq: 1, method: "set", params: .object(["path": "a", "value": 1]))
            journal.append(seq: 1, method: "disconnected", params: .object(["connection": "b/1"]))
            try journal.write()
        }
        let (journal, scan) = try Journal.open(path: path)
        #expect(scan.records.map(\.seq) == [0, 1, 1])
        #expect(scan.records.map(\.method) == ["onDisconnect", "set", "disconnected"])
        #expect(scan.tornBytes == 0 && journal.recordCount == 3)
    }

    @Test func damageBeforeTheTailRefusesToLoad() throws {
        let directory = Self.scratch()
        let path = directory + "/journal.log"
        var bytes = try Self.writeThreeRecords(to: path)
        let secondStart = bytes.firstIndex(of: UInt8(ascii: "\n"))! + 1
        bytes[secondStart + 30] ^= 0x01  // flip one bit inside record 2
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: PersistenceError.self) { try Journal.open(path: path) }
        do {
            _ = try Journal.open(path: path)
        } catch {
            #expect(error.message.contains("record 2"))
        }
    }

    @Test func snapshotsRoundTripAndRestoreTheGraph() throws {
        let graph = Graph()
        try graph.set("team", to: .record(Record(["members": [.record(Record(["name": "Ada"]))], "n": 2.5])))
        try graph.set("self", to: .object(.root))
        let snapshot = graph.makeSnapshot()
        let decoded = try SnapshotCodec.decode(SnapshotCodec.encode(snapshot))
        #expect(decoded == snapshot)
        let restored = try Graph(model: .open, snapshot: decoded)
        #expect(try restored.get("team") == (try graph.get("team")))
        #expect(restored.seq == graph.seq)
        // New objects continue after the old ids.
        try graph.set("more", to: .record(Record()))
        try restored.set("more", to: .record(Record()))
        #expect(try restored.value(at: KeyPath(parsing: "more")) == (try graph.value(at: KeyPath(parsing: "more"))))
    }

    @Test func aSnapshotFromAnotherModelIsRefused() throws {
        let typed = ObjectClass(name: "Thing", isOpen: true)
        let graph = Graph(model: try Model(root: typed, classes: []))
        try graph.set("x", to: 1)
        #expect(throws: SnapshotError.self) { try Graph(model: .open, snapshot: graph.makeSnapshot()) }
    }

    @Test func theDirectoryIsLocked() throws {
        let directory = Self.scratch()
        let (first, _) = try DataDirectory.open(path: directory)
        #expect(throws: PersistenceError.self) { try DataDirectory.open(path: directory, lockWaitMilliseconds: 50) }
        withExtendedLifetime(first) {}
    }
}
