// The NATS core text protocol as kvod-bench speaks it (nats-server's client protocol): commands out (CONNECT, SUB,
// PUB, PING, PONG) and the server's messages in (INFO, MSG, PING, PONG, +OK, -ERR), parsed from a byte buffer that
// may end in the middle of a message (the caller keeps the unconsumed tail for the next read). Pure: bytes in,
// events out.

/// Encoding of NATS client commands.
public enum NATSCommand {
    /// `CONNECT {...}\r\n`. With `verbose` the server answers every command with `+OK` (a publisher's
    /// acknowledgement: NATS core has no other); `pedantic` off, no headers, no echo of its own messages.
    public static func appendConnect(verbose: Bool, name: String = "kvod-bench", to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"CONNECT {"verbose":"#.utf8)
        bytes.append(contentsOf: (verbose ? "true" : "false").utf8)
        bytes.append(contentsOf: #","pedantic":false,"echo":false,"lang":"swift","version":"1","name":""#.utf8)
        bytes.append(contentsOf: name.utf8)
        bytes.append(contentsOf: "\"}\r\n".utf8)
    }

    /// `SUB subject sid\r\n`.
    public static func appendSubscribe(subject: String, sid: Int, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: "SUB ".utf8)
        bytes.append(contentsOf: subject.utf8)
        bytes.append(UInt8(ascii: " "))
        PeerDecimal.append(UInt64(max(sid, 0)), to: &bytes)
        bytes.append(contentsOf: [0x0D, 0x0A])
    }

    /// `PUB subject N\r\nPAYLOAD\r\n`; `subjectAndSpace` is the subject's bytes followed by a space.
    @inline(__always)
    public static func appendPublish(subjectAndSpace: [UInt8], payload: [UInt8], to bytes: inout [UInt8]) {
        bytes.append(contentsOf: "PUB ".utf8)
        bytes.append(contentsOf: subjectAndSpace)
        PeerDecimal.append(UInt64(payload.count), to: &bytes)
        bytes.append(contentsOf: [0x0D, 0x0A])
        bytes.append(contentsOf: payload)
        bytes.append(contentsOf: [0x0D, 0x0A])
    }

    /// `PING\r\n`: the server answers `PONG` after everything sent before it (a subscriber's acknowledgement).
    public static func appendPing(to bytes: inout [UInt8]) { bytes.append(contentsOf: "PING\r\n".utf8) }

    /// `PONG\r\n`: the answer to the server's keep-alive `PING`.
    public static func appendPong(to bytes: inout [UInt8]) { bytes.append(contentsOf: "PONG\r\n".utf8) }
}

/// One message from a NATS server. Byte ranges are offsets into the buffer that was parsed.
public enum NATSEvent: Equatable {
    /// `INFO {json}`: the server's greeting (the JSON's range).
    case info(Range<Int>)
    /// `MSG subject sid [reply-to] size\r\npayload`: a delivered message.
    case message(subject: Range<Int>, sid: Int, payload: Range<Int>)
    case ping
    case pong
    /// `+OK` (verbose mode's acknowledgement).
    case ok
    /// `-ERR 'text'`.
    case error(String)
}

/// The NATS server-message parser.
public enum NATSParser {
    /// A parse of one message at a position.
    public enum Outcome: Equatable {
        /// A whole message, and where the next one starts.
        case complete(NATSEvent, next: Int)
        /// The buffer ends inside the message: read more and parse again from the same position.
        case incomplete
        /// Not the NATS protocol (the reason, for the report).
        case invalid(String)
    }

    /// The longest control line accepted (nats-server's default `max_control_line` is 4 KiB).
    public static let maxControlLine = 4096
    /// The largest payload accepted (nats-server's default `max_payload` is 1 MiB).
    public static let maxPayload = 1 << 20

    /// Parses the message that starts at `position` in `bytes`.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int) -> Outcome {
        let count = bytes.count
        guard position < count else { return .incomplete }
        // The control line, up to its CRLF.
        var end = position
        while end < count && bytes[end] != 0x0A {
            end += 1
            if end - position > Self.maxControlLine {
                return .invalid("a control line longer than \(Self.maxControlLine) bytes")
            }
        }
        guard end < count else { return .incomplete }
        let lineEnd = end > position && bytes[end - 1] == 0x0D ? end - 1 : end
        let next = end + 1
        let first = bytes[position] | 0x20  // the operation's first letter, lower-cased
        if first == UInt8(ascii: "m") {
            return Self.parseMessage(bytes, position, lineEnd, next)
        }
        if Self.lineIs(bytes, position, lineEnd, "PING") { return .complete(.ping, next: next) }
        if Self.lineIs(bytes, position, lineEnd, "PONG") { return .complete(.pong, next: next) }
        if Self.lineIs(bytes, position, lineEnd, "+OK") { return .complete(.ok, next: next) }
        if Self.hasPrefix(bytes, position, lineEnd, "-ERR") {
            var text = String(decoding: UnsafeBufferPointer(rebasing: bytes[(position + 4)..<lineEnd]), as: UTF8.self)
            text = String(text.drop(while: { $0 == " " }))
            if text.hasPrefix("'") && text.hasSuffix("'") && text.count >= 2 { text = String(text.dropFirst().dropLast()) }
            return .complete(.error(text), next: next)
        }
        if Self.hasPrefix(bytes, position, lineEnd, "INFO") {
            var start = position + 4
            while start < lineEnd && (bytes[start] == 0x20 || bytes[start] == 0x09) { start += 1 }
            return .complete(.info(start..<lineEnd), next: next)
        }
        let shown = String(decoding: UnsafeBufferPointer(rebasing: bytes[position..<min(lineEnd, position + 80)]), as: UTF8.self)
        return .invalid("unknown operation '\(shown)'")
    }

    /// `MSG subject sid [reply-to] size`, then `size` bytes and CRLF. The fields are kept in locals: a
    /// subscriber parses every message, and an allocation each would cost the generator more than the server.
    private static func parseMessage(
        _ bytes: UnsafeBufferPointer<UInt8>, _ position: Int, _ lineEnd: Int, _ next: Int
    ) -> Outcome {
        var fields: (Range<Int>, Range<Int>, Range<Int>, Range<Int>, Range<Int>) = (0..<0, 0..<0, 0..<0, 0..<0, 0..<0)
        var fieldCount = 0
        var index = position
        while index < lineEnd {
            while index < lineEnd && (bytes[index] == 0x20 || bytes[index] == 0x09) { index += 1 }
            let start = index
            while index < lineEnd && bytes[index] != 0x20 && bytes[index] != 0x09 { index += 1 }
            guard index > start else { break }
            switch fieldCount {
            case 0: fields.0 = start..<index
            case 1: fields.1 = start..<index
            case 2: fields.2 = start..<index
            case 3: fields.3 = start..<index
            case 4: fields.4 = start..<index
            default: return .invalid("MSG with more than 4 arguments")
            }
            fieldCount += 1
        }
        guard fieldCount > 0, Self.rangeIs(bytes, fields.0, "MSG") else {
            return .invalid("unknown operation (HMSG and others are not expected)")
        }
        guard fieldCount == 4 || fieldCount == 5 else { return .invalid("MSG with \(fieldCount - 1) arguments") }
        guard let sid = Self.decimal(bytes, fields.2), let size = Self.decimal(bytes, fieldCount == 4 ? fields.3 : fields.4)
        else {
            return .invalid("MSG with a sid or size that is not a number")
        }
        guard size <= Self.maxPayload else { return .invalid("MSG payload of \(size) bytes") }
        let payloadEnd = next + size
        guard payloadEnd + 2 <= bytes.count else { return .incomplete }
        guard bytes[payloadEnd] == 0x0D, bytes[payloadEnd + 1] == 0x0A else {
            return .invalid("MSG payload not followed by CRLF")
        }
        return .complete(.message(subject: fields.1, sid: sid, payload: next..<payloadEnd), next: payloadEnd + 2)
    }

    /// A run of 1 to 18 decimal digits, or nil.
    private static func decimal(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int? {
        guard !range.isEmpty, range.count <= 18 else { return nil }
        var value = 0
        for index in range {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int(digit)
        }
        return value
    }

    private static func rangeIs(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ word: StaticString) -> Bool {
        Self.lineIs(bytes, range.lowerBound, range.upperBound, word)
    }

    /// Whether `bytes[start..<end]` is `word`, ignoring ASCII case (the protocol's operations are case-insensitive).
    private static func lineIs(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ word: StaticString)
        -> Bool
    {
        end - start == word.utf8CodeUnitCount && Self.hasPrefix(bytes, start, end, word)
    }

    private static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ word: StaticString)
        -> Bool
    {
        let length = word.utf8CodeUnitCount
        guard end - start >= length else { return false }
        let letters = word.utf8Start
        for offset in 0..<length where Self.lower(bytes[start + offset]) != Self.lower(letters[offset]) {
            return false
        }
        return true
    }

    @inline(__always)
    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte
    }
}

/// The NATS parser over a socket's reads: a message split between two reads is kept until it is whole.
public struct NATSReader {
    /// The bytes of an incomplete message from earlier reads.
    private var pending: [UInt8] = []

    public init() {}

    /// Reads `chunk`: `handle` gets every whole message with the buffer its ranges point into (valid during the
    /// call only). Returns why the stream is not NATS, or nil.
    public mutating func feed(
        _ chunk: UnsafeRawBufferPointer, _ handle: (NATSEvent, UnsafeBufferPointer<UInt8>) -> Void
    ) -> String? {
        if self.pending.isEmpty {
            let bytes = chunk.assumingMemoryBound(to: UInt8.self)
            let (consumed, failure) = Self.parseAll(bytes, handle)
            if failure == nil && consumed < bytes.count { self.pending.append(contentsOf: bytes[consumed...]) }
            return failure
        }
        self.pending.append(contentsOf: chunk)
        let (consumed, failure) = self.pending.withUnsafeBufferPointer { Self.parseAll($0, handle) }
        self.pending.removeFirst(consumed)
        return failure
    }

    private static func parseAll(
        _ bytes: UnsafeBufferPointer<UInt8>, _ handle: (NATSEvent, UnsafeBufferPointer<UInt8>) -> Void
    ) -> (Int, String?) {
        var position = 0
        while position < bytes.count {
            switch NATSParser.parse(bytes, at: position) {
            case .complete(let event, let next):
                handle(event, bytes)
                position = next
            case .incomplete:
                return (position, nil)
            case .invalid(let reason):
                return (position, reason)
            }
        }
        return (position, nil)
    }
}
