// The one way the graph changes: `commit` takes the (object, key) pairs a mutation touches and a closure that
// performs it, and brackets it with KVO notifications (ChangeBracket.swift): every prior notification (in
// subscription order) before the change, every after notification (in reverse order) once it happened, each
// observer once per change. Manual notification (`willChangeValue`/`didChangeValue`) opens and closes brackets
// itself. Garbage collection of unreachable objects runs here too, after the notifications.

extension Graph {
    /// Applies a mutation and notifies its observers; returns the mutation's seq. Inside an open manual bracket the
    /// mutation shares the bracket's seq.
    /// - Parameters:
    ///   - touches: every (object, key) the mutation changes, known before it runs.
    ///   - apply: performs the mutation; it must not fail (validate first).
    func commit(_ touches: [Touch], apply: () -> Void) -> UInt64 {
        self.commit(mutations: touches.map { Mutation(touch: $0) }, apply: apply)
    }

    /// Applies a mutation described by `mutations` (with collection details) and notifies; returns the seq.
    func commit(mutations: [Mutation], apply: () -> Void) -> UInt64 {
        if mutations.count == 1 { return self.commit(mutation: mutations[0], apply: apply) }  // ChangeBracket.swift
        let queries = self.hasLiveQueries ? self.openQueryBracket(mutations) : nil  // Graph+LiveQuery.swift
        let seq = self.takeSeq()
        if mutations.isEmpty {
            apply()
        } else {
            var bracket = ChangeBracket(seq: seq, manualTouch: nil)
            self.openBracket(&bracket, mutations)
            apply()
            self.closeBracket(&bracket)
        }
        if let queries { self.closeQueryBracket(queries, seq: seq) }
        self.collectGarbageIfNeeded()
        return seq
    }

    /// The seq for a new change: the next one, or the open manual bracket's.
    func takeSeq() -> UInt64 {
        if !self.manualBrackets.isEmpty { return self.manualBrackets[self.manualBrackets.count - 1].seq }
        self.seq += 1
        return self.seq
    }

    // MARK: - Manual notification

    /// Opens a manual change bracket for `key` of `object` (`willChangeValueForKey:`): prior notifications go out
    /// now, with old values read now. Brackets nest; each must be closed by `didChangeValue` in reverse order, and
    /// nested brackets share the outermost one's seq.
    public func willChangeValue(forKey key: String, of object: ObjectID) {
        let seq = self.manualBrackets.last?.seq ?? {
            self.seq += 1
            return self.seq
        }()
        let touch = Touch(object: object, key: key)
        var bracket = ChangeBracket(seq: seq, manualTouch: touch)
        self.openBracket(&bracket, Mutation(touch: touch), manual: true)
        bracket.queries = self.hasLiveQueries ? self.openQueryBracket([Mutation(touch: touch)]) : nil
        self.manualBrackets.append(bracket)
    }

    /// Closes the innermost manual bracket (`didChangeValueForKey:`): re-targets, reads new values and sends after
    /// notifications. Calling it without a matching `willChangeValue` is a programmer error.
    public func didChangeValue(forKey key: String, of object: ObjectID) {
        guard var bracket = self.manualBrackets.popLast() else {
            preconditionFailure("didChangeValue(forKey: \(key)) without a matching willChangeValue")
        }
        precondition(
            bracket.manualTouch == Touch(object: object, key: key),
            "didChangeValue(forKey: \(key)) does not match the innermost willChangeValue")
        self.closeBracket(&bracket)
        if let queries = bracket.queries { self.closeQueryBracket(queries, seq: bracket.seq) }
        if self.manualBrackets.isEmpty { self.collectGarbageIfNeeded() }
    }

    // MARK: - Garbage collection

    /// Frees objects no longer reachable from the root or from an observation's origin, once enough were created
    /// since the last collection that the cost is amortized (mark and sweep, so cycles are freed too).
    func collectGarbageIfNeeded() {
        guard self.allocatedSinceCollection > max(1024, self.objects.count / 2), self.manualBrackets.isEmpty else {
            return
        }
        self.collectGarbage()
    }

    /// Frees every object not reachable from the root, an observation's origin or a key with a deadline.
    public func collectGarbage() {
        self.allocatedSinceCollection = 0
        var marked = Set<ObjectID>()
        var stack: [ObjectID] = [.root]
        stack.append(contentsOf: self.registry.paths.keys.map(\.origin))
        // An object with a deadline lives until it expires, reachable or not: when collection runs differs between
        // kvod (a forked snapshot collects in the child only) and a journal replay, and the journaled expiry
        // (`set $ID.key null`) must find its object in both (Graph+Expiry.swift).
        stack.append(contentsOf: self.deadlines.objects)
        while let id = stack.popLast() {
            guard marked.insert(id).inserted, let object = self.objects[id] else { continue }
            object.forEachReference { stack.append($0) }
        }
        if marked.count == self.objects.count { return }
        self.objects.removeAll { !marked.contains($0.id) }
    }
}
