// The graph's objects by id. Ids are dense and never reused, so the table is an array of chunks of 256 slots indexed
// by id, not a hash table: a lookup is two array reads, and a live object costs one 8-byte slot holding the address
// of its block (GraphObject.swift). The table owns the blocks: it frees one when it drops its object (`remove`,
// `removeAll(where:)`, or the chunk going away with the last table that holds it), so an object costs exactly its
// slot and its block. A chunk's slots never move (a `GraphObject` points at its slot, which follows its block as it
// grows); a chunk whose objects were all removed is freed, so ids that died long ago cost 8 bytes per 256 of them
// (the chunk list). The chunk list is direct up to id 2^28; chunks of larger ids (a graph that has created hundreds
// of millions of objects, or a snapshot naming such ids) are found through a dictionary, so memory follows the live
// chunks, not the largest id.

/// Objects by id, iterated in id order. Copies share their objects (the graph and a restorer hand one over).
struct ObjectTable: Sequence {
    fileprivate final class Chunk {
        /// The blocks' addresses, nil where there is no object.
        let slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>
        var live = 0

        init() {
            self.slots = .allocate(capacity: ObjectTable.chunkSize)
            self.slots.initialize(repeating: nil, count: ObjectTable.chunkSize)
        }

        deinit {
            for slot in 0..<ObjectTable.chunkSize {
                if let block = self.slots[slot] { GraphObject.freeBlock(block) }
            }
            self.slots.deallocate()
        }
    }

    private static let chunkShift = 8
    fileprivate static let chunkSize = 1 << chunkShift
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

    /// The object with `id`, or nil.
    subscript(id: ObjectID) -> GraphObject? {
        @inline(__always) get {
            guard id >= 0, let chunk = self.chunk(id >> Self.chunkShift) else { return nil }
            let slot = chunk.slots + (id & (Self.chunkSize - 1))
            return slot.pointee == nil ? nil : GraphObject(id: id, slot: slot)
        }
    }

    /// Adds an object of `objectClass` with no keys, its block sized for `capacity` bytes (GraphObject.makeBlock).
    /// There must be no object with `id`.
    mutating func create(_ id: ObjectID, _ objectClass: ObjectClass, capacity: Int = 0) -> GraphObject {
        precondition(id >= 0, "object ids are not negative")
        let number = id >> Self.chunkShift
        let chunk: Chunk
        if let existing = self.chunk(number) {
            chunk = existing
        } else {
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
        let slot = chunk.slots + (id & (Self.chunkSize - 1))
        precondition(slot.pointee == nil, "object $\(id) exists already")
        slot.pointee = GraphObject.makeBlock(objectClass, capacity: capacity)
        chunk.live += 1
        self.count += 1
        return GraphObject(id: id, slot: slot)
    }

    /// Removes and frees the object with `id`, if there is one.
    mutating func remove(_ id: ObjectID) {
        let number = id >> Self.chunkShift
        guard id >= 0, let chunk = self.chunk(number) else { return }
        let slot = chunk.slots + (id & (Self.chunkSize - 1))
        guard let block = slot.pointee else { return }
        slot.pointee = nil
        GraphObject.freeBlock(block)
        chunk.live -= 1
        self.count -= 1
        if chunk.live == 0 { self.free(number) }
    }

    private mutating func free(_ number: Int) {
        if number < Self.directChunks { self.chunks[number] = nil } else { self.farChunks[number] = nil }
    }

    /// Removes and frees every object for which `shouldRemove` is true.
    mutating func removeAll(where shouldRemove: (GraphObject) -> Bool) {
        let numbers = Array(self.chunks.indices) + self.farChunks.keys.sorted()
        for number in numbers {
            guard let chunk = self.chunk(number) else { continue }
            for index in 0..<Self.chunkSize {
                let slot = chunk.slots + index
                guard let block = slot.pointee,
                    shouldRemove(GraphObject(id: number << Self.chunkShift | index, slot: slot))
                else { continue }
                slot.pointee = nil
                GraphObject.freeBlock(block)
                chunk.live -= 1
                self.count -= 1
            }
            if chunk.live == 0 { self.free(number) }
        }
    }

    struct Iterator: IteratorProtocol {
        /// The chunks with their numbers, in order.
        fileprivate let chunks: [(number: Int, chunk: Chunk?)]
        fileprivate var position = 0
        fileprivate var slot = 0

        mutating func next() -> GraphObject? {
            while self.position < self.chunks.count {
                let (number, chunk) = self.chunks[self.position]
                if let chunk {
                    while self.slot < ObjectTable.chunkSize {
                        defer { self.slot += 1 }
                        let slot = chunk.slots + self.slot
                        if slot.pointee != nil {
                            return GraphObject(id: number << ObjectTable.chunkShift | self.slot, slot: slot)
                        }
                    }
                }
                self.position += 1
                self.slot = 0
            }
            return nil
        }
    }

    func makeIterator() -> Iterator {
        let direct = self.chunks.enumerated().map { (number: $0.offset, chunk: $0.element) }
        if self.farChunks.isEmpty { return Iterator(chunks: direct) }
        return Iterator(chunks: direct + self.farChunks.sorted { $0.key < $1.key }.map { ($0.key, Optional($0.value)) })
    }

    var underestimatedCount: Int { self.count }
}
