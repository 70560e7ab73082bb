// What each built-in function computes (names and arities are in Expression+Function.swift). Math comes from the C
// library (libm only, no Foundation); nothing here traps, and every bad argument yields null.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ExpressionRuntime {
    /// `function` applied to evaluated arguments; the count was checked when parsing (a wrong count gives null).
    static func apply(_ function: Expression.Function, _ arguments: [Value]) -> Value {
        guard arguments.count >= function.minimumArity, arguments.count <= (function.maximumArity ?? .max) else {
            return .null
        }
        switch function {
        case .pow: return self.math(arguments[0], arguments[1]) { pow($0, $1) }
        case .cbrt: return self.math(arguments[0]) { self.cubeRoot($0) }
        case .sqrt: return self.math(arguments[0]) { $0 < 0 ? .nan : $0.squareRoot() }
        case .exp: return self.math(arguments[0]) { exp($0) }
        case .log: return self.math(arguments[0]) { $0 <= 0 ? .nan : log($0) }
        case .sin: return self.math(arguments[0]) { sin($0) }
        case .cos: return self.math(arguments[0]) { cos($0) }
        case .tan: return self.math(arguments[0]) { tan($0) }
        case .atan2: return self.math(arguments[0], arguments[1]) { atan2($0, $1) }
        case .abs: return self.absolute(arguments[0])
        case .min: return self.extreme(arguments, wantsLargest: false)
        case .max: return self.extreme(arguments, wantsLargest: true)
        case .round: return self.round(arguments)
        case .floor: return self.integral(arguments[0], rule: .down)
        case .ceil: return self.integral(arguments[0], rule: .up)
        case .clamp: return self.clamp(arguments[0], arguments[1], arguments[2])
        case .int: return self.toInt(arguments[0])
        case .double: return self.toDouble(arguments[0])
        case .string: return self.stringForm(arguments[0]).map(Value.string) ?? .null
        case .len: return self.length(arguments[0])
        case .upper: return self.mapString(arguments[0]) { $0.uppercased() }
        case .lower: return self.mapString(arguments[0]) { $0.lowercased() }
        case .trim: return self.mapString(arguments[0]) { self.trimmed($0) }
        case .hex: return self.hex(arguments[0], width: arguments[1])
        case .format: return self.format(arguments)
        }
    }

    // MARK: - Numbers

    private static func math(_ x: Value, _ body: (Double) -> Double) -> Value {
        guard let x = self.number(x) else { return .null }
        return self.finite(body(x))
    }

    private static func math(_ x: Value, _ y: Value, _ body: (Double, Double) -> Double) -> Value {
        guard let x = self.number(x), let y = self.number(y) else { return .null }
        return self.finite(body(x, y))
    }

    /// glibc's cbrt may be 1 ulp off (cbrt(27) = 3.0000000000000004), so we keep whichever neighbour's cube is
    /// nearest to x; exact cubes then get exact roots.
    private static func cubeRoot(_ x: Double) -> Double {
        let estimate = cbrt(x)
        guard estimate.isFinite, estimate != 0 else { return estimate }
        var best = estimate
        var bestError = self.cubeResidual(estimate, x).magnitude
        for candidate in [estimate.nextDown, estimate.nextUp] {
            let error = self.cubeResidual(candidate, x).magnitude
            if error < bestError {
                best = candidate
                bestError = error
            }
        }
        return best
    }

    /// y³ - x with one rounding at the end, using fused multiply-adds: y² = square + squareError exactly.
    private static func cubeResidual(_ y: Double, _ x: Double) -> Double {
        let square = y * y
        let squareError = (-square).addingProduct(y, y)
        return (-x).addingProduct(square, y) + squareError * y
    }

    private static func absolute(_ value: Value) -> Value {
        switch value {
        case .int(let int): int == .min ? .double(-Double(int)) : .int(Swift.abs(int))
        case .double(let double): .double(double.magnitude)
        default: .null
        }
    }

    /// The smallest or largest of numbers: an int if all are ints, else the winner as a double.
    private static func extreme(_ arguments: [Value], wantsLargest: Bool) -> Value {
        var best = arguments[0]
        var allInts = true
        for argument in arguments {
            guard let order = self.numericOrder(argument, best) else { return .null }
            if case .double = argument { allInts = false }
            if wantsLargest ? order > 0 : order < 0 { best = argument }
        }
        return allInts ? best : self.number(best).map(Value.double) ?? .null
    }

    private static func clamp(_ value: Value, _ low: Value, _ high: Value) -> Value {
        guard let bounds = self.numericOrder(low, high), bounds <= 0,
            let belowLow = self.numericOrder(value, low), let aboveHigh = self.numericOrder(value, high)
        else { return .null }
        let result = belowLow < 0 ? low : (aboveHigh > 0 ? high : value)
        for argument in [value, low, high] {
            if case .double = argument { return self.number(result).map(Value.double) ?? .null }
        }
        return result
    }

    /// A double rounded by `rule` to an int when it fits Int64, else to a double; ints pass through.
    private static func integral(_ value: Value, rule: FloatingPointRoundingRule) -> Value {
        switch value {
        case .int:
            return value
        case .double(let double):
            let whole = double.rounded(rule)
            return Int64(exactly: whole).map(Value.int) ?? .double(whole)
        default:
            return .null
        }
    }

    /// `round(x)` half away from zero; `round(x, digits)` correctly rounded from x's exact decimal value.
    private static func round(_ arguments: [Value]) -> Value {
        guard arguments.count == 2 else { return self.integral(arguments[0], rule: .toNearestOrAwayFromZero) }
        guard let x = self.number(arguments[0]), let digits = self.integer(arguments[1]) else { return .null }
        // A double has at most 767 significant decimal digits and 1074 after the point; clamping keeps the work small.
        let places = Int(Swift.max(-400, Swift.min(digits, 1100)))
        return self.finite(ExactDecimal(x).rounded(toPlaces: places).doubleValue)
    }

    private static func toInt(_ value: Value) -> Value {
        switch value {
        case .int: return value
        case .double(let double): return Int64(exactly: double.rounded(.towardZero)).map(Value.int) ?? .null
        case .string(let string): return self.parseNumber(string).map { self.toInt($0) } ?? .null
        default: return .null
        }
    }

    private static func toDouble(_ value: Value) -> Value {
        switch value {
        case .int(let int): return .double(Double(int))
        case .double: return value
        case .string(let string): return self.parseNumber(string).map { self.toDouble($0) } ?? .null
        default: return .null
        }
    }

    /// A decimal number in `string` (surrounding whitespace allowed): `-12`, `+3.5`, `1e3`, `.5`; nil otherwise.
    static func parseNumber(_ string: String) -> Value? {
        let text = self.trimmed(string)
        var rest = Array(text.unicodeScalars)[...]
        func skipDigits() -> Int {
            let count = rest.prefix { $0 >= "0" && $0 <= "9" }.count
            rest = rest.dropFirst(count)
            return count
        }
        if rest.first == "-" || rest.first == "+" { rest = rest.dropFirst() }
        var digits = skipDigits()
        var isDouble = false
        if rest.first == "." {
            rest = rest.dropFirst()
            isDouble = true
            digits += skipDigits()
        }
        guard digits > 0 else { return nil }
        if rest.first == "e" || rest.first == "E" {
            rest = rest.dropFirst()
            isDouble = true
            if rest.first == "-" || rest.first == "+" { rest = rest.dropFirst() }
            guard skipDigits() > 0 else { return nil }
        }
        guard rest.isEmpty else { return nil }
        if !isDouble, let int = Int64(text) { return .int(int) }
        guard let double = Double(text), double.isFinite else { return nil }
        return .double(double)
    }

    // MARK: - Strings

    private static func length(_ value: Value) -> Value {
        switch value {
        case .string(let string): .int(Int64(string.count))
        case .array(let elements): .int(Int64(elements.count))
        default: .null
        }
    }

    private static func mapString(_ value: Value, _ body: (String) -> String) -> Value {
        guard case .string(let string) = value else { return .null }
        return .string(body(string))
    }

    private static func trimmed(_ string: String) -> String {
        guard let first = string.firstIndex(where: { !$0.isWhitespace }),
            let last = string.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return String(string[first...last])
    }

    private static func hex(_ value: Value, width: Value) -> Value {
        guard let number = self.integer(value), number >= 0, let width = self.integer(width),
            width >= 0, width <= FormatString.maxWidth
        else { return .null }
        let digits = String(number, radix: 16, uppercase: true)
        return .string(String(repeating: "0", count: Swift.max(0, Int(width) - digits.count)) + digits)
    }

    private static func format(_ arguments: [Value]) -> Value {
        guard case .string(let text) = arguments[0], let format = try? FormatString(parsing: text),
            let result = format.apply(to: arguments.dropFirst())
        else { return .null }
        return .string(result)
    }
}
