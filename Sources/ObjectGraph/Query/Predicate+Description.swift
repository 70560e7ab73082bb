// The canonical text of a predicate: keywords in capitals, one spelling per operator (`==` `!=` `<=` `>=` `AND` `OR`
// `NOT` `ANY` `nil` `TRUE` `FALSE`), strings in double quotes, one space around operators, parentheses only where
// precedence needs them. Parsing the text of a parsed predicate gives the same predicate back, so equal queries
// written differently share one text.

extension Predicate: CustomStringConvertible {
    /// The canonical text of the predicate.
    public var description: String {
        var text = ""
        self.write(to: &text)
        return text
    }

    /// Binding strength of the outermost node: OR 1, AND 2, NOT 3, comparisons and constants 4.
    private var precedence: Int {
        switch self {
        case .or(let operands) where operands.count > 1: 1
        case .and(let operands) where operands.count > 1: 2
        case .or(let operands), .and(let operands): operands.first?.precedence ?? 4
        case .not: 3
        case .comparison, .constant: 4
        }
    }

    private func write(to text: inout String) {
        switch self {
        case .constant(let value):
            text += value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .comparison(let comparison):
            comparison.write(to: &text)
        case .not(let operand):
            text += "NOT "
            operand.write(to: &text, parenthesizedBelow: 3)
        case .and(let operands), .or(let operands):
            guard let first = operands.first else {
                text += self == .and([]) ? "TRUEPREDICATE" : "FALSEPREDICATE"
                return
            }
            if operands.count == 1 { return first.write(to: &text) }
            let (level, word) = self.precedence == 2 ? (2, " AND ") : (1, " OR ")
            for (index, operand) in operands.enumerated() {
                if index > 0 { text += word }
                // A nested chain of the same operator keeps its parentheses (the parser would flatten it).
                operand.write(to: &text, parenthesizedBelow: level + 1)
            }
        }
    }

    private func write(to text: inout String, parenthesizedBelow level: Int) {
        if self.precedence < level {
            text += "("
            self.write(to: &text)
            text += ")"
        } else {
            self.write(to: &text)
        }
    }
}

extension Predicate.Comparison {
    func write(to text: inout String) {
        if let quantifier = self.quantifier { text += quantifier.rawValue + " " }
        self.left.write(to: &text)
        text += " " + self.op.rawValue
        if !self.options.isEmpty {
            text += "["
            if self.options.contains(.caseInsensitive) { text += "c" }
            if self.options.contains(.diacriticInsensitive) { text += "d" }
            text += "]"
        }
        text += " "
        self.right.write(to: &text)
    }
}

extension Predicate.Operand: CustomStringConvertible {
    /// The operand as written in canonical text.
    public var description: String {
        var text = ""
        self.write(to: &text)
        return text
    }

    func write(to text: inout String) {
        switch self {
        case .keyPath(let keys):
            guard let first = keys.first else {
                text += "SELF"
                return
            }
            // A first key that is a reserved word needs a '#'; after a '.', every word is a key.
            if PredicateKeyword(word: first) != nil { text += "#" }
            text += first
            // `@sum.self` was written `@sum`.
            let rest = keys.dropFirst()
            for (offset, key) in zip(rest.indices, rest) {
                if key == "self", offset == keys.count - 1, keys[offset - 1].utf8.first == UInt8(ascii: "@") {
                    break
                }
                text += "." + key
            }
        case .variable(let name):
            text += "$" + name
        case .aggregate(let elements):
            text += "{"
            for (index, element) in elements.enumerated() {
                if index > 0 { text += ", " }
                element.write(to: &text)
            }
            text += "}"
        case .literal(let value):
            Self.writeLiteral(value, to: &text)
        }
    }

    private static func writeLiteral(_ value: Value, to text: inout String) {
        switch value {
        case .null: text += "nil"
        case .bool(let flag): text += flag ? "TRUE" : "FALSE"
        case .int(let number): text += String(number)
        case .double(let number): text += number.isFinite ? "\(number)" : "nil"
        case .string(let string):
            text += "\""
            for scalar in string.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                    text += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
                default: text.unicodeScalars.append(scalar)
                }
            }
            text += "\""
        case .array(let elements):
            text += "{"
            for (index, element) in elements.enumerated() {
                if index > 0 { text += ", " }
                Self.writeLiteral(element, to: &text)
            }
            text += "}"
        case .object(let id):
            // Not expressible in the language (only a predicate built in Swift holds one).
            text += "$\(id)"
        case .record:
            text += "{}"
        }
    }
}
