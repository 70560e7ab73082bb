// An etcd in memory for in-process cluster tests (ClusterElectionTests): keys with create revisions, leases that
// expire on a manual clock, the txns the election makes; and each member's connection to it (a Coordinator), whose
// calls reach it and come back after delays the test's seeded scheduler picks, and which can be cut off (a partition,
// etcd without quorum) or dropped (the member was killed). Deterministic: the same seed, the same run.
@testable import KVOServer
import TestSupport

/// Events at virtual times, run in order (ties in the order scheduled). Owns the clock every member reads.
@MainActor
final class Scheduler {
    let clock = ManualClock(nowMilliseconds: 1_000_000)
    var random: SeededRandom
    private var events: [(at: UInt64, order: Int, action: @MainActor () -> Void)] = []
    private var scheduled = 0

    init(seed: UInt64) {
        self.random = SeededRandom(seed: seed)
    }

    var now: UInt64 { self.clock.nowMilliseconds }

    func schedule(after milliseconds: UInt64, _ action: @escaping @MainActor () -> Void) {
        let at = self.now + milliseconds
        self.scheduled += 1
        let event = (at: at, order: self.scheduled, action: action)
        // Binary search for the first event after this one: events stay sorted by (time, order).
        var low = 0
        var high = self.events.count
        while low < high {
            let middle = (low + high) / 2
            if self.events[middle].at <= at { low = middle + 1 } else { high = middle }
        }
        self.events.insert(event, at: low)
    }

    /// Runs every event up to `milliseconds` from now, then sets the clock there; `check` runs after each event.
    func run(for milliseconds: UInt64, check: () -> Void = {}) {
        let end = self.now + milliseconds
        while let first = self.events.first, first.at <= end {
            self.events.removeFirst()
            if first.at > self.now { self.clock.advance(milliseconds: first.at - self.now) }
            first.action()
            check()
        }
        if end > self.now { self.clock.advance(milliseconds: end - self.now) }
    }

    /// A random delay of a network hop: mostly a few milliseconds, sometimes a slow one.
    func hop() -> UInt64 {
        self.random.chance(0.05) ? UInt64.random(in: 50...400, using: &self.random)
            : UInt64.random(in: 1...15, using: &self.random)
    }
}

/// The etcd cluster: what it holds, applied as requests arrive.
@MainActor
final class InMemoryEtcd {
    struct Entry {
        var value: String
        var createRevision: UInt64
        var lease: Int64
    }

    let scheduler: Scheduler
    private(set) var revision: UInt64 = 1
    private(set) var keys: [String: Entry] = [:]
    /// Lease id to its expiry time.
    private var leases: [Int64: (ttl: Int, expiresAt: UInt64)] = [:]
    private var nextLease: Int64 = 7_000
    /// False: no quorum (two of three members down): every call fails.
    var hasQuorum = true

    init(scheduler: Scheduler) {
        self.scheduler = scheduler
    }

    /// Deletes the leases that expired, with their keys.
    func expire() {
        let now = self.scheduler.now
        for (id, lease) in self.leases where lease.expiresAt <= now { self.drop(lease: id) }
    }

    private func drop(lease id: Int64) {
        self.leases[id] = nil
        let attached = self.keys.filter { $0.value.lease == id }.map(\.key)
        guard !attached.isEmpty else { return }
        self.revision += 1
        for key in attached { self.keys[key] = nil }
    }

    func grant(seconds: Int) -> (id: Int64, ttl: Int) {
        self.nextLease += 1
        self.leases[self.nextLease] = (seconds, self.scheduler.now + UInt64(seconds) * 1000)
        return (self.nextLease, seconds)
    }

    func keepAlive(_ id: Int64) -> Int {
        guard let lease = self.leases[id] else { return 0 }
        self.leases[id] = (lease.ttl, self.scheduler.now + UInt64(lease.ttl) * 1000)
        return lease.ttl
    }

    func revoke(_ id: Int64) {
        self.drop(lease: id)
    }

    func put(_ key: String, _ value: String, lease: Int64) -> Bool {
        guard lease == 0 || self.leases[lease] != nil else { return false }
        self.revision += 1
        let created = self.keys[key]?.createRevision ?? self.revision
        self.keys[key] = Entry(value: value, createRevision: created, lease: lease)
        return true
    }

    func record(_ key: String) -> LeaderRecord? {
        self.keys[key].map { LeaderRecord(address: $0.value, term: $0.createRevision, lease: $0.lease) }
    }
}

/// One member's connection to the in-memory etcd.
@MainActor
final class InMemoryCoordinator: Coordinator {
    let etcd: InMemoryEtcd
    private var scheduler: Scheduler { self.etcd.scheduler }
    /// Cut off from etcd (a partition): calls fail after the client's timeout.
    var isPartitioned = false
    /// Paused (SIGSTOP): completions wait until the member continues.
    var isPaused = false {
        didSet {
            guard !self.isPaused else { return }
            let deferred = self.deferred
            self.deferred.removeAll()
            for completion in deferred { completion() }
        }
    }
    private var deferred: [@MainActor () -> Void] = []
    /// Bumped by `cancelAll`: completions of earlier calls are dropped.
    private var generation = 0
    /// How long a call waits before it fails (EtcdClient's timeout times the endpoints).
    static let timeoutMilliseconds: UInt64 = 900

    init(etcd: InMemoryEtcd) {
        self.etcd = etcd
    }

    func cancelAll() {
        self.generation += 1
        self.deferred.removeAll()
    }

    /// Sends a request: `apply` runs at etcd when it arrives (unless cut off), its answer comes back a hop later.
    private func call<T>(
        _ apply: @escaping @MainActor () -> Result<T, EtcdError>, _ done: @escaping @MainActor (Result<T, EtcdError>) -> Void
    ) {
        let generation = self.generation
        let deliver: @MainActor (Result<T, EtcdError>) -> Void = { [weak self] result in
            guard let self, generation == self.generation else { return }
            if self.isPaused {
                self.deferred.append { done(result) }
            } else {
                done(result)
            }
        }
        if self.isPartitioned {
            self.scheduler.schedule(after: Self.timeoutMilliseconds) { deliver(.failure(EtcdError(description: "timeout"))) }
            return
        }
        self.scheduler.schedule(after: self.scheduler.hop()) { [weak self] in
            guard let self else { return }
            guard self.etcd.hasQuorum, !self.isPartitioned else {
                self.scheduler.schedule(after: Self.timeoutMilliseconds) {
                    deliver(.failure(EtcdError(description: "no quorum")))
                }
                return
            }
            self.etcd.expire()
            let result = apply()
            let back = self.scheduler.hop()
            self.scheduler.schedule(after: back) { [weak self] in
                // An answer lost on its way back (cut off meanwhile) is a timeout, the request applied all the same.
                if self?.isPartitioned == true {
                    deliver(.failure(EtcdError(description: "timeout")))
                } else {
                    deliver(result)
                }
            }
        }
    }

    func grantLease(seconds: Int, _ done: @escaping @MainActor (Result<(id: Int64, ttl: Int), EtcdError>) -> Void) {
        self.call({ [etcd] in .success(etcd.grant(seconds: seconds)) }, done)
    }

    func keepAlive(lease id: Int64, _ done: @escaping @MainActor (Result<Int, EtcdError>) -> Void) {
        self.call({ [etcd] in .success(etcd.keepAlive(id)) }, done)
    }

    func createIfAbsent(
        key: String, value: String, lease: Int64,
        _ done: @escaping @MainActor (Result<(won: Bool, leader: LeaderRecord?), EtcdError>) -> Void
    ) {
        self.call(
            { [etcd] in
                if let existing = etcd.record(key) { return .success((false, existing)) }
                guard etcd.put(key, value, lease: lease) else { return .failure(EtcdError(description: "no lease")) }
                return .success((true, etcd.record(key)))
            }, done)
    }

    func read(key: String, _ done: @escaping @MainActor (Result<LeaderRecord?, EtcdError>) -> Void) {
        self.call({ [etcd] in .success(etcd.record(key)) }, done)
    }

    func put(key: String, value: String, lease: Int64, _ done: @escaping @MainActor (Result<Void, EtcdError>) -> Void) {
        self.call(
            { [etcd] in
                etcd.put(key, value, lease: lease) ? .success(()) : .failure(EtcdError(description: "no lease"))
            }, done)
    }

    func put(
        key: String, value: String, ifKey guardKey: String, createdAt revision: UInt64,
        _ done: @escaping @MainActor (Result<Bool, EtcdError>) -> Void
    ) {
        self.call(
            { [etcd] in
                guard etcd.keys[guardKey]?.createRevision == revision else { return .success(false) }
                return .success(etcd.put(key, value, lease: 0))
            }, done)
    }

    func read(prefix: String, _ done: @escaping @MainActor (Result<[(key: String, value: String)], EtcdError>) -> Void) {
        self.call(
            { [etcd] in
                .success(etcd.keys.filter { $0.key.hasPrefix(prefix) }.sorted { $0.key < $1.key }.map { ($0.key, $0.value.value) })
            }, done)
    }

    func revoke(lease id: Int64, _ done: @escaping @MainActor (Result<Void, EtcdError>) -> Void) {
        self.call({ [etcd] in
            etcd.revoke(id)
            return .success(())
        }, done)
    }
}
