// Fuzz target: the WebSocket codec (Sources/WebSocket). The input is three things at once: an opening handshake
// (fed whole and in pieces: the same outcome, the leftover bytes adding up), a client's frame stream (fed whole, a
// byte at a time and in random pieces: the same events and the same error, within the rules), and the script of a
// conversation the harness encodes as masked client frames (fragmented anywhere, control frames between fragments),
// which must decode to exactly what was encoded, or stop with 1009 exactly where a smaller limit is crossed.
// Docs: docs/RELIABILITY.md; run: .ci/fuzz.sh.
import FuzzSupport
import WebSocket

@main
enum FuzzWebSocket {
    static func main() {
        FuzzDriver.run { input in
            let bytes = Array(input)
            var random = SplitMix64(seed: bytes)
            Self.checkHandshake(bytes, &random)
            Self.checkDecoding(bytes, &random)
            Self.checkRoundTrip(bytes, &random)
        }
    }

    // MARK: - Handshake

    static func checkHandshake(_ bytes: [UInt8], _ random: inout SplitMix64) {
        let isHTTP = bytes.withUnsafeBytes { WebSocketHandshake.looksLikeHTTP($0) }
        for maxHeadBytes in [256, 8192] {
            var whole = WebSocketHandshake(maxHeadBytes: maxHeadBytes)
            let expected = whole.feed(bytes)
            var pieces = WebSocketHandshake(maxHeadBytes: maxHeadBytes)
            var outcome: WebSocketHandshake.Outcome?
            var rest: [UInt8] = []
            for chunk in Self.chunks(bytes, &random) {
                if outcome != nil {
                    rest += chunk
                } else {
                    outcome = pieces.feed(Array(chunk))
                }
            }
            switch (expected, outcome) {
            case (nil, nil):
                break
            case (.reject(let status, let reason, let headers), .reject(let status2, let reason2, let headers2)):
                check(status == status2 && reason == reason2 && headers == headers2, "rejects differ in pieces")
                check([400, 426, 431].contains(status), "unexpected status \(status)")
                let response = WebSocketHandshake.errorResponse(status: status, reason: reason, extraHeaders: headers)
                check(response.starts(with: Array("HTTP/1.1 \(status) ".utf8)), "error response status line")
            case (.accept(let request), .accept(var request2)):
                check(request2.leftover + rest == request.leftover, "leftover bytes do not add up")
                request2.leftover = request.leftover
                check(request == request2, "accepted requests differ in pieces")
                check(request.path.hasPrefix("/"), "path without a slash")
                check(bytes.first == UInt8(ascii: "\r") || bytes.first == UInt8(ascii: "\n") || isHTTP,
                    "an accepted handshake does not look like HTTP")
                check(WebSocketHandshake.originAllowed(request.origin, allowList: [request.origin ?? "x"]),
                    "an origin is not allowed by itself")
                let response = WebSocketHandshake.acceptResponse(key: request.key, protocol: request.protocols.first)
                check(response.starts(with: Array("HTTP/1.1 101 Switching Protocols\r\n".utf8)), "101 status line")
            default:
                check(false, "the handshake's outcome depends on how its bytes are cut")
            }
        }
    }

    // MARK: - Decoding arbitrary bytes

    static let limits = [0, 1, 16, 125, 126, 1000, 1 << 20]

    static func checkDecoding(_ bytes: [UInt8], _ random: inout SplitMix64) {
        guard let first = bytes.first else { return }
        let limit = Self.limits[Int(first) % Self.limits.count]
        let stream = bytes.dropFirst()
        let whole = Self.decode([stream], limit: limit)
        let oneByOne = Self.decode(stream.indices.map { stream[$0...$0] }, limit: limit)
        let pieces = Self.decode(Self.chunks(Array(stream), &random), limit: limit)
        check(whole == oneByOne, "decoding one byte at a time differs")
        check(whole == pieces, "decoding in pieces differs")
        for (index, event) in whole.events.enumerated() {
            switch event {
            case .text(let text): check(text.utf8.count <= limit, "a message over the limit was delivered")
            case .ping(let payload), .pong(let payload): check(payload.count <= 125, "a control payload over 125")
            case .close(let code, _):
                check(index == whole.events.count - 1 && whole.error == nil, "something after a close")
                check(code.map(\.isAllowedOnWire) ?? true, "a close code that may not travel")
            }
        }
        if let error = whole.error {
            check([1002, 1003, 1007, 1009].contains(error.code.rawValue), "unexpected close code \(error.code)")
            check(error.message.utf8.count <= 123, "an error message too long for a close reason")
        }
    }

    /// An event with its buffer copied.
    enum Received: Equatable {
        case text(String)
        case ping([UInt8])
        case pong([UInt8])
        case close(WebSocketCloseCode?, String)
    }

    struct Decoded: Equatable {
        var events: [Received] = []
        var error: WebSocketError?
    }

    static func decode(_ chunks: [ArraySlice<UInt8>], limit: Int) -> Decoded {
        var decoder = WebSocketFrameDecoder(maxMessageBytes: limit)
        var decoded = Decoded()
        for chunk in chunks {
            do {
                try decoder.feed(chunk) { event in
                    switch event {
                    case .text(let buffer):
                        guard let text = String(validating: Array(buffer), as: UTF8.self) else {
                            fatalError("fuzz invariant violated: a text message is not valid UTF-8")
                        }
                        decoded.events.append(.text(text))
                    case .ping(let payload): decoded.events.append(.ping(payload))
                    case .pong(let payload): decoded.events.append(.pong(payload))
                    case .close(let code, let reason): decoded.events.append(.close(code, reason))
                    }
                }
            } catch {
                decoded.error = error
                // A failed decoder stays failed.
                var again = false
                do { try decoder.feed([0x81]) { _ in } } catch { again = error == decoded.error }
                check(again, "a failed decoder did not throw the same error again")
                return decoded
            }
        }
        return decoded
    }

    // MARK: - Round trip

    /// One client frame and what the decoder delivers once it is complete.
    struct Frame {
        var bytes: [UInt8]
        var events: [Received]
        /// The length of the message in progress, this frame's payload included (0 for control frames).
        var messageBytes: Int
    }

    /// Builds a conversation from the input (text decoded leniently, so always valid UTF-8), encodes it as masked
    /// client frames, and checks the decoder gives it back, and stops with 1009 exactly where a limit is crossed.
    static func checkRoundTrip(_ bytes: [UInt8], _ random: inout SplitMix64) {
        let text = Array(String(decoding: bytes, as: UTF8.self).utf8)
        var frames: [Frame] = []
        var start = 0
        var longest = 0
        while start < text.count || frames.isEmpty {
            // Messages end on a character boundary (their fragments may cut anywhere).
            var end = min(text.count, start + Int(random.next() % 300))
            while end < text.count && text[end] & 0xC0 == 0x80 { end += 1 }
            let message = Array(text[start..<end])
            longest = max(longest, message.count)
            // Fragments of any size, cutting UTF-8 sequences anywhere; control frames between them.
            var fragmentStart = 0
            var isFirst = true
            repeat {
                let fragmentEnd = min(message.count, fragmentStart + Int(random.next() % 64))
                let isFinal = fragmentEnd == message.count && random.next() % 4 != 0
                var frame: [UInt8] = []
                WebSocketFrameEncoder.appendMaskedFrame(
                    opcode: isFirst ? .text : .continuation, isFinal: isFinal,
                    payload: message[fragmentStart..<fragmentEnd], maskKey: UInt32(truncatingIfNeeded: random.next()),
                    to: &frame)
                let delivered = isFinal ? [Received.text(String(decoding: message, as: UTF8.self))] : []
                frames.append(Frame(bytes: frame, events: delivered, messageBytes: fragmentEnd))
                fragmentStart = fragmentEnd
                isFirst = false
                if random.next() % 3 == 0 {
                    let payload = Array(bytes.prefix(Int(random.next() % 126)))
                    let isPing = random.next() % 2 == 0
                    var control: [UInt8] = []
                    WebSocketFrameEncoder.appendMaskedFrame(
                        opcode: isPing ? .ping : .pong, payload: payload,
                        maskKey: UInt32(truncatingIfNeeded: random.next()), to: &control)
                    let event = isPing ? Received.ping(payload) : .pong(payload)
                    frames.append(Frame(bytes: control, events: [event], messageBytes: 0))
                }
                if isFinal { break }
            } while true
            start = end
        }
        // A close with a code and the input as its reason, cut by the server encoder to fit, then masked.
        var serverClose: [UInt8] = []
        WebSocketFrameEncoder.appendClose(
            code: .goingAway, reason: String(decoding: text, as: UTF8.self), to: &serverClose)
        let closePayload = Array(serverClose[2...])
        check(closePayload.count <= 125 && Int(serverClose[1]) == closePayload.count, "close frame too long")
        let reason = Array(closePayload[2...])
        check(text.starts(with: reason) && String(validating: reason, as: UTF8.self) != nil, "close reason cut badly")
        var close: [UInt8] = []
        WebSocketFrameEncoder.appendMaskedFrame(
            opcode: .close, payload: closePayload, maskKey: UInt32(truncatingIfNeeded: random.next()), to: &close)
        let closeEvent = Received.close(.goingAway, String(decoding: reason, as: UTF8.self))
        frames.append(Frame(bytes: close, events: [closeEvent], messageBytes: 0))

        let stream = frames.flatMap(\.bytes)
        let expected = Decoded(events: frames.flatMap(\.events))
        let decoded = Self.decode(Self.chunks(stream, &random), limit: longest)
        check(
            decoded == expected,
            "a conversation did not round-trip: \(decoded.events.count) of \(expected.events.count) events, "
                + "error \(decoded.error.map(\.description) ?? "none")")
        if longest > 0 {
            // One byte less: everything before the first frame that crosses the limit, then 1009.
            let crossing = frames.firstIndex { $0.messageBytes > longest - 1 }!
            let cut = Decoded(
                events: frames[..<crossing].flatMap(\.events), error: WebSocketError(code: .messageTooBig, message: ""))
            var decoded = Self.decode(Self.chunks(stream, &random), limit: longest - 1)
            check(decoded.error?.code == .messageTooBig, "no 1009 below a message's size")
            decoded.error = cut.error
            check(decoded == cut, "the events before a 1009 are not those before the crossing frame")
        }

        // Server text frames: the header says the payload's length, and the payload follows unchanged.
        var serverText: [UInt8] = []
        WebSocketFrameEncoder.appendText(String(decoding: text, as: UTF8.self), to: &serverText)
        let header = serverText[1] == 127 ? 10 : serverText[1] == 126 ? 4 : 2
        var length = Int(serverText[1])
        if header > 2 { length = serverText[2..<header].reduce(0) { $0 << 8 | Int($1) } }
        check(
            serverText[0] == 0x81 && length == text.count && Array(serverText[header...]) == text,
            "server text frame")
        check(header == 2 ? length <= 125 : header == 4 ? (126...65535).contains(length) : length > 65535,
            "not the shortest length form")
    }

    // MARK: - Splitting

    /// `bytes` cut into pieces of random sizes (including empty ones).
    static func chunks(_ bytes: [UInt8], _ random: inout SplitMix64) -> [ArraySlice<UInt8>] {
        var pieces: [ArraySlice<UInt8>] = []
        var start = 0
        let maxSize = [1, 3, 17, 200][Int(random.next() % 4)]
        while start < bytes.count {
            let end = min(bytes.count, start + Int(random.next() % UInt64(maxSize + 1)))
            pieces.append(bytes[start..<end])
            start = end
        }
        return pieces
    }
}

/// A small deterministic generator (SplitMix64) seeded from the input, so a crash replays exactly.
struct SplitMix64 {
    private var state: UInt64

    init(seed bytes: [UInt8]) {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325  // FNV-1a
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
        self.state = hash
    }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var value = self.state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
