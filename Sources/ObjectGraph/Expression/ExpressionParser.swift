// Parses expression tokens into an `Expression` by precedence climbing, checking function names, arities, literal
// format strings and the nesting limit on the way. Entry point: `Expression.parse`.

extension Expression {
    /// Parses expression text (the language is described on `Expression`).
    ///
    /// Throws an `ExpressionError` at the first problem: a lexical error (unterminated string, unknown escape, key path
    /// ending in `.`), a token where it does not belong, an unknown function or wrong arity, a literal `format` string
    /// that is malformed or does not match its argument count, or nesting deeper than `Expression.maxDepth`.
    public static func parse(_ text: String) throws(ExpressionError) -> Expression {
        do {
            let tokens = try ExpressionLexer.tokenize(text)
            var parser = ExpressionParser(tokens: tokens)
            return try parser.parseAll()
        } catch {
            // Offsets are counted in scalars while lexing; report them in characters.
            let scalars = text.unicodeScalars
            let index = scalars.index(scalars.startIndex, offsetBy: error.scalarOffset)
            throw ExpressionError(offset: text.distance(from: text.startIndex, to: index), message: error.message)
        }
    }
}

/// A recursive-descent parser over a token array; one level of precedence per method.
struct ExpressionParser {
    /// A parsed subexpression and its depth: 0 for a literal or key path; each operator, call, conditional and
    /// parenthesised group adds one.
    typealias Parsed = (expression: Expression, depth: Int)

    private let tokens: [ExpressionToken]
    private var index = 0
    /// How many groups, operators and branches enclose the current position; bounds the recursion.
    private var nesting = 0

    init(tokens: [ExpressionToken]) {
        precondition(tokens.last?.kind == .end, "token arrays end with .end")
        self.tokens = tokens
    }

    mutating func parseAll() throws(ExpressionSyntaxError) -> Expression {
        if self.current.kind == .end { throw ExpressionSyntaxError(scalarOffset: 0, message: "empty expression") }
        let parsed = try self.conditional()
        guard self.current.kind == .end else { throw self.unexpected() }
        return parsed.expression
    }

    // MARK: - Tokens

    private var current: ExpressionToken { self.tokens[self.index] }

    private func isSymbol(_ symbol: String) -> Bool {
        self.current.kind == .symbol(symbol)
    }

    private mutating func advance() {
        if self.index < self.tokens.count - 1 { self.index += 1 }
    }

    private func unexpected() -> ExpressionSyntaxError {
        if self.current.kind == .end {
            return ExpressionSyntaxError(scalarOffset: self.current.offset, message: "unexpected end of expression")
        }
        return ExpressionSyntaxError(scalarOffset: self.current.offset, message: "unexpected '\(self.current.text)'")
    }

    private func expected(_ what: String) -> ExpressionSyntaxError {
        ExpressionSyntaxError(scalarOffset: self.current.offset, message: "expected \(what)")
    }

    private static func tooDeep(at offset: Int) -> ExpressionSyntaxError {
        ExpressionSyntaxError(
            scalarOffset: offset, message: "expression nested too deeply (limit \(Expression.maxDepth) levels)")
    }

    private mutating func enter(_ token: ExpressionToken) throws(ExpressionSyntaxError) {
        self.nesting += 1
        if self.nesting > Expression.maxDepth { throw Self.tooDeep(at: token.offset) }
    }

    private mutating func leave() {
        self.nesting -= 1
    }

    private func node(_ expression: Expression, depth: Int, at token: ExpressionToken)
        throws(ExpressionSyntaxError) -> Parsed
    {
        if depth > Expression.maxDepth { throw Self.tooDeep(at: token.offset) }
        return (expression, depth)
    }

    // MARK: - Precedence levels

    /// `condition ? then : else`, right-associative; the middle operand may be any expression.
    private mutating func conditional() throws(ExpressionSyntaxError) -> Parsed {
        let condition = try self.binary(level: 2)
        guard self.isSymbol("?") else { return condition }
        let question = self.current
        self.advance()
        try self.enter(question)
        defer { self.leave() }
        let then = try self.conditional()
        guard self.isSymbol(":") else { throw self.expected("':'") }
        self.advance()
        let otherwise = try self.conditional()
        let depth = Swift.max(condition.depth, then.depth, otherwise.depth) + 1
        return try self.node(
            .conditional(condition.expression, then.expression, otherwise.expression), depth: depth, at: question)
    }

    /// Binary operators from `||` (level 2) to `* / %` (level 7); equality and ordering do not chain.
    private mutating func binary(level: Int) throws(ExpressionSyntaxError) -> Parsed {
        if level > 7 { return try self.unary() }
        var left = try self.binary(level: level + 1)
        var isChained = false
        while case .symbol(let symbol) = self.current.kind, let op = Expression.BinaryOperator(rawValue: symbol),
            op.precedence == level
        {
            if isChained && !op.isAssociative {
                throw ExpressionSyntaxError(
                    scalarOffset: self.current.offset,
                    message: "'\(symbol)' cannot follow another comparison; use parentheses")
            }
            let token = self.current
            self.advance()
            let right = try self.binary(level: level + 1)
            let depth = Swift.max(left.depth, right.depth) + 1
            left = try self.node(.binary(op, left.expression, right.expression), depth: depth, at: token)
            isChained = true
        }
        return left
    }

    /// Prefix `-` and `!`. A minus applied to a number literal folds into a negative literal.
    private mutating func unary() throws(ExpressionSyntaxError) -> Parsed {
        guard case .symbol(let symbol) = self.current.kind, let op = Expression.UnaryOperator(rawValue: symbol) else {
            return try self.primary()
        }
        let token = self.current
        self.advance()
        try self.enter(token)
        defer { self.leave() }
        let operand = try self.unary()
        switch (op, operand.expression) {
        case (.negate, .literal(.int(let number))) where number != .min:
            return (.literal(.int(-number)), operand.depth)
        case (.negate, .literal(.double(let number))):
            return (.literal(.double(-number)), operand.depth)
        default:
            return try self.node(.unary(op, operand.expression), depth: operand.depth + 1, at: token)
        }
    }

    /// Literals, key paths, calls and parenthesised groups.
    private mutating func primary() throws(ExpressionSyntaxError) -> Parsed {
        let token = self.current
        switch token.kind {
        case .number(let value), .keyword(let value):
            self.advance()
            return (.literal(value), 0)
        case .string(let string):
            self.advance()
            return (.literal(.string(string)), 0)
        case .path(let path):
            self.advance()
            if self.isSymbol("(") { return try self.call(name: path, at: token) }
            return (.keyPath(path), 0)
        case .symbol("("):
            self.advance()
            try self.enter(token)
            defer { self.leave() }
            let inner = try self.conditional()
            guard self.isSymbol(")") else { throw self.expected("')'") }
            self.advance()
            return try self.node(inner.expression, depth: inner.depth + 1, at: token)
        case .end:
            throw self.expected("an expression")
        default:
            throw self.unexpected()
        }
    }

    /// A call; the current token is its `(`.
    private mutating func call(name: String, at nameToken: ExpressionToken) throws(ExpressionSyntaxError) -> Parsed {
        guard let function = Expression.Function(rawValue: name) else {
            throw ExpressionSyntaxError(scalarOffset: nameToken.offset, message: "unknown function '\(name)'")
        }
        try self.enter(self.current)
        defer { self.leave() }
        self.advance()
        var arguments: [Parsed] = []
        if !self.isSymbol(")") {
            while true {
                arguments.append(try self.conditional())
                guard self.isSymbol(",") else { break }
                self.advance()
            }
        }
        guard self.isSymbol(")") else { throw self.expected("',' or ')'") }
        self.advance()
        if arguments.count < function.minimumArity || arguments.count > (function.maximumArity ?? .max) {
            throw ExpressionSyntaxError(scalarOffset: nameToken.offset, message: function.arityMessage)
        }
        if function == .format, case .literal(.string(let text)) = arguments[0].expression {
            try Self.checkFormat(text, argumentCount: arguments.count - 1, at: nameToken)
        }
        let depth = (arguments.map(\.depth).max() ?? 0) + 1
        return try self.node(.call(function, arguments.map(\.expression)), depth: depth, at: nameToken)
    }

    /// A literal format string is checked now, so that a typo fails the model load instead of yielding null.
    private static func checkFormat(_ text: String, argumentCount: Int, at token: ExpressionToken)
        throws(ExpressionSyntaxError)
    {
        let format: FormatString
        do {
            format = try FormatString(parsing: text)
        } catch {
            throw ExpressionSyntaxError(scalarOffset: token.offset, message: "format string: \(error.message)")
        }
        let needed = format.argumentCount
        if needed != argumentCount {
            throw ExpressionSyntaxError(
                scalarOffset: token.offset,
                message: "format string takes \(needed) argument\(needed == 1 ? "" : "s"), got \(argumentCount)")
        }
    }
}
