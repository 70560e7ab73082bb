// The unit of observation bookkeeping: one node per distinct observed key path, shared by every observation of that
// path, with the (object, key) triggers its path currently goes through. Re-targeting rebuilds the triggers when an
// intermediate object changes.

/// An (object, key) pair that a change can touch.
struct Touch: Hashable {
    let object: ObjectID
    let key: String
}

/// What a trigger means to the path that registered it.
enum TriggerRole: UInt8, Comparable {
    /// A change of the key changes the path's value but not its route (a dependency's last key).
    case leaf = 0
    /// The path's own last key: observers get a collection change's kind and indexes.
    case direct = 1
    /// The key leads further: a change re-targets the path.
    case route = 2

    static func < (lhs: TriggerRole, rhs: TriggerRole) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One change a mutation makes: the key it touches, which op of a transaction made it, and for a collection
/// mutation its kind, indexes and values (the change dictionary's detail).
struct Mutation {
    let touch: Touch
    var op = 0
    var detail: CollectionDetail?
}

/// The detail of a to-many change: filled partly before the change (kind, indexes, removed values) and partly by
/// the mutation itself (the inserted values, as stored).
final class CollectionDetail {
    let kind: ChangeKind
    /// Sorted indexes for ordered collections; nil for sets.
    let indexes: [Int]?
    /// The removed or replaced values, as stored (objects as references), read before the change.
    let old: [Value]
    /// The inserted or replacing values, as stored, set by the mutation.
    var new: [Value] = []

    init(kind: ChangeKind, indexes: [Int]?, old: [Value]) {
        self.kind = kind
        self.indexes = indexes
        self.old = old
    }
}

/// One observation: its options, its sink and its place in subscription order.
final class Observer {
    let id: ObservationID
    let sink: any ObservationSink
    unowned let path: ObservedPath
    let options: ObservationOptions
    /// False once removed: a removed observer is skipped even inside a notification round already under way.
    var isActive = true

    init(id: ObservationID, options: ObservationOptions, path: ObservedPath, sink: any ObservationSink) {
        self.id = id
        self.options = options
        self.path = path
        self.sink = sink
    }
}

/// Every observation of one key path, and the triggers that path currently goes through.
final class ObservedPath {
    let keyPath: KeyPath
    /// Observers in subscription (id) order.
    var observers: [Observer] = []
    /// The triggers currently registered in the index, with their roles.
    var triggers: [Touch: TriggerRole] = [:]

    /// Dedupes paths while a bracket is being opened: equal to the registry's commit counter once seen.
    @exclusivity(unchecked) var commitMark: UInt64 = 0
    /// The path's index in the bracket being opened (valid while `commitMark` is current).
    @exclusivity(unchecked) var bracketIndex = 0

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
