// The bounded history behind resumable subscriptions (Protocol/README.md#resuming). Every key path that has been
// subscribed gets one recorder: an engine observation with `new` and `old`, whose after notifications go into one
// ring of at most `capacity` changes (a replayed prior notification is derived from its after one: same kind,
// indexes, old value and seq). A recorder outlives its subscribers (a client that lost its connection comes back to
// it), until its entries have all left the ring and too many idle recorders exist. `subscribe` with `since: S`
// replays the path's entries after S, shaped by the new subscription's options — possible when the recorder has
// been recording since S or earlier and none of its entries after S has left the ring; otherwise 1010.
// In a cluster recorders are cluster-wide (Cluster/RecordedPaths.swift): a recorder started by a subscription here is
// announced (`onRecorderStarted`), and the members start one for each path announced to them (`record`), so a client
// can resume on any member. Such recorders have no subscriber: they count as idle, which bounds them.
// With a data directory the history is also on disk (HistoryLog.swift): recorders and changes are appended as they
// happen and written before the journal at each flush; a start restores the recorders (observing again before any
// mutation) and the ring, so `since` reaches back across a restart (docs/DURABILITY.md#the-history-on-disk).
import ObjectGraph
import Persistence

/// Loop-owned.
@MainActor
final class SubscriptionHistory {
    /// One recorded key path.
    final class Recorder {
        let keyPath: KeyPath
        /// The path as written in the history's log, and its log records' `{"path":"…"` (HistoryLog.swift).
        let pathText: String
        let pathMember: [UInt8]
        var observer: Observer?
        /// Entries after this seq are complete for this path.
        var recordingSince: UInt64
        /// The highest seq of this path's entries that left the ring.
        var evictedThrough: UInt64 = 0
        var entriesInRing = 0
        var subscribers = 0
        var lastUsed: UInt64 = 0
        /// Neighbours on the idle list (IdleList), while the recorder has no subscribers. Unowned: `recorders`
        /// holds every recorder on the list.
        fileprivate unowned(unsafe) var idlePrevious: Recorder?
        fileprivate unowned(unsafe) var idleNext: Recorder?
        fileprivate var isIdleListed = false

        init(keyPath: KeyPath, since: UInt64) {
            self.keyPath = keyPath
            self.pathText = keyPath.description
            self.pathMember = HistoryLog.pathMember(self.pathText)
            self.recordingSince = since
        }

        /// The oldest seq a `since` may name for this path.
        var oldestResumable: UInt64 { max(self.recordingSince, self.evictedThrough) }
    }

    private struct Entry {
        var recorder: Recorder
        var change: Change
    }

    /// The entries, oldest first, in a fixed block written in place: an append copies the change once, straight
    /// into its slot, and reads the entry it evicts where it is (no `Optional<Entry>` copied in and out of an array).
    private struct Ring: ~Copyable {
        let capacity: Int
        /// `capacity` slots; those from `head` on, `count` of them (wrapping), are initialized.
        private let slots: UnsafeMutablePointer<Entry>
        private(set) var head = 0
        private(set) var count = 0

        init(capacity: Int) {
            self.capacity = capacity
            self.slots = UnsafeMutablePointer<Entry>.allocate(capacity: max(capacity, 1))
        }

        deinit {
            for offset in 0..<self.count { (self.slots + self.position(offset)).deinitialize(count: 1) }
            self.slots.deallocate()
        }

        /// The slot of the `offset`th entry from the oldest.
        @inline(__always)
        private func position(_ offset: Int) -> Int {
            let position = self.head &+ offset
            return position >= self.capacity ? position &- self.capacity : position
        }

        /// The `offset`th entry from the oldest (`offset < count`).
        func entry(_ offset: Int) -> UnsafePointer<Entry> {
            UnsafePointer(self.slots + self.position(offset))
        }

        /// Appends `recorder`'s `change`, evicting the oldest entry (and telling its recorder) when full.
        @inline(__always)
        mutating func append(_ change: Change, of recorder: Recorder) {
            if self.count < self.capacity {
                (self.slots + self.position(self.count)).initialize(to: Entry(recorder: recorder, change: change))
                self.count += 1
                recorder.entriesInRing += 1
                return
            }
            let oldest = self.slots + self.head
            self.head = self.head &+ 1 == self.capacity ? 0 : self.head &+ 1
            let seq = oldest.pointee.change.seq
            if oldest.pointee.recorder === recorder {
                // The usual case of one busy path: its own oldest entry goes, its count stays, no reference changes.
                if seq > recorder.evictedThrough { recorder.evictedThrough = seq }
                oldest.pointee.change = change
                return
            }
            let evicted = oldest.pointee.recorder
            evicted.entriesInRing -= 1
            if seq > evicted.evictedThrough { evicted.evictedThrough = seq }
            oldest.pointee = Entry(recorder: recorder, change: change)
            recorder.entriesInRing += 1
        }
    }

    let capacity: Int
    private let graph: Graph
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    // Loop-owned, no inout access spans a call: no runtime exclusivity checks on the per-change path.
    @exclusivity(unchecked) private var ring: Ring
    private var recorders: [KeyPath: Recorder] = [:]
    /// The recorders without subscribers, the least recently used first: ending a subscription, or closing a
    /// connection with many, costs O(1) per subscription (issue 23: a scan and sort of every recorder per
    /// unsubscribe made closing 10,000 subscriptions stall the loop for 9.5 s).
    @exclusivity(unchecked) private var idle = IdleList()  // loop-owned; its count is looked at every turn
    private var useCounter: UInt64 = 0
    /// Idle recorders (no subscribers, no entries) kept before the least recently used go.
    private let maxIdleRecorders: Int

    /// The most idle recorders `dropIdleRecorders` drops in one loop turn.
    static let dropBudget = 256

    /// Whether idle recorders beyond the limit wait to be dropped (`dropIdleRecorders`).
    var hasExcessIdleRecorders: Bool { self.idle.count > self.maxIdleRecorders }

    /// Called when a subscription here started a recorder (not for `record`): a cluster member announces the path.
    var onRecorderStarted: ((KeyPath) -> Void)?
    /// The history on disk, with a data directory (`restore(from:contents:)`); nil: in memory only.
    private(set) var log: HistoryLog?
    /// Called once when the log cannot be written: the history goes on in memory only (a restart then resumes no
    /// further back than its own seq).
    var onLogFailure: ((PersistenceError) -> Void)?

    init(capacity: Int, graph: Graph) {
        self.capacity = capacity
        self.graph = graph
        self.ring = Ring(capacity: capacity)
        self.maxIdleRecorders = max(1000, capacity / 10)
    }

    var isEnabled: Bool { self.capacity > 0 }

    /// Notes a new subscription to `keyPath`, starting a recorder for it when there is none.
    func subscribed(_ keyPath: KeyPath) {
        guard self.isEnabled else { return }
        let isNew = self.recorders[keyPath] == nil
        let recorder = self.recorder(for: keyPath)
        if recorder.subscribers == 0 { self.idle.remove(recorder) }
        recorder.subscribers += 1
        self.touch(recorder)
        if isNew { self.onRecorderStarted?(keyPath) }
    }

    /// Starts recording `keyPath` from the current seq without a subscriber (another cluster member recorded it),
    /// unless it is recorded already. Returns whether a recorder started: false also when the history is off or the
    /// path cannot be observed. The least recently used idle recorders beyond the limit go at the turn's end, as after
    /// `unsubscribed`.
    @discardableResult
    func record(_ keyPath: KeyPath) -> Bool {
        guard self.isEnabled else { return false }
        if let existing = self.recorders[keyPath] {
            self.touch(existing)
            return false
        }
        guard (try? self.graph.checkObservable(keyPath)) != nil else { return false }
        let recorder = self.recorder(for: keyPath)
        guard recorder.observer != nil else {
            self.recorders[keyPath] = nil
            return false
        }
        self.touch(recorder)
        self.idle.append(recorder)
        return true
    }

    /// Every recorded key path, the least recently used first: a member that records them in this order (`record`)
    /// keeps their order of use, and drops the least recently used when it keeps fewer.
    var recordedPaths: [KeyPath] {
        self.recorders.values.sorted { $0.lastUsed < $1.lastUsed }.map(\.keyPath)
    }

    /// Notes that a subscription to `keyPath` ended.
    func unsubscribed(_ keyPath: KeyPath) {
        guard self.isEnabled, let recorder = self.recorders[keyPath] else { return }
        recorder.subscribers -= 1
        self.touch(recorder)
        if recorder.subscribers == 0 { self.idle.append(recorder) }
    }

    /// What a subscription to `keyPath` would have received after `since`, in order — each change's prior and
    /// after notification; nil when the history cannot say (the caller answers 1010 with `oldestResumable`).
    func changes(for keyPath: KeyPath, after since: UInt64) -> [Change]? {
        guard let recorder = self.recorders[keyPath], since >= recorder.oldestResumable else { return nil }
        var changes: [Change] = []
        for offset in 0..<self.ring.count {
            let entry = self.ring.entry(offset).pointee
            guard entry.recorder === recorder, entry.change.seq > since else { continue }
            var prior = entry.change
            prior.isPrior = true
            prior.new = nil
            prior.payloadID = 0  // not the after's: encoders must not share its bytes
            changes.append(prior)
            changes.append(entry.change)
        }
        return changes
    }

    /// The oldest seq a subscription to `keyPath` could resume from now.
    func oldestResumable(_ keyPath: KeyPath) -> UInt64 {
        self.recorders[keyPath]?.oldestResumable ?? self.graph.seq
    }

    // MARK: - Recording

    private func recorder(for keyPath: KeyPath) -> Recorder {
        if let existing = self.recorders[keyPath] { return existing }
        let recorder = Recorder(keyPath: keyPath, since: self.graph.seq)
        // The path was validated by the subscribe that asked for it, so adding the observation cannot fail.
        recorder.observer = try? self.graph.addObservation(keyPath, options: [.new, .old], sink: RecorderSink(self, recorder)).observer
        self.recorders[keyPath] = recorder
        self.log?.recorder(path: recorder.pathText, since: recorder.recordingSince, evicted: 0)
        return recorder
    }

    /// A recorder's engine sink: appends each after notification to the ring.
    @MainActor
    private final class RecorderSink: @MainActor ObservationSink {
        // unowned(unsafe): checked unowned references cost a retain and release per change; the history outlives
        // its sinks, and a recorder's observation (which holds this sink) is removed before the recorder goes.
        unowned(unsafe) let history: SubscriptionHistory
        unowned(unsafe) let recorder: Recorder

        init(_ history: SubscriptionHistory, _ recorder: Recorder) {
            self.history = history
            self.recorder = recorder
        }

        func observe(_ change: Change, options: ObservationOptions) {
            self.history.ring.append(change, of: self.recorder)
            self.history.log?.change(pathMember: self.recorder.pathMember, change)
        }
    }

    /// Marks `recorder` the most recently used (an idle one moves to the end of the idle list).
    private func touch(_ recorder: Recorder) {
        self.useCounter += 1
        recorder.lastUsed = self.useCounter
        if recorder.isIdleListed {
            self.idle.remove(recorder)
            self.idle.append(recorder)
        }
    }

    /// Drops the least recently used idle recorders beyond `maxIdleRecorders`, at most `budget` of them: called
    /// once per loop turn (SessionCore.flush), so a connection closing with thousands of subscriptions on distinct
    /// paths does not remove thousands of engine observations in one turn; the excess goes within a few turns.
    /// O(1) per recorder dropped.
    func dropIdleRecorders(budget: Int = SubscriptionHistory.dropBudget) {
        var budget = budget
        while budget > 0, self.idle.count > self.maxIdleRecorders, let recorder = self.idle.first {
            budget -= 1
            self.idle.remove(recorder)
            // Added by recorder(for:).
            if let observer = recorder.observer { try? self.graph.removeObservation(observer) }
            self.recorders[recorder.keyPath] = nil
            // Its entries stay in the ring until they age out; they refer to the recorder, which no lookup finds.
        }
    }

    /// The recorders without subscribers in order of last use, linked through the recorders themselves (no node
    /// allocated, O(1) append and remove).
    private struct IdleList {
        private(set) unowned(unsafe) var first: Recorder?
        private unowned(unsafe) var last: Recorder?
        private(set) var count = 0

        /// Appends `recorder` (not listed) as the most recently used.
        mutating func append(_ recorder: Recorder) {
            guard !recorder.isIdleListed else { return }
            recorder.isIdleListed = true
            recorder.idlePrevious = self.last
            recorder.idleNext = nil
            if let last = self.last { last.idleNext = recorder } else { self.first = recorder }
            self.last = recorder
            self.count += 1
        }

        /// Takes `recorder` off the list (nothing when it is not on it).
        mutating func remove(_ recorder: Recorder) {
            guard recorder.isIdleListed else { return }
            recorder.isIdleListed = false
            let (previous, next) = (recorder.idlePrevious, recorder.idleNext)
            if let previous { previous.idleNext = next } else { self.first = next }
            if let next { next.idlePrevious = previous } else { self.last = previous }
            recorder.idlePrevious = nil
            recorder.idleNext = nil
            self.count -= 1
        }
    }
}

// MARK: - On disk

extension SubscriptionHistory {
    /// At a start, before any mutation: takes the history `contents` read from `log` as far as it can be trusted
    /// with the graph at its recovered seq, restarts its recorders (each observing again from now), fills the ring
    /// with their newest changes, and rewrites the log to match. From then on the history is written to `log`.
    /// Returns how many changes were restored.
    @discardableResult
    func restore(from log: HistoryLog, contents: HistoryLog.Contents) -> Int {
        guard self.isEnabled else { return 0 }
        let seq = self.graph.seq
        // Changes of mutations the journal does not have (it lost its last turn) are dropped with them; mutations
        // the history does not cover (its last turn was lost) may have changed any recorded path: none of those
        // paths can resume from before them.
        let unknownThrough = contents.through < seq ? seq : 0
        for state in contents.recorders {
            guard let keyPath = try? KeyPath(parsing: state.path), self.recorders[keyPath] == nil,
                (try? self.graph.checkObservable(keyPath)) != nil
            else { continue }
            let recorder = Recorder(keyPath: keyPath, since: min(state.since, seq))
            recorder.evictedThrough = max(state.evicted, unknownThrough)
            recorder.observer = try? self.graph.addObservation(
                keyPath, options: [.new, .old], sink: RecorderSink(self, recorder)).observer
            guard recorder.observer != nil else { continue }
            self.recorders[keyPath] = recorder
            self.touch(recorder)
        }
        var byPath: [String: Recorder] = [:]
        for recorder in self.recorders.values { byPath[recorder.pathText] = recorder }
        var restored = 0
        for (path, change) in contents.changes where change.seq <= seq {
            guard let recorder = byPath[path], change.seq > recorder.recordingSince else { continue }
            self.ring.append(change, of: recorder)
            restored += 1
        }
        self.dropIdleRecorders()
        self.log = log
        // A file written whole at a clean stop, and restored whole, is left as it is; anything else is rewritten.
        let isCompact =
            contents.through == seq && contents.tornBytes == 0 && restored == contents.changes.count
            && self.recorders.count == contents.recorders.count
            && contents.recordCount == contents.recorders.count + contents.changes.count + 1
        if !isCompact { self.rewriteLog() }
        return restored
    }

    /// At each flush, before the journal's write: the turn's history records, `through` the graph's seq, written
    /// (fsynced under `always`); the log is rewritten from the ring when it holds more than twice as much.
    func persist() {
        // Nothing recorded (no recorder, nothing buffered): no `through` either, and no write.
        guard let log = self.log, !self.recorders.isEmpty || log.hasPending else { return }
        do throws(PersistenceError) {
            try log.flush(through: self.graph.seq)
            if log.recordCount > 2 * (self.ring.count + self.recorders.count) + 1024 { self.rewriteLog() }
        } catch {
            self.logFailed(error)
        }
    }

    /// Deletes the log's file and keeps the history in memory only from now on.
    func discardLog() throws(PersistenceError) {
        guard let log = self.log else { return }
        self.log = nil
        try log.remove()
    }

    /// At a clean stop: the log rewritten whole (fsynced), so the next start reads it as it is.
    func finishLog() {
        self.rewriteLog()
    }

    /// Rewrites the log as the live recorders, the ring's changes of live recorders and `through` the graph's seq.
    private func rewriteLog() {
        guard let log = self.log else { return }
        let live = self.recorders.values.sorted { $0.lastUsed < $1.lastUsed }
        let states = live.map {
            HistoryLog.Contents.RecorderState(path: $0.pathText, since: $0.recordingSince, evicted: $0.evictedThrough)
        }
        var changes: [(path: String, change: Change)] = []
        changes.reserveCapacity(self.ring.count)
        for offset in 0..<self.ring.count {
            let entry = self.ring.entry(offset).pointee
            guard self.recorders[entry.recorder.keyPath] === entry.recorder else { continue }
            changes.append((entry.recorder.pathText, entry.change))
        }
        do throws(PersistenceError) {
            try log.rewrite(recorders: states, changes: changes, through: self.graph.seq)
        } catch {
            self.logFailed(error)
        }
    }

    private func logFailed(_ error: PersistenceError) {
        self.log = nil
        self.onLogFailure?(error)
    }
}
