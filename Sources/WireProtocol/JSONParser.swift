// JSONParser: a strict RFC 8259 parser from bytes to JSONValue. This file holds the entry points and the structural
// loop (values, arrays, objects, literals, whitespace); strings and UTF-8 live in JSONParser+Strings.swift, numbers in
// JSONParser+Numbers.swift. The parser is iterative, so nesting costs heap, never stack. No Foundation.

/// A strict, byte-level JSON parser (RFC 8259): exactly one value, optionally surrounded by space, tab, LF and CR.
///
/// Cost: one pass over the input, O(n) time; the only allocations are the resulting values plus two small stacks
/// of pending values. Nesting deeper than `maxDepth` is rejected before any further work, and nothing recurses.
///
/// Numbers: an integer literal (no fraction, no exponent) that fits in Int64 becomes `.int` (`-0` is `.int(0)`);
/// an integer literal outside Int64 becomes the nearest `.double`; any other number becomes the correctly rounded
/// `.double`. A number that is not finite as a Double (`1e400`) throws `.numberOutOfRange`.
///
/// Objects: a later duplicate key replaces the earlier value in place.
///
/// Keep `maxDepth` modest: the parser itself never recurses, but writing and releasing a value recurse once per level.
public struct JSONParser {
    /// The input, as bytes.
    let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read.
    var index: Int
    /// The deepest allowed nesting of arrays and objects.
    let maxDepth: Int
    /// Reused while decoding strings that contain escapes.
    var scratch: [UInt8]

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.index = 0
        self.maxDepth = maxDepth
        self.scratch = []
    }

    /// Parses exactly one JSON document from `bytes`.
    ///
    /// Throws `.syntax` for anything that is not strict JSON in valid UTF-8 (including empty input and trailing
    /// data), `.tooDeep` when arrays/objects nest deeper than `maxDepth`, and `.numberOutOfRange` for a number that
    /// overflows a Double. The bytes are only read during the call.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(WireError) -> JSONValue {
        let typed =
            if let base = bytes.baseAddress {
                // Reading raw bytes as UInt8 is always valid: UInt8 is layout-compatible with any byte.
                UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            } else {
                UnsafeBufferPointer<UInt8>(start: nil, count: 0)
            }
        var parser = JSONParser(bytes: typed, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses exactly one JSON document from `bytes`; see `parse(_:maxDepth:)` for the rules.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 64) throws(WireError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) -> JSONValue in try Self.parse(raw, maxDepth: maxDepth) }
        }
        return try result.get()
    }

    /// Parses exactly one JSON document from the UTF-8 of `text`; see `parse(_:maxDepth:)` for the rules.
    public static func parse(_ text: String, maxDepth: Int = 64) throws(WireError) -> JSONValue {
        var text = text
        let result = text.withUTF8 { utf8 in
            Result { () throws(WireError) -> JSONValue in
                try Self.parse(UnsafeRawBufferPointer(utf8), maxDepth: maxDepth)
            }
        }
        return try result.get()
    }

    // MARK: - Structure

    /// An array or object whose closing bracket has not arrived yet. Its pending members sit at the end of the
    /// shared `values` (and, for objects, `keys`) stacks, starting at the recorded positions.
    private struct OpenContainer {
        var isObject: Bool
        var valuesStart: Int
        var keysStart: Int
    }

    /// The whole document: one value, then only whitespace.
    private mutating func parseDocument() throws(WireError) -> JSONValue {
        var containers: [OpenContainer] = []
        var values: [JSONValue] = []
        var keys: [String] = []
        // One allocation each covers a typical request; growing from empty would reallocate several times.
        containers.reserveCapacity(8)
        values.reserveCapacity(16)
        keys.reserveCapacity(16)
        var value: JSONValue

        nextValue: while true {
            self.skipWhitespace()
            guard self.index < self.bytes.count else {
                throw self.syntaxError(self.index == 0 ? "empty input" : "unexpected end of input, expected a value")
            }
            switch self.bytes[self.index] {
            case UInt8(ascii: "["):
                guard containers.count < self.maxDepth else { throw .tooDeep(limit: self.maxDepth) }
                self.index += 1
                self.skipWhitespace()
                if self.index < self.bytes.count && self.bytes[self.index] == UInt8(ascii: "]") {
                    self.index += 1
                    value = .array([])
                } else {
                    containers.append(OpenContainer(isObject: false, valuesStart: values.count, keysStart: keys.count))
                    continue nextValue
                }
            case UInt8(ascii: "{"):
                guard containers.count < self.maxDepth else { throw .tooDeep(limit: self.maxDepth) }
                self.index += 1
                self.skipWhitespace()
                if self.index < self.bytes.count && self.bytes[self.index] == UInt8(ascii: "}") {
                    self.index += 1
                    value = .object(JSONObject())
                } else {
                    containers.append(OpenContainer(isObject: true, valuesStart: values.count, keysStart: keys.count))
                    keys.append(try self.parseKey())
                    continue nextValue
                }
            case UInt8(ascii: "\""):
                value = .string(try self.parseString())
            case UInt8(ascii: "t"):
                try self.expectLiteral("true")
                value = .bool(true)
            case UInt8(ascii: "f"):
                try self.expectLiteral("false")
                value = .bool(false)
            case UInt8(ascii: "n"):
                try self.expectLiteral("null")
                value = .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try self.parseNumber()
            default:
                throw self.syntaxError("expected a value, found \(Self.describe(self.bytes[self.index]))")
            }

            // A value is complete: hand it to the innermost open container, closing containers whose end follows.
            while let container = containers.last {
                values.append(value)
                self.skipWhitespace()
                guard self.index < self.bytes.count else {
                    throw self.syntaxError(
                        "unexpected end of input inside an \(container.isObject ? "object" : "array")")
                }
                let byte = self.bytes[self.index]
                if byte == UInt8(ascii: ",") {
                    self.index += 1
                    if container.isObject {
                        self.skipWhitespace()
                        keys.append(try self.parseKey())
                    }
                    continue nextValue
                }
                if container.isObject {
                    guard byte == UInt8(ascii: "}") else {
                        throw self.syntaxError(
                            "expected ',' or '}' after an object member, found \(Self.describe(byte))")
                    }
                    value = .object(
                        JSONObject(
                            uniquingKeys: Self.take(from: &keys, start: container.keysStart),
                            values: Self.take(from: &values, start: container.valuesStart)))
                } else {
                    guard byte == UInt8(ascii: "]") else {
                        throw self.syntaxError(
                            "expected ',' or ']' after an array element, found \(Self.describe(byte))")
                    }
                    value = .array(Self.take(from: &values, start: container.valuesStart))
                }
                self.index += 1
                containers.removeLast()
            }

            self.skipWhitespace()
            guard self.index == self.bytes.count else {
                throw self.syntaxError("unexpected \(Self.describe(self.bytes[self.index])) after the JSON value")
            }
            return value
        }
    }

    /// Removes and returns the elements of `stack` from `start` on. The outermost container (start 0) takes the
    /// whole buffer without copying; inner ones copy their members out.
    @inline(__always)
    private static func take<Element>(from stack: inout [Element], start: Int) -> [Element] {
        if start == 0 {
            defer { stack = [] }
            return stack
        }
        let members = Array(stack[start...])
        stack.removeLast(stack.count - start)
        return members
    }

    /// An object key and its colon; `index` is at the opening quote (whitespace already skipped).
    private mutating func parseKey() throws(WireError) -> String {
        guard self.index < self.bytes.count else {
            throw self.syntaxError("unexpected end of input, expected an object key")
        }
        guard self.bytes[self.index] == UInt8(ascii: "\"") else {
            throw self.syntaxError("expected a string key, found \(Self.describe(self.bytes[self.index]))")
        }
        let key = try self.parseString()
        self.skipWhitespace()
        guard self.index < self.bytes.count else { throw self.syntaxError("unexpected end of input, expected ':'") }
        guard self.bytes[self.index] == UInt8(ascii: ":") else {
            throw self.syntaxError("expected ':' after an object key, found \(Self.describe(self.bytes[self.index]))")
        }
        self.index += 1
        return key
    }

    /// `true`, `false` or `null`, byte for byte.
    private mutating func expectLiteral(_ literal: StaticString) throws(WireError) {
        let expected = literal.utf8Start
        for offset in 0..<literal.utf8CodeUnitCount {
            guard self.index < self.bytes.count, self.bytes[self.index] == expected[offset] else {
                throw self.syntaxError("invalid literal, expected `\(literal)`")
            }
            self.index += 1
        }
    }

    /// Skips JSON whitespace: space, tab, LF and CR (nothing else, not even other Unicode spaces).
    @inline(__always)
    private mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D: self.index += 1
            default: return
            }
        }
    }

    // MARK: - Errors

    /// A syntax error at the current position.
    func syntaxError(_ reason: String) -> WireError {
        .syntax(offset: self.index, reason: reason)
    }

    /// A byte as it should appear in an error message: `'x'` for printable ASCII, `0xNN` otherwise.
    static func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        let hex = String(byte, radix: 16, uppercase: true)
        return byte < 0x10 ? "0x0\(hex)" : "0x\(hex)"
    }
}
