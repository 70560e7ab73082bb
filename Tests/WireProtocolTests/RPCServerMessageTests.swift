// RPCServerMessage.decode: the client-side reading of what a server sends (responses, errors, notifications,
// batches), and the clear `.syntax` errors for messages that break the protocol.

import Testing
import WireProtocol

struct RPCServerMessageTests {
    @Test(
        "well-formed server messages",
        arguments: [
            (#"{"jsonrpc":"2.0","result":19,"id":1}"#, RPCServerMessage.response(id: 1, result: 19)),
            (#"{"jsonrpc":"2.0","id":"a","result":null}"#, .response(id: "a", result: .null)),
            (
                #"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#,
                .error(id: .null, .parseError)
            ),
            (
                #"{"jsonrpc":"2.0","id":3,"error":{"code":1010,"message":"resync","data":{"version":4}}}"#,
                .error(id: 3, RPCError(.resyncRequired, "resync", data: ["version": 4]))
            ),
            (
                #"{"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"custom"}}"#,
                .error(id: 3, RPCError(code: -32000, message: "custom"))
            ),
            (
                #"{"jsonrpc":"2.0","method":"changed","params":{"v":1}}"#,
                .notification(method: "changed", params: ["v": 1])
            ),
            (#"{"jsonrpc":"2.0","method":"tick"}"#, .notification(method: "tick", params: nil)),
            (#"{"jsonrpc":"2.0","method":"tick","params":[1]}"#, .notification(method: "tick", params: [1])),
            (
                #"[{"jsonrpc":"2.0","result":7,"id":"1"},"#
                    + #"{"jsonrpc":"2.0","error":{"code":-32600,"message":"invalid request"},"id":null}]"#,
                .batch([.response(id: "1", result: 7), .error(id: .null, .invalidRequest)])
            ),
        ] as [(String, RPCServerMessage)])
    func wellFormed(text: String, expected: RPCServerMessage) throws {
        #expect(try RPCServerMessage.decode(bytes(text)) == expected)
        let viaRaw = bytes(text).withUnsafeBytes { raw in
            Result { () throws(WireError) in try RPCServerMessage.decode(raw) }
        }
        #expect(try viaRaw.get() == expected)
    }

    @Test(
        "malformed server messages are syntax errors that say what is wrong",
        arguments: [
            ("[]", "empty batch"), ("[1]", "batch element is not an object"), ("1", "message is not a JSON object"),
            (#"[[{"jsonrpc":"2.0","result":1,"id":1}]]"#, "batch element is not an object"),
            (#"{"result":1,"id":1}"#, "\"jsonrpc\" is not \"2.0\""),
            (#"{"jsonrpc":"2.0","result":1}"#, "response has no \"id\""),
            (#"{"jsonrpc":"2.0","id":1}"#, "response has neither \"result\" nor \"error\""),
            (#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":"m"}}"#, "both \"result\" and \"error\""),
            (#"{"jsonrpc":"2.0","id":[1],"result":1}"#, "response \"id\" is not a string, a number or null"),
            (#"{"jsonrpc":"2.0","id":1,"error":"oops"}"#, "\"error\" is not an object"),
            (#"{"jsonrpc":"2.0","id":1,"error":{"code":"1","message":"m"}}"#, "error \"code\" is not an integer"),
            (#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}"#, "error \"code\" is not an integer"),
            (#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, "error \"message\" is not a string"),
            (#"{"jsonrpc":"2.0","method":5}"#, "\"method\" is not a string"),
            (#"{"jsonrpc":"2.0","method":"m","id":1}"#, "server sent a request"),
            (#"{"jsonrpc":"2.0","method":"m","params":"x"}"#, "\"params\" is not an object or an array"),
        ])
    func malformed(text: String, reasonFragment: String) {
        do {
            let message = try RPCServerMessage.decode(bytes(text))
            Issue.record("\(text) accepted as \(message)")
        } catch {
            guard case .syntax(0, let reason) = error else {
                Issue.record("\(text): \(error)")
                return
            }
            #expect(reason.contains(reasonFragment), "\(reason)")
            #expect(reason.hasPrefix("not a JSON-RPC 2.0 server message"))
        }
    }

    @Test("invalid JSON from the server surfaces the parser's error")
    func invalidJSON() {
        #expect(throws: WireError.syntax(offset: 1, reason: "unexpected end of input, expected an object key")) {
            try RPCServerMessage.decode(bytes("{"))
        }
        #expect(throws: WireError.tooDeep(limit: 2)) {
            try RPCServerMessage.decode(bytes(#"{"jsonrpc":"2.0","id":1,"result":[[1]]}"#), maxDepth: 2)
        }
    }
}
