// Key-value validation (`validate<Key>:error:`): type checks with unambiguous coercions, then the declared rules.
// A rule may reject (1002 with a reason) or coerce (trim). Documented in docs/MODEL.md#validation.

/// A declarative validation rule of a stored property.
public enum ValidationRule: Sendable, Equatable {
    /// Strings: remove leading and trailing whitespace (coerces).
    case trim
    /// Numbers: at least this.
    case min(Double)
    /// Numbers: at most this.
    case max(Double)
    /// Strings (characters) and arrays (elements): at least this many.
    case minLength(Int)
    /// Strings (characters) and arrays (elements): at most this many.
    case maxLength(Int)
    /// Strings: the whole string must match this regular expression.
    case pattern(String)
    /// The value must equal one of these.
    case oneOf([Value])
}

/// Why a value was rejected.
public struct ValidationFailure: Error, Equatable, Sendable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
}

extension PropertyType {
    /// Checks `value` against the type, applying the unambiguous coercions: an int into a double; an integral double
    /// or a string of an integer into an int; a numeric string into a double; "true"/"false" into a bool.
    /// Records and references are checked by the graph (it knows the classes). Null is checked by the caller.
    func coerce(_ value: Value) throws(ValidationFailure) -> Value {
        switch (self, value) {
        case (.any, _), (_, .null): return value
        case (.bool, .bool), (.int, .int), (.double, .double), (.string, .string): return value
        case (.bool, .string("true")): return .bool(true)
        case (.bool, .string("false")): return .bool(false)
        case (.int, .double(let number)):
            guard number.rounded() == number, let exact = Int64(exactly: number) else {
                throw ValidationFailure("expected an int, got \(number)")
            }
            return .int(exact)
        case (.int, .string(let text)):
            guard let number = Int64(text.trimmingWhitespace) else {
                throw ValidationFailure("expected an int, got the string \"\(text)\"")
            }
            return .int(number)
        case (.double, .int(let number)): return .double(Double(number))
        case (.double, .string(let text)):
            guard let number = Double(text.trimmingWhitespace), number.isFinite else {
                throw ValidationFailure("expected a double, got the string \"\(text)\"")
            }
            return .double(number)
        case (.object, .object), (.object, .record): return value
        case (.array(let element), .array(let elements)):
            var coerced: [Value] = []
            coerced.reserveCapacity(elements.count)
            for item in elements {
                if item.isNull { coerced.append(item); continue }
                coerced.append(try element.coerce(item))
            }
            return .array(coerced)
        case (.set(let element), .array(let elements)):
            // A set keeps its members sorted and distinct (ValueList.sortedSet).
            var coerced: [Value] = []
            for item in elements where !item.isNull { coerced.append(try element.coerce(item)) }
            return .array(ValueList.sortedSet(coerced))
        default:
            throw ValidationFailure("expected \(self), got \(value.typeName)")
        }
    }
}

extension ValidationRule {
    /// Applies the rule: returns the (possibly coerced) value or throws the reason.
    func apply(to value: Value) throws(ValidationFailure) -> Value {
        switch (self, value) {
        case (_, .null): return value
        case (.trim, .string(let text)): return .string(text.trimmingWhitespace)
        case (.min(let bound), _):
            if let number = value.numericValue, number < bound {
                throw ValidationFailure("\(Self.format(number)) is less than the minimum \(Self.format(bound))")
            }
            return value
        case (.max(let bound), _):
            if let number = value.numericValue, number > bound {
                throw ValidationFailure("\(Self.format(number)) is greater than the maximum \(Self.format(bound))")
            }
            return value
        case (.minLength, _), (.maxLength, _):
            if let count = value.length { try self.check(length: count) }
            return value
        case (.pattern(let pattern), .string(let text)):
            guard let regex = try? Regex(pattern), (try? regex.wholeMatch(in: text)) != nil else {
                throw ValidationFailure("\"\(text)\" does not match the pattern \(pattern)")
            }
            return value
        case (.oneOf(let allowed), _):
            guard allowed.contains(value) else {
                throw ValidationFailure("must be one of \(allowed.map(\.shortDescription).joined(separator: ", "))")
            }
            return value
        default:
            return value
        }
    }

    /// Checks a length against `minLength` and `maxLength` (other rules pass).
    func check(length count: Int) throws(ValidationFailure) {
        switch self {
        case .minLength(let length) where count < length:
            throw ValidationFailure("length \(count) is less than the minimum length \(length)")
        case .maxLength(let length) where count > length:
            throw ValidationFailure("length \(count) exceeds the maximum length \(length)")
        default:
            return
        }
    }

    private static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int64(number)) : String(number)
    }
}

extension Value {
    var numericValue: Double? {
        switch self {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    var length: Int? {
        switch self {
        case .string(let text): text.count
        case .array(let elements): elements.count
        default: nil
        }
    }

    /// A short human form for messages: strings quoted, numbers as written.
    var shortDescription: String {
        switch self {
        case .null: "null"
        case .bool(let flag): String(flag)
        case .int(let number): String(number)
        case .double(let number): String(number)
        case .string(let text): "\"\(text)\""
        case .array(let elements): "[\(elements.map(\.shortDescription).joined(separator: ","))]"
        case .object(let id): "$\(id)"
        case .record: "{...}"
        }
    }
}

extension String {
    /// The string without leading and trailing white space (spaces, tabs, newlines, other Unicode white space).
    var trimmingWhitespace: String {
        let scalars = self.unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...end])
    }
}
