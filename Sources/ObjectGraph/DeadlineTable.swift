// The side table of expiring keys: (object, key) → absolute deadline in Unix epoch milliseconds, kept as an indexed
// binary min-heap so the earliest deadline is O(1), setting, moving or clearing one O(log n), and a key without a
// deadline costs nothing (no per-object field; a lookup only when the object has deadlines at all). What a deadline
// means to the graph (who may set one, what expiry does) is in Graph+Expiry.swift.

/// A key's expiry: at `expiresAt` (Unix epoch milliseconds), `key` of `object` is set to null.
public struct Deadline: Sendable, Hashable, Comparable {
    public var object: ObjectID
    public var key: String
    public var expiresAt: UInt64

    public init(object: ObjectID, key: String, expiresAt: UInt64) {
        self.object = object
        self.key = key
        self.expiresAt = expiresAt
    }

    /// Earliest first; ties by object id, then key, so the order never depends on how the table was built (a
    /// restored graph lists its due keys in the same order as the graph it was taken from).
    public static func < (lhs: Deadline, rhs: Deadline) -> Bool {
        if lhs.expiresAt != rhs.expiresAt { return lhs.expiresAt < rhs.expiresAt }
        if lhs.object != rhs.object { return lhs.object < rhs.object }
        return lhs.key < rhs.key
    }
}

/// Deadlines by (object, key) with the earliest one at hand. Owned by one graph.
struct DeadlineTable {
    /// The heap, ordered by `Deadline.<`.
    private var heap: [Deadline] = []
    /// Where each (object, key) sits in `heap`. By object first, so a set on an object without deadlines hashes
    /// one integer and no string.
    private var positions: [ObjectID: [String: Int]] = [:]

    /// True when no key has a deadline.
    var isEmpty: Bool { self.heap.isEmpty }

    /// The number of keys with a deadline.
    var count: Int { self.heap.count }

    /// The earliest deadline, if any.
    var first: Deadline? { self.heap.first }

    /// The objects that have at least one deadline.
    var objects: Dictionary<ObjectID, [String: Int]>.Keys { self.positions.keys }

    /// The deadline of `key` of `object`, or nil.
    func deadline(object: ObjectID, key: String) -> UInt64? {
        guard let position = self.positions[object]?[key] else { return nil }
        return self.heap[position].expiresAt
    }

    /// Gives `key` of `object` the deadline `expiresAt`, or removes its deadline when nil; returns the previous one.
    @discardableResult
    mutating func update(object: ObjectID, key: String, to expiresAt: UInt64?) -> UInt64? {
        guard let position = self.positions[object]?[key] else {
            if let expiresAt { self.insert(Deadline(object: object, key: key, expiresAt: expiresAt)) }
            return nil
        }
        let previous = self.heap[position].expiresAt
        if let expiresAt {
            self.heap[position].expiresAt = expiresAt
            self.restoreOrder(at: position)
        } else {
            self.remove(at: position)
        }
        return previous
    }

    /// Every deadline at or before `now`, earliest first (ties as `Deadline.<`).
    func due(now: UInt64) -> [Deadline] {
        var found: [Deadline] = []
        var stack: [Int] = self.heap.isEmpty ? [] : [0]
        // A heap's subtree holds nothing earlier than its top: walk only the subtrees whose top is due.
        while let position = stack.popLast() {
            guard self.heap[position].expiresAt <= now else { continue }
            found.append(self.heap[position])
            if 2 * position + 1 < self.heap.count { stack.append(2 * position + 1) }
            if 2 * position + 2 < self.heap.count { stack.append(2 * position + 2) }
        }
        return found.sorted()
    }

    /// Every deadline, by object id then key (the order snapshots write them in).
    func all() -> [Deadline] {
        self.heap.sorted { ($0.object, $0.key) < ($1.object, $1.key) }
    }

    // MARK: - Heap

    private mutating func insert(_ deadline: Deadline) {
        self.heap.append(deadline)
        self.positions[deadline.object, default: [:]][deadline.key] = self.heap.count - 1
        self.siftUp(self.heap.count - 1)
    }

    private mutating func remove(at position: Int) {
        let removed = self.heap[position]
        let last = self.heap.count - 1
        if position != last { self.swapAt(position, last) }
        self.heap.removeLast()
        self.positions[removed.object]?[removed.key] = nil
        if self.positions[removed.object]?.isEmpty == true { self.positions[removed.object] = nil }
        if position < self.heap.count { self.restoreOrder(at: position) }
    }

    /// Moves the entry at `position` up or down to where it belongs after its deadline changed.
    private mutating func restoreOrder(at position: Int) {
        if position > 0 && self.heap[position] < self.heap[(position - 1) / 2] {
            self.siftUp(position)
        } else {
            self.siftDown(position)
        }
    }

    private mutating func siftUp(_ start: Int) {
        var position = start
        while position > 0 {
            let parent = (position - 1) / 2
            guard self.heap[position] < self.heap[parent] else { return }
            self.swapAt(position, parent)
            position = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var position = start
        while true {
            var smallest = position
            let left = 2 * position + 1
            let right = left + 1
            if left < self.heap.count && self.heap[left] < self.heap[smallest] { smallest = left }
            if right < self.heap.count && self.heap[right] < self.heap[smallest] { smallest = right }
            guard smallest != position else { return }
            self.swapAt(position, smallest)
            position = smallest
        }
    }

    private mutating func swapAt(_ first: Int, _ second: Int) {
        self.heap.swapAt(first, second)
        self.positions[self.heap[first].object]![self.heap[first].key] = first  // invariant: every entry is indexed
        self.positions[self.heap[second].object]![self.heap[second].key] = second
    }
}
