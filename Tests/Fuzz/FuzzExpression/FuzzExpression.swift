// Fuzz target: the expression language of computed keys (Sources/ObjectGraph/Expression/README.md), as a model file
// writes it. Whatever parses must print (`description`) to canonical text that parses back to the same expression
// and prints the same again; its key paths must be valid key paths; evaluating it against lookups that return
// assorted values (extreme numbers, -0.0, Unicode and format-like strings, arrays, objects) must never trap, must be
// deterministic and must never produce a non-finite number. Docs: docs/RELIABILITY.md.
import FuzzSupport
import ObjectGraph

@main
enum FuzzExpression {
    /// What key paths read: the lookup picks one by a hash of the path, differently for each round.
    static let assorted: [Value] = [
        .null, .bool(true), .bool(false), .int(0), .int(1), .int(-1), .int(3), .int(.max), .int(.min),
        .double(0.5), .double(-0.0), .double(1e308), .double(-1e308), .double(.leastNonzeroMagnitude),
        .double(.greatestFiniteMagnitude), .double(2.5), .double(-7.25), .string(""), .string("abc"),
        .string("%d %s %5.2f %x %%"), .string("é日本🎉"), .string("42"), .string(" -1.5e3 "), .string("%"),
        .array([]), .array([1, 2.5, .null]), .array(["a", "b", "a"]), .array([[1], [2, 3]]),
        .record(Record(["x": 1])), .object(3),
    ]

    static func main() {
        FuzzDriver.run { input in
            let text = String(decoding: input, as: UTF8.self)
            guard let expression = try? Expression.parse(text) else { return }
            Self.checkCanonicalText(expression)
            for path in expression.keyPaths {
                check((try? KeyPath(parsing: path)) != nil, "key path '\(path)' does not parse as a KeyPath")
            }
            for round in 0..<4 {
                let lookup = { (path: String) -> Value in
                    var hash: UInt64 = 1_469_598_103_934_665_603 &+ UInt64(round)
                    for byte in path.utf8 { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
                    return Self.assorted[Int(hash % UInt64(Self.assorted.count))]
                }
                let result = expression.evaluate(lookup)
                Self.checkFinite(result)
                check(expression.evaluate(lookup) == result, "evaluation is not deterministic: \(result)")
            }
        }
    }

    static func checkCanonicalText(_ expression: Expression) {
        let canonical = expression.description
        let reparsed: Expression
        do {
            reparsed = try Expression.parse(canonical)
        } catch {
            fatalError("canonical text '\(canonical)' does not parse: \(error)")
        }
        check(reparsed == expression, "'\(canonical)' parses to another expression")
        check(reparsed.description == canonical, "canonical text is not stable: '\(canonical)'")
    }

    static func checkFinite(_ value: Value) {
        switch value {
        case .double(let number): check(number.isFinite, "evaluation produced \(number)")
        case .array(let elements): elements.forEach(Self.checkFinite)
        case .record(let record): record.values.forEach(Self.checkFinite)
        case .null, .bool, .int, .string, .object: break
        }
    }
}
