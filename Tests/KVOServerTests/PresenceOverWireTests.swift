// Presence at the wire, with real kvod processes (Protocol/methods.md#set "Expiring values", #ondisconnect):
// a `ttl` expires with notifications, and its deadline survives a restart (clean or SIGKILL); `onDisconnect` ops run
// on every kind of close: the client's close, a reset, a line too long, a slow consumer, kvod's shutdown. (SIGKILL and
// restart: DurableOnDisconnectTests.)
import Foundation
import TestSupport
import Testing
import WireProtocol

@Suite struct PresenceOverWireTests {
    /// Registers `set PATH null` to run when `peer`'s connection ends.
    static func clearOnDisconnect(_ peer: Peer, _ path: String) throws {
        let ops = #"{"ops":[{"method":"set","params":{"path":"\#(path)","value":null}}]}"#
        #expect(try peer.request(90, "onDisconnect", ops)["result"]?["ops"] == 1)
    }

    /// Waits (bounded) until `path` reads null; returns what it read last.
    static func waitForNull(_ server: KVODProcess, _ path: String, seconds: Double = 10) throws -> JSONValue? {
        let reader = try Peer(server)
        var value: JSONValue?
        let deadline = Date(timeIntervalSinceNow: seconds)
        repeat {
            value = try reader.request(1, "get", #"{"path":"\#(path)"}"#)["result"]?["value"]
            if value == .null { break }
            Thread.sleep(forTimeInterval: 0.05)
        } while Date() < deadline
        return value
    }

    @Test func aTTLExpiresWithNotifications() throws {
        let server = try KVODProcess.start()
        let watcher = try Peer(server)
        let writer = try Peer(server)
        _ = try watcher.request(1, "subscribe", #"{"path":"presence.ada.online","options":["new","old"]}"#)
        let set = try writer.request(1, "set", #"{"path":"presence.ada.online","value":true,"ttl":0.5}"#)
        let seq = try #require(set["result"]?["seq"]?.intValue)
        let online = try watcher.receive()
        #expect(online["params"]?["new"] == true && online["params"]?["seq"] == .int(seq))
        // Within the ttl plus the quarter-second tick (and generous slack for a loaded machine).
        let expired = try watcher.receive(timeout: .seconds(10))
        #expect(expired["method"] == "change")
        #expect(expired["params"]?["old"] == true && expired["params"]?["new"] == .null)
        #expect(expired["params"]?["seq"] == .int(seq + 1))
        let meta = try writer.request(2, "get", #"{"path":"presence.ada.online","meta":true}"#)["result"]
        #expect(meta?["expires"] == .null && meta?["modSeq"] == .int(seq + 1))
        #expect(server.stop() == 0)
    }

    @Test("a deadline survives a restart", arguments: ["clean", "SIGKILL"])
    func aDeadlineSurvivesARestart(stop: String) throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always"]
        let expires: Int64
        do {
            let server = try KVODProcess.start(arguments)
            let peer = try Peer(server)
            _ = try peer.request(1, "set", #"{"path":"long","value":1,"ttl":3600}"#)
            _ = try peer.request(2, "set", #"{"path":"short","value":1,"ttl":2}"#)
            expires = try #require(
                peer.request(3, "get", #"{"path":"long","meta":true}"#)["result"]?["expires"]?.intValue)
            if stop == "clean" {
                #expect(server.stop() == 0)
            } else {
                server.command.send(signal: SIGKILL)
                #expect(server.command.waitForExitStatus(timeout: .seconds(5)) != nil)
            }
        }
        let server = try KVODProcess.start(arguments)
        let peer = try Peer(server)
        // The same absolute deadline, not a new ttl from the restart.
        #expect(try peer.request(1, "get", #"{"path":"long","meta":true}"#)["result"]?["expires"] == .int(expires))
        // The short one expires after the restart, as an ordinary mutation that reaches a subscriber.
        _ = try peer.request(2, "subscribe", #"{"path":"short","options":["new"]}"#)
        var sawExpiry = false
        let deadline = Date(timeIntervalSinceNow: 10)
        while !sawExpiry && Date() < deadline {
            if try peer.request(3, "get", #"{"path":"short"}"#)["result"]?["value"] == .null {
                sawExpiry = true  // (already expired before the subscription: no notification to wait for)
                break
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(sawExpiry)
        #expect(server.stop() == 0)
    }

    @Test func onDisconnectRunsOnEveryKindOfClose() throws {
        let server = try KVODProcess.start([
            "--max-line-bytes", "65536", "--output-hard-limit-bytes", "262144", "--output-soft-limit-bytes", "0",
        ])
        let setter = try Peer(server)

        // The client closes its end.
        let leaving = try Peer(server)
        _ = try leaving.request(1, "set", #"{"path":"p.closed","value":true}"#)
        try Self.clearOnDisconnect(leaving, "p.closed")
        leaving.client.close()
        #expect(try Self.waitForNull(server, "p.closed") == .null)

        // The connection is reset.
        let reset = try Peer(server)
        _ = try reset.request(1, "set", #"{"path":"p.reset","value":true}"#)
        try Self.clearOnDisconnect(reset, "p.reset")
        HostileInputTests.resetOnClose(reset)
        reset.client.close()
        #expect(try Self.waitForNull(server, "p.reset") == .null)

        // kvod closes it for a line too long.
        let long = try Peer(server)
        _ = try long.request(1, "set", #"{"path":"p.long","value":true}"#)
        try Self.clearOnDisconnect(long, "p.long")
        try long.send(String(repeating: "x", count: 70_000))
        #expect(try long.receive()["error"]?["code"] == 1009)
        #expect(try Self.waitForNull(server, "p.long") == .null)

        // kvod closes a slow consumer: it subscribes to big values and never reads.
        let slow = try Peer(server)
        _ = try slow.request(1, "set", #"{"path":"p.slow","value":true}"#)
        try Self.clearOnDisconnect(slow, "p.slow")
        _ = try slow.request(2, "subscribe", #"{"path":"big","options":["new"]}"#)
        let padding = String(repeating: "x", count: 16_384)
        var closed = false
        for index in 1...2_000 where !closed {
            _ = try setter.request(index, "set", #"{"path":"big","value":"\#(padding)"}"#)
            if index % 20 == 0 {
                closed = try setter.request(10_000 + index, "stats")["result"]?["closes"]?["slow_consumer"] == 1
            }
        }
        #expect(closed)
        #expect(try Self.waitForNull(server, "p.slow") == .null)

        // kvod shuts down: the ops run at the close, before kvod exits.
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(server.stop() == 0)
        let durable = try KVODProcess.start(["--data-dir", directory])
        let staying = try Peer(durable)
        _ = try staying.request(1, "set", #"{"path":"p.shutdown","value":true}"#)
        try Self.clearOnDisconnect(staying, "p.shutdown")
        #expect(durable.stop() == 0)
        let restarted = try KVODProcess.start(["--data-dir", directory])
        let reader = try Peer(restarted)
        let after = try reader.request(1, "get", #"{"path":"p.shutdown"}"#)["result"]
        #expect(after?["value"] == .null && after?["seq"] == 2)
        #expect(restarted.stop() == 0)
    }

    @Test func aRestrictedTokensOnDisconnectOpsAreCheckedOpByOp() throws {
        let scratch = try ScratchDirectory("presence-tokens")
        let file = try scratch.write("tokens", "ada read-write presence.ada.**\nviewer read-only presence.**\n")
        let server = try KVODProcess.start(["--token-file", file])
        let ada = try Peer(server)
        _ = try ada.request(1, "hello", #"{"token":"ada"}"#)
        let refused = try ada.request(
            2, "onDisconnect",
            #"{"ops":[{"method":"set","params":{"path":"presence.ada.online","value":null}},{"method":"set","params":{"path":"presence.bob.online","value":null}}]}"#
        )
        #expect(refused["error"]?["code"] == 1008)
        #expect(refused["error"]?["data"]?["op"] == 1 && refused["error"]?["data"]?["path"] == "presence.bob.online")
        let granted = try ada.request(
            3, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"presence.ada.online","value":null}}]}"#)
        #expect(granted["result"]?["ops"] == 1)
        let viewer = try Peer(server)
        _ = try viewer.request(1, "hello", #"{"token":"viewer"}"#)
        let readOnly = try viewer.request(
            2, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"presence.x","value":null}}]}"#)
        #expect(readOnly["error"]?["data"]?["reason"] == "read-only token")
        #expect(server.stop() == 0)
    }
}
