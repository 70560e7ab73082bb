// The one error of the expression language: a parse error with its position. Evaluation has no errors (it yields
// null), so this type only comes out of `Expression.parse`.

/// Why expression text did not parse, and where.
public struct ExpressionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The 0-based character offset in the source text where the problem was found.
    public var offset: Int
    /// What is wrong, e.g. "expected ')'", "unknown function 'foo'", "'pow' takes 2 arguments".
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    /// The message with its 1-based column, e.g. "column 12: expected ')'".
    public var description: String {
        "column \(self.offset + 1): \(self.message)"
    }
}
