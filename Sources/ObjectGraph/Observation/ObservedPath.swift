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

/// One path an (object, key) reaches, and what the key is to it.
struct TriggerEntry {
    let path: ObservedPath
    var role: TriggerRole
}

/// One change a mutation makes: the key it touches, which op of a transaction made it, and for a collection
/// mutation its kind, indexes and values (the change dictionary's detail).
struct Mutation {
    let touch: Touch
    var op = 0
    var detail: CollectionDetail?
    /// What the mutation stores at the touched key, when known before it runs and the same once stored and exported
    /// (a plain set's scalar): the bracket need not read it back.
    var stored: Value?
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

/// One observation: its options, its sink and its place in subscription order. A server keeps it to remove the
/// observation later (`Graph.removeObservation(_:)`); the graph keeps it (and its sink) until then.
public final class Observer {
    public let id: ObservationID
    let sink: any ObservationSink
    unowned let path: ObservedPath
    public let options: ObservationOptions
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// False once removed: a removed observer is skipped even inside a notification round already under way.
    @exclusivity(unchecked) public internal(set) var isActive = true

    init(id: ObservationID, options: ObservationOptions, path: ObservedPath, sink: any ObservationSink) {
        self.id = id
        self.options = options
        self.path = path
        self.sink = sink
    }

    /// The observed key path (while the observation is active).
    public var keyPath: KeyPath { self.path.keyPath }
}

extension Observer {
    /// Sends `change` to each active observer of `observers`, last first (after notifications), retaining neither
    /// an observer nor its sink per notification: `observers` keeps both alive, and a sink that removes an observer
    /// during the round only marks it inactive.
    @inline(__always)
    static func notifyInReverse(_ observers: [Observer], _ change: Change) {
        var position = observers.count
        while position > 0 {
            position -= 1
            Unmanaged.passUnretained(observers[position])._withUnsafeGuaranteedRef { observer in
                if observer.isActive { observer.sink.observe(change, options: observer.options) }
            }
        }
    }
}

/// Every observation of one key path, and the triggers that path currently goes through.
final class ObservedPath {
    let keyPath: KeyPath
    /// Observers in subscription (id) order.
    @exclusivity(unchecked) var observers: [Observer] = []
    /// The triggers currently registered in the index, with their roles.
    var triggers: [Touch: TriggerRole] = [:]

    /// Dedupes paths while a bracket is being opened: equal to the registry's commit counter once seen.
    var commitMark: UInt64 = 0
    /// The path's index in the bracket being opened (valid while `commitMark` is current).
    var bracketIndex = 0

    /// The union of the observers' options, kept current by `observerAdded`/`observerRemoved`.
    @exclusivity(unchecked) private(set) var options = ObservationOptions()
    /// How many observers ask for each option (bit 0 `new` … bit 3 `prior`): adding and removing cost O(1).
    private var optionCounts: (Int32, Int32, Int32, Int32) = (0, 0, 0, 0)

    init(keyPath: KeyPath) {
        self.keyPath = keyPath
    }

    /// The position of the observer with `id` (binary search: observers are appended in id order).
    func index(of id: ObservationID) -> Int? {
        var low = 0
        var high = self.observers.count
        while low < high {
            let middle = (low + high) / 2
            if self.observers[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < self.observers.count && self.observers[low].id == id ? low : nil
    }

    /// Appends an observer (its id is higher than every other's).
    func observerAdded(_ observer: Observer) {
        self.observers.append(observer)
        self.count(observer.options, by: 1)
    }

    /// Removes an observer; false when it is not one of this path's.
    func observerRemoved(_ observer: Observer) -> Bool {
        guard let index = self.index(of: observer.id) else { return false }
        self.observers.remove(at: index)
        self.count(observer.options, by: -1)
        return true
    }

    private func count(_ options: ObservationOptions, by delta: Int32) {
        if options.contains(.new) { self.optionCounts.0 += delta }
        if options.contains(.old) { self.optionCounts.1 += delta }
        if options.contains(.initial) { self.optionCounts.2 += delta }
        if options.contains(.prior) { self.optionCounts.3 += delta }
        var union = ObservationOptions()
        if self.optionCounts.0 > 0 { union.insert(.new) }
        if self.optionCounts.1 > 0 { union.insert(.old) }
        if self.optionCounts.2 > 0 { union.insert(.initial) }
        if self.optionCounts.3 > 0 { union.insert(.prior) }
        self.options = union
    }
}
