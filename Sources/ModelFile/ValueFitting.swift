// Fitting the values a model file writes (`default`, `nullValue`, `enum`) to a property's declared type, strictly:
// the only conversions are between ints and doubles, so a double property's `0` is stored as 0.0 and compares equal
// to what validation produces. Set-time coercion (numeric strings and such) is the engine's, not this file's.

import ObjectGraph

/// Checks and normalises model-file values against declared types.
enum ValueFitting {
    /// `value` converted to `type`: an int for a double becomes a double, an integral double for an int becomes an
    /// int, arrays are fitted element by element (null elements stay), and a class-typed value must be `{}` (a new
    /// object with its class's defaults). Records in untyped places become open objects and need valid keys.
    static func fit(_ value: Value, to type: PropertyType) throws(ValidationFailure) -> Value {
        switch (type, value) {
        case (_, .null):
            return value
        case (.any, _), (.object(ObjectClass.open.name), .record):
            try Self.checkKeys(value)
            return value
        case (.bool, .bool), (.int, .int), (.double, .double), (.string, .string):
            return value
        case (.double, .int(let number)):
            return .double(Double(number))
        case (.int, .double(let number)):
            guard let exact = Int64(exactly: number) else { throw ValidationFailure("is not an int: \(number)") }
            return .int(exact)
        case (.object(let name), .record(let record)):
            guard record.keys.isEmpty else {
                throw ValidationFailure("must be {}: a new \(name) takes its keys' defaults from class \(name)")
            }
            return value
        case (.set(let element), .array(let elements)):
            var fitted: [Value] = []
            for item in elements where !item.isNull { fitted.append(try Self.fit(item, to: element)) }
            return .array(ValueList.sortedSet(fitted))
        case (.array(let element), .array(let elements)):
            if Self.namesClass(element) && elements.contains(where: { !$0.isNull }) {
                throw ValidationFailure("must be []: an array of \(element) starts empty")
            }
            var fitted: [Value] = []
            for item in elements { fitted.append(try Self.fit(item, to: element)) }
            return .array(fitted)
        default:
            throw ValidationFailure("does not fit the type \(type): got \(Self.describe(value))")
        }
    }

    /// True when the type is, or is an array of, a declared class (not the open `Object`).
    private static func namesClass(_ type: PropertyType) -> Bool {
        switch type {
        case .object(let name): name != ObjectClass.open.name
        case .array(let element), .set(let element): Self.namesClass(element)
        default: false
        }
    }

    /// Keys of records become keys of objects: not empty, no '.', no leading '$' or '@'.
    private static func checkKeys(_ value: Value) throws(ValidationFailure) {
        switch value {
        case .array(let elements):
            for element in elements { try Self.checkKeys(element) }
        case .record(let record):
            for (key, element) in zip(record.keys, record.values) {
                if key.isEmpty || key.contains(".") || key.hasPrefix("$") || key.hasPrefix("@") {
                    throw ValidationFailure(
                        "has the key '\(key)', which cannot be a key (empty, '.', leading '$' or '@')")
                }
                try Self.checkKeys(element)
            }
        default:
            return
        }
    }

    private static func describe(_ value: Value) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object, .record: "an object"
        }
    }
}
