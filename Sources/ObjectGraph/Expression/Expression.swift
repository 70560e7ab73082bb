// The expression language of computed keys: the syntax tree, its operators and the key paths it reads. Lexing,
// parsing, canonical text, evaluation, functions and `format` live in the other files of this folder; the language
// is specified in README.md next to them.

/// A parsed expression over key paths of one object, the definition of a computed (read-only) key.
///
/// The language (the full reference is `Sources/ObjectGraph/Expression/README.md`):
/// - Literals: integers (`42`, Int64), decimals and exponents (`0.5`, `1e-3`, Double), strings in double quotes with
///   the escapes `\"` `\\` `\n` `\r` `\t` `\uXXXX`, and `true`, `false`, `null`.
/// - Key paths: identifiers `[A-Za-z_][A-Za-z0-9_]*` joined by `.`, read through the evaluator's lookup. After the
///   first component, a component may be a collection operator (`@count`, `@sum`, `@avg`, `@min`, `@max`,
///   `@unionOfObjects`, `@distinctUnionOfObjects`, `@unionOfArrays`, `@distinctUnionOfArrays`, `@distinctUnionOfSets`).
/// - Operators, lowest to highest precedence: `c ? a : b` (right-associative), `||`, `&&`, `==` `!=`,
///   `<` `<=` `>` `>=` (neither level chains: `a < b < c` is a parse error), `+` `-`, `*` `/` `%`, unary `-` `!`;
///   parentheses group. A name followed by `(` is a function call (see `Expression.Function`).
/// - Truthiness (`?:`, `&&`, `||`, `!`): `true`, a non-zero number, a non-empty string or array, and an object are
///   truthy; `null`, `false`, `0`, `""` and `[]` are not. `&&`, `||` and `!` always give a bool; `&&` and `||`
///   short-circuit.
/// - Arithmetic: int with int stays int for `+ - * %` and falls back to double on overflow; `/` always gives a double;
///   int with double gives a double. Any null or non-number operand, division or remainder by zero, and a non-finite
///   result give null. `+` with a string on either side concatenates the string forms: ints in decimal, doubles in
///   Swift's shortest round-trip form (`42.0`, `0.5`, `1e-05`), bools as `true`/`false`, null as the empty string;
///   an array or object operand gives null.
/// - Comparison: numbers numerically (int against double exactly), strings by Unicode scalars, bools and null by
///   `==`/`!=` only, arrays and objects by structural equality. `==` on different types is false (`null == null` is
///   true); ordering across types or of unordered types gives null.
///
/// Evaluation never traps and never throws: every type or domain error gives `.null`, which then propagates.
public indirect enum Expression: Sendable, Equatable {
    /// A constant: null, a bool, an int, a finite double or a string.
    case literal(Value)
    /// The value of a key path relative to the object, as written (`address.city`, `employees.@sum.salary`).
    case keyPath(String)
    /// A prefix operator applied to an operand.
    case unary(UnaryOperator, Expression)
    /// An infix operator applied to two operands.
    case binary(BinaryOperator, Expression, Expression)
    /// `condition ? then : else`; only the chosen branch is evaluated.
    case conditional(Expression, Expression, Expression)
    /// A built-in function applied to its arguments (the arity was checked when parsing).
    case call(Function, [Expression])

    /// The deepest nesting `parse` accepts, counting each operator, call, conditional and parenthesised group as one
    /// level; deeper input is a parse error, so parsing, printing and evaluating never run out of stack.
    public static let maxDepth = 64

    /// A prefix operator.
    public enum UnaryOperator: String, Sendable {
        /// `-x`: negation of an int (double on overflow) or a double; null otherwise.
        case negate = "-"
        /// `!x`: the bool opposite of `x`'s truthiness.
        case not = "!"
    }

    /// An infix operator; the raw value is its spelling.
    public enum BinaryOperator: String, Sendable, CaseIterable {
        case or = "||"
        case and = "&&"
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case add = "+"
        case subtract = "-"
        case multiply = "*"
        case divide = "/"
        case remainder = "%"

        /// Binding strength: higher binds tighter. The conditional is 1, unary operators 8, primaries 9.
        public var precedence: Int {
            switch self {
            case .or: 2
            case .and: 3
            case .equal, .notEqual: 4
            case .less, .lessOrEqual, .greater, .greaterOrEqual: 5
            case .add, .subtract: 6
            case .multiply, .divide, .remainder: 7
            }
        }

        /// False for equality and ordering, which do not chain (`a == b == c` is a parse error).
        public var isAssociative: Bool {
            self.precedence != 4 && self.precedence != 5
        }
    }
}

extension Expression {
    /// The key paths the expression reads, as written, deduplicated, in order of first appearance (left to right in
    /// the source text). These become the computed key's automatic dependencies. Function names and literals are
    /// not key paths. Paths read only by a branch that is not taken are included too.
    public var keyPaths: [String] {
        var seen: Set<String> = []
        var paths: [String] = []
        self.collectKeyPaths(into: &paths, seen: &seen)
        return paths
    }

    private func collectKeyPaths(into paths: inout [String], seen: inout Set<String>) {
        switch self {
        case .literal:
            return
        case .keyPath(let path):
            if seen.insert(path).inserted { paths.append(path) }
        case .unary(_, let operand):
            operand.collectKeyPaths(into: &paths, seen: &seen)
        case .binary(_, let left, let right):
            left.collectKeyPaths(into: &paths, seen: &seen)
            right.collectKeyPaths(into: &paths, seen: &seen)
        case .conditional(let condition, let then, let otherwise):
            condition.collectKeyPaths(into: &paths, seen: &seen)
            then.collectKeyPaths(into: &paths, seen: &seen)
            otherwise.collectKeyPaths(into: &paths, seen: &seen)
        case .call(_, let arguments):
            for argument in arguments { argument.collectKeyPaths(into: &paths, seen: &seen) }
        }
    }
}
