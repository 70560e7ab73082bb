@testable import ObjectGraph
import TestSupport
import Testing

/// Live queries, model-checked in process: random typed graphs, random queries (predicates, sort descriptors,
/// offsets, limits, selected keys) and long random sequences of mutations (sort and filter keys set, elements
/// inserted, removed and replaced, transactions, set mutations, a relationship's key the query reads through); after
/// every seq each subscriber's mirror — built only by applying its notifications in order — equals the query's answer
/// computed from scratch (`Graph.query`), and so does the count; every notification of a seq carries it, priors
/// come first and pair with afters.
struct LiveQueryModelTests {
    typealias Generator = SeededRandom

    static let player = ObjectClass(
        name: "Player", isOpen: false,
        properties: [
            .stored("name", StoredProperty(type: .string, defaultValue: "")),
            .stored("score", StoredProperty(type: .int, defaultValue: 0)),
            .stored("team", StoredProperty(type: .int, defaultValue: 0)),
            .stored("rival", StoredProperty(type: .object("Player"))),
            // A computed key, read by predicates and sort descriptors: its dependencies are the triggers.
            .computed("rank", dependsOn: ["score", "team"]) { read in
                guard case .int(let score) = read("score"), case .int(let team) = read("team") else { return .null }
                return .int(team * 1000 + score)
            },
        ])
    static let root = ObjectClass(
        name: "Root", isOpen: true,
        properties: [
            .stored("players", StoredProperty(type: .array(.object("Player")), defaultValue: [])),
            .stored("club", StoredProperty(type: .set(.object("Player")), defaultValue: [])),
        ])

    /// A subscriber's mirror of its window, built from its notifications.
    final class Mirror: ObservationSink {
        var window: [Value] = []
        var count = 0
        var log: [Change] = []

        func observe(_ change: Change, options: ObservationOptions) {
            self.log.append(change)
            guard !change.isPrior else { return }
            if let count = change.count { self.count = count }
            let new = Self.list(change.new)
            switch change.kind {
            case .setting:
                self.window = new
            case .insertion:
                for (index, value) in zip(change.indexes ?? [], new) {
                    guard index >= 0 && index <= self.window.count else { return self.invalid(change) }
                    self.window.insert(value, at: index)
                }
            case .removal:
                for index in (change.indexes ?? []).reversed() {
                    guard index >= 0 && index < self.window.count else { return self.invalid(change) }
                    self.window.remove(at: index)
                }
            case .replacement:
                for (index, value) in zip(change.indexes ?? [], new) {
                    guard index >= 0 && index < self.window.count else { return self.invalid(change) }
                    self.window[index] = value
                }
            }
        }

        var invalidChanges: [Change] = []

        func invalid(_ change: Change) {
            self.invalidChanges.append(change)
        }

        static func list(_ value: Value?) -> [Value] {
            guard case .array(let list)? = value else { return [] }
            return list.array
        }
    }

    static func randomQuery(_ random: inout Generator) -> Query {
        let predicates = ["TRUEPREDICATE", "score > 50", "team == 1", "score < 30", "rival.name == 'p3'", "rank > 1050"]
        var query = Query()
        let text = predicates[Int.random(in: 0..<predicates.count, using: &random)]
        query.predicate = try? Predicate(parsing: text)
        switch Int.random(in: 0..<5, using: &random) {
        case 0: query.orderBy = []
        case 1: query.orderBy = [SortDescriptor(keys: ["score"])]
        case 2: query.orderBy = [SortDescriptor(keys: ["score"], ascending: false), SortDescriptor(keys: ["name"], caseInsensitive: true)]
        case 3: query.orderBy = [SortDescriptor(keys: ["team"]), SortDescriptor(keys: ["rival", "score"], ascending: false)]
        default: query.orderBy = [SortDescriptor(keys: ["rank"], ascending: false)]
        }
        query.offset = Int.random(in: 0..<4, using: &random)
        query.limit = Bool.random(using: &random) ? nil : Int.random(in: 0..<6, using: &random)
        switch Int.random(in: 0..<3, using: &random) {
        case 0: query.select = nil
        case 1: query.select = [["name"], ["score"]]
        default: query.select = [["rival", "name"], ["team"]]
        }
        return query
    }

    @Test(arguments: Array(UInt64(1)...8))
    func mirrorsEqualTheQueryAfterEverySeq(seed: UInt64) throws {
        try self.run(seed: seed, players: 12, steps: 300, subscribers: 10)
    }

    /// The same on a collection large enough that the position structures have several levels.
    @Test(arguments: [101, 102])
    func mirrorsOfALargeCollection(seed: UInt64) throws {
        try self.run(seed: seed, players: 5_000, steps: 150, subscribers: 4)
    }

    /// Every subscription answered by a fill over several advances (Graph+QueryFill.swift), a few elements at a time,
    /// with the mutations of the other steps in between: once a subscriber is in, its mirror equals the answer.
    @Test(arguments: Array(UInt64(201)...212))
    func mirrorsOfQueriesFilledOverSeveralAdvances(seed: UInt64) throws {
        try self.run(seed: seed, players: 40, steps: 300, subscribers: 10, slicedFills: true)
    }

    /// The last subscriber of a large collection leaves: its watch's registrations go over several advances, at most
    /// `checkingEvery` each, while commits go on (they reach no dropped watch), and a new subscriber of the same
    /// collection meanwhile gets a watch of its own that the drain leaves alone.
    @Test func aDroppedWatchOfALargeCollectionIsDrainedAStepAtATime() throws {
        let graph = Graph(model: try Model(root: Self.root, classes: [Self.player]))
        let players = try KeyPath(parsing: "players")
        try graph.mutate(players, .append((0..<3_000).map {
            .record(Record(["name": .string("p\($0)"), "score": .int(Int64($0)), "rival": .null]))
        }))
        var query = Query()
        query.predicate = try Predicate(parsing: "rival.score > 10")  // a foreign touch per element with a rival
        query.orderBy = [SortDescriptor(keys: ["score"], ascending: false)]
        query.limit = 3
        let ids: [ObjectID] = try {
            guard case .array(let list) = try graph.value(at: players) else { return [] }
            return list.compactMap { if case .object(let id) = $0 { id } else { nil } }
        }()
        try graph.set(try KeyPath(parsing: "$\(ids[0]).rival"), to: .object(ids[2_999]))
        let (first, _) = try graph.addQueryObservation(players, query: query, options: [.new], sink: Mirror())
        var inOwnOrder = query
        inOwnOrder.orderBy = []
        let (ownOrder, _) = try graph.addQueryObservation(players, query: inOwnOrder, options: [.new], sink: Mirror())
        #expect(graph.queries.elementWatches.count == 3_000 && !graph.queries.byDependency.isEmpty)
        graph.removeQueryObservation(first)
        graph.removeQueryObservation(ownOrder)
        #expect(graph.queries.isEmpty && graph.queries.draining.count == 1, "dropped at once, drained later")
        // The group's entries and the array's position leaves: freed a step at a time too.
        #expect(graph.queries.trash.count == 2)
        #expect(graph.queries.elementWatches.count == 3_000)
        var advances = 0
        var mirror: Mirror?
        var second: QueryObserver?
        while (!graph.queries.draining.isEmpty || !graph.queries.trash.isEmpty) && advances < 1_000 {
            let before = graph.queries.elementWatches.count
            _ = graph.advanceQueryFills(checkingEvery: 100) { true }
            advances += 1
            #expect(before - graph.queries.elementWatches.count <= 100)
            try graph.set(try KeyPath(parsing: "$\(ids[advances]).score"), to: .int(5_000 + Int64(advances)))
            if advances == 10 {
                let sink = Mirror()
                let (observer, initial) = try graph.addQueryObservation(players, query: query, options: [.initial, .new], sink: sink)
                if let initial { sink.observe(initial, options: [.initial, .new]) }
                (mirror, second) = (sink, observer)
            }
        }
        #expect(advances >= 90 && graph.queries.draining.isEmpty && graph.queries.trash.isEmpty)
        // The new watch kept every registration of its own, and its subscriber's mirror is the answer.
        try graph.set(try KeyPath(parsing: "$\(ids[0]).score"), to: .int(99_999))
        let expected = try graph.query(players, query, fromLiveQueries: false)
        #expect(mirror?.window == expected.window && mirror?.window.isEmpty == false)
        #expect(graph.queries.elementWatches.count == 3_000)
        if let second { graph.removeQueryObservation(second) }
        graph.finishQueryDrains()
        #expect(graph.queries.isEmpty && graph.queries.elementWatches.isEmpty && graph.queries.byDependency.isEmpty)
    }

    func run(
        seed: UInt64, players initialPlayers: Int, steps: Int, subscribers subscriberCount: Int, slicedFills: Bool = false
    ) throws {
        var random = Generator(seed: seed)
        let graph = Graph(model: try Model(root: Self.root, classes: [Self.player]))
        if slicedFills { graph.queryFillThreshold = 0 }
        let players = try KeyPath(parsing: "players")
        let club = try KeyPath(parsing: "club")
        func record(_ index: Int) -> Value {
            .record(Record(["name": .string("p\(index % 7)"), "score": .int(Int64(index * 37 % 100)), "team": .int(Int64(index % 3))]))
        }
        try graph.mutate(players, .append((0..<initialPlayers).map(record)))
        var made = initialPlayers
        var subscribers: [(path: KeyPath, query: Query, mirror: Mirror, observer: QueryObserver)] = []
        // Sliced: subscriptions waiting for their fill (asked again after each step's advance).
        var waiting: [(path: KeyPath, query: Query, options: ObservationOptions)] = []
        var waited = 0
        func subscribe(_ path: KeyPath, _ query: Query, _ options: ObservationOptions) throws {
            let mirror = Mirror()
            let (observer, initial) = try graph.addQueryObservation(path, query: query, options: options, sink: mirror)
            if let initial { mirror.observe(initial, options: options) }
            mirror.log.removeAll()  // (the step's checks look at the changes of its seq)
            subscribers.append((path, query, mirror, observer))
        }
        func ask(_ path: KeyPath, _ query: Query, _ options: ObservationOptions) throws {
            guard slicedFills else { return try subscribe(path, query, options) }
            if try graph.prepareQueryObservation(path, query: query) {
                try subscribe(path, query, options)
            } else {
                waiting.append((path, query, options))
            }
        }
        func advance() throws {
            guard slicedFills else { return }
            _ = graph.advanceQueryFills(checkingEvery: Int.random(in: 1...9, using: &random)) { true }
            let asking = waiting
            waiting = []
            for entry in asking {
                if try graph.prepareQueryObservation(entry.path, query: entry.query) {
                    waited += 1
                    try subscribe(entry.path, entry.query, entry.options)
                } else {
                    waiting.append(entry)
                }
            }
        }
        for _ in 0..<subscriberCount {
            let path = Bool.random(using: &random) ? players : club
            let query = Self.randomQuery(&random)
            let options: ObservationOptions = Bool.random(using: &random) ? [.initial, .new, .old, .prior] : [.initial, .new]
            try ask(path, query, options)
        }
        func ids(_ path: KeyPath) throws -> [ObjectID] {
            guard case .array(let list) = try graph.value(at: path) else { return [] }
            return list.compactMap { if case .object(let id) = $0 { id } else { nil } }
        }
        for step in 0..<steps {
            if slicedFills && step % 29 == 28 {
                // Every subscriber of one collection leaves (its watch goes), and one comes: its fill counts the
                // members again while the steps change them.
                let path = Bool.random(using: &random) ? players : club
                for subscriber in subscribers where subscriber.path == path { graph.removeQueryObservation(subscriber.observer) }
                subscribers.removeAll { $0.path == path }
                try ask(path, Self.randomQuery(&random), [.initial, .new])
            }
            if step % 37 == 36 {
                // A subscriber that joins later, on a collection that changed since the first ones joined.
                let path = Bool.random(using: &random) ? players : club
                try ask(path, Self.randomQuery(&random), [.initial, .new])
            }
            for subscriber in subscribers { subscriber.mirror.log.removeAll() }
            let current = try ids(players)
            var roll = Int.random(in: 0..<12, using: &random)
            if current.count < 3 && roll >= 2 && roll != 10 { roll = 0 }  // too few players: add one
            do {
                switch roll {
                case 0, 1:
                    made += 1
                    try graph.mutate(players, .insert(indexes: [Int.random(in: 0...current.count, using: &random)], values: [record(made)]))
                case 2 where !current.isEmpty:
                    try graph.mutate(players, .remove(indexes: [Int.random(in: 0..<current.count, using: &random)]))
                case 3 where !current.isEmpty:
                    // Another player (new or already in) takes an index: possibly a repeat of one already there.
                    let other: Value = Bool.random(using: &random) ? record(made + 1) : .object(current.randomElement(using: &random)!)
                    made += 1
                    try graph.mutate(players, .replace(indexes: [Int.random(in: 0..<current.count, using: &random)], values: [other]))
                case 4, 5, 6:
                    let id = current.randomElement(using: &random)!
                    let key = ["score", "team", "name"][Int.random(in: 0..<3, using: &random)]
                    let value: Value = key == "name" ? .string("p\(Int.random(in: 0..<9, using: &random))") : .int(Int64.random(in: 0..<100, using: &random))
                    try graph.set(try KeyPath(parsing: "$\(id).\(key)"), to: key == "team" ? .int(Int64.random(in: 0..<3, using: &random)) : value)
                case 7 where !current.isEmpty:
                    let id = current.randomElement(using: &random)!
                    let rival = current.randomElement(using: &random)!
                    try graph.set(try KeyPath(parsing: "$\(id).rival"), to: .object(rival))
                case 8 where !current.isEmpty:
                    let members = (0..<Int.random(in: 1..<4, using: &random)).map { _ in Value.object(current.randomElement(using: &random)!) }
                    try graph.mutate(club, Bool.random(using: &random) ? .union(members) : .minus(members))
                case 9 where current.count > 2:
                    let a = current.randomElement(using: &random)!
                    let ops: [TransactionOp] = [
                        .set(try KeyPath(parsing: "$\(a).score"), .int(Int64.random(in: 0..<100, using: &random))),
                        .mutate(players, .remove(indexes: [0])),
                        .mutate(players, .append([.object(a)])),
                        .mutate(club, .union([.object(a)])),
                    ]
                    try graph.transaction(ops)
                case 10:
                    // The whole collection replaced.
                    try graph.set(players, to: .array(current.shuffled(using: &random).prefix(max(10, current.count - 5)).map(Value.object)))
                default:
                    break
                }
            }
            try advance()
            for subscriber in subscribers {
                let expected = try graph.query(subscriber.path, subscriber.query, fromLiveQueries: false)
                #expect(try graph.query(subscriber.path, subscriber.query) == expected, "a get answered by the live query")
                #expect(subscriber.mirror.invalidChanges.isEmpty, "seed \(seed) step \(step) roll \(roll): \(subscriber.query) \(subscriber.mirror.invalidChanges)")
                #expect(subscriber.mirror.window == expected.window, "seed \(seed) step \(step) roll \(roll): \(subscriber.query)\n\(subscriber.mirror.window)\n\(expected.window)\n\(subscriber.mirror.log.map { "\($0.kind) \($0.indexes ?? []) \($0.isPrior)" })")
                if subscriber.mirror.window != expected.window || !subscriber.mirror.invalidChanges.isEmpty { return }
                #expect(subscriber.mirror.count == expected.count, "seed \(seed) step \(step): count")
                let log = subscriber.mirror.log
                #expect(log.allSatisfy { $0.seq == graph.seq && $0.count == expected.count })
                // At most a removal, an insertion and a replacement (or one setting) per seq.
                let afters = log.filter { !$0.isPrior }
                #expect(afters.count <= 3 && Set(afters.map(\.kind)).count == afters.count, "\(afters.map(\.kind))")
                if let firstAfter = log.firstIndex(where: { !$0.isPrior }) {
                    #expect(log[firstAfter...].allSatisfy { !$0.isPrior }, "priors come first")
                    if subscriber.observer.options.contains(.prior) {
                        #expect(log.filter(\.isPrior).count == log.filter { !$0.isPrior }.count, "priors pair with afters")
                    }
                }
            }
        }
        if slicedFills {
            // Every fill ends, each in fewer advances than its elements and touches; most subscriptions waited.
            for _ in 0..<100_000 where !waiting.isEmpty { try advance() }
            #expect(waiting.isEmpty)
            #expect(waited >= 5, "subscriptions waited for their fill")
        }
        for subscriber in subscribers { graph.removeQueryObservation(subscriber.observer) }
        graph.finishQueryDrains()  // (a large collection's registrations are removed a step at a time)
        #expect(graph.queries.isEmpty && graph.queries.elementWatches.isEmpty && graph.queries.byDependency.isEmpty)
    }

    /// A leaderboard: an element that climbs within the window is one removal and one insertion, nothing else; one
    /// that drops out lets the next one in at the same place (a replacement).
    @Test func anElementMovingWithinTheWindowIsOneRemovalAndOneInsertion() throws {
        let graph = Graph()
        let players = try KeyPath(parsing: "players")
        try graph.mutate(players, .append([("ada", 30), ("bob", 10), ("cy", 20), ("di", 5)].map {
            .record(Record(["name": .string($0.0), "score": .int($0.1)]))
        }))
        let mirror = Mirror()
        var query = Query(orderBy: [SortDescriptor(keys: ["score"], ascending: false)], limit: 3, select: [["name"]])
        query.predicate = nil
        let (_, initial) = try graph.addQueryObservation(players, query: query, options: [.initial, .new, .old], sink: mirror)
        mirror.observe(try #require(initial), options: [.initial, .new, .old])
        #expect(mirror.window.map { Self.name($0) } == ["ada", "cy", "bob"])
        guard case .array(let list) = try graph.value(at: players), case .object(let cy) = list[2], case .object(let ada) = list[0]
        else { return }
        mirror.log.removeAll()
        try graph.set(try KeyPath(parsing: "$\(cy).score"), to: .int(40))
        #expect(mirror.log.map(\.kind) == [.removal, .insertion])
        #expect(mirror.log.map(\.indexes) == [[1], [0]])
        #expect(mirror.window.map { Self.name($0) } == ["cy", "ada", "bob"])
        mirror.log.removeAll()
        try graph.set(try KeyPath(parsing: "$\(ada).score"), to: .int(1))
        #expect(mirror.log.map(\.kind) == [.removal, .insertion])
        #expect(mirror.window.map { Self.name($0) } == ["cy", "bob", "di"])
        mirror.log.removeAll()
        // Di (shown last) drops below ada, who takes her place: one replacement at index 2.
        guard case .object(let di) = list[3] else { return }
        try graph.set(try KeyPath(parsing: "$\(di).score"), to: .int(0))
        #expect(mirror.log.map(\.kind) == [.replacement] && mirror.log.first?.indexes == [2])
        #expect(mirror.window.map { Self.name($0) } == ["cy", "bob", "ada"])
    }

    static func name(_ value: Value) -> String {
        guard case .record(let record) = value else { return "?" }
        return record["name"]?.stringValue ?? "?"
    }
}
