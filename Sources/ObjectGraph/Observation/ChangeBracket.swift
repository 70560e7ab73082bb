// One will/did bracket: the observed paths a change reaches, their values before it, and the observers to notify,
// in order. Opening a bracket sends the prior notifications; closing it re-targets, reads new values and sends the
// after notifications in reverse order. Automatic changes open and close one bracket around their mutation; manual
// notification (`willChangeValue`/`didChangeValue`) nests brackets as the caller does.
//
// Order: observers go by the first op (of a transaction) that reaches their path, then by subscription; a single
// change is one op, so that is plain subscription order. Observers of a collection key that the change mutated
// directly get its kind, indexes and values; everyone else gets a `setting` change with whole values.
//
// Cost: a bracket allocates one array of per-path state (and, with several paths, the merged observer order); with
// one path it shares that path's observer array. Every observer of a path gets the same `Change` value, which its
// sink shapes for its own options.

/// What a bracket knows about one affected path.
struct BracketPath {
    let path: ObservedPath
    /// The first op (of a transaction) that reached the path.
    let firstOp: Int
    var needsRetarget: Bool
    /// The collection detail, for a path whose own last key one mutation changed.
    var detail: CollectionDetail?
    var directHits: Int
    var oldValue: Value = .null
    var oldDetailValues: [Value] = []
    var newValue: Value = .null
    var payloadID: UInt64 = 0
    /// The union of the path's observers' options when the bracket opened.
    var options = ObservationOptions()
}

/// The state of one open change bracket.
struct ChangeBracket {
    let mutations: [Mutation]
    let seq: UInt64
    /// The affected paths, each once.
    var paths: [BracketPath] = []
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
        for mutation in mutations {
            guard let entries = registry.entries(for: mutation.touch) else { continue }
            for entry in entries {
                let path = entry.path
                let role = entry.role
                if path.commitMark != mark {
                    path.commitMark = mark
                    path.bracketIndex = bracket.paths.count
                    bracket.paths.append(
                        BracketPath(
                            path: path, firstOp: mutation.op, needsRetarget: role == .route,
                            detail: role == .direct ? mutation.detail : nil, directHits: role == .direct ? 1 : 0))
                } else {
                    let index = path.bracketIndex
                    if role == .route { bracket.paths[index].needsRetarget = true }
                    if role == .direct {
                        // Hit directly twice (a transaction): one detail cannot say both, so send whole values.
                        bracket.paths[index].directHits += 1
                        bracket.paths[index].detail = bracket.paths[index].directHits == 1 ? mutation.detail : nil
                    }
                }
            }
        }
        if bracket.paths.isEmpty { return bracket }

        for index in bracket.paths.indices {
            let path = bracket.paths[index].path
            bracket.paths[index].payloadID = registry.nextPayloadID()
            bracket.paths[index].options = path.options
            guard path.options.contains(.old) else { continue }
            if let detail = bracket.paths[index].detail {
                bracket.paths[index].oldDetailValues = detail.old.map { self.export($0) }
            } else {
                bracket.paths[index].oldValue = self.export(self.resolve(path.keyPath))
            }
        }
        if bracket.paths.count == 1 {
            bracket.observers = bracket.paths[0].path.observers
        } else {
            var pairs: [(observer: Observer, path: Int)] = []
            for (index, state) in bracket.paths.enumerated() {
                pairs.append(contentsOf: state.path.observers.map { ($0, index) })
            }
            let firstOps = bracket.paths.map(\.firstOp)
            pairs.sort { (firstOps[$0.path], $0.observer.id) < (firstOps[$1.path], $1.observer.id) }
            bracket.observers = pairs.map(\.observer)
            bracket.observerPaths = pairs.map(\.path)
        }
        if bracket.observerPaths.isEmpty {
            // One path (the common case): one change, shared by every observer.
            guard bracket.paths[0].options.contains(.prior) else { return bracket }
            let change = Self.sharedChange(bracket.paths[0], seq: bracket.seq, isPrior: true)
            for observer in bracket.observers where observer.options.contains(.prior) && observer.isActive {
                observer.sink.observe(change, options: observer.options)
            }
        } else {
            let changes = bracket.paths.map { Self.sharedChange($0, seq: bracket.seq, isPrior: true) }
            for (position, observer) in bracket.observers.enumerated()
            where observer.options.contains(.prior) && observer.isActive {
                observer.sink.observe(changes[bracket.observerPaths[position]], options: observer.options)
            }
        }
        return bracket
    }

    /// Re-targets paths whose route changed, reads new values and sends after notifications in reverse order.
    func closeBracket(_ bracket: consuming ChangeBracket) {
        guard !bracket.isEmpty else { return }
        let registry = self.registry
        for index in bracket.paths.indices {
            let path = bracket.paths[index].path
            let wantsNew = bracket.paths[index].options.contains(.new)
            var value = Value.null
            if bracket.paths[index].needsRetarget {
                var triggers: [Touch: TriggerRole] = [:]
                value = self.walk(path.keyPath, triggers: &triggers)
                registry.setTriggers(triggers, for: path)
            } else if wantsNew && bracket.paths[index].detail == nil {
                value = self.resolve(path.keyPath)
            }
            if !wantsNew {
                value = .null
            } else if let detail = bracket.paths[index].detail {
                value = .array(detail.new.map { self.export($0) })
            } else {
                value = self.export(value)
            }
            // The after notification's values: `oldValue` keeps the old, `new` travels in the change below.
            bracket.paths[index].payloadID = registry.nextPayloadID()
            bracket.paths[index].newValue = value
        }
        if bracket.observerPaths.isEmpty {
            Observer.notifyInReverse(
                bracket.observers, Self.sharedChange(bracket.paths[0], seq: bracket.seq, isPrior: false))
        } else {
            let changes = bracket.paths.map { Self.sharedChange($0, seq: bracket.seq, isPrior: false) }
            for position in bracket.observers.indices.reversed() where bracket.observers[position].isActive {
                let observer = bracket.observers[position]
                observer.sink.observe(changes[bracket.observerPaths[position]], options: observer.options)
            }
        }
    }

    /// The notification of one path, as the union of its observers' options asks (each observer's sink shapes it
    /// for its own options), and by the collection detail when it has one.
    private static func sharedChange(_ state: BracketPath, seq: UInt64, isPrior: Bool) -> Change {
        let options = state.options
        guard let detail = state.detail else {
            return Change(
                observation: 0, kind: .setting, isPrior: isPrior, isInitial: false,
                new: !isPrior && options.contains(.new) ? state.newValue : nil,
                old: options.contains(.old) ? state.oldValue : nil, indexes: nil, seq: seq,
                payloadID: state.payloadID)
        }
        // An insertion has no old, a removal no new; values are always arrays.
        let hasOld = detail.kind != .insertion && options.contains(.old)
        let hasNew = !isPrior && detail.kind != .removal && options.contains(.new)
        return Change(
            observation: 0, kind: detail.kind, isPrior: isPrior, isInitial: false,
            new: hasNew ? state.newValue : nil, old: hasOld ? .array(state.oldDetailValues) : nil,
            indexes: detail.indexes, seq: seq, payloadID: state.payloadID)
    }
}
