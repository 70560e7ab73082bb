// The leader's half of "promote only a member with every acknowledged write" (docs/SCALING.md#who-may-lead): with
// `--sync-replicas N` ≥ 1 the leader counts only the acks of followers it recorded in etcd's sync set
// (`/kvod/NAME/sync`, SyncRecord) beforehand. While fewer than N followers are in the set (after an election), a
// follower joins once it has every mutation acknowledged so far; then any live follower joins. A follower that is
// gone leaves the set only once N others in it have every acknowledged mutation. So every acknowledged mutation is on
// min(N + 1, holders) of the set's holders (the leader and those followers), which is what a candidate relies on
// (MemberStateMachine.verdict). Pure: ReplicationSource feeds it the followers' acks and writes what it proposes.

/// Which followers' acks count, and the changes to write to etcd. A value owned by ReplicationSource.
struct SyncSet: Equatable {
    /// `--sync-replicas`.
    let needed: Int
    /// The followers (advertised addresses) of the record etcd holds for this term: their acks count.
    private(set) var confirmed: Set<String> = []
    /// The followers of a record being written, if any.
    private(set) var writing: Set<String>?
    /// Bumped at each new leadership: the answer to a write of an earlier one is ignored.
    private(set) var generation = 0

    init(needed: Int) {
        self.needed = needed
    }

    /// A new leadership: nothing confirmed yet (the record etcd holds is the previous leader's, which names this
    /// member: it won as one of its holders, with every acknowledged mutation).
    mutating func reset() {
        self.confirmed = []
        self.writing = nil
        self.generation += 1
    }

    /// Whether `member`'s acks count.
    func counts(_ member: String?) -> Bool {
        member.map { self.confirmed.contains($0) } ?? false
    }

    /// The seq that `needed` followers of the set have (the `needed`-th highest of their acks): what may be
    /// acknowledged. Nil with fewer such followers.
    func releasable(_ acks: some Sequence<(member: String?, seq: UInt64)>) -> UInt64? {
        guard self.needed > 0 else { return nil }
        let seqs = acks.filter { self.counts($0.member) }.map(\.seq).sorted(by: >)
        return seqs.count >= self.needed ? seqs[self.needed - 1] : nil
    }

    /// The set to write now, if it should change, given the live followers' acknowledged seqs (by advertised
    /// address) and the seq every acknowledged mutation is at or below. Adds the followers that have them all (any
    /// live follower once N are in the set); drops a confirmed follower that is gone once `needed` other confirmed ones have them all. Nil while a write
    /// is in flight or nothing changes.
    mutating func proposal(followers: [String: UInt64], acknowledged: UInt64) -> Set<String>? {
        guard self.needed > 0, self.writing == nil else { return nil }
        var next = self.confirmed
        // Once N followers are in the set, every acknowledged mutation is on the leader and N holders, whatever a
        // newcomer has: any follower may join (it raises the quorum a candidate needs, not what it relies on).
        // Before that, only one that has them all.
        let anyMayJoin = self.confirmed.count >= self.needed
        for (member, seq) in followers where anyMayJoin || seq >= acknowledged { next.insert(member) }
        for member in self.confirmed.sorted() where followers[member] == nil {
            // Those in the new set that have every acknowledged mutation (added ones included: one write adds and drops).
            let holding = next.count { $0 != member && (followers[$0] ?? 0) >= acknowledged }
            if holding >= self.needed { next.remove(member) }
        }
        guard next != self.confirmed else { return nil }
        self.writing = next
        return next
    }

    /// The write of `set` (made in `generation`) succeeded or failed.
    mutating func written(_ set: Set<String>, generation: Int, succeeded: Bool) {
        guard generation == self.generation, self.writing == set else { return }
        self.writing = nil
        if succeeded { self.confirmed = set }
    }
}
