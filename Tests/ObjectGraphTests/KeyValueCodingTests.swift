import ObjectGraph
import Testing

struct KeyValueCodingTests {
    @Test func unsetKeyReadsNull() throws {
        let graph = Graph()
        #expect(try graph.get(KeyPath(parsing: "name")) == .null)
        #expect(try graph.get(KeyPath(parsing: "person.address.city")) == .null)
    }

    @Test func setAndGetScalars() throws {
        let graph = Graph()
        let values: [Value] = [.null, true, 42, .int(.max), .int(.min), 2.5, "Savings", ["a", 1, 2.0, .null]]
        for (index, value) in values.enumerated() {
            try graph.set(KeyPath(parsing: "k\(index)"), to: value)
            #expect(try graph.get(KeyPath(parsing: "k\(index)")) == value)
        }
        #expect(graph.seq == UInt64(values.count))
    }

    @Test func keyPathCreatesIntermediatesLikeMkdirP() throws {
        let graph = Graph()
        let seq = try graph.set(KeyPath(parsing: "person.address.city"), to: "Lisbon").seq
        #expect(seq == 1)
        #expect(try graph.get(KeyPath(parsing: "person.address.city")) == "Lisbon")
        guard case .record(let person) = try graph.get(KeyPath(parsing: "person")) else {
            Issue.record("person is not an object")
            return
        }
        #expect(person.keys == ["address"])
        #expect(graph.objectCount == 3)
    }

    @Test func recordBecomesAnObject() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "person"), to: .record(Record(["firstName": "Ada", "address": .record(Record(["city": "London"]))])))
        #expect(try graph.get(KeyPath(parsing: "person.address.city")) == "London")
        #expect(try graph.get(KeyPath(parsing: "person.firstName")) == "Ada")
        guard case .object = try graph.value(at: KeyPath(parsing: "person.address")) else {
            Issue.record("address was not stored as an object")
            return
        }
    }

    @Test func pathThroughANonObjectIsATypeMismatch() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "count"), to: 5)
        try graph.set(KeyPath(parsing: "list"), to: [1, 2])
        #expect(throws: GraphError.typeMismatch(path: "count", reason: "int is not an object")) {
            try graph.set(KeyPath(parsing: "count.x"), to: 1)
        }
        #expect(throws: GraphError.typeMismatch(path: "list", reason: "an array of int has no keys")) {
            try graph.get(KeyPath(parsing: "list.x"))
        }
        #expect(graph.seq == 2, "a failed set uses no seq")
    }

    @Test func nullIntermediateIsReplacedBySet() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "a"), to: .null)
        #expect(try graph.get(KeyPath(parsing: "a.b")) == .null)
        try graph.set(KeyPath(parsing: "a.b"), to: 1)
        #expect(try graph.get(KeyPath(parsing: "a.b")) == 1)
    }

    @Test func objectsByID() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "person.name"), to: "Ada")
        guard case .object(let id) = try graph.value(at: KeyPath(parsing: "person")) else {
            Issue.record("no person object")
            return
        }
        #expect(try graph.get(KeyPath(parsing: "$\(id).name")) == "Ada")
        try graph.set(KeyPath(parsing: "$\(id).name"), to: "Grace")
        #expect(try graph.get(KeyPath(parsing: "person.name")) == "Grace")
        #expect(throws: GraphError.undefinedKey(path: "$999")) { try graph.get(KeyPath(parsing: "$999.name")) }
    }

    @Test func invalidRecordKeysAndDepthAreRejected() throws {
        let graph = Graph()
        #expect(throws: GraphError.self) {
            try graph.set(KeyPath(parsing: "a"), to: .record(Record(["x.y": 1])))
        }
        var deep: Value = 1
        for _ in 0..<100 { deep = [deep] }
        #expect(throws: GraphError.tooDeep(path: "a", limit: 64)) { try graph.set(KeyPath(parsing: "a"), to: deep) }
        #expect(throws: GraphError.self) { try graph.set(KeyPath(parsing: ""), to: 1) }
        #expect(graph.seq == 0)
    }

    @Test func exportShowsIdsAndTerminatesOnSharedObjects() throws {
        let graph = Graph()
        try graph.set(KeyPath(parsing: "a.v"), to: 1)
        guard case .object(let id) = try graph.value(at: KeyPath(parsing: "a")) else {
            Issue.record("no object")
            return
        }
        try graph.set(KeyPath(parsing: "b"), to: .object(id))  // a shared object
        try graph.set(KeyPath(parsing: "a.self"), to: .object(id))  // a cycle
        guard case .record(let root) = try graph.get(KeyPath(parsing: "")) else {
            Issue.record("root is not a record")
            return
        }
        guard case .record(let a) = root["a"] else {
            Issue.record("a is not a record")
            return
        }
        #expect(a.id == id)
        #expect(a["self"] == .object(id))
        #expect(root["b"] == .object(id))
    }

    @Test func garbageIsCollected() throws {
        let graph = Graph()
        for index in 0..<3000 {
            try graph.set(KeyPath(parsing: "current"), to: .record(Record(["n": .int(Int64(index))])))
        }
        #expect(graph.objectCount < 1500)
        graph.collectGarbage()
        #expect(graph.objectCount == 2)
        #expect(try graph.get(KeyPath(parsing: "current.n")) == 2999)
    }
}
