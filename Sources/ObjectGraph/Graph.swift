// The object graph: objects by id, the root, the global change counter `seq`, and key-value coding (get and set by
// key path). Observation lives in Observation/; every mutation goes through `commit` (Graph+Commit.swift) so that
// observers are notified. Not thread-safe by design: one owner (the server's loop, or one actor) drives it.

/// An observable object graph with key-value coding and key-value observing semantics.
public final class Graph {
    /// The seq of the last successful mutation (0 before any). Each mutation takes the next value.
    public internal(set) var seq: UInt64 = 0
    /// The maximum nesting of a value (records and arrays) a `set` accepts.
    public var maxValueDepth = 64

    var objects: [ObjectID: GraphObject] = [:]
    var nextObjectID: ObjectID = ObjectID.root + 1
    let registry = ObservationRegistry()
    /// Objects created since the last collection; drives when garbage collection runs.
    var allocatedSinceCollection = 0

    /// Creates a graph whose root is an object of `rootClass`.
    public init(rootClass: ObjectClass = .open) {
        self.objects[.root] = GraphObject(id: .root, objectClass: rootClass)
    }

    /// The number of live objects, the root included.
    public var objectCount: Int { self.objects.count }

    // MARK: - Reading

    /// The value at `path`, with objects given as snapshots (`Value.record`, a second visit of the same object as
    /// `Value.object(id)`). A key that was never set reads as null.
    /// - Throws: `undefinedKey` for an unknown `$id`, `typeMismatch` for a path through a non-object.
    public func get(_ path: KeyPath) throws(GraphError) -> Value {
        self.export(try self.value(at: path))
    }

    /// The value at `path` as stored: objects are `Value.object` references.
    public func value(at path: KeyPath) throws(GraphError) -> Value {
        guard var object = self.objects[path.origin] else {
            throw GraphError.undefinedKey(path: path.prefixDescription(0))
        }
        for (index, key) in path.keys.enumerated() {
            let value = object.value(forKey: key) ?? .null
            if index == path.keys.count - 1 { return value }
            switch value {
            case .object(let id):
                object = self.objects[id]!  // invariant: stored references point to live objects
            case .null:
                return .null  // a null intermediate reads as null
            default:
                throw GraphError.typeMismatch(
                    path: path.prefixDescription(index + 1), reason: "\(value.typeName) is not an object")
            }
        }
        return .object(object.id)
    }

    /// A detached copy of `value`: live object references become records (with their `id`), and an object met a
    /// second time stays a reference, so cycles and shared objects terminate.
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
            record.values = object.keys.map {
                self.export(object.value(forKey: $0) ?? .null, seen: &seen, depth: depth + 1)
            }
            return .record(record)
        }
    }

    // MARK: - Writing

    /// Sets the value at `path`, creating missing or null intermediate objects (like `mkdir -p`), and notifies every
    /// observer the change reaches before returning. A record becomes a new object.
    /// - Returns: the seq of this change.
    /// - Throws: nothing is changed when it throws.
    @discardableResult
    public func set(_ path: KeyPath, to value: Value) throws(GraphError) -> UInt64 {
        guard let last = path.keys.last else {
            throw GraphError.invalidPath(path: path.description, reason: "a set needs a key to set")
        }
        try self.checkStorable(value, path: path, depth: 0)
        guard var object = self.objects[path.origin] else {
            throw GraphError.undefinedKey(path: path.prefixDescription(0))
        }
        // Walk to the deepest existing object; a missing or null intermediate turns the rest of the path into
        // nested records, so the whole change is one mutation of one key.
        for (index, key) in path.keys.dropLast().enumerated() {
            switch object.value(forKey: key) ?? .null {
            case .object(let id):
                object = self.objects[id]!  // invariant: stored references point to live objects
            case .null:
                var nested = value
                for inner in path.keys[(index + 1)...].reversed() {
                    nested = .record(Record(keys: [inner], values: [nested]))
                }
                return self.commitSet(object: object, key: key, value: nested)
            case let other:
                throw GraphError.typeMismatch(
                    path: path.prefixDescription(index + 1), reason: "\(other.typeName) is not an object")
            }
        }
        return self.commitSet(object: object, key: last, value: value)
    }

    private func commitSet(object: GraphObject, key: String, value: Value) -> UInt64 {
        self.commit([Touch(object: object.id, key: key)]) {
            object.setValue(self.materialize(value), forKey: key)
        }
    }

    /// Checks what can be checked before a change: references point to live objects, keys are valid, depth.
    func checkStorable(_ value: Value, path: KeyPath, depth: Int) throws(GraphError) {
        if depth > self.maxValueDepth {
            throw GraphError.tooDeep(path: path.description, limit: self.maxValueDepth)
        }
        switch value {
        case .null, .bool, .int, .string: return
        case .double(let number):
            if !number.isFinite {
                throw GraphError.validationFailed(path: path.description, reason: "number is not finite")
            }
        case .array(let elements):
            for element in elements { try self.checkStorable(element, path: path, depth: depth + 1) }
        case .object(let id):
            if self.objects[id] == nil { throw GraphError.undefinedKey(path: "$\(id)") }
        case .record(let record):
            for (key, element) in zip(record.keys, record.values) {
                if key.isEmpty || key.utf8.contains(UInt8(ascii: ".")) || key.utf8.first == UInt8(ascii: "$") {
                    throw GraphError.invalidPath(
                        path: path.description, reason: "'\(key)' cannot be a key (empty, '.' or leading '$')")
                }
                try self.checkStorable(element, path: path, depth: depth + 1)
            }
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
            let object = self.makeObject(ObjectClass.open)
            for (key, element) in zip(record.keys, record.values) {
                object.setValue(self.materialize(element), forKey: key)
            }
            return .object(object.id)
        }
    }

    /// Allocates a new, empty object.
    func makeObject(_ objectClass: ObjectClass) -> GraphObject {
        let object = GraphObject(id: self.nextObjectID, objectClass: objectClass)
        self.nextObjectID += 1
        self.objects[object.id] = object
        self.allocatedSinceCollection += 1
        return object
    }
}

extension Value {
    /// True when the value is or contains an object (a reference or a record).
    var containsObjects: Bool {
        switch self {
        case .null, .bool, .int, .double, .string: false
        case .object, .record: true
        case .array(let elements): elements.contains(where: \.containsObjects)
        }
    }
}
