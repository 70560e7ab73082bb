// The `where` language of queries: a subset of NSPredicate's format-string syntax, parsed into this tree and
// evaluated against the elements of a collection. Lexing and parsing are in PredicateParser.swift, canonical text in
// Predicate+Description.swift, evaluation in Predicate+Evaluation.swift, the strict check against a typed class in
// Predicate+Check.swift, LIKE and MATCHES in PatternMatcher*.swift. The grammar is in docs (Protocol/methods.md).

/// A parsed `where` predicate: a boolean condition on one element of a collection.
///
/// The language (NSPredicate's format-string syntax, the subset users reach for; keywords are case-insensitive):
/// - Comparisons `==` `=` `!=` `<>` `<` `<=` `=<` `>` `>=` `=>`, `BETWEEN {lo, hi}` (inclusive), the string operators
///   `BEGINSWITH` `ENDSWITH` `CONTAINS` `LIKE` (`*`, `?` wildcards) `MATCHES` (a regular expression matching the
///   whole string), `IN` (membership in an array, or a substring of a string); any operator takes the options `[c]`
///   (case-insensitive), `[d]` (diacritic-insensitive) or `[cd]`.
/// - `AND` `&&`, `OR` `||`, `NOT` `!`, parentheses, `TRUEPREDICATE`, `FALSEPREDICATE`.
/// - Operands: key paths of the element (`name`, `manager.name`, `tasks.@count`, `tasks.@sum.hours`), `SELF`, literals
///   (integers, doubles, strings in '…' or "…", `nil`/`NULL`, `TRUE`/`YES`, `FALSE`/`NO`, arrays `{…}`), variables
///   `$NAME`. `ANY`/`SOME`, `ALL`, `NONE` before a comparison quantify over the elements of its left side.
///
/// Evaluation never throws: a missing key reads as nil, and a comparison of values it does not apply to is false.
public indirect enum Predicate: Sendable, Equatable {
    /// `TRUEPREDICATE` or `FALSEPREDICATE`.
    case constant(Bool)
    /// `left op right`, possibly quantified.
    case comparison(Comparison)
    /// `NOT p`.
    case not(Predicate)
    /// `p AND q AND …` (the parser flattens a chain into one node; empty: true).
    case and([Predicate])
    /// `p OR q OR …` (the parser flattens a chain into one node; empty: false).
    case or([Predicate])

    /// The longest text `init(parsing:)` accepts, in characters.
    public static let maxLength = 4096
    /// The deepest nesting `init(parsing:)` accepts: parentheses, `NOT` and array literals each add a level.
    public static let maxDepth = 32
    /// The most nodes (predicates and operands) `init(parsing:)` accepts.
    public static let maxNodes = 256
}

extension Predicate {
    /// A quantifier before a comparison.
    public enum Quantifier: String, Sendable, Equatable, CaseIterable {
        /// Some element satisfies the comparison (`ANY`, also spelled `SOME`); false for an empty collection.
        case any = "ANY"
        /// Every element does; true for an empty collection.
        case all = "ALL"
        /// No element does; true for an empty collection.
        case none = "NONE"
    }

    /// A comparison operator; the raw value is its canonical spelling.
    public enum Operator: String, Sendable, Equatable, CaseIterable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case between = "BETWEEN"
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case contains = "CONTAINS"
        case like = "LIKE"
        case matches = "MATCHES"
        case `in` = "IN"
    }

    /// String comparison options (`[c]`, `[d]`, `[cd]`).
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        /// `[c]`: strings compare lowercased (Swift's `lowercased()`, the Unicode default case mapping).
        public static let caseInsensitive = Options(rawValue: 1)
        /// `[d]`: strings compare without diacritics (`PredicateFolding`: Latin letters with diacritics become their
        /// base letters, combining marks U+0300–U+036F are dropped).
        public static let diacriticInsensitive = Options(rawValue: 2)
    }

    /// One side of a comparison.
    public indirect enum Operand: Sendable, Equatable {
        /// A key path of the element, split in keys; `[]` is `SELF`, the element itself.
        case keyPath([String])
        /// A constant.
        case literal(Value)
        /// `$NAME`, bound from the request's variables (a missing one reads as nil).
        case variable(String)
        /// `{a, b, …}`: an array of operands.
        case aggregate([Operand])
    }

    /// `[quantifier] left op[options] right`.
    public struct Comparison: Sendable, Equatable {
        public var quantifier: Quantifier?
        public var left: Operand
        public var op: Operator
        public var options: Options
        public var right: Operand
        /// The compiled pattern of a LIKE or MATCHES whose right side is a string literal (compiled once, when the
        /// comparison is made); nil otherwise, or when the literal is not a valid pattern (it then never matches).
        let pattern: PatternProgram?

        public init(
            quantifier: Quantifier? = nil, _ left: Operand, _ op: Operator, options: Options = [], _ right: Operand
        ) {
            self.quantifier = quantifier
            self.left = left
            self.op = op
            self.options = options
            self.right = right
            if case .literal(.string(let text)) = right {
                self.pattern = try? PatternProgram(op, text, options: options)
            } else {
                self.pattern = nil
            }
        }

        /// Equal when they are written the same (the compiled pattern follows from the rest).
        public static func == (lhs: Comparison, rhs: Comparison) -> Bool {
            lhs.quantifier == rhs.quantifier && lhs.left == rhs.left && lhs.op == rhs.op && lhs.options == rhs.options
                && lhs.right == rhs.right
        }
    }
}

extension PatternProgram {
    /// The program of a LIKE or MATCHES pattern under `options`; nil for other operators.
    init?(_ op: Predicate.Operator, _ pattern: String, options: Predicate.Options) throws(PatternError) {
        switch op {
        case .like: self = try PatternProgram(like: pattern, options: options)
        case .matches: self = try PatternProgram(regex: pattern, options: options)
        default: return nil
        }
    }
}

// MARK: - What a predicate reads

extension Predicate {
    /// The `$NAME` variables the predicate uses (without the `$`).
    public var variables: Set<String> {
        var names = Set<String>()
        self.forEachOperand { operand in
            if case .variable(let name) = operand { names.insert(name) }
        }
        return names
    }

    /// Every key path the predicate reads from the element, split in keys, in order of first appearance and without
    /// repeats (`[["score"], ["manager", "name"], ["tasks", "@count"]]`); `SELF` is `[]`.
    public var keyPaths: [[String]] {
        var seen = Set<[String]>()
        var paths: [[String]] = []
        self.forEachOperand { operand in
            if case .keyPath(let keys) = operand, seen.insert(keys).inserted { paths.append(keys) }
        }
        return paths
    }

    /// Calls `body` with every operand, array elements included, left to right.
    func forEachOperand(_ body: (Operand) -> Void) {
        switch self {
        case .constant:
            return
        case .comparison(let comparison):
            comparison.left.forEach(body)
            comparison.right.forEach(body)
        case .not(let operand):
            operand.forEachOperand(body)
        case .and(let operands), .or(let operands):
            for operand in operands { operand.forEachOperand(body) }
        }
    }

    /// Calls `body` with every comparison, left to right.
    func forEachComparison(_ body: (Comparison) -> Void) {
        switch self {
        case .constant:
            return
        case .comparison(let comparison):
            body(comparison)
        case .not(let operand):
            operand.forEachComparison(body)
        case .and(let operands), .or(let operands):
            for operand in operands { operand.forEachComparison(body) }
        }
    }
}

extension Predicate.Operand {
    /// Calls `body` with this operand and, for an array, each of its elements.
    func forEach(_ body: (Predicate.Operand) -> Void) {
        body(self)
        if case .aggregate(let elements) = self {
            for element in elements { element.forEach(body) }
        }
    }
}
