// TEMPORARY stand-in for the predicate language (branch `predicate`), so this branch builds: `key == value` and
// `key > value` only. Removed when the real one is merged.
public indirect enum Predicate: Sendable, Equatable, CustomStringConvertible {
    case truePredicate
    case compare(key: [String], op: String, value: Value)
    case and(Predicate, Predicate)

    public init(parsing text: String) throws(PredicateSyntaxError) {
        let parts = text.split(separator: " ").map(String.init)
        if parts == ["TRUEPREDICATE"] || text.isEmpty { self = .truePredicate; return }
        guard parts.count == 3 else { throw PredicateSyntaxError(column: 1, message: "stub: KEY OP NUMBER") }
        let value: Value = Int64(parts[2]).map(Value.int) ?? Double(parts[2]).map(Value.double) ?? .string(parts[2].trimmingCharacters(in: "\"'"))
        let keys = parts[0] == "SELF" ? [] : parts[0].split(separator: ".").map(String.init)
        self = .compare(key: keys, op: parts[1], value: value)
    }

    public var description: String {
        switch self {
        case .truePredicate: "TRUEPREDICATE"
        case .compare(let key, let op, let value): "\(key.joined(separator: ".")) \(op) \(value)"
        case .and(let a, let b): "(\(a)) AND (\(b))"
        }
    }

    public var variables: Set<String> { [] }

    public var keyPaths: [[String]] {
        switch self {
        case .truePredicate: []
        case .compare(let key, _, _): [key]
        case .and(let a, let b): a.keyPaths + b.keyPaths
        }
    }
}

public struct PredicateSyntaxError: Error, Equatable, Sendable {
    public var column: Int
    public var message: String
    public init(column: Int, message: String) {
        self.column = column
        self.message = message
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text = text.dropFirst() }
        while let last = text.last, set.contains(last) { text = text.dropLast() }
        return String(text)
    }
}

extension Graph {
    func checkPredicate(_ predicate: Predicate, elementClass: ObjectClass?, variables: [String: Value], path: KeyPath) throws(GraphError) {
        guard let elementClass, !elementClass.isOpen else { return }
        for keys in predicate.keyPaths where !keys.isEmpty && elementClass.property(keys[0]) == nil {
            throw GraphError.undefinedKey(path: path.description + "." + keys.joined(separator: "."))
        }
    }

    func matches(_ predicate: Predicate, element: Value, variables: [String: Value], collector: TriggerCollector?) -> Bool {
        switch predicate {
        case .truePredicate: return true
        case .and(let a, let b):
            return self.matches(a, element: element, variables: variables, collector: collector)
                && self.matches(b, element: element, variables: variables, collector: collector)
        case .compare(let key, let op, let value):
            let actual = (try? self.evaluate(key[...], from: element, collector: collector)) ?? .null
            let order = Value.totalOrder(actual, value)
            switch op {
            case "==": return order == 0
            case "!=": return order != 0
            case ">": return actual.numericValue != nil && order > 0
            case "<": return actual.numericValue != nil && order < 0
            default: return false
            }
        }
    }
}
