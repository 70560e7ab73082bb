// WebSocketFrameEncoder: the RFC 6455 §5.7 bytes, the three length forms at their edges, close frames (reasons cut
// on a UTF-8 boundary), control frames, and masked client frames decoding back to what was encoded.

import Testing
@testable import WebSocket

struct WebSocketFrameEncoderTests {
    @Test("RFC 6455 §5.7: an unmasked \"Hello\", fragmented and whole; an unmasked ping")
    func rfcServerFrames() {
        var output: [UInt8] = []
        WebSocketFrameEncoder.appendText("Hello", to: &output)
        #expect(output == hex("81 05 48 65 6c 6c 6f"))

        output = []
        WebSocketFrameEncoder.appendHeader(opcode: .text, payloadLength: 3, isFinal: false, to: &output)
        output += bytes("Hel")
        WebSocketFrameEncoder.appendHeader(opcode: .continuation, payloadLength: 2, to: &output)
        output += bytes("lo")
        #expect(output == hex("01 03 48 65 6c 80 02 6c 6f"))

        output = []
        WebSocketFrameEncoder.appendPing(bytes("Hello"), to: &output)
        #expect(output == hex("89 05 48 65 6c 6c 6f"))
    }

    @Test("RFC 6455 §5.7: a masked \"Hello\" and a masked pong, with the key 37 fa 21 3d")
    func rfcClientFrames() {
        var output: [UInt8] = []
        WebSocketFrameEncoder.appendMaskedFrame(
            opcode: .text, payload: bytes("Hello"), maskKey: 0x37FA_213D, to: &output)
        #expect(output == hex("81 85 37 fa 21 3d 7f 9f 4d 51 58"))
        output = []
        WebSocketFrameEncoder.appendMaskedFrame(
            opcode: .pong, payload: bytes("Hello"), maskKey: 0x37FA_213D, to: &output)
        #expect(output == hex("8a 85 37 fa 21 3d 7f 9f 4d 51 58"))
    }

    @Test("text headers pick the shortest length form", arguments: [
        (0, hex("81 00")), (125, hex("81 7d")), (126, hex("81 7e 00 7e")), (256, hex("81 7e 01 00")),
        (65535, hex("81 7e ff ff")), (65536, hex("81 7f 00 00 00 00 00 01 00 00")),
        (1 << 40, hex("81 7f 00 00 01 00 00 00 00 00")),
    ])
    func textHeaders(length: Int, expected: [UInt8]) {
        var output: [UInt8] = [0xAA]  // appends, never replaces
        WebSocketFrameEncoder.appendTextHeader(payloadLength: length, to: &output)
        #expect(output == [0xAA] + expected)
    }

    @Test("a text frame from a buffer equals one from a string")
    func textFromBuffer() {
        var fromString: [UInt8] = []
        WebSocketFrameEncoder.appendText("€ and 𝄞", to: &fromString)
        var fromBuffer: [UInt8] = []
        bytes("€ and 𝄞").withUnsafeBytes { WebSocketFrameEncoder.appendText($0, to: &fromBuffer) }
        #expect(fromString == fromBuffer)
        #expect(fromString == [0x81, 12] + bytes("€ and 𝄞"))
    }

    @Test("close frames: without a code, with a code, with a reason")
    func closeFrames() {
        var output: [UInt8] = []
        WebSocketFrameEncoder.appendClose(code: nil, reason: "ignored", to: &output)
        #expect(output == hex("88 00"))
        output = []
        WebSocketFrameEncoder.appendClose(code: .normal, to: &output)
        #expect(output == hex("88 02 03 e8"))
        output = []
        WebSocketFrameEncoder.appendClose(code: .messageTooBig, reason: "too big", to: &output)
        #expect(output == hex("88 09 03 f1") + bytes("too big"))
    }

    @Test("a long close reason is cut to 123 bytes, never inside a character", arguments: [
        (String(repeating: "a", count: 200), 123),
        ("a" + String(repeating: "€", count: 50), 121),  // 1 + 40 × 3; the 41st euro would end at 124
        ("ab" + String(repeating: "€", count: 50), 122),
        ("abc" + String(repeating: "€", count: 50), 123),
        (String(repeating: "𝄞", count: 40), 120),
        (String(repeating: "x", count: 123), 123),
    ])
    func closeReasonCut(reason: String, expectedBytes: Int) {
        var output: [UInt8] = []
        WebSocketFrameEncoder.appendClose(code: .goingAway, reason: reason, to: &output)
        #expect(Int(output[1]) == 2 + expectedBytes)
        let cut = Array(output[4...])
        #expect(cut == Array(reason.utf8.prefix(expectedBytes)))
        #expect(String(validating: cut, as: UTF8.self) != nil)
        // A client-masked copy of the same payload decodes to the same close.
        let decoded = decode(clientFrame(.close, Array(output[2...])))
        #expect(decoded == Decoded(events: [.close(.goingAway, String(decoding: cut, as: UTF8.self))]))
    }

    @Test("pongs echo the ping's payload")
    func pong() {
        var output: [UInt8] = []
        WebSocketFrameEncoder.appendPong(bytes("abc"), to: &output)
        WebSocketFrameEncoder.appendPong(to: &output)
        #expect(output == hex("8a 03 61 62 63 8a 00"))
    }

    @Test("masked client frames decode to what was encoded, for many lengths and keys")
    func roundTrip() {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 3, 4, 5, 8, 13, 125, 126, 127, 1000, 65535, 65536, 70_000] {
            let text = String((0..<length).map { _ in "aé€𝄞".randomElement(using: &generator)! })
            let key = UInt32.random(in: .min ... .max, using: &generator)
            #expect(decode(clientFrame(.text, bytes(text), maskKey: key)) == Decoded(events: [.text(text)]))
        }
    }

    @Test("close codes: the constants and which may travel")
    func closeCodes() {
        #expect([WebSocketCloseCode.normal, .goingAway, .protocolError, .unsupportedData, .invalidPayload,
            .policyViolation, .messageTooBig, .internalError].map(\.rawValue) == [1000, 1001, 1002, 1003, 1007, 1008,
                1009, 1011])
        #expect(WebSocketCloseCode.normal.isAllowedOnWire)
        #expect(!WebSocketCloseCode(rawValue: 1005).isAllowedOnWire)
        #expect(!WebSocketCloseCode(rawValue: 1006).isAllowedOnWire)
        #expect(WebSocketCloseCode(rawValue: 4000).isAllowedOnWire)
    }
}
