@testable import ObjectGraph
import TestSupport
import Testing

/// The counted B-tree under array values (ValueList.swift), checked against Swift arrays: random inserts, removals,
/// replacements and appends through every size from flat to three levels and back must read back exactly as the
/// array says, with the node invariants intact; a copy is never changed by a change of the original; a change copies
/// only the nodes on its way down; sorted lists (sets) agree with a sorted, distinct array; the total order is one.
struct ValueListTests {
    typealias Generator = SeededRandom

    @Test(arguments: [1, 2, 3, 4, 5])
    func randomChangesAgreeWithAnArray(seed: UInt64) {
        var random = Generator(seed: seed)
        var list = ValueList()
        var model: [Value] = []
        var snapshots: [(ValueList, [Value])] = []
        for step in 0..<6_000 {
            // Grow to a few thousand (three levels with small leaves would need more; the depth test covers that),
            // then shrink, so merges and the way back to a flat list run too.
            let growing = step < 4_000
            let roll = Int.random(in: 0..<10, using: &random)
            let value = Value.int(Int64(step))
            if model.isEmpty || (growing && roll < 6) || (!growing && roll < 2) {
                let index = Int.random(in: 0...model.count, using: &random)
                list.insert(value, at: index)
                model.insert(value, at: index)
            } else if roll < 8 || !growing {
                let index = Int.random(in: 0..<model.count, using: &random)
                #expect(list.remove(at: index) == model.remove(at: index))
            } else {
                let index = Int.random(in: 0..<model.count, using: &random)
                list[index] = value
                model[index] = value
            }
            if step % 500 == 0 { snapshots.append((list, model)) }
            if step % 97 == 0 {
                #expect(list.count == model.count)
                #expect(list.checkInvariants(), "seed \(seed) step \(step)")
            }
        }
        #expect(list.array == model)
        #expect(Array(list) == model)
        #expect(list.checkInvariants())
        // Every copy taken on the way still holds what it held.
        for (copy, expected) in snapshots {
            #expect(copy.array == expected)
            #expect(copy.checkInvariants())
        }
    }

    @Test func indexingIteratingAndEqualityAtEverySize() {
        for count in [0, 1, 63, 64, 65, 128, 1_000, 4_097, 70_000] {
            let values = (0..<count).map { Value.int(Int64($0)) }
            let list = ValueList(values)
            #expect(list.count == count && list.checkInvariants())
            #expect(Array(list) == values)
            #expect(list.map { $0 } == values)
            for index in stride(from: 0, to: count, by: max(1, count / 50)) { #expect(list[index] == values[index]) }
            #expect(list == ValueList(values) && Value.array(list).hashValue == Value.array(values).hashValue)
            if count > 0 { #expect(list != ValueList(values.dropLast())) }
        }
        #expect(ValueList((0..<70_000).map { Value.int(Int64($0)) }).depth == 3)
    }

    @Test func appendingOneByOneKeepsTheTreeBalanced() {
        var list = ValueList()
        for index in 0..<300_000 { list.append(.int(Int64(index))) }
        #expect(list.checkInvariants() && list.count == 300_000)
        #expect(list.depth <= 4)
        var index = 0
        for element in list {
            #expect(element == .int(Int64(index)))
            index += 1
        }
        #expect(index == 300_000)
    }

    /// A change of a shared list copies the nodes on its way down and nothing else: the two lists share every other
    /// node. (This is what makes a collection mutation O(log n): no copy of the collection.)
    @Test func aChangeCopiesOnlyTheNodesOnItsPath() {
        let original = ValueList((0..<1_000_000).map { Value.int(Int64($0)) })
        #expect(original.depth == 4)
        var changed = original
        changed[500_000] = .string("x")
        changed.insert(.string("y"), at: 10)
        changed.remove(at: 999_000)
        #expect(original[500_000] == .int(500_000) && original.count == 1_000_000)
        #expect(changed[500_001] == .string("x") && changed[10] == .string("y") && changed.count == 1_000_000)
        let shared = Self.nodes(of: original).intersection(Self.nodes(of: changed))
        let copied = Self.nodes(of: changed).count - shared.count
        // Three changes, each at most one node per level (a split or merge adds one more).
        #expect(copied <= 3 * (changed.depth + 1), "\(copied) nodes copied")
        #expect(changed.checkInvariants() && original.checkInvariants())
    }

    /// A list held once is changed in place: no node is copied.
    @Test func aListHeldOnceIsChangedInPlace() {
        var list = ValueList((0..<100_000).map { Value.int(Int64($0)) })
        let before = Self.nodes(of: list)
        for index in stride(from: 0, to: 100_000, by: 1_000) { list[index] = .null }
        #expect(Self.nodes(of: list) == before)
    }

    @Test(arguments: [7, 8, 9])
    func sortedListsAgreeWithASortedDistinctArray(seed: UInt64) {
        var random = Generator(seed: seed)
        var set = ValueList()
        var model: [Value] = []
        for step in 0..<5_000 {
            let value: Value =
                switch Int.random(in: 0..<4, using: &random) {
                case 0: .int(Int64.random(in: 0..<2_000, using: &random))
                case 1: .double(Double(Int.random(in: 0..<2_000, using: &random)) / 2)
                case 2: .string("s\(Int.random(in: 0..<500, using: &random))")
                default: .object(Int.random(in: 0..<500, using: &random))
                }
            if step < 3_500 || Bool.random(using: &random) {
                let inserted = set.insertSorted(value)
                let present = model.contains(value)
                #expect((inserted == nil) == present)
                if !present { model.append(value) }
            } else {
                let removed = set.removeSorted(value)
                #expect((removed != nil) == model.contains(value))
                model.removeAll { $0 == value }
            }
        }
        model.sort(by: Value.totalOrderPrecedes)
        #expect(set.array == model)
        #expect(set.isSortedSet && set.checkInvariants())
        #expect(ValueList.sortedSet(model.reversed() + model) == set)
        for value in model.prefix(200) { #expect(set.sortedContains(value)) }
        #expect(!set.sortedContains(.string("absent")))
    }

    @Test func theTotalOrderIsOneAndAgreesWithEquality() {
        let values: [Value] = [
            .null, .bool(false), .bool(true), .double(-1e300), .int(.min), .int(-2), .double(-1.5), .int(-1), .int(0),
            .double(0), .double(0.5), .int(1), .int(9_007_199_254_740_992), .double(9_007_199_254_740_992),
            .int(9_007_199_254_740_993), .int(.max), .double(9.3e18), .double(.greatestFiniteMagnitude), .string(""),
            .string("a"), .string("b"), .array([]), .array([.int(1)]), .array([.int(1), .int(2)]), .array([.int(2)]),
            .object(0), .object(7), .record(Record(id: 1)),
        ]
        for (leftIndex, left) in values.enumerated() {
            for (rightIndex, right) in values.enumerated() {
                let expected = leftIndex < rightIndex ? -1 : leftIndex == rightIndex ? 0 : 1
                #expect(Value.totalOrder(left, right) == expected, "\(left) vs \(right)")
            }
        }
        // Canonically equivalent strings are equal values, and so equal in the order.
        #expect(Value.totalOrder(.string("caf\u{E9}"), .string("cafe\u{301}")) == 0)
        #expect(Value.totalOrder(.double(-0.0), .double(0.0)) == 0)
    }

    /// The identities of a list's nodes.
    static func nodes(of list: ValueList) -> Set<ObjectIdentifier> {
        guard case .tree(let root) = list.storage else { return [] }
        var found: Set<ObjectIdentifier> = []
        var pending = [root]
        while let node = pending.popLast() {
            found.insert(ObjectIdentifier(node))
            pending.append(contentsOf: node.children)
        }
        return found
    }
}

extension ValueListTests {
    /// The root node of the list stored at `path`.
    static func root(_ graph: Graph, _ path: String) throws -> ObjectIdentifier? {
        guard case .array(let list) = try graph.get(path), case .tree(let node) = list.storage else { return nil }
        return ObjectIdentifier(node)
    }

    /// A collection mutation edits the stored list in place: the nodes stay the same objects.
    @Test func aCollectionMutationEditsTheStoredListInPlace() throws {
        let graph = Graph()
        let path = try KeyPath(parsing: "list")
        try graph.set(path, to: .array((0..<100_000).map { Value.int(Int64($0)) }))
        let before = try Self.root(graph, "list")
        guard case .array(let list) = try graph.get("list") else { return }
        let nodesBefore = Self.nodes(of: list)
        _ = consume list
        try graph.mutate(path, .replace(indexes: [50_000], values: [.string("x")]))
        try graph.mutate(path, .insert(indexes: [10], values: [.string("y")]))
        #expect(try Self.root(graph, "list") == before)
        guard case .array(let after) = try graph.get("list") else { return }
        #expect(Self.nodes(of: after).subtracting(nodesBefore).count <= 1, "only a split adds a node")
    }
}
