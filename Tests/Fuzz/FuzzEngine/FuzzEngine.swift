// Fuzz target: the engine as a client drives it, from the semantic side. The input is a program: it picks a model
// (which typed keys, sets, arrays, to-one and to-many relationships and computed keys over operators the root and its
// element class have), observers with random options, then up to 64 operations — sets of values at the extremes
// (±DBL_MAX, subnormals, -0.0, Int64's bounds, long and non-ASCII strings, nested arrays, new objects, references),
// collection mutations at random indexes, transactions (some failing), reads through collection operators, and
// snapshots taken, encoded, decoded and restored. After each operation: nothing trapped; a failed one changed nothing
// (the same seq) and notified nobody; every value read and every notification encodes to JSON that parses back and
// encodes to the same bytes, with no non-finite number; every set is sorted and distinct and every stored collection
// keeps its tree's invariants; a restored snapshot reads the same as the graph it was taken from.
// Docs: docs/RELIABILITY.md#fuzzing.
import FuzzSupport
#if canImport(Glibc)
import Glibc
#endif
import ModelFile
import ObjectGraph
import Persistence
import ValueCoding
import WireProtocol

@main
enum FuzzEngine {
    static func main() {
        FuzzDriver.run { input in
            var program = Program(Array(input))
            program.run()
        }
    }
}

/// Reads choices from the input; past its end every choice is 0.
struct Choices {
    let bytes: [UInt8]
    var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isExhausted: Bool { self.position >= self.bytes.count }

    mutating func byte() -> UInt8 {
        guard self.position < self.bytes.count else { return 0 }
        defer { self.position += 1 }
        return self.bytes[self.position]
    }

    /// A number in 0..<count.
    mutating func below(_ count: Int) -> Int { count <= 1 ? 0 : Int(self.byte()) % count }

    mutating func pick<T>(_ options: [T]) -> T { options[self.below(options.count)] }

    mutating func flag() -> Bool { self.byte() & 1 == 1 }
}

struct Program {
    var choices: Choices
    let graph: Graph
    let model: Model
    /// Key paths read after every operation (each exists in some models; a missing one reads as an error or null).
    let probes: [String]
    /// Notifications delivered since the last operation.
    let log = Log()

    final class Log {
        var changes: [Change] = []
    }

    /// A live query's subscriber: the window and count built only from its notifications.
    final class Mirror: ObservationSink {
        let path: KeyPath
        let query: Query
        var window: [Value] = []
        var count = 0
        var broken: String?

        init(path: KeyPath, query: Query) {
            self.path = path
            self.query = query
        }

        func observe(_ change: Change, options: ObservationOptions) {
            guard !change.isPrior else { return }
            if let count = change.count { self.count = count }
            var new: [Value] = []
            if case .array(let list)? = change.new { new = list.array }
            let indexes = change.indexes ?? []
            switch change.kind {
            case .setting: self.window = new
            case .insertion:
                for (index, value) in zip(indexes, new) {
                    guard index >= 0 && index <= self.window.count else {
                        self.broken = "insertion at \(index)"
                        return
                    }
                    self.window.insert(value, at: index)
                }
            case .removal:
                for index in indexes.reversed() {
                    guard index >= 0 && index < self.window.count else {
                        self.broken = "removal at \(index)"
                        return
                    }
                    self.window.remove(at: index)
                }
            case .replacement:
                for (index, value) in zip(indexes, new) {
                    guard index >= 0 && index < self.window.count else {
                        self.broken = "replacement at \(index)"
                        return
                    }
                    self.window[index] = value
                }
            }
        }
    }

    var mirrors: [Mirror] = []

    /// The root's optional properties; a program includes each whose bit is set.
    static let rootProperties: [String] = [
        #""n": {"type": "int", "default": 0}"#,
        #""x": {"type": "double", "default": 0, "nullable": false}"#,
        #""s": {"type": "string", "default": "", "maxLength": 4000}"#,
        #""tags": {"type": "set<string>", "default": []}"#,
        #""nums": {"type": "[double]", "default": []}"#,
        #""ints": {"type": "[int]", "default": [], "maxLength": 5000}"#,
        #""amounts": {"type": "set<double>", "default": []}"#,
        #""anything": {"type": "any"}"#,
        #""items": {"type": "[Item]", "default": []}"#,
        #""group": {"type": "set<Item>", "default": []}"#,
        #""one": {"type": "Item", "default": {}}"#,
        #""total": {"computed": "items.@sum.x"}"#,
        #""mean": {"computed": "items.@avg.x"}"#,
        #""product": {"computed": "x * x * 1e300"}"#,
        #""power": {"computed": "pow(x, n)"}"#,
        #""label": {"computed": "s + format(\"%d\", n)"}"#,
    ]

    static let itemProperties: [String] = [
        #""x": {"type": "double", "default": 0}"#,
        #""k": {"type": "int", "default": 0, "notify": "onChange"}"#,
        #""name": {"type": "string", "default": "", "trim": true}"#,
        #""marks": {"type": "set<int>", "default": []}"#,
        #""next": {"type": "Item"}"#,
    ]

    static let paths: [String] = [
        "n", "x", "s", "tags", "nums", "ints", "amounts", "anything", "items", "group", "one", "one.x", "one.next",
        "one.marks", "items.x", "items.name", "group.x", "total", "mean", "product", "power", "label", "free",
        "free.deep", "nums.@sum.self", "nums.@avg.self", "nums.@max.self", "ints.@sum.self", "ints.@avg.self",
        "amounts.@sum.self", "items.@sum.x", "items.@avg.x", "items.@min.k", "items.@count", "group.@sum.x",
        "tags.@count", "anything.@sum.self", "items.marks", "items.@distinctUnionOfSets.marks", "one.next.next",
    ]

    init(_ bytes: [UInt8]) {
        var choices = Choices(bytes)
        var root: [String] = []
        var mask = UInt32(choices.byte()) | UInt32(choices.byte()) << 8
        for property in Self.rootProperties {
            if mask & 1 == 1 { root.append(property) }
            mask >>= 1
        }
        // A computed key's dependencies must exist: keep only the ones whose inputs are declared.
        let declared = Set(root.compactMap { $0.split(separator: "\"").dropFirst().first.map(String.init) })
        root.removeAll { property in
            (property.contains("items.@") && !declared.contains("items"))
                || ((property.contains("x * x") || property.contains("pow(")) && !(declared.contains("x") && declared.contains("n")))
                || (property.contains("s + format") && !(declared.contains("s") && declared.contains("n")))
        }
        let text = """
            {"root": "Root", "classes": {
              "Root": {"open": true, "properties": {\(root.joined(separator: ", "))}},
              "Item": {"properties": {\(Self.itemProperties.joined(separator: ", "))}}}}
            """
        let model: Model
        do {
            model = try ModelFile.load(Array(text.utf8), fileName: "fuzz-engine.json")
        } catch {
            fatalError("the fuzzer's model does not load: \(error)\n\(text)")
        }
        self.choices = choices
        self.model = model
        self.graph = Graph(model: model)
        self.probes = Self.paths
    }

    mutating func run() {
        for _ in 0..<self.choices.below(4) { self.observe() }
        for _ in 0..<self.choices.below(4) { self.watchQuery() }
        var steps = 0
        while !self.choices.isExhausted && steps < 64 {
            steps += 1
            self.step()
            self.checkInvariants()
            self.checkMirrors()
        }
        self.checkSnapshot()
    }

    // MARK: - Operations

    mutating func observe() {
        let path = self.choices.pick(Self.paths)
        let options = ObservationOptions(rawValue: self.choices.byte() & 0x0F)
        guard let keyPath = try? KeyPath(parsing: path) else { return }
        let log = self.log
        if let (_, initial) = try? self.graph.addObservation(keyPath, options: options, handler: { log.changes.append($0) }),
            let initial
        {
            Self.checkChange(initial)
        }
    }

    /// A live query with random predicate, order, window and selected keys, mirrored from its notifications.
    mutating func watchQuery() {
        let path = self.choices.pick(["items", "group", "nums", "ints", "tags", "anything"])
        var query = Query()
        query.predicate = try? Predicate(parsing: self.choices.pick(["TRUEPREDICATE", "x > 0", "k == 1", "name == 't1'", "SELF > 1"]))
        query.orderBy = self.choices.pick([
            [], [SortDescriptor(keys: ["x"])], [SortDescriptor(keys: ["k"], ascending: false), SortDescriptor(keys: ["name"], caseInsensitive: true)],
            [SortDescriptor(keys: [])],
        ])
        query.offset = self.choices.below(3)
        query.limit = self.choices.flag() ? nil : self.choices.below(5)
        query.select = self.choices.pick([nil, [["x"], ["name"]], [["next", "x"]]])
        guard let keyPath = try? KeyPath(parsing: path) else { return }
        let mirror = Mirror(path: keyPath, query: query)
        let options = ObservationOptions(rawValue: self.choices.byte() & 0x0F).union([.new, .initial])
        guard let (_, initial) = try? self.graph.addQueryObservation(keyPath, query: query, options: options, sink: mirror)
        else { return }
        if let initial { mirror.observe(initial, options: options) }
        Self.trace("query \(path) \(query) -> \(mirror.window)")
        self.mirrors.append(mirror)
    }

    /// Every live query's mirror holds what the query answers, counted from scratch.
    func checkMirrors() {
        for mirror in self.mirrors {
            check(mirror.broken == nil, "a live query's notification does not apply: \(mirror.broken ?? "")")
            guard let expected = try? self.graph.query(mirror.path, mirror.query, fromLiveQueries: false) else { continue }
            check(mirror.window == expected.window, "the mirror of \(mirror.path) \(mirror.query) is \(mirror.window), not \(expected.window)")
            check(mirror.count == expected.count, "the mirror of \(mirror.path) counts \(mirror.count), not \(expected.count)")
        }
    }

    /// FUZZ_TRACE=1 prints each operation (to replay a crash by hand).
    static let tracing = getenv("FUZZ_TRACE") != nil

    static func trace(_ text: @autoclosure () -> String) {
        guard Self.tracing else { return }
        var line = text() + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }

    mutating func step() {
        let seq = self.graph.seq
        defer { Self.trace("seq \(self.graph.seq)") }
        self.log.changes.removeAll()
        var failed = false
        switch self.choices.below(10) {
        case 0, 1, 2:
            let path = self.choices.pick(Self.paths)
            let value = self.value(depth: 0)
            Self.trace("set \(path) \(value)")
            do {
                try self.graph.set(KeyPath(parsing: path), to: value)
            } catch {
                failed = true
            }
        case 3, 4, 5:
            let (path, mutation) = self.mutation()
            Self.trace("mutate \(path) \(mutation)")
            do {
                try self.graph.mutate(KeyPath(parsing: path), mutation)
            } catch {
                failed = true
            }
        case 6:
            var ops: [TransactionOp] = []
            for _ in 0..<(1 + self.choices.below(5)) {
                if self.choices.flag() {
                    let (path, mutation) = self.mutation()
                    if let keyPath = try? KeyPath(parsing: path) { ops.append(.mutate(keyPath, mutation)) }
                } else if let keyPath = try? KeyPath(parsing: self.choices.pick(Self.paths)) {
                    ops.append(.set(keyPath, self.value(depth: 0)))
                }
            }
            Self.trace("transaction \(ops)")
            do {
                try self.graph.transaction(ops)
            } catch {
                failed = true
            }
        case 7:
            if self.choices.flag() { self.observe() } else { self.watchQuery() }
            return
        case 8:
            self.checkSnapshot()
            return
        default:
            // A long array, so the collections' trees get levels.
            let count = 1 + Int(self.choices.byte()) * 20
            let values = (0..<count).map { Value.double(Double($0) * (self.choices.flag() ? 1e300 : -1.5)) }
            do {
                try self.graph.set(KeyPath(parsing: self.choices.pick(["nums", "amounts", "anything", "ints"])), to: .array(values))
            } catch {
                failed = true
            }
        }
        if failed {
            check(self.graph.seq == seq, "a failed operation changed the seq")
            check(self.log.changes.isEmpty, "a failed operation notified")
        } else {
            check(self.graph.seq == seq || self.graph.seq == seq + 1, "an operation took more than one seq")
            for change in self.log.changes {
                check(change.seq == self.graph.seq, "a notification carries seq \(change.seq), not \(self.graph.seq)")
                Self.checkChange(change)
            }
        }
    }

    mutating func mutation() -> (String, CollectionMutation) {
        let path = self.choices.pick(["tags", "nums", "ints", "amounts", "items", "group", "one.marks", "anything", "free"])
        let count = self.currentCount(path)
        func index(extra: Int = 0) -> Int {
            // Mostly valid indexes; sometimes one past the end, negative or huge.
            switch self.choices.below(8) {
            case 0: return -1
            case 1: return count + extra
            case 2: return Int.max
            default: return count + extra == 0 ? 0 : self.choices.below(count + extra)
            }
        }
        let values = (0..<(1 + self.choices.below(4))).map { _ in self.value(depth: 1) }
        let mutation: CollectionMutation
        switch self.choices.below(8) {
        case 0: mutation = .insert(indexes: values.indices.map { index(extra: $0 + 1) }, values: values)
        case 1: mutation = .append(values)
        case 2: mutation = .remove(indexes: (0..<(1 + self.choices.below(3))).map { _ in index() })
        case 3: mutation = .replace(indexes: values.indices.map { _ in index() }, values: values)
        case 4: mutation = .union(values)
        case 5: mutation = .minus(values + self.members(path))
        case 6: mutation = .intersect(values + self.members(path))
        default: mutation = .setMembers(values)
        }
        return (path, mutation)
    }

    func currentCount(_ path: String) -> Int {
        guard let keyPath = try? KeyPath(parsing: path), case .array(let list)? = try? self.graph.get(keyPath) else {
            return 0
        }
        return list.count
    }

    /// A few of the collection's current elements (as stored: references, not records).
    mutating func members(_ path: String) -> [Value] {
        guard let keyPath = try? KeyPath(parsing: path), case .array(let list)? = try? self.graph.get(keyPath),
            !list.isEmpty
        else { return [] }
        return (0..<self.choices.below(3)).map { _ in
            switch list[self.choices.below(list.count)] {
            case .record(let record): record.id.map(Value.object) ?? .null
            case let other: other
            }
        }
    }

    mutating func value(depth: Int) -> Value {
        switch self.choices.below(depth < 3 ? 14 : 11) {
        case 0: return .null
        case 1: return .bool(self.choices.flag())
        case 2: return .int(self.choices.pick([Int64.min, Int64.max, 0, -1, 1, Int64(Int32.max) + 1, 9_007_199_254_740_993]))
        case 3: return .int(Int64(Int8(bitPattern: self.choices.byte())))
        case 4:
            let max = Double.greatestFiniteMagnitude
            return .double(self.choices.pick([max, -max, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, -0.0, 1e308, -1e308, 0.1, 2.5e-308, 1 / 3]))
        case 5: return .double(Double(Int8(bitPattern: self.choices.byte())) / 4)
        case 6: return .string(self.choices.pick(["", "a", " padded ", "é", "e\u{301}", "👍🏽", "\u{0}", "\"\\\n"]))
        case 7: return .string(String(repeating: self.choices.pick(["x", "é", "💥"]), count: Int(self.choices.byte()) * 40))
        case 8: return .string("t\(self.choices.below(6))")
        case 9: return .object(self.choices.below(24))
        case 10: return .string(self.choices.pick(["1e3", "true", "42", "-0"]))
        case 11:
            return .array((0..<self.choices.below(5)).map { _ in self.value(depth: depth + 1) })
        case 12:
            var record = Record()
            for key in ["x", "k", "name", "marks", "next"] where self.choices.flag() {
                record.keys.append(key)
                record.values.append(self.value(depth: depth + 1))
            }
            return .record(record)
        default:
            return .record(Record(["x": self.value(depth: depth + 1)]))
        }
    }

    // MARK: - Checks

    /// Every probe reads without trapping, and what it reads encodes and re-parses to itself.
    func checkInvariants() {
        for probe in self.probes {
            guard let path = try? KeyPath(parsing: probe), let value = try? self.graph.get(path) else { continue }
            Self.checkEncoding(value)
        }
        for object in self.graph.makeSnapshot().objects {
            let objectClass = self.model.classes[object.className]
            for (key, value) in zip(object.keys, object.values) {
                guard case .array(let list) = value else { continue }
                check(list.checkInvariants(), "the collection at $\(object.id).\(key) breaks its tree's invariants")
                if case .stored(let stored)? = objectClass?.property(key)?.kind, case .set = stored.type {
                    check(list.isSortedSet, "the set at $\(object.id).\(key) is not sorted and distinct: \(list)")
                }
            }
        }
    }

    /// A snapshot encodes, decodes and restores to a graph that reads the same.
    func checkSnapshot() {
        let snapshot = self.graph.makeSnapshot()
        let bytes = BinarySnapshotCodec.encode(snapshot)
        let restored: Graph
        do {
            let decoded = try BinarySnapshotCodec.decode(bytes)
            check(decoded == snapshot, "a snapshot does not decode to itself")
            restored = try Graph(model: self.model, snapshot: decoded)
        } catch {
            fatalError("a snapshot of the graph does not restore: \(error)")
        }
        for probe in self.probes {
            guard let path = try? KeyPath(parsing: probe) else { continue }
            let live = try? self.graph.get(path)
            let again = try? restored.get(path)
            check(live == again, "\(probe) reads \(String(describing: live)) live, \(String(describing: again)) restored")
        }
    }

    static func checkChange(_ change: Change) {
        if let new = change.new { Self.checkEncoding(new) }
        if let old = change.old { Self.checkEncoding(old) }
        if let indexes = change.indexes {
            check(zip(indexes, indexes.dropFirst()).allSatisfy { $0 < $1 }, "indexes not sorted: \(indexes)")
        }
    }

    /// `value` encodes to JSON that parses, with no non-finite number, re-encodes to the same bytes, and reads back
    /// (as a value) to the same JSON.
    static func checkEncoding(_ value: Value) {
        Self.checkFinite(value)
        var bytes: [UInt8] = []
        value.appendJSON(to: &bytes)
        guard let parsed = try? JSONParser.parse(bytes, maxDepth: 512) else {
            fatalError("a value encodes to JSON that does not parse: \(String(decoding: bytes, as: UTF8.self))")
        }
        check(JSONWriter.encode(parsed) == bytes, "a value's JSON does not re-encode to the same bytes")
        guard !Self.hasRecords(value) else { return }  // a record's "$id" is not read back (a new object)
        var again: [UInt8] = []
        Value(json: parsed).appendJSON(to: &again)
        check(again == bytes, "a value does not read back from its JSON")
    }

    static func hasRecords(_ value: Value) -> Bool {
        switch value {
        case .record: true
        case .array(let list): list.contains(where: Self.hasRecords)
        default: false
        }
    }

    static func checkFinite(_ value: Value) {
        switch value {
        case .double(let number): check(number.isFinite, "a non-finite number: \(number)")
        case .array(let list): list.forEach(Self.checkFinite)
        case .record(let record): record.values.forEach(Self.checkFinite)
        default: break
        }
    }
}
