// One will/did bracket: the observed paths a change reaches, their values before it, and the observers to notify,
// in order. Opening a bracket sends the prior notifications; closing it re-targets, reads new values and sends the
// after notifications in reverse order. Automatic changes open and close one bracket around their mutation; manual
// notification (`willChangeValue`/`didChangeValue`) nests brackets as the caller does.
//
// Order: observers go by the first op (of a transaction) that reaches their path, then by subscription; a single
// change is one op, so that is plain subscription order. Observers of a collection key that the change mutated
// directly get its kind, indexes and values; everyone else gets a `setting` change with whole values.

/// The state of one open change bracket.
struct ChangeBracket {
    let mutations: [Mutation]
    let seq: UInt64
    /// The affected paths, each once.
    var paths: [ObservedPath] = []
    /// Per path (parallel to `paths`): whether its route changed, its collection detail, its old value, payload.
    var needsRetarget: [Bool] = []
    var details: [CollectionDetail?] = []
    var oldValues: [Value] = []
    var oldDetailValues: [[Value]] = []
    var payloadIDs: [UInt64] = []
    /// The observers to notify, in order. With one path this is that path's own array (shared, not copied).
    var observers: [Observer] = []
    /// Each observer's path index, parallel to `observers`; empty when there is one path (index 0).
    var observerPaths: [Int] = []

    var isEmpty: Bool { self.paths.isEmpty }
}

extension Graph {
    /// Finds who a change reaches, reads old values and sends prior notifications.
    func openBracket(_ mutations: [Mutation], seq: UInt64) -> ChangeBracket {
        var bracket = ChangeBracket(mutations: mutations, seq: seq)
        let registry = self.registry
        guard !registry.triggerIndex.isEmpty else { return bracket }
        registry.commitCounter += 1
        let mark = registry.commitCounter
        var firstOps: [Int] = []
        var directHits: [Int] = []
        for mutation in mutations {
            guard let paths = registry.triggerIndex[mutation.touch] else { continue }
            for path in paths {
                let role = path.triggers[mutation.touch] ?? .leaf
                if path.commitMark != mark {
                    path.commitMark = mark
                    path.bracketIndex = bracket.paths.count
                    bracket.paths.append(path)
                    bracket.needsRetarget.append(role == .route)
                    bracket.details.append(role == .direct ? mutation.detail : nil)
                    directHits.append(role == .direct ? 1 : 0)
                    firstOps.append(mutation.op)
                } else {
                    let index = path.bracketIndex
                    if role == .route { bracket.needsRetarget[index] = true }
                    if role == .direct {
                        // Hit directly twice (a transaction): one detail cannot say both, so send whole values.
                        directHits[index] += 1
                        bracket.details[index] = directHits[index] == 1 ? mutation.detail : nil
                    }
                }
            }
        }
        if bracket.paths.isEmpty { return bracket }

        for (index, path) in bracket.paths.enumerated() {
            bracket.payloadIDs.append(registry.nextPayloadID())
            let wantsOld = path.options.contains(.old)
            if let detail = bracket.details[index] {
                bracket.oldValues.append(.null)
                bracket.oldDetailValues.append(wantsOld ? detail.old.map { self.export($0) } : [])
            } else {
                bracket.oldValues.append(wantsOld ? self.export(self.resolve(path.keyPath)) : .null)
                bracket.oldDetailValues.append([])
            }
        }
        if bracket.paths.count == 1 {
            bracket.observers = bracket.paths[0].observers
        } else {
            var pairs: [(observer: Observer, path: Int)] = []
            for (index, path) in bracket.paths.enumerated() {
                pairs.append(contentsOf: path.observers.map { ($0, index) })
            }
            pairs.sort { (firstOps[$0.path], $0.observer.id) < (firstOps[$1.path], $1.observer.id) }
            bracket.observers = pairs.map(\.observer)
            bracket.observerPaths = pairs.map(\.path)
        }
        let single = bracket.observerPaths.isEmpty
        for position in bracket.observers.indices {
            let observer = bracket.observers[position]
            guard observer.options.contains(.prior) && observer.isActive else { continue }
            let index = single ? 0 : bracket.observerPaths[position]
            observer.handler(self.change(for: observer, bracket, index, isPrior: true, new: .null))
        }
        return bracket
    }

    /// Re-targets paths whose route changed, reads new values and sends after notifications in reverse order.
    func closeBracket(_ bracket: ChangeBracket) {
        guard !bracket.isEmpty else { return }
        let registry = self.registry
        var newValues: [Value] = []
        var payloadIDs: [UInt64] = []
        newValues.reserveCapacity(bracket.paths.count)
        for (index, path) in bracket.paths.enumerated() {
            let wantsNew = path.options.contains(.new)
            let value: Value
            if bracket.needsRetarget[index] {
                var triggers: [Touch: TriggerRole] = [:]
                value = self.walk(path.keyPath, triggers: &triggers)
                registry.setTriggers(triggers, for: path)
            } else if let detail = bracket.details[index] {
                value = wantsNew ? .array(detail.new) : .null
            } else {
                value = wantsNew ? self.resolve(path.keyPath) : .null
            }
            if let detail = bracket.details[index] {
                newValues.append(wantsNew ? .array(detail.new.map { self.export($0) }) : .null)
            } else {
                newValues.append(wantsNew ? self.export(value) : .null)
            }
            payloadIDs.append(registry.nextPayloadID())
        }
        let single = bracket.observerPaths.isEmpty
        for position in bracket.observers.indices.reversed() {
            let observer = bracket.observers[position]
            guard observer.isActive else { continue }
            let index = single ? 0 : bracket.observerPaths[position]
            var change = self.change(for: observer, bracket, index, isPrior: false, new: newValues[index])
            change.payloadID = payloadIDs[index]
            observer.handler(change)
        }
    }

    /// The notification one observer gets, shaped by its options and by the collection detail when it has one.
    private func change(
        for observer: Observer, _ bracket: ChangeBracket, _ index: Int, isPrior: Bool, new: Value
    ) -> Change {
        let options = observer.options
        guard let detail = bracket.details[index] else {
            return Change(
                observation: observer.id, kind: .setting, isPrior: isPrior, isInitial: false,
                new: !isPrior && options.contains(.new) ? new : nil,
                old: options.contains(.old) ? bracket.oldValues[index] : nil, indexes: nil, seq: bracket.seq,
                payloadID: bracket.payloadIDs[index])
        }
        // An insertion has no old, a removal no new; values are always arrays.
        let hasOld = detail.kind != .insertion && options.contains(.old)
        let hasNew = !isPrior && detail.kind != .removal && options.contains(.new)
        return Change(
            observation: observer.id, kind: detail.kind, isPrior: isPrior, isInitial: false,
            new: hasNew ? new : nil, old: hasOld ? .array(bracket.oldDetailValues[index]) : nil,
            indexes: detail.indexes, seq: bracket.seq, payloadID: bracket.payloadIDs[index])
    }
}
