// To-many mutations: insertion, removal and replacement at indexes for ordered collections (arrays), and the set
// mutations (union, minus, intersect, setMembers) for unordered ones, as the mutable collection proxies of KVC do.
// Each is one change with one seq, notified with its kind, indexes and values (ChangeBracket.swift).

/// A mutation of a to-many relationship.
public enum CollectionMutation: Sendable, Equatable {
    /// Inserts `values` so that they end up at `indexes` (NSArray's `insertObjects:atIndexes:`).
    case insert(indexes: [Int], values: [Value])
    /// Appends `values` at the end (for sets: the same as `union`).
    case append([Value])
    /// Removes the elements at `indexes`.
    case remove(indexes: [Int])
    /// Replaces the elements at `indexes` with `values`.
    case replace(indexes: [Int], values: [Value])
    /// Sets: adds the members not already present.
    case union([Value])
    /// Sets: removes these members (the ones present).
    case minus([Value])
    /// Sets: keeps only these members.
    case intersect([Value])
    /// Sets: makes the members exactly these (a replacement of what left by what came).
    case setMembers([Value])
}

extension Graph {
    /// Applies a collection mutation at `path` and notifies before returning.
    /// - Throws: `indexOutOfRange` (1004), `typeMismatch` when the value is not a collection of the right kind
    ///   (1005), `invalidArgument`, validation errors for the new elements; nothing changes when it throws.
    @discardableResult
    public func mutate(
        _ path: KeyPath, _ mutation: CollectionMutation, if condition: WriteCondition? = nil
    ) throws(GraphError) -> SetResult {
        if let condition { try self.check(condition, at: path) }
        let planned = try self.planMutation(path, mutation)
        return SetResult(seq: self.commit(mutations: planned.mutations) { self.apply(planned) }, storedValue: nil)
    }

    /// Validates a collection mutation and describes it (see `planSet`).
    func planMutation(_ path: KeyPath, _ mutation: CollectionMutation) throws(GraphError) -> PlannedChange {
        let target = try self.collectionTarget(path)
        let plan = try self.plan(mutation, on: target, path: path.description)
        var mutations: [Mutation] = [Mutation(touch: Touch(object: target.object.id, key: target.key), detail: plan.detail)]
        switch target.notification {
        case .always: break
        case .onChange: if plan.result == target.elements { mutations = [] }
        case .manual: mutations = []
        }
        let detail = plan.detail
        return PlannedChange(
            mutations: mutations,
            apply: {
                let stored = plan.result.map { self.materialize($0) }
                self.store(.array(stored), forKey: target.key, in: target.object)
                detail.new = plan.newPositions.map { stored[$0] }
            },
            storedValue: nil)
    }

    // MARK: - Planning

    struct CollectionTarget {
        let object: GraphObject
        let key: String
        let elements: [Value]
        let isSet: Bool
        let elementProperty: StoredProperty?
        let property: StoredProperty?
        let notification: NotificationPolicy
    }

    struct CollectionPlan {
        let result: [Value]
        let detail: CollectionDetail
        /// Where the inserted or replacing values are in `result`.
        let newPositions: [Int]
    }

    /// Finds the collection a mutation applies to: the object must exist; a missing or null collection counts as
    /// empty.
    private func collectionTarget(_ path: KeyPath) throws(GraphError) -> CollectionTarget {
        guard let key = path.keys.last else {
            throw GraphError.invalidPath(path: path.description, reason: "a mutation needs a key")
        }
        let holder = try self.value(at: KeyPath(origin: path.origin, keys: Array(path.keys.dropLast())))
        guard case .object(let id) = holder, let object = self.objects[id] else {
            throw GraphError.typeMismatch(path: path.description, reason: "no object holds '\(key)'")
        }
        let descriptor = try self.declaredProperty(key, of: object.objectClass, path: path.description)
        if descriptor?.computed != nil { throw GraphError.readOnly(path: path.description) }
        let stored = descriptor?.stored
        var isSet = false
        var elementType: PropertyType = .any
        switch stored?.type {
        case .array(let element)?: elementType = element
        case .set(let element)?:
            elementType = element
            isSet = true
        case nil, .any?: break
        default:
            throw GraphError.typeMismatch(path: path.description, reason: "\(stored!.type) is not a collection")  // invariant: stored is non-nil here
        }
        let elements: [Value]
        switch object.value(forKey: key) ?? .null {
        case .null: elements = []
        case .array(let current): elements = current
        case let other:
            throw GraphError.typeMismatch(path: path.description, reason: "\(other.typeName) is not a collection")
        }
        let automatic = object.objectClass.automaticallyNotifies(key)
        return CollectionTarget(
            object: object, key: key, elements: elements, isSet: isSet,
            elementProperty: stored == nil ? nil : StoredProperty(type: elementType),
            property: stored, notification: automatic ? stored?.notification ?? .always : .manual)
    }

    private func plan(_ mutation: CollectionMutation, on target: CollectionTarget, path: String) throws(GraphError) -> CollectionPlan {
        var elements = target.elements
        let plan: CollectionPlan
        switch mutation {
        case .insert(let indexes, let values):
            try Self.requireOrdered(target, path)
            let pairs = try Self.sortedPairs(indexes, try self.prepareElements(values, target, path), path)
            for (offset, pair) in pairs.enumerated() where pair.index > target.elements.count + offset {
                throw GraphError.indexOutOfRange(path: path, index: pair.index, count: target.elements.count + offset)
            }
            for pair in pairs { elements.insert(pair.value, at: pair.index) }
            let sorted = pairs.map(\.index)
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .insertion, indexes: sorted, old: []), newPositions: sorted)
        case .append(let values):
            if target.isSet { return try self.plan(.union(values), on: target, path: path) }
            let prepared = try self.prepareElements(values, target, path)
            let positions = Array(elements.count..<(elements.count + prepared.count))
            elements.append(contentsOf: prepared)
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .insertion, indexes: positions, old: []), newPositions: positions)
        case .remove(let indexes):
            try Self.requireOrdered(target, path)
            let sorted = try Self.checkedIndexes(indexes, count: elements.count, path)
            let old = sorted.map { elements[$0] }
            for index in sorted.reversed() { elements.remove(at: index) }
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .removal, indexes: sorted, old: old), newPositions: [])
        case .replace(let indexes, let values):
            try Self.requireOrdered(target, path)
            let pairs = try Self.sortedPairs(indexes, try self.prepareElements(values, target, path), path)
            _ = try Self.checkedIndexes(pairs.map(\.index), count: elements.count, path)
            let old = pairs.map { elements[$0.index] }
            for pair in pairs { elements[pair.index] = pair.value }
            let sorted = pairs.map(\.index)
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .replacement, indexes: sorted, old: old), newPositions: sorted)
        case .union(let values):
            try Self.requireSet(target, path)
            let present = Set(elements)
            let added = CollectionOperator.distinct(try self.prepareElements(values, target, path)).filter { !present.contains($0) }
            let positions = Array(elements.count..<(elements.count + added.count))
            elements.append(contentsOf: added)
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .insertion, indexes: nil, old: []), newPositions: positions)
        case .minus(let values):
            try Self.requireSet(target, path)
            let removing = Set(values)
            let removed = elements.filter { removing.contains($0) }
            elements.removeAll { removing.contains($0) }
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .removal, indexes: nil, old: removed), newPositions: [])
        case .intersect(let values):
            try Self.requireSet(target, path)
            let keeping = Set(values)
            let removed = elements.filter { !keeping.contains($0) }
            elements.removeAll { !keeping.contains($0) }
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .removal, indexes: nil, old: removed), newPositions: [])
        case .setMembers(let values):
            try Self.requireSet(target, path)
            let members = CollectionOperator.distinct(try self.prepareElements(values, target, path))
            let memberSet = Set(members)
            let present = Set(elements)
            let removed = elements.filter { !memberSet.contains($0) }
            let kept = elements.filter { memberSet.contains($0) }
            let added = members.filter { !present.contains($0) }
            elements = kept + added
            let positions = Array(kept.count..<elements.count)
            plan = CollectionPlan(result: elements, detail: CollectionDetail(kind: .replacement, indexes: nil, old: removed), newPositions: positions)
        }
        if let property = target.property {
            // Rules such as maxLength apply to the collection as it would be.
            do {
                for rule in property.rules { _ = try rule.apply(to: .array(plan.result)) }
            } catch {
                throw GraphError.validationFailed(path: path, reason: error.reason)
            }
        }
        return plan
    }

    private func prepareElements(_ values: [Value], _ target: CollectionTarget, _ path: String) throws(GraphError) -> [Value] {
        var prepared: [Value] = []
        prepared.reserveCapacity(values.count)
        for value in values {
            if let element = target.elementProperty {
                prepared.append(try self.validate(value, for: element, path: path, depth: 1))
            } else {
                prepared.append(try self.prepareUntyped(value, path: path, depth: 1))
            }
        }
        return prepared
    }

    private static func requireOrdered(_ target: CollectionTarget, _ path: String) throws(GraphError) {
        if target.isSet {
            throw GraphError.typeMismatch(path: path, reason: "a set has no indexes: use union, minus, intersect or setMembers")
        }
    }

    private static func requireSet(_ target: CollectionTarget, _ path: String) throws(GraphError) {
        if !target.isSet {
            throw GraphError.typeMismatch(path: path, reason: "set mutations need a set; this is an ordered collection")
        }
    }

    /// Indexes paired with values, sorted by index; lengths must match and indexes must not repeat.
    private static func sortedPairs(_ indexes: [Int], _ values: [Value], _ path: String) throws(GraphError) -> [(index: Int, value: Value)] {
        guard indexes.count == values.count else {
            throw GraphError.invalidArgument(path: path, reason: "\(indexes.count) indexes for \(values.count) values")
        }
        let pairs = zip(indexes, values).map { (index: $0, value: $1) }.sorted { $0.index < $1.index }
        for (previous, next) in zip(pairs, pairs.dropFirst()) where previous.index == next.index {
            throw GraphError.invalidArgument(path: path, reason: "index \(next.index) appears twice")
        }
        if let negative = pairs.first(where: { $0.index < 0 }) {
            throw GraphError.indexOutOfRange(path: path, index: negative.index, count: 0)
        }
        return pairs
    }

    /// Sorted, distinct indexes that all exist in a collection of `count`.
    private static func checkedIndexes(_ indexes: [Int], count: Int, _ path: String) throws(GraphError) -> [Int] {
        let sorted = indexes.sorted()
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous == next {
            throw GraphError.invalidArgument(path: path, reason: "index \(next) appears twice")
        }
        if let bad = sorted.first(where: { $0 < 0 || $0 >= count }) {
            throw GraphError.indexOutOfRange(path: path, index: bad, count: count)
        }
        return sorted
    }
}
