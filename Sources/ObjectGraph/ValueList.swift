// The storage of an array value (and of a set, kept sorted): a counted B-tree whose nodes are shared between values
// and copied on write, one node at a time. So a collection of n elements is changed at an index in O(log n) — the
// nodes on the way down are copied only when another value still holds them (an old value kept for an undo, a
// transaction's dry run, a history entry) — and a copy of the whole value is one retain.
//
//     ValueList ── flat([Value])                         up to `leafCapacity` elements: an array, as cheap as one
//               └─ tree(root) ── Node(children, counts)  interior: up to `fanout` children and their counts
//                                  └─ Node(elements)     leaves: up to `leafCapacity` elements
//
// A leaf or interior node below the root holds at least a quarter of its capacity (a removal that leaves less merges
// it with a neighbour, splitting the two again evenly when they do not fit one node), so the depth is O(log n) with a
// base of at least 16: a million elements are three levels. Indexing walks down by the children's counts; iterating
// walks the leaves (a stack of positions), so `for`, `map`, JSON encoding and snapshots are O(n).
//
// A set keeps its members sorted by `Value.totalOrder` (ValueOrder.swift) and distinct: membership, insertion and
// removal are binary searches down the tree (`sortedIndex`).

/// An ordered list of values: an array's and a set's storage (see the file comment).
public struct ValueList: @unchecked Sendable {
    /// Elements a leaf holds at most; also the largest list kept flat.
    static let leafCapacity = 64
    /// Children an interior node holds at most.
    static let fanout = 64

    enum Storage {
        case flat([Value])
        case tree(Node)
    }

    var storage: Storage

    public init() { self.storage = .flat([]) }

    public init(_ elements: [Value]) {
        self.storage = elements.count <= Self.leafCapacity ? .flat(elements) : .tree(Node.build(elements))
    }

    public init<S: Sequence>(_ elements: S) where S.Element == Value {
        self.init(Array(elements))
    }

    /// The number of elements.
    public var count: Int {
        switch self.storage {
        case .flat(let elements): elements.count
        case .tree(let root): root.count
        }
    }

    public var isEmpty: Bool { self.count == 0 }

    /// The elements as an array (O(n)).
    public var array: [Value] {
        switch self.storage {
        case .flat(let elements): return elements
        case .tree(let root):
            var result: [Value] = []
            result.reserveCapacity(root.count)
            for element in self { result.append(element) }
            return result
        }
    }

    /// Calls `body` with each element in order (O(n), no indexing).
    public func forEach(_ body: (Value) throws -> Void) rethrows {
        switch self.storage {
        case .flat(let elements): for element in elements { try body(element) }
        case .tree(let root): try root.forEach(body)
        }
    }

    public func map<T>(_ transform: (Value) throws -> T) rethrows -> [T] {
        var result: [T] = []
        result.reserveCapacity(self.count)
        for element in self { result.append(try transform(element)) }
        return result
    }

    // MARK: - Changes at an index (O(log n))

    /// The element at `index` (which must exist: 0 ..< count).
    public subscript(index: Int) -> Value {
        get {
            switch self.storage {
            case .flat(let elements): return elements[index]
            case .tree(let root): return root.element(at: index)
            }
        }
        set {
            switch self.storage {
            case .flat(var elements):
                self.storage = .flat([])
                elements[index] = newValue
                self.storage = .flat(elements)
            case .tree(var root):
                self.storage = .flat([])
                Node.makeUnique(&root)
                root.replace(at: index, with: newValue)
                self.storage = .tree(root)
            }
        }
    }

    /// Inserts `value` so that it ends up at `index` (0 ... count).
    public mutating func insert(_ value: Value, at index: Int) {
        switch self.storage {
        case .flat(var elements):
            self.storage = .flat([])
            elements.insert(value, at: index)
            self.storage = elements.count <= Self.leafCapacity ? .flat(elements) : .tree(Node.build(elements))
        case .tree(var root):
            self.storage = .flat([])
            Node.makeUnique(&root)
            if let right = root.insert(value, at: index) {
                root = Node(children: [root, right])
            }
            self.storage = .tree(root)
        }
    }

    public mutating func append(_ value: Value) {
        self.insert(value, at: self.count)
    }

    public mutating func append<S: Sequence>(contentsOf values: S) where S.Element == Value {
        for value in values { self.append(value) }
    }

    /// Removes and returns the element at `index` (0 ..< count).
    @discardableResult
    public mutating func remove(at index: Int) -> Value {
        switch self.storage {
        case .flat(var elements):
            self.storage = .flat([])
            let removed = elements.remove(at: index)
            self.storage = .flat(elements)
            return removed
        case .tree(var root):
            self.storage = .flat([])
            Node.makeUnique(&root)
            let removed = root.remove(at: index)
            // A root with one child gives way to it; a small enough tree becomes flat again.
            while !root.isLeaf && root.children.count == 1 { root = root.children[0] }
            if root.count <= Self.leafCapacity / 2 {
                self.storage = .flat(root.isLeaf ? Array(root.elements) : ValueList(storage: .tree(root)).array)
            } else {
                self.storage = .tree(root)
            }
            return removed
        }
    }

    private init(storage: Storage) { self.storage = storage }

    // MARK: - Sorted lists (sets)

    /// Where `value` is or would go in a list sorted by `Value.totalOrder`: its index, and whether it is there.
    public func sortedIndex(of value: Value) -> (index: Int, found: Bool) {
        self.sortedIndex(of: value, by: Value.totalOrder)
    }

    /// Where `value` is or would go in a list sorted by `compare` (-1, 0, 1): the first index whose element is not
    /// before it, and whether that element equals it.
    public func sortedIndex(of value: Value, by compare: (Value, Value) -> Int) -> (index: Int, found: Bool) {
        switch self.storage {
        case .flat(let elements): return Node.sortedIndex(of: value, in: elements, by: compare)
        case .tree(let root): return root.sortedIndex(of: value, by: compare)
        }
    }

    /// Whether a sorted list holds `value`: O(log n).
    public func sortedContains(_ value: Value) -> Bool { self.sortedIndex(of: value).found }

    /// Inserts `value` into a sorted list unless it is there; returns its index when it was inserted.
    @discardableResult
    public mutating func insertSorted(_ value: Value) -> Int? {
        let (index, found) = self.sortedIndex(of: value)
        if found { return nil }
        self.insert(value, at: index)
        return index
    }

    /// Removes `value` from a sorted list; returns the index it had, or nil when it was not there.
    @discardableResult
    public mutating func removeSorted(_ value: Value) -> Int? {
        let (index, found) = self.sortedIndex(of: value)
        guard found else { return nil }
        self.remove(at: index)
        return index
    }

    /// The distinct values of `values`, sorted by `Value.totalOrder`: a set's storage.
    public static func sortedSet<S: Sequence>(_ values: S) -> ValueList where S.Element == Value {
        var sorted = Array(values)
        sorted.sort(by: Value.totalOrderPrecedes)
        var distinct: [Value] = []
        distinct.reserveCapacity(sorted.count)
        for value in sorted where distinct.last.map({ Value.totalOrder($0, value) != 0 }) ?? true {
            distinct.append(value)
        }
        return ValueList(distinct)
    }

    /// Whether the list is sorted by `Value.totalOrder` without repeats (what a set stores).
    public var isSortedSet: Bool {
        var previous: Value?
        var sorted = true
        for value in self {
            if let last = previous, Value.totalOrder(last, value) >= 0 { sorted = false }
            previous = value
        }
        return sorted
    }

    /// The node structure's invariants (for tests and fuzzers): counts add up, no node is empty, nodes below the root
    /// are at least a quarter full, every leaf is at the same depth.
    public func checkInvariants() -> Bool {
        guard case .tree(let root) = self.storage else { return self.count <= Self.leafCapacity }
        return root.isLeaf ? root.count > Self.leafCapacity / 2 : root.check(isRoot: true) != nil
    }

    /// The depth of the tree (0 when flat).
    var depth: Int {
        guard case .tree(var node) = self.storage else { return 0 }
        var depth = 1
        while !node.isLeaf {
            node = node.children[0]
            depth += 1
        }
        return depth
    }
}

// MARK: - Nodes

extension ValueList {
    /// A node of the tree: a leaf holds elements, an interior node its children and their element counts. Mutated in
    /// place only when uniquely referenced (`makeUnique`); otherwise copied first.
    ///
    /// `@exclusivity(unchecked)`: the runtime's exclusivity checks of these fields (a thread-local lookup per access)
    /// were 31 % of the instructions of a `replace` on a million-element array (callgrind: 29,300 per request, 9,000 in
    /// `SwiftTLSContext::get`). A node is changed only by the one owner of its list (the graph's thread), never
    /// re-entrantly: each method reads or writes a field and returns before the next access.
    final class Node {
        // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
        @exclusivity(unchecked) var elements: [Value]
        @exclusivity(unchecked) var children: [Node]
        @exclusivity(unchecked) var counts: [Int]
        @exclusivity(unchecked) var count: Int

        var isLeaf: Bool { self.children.isEmpty }

        init(elements: [Value]) {
            self.elements = elements
            self.children = []
            self.counts = []
            self.count = elements.count
        }

        init(children: [Node]) {
            self.elements = []
            self.children = children
            self.counts = children.map(\.count)
            self.count = self.counts.reduce(0, +)
        }

        private init(copying other: Node) {
            self.elements = other.elements
            self.children = other.children
            self.counts = other.counts
            self.count = other.count
        }

        static func makeUnique(_ node: inout Node) {
            if !isKnownUniquelyReferenced(&node) { node = Node(copying: node) }
        }

        /// A tree of `elements` (more than a leaf holds), leaves and interior nodes filled evenly (TreeLevels.swift).
        static func build(_ elements: [Value]) -> Node {
            let leaves = evenRanges(
                elements.count, parts: (elements.count + ValueList.leafCapacity - 1) / ValueList.leafCapacity
            ).map { Node(elements: Array(elements[$0])) }
            return buildLevels(leaves, fanout: ValueList.fanout, parent: Node.init(children:)) ?? Node(elements: [])
        }

        /// The child holding `index`, and the index within it.
        @inline(__always)
        private func child(for index: Int) -> (child: Int, offset: Int) {
            var offset = index
            var child = 0
            let last = self.counts.count - 1
            while child < last && offset >= self.counts[child] {
                offset -= self.counts[child]
                child += 1
            }
            return (child, offset)
        }

        func element(at index: Int) -> Value {
            var node = self
            var offset = index
            while !node.isLeaf {
                let (child, within) = node.child(for: offset)
                node = node.children[child]
                offset = within
            }
            return node.elements[offset]
        }

        func replace(at index: Int, with value: Value) {
            if self.isLeaf {
                self.elements[index] = value
                return
            }
            let (child, offset) = self.child(for: index)
            Node.makeUnique(&self.children[child])
            self.children[child].replace(at: offset, with: value)
        }

        /// Inserts at `index`; returns the right half when the node had to split.
        func insert(_ value: Value, at index: Int) -> Node? {
            self.count += 1
            if self.isLeaf {
                self.elements.insert(value, at: index)
                guard self.elements.count > ValueList.leafCapacity else { return nil }
                let half = self.elements.count / 2
                let right = Node(elements: Array(self.elements[half...]))
                self.elements.removeSubrange(half...)
                self.count = self.elements.count
                return right
            }
            // An index at the end goes into the last child.
            let (child, offset) = self.child(for: index)
            Node.makeUnique(&self.children[child])
            self.counts[child] += 1
            guard let split = self.children[child].insert(value, at: offset) else { return nil }
            self.counts[child] = self.children[child].count
            self.children.insert(split, at: child + 1)
            self.counts.insert(split.count, at: child + 1)
            guard self.children.count > ValueList.fanout else { return nil }
            let half = self.children.count / 2
            let right = Node(children: Array(self.children[half...]))
            self.children.removeSubrange(half...)
            self.counts.removeSubrange(half...)
            self.count -= right.count
            return right
        }

        /// Removes the element at `index`; a child left under a quarter full is merged with a neighbour.
        func remove(at index: Int) -> Value {
            self.count -= 1
            if self.isLeaf { return self.elements.remove(at: index) }
            let (child, offset) = self.child(for: index)
            Node.makeUnique(&self.children[child])
            let removed = self.children[child].remove(at: offset)
            self.counts[child] -= 1
            if self.children[child].size < self.children[child].minimumSize { self.rebalance(child) }
            return removed
        }

        /// Elements of a leaf, children of an interior node.
        private var size: Int { self.isLeaf ? self.elements.count : self.children.count }
        private var capacity: Int { self.isLeaf ? ValueList.leafCapacity : ValueList.fanout }
        private var minimumSize: Int { self.capacity / 4 }

        /// Merges the underfull child `index` with a neighbour, and splits the two again evenly when they do not fit
        /// one node.
        private func rebalance(_ index: Int) {
            guard self.children.count > 1 else { return }
            let left = index > 0 ? index - 1 : index
            Node.makeUnique(&self.children[left])
            Node.makeUnique(&self.children[left + 1])
            let merged = self.children[left]
            let next = self.children[left + 1]
            if merged.isLeaf {
                merged.elements.append(contentsOf: next.elements)
            } else {
                merged.children.append(contentsOf: next.children)
                merged.counts.append(contentsOf: next.counts)
            }
            merged.count += next.count
            if merged.size <= merged.capacity {
                self.children.remove(at: left + 1)
                self.counts.remove(at: left + 1)
                self.counts[left] = merged.count
                return
            }
            let half = merged.size / 2
            if merged.isLeaf {
                next.elements = Array(merged.elements[half...])
                merged.elements.removeSubrange(half...)
                next.count = next.elements.count
            } else {
                next.children = Array(merged.children[half...])
                next.counts = Array(merged.counts[half...])
                merged.children.removeSubrange(half...)
                merged.counts.removeSubrange(half...)
                next.count = next.counts.reduce(0, +)
            }
            merged.count -= next.count
            self.counts[left] = merged.count
            self.counts[left + 1] = next.count
        }

        func forEach(_ body: (Value) throws -> Void) rethrows {
            if self.isLeaf {
                for element in self.elements { try body(element) }
            } else {
                for child in self.children { try child.forEach(body) }
            }
        }

        var last: Value {
            var node = self
            while !node.isLeaf { node = node.children[node.children.count - 1] }
            return node.elements[node.elements.count - 1]
        }

        func sortedIndex(of value: Value, by compare: (Value, Value) -> Int) -> (index: Int, found: Bool) {
            var node = self
            var base = 0
            while !node.isLeaf {
                // The first child whose last element is not below `value` (or the last child).
                var low = 0
                var high = node.children.count - 1
                while low < high {
                    let middle = (low + high) / 2
                    if compare(node.children[middle].last, value) < 0 { low = middle + 1 } else { high = middle }
                }
                for child in 0..<low { base += node.counts[child] }
                node = node.children[low]
            }
            let (index, found) = Node.sortedIndex(of: value, in: node.elements, by: compare)
            return (base + index, found)
        }

        static func sortedIndex(
            of value: Value, in elements: [Value], by compare: (Value, Value) -> Int
        ) -> (index: Int, found: Bool) {
            var low = 0
            var high = elements.count
            while low < high {
                let middle = (low + high) / 2
                if compare(elements[middle], value) < 0 { low = middle + 1 } else { high = middle }
            }
            return (low, low < elements.count && compare(elements[low], value) == 0)
        }

        /// Checks the invariants below this node; returns the leaves' depth, or nil when broken.
        func check(isRoot: Bool) -> Int? {
            if self.isLeaf {
                let ok = self.count == self.elements.count && !self.elements.isEmpty
                    && self.elements.count <= ValueList.leafCapacity
                    && (isRoot || self.elements.count >= self.minimumSize)
                return ok ? 1 : nil
            }
            guard self.children.count == self.counts.count, self.count == self.counts.reduce(0, +),
                self.children.count <= ValueList.fanout, isRoot ? self.children.count >= 2 : self.children.count >= self.minimumSize
            else { return nil }
            var depth: Int?
            for (child, count) in zip(self.children, self.counts) {
                guard child.count == count, let childDepth = child.check(isRoot: false) else { return nil }
                if let depth, depth != childDepth { return nil }
                depth = childDepth
            }
            return depth.map { $0 + 1 }
        }
    }
}

// MARK: - Collection

extension ValueList: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { self.count }
    public func index(after index: Int) -> Int { index + 1 }
    public func index(before index: Int) -> Int { index - 1 }

    public func makeIterator() -> Iterator { Iterator(self) }

    /// Walks the leaves in order: O(1) amortized per element.
    public struct Iterator: IteratorProtocol {
        private var leaf: [Value]
        private var position = 0
        /// The interior nodes above the current leaf and the next child to visit in each.
        private var path: [(node: Node, next: Int)] = []

        init(_ list: ValueList) {
            switch list.storage {
            case .flat(let elements):
                self.leaf = elements
            case .tree(let root):
                self.leaf = []
                self.descend(root)
            }
        }

        private mutating func descend(_ start: Node) {
            var node = start
            while !node.isLeaf {
                self.path.append((node, 1))
                node = node.children[0]
            }
            self.leaf = node.elements
            self.position = 0
        }

        public mutating func next() -> Value? {
            if self.position < self.leaf.count {
                defer { self.position += 1 }
                return self.leaf[self.position]
            }
            while let (node, next) = self.path.last {
                if next < node.children.count {
                    self.path[self.path.count - 1].next = next + 1
                    self.descend(node.children[next])
                    defer { self.position += 1 }
                    return self.leaf.isEmpty ? nil : self.leaf[self.position]
                }
                self.path.removeLast()
            }
            return nil
        }
    }
}

extension ValueList: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: Value...) { self.init(elements) }
}

extension ValueList: Hashable {
    public static func == (lhs: ValueList, rhs: ValueList) -> Bool {
        if case .tree(let left) = lhs.storage, case .tree(let right) = rhs.storage, left === right { return true }
        guard lhs.count == rhs.count else { return false }
        var right = rhs.makeIterator()
        for element in lhs where element != right.next() { return false }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.count)
        for value in self { hasher.combine(value) }
    }
}

extension ValueList: CustomStringConvertible {
    public var description: String { self.array.description }
}
