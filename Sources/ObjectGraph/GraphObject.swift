// One object in the graph: its identity, its class and its stored values. It knows nothing of observation or
// validation; the graph changes it only inside a commit (Graph+Commit.swift) so that observers are told.
//
// In memory an object is one array of entries in key order, each a key and its slot (48 bytes):
//
//     GraphObject ── id, class
//       entries: [ "name" .string("object 1") seq | "n" .int(1) seq | "tags" .array(→ heap) seq ]
//                  (a key: 16 bytes, inline when short; a Slot: a 24-byte Value and its 8-byte modSeq)
//       index:   nil, or [key: position] once the object has more than `indexThreshold` keys
//
// A key is found by a linear scan of the keys (a few string compares, cheaper than hashing for the small objects
// graphs are made of) or, for a large object (an open root holding 100,000 keys), through the index.

/// An object in a graph. Loop-owned by whoever owns the graph.
final class GraphObject {
    let id: ObjectID
    let objectClass: ObjectClass
    /// The keys and their slots in the order the keys were first set (declared keys in declaration order).
    /// (Unchecked exclusivity: see Graph.objects.)
    @exclusivity(unchecked) private var entries: [Entry] = []
    /// Positions by key, for objects with more than `indexThreshold` keys.
    @exclusivity(unchecked) private var index: [String: Int]?

    /// Up to this many keys an object has no index.
    static let indexThreshold = 12

    /// A stored value and the seq of the mutation that last stored it (its modSeq, for conditional writes).
    struct Slot {
        var value: Value
        var modSeq: UInt64
    }

    private struct Entry {
        let key: String
        var slot: Slot
    }

    /// The keys in order.
    var keys: [String] { self.entries.map(\.key) }

    /// The stored values in key order.
    var values: [Value] { self.entries.map(\.slot.value) }

    /// The modSeqs in key order.
    var modSeqs: [UInt64] { self.entries.map(\.slot.modSeq) }

    /// Calls `body` with each key and its value, in key order (no lookups).
    @inline(__always)
    func forEachValue(_ body: (String, Value) throws -> Void) rethrows {
        for entry in self.entries { try body(entry.key, entry.slot.value) }
    }

    init(id: ObjectID, objectClass: ObjectClass) {
        self.id = id
        self.objectClass = objectClass
    }

    /// The position of `key` in `entries`.
    @inline(__always)
    private func position(of key: String) -> Int? {
        if let index = self.index { return index[key] }
        return self.entries.firstIndex { $0.key == key }
    }

    /// The stored value, or nil when the key was never set.
    @inline(__always)
    func value(forKey key: String) -> Value? {
        guard let position = self.position(of: key) else { return nil }
        return self.entries[position].slot.value
    }

    /// The seq of the mutation that last stored `key`, or nil when the key was never set.
    func modSeq(forKey key: String) -> UInt64? {
        guard let position = self.position(of: key) else { return nil }
        return self.entries[position].slot.modSeq
    }

    /// The stored value with its modSeq (for undo), or nil when the key was never set.
    func slot(forKey key: String) -> Slot? {
        guard let position = self.position(of: key) else { return nil }
        return self.entries[position].slot
    }

    /// Stores a value. A new key goes to the end of the key order, except that a key the class declares goes
    /// among the declared keys in declaration order (so `get` shows a typed object's keys as its class lists them).
    func setValue(_ value: Value, forKey key: String, modSeq: UInt64) {
        let slot = Slot(value: value, modSeq: modSeq)
        if let position = self.position(of: key) {
            self.entries[position].slot = slot
            return
        }
        guard let rank = self.objectClass.declarationIndex(key) else {
            self.entries.append(Entry(key: key, slot: slot))
            if self.index != nil {
                self.index![key] = self.entries.count - 1
            } else if self.entries.count > Self.indexThreshold {
                self.buildIndex()
            }
            return
        }
        let position =
            self.entries.firstIndex { (self.objectClass.declarationIndex($0.key) ?? Int.max) > rank }
            ?? self.entries.count
        self.entries.insert(Entry(key: key, slot: slot), at: position)
        if self.index != nil || self.entries.count > Self.indexThreshold { self.buildIndex() }
    }

    /// Puts a key back as it was (undo): `previous` nil removes the key.
    func restore(_ key: String, to previous: Slot?) {
        if let previous {
            self.setValue(previous.value, forKey: key, modSeq: previous.modSeq)
        } else if let position = self.position(of: key) {
            self.entries.remove(at: position)
            guard self.index != nil else { return }
            // Undo removes the key it added, which is the last one (a large object's new keys are appended).
            if position == self.entries.count { self.index![key] = nil } else { self.buildIndex() }
        }
    }

    private func buildIndex() {
        var index: [String: Int] = [:]
        index.reserveCapacity(self.entries.count)
        for (position, entry) in self.entries.enumerated() { index[entry.key] = position }
        self.index = index
    }
}
