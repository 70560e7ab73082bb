import ObjectGraph
import Testing

/// To-many relationships: ordered and set mutations with KVO's change detail, collection operators with Apple's
/// null and empty rules, and computed keys that depend on to-many relationships.
struct CollectionTests {
    static let employee = ObjectClass(
        name: "Employee", isOpen: false,
        properties: [
            .stored("name", StoredProperty(type: .string)),
            .stored("salary", StoredProperty(type: .double, defaultValue: 0.0)),
        ])
    static let department = ObjectClass(
        name: "Department", isOpen: false,
        properties: [
            .stored("name", StoredProperty(type: .string)),
            .stored("employees", StoredProperty(type: .array(.object("Employee")), defaultValue: [])),
            .stored("tags", StoredProperty(type: .set(.string), defaultValue: [])),
            .computed("totalSalary", dependsOn: ["employees.@sum.salary"]) { read in read("employees.@sum.salary") },
        ])
    static let root = ObjectClass(
        name: "Root", isOpen: true,
        properties: [.stored("department", StoredProperty(type: .object("Department"), defaultValue: .record(Record())))])

    static func makeGraph() throws -> Graph {
        let graph = Graph(model: try Model(root: root, classes: [employee, department]))
        for (name, salary) in [("Ada", 100.0), ("Grace", 200.0), ("Alan", 300.0)] {
            try graph.mutate(KeyPath(parsing: "department.employees"), .append([.record(Record(["name": .string(name), "salary": .double(salary)]))]))
        }
        return graph
    }

    static func employee(_ name: String, _ salary: Double) -> Value {
        .record(Record(["name": .string(name), "salary": .double(salary)]))
    }

    @Test func insertionCarriesKindIndexesAndNewValues() throws {
        let graph = try Self.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "department.employees", [.new, .old, .prior])
        try graph.mutate(KeyPath(parsing: "department.employees"), .insert(indexes: [3, 0], values: [Self.employee("Linus", 50), Self.employee("Barbara", 400)]))
        #expect(recorder.log.count == 2)
        let (prior, after) = (recorder.log[0], recorder.log[1])
        #expect(prior.isPrior && prior.kind == .insertion && prior.indexes == [0, 3])
        #expect(prior.new == nil && prior.old == nil, "an insertion has no old; a prior has no new")
        #expect(after.kind == .insertion && after.indexes == [0, 3] && after.old == nil)
        guard case .array(let inserted)? = after.new, inserted.count == 2, case .record(let first) = inserted[0] else {
            Issue.record("new is not an array of two snapshots: \(String(describing: after.new))")
            return
        }
        #expect(first["name"] == "Barbara", "values pair with indexes; new lists them in index order")
        #expect(first.id != nil)
        #expect(try graph.get("department.employees.name") == ["Barbara", "Ada", "Grace", "Linus", "Alan"])
    }

    @Test func removalOfSeveralIndexesIsOneNotification() throws {
        let graph = try Self.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "department.employees", [.new, .old])
        try graph.mutate(KeyPath(parsing: "department.employees"), .remove(indexes: [2, 0]))
        #expect(recorder.log.count == 1)
        let change = recorder.log[0]
        #expect(change.kind == .removal && change.indexes == [0, 2] && change.new == nil)
        guard case .array(let removed)? = change.old else {
            Issue.record("old is not an array")
            return
        }
        #expect(removed.count == 2)
        #expect(try graph.get("department.employees.name") == ["Grace"])
    }

    @Test func replacementAndOutOfRange() throws {
        let graph = try Self.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "department.employees.@count", [.new, .old])
        try recorder.observe(graph, "department.employees", [.new, .old], name: "direct")
        try graph.mutate(KeyPath(parsing: "department.employees"), .replace(indexes: [1], values: [Self.employee("Hedy", 250)]))
        #expect(recorder.log.map(\.kind) == [.replacement, .setting])
        #expect(recorder.log[1].new == 3 && recorder.log[1].old == 3, "@count is a setting change of the count")
        let seq = graph.seq
        #expect(throws: GraphError.indexOutOfRange(path: "department.employees", index: 3, count: 3)) {
            try graph.mutate(KeyPath(parsing: "department.employees"), .remove(indexes: [3]))
        }
        #expect(throws: GraphError.indexOutOfRange(path: "department.employees", index: 5, count: 3)) {
            try graph.mutate(KeyPath(parsing: "department.employees"), .insert(indexes: [5], values: [Self.employee("X", 1)]))
        }
        #expect(throws: GraphError.self) { try graph.mutate(KeyPath(parsing: "department.name"), .append(["x"])) }
        #expect(throws: GraphError.self) { try graph.mutate(KeyPath(parsing: "department.employees"), .union(["x"])) }
        #expect(graph.seq == seq && recorder.log.count == 2, "failed mutations change nothing and notify nobody")
    }

    @Test func setMutationsNotifyOnlyActualMembers() throws {
        let graph = try Self.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "department.tags", [.new, .old])
        let path = try KeyPath(parsing: "department.tags")
        try graph.mutate(path, .union(["a", "b"]))
        try graph.mutate(path, .union(["b", "c"]))
        try graph.mutate(path, .minus(["a", "z"]))
        try graph.mutate(path, .setMembers(["c", "d"]))
        try graph.mutate(path, .intersect(["d"]))
        #expect(recorder.log.map(\.kind) == [.insertion, .insertion, .removal, .replacement, .removal])
        #expect(recorder.log.map(\.new) == [["a", "b"], ["c"], nil, ["d"], nil])
        #expect(recorder.log.map(\.old) == [nil, nil, ["a"], ["b"], ["c"]])
        #expect(recorder.log.allSatisfy { $0.indexes == nil })
        #expect(try graph.get("department.tags") == ["d"])
        #expect(throws: GraphError.self) { try graph.mutate(path, .insert(indexes: [0], values: ["x"])) }
        try graph.set("department.tags", to: ["x", "x", "y"])
        #expect(try graph.get("department.tags") == ["x", "y"], "a set keeps no repeats")
    }

    @Test func operatorsWithNullAndEmptyRules() throws {
        let graph = Graph()
        try graph.set("items", to: .array([
            .record(Record(["n": 1, "tags": ["a", "b"]])), .record(Record(["n": 2.5, "tags": ["b"]])),
            .record(Record(["n": .null, "tags": .null])), .record(Record(["n": 1])),
        ]))
        try graph.set("none", to: [])
        let cases: [(String, Value)] = [
            ("items.@count", 4), ("items.@sum.n", 4.5), ("items.@avg.n", 1.125), ("items.@min.n", 1), ("items.@max.n", 2.5),
            ("items.n", [1, 2.5, .null, 1]), ("items.@unionOfObjects.n", [1, 2.5, 1]),
            ("items.@distinctUnionOfObjects.n", [1, 2.5]), ("items.@unionOfArrays.tags", ["a", "b", "b"]),
            ("items.@distinctUnionOfArrays.tags", ["a", "b"]), ("items.@distinctUnionOfSets.tags", ["a", "b"]),
            ("none.@count", 0), ("none.@sum.n", 0), ("none.@avg.n", .null), ("none.@min.n", .null), ("none.@max.n", .null),
            ("none.@unionOfObjects.n", []),
        ]
        for (path, expected) in cases {
            #expect(try graph.get(path) == expected, "\(path)")
        }
        try graph.set("ints", to: .array([.record(Record(["n": 1])), .record(Record(["n": 2]))]))
        #expect(try graph.get("ints.@sum.n") == 3, "a sum of ints stays an int")
    }

    @Test func computedKeyDependsOnToManyRelationship() throws {
        let graph = try Self.makeGraph()
        #expect(try graph.get("department.totalSalary") == 600.0)
        let recorder = Recorder()
        try recorder.observe(graph, "department.totalSalary", [.new, .old, .prior])
        guard case .array(let before) = try graph.value(at: KeyPath(parsing: "department.employees")),
            case .object(let adaID) = before[0]
        else {
            Issue.record("no employees")
            return
        }
        try graph.set("$\(adaID).salary", to: 150.0)
        #expect(recorder.log.map(\.new) == [nil, 650.0])
        #expect(recorder.log.map(\.old) == [600.0, 600.0])
        try graph.mutate(KeyPath(parsing: "department.employees"), .append([Self.employee("Linus", 50)]))
        #expect(recorder.log.last?.new == 700.0)
        try graph.mutate(KeyPath(parsing: "department.employees"), .remove(indexes: [0]))
        #expect(recorder.log.last?.new == 550.0)
        #expect(recorder.log.last?.kind == .setting)
        let count = recorder.log.count
        // Ada was removed: her salary no longer affects the total.
        try graph.set("$\(adaID).salary", to: 1000.0)
        #expect(recorder.log.count == count)
    }

    @Test func anObjectReachedTwiceStaysObservedWhenOneReferenceGoes() throws {
        let graph = try Self.makeGraph()
        guard case .array(let staff) = try graph.value(at: KeyPath(parsing: "department.employees")),
            case .object(let graceID) = staff[1]
        else { return }
        try graph.set("manager", to: .object(graceID))
        let recorder = Recorder()
        try recorder.observe(graph, "manager.salary", [.new])
        try graph.mutate(KeyPath(parsing: "department.employees"), .remove(indexes: [1]))
        graph.collectGarbage()
        try graph.set("manager.salary", to: 999.0)
        #expect(recorder.log.last?.new == 999.0)
        #expect(try graph.get("$\(graceID).name") == "Grace")
    }
}
