// The root suite of the expression language's tests and its helpers; the nested suites live in the other
// Expression*Tests.swift files (parsing, evaluation, functions, format, the seeds' examples).

import ObjectGraph
import Testing

/// Tests of `Expression`: `swift test --filter ExpressionTests` runs all of them.
@Suite struct ExpressionTests {
    /// The values every evaluation table can read: one key per interesting type.
    static let values: [String: Value] = [
        "i": .int(7),
        "d": .double(2.5),
        "s": .string("abc"),
        "n": .null,
        "t": .bool(true),
        "f": .bool(false),
        "big": .int(.max),
        "small": .int(.min),
        "arr": .array([.int(1), .int(2)]),
        "obj": .object(3),
    ]

    /// Parses `text` and evaluates it against `values` (unknown keys read as null).
    static func evaluate(_ text: String, _ values: [String: Value] = Self.values) throws -> Value {
        try Expression.parse(text).evaluate { values[$0] ?? .null }
    }

    /// The error `text` fails to parse with, or nil when it parses.
    static func parseError(_ text: String) -> ExpressionError? {
        do {
            _ = try Expression.parse(text)
            return nil
        } catch {
            return error
        }
    }
}
