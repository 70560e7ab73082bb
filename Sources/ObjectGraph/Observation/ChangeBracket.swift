// One will/did bracket: the observed paths a change reaches, their values before it, and the observers to notify,
// in subscription order. Opening a bracket sends the prior notifications; closing it re-targets, reads new values
// and sends the after notifications in reverse order. Automatic changes open and close one bracket around their
// mutation; manual notification (`willChangeValue`/`didChangeValue`) nests brackets as the caller does.

/// The state of one open change bracket.
struct ChangeBracket {
    let touches: [Touch]
    let seq: UInt64
    /// The affected paths, each once.
    var paths: [ObservedPath] = []
    /// Per path (parallel to `paths`): whether its route changed, its old value, its payload id.
    var needsRetarget: [Bool] = []
    var oldValues: [Value] = []
    var payloadIDs: [UInt64] = []
    /// The observers to notify, in subscription order, with the index of their path.
    var observers: [(observer: Observer, path: Int)] = []

    var isEmpty: Bool { self.paths.isEmpty }
}

extension Graph {
    /// Finds who a change of `touches` reaches, reads old values and sends prior notifications.
    func openBracket(_ touches: [Touch], seq: UInt64) -> ChangeBracket {
        var bracket = ChangeBracket(touches: touches, seq: seq)
        let registry = self.registry
        guard !registry.triggerIndex.isEmpty else { return bracket }
        registry.commitCounter += 1
        let mark = registry.commitCounter
        for touch in touches {
            guard let paths = registry.triggerIndex[touch] else { continue }
            for path in paths {
                let isRoute = path.triggers[touch] == false
                if path.commitMark != mark {
                    path.commitMark = mark
                    path.bracketIndex = bracket.paths.count
                    bracket.paths.append(path)
                    bracket.needsRetarget.append(isRoute)
                } else if isRoute {
                    bracket.needsRetarget[path.bracketIndex] = true
                }
            }
        }
        if bracket.paths.isEmpty { return bracket }

        for path in bracket.paths {
            bracket.payloadIDs.append(registry.nextPayloadID())
            bracket.oldValues.append(path.options.contains(.old) ? self.export(self.resolve(path.keyPath)) : .null)
        }
        if bracket.paths.count == 1 {
            bracket.observers = bracket.paths[0].observers.map { ($0, 0) }
        } else {
            for (index, path) in bracket.paths.enumerated() {
                bracket.observers.append(contentsOf: path.observers.map { ($0, index) })
            }
            bracket.observers.sort { $0.observer.id < $1.observer.id }
        }
        for (observer, index) in bracket.observers where observer.options.contains(.prior) && observer.isActive {
            observer.handler(
                Change(
                    observation: observer.id, kind: .setting, isPrior: true, isInitial: false, new: nil,
                    old: observer.options.contains(.old) ? bracket.oldValues[index] : nil, indexes: nil,
                    seq: bracket.seq, payloadID: bracket.payloadIDs[index]))
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
            let value: Value
            if bracket.needsRetarget[index] {
                var triggers: [Touch: Bool] = [:]
                value = self.walk(path.keyPath, triggers: &triggers)
                registry.setTriggers(triggers, for: path)
            } else {
                value = path.options.contains(.new) ? self.resolve(path.keyPath) : .null
            }
            newValues.append(path.options.contains(.new) ? self.export(value) : .null)
            payloadIDs.append(registry.nextPayloadID())
        }
        for (observer, index) in bracket.observers.reversed() where observer.isActive {
            observer.handler(
                Change(
                    observation: observer.id, kind: .setting, isPrior: false, isInitial: false,
                    new: observer.options.contains(.new) ? newValues[index] : nil,
                    old: observer.options.contains(.old) ? bracket.oldValues[index] : nil, indexes: nil,
                    seq: bracket.seq, payloadID: payloadIDs[index]))
        }
    }
}
