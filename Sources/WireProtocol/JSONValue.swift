// The JSON value tree the codec produces and consumes. Objects keep their keys in document order (a later duplicate
// key replaces the earlier value in place). Numbers are exact 64-bit integers or finite doubles; nothing else exists.

/// A JSON value as it crossed the wire.
public enum JSONValue: Equatable, Sendable {
    /// The literal `null`.
    case null
    /// The literals `true` and `false`.
    case bool(Bool)
    /// An integer literal (no fraction, no exponent) that fits in 64 bits.
    case int(Int64)
    /// Any other number; always finite.
    case double(Double)
    /// A string (any Unicode text, including NUL).
    case string(String)
    /// An array, in document order.
    case array([JSONValue])
    /// An object, in document order.
    case object(JSONObject)
}

/// A JSON object with its keys in document order.
///
/// Equality ignores member order: two objects are equal when they have the same set of keys and equal values for
/// each key (JSON gives member order no meaning). Lookup is a linear scan, which is fastest for the small objects the
/// protocol uses; the parser builds large objects in O(n) expected time. Keys compare as Swift strings do, by
/// canonical equivalence (precomposed "é" and "e" + U+0301 are the same key).
public struct JSONObject: Equatable, Sendable {
    /// The keys, in document order, without duplicates.
    public private(set) var keys: [String]
    /// The values, parallel to `keys`.
    public private(set) var values: [JSONValue]

    /// An empty object.
    public init() {
        self.keys = []
        self.values = []
    }

    /// An object with `pairs` in order; a later duplicate key replaces the earlier value in place.
    public init(_ pairs: KeyValuePairs<String, JSONValue>) {
        self.init()
        for (key, value) in pairs { self[key] = value }
    }

    /// The number of members.
    public var count: Int { self.keys.count }

    /// The value for `key`, or nil when absent. Setting nil removes the member; setting an existing key replaces its
    /// value in place (document order is kept).
    public subscript(key: String) -> JSONValue? {
        get {
            // Objects on the wire are small (params have 2-4 keys): a linear scan beats hashing.
            guard let index = self.keys.firstIndex(of: key) else { return nil }
            return self.values[index]
        }
        set {
            if let index = self.keys.firstIndex(of: key) {
                if let newValue {
                    self.values[index] = newValue
                } else {
                    self.keys.remove(at: index)
                    self.values.remove(at: index)
                }
            } else if let newValue {
                self.keys.append(key)
                self.values.append(newValue)
            }
        }
    }

    /// The members in document order.
    public var members: Zip2Sequence<[String], [JSONValue]> { zip(self.keys, self.values) }

    /// Builds an object from parallel arrays, letting a later duplicate key replace the earlier value in place.
    /// Expected O(n): small objects scan linearly, larger ones use a hash table, so a hostile document with
    /// thousands of keys cannot make parsing quadratic.
    init(uniquingKeys keys: [String], values: [JSONValue]) {
        assert(keys.count == values.count)
        if keys.count <= Self.linearScanLimit && !Self.hasDuplicates(keys) {
            // The common case: take the arrays as they are.
            self.keys = keys
            self.values = values
            return
        }
        var positions: [String: Int] = [:]
        var uniqueKeys: [String] = []
        var uniqueValues: [JSONValue] = []
        positions.reserveCapacity(keys.count)
        uniqueKeys.reserveCapacity(keys.count)
        uniqueValues.reserveCapacity(keys.count)
        for index in keys.indices {
            if let position = positions[keys[index]] {
                uniqueValues[position] = values[index]
            } else {
                positions[keys[index]] = uniqueKeys.count
                uniqueKeys.append(keys[index])
                uniqueValues.append(values[index])
            }
        }
        self.keys = uniqueKeys
        self.values = uniqueValues
    }

    /// An object from parallel arrays whose keys are known to be distinct.
    init(uniqueKeys keys: [String], values: [JSONValue]) {
        assert(keys.count == values.count && !Self.hasDuplicates(keys))
        self.keys = keys
        self.values = values
    }

    /// Whether any key repeats; quadratic, so only for small arrays.
    private static func hasDuplicates(_ keys: [String]) -> Bool {
        for later in keys.indices.dropFirst() {
            for earlier in 0..<later where keys[earlier] == keys[later] { return true }
        }
        return false
    }

    /// Up to this many members, a linear scan beats building a hash table.
    private static var linearScanLimit: Int { 16 }

    /// True when both objects have the same keys (in any order) with equal values per key.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.keys.count == rhs.keys.count else { return false }
        if lhs.keys == rhs.keys { return lhs.values == rhs.values }
        // Keys are unique on both sides, so equal counts plus "every lhs key is in rhs" means equal key sets.
        if lhs.keys.count <= Self.linearScanLimit {
            for (key, value) in lhs.members {
                guard let other = rhs[key], other == value else { return false }
            }
            return true
        }
        var positions: [String: Int] = [:]
        positions.reserveCapacity(rhs.keys.count)
        for (index, key) in rhs.keys.enumerated() { positions[key] = index }
        for (key, value) in lhs.members {
            guard let index = positions[key], rhs.values[index] == value else { return false }
        }
        return true
    }
}
