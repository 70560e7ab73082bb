// Durability on a data directory: every successful mutation is journaled (method, params, seq) as it happens; the
// before-poll flush writes the turn's records (fsyncing under `always`) before any response of the turn reaches a
// socket; under `everysec` a timer fsyncs once a second on libuv's thread pool, off the loop. Every `snapshotEvery`
// records a snapshot is written in the background by a forked child (SnapshotProcess) while the loop keeps serving:
// the journal is rolled at the fork's seq, and the child does every step that waits for the disk (fsyncs, the
// rename into place, deleting the rolled segment). At shutdown the last snapshot is written in process.
// `onDisconnect` registrations are journaled too (records that take no seq, OnDisconnectRecord.swift) and, since no
// snapshot holds them, the live ones are carried into the new journal at every roll. On start, the snapshot
// is loaded and the journal replayed through the same request parsing, and every replayed mutation must land on its
// journaled seq; the registrations left at the end are those of connections a crash left open, which kvod runs
// before it accepts clients (Server.runOnDisconnect; a cluster member keeps them, `adopt`, and runs them if it
// leads). See docs/DURABILITY.md.
public import Logging
public import ObjectGraph
public import Persistence
public import UVLoop
import ValueCoding
import WireProtocol

/// The journal and snapshots of a data directory. Loop-owned.
@MainActor
public final class Durability: MutationLog {
    public let directory: DataDirectory
    public let policy: FsyncPolicy
    /// Journal records after which a snapshot is taken (0: only at shutdown).
    public let snapshotEvery: Int
    /// The CPUs a background snapshot's process may run on (`--snapshot-cpus`); empty: those of kvod.
    public let snapshotCPUs: [Int]
    private let graph: Graph
    private let logger: Logger
    private var timer: LoopTimer?
    /// Called after each fsync with its duration in seconds (metrics).
    public var onFsync: ((Double) -> Void)?
    /// Whether the once-a-second fsync is running on the thread pool.
    private var backgroundSyncRunning = false
    /// Called once when the journal cannot be written: acknowledging more would be a lie, so kvod stops.
    public var onFailure: ((PersistenceError) -> Void)?
    private var failed = false
    private let loop: EventLoop
    /// The background snapshot being written, and the timer that polls its process (every 10 ms while it runs).
    private var inFlight: SnapshotProcess?
    private var pollTimer: LoopTimer?
    private var inFlightStartedAt: UInt64 = 0
    private var inFlightObjects = 0
    /// After a failed background snapshot: no new one before this loop time; the wait doubles up to a minute.
    private var retryAfter: UInt64 = 0
    private var retryDelay: UInt64 = 1000
    /// Background snapshots written and failed since start (stats).
    public private(set) var snapshotsWritten = 0
    public private(set) var snapshotsFailed = 0
    /// The live `onDisconnect` registrations, carried into the new journal at every roll.
    private var registrations = OnDisconnectRegistrations()
    /// The records the current journal began with (carried registrations); they do not count towards a snapshot.
    private var carriedRecords = 0

    public init(
        directory: DataDirectory, policy: FsyncPolicy, snapshotEvery: Int, snapshotCPUs: [Int] = [], graph: Graph,
        loop: EventLoop, logger: Logger
    ) {
        self.directory = directory
        self.policy = policy
        self.snapshotEvery = snapshotEvery
        self.snapshotCPUs = snapshotCPUs
        self.graph = graph
        self.loop = loop
        self.logger = logger
    }

    /// Starts the once-a-second fsync under `everysec`.
    public func start() throws(UVError) {
        guard self.policy == .everysec else { return }
        let timer = try LoopTimer(loop: self.loop)
        try timer.start(afterMilliseconds: 1000, repeatMilliseconds: 1000) { [unowned self] in
            self.perform { () throws(PersistenceError) in try self.directory.journal.write() }
            self.syncInBackground()
        }
        self.timer = timer
    }

    /// Journals one successful mutation (buffered until the loop turn's flush).
    func committed(seq: UInt64, method: String, params: JSONValue?) {
        self.directory.journal.append(seq: seq, method: method, params: params)
    }

    /// Journals a plain set with its params' text as the client sent it: no object built, none written out again
    /// (6,581 → 4,393 instructions per journaled set, callgrind). Replay reads the text with the same reader as the
    /// request.
    func committed(seq: UInt64, plainSet set: RPCPlainSet) {
        self.directory.journal.append(seq: seq, method: "set") { $0.append(contentsOf: set.paramsText) }
    }

    /// Journals an `onDisconnect` registration (or its cancel) at the current seq, and remembers it for the rolls.
    func registered(connection: String, ops: [JSONValue]) {
        self.journal(.registered(connection: connection, ops: ops))
    }

    /// Journals that a connection with `onDisconnect` ops ended (also one a crash left open, settled at a start).
    func disconnected(connection: String) {
        self.journal(.disconnected(connection: connection))
    }

    /// A cluster member's start: the registrations the journal left (`recover`) stay live, carried at the rolls,
    /// until they run or the leader's set replaces them (docs/SCALING.md#presence-across-a-failover). Journals
    /// nothing: they are in the journal already.
    func adopt(_ leftovers: OnDisconnectRegistrations) {
        self.registrations = leftovers
    }

    private func journal(_ record: OnDisconnectRecord) {
        self.registrations.apply(record)
        self.directory.journal.append(seq: self.graph.seq, method: record.method, params: record.params)
    }

    /// The live registrations as journal records at the current seq (what a roll carries).
    private var carriedRegistrations: [JournalRecord] {
        let seq = self.graph.seq
        return self.registrations.records.map { JournalRecord(seq: seq, method: $0.method, params: $0.params) }
    }

    /// Writes the turn's records, fsyncs under `always`, and starts a background snapshot when the journal is long.
    func beforeOutput() {
        let journal = self.directory.journal
        guard journal.hasPending, !self.failed else { return }
        self.perform { () throws(PersistenceError) in
            try journal.write()
            if self.policy == .always { try self.sync() }
            if self.snapshotEvery > 0 && journal.recordCount - self.carriedRecords >= self.snapshotEvery {
                try self.startSnapshot()
            }
        }
    }

    /// At shutdown: waits for a background snapshot in flight, writes and fsyncs what is left, and snapshots so the
    /// next start is quick.
    public func finish() {
        self.timer?.close()
        self.timer = nil
        if let process = self.inFlight { self.settle(process, outcome: process.wait()) }
        guard !self.failed else { return }
        self.perform { () throws(PersistenceError) in
            try self.directory.journal.write()
            try self.sync()
            if self.directory.journal.recordCount > 0 || !self.directory.segments.isEmpty {
                let start = self.loop.nowMilliseconds
                let carried = self.carriedRegistrations
                try self.directory.writeSnapshot(self.graph.makeSnapshot(), carrying: carried)
                self.carriedRecords = carried.count
                self.loop.updateTime()
                self.logger.info(
                    "snapshot written",
                    metadata: ["seq": "\(self.graph.seq)", "objects": "\(self.graph.objectCount)",
                        "duration.ms": "\(self.loop.nowMilliseconds - start)", "mode": "in process"])
            }
        }
    }

    /// A follower's bootstrap: waits for a background snapshot in flight, then replaces the snapshot and the journal
    /// with `bytes` (a binary snapshot from the leader, checked here). The graph in memory is not touched: kvod
    /// restarts on the new directory.
    public func installSnapshot(_ bytes: [UInt8]) throws(PersistenceError) {
        _ = try BinarySnapshotCodec.decode(bytes)
        self.timer?.close()
        self.timer = nil
        if let process = self.inFlight { self.settle(process, outcome: process.wait()) }
        self.failed = true  // nothing more may reach this journal
        try self.directory.replaceAll(withSnapshot: bytes)
    }

    // MARK: - Background snapshots

    /// Rolls the journal at the current seq, carrying the live `onDisconnect` registrations into the new one (no
    /// snapshot holds them), and forks the process that writes the snapshot; the loop waits for no disk here (under
    /// `always` for one directory fsync), the child makes the roll durable first. A journal that cannot be rolled is
    /// a journal failure (thrown); a fork that fails is retried later, after the roll was made durable here. Nothing
    /// rolls twice at one seq (records that take no seq can fill a journal without a mutation): a failed snapshot's
    /// segment is never overwritten.
    private func startSnapshot() throws(PersistenceError) {
        guard self.inFlight == nil, self.loop.nowMilliseconds >= self.retryAfter else { return }
        let seq = self.graph.seq
        guard self.directory.segments.last.map({ $0 < seq }) ?? true else { return }
        let carried = self.carriedRegistrations
        try self.directory.rollJournal(at: seq, carrying: carried, syncDirectory: self.policy == .always)
        self.carriedRecords = carried.count
        self.loop.updateTime()
        let start = self.loop.nowMilliseconds
        let graph = self.graph
        let process: SnapshotProcess
        do {
            process = try SnapshotProcess.start(
                files: self.directory.snapshotPlan(at: seq), seq: seq, cpus: self.snapshotCPUs
            ) {
                BinarySnapshotCodec.encodeParts(graph.makeSnapshot())
            }
        } catch {
            self.logger.warning("cannot start a snapshot", metadata: ["error": "\(error)"])
            try self.directory.syncRoll(at: seq)
            self.snapshotFailed()
            return
        }
        self.loop.updateTime()
        self.inFlight = process
        self.inFlightStartedAt = start
        self.inFlightObjects = graph.objectCount
        self.logger.debug(
            "snapshot started",
            metadata: ["seq": "\(seq)", "snapshot.pid": "\(process.pid)", "fork.ms": "\(self.loop.nowMilliseconds - start)"])
        do {
            let timer = try LoopTimer(loop: self.loop)
            try timer.start(afterMilliseconds: 10, repeatMilliseconds: 10) { [unowned self] in
                guard let process = self.inFlight else { return }
                let outcome = process.poll()
                if outcome != .running { self.settle(process, outcome: outcome) }
            }
            self.pollTimer = timer
        } catch {
            // Without a timer the child is reaped at shutdown at the latest; the next trigger waits until then.
            self.logger.warning("cannot watch the snapshot process", metadata: ["error": "\(error)"])
        }
    }

    /// Takes note of a snapshot its process put in place, or of one that failed.
    private func settle(_ process: SnapshotProcess, outcome: SnapshotProcess.Outcome) {
        self.inFlight = nil
        self.pollTimer?.close()
        self.pollTimer = nil
        self.loop.updateTime()
        let duration = self.loop.nowMilliseconds - self.inFlightStartedAt
        switch outcome {
        case .running:
            return
        case .succeeded:
            self.directory.snapshotCompleted(at: process.seq)
            self.snapshotsWritten += 1
            self.retryDelay = 1000
            self.logger.info(
                "snapshot written",
                metadata: ["seq": "\(process.seq)", "objects": "\(self.inFlightObjects)", "duration.ms": "\(duration)",
                    "mode": "background"])
        case .failed(let reason):
            // The child removes its file when a step fails; not when it was killed. It may have died before it made
            // the roll durable: that is done here (rare), so the segment is whole on disk before the next roll.
            process.discard()
            self.logger.warning("snapshot failed", metadata: ["seq": "\(process.seq)", "error": "\(reason)"])
            self.perform { () throws(PersistenceError) in try self.directory.syncRoll(at: process.seq) }
            self.snapshotFailed()
        case .journalFailed(let reason):
            process.discard()
            self.perform { () throws(PersistenceError) in throw PersistenceError("snapshot process: \(reason)") }
        }
    }

    private func snapshotFailed() {
        self.snapshotsFailed += 1
        self.retryAfter = self.loop.nowMilliseconds + self.retryDelay
        self.retryDelay = min(self.retryDelay * 2, 60_000)
    }

    /// Starts an fsync of the journal on libuv's thread pool (under `everysec`): a disk busy with a snapshot being
    /// written can take a fsync hundreds of milliseconds, which the loop does not wait for. One at a time: while one
    /// runs, the next second's waits for the second after (as Redis postpones its `everysec` fsync).
    private func syncInBackground() {
        guard !self.backgroundSyncRunning, !self.failed, let detached = self.directory.journal.detachSync() else { return }
        let clock = ContinuousClock()
        let start = clock.now
        do {
            try self.loop.syncInBackground(descriptor: detached.descriptor) { [weak self] error in
                withExtendedLifetime(detached) {}
                guard let self else { return }
                self.backgroundSyncRunning = false
                self.perform { () throws(PersistenceError) in
                    if let error { throw PersistenceError("fsync \(detached.path): \(error)") }
                }
                self.recordFsync(since: start, clock: clock)
            }
            self.backgroundSyncRunning = true
        } catch {
            // No thread pool: fsync here, as before.
            self.perform { () throws(PersistenceError) in try detached.sync() }
            self.recordFsync(since: start, clock: clock)
        }
    }

    private func recordFsync(since start: ContinuousClock.Instant, clock: ContinuousClock) {
        let elapsed = clock.now - start
        self.onFsync?(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    private func sync() throws(PersistenceError) {
        guard self.directory.journal.isDirty else { return }
        let clock = ContinuousClock()
        let start = clock.now
        try self.directory.journal.sync()
        self.recordFsync(since: start, clock: clock)
    }

    private func perform(_ work: () throws(PersistenceError) -> Void) {
        do {
            try work()
        } catch {
            guard !self.failed else { return }
            self.failed = true
            self.logger.critical("journal write failed: stopping", metadata: ["error": "\(error)"])
            self.onFailure?(error)
        }
    }

    // MARK: - Recovery

    /// The graph a data directory holds: its snapshot with the journal replayed on top; and the `onDisconnect`
    /// registrations of connections that were open when kvod stopped without closing them (a crash), for
    /// `Server.runOnDisconnect(ofLostConnections:)` to run before clients are accepted.
    /// - Throws: a message for people when the snapshot does not fit the model or a record does not replay.
    public static func recover(
        _ contents: DataDirectory.Contents, model: Model, path: String
    ) throws -> (graph: Graph, registrations: OnDisconnectRegistrations) {
        let graph: Graph
        if let snapshot = contents.snapshot {
            do {
                graph = try snapshot.restore(model: model)
            } catch let error as PersistenceError {
                throw PersistenceError("\(snapshot.path): \(error.message)")
            } catch {
                throw PersistenceError("\(snapshot.path) does not fit the model: \(error)")
            }
        } else {
            graph = Graph(model: model)
        }
        var registrations = OnDisconnectRegistrations()
        for record in contents.records {
            do {
                if let change = try OnDisconnectRecord(method: record.method, params: record.params) {
                    // Takes no seq and changes no graph; its seq is only where it was written.
                    registrations.apply(change)
                    continue
                }
                // The records at the snapshot's seq are handed back for the registrations carried there; a
                // mutation at that seq is the last one the snapshot holds.
                if record.seq == contents.snapshot?.seq { continue }
                try Self.replay(record, into: graph)
            } catch {
                throw PersistenceError("\(path): journal record seq \(record.seq) (\(record.method)) does not replay: \(error)")
            }
            guard graph.seq == record.seq else {
                throw PersistenceError(
                    "\(path): journal record \(record.method) replayed as seq \(graph.seq), journaled as \(record.seq)")
            }
        }
        return (graph, registrations)
    }

    /// Applies one journaled mutation, parsed exactly as the request was (MutationRequest.swift).
    static func replay(_ record: JournalRecord, into graph: Graph) throws {
        try MutationRequest.replay(method: record.method, params: record.params, into: graph)
    }
}
