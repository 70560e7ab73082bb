// The one way the graph changes: `commit` takes the (object, key) pairs a mutation touches and a closure that
// performs it, and brackets it with KVO notifications: every prior notification (in subscription order) before the
// change, every after notification (in reverse order) once it happened, each observer once per change. Garbage
// collection of unreachable objects runs here too, after the notifications.

extension Graph {
    /// Applies a mutation and notifies its observers; returns the mutation's seq.
    /// - Parameters:
    ///   - touches: every (object, key) the mutation changes, known before it runs.
    ///   - apply: performs the mutation; it must not fail (validate first).
    func commit(_ touches: [Touch], apply: () -> Void) -> UInt64 {
        self.seq += 1
        let seq = self.seq
        let registry = self.registry
        var affected: [ObservedPath] = []
        if !registry.triggerIndex.isEmpty {
            registry.commitCounter += 1
            let mark = registry.commitCounter
            for touch in touches {
                guard let paths = registry.triggerIndex[touch] else { continue }
                for path in paths {
                    let isRoute = path.triggers[touch] == false
                    if path.commitMark != mark {
                        path.commitMark = mark
                        path.needsRetarget = isRoute
                        affected.append(path)
                    } else if isRoute {
                        path.needsRetarget = true
                    }
                }
            }
        }
        if affected.isEmpty {
            apply()
            self.collectGarbageIfNeeded()
            return seq
        }

        // Before: read old values, then send prior notifications in subscription order.
        for path in affected {
            path.payloadID = registry.nextPayloadID()
            path.oldValue = path.options.contains(.old) ? self.export(self.resolve(path.keyPath)) : .null
        }
        let ordered = Self.subscriptionOrder(affected)
        for observer in ordered where observer.options.contains(.prior) && observer.isActive {
            let path = observer.path
            observer.handler(
                Change(
                    observation: observer.id, kind: .setting, isPrior: true, isInitial: false, new: nil,
                    old: observer.options.contains(.old) ? path.oldValue : nil, indexes: nil, seq: seq,
                    payloadID: path.payloadID))
        }

        apply()

        // After: re-target paths whose route changed, read new values, notify in reverse subscription order.
        for path in affected {
            if path.needsRetarget {
                var triggers: [Touch: Bool] = [:]
                let value = self.walk(path.keyPath, triggers: &triggers)
                registry.setTriggers(triggers, for: path)
                path.newValue = path.options.contains(.new) ? self.export(value) : .null
            } else {
                path.newValue = path.options.contains(.new) ? self.export(self.resolve(path.keyPath)) : .null
            }
            path.payloadID = registry.nextPayloadID()
        }
        for observer in ordered.reversed() where observer.isActive {
            let path = observer.path
            observer.handler(
                Change(
                    observation: observer.id, kind: .setting, isPrior: false, isInitial: false,
                    new: observer.options.contains(.new) ? path.newValue : nil,
                    old: observer.options.contains(.old) ? path.oldValue : nil, indexes: nil, seq: seq,
                    payloadID: path.payloadID))
        }
        for path in affected {
            path.oldValue = .null
            path.newValue = .null
        }
        self.collectGarbageIfNeeded()
        return seq
    }

    /// The observers of `paths` merged into subscription order.
    private static func subscriptionOrder(_ paths: [ObservedPath]) -> [Observer] {
        if paths.count == 1 { return paths[0].observers }
        return paths.flatMap(\.observers).sorted { $0.id < $1.id }
    }

    // MARK: - Garbage collection

    /// Frees objects no longer reachable from the root or from an observation's origin, once enough were created
    /// since the last collection that the cost is amortized (mark and sweep, so cycles are freed too).
    func collectGarbageIfNeeded() {
        guard self.allocatedSinceCollection > max(1024, self.objects.count / 2) else { return }
        self.collectGarbage()
    }

    /// Frees every object not reachable from the root or an observation's origin.
    public func collectGarbage() {
        self.allocatedSinceCollection = 0
        var marked = Set<ObjectID>()
        var stack: [ObjectID] = [.root]
        stack.append(contentsOf: self.registry.paths.keys.map(\.origin))
        while let id = stack.popLast() {
            guard marked.insert(id).inserted, let object = self.objects[id] else { continue }
            for key in object.keys {
                Self.references(in: object.value(forKey: key) ?? .null, into: &stack)
            }
        }
        if marked.count == self.objects.count { return }
        self.objects = self.objects.filter { marked.contains($0.key) }
    }

    private static func references(in value: Value, into stack: inout [ObjectID]) {
        switch value {
        case .object(let id): stack.append(id)
        case .array(let elements): for element in elements { Self.references(in: element, into: &stack) }
        default: return
        }
    }
}
