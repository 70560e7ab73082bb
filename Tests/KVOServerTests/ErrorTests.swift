// Bad input: each gets its documented error (Protocol/errors.md), the connection stays usable, and nothing a client
// sends disturbs another client. What the dispatcher answers is tested in process (InProcessServer.swift); what the
// line framing does (the line limit, CRLF and blank lines) against a live kvod over a real socket.
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct ErrorTests {
    static let cases: [(line: String, code: Int64, id: JSONValue)] = [
        ("not json", -32700, .null),
        (#"{"jsonrpc":"2.0","id":1,"method":"get","params":{"path":"a"}"#, -32700, .null),
        ("\u{7F}\u{01}", -32700, .null),
        (#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"n","value":1e400}}"#, -32700, .null),
        ("[]", -32600, .null),
        (#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#, -32600, 3),
        (#"{"id":4,"method":"ping"}"#, -32600, 4),
        (#"{"jsonrpc":"2.0","id":5,"method":7}"#, -32600, 5),
        (#"{"jsonrpc":"2.0","id":6,"method":"ping","params":"x"}"#, -32600, 6),
        (#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, -32600, .null),
        (#"{"jsonrpc":"2.0","id":7,"method":"nope"}"#, -32601, 7),
        (#"{"jsonrpc":"2.0","id":8,"method":"get"}"#, -32602, 8),
        (#"{"jsonrpc":"2.0","id":9,"method":"get","params":{"path":5}}"#, -32602, 9),
        (#"{"jsonrpc":"2.0","id":10,"method":"get","params":{"path":"a..b"}}"#, -32602, 10),
        (#"{"jsonrpc":"2.0","id":11,"method":"get","params":{"path":"a","extra":1}}"#, -32602, 11),
        (#"{"jsonrpc":"2.0","id":12,"method":"set","params":{"path":"a"}}"#, -32602, 12),
        (#"{"jsonrpc":"2.0","id":13,"method":"set","params":{"path":"","value":1}}"#, -32602, 13),
        (#"{"jsonrpc":"2.0","id":14,"method":"subscribe","params":{"path":"a","options":["newest"]}}"#, -32602, 14),
        (#"{"jsonrpc":"2.0","id":15,"method":"subscribe","params":{"path":"a","options":"new"}}"#, -32602, 15),
        (#"{"jsonrpc":"2.0","id":16,"method":"unsubscribe","params":{"subscription":"1"}}"#, -32602, 16),
        (#"{"jsonrpc":"2.0","id":17,"method":"get","params":{"path":"$404.x"}}"#, 1001, 17),
        (#"{"jsonrpc":"2.0","id":18,"method":"set","params":{"path":"a","value":{"$ref":404}}}"#, 1001, 18),
        (#"{"jsonrpc":"2.0","id":19,"method":"set","params":{"path":"scalar.x","value":1}}"#, 1005, 19),
        (#"{"jsonrpc":"2.0","id":20,"method":"get","params":{"path":"list.x"}}"#, 1005, 20),
        (#"{"jsonrpc":"2.0","id":21,"method":"unsubscribe","params":{"subscription":12345}}"#, 1007, 21),
        (#"{"jsonrpc":"2.0","id":22,"method":"set","params":{"path":"a","value":{"b.c":1}}}"#, -32602, 22),
        (#"{"jsonrpc":"2.0","id":"s","method":"nope"}"#, -32601, "s"),
    ]

    @Test func eachBadInputGetsItsErrorAndTheConnectionStaysOpen() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"scalar","value":5}"#)
        _ = try peer.request(2, "set", #"{"path":"list","value":[1,2]}"#)
        for (line, code, id) in Self.cases {
            peer.send(line)
            let response = try peer.receive()
            #expect(response["error"]?["code"] == .int(code), "for \(line): \(response)")
            #expect(response["id"] == id, "for \(line): \(response)")
            #expect(response["jsonrpc"] == "2.0")
            #expect(response["error"]?["message"]?.stringValue?.isEmpty == false)
        }
        #expect(try peer.request(3, "get", #"{"path":"scalar"}"#)["result"] == .json(#"{"value":5,"seq":2}"#))
    }

    @Test func errorDataNamesThePath() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"person.age","value":30}"#)
        let error = try peer.request(2, "set", #"{"path":"person.age.years","value":1}"#)["error"]
        #expect(error?["code"] == 1005)
        #expect(error?["data"]?["path"] == "person.age")
    }

    @Test func notificationsWithoutIdGetNoResponseButTakeEffect() throws {
        let server = InProcessServer()
        let peer = server.peer()
        peer.send(#"{"jsonrpc":"2.0","method":"set","params":{"path":"quiet","value":1}}"#)
        peer.send(#"{"jsonrpc":"2.0","method":"nope"}"#)
        peer.send(#"[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"ping"}]"#)
        #expect(try peer.request(1, "get", #"{"path":"quiet"}"#)["result"] == .json(#"{"value":1,"seq":1}"#))
    }

    @Test func paramsByPosition() throws {
        let server = InProcessServer()
        let peer = server.peer()
        #expect(try peer.request(1, "set", #"["a.b",[1,"two",3.5,null,true]]"#)["result"]?["seq"] == 1)
        #expect(try peer.request(2, "get", #"["a.b"]"#)["result"]?["value"] == .json(#"[1,"two",3.5,null,true]"#))
        #expect(try peer.request(3, "get", #"["a","b"]"#)["error"]?["code"] == -32602)
    }

    @Test func deepNestingAndHugeNumbersAreRejected() throws {
        let server = InProcessServer()
        let peer = server.peer()
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        peer.send(#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"d","value":"# + deep + "}}")
        #expect(try peer.receive()["error"]?["code"] == -32700)
        #expect(try peer.request(2, "set", #"{"path":"big","value":123456789012345678901234567890}"#)["result"]?["seq"] == 1)
        #expect(try peer.request(3, "get", #"{"path":"big"}"#)["result"]?["value"]?.doubleValue == 1.2345678901234568e29)
        #expect(try peer.request(4, "set", #"{"path":"max","value":9223372036854775807}"#)["result"]?["seq"] == 2)
        #expect(try peer.request(5, "get", #"{"path":"max"}"#)["result"]?["value"] == .int(.max))
    }

    @Test func invalidUTF8IsAParseErrorAndUnicodeRoundTrips() throws {
        let server = InProcessServer()
        let peer = server.peer()
        var bytes = Array(#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"s","value":""#.utf8)
        bytes += [0xC0, 0xAF]
        bytes += Array(#""}}"#.utf8)
        peer.send(bytes: bytes)
        #expect(try peer.receive()["error"]?["code"] == -32700)
        let text = "naïve 日本 🎉 \"quoted\" \\ \u{01}"
        let encoded = JSONWriter.encodeString(.string(text))
        _ = try peer.request(2, "set", #"{"path":"s","value":\#(encoded)}"#)
        #expect(try peer.request(3, "get", #"{"path":"s"}"#)["result"]?["value"] == .string(text))
        _ = try peer.request(4, "set", #"{"path":"e","value":"\ud83c\udf89\u00e9"}"#)
        #expect(try peer.request(5, "get", #"{"path":"e"}"#)["result"]?["value"] == "🎉é")
    }
}

/// The line framing of the TCP transport, against a live kvod.
@Suite(.serialized) struct ErrorOverWireTests {
    @Test func aLineOverTheLimitIsRefusedAndClosed() throws {
        let server = try KVODProcess.start(["--max-line-bytes", "4096"])
        let bystander = try Peer(server)
        _ = try bystander.request(1, "subscribe", #"{"path":"x","options":["new"]}"#)
        let peer = try Peer(server)
        try peer.send(#"{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"x","value":""# + String(repeating: "a", count: 10_000) + #""}}"#)
        let error = try peer.receive()
        #expect(error["error"]?["code"] == 1009)
        #expect(error["error"]?["data"]?["limit"] == 4096)
        #expect(try peer.receive() == .json(#"{"jsonrpc":"2.0","method":"closing","params":{"reason":"line_too_long"}}"#))
        #expect(throws: (any Error).self) { try peer.receive(timeout: .seconds(2)) }
        // The oversized set never happened, and the other client is unaffected.
        try bystander.expectQuiet()
        #expect(try bystander.request(2, "get", #"{"path":"x"}"#)["result"]?["value"] == .null)
    }

    @Test func crlfLinesAndBlankLinesAreTolerated() throws {
        let server = try KVODProcess.start()
        let peer = try Peer(server)
        try peer.client.connection.send(Array("\r\n\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n".utf8))
        #expect(try peer.receive() == .json(#"{"jsonrpc":"2.0","id":1,"result":"pong"}"#))
    }
}
