// Parses predicate tokens into a `Predicate` by recursive descent (OR below AND below NOT below comparisons),
// bounding the text's length, the nesting and the number of nodes, and compiling literal LIKE and MATCHES patterns
// so that their errors carry a column too. Entry point: `Predicate(parsing:)`.

extension Predicate {
    /// Parses predicate text (the language is described on `Predicate` and in Protocol/methods.md).
    ///
    /// Throws at the first problem, with its column: a lexical error, a token where it does not belong, an unknown
    /// collection operator or option, a LIKE/MATCHES literal that is not a valid pattern, BETWEEN without two bounds,
    /// or a limit passed: more than `maxLength` characters, nesting deeper than `maxDepth`, more than `maxNodes`
    /// nodes, a pattern beyond `PatternProgram.maxInstructions` states.
    public init(parsing text: String) throws(PredicateSyntaxError) {
        if text.utf8.count > Self.maxLength, text.prefix(Self.maxLength + 1).count > Self.maxLength {
            throw PredicateSyntaxError(
                column: Self.maxLength + 1, message: "predicate is longer than \(Self.maxLength) characters")
        }
        var parser = PredicateParser(tokens: try PredicateLexer.tokenize(text))
        self = try parser.parseAll()
    }
}

extension Predicate.Comparison {
    /// A comparison whose pattern was compiled already.
    init(
        quantifier: Predicate.Quantifier?, _ left: Predicate.Operand, _ op: Predicate.Operator,
        options: Predicate.Options, _ right: Predicate.Operand, pattern: PatternProgram?
    ) {
        self.quantifier = quantifier
        self.left = left
        self.op = op
        self.options = options
        self.right = right
        self.pattern = pattern
    }
}

/// A recursive-descent parser over a token array.
struct PredicateParser {
    private let tokens: [PredicateToken]
    private var index = 0
    /// How many parentheses, NOTs and array literals enclose the current position.
    private var nesting = 0
    /// Nodes made so far.
    private var nodes = 0

    init(tokens: [PredicateToken]) {
        self.tokens = tokens
    }

    mutating func parseAll() throws(PredicateSyntaxError) -> Predicate {
        if self.current.kind == .end { throw PredicateSyntaxError(column: 1, message: "empty predicate") }
        let predicate = try self.disjunction()
        guard self.current.kind == .end else { throw self.unexpected() }
        return predicate
    }

    // MARK: - Tokens

    private var current: PredicateToken { self.tokens[self.index] }

    private mutating func advance() {
        if self.index < self.tokens.count - 1 { self.index += 1 }
    }

    private func isKeyword(_ keyword: PredicateKeyword) -> Bool {
        self.current.kind == .keyword(keyword)
    }

    private func isSymbol(_ symbol: String) -> Bool {
        self.current.kind == .symbol(symbol)
    }

    private func error(_ message: String, at token: PredicateToken? = nil) -> PredicateSyntaxError {
        PredicateSyntaxError(column: (token ?? self.current).column + 1, message: message)
    }

    private func unexpected() -> PredicateSyntaxError {
        if self.current.kind == .end { return self.error("unexpected end of predicate") }
        return self.error("unexpected '\(self.current.text)'")
    }

    private mutating func enter() throws(PredicateSyntaxError) {
        self.nesting += 1
        if self.nesting > Predicate.maxDepth {
            throw self.error("predicate nested too deeply (limit \(Predicate.maxDepth) levels)")
        }
    }

    private mutating func countNode(at token: PredicateToken) throws(PredicateSyntaxError) {
        self.nodes += 1
        if self.nodes > Predicate.maxNodes {
            throw self.error("predicate has more than \(Predicate.maxNodes) nodes", at: token)
        }
    }

    // MARK: - Predicates

    private mutating func disjunction() throws(PredicateSyntaxError) -> Predicate {
        let first = self.current
        var operands = [try self.conjunction()]
        while self.isKeyword(.or) || self.isSymbol("||") {
            self.advance()
            operands.append(try self.conjunction())
        }
        if operands.count == 1 { return operands[0] }
        try self.countNode(at: first)
        return .or(operands.flatMap { operand -> [Predicate] in
            if case .or(let inner) = operand { return inner }
            return [operand]
        })
    }

    private mutating func conjunction() throws(PredicateSyntaxError) -> Predicate {
        let first = self.current
        var operands = [try self.negation()]
        while self.isKeyword(.and) || self.isSymbol("&&") {
            self.advance()
            operands.append(try self.negation())
        }
        if operands.count == 1 { return operands[0] }
        try self.countNode(at: first)
        return .and(operands.flatMap { operand -> [Predicate] in
            if case .and(let inner) = operand { return inner }
            return [operand]
        })
    }

    private mutating func negation() throws(PredicateSyntaxError) -> Predicate {
        guard self.isKeyword(.not) || self.isSymbol("!") else { return try self.primary() }
        let token = self.current
        try self.enter()
        self.advance()
        let operand = try self.negation()
        self.nesting -= 1
        try self.countNode(at: token)
        return .not(operand)
    }

    private mutating func primary() throws(PredicateSyntaxError) -> Predicate {
        let token = self.current
        if self.isSymbol("(") {
            try self.enter()
            self.advance()
            let inner = try self.disjunction()
            guard self.isSymbol(")") else {
                throw self.current.kind == .end ? self.error("expected ')' to close the '(' at column \(token.column + 1)")
                    : self.error("expected ')' or an operator, found '\(self.current.text)'")
            }
            self.advance()
            self.nesting -= 1
            return inner
        }
        if self.isKeyword(.truePredicate) || self.isKeyword(.falsePredicate) {
            try self.countNode(at: token)
            self.advance()
            return .constant(token.kind == .keyword(.truePredicate))
        }
        return .comparison(try self.comparison())
    }

    // MARK: - Comparisons

    private mutating func comparison() throws(PredicateSyntaxError) -> Predicate.Comparison {
        let first = self.current
        try self.countNode(at: first)
        var quantifier: Predicate.Quantifier?
        switch self.current.kind {
        case .keyword(.any), .keyword(.some): quantifier = .any
        case .keyword(.all): quantifier = .all
        case .keyword(.none): quantifier = Predicate.Quantifier.none
        default: break
        }
        if quantifier != nil { self.advance() }
        let leftToken = self.current
        let left = try self.operand()
        let opToken = self.current
        guard let op = Self.comparisonOperator(opToken.kind) else {
            if opToken.kind == .end { throw self.error("expected a comparison operator after '\(leftToken.text)'") }
            throw self.error("expected a comparison operator after '\(leftToken.text)', found '\(opToken.text)'")
        }
        self.advance()
        let options = try self.options()
        let rightToken = self.current
        let right = try self.operand()
        let pattern = try self.checkRight(right, of: op, options: options, at: rightToken)
        return Predicate.Comparison(quantifier: quantifier, left, op, options: options, right, pattern: pattern)
    }

    private static func comparisonOperator(_ kind: PredicateToken.Kind) -> Predicate.Operator? {
        switch kind {
        case .symbol(let symbol): Predicate.Operator(rawValue: symbol)
        case .keyword(.between): .between
        case .keyword(.beginsWith): .beginsWith
        case .keyword(.endsWith): .endsWith
        case .keyword(.contains): .contains
        case .keyword(.like): .like
        case .keyword(.matches): .matches
        case .keyword(.in): .in
        default: nil
        }
    }

    /// `[c]`, `[d]`, `[cd]` (or `[dc]`) after an operator.
    private mutating func options() throws(PredicateSyntaxError) -> Predicate.Options {
        guard self.isSymbol("[") else { return [] }
        self.advance()
        var options: Predicate.Options = []
        guard case .path(let keys) = self.current.kind, keys.count == 1 else {
            throw self.error("expected options c, d or cd after '['")
        }
        for letter in keys[0] {
            let option: Predicate.Options
            switch letter {
            case "c", "C": option = .caseInsensitive
            case "d", "D": option = .diacriticInsensitive
            default: throw self.error("unknown option '\(letter)' (options are c and d)")
            }
            if options.contains(option) { throw self.error("option '\(letter)' given twice") }
            options.insert(option)
        }
        self.advance()
        guard self.isSymbol("]") else { throw self.error("expected ']' after the options") }
        self.advance()
        return options
    }

    /// Refuses right sides that can never work (BETWEEN without two bounds, a pattern that is not a string or does
    /// not compile, IN a number) and compiles a literal pattern.
    private func checkRight(
        _ right: Predicate.Operand, of op: Predicate.Operator, options: Predicate.Options, at token: PredicateToken
    ) throws(PredicateSyntaxError) -> PatternProgram? {
        switch (op, right) {
        case (.between, .aggregate(let bounds)) where bounds.count != 2:
            throw self.error("BETWEEN needs two bounds: {lower, upper}", at: token)
        case (.between, .literal):
            throw self.error("BETWEEN needs two bounds: {lower, upper}", at: token)
        case (.like, .literal(let value)), (.matches, .literal(let value)):
            guard case .string(let pattern) = value else {
                throw self.error("\(op.rawValue) needs a string pattern", at: token)
            }
            do {
                return try PatternProgram(op, pattern, options: options)
            } catch {
                // Point into the literal when its Characters are the pattern's; at its quote otherwise.
                let column = token.isVerbatim ? token.column + 2 + error.offset : token.column + 1
                let what = op == .like ? "LIKE pattern" : "regular expression"
                throw PredicateSyntaxError(column: column, message: "invalid \(what): \(error.message)")
            }
        case (.in, .literal(let value)):
            if case .string = value { return nil }
            throw self.error("IN needs an array, a string, a variable or a key path", at: token)
        default:
            return nil
        }
    }

    // MARK: - Operands

    private mutating func operand() throws(PredicateSyntaxError) -> Predicate.Operand {
        let token = self.current
        let operand: Predicate.Operand
        switch token.kind {
        case .path(let keys):
            operand = .keyPath(keys)
        case .keyword(.self):
            operand = .keyPath([])
        case .keyword(.nil), .keyword(.null):
            operand = .literal(.null)
        case .keyword(.true), .keyword(.yes):
            operand = .literal(.bool(true))
        case .keyword(.false), .keyword(.no):
            operand = .literal(.bool(false))
        case .variable(let name):
            operand = .variable(name)
        case .string(let text):
            operand = .literal(.string(text))
        case .number(let text):
            operand = .literal(try self.number(text, negative: false, at: token))
        case .symbol("-"):
            self.advance()
            guard case .number(let text) = self.current.kind else {
                throw self.error("expected a number after '-' (arithmetic is not supported)")
            }
            operand = .literal(try self.number(text, negative: true, at: token))
        case .symbol("{"):
            try self.countNode(at: token)
            return .aggregate(try self.aggregate())
        case .end:
            throw self.error("unexpected end of predicate")
        case .keyword(let keyword):
            throw self.error("expected a value or a key path, found \(keyword.rawValue)")
        default:
            throw self.error("expected a value or a key path, found '\(token.text)'")
        }
        try self.countNode(at: token)
        self.advance()
        return operand
    }

    private func number(_ text: String, negative: Bool, at token: PredicateToken) throws(PredicateSyntaxError) -> Value {
        let signed = negative ? "-" + text : text
        if text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }) {
            guard let double = Double(signed), double.isFinite else {
                throw self.error("number '\(signed)' is out of range", at: token)
            }
            return .double(double)
        }
        guard let int = Int64(signed) else {
            throw self.error("integer '\(signed)' is out of range (write it with a '.0' for a double)", at: token)
        }
        return .int(int)
    }

    /// `{a, b, …}` (the position is at the `{`).
    private mutating func aggregate() throws(PredicateSyntaxError) -> [Predicate.Operand] {
        try self.enter()
        self.advance()
        var elements: [Predicate.Operand] = []
        if !self.isSymbol("}") {
            while true {
                elements.append(try self.operand())
                if self.isSymbol("}") { break }
                guard self.isSymbol(",") else { throw self.error("expected ',' or '}' in an array") }
                self.advance()
            }
        }
        self.advance()
        self.nesting -= 1
        return elements
    }
}
