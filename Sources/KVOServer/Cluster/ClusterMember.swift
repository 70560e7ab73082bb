// The election's driver (docs/SCALING.md#design): carries out what the member's state machine (MemberStateMachine)
// decides, through a Coordinator (etcd in kvod, in memory in the tests), on a clock, and tells its node (the replication
// side: ClusterNode) of role changes. It owns no timer and no socket: the node's owner calls `tick()` every 250 ms.
import Logging

/// What the election needs of the member it runs for: its position, and someone to carry out a role change.
@MainActor
protocol ClusterMemberHost: AnyObject {
    /// This member's applied seq, the term of its last record and its last registration change.
    var position: MemberPosition { get }
    /// The role changed (the status is updated already): attach or detach replication, run or leave inherited
    /// `onDisconnect` ops.
    func roleChanged(_ change: RoleChange)
    /// Every tick, after the election's own calls: heartbeats, the replication link, inherited ops.
    func tick(now: UInt64)
}

/// One cluster member's election. Loop-owned.
@MainActor
final class ClusterMember {
    let status: ClusterStatus
    private unowned let host: any ClusterMemberHost
    private let coordinator: any Coordinator
    private let clock: any SessionClock
    private let logger: Logger
    private var configuration: ClusterConfiguration { self.status.configuration }
    private(set) var machine: MemberStateMachine
    /// Failures are logged once per kind until something succeeds.
    private var lastEtcdFailure: String?
    /// At shutdown: whether the lease revocation is in flight, and what to do when it is over.
    private(set) var isResigning = false
    private var onResigned: (@MainActor () -> Void)?

    init(
        status: ClusterStatus, host: any ClusterMemberHost, coordinator: any Coordinator, clock: any SessionClock,
        logger: Logger
    ) {
        self.status = status
        self.host = host
        self.coordinator = coordinator
        self.clock = clock
        self.logger = logger
        self.machine = MemberStateMachine(settings: .init(status.configuration))
    }

    /// Every 250 ms: the election's calls that are due, then the host's work.
    func tick() {
        let now = self.clock.nowMilliseconds
        let position = self.host.position
        self.machine.observe(term: self.status.highestTerm)
        self.perform(self.machine.tick(now: now, position: position))
        self.status.leaseProblem =
            "lease not renewed for \(now &- self.machine.lastRenewalSentAt) ms (etcd unreachable?)"
        self.host.tick(now: now)
    }

    /// At shutdown: stops acknowledging and resigns (revokes the lease, which deletes the leader key if it is ours
    /// and our member key at once; best effort). `resigned` runs once that reached etcd or failed.
    func stop() {
        self.coordinator.cancelAll()
        self.perform(self.machine.stop())
    }

    /// Calls `done` once the resignation is over (at once when there is none in flight). The caller bounds the wait.
    func whenResigned(_ done: @escaping @MainActor () -> Void) {
        guard self.isResigning else { return done() }
        self.onResigned = done
    }

    /// Ends the wait for the resignation (it came back, or the caller's bound passed).
    func resigned() {
        self.isResigning = false
        let done = self.onResigned
        self.onResigned = nil
        done?()
    }

    /// As leader of `record.term`: writes the sync set, fenced by the leader key (only this term's leader can).
    func writeSyncSet(_ record: SyncRecord, _ done: @escaping @MainActor (Bool) -> Void) {
        guard self.machine.role == .leader, self.machine.term == record.term, !self.machine.isStopped else {
            return done(false)
        }
        self.coordinator.put(
            key: self.configuration.syncKey, value: record.json, ifKey: self.configuration.leaderKey,
            createdAt: record.term
        ) { [weak self] result in
            switch result {
            case .success(let written):
                self?.etcdSucceeded()
                if written {
                    self?.logger.info(
                        "sync set written",
                        metadata: ["holders": "\(record.holders.joined(separator: ","))", "quorum": "\(record.quorum)"])
                } else {
                    self?.logger.warning("sync set not written: the leader key is not ours")
                }
                done(written)
            case .failure(let error):
                self?.etcdFailed("sync set write", error)
                done(false)
            }
        }
    }

    // MARK: - Carrying out actions

    private func perform(_ actions: [MemberStateMachine.Action]) {
        for action in actions { self.perform(action) }
    }

    private func perform(_ action: MemberStateMachine.Action) {
        switch action {
        case .grantLease(let seconds):
            let sentAt = self.clock.nowMilliseconds
            self.coordinator.grantLease(seconds: seconds) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let granted):
                    self.etcdSucceeded()
                    self.logger.info("etcd lease granted", metadata: ["lease": "\(granted.id)", "ttl": "\(granted.ttl)"])
                    self.perform(self.machine.leaseGranted(id: granted.id, ttl: granted.ttl, sentAt: sentAt))
                case .failure(let error):
                    self.machine.failed(.grant)
                    self.etcdFailed("lease grant", error)
                }
            }
        case .keepAlive(let lease):
            let sentAt = self.clock.nowMilliseconds
            self.coordinator.keepAlive(lease: lease) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let ttl):
                    self.etcdSucceeded()
                    self.perform(self.machine.keptAlive(lease: lease, ttl: ttl, sentAt: sentAt))
                case .failure(let error):
                    self.machine.failed(.renew)
                    self.etcdFailed("lease keepalive", error)
                }
            }
        case .publish(let position, let lease):
            self.coordinator.put(key: self.configuration.memberKey, value: position.json, lease: lease) {
                [weak self] result in
                guard let self else { return }
                switch result {
                case .success: self.machine.published(position, lease: lease)
                case .failure(let error):
                    self.machine.failed(.publish)
                    self.etcdFailed("member publish", error)
                }
            }
        case .readLeader:
            self.coordinator.read(key: self.configuration.leaderKey) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let record):
                    self.etcdSucceeded()
                    self.machine.observe(term: self.status.highestTerm)  // records may have raised it since the tick
                    self.perform(self.machine.leaderRead(record, position: self.host.position))
                case .failure(let error):
                    self.machine.failed(.readLeader)
                    self.etcdFailed("leader key read", error)
                }
            }
        case .readMembers:
            self.coordinator.read(prefix: self.configuration.clusterPrefix) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let entries):
                    self.etcdSucceeded()
                    let (members, sync) = self.parse(entries)
                    self.perform(self.machine.membersRead(members, sync: sync, position: self.host.position))
                case .failure(let error):
                    self.machine.failed(.readMembers)
                    self.etcdFailed("members read", error)
                }
            }
        case .campaign(let lease):
            self.coordinator.createIfAbsent(
                key: self.configuration.leaderKey, value: self.configuration.advertise, lease: lease
            ) { [weak self] result in
                guard let self else { return }
                switch result {
                case .success(let outcome):
                    self.etcdSucceeded()
                    self.perform(
                        self.machine.campaigned(won: outcome.won, leader: outcome.leader, position: self.host.position))
                case .failure(let error):
                    self.machine.failed(.campaign)
                    self.etcdFailed("campaign", error)
                }
            }
        case .writable(let until):
            self.status.writableUntil = until
        case .changeRole(let change):
            self.status.update(role: change.role, term: change.term, leader: change.leader)
            self.logRole(change.reason)
            self.host.roleChanged(change)
        case .deferCampaign(let why):
            self.logger.info("not campaigning", metadata: ["reason": "\(why)", "seq": "\(self.host.position.seq)"])
        case .waitToLead(let why):
            self.status.promotionWait = why
            if let why {
                self.logger.warning(
                    "not campaigning: this member may lack acknowledged writes",
                    metadata: ["reason": "\(why)", "seq": "\(self.host.position.seq)"])
            } else {
                self.logger.notice("may campaign again", metadata: ["seq": "\(self.host.position.seq)"])
            }
        case .leaseExpired(let lease):
            self.logger.warning("etcd lease expired", metadata: ["lease": "\(lease)"])
        case .revoke(let lease):
            self.isResigning = true
            self.coordinator.revoke(lease: lease) { [weak self] _ in self?.resigned() }
        }
    }

    /// The members' positions (by address) and the sync set from a read of the cluster's prefix.
    private func parse(_ entries: [(key: String, value: String)]) -> ([String: MemberPosition], SyncRecord?) {
        var members: [String: MemberPosition] = [:]
        var sync: SyncRecord?
        for entry in entries {
            if entry.key == self.configuration.syncKey {
                sync = SyncRecord(json: entry.value)
                if sync == nil { self.logger.warning("unreadable sync set", metadata: ["value": "\(entry.value)"]) }
            } else if entry.key.hasPrefix(self.configuration.membersPrefix),
                let position = MemberPosition(json: entry.value)
            {
                members[String(entry.key.dropFirst(self.configuration.membersPrefix.count))] = position
            }
        }
        return (members, sync)
    }

    private func logRole(_ why: String) {
        self.logger.notice(
            "cluster role changed",
            metadata: [
                "cluster.role": "\(self.status.role.rawValue)", "cluster.term": "\(self.status.term)",
                "cluster.leader": "\(self.status.leaderAddress ?? "none")", "seq": "\(self.host.position.seq)",
                "cluster.previous.role": "\(self.status.previousRole.rawValue)",
                "cluster.previous.term": "\(self.status.previousTerm)",
                "cluster.previous.leader": "\(self.status.previousLeaderAddress ?? "none")", "reason": "\(why)",
            ])
    }

    // MARK: - etcd failures

    private func etcdFailed(_ call: String, _ error: EtcdError) {
        let kind = "\(call): \(error.description)"
        guard kind != self.lastEtcdFailure else { return }
        self.lastEtcdFailure = kind
        self.logger.warning("etcd call failed", metadata: ["etcd.call": "\(call)", "error": "\(error.description)"])
    }

    private func etcdSucceeded() {
        guard self.lastEtcdFailure != nil else { return }
        self.lastEtcdFailure = nil
        self.logger.notice("etcd reachable again")
    }
}
