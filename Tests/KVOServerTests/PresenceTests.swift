// Presence (Protocol/methods.md#set "Expiring values", #ondisconnect) through the session core on a manual clock:
// a `ttl` expires as an ordinary, journaled mutation; `onDisconnect` ops run as one transaction when the session ends;
// registrations are reported to the mutation log, and a journal replayed after a crash gives back those of the
// connections that were open, which then run once.
import Foundation
@testable import KVOServer
import Logging
import ObjectGraph
import Persistence
import Testing
import UVLoop
import WireProtocol

@MainActor
@Suite struct PresenceTests {
    @Test func aTTLExpiresAsAnOrdinaryJournaledMutation() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        let (_, watcher) = server.connect()
        _ = try server.request(watcher, 1, "subscribe", #"{"path":"presence.ada.online","options":["new","old"]}"#)
        let set = try server.request(peer, 1, "set", #"{"path":"presence.ada.online","value":true,"ttl":2}"#)
        #expect(set[0]["result"]?["seq"] == 1)
        // The journal holds the absolute deadline, not the ttl.
        let deadline = server.clock.epochMilliseconds + 2000
        #expect(server.log.records.last?.params?["expiresAt"] == .int(Int64(deadline)))
        #expect(server.log.records.last?.params?["ttl"] == nil)
        let meta = try server.request(peer, 2, "get", #"{"path":"presence.ada.online","meta":true}"#)
        #expect(meta[0]["result"]?["expires"] == .int(Int64(deadline)))
        _ = try watcher.takeMessages()
        server.clock.advance(milliseconds: 1999)
        server.core.tick()
        server.flush()
        #expect(try watcher.takeMessages().isEmpty)
        server.clock.advance(milliseconds: 1)
        server.core.tick()
        server.flush()
        let expired = try watcher.takeMessages()
        #expect(expired.count == 1)
        #expect(expired.first?["params"]?["new"] == .null && expired.first?["params"]?["old"] == true)
        #expect(expired.first?["params"]?["seq"] == 2)
        let record = try #require(server.log.records.last)
        #expect(record.seq == 2 && record.method == "set" && record.params?["value"] == .null)
        // The journal replays to the same graph: the expiry is the set of null it was journaled as.
        let replayed = Graph(model: .open)
        for record in server.log.records {
            try MutationRequest.replay(method: record.method, params: record.params, into: replayed)
        }
        #expect(try replayed.seq == 2 && replayed.get("presence.ada.online") == .null)
        #expect(replayed.nextDeadline == nil)
        let after = try server.request(peer, 3, "get", #"{"path":"presence.ada.online","meta":true}"#)
        #expect(after[0]["result"]?["expires"] == .null && after[0]["result"]?["value"] == .null)
    }

    @Test func aLaterSetMovesOrClearsTheDeadline() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"k","value":1,"ttl":1}"#)
        _ = try server.request(peer, 2, "set", #"{"path":"k","value":2,"ttl":10}"#)
        server.clock.advance(milliseconds: 5000)
        server.core.tick()
        #expect(try server.graph.get("k") == .int(2))
        _ = try server.request(peer, 3, "set", #"{"path":"k","value":3}"#)
        server.clock.advance(milliseconds: 10_000)
        server.core.tick()
        #expect(try server.graph.get("k") == .int(3))
        #expect(server.graph.nextDeadline == nil)
    }

    @Test func badTTLsAreRefused() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        for params in [
            #"{"path":"k","value":1,"ttl":0}"#, #"{"path":"k","value":1,"ttl":-1}"#, #"{"path":"k","value":1,"ttl":"5"}"#,
            #"{"path":"k","value":1,"ttl":31536001}"#, #"{"path":"k","value":1,"ttl":5,"expiresAt":5}"#,
            // `expiresAt` has `ttl`'s cap: a year after now (the manual clock's epoch 1,790,000,000,000), not more.
            #"{"path":"k","value":1,"expiresAt":1821536000001}"#,
            #"{"ops":[{"method":"set","params":{"path":"k","value":1,"expiresAt":4102444800000}}]}"#,
        ] {
            let method = params.hasPrefix(#"{"ops""#) ? "transaction" : "set"
            let reply = try server.request(peer, 1, method, params)
            #expect(reply[0]["error"]?["code"] == -32602, "\(params)")
        }
        #expect(server.graph.seq == 0)
        let atTheCap = try server.request(peer, 2, "set", #"{"path":"k","value":1,"expiresAt":1821536000000}"#)
        #expect(atTheCap[0]["result"]?["seq"] == 1)
        #expect(try server.request(peer, 3, "set", #"{"path":"k","value":1,"ttl":31536000}"#)[0]["result"]?["seq"] == 2)
    }

    @Test func onDisconnectOpsRunAsOneTransactionWhenTheSessionEnds() throws {
        let server = InProcessServer()
        let (ada, adaTransport) = server.connect()
        let (_, watcher) = server.connect()
        _ = try server.request(adaTransport, 1, "set", #"{"path":"presence.ada","value":{"online":true,"since":1}}"#)
        let registered = try server.request(
            adaTransport, 2, "onDisconnect",
            #"{"ops":[{"method":"set","params":{"path":"presence.ada.online","value":null}},{"method":"set","params":{"path":"presence.ada.since","value":null}}]}"#
        )
        #expect(registered[0]["result"]?["ops"] == 2)
        _ = try server.request(watcher, 1, "subscribe", #"{"path":"presence.ada.online","options":["new"]}"#)
        let seqBefore = server.graph.seq
        ada.transportEnded(error: true)  // the connection broke
        server.flush()
        #expect(server.graph.seq == seqBefore + 1)  // one transaction, one seq
        #expect(try server.graph.get("presence.ada.online") == .null && server.graph.get("presence.ada.since") == .null)
        #expect(try watcher.takeMessages().last?["params"]?["new"] == .null)
        #expect(server.log.records.last?.method == "transaction")
        #expect(server.context.stats.onDisconnectFailures == 0)
    }

    @Test func onDisconnectIsCheckedAtRegistrationReplacedAndCancelled() throws {
        let server = InProcessServer()
        let (first, firstTransport) = server.connect()
        let badShape = try server.request(firstTransport, 1, "onDisconnect", #"{"ops":[{"method":"get","params":{"path":"a"}}]}"#)
        #expect(badShape[0]["error"]?["code"] == -32602)
        let badPath = try server.request(
            firstTransport, 2, "onDisconnect",
            #"{"ops":[{"method":"set","params":{"path":"ok","value":1}},{"method":"set","params":{"path":"a..b","value":1}}]}"#)
        #expect(badPath[0]["error"]?["data"]?["op"] == 1)
        _ = try server.request(firstTransport, 3, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"x","value":1}}]}"#)
        _ = try server.request(firstTransport, 4, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"y","value":2}}]}"#)
        first.transportEnded(error: false)
        #expect(try server.graph.get("x") == .null && server.graph.get("y") == .int(2))
        let (second, secondTransport) = server.connect()
        _ = try server.request(secondTransport, 1, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"z","value":3}}]}"#)
        #expect(try server.request(secondTransport, 2, "onDisconnect", #"{"ops":[]}"#)[0]["result"]?["ops"] == 0)
        second.close(.serverShutdown)
        #expect(try server.graph.get("z") == .null)
    }

    @Test func failingOnDisconnectOpsApplyNothingAndAreCounted() throws {
        let server = InProcessServer()
        let (session, transport) = server.connect()
        _ = try server.request(transport, 1, "set", #"{"path":"lock","value":"mine"}"#)
        _ = try server.request(
            transport, 2, "onDisconnect",
            #"{"ops":[{"method":"set","params":{"path":"a","value":1}},{"method":"set","params":{"path":"lock","value":null,"if":{"value":"mine"}}}]}"#
        )
        let (_, other) = server.connect()
        _ = try server.request(other, 1, "set", #"{"path":"lock","value":"theirs"}"#)
        let seq = server.graph.seq
        session.transportEnded(error: false)
        #expect(server.graph.seq == seq)
        #expect(try server.graph.get("a") == .null && server.graph.get("lock") == .string("theirs"))
        #expect(server.context.stats.onDisconnectFailures == 1)
    }

    static let setNull = #"{"method":"set","params":{"path":"presence.ada.online","value":null}}"#

    @Test func registrationsAndDisconnectsAreReportedInOrder() throws {
        let server = InProcessServer()
        let (ada, adaTransport) = server.connect()
        let (bob, bobTransport) = server.connect()
        #expect(ada.durableID == "\(server.context.bootID)/\(ada.id)" && server.context.bootID.count == 16)
        // A new server (a restart) picks another boot id: durable ids never repeat.
        #expect(InProcessServer().context.bootID != server.context.bootID)
        _ = try server.request(adaTransport, 1, "onDisconnect", #"{"ops":[\#(Self.setNull)]}"#)
        _ = try server.request(adaTransport, 2, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"x","value":1}}]}"#)
        _ = try server.request(bobTransport, 1, "onDisconnect", #"{"ops":[]}"#)  // nothing to cancel: not reported
        _ = try server.request(bobTransport, 2, "onDisconnect", #"{"ops":[\#(Self.setNull)]}"#)
        _ = try server.request(bobTransport, 3, "onDisconnect", #"{"ops":[]}"#)
        // A refused registration is not reported.
        _ = try server.request(bobTransport, 4, "onDisconnect", #"{"ops":[{"method":"get","params":{"path":"a"}}]}"#)
        bob.transportEnded(error: false)  // cancelled: no disconnected record
        ada.transportEnded(error: true)
        let op = { (text: String) in JSONValue.json(text) }
        #expect(server.log.events == [
            .registered(connection: ada.durableID, ops: [op(Self.setNull)]),
            .registered(connection: ada.durableID, ops: [op(#"{"method":"set","params":{"path":"x","value":1}}"#)]),
            .registered(connection: bob.durableID, ops: [op(Self.setNull)]),
            .registered(connection: bob.durableID, ops: []),
            .disconnected(connection: ada.durableID),
            .committed(seq: 1, method: "transaction"),
        ])
    }

    @Test func failingOpsStillReportTheDisconnect() throws {
        let server = InProcessServer()
        let (session, transport) = server.connect()
        // Accepted now; its condition fails when it runs.
        let registered = try server.request(
            transport, 1, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"a","value":1,"if":{"value":7}}}]}"#)
        #expect(registered[0]["result"]?["ops"] == 1)
        session.transportEnded(error: false)
        #expect(server.log.events.last == .disconnected(connection: session.durableID))  // and no transaction
        #expect(server.context.stats.onDisconnectFailures == 1)
    }

    /// Drives a session core journaling into a real data directory (Durability, policy `no`, no snapshots).
    static func withDurability(
        _ path: String, graph: Graph? = nil, _ body: (InProcessServer, Durability) throws -> Void
    ) throws {
        let loop = try EventLoop()
        defer { #expect(loop.shutdown()) }
        let (directory, _) = try DataDirectory.open(path: path)
        let server = InProcessServer(graph: graph)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let durability = Durability(
            directory: directory, policy: .no, snapshotEvery: 0, graph: server.graph, loop: loop, logger: logger)
        server.context.mutationLog = durability
        // The context and its sessions hold each other: let go of the directory (and its lock) explicitly.
        defer { server.context.mutationLog = nil }
        try body(server, durability)
    }

    /// What a start finds in the data directory at `path` (the directory is closed again).
    static func recover(_ path: String) throws -> (Graph, OnDisconnectRegistrations) {
        let (directory, contents) = try DataDirectory.open(path: path)
        return try withExtendedLifetime(directory) { try Durability.recover(contents, model: .open, path: path) }
    }

    @Test func afterACrashTheRegistrationsOfOpenConnectionsRunOnce() throws {
        let path = NSTemporaryDirectory() + "kvod-presence-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: path) }
        var open: [String] = []
        try Self.withDurability(path) { server, _ in
            let (ada, adaTransport) = server.connect()
            let (bob, bobTransport) = server.connect()
            let (carl, carlTransport) = server.connect()
            // Registered before the first mutation: journaled at seq 0.
            _ = try server.request(bobTransport, 1, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"bob","value":"gone"}}]}"#)
            _ = try server.request(adaTransport, 1, "set", #"{"path":"presence.ada.online","value":true}"#)
            _ = try server.request(adaTransport, 2, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"x","value":0}}]}"#)
            _ = try server.request(adaTransport, 3, "onDisconnect", #"{"ops":[\#(Self.setNull),{"method":"set","params":{"path":"presence.ada.left","value":true,"ttl":60}}]}"#)
            _ = try server.request(carlTransport, 1, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"carl","value":"gone"}}]}"#)
            carl.transportEnded(error: false)  // ran at its close: not again after the crash
            _ = try server.request(bobTransport, 2, "set", #"{"path":"n","value":1}"#)
            server.flush()
            #expect(server.graph.seq == 3)
            open = [bob.durableID, ada.durableID]
            _ = ada
        }
        // The crash: the sessions of bob and ada never closed.
        let (graph, registrations) = try Self.recover(path)
        #expect(try graph.seq == 3 && graph.get("carl") == "gone" && graph.get("presence.ada.online") == true)
        #expect(registrations.lostConnections.map(\.connection) == open)  // in the order they first registered
        #expect(registrations.lostConnections.last?.ops.count == 2)
        try Self.withDurability(path, graph: graph) { server, _ in
            server.clock.epochMilliseconds += 5000
            #expect(server.core.runOnDisconnect(ofLostConnections: registrations.lostConnections) == 0)
            server.flush()
            #expect(server.log.records.isEmpty)  // journaled through Durability, not the recording log
            #expect(graph.seq == 5)  // one transaction each
            let bob = try graph.get("bob")
            let online = try graph.get("presence.ada.online")
            #expect(bob == "gone" && online == .null)
            // The ttl counts from the run, not from the registration.
            #expect(graph.nextDeadline == server.clock.epochMilliseconds + 60_000)
        }
        // The next start finds nothing left to run, and the same graph.
        let (replayed, left) = try Self.recover(path)
        #expect(try left.isEmpty && replayed.seq == 5 && replayed.get("bob") == "gone")
        #expect(try replayed.get("presence.ada.online") == .null && replayed.get("presence.ada.left") == true)
    }
}
