// RPCEncoder: the exact shape of results, errors, notifications and requests, checked byte for byte where the
// layout is part of the contract and by parsing back otherwise; nothing ever ends with a newline.

import Testing
import WireProtocol

struct RPCEncoderTests {
    static func text(_ write: (inout [UInt8]) -> Void) -> String {
        var out: [UInt8] = []
        write(&out)
        #expect(out.last != 0x0A)
        return String(decoding: out, as: UTF8.self)
    }

    @Test(
        "results, with each kind of id",
        arguments: [
            (JSONValue?.some(1), #"{"jsonrpc":"2.0","id":1,"result":{"ok":true}}"#),
            ("abc", #"{"jsonrpc":"2.0","id":"abc","result":{"ok":true}}"#),
            (.null, #"{"jsonrpc":"2.0","id":null,"result":{"ok":true}}"#),
            (nil, #"{"jsonrpc":"2.0","id":null,"result":{"ok":true}}"#),
            (2.5, #"{"jsonrpc":"2.0","id":2.5,"result":{"ok":true}}"#),
        ] as [(JSONValue?, String)])
    func results(id: JSONValue?, expected: String) {
        #expect(Self.text { RPCEncoder.appendResult(id: id, result: ["ok": true], to: &$0) } == expected)
        let streamed = Self.text { out in
            RPCEncoder.appendResult(id: id, to: &out) { JSONWriter.append(["ok": true], to: &$0) }
        }
        #expect(streamed == expected)
    }

    @Test("errors omit data when nil")
    func errors() throws {
        let plain = Self.text { RPCEncoder.appendError(id: 7, error: .methodNotFound, to: &$0) }
        #expect(plain == #"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"method not found"}}"#)
        let withData = Self.text {
            RPCEncoder.appendError(
                id: nil, error: RPCError(.undefinedKey, "undefined key \"a\"", data: ["path": "a.b"]), to: &$0)
        }
        let expected = """
            {"jsonrpc":"2.0","id":null,"error":{"code":1001,"message":"undefined key \\"a\\"","data":{"path":"a.b"}}}
            """
        #expect(withData == expected)
        #expect(
            try RPCServerMessage.decode(bytes(withData))
                == .error(id: .null, RPCError(code: 1001, message: "undefined key \"a\"", data: ["path": "a.b"])))
    }

    @Test("notifications")
    func notifications() throws {
        let streamed = Self.text { out in
            RPCEncoder.appendNotification(method: "changed", to: &out) {
                JSONWriter.append(["subscription": 3, "value": [1, 2]], to: &$0)
            }
        }
        #expect(streamed == #"{"jsonrpc":"2.0","method":"changed","params":{"subscription":3,"value":[1,2]}}"#)
        let withValue = Self.text {
            RPCEncoder.appendNotification(method: "changed", params: ["subscription": 3, "value": [1, 2]], to: &$0)
        }
        #expect(withValue == streamed)
        let bare = Self.text { RPCEncoder.appendNotification(method: "bye", params: nil, to: &$0) }
        #expect(bare == #"{"jsonrpc":"2.0","method":"bye"}"#)
    }

    @Test(
        "requests read back as the same request on the server side",
        arguments: [
            RPCRequest(id: 1, method: "get", params: ["path": "a"]), RPCRequest(id: nil, method: "notify", params: [1]),
            RPCRequest(id: .null, method: "ping"), RPCRequest(id: "x\"y", method: "we\u{1}ird \"name\"", params: [:]),
        ])
    func requests(request: RPCRequest) {
        var out: [UInt8] = []
        RPCEncoder.appendRequest(id: request.id, method: request.method, params: request.params, to: &out)
        #expect(RPCMessage.decode(out) == .single(.request(request)))
    }

    @Test("several messages append back to back into one buffer")
    func appendsInSequence() {
        var out: [UInt8] = []
        RPCEncoder.appendResult(id: 1, result: .null, to: &out)
        out.append(0x0A)
        RPCEncoder.appendError(id: 2, error: .internalError, to: &out)
        let lines = out.split(separator: 0x0A).map { String(decoding: $0, as: UTF8.self) }
        #expect(
            lines == [
                #"{"jsonrpc":"2.0","id":1,"result":null}"#,
                #"{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"internal error"}}"#,
            ])
    }

    @Test("random results round-trip through the client-side decoder", arguments: 0..<5)
    func randomResults(seed: UInt64) throws {
        var random = RandomJSON(seed: seed)
        for index in 0..<40 {
            let result = random.value(depth: 3)
            var out: [UInt8] = []
            RPCEncoder.appendResult(id: .int(Int64(index)), result: result, to: &out)
            #expect(try RPCServerMessage.decode(out) == .response(id: .int(Int64(index)), result: result))
        }
    }
}
