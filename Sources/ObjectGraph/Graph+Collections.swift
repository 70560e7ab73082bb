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

    /// Validates a collection mutation and describes it (see `planSet`). Planning reads the collection and lists
    /// the edits; applying moves the stored collection out of its object, edits it in place and stores it back
    /// (ValueList: a node is copied only when something else still holds it — an old value a transaction's undo log
    /// keeps, say), so a mutation costs O(log n) per element it changes, never a copy of the collection.
    func planMutation(_ path: KeyPath, _ mutation: CollectionMutation) throws(GraphError) -> PlannedChange {
        let target = try self.collectionTarget(path)
        let plan = try self.plan(mutation, on: target, path: path.description)
        var mutations: [Mutation] = [Mutation(touch: Touch(object: target.object.id, key: target.key), detail: plan.detail)]
        switch target.notification {
        case .always: break
        case .onChange: if !plan.changes { mutations = [] }
        case .manual: mutations = []
        }
        let (object, key, detail, edits) = (target.object, target.key, plan.detail, plan.edits)
        return PlannedChange(
            mutations: mutations,
            apply: {
                self.recordUndo(of: key, in: object)
                var elements: ValueList
                if case .array(let stored)? = object.takeValue(forKey: key) { elements = stored } else { elements = [] }
                var new: [Value] = []
                for edit in edits {
                    switch edit {
                    case .insert(let index, let value):
                        let made = self.materialize(value)
                        elements.insert(made, at: index)
                        new.append(made)
                    case .replace(let index, let value):
                        let made = self.materialize(value)
                        elements[index] = made
                        new.append(made)
                    case .remove(let index):
                        elements.remove(at: index)
                    case .insertSorted(let value):
                        let made = self.materialize(value)
                        elements.insertSorted(made)
                        new.append(made)
                    case .removeSorted(let value):
                        elements.removeSorted(value)
                    case .whole(let members, let added):
                        elements = members
                        for value in added {
                            let made = self.materialize(value)
                            elements.insertSorted(made)
                            new.append(made)
                        }
                    }
                }
                detail.new = new
                self.store(.array(elements), forKey: key, in: object)
            },
            storedValue: nil)
    }

    // MARK: - Planning

    struct CollectionTarget {
        let object: GraphObject
        let key: String
        let elements: ValueList
        let isSet: Bool
        let elementProperty: StoredProperty?
        let property: StoredProperty?
        let notification: NotificationPolicy
    }

    /// One change to a stored collection, in the order applied. Values are as validated: records become objects
    /// when the edit applies (a new object sorts after every stored one, so a set's order holds).
    enum Edit {
        case insert(Int, Value)
        case replace(Int, Value)
        case remove(Int)
        case insertSorted(Value)
        case removeSorted(Value)
        /// A set becomes `members`, then gains `added` (the members it did not have, records among them).
        case whole(ValueList, added: [Value])
    }

    struct CollectionPlan {
        let edits: [Edit]
        let detail: CollectionDetail
        /// The collection's size afterwards.
        let count: Int
        /// Whether the collection changes (`onChange` properties notify only then).
        let changes: Bool
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
        case let other?:
            throw GraphError.typeMismatch(path: path.description, reason: "\(other) is not a collection")
        }
        let elements: ValueList
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
        let elements = target.elements
        let plan: CollectionPlan
        switch mutation {
        case .insert(let indexes, let values):
            try Self.requireOrdered(target, path)
            let pairs = try Self.sortedPairs(indexes, try self.prepareElements(values, target, path), path)
            for (offset, pair) in pairs.enumerated() where pair.index > elements.count + offset {
                throw GraphError.indexOutOfRange(path: path, index: pair.index, count: elements.count + offset)
            }
            plan = CollectionPlan(
                edits: pairs.map { .insert($0.index, $0.value) },
                detail: CollectionDetail(kind: .insertion, indexes: pairs.map(\.index), old: []),
                count: elements.count + pairs.count, changes: !pairs.isEmpty)
        case .append(let values):
            if target.isSet { return try self.plan(.union(values), on: target, path: path) }
            let prepared = try self.prepareElements(values, target, path)
            let positions = Array(elements.count..<(elements.count + prepared.count))
            plan = CollectionPlan(
                edits: zip(positions, prepared).map { .insert($0, $1) },
                detail: CollectionDetail(kind: .insertion, indexes: positions, old: []),
                count: elements.count + prepared.count, changes: !prepared.isEmpty)
        case .remove(let indexes):
            try Self.requireOrdered(target, path)
            let sorted = try Self.checkedIndexes(indexes, count: elements.count, path)
            plan = CollectionPlan(
                edits: sorted.reversed().map { .remove($0) },
                detail: CollectionDetail(kind: .removal, indexes: sorted, old: sorted.map { elements[$0] }),
                count: elements.count - sorted.count, changes: !sorted.isEmpty)
        case .replace(let indexes, let values):
            try Self.requireOrdered(target, path)
            let pairs = try Self.sortedPairs(indexes, try self.prepareElements(values, target, path), path)
            _ = try Self.checkedIndexes(pairs.map(\.index), count: elements.count, path)
            let old = pairs.map { elements[$0.index] }
            plan = CollectionPlan(
                edits: pairs.map { .replace($0.index, $0.value) },
                detail: CollectionDetail(kind: .replacement, indexes: pairs.map(\.index), old: old),
                count: elements.count, changes: zip(pairs, old).contains { $0.value != $1 })
        case .union(let values):
            try Self.requireSet(target, path)
            let added = Self.newMembers(try self.prepareElements(values, target, path), of: elements)
            plan = CollectionPlan(
                edits: added.map { .insertSorted($0) }, detail: CollectionDetail(kind: .insertion, indexes: nil, old: []),
                count: elements.count + added.count, changes: !added.isEmpty)
        case .minus(let values):
            try Self.requireSet(target, path)
            var removing = ValueList()
            var removed: [Value] = []
            for value in values where elements.sortedContains(value) && removing.insertSorted(value) != nil {
                removed.append(value)
            }
            plan = CollectionPlan(
                edits: removed.map { .removeSorted($0) },
                detail: CollectionDetail(kind: .removal, indexes: nil, old: removed),
                count: elements.count - removed.count, changes: !removed.isEmpty)
        case .intersect(let values):
            try Self.requireSet(target, path)
            // The members to keep are found by search (O(k log n)); the others by walking the set, which costs
            // what removing them costs.
            let keeping = ValueList.sortedSet(values.filter { elements.sortedContains($0) })
            var removed: [Value] = []
            if keeping.count < elements.count {
                for element in elements where !keeping.sortedContains(element) { removed.append(element) }
            }
            // Fewer removals than members kept: remove them one by one; else the set becomes the kept members.
            let edits: [Edit] =
                removed.count <= keeping.count ? removed.map { .removeSorted($0) } : [.whole(keeping, added: [])]
            plan = CollectionPlan(
                edits: removed.isEmpty ? [] : edits, detail: CollectionDetail(kind: .removal, indexes: nil, old: removed),
                count: keeping.count, changes: !removed.isEmpty)
        case .setMembers(let values):
            try Self.requireSet(target, path)
            let prepared = try self.prepareElements(values, target, path)
            let added = Self.newMembers(prepared, of: elements)
            let kept = ValueList.sortedSet(prepared.filter { elements.sortedContains($0) })
            var removed: [Value] = []
            if kept.count < elements.count {
                for element in elements where !kept.sortedContains(element) { removed.append(element) }
            }
            plan = CollectionPlan(
                edits: [.whole(kept, added: added)],
                detail: CollectionDetail(kind: .replacement, indexes: nil, old: removed),
                count: kept.count + added.count, changes: !added.isEmpty || !removed.isEmpty)
        }
        if let property = target.property, !property.rules.isEmpty {
            // Rules such as maxLength apply to the collection as it would be: most need only its size.
            do {
                for rule in property.rules {
                    switch rule {
                    case .minLength, .maxLength: try rule.check(length: plan.count)
                    default: _ = try rule.apply(to: .array(self.preview(plan.edits, on: elements)))
                    }
                }
            } catch {
                throw GraphError.validationFailed(path: path, reason: error.reason)
            }
        }
        return plan
    }

    /// The members of `values` a set does not hold yet, each once, in the order given.
    private static func newMembers(_ values: [Value], of elements: ValueList) -> [Value] {
        var seen = ValueList()
        var added: [Value] = []
        for value in values where !elements.sortedContains(value) && seen.insertSorted(value) != nil {
            added.append(value)
        }
        return added
    }

    /// The collection as `edits` would leave it (records still records), for a rule that looks at the whole value.
    private func preview(_ edits: [Edit], on elements: ValueList) -> ValueList {
        var result = elements
        for edit in edits {
            switch edit {
            case .insert(let index, let value): result.insert(value, at: index)
            case .replace(let index, let value): result[index] = value
            case .remove(let index): result.remove(at: index)
            case .insertSorted(let value): result.insertSorted(value)
            case .removeSorted(let value): result.removeSorted(value)
            case .whole(let members, let added):
                result = members
                for value in added { result.insertSorted(value) }
            }
        }
        return result
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
        var pairs: [(index: Int, value: Value)] = []
        pairs.reserveCapacity(indexes.count)
        for index in indexes.indices { pairs.append((indexes[index], values[index])) }
        if !Self.isAscending(indexes) { pairs.sort { $0.index < $1.index } }
        for position in pairs.indices.dropFirst() where pairs[position - 1].index == pairs[position].index {
            throw GraphError.invalidArgument(path: path, reason: "index \(pairs[position].index) appears twice")
        }
        if let first = pairs.first, first.index < 0 {
            throw GraphError.indexOutOfRange(path: path, index: first.index, count: 0)
        }
        return pairs
    }

    private static func isAscending(_ indexes: [Int]) -> Bool {
        for position in indexes.indices.dropFirst() where indexes[position - 1] > indexes[position] { return false }
        return true
    }

    /// Sorted, distinct indexes that all exist in a collection of `count`.
    private static func checkedIndexes(_ indexes: [Int], count: Int, _ path: String) throws(GraphError) -> [Int] {
        let sorted = Self.isAscending(indexes) ? indexes : indexes.sorted()
        for position in sorted.indices.dropFirst() where sorted[position - 1] == sorted[position] {
            throw GraphError.invalidArgument(path: path, reason: "index \(sorted[position]) appears twice")
        }
        if let bad = sorted.first(where: { $0 < 0 || $0 >= count }) {
            throw GraphError.indexOutOfRange(path: path, index: bad, count: count)
        }
        return sorted
    }
}
