// Conveniences on the value tree: literal conformances (so code and tests can write `["path": "a.b", "value": 42]`),
// typed accessors that return nil on a kind mismatch, and a compact JSON `description`. No parsing lives here.
// There is deliberately no `nil` literal: with `JSONValue?` everywhere, `nil` must keep meaning "absent", not `null`.

extension JSONValue: ExpressibleByBooleanLiteral {
    /// A `true`/`false` literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer literal becomes `.int`.
    public init(integerLiteral value: Int64) { self = .int(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A floating-point literal becomes `.double`; it must be finite.
    public init(floatLiteral value: Double) {
        precondition(value.isFinite, "JSON numbers are finite")
        self = .double(value)
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string literal becomes `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array literal becomes `.array`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// A dictionary literal becomes `.object`, keeping the literal's order; a later duplicate key wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(uniquingKeys: elements.map(\.0), values: elements.map(\.1)))
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// A dictionary literal keeps the literal's order; a later duplicate key wins.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(uniquingKeys: elements.map(\.0), values: elements.map(\.1))
    }
}

extension JSONValue {
    /// True for `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The Boolean, or nil when this is not `true`/`false`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer, or nil when this is not an `.int` (a `.double` is never converted, even `2.0`).
    public var intValue: Int64? {
        if case .int(let value) = self { return value }
        return nil
    }

    /// The number as a Double (an `.int` is converted, possibly rounding), or nil when this is not a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// The string, or nil when this is not a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The elements, or nil when this is not an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The object, or nil when this is not an object.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// The member `key` when this is an object that has it; nil otherwise.
    public subscript(key: String) -> JSONValue? {
        self.objectValue?[key]
    }
}

extension JSONValue: CustomStringConvertible {
    /// The value as compact JSON text (what `JSONWriter` writes).
    public var description: String { JSONWriter.encodeString(self) }
}

extension JSONObject: CustomStringConvertible {
    /// The object as compact JSON text (what `JSONWriter` writes).
    public var description: String { JSONWriter.encodeString(.object(self)) }
}
