// Expiring keys (a `set` with a deadline, the wire's `ttl`): the engine keeps absolute deadlines in Unix epoch
// milliseconds and has no clock; its owner asks what is due and expires each key, which sets it to null as an
// ordinary `set` (its own seq, observers notified) so that journaling it as `set {"path":"$ID.key","value":null}`
// replays identically. The table itself is DeadlineTable.swift; reading a key's deadline is `expiry` beside `meta`.
//
// Lifetimes: a `set` with `expiresAt` gives the key it ends at a deadline, one without removes it; a failed set or
// transaction leaves deadlines as they were (the dry run's undo log covers them). An object with a deadline is kept by
// the garbage collector until the key expires, even when nothing reaches it any more, because collection runs at
// different moments in kvod and in a journal replay, and the journaled expiry must find its object in both.

extension Graph {
    /// The keys whose deadline is at or before `now` (Unix epoch milliseconds), earliest first, ties by object id
    /// then key: the same order in a graph restored from a snapshot, so expiring them in this order replays alike.
    public func dueExpirations(now: UInt64) -> [Deadline] {
        self.deadlines.isEmpty ? [] : self.deadlines.due(now: now)
    }

    /// The earliest deadline of any key (for the owner's timer), nil when no key expires.
    public var nextDeadline: UInt64? {
        self.deadlines.first?.expiresAt
    }

    /// The number of keys with a deadline.
    public var deadlineCount: Int {
        self.deadlines.count
    }

    /// Expires `key` of `object` if its deadline is at or before `now`: sets it to null exactly as
    /// `set($object.key, to: null)` would (one mutation with its own seq, observers notified, modSeq updated), which
    /// removes the deadline. Journal it as that set.
    /// - Returns: the seq of the mutation, or nil when the key has no deadline or it is later than `now` (nothing
    ///   changes), or the object no longer exists (the deadline is dropped).
    /// - Throws: what that set throws (a model changed since the deadline was set, e.g. the property is no longer
    ///   nullable); the deadline is dropped then, so it is reported once, not retried forever.
    @discardableResult
    public func expire(object: ObjectID, key: String, now: UInt64) throws(GraphError) -> UInt64? {
        guard let deadline = self.deadlines.deadline(object: object, key: key), deadline <= now else { return nil }
        guard self.objects[object] != nil else {
            self.setDeadline(nil, object: object, key: key)
            return nil
        }
        do {
            return try self.set(KeyPath(origin: object, keys: [key]), to: .null).seq
        } catch {
            self.setDeadline(nil, object: object, key: key)
            throw error
        }
    }

    /// Every deadline, by object id then key (for snapshots).
    func allDeadlines() -> [Deadline] {
        self.deadlines.all()
    }

    /// Gives `key` of `object` a deadline, or removes its deadline when `expiresAt` is nil; during a transaction's dry
    /// run, remembers how to undo it. Free when no key has a deadline and none is given.
    func setDeadline(_ expiresAt: UInt64?, object: ObjectID, key: String) {
        guard expiresAt != nil || !self.deadlines.isEmpty else { return }
        let previous = self.deadlines.update(object: object, key: key, to: expiresAt)
        if let log = self.undoLog, previous != expiresAt { log.deadlines.append((object, key, previous)) }
    }
}
