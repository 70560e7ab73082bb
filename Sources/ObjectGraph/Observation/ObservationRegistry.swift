// The observation index: observed paths by key path (each with its observers in id order), and the two-way trigger
// index from (object, key) to the paths that go through it. There is no index of observers by id: whoever adds an
// observation keeps its `Observer` to remove it (a server holds hundreds of thousands; a dictionary entry would cost
// more than the observer). Pure bookkeeping; the graph drives it (Graph+Observation.swift).

/// Who observes what. Owned by one graph.
final class ObservationRegistry {
    // (Unchecked exclusivity: see Graph.objects.)
    var paths: [KeyPath: ObservedPath] = [:]
    /// Live observations.
    var observerCount = 0
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// The paths each (object, key) reaches, with what the key is to each (so a commit needs one lookup). Changed
    /// only by `setTriggers`; read through `entries(for:)`.
    @exclusivity(unchecked) private(set) var triggerIndex: [Touch: [TriggerEntry]] = [:]
    /// The last lookup in the trigger index and its answer, until the index changes: sets repeat the same key, and
    /// hashing a `Touch` (its key string) costs more than the rest of a plain set's checks.
    @exclusivity(unchecked) private var lastLookup: (touch: Touch, entries: [TriggerEntry]?)?
    var nextObservationID: ObservationID = 1
    var commitCounter: UInt64 = 0
    @exclusivity(unchecked) var payloadCounter: UInt64 = 0
    /// Emptied arrays of bracket paths, kept with their capacity for the next brackets (ChangeBracket.swift).
    var pathBuffers: [[BracketPath]] = []

    func nextPayloadID() -> UInt64 {
        self.payloadCounter &+= 1
        return self.payloadCounter
    }

    /// The paths `touch` reaches, with what it is to each; nil when none.
    @inline(__always)
    func entries(for touch: Touch) -> [TriggerEntry]? {
        if let last = self.lastLookup, last.touch == touch { return last.entries }
        let entries = self.triggerIndex[touch]
        self.lastLookup = (touch, entries)
        return entries
    }

    /// Replaces the triggers of `path` with `newTriggers`, touching the index only where they differ.
    func setTriggers(_ newTriggers: [Touch: TriggerRole], for path: ObservedPath) {
        self.lastLookup = nil
        for touch in path.triggers.keys where newTriggers[touch] == nil {
            self.unindex(touch, path)
        }
        for (touch, role) in newTriggers {
            switch path.triggers[touch] {
            case nil:
                self.triggerIndex[touch, default: []].append(TriggerEntry(path: path, role: role))
            case let old? where old != role:
                if let index = self.triggerIndex[touch]?.firstIndex(where: { $0.path === path }) {
                    self.triggerIndex[touch]![index].role = role
                }
            default:
                break
            }
        }
        path.triggers = newTriggers
    }

    private func unindex(_ touch: Touch, _ path: ObservedPath) {
        guard var list = self.triggerIndex[touch] else { return }
        list.removeAll { $0.path === path }
        self.triggerIndex[touch] = list.isEmpty ? nil : list
    }

    /// The live observer with `id`, found through the paths (observers are in id order within each path).
    func observer(_ id: ObservationID) -> Observer? {
        for path in self.paths.values {
            if let index = path.index(of: id) { return path.observers[index] }
        }
        return nil
    }

    /// Removes a path with no observers left, and its triggers.
    func dropPath(_ path: ObservedPath) {
        self.setTriggers([:], for: path)
        self.paths[path.keyPath] = nil
    }
}
