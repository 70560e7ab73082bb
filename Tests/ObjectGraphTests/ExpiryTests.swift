// Expiring keys in the engine: a set with a deadline, what is due and in which order, expiry as an ordinary set of
// null (notified, with its seq, replayed identically from the journal's `set $ID.key null`), deadlines moved, cleared,
// left alone by failures and undone with failed transactions, refused where null cannot be stored, kept by snapshots.
@testable import ObjectGraph
import Testing

struct ExpiryTests {
    /// The id of the object at `path`.
    static func id(_ graph: Graph, _ path: String) throws -> ObjectID {
        guard case .object(let id) = try graph.value(at: KeyPath(parsing: path)) else {
            Issue.record("\(path) is not an object")
            return -1
        }
        return id
    }

    @Test func anExpiryIsASetOfNullWithItsOwnSeqAndNotification() throws {
        let graph = Graph()
        try graph.set("session", to: .record(Record(["user": "ada"])))
        let session = try Self.id(graph, "session")
        let recorder = Recorder()
        try recorder.observe(graph, "session.token", [.prior, .old, .new], name: "T")
        let setSeq = try graph.set("session.token", to: "abc", expiresAt: 1_000).seq
        #expect(graph.expiry(try KeyPath(parsing: "session.token")) == 1_000)
        #expect(graph.expiry("session.user") == nil)
        #expect(graph.nextDeadline == 1_000)
        #expect(graph.dueExpirations(now: 999).isEmpty)
        #expect(graph.dueExpirations(now: 1_000) == [Deadline(object: session, key: "token", expiresAt: 1_000)])
        recorder.clear()

        #expect(try graph.expire(object: session, key: "token", now: 999) == nil)  // not due: nothing happens
        #expect(graph.seq == setSeq && recorder.log.isEmpty)
        let seq = try graph.expire(object: session, key: "token", now: 1_500)
        #expect(seq == setSeq + 1 && graph.seq == setSeq + 1)
        #expect(recorder.events == ["T:prior", "T:after"])
        #expect(recorder.log.allSatisfy { $0.seq == setSeq + 1 && $0.kind == .setting })
        #expect(recorder.log[1].old == "abc" && recorder.log[1].new == .null)
        #expect(try graph.meta("session.token").value == .null)
        #expect(try graph.meta("session.token").modSeq == setSeq + 1)
        #expect(graph.expiry("session.token") == nil && graph.nextDeadline == nil && graph.deadlineCount == 0)
        // Expired once: a second call finds no deadline.
        #expect(try graph.expire(object: session, key: "token", now: 2_000) == nil)
        #expect(graph.seq == setSeq + 1)
    }

    @Test func aLaterSetMovesOrClearsTheDeadlineAndCollectionMutationsKeepIt() throws {
        let graph = Graph()
        try graph.set("a", to: 1, expiresAt: 100)
        try graph.set("a", to: 2, expiresAt: 50)
        #expect(graph.expiry("a") == 50 && graph.nextDeadline == 50)
        try graph.set("a", to: 3, expiresAt: 70)
        #expect(graph.expiry("a") == 70 && graph.deadlineCount == 1)
        try graph.set("a", to: 4)
        #expect(graph.expiry("a") == nil && graph.nextDeadline == nil)
        // A collection mutation is not a set: the deadline stays (Redis keeps a TTL through LPUSH).
        try graph.set("list", to: [1], expiresAt: 10)
        try graph.mutate(KeyPath(parsing: "list"), .append([2]))
        #expect(graph.expiry("list") == 10)
        // A set through missing intermediates puts the deadline on the key the path ends at.
        try graph.set("x.y.z", to: 1, expiresAt: 20)
        let y = try Self.id(graph, "x.y")
        #expect(graph.expiry("x.y.z") == 20 && graph.expiry("x") == nil)
        #expect(graph.dueExpirations(now: 20).map(\.object) == [.root, y])
    }

    @Test func dueKeysComeEarliestFirstThenByObjectAndKey() throws {
        let graph = Graph()
        try graph.set("o", to: .record(Record(["k": 1])))
        let o = try Self.id(graph, "o")
        try graph.set("o.b", to: 1, expiresAt: 5)
        try graph.set("o.a", to: 1, expiresAt: 5)
        try graph.set("z", to: 1, expiresAt: 5)
        try graph.set("y", to: 1, expiresAt: 3)
        try graph.set("late", to: 1, expiresAt: 9)
        #expect(graph.nextDeadline == 3)
        #expect(
            graph.dueExpirations(now: 5) == [
                Deadline(object: .root, key: "y", expiresAt: 3), Deadline(object: .root, key: "z", expiresAt: 5),
                Deadline(object: o, key: "a", expiresAt: 5), Deadline(object: o, key: "b", expiresAt: 5),
            ])
    }

    @Test func theTableAgreesWithADictionaryUnderManyChanges() throws {
        let graph = Graph()
        var expected: [String: UInt64] = [:]
        var random = SystemRandomNumberGenerator()
        for step in 0..<2_000 {
            let key = "k\(UInt8.random(in: 0..<60, using: &random))"
            if Bool.random(using: &random) {
                let deadline = UInt64.random(in: 0..<500, using: &random)
                try graph.set(KeyPath(parsing: key), to: .int(Int64(step)), expiresAt: deadline)
                expected[key] = deadline
            } else {
                try graph.set(KeyPath(parsing: key), to: .int(Int64(step)))
                expected[key] = nil
            }
            if step % 97 == 0 {
                let now = UInt64.random(in: 0..<500, using: &random)
                let due = expected.filter { $0.value <= now }.map {
                    Deadline(object: .root, key: $0.key, expiresAt: $0.value)
                }
                #expect(graph.dueExpirations(now: now) == due.sorted())
                #expect(graph.nextDeadline == expected.values.min())
            }
        }
        #expect(graph.deadlineCount == expected.count)
        for (key, deadline) in expected { #expect(graph.expiry(key) == deadline) }
    }

    @Test func aFailedSetLeavesTheDeadlineAlone() throws {
        let graph = Graph()
        try graph.set("a", to: 1, expiresAt: 100)
        #expect(throws: GraphError.self) { try graph.set("a", to: 2, if: .modSeq(0)) }
        #expect(throws: GraphError.self) { try graph.set("a", to: 2, if: .absent, expiresAt: 5) }
        #expect(throws: GraphError.self) { try graph.set("a", to: .double(.nan), expiresAt: 5) }
        #expect(graph.expiry("a") == 100 && graph.seq == 1)
    }

    @Test func aFailedTransactionUndoesEveryDeadlineChange() throws {
        let graph = Graph()
        try graph.set("a", to: 1, expiresAt: 100)
        try graph.set("b", to: 1, expiresAt: 200)
        let before = graph.makeSnapshot()
        #expect(throws: TransactionError.self) {
            try graph.transaction([
                .set(KeyPath(parsing: "a"), 2, expiresAt: 300),  // moved
                .set(KeyPath(parsing: "b"), 2),  // cleared
                .set(KeyPath(parsing: "c"), 2, expiresAt: 5),  // new
                .set(KeyPath(parsing: "n.m"), 2, expiresAt: 6),  // on an object the dry run creates
                .set(KeyPath(parsing: "a"), 3, expiresAt: 400),  // moved twice
                .conditional(.absent, .set(KeyPath(parsing: "a"), 4)),  // fails
            ])
        }
        #expect(graph.makeSnapshot() == before)
        #expect(graph.expiry("a") == 100 && graph.expiry("b") == 200 && graph.expiry("c") == nil)
        #expect(graph.deadlineCount == 2 && graph.nextDeadline == 100)
        // The same ops without the failing one go through, deadlines included.
        try graph.transaction([
            .set(KeyPath(parsing: "a"), 2, expiresAt: 300), .set(KeyPath(parsing: "b"), 2),
            .set(KeyPath(parsing: "c"), 2, expiresAt: 5), .set(KeyPath(parsing: "n.m"), 2, expiresAt: 6),
        ])
        #expect(graph.expiry("a") == 300 && graph.expiry("b") == nil && graph.expiry("c") == 5)
        #expect(graph.expiry("n.m") == 6 && graph.deadlineCount == 3)
        // validateTransaction changes nothing either.
        try graph.validateTransaction([.set(KeyPath(parsing: "a"), 9)])
        #expect(graph.expiry("a") == 300)
    }

    static func typedGraph() throws -> Graph {
        let person = ObjectClass(
            name: "Person", isOpen: false,
            properties: [
                .stored("name", StoredProperty(type: .string, defaultValue: "", isNullable: false)),
                .stored("note", StoredProperty(type: .string)),
            ])
        let root = ObjectClass(
            name: "Root", isOpen: false,
            properties: [
                .stored("count", StoredProperty(type: .int, defaultValue: 0, isNullable: false)),
                .stored("level", StoredProperty(type: .int, isNullable: false, nullPolicy: .replace(0))),
                .stored("nick", StoredProperty(type: .string)),
                .stored("person", StoredProperty(type: .object("Person"))),
                .computed("twice", dependsOn: ["count"]) { read in read("count") },
            ])
        return Graph(model: try Model(root: root, classes: [person]))
    }

    @Test func aDeadlineNeedsAKeyThatCanHoldNull() throws {
        let graph = try Self.typedGraph()
        #expect(throws: GraphError.ttlNotAllowed(path: "count")) { try graph.set("count", to: 1, expiresAt: 5) }
        // A null replacement is not null: expiry would store 0, not what the client asked.
        #expect(throws: GraphError.ttlNotAllowed(path: "level")) { try graph.set("level", to: 1, expiresAt: 5) }
        #expect(throws: GraphError.readOnly(path: "twice")) { try graph.set("twice", to: 1, expiresAt: 5) }
        // Through an intermediate the set creates, the created object's class decides.
        #expect(throws: GraphError.ttlNotAllowed(path: "person.name")) {
            try graph.set("person.name", to: "Ada", expiresAt: 5)
        }
        #expect(graph.seq == 0 && graph.deadlineCount == 0)
        try graph.set("nick", to: "ada", expiresAt: 5)
        try graph.set("person.note", to: "hi", expiresAt: 6)
        try graph.set("count", to: 2)  // no deadline: fine
        #expect(graph.expiry("nick") == 5 && graph.expiry("person.note") == 6)
        let person = try Self.id(graph, "person")
        #expect(try graph.expire(object: person, key: "note", now: 6) == graph.seq)
        #expect(try graph.get("person.note") == .null && graph.expiry("person.note") == nil)
        #expect(throws: TransactionError(op: 1, error: .ttlNotAllowed(path: "count"))) {
            try graph.transaction([
                .set(KeyPath(parsing: "nick"), "x"), .set(KeyPath(parsing: "count"), 3, expiresAt: 9),
            ])
        }
        #expect(graph.expiry("nick") == 5)
    }

    @Test func anObjectWithADeadlineLivesUntilItExpires() throws {
        let graph = Graph()
        try graph.set("s", to: .record(Record(["t": 1])))
        let old = try Self.id(graph, "s")
        try graph.set("s.t", to: 1, expiresAt: 10)
        try graph.set("s", to: .record(Record(["t": 2])))  // the old object is unreachable now
        graph.collectGarbage()
        #expect(graph.get(id: old) != .null)  // kept: the journaled expiry must find it after a restart too
        let snapshot = graph.makeSnapshot()
        #expect(snapshot.objects.contains { $0.id == old } && snapshot.deadlines.count == 1)
        let seq = try #require(try graph.expire(object: old, key: "t", now: 10))
        // A replay of the journal from the snapshot finds the object and lands on the same seq.
        let restored = try Graph(model: .open, snapshot: snapshot)
        #expect(try restored.set(KeyPath(parsing: "$\(old).t"), to: .null).seq == seq)
        graph.collectGarbage()
        #expect(graph.get(id: old) == .null)  // expired: collected like any unreachable object
    }

    @Test func expiringAnObjectThatNoLongerExistsIsANoOp() throws {
        let graph = Graph()
        try graph.set("s", to: .record(Record(["t": 1])))
        let id = try Self.id(graph, "s")
        try graph.set("s.t", to: 1, expiresAt: 10)
        graph.objects.remove(id)  // cannot happen through the API (the collector keeps it); the guard still holds
        #expect(try graph.expire(object: id, key: "t", now: 10) == nil)
        #expect(graph.seq == 2 && graph.deadlineCount == 0)
    }

    @Test func aSnapshotKeepsDeadlinesAndARestoredGraphExpiresAlike() throws {
        let graph = Graph()
        try graph.set("team", to: .record(Record(["lead": .record(Record(["name": "Ada"]))])))
        try graph.set("team.lead.token", to: "x", expiresAt: 30)
        try graph.set("team.code", to: 7, expiresAt: 30)
        try graph.set("cache", to: [1, 2], expiresAt: 20)
        try graph.set("keep", to: 1, expiresAt: 90)
        let snapshot = graph.makeSnapshot()
        #expect(snapshot.deadlines.count == 4)
        let restored = try Graph(model: .open, snapshot: snapshot)
        #expect(restored.makeSnapshot() == snapshot)
        #expect(restored.nextDeadline == 20 && restored.expiry("team.lead.token") == 30)
        #expect(restored.dueExpirations(now: 50) == graph.dueExpirations(now: 50))
        // Expiring on both, and replaying the journal form on a third copy, gives the same seqs and state.
        let replayed = try Graph(model: .open, snapshot: snapshot)
        let recorder = Recorder()
        try recorder.observe(restored, "team.code", [.old, .new])
        for due in graph.dueExpirations(now: 50) {
            let seq = try graph.expire(object: due.object, key: due.key, now: 50)
            #expect(try restored.expire(object: due.object, key: due.key, now: 50) == seq)
            let journaled = try KeyPath(parsing: "$\(due.object).\(due.key)")
            #expect(try replayed.set(journaled, to: .null).seq == seq)
        }
        #expect(recorder.log.count == 1 && recorder.log[0].old == 7 && recorder.log[0].new == .null)
        #expect(graph.makeSnapshot() == restored.makeSnapshot())
        #expect(graph.makeSnapshot() == replayed.makeSnapshot())
        #expect(graph.makeSnapshot().deadlines == [Deadline(object: .root, key: "keep", expiresAt: 90)])
    }

    @Test func aSnapshotWithABadDeadlineIsRefused() throws {
        let graph = Graph()
        try graph.set("a", to: 1, expiresAt: 5)
        var snapshot = graph.makeSnapshot()
        snapshot.deadlines.append(Deadline(object: 77, key: "a", expiresAt: 5))
        #expect(throws: SnapshotError.self) { try Graph(model: .open, snapshot: snapshot) }
        snapshot.deadlines = [
            Deadline(object: .root, key: "a", expiresAt: 5), Deadline(object: .root, key: "a", expiresAt: 6),
        ]
        #expect(throws: SnapshotError.self) { try Graph(model: .open, snapshot: snapshot) }
    }
}
