// Per-server and per-connection limits (Protocol/README.md#limits): connections beyond the limit are told why and
// closed (against a live kvod: accepting and closing sockets); subscriptions beyond the limit are refused with 1009 and
// the connection goes on (in process, InProcessServer.swift).
import Foundation
import KVOClient
@testable import KVOServer
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct LimitTests {
    @Test func subscriptionsBeyondTheLimitAreRefused() throws {
        var limits = Limits()
        limits.maxSubscriptionsPerConnection = 2
        let server = InProcessServer(limits: limits)
        let peer = server.peer()
        let first = try peer.request(1, "subscribe", #"{"path":"a"}"#)["result"]?["subscription"]
        _ = try peer.request(2, "subscribe", #"{"path":"b"}"#)
        let refused = try peer.request(3, "subscribe", #"{"path":"c"}"#)
        #expect(refused["error"]?["code"] == 1009)
        #expect(refused["error"]?["data"] == .json(#"{"limit":2}"#))
        // Unsubscribing makes room; another connection has its own allowance.
        _ = try peer.request(4, "unsubscribe", #"{"subscription":\#(first?.intValue ?? 0)}"#)
        #expect(try peer.request(5, "subscribe", #"{"path":"c"}"#)["result"] != nil)
        peer.send(#"[{"jsonrpc":"2.0","id":6,"method":"subscribe","params":{"path":"d"}},{"jsonrpc":"2.0","id":7,"method":"ping"}]"#)
        let batch = try peer.receive()
        #expect(batch.arrayValue?.first?["error"]?["code"] == 1009)
        #expect(batch.arrayValue?.last?["result"] == "pong")
        let other = server.peer()
        #expect(try other.request(1, "subscribe", #"{"path":"a"}"#)["result"] != nil)
        #expect(try other.request(2, "stats")["result"]?["subscriptions"] == 3)
    }
}

/// The connection limit: sockets accepted, told and closed by a live kvod.
@Suite(.serialized) struct LimitOverWireTests {
    @Test func aConnectionBeyondTheLimitGetsClosingAndIsClosed() throws {
        let server = try KVODProcess.start(["--max-connections", "2"])
        let first = try Peer(server)
        let second = try Peer(server)
        _ = try first.request(1, "ping")
        _ = try second.request(1, "ping")
        let third = try Peer(server)
        #expect(try third.receive() == .json(#"{"jsonrpc":"2.0","method":"closing","params":{"reason":"too_many_connections"}}"#))
        #expect(throws: KVOClientError.self) { try third.receive(timeout: .seconds(5)) }
        // Once one leaves, a new connection is accepted again.
        first.close()
        var accepted: Peer?
        for _ in 0..<100 where accepted == nil {
            let next = try Peer(server)
            try next.send(Peer.requestText(1, "ping"))
            if (try? next.receive())?["result"] == "pong" { accepted = next } else { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(accepted != nil)
        let stats = try second.request(2, "stats")["result"]
        #expect((stats?["closes"]?["too_many_connections"]?.intValue ?? 0) >= 1)
        #expect(stats?["connections"] == 2)
        #expect(server.waitForLog("too_many_connections"))
    }
}
