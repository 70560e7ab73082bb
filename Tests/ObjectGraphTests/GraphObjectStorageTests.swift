@testable import ObjectGraph
import Testing
import TestSupport

/// An object's packed storage (GraphObject.swift) and the object table (ObjectTable.swift), checked against plain
/// Swift collections: random sets, overwrites and undos of every kind of value, through the switch to an indexed
/// object and past its growth, must read back exactly as the model says, keys in order.
struct GraphObjectStorageTests {
    static func randomValue(_ random: inout SeededRandom, depth: Int = 0) -> Value {
        switch Int.random(in: 0..<12, using: &random) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &random))
        case 2: return .int(Int64.random(in: -100...100, using: &random))
        case 3: return .int(Int64.random(in: -40000...40000, using: &random))
        case 4: return .int(Int64.random(in: Int64.min...Int64.max, using: &random))
        case 5: return .double(Double.random(in: -1e9...1e9, using: &random))
        case 6: return .object(Int.random(in: 0...Int(UInt32.max) + 10, using: &random))
        case 7: return .string(String(repeating: "é", count: Int.random(in: 0...8, using: &random)))
        case 8: return .string(String(repeating: "x", count: Int.random(in: 0...300, using: &random)))
        case 9 where depth < 3:
            let count = Int.random(in: 0...6, using: &random)
            return .array((0..<count).map { _ in Self.randomValue(&random, depth: depth + 1) })
        case 10: return .array((0..<Int.random(in: 0...300, using: &random)).map { .int(Int64($0)) })
        default: return .string("v\(Int.random(in: 0...99, using: &random))")
        }
    }

    static func randomKey(_ random: inout SeededRandom, among count: Int) -> String {
        let number = Int.random(in: 0..<count, using: &random)
        switch number % 5 {
        case 0: return "k\(number)"
        case 1: return String(repeating: "long", count: 40) + "\(number)"  // a two-byte length
        case 2: return "ключ\(number)"
        default: return "\(number)"
        }
    }

    /// Calls `body` with a new object of `objectClass` in a table of its own, alive until `body` returns.
    static func withObject(_ objectClass: ObjectClass = .open, _ body: (GraphObject) -> Void) {
        var table = ObjectTable()
        let object = table.create(1, objectClass)
        withExtendedLifetime(table) { body(object) }
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func randomSetsAndUndosReadBackAsTheModelSays(seed: UInt64) {
        Self.withObject { object in Self.randomSetsAndUndos(object, seed: seed) }
    }

    static func randomSetsAndUndos(_ object: GraphObject, seed: UInt64) {
        var random = SeededRandom(seed: seed)
        var keys: [String] = []
        var slots: [String: GraphObject.Slot] = [:]
        // Keys a step added (undone by removing them) and slots it replaced, newest last, as the undo log keeps them.
        var undo: [(key: String, previous: GraphObject.Slot?)] = []
        let keySpace = seed.isMultiple(of: 2) ? 12 : 400  // small objects only, or past the index threshold
        for step in 0..<4000 {
            if Int.random(in: 0..<10, using: &random) == 0, !undo.isEmpty {
                // Undo the newest writes, as a rolled-back transaction does.
                for _ in 0..<Int.random(in: 1...min(5, undo.count), using: &random) {
                    let (key, previous) = undo.removeLast()
                    object.restore(key, to: previous)
                    if let previous {
                        slots[key] = previous
                    } else {
                        slots[key] = nil
                        keys.removeAll { $0 == key }
                    }
                }
            } else {
                let key = Self.randomKey(&random, among: keySpace)
                let value = Self.randomValue(&random)
                undo.append((key, object.slot(forKey: key)))
                if undo.count > 20 { undo.removeFirst() }
                // Seqs pass 2^32 halfway (an indexed object's modSeqs widen from 4 bytes to 8).
                let modSeq = UInt64(step) << (step < 2000 ? 0 : 40)
                object.setValue(value, forKey: key, modSeq: modSeq)
                if slots[key] == nil { keys.append(key) }
                slots[key] = GraphObject.Slot(value: value, modSeq: modSeq)
            }
            if step % 97 == 0 || step == 3999 {
                #expect(object.keys == keys, "seed \(seed) step \(step)")
                #expect(object.values == keys.map { slots[$0]!.value }, "seed \(seed) step \(step)")
                #expect(object.modSeqs == keys.map { slots[$0]!.modSeq }, "seed \(seed) step \(step)")
                #expect(object.count == keys.count)
                for key in keys {
                    #expect(object.value(forKey: key) == slots[key]!.value, "seed \(seed) step \(step) key \(key)")
                    #expect(object.modSeq(forKey: key) == slots[key]!.modSeq)
                }
                #expect(object.value(forKey: "never set") == nil)
                var references: [ObjectID] = []
                object.forEachReference { references.append($0) }
                var expected: [ObjectID] = []
                for key in keys { Graph.forEachReferenceIn(slots[key]!.value) { expected.append($0) } }
                #expect(references == expected, "seed \(seed) step \(step)")
            }
        }
    }

    @Test func declaredKeysStayInDeclarationOrderInSmallAndIndexedObjects() {
        let declared = (0..<20).map { "d\($0)" }
        let objectClass = ObjectClass(
            name: "Wide", isOpen: true, properties: declared.map { .stored($0, StoredProperty(type: .any)) })
        for extra in [0, 30] {
            Self.withObject(objectClass) { object in
                for number in 0..<extra { object.setValue(.int(Int64(number)), forKey: "u\(number)", modSeq: 1) }
                for name in declared.reversed() { object.setValue(.string(name), forKey: name, modSeq: 2) }
                #expect(object.keys == declared + (0..<extra).map { "u\($0)" })
                // Undo of a declared key in the middle (rebuilds a large object's index) keeps every other key.
                object.restore("d7", to: nil)
                #expect(object.value(forKey: "d7") == nil)
                #expect(object.keys == declared.filter { $0 != "d7" } + (0..<extra).map { "u\($0)" })
                for number in 0..<extra { #expect(object.value(forKey: "u\(number)") == .int(Int64(number))) }
                #expect(object.value(forKey: "d19") == .string("d19"))
            }
        }
    }

    @Test func aValueThatOutgrowsItsRegionInALargeObjectIsBoxedAndReadsBack() {
        Self.withObject { object in
            for number in 0..<1000 { object.setValue(.bool(true), forKey: "k\(number)", modSeq: UInt64(number)) }
            let long = Value.string(String(repeating: "y", count: 1000))
            for number in stride(from: 0, to: 1000, by: 3) { object.setValue(long, forKey: "k\(number)", modSeq: 5000) }
            for number in stride(from: 0, to: 1000, by: 6) { object.setValue(.int(7), forKey: "k\(number)", modSeq: 6000) }
            for number in 0..<1000 {
                let expected: Value = number % 6 == 0 ? .int(7) : number % 3 == 0 ? long : .bool(true)
                #expect(object.value(forKey: "k\(number)") == expected)
            }
            #expect(object.keys == (0..<1000).map { "k\($0)" })
        }
    }

    @Test func aViewHeldWhileItsBlockMovesReadsItsObject() {
        var table = ObjectTable()
        let held = table.create(7, .open)
        let neighbour = table.create(8, .open)
        for number in 0..<300 {
            // Both grow in turn, so a realloc cannot always extend in place; past 12 keys the block is rebuilt.
            held.setValue(.string(String(repeating: "z", count: number % 40)), forKey: "k\(number)", modSeq: 1)
            neighbour.setValue(.int(Int64(number)), forKey: "n\(number)", modSeq: 2)
            if number == 11 || number == 12 { #expect(held.keys.count == number + 1) }
        }
        #expect(held.count == 300 && table[7]?.slot == held.slot && table[7]?.objectClass === ObjectClass.open)
        for number in 0..<300 {
            #expect(held.value(forKey: "k\(number)") == .string(String(repeating: "z", count: number % 40)))
            #expect(neighbour.modSeq(forKey: "n\(number)") == 2)
        }
        // A seq past 2^32 lays the indexed object out again, with 8-byte modSeqs.
        held.setValue(.int(5), forKey: "k3", modSeq: 1 << 33)
        #expect(held.modSeq(forKey: "k3") == 1 << 33 && held.modSeq(forKey: "k4") == 1 && held.value(forKey: "k4") == "zzzz")
        held.setValue(.int(5), forKey: "k3", modSeq: 3)
        // An undo through the held view, after the moves.
        held.restore("k299", to: nil)
        held.restore("k0", to: GraphObject.Slot(value: .bool(true), modSeq: 9))
        #expect(table[7]?.count == 299 && table[7]?.value(forKey: "k0") == .bool(true) && held.modSeq(forKey: "k0") == 9)
        withExtendedLifetime(table) {}
    }

    @Test func theTableFreesAnObjectsBoxesAndReleasesItsClassWhenItDropsTheObject() {
        weak var removedBox: ValueBox?
        weak var collectedBox: ValueBox?
        weak var droppedBox: ValueBox?
        weak var objectClass: ObjectClass?
        let record = Value.record(Record(keys: ["a"], values: [1]))
        let long = Value.string(String(repeating: "x", count: 500))
        do {
            var table = ObjectTable()
            do {
                let boxed = ObjectClass(name: "Boxed", isOpen: true)
                objectClass = boxed
                for id in 1...3 {
                    let object = table.create(id, boxed)
                    object.setValue(record, forKey: "record", modSeq: 1)
                    for number in 0..<(id == 2 ? 20 : 1) {  // $2 is indexed
                        object.setValue(long, forKey: "long\(number)", modSeq: 1)
                    }
                }
                removedBox = table[1]?.box(forKey: "record")
                collectedBox = table[2]?.box(forKey: "long19")
                droppedBox = table[3]?.box(forKey: "long0")
            }
            #expect(removedBox != nil && collectedBox != nil && droppedBox != nil && objectClass != nil)
            table.remove(1)
            #expect(removedBox == nil && table[2]?.value(forKey: "long19") == long)
            table.removeAll { $0.id == 2 }
            #expect(collectedBox == nil && droppedBox != nil && objectClass != nil && table.count == 1)
        }
        // The last table holding $3's chunk is gone: so is $3.
        #expect(droppedBox == nil && objectClass == nil)
    }

    @Test func aRolledBackTransactionFreesTheObjectsItsDryRunMade() throws {
        let graph = Graph()
        try graph.set("kept", to: .record(Record(["n": 1])))
        let count = graph.objectCount
        let nested = Value.record(Record(["inner": .record(Record(["deep": .record(Record(["x": 1]))]))]))
        #expect(throws: TransactionError.self) {
            try graph.transaction([
                .set(try KeyPath(parsing: "made"), nested), .set(try KeyPath(parsing: "kept.n"), 2),
                .set(try KeyPath(parsing: "made.inner.deep.x"), .record(Record(["y": 3]))),
                .set(try KeyPath(parsing: "$999.x"), 1),
            ])
        }
        #expect(graph.objectCount == count)
        #expect(try graph.get(KeyPath(parsing: "kept")) == .record(Record(id: 1, keys: ["n"], values: [1])))
        #expect(try graph.get(KeyPath(parsing: "made")) == .null)
        // The ids the dry run took are free again: the next object gets the first of them.
        try graph.set("again", to: .record(Record(["n": 3])))
        #expect(try graph.value(at: KeyPath(parsing: "again")) == .object(2))
        #expect(graph.objectCount == count + 1)
    }

    @Test func theObjectTableKeepsObjectsByIdInIdOrderAndFreesEmptyChunks() {
        var table = ObjectTable()
        let ids = [0, 1, 255, 256, 257, 1000, 70_000]
        for id in ids { _ = table.create(id, .open) }
        #expect(table.count == ids.count)
        #expect(table.map(\.id) == ids)
        #expect(table[2] == nil && table[-1] == nil && table[1 << 40] == nil)
        #expect(table[1000]?.id == 1000)
        table.remove(1000)
        table.remove(1000)  // removing a missing object changes nothing
        table.remove(5000)
        #expect(table.count == ids.count - 1)
        table.removeAll { $0.id >= 256 && $0.id < 300 }
        #expect(table.map(\.id) == [0, 1, 255, 70_000])
        _ = table.create(256, .open)
        #expect(table.map(\.id) == [0, 1, 255, 256, 70_000])
        #expect(table.count == 5)
        // Ids far past the direct chunk list (a snapshot may name them) cost their chunks only.
        let far = [1 << 40, Int.max - 1, (1 << 28) + 3]
        for id in far { _ = table.create(id, .open) }
        #expect(table.map(\.id) == [0, 1, 255, 256, 70_000, (1 << 28) + 3, 1 << 40, Int.max - 1])
        #expect(table[1 << 40]?.id == 1 << 40 && table[(1 << 40) + 1] == nil)
        table.removeAll { $0.id == Int.max - 1 }
        table.remove(1 << 40)
        #expect(table.map(\.id) == [0, 1, 255, 256, 70_000, (1 << 28) + 3])
        #expect(table.count == 6)
    }
}
