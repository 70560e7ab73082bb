// WebSocketFrameDecoder on broken input: every rule with its close code, the size limit decided from the header
// alone, events before an error still delivered, and a failed decoder staying failed.

import Testing
@testable import WebSocket

struct WebSocketFrameDecoderErrorTests {
    /// One broken input and the close code it must produce.
    struct Case: CustomTestStringConvertible, Sendable {
        var name: String
        var input: [UInt8]
        var code: WebSocketCloseCode
        /// What is delivered before the error.
        var events: [Received] = []
        var testDescription: String { self.name }
    }

    static let protocolErrorCases: [Case] = [
        Case(name: "unmasked text frame (RFC §5.7's unmasked Hello)", input: hex("81 05 48 65 6c 6c 6f"), code: 1002),
        Case(name: "unmasked ping", input: hex("89 00"), code: 1002),
        Case(name: "RSV1 set", input: rawClientFrame(firstByte: 0xC1, payload: bytes("a")), code: 1002),
        Case(name: "RSV2 set", input: rawClientFrame(firstByte: 0xA1, payload: bytes("a")), code: 1002),
        Case(name: "RSV3 set", input: rawClientFrame(firstByte: 0x91, payload: bytes("a")), code: 1002),
        Case(name: "ping over 125 bytes", input: clientFrame(.ping, Array(repeating: 1, count: 126)), code: 1002),
        Case(name: "close over 125 bytes", input: clientFrame(.close, [3, 0xE8] + Array(repeating: 97, count: 124)),
            code: 1002),
        Case(name: "fragmented ping", input: clientFrame(.ping, [], isFinal: false), code: 1002),
        Case(name: "fragmented close", input: clientFrame(.close, [], isFinal: false), code: 1002),
        Case(name: "continuation without a message", input: clientFrame(.continuation, bytes("a")), code: 1002),
        Case(name: "continuation after a finished message",
            input: clientFrame(.text, bytes("a")) + clientFrame(.continuation, bytes("b")), code: 1002,
            events: [.text("a")]),
        Case(name: "text while a message is in progress",
            input: clientFrame(.text, bytes("a"), isFinal: false) + clientFrame(.text, bytes("b")), code: 1002),
        Case(name: "binary while a message is in progress",
            input: clientFrame(.text, bytes("a"), isFinal: false) + clientFrame(.binary, bytes("b")), code: 1002),
        Case(name: "64-bit length with the top bit set", input: hex("81 ff 80 00 00 00 00 00 00 01 00 00 00 00"),
            code: 1002),
        Case(name: "close with a 1-byte payload", input: clientFrame(.close, [0x03]), code: 1002),
    ] + [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF].map { opcode in
        Case(name: "reserved opcode \(opcode)", input: rawClientFrame(firstByte: 0x80 | UInt8(opcode)), code: 1002)
    } + ([0, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535] as [UInt16]).map { code in
        Case(name: "close code \(code)", input: clientFrame(.close, [UInt8(code >> 8), UInt8(code & 0xFF)]),
            code: 1002)
    }

    static let otherErrorCases: [Case] = [
        Case(name: "binary message", input: clientFrame(.binary, [1, 2, 3]), code: 1003),
        Case(name: "fragmented binary message", input: clientFrame(.binary, [1], isFinal: false), code: 1003),
        Case(name: "empty binary message", input: clientFrame(.binary, []), code: 1003),
        Case(name: "RFC §5.7's 256-byte binary frame (masked)",
            input: clientFrame(.binary, Array(repeating: 7, count: 256)), code: 1003),
        Case(name: "text that is not UTF-8", input: clientFrame(.text, [0x61, 0xFF, 0x62]), code: 1007),
        Case(name: "text ending inside a UTF-8 sequence", input: clientFrame(.text, [0x61, 0xE2, 0x82]), code: 1007),
        Case(name: "fragments ending inside a UTF-8 sequence",
            input: clientFrame(.text, [0xE2], isFinal: false) + clientFrame(.continuation, [0x82]), code: 1007),
        Case(name: "close reason that is not UTF-8", input: clientFrame(.close, [0x03, 0xE8, 0xC0, 0x80]), code: 1007),
        Case(name: "close reason cut inside a UTF-8 sequence", input: clientFrame(.close, [0x03, 0xE8, 0xE2, 0x82]),
            code: 1007),
        Case(name: "text over maxMessageBytes (100)", input: clientFrame(.text, Array(repeating: 97, count: 101)),
            code: 1009),
        Case(name: "fragments over maxMessageBytes (100)",
            input: clientFrame(.text, Array(repeating: 97, count: 60), isFinal: false)
                + clientFrame(.continuation, Array(repeating: 97, count: 41)), code: 1009),
        Case(name: "a 64-bit length far over the limit", input: hex("81 ff 00 00 01 00 00 00 00 00 01 02 03 04"),
            code: 1009),
    ]

    @Test("protocol errors close with 1002", arguments: WebSocketFrameDecoderErrorTests.protocolErrorCases)
    func protocolErrors(_ testCase: Case) {
        Self.expectFailure(testCase)
    }

    @Test("binary, invalid UTF-8 and oversized messages", arguments: WebSocketFrameDecoderErrorTests.otherErrorCases)
    func otherErrors(_ testCase: Case) {
        Self.expectFailure(testCase)
    }

    /// The error comes, with its code, whole and fed one byte at a time, after the expected events.
    static func expectFailure(_ testCase: Case, sourceLocation: SourceLocation = #_sourceLocation) {
        for decoded in [
            decode(testCase.input, maxMessageBytes: 100),
            decode(testCase.input.indices.map { testCase.input[$0...$0] }, maxMessageBytes: 100),
        ] {
            #expect(decoded.events == testCase.events, sourceLocation: sourceLocation)
            #expect(decoded.error?.code == testCase.code, sourceLocation: sourceLocation)
        }
    }

    @Test("an oversized message is refused from its header, before any payload arrives")
    func tooBigFromTheHeader() {
        var header: [UInt8] = []
        WebSocketFrameEncoder.appendMaskedFrame(opcode: .text, payload: [UInt8](repeating: 0, count: 70_000),
            maskKey: 1, to: &header)
        header.removeSubrange(14...)  // 2 + 8 length bytes + 4 key bytes; no payload
        #expect(decode(header, maxMessageBytes: 65_536).error?.code == .messageTooBig)
        // The second fragment's header alone pushes the message over.
        let first = clientFrame(.text, Array(repeating: 97, count: 8), isFinal: false)
        let second = Array(clientFrame(.continuation, Array(repeating: 97, count: 3)).prefix(6))
        #expect(decode(first + second, maxMessageBytes: 10).error?.code == .messageTooBig)
    }

    @Test("invalid UTF-8 fails as soon as the bad fragment arrives, before the message ends")
    func utf8FailsFast() {
        let input = clientFrame(.text, [0x61, 0xC0], isFinal: false)
        #expect(decode(input).error?.code == .invalidPayload)
    }

    @Test("events before an error are delivered; a failed decoder keeps throwing the same error")
    func eventsBeforeTheError() throws {
        var decoder = WebSocketFrameDecoder(maxMessageBytes: 100)
        var events: [Received] = []
        let input = clientFrame(.text, bytes("ok")) + clientFrame(.ping, []) + hex("81 00")
        #expect(throws: WebSocketError(code: .protocolError, message: "client frame not masked")) {
            try decoder.feed(input) { events.append(Received($0)) }
        }
        #expect(events == [.text("ok"), .ping([])])
        #expect(throws: WebSocketError(code: .protocolError, message: "client frame not masked")) {
            try decoder.feed(clientFrame(.text, bytes("again"))) { events.append(Received($0)) }
        }
        #expect(events.count == 2)
    }

    @Test("error messages fit a close frame's reason")
    func messagesFit() {
        for testCase in Self.protocolErrorCases + Self.otherErrorCases {
            let error = decode(testCase.input, maxMessageBytes: 100).error
            #expect(error != nil && error!.message.utf8.count <= 123)
        }
    }
}
