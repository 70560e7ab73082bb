// A cluster in process for the election tests (ClusterElectionTests): each member runs the real election
// (ClusterMember, MemberStateMachine, ClusterStatus) against the in-memory etcd (InMemoryCoordinator.swift), and
// the real sync-set policy (SyncSet, SyncRecord) when it leads; what it replicates is modelled: its journal is the
// list of the terms that wrote each seq, a follower copies its leader's records (or, diverged, the whole of them, as
// a snapshot bootstrap), acknowledges what it has, and a leader acknowledges a client's write once `--sync-replicas`
// followers of its sync set have it (ReplicationSource's rule), while its lease is proven. Members can be killed
// (SIGKILL: the journal survives, nothing else), stopped and continued (SIGSTOP/SIGCONT), cut off from etcd, and
// restarted. Every event is checked: at most one member may acknowledge at a time, and a member that becomes
// leader holds every acknowledged write (under `--sync-replicas`).
@testable import KVOServer
import Logging
import TestSupport

/// A simulated member. Loop-owned (the scheduler's).
@MainActor
final class SimulatedMember: ClusterMemberHost {
    enum Life { case running, stopped, dead }

    let address: String
    unowned let cluster: ClusterSimulation
    /// The journal: the term that wrote each record (index seq − 1). Survives a kill.
    var records: [UInt64] = []
    private(set) var life = Life.dead
    private(set) var status: ClusterStatus!
    private(set) var member: ClusterMember!
    private(set) var coordinator: InMemoryCoordinator!
    /// How many records a follower copies per tick (a slow member copies few and falls behind).
    var replicationBatch = 0...60
    /// Bumped at each start: the old incarnation's timers stop.
    private var incarnation = 0
    // As leader:
    private var syncSet: SyncSet
    private var acknowledgedSeq: UInt64 = 0
    private var followerAcks: [String: (seq: UInt64, at: UInt64)] = [:]
    /// Written here, not acknowledged yet: seq and when.
    private var pendingWrites: [(seq: UInt64, at: UInt64)] = []
    /// The sync sets this member wrote.
    private(set) var syncWrites: [SyncRecord] = []
    /// Role changes, in order.
    private(set) var roles: [RoleChange] = []

    init(address: String, cluster: ClusterSimulation) {
        self.address = address
        self.cluster = cluster
        self.syncSet = SyncSet(needed: cluster.syncReplicas)
    }

    var isLeader: Bool { self.life != .dead && self.status?.role == .leader }
    var acceptsWrites: Bool { self.life != .dead && self.status?.acceptsWrites(now: self.cluster.scheduler.now) == true }

    /// Starts (or restarts) the process on its journal.
    func start() {
        self.incarnation += 1
        self.life = .running
        var configuration = ClusterConfiguration(
            endpoints: [], name: "sim", advertise: self.address, leaseSeconds: self.cluster.leaseSeconds)
        configuration.syncReplicas = self.cluster.syncReplicas
        self.status = ClusterStatus(configuration: configuration)
        self.coordinator = InMemoryCoordinator(etcd: self.cluster.etcd)
        var logger = Logger(label: "sim.\(self.address)")
        logger.logLevel = .critical
        self.member = ClusterMember(
            status: self.status, host: self, coordinator: self.coordinator, clock: self.cluster.scheduler.clock,
            logger: logger)
        self.resetLeaderState()
        let incarnation = self.incarnation
        let phase = UInt64.random(in: 0..<250, using: &self.cluster.scheduler.random)
        self.cluster.scheduler.schedule(after: phase) { [weak self] in self?.timer(incarnation) }
    }

    private func timer(_ incarnation: Int) {
        guard incarnation == self.incarnation, self.life != .dead else { return }
        if self.life == .running { self.member.tick() }
        self.cluster.scheduler.schedule(after: 250) { [weak self] in self?.timer(incarnation) }
    }

    /// SIGKILL: everything but the journal is gone; the lease expires in etcd.
    func kill() {
        self.life = .dead
        self.coordinator.cancelAll()
        self.resetLeaderState()
    }

    /// SIGSTOP and SIGCONT.
    func pause() {
        self.life = .stopped
        self.coordinator.isPaused = true
    }

    func resume() {
        self.life = .running
        self.coordinator.isPaused = false
    }

    /// SIGTERM: resigns (revokes its lease), then exits.
    func terminate() {
        self.member.stop()
        let incarnation = self.incarnation
        self.cluster.scheduler.schedule(after: 1000) { [weak self] in
            if self?.incarnation == incarnation { self?.kill() }
        }
    }

    private func resetLeaderState() {
        self.syncSet.reset()
        self.followerAcks = [:]
        self.pendingWrites = []
    }

    // MARK: - The election's host

    var position: MemberPosition {
        MemberPosition(seq: UInt64(self.records.count), term: self.records.last ?? 0)
    }

    func roleChanged(_ change: RoleChange) {
        self.roles.append(change)
        if change.previous == .leader { self.resetLeaderState() }  // held responses are never sent
        guard change.role == .leader else { return }
        self.resetLeaderState()
        self.acknowledgedSeq = UInt64(self.records.count)
        self.cluster.becameLeader(self)
    }

    func tick(now: UInt64) {
        switch self.status.role {
        case .leader: self.lead(now: now)
        case .follower: self.follow(now: now)
        case .candidate: break
        }
    }

    // MARK: - Leading

    /// A client's write, if this member accepts one now (a writable leader with its sync replicas).
    func write() -> Bool {
        guard self.life == .running, self.status.mutationRefusal(now: self.cluster.scheduler.now) == nil else {
            return false
        }
        self.records.append(self.status.term)
        let seq = UInt64(self.records.count)
        if self.cluster.syncReplicas == 0 {
            self.cluster.acknowledged(seq: seq, term: self.status.term)  // once journaled
        } else {
            self.pendingWrites.append((seq, self.cluster.scheduler.now))
        }
        return true
    }

    private var liveFollowers: [String: UInt64] {
        let now = self.cluster.scheduler.now
        return self.followerAcks.filter { now &- $0.value.at <= 2000 }.mapValues(\.seq)
    }

    private func lead(now: UInt64) {
        // Followers gone for 3 s have lost their link.
        self.followerAcks = self.followerAcks.filter { now &- $0.value.at <= 3000 }
        let live = self.liveFollowers
        self.status.liveReplicas = live.keys.count { self.syncSet.counts($0) }
        guard self.cluster.syncReplicas > 0 else { return }
        if self.acceptsWrites, let proposal = self.syncSet.proposal(followers: live, acknowledged: self.acknowledgedSeq) {
            let generation = self.syncSet.generation
            let record = SyncRecord(
                term: self.status.term, leader: self.address, followers: Array(proposal),
                needed: self.cluster.syncReplicas)
            self.member.writeSyncSet(record) { [weak self] written in
                guard let self else { return }
                if written { self.syncWrites.append(record) }
                self.syncSet.written(proposal, generation: generation, succeeded: written)
                self.release()
            }
        }
        self.release()
        // Held longer than the lease: the session is closed, the write never acknowledged.
        let timeout = UInt64(self.cluster.leaseSeconds) * 1000
        self.pendingWrites.removeAll { now &- $0.at > timeout }
    }

    /// Acknowledges the held writes `--sync-replicas` followers of the sync set have, while the lease is proven.
    func release() {
        guard self.life == .running, self.acceptsWrites else { return }
        let acks = self.followerAcks.map { (member: Optional($0.key), seq: $0.value.seq) }
        guard let releasable = self.syncSet.releasable(acks) else { return }
        self.acknowledgedSeq = max(self.acknowledgedSeq, releasable)
        for write in self.pendingWrites where write.seq <= releasable {
            self.cluster.acknowledged(seq: write.seq, term: self.records[Int(write.seq) - 1])
        }
        self.pendingWrites.removeAll { $0.seq <= releasable }
    }

    /// A follower's ack (it has every record up to `seq`).
    func acknowledged(_ seq: UInt64, by follower: String) {
        guard self.life == .running, self.status.role == .leader else { return }
        self.followerAcks[follower] = (seq, self.cluster.scheduler.now)
        self.release()
    }

    // MARK: - Following

    /// Copies a batch of the leader's records (or all of them when this journal diverged), then acknowledges.
    private func follow(now: UInt64) {
        guard let address = self.status.leaderAddress, let leader = self.cluster.member(address),
            leader.life == .running, leader.status.role == .leader, self.cluster.isLinkUp(self, leader),
            leader.status.term >= self.status.highestTerm
        else { return }
        self.status.observe(term: leader.status.term)
        let mine = self.records.count
        let consistent = mine <= leader.records.count && (mine == 0 || leader.records[mine - 1] == self.records[mine - 1])
        if consistent {
            let batch = Int.random(in: self.replicationBatch, using: &self.cluster.scheduler.random)
            self.records += leader.records[mine..<min(leader.records.count, mine + batch)]
        } else {
            self.records = leader.records  // a snapshot bootstrap discards the divergent tail
            self.cluster.bootstraps += 1
        }
        self.status.leaderSeq = UInt64(leader.records.count)
        self.status.isLinked = true
        leader.acknowledged(UInt64(self.records.count), by: self.address)
    }
}

/// Three (or more) simulated members, the in-memory etcd and a client writing to whoever leads.
@MainActor
final class ClusterSimulation {
    let scheduler: Scheduler
    let etcd: InMemoryEtcd
    let syncReplicas: Int
    let leaseSeconds: Int
    private(set) var members: [SimulatedMember] = []
    /// Every acknowledged write: seq to the term that wrote it.
    private(set) var acknowledgedWrites: [UInt64: UInt64] = [:]
    /// Violations of the invariants, with the time they were seen.
    private(set) var violations: [String] = []
    var bootstraps = 0
    /// Asynchronously: acknowledged writes a later term wrote over (lost in a failover).
    var lostAsynchronously = 0
    /// Pairs of members that cannot reach each other (by address, either order).
    var cutLinks: Set<[String]> = []
    private var isWriting = false

    init(seed: UInt64, members: Int = 3, syncReplicas: Int = 1, leaseSeconds: Int = 3) {
        self.scheduler = Scheduler(seed: seed)
        self.etcd = InMemoryEtcd(scheduler: self.scheduler)
        self.syncReplicas = syncReplicas
        self.leaseSeconds = leaseSeconds
        for index in 0..<members {
            self.members.append(SimulatedMember(address: "10.0.0.\(index + 1):7070", cluster: self))
        }
        for member in self.members { member.start() }
    }

    func member(_ address: String) -> SimulatedMember? {
        self.members.first { $0.address == address }
    }

    func isLinkUp(_ a: SimulatedMember, _ b: SimulatedMember) -> Bool {
        !self.cutLinks.contains([a.address, b.address].sorted())
    }

    /// The member that leads and can write, if any.
    var writableLeader: SimulatedMember? { self.members.first { $0.acceptsWrites } }

    /// Starts a client that writes to the writable leader every 10–60 ms.
    func startWriting() {
        guard !self.isWriting else { return }
        self.isWriting = true
        self.writeSoon()
    }

    func stopWriting() {
        self.isWriting = false
    }

    private func writeSoon() {
        self.scheduler.schedule(after: UInt64.random(in: 10...60, using: &self.scheduler.random)) { [weak self] in
            guard let self, self.isWriting else { return }
            _ = self.writableLeader?.write()
            self.writeSoon()
        }
    }

    /// Runs for `milliseconds`, checking after every event.
    func run(_ milliseconds: UInt64) {
        self.scheduler.run(for: milliseconds) { self.check() }
    }

    /// Runs until `condition` holds (checked every 50 ms), at most `milliseconds`; returns whether it held.
    @discardableResult
    func run(upTo milliseconds: UInt64, until condition: () -> Bool) -> Bool {
        var left = milliseconds
        while left > 0 {
            if condition() { return true }
            let step = min(left, 50)
            self.run(step)
            left -= step
        }
        return condition()
    }

    func acknowledged(seq: UInt64, term: UInt64) {
        if let earlier = self.acknowledgedWrites[seq], earlier != term {
            // Asynchronously that is the documented loss (a write acknowledged, then lost in a failover).
            if self.syncReplicas > 0 {
                self.violations.append("\(self.scheduler.now): seq \(seq) acknowledged in term \(earlier) and \(term)")
            } else {
                self.lostAsynchronously += 1
            }
        }
        self.acknowledgedWrites[seq] = term
    }

    /// Every acknowledged write `member`'s journal lacks.
    func missing(in member: SimulatedMember) -> [UInt64] {
        self.acknowledgedWrites.keys.sorted().filter { seq in
            seq > UInt64(member.records.count) || member.records[Int(seq) - 1] != self.acknowledgedWrites[seq]
        }
    }

    func becameLeader(_ member: SimulatedMember) {
        guard self.syncReplicas > 0 else { return }
        let missing = self.missing(in: member)
        if !missing.isEmpty {
            self.violations.append(
                "\(self.scheduler.now): \(member.address) leads without acknowledged seqs \(missing.prefix(5)) "
                    + "(of \(missing.count))")
        }
    }

    private func check() {
        let writable = self.members.filter(\.acceptsWrites)
        if writable.count > 1 {
            self.violations.append("\(self.scheduler.now): writable at once: \(writable.map(\.address))")
        }
    }

    /// Whether every member runs, one leads and writes, and every journal is the leader's.
    var hasConverged: Bool {
        guard let leader = self.writableLeader, self.members.allSatisfy({ $0.life == .running }) else { return false }
        return self.members.allSatisfy { $0.records == leader.records }
    }
}
