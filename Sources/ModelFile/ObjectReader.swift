// Typed access to the members of one JSON object of a model file, each failure a ModelError that names the member's
// field path: wrong JSON types, missing members, unknown members (with a "did you mean" for typos). Also the
// conversion of JSON values into graph values. No knowledge of what the members mean.

import ObjectGraph
import WireProtocol

/// One JSON object of the model file, with its dotted field path.
struct ObjectReader {
    let object: JSONObject
    /// The object's own field path; empty for the document.
    let field: String

    /// Reads `value` as an object at `field`.
    init(_ value: JSONValue, field: String) throws(ModelError) {
        guard case .object(let object) = value else {
            throw ModelError(field: field, "expected an object, got \(Self.describe(value))")
        }
        self.object = object
        self.field = field
    }

    /// The field path of member `key`.
    func path(_ key: String) -> String {
        self.field.isEmpty ? key : "\(self.field).\(key)"
    }

    /// Refuses members that are not in `allowed`. `misplaced` gives a reason for members that are known but do not
    /// belong here (e.g. `default` on a computed property).
    func checkMembers(allowed: [String], misplaced: [String: String] = [:]) throws(ModelError) {
        for key in self.object.keys where !allowed.contains(key) {
            if let reason = misplaced[key] { throw ModelError(field: self.path(key), reason) }
            var message = "unknown member '\(key)'"
            if let suggestion = Self.closest(to: key, in: allowed + misplaced.keys.sorted()) {
                message += " (did you mean '\(suggestion)'?)"
            }
            throw ModelError(field: self.path(key), message)
        }
    }

    /// True when the member is present (even as null).
    func has(_ key: String) -> Bool {
        self.object[key] != nil
    }

    /// The raw member, or nil when absent.
    func value(_ key: String) -> JSONValue? {
        self.object[key]
    }

    /// A string member, or nil when absent.
    func string(_ key: String) throws(ModelError) -> String? {
        guard let value = self.object[key] else { return nil }
        guard case .string(let text) = value else { throw self.mismatch(key, expected: "a string", got: value) }
        return text
    }

    /// A boolean member, or nil when absent.
    func bool(_ key: String) throws(ModelError) -> Bool? {
        guard let value = self.object[key] else { return nil }
        guard case .bool(let flag) = value else { throw self.mismatch(key, expected: "true or false", got: value) }
        return flag
    }

    /// A number member (int or double), or nil when absent.
    func number(_ key: String) throws(ModelError) -> Double? {
        switch self.object[key] {
        case nil: return nil
        case .int(let number)?: return Double(number)
        case .double(let number)?: return number
        case let other?: throw self.mismatch(key, expected: "a number", got: other)
        }
    }

    /// A non-negative integer member, or nil when absent.
    func count(_ key: String) throws(ModelError) -> Int? {
        guard let value = self.object[key] else { return nil }
        guard case .int(let number) = value, number >= 0, let count = Int(exactly: number) else {
            throw self.mismatch(key, expected: "a non-negative integer", got: value)
        }
        return count
    }

    /// An object member, or nil when absent.
    func object(_ key: String) throws(ModelError) -> ObjectReader? {
        guard let value = self.object[key] else { return nil }
        return try ObjectReader(value, field: self.path(key))
    }

    /// An array member, or nil when absent.
    func array(_ key: String) throws(ModelError) -> [JSONValue]? {
        guard let value = self.object[key] else { return nil }
        guard case .array(let elements) = value else { throw self.mismatch(key, expected: "an array", got: value) }
        return elements
    }

    /// An array-of-strings member, or nil when absent.
    func strings(_ key: String) throws(ModelError) -> [String]? {
        guard let elements = try self.array(key) else { return nil }
        var texts: [String] = []
        for element in elements {
            guard case .string(let text) = element else {
                throw self.mismatch(key, expected: "an array of strings", got: element, inArray: true)
            }
            texts.append(text)
        }
        return texts
    }

    private func mismatch(_ key: String, expected: String, got value: JSONValue, inArray: Bool = false) -> ModelError {
        ModelError(
            field: self.path(key),
            "expected \(expected), got \(inArray ? "an element that is " : "")\(Self.describe(value))")
    }

    // MARK: - Helpers

    /// A JSON value's kind with its article, for messages ("a string", "null").
    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    /// The graph value of a JSON value: objects become records (input for new objects).
    static func graphValue(_ json: JSONValue) -> Value {
        switch json {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let number): .int(number)
        case .double(let number): .double(number)
        case .string(let text): .string(text)
        case .array(let elements): .array(elements.map(Self.graphValue))
        case .object(let object): .record(Record(keys: object.keys, values: object.values.map(Self.graphValue)))
        }
    }

    /// The allowed name nearest to `key` within two edits, for "did you mean".
    static func closest(to key: String, in candidates: some Sequence<String>) -> String? {
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = Self.editDistance(Array(key.lowercased()), Array(candidate.lowercased()))
            if distance <= 2, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        return best?.name
    }

    /// Levenshtein distance, with a swap of two neighbours counting as one edit (optimal string alignment): each
    /// row holds the distances from a prefix of `lhs` to every prefix of `rhs`.
    private static func editDistance(_ lhs: [Character], _ rhs: [Character]) -> Int {
        if lhs.isEmpty || rhs.isEmpty { return max(lhs.count, rhs.count) }
        var rowBeforePrevious: [Int] = []
        var previous = Array(0...rhs.count)
        for row in 1...lhs.count {
            var current = [row] + Array(repeating: 0, count: rhs.count)
            for column in 1...rhs.count {
                let substitution = previous[column - 1] + (lhs[row - 1] == rhs[column - 1] ? 0 : 1)
                current[column] = min(previous[column] + 1, current[column - 1] + 1, substitution)
                if row > 1, column > 1, lhs[row - 1] == rhs[column - 2], lhs[row - 2] == rhs[column - 1] {
                    current[column] = min(current[column], rowBeforePrevious[column - 2] + 1)
                }
            }
            rowBeforePrevious = previous
            previous = current
        }
        return previous[rhs.count]
    }
}
