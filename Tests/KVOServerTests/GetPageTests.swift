// `get` with `offset` and `limit` (Protocol/methods.md#get): a page of a collection and its count, for listing a large
// to-many a page at a time (`kvoctl ls`); in process (InProcessServer.swift).
import Testing
import WireProtocol

@MainActor
@Suite struct GetPageTests {
    @Test func aPageOfAnOrderedCollectionWithItsCount() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"list","value":[0,1,2,3,4,5,6,7,8,9]}"#)
        #expect(try peer.request(2, "get", #"{"path":"list","offset":3,"limit":4}"#)["result"]
            == .json(#"{"value":[3,4,5,6],"count":10,"seq":1}"#))
        // Clamped to the collection: past its end is empty; only `limit` starts at 0; only `offset` runs to the end.
        #expect(try peer.request(3, "get", #"{"path":"list","offset":8,"limit":5}"#)["result"]?["value"] == .json("[8,9]"))
        #expect(try peer.request(4, "get", #"{"path":"list","offset":12}"#)["result"]?["value"] == .json("[]"))
        #expect(try peer.request(5, "get", #"{"path":"list","limit":2}"#)["result"]?["value"] == .json("[0,1]"))
        #expect(try peer.request(6, "get", #"{"path":"list","offset":7}"#)["result"]?["value"] == .json("[7,8,9]"))
        #expect(try peer.request(7, "get", #"{"path":"list","limit":0}"#)["result"]
            == .json(#"{"value":[],"count":10,"seq":1}"#))
        // By position too: path, meta, offset, limit.
        #expect(try peer.request(8, "get", #"["list",false,1,1]"#)["result"]?["value"] == .json("[1]"))
        // A never-set key is an empty collection.
        #expect(try peer.request(9, "get", #"{"path":"missing","limit":3}"#)["result"]
            == .json(#"{"value":[],"count":0,"seq":1}"#))
        try peer.expectQuiet()
    }

    @Test func objectsInAPageAreExportedAsGetExportsThem() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        _ = try peer.request(1, "insert", #"{"path":"department.employees","values":[{"name":"Ada","salary":1},{"name":"Grace","salary":2},{"name":"Edsger","salary":3}]}"#)
        let whole = try peer.request(2, "get", #"{"path":"department.employees"}"#)["result"]?["value"]?.arrayValue
        let page = try peer.request(3, "get", #"{"path":"department.employees","offset":1,"limit":2}"#)["result"]
        #expect(page?["value"]?.arrayValue == Array(whole?[1...2] ?? []))
        #expect(page?["count"] == 3)
        // A path through the to-many pages its result; a set pages in its order.
        #expect(try peer.request(4, "get", #"{"path":"department.employees.name","offset":2}"#)["result"]?["value"]
            == .json(#"["Edsger"]"#))
        _ = try peer.request(5, "union", #"{"path":"department.tags","values":["a","b","c"]}"#)
        #expect(try peer.request(6, "get", #"{"path":"department.tags","offset":1,"limit":1}"#)["result"]?["value"]
            == .json(#"["b"]"#))
        try peer.expectQuiet()
    }

    @Test func badPagesAreClearErrors() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        let notACollection = try peer.request(1, "get", #"{"path":"person","limit":1}"#)["error"]
        #expect(notACollection?["code"] == 1005)
        #expect(notACollection?["message"] == "type mismatch at 'person': object is not a collection")
        #expect(try peer.request(2, "get", #"{"path":"labColor.lComponent","offset":0}"#)["error"]?["code"] == 1005)
        for (id, params) in [
            (3, #"{"path":"department.employees","limit":-1}"#),
            (4, #"{"path":"department.employees","offset":-2}"#),
            (5, #"{"path":"department.employees","offset":"1"}"#),
            (6, #"{"path":"department.employees","limit":1.5}"#),
            (8, #"{"path":"department.employees","limit":1,"page":2}"#),
        ] {
            #expect(try peer.request(id, "get", params)["error"]?["code"] == -32602, "\(params)")
        }
        #expect(try peer.request(9, "get", #"{"path":"person.nickname","limit":1}"#)["error"]?["code"] == 1001)
        // With meta, the collection key's modSeq and expires come too.
        let meta = try peer.request(10, "get", #"{"path":"department.employees","limit":1,"meta":true}"#)["result"]
        #expect(meta?["count"] != nil && meta?["modSeq"] != nil && meta?["expires"] == .null)
        try peer.expectQuiet()
    }
}
