// The canonical text of an expression: one space around binary operators and `?` `:`, none inside calls' parentheses
// or after unary operators, and parentheses only where precedence requires them. Parsing the text of a parsed
// expression gives the same expression back.

extension Expression: CustomStringConvertible {
    /// The canonical source text of the expression.
    public var description: String {
        var text = ""
        self.write(to: &text)
        return text
    }

    /// The precedence of the node's outermost operator (see `BinaryOperator.precedence`).
    var precedence: Int {
        switch self {
        case .conditional: 1
        case .binary(let op, _, _): op.precedence
        case .unary: 8
        case .literal(.int(let number)) where number < 0: 8
        case .literal(.double(let number)) where number.sign == .minus: 8
        case .literal, .keyPath, .call: 9
        }
    }

    private func write(to text: inout String) {
        switch self {
        case .literal(let value):
            Self.writeLiteral(value, to: &text)
        case .keyPath(let path):
            text += path
        case .unary(let op, let operand):
            text += op.rawValue
            operand.write(to: &text, parenthesizedBelow: 8)
        case .binary(let op, let left, let right):
            // Associative levels group to the left, so only the right operand at the same level needs parentheses;
            // non-associative levels need them on both sides.
            left.write(to: &text, parenthesizedBelow: op.isAssociative ? op.precedence : op.precedence + 1)
            text += " \(op.rawValue) "
            right.write(to: &text, parenthesizedBelow: op.precedence + 1)
        case .conditional(let condition, let then, let otherwise):
            condition.write(to: &text, parenthesizedBelow: 2)
            text += " ? "
            then.write(to: &text)
            text += " : "
            otherwise.write(to: &text)
        case .call(let function, let arguments):
            text += function.rawValue
            text += "("
            for (index, argument) in arguments.enumerated() {
                if index > 0 { text += ", " }
                argument.write(to: &text)
            }
            text += ")"
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

    private static func writeLiteral(_ value: Value, to text: inout String) {
        switch value {
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
                    let hex = String(scalar.value, radix: 16, uppercase: true)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
            text += "\""
        default:
            // Literals other than strings print in their concatenation form; null prints as the keyword.
            text += value.isNull ? "null" : (ExpressionRuntime.stringForm(value) ?? "null")
        }
    }
}
