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

    /// A transaction runs whole in one loop turn: its ops are limited (1,000 by default), apart from a batch's
    /// requests; so are an `onDisconnect`'s.
    @Test func transactionsAndOnDisconnectsHaveTheirOwnLimitOfOps() throws {
        #expect(Limits().maxTransactionOps == 1_000 && Limits().maxBatchRequests == 10_000)
        var limits = Limits()
        limits.maxTransactionOps = 3
        let server = InProcessServer(limits: limits)
        let peer = server.peer()
        func ops(_ count: Int) -> String {
            "[" + (0..<count).map { #"{"method":"set","params":{"path":"k\#($0)","value":\#($0)}}"# }.joined(separator: ",") + "]"
        }
        #expect(try peer.request(1, "transaction", #"{"ops":\#(ops(3))}"#)["result"]?["seq"] == 1)
        let refused = try peer.request(2, "transaction", #"{"ops":\#(ops(4))}"#)
        #expect(refused["error"]?["code"] == 1009 && refused["error"]?["data"] == .json(#"{"limit":3}"#))
        #expect(try peer.request(3, "get", #"{"path":"k3"}"#)["result"]?["value"] == .null)
        let onDisconnect = try peer.request(4, "onDisconnect", #"{"ops":\#(ops(4))}"#)
        #expect(onDisconnect["error"]?["code"] == 1009 && onDisconnect["error"]?["data"] == .json(#"{"limit":3}"#))
        // A batch of more requests than that is fine: its limit is its own.
        peer.send("[" + (5...9).map { InProcessServer.requestText($0, "ping") }.joined(separator: ",") + "]")
        #expect(try peer.receive().arrayValue?.count == 5)
    }

    /// A subscription's `context` is kept and sent with every notification: its size is limited like any input
    /// (issue 23: 300 contexts of 900 KB took 1.6 MB each).
    @Test func aContextLargerThanTheLimitIsRefused() throws {
        var limits = Limits()
        limits.maxContextBytes = 100
        let server = InProcessServer(limits: limits)
        let peer = server.peer()
        // 98 bytes of text: 100 as JSON, the limit exactly.
        let fits = String(repeating: "c", count: 98)
        #expect(try peer.request(1, "subscribe", #"{"path":"a","context":"\#(fits)"}"#)["result"] != nil)
        let refused = try peer.request(2, "subscribe", #"{"path":"b","context":["\#(fits)"]}"#)
        #expect(refused["error"]?["code"] == 1009 && refused["error"]?["data"] == .json(#"{"limit":100}"#))
        #expect(try peer.request(3, "stats")["result"]?["subscriptions"] == 1)
        // 0: no limit.
        limits.maxContextBytes = 0
        let unlimited = InProcessServer(limits: limits).peer()
        let large = String(repeating: "c", count: 100_000)
        #expect(try unlimited.request(1, "subscribe", #"{"path":"a","context":"\#(large)"}"#)["result"] != nil)
    }

    /// Unsubscribes end subscriptions where they are in the session's list (compacted now and then): every
    /// subscription stays findable, ended ones are unknown, and the count the limit checks is the live one.
    @Test func manyUnsubscribesKeepTheRestFindableAndTheCountRight() throws {
        var limits = Limits()
        limits.maxSubscriptionsPerConnection = 100
        let server = InProcessServer(limits: limits)
        let peer = server.peer()
        var ids: [Int64] = []
        for index in 0..<100 {
            ids.append(try peer.request(index, "subscribe", #"{"path":"p\#(index)"}"#)["result"]?["subscription"]?.intValue ?? -1)
        }
        #expect(try peer.request(100, "subscribe", #"{"path":"q"}"#)["error"]?["code"] == 1009)
        // End all but every tenth, in an order that compacts the list several times.
        let ended = ids.enumerated().filter { $0.offset % 10 != 0 }.map(\.element).reversed()
        for id in ended { #expect(try peer.request(200, "unsubscribe", #"{"subscription":\#(id)}"#)["result"] == true) }
        for id in ended.prefix(5) {
            #expect(try peer.request(201, "unsubscribe", #"{"subscription":\#(id)}"#)["error"]?["code"] == 1007)
        }
        #expect(try peer.request(202, "stats")["result"]?["subscriptions"] == 10)
        for id in stride(from: 0, to: 100, by: 10).map({ ids[$0] }) {
            #expect(try peer.request(203, "unsubscribe", #"{"subscription":\#(id)}"#)["result"] == true)
        }
        // All ended: 100 fit again.
        for index in 0..<100 { _ = try peer.request(300 + index, "subscribe", #"{"path":"r\#(index)"}"#) }
        #expect(try peer.request(400, "subscribe", #"{"path":"s"}"#)["error"]?["code"] == 1009)
        #expect(server.context.subscriptions.openCount == 100)
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
