// The printf-like format strings of `format(fmt, args...)`: parsing the directives (also done at parse time for a
// literal format string) and applying them to argument values. Directives: `%d %s %f %.Nf %x %X %%`, each with an
// optional width, zero-padded with a leading `0`.

/// A parsed format string: literal text and directives, in order.
struct FormatString {
    /// Why a format string is malformed, e.g. "unknown directive '%q'".
    struct ParseError: Error {
        var message: String
    }

    /// One `%` directive.
    struct Directive: Equatable {
        /// `d`, `s`, `f`, `x` or `X`.
        var conversion: Unicode.Scalar
        /// Pad with zeros (after the sign) instead of spaces.
        var isZeroPadded: Bool
        /// The minimum width in characters, 0...64.
        var width: Int
        /// The digits after the point for `f` (6 when omitted), 0...17.
        var precision: Int
    }

    enum Piece: Equatable {
        case text(String)
        case directive(Directive)
    }

    /// The widest field a directive may ask for.
    static let maxWidth = 64
    /// The most digits `%.Nf` may ask for.
    static let maxPrecision = 17

    var pieces: [Piece] = []

    /// How many arguments the format consumes.
    var argumentCount: Int {
        self.pieces.reduce(0) { count, piece in
            if case .directive = piece { return count + 1 }
            return count
        }
    }

    /// Parses `text`; throws on an unknown or malformed directive.
    init(parsing text: String) throws(ParseError) {
        let scalars = Array(text.unicodeScalars)
        var literal = ""
        var index = 0
        func number() -> Int? {
            var value: Int?
            while index < scalars.count, scalars[index] >= "0", scalars[index] <= "9" {
                value = Swift.min((value ?? 0) * 10 + Int(scalars[index].value - 0x30), 1000)
                index += 1
            }
            return value
        }
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            guard scalar == "%" else {
                literal.unicodeScalars.append(scalar)
                continue
            }
            if index < scalars.count, scalars[index] == "%" {
                literal += "%"
                index += 1
                continue
            }
            let start = index - 1
            let isZeroPadded = index < scalars.count && scalars[index] == "0"
            if isZeroPadded { index += 1 }
            let width = number() ?? 0
            var precision: Int?
            if index < scalars.count, scalars[index] == "." {
                index += 1
                guard let digits = number() else { throw ParseError(message: "expected digits after '%.'") }
                precision = digits
            }
            guard index < scalars.count else { throw ParseError(message: "incomplete directive at the end") }
            let conversion = scalars[index]
            index += 1
            var spelled = ""
            spelled.unicodeScalars.append(contentsOf: scalars[start..<index])
            guard "dsfxX".unicodeScalars.contains(conversion) else {
                throw ParseError(message: "unknown directive '\(spelled)'")
            }
            if precision != nil && conversion != "f" {
                throw ParseError(message: "'\(spelled)': a precision applies only to %f")
            }
            if isZeroPadded && conversion == "s" { throw ParseError(message: "'\(spelled)': %s cannot be zero-padded") }
            if width > Self.maxWidth { throw ParseError(message: "'\(spelled)': width exceeds \(Self.maxWidth)") }
            if let precision, precision > Self.maxPrecision {
                throw ParseError(message: "'\(spelled)': precision exceeds \(Self.maxPrecision)")
            }
            if !literal.isEmpty {
                self.pieces.append(.text(literal))
                literal = ""
            }
            let directive = Directive(
                conversion: conversion, isZeroPadded: isZeroPadded, width: width, precision: precision ?? 6)
            self.pieces.append(.directive(directive))
        }
        if !literal.isEmpty { self.pieces.append(.text(literal)) }
    }

    /// The formatted string, or nil when the argument count differs or an argument does not suit its directive.
    func apply(to arguments: some Collection<Value>) -> String? {
        guard arguments.count == self.argumentCount else { return nil }
        var result = ""
        var next = arguments.makeIterator()
        for piece in self.pieces {
            switch piece {
            case .text(let text):
                result += text
            case .directive(let directive):
                guard let argument = next.next(), let field = Self.field(directive, argument) else { return nil }
                result += field
            }
        }
        return result
    }

    /// One directive applied to one argument, padded to its width.
    private static func field(_ directive: Directive, _ argument: Value) -> String? {
        let body: String
        switch directive.conversion {
        case "d":
            guard let integer = ExpressionRuntime.integer(argument) else { return nil }
            body = String(integer)
        case "x", "X":
            guard let integer = ExpressionRuntime.integer(argument), integer >= 0 else { return nil }
            body = String(integer, radix: 16, uppercase: directive.conversion == "X")
        case "f":
            guard let text = Self.fixed(argument, places: directive.precision) else { return nil }
            body = text
        default:
            guard let text = ExpressionRuntime.stringForm(argument) else { return nil }
            body = text
        }
        let padding = directive.width - body.count
        guard padding > 0 else { return body }
        if !directive.isZeroPadded { return String(repeating: " ", count: padding) + body }
        let zeros = String(repeating: "0", count: padding)
        return body.first == "-" ? "-" + zeros + body.dropFirst() : zeros + body
    }

    /// `%.Nf` of an int (exact) or a double (correctly rounded, half away from zero).
    static func fixed(_ value: Value, places: Int) -> String? {
        switch value {
        case .int(let integer):
            return places == 0 ? String(integer) : String(integer) + "." + String(repeating: "0", count: places)
        case .double(let double) where double.isFinite:
            return ExactDecimal(double).rounded(toPlaces: places).fixedText(places: places)
        default:
            return nil
        }
    }
}
