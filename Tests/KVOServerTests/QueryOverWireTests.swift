// Queries as JSON-RPC messages (Protocol/methods.md#queries): `get` with a query, live query subscriptions with their
// exact notifications (kinds and indexes relative to the window, count, priors, context), the errors, and the end of
// a subscription; in process (InProcessServer.swift), on the default model and on an open root.
import Testing
import WireProtocol

@MainActor
@Suite struct QueryOverWireTests {
    /// Four employees in the default model's department: Ada 120 ($7), Bob 90 ($8), Cy 150 ($9), Di 110 ($10).
    static func staffed() throws -> (InProcessServer, InProcessPeer) {
        let server = InProcessServer(model: try InProcessServer.defaultModel())
        let peer = server.peer()
        let inserted = try peer.request(
            1, "insert",
            #"{"path":"department.employees","values":[{"name":"Ada","salary":120},{"name":"Bob","salary":90},{"name":"Cy","salary":150},{"name":"Di","salary":110}]}"#)
        #expect(inserted["result"]?["seq"] == 1)
        return (server, peer)
    }

    @Test func getGivesTheWindowAndTheCount() throws {
        let (_, peer) = try Self.staffed()
        let result = try peer.request(
            2, "get",
            #"{"path":"department.employees","query":{"where":"salary > 100","orderBy":[{"key":"salary","ascending":false}],"offset":1,"limit":2,"select":["name","salary"]}}"#)
        #expect(result["result"] == .json(
            #"{"value":[{"$id":7,"name":"Ada","salary":120.0},{"$id":10,"name":"Di","salary":110.0}],"count":3,"seq":1}"#))
        // Without orderBy: the array's order; without select: every stored key; past the end: an empty window.
        #expect(try peer.request(3, "get", #"{"path":"department.employees","query":{"limit":1}}"#)["result"] == .json(
            #"{"value":[{"$id":7,"name":"Ada","salary":120.0}],"count":4,"seq":1}"#))
        #expect(try peer.request(4, "get", #"{"path":"department.employees","query":{"offset":10}}"#)["result"] == .json(
            #"{"value":[],"count":4,"seq":1}"#))
        // Case-insensitive sort descriptors and "-key" strings.
        _ = try peer.request(5, "set", #"{"path":"$8.name","value":"alan"}"#)
        #expect(try peer.request(6, "get", #"{"path":"department.employees","query":{"orderBy":[{"key":"name","caseInsensitive":true}],"select":["name"]}}"#)["result"]?["value"] == .json(
            #"[{"$id":7,"name":"Ada"},{"$id":8,"name":"alan"},{"$id":9,"name":"Cy"},{"$id":10,"name":"Di"}]"#))
        #expect(try peer.request(7, "get", #"{"path":"department.employees","query":{"orderBy":["-name"],"select":["name"],"limit":1}}"#)["result"]?["value"] == .json(
            #"[{"$id":8,"name":"alan"}]"#))
        try peer.expectQuiet()
    }

    @Test func aLiveQueryTellsItsWindowsChanges() throws {
        let (_, peer) = try Self.staffed()
        let subscribed = try peer.request(
            2, "subscribe",
            #"{"path":"department.employees","query":{"where":"salary > 100","orderBy":["-salary"],"limit":2,"select":["name","salary"]},"options":["initial","new","old","prior"],"context":"top"}"#)
        #expect(subscribed["result"] == .json(#"{"subscription":1,"seq":1}"#))
        #expect(try peer.receive() == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"setting","new":[{"$id":9,"name":"Cy","salary":150.0},{"$id":7,"name":"Ada","salary":120.0}],"count":3,"initial":true,"seq":1}}"#))
        // Bob (90) climbs to the top: he starts matching and enters at 0, Ada is pushed out.
        peer.send(Peer.requestText(3, "set", #"{"path":"$8.salary","value":200}"#))
        #expect(try peer.receive(5) == [
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"removal","indexes":[1],"old":[{"$id":7,"name":"Ada","salary":120.0}],"count":4,"prior":true,"seq":2}}"#),
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"insertion","indexes":[0],"count":4,"prior":true,"seq":2}}"#),
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"removal","indexes":[1],"old":[{"$id":7,"name":"Ada","salary":120.0}],"count":4,"seq":2}}"#),
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"insertion","indexes":[0],"new":[{"$id":8,"name":"Bob","salary":200.0}],"count":4,"seq":2}}"#),
            .json(#"{"jsonrpc":"2.0","id":3,"result":{"seq":2,"value":200.0}}"#),
        ])
        // A shown element's selected key: a replacement at its index.
        peer.send(Peer.requestText(4, "set", #"{"path":"$9.name","value":"Cyrus"}"#))
        #expect(try peer.receive(3)[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"replacement","indexes":[1],"new":[{"$id":9,"name":"Cyrus","salary":150.0}],"old":[{"$id":9,"name":"Cy","salary":150.0}],"count":4,"seq":3}}"#))
        // A match below the window leaves: only the count changes (a replacement with no indexes).
        peer.send(Peer.requestText(5, "set", #"{"path":"$10.salary","value":50}"#))
        #expect(try peer.receive(3)[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"replacement","indexes":[],"new":[],"old":[],"count":3,"seq":4}}"#))
        // A key nobody reads: nothing at all.
        _ = try peer.request(6, "set", #"{"path":"department.name","value":"R&D"}"#)
        // An element removed from the collection (Bob, shown first): the window closes up and Ada comes in; one
        // inserted (Eve, 130) takes Ada's place: a replacement.
        peer.send(Peer.requestText(7, "remove", #"{"path":"department.employees","index":1}"#))
        let removal = try peer.receive(5)
        #expect(removal[2] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"removal","indexes":[0],"old":[{"$id":8,"name":"Bob","salary":200.0}],"count":2,"seq":6}}"#))
        #expect(removal[3] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"insertion","indexes":[1],"new":[{"$id":7,"name":"Ada","salary":120.0}],"count":2,"seq":6}}"#))
        peer.send(Peer.requestText(8, "insert", #"{"path":"department.employees","value":{"name":"Eve","salary":130}}"#))
        #expect(try peer.receive(3)[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"replacement","indexes":[1],"new":[{"$id":11,"name":"Eve","salary":130.0}],"old":[{"$id":7,"name":"Ada","salary":120.0}],"count":3,"seq":7}}"#))
        // The whole collection replaced: one setting with the new window.
        peer.send(Peer.requestText(9, "set", #"{"path":"department.employees","value":[{"name":"Zed","salary":500}]}"#))
        #expect(try peer.receive(3)[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"department.employees","context":"top","kind":"setting","new":[{"$id":12,"name":"Zed","salary":500.0}],"old":[{"$id":9,"name":"Cyrus","salary":150.0},{"$id":11,"name":"Eve","salary":130.0}],"count":1,"seq":8}}"#))
        // Unsubscribed: nothing more.
        #expect(try peer.request(10, "unsubscribe", #"{"subscription":1}"#)["result"] == true)
        _ = try peer.request(11, "set", #"{"path":"department.employees","value":[]}"#)
        try peer.expectQuiet()
    }

    @Test func aQueryOfScalarsAndOfASet() throws {
        let server = InProcessServer(model: try InProcessServer.defaultModel())
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"scores","value":[5,3,9,1]}"#)
        _ = try peer.request(
            2, "subscribe", #"{"path":"scores","query":{"where":"SELF > 2","orderBy":["self"]},"options":["initial","new"]}"#)
        #expect(try peer.receive()["params"]?["new"] == [3, 5, 9])
        peer.send(Peer.requestText(3, "insert", #"{"path":"scores","value":4}"#))
        let change = try peer.receive(2)[0]
        #expect(change["params"]?["kind"] == "insertion" && change["params"]?["indexes"] == [1] && change["params"]?["new"] == [4])
        // A set's own order is its members' order.
        _ = try peer.request(4, "union", #"{"path":"department.tags","values":["pear","apple","fig"]}"#)
        #expect(try peer.request(5, "get", #"{"path":"department.tags","query":{"limit":2}}"#)["result"]?["value"] == ["apple", "fig"])
    }

    @Test func badQueriesGetClearErrors() throws {
        let (_, peer) = try Self.staffed()
        let syntax = try peer.request(2, "get", #"{"path":"department.employees","query":{"where":"salary >"}}"#)["error"]
        #expect(syntax?["code"] == 1013 && syntax?["data"]?["column"] != nil)
        #expect(try peer.request(3, "get", #"{"path":"department.employees","query":{"where":"nope == 1"}}"#)["error"]?["code"] == 1001)
        #expect(try peer.request(4, "get", #"{"path":"department.employees","query":{"orderBy":["nope"]}}"#)["error"]?["code"] == 1001)
        #expect(try peer.request(5, "get", #"{"path":"department.employees","query":{"select":["nope"]}}"#)["error"]?["code"] == 1001)
        #expect(try peer.request(6, "get", #"{"path":"department.name","query":{}}"#)["error"]?["code"] == 1005)
        for (id, query) in [
            (7, #""query":{"offset":-1}"#), (8, #""query":{"limit":"x"}"#), (9, #""query":{"bogus":1}"#),
            (10, #""query":{"orderBy":[{"key":"name","up":true}]}"#), (11, #""query":[]"#),
            (12, #""query":{"select":["a..b"]}"#), (13, #""query":{},"meta":true"#), (14, #""query":{},"limit":1"#),
        ] {
            let error = try peer.request(id, "get", #"{"path":"department.employees",\#(query)}"#)["error"]
            #expect(error?["code"] == -32602, "\(query)")
        }
        #expect(try peer.request(15, "subscribe", #"{"path":"department.employees","query":{"where":"salary >"}}"#)["error"]?["code"] == 1013)
        try peer.expectQuiet()
    }

    @Test(arguments: [0, 10_000])
    func aClosedConnectionLeavesNoLiveQueryBehind(history: Int) throws {
        let server = InProcessServer(model: try InProcessServer.defaultModel(), historyCapacity: history)
        let peer = server.peer()
        let watcher = server.peer()
        _ = try watcher.request(1, "subscribe", #"{"path":"department.employees","query":{"orderBy":["salary"],"limit":3}}"#)
        _ = try watcher.request(2, "subscribe", #"{"path":"department.employees","query":{"where":"salary > 1"}}"#)
        // With a history, each distinct query has a recorder too (it outlives its subscribers, for `since`).
        let recorders = history > 0 ? 2 : 0
        #expect(server.graph.queryObservationCount == 2 + recorders)
        watcher.close()
        #expect(server.graph.queryObservationCount == recorders)
        _ = try peer.request(3, "insert", #"{"path":"department.employees","value":{"name":"Ada","salary":1}}"#)
        try peer.expectQuiet()
    }

    /// A query subscription resumes with `since`: exactly the changes its window had since, priors and afters as
    /// its options ask; from before its recorder started, or with another window, 1010.
    @Test func aQuerySubscriptionResumesWithSince() throws {
        let (server, peer) = try Self.staffed()
        let query = #""query":{"where":"salary > 100","orderBy":["-salary"],"limit":2,"select":["name"]}"#
        let first = server.peer()
        _ = try first.request(1, "subscribe", #"{"path":"department.employees",\#(query),"options":["new"]}"#)
        _ = try peer.request(2, "set", #"{"path":"$8.salary","value":200}"#)  // seq 2: Bob enters at 0, Ada leaves
        let missedOne = try first.receive(2)
        first.close()  // the connection is lost
        _ = try peer.request(3, "set", #"{"path":"$9.name","value":"Cyrus"}"#)  // seq 3: a replacement
        _ = try peer.request(4, "set", #"{"path":"$7.name","value":"Ada L."}"#)  // seq 4: not shown: nothing
        // Back, from seq 2: exactly seq 3's change.
        let back = server.peer()
        let resumed = try back.request(5, "subscribe", #"{"path":"department.employees",\#(query),"options":["new","old","prior"],"since":2}"#)
        #expect(resumed["result"]?["seq"] == 4)
        let replayed = try back.receive(2)
        #expect(replayed.map { $0["params"]?["seq"] } == [3, 3] && replayed[0]["params"]?["prior"] == true)
        #expect(replayed[1]["params"]?["kind"] == "replacement" && replayed[1]["params"]?["indexes"] == [1])
        #expect(replayed[1]["params"]?["new"] == .json(#"[{"$id":9,"name":"Cyrus"}]"#))
        #expect(replayed[1]["params"]?["old"] == .json(#"[{"$id":9,"name":"Cy"}]"#))
        try back.expectQuiet()
        #expect(missedOne.count == 2)
        // From seq 1 (the query was subscribed at seq 1): seq 2's two changes and seq 3's.
        let again = server.peer()
        _ = try again.request(6, "subscribe", #"{"path":"department.employees",\#(query),"options":["new"],"since":1}"#)
        #expect(try again.receive(3).map { $0["params"]?["seq"] } == [2, 2, 3])
        // Another window, never subscribed: 1010 with the oldest seq it could resume from.
        let other = try peer.request(
            7, "subscribe", #"{"path":"department.employees","query":{"limit":3},"options":["new"],"since":2}"#)["error"]
        #expect(other?["code"] == 1010 && other?["data"]?["oldest"] == 4)
    }
}
