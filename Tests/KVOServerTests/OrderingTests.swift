// The ordering guarantees of Protocol/README.md#ordering-guarantees: what the dispatcher queues for each session, in
// process (InProcessServer.swift); a connection closing under its subscriptions against a live kvod over real sockets.
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct OrderingTests {
    @Test func seqIncrementsPerMutationAndFailuresUseNone() throws {
        let server = InProcessServer()
        let peer = server.peer()
        #expect(try peer.request(1, "get", #"{"path":"x"}"#)["result"]?["seq"] == 0)
        #expect(try peer.request(2, "set", #"{"path":"x","value":5}"#)["result"] == .json(#"{"seq":1}"#))
        #expect(try peer.request(3, "set", #"{"path":"x.y","value":1}"#)["error"]?["code"] == 1005)
        #expect(try peer.request(4, "set", #"{"path":"y","value":true}"#)["result"] == .json(#"{"seq":2}"#))
        #expect(try peer.request(5, "get", #"{"path":"x"}"#)["result"] == .json(#"{"value":5,"seq":2}"#))
        #expect(try peer.request(6, "subscribe", #"{"path":"x"}"#)["result"]?["seq"] == 2)
    }

    @Test func notificationsComeBeforeTheSettersResponse() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "subscribe", #"{"path":"balance","options":["new","old","prior"]}"#)
        peer.send(Peer.requestText(2, "set", #"{"path":"balance","value":10}"#))
        let messages = try peer.receive(3)
        #expect(messages[0] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"balance","kind":"setting","old":null,"prior":true,"seq":1}}"#))
        #expect(messages[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"balance","kind":"setting","new":10,"old":null,"seq":1}}"#))
        #expect(messages[2] == .json(#"{"jsonrpc":"2.0","id":2,"result":{"seq":1}}"#))
    }

    @Test func everyConnectionSeesMutationOrder() throws {
        let server = InProcessServer()
        let watchers = (0..<5).map { _ in server.peer() }
        for (index, watcher) in watchers.enumerated() {
            _ = try watcher.request(index, "subscribe", #"{"path":"counter","options":["new"]}"#)
        }
        let setter = server.peer()
        // Pipelined: all sets in one go, the responses read afterwards.
        let count = 200
        for index in 1...count {
            setter.send(Peer.requestText(index, "set", #"{"path":"counter","value":\#(index)}"#))
        }
        let responses = try setter.receive(count)
        #expect(responses.map { $0["result"]?["seq"] } == (1...count).map { .int(Int64($0)) })
        for watcher in watchers {
            let notes = try watcher.receive(count)
            #expect(notes.map { $0["params"]?["seq"] } == (1...count).map { .int(Int64($0)) })
            #expect(notes.map { $0["params"]?["new"] } == (1...count).map { .int(Int64($0)) })
            try watcher.expectQuiet()
        }
    }

    @Test func severalSubscriptionsNestLikeBracketsOnOneConnection() throws {
        let server = InProcessServer()
        let peer = server.peer()
        for id in 1...3 {
            _ = try peer.request(id, "subscribe", #"{"path":"k","options":["prior"],"context":"s\#(id)"}"#)
        }
        peer.send(Peer.requestText(9, "set", #"{"path":"k","value":1}"#))
        let messages = try peer.receive(7)
        let order = messages.prefix(6).map { message -> String in
            let params = message["params"]
            return "\(params?["context"]?.stringValue ?? "?"):\(params?["prior"] == true ? "will" : "did")"
        }
        #expect(order == ["s1:will", "s2:will", "s3:will", "s3:did", "s2:did", "s1:did"])
        #expect(messages[6]["id"] == 9)
    }

    @Test func initialNotificationFollowsTheResponseAtOnce() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"name","value":"Savings"}"#)
        peer.send(Peer.requestText(2, "subscribe", #"{"path":"name","options":["initial","new","old"]}"#))
        let messages = try peer.receive(2)
        #expect(messages[0] == .json(#"{"jsonrpc":"2.0","id":2,"result":{"subscription":1,"seq":1}}"#))
        #expect(messages[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"name","kind":"setting","new":"Savings","initial":true,"seq":1}}"#))
        try peer.expectQuiet()
    }

    @Test func initialNotificationsFollowTheBatchResponse() throws {
        let server = InProcessServer()
        let peer = server.peer()
        let batch = "[" + [
            Peer.requestText(1, "subscribe", #"{"path":"a","options":["initial","new"]}"#),
            Peer.requestText(2, "set", #"{"path":"a","value":1}"#),
            Peer.requestText(3, "subscribe", #"{"path":"b","options":["initial","new"]}"#),
        ].joined(separator: ",") + "]"
        peer.send(batch)
        let messages = try peer.receive(4)
        // The set's notification is queued before the batch response (notifications before responses) ...
        #expect(messages[0]["params"]?["seq"] == 1)
        #expect(messages[0]["params"]?["initial"] == nil)
        #expect(messages[1].arrayValue?.map { $0["id"] } == [1, 2, 3])
        // ... and the initial notifications follow the response array, in batch order, with their subscribe's seq.
        #expect(messages[2]["params"]?["initial"] == true)
        #expect(messages[2]["params"]?["seq"] == 0)
        #expect(messages[2]["params"]?["new"] == .null)
        #expect(messages[3]["params"]?["path"] == "b")
        #expect(messages[3]["params"]?["seq"] == 1)
        try peer.expectQuiet()
    }

    @Test func unsubscribeIsImmediateAndOwnedByItsConnection() throws {
        let server = InProcessServer()
        let owner = server.peer()
        let other = server.peer()
        let subscription = try owner.request(1, "subscribe", #"{"path":"x","options":["new"]}"#)["result"]?["subscription"]
        #expect(subscription == 1)
        #expect(try other.request(1, "unsubscribe", #"{"subscription":1}"#)["error"]?["code"] == 1007)
        #expect(try owner.request(2, "unsubscribe", #"{"subscription":1}"#)["result"] == true)
        #expect(try owner.request(3, "unsubscribe", #"{"subscription":1}"#)["error"]?["code"] == 1007)
        _ = try other.request(2, "set", #"{"path":"x","value":1}"#)
        try owner.expectQuiet()
    }
}

/// A client that goes away: kvod notices the socket's close on a later loop turn, then exits cleanly.
@Suite(.serialized) struct OrderingOverWireTests {
    @Test func closingAConnectionRemovesItsSubscriptionsAndSparesOthers() throws {
        let server = try KVODProcess.start()
        let leaving = try Peer(server)
        let staying = try Peer(server)
        for id in 1...10 {
            _ = try leaving.request(id, "subscribe", #"{"path":"x","options":["new","old","prior"]}"#)
        }
        _ = try staying.request(1, "subscribe", #"{"path":"x","options":["new"]}"#)
        let setter = try Peer(server)
        let before = try setter.request(100, "observers", #"{"path":"x"}"#)["result"]?["connections"]?.arrayValue
        #expect(before?.map { $0["subscriptions"]?.arrayValue?.count } == [10, 1])
        leaving.close()
        // The server notices the close on its next loop turn: poll, bounded.
        var remaining: [JSONValue]? = before
        for attempt in 0..<200 where remaining?.count != 1 {
            remaining = try setter.request(101 + attempt, "observers", #"{"path":"x"}"#)["result"]?["connections"]?.arrayValue
        }
        #expect(remaining?.count == 1)
        #expect(remaining?.first?["subscriptions"]?.arrayValue?.count == 1)
        for id in 1...50 {
            #expect(try setter.request(id, "set", #"{"path":"x","value":\#(id)}"#)["result"]?["seq"] == .int(Int64(id)))
        }
        #expect(try staying.receive(50).last?["params"]?["new"] == 50)
        try staying.expectQuiet()
        #expect(server.stop() == 0)
    }
}
