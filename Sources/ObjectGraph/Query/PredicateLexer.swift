// Turns predicate text into tokens: key paths (checked: known collection operators, `@count` last), keywords
// (case-insensitive), `$NAME` variables, numbers, strings and operators. Columns count Characters from 0.

/// Why predicate text was refused, and where.
public struct PredicateSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The 1-based column, in Characters, where the problem was found.
    public var column: Int
    /// What is wrong, e.g. "expected ')'", "unknown collection operator '@foo'".
    public var message: String

    public init(column: Int, message: String) {
        self.column = column
        self.message = message
    }

    /// The message with its column, e.g. "column 12: expected ')'".
    public var description: String { "column \(self.column): \(self.message)" }
}

/// A reserved word of the language (case-insensitive; `#word` makes a key of that name).
enum PredicateKeyword: String, CaseIterable {
    case and = "AND"
    case or = "OR"
    case not = "NOT"
    case any = "ANY"
    case some = "SOME"
    case all = "ALL"
    case none = "NONE"
    case `in` = "IN"
    case between = "BETWEEN"
    case beginsWith = "BEGINSWITH"
    case endsWith = "ENDSWITH"
    case contains = "CONTAINS"
    case like = "LIKE"
    case matches = "MATCHES"
    case truePredicate = "TRUEPREDICATE"
    case falsePredicate = "FALSEPREDICATE"
    case `nil` = "NIL"
    case null = "NULL"
    case `true` = "TRUE"
    case yes = "YES"
    case `false` = "FALSE"
    case no = "NO"
    case `self` = "SELF"

    private static let byName: [String: PredicateKeyword] = Dictionary(
        uniqueKeysWithValues: allCases.map { ($0.rawValue, $0) })

    /// The keyword `word` spells, in any case, or nil.
    init?(word: String) {
        guard word.utf8.count <= 14, let keyword = Self.byName[word.uppercased()] else { return nil }
        self = keyword
    }
}

/// One token of predicate text.
struct PredicateToken {
    enum Kind: Equatable {
        /// A reserved word written alone (not `#`-escaped, no dots).
        case keyword(PredicateKeyword)
        /// A key path, split in keys (`SELF.` dropped; an operator at the end completed with `self`).
        case path([String])
        /// `$NAME`.
        case variable(String)
        /// An unsigned number as written.
        case number(String)
        /// A string literal, escapes resolved.
        case string(String)
        /// An operator or punctuation, in canonical spelling: `== != < <= > >= && || ! ( ) { } , [ ] -`.
        case symbol(String)
        case end
    }

    var kind: Kind
    /// The 0-based Character offset of the token's first Character.
    var column: Int
    /// The token as written, for error messages.
    var text: String
    /// For strings: whether the literal held no escape, so that a Character of its value at offset `n` is at
    /// column `column + 1 + n` (pattern errors point into it).
    var isVerbatim = false
}

/// Splits predicate text into tokens, ending with `.end`.
struct PredicateLexer {
    private let characters: [Character]
    private var position = 0

    /// Spellings of the two-character operators and what they mean (`=<` is `<=`, `<>` is `!=`, ...).
    private static let pairs: [(String, String)] = [
        ("==", "=="), ("!=", "!="), ("<>", "!="), ("<=", "<="), ("=<", "<="), (">=", ">="), ("=>", ">="),
        ("&&", "&&"), ("||", "||"),
    ]
    private static let singles: Set<Character> = ["=", "<", ">", "!", "(", ")", "{", "}", ",", "[", "]", "-"]

    static func tokenize(_ text: String) throws(PredicateSyntaxError) -> [PredicateToken] {
        var lexer = PredicateLexer(characters: Array(text))
        var tokens: [PredicateToken] = []
        while true {
            let token = try lexer.next()
            tokens.append(token)
            if token.kind == .end { return tokens }
        }
    }

    private init(characters: [Character]) {
        self.characters = characters
    }

    private func peek(_ ahead: Int = 0) -> Character? {
        let index = self.position + ahead
        return index < self.characters.count ? self.characters[index] : nil
    }

    private func text(from start: Int) -> String {
        String(self.characters[start..<self.position])
    }

    private func error(_ column: Int, _ message: String) -> PredicateSyntaxError {
        PredicateSyntaxError(column: column + 1, message: message)
    }

    private mutating func next() throws(PredicateSyntaxError) -> PredicateToken {
        while let character = self.peek(), character.isWhitespace { self.position += 1 }
        let start = self.position
        guard let character = self.peek() else { return PredicateToken(kind: .end, column: start, text: "") }
        if character.isASCII, character.isNumber { return try self.number() }
        if Self.isIdentifierStart(character) || character == "#" || character == "@" { return try self.path() }
        if let first = character.unicodeScalars.first, first == "'" || first == "\"" { return try self.string() }
        if character == "$" {
            self.position += 1
            guard let first = self.peek(), Self.isIdentifierStart(first) else {
                throw self.error(self.position, "expected a variable name after '$'")
            }
            self.skipIdentifier()
            let name = self.text(from: start + 1)
            return PredicateToken(kind: .variable(name), column: start, text: "$" + name)
        }
        if let next = self.peek(1) {
            let pair = String([character, next])
            if let (_, canonical) = Self.pairs.first(where: { $0.0 == pair }) {
                self.position += 2
                return PredicateToken(kind: .symbol(canonical), column: start, text: pair)
            }
        }
        if Self.singles.contains(character) {
            self.position += 1
            let canonical = character == "=" ? "==" : String(character)
            return PredicateToken(kind: .symbol(canonical), column: start, text: String(character))
        }
        if character == "&" || character == "|" {
            throw self.error(start, "unexpected '\(character)'; did you mean '\(character)\(character)'?")
        }
        throw self.error(start, "unexpected character '\(character)'")
    }

    // MARK: - Numbers

    private mutating func number() throws(PredicateSyntaxError) -> PredicateToken {
        let start = self.position
        self.skipDigits()
        if self.peek() == "." {
            self.position += 1
            guard let digit = self.peek(), digit.isASCII, digit.isNumber else {
                throw self.error(self.position, "expected digits after '.'")
            }
            self.skipDigits()
        }
        if self.peek() == "e" || self.peek() == "E" {
            self.position += 1
            if self.peek() == "+" || self.peek() == "-" { self.position += 1 }
            guard let digit = self.peek(), digit.isASCII, digit.isNumber else {
                throw self.error(self.position, "expected exponent digits")
            }
            self.skipDigits()
        }
        if let next = self.peek(), Self.isIdentifierPart(next) {
            throw self.error(self.position, "unexpected '\(next)' after a number")
        }
        let text = self.text(from: start)
        return PredicateToken(kind: .number(text), column: start, text: text)
    }

    private mutating func skipDigits() {
        while let character = self.peek(), character.isASCII, character.isNumber { self.position += 1 }
    }

    // MARK: - Key paths and keywords

    private mutating func path() throws(PredicateSyntaxError) -> PredicateToken {
        let start = self.position
        var keys: [String] = []
        var columns: [Int] = []
        var firstIsEscaped = false
        repeat {
            if !keys.isEmpty { self.position += 1 }  // the '.'
            let componentStart = self.position
            columns.append(componentStart)
            switch self.peek() {
            case "#"?, "@"?:
                if keys.isEmpty, self.peek() == "#" { firstIsEscaped = true }
                let sigil = self.peek() == "@" ? "@" : ""
                self.position += 1
                guard let first = self.peek(), Self.isIdentifierStart(first) else {
                    throw self.error(self.position, "expected a key after '\(self.text(from: componentStart))'")
                }
                self.skipIdentifier()
                keys.append(sigil + self.text(from: componentStart + 1))
            case let character? where Self.isIdentifierStart(character):
                self.skipIdentifier()
                keys.append(self.text(from: componentStart))
            default:
                throw self.error(componentStart, "expected a key after '.'")
            }
        } while self.peek() == "."
        let text = self.text(from: start)
        if keys.count == 1, !firstIsEscaped, let keyword = PredicateKeyword(word: keys[0]) {
            return PredicateToken(kind: .keyword(keyword), column: start, text: text)
        }
        if !firstIsEscaped, let keyword = PredicateKeyword(word: keys[0]) {
            guard keyword == .self else {
                throw self.error(start, "'\(keys[0])' is a reserved word; write #\(keys[0]) for a key of that name")
            }
            keys.removeFirst()
            columns.removeFirst()
        }
        try self.checkOperators(&keys, columns: columns)
        return PredicateToken(kind: .path(keys), column: start, text: text)
    }

    /// Collection operators must be known; `@count` ends the path; the others take a key after them (`self` when
    /// none is written: `scores.@max` is `scores.@max.self`).
    private func checkOperators(_ keys: inout [String], columns: [Int]) throws(PredicateSyntaxError) {
        var index = 0
        while index < keys.count {
            let key = keys[index]
            defer { index += 1 }
            guard key.utf8.first == UInt8(ascii: "@") else { continue }
            guard let op = CollectionOperator(rawValue: key) else {
                throw self.error(columns[index], "unknown collection operator '\(key)'")
            }
            if index + 1 == keys.count {
                if op.takesKeyPath { keys.append("self") }
                return
            }
            if !op.takesKeyPath {
                throw self.error(columns[index + 1], "'\(key)' ends a key path")
            }
            if keys[index + 1].utf8.first == UInt8(ascii: "@") {
                throw self.error(columns[index + 1], "expected a key after '\(key)'")
            }
        }
    }

    private mutating func skipIdentifier() {
        while let character = self.peek(), Self.isIdentifierPart(character) { self.position += 1 }
    }

    static func isIdentifierStart(_ character: Character) -> Bool {
        character.isLetter || character == "_"
    }

    static func isIdentifierPart(_ character: Character) -> Bool {
        character.isLetter || character.isNumber || character == "_"
    }

    // MARK: - Strings

    /// Reads a string literal. Its content is read scalar by scalar, so that a combining mark right after the
    /// opening quote or after a backslash (which would form one Character with it) reads as itself.
    private mutating func string() throws(PredicateSyntaxError) -> PredicateToken {
        let start = self.position
        var scalars = ScalarReader(self.characters, from: start)
        guard let quote = scalars.next() else { return PredicateToken(kind: .end, column: start, text: "") }
        var value = String.UnicodeScalarView()
        var isVerbatim = true
        while true {
            guard let scalar = scalars.next() else { throw self.error(start, "unterminated string") }
            if scalar == quote { break }
            if scalar != "\\" {
                value.append(scalar)
                continue
            }
            guard scalars.peek() != nil else { throw self.error(start, "unterminated string") }
            if try Self.escape(&scalars, at: scalars.characterIndex, into: &value) { isVerbatim = false }
        }
        guard scalars.isAtCharacterEnd else {
            throw self.error(scalars.characterIndex, "unexpected combining mark after a closing quote")
        }
        self.position = scalars.characterIndex + 1
        var token = PredicateToken(kind: .string(String(value)), column: start, text: self.text(from: start))
        token.isVerbatim = isVerbatim
        return token
    }

    /// Reads the escape after a backslash at Character `backslash`. `\\ \' \" \n \r \t` and `\uXXXX` / `\u{X…}`
    /// are escapes; a backslash before anything else stays, so regular expressions read as written (`'\d+'` is
    /// the 3 characters `\d+`). Returns whether it was an escape (false: the text is as written).
    private static func escape(
        _ scalars: inout ScalarReader, at backslash: Int, into value: inout String.UnicodeScalarView
    ) throws(PredicateSyntaxError) -> Bool {
        guard let code = scalars.peek() else { return false }
        switch code {
        case "\\", "'", "\"": value.append(code)
        case "n": value.append("\n")
        case "r": value.append("\r")
        case "t": value.append("\t")
        case "u":
            _ = scalars.next()
            value.append(try Self.unicodeEscape(&scalars, at: backslash))
            return true
        default:
            value.append("\\")
            return false  // the next scalar is read as itself
        }
        _ = scalars.next()
        return true
    }

    private static func unicodeEscape(
        _ scalars: inout ScalarReader, at backslash: Int
    ) throws(PredicateSyntaxError) -> Unicode.Scalar {
        let braced = scalars.peek() == "{"
        if braced { _ = scalars.next() }
        var number: UInt32 = 0
        var digits = 0
        while let scalar = scalars.peek(), let nibble = Self.hexValue(scalar), digits < (braced ? 8 : 4) {
            number = number << 4 | nibble
            digits += 1
            _ = scalars.next()
        }
        if braced {
            guard digits > 0, scalars.peek() == "}" else {
                throw PredicateSyntaxError(column: backslash + 1, message: "expected hex digits and '}' after '\\u{'")
            }
            _ = scalars.next()
        } else if digits != 4 {
            throw PredicateSyntaxError(column: backslash + 1, message: "expected 4 hex digits after '\\u'")
        }
        guard let scalar = Unicode.Scalar(number) else {
            throw PredicateSyntaxError(column: backslash + 1, message: "'\\u{\(String(number, radix: 16))}' is not a Unicode scalar")
        }
        return scalar
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

/// The Unicode scalars of Characters from an index on, knowing which Character each belongs to.
private struct ScalarReader {
    private let characters: [Character]
    /// The Character of the scalar `next()` returned last.
    private(set) var characterIndex: Int
    private var scalars: [Unicode.Scalar] = []
    private var offset = 0

    init(_ characters: [Character], from index: Int) {
        self.characters = characters
        self.characterIndex = index - 1
    }

    /// Whether the scalar returned last was the last of its Character.
    var isAtCharacterEnd: Bool { self.offset >= self.scalars.count }

    func peek() -> Unicode.Scalar? {
        if self.offset < self.scalars.count { return self.scalars[self.offset] }
        let index = self.characterIndex + 1
        return index < self.characters.count ? self.characters[index].unicodeScalars.first : nil
    }

    mutating func next() -> Unicode.Scalar? {
        if self.offset >= self.scalars.count {
            guard self.characterIndex + 1 < self.characters.count else { return nil }
            self.characterIndex += 1
            self.scalars = Array(self.characters[self.characterIndex].unicodeScalars)
            self.offset = 0
        }
        defer { self.offset += 1 }
        return self.scalars[self.offset]
    }
}
