// Live queries: a query (Query.swift) kept answered as the graph changes, its subscribers told how their window
// changed with KVO's to-many kinds and indexes relative to the window, at the mutation's seq, before it returns.
//
//   QueryWatch      one collection (a key path): where it is (its holder), its members and how often each occurs,
//                   for an array shown in its own order a PositionIndex (where each element is), and the touches
//                   outside the elements that their key paths go through (`manager.name`: the manager's `name`)
//   └ OrderGroup    one order over the collection: the elements sorted by the group's sort descriptors (a shared
//                   ordered index: entries `[sort values…, element]` in a ValueList, and each element's entry), or
//                   the array's own order
//     └ LiveQuery   one predicate with its variables: a RankTree with one bit per element in the group's order,
//                   set when the element matches; its ones are the query's result, in order
//       └ QueryObserver  one subscriber: its window (offset, limit), selected keys, options and sink
//
// A mutation (Graph+LiveQuery.swift) says which watches it reaches: their collection changed (the collection
// detail's indexes and values, or a whole new collection), an element's key (or a key its key paths go through)
// changed. Only those elements are evaluated again — their sort values once per group, the predicate once per query —
// and each bit that appears, disappears or moves is an insertion or removal at a rank among the matches, which each
// subscriber turns into the changes of its window (`WindowDiff`): an element that enters or leaves, the next one
// that comes into view or is pushed out, a shown element whose selected keys changed (a replacement). Consecutive
// changes of one kind are merged into one notification; a mutation that changes the match count and no window is a
// replacement with no indexes (so the count reaches the pager). Everything costs O(log n) per changed element and
// query, plus what the notifications carry.

/// One subscriber of a live query (the engine's side of a query subscription). Keep it to end the subscription
/// (`Graph.removeQueryObservation`).
public final class QueryObserver {
    public let id: ObservationID
    /// The collection's key path.
    public let keyPath: KeyPath
    public let query: Query
    public let options: ObservationOptions
    let sink: any ObservationSink
    /// False once removed.
    public internal(set) var isActive = true
    unowned let live: LiveQuery

    init(id: ObservationID, keyPath: KeyPath, query: Query, options: ObservationOptions, sink: any ObservationSink, live: LiveQuery) {
        self.id = id
        self.keyPath = keyPath
        self.query = query
        self.options = options
        self.sink = sink
        self.live = live
    }

    var offset: Int { self.query.offset }
    /// The window's end (exclusive) among the matches.
    var end: Int {
        guard let limit = self.query.limit else { return Int.max }
        let (sum, overflow) = self.query.offset.addingReportingOverflow(limit)
        return overflow ? Int.max : sum
    }
}

/// One predicate over one order of a collection.
final class LiveQuery {
    let predicate: Predicate?
    let variables: [String: Value]
    /// The element's keys the predicate reads, when each of its key paths is one key (or `SELF`): then evaluating it
    /// needs no trigger collection unless one of those keys is computed on the element's class. nil: collect.
    let singleKeys: Set<String>?
    /// One bit per element of the group's order: whether it matches.
    var bits = RankTree()
    var observers: [QueryObserver] = []
    unowned let group: OrderGroup

    init(predicate: Predicate?, variables: [String: Value], group: OrderGroup) {
        self.predicate = predicate
        self.variables = variables
        self.group = group
        self.singleKeys = OrderGroup.singleKeys(predicate?.keyPaths ?? [])
    }

    func matches(_ element: Value, in graph: Graph, collector: TriggerCollector?) -> Bool {
        guard let predicate else { return true }
        return graph.matches(predicate, element: element, variables: self.variables, collector: collector)
    }

    /// The number of matching elements.
    var count: Int { self.bits.ones }
}

/// One order over a watched collection, and the queries shown in it.
final class OrderGroup {
    let orderBy: [SortDescriptor]
    /// The array's own order (no sort descriptors, not a set): positions come from the watch's PositionIndex.
    let isOwnOrder: Bool
    /// Sorted: every element occurrence's entry, `[sort values…, element]`, in order.
    var base = ValueList()
    /// Sorted: each element's entry (equal occurrences share it).
    var entries: [Value: Value] = [:]
    var queries: [LiveQuery] = []
    unowned let watch: QueryWatch
    /// The element's keys the sort descriptors read, when each is one key (see `LiveQuery.singleKeys`).
    let singleKeys: Set<String>?

    init(orderBy: [SortDescriptor], isOwnOrder: Bool, watch: QueryWatch) {
        self.orderBy = orderBy
        self.isOwnOrder = isOwnOrder
        self.watch = watch
        self.singleKeys = Self.singleKeys(orderBy.map(\.keys))
    }

    /// The keys of `paths` when each is at most one key (not an operator); nil otherwise.
    static func singleKeys(_ paths: [[String]]) -> Set<String>? {
        var keys: Set<String> = []
        for path in paths {
            guard path.count <= 1 else { return nil }
            if let key = path.first {
                if key.utf8.first == UInt8(ascii: "@") { return nil }
                keys.insert(key)
            }
        }
        return keys
    }

    static func entry(_ key: [Value], _ element: Value) -> Value { .array(key + [element]) }

    static func split(_ entry: Value) -> (key: [Value], element: Value) {
        guard case .array(let list) = entry, let element = list.last else { return ([], entry) }
        return (Array(list.array.dropLast()), element)
    }

    func compare(_ left: Value, _ right: Value) -> Int {
        let (leftKey, leftElement) = Self.split(left)
        let (rightKey, rightElement) = Self.split(right)
        return Graph.compare(leftKey, leftElement, rightKey, rightElement, self.orderBy)
    }

    /// The first position of `entry` in the base (or where it would go).
    func lowerBound(_ entry: Value) -> Int {
        self.base.sortedIndex(of: entry) { self.compare($0, $1) }.index
    }

    /// The element at a position of the group's order.
    func element(at position: Int) -> Value {
        if self.isOwnOrder { return self.watch.positions?.element(at: position) ?? .null }
        return Self.split(self.base[position]).element
    }

    var count: Int { self.isOwnOrder ? (self.watch.positions?.count ?? 0) : self.base.count }
}

/// One watched collection (see the file comment).
final class QueryWatch {
    let keyPath: KeyPath
    var target = QueryTarget(holder: nil, elements: [], isSet: false, elementClass: nil)
    /// The touches on the way to the collection (its holder's route): a change there re-finds the collection.
    var route: Set<Touch> = []
    /// How many times each element occurs.
    var members: [Value: Int] = [:]
    /// Where each element is, for groups in the array's own order.
    var positions: PositionIndex?
    /// The touches outside an element that its key paths go through, per element, and the reverse.
    var foreign: [Value: [Touch]] = [:]
    var dependents: [Touch: [Value: Int]] = [:]
    /// The element keys any query reads (nil: every key, some subscriber shows whole elements).
    var ownKeys: Set<String>? = []
    /// Selected key paths read from each member for the touches they go through (longer than one key, or computed).
    var selectPaths: Set<[String]> = []
    var groups: [OrderGroup] = []

    init(keyPath: KeyPath) {
        self.keyPath = keyPath
    }

    var isEmpty: Bool { self.groups.isEmpty }
}

/// Every live query of a graph, and the indexes a mutation looks up to find the ones it reaches.
final class QueryRegistry {
    var watches: [KeyPath: QueryWatch] = [:]
    var byHolder: [Touch: [QueryWatch]] = [:]
    var byRoute: [Touch: [QueryWatch]] = [:]
    var byDependency: [Touch: [QueryWatch]] = [:]
    /// How many watches each element object is a member of.
    var elementWatches: [ObjectID: Int] = [:]
    var observerCount = 0

    var isEmpty: Bool { self.watches.isEmpty }

    /// Whether a change of `touch` may reach a live query (the graph asked `hasLiveQueries` first).
    func concerns(_ touch: Touch) -> Bool {
        guard !self.watches.isEmpty else { return false }
        return self.elementWatches[touch.object] != nil || self.byHolder[touch] != nil || self.byRoute[touch] != nil
            || self.byDependency[touch] != nil
    }

    /// The watches `touch` reaches, with how.
    func watches(for touch: Touch) -> (holder: [QueryWatch], route: [QueryWatch], elements: [QueryWatch]) {
        var elements: [QueryWatch] = []
        if self.elementWatches[touch.object] != nil {
            for watch in self.watches.values where watch.members[.object(touch.object)] != nil {
                if watch.ownKeys.map({ $0.contains(touch.key) }) ?? true { elements.append(watch) }
            }
        }
        for watch in self.byDependency[touch] ?? [] where !elements.contains(where: { $0 === watch }) {
            elements.append(watch)
        }
        return (self.byHolder[touch] ?? [], self.byRoute[touch] ?? [], elements)
    }

    static func add(_ watch: QueryWatch, to index: inout [Touch: [QueryWatch]], at touch: Touch) {
        if index[touch]?.contains(where: { $0 === watch }) == true { return }
        index[touch, default: []].append(watch)
    }

    static func remove(_ watch: QueryWatch, from index: inout [Touch: [QueryWatch]], at touch: Touch) {
        guard var list = index[touch] else { return }
        list.removeAll { $0 === watch }
        index[touch] = list.isEmpty ? nil : list
    }
}
