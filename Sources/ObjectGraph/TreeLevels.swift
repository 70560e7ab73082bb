// How the B-trees of this module (ValueList, RankTree, PositionIndex) are built from a sequence at once: the items cut
// into leaves whose sizes differ by at most one, then each level above into parents of at most `fanout` children,
// evenly, up to one root. An even cut keeps every node at least half full, so the first changes split nothing.

/// `count` items cut into `parts` consecutive ranges whose sizes differ by at most one.
func evenRanges(_ count: Int, parts: Int) -> [Range<Int>] {
    var ranges: [Range<Int>] = []
    ranges.reserveCapacity(parts)
    var start = 0
    for part in 0..<parts {
        let end = count * (part + 1) / parts
        ranges.append(start..<end)
        start = end
    }
    return ranges
}

/// The root of the levels built above `leaves` (nil when there are none), each parent made by `parent` from at
/// most `fanout` children.
func buildLevels<Node>(_ leaves: [Node], fanout: Int, parent: ([Node]) -> Node) -> Node? {
    var level = leaves
    while level.count > 1 {
        let parents = (level.count + fanout - 1) / fanout
        level = evenRanges(level.count, parts: parents).map { parent(Array(level[$0])) }
    }
    return level.first
}
