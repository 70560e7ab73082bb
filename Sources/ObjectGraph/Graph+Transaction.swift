// Atomic transactions: many mutations validated and applied all-or-nothing as one change with one seq. A dry run
// applies the ops in order (each validated against the state the previous ones left) while an undo log records
// every write; it is then rolled back whatever happened. On success the ops are replayed inside one change bracket:
// prior notifications for every affected key first (in op order, then subscription order), then the changes, then
// after notifications in reverse — each observer once per key, however many ops touch it.

/// One operation of a transaction.
public enum TransactionOp: Sendable, Equatable {
    /// A `set`; with `expiresAt` (Unix epoch milliseconds) the key expires then, without it loses any deadline.
    case set(KeyPath, Value, expiresAt: UInt64? = nil)
    case mutate(KeyPath, CollectionMutation)
    /// An op that goes ahead only when `WriteCondition` holds (checked against the state the earlier ops left).
    indirect case conditional(WriteCondition, TransactionOp)

    /// The key path the op writes.
    public var path: KeyPath {
        switch self {
        case .set(let path, _, _), .mutate(let path, _): path
        case .conditional(_, let op): op.path
        }
    }
}

/// A transaction that failed: which op, and why. Nothing was changed and nobody was notified.
public struct TransactionError: Error, Equatable, Sendable {
    /// The 0-based index of the failing op.
    public var op: Int
    public var error: GraphError

    public init(op: Int, error: GraphError) {
        self.op = op
        self.error = error
    }
}

/// What a dry run wrote, so it can be undone.
final class UndoLog {
    /// Objects with an id from here on were created by the dry run.
    let firstNewID: ObjectID
    let allocatedSinceCollection: Int
    /// Each key's slot as it was before the dry run first wrote it: one entry per key however many ops write it, and
    /// a collection's slot is its old value's root (ValueList shares the nodes the ops did not change), so the log
    /// costs what the ops changed, not what they touched.
    var entries: [(object: GraphObject, key: String, previous: GraphObject.Slot?)] = []
    /// The keys in `entries`.
    var saved: Set<Touch> = []
    /// Deadlines the dry run set, moved or removed, with what they were (nil: none).
    var deadlines: [(object: ObjectID, key: String, previous: UInt64?)] = []

    init(firstNewID: ObjectID, allocatedSinceCollection: Int) {
        self.firstNewID = firstNewID
        self.allocatedSinceCollection = allocatedSinceCollection
    }
}

extension Graph {
    /// Runs `ops` as one atomic change and returns its seq.
    /// - Throws: `TransactionError` naming the first op that failed; then nothing changed.
    @discardableResult
    public func transaction(_ ops: [TransactionOp]) throws(TransactionError) -> UInt64 {
        let mutations = try self.dryRun(ops)
        return self.commit(mutations: mutations) {
            for op in ops {
                // The dry run proved every op valid in this order from this state, so replaying cannot fail.
                guard let planned = try? self.plan(op) else { preconditionFailure("transaction replay diverged") }
                self.apply(planned)
            }
        }
    }

    /// Validates `ops` as `transaction` would, without changing anything or notifying anyone.
    /// - Throws: `TransactionError` naming the first op that would fail.
    public func validateTransaction(_ ops: [TransactionOp]) throws(TransactionError) {
        _ = try self.dryRun(ops)
    }

    /// Applies the ops with an undo log, then rolls everything back; returns what they would touch.
    private func dryRun(_ ops: [TransactionOp]) throws(TransactionError) -> [Mutation] {
        precondition(self.undoLog == nil, "transactions do not nest")
        let log = UndoLog(firstNewID: self.nextObjectID, allocatedSinceCollection: self.allocatedSinceCollection)
        self.undoLog = log
        var mutations: [Mutation] = []
        var failure: TransactionError?
        for (index, op) in ops.enumerated() {
            do {
                let planned = try self.plan(op)
                self.apply(planned)
                mutations.append(contentsOf: planned.mutations.map { Mutation(touch: $0.touch, op: index, detail: $0.detail) })
            } catch {
                failure = TransactionError(op: index, error: error)
                break
            }
        }
        self.rollBack(log)
        if let failure { throw failure }
        return mutations
    }

    private func plan(_ op: TransactionOp) throws(GraphError) -> PlannedChange {
        switch op {
        case .set(let path, let value, let expiresAt): try self.planSet(path, value, expiresAt: expiresAt)
        case .mutate(let path, let mutation): try self.planMutation(path, mutation)
        case .conditional(let condition, let op):
            try { () throws(GraphError) -> PlannedChange in
                try self.check(condition, at: op.path)
                return try self.plan(op)
            }()
        }
    }

    /// Writes a value; during a dry run, remembers how to undo it (objects the dry run created need no undo).
    func store(_ value: Value, forKey key: String, in object: GraphObject) {
        self.recordUndo(of: key, in: object)
        // Inside a commit `seq` is already the mutation's own: the key's modSeq (a dry run's writes are undone).
        object.setValue(value, forKey: key, modSeq: self.seq)
    }

    /// During a dry run, keeps `key`'s slot as it was before the run first wrote it (objects the dry run created need
    /// no undo); a write that takes the value out of its slot first (`takeValue`) calls this before.
    func recordUndo(of key: String, in object: GraphObject) {
        if let log = self.undoLog, object.id < log.firstNewID,
            log.saved.insert(Touch(object: object.id, key: key)).inserted
        {
            log.entries.append((object, key, object.slot(forKey: key)))
        }
    }

    private func rollBack(_ log: UndoLog) {
        for entry in log.entries.reversed() { entry.object.restore(entry.key, to: entry.previous) }
        for entry in log.deadlines.reversed() {
            self.deadlines.update(object: entry.object, key: entry.key, to: entry.previous)
        }
        for id in log.firstNewID..<self.nextObjectID { self.objects.remove(id) }
        self.nextObjectID = log.firstNewID
        self.allocatedSinceCollection = log.allocatedSinceCollection
        self.undoLog = nil
    }
}
