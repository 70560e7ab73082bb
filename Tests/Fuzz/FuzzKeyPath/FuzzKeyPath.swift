// Fuzz target: key-path text as a client writes it in `get`, `set`, `subscribe` and the collection methods. A path
// that parses must print back to itself; used on two small graphs (an open one with nested objects, arrays, a cycle
// and a shared object, and one typed by a model with a to-many relationship, a set and computed keys) it must never
// trap: get, observe with every option, set assorted values, mutate collections and run transactions. A failed
// mutation must change nothing and notify nobody; a successful one takes exactly the next seq, and on the open graph
// notifies the path's own observer (prior first) and reads back what was set. Docs: docs/RELIABILITY.md.
import FuzzSupport
import ModelFile
import ObjectGraph

@main
enum FuzzKeyPath {
    static let typedModel: Model = {
        let text = #"""
            {"root": "Root", "classes": {
              "Root": {"open": true, "properties": {"department": {"type": "Department", "default": {}}}},
              "Department": {"properties": {
                "name": {"type": "string", "default": "R&D", "trim": true, "maxLength": 20},
                "employees": {"type": "[Employee]", "default": []},
                "tags": {"type": "set<string>", "default": ["a", "b"]},
                "budget": {"type": "double", "default": 1, "min": 0, "notify": "onChange", "increments": ["revision"]},
                "revision": {"type": "int", "default": 0},
                "totalSalary": {"computed": "employees.@sum.salary"},
                "headcount": {"computed": "employees.@count + 0"}}},
              "Employee": {"properties": {
                "name": {"type": "string", "nullValue": ""},
                "salary": {"type": "double", "default": 1, "nullable": false},
                "manager": {"type": "Employee"}}}}}
            """#
        do {
            return try ModelFile.load(Array(text.utf8), fileName: "fuzz-model.json")
        } catch {
            fatalError("the fuzzer's own model does not load: \(error)")
        }
    }()

    /// The values every path is set to, in this order.
    static let values: [Value] = [
        .int(7), .string(" text "), .null, .array([.int(1), .string("x")]),
        .record(Record(["k": .int(1), "inner": .record(Record(["z": .bool(true)]))])), .double(-0.5), .object(1),
    ]

    static func main() {
        FuzzDriver.run { input in
            let text = String(decoding: input, as: UTF8.self)
            guard let path = try? KeyPath(parsing: text) else { return }
            check((try? KeyPath(parsing: path.description)) == path, "'\(path.description)' does not parse back")
            Self.exercise(path, on: Self.openGraph(), isOpen: true)
            Self.exercise(path, on: Self.typedGraph(), isOpen: false)
        }
    }

    /// root: a.b.c = 1, a.b.d = [1, 2], list = [1, 2, 3], objs = [{x: 1}, {x: 2, y: {z: "deep"}}], s, n = null,
    /// cyc.me = cyc, shared = objs[0].
    static func openGraph() -> Graph {
        let graph = Graph()
        do {
            try graph.set("a.b", to: .record(Record(["c": 1, "d": [1, 2]])))
            try graph.set("list", to: [1, 2, 3])
            try graph.set(
                "objs",
                to: .array([.record(Record(["x": 1])), .record(Record(["x": 2, "y": .record(Record(["z": "deep"]))]))]))
            try graph.set("s", to: "text")
            try graph.set("n", to: .null)
            try graph.set("cyc", to: .record(Record()))
            guard case .record(let cycle) = try graph.get(KeyPath(parsing: "cyc")), let cycleID = cycle.id,
                case .array(let objects) = try graph.get(KeyPath(parsing: "objs")),
                case .record(let first)? = objects.first, let firstID = first.id
            else { fatalError("the open graph's setup did not read back") }
            try graph.set("cyc.me", to: .object(cycleID))
            try graph.set("shared", to: .object(firstID))
        } catch {
            fatalError("the open graph's setup failed: \(error)")
        }
        return graph
    }

    /// The typed graph, with two employees (one without a salary) and a manager link.
    static func typedGraph() -> Graph {
        let graph = Graph(model: Self.typedModel)
        do {
            try graph.mutate(
                KeyPath(parsing: "department.employees"),
                .append([.record(Record(["name": "Ada", "salary": 10])), .record(Record(["name": "Bob"]))]))
            guard case .array(let employees) = try graph.get(KeyPath(parsing: "department.employees")),
                employees.count == 2, case .record(let ada) = employees[0], case .record(let bob) = employees[1],
                let adaID = ada.id, let bobID = bob.id
            else { fatalError("the typed graph's employees did not read back") }
            try graph.set("$\(bobID).manager", to: .object(adaID))
        } catch {
            fatalError("the typed graph's setup failed: \(error)")
        }
        return graph
    }

    static func exercise(_ path: KeyPath, on graph: Graph, isOpen: Bool) {
        let log = ChangeLog()
        let observation = try? graph.addObservation(path, options: [.new, .old, .prior, .initial]) {
            log.changes.append($0)
        }
        _ = try? graph.get(path)
        _ = try? graph.objectClass(at: path)
        // As the engine decides it: by the first byte (`hasPrefix` compares characters, and "@" followed by a
        // combining mark is another character).
        let hasOperator = path.keys.contains { $0.utf8.first == UInt8(ascii: "@") }

        // A key starting with `@` is accepted by `set` but read as a collection operator by `get` and observers
        // (KVOServerTests/FuzzRegressionTests.swift, a known issue): the checks that read back skip such paths.
        for value in Self.values {
            // Where the set will store: the holder object as it is now (nil when the set will create it).
            let holder = try? graph.value(at: KeyPath(origin: path.origin, keys: Array(path.keys.dropLast())))
            Self.expectAtomic(graph, log, "set \(value)") { () throws(GraphError) in
                let result = try graph.set(path, to: value)
                if isOpen, !hasOperator, observation != nil {
                    check(log.changes.first?.isPrior == true, "no prior notification first for a set of \(path)")
                    check(log.changes.contains { !$0.isPrior }, "no after notification for a set of \(path)")
                }
                if isOpen, !hasOperator, !value.containsRecordOrObject, let key = path.keys.last {
                    // Through the holder, not the path: the set may re-route the path itself (`cyc.me.me` = 7).
                    let readPath =
                        if case .object(let id)? = holder { KeyPath(origin: id, keys: [key]) } else { path }
                    let read = try? graph.get(readPath)
                    check(read == (result.storedValue ?? value), "set \(value) at \(path) reads back \(String(describing: read))")
                }
                return result.seq
            }
            _ = try? graph.validate(path, value)
            _ = try? graph.get(path)
        }
        let mutations: [CollectionMutation] = [
            .append([1, "e"]), .insert(indexes: [0, 2], values: [.record(Record(["name": "Cy"])), 3]),
            .replace(indexes: [1], values: [.null]), .remove(indexes: [0]), .union(["b", "c"]), .minus(["a"]),
            .intersect(["c", 1]), .setMembers(["z"]), .insert(indexes: [99], values: [1]), .remove(indexes: [-1]),
        ]
        for mutation in mutations {
            Self.expectAtomic(graph, log, "\(mutation)") { () throws(GraphError) in
                try graph.mutate(path, mutation).seq
            }
        }
        let transactions: [[TransactionOp]] = [
            [.set(path, 1), .mutate(path, .append([2]))],
            [.mutate(path, .append([1])), .set(path, [])],
            [.set(path, .record(Record(["k": 1]))), .set(path, .null)],
        ]
        for ops in transactions {
            Self.expectAtomic(graph, log, "transaction \(ops)") { () throws(GraphError) in
                switch Result(catching: { () throws(TransactionError) in try graph.transaction(ops) }) {
                case .success(let seq): return seq
                case .failure(let failure): throw failure.error
                }
            }
        }
        if let observation { try? graph.removeObservation(observation.id) }
        _ = try? graph.get(path)
    }

    /// Runs one mutation: on success it took exactly the next seq and every notification carries it; on failure
    /// nothing changed (same seq) and nobody was notified.
    static func expectAtomic(
        _ graph: Graph, _ log: ChangeLog, _ what: @autoclosure () -> String,
        _ mutation: () throws(GraphError) -> UInt64
    ) {
        let before = graph.seq
        log.changes.removeAll()
        let received = { log.changes }
        do {
            let seq = try mutation()
            check(seq == before + 1 && graph.seq == seq, "\(what()): seq \(before) -> \(seq)")
            check(received().allSatisfy { $0.seq == seq }, "\(what()): a notification with another seq")
            if let firstAfter = received().firstIndex(where: { !$0.isPrior }) {
                check(!received()[firstAfter...].contains { $0.isPrior }, "\(what()): a prior notification after an after one")
            }
        } catch {
            check(graph.seq == before, "\(what()) failed (\(error)) but the seq moved")
            check(received().isEmpty, "\(what()) failed (\(error)) but notified \(received().count) times")
        }
    }
}

/// The notifications an observation received, shared between its handler and the checks.
final class ChangeLog {
    var changes: [Change] = []
}

extension Value {
    /// True when reading the value back can legitimately differ (objects come back as snapshots with ids).
    var containsRecordOrObject: Bool {
        switch self {
        case .record, .object: true
        case .array(let elements): elements.contains { $0.containsRecordOrObject }
        case .null, .bool, .int, .double, .string: false
        }
    }
}
