// Conditional writes (etcd's compare on mod_revision, Firebase's transactions): every stored key remembers the seq of
// the mutation that last stored it, its modSeq; a write may require the key to be unchanged since a seq, to hold a
// value, or to be absent, and is refused with the current value and modSeq otherwise (Protocol/methods.md#set).
// A key's deadline (`expiry`) is read here too, for `get` with `meta`.

/// A condition a write must meet to go ahead.
public enum WriteCondition: Sendable, Equatable {
    /// The key was not stored since this seq: its modSeq is at most this (a key never set qualifies).
    case modSeq(UInt64)
    /// The key's current value equals this one, as JSON (object ids aside; 1 equals 1.0).
    case value(Value)
    /// The key is null or was never set.
    case absent
}

extension Graph {
    /// The value at `path` (as `get` gives it) and the modSeq of its last key: the seq of the mutation that last
    /// stored it; nil for a computed key, a key never set, or a path through a missing object.
    public func meta(_ path: KeyPath) throws(GraphError) -> (value: Value, modSeq: UInt64?) {
        let (stored, modSeq) = try self.storedMeta(path)
        return (self.export(stored), modSeq)
    }

    /// As `meta`, with the value as stored (`value(at:)`: objects as references), for a caller that exports only a
    /// part of it (a page of a to-many).
    public func storedMeta(_ path: KeyPath) throws(GraphError) -> (value: Value, modSeq: UInt64?) {
        let value = try self.value(at: path)
        guard let key = path.keys.last else { return (value, nil) }
        let holder = try self.value(at: KeyPath(origin: path.origin, keys: Array(path.keys.dropLast())))
        guard case .object(let id) = holder, let object = self.objects[id], object.objectClass.property(key)?.computed == nil
        else { return (value, nil) }
        return (value, object.modSeq(forKey: key))
    }

    /// Convenience: `meta(KeyPath(parsing: path))`.
    public func meta(_ path: String) throws(GraphError) -> (value: Value, modSeq: UInt64?) {
        try self.meta(KeyPath(parsing: path))
    }

    /// The deadline (Unix epoch milliseconds) of the key `path` ends at, for `get` with `meta` (`expires`); nil when
    /// it has none or the path does not lead to a key of an object (Graph+Expiry.swift).
    public func expiry(_ path: KeyPath) -> UInt64? {
        guard !self.deadlines.isEmpty, let key = path.keys.last,
            case .object(let id)? = try? self.value(at: KeyPath(origin: path.origin, keys: Array(path.keys.dropLast())))
        else { return nil }
        return self.deadlines.deadline(object: id, key: key)
    }

    /// Convenience: `expiry(KeyPath(parsing: path))`; nil for a malformed path.
    public func expiry(_ path: String) -> UInt64? {
        (try? KeyPath(parsing: path)).flatMap { self.expiry($0) }
    }

    /// Throws `conditionFailed` (with the current value and modSeq) unless `condition` holds at `path`.
    func check(_ condition: WriteCondition, at path: KeyPath) throws(GraphError) {
        let current = try self.meta(path)
        let holds =
            switch condition {
            case .modSeq(let seq): (current.modSeq ?? 0) <= seq
            case .value(let expected): Self.sameJSON(current.value, expected)
            case .absent: current.value.isNull
            }
        guard holds else {
            throw GraphError.conditionFailed(path: path.description, value: current.value, modSeq: current.modSeq)
        }
    }

    /// JSON equality: numbers by value, objects by their members whatever the order, object ids ignored.
    static func sameJSON(_ lhs: Value, _ rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.record(let left), .record(let right)):
            guard left.keys.count == right.keys.count else { return false }
            for (key, value) in zip(left.keys, left.values) {
                guard let other = right[key], Self.sameJSON(value, other) else { return false }
            }
            return true
        case (.array(let left), .array(let right)):
            return left.count == right.count && zip(left, right).allSatisfy { Self.sameJSON($0, $1) }
        case (.int, .double), (.double, .int):
            return lhs.numericValue == rhs.numericValue
        default:
            return lhs == rhs
        }
    }
}
