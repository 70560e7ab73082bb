// RPCError and RPCErrorCode: the numeric codes are part of the protocol, so they are pinned here one by one.

import Testing
import WireProtocol

struct RPCErrorTests {
    @Test(
        "codes have their protocol values",
        arguments: [
            (RPCErrorCode.parseError, -32700), (.invalidRequest, -32600), (.methodNotFound, -32601),
            (.invalidParams, -32602), (.internalError, -32603), (.undefinedKey, 1001), (.validationFailed, 1002),
            (.nullNotAllowed, 1003), (.indexOutOfRange, 1004), (.typeMismatch, 1005), (.readOnlyKey, 1006),
            (.unknownSubscription, 1007), (.unauthorized, 1008), (.limitExceeded, 1009), (.resyncRequired, 1010),
            (.preconditionFailed, 1011), (.notLeader, 1012), (.invalidQuery, 1013),
        ])
    func codes(code: RPCErrorCode, value: Int) {
        #expect(code.rawValue == value)
        #expect(RPCError(code, "m").code == value)
        #expect(RPCError(code: code, message: "m").knownCode == code)
    }

    @Test("the standard errors carry the protocol's codes and short messages")
    func standardErrors() {
        #expect(RPCError.parseError == RPCError(code: -32700, message: "parse error"))
        #expect(RPCError.invalidRequest == RPCError(code: -32600, message: "invalid request"))
        #expect(RPCError.emptyBatch == RPCError(code: -32600, message: "empty batch"))
        #expect(RPCError.methodNotFound == RPCError(code: -32601, message: "method not found"))
        #expect(RPCError.invalidParams == RPCError(code: -32602, message: "invalid params"))
        #expect(RPCError.internalError == RPCError(code: -32603, message: "internal error"))
        #expect(RPCErrorCode.allCases.count == 18)
    }

    @Test("data participates in equality and description")
    func data() {
        let error = RPCError(.invalidParams, "invalid params", data: ["path": "a"])
        #expect(error != .invalidParams)
        #expect(error.with(data: nil) == .invalidParams)
        #expect(error.description == #"invalid params (-32602): {"path":"a"}"#)
        #expect(RPCError(code: 42, message: "odd").knownCode == nil)
    }
}
