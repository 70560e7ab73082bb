// The object graph: objects by id, the model their classes come from, the global change counter `seq`, and
// key-value coding reads (get by key path, computed keys, snapshots). Writes are in Graph+Set.swift, observation in
// Observation/. Not thread-safe by design: one owner (the server's loop, or one actor) drives it.

/// An observable object graph with key-value coding and key-value observing semantics.
public final class Graph {
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// The seq of the last successful mutation (0 before any). Each mutation takes the next value.
    @exclusivity(unchecked) public internal(set) var seq: UInt64 = 0
    /// The maximum nesting of a value (records and arrays) a `set` accepts.
    public var maxValueDepth = 64
    /// The classes of this graph's objects.
    public let model: Model

    // The hot members below skip runtime exclusivity checks (about 45 instructions per access, a few dozen
    // accesses per set): a graph has one owner, and no inout access to them spans a call.
    @exclusivity(unchecked) var objects = ObjectTable()
    var nextObjectID: ObjectID = ObjectID.root + 1
    let registry = ObservationRegistry()
    /// Live queries (Query/LiveQuery.swift).
    let queries = QueryRegistry()
    /// Whether any live query exists: what every commit and plain set asks first. A flag of the graph's own, so that
    /// asking neither retains the registry nor checks exclusivity (reading it through the registry cost a plain set
    /// 47 more instructions, callgrind). Kept by Graph+LiveQuery.swift.
    @exclusivity(unchecked) var hasLiveQueries = false
    /// The most elements a new live query may evaluate within `prepareQueryObservation`'s call; beyond, it is
    /// answered over several `advanceQueryFills` calls (Graph+QueryFill.swift).
    public var queryFillThreshold = 1024
    /// Whether live-query work waits for `advanceQueryFills` (fills, answers to claim, drains, maps to free). Kept by
    /// Graph+QueryFill.swift; `onQueryFillWork` is called when it becomes true.
    @exclusivity(unchecked) public internal(set) var hasQueryFillWork = false {
        didSet { if self.hasQueryFillWork && !oldValue { self.onQueryFillWork?() } }
    }
    /// Called when live-query work starts waiting for `advanceQueryFills` (a server starts calling it each loop turn).
    public var onQueryFillWork: (() -> Void)?
    /// Objects created since the last collection; drives when garbage collection runs.
    @exclusivity(unchecked) var allocatedSinceCollection = 0
    /// Manual change brackets opened by `willChangeValue` and not yet closed.
    @exclusivity(unchecked) var manualBrackets: [ChangeBracket] = []
    /// Guards computed keys that read each other through object cycles.
    var evaluationDepth = 0
    /// While a transaction's dry run is under way: how to undo what it wrote.
    @exclusivity(unchecked) var undoLog: UndoLog?
    /// Keys that expire (a `set` with `expiresAt`): a side table, empty unless some key has a deadline.
    @exclusivity(unchecked) var deadlines = DeadlineTable()  // loop-owned, as `objects`
    /// Keys plain sets found undeclared, to skip hashing them again (Graph+Set.swift).
    @exclusivity(unchecked) var plainKeys = UndeclaredKeys()

    /// The root object, also in `objects` (most key paths start there: no lookup). Never collected; replaced only
    /// with the whole object table by a restore.
    @exclusivity(unchecked) var rootObject: GraphObject

    /// Creates a graph whose root is an object of the model's root class, with its defaults.
    public init(model: Model = .open) {
        self.model = model
        var objects = ObjectTable()
        let root = objects.create(.root, model.root)
        self.objects = objects
        self.rootObject = root
        self.applyDefaults(to: root, except: [])
        self.allocatedSinceCollection = 0
    }

    /// The number of live objects, the root included.
    public var objectCount: Int { self.objects.count }

    // MARK: - Reading

    /// The value at `path`, with objects given as snapshots (`Value.record`, a second visit of the same object as
    /// `Value.object(id)`). A key that was never set reads as null; a computed key is evaluated.
    /// - Throws: `undefinedKey` for an unknown `$id` or a key a typed class does not declare, `typeMismatch` for a
    ///   path through a non-object.
    public func get(_ path: KeyPath) throws(GraphError) -> Value {
        self.export(try self.value(at: path))
    }

    /// A page of the collection at `path`: at most `limit` elements from `offset` (both clamped to the collection),
    /// exported as `get` exports values, and the collection's element count. A collection stored at the path costs
    /// the page, not the collection (the stored ValueList is shared, and each element found in O(log n)); a path
    /// through a to-many is evaluated whole first. A null (never set) collection reads as empty.
    /// - Throws: as `get`, and `typeMismatch` when the value is neither a collection nor null.
    public func page(_ path: KeyPath, offset: Int, limit: Int) throws(GraphError) -> (elements: Value, count: Int) {
        let value = try self.value(at: path)
        let elements: ValueList
        switch value {
        case .array(let stored): elements = stored
        case .null: elements = ValueList()
        default: throw GraphError.typeMismatch(path: path.description, reason: "\(value.typeName) is not a collection")
        }
        let start = min(max(offset, 0), elements.count)
        let end = start + min(max(limit, 0), elements.count - start)
        return (self.export(.array(ValueList((start..<end).lazy.map { elements[$0] }))), elements.count)
    }

    /// The value at `path` as stored: objects are `Value.object` references.
    public func value(at path: KeyPath) throws(GraphError) -> Value {
        guard var object = self.objects[path.origin] else {
            throw GraphError.undefinedKey(path: path.prefixDescription(0))
        }
        for (index, key) in path.keys.enumerated() {
            if key.utf8.first == UInt8(ascii: "@") {
                throw GraphError.typeMismatch(
                    path: path.prefixDescription(index + 1), reason: "a collection operator needs a collection")
            }
            if !object.objectClass.isOpen && object.objectClass.property(key) == nil {
                throw GraphError.undefinedKey(path: path.prefixDescription(index + 1))
            }
            let value = self.read(object, key)
            if index == path.keys.count - 1 { return value }
            switch value {
            case .object(let id):
                object = self.objects[id]!  // invariant: stored references point to live objects
            case .null:
                return .null  // a null intermediate reads as null
            case .array:
                // A to-many relationship: the rest of the path maps over the elements or is an operator, evaluated
                // strictly from this object (so a set relationship is known as one).
                return try self.evaluate(path.keys[index...], from: .object(object.id), strict: path)
            default:
                throw GraphError.typeMismatch(
                    path: path.prefixDescription(index + 1), reason: "\(value.typeName) is not an object")
            }
        }
        return .object(object.id)
    }

    /// The class of the object at `path` (nil when the path does not lead to an object).
    public func objectClass(at path: KeyPath) throws(GraphError) -> ObjectClass? {
        guard case .object(let id) = try self.value(at: path) else { return nil }
        return self.objects[id]?.objectClass
    }

    /// The current value of `key` on `object`: computed keys are evaluated, a never-set key is null.
    func read(_ object: GraphObject, _ key: String) -> Value {
        if let property = object.objectClass.property(key), case .computed(let computed) = property.kind {
            return self.evaluate(computed, on: object)
        }
        return object.value(forKey: key) ?? .null
    }

    /// Evaluates a computed key. Reads through object cycles deeper than 64 computed keys give null.
    func evaluate(_ computed: ComputedProperty, on object: GraphObject) -> Value {
        guard self.evaluationDepth < 64 else { return .null }
        self.evaluationDepth += 1
        defer { self.evaluationDepth -= 1 }
        return computed.evaluate { path in self.read(relativePath: path, from: object) }
    }

    // MARK: - Snapshots

    /// A detached copy of `value`: live object references become records (with their `id`), and an object met a
    /// second time stays a reference, so cycles and shared objects terminate. Computed keys are not included.
    public func export(_ value: Value) -> Value {
        switch value {
        case .null, .bool, .int, .double, .string, .record:
            return value
        case .array(let elements):
            // Fast path: arrays of scalars need no copy.
            if !elements.contains(where: \.containsObjects) { return value }
            var seen = Set<ObjectID>()
            return .array(elements.map { self.export($0, seen: &seen, depth: 1) })
        case .object:
            var seen = Set<ObjectID>()
            return self.export(value, seen: &seen, depth: 0)
        }
    }

    /// Objects nested deeper than this in an exported value stay references, so output is never nested deeper
    /// than input may be (a client follows the reference with `$ID`).
    public static let maxExportDepth = 62

    private func export(_ value: Value, seen: inout Set<ObjectID>, depth: Int) -> Value {
        switch value {
        case .null, .bool, .int, .double, .string, .record:
            return value
        case .array(let elements):
            return .array(elements.map { self.export($0, seen: &seen, depth: depth + 1) })
        case .object(let id):
            guard depth < Self.maxExportDepth, seen.insert(id).inserted, let object = self.objects[id] else {
                return value
            }
            var record = Record(id: id)
            record.keys = object.keys
            record.values = object.values.map { self.export($0, seen: &seen, depth: depth + 1) }
            return .record(record)
        }
    }

    // MARK: - Objects

    /// Allocates a new object of `objectClass` with its defaults, except for the keys in `except` (which the
    /// caller is about to set), its block sized for `capacity` bytes (the keys the caller sets, when it knows them).
    func makeObject(_ objectClass: ObjectClass, except: Set<String> = [], capacity: Int = 0) -> GraphObject {
        let object = self.objects.create(self.nextObjectID, objectClass, capacity: capacity)
        self.nextObjectID += 1
        self.allocatedSinceCollection += 1
        self.applyDefaults(to: object, except: except)
        return object
    }

    private func applyDefaults(to object: GraphObject, except: Set<String>) {
        for property in object.objectClass.properties where !except.contains(property.name) {
            guard let stored = property.stored, !stored.defaultValue.isNull else { continue }
            // Defaults take the declared type (0 into a double is 0.0) and records the declared class; a default
            // that does not validate is stored as written (the model's checks refuse the ones that matter).
            let typed = (try? stored.type.coerce(stored.defaultValue)) ?? stored.defaultValue
            let prepared = (try? self.prepareObjects(typed, type: stored.type, path: property.name, depth: 0)) ?? typed
            self.store(self.materialize(prepared), forKey: property.name, in: object)
        }
    }

    /// Turns records into new objects (inside a commit) and returns the value to store.
    func materialize(_ value: Value) -> Value {
        switch value {
        case .null, .bool, .int, .double, .string, .object:
            return value
        case .array(let elements):
            if !elements.contains(where: \.containsObjects) { return value }
            return .array(elements.map { self.materialize($0) })
        case .record(let record):
            let objectClass = record.className.flatMap { self.model.classes[$0] } ?? .open
            let object = self.makeObject(
                objectClass, except: Set(record.keys), capacity: Self.blockSize(record, modSeq: self.seq))
            for (key, element) in zip(record.keys, record.values) {
                self.store(self.materialize(element), forKey: key, in: object)
            }
            return .object(object.id)
        }
    }
}

extension Graph {
    /// The block an object made from `record` takes when its keys are stored at `modSeq` (nested records counted as
    /// references; defaults the class adds grow it), or 0 (let it grow) for one that gets an index.
    static func blockSize(_ record: Record, modSeq: UInt64) -> Int {
        let keys = record.keys
        let values = record.values
        guard keys.count <= GraphObject.indexThreshold, keys.count == values.count else { return 0 }
        // Per entry: the key's length and bytes, the modSeq, the region's length byte and the region.
        var size = GraphObject.headerSize + keys.count * (GraphObject.varintSize(modSeq) + 1)
        for index in keys.indices {
            let keyLength = keys[index].utf8.count
            size += GraphObject.varintSize(UInt64(keyLength)) + keyLength
            if case .record = values[index] {
                size += 5  // a reference (4 bytes of id up to 2^32)
            } else {
                size += PackedValue.inlineSize(values[index]) ?? PackedValue.boxedSize
            }
        }
        return size
    }
}

extension Value {
    /// True for a live object reference.
    var isObjectReference: Bool {
        if case .object = self { return true }
        return false
    }

    /// True when the value is or contains an object (a reference or a record).
    var containsObjects: Bool {
        switch self {
        case .null, .bool, .int, .double, .string: false
        case .object, .record: true
        case .array(let elements): elements.contains(where: \.containsObjects)
        }
    }
}

extension Graph {
    /// A snapshot of the object with `id` (a record), or null when there is no such object.
    public func get(id: ObjectID) -> Value {
        self.objects[id] == nil ? .null : self.export(.object(id))
    }
}
