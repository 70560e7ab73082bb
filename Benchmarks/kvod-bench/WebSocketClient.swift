// The client side of WebSocket (RFC 6455) as the benchmark needs it, so `fanout --transport websocket` can measure
// kvod's WebSocket path (Protocol/README.md#websocket) on the same fan-out as TCP: the upgrade request with a fixed
// key, masked text frames out (one JSON-RPC message each), unmasked frames in, turned back into newline-ended lines
// so the scenarios' line scanners read both transports alike. Pure: BenchConnection owns the socket. Deliberately
// small and separate from Sources/WebSocket (the server's module), so the generator depends on no server code.

/// How a benchmark connection talks to kvod.
enum BenchTransport: String, CaseIterable {
    /// JSON lines over TCP.
    case tcp
    /// WebSocket on kvod's own port: an HTTP upgrade, then one text frame per message.
    case websocket
}

/// Loop-owned (by its BenchConnection). One WebSocket client connection's protocol state: the handshake, then
/// frames.
struct WebSocketClient {
    /// The RFC's sample key and its accept value (RFC 6455 §1.3): a fixed key is fine for a load generator.
    static let key = "dGhlIHNhbXBsZSBub25jZQ=="
    static let expectedAccept = Array("s3pPLMBiTxaQ9kYGzzhZRbK+xOo=".utf8)
    /// The masking key of every frame sent, wire order (RFC 6455 §5.3 wants it random; the server's unmasking work
    /// is the same for any key).
    static let maskKey: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    /// The longest response head accepted.
    static let maxHeadBytes = 8192

    /// What a chunk from the server came to.
    enum Outcome: Equatable {
        /// Nothing the connection must act on.
        case none
        /// The server accepted the upgrade: frames may be sent now.
        case opened
        /// The server sent a close frame (its code, if any).
        case closed(code: Int?)
        /// The server broke the protocol or refused the upgrade.
        case failed(String)
    }

    /// Whether the upgrade was accepted.
    private(set) var isOpen = false
    private var head: [UInt8] = []
    private var decoder = WebSocketClientDecoder()

    /// The upgrade request for a server at `authority` (`host:port`, the Host header).
    static func upgradeRequest(authority: String) -> [UInt8] {
        Array(
            ("GET / HTTP/1.1\r\nHost: \(authority)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: \(Self.key)\r\nSec-WebSocket-Version: 13\r\n\r\n").utf8)
    }

    /// Feeds bytes from the server. Before the upgrade is answered they are the response head (bytes after it are
    /// frames); then frames: each complete text message is appended to `lines` followed by `\n`, and a ping's pong
    /// to `replies` (to be sent).
    mutating func receive(
        _ chunk: UnsafeRawBufferPointer, lines: inout [UInt8], replies: inout [UInt8]
    ) -> Outcome {
        if self.isOpen { return self.decoder.feed(chunk, lines: &lines, replies: &replies) }
        self.head.append(contentsOf: chunk)
        guard let end = Self.headEnd(self.head) else {
            return self.head.count > Self.maxHeadBytes ? .failed("an upgrade response head over 8 KiB") : .none
        }
        let text = String(decoding: self.head[..<end], as: UTF8.self)
        guard text.hasPrefix("HTTP/1.1 101 ") else {
            return .failed("the upgrade was refused: \(text.prefix(while: { $0 != "\r" }))")
        }
        guard Self.contains(Self.expectedAccept, in: self.head[..<end]) else {
            return .failed("the upgrade response lacks the expected Sec-WebSocket-Accept")
        }
        self.isOpen = true
        let leftover = Array(self.head[end...])
        self.head = []
        let outcome = leftover.withUnsafeBytes { self.decoder.feed($0, lines: &lines, replies: &replies) }
        return outcome == .none ? .opened : outcome
    }

    /// The index just past the head's blank line, or nil.
    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count
        where bytes[index] == 0x0A && bytes[index - 1] == 0x0D && bytes[index - 2] == 0x0A && bytes[index - 3] == 0x0D {
            return index + 1
        }
        return nil
    }

    private static func contains(_ needle: [UInt8], in haystack: ArraySlice<UInt8>) -> Bool {
        guard haystack.count >= needle.count else { return false }
        var start = haystack.startIndex
        while start + needle.count <= haystack.endIndex {
            if haystack[start..<start + needle.count].elementsEqual(needle) { return true }
            start += 1
        }
        return false
    }

    // MARK: - Sending

    /// Appends one masked text frame per line of `lines` (each ended by `\n`, which is not sent; a last line without
    /// one is framed too).
    static func appendFrames(lines: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        var start = 0
        while start < lines.count {
            var end = start
            while end < lines.count && lines[end] != 0x0A { end += 1 }
            let payload = UnsafeRawBufferPointer(rebasing: lines[start..<end])
            Self.appendMaskedFrame(opcode: 0x1, payload: payload, to: &output)
            start = end + 1
        }
    }

    /// Appends one final masked frame with `opcode` and `payload`.
    static func appendMaskedFrame(opcode: UInt8, payload: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.append(0x80 | opcode)
        let length = payload.count
        if length <= 125 {
            output.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            output.append(0x80 | 126)
            output.append(UInt8(truncatingIfNeeded: length >> 8))
            output.append(UInt8(truncatingIfNeeded: length))
        } else {
            output.append(0x80 | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                output.append(UInt8(truncatingIfNeeded: length >> shift))
            }
        }
        output.append(contentsOf: Self.maskKey)
        let start = output.count
        output.append(contentsOf: payload)
        output.withUnsafeMutableBytes { raw in Self.mask(UnsafeMutableRawBufferPointer(rebasing: raw[start...])) }
    }

    /// XORs `bytes` with the mask key from key byte 0, eight bytes per step.
    private static func mask(_ bytes: UnsafeMutableRawBufferPointer) {
        guard let base = bytes.baseAddress else { return }
        let key = Self.maskKey
        let word32 = UInt32(key[0]) | UInt32(key[1]) << 8 | UInt32(key[2]) << 16 | UInt32(key[3]) << 24
        let wide = UInt64(littleEndian: UInt64(word32) | UInt64(word32) << 32)
        var index = 0
        while index + 8 <= bytes.count {
            let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            base.storeBytes(of: word ^ wide, toByteOffset: index, as: UInt64.self)
            index += 8
        }
        while index < bytes.count {
            bytes[index] ^= key[index & 3]
            index += 1
        }
    }
}

/// Reads server frames (unmasked) from chunks cut anywhere: data payloads go to the caller's line buffer as they
/// arrive, each finished message ends with `\n`; control frames are collected whole.
struct WebSocketClientDecoder {
    /// Header bytes of a frame whose header was cut by a chunk boundary.
    private var header: [UInt8] = []
    /// Payload bytes still to come in the current frame; nil between frames.
    private var remaining: Int?
    private var opcode: UInt8 = 0
    private var isFinal = true
    /// A control frame's payload, collected whole.
    private var control: [UInt8] = []

    /// Feeds one chunk (see `WebSocketClient.receive`).
    mutating func feed(
        _ chunk: UnsafeRawBufferPointer, lines: inout [UInt8], replies: inout [UInt8]
    ) -> WebSocketClient.Outcome {
        var position = 0
        let count = chunk.count
        while position < count {
            if let remaining = self.remaining {
                let take = min(remaining, count - position)
                let piece = UnsafeRawBufferPointer(rebasing: chunk[position..<position + take])
                if self.opcode >= 0x8 {
                    self.control.append(contentsOf: piece)
                } else {
                    lines.append(contentsOf: piece)
                }
                position += take
                self.remaining = remaining - take
                if remaining == take, let outcome = self.finishFrame(lines: &lines, replies: &replies) {
                    return outcome
                }
                continue
            }
            // A header: parsed in place when the chunk holds it whole (the usual case), else collected.
            if self.header.isEmpty, count - position >= 2 {
                let length = Self.headerLength(chunk[position + 1])
                if count - position >= length {
                    let header = UnsafeRawBufferPointer(rebasing: chunk[position..<position + length])
                    position += length
                    if let outcome = self.beginFrame(header, lines: &lines, replies: &replies) { return outcome }
                    continue
                }
            }
            self.header.append(chunk[position])
            position += 1
            guard self.header.count >= 2, self.header.count == Self.headerLength(self.header[1]) else { continue }
            let header = self.header
            self.header.removeAll(keepingCapacity: true)
            let outcome = header.withUnsafeBytes { self.beginFrame($0, lines: &lines, replies: &replies) }
            if let outcome { return outcome }
        }
        return .none
    }

    /// The header's length given its second byte (no mask from a server, but a masked frame is measured right so
    /// it can be refused).
    private static func headerLength(_ second: UInt8) -> Int {
        let length7 = second & 0x7F
        return 2 + (length7 == 126 ? 2 : length7 == 127 ? 8 : 0) + (second & 0x80 != 0 ? 4 : 0)
    }

    private mutating func beginFrame(
        _ header: UnsafeRawBufferPointer, lines: inout [UInt8], replies: inout [UInt8]
    ) -> WebSocketClient.Outcome? {
        guard header[1] & 0x80 == 0 else { return .failed("a masked frame from the server") }
        guard header[0] & 0x70 == 0 else { return .failed("a frame with reserved bits set") }
        self.opcode = header[0] & 0x0F
        self.isFinal = header[0] & 0x80 != 0
        var length = Int(header[1] & 0x7F)
        if length == 126 {
            length = Int(header[2]) << 8 | Int(header[3])
        } else if length == 127 {
            length = 0
            for index in 2..<10 { length = length << 8 | Int(header[index]) }
        }
        switch self.opcode {
        case 0x0, 0x1: break
        case 0x8, 0x9, 0xA: self.control.removeAll(keepingCapacity: true)
        default: return .failed("a frame with opcode \(self.opcode)")
        }
        self.remaining = length
        return length == 0 ? self.finishFrame(lines: &lines, replies: &replies) : nil
    }

    private mutating func finishFrame(lines: inout [UInt8], replies: inout [UInt8]) -> WebSocketClient.Outcome? {
        self.remaining = nil
        switch self.opcode {
        case 0x0, 0x1:
            if self.isFinal { lines.append(0x0A) }
        case 0x8:
            let code = self.control.count >= 2 ? Int(self.control[0]) << 8 | Int(self.control[1]) : nil
            return .closed(code: code)
        case 0x9:
            self.control.withUnsafeBytes { WebSocketClient.appendMaskedFrame(opcode: 0xA, payload: $0, to: &replies) }
        default:
            break
        }
        return nil
    }
}
