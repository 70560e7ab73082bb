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
    /// Evaluates `keys` starting from `start`. Leniently (no `strict` path): through a missing object or a
    /// non-object the result is null, and so is a path a collection operator cannot apply to. With a collector,
    /// records triggers; `isObserved` says whether the keys are an observed path's own (their last key is then
    /// `direct`) or a dependency's.
    /// - Parameter strict: the whole path the keys belong to: an unknown collection operator or one missing its
    ///   right-hand key path, a key a typed class does not declare behind a to-many relationship, `@sum`/`@avg` over
    ///   values that are not numbers, and an operator or key applied to a scalar throw instead (`get`, `subscribe`).
    ///   Missing and null intermediates still read as null; so do scalar ones unless `scalarsAreErrors` (`get`
    ///   refuses them, `subscribe` allows them: the path may come alive later).
    func evaluate(
        _ keys: ArraySlice<String>, from start: Value, collector: TriggerCollector? = nil, isObserved: Bool = false,
        strict: KeyPath? = nil, scalarsAreErrors: Bool = true
    ) throws(GraphError) -> Value {
        var current = start
        var isSet = false  // whether `current` came from a set relationship (`set<T>`)
        var elementType: PropertyType?  // the declared element type of the collection in `current`, if any
        var index = keys.startIndex
        while index < keys.endIndex {
            let key = keys[index]
            if key.utf8.first == UInt8(ascii: "@") {
                guard let op = CollectionOperator(rawValue: key) else {
                    if let strict { throw GraphError.undefinedKey(path: strict.prefixDescription(index + 1)) }
                    return .null
                }
                guard case .array(let elements) = current else {
                    if let strict, scalarsAreErrors, !current.isNull {
                        throw GraphError.typeMismatch(
                            path: strict.prefixDescription(index + 1), reason: "a collection operator needs a collection")
                    }
                    return .null
                }
                if !op.takesKeyPath { return op.apply(to: elements) }
                let rest = keys[(index + 1)...]
                guard let first = rest.first else {
                    if let strict { throw GraphError.undefinedKey(path: strict.prefixDescription(index + 1) + ".<key path>") }
                    return .null
                }
                // `@sum.self`: the elements themselves (KVC's `self`, as on any NSObject).
                if first == "self" {
                    try Self.checkNumbers(elements, for: op, strict: strict, keyIndex: index + 1)
                    return op.apply(to: elements)
                }
                if let strict { try self.checkElementKey(first, of: elementType, path: strict, keyIndex: index + 1) }
                let values = try self.evaluateEach(
                    elements, rest, collector: collector, strict: strict, scalarsAreErrors: scalarsAreErrors)
                try Self.checkNumbers(values, for: op, strict: strict, keyIndex: index + 1)
                return op.apply(to: values)
            }
            switch current {
            case .object(let id):
                guard let object = self.objects[id] else { return .null }
                let isLast = index == keys.endIndex - 1
                // Looked up here only when checking or collecting (`read` looks it up too; notifications take this
                // path once per change and observed path).
                let property = strict != nil || collector != nil ? object.objectClass.property(key) : nil
                if let strict, property == nil, !object.objectClass.isOpen {
                    throw GraphError.undefinedKey(path: strict.prefixDescription(index + 1))
                }
                if let collector {
                    let touch = Touch(object: id, key: key)
                    collector.record(touch, isLast ? (isObserved ? .direct : .leaf) : .route)
                    if let computed = property?.computed, collector.visiting.insert(touch).inserted {
                        for dependency in computed.dependencies {
                            let dependencyKeys = dependency.split(separator: ".").map(String.init)
                            _ = try? self.evaluate(dependencyKeys[...], from: current, collector: collector)
                        }
                        collector.visiting.remove(touch)
                    }
                }
                current = self.read(object, key)
                index += 1
                // A collection with keys still to apply: whether it is a set, and its declared element type.
                (isSet, elementType) = (false, nil)
                if case .array = current, index < keys.endIndex {
                    switch (property ?? object.objectClass.property(key))?.stored?.type {
                    case .set(let element)?: (isSet, elementType) = (true, element)
                    case .array(let element)?: elementType = element
                    default: break
                    }
                }
            case .array(let elements):
                // A to-many relationship with keys left: the rest of the path applies to each element; through a set
                // the results are a set too (distinct, in first-seen order), as `valueForKeyPath:` on an NSSet.
                let rest = keys[index...]
                if let strict { try self.checkElementKey(keys[index], of: elementType, path: strict, keyIndex: index) }
                if let strict, scalarsAreErrors, let scalar = elements.first(where: { !$0.isNull && !$0.isObjectReference }) {
                    throw GraphError.typeMismatch(
                        path: strict.prefixDescription(index), reason: "an array of \(scalar.typeName) has no keys")
                }
                let mapped = try self.evaluateEach(
                    elements, rest, collector: collector, strict: strict, scalarsAreErrors: scalarsAreErrors)
                return .array(isSet ? CollectionOperator.distinct(mapped) : mapped)
            case .null:
                return .null
            default:
                if let strict, scalarsAreErrors {
                    throw GraphError.typeMismatch(
                        path: strict.prefixDescription(index), reason: "\(current.typeName) is not an object")
                }
                return .null
            }
        }
        return current
    }

    /// Strictly, `@sum` and `@avg` take numbers (and nulls) only.
    private static func checkNumbers<C: Collection>(
        _ values: C, for op: CollectionOperator, strict: KeyPath?, keyIndex: Int
    ) throws(GraphError) where C.Element == Value {
        guard let strict, op == .sum || op == .avg,
            let odd = values.first(where: { !$0.isNull && $0.numericValue == nil })
        else { return }
        throw GraphError.typeMismatch(
            path: strict.prefixDescription(keyIndex), reason: "\(op.rawValue) needs numbers, got \(odd.typeName)")
    }

    /// `keys` evaluated from each element of a collection.
    private func evaluateEach(
        _ elements: ValueList, _ keys: ArraySlice<String>, collector: TriggerCollector?, strict: KeyPath?,
        scalarsAreErrors: Bool
    ) throws(GraphError) -> [Value] {
        var values: [Value] = []
        values.reserveCapacity(elements.count)
        for element in elements {
            values.append(
                try self.evaluate(keys, from: element, collector: collector, strict: strict, scalarsAreErrors: scalarsAreErrors))
        }
        return values
    }

    /// A key applied to a collection's elements must exist on its declared element class (when typed and not open),
    /// even while the collection is empty: `undefinedKey` up to `keys[keyIndex]` otherwise.
    private func checkElementKey(
        _ key: String, of elementType: PropertyType?, path: KeyPath, keyIndex: Int
    ) throws(GraphError) {
        guard let elementType, let elementClass = self.model.objectClass(for: elementType), !elementClass.isOpen,
            elementClass.property(key) == nil
        else { return }
        throw GraphError.undefinedKey(path: path.prefixDescription(keyIndex + 1))
    }

    /// The value an observer of `keyPath` sees now (lenient: never fails).
    func resolve(_ keyPath: KeyPath) -> Value {
        guard self.objects[keyPath.origin] != nil else { return .null }
        return (try? self.evaluate(keyPath.keys[...], from: .object(keyPath.origin))) ?? .null
    }

    /// Resolves `keyPath` and returns the triggers it goes through.
    func walk(_ keyPath: KeyPath, triggers: inout [Touch: TriggerRole]) -> Value {
        guard self.objects[keyPath.origin] != nil else { return .null }
        let collector = TriggerCollector()
        let value =
            (try? self.evaluate(keyPath.keys[...], from: .object(keyPath.origin), collector: collector, isObserved: true))
            ?? .null
        triggers = collector.triggers
        return value
    }

    /// Reads a dotted key path relative to `object`, leniently (computed keys' `read`).
    func read(relativePath path: String, from object: GraphObject) -> Value {
        let keys = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return (try? self.evaluate(keys[...], from: .object(object.id))) ?? .null
    }
}
