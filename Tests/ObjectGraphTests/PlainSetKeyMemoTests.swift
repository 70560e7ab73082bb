// The plain set's memo of undeclared keys (Graph+Set.swift, `UndeclaredKeys`): a key remembered as undeclared in one
// open class must still be validated where another class, or the same class, declares a key, and observers of a path
// set through the memo are notified as before.
import ObjectGraph
import Testing

struct PlainSetKeyMemoTests {
    /// An open root that declares `count` and `gadget`, and an open `Gadget` that declares `level` (an int).
    static func makeGraph() throws -> Graph {
        let gadget = ObjectClass(
            name: "Gadget", isOpen: true, properties: [.stored("level", StoredProperty(type: .int))])
        let root = ObjectClass(
            name: "Root", isOpen: true,
            properties: [
                .stored("count", StoredProperty(type: .int, defaultValue: 0, isNullable: false)),
                .stored("gadget", StoredProperty(type: .object("Gadget"), defaultValue: .record(Record()))),
            ])
        return Graph(model: try Model(root: root, classes: [gadget]))
    }

    @Test func aKeyUndeclaredInOneClassIsStillValidatedWhereAnotherDeclaresIt() throws {
        let graph = try Self.makeGraph()
        // The gadget also under an undeclared key of the root, so that `box.level` is a plain set's route.
        guard case .object(let gadget) = try graph.value(at: KeyPath(parsing: "gadget")) else {
            Issue.record("the gadget is not an object")
            return
        }
        try graph.set("box", to: .object(gadget))
        // `level` is undeclared in Root: stored as given, and remembered.
        try graph.set("level", to: "high")
        try graph.set("level", to: "higher")
        #expect(try graph.get("level") == "higher")
        // Gadget declares it an int: the same key name in another class is validated, before and after.
        #expect(throws: GraphError.self) { try graph.set("box.level", to: "high") }
        try graph.set("box.level", to: 3)
        try graph.set("level", to: "again")
        #expect(throws: GraphError.self) { try graph.set("box.level", to: "high") }
        #expect(throws: GraphError.self) { try graph.set("gadget.level", to: "high") }
        #expect(try graph.get("gadget.level") == 3)
        // And a key undeclared in both is stored in either.
        try graph.set("box.colour", to: "red")
        try graph.set("colour", to: "blue")
        #expect(try graph.get("gadget.colour") == "red")
    }

    @Test func aDeclaredKeyOfTheRememberedClassIsValidatedAfterUndeclaredSets() throws {
        let graph = try Self.makeGraph()
        // More undeclared keys than the memo holds, in turn, between sets of the declared `count`.
        for round in 0..<3 {
            for key in ["x", "y", "z"] { try graph.set(KeyPath(parsing: key), to: .int(Int64(round))) }
            #expect(throws: GraphError.self) { try graph.set("count", to: "many") }
            #expect(throws: GraphError.self) { try graph.set("count", to: .null) }
            try graph.set("count", to: .int(Int64(round)))
        }
        #expect(try graph.get("count") == 2)
        #expect(try graph.get("z") == 2)
        // A computed or reserved key is never taken for a storable undeclared one.
        #expect(throws: GraphError.self) { try graph.set("@count", to: 1) }
    }

    @Test func setsThroughTheMemoNotifyTheirObservers() throws {
        let graph = try Self.makeGraph()
        var seen: [Value?] = []
        let token = try graph.observe("bench.value", options: [.new]) { seen.append($0.new) }
        try graph.set("bench", to: .record(Record()))
        for value in 1...3 { try graph.set("bench.value", to: .int(Int64(value))) }
        // The intermediate replaced: the path re-targets, and the next plain set reaches the new object.
        try graph.set("bench", to: .record(Record(["value": 10])))
        try graph.set("bench.value", to: 11)
        // The intermediate removed and its object collected: the next set creates a new one (the general path).
        try graph.set("bench", to: .null)
        graph.collectGarbage()
        try graph.set("bench.value", to: 12)
        try graph.set("bench.value", to: 13)
        #expect(seen == [.null, 1, 2, 3, 10, 11, .null, 12, 13])
        #expect(try graph.get("bench.value") == 13)
        token.invalidate()
    }
}
