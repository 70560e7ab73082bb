// The graph's whole state as plain data, for durability: every live object with its class and stored values, the
// next object id, the seq and the keys' deadlines (absolute times, so they survive a restart). Restoring a snapshot
// gives a graph that behaves exactly like the one it was taken from (same ids, same seq, same deadlines), so a
// journal of later mutations replays onto it deterministically.

/// A graph's state as plain data.
public struct GraphSnapshot: Sendable, Equatable {
    /// One object: its id, class and stored keys in order (objects as `.object(id)` references), and each key's
    /// modSeq (the seq that last stored it).
    public struct Object: Sendable, Equatable {
        public var id: ObjectID
        public var className: String
        public var keys: [String]
        public var values: [Value]
        /// Parallel to `keys`; nil (a snapshot of an older format): every key counts as stored at the snapshot's seq.
        public var modSeqs: [UInt64]?

        public init(id: ObjectID, className: String, keys: [String], values: [Value], modSeqs: [UInt64]? = nil) {
            self.id = id
            self.className = className
            self.keys = keys
            self.values = values
            self.modSeqs = modSeqs
        }
    }

    public var seq: UInt64
    public var nextObjectID: ObjectID
    /// The live objects, by increasing id (the root first).
    public var objects: [Object]
    /// The keys that expire, by object id then key (empty in snapshots of older formats).
    public var deadlines: [Deadline]

    public init(seq: UInt64, nextObjectID: ObjectID, objects: [Object], deadlines: [Deadline] = []) {
        self.seq = seq
        self.nextObjectID = nextObjectID
        self.objects = objects
        self.deadlines = deadlines
    }
}

/// Why a snapshot cannot be restored with a model.
public struct SnapshotError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}

extension Graph {
    /// The graph's state now (unreachable objects are collected first, so they are not kept forever).
    public func makeSnapshot() -> GraphSnapshot {
        if self.manualBrackets.isEmpty && self.undoLog == nil { self.collectGarbage() }
        let objects = self.objects.map { object in
            GraphSnapshot.Object(
                id: object.id, className: object.objectClass.name, keys: object.keys, values: object.values,
                modSeqs: object.modSeqs)
        }
        return GraphSnapshot(
            seq: self.seq, nextObjectID: self.nextObjectID, objects: objects, deadlines: self.allDeadlines())
    }

    /// A graph restored from `snapshot`, with `model`'s classes.
    /// - Throws: when the snapshot names a class the model does not have, has no root, or refers to an object it
    ///   does not contain (a snapshot from another model, or a damaged one).
    public convenience init(model: Model, snapshot: GraphSnapshot) throws(SnapshotError) {
        let restorer = GraphRestorer(model: model, seq: snapshot.seq, nextObjectID: snapshot.nextObjectID)
        for object in snapshot.objects { try restorer.add(object) }
        for deadline in snapshot.deadlines { try restorer.add(deadline) }
        self.init(restoring: restorer)
        try restorer.finish(into: self)
    }

    /// A bare graph for `GraphRestorer.finish` to fill.
    convenience init(restoring restorer: GraphRestorer) {
        self.init(model: restorer.model)
    }

    static func forEachReferenceIn(_ value: Value, _ body: (ObjectID) -> Void) {
        Self.forEachReference(in: value, body)
    }

    private static func forEachReference(in value: Value, _ body: (ObjectID) -> Void) {
        switch value {
        case .object(let id): body(id)
        case .array(let elements): for element in elements { Self.forEachReference(in: element, body) }
        default: return
        }
    }
}

/// Builds a graph from a snapshot one object at a time, so a decoder can stream objects in without holding the whole
/// snapshot in memory beside the graph it becomes (`Graph(model:snapshot:)` uses it too).
public final class GraphRestorer {
    let model: Model
    let seq: UInt64
    let nextObjectID: ObjectID
    private var restored = ObjectTable()
    private var deadlines = DeadlineTable()

    /// A restorer for a snapshot at `seq` whose next object id is `nextObjectID`.
    public init(model: Model, seq: UInt64, nextObjectID: ObjectID) {
        self.model = model
        self.seq = seq
        self.nextObjectID = nextObjectID
    }

    /// Adds one object.
    /// - Throws: when its class is not in the model, or it is malformed or repeated.
    public func add(_ state: GraphSnapshot.Object) throws(SnapshotError) {
        guard let objectClass = self.model.classes[state.className] else {
            throw SnapshotError("object $\(state.id) is a \(state.className), a class the model does not declare")
        }
        guard state.keys.count == state.values.count, state.modSeqs.map({ $0.count == state.keys.count }) ?? true,
            self.restored[state.id] == nil, state.id >= 0, state.id < self.nextObjectID
        else {
            throw SnapshotError("object $\(state.id) is malformed or repeated")
        }
        var capacity = 0
        if state.keys.count <= GraphObject.indexThreshold {
            capacity = GraphObject.headerSize
            for (index, (key, value)) in zip(state.keys, state.values).enumerated() {
                capacity += GraphObject.entrySize(key, value, modSeq: state.modSeqs?[index] ?? self.seq)
            }
        }
        let object = self.restored.create(state.id, objectClass, capacity: capacity)
        for (index, (key, value)) in zip(state.keys, state.values).enumerated() {
            object.setValue(Self.normalized(value, objectClass, key), forKey: key, modSeq: state.modSeqs?[index] ?? self.seq)
        }
    }

    /// A set's members sorted and distinct, as sets are kept (snapshots written before they were kept sorted hold
    /// them in the order they were added).
    private static func normalized(_ value: Value, _ objectClass: ObjectClass, _ key: String) -> Value {
        guard case .array(let elements) = value, case .set? = objectClass.property(key)?.stored?.type,
            !elements.isSortedSet
        else { return value }
        return .array(ValueList.sortedSet(elements))
    }

    /// Adds one key's deadline (objects and deadlines may come in any order).
    /// - Throws: when the same key has a deadline already.
    public func add(_ deadline: Deadline) throws(SnapshotError) {
        guard self.deadlines.deadline(object: deadline.object, key: deadline.key) == nil else {
            throw SnapshotError("the deadline of $\(deadline.object).\(deadline.key) is repeated")
        }
        self.deadlines.update(object: deadline.object, key: deadline.key, to: deadline.expiresAt)
    }

    /// The graph, once every object and deadline was added.
    /// - Throws: when there is no root, or an object or a deadline refers to one the snapshot lacks.
    public func graph() throws(SnapshotError) -> Graph {
        let graph = Graph(restoring: self)
        try self.finish(into: graph)
        return graph
    }

    func finish(into graph: Graph) throws(SnapshotError) {
        guard self.restored[.root] != nil else { throw SnapshotError("the snapshot has no root object") }
        for object in self.restored {
            var missing = false
            object.forEachReference { if self.restored[$0] == nil { missing = true } }
            guard missing else { continue }
            var dangling: (key: String, missing: ObjectID)?
            object.forEachValue { key, value in
                guard dangling == nil else { return }
                Graph.forEachReferenceIn(value) { if self.restored[$0] == nil { dangling = (key, $0) } }
            }
            if let dangling {
                throw SnapshotError("$\(object.id).\(dangling.key) refers to $\(dangling.missing), which the snapshot lacks")
            }
        }
        if let orphan = self.deadlines.objects.first(where: { self.restored[$0] == nil }) {
            throw SnapshotError("a deadline refers to $\(orphan), which the snapshot lacks")
        }
        graph.objects = self.restored
        graph.rootObject = self.restored[.root]!  // checked above
        graph.nextObjectID = self.nextObjectID
        graph.seq = self.seq
        graph.deadlines = self.deadlines
        graph.allocatedSinceCollection = 0
        self.restored = ObjectTable()
        self.deadlines = DeadlineTable()
    }
}

