// The graph's objects by id. Ids are dense and never reused, so the table is an array of chunks of 256 slots indexed
// by id, not a hash table: a lookup is two array reads, and a live object costs one 8-byte slot. A chunk whose objects
// were all collected is freed, so ids that died long ago cost 8 bytes per 256 of them (the chunk list). The chunk list
// is direct up to id 2^28; chunks of larger ids (a graph that has created hundreds of millions of objects, or a
// snapshot naming such ids) are found through a dictionary, so memory follows the live chunks, not the largest id.

/// Objects by id, iterated in id order.
struct ObjectTable: Sequence {
    fileprivate final class Chunk {
        @exclusivity(unchecked) var slots = [GraphObject?](repeating: nil, count: ObjectTable.chunkSize)
        @exclusivity(unchecked) var live = 0
    }

    private static let chunkShift = 8
    private static let chunkSize = 1 << chunkShift
    /// Chunk numbers below this are kept in `chunks` (at most 8 MiB of chunk list).
    private static let directChunks = 1 << 20

    private var chunks: [Chunk?] = []
    private var farChunks: [Int: Chunk] = [:]
    /// The number of objects.
    private(set) var count = 0

    init() {}

    @inline(__always)
    private func chunk(_ number: Int) -> Chunk? {
        if number < self.chunks.count { return self.chunks[number] }
        if number < Self.directChunks || self.farChunks.isEmpty { return nil }
        return self.farChunks[number]
    }

    subscript(id: ObjectID) -> GraphObject? {
        @inline(__always) get {
            guard id >= 0, let chunk = self.chunk(id >> Self.chunkShift) else { return nil }
            return chunk.slots[id & (Self.chunkSize - 1)]
        }
        set {
            precondition(id >= 0, "object ids are not negative")
            let number = id >> Self.chunkShift
            let chunk: Chunk
            if let existing = self.chunk(number) {
                chunk = existing
            } else {
                guard newValue != nil else { return }
                chunk = Chunk()
                if number < Self.directChunks {
                    if number >= self.chunks.count {
                        self.chunks.append(contentsOf: repeatElement(nil, count: number + 1 - self.chunks.count))
                    }
                    self.chunks[number] = chunk
                } else {
                    self.farChunks[number] = chunk
                }
            }
            let slot = id & (Self.chunkSize - 1)
            let change = (newValue == nil ? 0 : 1) - (chunk.slots[slot] == nil ? 0 : 1)
            chunk.slots[slot] = newValue
            chunk.live += change
            self.count += change
            if chunk.live == 0 { self.free(number) }
        }
    }

    private mutating func free(_ number: Int) {
        if number < Self.directChunks { self.chunks[number] = nil } else { self.farChunks[number] = nil }
    }

    /// Removes every object for which `shouldRemove` is true.
    mutating func removeAll(where shouldRemove: (GraphObject) -> Bool) {
        let numbers = Array(self.chunks.indices) + self.farChunks.keys.sorted()
        for number in numbers {
            guard let chunk = self.chunk(number) else { continue }
            for slot in 0..<Self.chunkSize {
                guard let object = chunk.slots[slot], shouldRemove(object) else { continue }
                chunk.slots[slot] = nil
                chunk.live -= 1
                self.count -= 1
            }
            if chunk.live == 0 { self.free(number) }
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

    func makeIterator() -> Iterator {
        if self.farChunks.isEmpty { return Iterator(chunks: self.chunks) }
        return Iterator(chunks: self.chunks + self.farChunks.sorted { $0.key < $1.key }.map { Optional($0.value) })
    }

    var underestimatedCount: Int { self.count }
}
