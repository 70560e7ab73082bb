// The history behind resuming a live query subscription (`subscribe` with `query` and `since`; Protocol/methods.md#
// queries). Each distinct query — its path, predicate, variables, order, window and selected keys: what decides
// the notifications — that has been subscribed gets one recorder, a subscriber of the live query with `new` and
// `old` whose after notifications go into a ring of its own (a replayed prior is derived from its after: same kind,
// indexes, old value, count and seq). A recorder outlives its subscribers, so a client that lost its connection
// comes back to it, until too many idle recorders exist (the least recently idle go first). `since: S` replays the
// entries after S when the recorder has recorded since S or earlier and none after S left its ring; otherwise 1010.
// The history lives in memory on the member that served the subscription: after a restart or on another cluster
// member a query subscription resubscribes with `initial`.
import ObjectGraph

/// Loop-owned.
@MainActor
final class QueryHistory {
    final class Recorder {
        let key: String
        var observer: QueryObserver?
        /// Entries after this seq are complete.
        let recordingSince: UInt64
        /// The highest seq whose entries left the ring.
        var evictedThrough: UInt64 = 0
        /// The ring: `count` entries from `head`.
        var entries: [Change] = []
        var head = 0
        var subscribers = 0
        /// When the recorder last became idle (its place in the idle queue).
        var idleStamp: UInt64 = 0

        init(key: String, since: UInt64) {
            self.key = key
            self.recordingSince = since
        }

        var oldestResumable: UInt64 { max(self.recordingSince, self.evictedThrough) }

        func append(_ change: Change, capacity: Int) {
            if self.entries.count < capacity {
                self.entries.append(change)
                return
            }
            let evicted = self.entries[self.head].seq
            if evicted > self.evictedThrough { self.evictedThrough = evicted }
            self.entries[self.head] = change
            self.head = (self.head + 1) % capacity
        }

        /// The entries, oldest first.
        var ordered: ArraySlice<Change> { self.entries[self.head...] + self.entries[..<self.head] }
    }

    /// A recorder's engine sink.
    @MainActor
    private final class RecorderSink: @MainActor ObservationSink {
        unowned(unsafe) let recorder: Recorder
        let capacity: Int

        init(_ recorder: Recorder, capacity: Int) {
            self.recorder = recorder
            self.capacity = capacity
        }

        func observe(_ change: Change, options: ObservationOptions) {
            guard !change.isPrior else { return }
            self.recorder.append(change, capacity: self.capacity)
        }
    }

    /// Entries each recorder keeps.
    let capacity: Int
    private let graph: Graph
    private var recorders: [String: Recorder] = [:]
    /// Idle recorders in the order they became idle (stale entries are skipped), and how many are idle.
    private var idleQueue: [(key: String, stamp: UInt64)] = []
    private var idleHead = 0
    private var idleCount = 0
    private var stampCounter: UInt64 = 0
    private let maxIdleRecorders: Int

    /// `capacity`: the history's size (`--history`); each query keeps at most 1,024 of its changes.
    init(capacity: Int, graph: Graph) {
        self.capacity = min(capacity, 1024)
        self.graph = graph
        self.maxIdleRecorders = 1000
    }

    var isEnabled: Bool { self.capacity > 0 }

    /// The identity of a query subscription's notifications.
    static func key(path: KeyPath, query: Query) -> String {
        var key = path.description + "\u{0}"
        key += query.predicate?.description ?? ""
        key += "\u{0}" + query.variables.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        key += "\u{0}" + query.orderBy.map { "\($0.keys.joined(separator: ".")) \($0.ascending) \($0.caseInsensitive)" }
            .joined(separator: ",")
        key += "\u{0}\(query.offset)\u{0}\(query.limit.map(String.init) ?? "-")\u{0}"
        key += query.select.map { $0.map { $0.joined(separator: ".") }.joined(separator: ",") } ?? "*"
        return key
    }

    /// Notes a new subscription of `query` at `path`, starting its recorder when there is none.
    func subscribed(_ path: KeyPath, _ query: Query) {
        guard self.isEnabled else { return }
        let key = Self.key(path: path, query: query)
        if let recorder = self.recorders[key] {
            if recorder.subscribers == 0 { self.idleCount -= 1 }
            recorder.subscribers += 1
            return
        }
        let recorder = Recorder(key: key, since: self.graph.seq)
        // The query was checked by the subscribe that asked for it: adding the recorder cannot fail.
        recorder.observer = try? self.graph.addQueryObservation(
            path, query: query, options: [.new, .old], sink: RecorderSink(recorder, capacity: self.capacity)).observer
        recorder.subscribers = 1
        self.recorders[key] = recorder
    }

    /// Notes that a subscription of `query` at `path` ended; the least recently idle recorders beyond the limit go.
    func unsubscribed(_ path: KeyPath, _ query: Query) {
        guard self.isEnabled, let recorder = self.recorders[Self.key(path: path, query: query)] else { return }
        recorder.subscribers -= 1
        guard recorder.subscribers == 0 else { return }
        self.stampCounter += 1
        recorder.idleStamp = self.stampCounter
        self.idleQueue.append((recorder.key, self.stampCounter))
        self.idleCount += 1
        while self.idleCount > self.maxIdleRecorders && self.idleHead < self.idleQueue.count {
            let (key, stamp) = self.idleQueue[self.idleHead]
            self.idleHead += 1
            guard let idle = self.recorders[key], idle.subscribers == 0, idle.idleStamp == stamp else { continue }
            if let observer = idle.observer { self.graph.removeQueryObservation(observer) }
            self.recorders[key] = nil
            self.idleCount -= 1
        }
        if self.idleHead > 1024 && self.idleHead * 2 > self.idleQueue.count {
            self.idleQueue.removeFirst(self.idleHead)
            self.idleHead = 0
        }
    }

    /// What a subscription of `query` at `path` resuming after `since` missed — each change's prior and after — or
    /// nil when the history cannot say; with the oldest seq it could resume from.
    func changes(_ path: KeyPath, _ query: Query, after since: UInt64) -> (changes: [Change]?, oldest: UInt64) {
        guard self.isEnabled, let recorder = self.recorders[Self.key(path: path, query: query)] else {
            return (nil, self.graph.seq)
        }
        guard since >= recorder.oldestResumable else { return (nil, recorder.oldestResumable) }
        var changes: [Change] = []
        for change in recorder.ordered where change.seq > since {
            var prior = change
            prior.isPrior = true
            prior.new = nil
            prior.payloadID = 0  // not the after's: encoders must not share its bytes
            changes.append(prior)
            changes.append(change)
        }
        return (changes, recorder.oldestResumable)
    }
}
