// The subscription history on disk (docs/DURABILITY.md#the-history-on-disk), with real processes: a subscriber
// that left resumes with `since` after a graceful restart and after a SIGKILL under `--fsync always`, and gets
// exactly the changes it missed (no gap, no duplicate, no 1010), then live ones; `since` outside the retention is
// 1010 as before; a history whose tail the disk lost, or a damaged one, gives 1010, never a gap.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct HistoryOnDiskTests {
    static func scratch() -> String {
        let path = NSTemporaryDirectory() + "kvod-history-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The next `count` change notifications of `client` as (new value, seq).
    static func changes(_ client: KVOClient, _ count: Int) throws -> [(JSONValue, Int64)] {
        try (0..<count).map { _ in
            let notification = try client.nextNotification(timeout: .seconds(5))
            #expect(notification.method == "change", "\(notification)")
            return (notification.params["new"] ?? .null, notification.params["seq"]?.intValue ?? -1)
        }
    }

    /// Sets `path` to each of `values` with `client`; returns the seqs.
    @discardableResult
    static func set(_ client: KVOClient, _ path: String, _ values: ClosedRange<Int>) throws -> [Int64] {
        try values.map { value in
            try client.call("set", ["path": .string(path), "value": .int(Int64(value))])["seq"]?.intValue ?? -1
        }
    }

    /// kvod stopped as `how` says: "SIGTERM" (graceful) or "SIGKILL".
    static func stop(_ server: KVODProcess, _ how: String) {
        if how == "SIGKILL" {
            server.command.send(signal: SIGKILL)
            _ = server.command.waitForExitStatus(timeout: .seconds(10))
        } else {
            #expect(server.stop() == 0)
        }
    }

    @Test("a subscriber resumes across a restart with exactly what it missed", arguments: ["SIGTERM", "SIGKILL"])
    func resumesAcrossARestart(how: String) throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always", "--snapshot-every", "4"]
        var server = try KVODProcess.start(arguments)
        let subscriber = try server.client()
        _ = try subscriber.call("subscribe", ["path": "counter", "options": ["new"]])
        let writer = try server.client()
        try Self.set(writer, "counter", 1...3)
        let seen = try Self.changes(subscriber, 3)
        #expect(seen.map(\.0) == [1, 2, 3])
        let lastSeen = try #require(seen.last?.1)
        subscriber.close()
        // Missed: two changes of the path, with other paths' mutations between them (and a snapshot at 4 records).
        let missed = try Self.set(writer, "counter", 4...4) + Self.set(writer, "other", 1...2)
            + Self.set(writer, "counter", 5...5)
        writer.close()
        Self.stop(server, how)

        server = try KVODProcess.start(arguments)
        #expect(server.waitForLog("subscription history loaded"))
        let after = try Self.set(try server.client(), "counter", 6...6)
        let resumed = try server.client()
        _ = try resumed.call("subscribe", ["path": "counter", "options": ["new"], "since": .int(lastSeen)])
        let replayed = try Self.changes(resumed, 3)
        #expect(replayed.map(\.0) == [4, 5, 6], "exactly the missed changes, in order")
        #expect(replayed.map(\.1) == [missed[0], missed[3], after[0]])
        // Then live, with nothing else queued before it.
        let live = try Self.set(try server.client(), "counter", 7...7)
        let next = try Self.changes(resumed, 1)
        #expect(next.map(\.0) == [7] && next.map(\.1) == live)
        #expect(resumed.pendingNotifications.isEmpty)
    }

    @Test func aSinceOutsideTheRetentionIsStill1010() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--history", "3"]
        var server = try KVODProcess.start(arguments)
        let client = try server.client()
        _ = try client.call("subscribe", ["path": "n", "options": ["new"]])
        try Self.set(client, "n", 1...6)
        #expect(server.stop() == 0)
        server = try KVODProcess.start(arguments)
        let resumed = try server.client()
        do {
            _ = try resumed.call("subscribe", ["path": "n", "since": 1])
            Issue.record("a since before the retention was resumed")
        } catch {
            guard case .server(let rpcError) = error else { throw error }
            #expect(rpcError.code == 1010)
            #expect(rpcError.message.contains("the history starts at 3"), "\(rpcError)")
        }
        // Inside it: the last three.
        _ = try resumed.call("subscribe", ["path": "n", "options": ["new"], "since": 3])
        #expect(try Self.changes(resumed, 3).map(\.0) == [4, 5, 6])
    }

    /// The journal has mutations the history does not (the disk kept one file's last write and not the other's):
    /// a resume from before them is refused rather than given with a gap.
    @Test func aHistoryBehindTheJournalGives1010NotAGap() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always"]
        var server = try KVODProcess.start(arguments)
        let client = try server.client()
        _ = try client.call("subscribe", ["path": "n", "options": ["new"]])
        try Self.set(client, "n", 1...4)
        server.command.send(signal: SIGKILL)
        _ = server.command.waitForExitStatus(timeout: .seconds(10))
        // Drop the history's last turn (the change of seq 4 and its `through`).
        let path = directory + "/history.log"
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        try (lines.dropLast(2).joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)

        server = try KVODProcess.start(arguments)
        let resumed = try server.client()
        do {
            _ = try resumed.call("subscribe", ["path": "n", "since": 2])
            Issue.record("resumed across changes the history does not have")
        } catch {
            guard case .server(let rpcError) = error else { throw error }
            #expect(rpcError.code == 1010, "\(rpcError)")
        }
        _ = try resumed.call("subscribe", ["path": "n", "options": ["new"], "since": 4])
        try Self.set(try server.client(), "n", 5...5)
        #expect(try Self.changes(resumed, 1).map(\.0) == [5])
    }

    @Test func aDamagedHistoryStartsEmptyWithAWarning() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory]
        var server = try KVODProcess.start(arguments)
        let client = try server.client()
        _ = try client.call("subscribe", ["path": "n", "options": ["new"]])
        try Self.set(client, "n", 1...3)
        #expect(server.stop() == 0)
        let path = directory + "/history.log"
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[1] = "00000000 " + lines[1].dropFirst(9)  // a wrong CRC before the last line: damage, not a torn tail
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)

        server = try KVODProcess.start(arguments)
        #expect(server.waitForLog("the subscription history on disk is damaged"))
        let resumed = try server.client()
        #expect(try resumed.call("get", ["path": "n"])["value"] == 3, "the data is unharmed")
        do {
            _ = try resumed.call("subscribe", ["path": "n", "since": 1])
            Issue.record("resumed from a damaged history")
        } catch {
            guard case .server(let rpcError) = error else { throw error }
            #expect(rpcError.code == 1010)
        }
    }
}
