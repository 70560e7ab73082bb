@testable import ObjectGraph
import TestSupport
import Testing

/// Many live queries sharing one order (a group), model-checked: queries the equality index keys (`team == K`,
/// `team == $t`, `1.0 == team`, `team == nil`, a conjunction with one) beside queries it cannot key (ranges, `!=`,
/// `[c]`, `IN`, a computed key, a key path through a relationship), over open elements whose `team` takes values of
/// every kind (ints, integral and other doubles, strings, bools, nil, arrays); sort keys, filter keys, inserts,
/// removals, repeats, set mutations and transactions; after every seq each mirror equals the brute-force answer. And
/// the bound itself: a mutation evaluates only its candidate queries.
struct LiveQueryGroupTests {
    typealias Mirror = LiveQueryModelTests.Mirror
    typealias Generator = SeededRandom

    static let thing = ObjectClass(name: "Thing", isOpen: true, properties: [])
    static let root = ObjectClass(
        name: "Root", isOpen: true,
        properties: [
            .stored("things", StoredProperty(type: .array(.object("Thing")), defaultValue: [])),
            .stored("bag", StoredProperty(type: .set(.object("Thing")), defaultValue: [])),
        ])

    static let predicates = [
        "team == 0", "team == 1", "team == 2", "team == 1.0", "1 == team", "team == $t", "team == nil", "team == 'a'",
        "team == TRUE", "team == 1.5", "team == 2 AND score > 40", "score > 50 AND team == 1",
        "name == 'p3' AND team == 0", "rival.name == 'p3' AND team == 1", "team == {1, 2}",
        // Not keyed: evaluated for every changed element.
        "score > 50", "team != 1", "name ==[c] 'P3'", "team IN {0, 2}", "team == 1 OR score < 10", "TRUEPREDICATE",
        "ANY team == 1", "rival.team == 1", "NOT team == 1", "team == score",
    ]

    static func teamValue(_ random: inout Generator) -> Value {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: .double(1.0)
        case 1: .double(1.5)
        case 2: .string("a")
        case 3: .bool(true)
        case 4: .null
        case 5: .array([.int(1), .int(2)])
        case 6: .double(2)
        default: .int(Int64.random(in: 0..<3, using: &random))
        }
    }

    static func randomQuery(_ random: inout Generator, orderBy: [SortDescriptor]) -> Query {
        var query = Query()
        query.predicate = try? Predicate(parsing: Self.predicates[Int.random(in: 0..<Self.predicates.count, using: &random)])
        query.variables = ["t": Bool.random(using: &random) ? .int(2) : .double(0)]
        query.orderBy = orderBy
        query.offset = Int.random(in: 0..<3, using: &random)
        query.limit = Bool.random(using: &random) ? nil : Int.random(in: 1..<6, using: &random)
        query.select = Bool.random(using: &random) ? [["name"], ["team"]] : nil
        return query
    }

    @Test(arguments: Array(UInt64(1)...6))
    func manyQueriesOfOneGroupStayExact(seed: UInt64) throws {
        try self.run(seed: seed, sliced: false)
    }

    /// The same with every query that evaluates more than three members answered by a fill over several advances
    /// (Graph+QueryFill.swift) while the steps go on: new orders, unkeyed queries, keyed ones that build their key's
    /// index or use it.
    @Test(arguments: Array(UInt64(11)...16))
    func manyQueriesFilledOverSeveralAdvancesStayExact(seed: UInt64) throws {
        try self.run(seed: seed, sliced: true)
    }

    func run(seed: UInt64, sliced: Bool) throws {
        var random = Generator(seed: seed)
        let graph = Graph(model: try Model(root: Self.root, classes: [Self.thing]))
        if sliced { graph.queryFillThreshold = 3 }
        let things = try KeyPath(parsing: "things")
        let bag = try KeyPath(parsing: "bag")
        var made = 0
        func record() -> Value {
            made += 1
            return .record(Record([
                "name": .string("p\(made % 7)"), "score": .int(Int64(made * 37 % 100)), "team": Self.teamValue(&random),
            ]))
        }
        try graph.mutate(things, .append((0..<30).map { _ in record() }))
        try graph.mutate(bag, .union(Array(try Self.objects(graph, things).prefix(10))))
        // Most subscribers share one order per collection (one group each); a few others make a second group.
        let orders: [[SortDescriptor]] = [
            [SortDescriptor(keys: ["score"], ascending: false)], [SortDescriptor(keys: ["name"]), SortDescriptor(keys: ["score"])],
        ]
        var subscribers: [(path: KeyPath, query: Query, mirror: Mirror)] = []
        var waiting: [(path: KeyPath, query: Query, options: ObservationOptions)] = []
        var waited = 0
        func add(_ path: KeyPath, _ query: Query, _ options: ObservationOptions) throws {
            let mirror = Mirror()
            let (_, initial) = try graph.addQueryObservation(path, query: query, options: options, sink: mirror)
            if let initial { mirror.observe(initial, options: options) }
            subscribers.append((path, query, mirror))
        }
        func subscribe() throws {
            let path = Int.random(in: 0..<4, using: &random) == 0 ? bag : things
            let order = orders[Int.random(in: 0..<5, using: &random) == 0 ? 1 : 0]
            let query = Self.randomQuery(&random, orderBy: order)
            let options: ObservationOptions = Bool.random(using: &random) ? [.initial, .new, .old, .prior] : [.initial, .new]
            let ready = try !sliced || graph.prepareQueryObservation(path, query: query)
            if ready {
                try add(path, query, options)
            } else {
                waiting.append((path, query, options))
            }
        }
        func advance() throws {
            guard sliced else { return }
            _ = graph.advanceQueryFills(checkingEvery: Int.random(in: 1...6, using: &random)) { true }
            let asking = waiting
            waiting = []
            for entry in asking {
                if try graph.prepareQueryObservation(entry.path, query: entry.query) {
                    waited += 1
                    try add(entry.path, entry.query, entry.options)
                } else {
                    waiting.append(entry)
                }
            }
        }
        for _ in 0..<40 {
            try subscribe()
            if Bool.random(using: &random) { try advance() }
        }
        defer {
            if sliced { #expect(waited >= 10, "subscriptions waited for their fill") }
        }
        for step in 0..<250 {
            if sliced && step % 10 == 9 { try subscribe() }
            if step % 50 == 49 { try subscribe() }
            let current = try Self.objects(graph, things)
            let some = { current.randomElement(using: &random) ?? .null }
            let object = { (value: Value) -> ObjectID in if case .object(let id) = value { id } else { 0 } }
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1, 2:
                try graph.set(try KeyPath(parsing: "$\(object(some())).team"), to: Self.teamValue(&random))
            case 3, 4:
                try graph.set(try KeyPath(parsing: "$\(object(some())).score"), to: .int(Int64.random(in: 0..<100, using: &random)))
            case 5:
                let value: Value = Bool.random(using: &random) ? record() : some()  // possibly a repeat
                try graph.mutate(things, .insert(indexes: [Int.random(in: 0...current.count, using: &random)], values: [value]))
            case 6 where current.count > 5:
                try graph.mutate(things, .remove(indexes: [Int.random(in: 0..<current.count, using: &random)]))
            case 7:
                let members = (0..<Int.random(in: 1..<4, using: &random)).map { _ in some() }
                try graph.mutate(bag, Bool.random(using: &random) ? .union(members) : .minus(members))
            case 8:
                let (a, b) = (object(some()), object(some()))
                try graph.transaction([
                    .set(try KeyPath(parsing: "$\(a).team"), Self.teamValue(&random)),
                    .set(try KeyPath(parsing: "$\(b).score"), .int(Int64.random(in: 0..<100, using: &random))),
                    .set(try KeyPath(parsing: "$\(a).score"), .int(Int64.random(in: 0..<100, using: &random))),
                    .mutate(things, .append([.object(b)])),
                    .mutate(bag, .union([.object(a)])),
                ])
            default:
                let (a, b) = (object(some()), some())
                try graph.set(try KeyPath(parsing: "$\(a).rival"), to: b)
                if case .object(let rival) = b, Bool.random(using: &random) {
                    try graph.set(try KeyPath(parsing: "$\(rival).name"), to: .string("p\(Int.random(in: 0..<7, using: &random))"))
                }
            }
            try advance()
            for subscriber in subscribers {
                let expected = try graph.query(subscriber.path, subscriber.query, fromLiveQueries: false)
                #expect(try graph.query(subscriber.path, subscriber.query) == expected, "a get answered by the live query")
                #expect(subscriber.mirror.invalidChanges.isEmpty)
                #expect(
                    subscriber.mirror.window == expected.window && subscriber.mirror.count == expected.count,
                    "seed \(seed) step \(step): \(subscriber.query)\n\(subscriber.mirror.window)\n\(expected.window)")
                if subscriber.mirror.window != expected.window { return }
            }
        }
    }

    static func objects(_ graph: Graph, _ path: KeyPath) throws -> [Value] {
        guard case .array(let list) = try graph.value(at: path) else { return [] }
        return list.array
    }

    /// 100 queries `team == K` sorted by score, beside one that is not keyed: setting an element's score evaluates
    /// two predicates (its team's query and the unkeyed one), moving it to another team three (the old team's, the
    /// new team's, the unkeyed one), an insertion two, a removal none — whatever the number of queries; a new keyed
    /// query evaluates the members of its team only.
    @Test func aMutationEvaluatesOnlyItsCandidateQueries() throws {
        let graph = Graph()
        let players = try KeyPath(parsing: "players")
        try graph.mutate(players, .append((0..<1_000).map {
            .record(Record(["team": .int(Int64($0 % 100)), "score": .int(Int64($0 * 37 % 1000))]))
        }))
        let order = [SortDescriptor(keys: ["score"], ascending: false)]
        var mirrors: [Int: Mirror] = [:]
        for team in 0..<100 {
            let mirror = Mirror()
            let query = Query(predicate: try Predicate(parsing: "team == \(team)"), orderBy: order, limit: 5)
            let (_, initial) = try graph.addQueryObservation(players, query: query, options: [.initial, .new], sink: mirror)
            mirror.observe(try #require(initial), options: [.initial, .new])
            mirrors[team] = mirror
        }
        let unkeyed = Mirror()
        let (_, initial) = try graph.addQueryObservation(
            players, query: Query(predicate: try Predicate(parsing: "score > 990"), orderBy: order), options: [.initial, .new],
            sink: unkeyed)
        unkeyed.observe(try #require(initial), options: [.initial, .new])
        let ids = try LiveQueryGroupTests.objects(graph, players)
        guard case .object(let first) = ids[7] else { return }  // team 7
        func evaluations(_ body: () throws -> Void) rethrows -> Int {
            let before = graph.queries.predicateEvaluations
            try body()
            return graph.queries.predicateEvaluations - before
        }
        #expect(try evaluations { try graph.set(try KeyPath(parsing: "$\(first).score"), to: .int(5_000)) } == 2)
        #expect(mirrors[7]?.window.first.flatMap { Self.id($0) } == first)
        #expect(unkeyed.window.first.flatMap { Self.id($0) } == first)
        #expect(try evaluations { try graph.set(try KeyPath(parsing: "$\(first).team"), to: .int(8)) } == 3)
        #expect(mirrors[7]?.window.contains { Self.id($0) == first } == false)
        #expect(mirrors[8]?.window.first.flatMap { Self.id($0) } == first)
        // 8.0 is 8: nothing changes, and only the team's query and the unkeyed one look.
        #expect(try evaluations { try graph.set(try KeyPath(parsing: "$\(first).team"), to: .double(8)) } == 2)
        #expect(mirrors[8]?.window.first.flatMap { Self.id($0) } == first)
        let record = Value.record(Record(["team": .int(3), "score": .int(4_000)]))
        #expect(try evaluations { try graph.mutate(players, .insert(indexes: [0], values: [record])) } == 2)
        #expect(mirrors[3]?.count == 11 && mirrors[3]?.window.count == 5)
        #expect(try evaluations { try graph.mutate(players, .remove(indexes: [0])) } == 0)
        #expect(mirrors[3]?.count == 10)
        // A new keyed query evaluates only the members its constant names (team 42 has 10).
        let late = Mirror()
        let lateQuery = Query(predicate: try Predicate(parsing: "team == 42 AND score >= 0"), orderBy: order, limit: 5)
        #expect(try evaluations {
            _ = try graph.addQueryObservation(players, query: lateQuery, options: [.initial, .new], sink: late)
        } == 10)
        #expect(try graph.query(players, lateQuery) == graph.query(players, lateQuery, fromLiveQueries: false))
        for (team, mirror) in mirrors {
            let query = Query(predicate: try Predicate(parsing: "team == \(team)"), orderBy: order, limit: 5)
            #expect(mirror.window == (try graph.query(players, query, fromLiveQueries: false)).window)
        }
    }

    static func id(_ value: Value) -> ObjectID? {
        guard case .record(let record) = value else { return nil }
        return record.id
    }
}
