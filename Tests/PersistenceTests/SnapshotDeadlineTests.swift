// Deadlines in snapshot files: the binary format's version 3 carries them (and still reads version 2, which has
// none), the JSON format an optional `deadlines` array (older files without it still load), and a graph restored
// either way expires the same keys at the same seqs.
import Foundation
import ObjectGraph
import Persistence
import Testing

struct SnapshotDeadlineTests {
    static func graphWithDeadlines() throws -> Graph {
        let graph = try SnapshotFileTests.sampleGraph()
        try graph.set("session", to: .record(Record(["user": "ada", "token": "t"])))
        try graph.set("session.token", to: "t2", expiresAt: 1_700_000_000_123)
        try graph.set("flash", to: "saved", expiresAt: 1_700_000_000_000)
        try graph.set("far", to: 1, expiresAt: UInt64(Int64.max))
        return graph
    }

    /// `bytes` with the checksum made right again.
    static func resealed(_ bytes: [UInt8]) -> [UInt8] {
        var body = Array(bytes.dropLast(4))
        let crc = CRC32.checksum(body)
        for shift in 0..<4 { body.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift * 8))) }
        return body
    }

    @Test func theBinaryFormatKeepsDeadlines() throws {
        let graph = try Self.graphWithDeadlines()
        let snapshot = graph.makeSnapshot()
        #expect(snapshot.deadlines.count == 3)
        let bytes = BinarySnapshotCodec.encode(snapshot)
        #expect(bytes[8] == 3)  // the version
        #expect(try BinarySnapshotCodec.decode(bytes) == snapshot)
        let streamed = try BinarySnapshotCodec.restore(bytes, model: .open)
        for restored in [streamed, try Graph(model: .open, snapshot: BinarySnapshotCodec.decode(bytes))] {
            #expect(restored.makeSnapshot() == snapshot)
            #expect(restored.expiry("session.token") == 1_700_000_000_123)
            #expect(restored.expiry("flash") == 1_700_000_000_000)
            #expect(restored.dueExpirations(now: 1_800_000_000_000) == graph.dueExpirations(now: 1_800_000_000_000))
        }
        // Every truncation and flipped bytes in the deadlines are refused like anywhere else.
        for length in 0..<bytes.count {
            #expect(throws: PersistenceError.self) { try BinarySnapshotCodec.decode(Array(bytes[0..<length])) }
        }
        for position in (bytes.count - 24)..<(bytes.count - 4) {
            var damaged = bytes
            damaged[position] ^= 0x01
            #expect(throws: PersistenceError.self) { try BinarySnapshotCodec.decode(damaged) }
        }
    }

    @Test func aVersion2FileStillLoadsWithoutDeadlines() throws {
        let graph = try SnapshotFileTests.sampleGraph()
        let snapshot = graph.makeSnapshot()
        // Version 3 without deadlines is version 2 plus a zero count before the checksum.
        var bytes = BinarySnapshotCodec.encode(snapshot)
        #expect(bytes[bytes.count - 5] == 0)
        bytes.remove(at: bytes.count - 5)
        bytes[8] = 2
        bytes = Self.resealed(bytes)
        #expect(try BinarySnapshotCodec.decode(bytes) == snapshot)
        #expect(try BinarySnapshotCodec.restore(bytes, model: .open).makeSnapshot() == snapshot)
        // A version 2 file as kvod wrote it before deadlines (FuzzSnapshot's seed-1, sealed).
        let seed: [UInt8] = [
            0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x01, 0x06, 0x4F, 0x62, 0x6A, 0x65, 0x63, 0x74, 0x01, 0x01, 0x61, 0x01,
            0x00, 0x00, 0x01, 0x00, 0x03, 0x02, 0x01,
        ]
        let old = try BinarySnapshotCodec.decode(Self.resealed(Array("KVODSNAP".utf8) + seed + [0, 0, 0, 0]))
        #expect(old.seq == 1 && old.deadlines.isEmpty)
        #expect(try Graph(model: .open, snapshot: old).get("a") == 1)
        // The same body read as version 3 lacks its deadline count: refused, not misread.
        var asVersion3 = Array("KVODSNAP".utf8) + seed + [0, 0, 0, 0]
        asVersion3[8] = 3
        #expect(throws: PersistenceError.self) { try BinarySnapshotCodec.decode(Self.resealed(asVersion3)) }
    }

    @Test func theFuzzSeedWithDeadlinesIsAVersion3Body() throws {
        let seed = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fuzz/corpus/FuzzSnapshot/seed-4").standardized
        let body = try [UInt8](Data(contentsOf: seed))
        let snapshot = try BinarySnapshotCodec.decode(Self.resealed(Array("KVODSNAP".utf8) + body + [0, 0, 0, 0]))
        #expect(snapshot.deadlines.map(\.key) == ["flash", "token"])
        #expect(try Graph(model: .open, snapshot: snapshot).expiry("session.token") == 1_700_000_000_123)
    }

    @Test func theJSONFormatKeepsDeadlinesAndOlderFilesLoad() throws {
        let graph = try Self.graphWithDeadlines()
        let snapshot = graph.makeSnapshot()
        let json = SnapshotCodec.encode(snapshot)
        let text = String(decoding: json, as: UTF8.self)
        #expect(text.contains(#"{"id":0,"key":"far","expiresAt":9223372036854775807}"#))
        #expect(try SnapshotCodec.decode(json) == snapshot)
        // Foundation agrees it is JSON (what `kvod --dump-snapshot` prints).
        #expect(try JSONSerialization.jsonObject(with: Data(json)) is [String: Any])
        // Without deadlines nothing changes in the file, and a file without the member loads with none.
        let plain = try SnapshotFileTests.sampleGraph().makeSnapshot()
        let plainJSON = SnapshotCodec.encode(plain)
        #expect(!String(decoding: plainJSON, as: UTF8.self).contains("deadlines"))
        #expect(try SnapshotCodec.decode(plainJSON).deadlines.isEmpty)
        // Malformed deadlines are refused.
        let bad = Array(String(decoding: plainJSON, as: UTF8.self).replacingOccurrences(
            of: "]}\n", with: #"],"deadlines":[{"id":0,"key":"k"}]}"#).utf8)
        #expect(throws: PersistenceError.self) { try SnapshotCodec.decode(bad) }
    }

    @Test func aDataDirectoryRestartKeepsDeadlines() throws {
        let directory = JournalTests.scratch()
        let graph = try Self.graphWithDeadlines()
        do {
            let (data, _) = try DataDirectory.open(path: directory)
            try data.writeSnapshot(graph.makeSnapshot())
        }
        let (_, contents) = try DataDirectory.open(path: directory)
        let restored = try #require(try contents.snapshot?.restore(model: .open))
        #expect(restored.makeSnapshot() == graph.makeSnapshot())
        #expect(try DataDirectory.readSnapshot(path: directory)?.deadlines == graph.makeSnapshot().deadlines)
    }
}
