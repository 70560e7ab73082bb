// onDisconnect registrations that survive a crash (issue 13; Protocol/methods.md#ondisconnect, docs/DURABILITY.md),
// with real kvod processes: after SIGKILL the registrations of connections that were open run at the next start,
// before any client is served, exactly once; also when a background snapshot made the journal that held the
// registration redundant (the roll carried it); a clean stop runs them at the close and never again.
import Foundation
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct DurableOnDisconnectTests {
    static let register =
        #"{"ops":[{"method":"set","params":{"path":"presence.ada.online","value":null}},{"method":"insert","params":{"path":"log","value":"ada left"}}]}"#

    /// Sets `presence.ada.online` to true and registers the onDisconnect ops; returns the set's seq.
    static func goOnline(_ peer: Peer) throws -> Int64 {
        let set = try peer.request(1, "set", #"{"path":"presence.ada.online","value":true}"#)
        let seq = try #require(set["result"]?["seq"]?.intValue)
        #expect(try peer.request(2, "onDisconnect", Self.register)["result"]?["ops"] == 2)
        return seq
    }

    /// The first thing a new client sees: the value and the seq of the graph.
    static func presence(_ server: KVODProcess) throws -> (value: JSONValue?, seq: Int64?, log: JSONValue?) {
        let peer = try Peer(server)
        let online = try peer.request(1, "get", #"{"path":"presence.ada.online"}"#)["result"]
        let log = try peer.request(2, "get", #"{"path":"log"}"#)["result"]?["value"]
        return (online?["value"], online?["seq"]?.intValue, log)
    }

    static func kill(_ server: KVODProcess) {
        server.command.send(signal: SIGKILL)
        #expect(server.command.waitForExitStatus(timeout: .seconds(5)) != nil)
    }

    @Test("after SIGKILL the registration runs at the next start, once", arguments: ["always", "everysec"])
    func sigkill(policy: String) throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", policy]
        let seq: Int64
        do {
            let server = try KVODProcess.start(arguments)
            let ada = try Peer(server)
            seq = try Self.goOnline(ada)
            Self.kill(server)  // ada's connection never closed
        }
        do {
            let server = try KVODProcess.start(arguments)
            let seen = try Self.presence(server)
            #expect(seen.value == .null && seen.log == .json(#"["ada left"]"#))
            #expect(seen.seq == seq + 1)  // one transaction
            #expect(server.waitForLog("ran the onDisconnect ops of connections open at the crash"))
            Self.kill(server)
        }
        let server = try KVODProcess.start(arguments)
        let seen = try Self.presence(server)
        #expect(seen.seq == seq + 1 && seen.log == .json(#"["ada left"]"#))  // not run again
        #expect(!server.stderrText.contains("ran the onDisconnect ops"))
        #expect(server.stop() == 0)
    }

    @Test func aBackgroundSnapshotCarriesTheRegistrationIntoTheNewJournal() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always", "--snapshot-every", "3"]
        var seq: Int64
        do {
            let server = try KVODProcess.start(arguments)
            let ada = try Peer(server)
            seq = try Self.goOnline(ada)
            let writer = try Peer(server)
            for index in 1...8 {
                seq = try #require(writer.request(index, "set", #"{"path":"k\#(index)","value":\#(index)}"#)["result"]?["seq"]?.intValue)
            }
            // Wait until the snapshots are in place and every rolled segment (the registration's first record was in
            // one) is deleted: the registration now lives only where the rolls carried it.
            let files = { (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] }
            let deadline = ContinuousClock.now + .seconds(10)
            while ContinuousClock.now < deadline
                && (files().contains { $0.hasPrefix("journal.") && $0 != "journal.log" || $0.hasSuffix(".tmp") }
                    || !files().contains("snapshot.kvs"))
            {
                Thread.sleep(forTimeInterval: 0.02)
            }
            #expect(files().sorted() == ["history.log", "journal.log", "kvod.lock", "snapshot.kvs"])
            #expect(server.waitForLog("snapshot written"))
            let journal = try String(contentsOfFile: directory + "/journal.log", encoding: .utf8)
            #expect(journal.contains(#""method":"onDisconnect""#))
            Self.kill(server)
        }
        do {
            let server = try KVODProcess.start(arguments)
            let seen = try Self.presence(server)
            #expect(seen.value == .null && seen.log == .json(#"["ada left"]"#))
            #expect(seen.seq == seq + 1)
            Self.kill(server)
        }
        let server = try KVODProcess.start(arguments)
        #expect(try Self.presence(server).seq == seq + 1)
        #expect(server.stop() == 0)
    }

    @Test func aCleanStopRunsThemOnceAtTheClose() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory]
        let seq: Int64
        do {
            let server = try KVODProcess.start(arguments)
            let ada = try Peer(server)
            seq = try Self.goOnline(ada)
            #expect(server.stop() == 0)  // SIGTERM: ada's session closes, its ops run and are journaled
        }
        for _ in 0..<2 {
            let server = try KVODProcess.start(arguments)
            let seen = try Self.presence(server)
            #expect(seen.value == .null && seen.log == .json(#"["ada left"]"#))
            #expect(seen.seq == seq + 1)
            #expect(!server.stderrText.contains("ran the onDisconnect ops"))
            #expect(server.stop() == 0)
        }
    }
}
