// To-many mutations, collection operators and transactions as JSON-RPC messages, with exact notification contents;
// in process (InProcessServer.swift), on an empty open root or kvod's default model.
import Testing
import WireProtocol

@MainActor
@Suite struct CollectionOverWireTests {
    @Test func orderedMutationsWithAllOptions() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"list","value":["a","b","c"]}"#)
        _ = try peer.request(2, "subscribe", #"{"path":"list","options":["new","old","prior"]}"#)
        peer.send(Peer.requestText(3, "insert", #"{"path":"list","indexes":[1,4],"values":["x","y"]}"#))
        #expect(try peer.receive(3) == [
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"list","kind":"insertion","indexes":[1,4],"prior":true,"seq":2}}"#),
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"list","kind":"insertion","indexes":[1,4],"new":["x","y"],"seq":2}}"#),
            .json(#"{"jsonrpc":"2.0","id":3,"result":{"seq":2}}"#),
        ])
        peer.send(Peer.requestText(4, "remove", #"{"path":"list","indexes":[2,0]}"#))
        #expect(try peer.receive(3) == [
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"list","kind":"removal","indexes":[0,2],"old":["a","b"],"prior":true,"seq":3}}"#),
            .json(#"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"list","kind":"removal","indexes":[0,2],"old":["a","b"],"seq":3}}"#),
            .json(#"{"jsonrpc":"2.0","id":4,"result":{"seq":3}}"#),
        ])
        peer.send(Peer.requestText(5, "replace", #"{"path":"list","index":0,"value":"X"}"#))
        #expect(try peer.receive(3)[1] == .json(
            #"{"jsonrpc":"2.0","method":"change","params":{"subscription":1,"path":"list","kind":"replacement","indexes":[0],"new":["X"],"old":["x"],"seq":4}}"#))
        #expect(try peer.request(6, "get", #"{"path":"list"}"#)["result"]?["value"] == .json(#"["X","c","y"]"#))
        // Out of range changes nothing; a mutation of a non-collection is 1005.
        let outOfRange = try peer.request(7, "remove", #"{"path":"list","index":3}"#)["error"]
        #expect(outOfRange?["code"] == 1004)
        #expect(outOfRange?["data"]?["index"] == 3 && outOfRange?["data"]?["count"] == 3)
        _ = try peer.request(8, "set", #"{"path":"n","value":5}"#)
        #expect(try peer.request(9, "insert", #"{"path":"n","index":0,"value":1}"#)["error"]?["code"] == 1005)
        #expect(try peer.request(10, "insert", #"{"path":"list","indexes":[0],"values":[1,2]}"#)["error"]?["code"] == -32602)
        #expect(try peer.request(11, "get", #"{"path":"list"}"#)["result"]?["seq"] == 5)
        try peer.expectQuiet()
    }

    @Test func getReadsAPageOfAToManyWithItsCount() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"list","value":[0,1,2,3,4,5,6,7,8,9]}"#)
        let page = try peer.request(2, "get", #"{"path":"list","offset":3,"limit":4}"#)["result"]
        #expect(page == .json(#"{"value":[3,4,5,6],"seq":1,"count":10}"#))
        // Past the end: what there is; offset alone reads to the end, limit alone from the start; limit 0 counts.
        #expect(try peer.request(3, "get", #"{"path":"list","offset":8,"limit":5}"#)["result"]?["value"] == .json("[8,9]"))
        #expect(try peer.request(4, "get", #"{"path":"list","offset":12}"#)["result"] == .json(#"{"value":[],"seq":1,"count":10}"#))
        #expect(try peer.request(5, "get", #"{"path":"list","limit":2}"#)["result"]?["value"] == .json("[0,1]"))
        #expect(try peer.request(6, "get", #"{"path":"list","limit":0}"#)["result"] == .json(#"{"value":[],"seq":1,"count":10}"#))
        // By position: path, meta, offset, limit; with meta, the collection key's modSeq too.
        let meta = try peer.request(7, "get", #"["list",true,9,1]"#)["result"]
        #expect(meta == .json(#"{"value":[9],"seq":1,"count":10,"modSeq":1,"expires":null}"#))
        // Objects in the page are written out; a never-set collection is an empty one.
        _ = try peer.request(8, "set", #"{"path":"team","value":[{"name":"Ada"},{"name":"Grace"},{"name":"Edsger"}]}"#)
        let objects = try peer.request(9, "get", #"{"path":"team","offset":1,"limit":1}"#)["result"]
        let grace = objects?["value"]?.arrayValue?.first
        #expect(grace?["name"] == "Grace" && grace?["$id"] != nil && objects?["count"] == 3)
        #expect(try peer.request(10, "get", #"{"path":"nothing","limit":5}"#)["result"]?["count"] == 0)
        // Bad bounds and a page of something else are errors.
        for (id, params) in [(11, #"{"path":"list","offset":-1}"#), (12, #"{"path":"list","limit":1.5}"#),
                             (13, #"{"path":"list","limit":"2"}"#)] {
            let error = try peer.request(id, "get", params)["error"]
            #expect(error?["code"] == -32602, "\(params)")
        }
        _ = try peer.request(14, "set", #"{"path":"n","value":5}"#)
        #expect(try peer.request(15, "get", #"{"path":"n","limit":1}"#)["error"]?["code"] == 1005)
        try peer.expectQuiet()
    }

    @Test func objectsInCollectionsAreAddressableAndOperatorsWork() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"team","value":{"members":[{"name":"Ada","salary":100},{"name":"Grace","salary":200}]}}"#)
        #expect(try peer.request(2, "get", #"{"path":"team.members.name"}"#)["result"]?["value"] == .json(#"["Ada","Grace"]"#))
        #expect(try peer.request(3, "get", #"{"path":"team.members.@sum.salary"}"#)["result"]?["value"] == 300)
        #expect(try peer.request(4, "get", #"{"path":"team.members.@avg.salary"}"#)["result"]?["value"] == 150.0)
        #expect(try peer.request(5, "get", #"{"path":"team.members.@count"}"#)["result"]?["value"] == 2)
        let members = try peer.request(6, "get", #"{"path":"team.members"}"#)["result"]?["value"]?.arrayValue
        guard let adaID = members?.first?["$id"]?.intValue else {
            Issue.record("members have no $id")
            return
        }
        _ = try peer.request(7, "subscribe", #"{"path":"team.members.@count","options":["new","old"]}"#)
        _ = try peer.request(8, "subscribe", #"{"path":"$\#(adaID).salary","options":["new"]}"#)
        peer.send(Peer.requestText(9, "set", #"{"path":"$\#(adaID).salary","value":150}"#))
        #expect(try peer.receive(2)[0]["params"]?["new"] == 150)
        peer.send(Peer.requestText(10, "insert", #"{"path":"team.members","value":{"$ref":\#(adaID)}}"#))
        let notes = try peer.receive(2)
        #expect(notes[0]["params"]?["kind"] == "setting")
        #expect(notes[0]["params"]?["old"] == 2 && notes[0]["params"]?["new"] == 3)
        // The same object twice: the second visit is a reference.
        let twice = try peer.request(11, "get", #"{"path":"team.members"}"#)["result"]?["value"]?.arrayValue
        #expect(twice?[2] == .json(#"{"$ref":\#(adaID)}"#))
    }

    @Test func setsNotifyOnlyActualMembers() throws {
        // Sets are declared in a model; the default model's department has a set of strings `tags`.
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        _ = try peer.request(1, "subscribe", #"{"path":"department.tags","options":["new","old"]}"#)
        peer.send(Peer.requestText(2, "union", #"{"path":"department.tags","values":["a","b","a"]}"#))
        #expect(try peer.receive(2)[0]["params"] == .json(#"{"subscription":1,"path":"department.tags","kind":"insertion","new":["a","b"],"seq":1}"#))
        peer.send(Peer.requestText(3, "remove", #"{"path":"department.tags","values":["a","z"]}"#))
        #expect(try peer.receive(2)[0]["params"] == .json(#"{"subscription":1,"path":"department.tags","kind":"removal","old":["a"],"seq":2}"#))
        peer.send(Peer.requestText(4, "setMembers", #"{"path":"department.tags","values":["b","c"]}"#))
        #expect(try peer.receive(2)[0]["params"] == .json(#"{"subscription":1,"path":"department.tags","kind":"replacement","new":["c"],"old":[],"seq":3}"#))
        #expect(try peer.request(5, "insert", #"{"path":"department.tags","index":0,"value":"x"}"#)["error"]?["code"] == 1005)
    }

    @Test func totalSalaryFollowsEmployees() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        _ = try peer.request(1, "subscribe", #"{"path":"department.totalSalary","options":["new","old","prior"]}"#)
        peer.send(Peer.requestText(2, "insert", #"{"path":"department.employees","value":{"name":"Ada","salary":100}}"#))
        let first = try peer.receive(3)
        #expect(first[0]["params"]?["prior"] == true && first[0]["params"]?["old"] == 0)
        #expect(first[1]["params"]?["new"] == 100.0)
        let employees = try peer.request(3, "get", #"{"path":"department.employees"}"#)["result"]?["value"]?.arrayValue
        guard let adaID = employees?.first?["$id"]?.intValue else {
            Issue.record("no employee id")
            return
        }
        peer.send(Peer.requestText(4, "set", #"{"path":"$\#(adaID).salary","value":120}"#))
        #expect(try peer.receive(3)[1]["params"]?["new"] == 120.0)
        peer.send(Peer.requestText(5, "remove", #"{"path":"department.employees","index":0}"#))
        #expect(try peer.receive(3)[1]["params"]?["new"] == 0)
        // A removed employee no longer affects the total.
        #expect(try peer.request(6, "set", #"{"path":"$\#(adaID).salary","value":999}"#)["result"] != nil)
        try peer.expectQuiet()
    }

    @Test func transactionsAreAtomicWithOneSeq() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"a","value":1}"#)
        _ = try peer.request(2, "subscribe", #"{"path":"a","options":["new","old","prior"],"context":"A"}"#)
        _ = try peer.request(3, "subscribe", #"{"path":"list","options":["new","prior"],"context":"L"}"#)
        let ops = #"[{"method":"set","params":{"path":"list","value":[]}},{"method":"insert","params":{"path":"list","value":1}},{"method":"set","params":{"path":"a","value":2}},{"method":"set","params":{"path":"a","value":3}}]"#
        peer.send(Peer.requestText(4, "transaction", #"{"ops":\#(ops)}"#))
        let messages = try peer.receive(5)
        #expect(messages.prefix(4).map { "\($0["params"]?["context"]?.stringValue ?? ""):\($0["params"]?["prior"] == true)" } == [
            "L:true", "A:true", "A:false", "L:false",
        ])
        #expect(messages[2]["params"]?["old"] == 1 && messages[2]["params"]?["new"] == 3)
        #expect(messages[3]["params"]?["new"] == .json("[1]"))
        #expect(messages.prefix(4).allSatisfy { $0["params"]?["seq"] == 2 })
        #expect(messages[4] == .json(#"{"jsonrpc":"2.0","id":4,"result":{"seq":2}}"#))
        // A failing op: nothing applied, nobody notified, data.op names it.
        let failing = #"[{"method":"set","params":{"path":"a","value":10}},{"method":"remove","params":{"path":"list","index":7}}]"#
        let error = try peer.request(5, "transaction", #"{"ops":\#(failing)}"#)["error"]
        #expect(error?["code"] == 1004)
        #expect(error?["data"]?["op"] == 1)
        #expect(try peer.request(6, "get", #"{"path":"a"}"#)["result"] == .json(#"{"value":3,"seq":2}"#))
        #expect(try peer.request(7, "transaction", #"{"ops":[{"method":"get","params":{"path":"a"}}]}"#)["error"]?["code"] == -32602)
        try peer.expectQuiet()
    }
}
