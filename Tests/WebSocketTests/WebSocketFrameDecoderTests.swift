// WebSocketFrameDecoder on valid input: the RFC 6455 §5.7 examples, fragmentation with control frames between the
// fragments, the three length forms, every split of a multi-frame stream, and what happens after a close.

import Testing
@testable import WebSocket

struct WebSocketFrameDecoderTests {
    @Test("RFC 6455 §5.7: a masked \"Hello\"")
    func maskedHello() {
        #expect(decode(hex("81 85 37 fa 21 3d 7f 9f 4d 51 58")) == Decoded(events: [.text("Hello")]))
    }

    @Test("RFC 6455 §5.7: a fragmented \"Hello\" (masked, since clients must mask)")
    func fragmentedHello() {
        let input = clientFrame(.text, bytes("Hel"), isFinal: false) + clientFrame(.continuation, bytes("lo"))
        #expect(decode(input) == Decoded(events: [.text("Hello")]))
    }

    @Test("RFC 6455 §5.7: a masked pong, and a ping")
    func pingAndPong() {
        let input = hex("8a 85 37 fa 21 3d 7f 9f 4d 51 58") + clientFrame(.ping, bytes("Hello"))
        #expect(decode(input) == Decoded(events: [.pong(bytes("Hello")), .ping(bytes("Hello"))]))
    }

    @Test("RFC 6455 §5.7: 256 bytes and 64 KiB in one frame (16- and 64-bit lengths)", arguments: [256, 65536])
    func longLengths(count: Int) {
        let text = String(repeating: "x", count: count)
        let frame = clientFrame(.text, bytes(text))
        if count == 256 {
            #expect(Array(frame[0..<4]) == [0x81, 0xFE, 0x01, 0x00])
        } else {
            #expect(Array(frame[0..<10]) == [0x81, 0xFF, 0, 0, 0, 0, 0, 1, 0, 0])
        }
        #expect(decode(frame) == Decoded(events: [.text(text)]))
    }

    @Test(
        "payload lengths at the edges of the three forms", arguments: [0, 1, 7, 8, 9, 125, 126, 127, 65535, 65536])
    func lengthEdges(count: Int) {
        let text = String((0..<count).map { Character(Unicode.Scalar(UInt8(97 + $0 % 26))) })
        #expect(decode(clientFrame(.text, bytes(text))) == Decoded(events: [.text(text)]))
    }

    @Test("mask keys: every key byte and every phase of an eight-byte step unmask correctly")
    func maskKeys() {
        let text = "The quick brown fox jumps over the lazy dog, 0123456789"
        for key: UInt32 in [0, 0xFFFF_FFFF, 0x0102_0304, 0x8000_0001, 0xDEAD_BEEF] {
            // Fragments of 1...9 bytes make the mask phase start everywhere.
            for size in 1...9 {
                var input: [UInt8] = []
                let payload = bytes(text)
                var start = 0
                while start < payload.count {
                    let end = min(start + size, payload.count)
                    let opcode: WebSocketOpcode = start == 0 ? .text : .continuation
                    input += clientFrame(
                        opcode, Array(payload[start..<end]), isFinal: end == payload.count, maskKey: key)
                    start = end
                }
                #expect(decode(input) == Decoded(events: [.text(text)]), "key \(key), fragments of \(size)")
            }
        }
    }

    @Test("control frames between fragments arrive at once; the message after its final fragment")
    func controlBetweenFragments() {
        let input =
            clientFrame(.text, bytes("one "), isFinal: false) + clientFrame(.ping, bytes("p"))
            + clientFrame(.continuation, bytes("two "), isFinal: false) + clientFrame(.pong, [])
            + clientFrame(.continuation, bytes("three"))
        #expect(decode(input) == Decoded(events: [.ping(bytes("p")), .pong([]), .text("one two three")]))
    }

    @Test("empty messages and empty fragments")
    func empties() {
        let input =
            clientFrame(.text, []) + clientFrame(.text, [], isFinal: false)
            + clientFrame(.continuation, bytes("a"), isFinal: false) + clientFrame(.continuation, [])
        #expect(decode(input) == Decoded(events: [.text(""), .text("a")]))
    }

    static let stream: [UInt8] =
        clientFrame(.text, bytes("Hel"), isFinal: false, maskKey: 0x0102_0304) + clientFrame(.ping, bytes("hi"))
        + clientFrame(.continuation, bytes("lo, wörld €𝄞"), maskKey: 0xA0B0_C0D0)
        + clientFrame(.text, bytes(String(repeating: "é", count: 70)))  // 140 bytes: the 16-bit form
        + clientFrame(.text, bytes("€"), isFinal: false) + clientFrame(.continuation, bytes("𝄞"), isFinal: false)
        + clientFrame(.continuation, []) + clientFrame(.pong, bytes("po")) + clientFrame(.text, [])
        + clientFrame(.close, [0x03, 0xE8] + bytes("bye"))
    static let streamEvents: [Received] = [
        .ping(bytes("hi")), .text("Hello, wörld €𝄞"), .text(String(repeating: "é", count: 70)), .text("€𝄞"),
        .pong(bytes("po")), .text(""), .close(.normal, "bye"),
    ]

    @Test(
        "a multi-frame stream cut at any byte gives the same events",
        arguments: 0...WebSocketFrameDecoderTests.stream.count)
    func splitAnywhere(at cut: Int) {
        let stream = Self.stream
        #expect(decode([stream[..<cut], stream[cut...]]) == Decoded(events: Self.streamEvents))
    }

    @Test("the stream cut into three pieces at every pair of positions gives the same events")
    func splitIntoThree() {
        let stream = Self.stream
        for first in 0...stream.count {
            for second in first...stream.count {
                let decoded = decode([stream[..<first], stream[first..<second], stream[second...]])
                #expect(decoded == Decoded(events: Self.streamEvents), "cuts at \(first) and \(second)")
            }
        }
    }

    @Test("the stream fed one byte at a time gives the same events")
    func byteByByte() {
        let stream = Self.stream
        #expect(decode(stream.indices.map { stream[$0...$0] }) == Decoded(events: Self.streamEvents))
    }

    @Test("after a close frame the rest of the input is ignored, and later feeds too")
    func afterClose() throws {
        var decoder = WebSocketFrameDecoder(maxMessageBytes: 100)
        var events: [Received] = []
        let input = clientFrame(.close, []) + clientFrame(.text, bytes("late")) + [0xFF, 0xFF]
        try decoder.feed(input) { events.append(Received($0)) }
        try decoder.feed(clientFrame(.text, bytes("later"))) { events.append(Received($0)) }
        #expect(events == [.close(nil, "")])
        #expect(decoder.isClosed)
    }

    @Test("close frames: no payload, a code, a code and a UTF-8 reason", arguments: [
        ([UInt8](), Received.close(nil, "")),
        ([0x03, 0xE8], .close(.normal, "")),
        ([0x03, 0xE9] + Array("going ☃".utf8), .close(.goingAway, "going ☃")),
        ([0x0F, 0xA0], .close(4000, "")),
    ])
    func closeFrames(payload: [UInt8], expected: Received) {
        #expect(decode(clientFrame(.close, payload)) == Decoded(events: [expected]))
    }

    @Test(
        "close codes a peer may send",
        arguments: [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014, 3000, 3999, 4000, 4999]
            as [UInt16])
    func allowedCloseCodes(code: UInt16) {
        let payload = [UInt8(code >> 8), UInt8(code & 0xFF)]
        let expected = Decoded(events: [.close(WebSocketCloseCode(rawValue: code), "")])
        #expect(decode(clientFrame(.close, payload)) == expected)
    }

    @Test("a message of exactly maxMessageBytes, across fragments, is accepted")
    func exactlyTheLimit() {
        let input = clientFrame(.text, bytes("12345"), isFinal: false) + clientFrame(.continuation, bytes("67890"))
        #expect(decode(input, maxMessageBytes: 10) == Decoded(events: [.text("1234567890")]))
        // Control frames do not count against it.
        let ping = decode(clientFrame(.ping, bytes("12345678901")), maxMessageBytes: 10)
        #expect(ping == Decoded(events: [.ping(bytes("12345678901"))]))
    }

    @Test("a large message reassembled from many fragments, then a small one (the buffer is reused or released)")
    func largeThenSmall() {
        let big = String(repeating: "0123456789", count: 10_000)
        var input: [UInt8] = []
        let payload = bytes(big)
        for start in stride(from: 0, to: payload.count, by: 4096) {
            let end = min(start + 4096, payload.count)
            input += clientFrame(
                start == 0 ? .text : .continuation, Array(payload[start..<end]), isFinal: end == payload.count)
        }
        input += clientFrame(.text, bytes("small"))
        #expect(decode(input) == Decoded(events: [.text(big), .text("small")]))
    }
}
