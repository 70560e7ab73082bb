// Where each element of an array is: a mirror of the array as a B-tree whose nodes know their parents, and, for
// each element, the leaves that hold it. A live query shown in the array's own order (no `orderBy`) asks it where an
// element whose keys changed sits, in O(log n) (the leaf's offset is the counts of the nodes left of it on the way
// up), and follows the array's insertions and removals in O(log n). The array's own storage (ValueList) cannot
// answer that: its nodes are shared between values, so they have no parent.

/// An array's elements and their positions (see the file comment). One owner; changed in place.
struct PositionIndex {
    static let leafCapacity = 64
    static let fanout = 64

    private(set) var root: Node
    /// The leaves holding each element (an element in the array twice may be in two leaves, or twice in one).
    private var leaves: [Value: [Node]] = [:]

    init(_ elements: ValueList) {
        let all = elements.array
        let leaves = evenRanges(all.count, parts: (all.count + Self.leafCapacity - 1) / Self.leafCapacity)
            .map { Node(elements: Array(all[$0])) }
        self.root = buildLevels(leaves, fanout: Self.fanout, parent: Node.init(children:)) ?? Node(elements: [])
        for leaf in leaves { self.note(leaf) }
    }

    var count: Int { self.root.count }

    /// Hands over the element → leaves map (for a caller that frees a large one a step at a time), leaving it empty.
    mutating func takeLeaves() -> [Value: [Node]] {
        defer { self.leaves = [:] }
        return self.leaves
    }

    /// Makes room for `count` distinct elements (a large index grown one element at a time would rehash whole).
    mutating func reserveCapacity(_ count: Int) {
        self.leaves.reserveCapacity(count)
    }

    func element(at position: Int) -> Value {
        var node = self.root
        var offset = position
        while !node.isLeaf {
            let (child, within) = node.child(containing: offset)
            node = node.children[child]
            offset = within
        }
        return node.elements[offset]
    }

    /// Every position of `element`, ascending.
    func positions(of element: Value) -> [Int] {
        guard let holders = self.leaves[element] else { return [] }
        var positions: [Int] = []
        for leaf in holders {
            let base = leaf.offset
            for (index, value) in leaf.elements.enumerated() where value == element { positions.append(base + index) }
        }
        return positions.sorted()
    }

    mutating func insert(_ element: Value, at position: Int) {
        let leaf = self.root.leaf(containing: position, forInsertion: true)
        leaf.node.elements.insert(element, at: leaf.offset)
        self.add(leaf.node, for: element)
        leaf.node.adjustCounts(by: 1)
        if leaf.node.elements.count > Self.leafCapacity { self.split(leaf.node) }
    }

    @discardableResult
    mutating func remove(at position: Int) -> Value {
        let leaf = self.root.leaf(containing: position, forInsertion: false)
        let element = leaf.node.elements.remove(at: leaf.offset)
        if !leaf.node.elements.contains(element) { self.drop(leaf.node, for: element) }
        leaf.node.adjustCounts(by: -1)
        self.rebalance(leaf.node)
        return element
    }

    mutating func replace(at position: Int, with element: Value) {
        let leaf = self.root.leaf(containing: position, forInsertion: false)
        let old = leaf.node.elements[leaf.offset]
        leaf.node.elements[leaf.offset] = element
        if !leaf.node.elements.contains(old) { self.drop(leaf.node, for: old) }
        self.add(leaf.node, for: element)
    }

    /// The elements in order (for tests).
    var elements: [Value] { (0..<self.count).map { self.element(at: $0) } }

    /// The invariants (for tests): counts add up, parents point back, every element's leaves hold it.
    func checkInvariants() -> Bool {
        guard self.root.parent == nil, self.root.check() else { return false }
        for (element, holders) in self.leaves {
            for leaf in holders where !leaf.elements.contains(element) { return false }
        }
        return true
    }

    // MARK: - Bookkeeping

    private mutating func note(_ leaf: Node) {
        for element in leaf.elements { self.add(leaf, for: element) }
    }

    private mutating func add(_ leaf: Node, for element: Value) {
        if let holders = self.leaves[element], holders.contains(where: { $0 === leaf }) { return }
        self.leaves[element, default: []].append(leaf)
    }

    private mutating func drop(_ leaf: Node, for element: Value) {
        guard var holders = self.leaves[element] else { return }
        holders.removeAll { $0 === leaf }
        self.leaves[element] = holders.isEmpty ? nil : holders
    }

    /// Moves elements between leaves, keeping the element → leaves map.
    private mutating func moved(_ elements: some Sequence<Value>, from old: Node, to new: Node) {
        for element in elements {
            self.add(new, for: element)
            if !old.elements.contains(element) { self.drop(old, for: element) }
        }
    }

    private mutating func split(_ node: Node) {
        let half = node.isLeaf ? node.elements.count / 2 : node.children.count / 2
        let right: Node
        if node.isLeaf {
            right = Node(elements: Array(node.elements[half...]))
            node.elements.removeSubrange(half...)
            node.count = node.elements.count
            self.moved(right.elements, from: node, to: right)
        } else {
            right = Node(children: Array(node.children[half...]))
            node.children.removeSubrange(half...)
            node.counts.removeSubrange(half...)
            node.count = node.counts.reduce(0, +)
        }
        guard let parent = node.parent else {
            self.root = Node(children: [node, right])
            return
        }
        let index = parent.index(of: node)
        parent.counts[index] = node.count
        parent.children.insert(right, at: index + 1)
        parent.counts.insert(right.count, at: index + 1)
        right.parent = parent
        if parent.children.count > Self.fanout { self.split(parent) }
    }

    /// After a removal: merges an underfull node with a neighbour (splitting the pair when it does not fit), up the
    /// tree; a root with one child gives way to it.
    private mutating func rebalance(_ node: Node) {
        var current = node
        while let parent = current.parent {
            let size = current.isLeaf ? current.elements.count : current.children.count
            let capacity = current.isLeaf ? Self.leafCapacity : Self.fanout
            guard size < capacity / 4, parent.children.count > 1 else { break }
            let index = parent.index(of: current)
            let left = index > 0 ? index - 1 : index
            let merged = parent.children[left]
            let next = parent.children[left + 1]
            if merged.isLeaf {
                merged.elements.append(contentsOf: next.elements)
                self.moved(next.elements, from: next, to: merged)
                for element in Set(next.elements) { self.drop(next, for: element) }
            } else {
                for child in next.children { child.parent = merged }
                merged.children.append(contentsOf: next.children)
                merged.counts.append(contentsOf: next.counts)
            }
            merged.count += next.count
            parent.children.remove(at: left + 1)
            parent.counts.remove(at: left + 1)
            parent.counts[left] = merged.count
            let mergedSize = merged.isLeaf ? merged.elements.count : merged.children.count
            if mergedSize > capacity { self.split(merged) }
            current = parent
        }
        while !self.root.isLeaf && self.root.children.count == 1 {
            self.root = self.root.children[0]
            self.root.parent = nil
        }
    }

    final class Node {
        var elements: [Value]
        var children: [Node]
        var counts: [Int]
        var count: Int
        unowned(unsafe) var parent: Node?

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
            for child in children { child.parent = self }
        }

        func index(of child: Node) -> Int {
            self.children.firstIndex { $0 === child } ?? 0
        }

        func child(containing position: Int) -> (Int, Int) {
            var offset = position
            var child = 0
            while child < self.counts.count - 1 && offset >= self.counts[child] {
                offset -= self.counts[child]
                child += 1
            }
            return (child, offset)
        }

        func leaf(containing position: Int, forInsertion: Bool) -> (node: Node, offset: Int) {
            var node = self
            var offset = position
            while !node.isLeaf {
                let (child, within) = node.child(containing: offset)
                node = node.children[child]
                offset = within
            }
            return (node, offset)
        }

        /// Adds `delta` to the counts on the way from this leaf to the root.
        func adjustCounts(by delta: Int) {
            self.count += delta
            var child = self
            while let parent = child.parent {
                parent.counts[parent.index(of: child)] += delta
                parent.count += delta
                child = parent
            }
        }

        /// The position of this node's first element.
        var offset: Int {
            var offset = 0
            var child = self
            while let parent = child.parent {
                let index = parent.index(of: child)
                for sibling in 0..<index { offset += parent.counts[sibling] }
                child = parent
            }
            return offset
        }

        func check() -> Bool {
            if self.isLeaf { return self.count == self.elements.count }
            guard self.counts.count == self.children.count, self.count == self.counts.reduce(0, +) else { return false }
            for (child, count) in zip(self.children, self.counts) {
                guard child.parent === self, child.count == count, child.check() else { return false }
            }
            return true
        }
    }
}
