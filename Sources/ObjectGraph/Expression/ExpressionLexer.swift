// Turns expression text into tokens: numbers, strings, keywords, key paths (dotted, with `@` collection operators),
// operators and punctuation. Offsets here count Unicode scalars; `Expression.parse` converts them to characters.

/// One token of expression text.
struct ExpressionToken: Equatable {
    enum Kind: Equatable {
        /// An int or double literal.
        case number(Value)
        /// A string literal, escapes resolved.
        case string(String)
        /// `true`, `false` or `null`.
        case keyword(Value)
        /// A dotted key path, possibly a single identifier (which may name a function).
        case path(String)
        /// An operator or punctuation: `+ - * / % ! == != < <= > >= && || ? : ( ) ,`.
        case symbol(String)
        /// The end of the text.
        case end
    }

    var kind: Kind
    /// The scalar offset of the token's first scalar.
    var offset: Int
    /// The token as written, for error messages.
    var text: String
}

/// A lexing or parsing failure at a scalar offset, converted to an `ExpressionError` by `Expression.parse`.
struct ExpressionSyntaxError: Error {
    var scalarOffset: Int
    var message: String
}

/// Splits expression text into tokens, ending with `.end`.
struct ExpressionLexer {
    /// The collection operators a key path component may name after `@`.
    static let collectionOperators: Set<String> = [
        "count", "sum", "avg", "min", "max", "unionOfObjects", "distinctUnionOfObjects", "unionOfArrays",
        "distinctUnionOfArrays", "distinctUnionOfSets",
    ]

    private static let symbols: [String] = [
        "==", "!=", "<=", ">=", "&&", "||", "+", "-", "*", "/", "%", "!", "<", ">", "?", ":", "(", ")", ",",
    ]

    private let scalars: [Unicode.Scalar]
    private var position = 0

    init(_ text: String) {
        self.scalars = Array(text.unicodeScalars)
    }

    /// All tokens of the text, the last one `.end`.
    static func tokenize(_ text: String) throws(ExpressionSyntaxError) -> [ExpressionToken] {
        var lexer = ExpressionLexer(text)
        var tokens: [ExpressionToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private func peek(_ ahead: Int = 0) -> Unicode.Scalar? {
        let index = self.position + ahead
        return index < self.scalars.count ? self.scalars[index] : nil
    }

    private func text(from start: Int) -> String {
        var text = ""
        text.unicodeScalars.append(contentsOf: self.scalars[start..<self.position])
        return text
    }

    private mutating func next() throws(ExpressionSyntaxError) -> ExpressionToken {
        while let scalar = self.peek(), scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r" {
            self.position += 1
        }
        let start = self.position
        guard let scalar = self.peek() else { return ExpressionToken(kind: .end, offset: start, text: "") }
        if Self.isDigit(scalar) { return try self.number() }
        if Self.isIdentifierStart(scalar) { return try self.pathOrKeyword() }
        if scalar == "\"" { return try self.string() }
        for symbol in Self.symbols where self.matches(symbol) {
            self.position += symbol.unicodeScalars.count
            return ExpressionToken(kind: .symbol(symbol), offset: start, text: symbol)
        }
        if scalar == "=" {
            throw ExpressionSyntaxError(scalarOffset: start, message: "unexpected '='; did you mean '=='?")
        }
        throw ExpressionSyntaxError(scalarOffset: start, message: "unexpected character '\(scalar)'")
    }

    private func matches(_ symbol: String) -> Bool {
        for (index, scalar) in symbol.unicodeScalars.enumerated() where self.peek(index) != scalar {
            return false
        }
        return true
    }

    // MARK: - Numbers

    private mutating func number() throws(ExpressionSyntaxError) -> ExpressionToken {
        let start = self.position
        var isDouble = false
        self.skipDigits()
        if self.peek() == "." {
            isDouble = true
            self.position += 1
            guard let digit = self.peek(), Self.isDigit(digit) else {
                throw ExpressionSyntaxError(scalarOffset: self.position, message: "expected digits after '.'")
            }
            self.skipDigits()
        }
        if self.peek() == "e" || self.peek() == "E" {
            isDouble = true
            self.position += 1
            if self.peek() == "+" || self.peek() == "-" { self.position += 1 }
            guard let digit = self.peek(), Self.isDigit(digit) else {
                throw ExpressionSyntaxError(scalarOffset: self.position, message: "expected exponent digits")
            }
            self.skipDigits()
        }
        let text = self.text(from: start)
        if isDouble {
            guard let double = Double(text), double.isFinite else {
                throw ExpressionSyntaxError(scalarOffset: start, message: "number '\(text)' is out of range")
            }
            return ExpressionToken(kind: .number(.double(double)), offset: start, text: text)
        }
        guard let int = Int64(text) else {
            throw ExpressionSyntaxError(scalarOffset: start, message: "integer '\(text)' is out of range")
        }
        return ExpressionToken(kind: .number(.int(int)), offset: start, text: text)
    }

    private mutating func skipDigits() {
        while let scalar = self.peek(), Self.isDigit(scalar) { self.position += 1 }
    }

    // MARK: - Key paths and keywords

    private mutating func pathOrKeyword() throws(ExpressionSyntaxError) -> ExpressionToken {
        let start = self.position
        self.skipIdentifier()
        let first = self.text(from: start)
        switch first {
        case "true": return ExpressionToken(kind: .keyword(.bool(true)), offset: start, text: first)
        case "false": return ExpressionToken(kind: .keyword(.bool(false)), offset: start, text: first)
        case "null": return ExpressionToken(kind: .keyword(.null), offset: start, text: first)
        default: break
        }
        while self.peek() == "." {
            self.position += 1
            let componentStart = self.position
            if self.peek() == "@" {
                self.position += 1
                self.skipIdentifier()
                let name = self.text(from: componentStart + 1)
                guard Self.collectionOperators.contains(name) else {
                    throw ExpressionSyntaxError(
                        scalarOffset: componentStart, message: "unknown collection operator '@\(name)'")
                }
            } else if let scalar = self.peek(), Self.isIdentifierStart(scalar) {
                self.skipIdentifier()
            } else {
                throw ExpressionSyntaxError(scalarOffset: componentStart, message: "expected a key after '.'")
            }
        }
        let path = self.text(from: start)
        return ExpressionToken(kind: .path(path), offset: start, text: path)
    }

    private mutating func skipIdentifier() {
        while let scalar = self.peek(), Self.isIdentifierStart(scalar) || Self.isDigit(scalar) { self.position += 1 }
    }

    private static func isDigit(_ scalar: Unicode.Scalar) -> Bool {
        scalar >= "0" && scalar <= "9"
    }

    private static func isIdentifierStart(_ scalar: Unicode.Scalar) -> Bool {
        (scalar >= "a" && scalar <= "z") || (scalar >= "A" && scalar <= "Z") || scalar == "_"
    }

    // MARK: - Strings

    private mutating func string() throws(ExpressionSyntaxError) -> ExpressionToken {
        let start = self.position
        self.position += 1
        var value = ""
        while true {
            guard let scalar = self.peek() else {
                throw ExpressionSyntaxError(scalarOffset: start, message: "unterminated string")
            }
            self.position += 1
            if scalar == "\"" { break }
            if scalar != "\\" {
                value.unicodeScalars.append(scalar)
                continue
            }
            value.unicodeScalars.append(try self.escape(at: self.position - 1))
        }
        return ExpressionToken(kind: .string(value), offset: start, text: self.text(from: start))
    }

    /// Reads the escape whose backslash is at `backslash` (the position is just after it).
    private mutating func escape(at backslash: Int) throws(ExpressionSyntaxError) -> Unicode.Scalar {
        guard let code = self.peek() else {
            throw ExpressionSyntaxError(scalarOffset: backslash, message: "unterminated string")
        }
        self.position += 1
        switch code {
        case "\"": return "\""
        case "\\": return "\\"
        case "n": return "\n"
        case "r": return "\r"
        case "t": return "\t"
        case "u":
            var number: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = self.peek(), let nibble = Self.hexValue(digit) else {
                    throw ExpressionSyntaxError(scalarOffset: backslash, message: "expected 4 hex digits after '\\u'")
                }
                number = number << 4 | nibble
                self.position += 1
            }
            guard let scalar = Unicode.Scalar(number) else {
                throw ExpressionSyntaxError(
                    scalarOffset: backslash, message: "'\\u\(self.text(from: backslash + 2))' is not a Unicode scalar")
            }
            return scalar
        default:
            throw ExpressionSyntaxError(scalarOffset: backslash, message: "unknown escape '\\\(code)'")
        }
    }

    private static func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar {
        case "0"..."9": scalar.value - 0x30
        case "a"..."f": scalar.value - 0x61 + 10
        case "A"..."F": scalar.value - 0x41 + 10
        default: nil
        }
    }
}
