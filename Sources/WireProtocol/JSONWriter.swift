// JSONWriter: compact JSON text appended to a byte buffer. Strings are escaped minimally (quote, backslash, controls),
// integers are written digit by digit, doubles use Swift's shortest round-trip text. Never writes a trailing newline:
// framing is the caller's job.

/// Appends compact JSON (no insignificant whitespace) to a `[UInt8]`.
///
/// Cost: O(size of the output) with no intermediate allocations, except for a double whose shortest text is longer
/// than 15 bytes (Swift's `description` allocates then). `append` recurses once per nesting level; values that came
/// from `JSONParser` are at most its `maxDepth` deep.
public enum JSONWriter {
    /// Encodes `value` as compact JSON.
    public static func encode(_ value: JSONValue) -> [UInt8] {
        var bytes: [UInt8] = []
        self.append(value, to: &bytes)
        return bytes
    }

    /// Encodes `value` as compact JSON text.
    public static func encodeString(_ value: JSONValue) -> String {
        String(decoding: self.encode(value), as: UTF8.self)
    }

    /// Appends `value` as compact JSON; object members keep their order.
    public static func append(_ value: JSONValue, to bytes: inout [UInt8]) {
        switch value {
        case .null: self.appendLiteral("null", to: &bytes)
        case .bool(let flag): self.appendLiteral(flag ? "true" : "false", to: &bytes)
        case .int(let number): self.appendInt(number, to: &bytes)
        case .double(let number): self.appendDouble(number, to: &bytes)
        case .string(let text): self.appendString(text, to: &bytes)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (position, element) in elements.enumerated() {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                self.append(element, to: &bytes)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            for position in 0..<object.count {
                if position > 0 { bytes.append(UInt8(ascii: ",")) }
                self.appendString(object.keys[position], to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                self.append(object.values[position], to: &bytes)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `text` as a JSON string: `"` and `\` are escaped, controls below U+0020 become `\n`, `\r`, `\t`,
    /// `\b`, `\f` or `\u00XX`, and everything else (including non-ASCII) is copied as raw UTF-8. Runs of bytes
    /// that need no escaping are copied in one go.
    public static func appendString(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        bytes.append(UInt8(ascii: "\""))
        text.withUTF8 { utf8 in
            guard let base = utf8.baseAddress else { return }
            let count = utf8.count
            var runStart = 0
            var position = 0
            while position < count {
                // Eight bytes per step while eight remain: most text has nothing to escape.
                while position &+ 8 <= count {
                    let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
                    let escaped = Self.escapedBytes(in: word)
                    if escaped != 0 {
                        position &+= escaped.trailingZeroBitCount &>> 3
                        break
                    }
                    position &+= 8
                }
                guard position < count else { break }
                let byte = base[position]
                if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") {
                    if runStart < position {
                        bytes.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: position &- runStart))
                    }
                    self.appendEscape(for: byte, to: &bytes)
                    runStart = position &+ 1
                }
                position &+= 1
            }
            if runStart < count {
                bytes.append(contentsOf: UnsafeBufferPointer(start: base + runStart, count: count &- runStart))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The high bit of each byte of `word` (first byte lowest) that must be escaped in a JSON string: a quote, a
    /// backslash, below 0x20. The lowest set bit is always exact; bits above it may be spurious (borrows), which
    /// `appendString` never looks at (it checks the byte it stops at).
    @inline(__always)
    static func escapedBytes(in word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let quotes = word ^ (ones &* UInt64(UInt8(ascii: "\"")))
        let backslashes = word ^ (ones &* UInt64(UInt8(ascii: "\\")))
        let zeroQuote = (quotes &- ones) & ~quotes
        let zeroBackslash = (backslashes &- ones) & ~backslashes
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & (ones &* 0x80)
    }

    /// The escape sequence for a byte that may not appear raw in a JSON string.
    private static func appendEscape(for byte: UInt8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        case 0x08: bytes.append(UInt8(ascii: "b"))
        case 0x0C: bytes.append(UInt8(ascii: "f"))
        default:
            let hexDigits: StaticString = "0123456789abcdef"
            bytes.append(UInt8(ascii: "u"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(UInt8(ascii: "0"))
            bytes.append(hexDigits.utf8Start[Int(byte >> 4)])
            bytes.append(hexDigits.utf8Start[Int(byte & 0x0F)])
        }
    }

    /// Appends `value` in decimal, written digit by digit without allocating a String.
    public static func appendInt(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        if magnitude < 10 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(magnitude))
            return
        }
        // 20 digits hold UInt64.max; fill from the right, then copy the used part.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var first = digits.count
            while magnitude > 0 {
                first -= 1
                let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10)
                digits[first] = UInt8(ascii: "0") &+ UInt8(remainder)
                magnitude = quotient
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(digits)[first...]))
        }
    }

    /// Appends `{"KEY":N}` (`prefix` is `{"KEY":`) with one copy: the result of every mutation (`{"seq":N}`).
    public static func appendObject(prefix: StaticString, int value: Int64, to bytes: inout [UInt8]) {
        let prefixCount = prefix.utf8CodeUnitCount
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: prefixCount + 22) { buffer in
            guard let base = buffer.baseAddress else { return }
            base.update(from: prefix.utf8Start, count: prefixCount)
            let end = prefixCount + Self.writeDecimal(value, to: UnsafeMutableRawPointer(base + prefixCount))
            base[end] = UInt8(ascii: "}")
            bytes.append(contentsOf: UnsafeBufferPointer(start: base, count: end &+ 1))
        }
    }

    /// Writes `value`'s decimal digits (and its minus sign) at `destination`, which has room for 20 bytes; returns how
    /// many it wrote. The one digit writer of the paths that write into memory they own (results, output buffers).
    /// Four digits a step (one 64-bit division by 10,000, then a 32-bit split into two pairs): a 19-digit value (a
    /// nanosecond timestamp) takes 4 steps and 4 counting steps instead of 9 and 9.
    @inline(__always)
    public static func writeDecimal(_ value: Int64, to destination: UnsafeMutableRawPointer) -> Int {
        var magnitude = value.magnitude
        var digits = 1
        var rest = magnitude
        while rest >= 10_000 {
            rest /= 10_000
            digits &+= 4
        }
        if rest >= 100 { digits &+= rest >= 1_000 ? 3 : 2 } else if rest >= 10 { digits &+= 1 }
        let sign = value < 0 ? 1 : 0
        if sign == 1 { destination.storeBytes(of: UInt8(ascii: "-"), as: UInt8.self) }
        var position = sign &+ digits
        // Pairs from a table of "00", "01", ... "99" (a literal: no lazy global to initialise).
        let table: StaticString = """
            00010203040506070809101112131415161718192021222324252627282930313233343536373839\
            40414243444546474849505152535455565758596061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899
            """
        let pairs = UnsafeRawPointer(table.utf8Start)
        @inline(__always) func pair(_ twoDigits: UInt32) -> UInt16 {
            pairs.loadUnaligned(fromByteOffset: Int(truncatingIfNeeded: twoDigits) &* 2, as: UInt16.self)
        }
        while magnitude >= 10_000 {
            let (quotient, remainder) = magnitude.quotientAndRemainder(dividingBy: 10_000)
            let four = UInt32(truncatingIfNeeded: remainder)
            position &-= 4
            destination.storeBytes(of: pair(four / 100), toByteOffset: position, as: UInt16.self)
            destination.storeBytes(of: pair(four % 100), toByteOffset: position &+ 2, as: UInt16.self)
            magnitude = quotient
        }
        var small = UInt32(truncatingIfNeeded: magnitude)
        if small >= 100 {
            position &-= 2
            destination.storeBytes(of: pair(small % 100), toByteOffset: position, as: UInt16.self)
            small /= 100
        }
        if small >= 10 {
            destination.storeBytes(of: pair(small), toByteOffset: sign, as: UInt16.self)
        } else {
            destination.storeBytes(
                of: UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: small), toByteOffset: sign, as: UInt8.self)
        }
        return sign &+ digits
    }

    /// Appends a finite `value` as the shortest text that parses back to exactly the same Double, always with a
    /// `.` or an exponent so that readers see a double (`42.0`, `0.1`, `1e-05`, `1e+20`, `-0.0`, `5e-324`). JSON has
    /// no NaN or infinity: those are written `null`, as JavaScript's `JSON.stringify` does (kvod never stores or
    /// computes one — its values and results are finite or null — so this is a last line, not a path).
    public static func appendDouble(_ value: Double, to bytes: inout [UInt8]) {
        guard value.isFinite else {
            bytes.append(contentsOf: [UInt8(ascii: "n"), UInt8(ascii: "u"), UInt8(ascii: "l"), UInt8(ascii: "l")])
            return
        }
        // Swift's description is the shortest round-trip form and is valid JSON as it stands: an optional minus,
        // digits, an optional fraction with digits on both sides, an optional exponent `e[+-]digits`.
        var text = value.description
        var hasFractionOrExponent = false
        text.withUTF8 { utf8 in
            for byte in utf8 where byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") {
                hasFractionOrExponent = true
            }
            bytes.append(contentsOf: utf8)
        }
        // Defensive: should a future stdlib print an integral double without ".0", keep it recognisably a double.
        if !hasFractionOrExponent { self.appendLiteral(".0", to: &bytes) }
    }

    /// Appends ASCII text known at compile time.
    @inline(__always)
    public static func appendLiteral(_ literal: StaticString, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}
