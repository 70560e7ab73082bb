// The follower's side of a bootstrap (SnapshotReceiver.swift): chunks appended in order to a temporary file and read
// back whole; a chunk out of order, past the announced size, or a snapshot whose header names another seq is refused,
// and nothing is left in the directory afterwards.
import Foundation
@testable import KVOServer
import ObjectGraph
import Persistence
import Testing

struct SnapshotReceiverTests {
    /// A fresh directory, removed by `body`'s end.
    private func withDirectory(_ body: (String) throws -> Void) throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "kvod-receiver-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: url) }
        try body(url.path)
    }

    /// A real snapshot (the binary format) of a graph with a few keys, at seq 3.
    private func snapshot() throws -> [UInt8] {
        let graph = Graph(model: .open)
        for (index, key) in ["a", "b", "c"].enumerated() {
            try graph.set(key, to: .string(String(repeating: key, count: 2000 + index)))
        }
        return BinarySnapshotCodec.encode(graph.makeSnapshot())
    }

    @Test func chunksInOrderGiveBackTheSnapshotAndLeaveNoFile() throws {
        try self.withDirectory { directory in
            let bytes = try self.snapshot()
            let seq = try BinarySnapshotCodec.decode(bytes).seq
            let receiver = try SnapshotReceiver(directory: directory, seq: seq, total: bytes.count)
            var offset = 0
            var complete = false
            while offset < bytes.count {
                let end = min(bytes.count, offset + 1000)
                complete = try receiver.append(Array(bytes[offset..<end]), at: offset)
                offset = end
                #expect(complete == (offset == bytes.count))
            }
            #expect(try receiver.finish() == bytes)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test func aChunkOutOfOrderOrPastTheEndIsRefused() throws {
        try self.withDirectory { directory in
            let bytes = try self.snapshot()
            let receiver = try SnapshotReceiver(directory: directory, seq: 3, total: bytes.count)
            #expect(throws: ReplicationError.self) { try receiver.append(Array(bytes[10..<20]), at: 10) }
            #expect(try receiver.append(Array(bytes[0..<10]), at: 0) == false)
            #expect(throws: ReplicationError.self) { try receiver.append(Array(bytes[0..<10]), at: 0) }
            #expect(throws: ReplicationError.self) { try receiver.append(bytes, at: 10) }
            #expect(throws: ReplicationError.self) { try receiver.append([], at: 10) }
            receiver.discard()
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }

    @Test func aSnapshotAtAnotherSeqThanAnnouncedIsRefused() throws {
        try self.withDirectory { directory in
            let bytes = try self.snapshot()
            let receiver = try SnapshotReceiver(directory: directory, seq: 99, total: bytes.count)
            #expect(try receiver.append(bytes, at: 0))
            #expect(throws: ReplicationError.self) { try receiver.finish() }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
        }
    }
}
