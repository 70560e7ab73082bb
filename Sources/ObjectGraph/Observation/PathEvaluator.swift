// The one place that knows how a key path reaches its value: through to-one relationships, fanning out over
// to-many ones (`employees.name`), through collection operators (`employees.@sum.salary`), and into computed keys.
// Observation uses it with a trigger collector, which records every (object, key) the path went through and the
// role of each (route, the path's own last key, a dependency's leaf); reads use it without.

/// Records the triggers of one observed path while it is evaluated.
final class TriggerCollector {
    var triggers: [Touch: TriggerRole] = [:]
    /// Computed keys whose dependencies are being walked (guards cycles through object references).
    var visiting = Set<Touch>()

    func record(_ touch: Touch, _ role: TriggerRole) {
        if let existing = self.triggers[touch], existing >= role { return }
        self.triggers[touch] = role
    }
}

extension Graph {
    /// Evaluates `keys` starting from `start`, leniently: through a missing object or a non-object the result is
    /// null. With a collector, records triggers; `isObserved` says whether the keys are an observed path's own
    /// (their last key is then `direct`) or a dependency's.
    func evaluate(
        _ keys: ArraySlice<String>, from start: Value, collector: TriggerCollector? = nil, isObserved: Bool = false
    ) -> Value {
        var current = start
        var index = keys.startIndex
        while index < keys.endIndex {
            let key = keys[index]
            if key.utf8.first == UInt8(ascii: "@") {
                guard let op = CollectionOperator(rawValue: key), case .array(let elements) = current else {
                    return .null
                }
                if !op.takesKeyPath { return op.apply(to: elements) }
                let rest = keys[(index + 1)...]
                return op.apply(to: elements.map { self.evaluate(rest, from: $0, collector: collector) })
            }
            switch current {
            case .object(let id):
                guard let object = self.objects[id] else { return .null }
                let isLast = index == keys.endIndex - 1
                if let collector {
                    let touch = Touch(object: id, key: key)
                    collector.record(touch, isLast ? (isObserved ? .direct : .leaf) : .route)
                    if let computed = object.objectClass.property(key)?.computed,
                        collector.visiting.insert(touch).inserted
                    {
                        for dependency in computed.dependencies {
                            let dependencyKeys = dependency.split(separator: ".").map(String.init)
                            _ = self.evaluate(dependencyKeys[...], from: current, collector: collector)
                        }
                        collector.visiting.remove(touch)
                    }
                }
                current = self.read(object, key)
                index += 1
            case .array(let elements):
                // A to-many relationship with keys left: the rest of the path applies to each element.
                let rest = keys[index...]
                return .array(elements.map { self.evaluate(rest, from: $0, collector: collector) })
            default:
                return .null
            }
        }
        return current
    }

    /// The value an observer of `keyPath` sees now (lenient: never fails).
    func resolve(_ keyPath: KeyPath) -> Value {
        guard self.objects[keyPath.origin] != nil else { return .null }
        return self.evaluate(keyPath.keys[...], from: .object(keyPath.origin))
    }

    /// Resolves `keyPath` and returns the triggers it goes through.
    func walk(_ keyPath: KeyPath, triggers: inout [Touch: TriggerRole]) -> Value {
        guard self.objects[keyPath.origin] != nil else { return .null }
        let collector = TriggerCollector()
        let value = self.evaluate(keyPath.keys[...], from: .object(keyPath.origin), collector: collector, isObserved: true)
        triggers = collector.triggers
        return value
    }

    /// Reads a dotted key path relative to `object`, leniently (computed keys' `read`).
    func read(relativePath path: String, from object: GraphObject) -> Value {
        let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return self.evaluate(keys[...], from: .object(object.id))
    }
}
