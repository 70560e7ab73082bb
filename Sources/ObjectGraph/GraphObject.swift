// One object in the graph: its identity, its class and its stored values. It knows nothing of observation or
// validation; the graph changes it only inside a commit (Graph+Commit.swift) so that observers are told.

/// An object in a graph. Loop-owned by whoever owns the graph.
final class GraphObject {
    let id: ObjectID
    let objectClass: ObjectClass
    /// Keys in the order they were first set.
    private(set) var keys: [String] = []
    private var storage: [String: Value] = [:]

    init(id: ObjectID, objectClass: ObjectClass) {
        self.id = id
        self.objectClass = objectClass
    }

    /// The stored value, or nil when the key was never set.
    @inline(__always)
    func value(forKey key: String) -> Value? {
        self.storage[key]
    }

    /// Stores a value; a new key goes to the end of the key order.
    func setValue(_ value: Value, forKey key: String) {
        if self.storage.updateValue(value, forKey: key) == nil {
            self.keys.append(key)
        }
    }

    /// Puts a key back as it was (undo): `previous` nil removes the key.
    func restore(_ key: String, to previous: Value?) {
        if let previous {
            self.setValue(previous, forKey: key)
        } else if self.storage.removeValue(forKey: key) != nil {
            self.keys.removeAll { $0 == key }
        }
    }

    /// The number of stored keys.
    var count: Int { self.keys.count }
}
