// Evaluating a predicate against one element: operands read through `Graph.evaluate` (leniently: a missing key, a
// path through a non-object, an operator on a non-collection read as nil), then compared with NSPredicate's
// semantics as kvod documents them (Protocol/methods.md). Never throws, never traps; one element costs O(predicate
// size × the cost of its key paths and the lengths of the strings compared).

extension Graph {
    /// Whether `element` (usually `.object(id)`, or a scalar for a collection of scalars) satisfies `predicate`.
    ///
    /// Reads key paths leniently (missing -> nil). With a collector, records the triggers of every key path it reads.
    /// `AND`, `OR` and the quantifiers stop at the first operand that decides the result, so the triggers are those
    /// of the reads that decided it: a change elsewhere cannot change the result until one of them changes (replace
    /// an element's triggers with the new ones at every evaluation).
    func matches(
        _ predicate: Predicate, element: Value, variables: [String: Value], collector: TriggerCollector?
    ) -> Bool {
        switch predicate {
        case .constant(let value):
            return value
        case .comparison(let comparison):
            return self.matches(comparison, element: element, variables: variables, collector: collector)
        case .not(let operand):
            return !self.matches(operand, element: element, variables: variables, collector: collector)
        case .and(let operands):
            return operands.allSatisfy { self.matches($0, element: element, variables: variables, collector: collector) }
        case .or(let operands):
            return operands.contains { self.matches($0, element: element, variables: variables, collector: collector) }
        }
    }

    private func matches(
        _ comparison: Predicate.Comparison, element: Value, variables: [String: Value], collector: TriggerCollector?
    ) -> Bool {
        let left = self.value(of: comparison.left, element: element, variables: variables, collector: collector)
        let right = self.value(of: comparison.right, element: element, variables: variables, collector: collector)
        var pattern = comparison.pattern
        if pattern == nil, comparison.op == .like || comparison.op == .matches, case .string(let text) = right {
            // A pattern from a variable or a key path, compiled for this evaluation (one that does not compile
            // matches nothing).
            pattern = try? PatternProgram(comparison.op, text, options: comparison.options)
        }
        let test = PredicateTest(op: comparison.op, options: comparison.options, right: right, pattern: pattern)
        switch comparison.quantifier {
        case .any?: return Self.anyElement(of: left) { test.holds(for: $0) }
        case .all?: return !Self.anyElement(of: left) { !test.holds(for: $0) }
        case .none?: return !Self.anyElement(of: left) { test.holds(for: $0) }
        case nil:
            // A to-many key path compared without a quantifier means ANY (as Core Data's); CONTAINS on a collection
            // is membership.
            guard case .array = left else { return test.holds(for: left) }
            let isToMany = if case .keyPath(let keys) = comparison.left { !keys.isEmpty } else { false }
            if comparison.op == .contains {
                let isMember = { (element: Value) in PredicateTest.equal(element, right, comparison.options) }
                return isToMany ? Self.anyElement(of: left, isMember) : Self.anyElementOfArray(left, isMember)
            }
            return isToMany ? Self.anyElement(of: left) { test.holds(for: $0) } : test.holds(for: left)
        }
    }

    /// The value of an operand: key paths read from the element, variables from the request (nil when missing).
    private func value(
        of operand: Predicate.Operand, element: Value, variables: [String: Value], collector: TriggerCollector?
    ) -> Value {
        switch operand {
        case .literal(let value):
            return value
        case .variable(let name):
            return variables[name] ?? .null
        case .keyPath(let keys):
            if keys.isEmpty { return element }
            return (try? self.evaluate(keys[...], from: element, collector: collector)) ?? .null
        case .aggregate(let elements):
            return .array(elements.map { self.value(of: $0, element: element, variables: variables, collector: collector) })
        }
    }

    /// Whether some element of a quantified left side satisfies `test`. Nested arrays (a key path through two
    /// to-many keys, or to an array-valued key) are flattened; nil is an empty collection and any other value a
    /// collection of itself.
    private static func anyElement(of value: Value, _ test: (Value) -> Bool) -> Bool {
        guard case .array(let elements) = value else { return value.isNull ? false : test(value) }
        for element in elements {
            if case .array = element {
                if Self.anyElement(of: element, test) { return true }
            } else if test(element) {
                return true
            }
        }
        return false
    }
}

/// One comparison's operator, options and evaluated right side, applied to left values.
struct PredicateTest {
    var op: Predicate.Operator
    var options: Predicate.Options
    var right: Value
    var pattern: PatternProgram?

    func holds(for left: Value) -> Bool {
        switch self.op {
        case .equal: return Self.equal(left, self.right, self.options)
        case .notEqual: return !Self.equal(left, self.right, self.options)
        case .less: return Self.order(left, self.right, self.options).map { $0 < 0 } ?? false
        case .lessOrEqual: return Self.order(left, self.right, self.options).map { $0 <= 0 } ?? false
        case .greater: return Self.order(left, self.right, self.options).map { $0 > 0 } ?? false
        case .greaterOrEqual: return Self.order(left, self.right, self.options).map { $0 >= 0 } ?? false
        case .between:
            guard case .array(let bounds) = self.right, bounds.count == 2,
                let low = Self.order(left, bounds[0], self.options), let high = Self.order(left, bounds[1], self.options)
            else { return false }
            return low >= 0 && high <= 0
        case .beginsWith, .endsWith, .contains:
            guard case .string(let text) = left, case .string(let part) = self.right else { return false }
            let (haystack, needle) = (PredicateFolding.fold(text, self.options), PredicateFolding.fold(part, self.options))
            switch self.op {
            case .beginsWith: return haystack.starts(with: needle)
            case .endsWith: return haystack.reversed().starts(with: needle.reversed())
            default: return Self.contains(Array(haystack), Array(needle))
            }
        case .like, .matches:
            guard case .string(let text) = left, let pattern = self.pattern else { return false }
            return pattern.matches(text)
        case .in:
            switch self.right {
            case .array:
                return Graph.anyElementOfArray(self.right) { Self.equal(left, $0, self.options) }
            case .string(let text):
                guard case .string(let part) = left else { return false }
                return Self.contains(
                    Array(PredicateFolding.fold(text, self.options)), Array(PredicateFolding.fold(part, self.options)))
            default:
                return false
            }
        }
    }

    // MARK: - Equality and order

    /// Equality: numbers by exact value (an int equals a double of the same value), strings after folding (Swift's
    /// canonical equivalence), nil only nil, bools, objects by identity, arrays element by element; different kinds
    /// are unequal.
    static func equal(_ left: Value, _ right: Value, _ options: Predicate.Options) -> Bool {
        switch (left, right) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.string(let a), .string(let b)):
            return options.isEmpty ? a == b : PredicateFolding.fold(a, options) == PredicateFolding.fold(b, options)
        case (.object(let a), .object(let b)): return a == b
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { Self.equal($0, $1, options) }
        case (.record, .record): return left == right
        default: return Self.compareNumbers(left, right) == 0
        }
    }

    /// Order: numbers by exact value, strings after folding by Swift's String order; nil for anything else
    /// (ordering comparisons with it are false).
    static func order(_ left: Value, _ right: Value, _ options: Predicate.Options) -> Int? {
        if case .string(let a) = left, case .string(let b) = right {
            let (x, y) = options.isEmpty ? (a, b) : (PredicateFolding.fold(a, options), PredicateFolding.fold(b, options))
            return x < y ? -1 : x == y ? 0 : 1
        }
        return Self.compareNumbers(left, right)
    }

    /// -1, 0 or 1 for two numbers by exact value (int against double without rounding); nil unless both are
    /// numbers, or when one is not a number (NaN: never from the wire, but a variable is a `Value`).
    static func compareNumbers(_ left: Value, _ right: Value) -> Int? {
        switch (left, right) {
        case (.int(let a), .int(let b)): return a < b ? -1 : a == b ? 0 : 1
        case (.double(let a), .double(let b)):
            if a.isNaN || b.isNaN { return nil }
            return a < b ? -1 : a == b ? 0 : 1
        case (.int(let a), .double(let b)): return Self.compare(a, b)
        case (.double(let a), .int(let b)): return Self.compare(b, a).map { -$0 }
        default: return nil
        }
    }

    private static func compare(_ int: Int64, _ double: Double) -> Int? {
        if double.isNaN { return nil }
        if double.isInfinite { return double > 0 ? -1 : 1 }
        return Value.compare(int, double)
    }

    /// Whether `needle` occurs in `haystack` (Knuth–Morris–Pratt: O(m + n) Character comparisons).
    static func contains(_ haystack: [Character], _ needle: [Character]) -> Bool {
        if needle.isEmpty { return true }
        if needle.count > haystack.count { return false }
        var failure = Array(repeating: 0, count: needle.count)
        var length = 0
        for index in needle.indices.dropFirst() {
            while length > 0 && needle[index] != needle[length] { length = failure[length - 1] }
            if needle[index] == needle[length] { length += 1 }
            failure[index] = length
        }
        var matched = 0
        for character in haystack {
            while matched > 0 && character != needle[matched] { matched = failure[matched - 1] }
            if character == needle[matched] { matched += 1 }
            if matched == needle.count { return true }
        }
        return false
    }
}

extension Graph {
    /// Whether some element of an array (not flattened: `IN` tests membership) satisfies `test`.
    static func anyElementOfArray(_ value: Value, _ test: (Value) -> Bool) -> Bool {
        guard case .array(let elements) = value else { return false }
        return elements.contains(where: test)
    }
}
