// JSON strings: the no-escape fast path (skip plain ASCII eight bytes at a time, validate anything else in place, then
// decode straight from the input, or return a literal for the protocol's common words), the escape path (decode into
// a reused scratch buffer), `\uXXXX` with surrogate pairs, and strict UTF-8 validation (RFC 3629).

extension JSONParser {
    /// A string; `index` is at the opening quote and ends just past the closing quote. O(length).
    @inline(__always)
    mutating func parseString() throws(WireError) -> String {
        try self.parseStringNotingWords().string
    }

    /// A string (see `parseString`); the known word it is, if any; and, when its input was plain ASCII (no escapes,
    /// no multi-byte UTF-8), where that input is.
    @inline(__always)
    mutating func parseStringNotingWords() throws(WireError) -> (string: String, word: KnownWord?, plain: Range<Int>?) {
        let start = self.index &+ 1
        // Short strings, whose closing quote is among the next eight bytes, take one load and no loop.
        if start &+ 8 <= self.bytes.count, let base = self.bytes.baseAddress {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + start).loadUnaligned(as: UInt64.self))
            let special = Self.specialBytes(in: word)
            let count = special.trailingZeroBitCount &>> 3
            if special != 0 && base[start &+ count] == UInt8(ascii: "\"") {
                self.index = start &+ count &+ 1
                // The text, zero-padded: ASCII text has no NUL, so this alone says which text it is.
                if let known = KnownWord.recognize(word: word & ((1 &<< UInt64(count &* 8)) &- 1)) {
                    return (known.text, known, start..<start &+ count)
                }
                return (self.makeString(start: start, count: count), nil, start..<start &+ count)
            }
        }
        return try self.parseLongerString()
    }

    /// `parseStringNotingWords` for strings that are not short.
    @inline(never)
    private mutating func parseLongerString() throws(WireError) -> (
        string: String, word: KnownWord?, plain: Range<Int>?
    ) {
        let start = self.index &+ 1
        let end = self.skipPlainASCII(from: start)
        if end < self.bytes.count && self.bytes[end] == UInt8(ascii: "\"") {
            self.index = end &+ 1
            let count = end &- start
            // A quote follows the text, so the input is not empty.
            let text = self.bytes.baseAddress.unsafelyUnwrapped + start
            if let word = KnownWord.recognize(text, count: count, available: self.bytes.count &- start) {
                return (word.text, word, start..<end)
            }
            return (self.makeString(start: start, count: count), nil, start..<end)
        }
        return (try self.parseStringSlowly(start: start, stop: end), nil, nil)
    }

    /// A new String of the `count` plain ASCII bytes at `start` (a closing quote follows them).
    @inline(never)
    private func makeString(start: Int, count: Int) -> String {
        let utf8 = UnsafeBufferPointer(start: self.bytes.baseAddress.unsafelyUnwrapped + start, count: count)
        if count <= 15 {
            // Fits a small (inline) String; this initializer fills one directly, cheaper than `String(decoding:)`.
            return String(unsafeUninitializedCapacity: count) { $0.initialize(fromContentsOf: utf8) }
        }
        return String(decoding: utf8, as: UTF8.self)
    }

    /// The rest of a string that starts at `start` and is plain ASCII before `stop`, where there is a backslash,
    /// a control character, a byte >= 0x80 or the end of the input.
    @inline(never)
    private mutating func parseStringSlowly(start: Int, stop: Int) throws(WireError) -> String {
        var position = stop
        while position < self.bytes.count {
            let byte = self.bytes[position]
            if byte == UInt8(ascii: "\"") {
                self.index = position + 1
                // Already validated above, so decoding cannot repair anything.
                return String(decoding: UnsafeBufferPointer(rebasing: self.bytes[start..<position]), as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                return try self.parseEscapedString(start: start, firstEscape: position)
            } else if byte < 0x20 {
                throw .syntax(offset: position, reason: "control character \(Self.describe(byte)) in a string")
            } else {
                // `skipPlainASCII` stops only at a quote, a backslash, a control character or a byte >= 0x80.
                position = try self.skipUTF8Sequence(at: position)
                position = self.skipPlainASCII(from: position)
            }
        }
        throw .syntax(offset: position, reason: "unterminated string")
    }

    /// The index of the first byte at or after `start` that is a quote, a backslash, a control character or
    /// >= 0x80 (or the end of the input). Eight bytes per step while eight remain.
    @inline(__always)
    func skipPlainASCII(from start: Int) -> Int {
        var position = start
        let count = self.bytes.count
        if let base = self.bytes.baseAddress {
            while position &+ 8 <= count {
                let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
                let special = Self.specialBytes(in: word)
                if special != 0 { return position &+ (special.trailingZeroBitCount &>> 3) }
                position &+= 8
            }
        }
        while position < count {
            let byte = self.bytes[position]
            if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
            position += 1
        }
        return position
    }

    /// The high bit of each byte of `word` (first byte lowest) that is a quote, a backslash, below 0x20 or >= 0x80.
    /// The lowest set bit is always exact; bits above it may be spurious (borrows), which no caller looks at.
    @inline(__always)
    private static func specialBytes(in word: UInt64) -> UInt64 {
        // What the writer escapes, and the bytes >= 0x80 (multi-byte UTF-8, validated here).
        JSONWriter.escapedBytes(in: word) | (word & 0x8080_8080_8080_8080)
    }

    /// The `count` (at most 8) bytes at `pointer` as one little-endian word, zero-padded; `available` bytes are
    /// readable there.
    @inline(__always)
    static func word(_ pointer: UnsafePointer<UInt8>, count: Int, available: Int) -> UInt64 {
        if available >= 8 {
            let word = UInt64(littleEndian: UnsafeRawPointer(pointer).loadUnaligned(as: UInt64.self))
            return count >= 8 ? word : word & ((1 &<< UInt64(count &* 8)) &- 1)
        }
        var word: UInt64 = 0
        for offset in 0..<count { word |= UInt64(pointer[offset]) &<< UInt64(offset &* 8) }
        return word
    }

    /// Up to 8 bytes of `literal` from `offset` as `word` would read them; folds to a constant.
    @inline(__always)
    static func pack(_ literal: StaticString, from offset: Int = 0) -> UInt64 {
        var word: UInt64 = 0
        var index = 0
        while index < 8 && offset + index < literal.utf8CodeUnitCount {
            word |= UInt64(literal.utf8Start[offset + index]) &<< UInt64(index &* 8)
            index += 1
        }
        return word
    }

    /// The rest of a string that contains at least one escape, decoded into `scratch`.
    private mutating func parseEscapedString(start: Int, firstEscape: Int) throws(WireError) -> String {
        self.scratch.removeAll(keepingCapacity: true)
        self.scratch.append(contentsOf: UnsafeBufferPointer(rebasing: self.bytes[start..<firstEscape]))
        var runStart = firstEscape
        var position = firstEscape
        while position < self.bytes.count {
            let byte = self.bytes[position]
            if byte >= 0x80 {
                position = try self.skipUTF8Sequence(at: position)
            } else if byte == UInt8(ascii: "\"") {
                self.scratch.append(contentsOf: UnsafeBufferPointer(rebasing: self.bytes[runStart..<position]))
                self.index = position + 1
                return String(decoding: self.scratch, as: UTF8.self)
            } else if byte == UInt8(ascii: "\\") {
                self.scratch.append(contentsOf: UnsafeBufferPointer(rebasing: self.bytes[runStart..<position]))
                position = try self.decodeEscape(at: position)
                runStart = position
            } else if byte < 0x20 {
                throw .syntax(offset: position, reason: "control character \(Self.describe(byte)) in a string")
            } else {
                position += 1
            }
        }
        throw .syntax(offset: position, reason: "unterminated string")
    }

    /// Appends the character of the escape at `position` (a backslash) to `scratch`; returns the index after it.
    private mutating func decodeEscape(at position: Int) throws(WireError) -> Int {
        guard position + 1 < self.bytes.count else {
            throw .syntax(offset: position + 1, reason: "unterminated string")
        }
        let simple: UInt8
        switch self.bytes[position + 1] {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"):
            return try self.decodeUnicodeEscape(at: position)
        default:
            throw .syntax(offset: position + 1, reason: "invalid escape \\\(Self.describe(self.bytes[position + 1]))")
        }
        self.scratch.append(simple)
        return position + 2
    }

    /// `\uXXXX`, or a `\uD8xx\uDCxx` surrogate pair, at `position`; a lone or mismatched surrogate is an error.
    private mutating func decodeUnicodeEscape(at position: Int) throws(WireError) -> Int {
        let first = try self.hexQuad(at: position + 2)
        var scalar = first
        var next = position + 6
        if first >= 0xDC00 && first <= 0xDFFF {
            throw .syntax(offset: position, reason: "lone low surrogate escape")
        }
        if first >= 0xD800 && first <= 0xDBFF {
            guard next + 1 < self.bytes.count, self.bytes[next] == UInt8(ascii: "\\"),
                self.bytes[next + 1] == UInt8(ascii: "u")
            else {
                throw .syntax(offset: position, reason: "high surrogate escape not followed by a low surrogate escape")
            }
            let second = try self.hexQuad(at: next + 2)
            guard second >= 0xDC00 && second <= 0xDFFF else {
                throw .syntax(offset: next, reason: "high surrogate escape not followed by a low surrogate escape")
            }
            scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            next += 6
        }
        self.appendUTF8(scalar)
        return next
    }

    /// Four hex digits at `position`.
    private func hexQuad(at position: Int) throws(WireError) -> UInt32 {
        var value: UInt32 = 0
        for offset in 0..<4 {
            guard position + offset < self.bytes.count else {
                throw .syntax(offset: position + offset, reason: "unterminated \\u escape")
            }
            let byte = self.bytes[position + offset]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte &- UInt8(ascii: "A") &+ 10
            default:
                throw .syntax(offset: position + offset, reason: "expected a hex digit, found \(Self.describe(byte))")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Appends the UTF-8 encoding of a scalar value (never a surrogate) to `scratch`.
    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            self.scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            self.scratch.append(0xC0 | UInt8(scalar >> 6))
            self.scratch.append(0x80 | UInt8(scalar & 0x3F))
        case 0x800..<0x10000:
            self.scratch.append(0xE0 | UInt8(scalar >> 12))
            self.scratch.append(0x80 | UInt8((scalar >> 6) & 0x3F))
            self.scratch.append(0x80 | UInt8(scalar & 0x3F))
        default:
            self.scratch.append(0xF0 | UInt8(scalar >> 18))
            self.scratch.append(0x80 | UInt8((scalar >> 12) & 0x3F))
            self.scratch.append(0x80 | UInt8((scalar >> 6) & 0x3F))
            self.scratch.append(0x80 | UInt8(scalar & 0x3F))
        }
    }

    /// Validates the multi-byte UTF-8 sequence starting at `position` (a byte >= 0x80) and returns the index after
    /// it. Rejects stray continuation bytes, overlong forms, UTF-8-encoded surrogates, values above U+10FFFF,
    /// bytes 0xF5-0xFF and truncated sequences.
    private func skipUTF8Sequence(at position: Int) throws(WireError) -> Int {
        let lead = self.bytes[position]
        let length: Int
        // The allowed range of the second byte depends on the lead byte (RFC 3629 section 4); the rest are 80-BF.
        let secondRange: ClosedRange<UInt8>
        switch lead {
        case 0xC2...0xDF: (length, secondRange) = (2, 0x80...0xBF)
        case 0xE0: (length, secondRange) = (3, 0xA0...0xBF)
        case 0xE1...0xEC, 0xEE...0xEF: (length, secondRange) = (3, 0x80...0xBF)
        case 0xED: (length, secondRange) = (3, 0x80...0x9F)
        case 0xF0: (length, secondRange) = (4, 0x90...0xBF)
        case 0xF1...0xF3: (length, secondRange) = (4, 0x80...0xBF)
        case 0xF4: (length, secondRange) = (4, 0x80...0x8F)
        default:
            throw .syntax(offset: position, reason: "invalid UTF-8 byte \(Self.describe(lead))")
        }
        guard position + length <= self.bytes.count else {
            throw .syntax(offset: position, reason: "truncated UTF-8 sequence")
        }
        guard secondRange.contains(self.bytes[position + 1]) else {
            throw .syntax(offset: position + 1, reason: "invalid UTF-8 sequence")
        }
        for offset in 2..<length where self.bytes[position + offset] & 0xC0 != 0x80 {
            throw .syntax(offset: position + offset, reason: "invalid UTF-8 sequence")
        }
        return position + length
    }
}
