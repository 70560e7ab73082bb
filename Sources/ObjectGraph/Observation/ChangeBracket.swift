// One will/did bracket: the observed paths a change reaches, their values before it, and the observers to notify,
// in order. Opening a bracket sends the prior notifications; closing it re-targets, reads new values and sends the
// after notifications in reverse order. Automatic changes open and close one bracket around their mutation; manual
// notification (`willChangeValue`/`didChangeValue`) nests brackets as the caller does.
//
// Order: observers go by the first op (of a transaction) that reaches their path, then by subscription; a single
// change is one op, so that is plain subscription order. Observers of a collection key that the change mutated
// directly get its kind, indexes and values; everyone else gets a `setting` change with whole values.
//
// Cost: a bracket allocates nothing in the common cases. A mutation of one key that reaches one path (a set of a
// key observed once, with `prior` or without, or of a dependency of one computed key) is bracketed in one function
// with its state in locals (`bracketOnePath`, inlined into `commit(mutation:)` and, for a plain set, into
// `commitPlainStore`, which builds no `Mutation`); several paths keep theirs in a `ChangeBracket` whose array is
// borrowed from the registry's pool and given back, emptied, when it closes (brackets nest: manual ones, and a sink
// that sets from inside a notification, each borrow their own). With one path the observers are that path's own
// array; only several paths build a merged observer order. A path that the change reached only as its own last key
// (the usual set) is not evaluated from its origin: its old value is that key's, read from the object once, and its
// new one is what the mutation stores when it says so (a plain set's scalar), else read once too. Every observer of
// a path gets the same `Change` value, which its sink shapes for its own options.

/// What a bracket knows about one affected path.
struct BracketPath {
    let path: ObservedPath
    /// The first op (of a transaction) that reached the path.
    let firstOp: Int
    var needsRetarget: Bool
    /// The collection detail, for a path whose own last key one mutation changed.
    var detail: CollectionDetail?
    var directHits: Int
    /// The stored key that reached the path as its own last key, while that is the only way the change reached it
    /// (and not through a manual bracket, which may name a computed key): the path's value is that key's.
    var direct: Touch?
    /// What the mutation stores at `direct`, when it said (`Mutation.stored`).
    var storedValue: Value?
    /// The old value (for a collection detail, the removed or replaced values as an array).
    var oldValue: Value = .null
    var newValue: Value = .null
    var payloadID: UInt64 = 0
    /// The union of the path's observers' options when the bracket opened.
    var options = ObservationOptions()

    init(_ entry: TriggerEntry, of mutation: Mutation, manual: Bool) {
        self.path = entry.path
        self.firstOp = mutation.op
        self.needsRetarget = entry.role == .route
        let isDirect = entry.role == .direct
        self.detail = isDirect ? mutation.detail : nil
        self.directHits = isDirect ? 1 : 0
        if isDirect && !manual && mutation.detail == nil {
            self.direct = mutation.touch
            self.storedValue = mutation.stored
        }
    }
}

/// The state of one open change bracket with per-path state (several paths, or a manual bracket).
struct ChangeBracket {
    let seq: UInt64
    /// The key a manual bracket (`willChangeValue`) was opened for; nil for a commit's.
    let manualTouch: Touch?
    /// The affected paths, each once (borrowed from the registry's pool once the first is found).
    var paths: [BracketPath] = []
    /// The observers to notify, in order. With one path this is that path's own array (shared, not copied).
    var observers: [Observer] = []
    /// Each observer's path index in `paths`, parallel to `observers`; empty when there is one path.
    var observerPaths: [Int] = []
    /// A manual bracket's live queries (Graph+LiveQuery.swift), told when it closes.
    var queries: QueryBracket?
}

extension ObservationRegistry {
    /// An empty array for a bracket's paths, with the capacity an earlier bracket left (no allocation).
    @inline(__always)
    func borrowPaths() -> [BracketPath] {
        self.pathBuffers.popLast() ?? []
    }

    /// Takes back a bracket's paths array, emptied, for the next bracket.
    @inline(__always)
    func returnPaths(_ paths: inout [BracketPath]) {
        guard paths.capacity > 0, self.pathBuffers.count < 8 else { return }
        paths.removeAll(keepingCapacity: true)
        self.pathBuffers.append(paths)
        paths = []
    }
}

extension Graph {
    // MARK: - One mutation

    /// Applies a mutation that changes one key and notifies its observers; returns the seq. `entries` are the paths
    /// the key reaches when the caller looked them up already. With one path (the usual case) the whole bracket is
    /// here, in locals: nothing allocated or copied beyond the path's values and the shared `Change`.
    func commit(mutation: Mutation, entries known: [TriggerEntry]? = nil, apply: () -> Void) -> UInt64 {
        // Live queries the mutation reaches are told after its observers, before the garbage is collected (a removed
        // element is still shown then).
        if self.hasLiveQueries, let queries = self.openQueryBracket([mutation]) {
            let seq = self.commit(mutation: mutation, entries: known, collectingGarbage: false, apply: apply)
            self.closeQueryBracket(queries, seq: seq)
            self.collectGarbageIfNeeded()
            return seq
        }
        return self.commit(mutation: mutation, entries: known, collectingGarbage: true, apply: apply)
    }

    private func commit(
        mutation: Mutation, entries known: [TriggerEntry]?, collectingGarbage: Bool, apply: () -> Void
    ) -> UInt64 {
        let seq = self.takeSeq()
        let registry = self.registry
        guard let entries = known ?? (registry.triggerIndex.isEmpty ? nil : registry.entries(for: mutation.touch))
        else {
            apply()
            if collectingGarbage { self.collectGarbageIfNeeded() }
            return seq
        }
        if entries.count != 1 {
            // Several paths: per-path state. (A trigger's entries name distinct paths: no marking needed.)
            var bracket = ChangeBracket(seq: seq, manualTouch: nil)
            self.openBracket(&bracket, mutation, entries: entries)
            apply()
            self.closeBracket(&bracket)
            if collectingGarbage { self.collectGarbageIfNeeded() }
            return seq
        }
        let touch = mutation.touch
        self.bracketOnePath(
            entries[0], seq: seq, detail: entries[0].role == .direct ? mutation.detail : nil,
            directOld: { self.objects[touch.object].map { $0.value(forKey: touch.key) ?? .null } }, apply: apply,
            directNew: { mutation.stored ?? self.objects[touch.object].map { self.export($0.value(forKey: touch.key) ?? .null) } })
        if collectingGarbage { self.collectGarbageIfNeeded() }
        return seq
    }

    /// A plain set's store of `value` (a plain scalar: its own export) under `key` of `object`, which reaches the
    /// paths `entries`, bracketed as `commit(mutation:)` brackets a one-key mutation, without a `Mutation` or a
    /// closure; returns the seq. (The caller checked: no open bracket, the key notifies automatically.)
    func commitPlainStore(_ value: Value, forKey key: String, in object: GraphObject, entries: [TriggerEntry]) -> UInt64 {
        guard entries.count == 1 else {
            return self.commit(mutation: Mutation(touch: Touch(object: object.id, key: key), stored: value), entries: entries) {
                object.setValue(value, forKey: key, modSeq: self.seq)
            }
        }
        self.seq += 1
        let seq = self.seq
        self.bracketOnePath(
            entries[0], seq: seq, detail: nil, directOld: { object.value(forKey: key) ?? .null },
            apply: { object.setValue(value, forKey: key, modSeq: seq) }, directNew: { value })
        self.collectGarbageIfNeeded()
        return seq
    }

    /// The bracket of a change that reaches one path (`entry`), with its state in locals: reads the old value and
    /// sends the prior notifications, applies the change, reads the new value (re-targeting a path whose route
    /// changed) and notifies the path's observers in reverse order. `detail` is the collection detail of a change
    /// of the path's own last key. When the change reached the path only as its own last key (`direct`, no detail),
    /// the path's old value is `directOld()` (the stored key's value as stored) and its new one `directNew()` (as
    /// exported), instead of evaluating the path from its origin; either falls back to that evaluation by returning
    /// nil. Inlined into both callers, so the closures cost nothing.
    @inline(__always)
    private func bracketOnePath(
        _ entry: TriggerEntry, seq: UInt64, detail: CollectionDetail?, directOld: () -> Value?, apply: () -> Void,
        directNew: () -> Value?
    ) {
        let registry = self.registry
        let path = entry.path
        let role = entry.role
        let options = path.options
        let isDirect = role == .direct && detail == nil
        var payloadID = registry.nextPayloadID()
        var old = Value.null
        if options.contains(.old) {
            if let detail {
                old = .array(detail.old.map { self.export($0) })
            } else if isDirect, let stored = directOld() {
                old = self.export(stored)
            } else {
                old = self.export(self.resolve(path.keyPath))
            }
        }
        if options.contains(.prior) {
            let change = Self.sharedChange(
                detail: detail, options: options, isPrior: true, new: .null, old: old, seq: seq, payloadID: payloadID)
            for observer in path.observers where observer.options.contains(.prior) && observer.isActive {
                observer.sink.observe(change, options: observer.options)
            }
        }
        apply()
        var new = Value.null
        if role == .route {
            let routed = self.retarget(path)
            if options.contains(.new) { new = self.export(routed) }
        } else if options.contains(.new) {
            if let detail {
                new = .array(detail.new.map { self.export($0) })
            } else if isDirect, let stored = directNew() {
                new = stored
            } else {
                new = self.export(self.resolve(path.keyPath))
            }
        }
        payloadID = registry.nextPayloadID()
        Observer.notifyInReverse(
            path.observers,
            Self.sharedChange(
                detail: detail, options: options, isPrior: false, new: new, old: old, seq: seq, payloadID: payloadID))
    }

    /// The value of an affected path: what the mutation stores (`stored`), when it said, at the path's own last
    /// key; that key's value (`direct`) when the change reached the path only there; else the path evaluated from
    /// its origin.
    @inline(__always)
    private func value(of path: ObservedPath, direct: Touch?, stored: Value?) -> Value {
        if let stored { return stored }
        if let direct, let object = self.objects[direct.object] { return object.value(forKey: direct.key) ?? .null }
        return self.resolve(path.keyPath)
    }

    /// Walks a path whose route changed, registers its new triggers and returns its value.
    private func retarget(_ path: ObservedPath) -> Value {
        var triggers: [Touch: TriggerRole] = [:]
        let value = self.walk(path.keyPath, triggers: &triggers)
        self.registry.setTriggers(triggers, for: path)
        return value
    }

    // MARK: - Per-path state

    /// Finds the paths one mutation reaches (`entries`, when the caller looked them up already), reads old values
    /// and sends prior notifications, into `bracket` (the caller's: a bracket is too big to copy per change).
    func openBracket(
        _ bracket: inout ChangeBracket, _ mutation: Mutation, manual: Bool = false, entries known: [TriggerEntry]? = nil
    ) {
        let registry = self.registry
        guard let entries = known ?? (registry.triggerIndex.isEmpty ? nil : registry.entries(for: mutation.touch))
        else { return }
        // A trigger's entries name distinct paths: no marking needed.
        bracket.paths = registry.borrowPaths()
        for entry in entries { bracket.paths.append(BracketPath(entry, of: mutation, manual: manual)) }
        self.finishOpening(&bracket)
    }

    /// Finds the paths the mutations reach (a transaction's, in op order), reads old values and sends prior
    /// notifications, into `bracket`.
    func openBracket(_ bracket: inout ChangeBracket, _ mutations: [Mutation]) {
        if mutations.count == 1 { return self.openBracket(&bracket, mutations[0]) }
        let registry = self.registry
        guard !registry.triggerIndex.isEmpty else { return }
        registry.commitCounter += 1
        let mark = registry.commitCounter
        for mutation in mutations {
            guard let entries = registry.entries(for: mutation.touch) else { continue }
            if bracket.paths.capacity == 0 { bracket.paths = registry.borrowPaths() }
            for entry in entries {
                let path = entry.path
                let role = entry.role
                if path.commitMark != mark {
                    path.commitMark = mark
                    path.bracketIndex = bracket.paths.count
                    bracket.paths.append(BracketPath(entry, of: mutation, manual: false))
                } else {
                    let index = path.bracketIndex
                    // Reached twice: the path's value is no longer one key's to read.
                    bracket.paths[index].direct = nil
                    bracket.paths[index].storedValue = nil
                    if role == .route { bracket.paths[index].needsRetarget = true }
                    if role == .direct {
                        // Hit directly twice: one detail cannot say both, so send whole values.
                        bracket.paths[index].directHits += 1
                        bracket.paths[index].detail = bracket.paths[index].directHits == 1 ? mutation.detail : nil
                    }
                }
            }
        }
        self.finishOpening(&bracket)
    }

    /// Reads old values, orders the observers and sends the prior notifications of the paths in `bracket.paths`.
    private func finishOpening(_ bracket: inout ChangeBracket) {
        if bracket.paths.isEmpty {
            self.registry.returnPaths(&bracket.paths)
            return
        }
        let registry = self.registry
        for index in bracket.paths.indices {
            let path = bracket.paths[index].path
            let options = path.options
            bracket.paths[index].payloadID = registry.nextPayloadID()
            bracket.paths[index].options = options
            guard options.contains(.old) else { continue }
            if let detail = bracket.paths[index].detail {
                bracket.paths[index].oldValue = .array(detail.old.map { self.export($0) })
            } else {
                let value = self.value(of: path, direct: bracket.paths[index].direct, stored: nil)
                bracket.paths[index].oldValue = self.export(value)
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
        guard bracket.paths.contains(where: { $0.options.contains(.prior) }) else { return }
        let changes = bracket.paths.map { Self.sharedChange($0, seq: bracket.seq, isPrior: true) }
        for (position, observer) in bracket.observers.enumerated()
        where observer.options.contains(.prior) && observer.isActive {
            observer.sink.observe(
                changes[bracket.observerPaths.isEmpty ? 0 : bracket.observerPaths[position]], options: observer.options)
        }
    }

    /// Re-targets paths whose route changed, reads new values and sends after notifications in reverse order.
    func closeBracket(_ bracket: inout ChangeBracket) {
        guard !bracket.paths.isEmpty else { return }
        let registry = self.registry
        for index in bracket.paths.indices {
            let path = bracket.paths[index].path
            let wantsNew = bracket.paths[index].options.contains(.new)
            var value = Value.null
            if bracket.paths[index].needsRetarget {
                value = self.retarget(path)
            } else if wantsNew && bracket.paths[index].detail == nil {
                value = self.value(of: path, direct: bracket.paths[index].direct, stored: bracket.paths[index].storedValue)
            }
            if !wantsNew {
                value = .null
            } else if let detail = bracket.paths[index].detail {
                value = .array(detail.new.map { self.export($0) })
            } else {
                value = self.export(value)
            }
            // The after notification's values: `oldValue` keeps the old, `newValue` the new.
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
        registry.returnPaths(&bracket.paths)
    }

    // MARK: - Changes

    /// The notification of one path in a bracket with per-path state.
    private static func sharedChange(_ state: BracketPath, seq: UInt64, isPrior: Bool) -> Change {
        Self.sharedChange(
            detail: state.detail, options: state.options, isPrior: isPrior, new: state.newValue, old: state.oldValue,
            seq: seq, payloadID: state.payloadID)
    }

    /// The notification of one path, as the union of its observers' options asks (each observer's sink shapes it
    /// for its own options), and by the collection detail when it has one.
    @inline(__always)
    private static func sharedChange(
        detail: CollectionDetail?, options: ObservationOptions, isPrior: Bool, new: Value, old: Value, seq: UInt64,
        payloadID: UInt64
    ) -> Change {
        guard let detail else {
            return Change(
                observation: 0, kind: .setting, isPrior: isPrior, isInitial: false,
                new: !isPrior && options.contains(.new) ? new : nil, old: options.contains(.old) ? old : nil,
                indexes: nil, seq: seq, payloadID: payloadID)
        }
        // An insertion has no old, a removal no new; values are always arrays.
        let hasOld = detail.kind != .insertion && options.contains(.old)
        let hasNew = !isPrior && detail.kind != .removal && options.contains(.new)
        return Change(
            observation: 0, kind: detail.kind, isPrior: isPrior, isInitial: false,
            new: hasNew ? new : nil, old: hasOld ? old : nil, indexes: detail.indexes, seq: seq,
            payloadID: payloadID)
    }
}
