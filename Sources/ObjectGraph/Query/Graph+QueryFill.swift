// Answering a new live query over several turns of the caller's loop. A query over a large collection needs every
// member evaluated once (and, for a new order, sorted): O(n). A server cannot hold its loop that long, so
// `prepareQueryObservation` says whether the subscription can be made at once (a small collection, a query already
// answered, a keyed query whose constant names few members) and otherwise starts a fill
// (`QueryFill`) that `advanceQueryFills` carries on a slice at a time; the subscriber waits and asks again.
//
// A fill builds its answer beside the live ones, unseen by commits: a new query's match list, and for a new order its
// group's entries and key index (or, when the collection had no watch, the watch's members first: `counting`). It
// works through a queue of elements: every member once, then each element a commit touched since (its keys, the
// keys its key paths go through, an occurrence that joined or left), told by `noteForFills` at each commit. Bringing
// an element up to date is idempotent: whatever the answer holds of it is removed (under each entry it was filed
// with) and its current occurrences filed again when it matches. When the queue is empty the answer is the query's
// answer now, and the fill attaches it in one step: from then on the commits keep it, as every other query. A query
// in an array's own order is filled by position instead (`follow`): bits as long as the array, evaluated up to a
// cursor, shifted by the array's insertions and removals. A change of the collection's route starts the fill again.

/// One new query being answered over several turns (see the file comment).
final class QueryFill {
    let watch: QueryWatch
    let group: OrderGroup
    /// The group is the fill's own (a new order), attached with the query.
    let isNewGroup: Bool
    let live: LiveQuery
    /// A keyed query whose key the group indexes not yet: the index made alongside and attached with the query.
    var keyIndex: (key: [String], index: KeyIndex)?
    /// A watch made by this fill: the collection's elements when the count began (nil once counted), the next one to
    /// count, and occurrences that left before they were counted.
    var counting: ValueList?
    var countCursor = 0
    var debt: [Value: Int] = [:]
    /// The members to visit first: the collection's elements when the fill began (or was counted), an O(1) copy of
    /// its ValueList, an element occurring k times visited k times; nil once visited, and for a keyed query (whose
    /// members are the first ones of `queue`).
    var members: ValueList.Iterator?
    /// The elements still to bring up to date after `members`, from `head` on; the ones queued by commits are also
    /// in `touched` (queued once until brought up to date).
    var queue: [Value] = []
    var head = 0
    var touched: Set<Value> = []
    /// How many of the first elements taken are the members queued when the fill began (distinct: none of them was
    /// brought up to date before, so the answer holds nothing of them yet), and how many were taken.
    var firstVisits = 0
    var taken = 0
    /// An existing group: entries a queued element had in it when a commit changed or removed it (the answer may hold
    /// it under any of them).
    var stale: [Value: [Value]] = [:]
    /// Own order (an array without `orderBy`): the answer's bits, one per position of the array now — the first
    /// `cursor` positions evaluated, the others false until the cursor reaches them — and, when the watch indexes no
    /// positions yet, the positions of the first `cursor` elements (the watch's own index otherwise).
    var cursor = 0
    var bits = RankTree()
    var positions: PositionIndex?

    init(watch: QueryWatch, group: OrderGroup, isNewGroup: Bool, live: LiveQuery) {
        self.watch = watch
        self.group = group
        self.isNewGroup = isNewGroup
        self.live = live
    }

    func enqueue(_ element: Value) {
        guard self.touched.insert(element).inserted else { return }
        self.queue.append(element)
    }

    func noteStale(_ element: Value, _ entry: Value) {
        if self.stale[element]?.contains(entry) == true { return }
        self.stale[element, default: []].append(entry)
    }

    /// Takes the next element to bring up to date, and whether the answer may hold some of it.
    func next() -> (element: Value, mayBeFiled: Bool)? {
        if self.members != nil {
            if let element = self.members?.next() {
                // The answer holds nothing yet of an element the copy holds once and the collection holds once now.
                // (One the copy repeats is in the collection more than once, or an occurrence left since: the commit
                // that removed it queued it, to be brought up to date after the copy.)
                return (element, self.watch.members[element] != 1)
            }
            self.members = nil
        }
        guard self.head < self.queue.count else { return nil }
        let element = self.queue[self.head]
        self.head += 1
        self.taken += 1
        if self.head >= 4096 && self.head * 2 >= self.queue.count {
            self.queue.removeFirst(self.head)
            self.head = 0
        }
        if !self.touched.isEmpty { self.touched.remove(element) }
        return (element, self.taken > self.firstVisits)
    }
}

extension Graph {
    // MARK: - Preparing a subscription

    /// Whether a query subscription of `query` at `keyPath` can be made now at a cost bounded by its window and the
    /// members its constant names (`queryFillThreshold`); otherwise starts (or waits for) the fill that answers it
    /// over later `advanceQueryFills` calls, and returns false: ask again once they ran. `addQueryObservation`
    /// works either way (it finishes a fill under way at once).
    /// - Throws: as `addQueryObservation`.
    public func prepareQueryObservation(_ keyPath: KeyPath, query: Query) throws(GraphError) -> Bool {
        let target = try self.observableQueryTarget(keyPath, query)
        let isOwnOrder = query.orderBy.isEmpty && !target.isSet
        let threshold = self.queryFillThreshold
        guard let watch = self.queries.watches[keyPath] else {
            if target.elements.count <= threshold { return true }
            self.startFill(keyPath, query, isOwnOrder: isOwnOrder, watch: nil, group: nil)
            return false
        }
        // One fill at a time per collection: a subscriber decides once the ones under way are done.
        guard watch.fills.isEmpty else { return false }
        if isOwnOrder {
            // Every element evaluated, at its position: O(n) whatever the predicate.
            let group = watch.group(for: query, isOwnOrder: true)
            if group?.live(answering: query) != nil { return true }
            if self.elements(of: watch).count <= threshold { return true }
            self.startFill(keyPath, query, isOwnOrder: true, watch: watch, group: group)
            return false
        }
        guard let group = watch.group(for: query, isOwnOrder: false) else {
            if watch.members.count <= threshold { return true }
            self.startFill(keyPath, query, isOwnOrder: false, watch: watch, group: nil)
            return false
        }
        if group.live(answering: query) != nil { return true }
        let equality = query.predicate.flatMap { LiveQuery.equalityConjunct($0, variables: query.variables) }
        if let (key, value) = equality, let index = group.keyIndexes[key] {
            if index.count(under: value) <= threshold { return true }
        } else if watch.members.count <= threshold {
            return true
        }
        self.startFill(keyPath, query, isOwnOrder: false, watch: watch, group: group)
        return false
    }

    /// How many fills are under way.
    public var queryFillCount: Int { self.queries.fills.count }

    /// Whether fills are under way or answered queries wait to be claimed (the caller keeps calling
    /// `advanceQueryFills`).
    /// Sets `hasQueryFillWork` from the registry's lists.
    func noteQueryFillWork() {
        let registry = self.queries
        self.hasQueryFillWork = !registry.fills.isEmpty || !registry.unclaimed.isEmpty || !registry.draining.isEmpty
            || !registry.trash.isEmpty
    }

    /// Carries the fills under way on, oldest first, until they are done or `shouldStop` (asked every `checkingEvery`
    /// elements) says so; drops the queries answered some calls ago that nobody subscribed to. Returns
    /// `hasQueryFillWork`.
    public func advanceQueryFills(checkingEvery: Int = 64, shouldStop: () -> Bool) -> Bool {
        let checkingEvery = max(1, checkingEvery)
        let registry = self.queries
        registry.advances &+= 1
        if !registry.unclaimed.isEmpty {
            let now = registry.advances
            var dropped: [LiveQuery] = []
            registry.unclaimed.removeAll { entry in
                guard now &- entry.advance > 64 else { return false }
                dropped.append(entry.live)
                return true
            }
            for live in dropped { self.dropIfUnobserved(live) }
        }
        // Maps of dropped queries to free, then drains, then fills: each a step at a time, each step true while there
        // was something to do.
        let kinds: [() -> Bool] = [
            {
                guard let trash = registry.trash.first else { return false }
                if !trash.step() { registry.trash.removeFirst() }
                return true
            },
            {
                guard let watch = registry.draining.first else { return false }
                if !self.drainStep(watch) { registry.draining.removeFirst() }
                return true
            },
            {
                guard let fill = registry.fills.first else { return false }
                if !self.step(fill) { self.complete(fill) }
                return true
            },
        ]
        var steps = 0
        work: for step in kinds {
            while step() {
                steps &+= 1
                if steps % checkingEvery == 0 && shouldStop() { break work }
            }
        }
        self.noteQueryFillWork()
        return self.hasQueryFillWork
    }

    /// Finishes the drains of dropped watches now (a library caller that wants the registry empty).
    public func finishQueryDrains() {
        self.queries.trash = []
        while let watch = self.queries.draining.first {
            while self.drainStep(watch) {}
            self.queries.draining.removeFirst()
        }
        self.noteQueryFillWork()
    }

    /// Drops a watch nobody uses any more: its holder and route now, its members' and dependents' registrations a
    /// step each (`drainStep`).
    func startDrain(_ watch: QueryWatch) {
        let registry = self.queries
        for touch in watch.route { QueryRegistry.remove(watch, from: &registry.byRoute, at: touch) }
        if let holder = watch.target.holder { QueryRegistry.remove(watch, from: &registry.byHolder, at: holder) }
        watch.isDraining = true
        watch.positions = nil
        watch.drainMembers = watch.members.startIndex
        watch.drainDependents = watch.dependents.startIndex
        registry.draining.append(watch)
        self.hasQueryFillWork = true
    }

    /// Removes one registration of a draining watch; false when none is left.
    private func drainStep(_ watch: QueryWatch) -> Bool {
        let registry = self.queries
        if let index = watch.drainMembers, index != watch.members.endIndex {
            let element = watch.members[index].key
            watch.drainMembers = watch.members.index(after: index)
            if case .object(let id) = element, var watches = registry.elementWatches[id] {
                watches.removeAll { $0 === watch }
                registry.elementWatches[id] = watches.isEmpty ? nil : watches
            }
            return true
        }
        if let index = watch.drainDependents, index != watch.dependents.endIndex {
            let touch = watch.dependents[index].key
            watch.drainDependents = watch.dependents.index(after: index)
            QueryRegistry.remove(watch, from: &registry.byDependency, at: touch)
            return true
        }
        return false
    }

    /// Finishes every fill of `watch` now (a subscription made by `addQueryObservation` never sees a partial one).
    func finishFills(of watch: QueryWatch) {
        while let fill = watch.fills.first {
            while self.step(fill) {}
            self.complete(fill)
        }
        self.noteQueryFillWork()
    }

    // MARK: - Filling

    private func startFill(
        _ keyPath: KeyPath, _ query: Query, isOwnOrder: Bool, watch existing: QueryWatch?, group existingGroup: OrderGroup?
    ) {
        let registry = self.queries
        let watch: QueryWatch
        if let existing {
            watch = existing
        } else {
            watch = QueryWatch(keyPath: keyPath)
            registry.watches[keyPath] = watch
            self.hasLiveQueries = true
            self.locate(watch)
        }
        let group = existingGroup ?? OrderGroup(orderBy: query.orderBy, isOwnOrder: isOwnOrder, watch: watch)
        let live = LiveQuery(predicate: query.predicate, variables: query.variables, group: group)
        let fill = QueryFill(watch: watch, group: group, isNewGroup: existingGroup == nil, live: live)
        // The element keys the answer reads reach the watch from the start (an element brought up to date is
        // queued again when one of them changes).
        if let keys = live.singleKeys { watch.ownKeys?.formUnion(keys) }
        if let keys = group.singleKeys { watch.ownKeys?.formUnion(keys) }
        if let (key, _) = live.equality, !isOwnOrder {
            if key.count == 1 { watch.ownKeys?.insert(key[0]) }
            if group.keyIndexes[key] == nil { fill.keyIndex = (key, KeyIndex()) }
        }
        watch.fills.append(fill)
        if existingGroup != nil { group.fills.append(fill) }
        registry.fills.append(fill)
        self.hasQueryFillWork = true
        self.begin(fill, isNewWatch: existing == nil)
    }

    /// Starts (or starts again) a fill's work: counting a new watch's members, or bringing every member up to date.
    private func begin(_ fill: QueryFill, isNewWatch: Bool) {
        fill.members = nil
        fill.queue = []
        fill.head = 0
        fill.touched = []
        fill.taken = 0
        fill.firstVisits = 0
        fill.stale = [:]
        fill.live.list = ValueList()
        if fill.group.isOwnOrder {
            // Every position false until the cursor reaches it; commits keep the bits as long as the array.
            let count = self.elements(of: fill.watch).count
            fill.cursor = 0
            fill.bits = RankTree(count: count) { _ in false }
            fill.positions = fill.watch.positions == nil ? PositionIndex(ValueList()) : nil
            fill.positions?.reserveCapacity(count)
            if isNewWatch { self.beginCounting(fill, members: count) }
            return
        }
        if fill.isNewGroup { fill.group.entries = [:] }
        if let (key, _) = fill.keyIndex { fill.keyIndex = (key, KeyIndex()) }
        // The dictionaries the fill grows get their room now: growing one of a million entries rehashes it whole,
        // which would hold the loop for a fraction of a second in one step.
        let members = isNewWatch ? self.elements(of: fill.watch).count : fill.watch.members.count
        if fill.isNewGroup { fill.group.entries.reserveCapacity(members) }
        fill.keyIndex?.index.keyOf.reserveCapacity(members)
        if isNewWatch {
            self.beginCounting(fill, members: members)
        } else if !fill.isNewGroup, let (key, value) = fill.live.equality, let index = fill.group.keyIndexes[key] {
            // A keyed query: the members its constant names; others that come to match are queued when they change.
            fill.queue = index.members(under: value)
            fill.firstVisits = fill.queue.count
        } else {
            fill.members = self.elements(of: fill.watch).makeIterator()
        }
    }

    /// A new watch's members are counted first, from a copy of the collection, in maps given their room now (the
    /// registry's element map only when that costs no rehash of entries it holds: a rehash is O(entries) in one
    /// step, and growing by itself costs the same, later).
    private func beginCounting(_ fill: QueryFill, members: Int) {
        fill.counting = self.elements(of: fill.watch)
        fill.countCursor = 0
        fill.debt = [:]
        fill.watch.members.reserveCapacity(members)
        if self.queries.elementWatches.isEmpty { self.queries.elementWatches.reserveCapacity(members) }
    }

    /// One step of a fill: one occurrence counted or one element brought up to date. False when the fill is done.
    private func step(_ fill: QueryFill) -> Bool {
        if let counting = fill.counting {
            guard fill.countCursor < counting.count else {
                // Counted: the same copy gives the members to visit (own order: the array itself, by position).
                fill.counting = nil
                fill.debt = [:]
                if !fill.group.isOwnOrder { fill.members = counting.makeIterator() }
                return true
            }
            let element = counting[fill.countCursor]
            fill.countCursor += 1
            if let owed = fill.debt[element] {
                fill.debt[element] = owed > 1 ? owed - 1 : nil
                return true
            }
            self.addMember(element, to: fill.watch)
            return true
        }
        if fill.group.isOwnOrder {
            // The element at the cursor, evaluated where it is.
            let elements = self.elements(of: fill.watch)
            guard fill.cursor < elements.count, fill.cursor < fill.bits.count else { return false }
            let element = elements[fill.cursor]
            fill.positions?.insert(element, at: fill.cursor)
            _ = fill.bits.set(fill.cursor, to: self.matches(fill.live, element))
            fill.cursor += 1
            return true
        }
        guard let (element, mayBeFiled) = fill.next() else { return false }
        self.bringUpToDate(element, in: fill, mayBeFiled: mayBeFiled)
        return true
    }

    /// Makes the fill's answer hold what it should of `element` now (see the file comment).
    private func bringUpToDate(_ element: Value, in fill: QueryFill, mayBeFiled: Bool) {
        let group = fill.group
        let live = fill.live
        if fill.isNewGroup {
            if let old = group.entries[element] { Self.removeAll(old, from: live) }
        } else if !mayBeFiled {
            fill.stale[element] = nil
        } else {
            for old in fill.stale.removeValue(forKey: element) ?? [] { Self.removeAll(old, from: live) }
            if let now = group.entries[element] { Self.removeAll(now, from: live) }
        }
        let occurrences = fill.watch.members[element] ?? 0
        guard occurrences > 0 else {
            if fill.isNewGroup { group.entries[element] = nil }
            fill.keyIndex?.index.remove(element)
            return
        }
        let entry: Value
        if fill.isNewGroup {
            entry = self.entry(of: element, in: group)
            group.entries[element] = entry
        } else {
            guard let known = group.entries[element] else { return }
            entry = known
        }
        if let (key, index) = fill.keyIndex { index.file(element, under: self.equalityValue(of: element, key)) }
        guard self.matches(live, element) else { return }
        let rank = live.search(entry).index
        for offset in 0..<occurrences { live.list.insert(entry, at: rank + offset) }
    }

    /// Removes every occurrence filed under `entry` (equal entries are adjacent: the entry names its element).
    private static func removeAll(_ entry: Value, from live: LiveQuery) {
        let (start, found) = live.search(entry)
        guard found else { return }
        var end = start + 1
        while end < live.list.count && live.group.compare(live.list[end], entry) == 0 { end += 1 }
        for _ in start..<end { live.list.remove(at: start) }
    }

    /// A fill's answer is the query's: it joins its group (and the group its watch), and commits keep it from now on.
    private func complete(_ fill: QueryFill) {
        let registry = self.queries
        let watch = fill.watch
        let group = fill.group
        registry.fills.removeAll { $0 === fill }
        watch.fills.removeAll { $0 === fill }
        group.fills.removeAll { $0 === fill }
        if fill.isNewGroup { watch.groups.append(group) }
        if group.isOwnOrder {
            if let positions = fill.positions { watch.positions = positions }
            fill.live.bits = fill.bits
        }
        if let (key, index) = fill.keyIndex { group.keyIndexes[key] = index }
        group.add(fill.live)
        registry.unclaimed.append((fill.live, group, watch, registry.advances))
    }

    // MARK: - Commits

    /// After a commit brought `reached.watch` up to date: each of its fills queues the elements it touched (its
    /// route changed: the fill starts again). A watch still being counted counts the occurrences that joined and
    /// left (one that left before it was counted is owed).
    func noteForFills(_ reached: WatchChange) {
        let watch = reached.watch
        for fill in watch.fills {
            if reached.rebuild {
                if fill.counting != nil {
                    for element in Array(watch.members.keys) {
                        watch.members[element] = 1
                        self.removeMember(element, from: watch)
                    }
                    self.locate(watch)
                    self.begin(fill, isNewWatch: true)
                } else {
                    self.begin(fill, isNewWatch: false)  // (closeQueryBracket found the collection again)
                }
                continue
            }
            if fill.group.isOwnOrder { self.follow(reached, in: fill) }
            if fill.counting != nil {
                for detail in reached.details {
                    let (left, joined) = Self.occurrences(detail)
                    for element in left {
                        if (watch.members[element] ?? 0) > 0 {
                            self.removeMember(element, from: watch)
                        } else {
                            fill.debt[element, default: 0] += 1
                        }
                    }
                    for element in joined { self.addMember(element, to: watch) }
                    // (Visited after the copy: one that joined is not in it.)
                    for element in left { fill.enqueue(element) }
                    for element in joined { fill.enqueue(element) }
                }
                // (A changed element is visited after it was counted.)
                continue
            }
            if fill.group.isOwnOrder { continue }
            for element in reached.changed { fill.enqueue(element) }
            for detail in reached.details {
                let (left, joined) = Self.occurrences(detail)
                for element in left { fill.enqueue(element) }
                for element in joined { fill.enqueue(element) }
            }
        }
    }

    /// Own order: the bits (and the fill's positions) follow the array's insertions and removals; an element that
    /// arrives or changes before the cursor is evaluated now (the cursor evaluates those after it).
    private func follow(_ reached: WatchChange, in fill: QueryFill) {
        for detail in reached.details {
            guard let indexes = detail.indexes else { continue }
            switch detail.kind {
            case .insertion:
                for (position, element) in zip(indexes, detail.new) where position <= fill.bits.count {
                    if position < fill.cursor {
                        fill.positions?.insert(element, at: position)
                        fill.bits.insert(self.matches(fill.live, element), at: position)
                        fill.cursor += 1
                    } else {
                        fill.bits.insert(false, at: position)
                    }
                }
            case .removal:
                for position in indexes.reversed() where position < fill.bits.count {
                    _ = fill.bits.remove(at: position)
                    if position < fill.cursor {
                        _ = fill.positions?.remove(at: position)
                        fill.cursor -= 1
                    }
                }
            case .replacement:
                for (index, position) in indexes.enumerated() where index < detail.new.count && position < fill.cursor {
                    fill.positions?.replace(at: position, with: detail.new[index])
                    _ = fill.bits.set(position, to: self.matches(fill.live, detail.new[index]))
                }
            case .setting:
                break
            }
        }
        guard let positions = fill.positions ?? fill.watch.positions else { return }
        for element in reached.changed {
            let places = positions.positions(of: element).filter { $0 < fill.cursor }
            guard !places.isEmpty else { continue }
            let bit = self.matches(fill.live, element)
            for place in places { _ = fill.bits.set(place, to: bit) }
        }
    }

    /// The occurrences a collection change removed and added.
    private static func occurrences(_ detail: CollectionDetail) -> (left: [Value], joined: [Value]) {
        switch detail.kind {
        case .insertion: ([], detail.new)
        case .removal: (detail.old, [])
        case .replacement: (detail.old, detail.new)
        case .setting: ([], [])
        }
    }
}
