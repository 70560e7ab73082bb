// RPCMessage.decode: the server-side reading of JSON-RPC 2.0 lines, following the spec's own examples: requests,
// notifications, ids of every allowed kind, batches (including empty and invalid ones), and each invalid-request rule.

import Testing
import WireProtocol

struct RPCMessageTests {
    static func decode(_ text: String) -> RPCIncoming {
        RPCMessage.decode(bytes(text))
    }

    /// The single element of a non-batch message, or nil (and an issue) otherwise.
    static func single(_ text: String) -> RPCParsed? {
        guard case .single(let parsed) = Self.decode(text) else {
            Issue.record("\(text) is not a single message")
            return nil
        }
        return parsed
    }

    @Test(
        "valid requests and notifications",
        arguments: [
            (
                #"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
                RPCRequest(id: 1, method: "subtract", params: [42, 23])
            ),
            (
                #"{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":"abc"}"#,
                RPCRequest(id: "abc", method: "subtract", params: ["minuend": 42, "subtrahend": 23])
            ),
            (
                #"{"jsonrpc":"2.0","method":"update","params":[1,2,3]}"#,
                RPCRequest(id: nil, method: "update", params: [1, 2, 3])
            ),
            (#"{"jsonrpc":"2.0","method":"ping","id":null}"#, RPCRequest(id: .null, method: "ping")),
            (#"{"jsonrpc":"2.0","method":"ping","id":1.5}"#, RPCRequest(id: 1.5, method: "ping")),
            (#"{"jsonrpc":"2.0","method":"ping","id":-7}"#, RPCRequest(id: -7, method: "ping")),
            (#"{"id":2,"method":"get","jsonrpc":"2.0","extra":{"ignored":true}}"#, RPCRequest(id: 2, method: "get")),
            (#"{"jsonrpc":"2.0","method":"rpc.discover","id":3}"#, RPCRequest(id: 3, method: "rpc.discover")),
            (#"{"jsonrpc":"2.0","method":"","params":{},"id":4}"#, RPCRequest(id: 4, method: "", params: [:])),
            (#"  {"jsonrpc":"2.0","method":"ping"}  "#, RPCRequest(id: nil, method: "ping")),
        ])
    func validRequests(text: String, expected: RPCRequest) {
        #expect(Self.decode(text) == .single(.request(expected)))
    }

    @Test("a notification has no id; id null is a request")
    func notificationVersusNullID() {
        guard case .request(let notification)? = Self.single(#"{"jsonrpc":"2.0","method":"m"}"#),
            case .request(let nullID)? = Self.single(#"{"jsonrpc":"2.0","method":"m","id":null}"#)
        else { return }
        #expect(notification.isNotification && notification.id == nil)
        #expect(!nullID.isNotification && nullID.id == .null)
    }

    @Test(
        "invalid requests answer -32600 with the id when it was readable, else null",
        arguments: [
            (#"{"method":"m","id":1}"#, JSONValue.int(1), "\"jsonrpc\" must be exactly \"2.0\""),
            (#"{"jsonrpc":"1.0","method":"m","id":1}"#, 1, "\"jsonrpc\" must be exactly \"2.0\""),
            (#"{"jsonrpc":2.0,"method":"m","id":"x"}"#, "x", "\"jsonrpc\" must be exactly \"2.0\""),
            (#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#, .null, "\"method\" must be a string"),
            (#"{"jsonrpc":"2.0","id":5}"#, 5, "\"method\" is missing"),
            (#"{"jsonrpc":"2.0","method":null,"id":5}"#, 5, "\"method\" must be a string"),
            (#"{"jsonrpc":"2.0","method":"m","params":"bar","id":6}"#, 6, "\"params\" must be an object or an array"),
            (#"{"jsonrpc":"2.0","method":"m","params":7,"id":6}"#, 6, "\"params\" must be an object or an array"),
            (#"{"jsonrpc":"2.0","method":"m","params":null,"id":6}"#, 6, "\"params\" must be an object or an array"),
            (#"{"jsonrpc":"2.0","method":"m","id":{"a":1}}"#, .null, "\"id\" must be a string, a number or null"),
            (#"{"jsonrpc":"2.0","method":"m","id":[1]}"#, .null, "\"id\" must be a string, a number or null"),
            (#"{"jsonrpc":"2.0","method":"m","id":true}"#, .null, "\"id\" must be a string, a number or null"),
            (#"{"jsonrpc":"2.0","method":1,"id":{"a":1}}"#, .null, "\"id\" must be a string, a number or null"),
            ("1", .null, "a request must be a JSON object"), (#""foo""#, .null, "a request must be a JSON object"),
            ("null", .null, "a request must be a JSON object"),
        ] as [(String, JSONValue, String)])
    func invalidRequests(text: String, id: JSONValue, reason: String) {
        let expected = RPCError(.invalidRequest, "invalid request: \(reason)")
        #expect(Self.decode(text) == .single(.invalid(id: id, expected)))
    }

    @Test(
        "invalid JSON is a parse error with id null",
        arguments: [
            #"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#, "", "{", "[1,]", #"{"jsonrpc":"2.0","#,
            String(repeating: "[", count: 100), "[1e999]",
        ])
    func parseErrors(text: String) {
        guard case .parseError(let error) = Self.decode(text) else {
            Issue.record("\(text) was not a parse error")
            return
        }
        #expect(error.code == -32700 && error.data == nil)
        #expect(error.message == Self.parserMessage(text))
    }

    /// What the parser says about `text`, which must be invalid.
    static func parserMessage(_ text: String) -> String {
        do {
            _ = try JSONParser.parse(text)
            return "valid"
        } catch {
            return error.description
        }
    }

    @Test("the depth limit is passed to the parser")
    func depthLimit() {
        let nested = #"{"jsonrpc":"2.0","method":"m","params":[[[1]]]}"#
        let request = RPCRequest(id: nil, method: "m", params: [[[1]]])
        #expect(RPCMessage.decode(bytes(nested), maxDepth: 4) == .single(.request(request)))
        guard case .parseError(let error) = RPCMessage.decode(bytes(nested), maxDepth: 3) else {
            Issue.record("expected a parse error")
            return
        }
        #expect(error == RPCError(.parseError, "JSON nested deeper than 3 levels"))
    }

    @Test("an empty batch is its own case")
    func emptyBatch() {
        #expect(Self.decode("[]") == .emptyBatch)
        #expect(Self.decode(" [ ] ") == .emptyBatch)
    }

    @Test("a batch of non-objects is a batch of invalid requests with id null")
    func batchOfScalars() {
        let invalid = RPCParsed.invalid(
            id: .null, RPCError(.invalidRequest, "invalid request: a request must be a JSON object"))
        #expect(Self.decode("[1]") == .batch([invalid]))
        #expect(Self.decode("[1,2,3]") == .batch([invalid, invalid, invalid]))
        #expect(Self.decode("[[]]") == .batch([invalid]))
    }

    @Test("a mixed batch keeps its order")
    func mixedBatch() {
        let text = """
            [{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method":"notify_hello",\
            "params":[7]},{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},{"foo":"boo"},\
            {"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},\
            {"jsonrpc":"2.0","method":"get_data","id":"9"}]
            """
        guard case .batch(let elements) = Self.decode(text) else {
            Issue.record("not a batch")
            return
        }
        #expect(elements.count == 6)
        #expect(elements[0] == .request(RPCRequest(id: "1", method: "sum", params: [1, 2, 4])))
        #expect(elements[1] == .request(RPCRequest(id: nil, method: "notify_hello", params: [7])))
        #expect(elements[2] == .request(RPCRequest(id: "2", method: "subtract", params: [42, 23])))
        guard case .invalid(let id, let error, _) = elements[3] else {
            Issue.record("element 3 should be invalid")
            return
        }
        #expect(id == .null && error.code == RPCErrorCode.invalidRequest.rawValue)
        #expect(elements[4] == .request(RPCRequest(id: "5", method: "foo.get", params: ["name": "myself"])))
        #expect(elements[5] == .request(RPCRequest(id: "9", method: "get_data")))
    }

    @Test("decoding from a raw buffer and from an array agree")
    func rawBuffer() {
        let wire = bytes(#"{"jsonrpc":"2.0","method":"ping","id":1}"#)
        let viaRaw = wire.withUnsafeBytes { RPCMessage.decode($0) }
        #expect(viaRaw == RPCMessage.decode(wire))
        #expect(RPCMessage.decode(value: ["jsonrpc": "2.0", "method": "ping", "id": 1]) == viaRaw)
    }

    /// An id's bytes are kept when writing its value would not give them back (RPCRequest.idText), in a single
    /// request and in a batch, valid or not; the usual ids keep nothing (no allocation).
    @Test func idsThatDoNotRoundTripKeepTheirBytes() throws {
        func idText(_ line: String) -> [String?] {
            func text(_ parsed: RPCParsed) -> String? {
                switch parsed {
                case .request(let request): request.idText.map { String(decoding: $0, as: UTF8.self) }
                case .invalid(_, _, let idText): idText.map { String(decoding: $0, as: UTF8.self) }
                }
            }
            switch RPCMessage.decode(Array(line.utf8)) {
            case .single(let parsed): return [text(parsed)]
            case .batch(let items): return items.map(text)
            default: return []
            }
        }
        let request = { (id: String) in #"{"jsonrpc":"2.0","id":\#(id),"method":"m"}"# }
        #expect(idText(request("123456789012345678901234567890")) == ["123456789012345678901234567890"])
        #expect(idText(request(" 1.50 ")) == ["1.50"])
        #expect(idText(request("-0")) == ["-0"])
        #expect(idText(request(#""\u0041""#)) == [#""\u0041""#])
        #expect(idText(request("0")) == [nil] && idText(request("-12")) == [nil] && idText(request(#""x""#)) == [nil])
        #expect(idText(request("null")) == [nil])
        #expect(idText(#"{"jsonrpc":"1.0","id":1e3,"method":"m"}"#) == ["1e3"])
        #expect(idText("[" + request("1e3") + ", 4, " + request("2") + "]") == ["1e3", nil, nil])
        // A batch read element by element still means what the parsed document means.
        let batch = "[" + request("1e3") + ", 4, " + request("2") + "]"
        #expect(RPCMessage.decode(Array(batch.utf8)) == RPCMessage.decode(value: try JSONParser.parse(Array(batch.utf8))))
        #expect(RPCMessage.decode(Array("[]".utf8)) == .emptyBatch)
        #expect(RPCMessage.decode(Array(" [ ] ".utf8)) == .emptyBatch)
        guard case .parseError = RPCMessage.decode(Array("[1,]".utf8)) else { Issue.record("[1,] parsed"); return }
        guard case .parseError = RPCMessage.decode(Array("[1] x".utf8)) else { Issue.record("[1] x parsed"); return }
    }
}
