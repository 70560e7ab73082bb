// One total order over values, consistent with their equality: the order a set keeps its members in (ValueList) and
// the order sorting falls back on. Kinds first, then within a kind:
//
//     null < false < true < numbers < strings < arrays < objects < records
//
// Numbers compare by their exact mathematical value, ints and doubles alike (no rounding through a double: 2^53 + 1
// is above 2^53 as a double); an int and a double of the same value (which are different values) put the int first.
// Strings compare as Swift compares them (Unicode canonical equivalence, the same as their equality); arrays
// element by element, a prefix first; objects by id; records by id, then keys, then values.

extension Value {
    /// -1, 0 or 1: `lhs` before, equal to, or after `rhs` in the total order (0 exactly when they are equal).
    public static func totalOrder(_ lhs: Value, _ rhs: Value) -> Int {
        let (leftRank, rightRank) = (lhs.orderRank, rhs.orderRank)
        if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
        switch (lhs, rhs) {
        case (.int(let left), .int(let right)): return left < right ? -1 : left == right ? 0 : 1
        case (.double(let left), .double(let right)): return left < right ? -1 : left == right ? 0 : 1
        case (.int(let left), .double(let right)):
            let order = Self.compare(left, right)
            return order != 0 ? order : -1
        case (.double(let left), .int(let right)):
            let order = -Self.compare(right, left)
            return order != 0 ? order : 1
        case (.string(let left), .string(let right)): return left < right ? -1 : left == right ? 0 : 1
        case (.array(let left), .array(let right)):
            var rightElements = right.makeIterator()
            for element in left {
                guard let other = rightElements.next() else { return 1 }
                let order = Self.totalOrder(element, other)
                if order != 0 { return order }
            }
            return rightElements.next() == nil ? 0 : -1
        case (.object(let left), .object(let right)): return left < right ? -1 : left == right ? 0 : 1
        case (.record(let left), .record(let right)):
            let leftID = left.id ?? -1
            let rightID = right.id ?? -1
            if leftID != rightID { return leftID < rightID ? -1 : 1 }
            let keys = Self.totalOrder(.array(left.keys.map(Value.string)), .array(right.keys.map(Value.string)))
            return keys != 0 ? keys : Self.totalOrder(.array(left.values), .array(right.values))
        default:
            // Same rank: null with null, or bools.
            if case .bool(let left) = lhs, case .bool(let right) = rhs { return left == right ? 0 : left ? 1 : -1 }
            return 0
        }
    }

    /// True when `lhs` comes before `rhs` in the total order (a `sort(by:)` predicate).
    public static func totalOrderPrecedes(_ lhs: Value, _ rhs: Value) -> Bool { self.totalOrder(lhs, rhs) < 0 }

    private var orderRank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int, .double: 2
        case .string: 3
        case .array: 4
        case .object: 5
        case .record: 6
        }
    }

    /// -1, 0 or 1 comparing an int with a finite double exactly.
    static func compare(_ int: Int64, _ double: Double) -> Int {
        // Every double at or above 2^63 is above any Int64, and below -2^63 is below; in between, the double's
        // integral part fits an Int64 exactly.
        if double >= 9_223_372_036_854_775_808.0 { return -1 }
        if double < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = double.rounded(.down)
        let integral = Int64(whole)
        if int != integral { return int < integral ? -1 : 1 }
        return whole == double ? 0 : -1  // equal integral parts: a fraction puts the double above
    }
}
