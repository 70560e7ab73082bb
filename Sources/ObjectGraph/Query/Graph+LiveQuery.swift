// Live queries on the graph: adding and removing a subscriber, and the two halves of a commit that keep every live
// query answered (LiveQuery.swift has the structures). `openQueryBracket` runs before a mutation applies: it finds
// the watches the mutation's touches reach and keeps what only the state before can say (the shown values of the
// elements about to change, for `old`; a window about to be rebuilt). `closeQueryBracket` runs after the other
// observers were told: it brings each reached watch up to date — the collection's insertions and removals from the
// mutations' collection details, then each changed element evaluated again — and sends each subscriber the changes
// of its window, its priors first (after the mutation applied: a query's window change is known only then; they
// still come before every after notification of the query), then its afters, every one with the match count.

/// What a commit's mutation does to one watched collection.
final class WatchChange {
    let watch: QueryWatch
    /// The collection is found again and every query answered anew (its route or the whole collection changed).
    var rebuild = false
    /// The collection's own changes, in order (a transaction may change it several times).
    var details: [CollectionDetail] = []
    /// Elements whose keys, or keys their key paths go through, changed.
    var changed: [Value] = []
    var changedSet: Set<Value> = []
    /// Shown values before the change: by element, then by `select` (an element's record with those keys).
    var oldShown: [Value: [[[String]]?: Value]] = [:]
    /// Windows before a rebuild, by observer id.
    var oldWindows: [ObservationID: Value] = [:]

    init(watch: QueryWatch) {
        self.watch = watch
    }
}

/// The watches one commit reaches.
struct QueryBracket {
    var changes: [WatchChange] = []
}

/// One commit's window changes: a subscriber's diff is made when its query is first touched, before the query
/// changes (its count then is kept, to tell a changed count); queries the commit does not touch cost nothing.
final class QueryCommit {
    var diffs: [ObservationID: WindowDiff] = [:]
    var order: [QueryObserver] = []
    var counts: [ObjectIdentifier: (live: LiveQuery, count: Int)] = [:]
    /// The shown values before the commit of the watch being brought up to date.
    var oldShown: [Value: [[[String]]?: Value]] = [:]

    /// Call before `live` changes.
    func touch(_ live: LiveQuery) {
        guard self.counts[ObjectIdentifier(live)] == nil else { return }
        self.counts[ObjectIdentifier(live)] = (live, live.count)
        for observer in live.observers where observer.isActive && self.diffs[observer.id] == nil {
            self.diffs[observer.id] = WindowDiff(observer: observer, oldShown: self.oldShown)
            self.order.append(observer)
        }
    }
}

extension Graph {
    // MARK: - Subscribers

    /// Subscribes `sink` to the live answer of `query` on the collection at `keyPath`.
    /// - Returns: the observer (keep it to remove the subscription) and, with `initial`, the initial notification
    ///   (`setting`, the window as `new` with the `new` option, and `count`).
    /// - Throws: as `query` (1001, 1005, a missing variable), and `typeMismatch` for a collection whose changes are
    ///   announced by hand (`notify: manual`).
    public func addQueryObservation(
        _ keyPath: KeyPath, query: Query, options: ObservationOptions, sink: any ObservationSink
    ) throws(GraphError) -> (observer: QueryObserver, initial: Change?) {
        _ = try self.observableQueryTarget(keyPath, query)
        let registry = self.queries
        let watch: QueryWatch
        if let existing = registry.watches[keyPath] {
            watch = existing
            // (A fill under way on the collection is finished first: a subscriber sees no partial answer.)
            if !existing.fills.isEmpty { self.finishFills(of: existing) }
        } else {
            watch = QueryWatch(keyPath: keyPath)
            registry.watches[keyPath] = watch
            self.hasLiveQueries = true
            self.locate(watch)
            self.fill(watch)
        }
        let isOwnOrder = query.orderBy.isEmpty && !watch.target.isSet
        let group: OrderGroup
        if let existing = watch.group(for: query, isOwnOrder: isOwnOrder) {
            group = existing
        } else {
            group = OrderGroup(orderBy: query.orderBy, isOwnOrder: isOwnOrder, watch: watch)
            watch.groups.append(group)
            if isOwnOrder && watch.positions == nil { watch.positions = PositionIndex(self.elements(of: watch)) }
            self.fill(group)
        }
        let live: LiveQuery
        if let existing = group.live(answering: query) {
            live = existing
        } else {
            live = LiveQuery(predicate: query.predicate, variables: query.variables, group: group)
            group.add(live)
            self.fill(live)
        }
        let id = self.registry.nextObservationID
        self.registry.nextObservationID += 1
        let observer = QueryObserver(id: id, keyPath: keyPath, query: query, options: options, sink: sink, live: live)
        if live.observers.isEmpty && !registry.unclaimed.isEmpty { registry.unclaimed.removeAll { $0.live === live } }
        live.observers.append(observer)
        registry.observerCount += 1
        watch.selects[SelectKey(query.select), default: 0] += 1
        self.noteReads(of: observer, in: watch)
        guard options.contains(.initial) else { return (observer, nil) }
        var initial = Change(
            observation: id, kind: .setting, isPrior: false, isInitial: true,
            new: options.contains(.new) ? self.window(of: observer) : nil, old: nil, indexes: nil, seq: self.seq,
            payloadID: self.registry.nextPayloadID())
        initial.count = live.count
        return (observer, initial)
    }

    /// Checks what `addQueryObservation` checks, without subscribing.
    public func checkQueryObservable(_ keyPath: KeyPath, _ query: Query) throws(GraphError) {
        _ = try self.observableQueryTarget(keyPath, query)
    }

    /// The collection a query subscription of `query` at `keyPath` watches, once the query and the collection were
    /// checked: 1001, 1005 and a missing variable as `checkQuery`, and `typeMismatch` for a collection whose changes
    /// are announced by hand (`notify: manual`).
    func observableQueryTarget(_ keyPath: KeyPath, _ query: Query) throws(GraphError) -> QueryTarget {
        let target = try self.queryTarget(keyPath, strict: true)
        try self.checkQuery(query, elementClass: target.elementClass, path: keyPath)
        if let holder = target.holder, let object = self.objects[holder.object],
            !object.objectClass.automaticallyNotifies(holder.key)
                || object.objectClass.property(holder.key)?.stored?.notification == .manual
        {
            throw GraphError.typeMismatch(
                path: keyPath.description, reason: "a live query needs a collection whose changes are announced automatically")
        }
        return target
    }

    /// The number of live query subscribers.
    public var queryObservationCount: Int { self.queries.observerCount }

    /// Ends a query subscription; what no other subscriber needs is dropped.
    public func removeQueryObservation(_ observer: QueryObserver) {
        guard observer.isActive else { return }
        observer.isActive = false
        self.queries.observerCount -= 1
        let live = observer.live
        live.observers.removeAll { $0 === observer }
        let select = SelectKey(observer.query.select)
        let uses = (live.group.watch.selects[select] ?? 1) - 1
        live.group.watch.selects[select] = uses > 0 ? uses : nil
        self.dropIfUnobserved(live)
    }

    /// Drops a query nobody observes, then its group and its watch when nothing else uses them (a fill under way
    /// keeps them). Once: a query already dropped is left alone.
    func dropIfUnobserved(_ live: LiveQuery) {
        let group = live.group
        guard live.observers.isEmpty, group.queries.contains(where: { $0 === live }) else { return }
        group.remove(live)
        guard group.queries.isEmpty, group.fills.isEmpty else { return }
        let watch = group.watch
        watch.groups.removeAll { $0 === group }
        // What only the group used: a large map of it is freed a step at a time.
        if group.entries.count > self.queryFillThreshold {
            self.queries.trash.append(QueryTrash(entries: group.entries))
            group.entries = [:]
            self.hasQueryFillWork = true
        }
        if !watch.groups.contains(where: \.isOwnOrder), var positions = watch.positions {
            watch.positions = nil
            if positions.count > self.queryFillThreshold {
                self.queries.trash.append(QueryTrash(leaves: positions.takeLeaves()))
                self.hasQueryFillWork = true
            }
        }
        guard watch.groups.isEmpty, watch.fills.isEmpty, self.queries.watches[watch.keyPath] === watch else { return }
        self.queries.watches[watch.keyPath] = nil
        self.hasLiveQueries = !self.queries.watches.isEmpty
        // A large collection's registrations are removed over the next `advanceQueryFills` calls (one per member).
        if watch.members.count > self.queryFillThreshold {
            self.startDrain(watch)
        } else {
            self.unregister(watch)
        }
    }

    /// The subscriber's window now, as the query shows it.
    func window(of observer: QueryObserver) -> Value {
        let live = observer.live
        let start = min(observer.offset, live.count)
        let end = min(observer.end, live.count)
        var shown: [Value] = []
        shown.reserveCapacity(end - start)
        for rank in start..<end {
            shown.append(self.project(live.element(at: rank), select: observer.query.select))
        }
        return .array(shown)
    }

    // MARK: - Building

    /// Finds the watch's collection and registers the touches that lead to it.
    func locate(_ watch: QueryWatch) {
        let registry = self.queries
        for touch in watch.route { QueryRegistry.remove(watch, from: &registry.byRoute, at: touch) }
        if let holder = watch.target.holder { QueryRegistry.remove(watch, from: &registry.byHolder, at: holder) }
        watch.target = (try? self.queryTarget(watch.keyPath, strict: false))
            ?? QueryTarget(holder: nil, elements: [], isSet: false, elementClass: nil)
        var route: Set<Touch> = []
        if self.objects[watch.keyPath.origin] != nil, watch.keyPath.keys.count > 1 {
            let collector = TriggerCollector()
            _ = try? self.evaluate(
                watch.keyPath.keys.dropLast(), from: .object(watch.keyPath.origin), collector: collector, isObserved: true)
            route = Set(collector.triggers.keys)
        }
        watch.route = route
        for touch in route { QueryRegistry.add(watch, to: &registry.byRoute, at: touch) }
        if let holder = watch.target.holder { QueryRegistry.add(watch, to: &registry.byHolder, at: holder) }
    }

    /// The watched collection's elements now (an empty list when its holder holds none).
    func elements(of watch: QueryWatch) -> ValueList {
        guard let holder = watch.target.holder, let object = self.objects[holder.object],
            case .array(let elements) = self.read(object, holder.key)
        else { return [] }
        return elements
    }

    /// Counts the watch's members (and registers them as elements).
    func fill(_ watch: QueryWatch) {
        for element in self.elements(of: watch) { self.addMember(element, to: watch) }
    }

    /// Sorted: each member's entry.
    private func fill(_ group: OrderGroup) {
        guard !group.isOwnOrder else { return }
        for element in group.watch.members.keys where group.entries[element] == nil {
            group.entries[element] = self.entry(of: element, in: group)
        }
    }

    /// Answers a new query (or one whose collection was found again): every member evaluated once, O(n).
    private func fill(_ live: LiveQuery) {
        let group = live.group
        if let keys = live.singleKeys { group.watch.ownKeys?.formUnion(keys) }
        if let (key, _) = live.equality, key.count == 1 { group.watch.ownKeys?.insert(key[0]) }
        if group.isOwnOrder {
            var bits: [Bool] = []
            let elements = self.elements(of: group.watch)
            bits.reserveCapacity(elements.count)
            for element in elements { bits.append(self.matches(live, element)) }
            live.bits = RankTree(count: bits.count) { bits[$0] }
            return
        }
        // A keyed query evaluates the members its constant names (and the unkeyed ones); its key's index is made
        // by the first query keyed under it, in one scan.
        var members: [Value]
        if let (key, value) = live.equality {
            let index: KeyIndex
            if let existing = group.keyIndexes[key] {
                index = existing
            } else {
                index = KeyIndex()
                for element in group.watch.members.keys { index.file(element, under: self.equalityValue(of: element, key)) }
                group.keyIndexes[key] = index
            }
            members = index.members(under: value)
        } else {
            members = Array(group.watch.members.keys)
        }
        var matched: [Value] = []
        for element in members {
            let occurrences = group.watch.members[element] ?? 0
            guard occurrences > 0, self.matches(live, element), let entry = group.entries[element] else { continue }
            for _ in 0..<occurrences { matched.append(entry) }
        }
        matched.sort { group.compare($0, $1) < 0 }
        live.list = ValueList(matched)
    }

    func entry(of element: Value, in group: OrderGroup) -> Value {
        if let keys = group.singleKeys, !self.readsComputed(element, keys) {
            group.watch.ownKeys?.formUnion(keys)
            return OrderGroup.entry(self.sortKey(of: element, group.orderBy, collector: nil), element)
        }
        let collector = TriggerCollector()
        let key = self.sortKey(of: element, group.orderBy, collector: collector)
        self.noteTriggers(collector, of: element, in: group.watch)
        return OrderGroup.entry(key, element)
    }

    /// Whether `live`'s predicate holds for `element`, the touches it read registered when they may go beyond the
    /// element's stored keys (the common predicate over its own stored keys allocates nothing).
    func matches(_ live: LiveQuery, _ element: Value) -> Bool {
        self.queries.predicateEvaluations &+= 1
        if let keys = live.singleKeys, !self.readsComputed(element, keys) {
            return live.matches(element, in: self, collector: nil)
        }
        let collector = TriggerCollector()
        let result = live.matches(element, in: self, collector: collector)
        self.noteTriggers(collector, of: element, in: live.group.watch)
        return result
    }

    /// Whether one of `keys` is a computed key of the object `element` is (its dependencies are touches to collect).
    private func readsComputed(_ element: Value, _ keys: Set<String>) -> Bool {
        guard case .object(let id) = element, let object = self.objects[id] else { return false }
        let objectClass = object.objectClass
        return !objectClass.isOpen || !objectClass.properties.isEmpty
            ? keys.contains { objectClass.property($0)?.computed != nil } : false
    }

    /// The keys a new subscriber shows. A key of the element itself that is stored is noted once for the watch; a
    /// longer key path (`manager.name`) or a computed key is read from every member once, for the touches it goes
    /// through, and from each member that joins later (`watch.selectPaths`).
    private func noteReads(of observer: QueryObserver, in watch: QueryWatch) {
        guard let select = observer.query.select else {
            watch.ownKeys = nil
            return
        }
        var added: [[String]] = []
        for keys in select {
            if keys.count == 1, watch.target.elementClass?.property(keys[0])?.computed == nil {
                watch.ownKeys?.insert(keys[0])
            } else if watch.selectPaths.insert(keys).inserted {
                added.append(keys)
            }
        }
        guard !added.isEmpty else { return }
        for element in watch.members.keys { self.noteSelectReads(of: element, paths: added, in: watch) }
    }

    /// The touches the selected key paths of `element` go through.
    private func noteSelectReads(of element: Value, paths: some Collection<[String]>, in watch: QueryWatch) {
        guard !paths.isEmpty else { return }
        let collector = TriggerCollector()
        for keys in paths { _ = try? self.evaluate(keys[...], from: element, collector: collector) }
        self.noteTriggers(collector, of: element, in: watch)
    }

    /// Registers what evaluating an element read: its own keys (in the watch's set), and touches of other objects.
    private func noteTriggers(_ collector: TriggerCollector, of element: Value, in watch: QueryWatch) {
        let own: ObjectID? = if case .object(let id) = element { id } else { nil }
        var foreign = watch.foreign[element] ?? []
        for touch in collector.triggers.keys {
            if touch.object == own {
                if touch.key.isEmpty { watch.ownKeys = nil } else { watch.ownKeys?.insert(touch.key) }
            } else if !foreign.contains(touch) {
                foreign.append(touch)
                watch.dependents[touch, default: [:]][element, default: 0] += 1
                QueryRegistry.add(watch, to: &self.queries.byDependency, at: touch)
            }
        }
        if !foreign.isEmpty { watch.foreign[element] = foreign }
    }

    /// Forgets an element's foreign touches (it left the collection, or is evaluated again).
    func dropForeign(of element: Value, in watch: QueryWatch) {
        guard let foreign = watch.foreign.removeValue(forKey: element) else { return }
        for touch in foreign {
            guard var elements = watch.dependents[touch] else { continue }
            elements[element] = nil
            if elements.isEmpty {
                watch.dependents[touch] = nil
                QueryRegistry.remove(watch, from: &self.queries.byDependency, at: touch)
            } else {
                watch.dependents[touch] = elements
            }
        }
    }

    func addMember(_ element: Value, to watch: QueryWatch) {
        let count = watch.members[element, default: 0]
        watch.members[element] = count + 1
        if count == 0, case .object(let id) = element { self.queries.elementWatches[id, default: []].append(watch) }
    }

    func removeMember(_ element: Value, from watch: QueryWatch) {
        guard let count = watch.members[element] else { return }
        if count > 1 {
            watch.members[element] = count - 1
            return
        }
        watch.members[element] = nil
        self.dropForeign(of: element, in: watch)
        for group in watch.groups where !group.isOwnOrder {
            group.entries[element] = nil
            for index in group.keyIndexes.values { index.remove(element) }
        }
        if case .object(let id) = element, var watches = self.queries.elementWatches[id] {
            watches.removeAll { $0 === watch }
            self.queries.elementWatches[id] = watches.isEmpty ? nil : watches
        }
    }

    func unregister(_ watch: QueryWatch) {
        let registry = self.queries
        for touch in watch.route { QueryRegistry.remove(watch, from: &registry.byRoute, at: touch) }
        if let holder = watch.target.holder { QueryRegistry.remove(watch, from: &registry.byHolder, at: holder) }
        for element in Array(watch.members.keys) {
            watch.members[element] = 1
            self.removeMember(element, from: watch)
        }
    }

    // MARK: - Commits

    /// Before a mutation applies: the watches its touches reach, and what only the state before can say.
    func openQueryBracket(_ mutations: [Mutation]) -> QueryBracket? {
        let registry = self.queries
        guard !registry.isEmpty else { return nil }
        var bracket = QueryBracket()
        func change(for watch: QueryWatch) -> WatchChange {
            if let existing = bracket.changes.first(where: { $0.watch === watch }) { return existing }
            let created = WatchChange(watch: watch)
            bracket.changes.append(created)
            return created
        }
        for mutation in mutations {
            let (holder, route, elements) = registry.watches(for: mutation.touch)
            for watch in route { change(for: watch).rebuild = true }
            for watch in holder {
                if let detail = mutation.detail { change(for: watch).details.append(detail) } else { change(for: watch).rebuild = true }
            }
            for watch in elements {
                let reached = change(for: watch)
                var found: [Value] = []
                if watch.members[.object(mutation.touch.object)] != nil { found.append(.object(mutation.touch.object)) }
                if let dependents = watch.dependents[mutation.touch] { found.append(contentsOf: dependents.keys) }
                for element in found where reached.changedSet.insert(element).inserted { reached.changed.append(element) }
            }
        }
        guard !bracket.changes.isEmpty else { return nil }
        for reached in bracket.changes {
            if reached.rebuild {
                for group in reached.watch.groups {
                    for live in group.queries {
                        for observer in live.observers where observer.isActive && observer.options.contains(.old) {
                            reached.oldWindows[observer.id] = self.window(of: observer)
                        }
                    }
                }
            }
            // How the changed elements are shown now: an old value, and what tells a shown element's real change
            // from a change of keys nobody shows.
            for element in reached.changed {
                var shown: [[[String]]?: Value] = [:]
                for select in reached.watch.selects.keys { shown[select.keys] = self.project(element, select: select.keys) }
                reached.oldShown[element] = shown
            }
        }
        return bracket
    }

    /// After a mutation applied and its other observers were told: brings every reached watch up to date and tells
    /// each subscriber how its window changed.
    func closeQueryBracket(_ bracket: QueryBracket, seq: UInt64) {
        let commit = QueryCommit()
        for reached in bracket.changes {
            let watch = reached.watch
            // A fill under way learns what changed once the watch is up to date (Graph+QueryFill.swift); a watch whose
            // members are still being counted is brought up to date by its fill alone.
            defer { if !watch.fills.isEmpty { self.noteForFills(reached) } }
            guard !watch.groups.isEmpty || (!watch.fills.isEmpty && !watch.isCounting) else { continue }
            commit.oldShown = reached.oldShown
            if reached.rebuild {
                for group in watch.groups {
                    for live in group.queries { commit.touch(live) }
                }
                self.rebuild(watch)
                for group in watch.groups {
                    for live in group.queries {
                        for observer in live.observers where observer.isActive {
                            commit.diffs[observer.id]?.replaceAll(
                                with: self.window(of: observer), old: reached.oldWindows[observer.id])
                        }
                    }
                }
            } else {
                // The members whose keys changed first (in their places before the collection's own changes, which
                // then find each element's entry current), then the collection's changes in order.
                for element in reached.changed where watch.members[element] != nil {
                    self.update(element, in: watch, commit: commit)
                }
                for detail in reached.details { self.apply(detail, to: watch, commit: commit) }
            }
        }
        for (live, count) in commit.counts.values where live.count != count {
            for observer in live.observers { commit.diffs[observer.id]?.countChanged = true }
        }
        // Priors of every subscriber first (subscription order), then the afters (reverse order).
        let sorted = commit.order.sorted { $0.id < $1.id }
        var afters: [(QueryObserver, [Change])] = []
        for observer in sorted {
            guard observer.isActive, let diff = commit.diffs[observer.id] else { continue }
            let changes = diff.changes(graph: self, seq: seq, count: observer.live.count)
            if changes.isEmpty { continue }
            if observer.options.contains(.prior) {
                for change in changes {
                    var prior = change
                    prior.isPrior = true
                    prior.new = nil
                    prior.payloadID = self.registry.nextPayloadID()  // its own fields: its own payload (encoders cache by it)
                    observer.sink.observe(prior, options: observer.options)
                }
            }
            afters.append((observer, changes))
        }
        for (observer, changes) in afters.reversed() where observer.isActive {
            for change in changes { observer.sink.observe(change, options: observer.options) }
        }
    }

    /// Finds the collection again and answers every query anew.
    private func rebuild(_ watch: QueryWatch) {
        for element in Array(watch.members.keys) {
            watch.members[element] = 1
            self.removeMember(element, from: watch)
        }
        self.locate(watch)
        self.fill(watch)
        if watch.groups.contains(where: \.isOwnOrder) { watch.positions = PositionIndex(self.elements(of: watch)) }
        for group in watch.groups {
            group.entries = [:]
            group.keyIndexes = [:]
            self.fill(group)
            for live in group.queries { self.fill(live) }
        }
        watch.selectPaths = []
        for observer in watch.groups.flatMap({ $0.queries.flatMap(\.observers) }) { self.noteReads(of: observer, in: watch) }
    }

    /// One change of the collection itself: its insertions and removals, at their indexes (arrays) or by value
    /// (sets).
    private func apply(_ detail: CollectionDetail, to watch: QueryWatch, commit: QueryCommit) {
        let isSet = detail.indexes == nil
        switch detail.kind {
        case .insertion:
            for (position, element) in zip(detail.indexes ?? [], detail.new) where !isSet {
                self.insert(element, at: position, in: watch, commit: commit)
            }
            if isSet {
                for element in detail.new { self.insert(element, at: nil, in: watch, commit: commit) }
            }
        case .removal:
            if let indexes = detail.indexes {
                for (position, element) in zip(indexes, detail.old).reversed() {
                    self.remove(element, at: position, from: watch, commit: commit)
                }
            } else {
                for element in detail.old { self.remove(element, at: nil, from: watch, commit: commit) }
            }
        case .replacement:
            if let indexes = detail.indexes {
                for (index, position) in indexes.enumerated() where index < detail.old.count && index < detail.new.count {
                    self.remove(detail.old[index], at: position, from: watch, commit: commit)
                    self.insert(detail.new[index], at: position, in: watch, commit: commit)
                }
            } else {
                for element in detail.old { self.remove(element, at: nil, from: watch, commit: commit) }
                for element in detail.new { self.insert(element, at: nil, in: watch, commit: commit) }
            }
        case .setting:
            break
        }
    }

    /// Sorted: the queries of `group` that may hold `element` or match it now, each once: the unindexed ones, and
    /// for each indexed key the ones keyed under the element's value of it as last filed (they may hold it) and, with
    /// `refile` (the element joined or changed), under its value now, which is filed (they may match it); all of the
    /// key's queries for a value that is not keyed. The others neither hold nor match it: a query holding the element
    /// matched it when it was filed, so its constant was that value.
    private func candidates(of element: Value, in group: OrderGroup, refile: Bool) -> [LiveQuery] {
        group.stamp &+= 1
        let stamp = group.stamp
        var found: [LiveQuery] = []
        func add(_ live: LiveQuery) {
            guard live.stamp != stamp else { return }
            live.stamp = stamp
            found.append(live)
        }
        func add(_ place: KeyIndex.Place, _ byValue: [Value: [LiveQuery]]) {
            switch place {
            case .keyed(let value):
                for live in byValue[value] ?? [] { add(live) }
            case .unkeyed:
                for lives in byValue.values {
                    for live in lives { add(live) }
                }
            case .absent:
                break
            }
        }
        for live in group.unindexed { add(live) }
        for (key, byValue) in group.equality {
            guard let index = group.keyIndexes[key] else {
                add(.unkeyed, byValue)  // not reached: a key's index is made with its first query
                continue
            }
            add(index.place(of: element), byValue)
            if refile {
                let now = self.equalityValue(of: element, key)
                index.file(element, under: now)
                add(now.map { .keyed($0) } ?? .unkeyed, byValue)
            }
        }
        return found
    }

    /// The index key of `element`'s value of `key` as a predicate reads it; nil when it cannot be keyed (not a
    /// scalar, or a computed key whose dependencies an evaluation must collect).
    func equalityValue(of element: Value, _ key: [String]) -> Value? {
        if case .object(let id) = element, let object = self.objects[id], object.objectClass.property(key[0])?.computed != nil {
            return nil
        }
        let value = (try? self.evaluate(key[...], from: element, collector: nil)) ?? .null
        return OrderGroup.equalityValue(value)
    }

    /// An element joins the collection (at `position` in an array).
    private func insert(_ element: Value, at position: Int?, in watch: QueryWatch, commit: QueryCommit) {
        let isNew = watch.members[element] == nil
        self.addMember(element, to: watch)
        if isNew { self.noteSelectReads(of: element, paths: watch.selectPaths, in: watch) }
        if let position { watch.positions?.insert(element, at: position) }
        for group in watch.groups {
            if group.isOwnOrder {
                guard let position else { continue }
                for live in group.queries {
                    let bit = self.matches(live, element)
                    if bit { commit.touch(live) }
                    live.bits.insert(bit, at: position)
                    if bit { self.inserted(rank: live.bits.rank(position), in: live, commit: commit) }
                }
                continue
            }
            let entry = group.entries[element] ?? self.entry(of: element, in: group)
            group.entries[element] = entry
            for live in self.candidates(of: element, in: group, refile: isNew) where self.matches(live, element) {
                commit.touch(live)
                let rank = live.search(entry).index
                live.list.insert(entry, at: rank)
                self.inserted(rank: rank, in: live, commit: commit)
            }
        }
    }

    /// An element leaves the collection (from `position` in an array).
    private func remove(_ element: Value, at position: Int?, from watch: QueryWatch, commit: QueryCommit) {
        for group in watch.groups {
            if group.isOwnOrder {
                guard let position else { continue }
                for live in group.queries where live.bits[position] {
                    commit.touch(live)
                    self.removing(rank: live.bits.rank(position), in: live, commit: commit)
                }
                for live in group.queries { live.bits.remove(at: position) }
                continue
            }
            guard let entry = group.entries[element] else { continue }
            for fill in group.fills { fill.noteStale(element, entry) }
            for live in self.candidates(of: element, in: group, refile: false) {
                let (rank, found) = live.search(entry)
                guard found else { continue }
                commit.touch(live)
                self.removing(rank: rank, in: live, commit: commit)
                live.list.remove(at: rank)
            }
        }
        if let position { watch.positions?.remove(at: position) }
        self.removeMember(element, from: watch)
    }

    /// A member whose keys (or keys its key paths go through) changed: evaluated again in every group — own order by
    /// every query, sorted by the candidate queries only.
    private func update(_ element: Value, in watch: QueryWatch, commit: QueryCommit) {
        self.dropForeign(of: element, in: watch)
        self.noteSelectReads(of: element, paths: watch.selectPaths, in: watch)
        let occurrences = watch.members[element] ?? 0
        for group in watch.groups {
            if group.isOwnOrder {
                self.updateInOwnOrder(element, in: group, commit: commit)
                continue
            }
            guard let old = group.entries[element] else { continue }
            for fill in group.fills { fill.noteStale(element, old) }
            let new = self.entry(of: element, in: group)
            group.entries[element] = new
            let moves = group.compare(old, new) != 0
            for live in self.candidates(of: element, in: group, refile: true) {
                let (start, was) = live.search(old)
                let now = self.matches(live, element)
                if was && (moves || !now) {
                    // It leaves its place (and comes back at its new one when it still matches).
                    commit.touch(live)
                    for _ in 0..<occurrences {
                        self.removing(rank: start, in: live, commit: commit)
                        live.list.remove(at: start)
                    }
                } else if was {
                    // A shown element that stays may show new values.
                    commit.touch(live)
                    for rank in start..<(start + occurrences) {
                        for observer in live.observers where observer.isActive {
                            commit.diffs[observer.id]?.replaced(rank: rank, element: element)
                        }
                    }
                }
                if now && (moves || !was) {
                    commit.touch(live)
                    let place = live.search(new).index
                    for offset in 0..<occurrences {
                        live.list.insert(new, at: place + offset)
                        self.inserted(rank: place + offset, in: live, commit: commit)
                    }
                }
            }
        }
    }

    /// Own order: each query's bit at each of the element's positions may flip; a shown element that stays may show
    /// new values.
    private func updateInOwnOrder(_ element: Value, in group: OrderGroup, commit: QueryCommit) {
        let places = group.watch.positions?.positions(of: element) ?? []
        for live in group.queries {
            let bit = self.matches(live, element)
            for place in places {
                let was = live.bits[place]
                if was && !bit {
                    commit.touch(live)
                    self.removing(rank: live.bits.rank(place), in: live, commit: commit)
                    live.bits.set(place, to: false)
                } else if !was && bit {
                    commit.touch(live)
                    live.bits.set(place, to: true)
                    self.inserted(rank: live.bits.rank(place), in: live, commit: commit)
                } else if bit {
                    commit.touch(live)
                    let rank = live.bits.rank(place)
                    for observer in live.observers where observer.isActive {
                        commit.diffs[observer.id]?.replaced(rank: rank, element: element)
                    }
                }
            }
        }
    }

    /// The match at `rank` is about to leave (the query still holds it): each subscriber's window loses it, or
    /// shifts when it was before the window; the match after the window comes into view.
    private func removing(rank: Int, in live: LiveQuery, commit: QueryCommit) {
        let count = live.count
        for observer in live.observers where observer.isActive {
            let (start, end) = (observer.offset, observer.end)
            guard rank < end, start < count, start < end else { continue }
            let leaving = rank < start ? start : rank
            let element = live.element(at: leaving)
            let entering = end < count ? live.element(at: end) : nil
            commit.diffs[observer.id]?.removed(at: leaving - start, element: element)
            if let entering { commit.diffs[observer.id]?.inserted(at: min(end, count) - 1 - start, element: entering) }
        }
    }

    /// A match arrived at `rank` (the query holds it): each subscriber's window gains it, or shifts when it came
    /// before the window; the last shown match is pushed out when the window was full.
    private func inserted(rank: Int, in live: LiveQuery, commit: QueryCommit) {
        let count = live.count  // after the insertion
        for observer in live.observers where observer.isActive {
            let (start, end) = (observer.offset, observer.end)
            guard rank < end, start < count, start < end else { continue }
            if end < count {
                // The window was full: its last match (now at `end`) is pushed out.
                commit.diffs[observer.id]?.removed(at: end - 1 - start, element: live.element(at: end))
            }
            let arriving = rank < start ? start : rank
            commit.diffs[observer.id]?.inserted(at: arriving - start, element: live.element(at: arriving))
        }
    }
}

/// The `select` of a subscriber as a set key.
struct SelectKey: Hashable {
    let keys: [[String]]?
    init(_ keys: [[String]]?) { self.keys = keys }
}

/// One subscriber's window changes within one commit, as the fewest notifications their kinds allow. The changes
/// arrive one at a time, each at an index of the window as the previous ones left it (an element that enters and a
/// neighbour pushed out, the same element leaving and coming back elsewhere); `changes` replays them on the window as
/// runs of its original positions and the elements that arrived, so that what enters and leaves within the commit
/// cancels out, and tells the rest as at most one removal (indexes in the window before), one insertion (indexes in
/// the window after) and one replacement (shown elements that stayed and show new values).
struct WindowDiff {
    let observer: QueryObserver
    let oldShown: [Value: [[[String]]?: Value]]
    private var steps: [Step] = []
    /// A whole new window (a rebuild): replaces the steps.
    private var whole: (new: Value, old: Value?)?
    var countChanged = false

    enum Step {
        case removed(Int, Value)
        case inserted(Int, Value)
        case replaced(Int, Value)
    }

    init(observer: QueryObserver, oldShown: [Value: [[[String]]?: Value]]) {
        self.observer = observer
        self.oldShown = oldShown
    }

    mutating func replaceAll(with window: Value, old: Value?) {
        self.whole = (window, old)
        self.steps = []
    }

    /// The element at window index `index` leaves (indexes of the window as it is now).
    mutating func removed(at index: Int, element: Value) {
        self.steps.append(.removed(index, element))
    }

    /// `element` arrives at window index `index` (of the window after it).
    mutating func inserted(at index: Int, element: Value) {
        self.steps.append(.inserted(index, element))
    }

    /// The match at `rank` stays where it is but may show new values.
    mutating func replaced(rank: Int, element: Value) {
        let (start, end) = (self.observer.offset, self.observer.end)
        guard rank >= start && rank < end else { return }
        self.steps.append(.replaced(rank - start, element))
    }

    /// A piece of the window while the steps are replayed: a run of its original positions, or an element that
    /// arrived.
    private enum Run {
        case originals(Range<Int>)
        case arrived(Value)

        var count: Int {
            switch self {
            case .originals(let range): range.count
            case .arrived: 1
            }
        }
    }

    /// The notifications, shown values filled in (old ones as they were before the commit); a replacement whose
    /// values did not change is dropped; a changed count alone is a replacement with no indexes.
    func changes(graph: Graph, seq: UInt64, count: Int) -> [Change] {
        let select = self.observer.query.select
        let options = self.observer.options
        func make(_ kind: ChangeKind, indexes: [Int]?, new: Value?, old: Value?) -> Change {
            var change = Change(
                observation: self.observer.id, kind: kind, isPrior: false, isInitial: false,
                new: options.contains(.new) ? new : nil, old: options.contains(.old) ? old : nil, indexes: indexes,
                seq: seq, payloadID: graph.registry.nextPayloadID())
            change.count = count
            return change
        }
        if let whole = self.whole { return [make(.setting, indexes: nil, new: whole.new, old: whole.old)] }
        // Replay the steps on runs of the original window.
        var runs: [Run] = [.originals(0..<Int.max)]
        var removed: [(index: Int, element: Value)] = []
        var replaced: [Int: Value] = [:]  // original index -> element
        func locate(_ index: Int) -> (run: Int, offset: Int)? {
            var remaining = index
            for (position, run) in runs.enumerated() {
                if remaining < run.count { return (position, remaining) }
                remaining -= run.count
            }
            return nil
        }
        for step in self.steps {
            switch step {
            case .inserted(let index, let element):
                if let (run, offset) = locate(index) {
                    if case .originals(let range) = runs[run], offset > 0 {
                        let split = range.lowerBound + offset
                        runs.replaceSubrange(
                            run...run, with: [.originals(range.lowerBound..<split), .arrived(element), .originals(split..<range.upperBound)])
                    } else {
                        runs.insert(.arrived(element), at: run)
                    }
                } else {
                    runs.append(.arrived(element))
                }
            case .removed(let index, let element):
                guard let (run, offset) = locate(index) else { continue }
                switch runs[run] {
                case .arrived:
                    runs.remove(at: run)
                case .originals(let range):
                    let original = range.lowerBound + offset
                    removed.append((original, element))
                    replaced[original] = nil
                    runs.replaceSubrange(
                        run...run, with: [.originals(range.lowerBound..<original), .originals((original + 1)..<range.upperBound)])
                }
            case .replaced(let index, let element):
                guard let (run, offset) = locate(index), case .originals(let range) = runs[run] else { continue }
                replaced[range.lowerBound + offset] = element
            }
        }
        // Where what arrived and what stayed and changed sit in the window after.
        var arrived: [(index: Int, element: Value)] = []
        var stayed: [(index: Int, element: Value)] = []
        var position = 0
        for run in runs {
            switch run {
            case .arrived(let element):
                arrived.append((position, element))
            case .originals(let range):
                for (original, element) in replaced where range.contains(original) {
                    stayed.append((position + original - range.lowerBound, element))
                }
            }
            if case .originals(let range) = run, range.upperBound == Int.max { break }
            position += run.count
        }
        removed.sort { $0.index < $1.index }
        stayed.sort { $0.index < $1.index }
        let old: (Value) -> Value = { self.oldShown[$0]?[select] ?? graph.project($0, select: select) }
        let new: (Value) -> Value = { graph.project($0, select: select) }
        var changes: [Change] = []
        var replacements: [(index: Int, old: Value, new: Value)] = []
        if removed.count == 1 && arrived.count == 1 && removed[0].index == arrived[0].index {
            // One left and another took its place: a replacement.
            replacements.append((arrived[0].index, old(removed[0].element), new(arrived[0].element)))
        } else {
            if !removed.isEmpty {
                changes.append(make(.removal, indexes: removed.map(\.index), new: nil, old: .array(removed.map { old($0.element) })))
            }
            if !arrived.isEmpty {
                changes.append(make(.insertion, indexes: arrived.map(\.index), new: .array(arrived.map { new($0.element) }), old: nil))
            }
        }
        for (index, element) in stayed {
            let (before, after) = (old(element), new(element))
            if before != after { replacements.append((index, before, after)) }
        }
        if !replacements.isEmpty {
            replacements.sort { $0.index < $1.index }
            changes.append(
                make(
                    .replacement, indexes: replacements.map(\.index), new: .array(replacements.map(\.new)),
                    old: .array(replacements.map(\.old))))
        }
        if changes.isEmpty && self.countChanged {
            changes.append(make(.replacement, indexes: [], new: .array([]), old: .array([])))
        }
        return changes
    }
}
