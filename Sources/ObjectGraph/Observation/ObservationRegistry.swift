// The observation index: observed paths by key path, observers by id, and the two-way trigger index from
// (object, key) to the paths that go through it. Pure bookkeeping; the graph drives it (Graph+Observation.swift).

/// Who observes what. Owned by one graph.
final class ObservationRegistry {
    var paths: [KeyPath: ObservedPath] = [:]
    var observers: [ObservationID: Observer] = [:]
    var triggerIndex: [Touch: [ObservedPath]] = [:]
    var nextObservationID: ObservationID = 1
    @exclusivity(unchecked) var commitCounter: UInt64 = 0
    @exclusivity(unchecked) var payloadCounter: UInt64 = 0

    func nextPayloadID() -> UInt64 {
        self.payloadCounter &+= 1
        return self.payloadCounter
    }

    /// Replaces the triggers of `path` with `newTriggers`, touching the index only where they differ.
    func setTriggers(_ newTriggers: [Touch: TriggerRole], for path: ObservedPath) {
        for touch in path.triggers.keys where newTriggers[touch] == nil {
            self.unindex(touch, path)
        }
        for touch in newTriggers.keys where path.triggers[touch] == nil {
            self.triggerIndex[touch, default: []].append(path)
        }
        path.triggers = newTriggers
    }

    private func unindex(_ touch: Touch, _ path: ObservedPath) {
        guard var list = self.triggerIndex[touch] else { return }
        list.removeAll { $0 === path }
        self.triggerIndex[touch] = list.isEmpty ? nil : list
    }

    /// Removes a path with no observers left, and its triggers.
    func dropPath(_ path: ObservedPath) {
        self.setTriggers([:], for: path)
        self.paths[path.keyPath] = nil
    }
}
