@testable import ObjectGraph
import TestSupport
import Testing

/// The engine at its edges (issue 23): operators whose result a double cannot hold give null (never a trap) the
/// same way at a read, in a notification and after a snapshot; sets keep their members sorted through every set
/// mutation, a transaction and a restore of an unsorted (older) snapshot; large collections change in place with
/// the same results and notifications as small ones; a transaction's undo keeps one old value per key.
struct WorstCaseEngineTests {
    typealias Generator = SeededRandom
    static let max = Double.greatestFiniteMagnitude

    static func openGraph() -> Graph { Graph() }

    @Test func sumsAndAveragesBeyondADoubleAreNull() throws {
        let graph = Self.openGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "nums.@sum.self", [.new])
        try recorder.observe(graph, "nums.@avg.self", [.new])
        try graph.set(KeyPath(parsing: "nums"), to: .array([.double(Self.max), .double(Self.max)]))
        #expect(try graph.get("nums.@sum.self") == .null)
        #expect(try graph.get("nums.@avg.self") == .double(Self.max), "the average is representable, so it is given")
        #expect(recorder.log.map(\.new) == [.double(Self.max), .null], "after notifications come in reverse order")
        try graph.set(KeyPath(parsing: "nums"), to: .array([.double(Self.max), .double(Self.max), .double(-Self.max)]))
        #expect(try graph.get("nums.@sum.self") == .double(Self.max), "an overflow the later terms undo is no overflow")
        try graph.set(KeyPath(parsing: "nums"), to: .array([.double(-Self.max), .double(-Self.max), .int(1)]))
        #expect(try graph.get("nums.@sum.self") == .null)
        let average = try #require(try graph.get("nums.@avg.self").doubleValue)
        #expect(abs(average / (-Self.max / 3 * 2) - 1) < 1e-15)
        try graph.set(KeyPath(parsing: "nums"), to: .array([.int(.max), .int(.max)]))
        #expect(try graph.get("nums.@sum.self") == .double(Double(Int64.max) * 2), "an int sum past Int64 is a double")
        try graph.set(KeyPath(parsing: "nums"), to: .array([.int(.max), .int(1), .int(-1)]))
        #expect(try graph.get("nums.@sum.self") == .double(Double(Int64.max)))
        try graph.set(KeyPath(parsing: "nums"), to: .array([.int(.min), .int(-1)]))
        #expect(try graph.get("nums.@avg.self") == .double((Double(Int64.min) - 1) / 2))
        // Subnormals and negative zero are ordinary numbers.
        try graph.set(KeyPath(parsing: "nums"), to: .array([.double(.leastNonzeroMagnitude), .double(-0.0)]))
        #expect(try graph.get("nums.@sum.self") == .double(.leastNonzeroMagnitude))
    }

    @Test func aComputedSumBeyondADoubleIsNullAndSurvivesASnapshot() throws {
        let graph = try CollectionTests.makeGraph()
        let recorder = Recorder()
        try recorder.observe(graph, "department.totalSalary", [.new, .old])
        try graph.mutate(
            KeyPath(parsing: "department.employees"),
            .append([CollectionTests.employee("Rich", Self.max), CollectionTests.employee("Richer", Self.max)]))
        #expect(try graph.get("department.totalSalary") == .null)
        #expect(recorder.log.last?.new == .null && recorder.log.last?.old == .double(600))
        let restored = try Graph(model: graph.model, snapshot: graph.makeSnapshot())
        #expect(try restored.get("department.totalSalary") == .null)
        #expect(try restored.get("department.employees.@max.salary") == .double(Self.max))
    }

    @Test func setsAreKeptSortedAndDistinct() throws {
        let graph = try CollectionTests.makeGraph()
        let tags = try KeyPath(parsing: "department.tags")
        try graph.set(tags, to: .array(["pear", "apple", "fig", "apple"]))
        #expect(try graph.get("department.tags") == ["apple", "fig", "pear"])
        try graph.mutate(tags, .union(["banana", "zucchini", "fig"]))
        #expect(try graph.get("department.tags") == ["apple", "banana", "fig", "pear", "zucchini"])
        try graph.mutate(tags, .minus(["fig", "kiwi"]))
        try graph.mutate(tags, .intersect(["pear", "apple", "banana", "kiwi"]))
        #expect(try graph.get("department.tags") == ["apple", "banana", "pear"])
        try graph.mutate(tags, .setMembers(["b", "a", "pear"]))
        #expect(try graph.get("department.tags") == ["a", "b", "pear"])
    }

    /// Random set mutations (and some inside transactions, some failing) on a set that grows past one leaf, against
    /// a Swift Set; every notification's kind, old and new members agree with what changed.
    @Test(arguments: [11, 12, 13])
    func setMutationsAgreeWithASet(seed: UInt64) throws {
        var random = Generator(seed: seed)
        let graph = try CollectionTests.makeGraph()
        let tags = try KeyPath(parsing: "department.tags")
        let recorder = Recorder()
        try recorder.observe(graph, "department.tags", [.new, .old])
        var model = Set<String>()
        func someTags() -> [String] {
            (0..<Int.random(in: 0..<40, using: &random)).map { _ in "t\(Int.random(in: 0..<600, using: &random))" }
        }
        for step in 0..<400 {
            let values = someTags()
            recorder.clear()
            let before = model
            let mutation: CollectionMutation
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<5:
                mutation = .union(values.map(Value.string))
                model.formUnion(values)
            case 5..<7:
                mutation = .minus(values.map(Value.string))
                model.subtract(values)
            case 7:
                let keep = values + model.shuffled(using: &random).prefix(model.count * 3 / 4)
                mutation = .intersect(keep.map(Value.string))
                model.formIntersection(keep)
            default:
                let members = values + model.shuffled(using: &random).prefix(model.count / 2)
                mutation = .setMembers(members.map(Value.string))
                model = Set(members)
            }
            if step % 7 == 0 {
                // The same mutation inside a transaction, after a set of another key; every fifth one fails after it.
                var ops: [TransactionOp] = [.set(try KeyPath(parsing: "n\(step)"), .int(1)), .mutate(tags, mutation)]
                if step % 5 == 0 { ops.append(.set(try KeyPath(parsing: "department.name"), .int(3))) }
                do {
                    try graph.transaction(ops)
                } catch {
                    model = before
                }
            } else {
                try graph.mutate(tags, mutation)
            }
            #expect(try graph.get("department.tags") == .array(model.sorted().map(Value.string)), "seed \(seed) step \(step)")
            let added = model.subtracting(before)
            let removed = before.subtracting(model)
            guard let change = recorder.log.last, !(added.isEmpty && removed.isEmpty) else { continue }
            let new = Self.strings(change.new)
            let old = Self.strings(change.old)
            if change.kind != .setting {
                #expect(new == added && old == removed, "seed \(seed) step \(step): \(change.kind)")
            }
        }
    }

    static func strings(_ value: Value?) -> Set<String> {
        guard case .array(let list)? = value else { return [] }
        return Set(list.compactMap(\.stringValue))
    }

    @Test func anUnsortedSetInAnOlderSnapshotIsSortedOnRestore() throws {
        let graph = try CollectionTests.makeGraph()
        var snapshot = graph.makeSnapshot()
        let department = try #require(snapshot.objects.firstIndex { $0.className == "Department" })
        let tagsIndex = try #require(snapshot.objects[department].keys.firstIndex(of: "tags"))
        snapshot.objects[department].values[tagsIndex] = ["zeta", "alpha", "zeta", "mu"]
        let restored = try Graph(model: graph.model, snapshot: snapshot)
        #expect(try restored.get("department.tags") == ["alpha", "mu", "zeta"])
        try restored.mutate(try KeyPath(parsing: "department.tags"), .minus(["mu"]))
        #expect(try restored.get("department.tags") == ["alpha", "zeta"])
    }

    /// A large array changed at random indexes, alone and in transactions (some failing), agrees with a Swift array,
    /// and every change is notified with the indexes and values of a small one.
    @Test func aLargeArrayChangesLikeASmallOne() throws {
        var random = Generator(seed: 21)
        let graph = Self.openGraph()
        let path = try KeyPath(parsing: "list")
        var model = (0..<20_000).map { Value.int(Int64($0)) }
        try graph.set(path, to: .array(model))
        let recorder = Recorder()
        try recorder.observe(graph, "list", [.new, .old])
        for step in 0..<300 {
            recorder.clear()
            let index = Int.random(in: 0..<model.count, using: &random)
            let value = Value.string("v\(step)")
            switch step % 4 {
            case 0:
                try graph.mutate(path, .insert(indexes: [index], values: [value]))
                model.insert(value, at: index)
                #expect(recorder.log.first?.indexes == [index] && recorder.log.first?.new == .array([value]))
            case 1:
                let old = model.remove(at: index)
                try graph.mutate(path, .remove(indexes: [index]))
                #expect(recorder.log.first?.indexes == [index] && recorder.log.first?.old == .array([old]))
            case 2:
                let other = (index + 1) % model.count
                let ops: [TransactionOp] = [
                    .mutate(path, .replace(indexes: [index], values: [value])),
                    .mutate(path, .replace(indexes: [other], values: [.int(-1)])),
                    .mutate(path, .insert(indexes: [0], values: [.null])),
                ]
                try graph.transaction(ops)
                model[index] = value
                model[other] = .int(-1)
                model.insert(.null, at: 0)
            default:
                // Fails at its last op: nothing changes, nobody is told.
                let ops: [TransactionOp] = [
                    .mutate(path, .replace(indexes: [index], values: [value])),
                    .mutate(path, .remove(indexes: [0])),
                    .mutate(path, .remove(indexes: [model.count + 5])),
                ]
                #expect(throws: TransactionError.self) { try graph.transaction(ops) }
                #expect(recorder.log.isEmpty)
            }
        }
        guard case .array(let stored) = try graph.get("list") else {
            Issue.record("list is not an array")
            return
        }
        #expect(stored.array == model && stored.checkInvariants())
    }

    /// A dry run's undo log keeps one old slot per key, however many ops write it.
    @Test func aTransactionsUndoLogKeepsOneEntryPerKey() throws {
        let graph = Self.openGraph()
        let path = try KeyPath(parsing: "list")
        try graph.set(path, to: .array((0..<50_000).map { Value.int(Int64($0)) }))
        let ops = (0..<2_000).map { TransactionOp.mutate(path, .replace(indexes: [$0 * 7 % 50_000], values: [.int(-1)])) }
        let log = UndoLog(firstNewID: graph.nextObjectID, allocatedSinceCollection: 0)
        graph.undoLog = log
        for op in ops {
            guard case .mutate(let path, let mutation) = op else { continue }
            graph.apply(try graph.planMutation(path, mutation))
        }
        graph.undoLog = nil
        #expect(log.entries.count == 1)
        try graph.transaction(ops)
        #expect(try graph.get("list.@count") == 50_000)
        #expect(try graph.get("list.@min.self") == -1)
    }
}
