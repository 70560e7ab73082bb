// The graph's objects by id. Ids are dense and never reused, so the table is an array of chunks of 256 slots indexed
// by id, not a hash table: a lookup is two array reads, and a live object costs one 8-byte slot. A chunk whose
// objects were all collected is freed, so ids that died long ago cost 8 bytes per 256 of them (the chunk list).

/// Objects by id, iterated in id order.
struct ObjectTable: Sequence {
    fileprivate final class Chunk {
        @exclusivity(unchecked) var slots = [GraphObject?](repeating: nil, count: ObjectTable.chunkSize)
        @exclusivity(unchecked) var live = 0
    }

    private static let chunkShift = 8
    private static let chunkSize = 1 << chunkShift

    private var chunks: [Chunk?] = []
    /// The number of objects.
    private(set) var count = 0

    init() {}

    subscript(id: ObjectID) -> GraphObject? {
        @inline(__always) get {
            let number = id >> Self.chunkShift
            guard id >= 0, number < self.chunks.count, let chunk = self.chunks[number] else { return nil }
            return chunk.slots[id & (Self.chunkSize - 1)]
        }
        set {
            precondition(id >= 0, "object ids are not negative")
            let number = id >> Self.chunkShift
            if number >= self.chunks.count {
                guard newValue != nil else { return }
                self.chunks.append(contentsOf: repeatElement(nil, count: number + 1 - self.chunks.count))
            }
            let chunk: Chunk
            if let existing = self.chunks[number] {
                chunk = existing
            } else {
                guard newValue != nil else { return }
                chunk = Chunk()
                self.chunks[number] = chunk
            }
            let slot = id & (Self.chunkSize - 1)
            let change = (newValue == nil ? 0 : 1) - (chunk.slots[slot] == nil ? 0 : 1)
            chunk.slots[slot] = newValue
            chunk.live += change
            self.count += change
            if chunk.live == 0 { self.chunks[number] = nil }
        }
    }

    /// Removes every object for which `shouldRemove` is true.
    mutating func removeAll(where shouldRemove: (GraphObject) -> Bool) {
        for number in self.chunks.indices {
            guard let chunk = self.chunks[number] else { continue }
            for slot in 0..<Self.chunkSize {
                guard let object = chunk.slots[slot], shouldRemove(object) else { continue }
                chunk.slots[slot] = nil
                chunk.live -= 1
                self.count -= 1
            }
            if chunk.live == 0 { self.chunks[number] = nil }
        }
    }

    struct Iterator: IteratorProtocol {
        fileprivate let chunks: [Chunk?]
        fileprivate var number = 0
        fileprivate var slot = 0

        mutating func next() -> GraphObject? {
            while self.number < self.chunks.count {
                if let chunk = self.chunks[self.number] {
                    while self.slot < ObjectTable.chunkSize {
                        defer { self.slot += 1 }
                        if let object = chunk.slots[self.slot] { return object }
                    }
                }
                self.number += 1
                self.slot = 0
            }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(chunks: self.chunks) }

    var underestimatedCount: Int { self.count }
}
