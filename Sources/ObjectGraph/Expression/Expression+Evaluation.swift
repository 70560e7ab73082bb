// Evaluating an expression: truthiness, the string form, arithmetic and comparison. Built-in functions are in
// ExpressionRuntime+Functions.swift. Nothing here traps or throws; every type or domain error yields `.null`.

extension Expression {
    /// Evaluates the expression, with `lookup` giving the current value of a key path (relative to the object).
    ///
    /// Never traps and never throws: a runtime type error or domain error yields `.null` (the rules are on
    /// `Expression` and `Expression.Function`). `lookup` is called once per key path occurrence that evaluation
    /// reaches; the branch of a conditional that is not taken and the right side of a short-circuited `&&`/`||` are
    /// not evaluated.
    public func evaluate(_ lookup: (String) -> Value) -> Value {
        switch self {
        case .literal(let value):
            return value
        case .keyPath(let path):
            return lookup(path)
        case .unary(.negate, let operand):
            return ExpressionRuntime.negate(operand.evaluate(lookup))
        case .unary(.not, let operand):
            return .bool(!ExpressionRuntime.isTruthy(operand.evaluate(lookup)))
        case .binary(.and, let left, let right):
            return .bool(
                ExpressionRuntime.isTruthy(left.evaluate(lookup)) && ExpressionRuntime.isTruthy(right.evaluate(lookup)))
        case .binary(.or, let left, let right):
            return .bool(
                ExpressionRuntime.isTruthy(left.evaluate(lookup)) || ExpressionRuntime.isTruthy(right.evaluate(lookup)))
        case .binary(let op, let left, let right):
            return ExpressionRuntime.apply(op, left.evaluate(lookup), right.evaluate(lookup))
        case .conditional(let condition, let then, let otherwise):
            return ExpressionRuntime.isTruthy(condition.evaluate(lookup))
                ? then.evaluate(lookup) : otherwise.evaluate(lookup)
        case .call(let function, let arguments):
            return ExpressionRuntime.apply(function, arguments.map { $0.evaluate(lookup) })
        }
    }
}

/// The value semantics of the expression language, shared by operators, functions and `format`.
enum ExpressionRuntime {
    // MARK: - Conversions

    /// `true`, a non-zero number, a non-empty string or array, and an object are truthy.
    static func isTruthy(_ value: Value) -> Bool {
        switch value {
        case .null: false
        case .bool(let bool): bool
        case .int(let int): int != 0
        case .double(let double): double != 0
        case .string(let string): !string.isEmpty
        case .array(let elements): !elements.isEmpty
        case .object, .record: true
        }
    }

    /// The text `+` concatenates and `string(x)` returns: null is "", ints are decimal, doubles use Swift's shortest
    /// round-trip form (`42.0`, `0.5`, `1e-05`), bools are `true`/`false`. Arrays and objects have none (nil).
    static func stringForm(_ value: Value) -> String? {
        switch value {
        case .null: ""
        case .bool(let bool): bool ? "true" : "false"
        case .int(let int): String(int)
        case .double(let double): double.description
        case .string(let string): string
        case .array, .object, .record: nil
        }
    }

    /// An int or a double as a double; nil for anything else.
    static func number(_ value: Value) -> Double? {
        switch value {
        case .int(let int): Double(int)
        case .double(let double): double
        default: nil
        }
    }

    /// An int, or a double with an integral value in the Int64 range; nil for anything else.
    static func integer(_ value: Value) -> Int64? {
        switch value {
        case .int(let int): int
        case .double(let double): Int64(exactly: double)
        default: nil
        }
    }

    /// A double result, or null when it is not finite.
    static func finite(_ double: Double) -> Value {
        double.isFinite ? .double(double) : .null
    }

    // MARK: - Arithmetic

    private static func isString(_ value: Value) -> Bool {
        if case .string = value { return true }
        return false
    }

    static func negate(_ value: Value) -> Value {
        switch value {
        case .int(let int): int == .min ? .double(-Double(int)) : .int(-int)
        case .double(let double): .double(-double)
        default: .null
        }
    }

    /// A binary operator other than `&&` and `||` applied to two values.
    static func apply(_ op: Expression.BinaryOperator, _ left: Value, _ right: Value) -> Value {
        switch op {
        case .and: return .bool(self.isTruthy(left) && self.isTruthy(right))
        case .or: return .bool(self.isTruthy(left) || self.isTruthy(right))
        case .equal: return .bool(self.isEqual(left, right))
        case .notEqual: return .bool(!self.isEqual(left, right))
        case .less, .lessOrEqual, .greater, .greaterOrEqual: return self.compare(op, left, right)
        case .add, .subtract, .multiply, .divide, .remainder: return self.arithmetic(op, left, right)
        }
    }

    private static func arithmetic(_ op: Expression.BinaryOperator, _ left: Value, _ right: Value) -> Value {
        if op == .add, self.isString(left) || self.isString(right) {
            guard let leftText = self.stringForm(left), let rightText = self.stringForm(right) else { return .null }
            return .string(leftText + rightText)
        }
        if case .int(let x) = left, case .int(let y) = right {
            return self.integerArithmetic(op, x, y)
        }
        guard let x = self.number(left), let y = self.number(right) else { return .null }
        switch op {
        case .add: return self.finite(x + y)
        case .subtract: return self.finite(x - y)
        case .multiply: return self.finite(x * y)
        case .divide: return y == 0 ? .null : self.finite(x / y)
        default: return y == 0 ? .null : self.finite(x.truncatingRemainder(dividingBy: y))
        }
    }

    /// Int with int: exact when the result fits, a double when it overflows; `/` is always a double.
    private static func integerArithmetic(_ op: Expression.BinaryOperator, _ x: Int64, _ y: Int64) -> Value {
        let (x2, y2) = (Double(x), Double(y))
        switch op {
        case .add:
            let (sum, overflow) = x.addingReportingOverflow(y)
            return overflow ? self.finite(x2 + y2) : .int(sum)
        case .subtract:
            let (difference, overflow) = x.subtractingReportingOverflow(y)
            return overflow ? self.finite(x2 - y2) : .int(difference)
        case .multiply:
            let (product, overflow) = x.multipliedReportingOverflow(by: y)
            return overflow ? self.finite(x2 * y2) : .int(product)
        case .divide:
            return y == 0 ? .null : self.finite(x2 / y2)
        default:
            // Only Int64.min % -1 overflows, and its true remainder, 0, fits.
            guard y != 0 else { return .null }
            let (remainder, overflow) = x.remainderReportingOverflow(dividingBy: y)
            return overflow ? .int(0) : .int(remainder)
        }
    }

    // MARK: - Comparison

    /// `==`: numbers numerically, strings by Unicode scalars, bools, null, arrays and objects structurally; values of
    /// different types are never equal.
    static func isEqual(_ left: Value, _ right: Value) -> Bool {
        if let order = self.numericOrder(left, right) { return order == 0 }
        switch (left, right) {
        case (.string(let x), .string(let y)): return x.unicodeScalars.elementsEqual(y.unicodeScalars)
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.array, .array), (.object, .object), (.record, .record): return left == right
        default: return false
        }
    }

    private static func compare(_ op: Expression.BinaryOperator, _ left: Value, _ right: Value) -> Value {
        let order: Int
        if let numeric = self.numericOrder(left, right) {
            order = numeric
        } else if case .string(let x) = left, case .string(let y) = right {
            let (a, b) = (x.unicodeScalars, y.unicodeScalars)
            order = a.lexicographicallyPrecedes(b) ? -1 : (b.lexicographicallyPrecedes(a) ? 1 : 0)
        } else {
            return .null
        }
        switch op {
        case .less: return .bool(order < 0)
        case .lessOrEqual: return .bool(order <= 0)
        case .greater: return .bool(order > 0)
        default: return .bool(order >= 0)
        }
    }

    /// -1, 0 or 1 for two numbers (ints against doubles compared exactly), nil unless both are numbers.
    static func numericOrder(_ left: Value, _ right: Value) -> Int? {
        switch (left, right) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.double(let x), .double(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.int(let x), .double(let y)): return self.order(x, y)
        case (.double(let x), .int(let y)): return -self.order(y, x)
        default: return nil
        }
    }

    /// Compares an int with a finite double without rounding the int.
    private static func order(_ integer: Int64, _ double: Double) -> Int {
        if double >= 0x1p63 { return -1 }
        if double < -0x1p63 { return 1 }
        let whole = double.rounded(.down)
        let wholeInteger = Int64(whole)  // in range: -2^63 <= whole < 2^63
        if integer != wholeInteger { return integer < wholeInteger ? -1 : 1 }
        return double > whole ? -1 : 0
    }
}
