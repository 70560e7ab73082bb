// The election (docs/SCALING.md): a lease granted and kept alive every lease/3, this member's position (applied seq
// and the term of its last record) published under `/kvod/NAME/members/ADDRESS` with the lease, the leader key
// `/kvod/NAME/leader` polled every 250 ms, a campaign (create the key under our lease if it does not exist) when it
// is absent and no live member is ahead of this one, and the role that follows: leader (term = the revision of our
// put; mutations acknowledged only while the lease is proven), follower of the key's address (a replication link to
// it, acknowledging what it journals), or candidate.
import Logging
import UVLoop
import WireProtocol

/// One cluster member's election and replication link. Loop-owned.
@MainActor
final class ClusterMember {
    let status: ClusterStatus
    private let etcd: EtcdClient
    private let loop: EventLoop
    private let logger: Logger
    private unowned let server: Server
    private var configuration: ClusterConfiguration { self.status.configuration }
    private var timer: LoopTimer?
    private var lease: Int64?
    private var leaseMilliseconds: UInt64
    private var lastRenewalSentAt: UInt64 = 0
    private var isGranting = false
    private var isRenewing = false
    private var isPolling = false
    private var isCampaigning = false
    /// The position last published under the member key (nil: not under the current lease), and whether a
    /// publication or a read of the members is in flight.
    private var published: Position?
    private var isPublishing = false
    private var isReadingMembers = false
    /// Why this member last did not campaign (logged when it changes).
    private var lastDeferral: String?
    /// On a follower: a line came from the leader since the last ack (every heartbeat gets one: a sign of life).
    private var ackDue = false
    private var lastAckedSeq: UInt64 = 0
    private(set) var link: ReplicationLink?
    private var linkRetryAt: UInt64 = 0
    /// Failures are logged once per kind until something succeeds.
    private var lastEtcdFailure: String?
    private var isStopped = false
    /// At shutdown: the lease revocation in flight, and what to do when it is over.
    private var isResigning = false
    private var onResigned: (@MainActor () -> Void)?
    private var resignTimer: LoopTimer?

    init(configuration: ClusterConfiguration, server: Server, status: ClusterStatus) {
        self.status = status
        self.server = server
        self.loop = server.loop
        self.logger = server.logger
        self.leaseMilliseconds = UInt64(configuration.leaseSeconds) * 1000
        self.etcd = EtcdClient(
            endpoints: configuration.endpoints, loop: server.loop,
            timeoutMilliseconds: min(1000, max(200, UInt64(configuration.leaseSeconds) * 250)), tls: configuration.etcdTLS)
    }

    func start() throws(UVError) {
        let timer = try LoopTimer(loop: self.loop)
        try timer.start(afterMilliseconds: 0, repeatMilliseconds: 250) { [unowned self] in self.tick() }
        self.timer = timer
    }

    /// At shutdown: stops acknowledging, closes the link, resigns (revokes the lease, which deletes the leader key if
    /// it is ours and our member key at once; best effort), stops the timer.
    func stop() {
        guard !self.isStopped else { return }
        self.isStopped = true
        // Nothing more is acknowledged; the `onDisconnect` ops of the sessions closed now are left to the next
        // leader, which holds them from the stream (ClusterLog.orphaned), instead of a tail no follower may get.
        self.status.writableUntil = 0
        self.timer?.close()
        self.timer = nil
        self.link?.close()
        self.link = nil
        self.etcd.cancelAll()
        guard let lease = self.lease else { return }
        self.isResigning = true
        self.etcd.revoke(lease: lease) { [weak self] _ in self?.resigned() }
    }

    /// Calls `done` once the resignation (ClusterMember.stop) reached etcd or failed, or after a second at most.
    func whenResigned(_ done: @escaping @MainActor () -> Void) {
        guard self.isResigning else { return done() }
        self.onResigned = done
        guard let timer = try? LoopTimer(loop: self.loop) else { return self.resigned() }
        self.resignTimer = timer
        try? timer.start(afterMilliseconds: 1000) { [weak self] in self?.resigned() }
    }

    private func resigned() {
        self.resignTimer?.close()
        self.resignTimer = nil
        self.isResigning = false
        let done = self.onResigned
        self.onResigned = nil
        done?()
    }

    // MARK: - The tick

    private func tick() {
        let now = self.loop.nowMilliseconds
        if self.lease == nil {
            if !self.isGranting { self.grant() }
        } else if !self.isRenewing && now &- self.lastRenewalSentAt >= self.leaseMilliseconds / 3 {
            self.renew()
        }
        if self.lease != nil && !self.isPublishing && self.published != self.position { self.publish() }
        if self.lease != nil && !self.isPolling && !self.isCampaigning { self.poll() }
        self.status.leaseProblem = "lease not renewed for \(now &- self.lastRenewalSentAt) ms (etcd unreachable?)"
        self.server.core.context.replication?.heartbeat()
        self.server.runInheritedOnDisconnect()  // a leader whose lease was not proven when it won, or came back
        self.maintainLink(now: now)
    }

    private func grant() {
        self.isGranting = true
        let sentAt = self.loop.nowMilliseconds
        self.etcd.grantLease(seconds: self.configuration.leaseSeconds) { [weak self] result in
            guard let self, !self.isStopped else { return }
            self.isGranting = false
            switch result {
            case .success(let granted):
                self.etcdSucceeded()
                self.lease = granted.id
                self.published = nil
                self.leaseMilliseconds = UInt64(granted.ttl) * 1000
                self.leaseRenewed(sentAt: sentAt, ttl: granted.ttl)
                self.logger.info("etcd lease granted", metadata: ["lease": "\(granted.id)", "ttl": "\(granted.ttl)"])
            case .failure(let error):
                self.etcdFailed("lease grant", error)
            }
        }
    }

    private func renew() {
        guard let lease = self.lease else { return }
        self.isRenewing = true
        let sentAt = self.loop.nowMilliseconds
        self.etcd.keepAlive(lease: lease) { [weak self] result in
            guard let self, !self.isStopped, self.lease == lease else { return }
            self.isRenewing = false
            switch result {
            case .success(let ttl) where ttl > 0:
                self.etcdSucceeded()
                self.leaseRenewed(sentAt: sentAt, ttl: ttl)
            case .success:
                self.logger.warning("etcd lease expired", metadata: ["lease": "\(lease)"])
                self.lease = nil
                self.status.writableUntil = 0
                if self.status.role == .leader { self.stepDown("lease expired") }
            case .failure(let error):
                self.etcdFailed("lease keepalive", error)
            }
        }
    }

    /// A renewal sent at `sentAt` succeeded: the lease lasts at least until `sentAt + ttl`, so a leader may
    /// acknowledge mutations until that minus the safety margin.
    private func leaseRenewed(sentAt: UInt64, ttl: Int) {
        self.lastRenewalSentAt = sentAt
        let until = sentAt + UInt64(ttl) * 1000
        self.status.writableUntil = until > self.configuration.safetyMarginMilliseconds
            ? until - self.configuration.safetyMarginMilliseconds : 0
    }

    private func poll() {
        self.isPolling = true
        self.etcd.read(key: self.configuration.leaderKey) { [weak self] result in
            guard let self, !self.isStopped else { return }
            self.isPolling = false
            switch result {
            case .success(let record):
                self.etcdSucceeded()
                self.observe(record)
            case .failure(let error):
                self.etcdFailed("leader key read", error)
            }
        }
    }

    // MARK: - Roles

    /// What the leader key says now.
    private func observe(_ record: LeaderRecord?) {
        guard let record else {
            if self.status.role == .leader { self.stepDown("leader key gone") }
            if self.status.role == .follower {
                self.status.update(role: .candidate, term: self.status.term, leader: nil)
                self.logRole("leader key gone")
            }
            self.campaignIfMostAdvanced()
            return
        }
        self.lastDeferral = nil
        if record.address == self.configuration.advertise {
            if record.lease == self.lease {
                self.becomeLeader(term: record.term)
            } else if self.status.role == .leader {
                self.stepDown("the leader key is not under our lease")
            }
            // Otherwise the key is from an earlier run of this member: it expires with its lease.
            return
        }
        self.becomeFollower(of: record)
    }

    // MARK: - Positions (the highest-applied-seq election)

    /// A member's applied seq and the term of its last record (TermHistory), and the last `onDisconnect`
    /// registration change it has (the term of the leader that numbered it, and its number): the election prefers
    /// the highest.
    struct Position: Equatable {
        var seq: UInt64
        var term: UInt64
        var registration: (term: UInt64, number: UInt64)?

        /// Whether `self` (of member `address`) beats `other` (of `otherAddress`): a later last term, else a higher
        /// seq, else a later registration change (a later leader's, else a higher number: under `--sync-replicas`
        /// an acknowledged registration is on a follower, and one that has it must win over one that does not),
        /// else (a tie) the smaller address. A member that publishes no registration (none yet, or an earlier
        /// version) counts as having the earliest.
        func isAhead(of other: Position, address: String, otherAddress: String) -> Bool {
            if self.term != other.term { return self.term > other.term }
            if self.seq != other.seq { return self.seq > other.seq }
            let mine = self.registration ?? (0, 0)
            let theirs = other.registration ?? (0, 0)
            if mine != theirs { return mine > theirs }
            return address < otherAddress
        }

        /// `{"seq":N,"term":T}`, with `"registration":[TERM,NUMBER]` when it has one, as published.
        var json: String {
            guard let registration else { return "{\"seq\":\(self.seq),\"term\":\(self.term)}" }
            return "{\"seq\":\(self.seq),\"term\":\(self.term),\"registration\":[\(registration.term),\(registration.number)]}"
        }

        init(seq: UInt64, term: UInt64, registration: (term: UInt64, number: UInt64)? = nil) {
            self.seq = seq
            self.term = term
            self.registration = registration
        }

        init?(json text: String) {
            guard case .object(let object)? = try? JSONParser.parse(Array(text.utf8)),
                case .int(let seq)? = object["seq"], case .int(let term)? = object["term"], seq >= 0, term >= 0
            else { return nil }
            var registration: (term: UInt64, number: UInt64)?
            if case .array(let pair)? = object["registration"], pair.count == 2, case .int(let rterm) = pair[0],
                case .int(let number) = pair[1], rterm >= 0, number >= 0
            {
                registration = (UInt64(rterm), UInt64(number))
            }
            self.init(seq: UInt64(seq), term: UInt64(term), registration: registration)
        }

        static func == (lhs: Position, rhs: Position) -> Bool {
            lhs.seq == rhs.seq && lhs.term == rhs.term && lhs.registration.map { [$0.term, $0.number] }
                == rhs.registration.map { [$0.term, $0.number] }
        }
    }

    /// This member's position now.
    private var position: Position {
        let seq = self.server.graph.seq
        return Position(
            seq: seq, term: self.server.clusterLog?.terms.term(at: seq) ?? 0,
            registration: self.server.clusterLog?.leaderRegistration)
    }

    private func publish() {
        guard let lease = self.lease else { return }
        let position = self.position
        self.isPublishing = true
        self.etcd.put(key: self.configuration.memberKey, value: position.json, lease: lease) { [weak self] result in
            guard let self, !self.isStopped else { return }
            self.isPublishing = false
            switch result {
            case .success:
                if self.lease == lease { self.published = position }
            case .failure(let error):
                self.etcdFailed("member publish", error)
            }
        }
    }

    /// Campaigns when no live member is ahead of this one (their published positions; ours must be current), so
    /// that the member with every acknowledged mutation (`--sync-replicas`) wins.
    private func campaignIfMostAdvanced() {
        let mine = self.position
        guard self.published == mine else { return self.deferCampaign("publishing our position") }
        guard !self.isReadingMembers else { return }
        self.isReadingMembers = true
        self.etcd.read(prefix: self.configuration.membersPrefix) { [weak self] result in
            guard let self, !self.isStopped else { return }
            self.isReadingMembers = false
            switch result {
            case .success(let members):
                let me = self.configuration.advertise
                for member in members {
                    let address = String(member.key.dropFirst(self.configuration.membersPrefix.count))
                    guard address != me, let theirs = Position(json: member.value) else { continue }
                    if theirs.isAhead(of: mine, address: address, otherAddress: me) {
                        return self.deferCampaign("\(address) is ahead (seq \(theirs.seq), term \(theirs.term))")
                    }
                }
                guard self.status.role != .leader, self.position == mine else { return }
                self.lastDeferral = nil
                self.campaign()
            case .failure(let error):
                self.etcdFailed("members read", error)
            }
        }
    }

    private func deferCampaign(_ why: String) {
        guard why != self.lastDeferral else { return }
        self.lastDeferral = why
        self.logger.info("not campaigning", metadata: ["reason": "\(why)", "seq": "\(self.server.graph.seq)"])
    }

    private func campaign() {
        guard let lease = self.lease, !self.isCampaigning else { return }
        self.isCampaigning = true
        self.etcd.createIfAbsent(
            key: self.configuration.leaderKey, value: self.configuration.advertise, lease: lease
        ) { [weak self] result in
            guard let self, !self.isStopped else { return }
            self.isCampaigning = false
            switch result {
            case .success(let outcome):
                self.etcdSucceeded()
                if outcome.won, let record = outcome.leader {
                    self.becomeLeader(term: record.term)
                } else if let record = outcome.leader {
                    self.observe(record)
                }
            case .failure(let error):
                self.etcdFailed("campaign", error)
            }
        }
    }

    private func becomeLeader(term: UInt64) {
        guard self.status.role != .leader || self.status.term != term else { return }
        self.closeLink()
        self.status.update(role: .leader, term: term, leader: self.configuration.advertise)
        self.status.leaderSeq = self.server.graph.seq
        self.logRole("won the election")
        // Before any client's mutation: the previous leader's connections are gone (its lease expired).
        self.server.runInheritedOnDisconnect()
    }

    private func becomeFollower(of record: LeaderRecord) {
        if record.term < self.status.highestTerm {
            return  // an older leader than one already seen: etcd revisions only grow, so this is a stale read
        }
        let wasLeader = self.status.role == .leader
        guard self.status.update(role: .follower, term: record.term, leader: record.address) else { return }
        if wasLeader {
            self.server.core.context.replication?.detachAll()
            self.server.closeSessionsWithOnDisconnect()
        }
        self.closeLink()
        self.linkRetryAt = 0
        self.logRole(wasLeader ? "another member leads" : "following")
    }

    private func stepDown(_ why: String) {
        self.server.core.context.replication?.detachAll()
        self.status.update(role: .candidate, term: self.status.term, leader: nil)
        self.logRole(why)
        self.server.closeSessionsWithOnDisconnect()  // after the role change: their ops are left to the next leader
    }

    private func logRole(_ why: String) {
        self.logger.notice(
            "cluster role changed",
            metadata: ["cluster.role": "\(self.status.role.rawValue)", "cluster.term": "\(self.status.term)",
                "cluster.leader": "\(self.status.leaderAddress ?? "none")", "seq": "\(self.server.graph.seq)",
                "cluster.previous.role": "\(self.status.previousRole.rawValue)",
                "cluster.previous.term": "\(self.status.previousTerm)",
                "cluster.previous.leader": "\(self.status.previousLeaderAddress ?? "none")", "reason": "\(why)"])
    }

    // MARK: - The replication link

    private func maintainLink(now: UInt64) {
        guard self.status.role == .follower, let leader = self.status.leaderAddress else {
            self.closeLink()
            return
        }
        if let link = self.link {
            // No line (a heartbeat comes every 250 ms) for 3 s: the link is dead even if TCP has not noticed.
            if now &- link.lastHeardAt > 3000 { self.linkEnded("no heartbeat for 3 s") }
            return
        }
        guard now >= self.linkRetryAt else { return }
        let seq = self.server.graph.seq
        let link = ReplicationLink(
            loop: self.loop, address: leader, term: self.status.term, fromSeq: seq,
            lastTerm: self.server.clusterLog?.terms.term(at: seq) ?? 0, token: self.configuration.token,
            tls: self.configuration.peerTLS)
        link.onLine = { [unowned self] line in
            self.ackDue = true
            try self.server.handleReplicationLine(line, status: self.status)
        }
        link.onEnd = { [unowned self] why in self.linkEnded(why) }
        self.link = link
    }

    /// After the turn's journal write: a follower acknowledges its applied seq when it applied records or heard a
    /// heartbeat since its last ack (ClusterLog.afterJournal).
    func afterJournal() {
        guard let link = self.link, self.status.isLinked else { return }
        let seq = self.server.graph.seq
        guard self.ackDue || seq > self.lastAckedSeq else { return }
        self.ackDue = false
        self.lastAckedSeq = seq
        // Only a number of this link's leader (the term tells): another leader's count means nothing to it.
        let registration = self.server.clusterLog?.leaderRegistration.flatMap { $0.term == link.term ? $0.number : nil }
        link.acknowledge(seq, registration: registration)
    }

    private func linkEnded(_ why: String) {
        self.link?.close()
        self.link = nil
        self.status.isLinked = false
        self.linkRetryAt = self.loop.nowMilliseconds + 500
        self.logger.warning("replication link ended", metadata: ["cluster.leader": "\(self.status.leaderAddress ?? "none")", "reason": "\(why)"])
    }

    private func closeLink() {
        self.link?.close()
        self.link = nil
        self.status.isLinked = false
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
