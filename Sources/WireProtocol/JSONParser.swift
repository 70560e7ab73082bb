// JSONParser: a strict RFC 8259 parser from bytes to JSONValue. This file holds the entry points and the structural
// code (values, arrays, objects, literals, whitespace); strings and UTF-8 live in JSONParser+Strings.swift, numbers in
// JSONParser+Numbers.swift. Shallow containers are parsed recursively (a bounded number of levels), deeper ones
// iteratively, so nesting beyond that costs heap, never stack. No Foundation.

/// A strict, byte-level JSON parser (RFC 8259): exactly one value, optionally surrounded by space, tab, LF and CR.
///
/// Cost: one pass over the input, O(n) time; the only allocations are the resulting values (plus, for containers
/// nested more than `recursionLimit` levels deep, stacks of pending values). Nesting deeper than `maxDepth` is
/// rejected before any further work, and the parser's stack use is bounded whatever the nesting.
///
/// Numbers: an integer literal (no fraction, no exponent) that fits in Int64 becomes `.int` (`-0` is `.int(0)`);
/// an integer literal outside Int64 becomes the nearest `.double`; any other number becomes the correctly rounded
/// `.double`. A number that is not finite as a Double (`1e400`) throws `.numberOutOfRange`.
///
/// Objects: a later duplicate key replaces the earlier value in place.
///
/// Keep `maxDepth` modest: the parser's recursion is bounded, but writing and releasing a value recurse once per level.
public struct JSONParser {
    /// The input, as bytes.
    let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read.
    var index: Int
    /// The deepest allowed nesting of arrays and objects.
    let maxDepth: Int
    /// How many arrays/objects deep the parser recurses; deeper containers are parsed by the iterative
    /// `parseDeepContainer`, so the stack use stays bounded whatever `maxDepth` is. Shallow documents (every request
    /// kvod sees) take the recursive path, which builds each container's arrays directly, with no shared stacks.
    /// Tests lower it to check that both paths agree.
    let recursionLimit: Int
    /// Reused while decoding strings that contain escapes.
    var scratch: [UInt8]

    /// A parser at the start of `bytes`, which must stay valid while it is used.
    init(_ bytes: UnsafeRawBufferPointer, maxDepth: Int, recursionLimit: Int = 24) {
        self.bytes =
            if let base = bytes.baseAddress {
                // Reading raw bytes as UInt8 is always valid: UInt8 is layout-compatible with any byte.
                UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: bytes.count)
            } else {
                UnsafeBufferPointer<UInt8>(start: nil, count: 0)
            }
        self.index = 0
        self.maxDepth = maxDepth
        self.recursionLimit = recursionLimit
        self.scratch = []
    }

    /// Parses exactly one JSON document from `bytes`.
    ///
    /// Throws `.syntax` for anything that is not strict JSON in valid UTF-8 (including empty input and trailing
    /// data), `.tooDeep` when arrays/objects nest deeper than `maxDepth`, and `.numberOutOfRange` for a number that
    /// overflows a Double. The bytes are only read during the call.
    public static func parse(_ bytes: UnsafeRawBufferPointer, maxDepth: Int = 64) throws(WireError) -> JSONValue {
        var parser = JSONParser(bytes, maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// `parse(_:maxDepth:)` with another recursion limit (tests: every limit must give the same results).
    static func parse(_ bytes: [UInt8], maxDepth: Int, recursionLimit: Int) throws(WireError) -> JSONValue {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(WireError) -> JSONValue in
                var parser = JSONParser(raw, maxDepth: maxDepth, recursionLimit: recursionLimit)
                return try parser.parseDocument()
            }
        }
        return try result.get()
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

    /// The whole document: one value, then only whitespace.
    mutating func parseDocument() throws(WireError) -> JSONValue {
        let value = try self.parseValue(depth: 0)
        try self.expectEndOfInput()
        return value
    }

    /// After the document's value: only whitespace may follow.
    @inline(__always)
    mutating func expectEndOfInput() throws(WireError) {
        self.skipWhitespace()
        guard self.index == self.bytes.count else {
            throw self.syntaxError("unexpected \(Self.describe(self.bytes[self.index])) after the JSON value")
        }
    }

    /// One value inside `depth` open arrays/objects, whitespace before it skipped; `index` ends just past it.
    /// Inlined into its few callers: strings and numbers take no call of their own on the fast path.
    @inline(__always)
    mutating func parseValue(depth: Int) throws(WireError) -> JSONValue {
        guard let byte = self.peekSkippingWhitespace() else { throw self.missingValueError() }
        switch byte {
        case UInt8(ascii: "\""): return .string(try self.parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try self.parseNumber()
        case UInt8(ascii: "{"): return try self.parseObject(depth: depth)
        case UInt8(ascii: "["): return try self.parseArray(depth: depth)
        default: return try self.parseLiteral()
        }
    }

    /// The error for a missing value at `index` (the end of the input).
    private func missingValueError() -> WireError {
        self.syntaxError(self.index == 0 ? "empty input" : "unexpected end of input, expected a value")
    }

    /// A string, number or literal at `index` (which is inside the input); anything else is an error.
    private mutating func parseScalar() throws(WireError) -> JSONValue {
        switch self.bytes[self.index] {
        case UInt8(ascii: "\""): return .string(try self.parseString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try self.parseNumber()
        default: return try self.parseLiteral()
        }
    }

    /// `true`, `false` or `null` at `index` (which is inside the input); anything else is an error.
    @inline(never)
    private mutating func parseLiteral() throws(WireError) -> JSONValue {
        switch self.bytes[self.index] {
        case UInt8(ascii: "t"):
            try self.expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try self.expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try self.expectLiteral("null")
            return .null
        default:
            throw self.syntaxError("expected a value, found \(Self.describe(self.bytes[self.index]))")
        }
    }

    /// An object at `index` (its `{`) inside `depth` open arrays/objects; builds its arrays directly.
    private mutating func parseObject(depth: Int) throws(WireError) -> JSONValue {
        guard depth < self.maxDepth else { throw .tooDeep(limit: self.maxDepth) }
        if depth >= self.recursionLimit { return try self.parseDeepContainer(depth: depth) }
        self.index &+= 1
        if self.peekSkippingWhitespace() == UInt8(ascii: "}") {
            self.index &+= 1
            return .object(JSONObject())
        }
        // While every key is a known word, the keys are only noted in `known`, and the key array is made from
        // literals at the end, often with no allocation. The first other key hands over to `parseObjectMembers`.
        var known = KnownKeys()
        // Requests' objects have two to four members: one allocation, no regrowth.
        var values: [JSONValue] = []
        values.reserveCapacity(4)
        while true {
            let (key, word, plain) = try self.parseKey()
            guard let word, known.count < KnownKeys.capacity else {
                return try self.parseObjectMembers(
                    depth: depth, known: known, values: &values, nextKey: key, nextKeyText: plain)
            }
            known.append(word)
            values.append(try self.parseValue(depth: depth &+ 1))
            if let byte = self.peekSkippingWhitespace() {
                self.index &+= 1
                if byte == UInt8(ascii: ",") { continue }
                if byte == UInt8(ascii: "}") {
                    let (keys, areDistinct) = known.array()
                    return .object(
                        areDistinct
                            ? JSONObject(uniqueKeys: keys, values: values)
                            : JSONObject(uniquingKeys: keys, values: values))
                }
                self.index &-= 1
            }
            throw self.afterMemberError(inObject: true)
        }
    }

    /// The rest of an object from the member whose key, `nextKey`, was just read (with its colon): the members
    /// before it had the keys `known` and the values `values` (which this appends to). `nextKeyText` is where the
    /// key is in the input when it was plain ASCII.
    @inline(never)
    private mutating func parseObjectMembers(
        depth: Int, known: KnownKeys, values: inout [JSONValue], nextKey: String, nextKeyText: Range<Int>?
    ) throws(WireError) -> JSONValue {
        var (keys, mayRepeat) = known.array()
        mayRepeat.toggle()
        keys.reserveCapacity(max(keys.count + 1, 8))
        // Whether a key may repeat: plain ASCII keys are equal only when their fingerprints are, which `seen`
        // checks cheaply; anything else is left to JSONObject's exact check.
        var seen = FingerprintSet()
        for key in keys where !seen.insert(key) { mayRepeat = true }
        var (key, text) = (nextKey, nextKeyText)
        while true {
            if let text {
                // A quote follows the key, so the input is not empty.
                let start = self.bytes.baseAddress.unsafelyUnwrapped + text.lowerBound
                if !seen.insert(start, count: text.count, available: self.bytes.count &- text.lowerBound) {
                    mayRepeat = true
                }
            } else {
                mayRepeat = true
            }
            keys.append(key)
            values.append(try self.parseValue(depth: depth &+ 1))
            if let byte = self.peekSkippingWhitespace() {
                self.index &+= 1
                if byte == UInt8(ascii: ",") {
                    (key, _, text) = try self.parseKey()
                    continue
                }
                if byte == UInt8(ascii: "}") {
                    return .object(
                        mayRepeat
                            ? JSONObject(uniquingKeys: keys, values: values)
                            : JSONObject(uniqueKeys: keys, values: values))
                }
                self.index &-= 1
            }
            throw self.afterMemberError(inObject: true)
        }
    }

    /// An array at `index` (its `[`) inside `depth` open arrays/objects.
    private mutating func parseArray(depth: Int) throws(WireError) -> JSONValue {
        guard depth < self.maxDepth else { throw .tooDeep(limit: self.maxDepth) }
        if depth >= self.recursionLimit { return try self.parseDeepContainer(depth: depth) }
        self.index &+= 1
        if self.peekSkippingWhitespace() == UInt8(ascii: "]") {
            self.index &+= 1
            return .array([])
        }
        var elements: [JSONValue] = []
        elements.reserveCapacity(4)
        while true {
            elements.append(try self.parseValue(depth: depth &+ 1))
            if let byte = self.peekSkippingWhitespace() {
                self.index &+= 1
                if byte == UInt8(ascii: ",") { continue }
                if byte == UInt8(ascii: "]") { return .array(elements) }
                self.index &-= 1
            }
            throw self.afterMemberError(inObject: false)
        }
    }

    /// The error at `index`, where a `,` or the end of the object or array should have been.
    @inline(never)
    func afterMemberError(inObject: Bool) -> WireError {
        guard self.index < self.bytes.count else {
            return self.syntaxError("unexpected end of input inside an \(inObject ? "object" : "array")")
        }
        let found = Self.describe(self.bytes[self.index])
        return self.syntaxError(
            inObject
                ? "expected ',' or '}' after an object member, found \(found)"
                : "expected ',' or ']' after an array element, found \(found)")
    }

    /// An array or object whose closing bracket has not arrived yet. Its pending members sit at the end of the
    /// shared `values` (and, for objects, `keys`) stacks, starting at the recorded positions.
    private struct OpenContainer {
        var isObject: Bool
        var valuesStart: Int
        var keysStart: Int
    }

    /// The array or object at `index`, which sits inside `depth` open containers, parsed without recursion: nesting
    /// costs heap here, never stack. Same grammar, limits and errors as the recursive path.
    private mutating func parseDeepContainer(depth: Int) throws(WireError) -> JSONValue {
        var containers: [OpenContainer] = []
        var values: [JSONValue] = []
        var keys: [String] = []
        var value: JSONValue

        nextValue: while true {
            self.skipWhitespace()
            guard self.index < self.bytes.count else { throw self.missingValueError() }
            switch self.bytes[self.index] {
            case UInt8(ascii: "["):
                guard depth + containers.count < self.maxDepth else { throw .tooDeep(limit: self.maxDepth) }
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
                guard depth + containers.count < self.maxDepth else { throw .tooDeep(limit: self.maxDepth) }
                self.index += 1
                self.skipWhitespace()
                if self.index < self.bytes.count && self.bytes[self.index] == UInt8(ascii: "}") {
                    self.index += 1
                    value = .object(JSONObject())
                } else {
                    containers.append(OpenContainer(isObject: true, valuesStart: values.count, keysStart: keys.count))
                    keys.append(try self.parseKey().key)
                    continue nextValue
                }
            default:
                value = try self.parseScalar()
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
                        keys.append(try self.parseKey().key)
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
            // The container that was at `index` on entry has closed.
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

    /// An object key and its colon, whitespace before each skipped; `index` ends after the colon. Also says which
    /// known word the key is, if any, and where its text is when it was plain ASCII (see `parseStringNotingWords`).
    @inline(__always)
    mutating func parseKey() throws(WireError) -> (key: String, word: KnownWord?, plain: Range<Int>?) {
        guard self.peekSkippingWhitespace() == UInt8(ascii: "\"") else { throw self.keyError() }
        let (key, word, plain) = try self.parseStringNotingWords()
        try self.expectColon()
        return (key, word, plain)
    }

    /// The error at `index`, where an object key should have started.
    @inline(never)
    func keyError() -> WireError {
        guard self.index < self.bytes.count else {
            return self.syntaxError("unexpected end of input, expected an object key")
        }
        return self.syntaxError("expected a string key, found \(Self.describe(self.bytes[self.index]))")
    }

    /// The `:` after an object key, whitespace before it skipped.
    @inline(__always)
    mutating func expectColon() throws(WireError) {
        guard self.peekSkippingWhitespace() == UInt8(ascii: ":") else { throw self.colonError() }
        self.index &+= 1
    }

    /// The error at `index`, where the colon after an object key should have been.
    @inline(never)
    private func colonError() -> WireError {
        guard self.index < self.bytes.count else { return self.syntaxError("unexpected end of input, expected ':'") }
        return self.syntaxError("expected ':' after an object key, found \(Self.describe(self.bytes[self.index]))")
    }

    /// `true`, `false` or `null`, byte for byte.
    @inline(__always)
    private mutating func expectLiteral(_ literal: StaticString) throws(WireError) {
        let count = literal.utf8CodeUnitCount
        if self.index &+ count <= self.bytes.count, let base = self.bytes.baseAddress,
            Self.word(base + self.index, count: count, available: self.bytes.count &- self.index)
                == Self.pack(literal)
        {
            self.index &+= count
            return
        }
        try self.expectLiteralByBytes(literal)
    }

    /// `expectLiteral` byte for byte, to find where a mismatch is.
    @inline(never)
    private mutating func expectLiteralByBytes(_ literal: StaticString) throws(WireError) {
        let expected = literal.utf8Start
        for offset in 0..<literal.utf8CodeUnitCount {
            guard self.index < self.bytes.count, self.bytes[self.index] == expected[offset] else {
                throw self.syntaxError("invalid literal, expected `\(literal)`")
            }
            self.index &+= 1
        }
    }

    /// Skips JSON whitespace: space, tab, LF and CR (nothing else, not even other Unicode spaces).
    @inline(__always)
    mutating func skipWhitespace() {
        while self.index < self.bytes.count {
            switch self.bytes[self.index] {
            case 0x20, 0x09, 0x0A, 0x0D: self.index &+= 1
            default: return
            }
        }
    }

    /// Skips whitespace and returns the byte at `index` (not consumed), or nil at the end of the input.
    @inline(__always)
    mutating func peekSkippingWhitespace() -> UInt8? {
        // Lines from clients rarely hold any whitespace: one comparison settles the usual case.
        if self.index < self.bytes.count && self.bytes[self.index] > 0x20 { return self.bytes[self.index] }
        return self.peekAfterWhitespace()
    }

    /// `peekSkippingWhitespace` when there may be whitespace.
    @inline(never)
    private mutating func peekAfterWhitespace() -> UInt8? {
        self.skipWhitespace()
        return self.index < self.bytes.count ? self.bytes[self.index] : nil
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
