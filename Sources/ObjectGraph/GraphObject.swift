// One object in the graph: its identity, its class and its stored values. It knows nothing of observation or
// validation; the graph changes it only inside a commit (Graph+Commit.swift) so that observers are told.

/// An object in a graph. Loop-owned by whoever owns the graph.
final class GraphObject {
    let id: ObjectID
    let objectClass: ObjectClass
    /// Keys in the order they were first set.
    /// (Unchecked exclusivity: see Graph.objects.)
    @exclusivity(unchecked) private(set) var keys: [String] = []
    @exclusivity(unchecked) private var storage: [String: Slot] = [:]

    /// A stored value and the seq of the mutation that last stored it (its modSeq, for conditional writes).
    struct Slot {
        var value: Value
        var modSeq: UInt64
    }

    init(id: ObjectID, objectClass: ObjectClass) {
        self.id = id
        self.objectClass = objectClass
    }

    /// The stored value, or nil when the key was never set.
    @inline(__always)
    func value(forKey key: String) -> Value? {
        self.storage[key]?.value
    }

    /// The seq of the mutation that last stored `key`, or nil when the key was never set.
    func modSeq(forKey key: String) -> UInt64? {
        self.storage[key]?.modSeq
    }

    /// The stored value with its modSeq (for undo), or nil when the key was never set.
    func slot(forKey key: String) -> Slot? {
        self.storage[key]
    }

    /// Stores a value. A new key goes to the end of the key order, except that a key the class declares goes
    /// among the declared keys in declaration order (so `get` shows a typed object's keys as its class lists them).
    func setValue(_ value: Value, forKey key: String, modSeq: UInt64) {
        guard self.storage.updateValue(Slot(value: value, modSeq: modSeq), forKey: key) == nil else { return }
        guard let rank = self.objectClass.declarationIndex(key) else {
            self.keys.append(key)
            return
        }
        let position = self.keys.firstIndex { (self.objectClass.declarationIndex($0) ?? Int.max) > rank } ?? self.keys.count
        self.keys.insert(key, at: position)
    }

    /// Puts a key back as it was (undo): `previous` nil removes the key.
    func restore(_ key: String, to previous: Slot?) {
        if let previous {
            self.setValue(previous.value, forKey: key, modSeq: previous.modSeq)
        } else if self.storage.removeValue(forKey: key) != nil {
            self.keys.removeAll { $0 == key }
        }
    }
}
