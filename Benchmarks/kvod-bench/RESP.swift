// A minimal RESP2 codec for the Redis side of the comparison: commands out as arrays of bulk strings; replies in as
// simple strings, errors, integers, bulk strings and arrays (nested arrays are flattened). Parsing is incremental
// and allocation-free per reply: bulk strings are byte ranges into the reader's buffer.

/// Encoding of Redis commands (RESP arrays of bulk strings).
enum RESPCommand {
    /// Appends `*N\r\n` and then each argument as `$LEN\r\nBYTES\r\n`.
    static func append(_ arguments: [[UInt8]], to bytes: inout [UInt8]) {
        Self.appendHeader(UInt8(ascii: "*"), arguments.count, to: &bytes)
        for argument in arguments { Self.appendBulk(argument, to: &bytes) }
    }

    /// Appends a command given as strings.
    static func append(_ arguments: [String], to bytes: inout [UInt8]) {
        self.append(arguments.map { Array($0.utf8) }, to: &bytes)
    }

    /// Appends one bulk string.
    @inline(__always)
    static func appendBulk(_ argument: [UInt8], to bytes: inout [UInt8]) {
        Self.appendHeader(UInt8(ascii: "$"), argument.count, to: &bytes)
        bytes.append(contentsOf: argument)
        bytes.append(contentsOf: [0x0D, 0x0A])
    }

    /// Appends `PREFIX COUNT \r\n`.
    @inline(__always)
    static func appendHeader(_ prefix: UInt8, _ count: Int, to bytes: inout [UInt8]) {
        bytes.append(prefix)
        Self.appendDecimal(UInt64(count), to: &bytes)
        bytes.append(contentsOf: [0x0D, 0x0A])
    }

    /// Appends a non-negative integer in decimal.
    @inline(__always)
    static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8]) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes hold 20 digits
        var count = 0
        var remaining = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(ascii: "0") &+ UInt8(remaining % 10)
                remaining /= 10
                count += 1
            } while remaining > 0
            bytes.append(contentsOf: buffer[(24 - count)...])
        }
    }
}

/// One element of a parsed reply. An array is an `.array` item holding its element count, followed by its elements.
struct RESPItem {
    /// The reply type.
    enum Kind: UInt8 {
        case simple, error, integer, bulk, nullBulk, array, nullArray
    }

    var kind: Kind
    /// The integer of `.integer`, the element count of `.array`.
    var integer: Int64
    /// The byte range of `.simple`, `.error` and `.bulk` text in the reader's buffer.
    var start: Int
    var count: Int
}

/// An incremental RESP2 reply reader: feed bytes, get whole replies.
struct RESPReader {
    /// Bytes received and not yet consumed.
    private var buffer: [UInt8] = []
    /// Elements of the reply being handed out; reused.
    private var items: [RESPItem] = []

    /// Consumes `chunk` and calls `onReply` once per complete top-level reply, with its items and the bytes their
    /// ranges point into (valid only during the call). Returns a description of the first protocol error, if any;
    /// the reader is then unusable.
    mutating func feed(
        _ chunk: UnsafeRawBufferPointer,
        _ onReply: (_ items: [RESPItem], _ bytes: UnsafeBufferPointer<UInt8>) -> Void
    ) -> String? {
        self.buffer.append(contentsOf: chunk)
        var consumed = 0
        var failure: String?
        // Work on locals so the closure below does not overlap an access to `self`.
        var items: [RESPItem] = []
        swap(&items, &self.items)
        self.buffer.withUnsafeBufferPointer { bytes in
            while consumed < bytes.count {
                items.removeAll(keepingCapacity: true)
                var position = consumed
                switch Self.parse(bytes, at: &position, into: &items, depth: 0) {
                case .complete:
                    onReply(items, bytes)
                    consumed = position
                case .incomplete:
                    return
                case .invalid(let reason):
                    failure = reason
                    return
                }
            }
        }
        swap(&items, &self.items)
        if consumed == self.buffer.count {
            self.buffer.removeAll(keepingCapacity: self.buffer.capacity <= 1 << 20)
        } else if consumed > 0 {
            self.buffer.removeFirst(consumed)
        }
        return failure
    }

    /// The outcome of parsing one reply.
    enum Outcome {
        case complete, incomplete
        case invalid(String)
    }

    /// Parses one reply at `position`, appending its items; advances `position` past it when complete.
    static func parse(
        _ bytes: UnsafeBufferPointer<UInt8>, at position: inout Int, into items: inout [RESPItem], depth: Int
    ) -> Outcome {
        guard depth < 8 else { return .invalid("RESP nesting deeper than 8") }
        guard position < bytes.count else { return .incomplete }
        let type = bytes[position]
        guard let lineEnd = Self.lineEnd(bytes, from: position + 1) else { return .incomplete }
        let lineStart = position + 1
        switch type {
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let kind: RESPItem.Kind = type == UInt8(ascii: "+") ? .simple : .error
            items.append(RESPItem(kind: kind, integer: 0, start: lineStart, count: lineEnd - lineStart))
            position = lineEnd + 2
            return .complete
        case UInt8(ascii: ":"):
            guard let value = Self.decimal(bytes, lineStart, lineEnd) else { return .invalid("bad RESP integer") }
            items.append(RESPItem(kind: .integer, integer: value, start: 0, count: 0))
            position = lineEnd + 2
            return .complete
        case UInt8(ascii: "$"):
            guard let length = Self.decimal(bytes, lineStart, lineEnd) else { return .invalid("bad RESP bulk length") }
            if length < 0 {
                items.append(RESPItem(kind: .nullBulk, integer: 0, start: 0, count: 0))
                position = lineEnd + 2
                return .complete
            }
            let start = lineEnd + 2
            guard start + Int(length) + 2 <= bytes.count else { return .incomplete }
            items.append(RESPItem(kind: .bulk, integer: 0, start: start, count: Int(length)))
            position = start + Int(length) + 2
            return .complete
        case UInt8(ascii: "*"):
            guard let length = Self.decimal(bytes, lineStart, lineEnd) else { return .invalid("bad RESP array length") }
            if length < 0 {
                items.append(RESPItem(kind: .nullArray, integer: 0, start: 0, count: 0))
                position = lineEnd + 2
                return .complete
            }
            items.append(RESPItem(kind: .array, integer: length, start: 0, count: 0))
            var cursor = lineEnd + 2
            for _ in 0..<length {
                switch Self.parse(bytes, at: &cursor, into: &items, depth: depth + 1) {
                case .complete: continue
                case let other: return other
                }
            }
            position = cursor
            return .complete
        default:
            return .invalid("unexpected RESP type byte \(type)")
        }
    }

    /// The index of the `\r` of the first `\r\n` at or after `start`, or nil.
    @inline(__always)
    private static func lineEnd(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 0x0D && bytes[index + 1] == 0x0A { return index }
            index += 1
        }
        return nil
    }

    /// The decimal integer in `bytes[start..<end]`, or nil.
    @inline(__always)
    static func decimal(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Int64? {
        var index = start
        var isNegative = false
        if index < end && bytes[index] == UInt8(ascii: "-") {
            isNegative = true
            index += 1
        }
        guard index < end, end - index <= 18 else { return nil }
        var value: Int64 = 0
        while index < end {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int64(digit)
            index += 1
        }
        return isNegative ? -value : value
    }

    /// The text of a `.simple`, `.error` or `.bulk` item.
    static func text(_ item: RESPItem, in bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: bytes[item.start..<(item.start + item.count)]), as: UTF8.self)
    }

    /// Whether the bytes of `item` equal `literal`.
    @inline(__always)
    static func item(_ item: RESPItem, in bytes: UnsafeBufferPointer<UInt8>, equals literal: StaticString) -> Bool {
        guard item.count == literal.utf8CodeUnitCount else { return false }
        let expected = literal.utf8Start
        for offset in 0..<item.count where bytes[item.start + offset] != expected[offset] { return false }
        return true
    }
}
