// Exactness at the edges (issue 23): request ids come back byte for byte, what `get` returns `set` takes back
// (nesting counted the same way), and the deadline forms agree (PresenceTests.badTTLsAreRefused). In process
// (InProcessServer.swift), reading the exact bytes each session's transport was given.
@testable import KVOServer
import Testing
import WireProtocol

@MainActor
@Suite struct EdgeExactnessTests {
    static func nested(_ depth: Int, _ leaf: String = "0") -> String {
        String(repeating: "[", count: depth) + leaf + String(repeating: "]", count: depth)
    }

    /// Ids that writing the parsed value would change: beyond 64 bits, with a fraction or an exponent, `-0`, strings
    /// with escapes; in a single request, in a batch, in an error response and in an invalid request's.
    @Test(arguments: [
        "123456789012345678901234567890", "-123456789012345678901234567890", "1.50", "1e2", "1E+2", "-0", "0.0",
        "9223372036854775808", #""\u0041\n""#, #""a\/b""#, "7", #""plain""#, "null",
    ])
    func idsComeBackByteForByte(_ id: String) throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        func exchange(_ line: String) -> String {
            let before = peer.written.count
            peer.send(line)
            server.flush()
            return String(decoding: peer.written[before...], as: UTF8.self)
        }
        #expect(exchange(#"{"jsonrpc":"2.0","id": \#(id) ,"method":"ping"}"#) == #"{"jsonrpc":"2.0","id":\#(id),"result":"pong"}"# + "\n")
        #expect(exchange(#"{"jsonrpc":"2.0","id":\#(id),"method":"nope"}"#).hasPrefix(#"{"jsonrpc":"2.0","id":\#(id),"error":"#))
        #expect(exchange(#"{"jsonrpc":"1.0","id":\#(id),"method":"ping"}"#).hasPrefix(#"{"jsonrpc":"2.0","id":\#(id),"error":"#))
        let batch = exchange(#"[{"jsonrpc":"2.0","id":\#(id),"method":"ping"}, 5, {"jsonrpc":"2.0","id":\#(id),"method":"get","params":{}}]"#)
        #expect(batch.hasPrefix(#"[{"jsonrpc":"2.0","id":\#(id),"result":"pong"},{"jsonrpc":"2.0","id":null,"error":"#))
        #expect(batch.contains(#"{"jsonrpc":"2.0","id":\#(id),"error":{"code":-32602"#))
    }

    @Test func whatGetReturnsSetTakesBack() throws {
        let server = InProcessServer()
        let peer = server.peer()
        // The deepest value a set takes is 62 levels (the request and its params are two more of the 64).
        #expect(try peer.request(1, "set", #"{"path":"a.b.c","value":\#(Self.nested(62))}"#)["result"] != nil)
        #expect(try peer.request(2, "set", #"{"path":"a.b.d","value":\#(Self.nested(63))}"#)["error"]?["code"] == -32700)
        // Read from higher up it is deeper than that: refused with 1009, not returned for a set to refuse.
        for (id, path) in [(3, "a"), (4, "a.b")] {
            let refused = try peer.request(id, "get", #"{"path":"\#(path)"}"#)["error"]
            #expect(refused?["code"] == 1009 && refused?["data"] == .json(#"{"limit":62}"#), "\(path)")
        }
        // The root is never set whole, its keys are: one level more, and "a" is too deep already.
        #expect(try peer.request(5, "get", #"{"path":""}"#)["error"]?["data"] == .json(#"{"limit":63}"#))
        // At its own path it comes back, and goes back in as it came.
        let value = try #require(try peer.request(6, "get", #"{"path":"a.b.c"}"#)["result"]?["value"])
        var echo: [UInt8] = []
        JSONWriter.append(value, to: &echo)
        #expect(try peer.request(7, "set", #"{"path":"a.b.c","value":\#(String(decoding: echo, as: UTF8.self))}"#)["result"] != nil)
        // An object read back whole (with its "$id") is taken too, up to the same depth.
        #expect(try peer.request(8, "set", #"{"path":"x","value":{"y":\#(Self.nested(60))}}"#)["result"] != nil)
        let object = try #require(try peer.request(9, "get", #"{"path":"x"}"#)["result"]?["value"])
        echo.removeAll()
        JSONWriter.append(object, to: &echo)
        #expect(try peer.request(10, "set", #"{"path":"x","value":\#(String(decoding: echo, as: UTF8.self))}"#)["result"] != nil)
        #expect(try peer.request(11, "get", #"{"path":"x.y"}"#)["result"]?["value"] == .json(Self.nested(60)))
    }

    @Test func aLowerJSONDepthLimitLowersWhatGetReturns() throws {
        var limits = Limits()
        limits.maxJSONDepth = 6
        let server = InProcessServer(limits: limits)
        let peer = server.peer()
        #expect(try peer.request(1, "set", #"{"path":"a","value":\#(Self.nested(4))}"#)["result"] != nil)
        #expect(try peer.request(2, "get", #"{"path":"a"}"#)["result"]?["value"] == .json(Self.nested(4)))
        #expect(try peer.request(3, "set", #"{"path":"b.c","value":\#(Self.nested(4))}"#)["result"] != nil)
        #expect(try peer.request(4, "get", #"{"path":"b"}"#)["error"]?["data"] == .json(#"{"limit":4}"#))
    }
}
