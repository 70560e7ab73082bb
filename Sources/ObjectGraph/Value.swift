// The values an object graph stores and hands out. Scalars, arrays and object references live in the graph; a
// `Record` is an object's content detached from the graph: as input it means "create a new object with these keys",
// as output it is a snapshot (how `get` and `old` values show an object).

/// The identity of an object in a graph. The root object is `ObjectID.root`; ids are never reused.
public typealias ObjectID = Int

extension ObjectID {
    /// The root object of every graph.
    public static let root: ObjectID = 0
}

/// A value in the object graph.
public enum Value: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A 64-bit integer, kept exact.
    case int(Int64)
    /// A finite double.
    case double(Double)
    case string(String)
    /// An ordered collection (a set's members too, sorted: ValueList.swift), replaced whole by `set` and changed at
    /// indexes by the collection mutations.
    case array(ValueList)
    /// A reference to a live object in the graph.
    case object(ObjectID)
    /// Object content outside the graph: a new object to create (input) or a snapshot of one (output).
    indirect case record(Record)

    /// An array of `elements`.
    public static func array(_ elements: [Value]) -> Value { .array(ValueList(elements)) }

    /// At least how many bytes the value takes as JSON, found in O(1): a string's UTF-8 and quotes, an array's
    /// brackets and a byte and a comma per element, 1 for anything else. (A server checks its output limits with it
    /// before encoding a value: one that cannot fit is never encoded.)
    public var jsonByteCountLowerBound: Int {
        switch self {
        case .string(let text): text.utf8.count &+ 2
        case .array(let list): list.count > 0 ? 2 &* list.count &+ 1 : 2
        default: 1
        }
    }

    /// True for `.null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// True for `.record`.
    public var isRecord: Bool {
        if case .record = self { return true }
        return false
    }

    /// A short name of the value's type, for error messages ("int", "object", ...).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .array: "array"
        case .object, .record: "object"
        }
    }
}

/// An object's keys and values outside the graph, in key order.
public struct Record: Sendable, Hashable {
    /// The object this record was taken from (snapshots only); nil for input records.
    public var id: ObjectID?
    /// The class a validated input record becomes (set by validation; not part of equality).
    public internal(set) var className: String?
    /// The keys in insertion order.
    public var keys: [String]
    /// The values, parallel to `keys`.
    public var values: [Value]

    public init(id: ObjectID? = nil, keys: [String] = [], values: [Value] = []) {
        precondition(keys.count == values.count, "Record keys and values must pair up")
        self.id = id
        self.keys = keys
        self.values = values
    }

    public init(_ pairs: KeyValuePairs<String, Value>) {
        self.init(keys: pairs.map(\.key), values: pairs.map(\.value))
    }

    public static func == (lhs: Record, rhs: Record) -> Bool {
        lhs.id == rhs.id && lhs.keys == rhs.keys && lhs.values == rhs.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.id)
        hasher.combine(self.keys)
        hasher.combine(self.values)
    }

    /// The value for `key`, or nil when the record has no such key.
    public subscript(key: String) -> Value? {
        guard let index = self.keys.firstIndex(of: key) else { return nil }
        return self.values[index]
    }
}

// Deliberately not ExpressibleByNilLiteral: `condition ? value : nil` must stay an Optional, never `.null`.
extension Value: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral
{
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: Value...) { self = .array(ValueList(elements)) }
}

extension Value {
    /// The string, or nil for other values.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The number as a double (ints converted), or nil for other values.
    public var doubleValue: Double? { self.numericValue }

    /// The integer, or nil for other values (doubles are not converted).
    public var intValue: Int64? {
        if case .int(let number) = self { return number }
        return nil
    }

    /// The bool, or nil for other values.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }
}

extension Value {
    /// Null, a boolean, an integer, a string or a finite number: what an undeclared key stores as it is.
    @inline(__always)
    var isPlainScalar: Bool {
        switch self {
        case .null, .bool, .int, .string: true
        case .double(let number): number.isFinite
        case .array, .object, .record: false
        }
    }
}
