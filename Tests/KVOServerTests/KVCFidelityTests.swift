// Key-value coding as Cocoa does it, through the protocol (Protocol/README.md#key-paths-through-collections): a key path
// through a set relationship answers a set (distinct members); an unknown collection operator, an operator missing its
// key path, an undefined key behind a typed to-many relationship are 1001, and `@sum`/`@avg` over values that are not
// numbers 1005 — at `get` and at `subscribe` alike; `@sum.self` and friends apply to the elements themselves. In process
// (InProcessServer.swift), on a model file loaded as `kvod --model` loads it.
import Testing
import WireProtocol

@MainActor
@Suite struct KVCFidelityTests {
    static let model = """
        {"root": "Store", "classes": {
          "Store": {"properties": {
            "tags": {"type": "set<Tag>", "default": []},
            "items": {"type": "[Item]", "default": []},
            "numbers": {"type": "[double]", "default": []},
            "words": {"type": "[string]", "default": []}}},
          "Tag": {"properties": {"name": {"type": "string"}}},
          "Item": {"properties": {"amount": {"type": "double"}, "name": {"type": "string"}}}}}
        """

    static func start() throws -> (InProcessServer, InProcessPeer) {
        let server = try InProcessServer(model: InProcessServer.model(Self.model, fileName: "store.json"))
        return (server, server.peer())
    }

    /// The error code of `get` and of `subscribe` on `path`.
    static func codes(_ peer: InProcessPeer, _ path: String, id: Int) throws -> (get: JSONValue?, subscribe: JSONValue?) {
        let get = try peer.request(id, "get", #"{"path":"\#(path)"}"#)
        let subscribe = try peer.request(id + 1, "subscribe", #"{"path":"\#(path)","options":["new"]}"#)
        return (get["error"]?["code"], subscribe["error"]?["code"])
    }

    @Test func aPathThroughASetRelationshipAnswersASet() throws {
        let (_, peer) = try Self.start()
        for (id, name) in [(1, "b"), (2, "a"), (3, "b"), (4, "c"), (5, "a")] {
            _ = try peer.request(id, "union", #"{"path":"tags","values":[{"name":"\#(name)"}]}"#)
        }
        #expect(try peer.request(10, "get", #"{"path":"tags.@count"}"#)["result"]?["value"] == 5)
        #expect(try peer.request(11, "get", #"{"path":"tags.name"}"#)["result"]?["value"] == .json(#"["b","a","c"]"#))
        let subscribed = try peer.request(12, "subscribe", #"{"path":"tags.name","options":["new","initial"]}"#)
        #expect(subscribed["result"] != nil)
        let initial = try peer.receive()
        #expect(initial["params"]?["new"] == .json(#"["b","a","c"]"#))
        // An ordered relationship keeps every element's value, repeats included.
        for (id, name) in [(20, "x"), (21, "x")] {
            _ = try peer.request(id, "insert", #"{"path":"items","value":{"name":"\#(name)","amount":1}}"#)
        }
        #expect(try peer.request(22, "get", #"{"path":"items.name"}"#)["result"]?["value"] == .json(#"["x","x"]"#))
    }

    @Test func unknownOperatorsMissingKeyPathsAndUndefinedKeysAreErrorsAtGetAndSubscribe() throws {
        let (_, peer) = try Self.start()
        // Even while the collections are empty, and with members in them.
        for round in 0..<2 {
            let base = round * 100
            #expect(try Self.codes(peer, "items.@bogus.amount", id: base + 1) == (1001, 1001))
            #expect(try Self.codes(peer, "items.@sum", id: base + 3) == (1001, 1001))
            #expect(try Self.codes(peer, "items.nope", id: base + 5) == (1001, 1001))
            #expect(try Self.codes(peer, "tags.nope", id: base + 7) == (1001, 1001))
            #expect(try Self.codes(peer, "items.@max.nope", id: base + 9) == (1001, 1001))
            _ = try peer.request(base + 50, "insert", #"{"path":"items","value":{"name":"x","amount":2}}"#)
            _ = try peer.request(base + 51, "union", #"{"path":"tags","values":[{"name":"t"}]}"#)
        }
        // What is declared still reads and subscribes.
        #expect(try peer.request(300, "get", #"{"path":"items.@sum.amount"}"#)["result"]?["value"] == 4.0)
        #expect(try peer.request(301, "subscribe", #"{"path":"items.@sum.amount","options":["new"]}"#)["result"] != nil)
        #expect(try peer.request(302, "get", #"{"path":"items.@count"}"#)["result"]?["value"] == 2)
    }

    @Test func operatorsOnTheElementsThemselves() throws {
        let (_, peer) = try Self.start()
        _ = try peer.request(1, "set", #"{"path":"numbers","value":[1,2,3.5,2]}"#)
        _ = try peer.request(2, "set", #"{"path":"words","value":["b","a","b"]}"#)
        let expectations: [(String, JSONValue)] = [
            ("numbers.@sum.self", 8.5), ("numbers.@avg.self", 2.125), ("numbers.@max.self", 3.5),
            ("numbers.@min.self", 1.0), ("numbers.@count", 4), ("numbers.@distinctUnionOfObjects.self", .json("[1.0,2.0,3.5]")),
            ("words.@max.self", "b"), ("words.@distinctUnionOfObjects.self", .json(#"["b","a"]"#)),
        ]
        for (index, (path, value)) in expectations.enumerated() {
            #expect(try peer.request(10 + index, "get", #"{"path":"\#(path)"}"#)["result"]?["value"] == value, "\(path)")
        }
        // @sum and @avg need numbers.
        #expect(try Self.codes(peer, "words.@sum.self", id: 40) == (1005, 1005))
        #expect(try Self.codes(peer, "words.@avg.self", id: 42) == (1005, 1005))
        _ = try peer.request(44, "insert", #"{"path":"items","value":{"name":"x","amount":2}}"#)
        #expect(try Self.codes(peer, "items.@sum.name", id: 45) == (1005, 1005))
        let error = try peer.request(47, "get", #"{"path":"words.@sum.self"}"#)["error"]
        #expect(error?["data"]?["path"] == "words.@sum")
    }
}
