// Presence (Protocol/methods.md#set "Expiring values", #ondisconnect) through the session core on a manual clock:
// a `ttl` expires as an ordinary, journaled mutation; `onDisconnect` ops run as one transaction when the session ends.
@testable import KVOServer
import ObjectGraph
import Testing
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
        ] {
            let reply = try server.request(peer, 1, "set", params)
            #expect(reply[0]["error"]?["code"] == -32602, "\(params)")
        }
        #expect(server.graph.seq == 0)
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
}
