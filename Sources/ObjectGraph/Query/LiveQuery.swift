// Live queries: a query (Query.swift) kept answered as the graph changes, its subscribers told how their window
// changed with KVO's to-many kinds and indexes relative to the window, at the mutation's seq, before it returns.
//
//   QueryWatch      one collection (a key path): where it is (its holder), its members and how often each occurs,
//                   for an array shown in its own order a PositionIndex (where each element is), and the touches
//                   outside the elements that their key paths go through (`manager.name`: the manager's `name`)
//   └ OrderGroup    one order over the collection. Sorted (sort descriptors, or a set): each element's entry
//                   `[sort values…, element]`, an equality index of its queries by a `key == constant` conjunct
//                   (the others are unindexed), and per indexed key its members by their value of it (KeyIndex).
//                   Or the array's own order.
//     └ LiveQuery   one predicate with its variables. Sorted: its matching entries in a ValueList in the group's
//                   order (its result). Own order: a RankTree with one bit per array position, set when it matches.
//       └ QueryObserver  one subscriber: its window (offset, limit), selected keys, options and sink
//
// A mutation (Graph+LiveQuery.swift) says which watches it reaches: their collection changed (the collection
// detail's indexes and values, or a whole new collection), an element's key (or a key its key paths go through)
// changed. Only those elements are evaluated again: their sort values once per group, the predicate once per
// candidate query of a sorted group — the unindexed ones, the ones keyed under its value of their key before (they
// may hold it) and now (they may match it) — and once per query of an own-order group. Each match that appears, disappears or moves is an
// insertion or removal at a rank among the matches, which each subscriber of that query turns into the changes of
// its window (`WindowDiff`): an element that enters or leaves, the next one that comes into view or is pushed out,
// a shown element whose selected keys changed (a replacement). Consecutive changes of one kind are merged into one
// notification; a mutation that changes the match count and no window is a replacement with no indexes (so the
// count reaches the pager). A sorted group costs O(log n) per changed element plus O(log m) per candidate query;
// an own-order group O(log n) per query for an insertion or removal in its array (docs/ARCHITECTURE.md). A new
// query scans the collection once, except a keyed one of a sorted group, which evaluates only the members its
// constant names (`KeyIndex`: the members by their value of an indexed key).

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
    /// A conjunct `key == constant` every match satisfies (the constant a literal or a bound variable, normalized by
    /// `OrderGroup.equalityValue`): the group indexes the query under it, so that a changed element is evaluated
    /// only by the queries whose constant is its value. nil: evaluated for every changed element of the group.
    let equality: (key: [String], value: Value)?
    /// Own order: one bit per element of the array, set when the element matches; its ones are the result, in order.
    var bits = RankTree()
    /// Sorted: the matching entries (`[sort values…, element]`, one per occurrence, equal ones adjacent) in the
    /// group's order: the result itself. Rank is a search in it, the match at a rank its element there.
    var list = ValueList()
    /// The last `OrderGroup.stamp` that listed it as a candidate (no query is evaluated twice for one element).
    var stamp: UInt64 = 0
    var observers: [QueryObserver] = []
    unowned let group: OrderGroup

    init(predicate: Predicate?, variables: [String: Value], group: OrderGroup) {
        self.predicate = predicate
        self.variables = variables
        self.group = group
        self.singleKeys = OrderGroup.singleKeys(predicate?.keyPaths ?? [])
        self.equality = predicate.flatMap { Self.equalityConjunct($0, variables: variables) }
    }

    func matches(_ element: Value, in graph: Graph, collector: TriggerCollector?) -> Bool {
        guard let predicate else { return true }
        return graph.matches(predicate, element: element, variables: self.variables, collector: collector)
    }

    /// The number of matching elements.
    var count: Int { self.group.isOwnOrder ? self.bits.ones : self.list.count }

    /// The match at `rank` (0 ..< count).
    func element(at rank: Int) -> Value {
        if self.group.isOwnOrder { return self.group.element(at: self.bits.select(rank)) }
        return OrderGroup.split(self.list[rank]).element
    }

    /// Sorted: the rank of the first match at or after `entry` in the group's order, and whether `entry` is one.
    func search(_ entry: Value) -> (index: Int, found: Bool) {
        let group = self.group
        return self.list.sortedIndex(of: entry) { group.compare($0, $1) }
    }

    /// The first conjunct of `predicate` (itself, or one of its `AND`'s operands) that is `key == constant` with
    /// exactly the semantics `equalityValue` normalizes: no quantifier, no options, one key of the element that is
    /// not an operator, a constant that is a literal or a variable (a missing one is nil). Its matches all have a
    /// value of `key` whose `equalityValue` is the constant's, or one that is not a scalar (an array compares as ANY).
    static func equalityConjunct(_ predicate: Predicate, variables: [String: Value]) -> (key: [String], value: Value)? {
        switch predicate {
        case .comparison(let comparison):
            guard comparison.quantifier == nil, comparison.op == .equal, comparison.options.isEmpty else { return nil }
            let constant: (Predicate.Operand) -> Value? = { operand in
                switch operand {
                case .literal(let value): value
                case .variable(let name): variables[name] ?? .null
                default: nil
                }
            }
            let key: [String]
            let value: Value?
            switch (comparison.left, comparison.right) {
            case (.keyPath(let keys), let other), (let other, .keyPath(let keys)):
                key = keys
                value = constant(other)
            default:
                return nil
            }
            guard key.count == 1, key[0].utf8.first != UInt8(ascii: "@"), let value,
                let normalized = OrderGroup.equalityValue(value)
            else { return nil }
            return (key, normalized)
        case .and(let operands):
            for operand in operands {
                if let found = Self.equalityConjunct(operand, variables: variables) { return found }
            }
            return nil
        default:
            return nil
        }
    }
}

/// One order over a watched collection, and the queries shown in it.
final class OrderGroup {
    let orderBy: [SortDescriptor]
    /// The array's own order (no sort descriptors, not a set): positions come from the watch's PositionIndex.
    let isOwnOrder: Bool
    /// Sorted: each element's entry, `[sort values…, element]` (its occurrences share it), computed once per group
    /// when the element joins or changes.
    var entries: [Value: Value] = [:]
    var queries: [LiveQuery] = []
    /// Sorted: the queries with an equality conjunct, by its key and normalized constant.
    var equality: [[String]: [Value: [LiveQuery]]] = [:]
    /// Sorted: the queries without one (evaluated for every changed element).
    var unindexed: [LiveQuery] = []
    /// Sorted: for each key of the equality index, the members by their value of it (a new keyed query evaluates
    /// only the members its constant names).
    var keyIndexes: [[String]: KeyIndex] = [:]
    /// Incremented for each candidate search (`LiveQuery.stamp`).
    var stamp: UInt64 = 0
    /// Fills of new queries of this group under way (QueryFill): told the entries a changed or leaving element had.
    var fills: [QueryFill] = []
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
        // Entries are short flat lists: their sort values are compared in place (no copy, no allocation).
        if case .array(let leftList) = left, case .flat(let leftItems) = leftList.storage, let leftElement = leftItems.last,
            case .array(let rightList) = right, case .flat(let rightItems) = rightList.storage,
            let rightElement = rightItems.last
        {
            return Graph.compare(leftItems.dropLast(), leftElement, rightItems.dropLast(), rightElement, self.orderBy)
        }
        let (leftKey, leftElement) = Self.split(left)
        let (rightKey, rightElement) = Self.split(right)
        return Graph.compare(leftKey, leftElement, rightKey, rightElement, self.orderBy)
    }

    /// Own order: the element at a position of the array.
    func element(at position: Int) -> Value {
        self.watch.positions?.element(at: position) ?? .null
    }

    /// A value as the equality index keys it: two values are `==` in a predicate without options exactly when their
    /// keys are equal (numbers by exact value: an integral double becomes the int, so 1 and 1.0 share a key; strings
    /// by Swift's equality, which their hash follows). nil for what `==` compares otherwise (arrays, records) or
    /// never equals (NaN).
    static func equalityValue(_ value: Value) -> Value? {
        switch value {
        case .null, .bool, .int, .string, .object:
            return value
        case .double(let double):
            if double.isNaN { return nil }
            if let int = Int64(exactly: double) { return .int(int) }
            return value
        case .array, .record:
            return nil
        }
    }

    /// The group's query with `query`'s predicate and variables, if it has one.
    func live(answering query: Query) -> LiveQuery? {
        self.queries.first { $0.predicate == query.predicate && $0.variables == query.variables }
    }

    /// Adds a new query to the group and, sorted, to its equality index.
    func add(_ live: LiveQuery) {
        self.queries.append(live)
        guard !self.isOwnOrder else { return }
        if let (key, value) = live.equality {
            self.equality[key, default: [:]][value, default: []].append(live)
        } else {
            self.unindexed.append(live)
        }
    }

    /// Removes a query from the group and its index.
    func remove(_ live: LiveQuery) {
        self.queries.removeAll { $0 === live }
        guard !self.isOwnOrder else { return }
        if let (key, value) = live.equality {
            self.equality[key]?[value]?.removeAll { $0 === live }
            if self.equality[key]?[value]?.isEmpty == true { self.equality[key]?[value] = nil }
            if self.equality[key]?.isEmpty == true {
                self.equality[key] = nil
                self.keyIndexes[key] = nil
            }
        } else {
            self.unindexed.removeAll { $0 === live }
        }
    }
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
    /// The `select`s of the subscribers, with how many use each (the shown values a change keeps for `old`).
    var selects: [SelectKey: Int] = [:]
    var groups: [OrderGroup] = []
    /// Fills under way on this collection (QueryFill), told what each commit changed.
    var fills: [QueryFill] = []
    /// Dropped, its registrations being removed a slice at a time (`Graph.advanceQueryFills`): no commit reaches it.
    /// Its members and dependents are not changed any more, so the drain walks them by index.
    var isDraining = false
    var drainMembers: Dictionary<Value, Int>.Index?
    var drainDependents: Dictionary<Touch, [Value: Int]>.Index?

    init(keyPath: KeyPath) {
        self.keyPath = keyPath
    }

    /// The group showing the collection in `query`'s order (`isOwnOrder`: the array's own), if there is one.
    func group(for query: Query, isOwnOrder: Bool) -> OrderGroup? {
        self.groups.first { $0.orderBy == query.orderBy && $0.isOwnOrder == isOwnOrder }
    }

    /// Whether its members are still being counted (a fill that found no watch): no query of it is answered yet.
    var isCounting: Bool { self.fills.contains { $0.counting != nil } }

    var isEmpty: Bool { self.groups.isEmpty }
}

/// Every live query of a graph, and the indexes a mutation looks up to find the ones it reaches.
final class QueryRegistry {
    var watches: [KeyPath: QueryWatch] = [:]
    var byHolder: [Touch: [QueryWatch]] = [:]
    var byRoute: [Touch: [QueryWatch]] = [:]
    var byDependency: [Touch: [QueryWatch]] = [:]
    /// The watches each element object is a member of.
    var elementWatches: [ObjectID: [QueryWatch]] = [:]
    var observerCount = 0
    /// Fills under way, oldest first (Graph+QueryFill.swift).
    var fills: [QueryFill] = []
    /// Queries a fill answered that no subscriber has claimed yet, with the advance they were answered at: dropped
    /// when still unclaimed some advances later (the subscriber that waited for them went away).
    /// (The group and the watch are held too: a query refers to them unowned.)
    var unclaimed: [(live: LiveQuery, group: OrderGroup, watch: QueryWatch, advance: UInt64)] = []
    /// Calls of `Graph.advanceQueryFills`.
    var advances: UInt64 = 0
    /// Watches dropped whose registrations are being removed (`QueryWatch.isDraining`), oldest first.
    var draining: [QueryWatch] = []
    /// Large maps of dropped queries, freed an entry per step.
    var trash: [QueryTrash] = []
    /// How many times a live query's predicate was evaluated (tests check that a mutation evaluates only its
    /// candidates).
    var predicateEvaluations = 0

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
        for watch in self.elementWatches[touch.object] ?? [] where !watch.isDraining {
            if watch.ownKeys.map({ $0.contains(touch.key) }) ?? true { elements.append(watch) }
        }
        for watch in self.byDependency[touch] ?? [] where !watch.isDraining && !elements.contains(where: { $0 === watch }) {
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

/// A large map a dropped query left (a group's entries, an array's position leaves): its values are released one per
/// step (in place: the indexes stay valid), then the map itself, whose keys are elements (ids, most often: nothing to
/// release), goes at once.
final class QueryTrash {
    var entries: [Value: Value]
    var entriesIndex: Dictionary<Value, Value>.Index
    var leaves: [Value: [PositionIndex.Node]]
    var leavesIndex: Dictionary<Value, [PositionIndex.Node]>.Index

    init(entries: [Value: Value] = [:], leaves: [Value: [PositionIndex.Node]] = [:]) {
        self.entries = entries
        self.entriesIndex = entries.startIndex
        self.leaves = leaves
        self.leavesIndex = leaves.startIndex
    }

    /// Releases one value; false when none is left.
    func step() -> Bool {
        if self.entriesIndex != self.entries.endIndex {
            self.entries.values[self.entriesIndex] = .null
            self.entriesIndex = self.entries.index(after: self.entriesIndex)
            return true
        }
        if self.leavesIndex != self.leaves.endIndex {
            self.leaves.values[self.leavesIndex] = []
            self.leavesIndex = self.leaves.index(after: self.leavesIndex)
            return true
        }
        return false
    }
}

/// The members of a sorted group by their value of one key (see `OrderGroup.equalityValue`), kept while a query of
/// the group is indexed under the key.
final class KeyIndex {
    /// The members by index value.
    var elements: [Value: Set<Value>] = [:]
    /// The members whose value cannot be keyed (not a scalar, or a computed key): every keyed query looks at them.
    var unkeyed: Set<Value> = []
    /// Each member's index value (absent: unkeyed).
    var keyOf: [Value: Value] = [:]

    /// Where a member was filed.
    enum Place {
        case keyed(Value)
        case unkeyed
        /// Not a member (not filed yet).
        case absent
    }

    func place(of element: Value) -> Place {
        if let value = self.keyOf[element] { return .keyed(value) }
        return self.unkeyed.contains(element) ? .unkeyed : .absent
    }

    /// Files `element` under `value` (nil: unkeyed), moving it from where it was.
    func file(_ element: Value, under value: Value?) {
        let old = self.keyOf[element]
        if old == value && (value != nil || self.unkeyed.contains(element)) { return }
        self.remove(element)
        if let value {
            self.keyOf[element] = value
            self.elements[value, default: []].insert(element)
        } else {
            self.unkeyed.insert(element)
        }
    }

    func remove(_ element: Value) {
        if let old = self.keyOf.removeValue(forKey: element) {
            self.elements[old]?.remove(element)
            if self.elements[old]?.isEmpty == true { self.elements[old] = nil }
        } else {
            self.unkeyed.remove(element)
        }
    }

    /// How many members a query keyed under `value` may match.
    func count(under value: Value) -> Int {
        (self.elements[value]?.count ?? 0) &+ self.unkeyed.count
    }

    /// The members a query keyed under `value` may match.
    func members(under value: Value) -> [Value] {
        Array(self.elements[value] ?? []) + Array(self.unkeyed)
    }
}
