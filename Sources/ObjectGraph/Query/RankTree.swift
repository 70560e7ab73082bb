// A sequence of bits that answers "how many ones before position p" (rank) and "where is the k-th one" (select) in
// O(log n), and takes a bit inserted or removed anywhere in O(log n): a live query's matches, one bit per element of
// the order it is shown in (LiveQuery.swift), so that an element's place among the matches, and the match at a place
// in the window, are found without walking the collection.
//
//     RankTree ── root: Node(children, bits, ones) … ── leaves: up to 2,048 bits in 64-bit words
//
// Leaves hold at least a quarter of their capacity (a removal that leaves less merges the leaf with a neighbour, and
// splits the pair evenly when it does not fit), interior nodes at least a quarter of their children; one owner,
// changed in place.

/// A sequence of bits with rank and select (see the file comment). Not thread-safe; owned by one live query.
struct RankTree {
    static let leafWords = 32
    static let leafCapacity = leafWords * 64
    static let fanout = 64

    private(set) var root = Node(words: [], bits: 0)

    init() {}

    /// `count` bits, each `bit(position)`.
    init(count: Int, bit: (Int) -> Bool) {
        guard count > 0 else { return }
        let leaves = evenRanges(count, parts: (count + Self.leafCapacity - 1) / Self.leafCapacity).map { range in
            var words = [UInt64](repeating: 0, count: (range.count + 63) / 64)
            for offset in 0..<range.count where bit(range.lowerBound + offset) {
                words[offset >> 6] |= 1 << UInt64(offset & 63)
            }
            return Node(words: words, bits: range.count)
        }
        self.root = buildLevels(leaves, fanout: Self.fanout, parent: Node.init(children:)) ?? self.root
    }

    /// The number of bits.
    var count: Int { self.root.bits }
    /// The number of ones.
    var ones: Int { self.root.ones }

    subscript(position: Int) -> Bool {
        var node = self.root
        var offset = position
        while !node.isLeaf {
            let child = node.child(containing: offset)
            offset = child.offset
            node = node.children[child.index]
        }
        return node.words[offset >> 6] & (1 << UInt64(offset & 63)) != 0
    }

    /// The ones before `position` (0 ... count).
    func rank(_ position: Int) -> Int {
        var node = self.root
        var offset = position
        var ones = 0
        while !node.isLeaf {
            var child = 0
            while child < node.children.count - 1 && offset >= node.children[child].bits {
                offset -= node.children[child].bits
                ones += node.children[child].ones
                child += 1
            }
            node = node.children[child]
        }
        var word = 0
        while offset >= 64 {
            ones += node.words[word].nonzeroBitCount
            offset -= 64
            word += 1
        }
        if offset > 0 { ones += (node.words[word] & ((1 << UInt64(offset)) - 1)).nonzeroBitCount }
        return ones
    }

    /// The position of the one with rank `k` (0 ..< ones).
    func select(_ k: Int) -> Int {
        var node = self.root
        var remaining = k
        var position = 0
        while !node.isLeaf {
            var child = 0
            while child < node.children.count - 1 && remaining >= node.children[child].ones {
                remaining -= node.children[child].ones
                position += node.children[child].bits
                child += 1
            }
            node = node.children[child]
        }
        for (index, word) in node.words.enumerated() {
            let ones = word.nonzeroBitCount
            if remaining < ones {
                var bits = word
                for _ in 0..<remaining { bits &= bits - 1 }  // clear the lowest `remaining` ones
                return position + index * 64 + bits.trailingZeroBitCount
            }
            remaining -= ones
        }
        return position + node.bits  // not reached for k < ones
    }

    mutating func insert(_ bit: Bool, at position: Int) {
        if let right = self.root.insert(bit, at: position) {
            self.root = Node(children: [self.root, right])
        }
    }

    /// Removes the bit at `position` and returns it.
    @discardableResult
    mutating func remove(at position: Int) -> Bool {
        let bit = self.root.remove(at: position)
        while !self.root.isLeaf && self.root.children.count == 1 { self.root = self.root.children[0] }
        return bit
    }

    /// Sets the bit at `position`; returns what it was.
    @discardableResult
    mutating func set(_ position: Int, to bit: Bool) -> Bool {
        self.root.set(position, to: bit)
    }

    /// The bits, in order (for tests).
    var bits: [Bool] { (0..<self.count).map { self[$0] } }

    /// The structure's invariants (for tests): counts add up, nodes below the root at least a quarter full, leaves at
    /// one depth.
    func checkInvariants() -> Bool { self.root.check(isRoot: true) != nil }

    final class Node {
        var words: [UInt64]
        var children: [Node]
        var bits: Int
        var ones: Int

        var isLeaf: Bool { self.children.isEmpty }

        init(words: [UInt64], bits: Int) {
            self.words = words
            self.children = []
            self.bits = bits
            self.ones = words.reduce(0) { $0 + $1.nonzeroBitCount }
        }

        init(children: [Node]) {
            self.words = []
            self.children = children
            self.bits = children.reduce(0) { $0 + $1.bits }
            self.ones = children.reduce(0) { $0 + $1.ones }
        }

        @inline(__always)
        func child(containing position: Int) -> (index: Int, offset: Int) {
            var offset = position
            var child = 0
            while child < self.children.count - 1 && offset >= self.children[child].bits {
                offset -= self.children[child].bits
                child += 1
            }
            return (child, offset)
        }

        func set(_ position: Int, to bit: Bool) -> Bool {
            if self.isLeaf {
                let mask: UInt64 = 1 << UInt64(position & 63)
                let old = self.words[position >> 6] & mask != 0
                if old != bit {
                    self.words[position >> 6] ^= mask
                    self.ones += bit ? 1 : -1
                }
                return old
            }
            let (index, offset) = self.child(containing: position)
            let old = self.children[index].set(offset, to: bit)
            if old != bit { self.ones += bit ? 1 : -1 }
            return old
        }

        /// Inserts; returns the right half when the node split.
        func insert(_ bit: Bool, at position: Int) -> Node? {
            self.bits += 1
            if bit { self.ones += 1 }
            if self.isLeaf {
                Self.insertBit(bit, at: position, into: &self.words, count: self.bits - 1)
                guard self.bits > RankTree.leafCapacity else { return nil }
                return self.splitLeaf()
            }
            let (index, offset) = self.child(containing: position)
            guard let split = self.children[index].insert(bit, at: offset) else { return nil }
            self.children.insert(split, at: index + 1)
            guard self.children.count > RankTree.fanout else { return nil }
            let half = self.children.count / 2
            let right = Node(children: Array(self.children[half...]))
            self.children.removeSubrange(half...)
            self.bits -= right.bits
            self.ones -= right.ones
            return right
        }

        func remove(at position: Int) -> Bool {
            self.bits -= 1
            if self.isLeaf {
                let bit = Self.removeBit(at: position, from: &self.words, count: self.bits + 1)
                if bit { self.ones -= 1 }
                return bit
            }
            let (index, offset) = self.child(containing: position)
            let bit = self.children[index].remove(at: offset)
            if bit { self.ones -= 1 }
            if self.children[index].size < self.children[index].minimumSize { self.rebalance(index) }
            return bit
        }

        private var size: Int { self.isLeaf ? self.bits : self.children.count }
        private var capacity: Int { self.isLeaf ? RankTree.leafCapacity : RankTree.fanout }
        private var minimumSize: Int { self.capacity / 4 }

        private func splitLeaf() -> Node {
            let half = self.bits / 2
            let bits = self.bits
            let right = Node(words: Self.slice(self.words, from: half, count: bits - half), bits: bits - half)
            self.words = Self.slice(self.words, from: 0, count: half)
            self.bits = half
            self.ones -= right.ones
            return right
        }

        /// Merges the underfull child with a neighbour; splits the pair evenly when it does not fit one node.
        private func rebalance(_ index: Int) {
            guard self.children.count > 1 else { return }
            let left = index > 0 ? index - 1 : index
            let merged = self.children[left]
            let next = self.children[left + 1]
            if merged.isLeaf {
                merged.words = Self.concatenate(merged.words, merged.bits, next.words, next.bits)
                merged.bits += next.bits
                merged.ones += next.ones
                if merged.bits <= RankTree.leafCapacity {
                    self.children.remove(at: left + 1)
                    return
                }
                self.children[left + 1] = merged.splitLeaf()
                return
            }
            merged.children.append(contentsOf: next.children)
            merged.bits += next.bits
            merged.ones += next.ones
            if merged.children.count <= RankTree.fanout {
                self.children.remove(at: left + 1)
                return
            }
            let half = merged.children.count / 2
            let right = Node(children: Array(merged.children[half...]))
            merged.children.removeSubrange(half...)
            merged.bits -= right.bits
            merged.ones -= right.ones
            self.children[left + 1] = right
        }

        // MARK: - Bits in words

        private static func insertBit(_ bit: Bool, at position: Int, into words: inout [UInt64], count: Int) {
            if (count + 1 + 63) / 64 > words.count { words.append(0) }
            let word = position >> 6
            let shift = UInt64(position & 63)
            // Every word above `word` moves up one bit, the top bit of each carried into the next.
            var carry: UInt64 = words[word] >> 63
            var index = word + 1
            while index < words.count {
                let top = words[index] >> 63
                words[index] = words[index] << 1 | carry
                carry = top
                index += 1
            }
            let low = shift == 0 ? 0 : words[word] & ((1 << shift) - 1)
            let high = shift == 0 ? words[word] : words[word] & ~((1 << shift) - 1)
            words[word] = low | (bit ? 1 << shift : 0) | high << 1
        }

        private static func removeBit(at position: Int, from words: inout [UInt64], count: Int) -> Bool {
            let word = position >> 6
            let shift = UInt64(position & 63)
            let bit = words[word] & (1 << shift) != 0
            let low = shift == 0 ? 0 : words[word] & ((1 << shift) - 1)
            let high = shift == 63 ? 0 : (words[word] >> (shift + 1)) << shift
            words[word] = low | high
            var index = word + 1
            while index < words.count {
                words[index - 1] |= (words[index] & 1) << 63
                words[index] >>= 1
                index += 1
            }
            if (count - 1 + 63) / 64 < words.count { words.removeLast() }
            return bit
        }

        /// `count` bits of `words` from bit `start`.
        private static func slice(_ words: [UInt64], from start: Int, count: Int) -> [UInt64] {
            var result = [UInt64](repeating: 0, count: (count + 63) / 64)
            for offset in 0..<count where words[(start + offset) >> 6] & (1 << UInt64((start + offset) & 63)) != 0 {
                result[offset >> 6] |= 1 << UInt64(offset & 63)
            }
            return result
        }

        private static func concatenate(_ left: [UInt64], _ leftBits: Int, _ right: [UInt64], _ rightBits: Int) -> [UInt64] {
            var result = Self.slice(left, from: 0, count: leftBits)
            result.append(contentsOf: [UInt64](repeating: 0, count: (leftBits + rightBits + 63) / 64 - result.count))
            for offset in 0..<rightBits where right[offset >> 6] & (1 << UInt64(offset & 63)) != 0 {
                let position = leftBits + offset
                result[position >> 6] |= 1 << UInt64(position & 63)
            }
            return result
        }

        func check(isRoot: Bool) -> Int? {
            if self.isLeaf {
                let ones = self.words.reduce(0) { $0 + $1.nonzeroBitCount }
                let ok = ones == self.ones && self.words.count == (self.bits + 63) / 64 && self.bits <= RankTree.leafCapacity
                    && (isRoot || self.bits >= self.minimumSize)
                    && (self.bits % 64 == 0 || self.words.isEmpty || self.words[self.words.count - 1] >> UInt64(self.bits % 64) == 0)
                return ok ? 1 : nil
            }
            guard self.bits == self.children.reduce(0, { $0 + $1.bits }),
                self.ones == self.children.reduce(0, { $0 + $1.ones }), self.children.count <= RankTree.fanout,
                isRoot ? self.children.count >= 2 : self.children.count >= self.minimumSize
            else { return nil }
            var depth: Int?
            for child in self.children {
                guard let childDepth = child.check(isRoot: false), depth == nil || depth == childDepth else { return nil }
                depth = childDepth
            }
            return depth.map { $0 + 1 }
        }
    }
}
