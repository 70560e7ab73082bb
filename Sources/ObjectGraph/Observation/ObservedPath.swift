// The unit of observation bookkeeping: one node per distinct observed key path, shared by every observation of that
// path, with the (object, key) triggers its path currently goes through. Re-targeting rebuilds the triggers when an
// intermediate object changes.

/// An (object, key) pair that a change can touch.
struct Touch: Hashable {
    let object: ObjectID
    let key: String
}

/// One observation: its options, its handler and its place in subscription order.
final class Observer {
    let id: ObservationID
    let options: ObservationOptions
    let handler: (Change) -> Void
    unowned let path: ObservedPath
    /// False once removed: a removed observer is skipped even inside a notification round already under way.
    var isActive = true

    init(id: ObservationID, options: ObservationOptions, path: ObservedPath, handler: @escaping (Change) -> Void) {
        self.id = id
        self.options = options
        self.path = path
        self.handler = handler
    }
}

/// Every observation of one key path, and the triggers that path currently goes through.
final class ObservedPath {
    let keyPath: KeyPath
    /// Observers in subscription (id) order.
    var observers: [Observer] = []
    /// The triggers currently registered in the index, with whether each is the path's last key.
    var triggers: [Touch: Bool] = [:]

    /// Dedupes paths while a bracket is being opened: equal to the registry's commit counter once seen.
    var commitMark: UInt64 = 0
    /// The path's index in the bracket being opened (valid while `commitMark` is current).
    var bracketIndex = 0

    /// The union of the observers' options, kept current by `observersChanged()`.
    private(set) var options = ObservationOptions()

    init(keyPath: KeyPath) {
        self.keyPath = keyPath
    }

    /// Recomputes what the observers ask for after one was added or removed.
    func observersChanged() {
        self.options = self.observers.reduce(into: ObservationOptions()) { $0.formUnion($1.options) }
    }
}
