// The binary snapshot format (round trips, every truncation and a flipped byte refused, the older JSON format still
// loaded) and the data directory's journal segments (rolled at a snapshot's seq, replayed in order, deleted once a
// snapshot covers them). Forking is tested with real kvod processes (KVOServerTests/BackgroundSnapshotTests): the test
// runner is multithreaded, and fork is only safe in a single-threaded process such as kvod.
import Foundation
import ObjectGraph
import Persistence
import Testing
import WireProtocol

struct SnapshotFileTests {
    static func sampleGraph() throws -> Graph {
        let graph = Graph()
        try graph.set("team", to: .record(Record(["members": [.record(Record(["name": "Ada"]))], "n": 2.5])))
        try graph.set("self", to: .object(.root))
        try graph.set("numbers", to: [0, -1, 1, .int(Int64.min), .int(Int64.max), 1e-300, -0.0, 3.25])
        try graph.set("text", to: .string("é ☃ 𝄞 \"quoted\"\n" + String(repeating: "x", count: 300)))
        try graph.set("flags", to: [true, false, .null, [[[]]]])
        try graph.set("empty", to: .string(""))
        return graph
    }

    @Test func theBinaryFormatRoundTripsAndRestoresTheGraph() throws {
        let graph = try Self.sampleGraph()
        let snapshot = graph.makeSnapshot()
        let bytes = BinarySnapshotCodec.encode(snapshot)
        #expect(BinarySnapshotCodec.isBinary(bytes))
        #expect(try BinarySnapshotCodec.decode(bytes) == snapshot)
        let restored = try Graph(model: .open, snapshot: try BinarySnapshotCodec.decode(bytes))
        for key in ["team", "self", "numbers", "text", "flags", "empty"] {
            #expect(try restored.get(KeyPath(parsing: key)) == (try graph.get(KeyPath(parsing: key))))
        }
        #expect(restored.seq == graph.seq)
        // Smaller than the JSON format: names are written once.
        #expect(bytes.count < SnapshotCodec.encode(snapshot).count)
    }

    /// The encoder reuses the last object's class and key indexes when the next object repeats them; every way of
    /// repeating or not (same names in another order, a prefix, another class with the same names, the empty class
    /// name first, no keys, a name first seen in a deadline) decodes to exactly the snapshot encoded.
    @Test func objectsThatRepeatOrChangeTheirNamesRoundTrip() throws {
        func object(_ id: ObjectID, _ className: String, _ keys: [String]) -> GraphSnapshot.Object {
            .init(
                id: id, className: className, keys: keys, values: keys.indices.map { .int(Int64(id * 10 + $0)) },
                modSeqs: keys.indices.map { UInt64(id + $0) })
        }
        let objects = [
            object(0, "", ["a", "b"]), object(1, "", ["a", "b"]), object(2, "Point", ["a", "b"]),
            object(3, "Point", ["b", "a"]), object(4, "Point", ["b"]), object(5, "Point", []),
            object(6, "Point", []), object(7, "", ["b", "a"]), object(8, "Line", ["a", "c", "b"]),
            object(9, "Line", ["a", "c", "b"]), object(10, "Point", ["a", "b"]),
        ]
        let snapshot = GraphSnapshot(
            seq: 42, nextObjectID: 11, objects: objects,
            deadlines: [.init(object: 8, key: "c", expiresAt: 7), .init(object: 9, key: "only in a deadline", expiresAt: 9)])
        #expect(try BinarySnapshotCodec.decode(BinarySnapshotCodec.encode(snapshot)) == snapshot)
    }

    @Test func restoringStreamsTheSameGraph() throws {
        let graph = try Self.sampleGraph()
        let bytes = BinarySnapshotCodec.encode(graph.makeSnapshot())
        let streamed = try BinarySnapshotCodec.restore(bytes, model: .open)
        #expect(streamed.makeSnapshot() == graph.makeSnapshot())
        #expect(try streamed.meta("numbers").modSeq == graph.meta("numbers").modSeq)
        var damaged = bytes
        damaged[damaged.count / 2] ^= 0x01
        #expect(throws: PersistenceError.self) { try BinarySnapshotCodec.restore(damaged, model: .open) }
        let typed = Graph(model: try Model(root: ObjectClass(name: "Typed", isOpen: true), classes: []))
        let typedBytes = BinarySnapshotCodec.encode(typed.makeSnapshot())
        #expect(throws: SnapshotError.self) { try BinarySnapshotCodec.restore(typedBytes, model: .open) }
    }

    @Test func everyTruncationAndAFlippedByteAreRefused() throws {
        let bytes = BinarySnapshotCodec.encode(try Self.sampleGraph().makeSnapshot())
        for length in 0..<bytes.count {
            #expect(throws: PersistenceError.self) { try BinarySnapshotCodec.decode(Array(bytes[0..<length])) }
        }
        for position in stride(from: 8, to: bytes.count, by: 7) {
            var damaged = bytes
            damaged[position] ^= 0x20
            #expect(throws: PersistenceError.self) { try BinarySnapshotCodec.decode(damaged) }
        }
        var future = bytes
        future[8] = 9  // another version, checksum made right: refused by version, not misread
        future.removeLast(4)
        let crc = CRC32.checksum(future)
        for shift in 0..<4 { future.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift * 8))) }
        do {
            _ = try BinarySnapshotCodec.decode(future)
            Issue.record("a snapshot of another version was read")
        } catch {
            #expect(error.message.contains("version 9"))
        }
    }

    @Test func aDirectoryWithTheOlderJSONSnapshotStillLoads() throws {
        let directory = JournalTests.scratch()
        let graph = try Self.sampleGraph()
        try Data(SnapshotCodec.encode(graph.makeSnapshot())).write(to: URL(fileURLWithPath: directory + "/snapshot.json"))
        let (data, contents) = try DataDirectory.open(path: directory)
        #expect(try contents.snapshot?.decode() == graph.makeSnapshot())
        #expect(contents.snapshot?.path == directory + "/snapshot.json")
        // The next snapshot is binary and the JSON file goes.
        try data.writeSnapshot(graph.makeSnapshot())
        #expect(!FileManager.default.fileExists(atPath: directory + "/snapshot.json"))
        #expect(BinarySnapshotCodec.isBinary(try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/snapshot.kvs")))))
        #expect(try DataDirectory.readSnapshot(path: directory) == graph.makeSnapshot())
    }

    static func append(_ journal: Journal, _ seqs: ClosedRange<Int>) throws {
        for seq in seqs {
            journal.append(seq: UInt64(seq), method: "set", params: .object(["path": "k", "value": .int(Int64(seq))]))
        }
        try journal.write()
    }

    @Test func rolledSegmentsReplayInOrderUntilASnapshotCoversThem() throws {
        let directory = JournalTests.scratch()
        do {
            let (data, _) = try DataDirectory.open(path: directory)
            try Self.append(data.journal, 1...3)
            try data.rollJournal(at: 3)
            try Self.append(data.journal, 4...5)
            try data.rollJournal(at: 5)
            try Self.append(data.journal, 6...6)
            #expect(data.segments == [3, 5])
        }
        // A segment ends with its last record: the journal's room allocated ahead went with the roll.
        for seq in [3, 5] {
            let segment = try [UInt8](Data(contentsOf: URL(fileURLWithPath: directory + "/journal.\(seq).log")))
            #expect(segment.last == UInt8(ascii: "\n") && !segment.contains(0))
        }
        // A crash before any snapshot was put in place: every record comes back, in seq order.
        let (data, contents) = try DataDirectory.open(path: directory)
        #expect(contents.records.map(\.seq) == [1, 2, 3, 4, 5, 6])
        #expect(data.segments == [3, 5])
        // A snapshot at seq 6 (written in process here) covers the segments and the journal.
        let graph = Graph()
        for _ in 1...6 { try graph.set("k", to: 1) }
        try data.writeSnapshot(graph.makeSnapshot())
        #expect(data.segments.isEmpty)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
        #expect(names == ["journal.log", "kvod.lock", "snapshot.kvs"])
    }

    @Test func recordsBeforeTheSnapshotAreSkippedAndLeftoverTemporaryFilesRemoved() throws {
        let directory = JournalTests.scratch()
        let graph = Graph()
        for _ in 1...4 { try graph.set("k", to: 1) }
        do {
            let (data, _) = try DataDirectory.open(path: directory)
            try Self.append(data.journal, 1...4)
            try data.rollJournal(at: 4)
            try Self.append(data.journal, 5...7)
        }
        // A snapshot at seq 4 landed, but kvod died before deleting the segment; a child's file was left behind.
        try Data(BinarySnapshotCodec.encode(graph.makeSnapshot())).write(to: URL(fileURLWithPath: directory + "/snapshot.kvs"))
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: directory + "/snapshot-4242.tmp"))
        let (_, contents) = try DataDirectory.open(path: directory)
        #expect(contents.snapshot?.seq == 4)
        // The record at the snapshot's seq comes back: records that take no seq may have been written there (the
        // caller skips a mutation at that seq, which the snapshot holds).
        #expect(contents.records.map(\.seq) == [4, 5, 6, 7])
        #expect(!FileManager.default.fileExists(atPath: directory + "/snapshot-4242.tmp"))
    }

    static func registration(at seq: UInt64, _ connection: String) -> JournalRecord {
        JournalRecord(seq: seq, method: "onDisconnect", params: .object(["connection": .string(connection), "ops": []]))
    }

    @Test func aRollCarriesRecordsIntoTheNewJournalOnDiskAtOnce() throws {
        let directory = JournalTests.scratch()
        do {
            let (data, _) = try DataDirectory.open(path: directory)
            data.journal.append(seq: 0, method: "onDisconnect", params: .object(["connection": "b/1", "ops": []]))
            try Self.append(data.journal, 1...3)
            try data.rollJournal(at: 3, carrying: [Self.registration(at: 3, "b/1")])
            #expect(data.journal.recordCount == 1 && !data.journal.hasPending)
            // Nothing else is written: a crash now must still find the carried record in journal.log.
        }
        let (_, scan) = try Journal.open(path: directory + "/journal.log")
        #expect(scan.records == [Self.registration(at: 3, "b/1")])
        // Once a snapshot at the roll's seq is in place (the segment not yet deleted), the records before it are
        // skipped; those at its seq come back — the segment's last mutation, then the carried record.
        let graph = Graph()
        for _ in 1...3 { try graph.set("k", to: 1) }
        try Data(BinarySnapshotCodec.encode(graph.makeSnapshot())).write(to: URL(fileURLWithPath: directory + "/snapshot.kvs"))
        let (_, contents) = try DataDirectory.open(path: directory)
        #expect(contents.records.map(\.seq) == [3, 3])
        #expect(contents.records.map(\.method) == ["set", "onDisconnect"])
    }

    @Test func aSnapshotInProcessCarriesRecordsIntoTheEmptiedJournal() throws {
        let directory = JournalTests.scratch()
        let graph = Graph()
        for _ in 1...4 { try graph.set("k", to: 1) }
        do {
            let (data, _) = try DataDirectory.open(path: directory)
            try Self.append(data.journal, 1...4)
            try data.writeSnapshot(graph.makeSnapshot(), carrying: [Self.registration(at: 4, "b/2")])
            #expect(data.journal.recordCount == 1)
        }
        let (_, contents) = try DataDirectory.open(path: directory)
        #expect(contents.snapshot?.seq == 4)
        #expect(contents.records == [Self.registration(at: 4, "b/2")])
    }

    @Test func aTornOlderSegmentRefusesToLoadAndATornNewestOneIsCut() throws {
        let directory = JournalTests.scratch()
        do {
            let (data, _) = try DataDirectory.open(path: directory)
            try Self.append(data.journal, 1...3)
            try data.rollJournal(at: 3)
            try Self.append(data.journal, 4...5)
            try data.rollJournal(at: 5)
        }
        func cut(_ name: String) throws {
            let segment = URL(fileURLWithPath: directory + "/" + name)
            var bytes = try [UInt8](Data(contentsOf: segment))
            bytes.removeLast(5)
            try Data(bytes).write(to: segment)
        }
        // The newest segment: a roll does not wait for the disk, so a power cut before the snapshot process fsynced
        // it can cut its last write, as the journal's.
        try cut("journal.5.log")
        do {
            let (_, contents) = try DataDirectory.open(path: directory)
            #expect(contents.records.map(\.seq) == [1, 2, 3, 4])
            #expect(contents.tornBytes > 0)
        }
        // An older one was fsynced before the next roll: a short one is damage, not a power cut.
        try cut("journal.3.log")
        #expect(throws: PersistenceError.self) { try DataDirectory.open(path: directory) }
    }

    @Test func aRollLeavesTheDiskToTheSnapshotProcessAndItsPlanCoversEverySegment() throws {
        let directory = JournalTests.scratch()
        let (data, _) = try DataDirectory.open(path: directory)
        try Self.append(data.journal, 1...3)
        try data.rollJournal(at: 3, syncDirectory: false)
        try Self.append(data.journal, 4...5)
        try data.rollJournal(at: 5, carrying: [Self.registration(at: 5, "b/3")], syncDirectory: false)
        let plan = data.snapshotPlan(at: 5)
        #expect(plan.directory == directory)
        #expect(plan.rolled == [directory + "/journal.5.log", directory + "/journal.log"])
        #expect(plan.target == directory + "/snapshot.kvs")
        #expect(plan.covered == [directory + "/snapshot.json", directory + "/journal.3.log", directory + "/journal.5.log"])
        // Without a snapshot process the loop makes the roll durable itself; the files stay as they are.
        try data.syncRoll(at: 5)
        #expect(data.segments == [3, 5])
        // The process deleted what its plan covers: the directory forgets the segments.
        data.snapshotCompleted(at: 5)
        #expect(data.segments.isEmpty)
        let (_, scan) = try Journal.open(path: directory + "/journal.log")
        #expect(scan.records == [Self.registration(at: 5, "b/3")])
    }
}
