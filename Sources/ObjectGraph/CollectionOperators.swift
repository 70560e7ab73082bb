// Key paths through to-many relationships and KVC's collection operators, with Apple's rules for nulls and empty
// collections (docs/MODEL.md#collection-operators):
//   `employees.name`            the array of each element's name (a non-object element gives null)
//   `employees.@count`          the number of elements
//   `employees.@sum.salary`     sum, null counted as 0; empty: 0 (int when every value is an int); other
//                               non-numbers are refused by strict evaluation (get, subscribe), skipped otherwise
//   `numbers.@sum.self`         `self` after an operator: the elements themselves
//   `employees.@avg.salary`     average, null counted as 0; empty: null
//   `employees.@min.salary`     smallest non-null value (numbers, or strings); empty or all null: null; `@max` alike
//   `@unionOfObjects.p`         every element's value, nulls skipped; `@distinctUnionOfObjects.p` without repeats
//   `@unionOfArrays.p`          the elements' arrays concatenated, nulls skipped; `@distinctUnionOfArrays.p` and
//   `@distinctUnionOfSets.p`    without repeats (first occurrence order)

/// The collection operators kvod knows.
public enum CollectionOperator: String, Sendable, CaseIterable {
    case count = "@count"
    case sum = "@sum"
    case avg = "@avg"
    case min = "@min"
    case max = "@max"
    case unionOfObjects = "@unionOfObjects"
    case distinctUnionOfObjects = "@distinctUnionOfObjects"
    case unionOfArrays = "@unionOfArrays"
    case distinctUnionOfArrays = "@distinctUnionOfArrays"
    case distinctUnionOfSets = "@distinctUnionOfSets"

    /// Whether the operator needs a key path after it (all but `@count`).
    var takesKeyPath: Bool { self != .count }

    /// Applies the operator to the values the right-hand key path gave for each element (or to the elements
    /// themselves for `@count`). A sum or average whose value a double cannot hold (past ±1.8e308) is null, as a
    /// computed key's arithmetic is (docs/MODEL.md#numbers-out-of-range); a sum of ints past Int64 is a double.
    func apply<C: Collection>(to values: C) -> Value where C.Element == Value {
        switch self {
        case .count:
            return .int(Int64(values.count))
        case .sum, .avg:
            var intSum: Int64 = 0
            var doubleSum = 0.0
            var allInts = true
            for value in values {
                switch value {
                case .int(let number):
                    let (sum, overflow) = intSum.addingReportingOverflow(number)
                    if overflow { allInts = false }
                    intSum = sum
                    doubleSum += Double(number)
                case .double(let number):
                    allInts = false
                    doubleSum += number
                default:
                    continue  // null (and non-numbers) count as 0
                }
            }
            if self == .sum && allInts { return .int(intSum) }
            let count = self == .avg ? values.count : 1
            if count == 0 { return .null }
            if doubleSum.isFinite { return .double(doubleSum / Double(count)) }
            // The running sum overflowed: sum again scaled down by 2^64 (exact: a power of two), then divide and
            // scale back; what still overflows is beyond a double.
            var scaledSum = 0.0
            for value in values { scaledSum += (value.numericValue ?? 0) * Self.downScale }
            let result = scaledSum / Double(count) * Self.upScale
            return result.isFinite ? .double(result) : .null
        case .min, .max:
            var best: Value?
            for value in values where !value.isNull {
                guard let current = best else {
                    best = value
                    continue
                }
                guard let order = Self.compare(value, current) else { continue }
                if (self == .min && order < 0) || (self == .max && order > 0) { best = value }
            }
            return best ?? .null
        case .unionOfObjects:
            return .array(values.filter { !$0.isNull })
        case .distinctUnionOfObjects:
            return .array(Self.distinct(values.filter { !$0.isNull }))
        case .unionOfArrays:
            return .array(values.flatMap(Self.elements))
        case .distinctUnionOfArrays, .distinctUnionOfSets:
            return .array(Self.distinct(values.flatMap(Self.elements)))
        }
    }

    private static let downScale = 0x1p-64
    private static let upScale = 0x1p64

    private static func elements(_ value: Value) -> [Value] {
        if case .array(let elements) = value { return elements.filter { !$0.isNull } }
        return []
    }

    static func distinct<S: Sequence>(_ values: S) -> [Value] where S.Element == Value {
        var seen = Set<Value>()
        return values.filter { seen.insert($0).inserted }
    }

    /// -1, 0, 1 for comparable values (numbers with numbers, strings with strings), else nil.
    static func compare(_ lhs: Value, _ rhs: Value) -> Int? {
        switch (lhs, rhs) {
        case (.int(let left), .int(let right)): return left < right ? -1 : left == right ? 0 : 1
        case (.string(let left), .string(let right)): return left < right ? -1 : left == right ? 0 : 1
        default:
            guard let left = lhs.numericValue, let right = rhs.numericValue else { return nil }
            return left < right ? -1 : left == right ? 0 : 1
        }
    }
}
