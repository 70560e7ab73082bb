// The life of a cluster member as a pure state machine (docs/SCALING.md#design): the lease (granted, renewed every
// lease/3, lost), the position published with it, the leader key read every tick, and the campaign when the key is
// absent and this member may lead. Events come in (a tick, an etcd answer), actions go out (an etcd call to make, a
// role to take, a reason to log); ClusterMember carries them out. No I/O, no clock: times are passed in, so the
// machine is tested with plain values and the whole election in process (ClusterElectionTests).
//
// Who may lead: with `--sync-replicas N` ≥ 1 and a sync set in etcd (SyncRecord), only a holder that sees `quorum`
// holders and is the most advanced of them; any other member waits and says why (`promotionWait`). Without a sync
// set, or asynchronously: any member no live member is ahead of.

/// A member's role after a change, and why it changed.
struct RoleChange: Equatable {
    var role: ClusterRole
    var term: UInt64
    var leader: String?
    /// The role before the change.
    var previous: ClusterRole
    var reason: String
}

/// The election of one member. A value: `ClusterMember` owns one and carries out its actions.
struct MemberStateMachine {
    /// What the machine needs to know of the configuration.
    struct Settings: Equatable {
        var advertise: String
        var leaseSeconds: Int
        /// How long before the lease could expire a leader stops acknowledging.
        var safetyMarginMilliseconds: UInt64
        /// `--sync-replicas`: with N ≥ 1 only a sync set holder may lead.
        var syncReplicas: Int

        init(_ configuration: ClusterConfiguration) {
            self.advertise = configuration.advertise
            self.leaseSeconds = configuration.leaseSeconds
            self.safetyMarginMilliseconds = configuration.safetyMarginMilliseconds
            self.syncReplicas = configuration.syncReplicas
        }
    }

    /// The etcd calls the machine can have in flight, one of each at most.
    enum Call: Hashable {
        case grant, renew, readLeader, publish, readMembers, campaign
    }

    /// What the member must do.
    enum Action: Equatable {
        case grantLease(seconds: Int)
        case keepAlive(lease: Int64)
        case publish(MemberPosition, lease: Int64)
        /// Read the leader key.
        case readLeader
        /// Read everything under the cluster's prefix: the members' positions and the sync set.
        case readMembers
        /// Create the leader key under `lease` if it is absent.
        case campaign(lease: Int64)
        /// A leader may acknowledge mutations until this loop time (0: no longer).
        case writable(until: UInt64)
        case changeRole(RoleChange)
        /// A new reason not to campaign (logged at info).
        case deferCampaign(String)
        /// A new reason this member may not lead although the key is free (logged at warning), or nil once it may.
        case waitToLead(String?)
        /// The lease is gone on etcd's side (logged at warning).
        case leaseExpired(Int64)
        case revoke(lease: Int64)
    }

    /// Why a member that found the leader key absent does not campaign now.
    enum Verdict: Equatable {
        case campaign
        /// Another member is ahead: it will campaign.
        case deferTo(String)
        /// This member may not lead while members holding acknowledged writes may come back.
        case wait(String)
    }

    let settings: Settings
    private(set) var role = ClusterRole.candidate
    private(set) var term: UInt64 = 0
    private(set) var leader: String?
    /// The highest term seen in etcd (records can raise the member's view further: `observe(term:)`).
    private(set) var highestTerm: UInt64 = 0
    private(set) var lease: Int64?
    private(set) var leaseMilliseconds: UInt64
    /// When the last successful renewal (or grant) was sent.
    private(set) var lastRenewalSentAt: UInt64 = 0
    /// Why this member may not lead now (nil: it may, or it has not looked).
    private(set) var promotionWait: String?
    private(set) var isStopped = false
    private var inFlight: Set<Call> = []
    /// The position last published under the current lease.
    private var published: MemberPosition?
    private var lastDeferral: String?

    init(settings: Settings) {
        self.settings = settings
        self.leaseMilliseconds = UInt64(settings.leaseSeconds) * 1000
    }

    /// Whether a call of this kind is in flight.
    func isWaiting(for call: Call) -> Bool { self.inFlight.contains(call) }

    // MARK: - Events

    /// Every 250 ms: the calls that are due (grant or renew the lease, publish a changed position, read the key).
    mutating func tick(now: UInt64, position: MemberPosition) -> [Action] {
        guard !self.isStopped else { return [] }
        var actions: [Action] = []
        guard let lease = self.lease else {
            if self.start(.grant) { actions.append(.grantLease(seconds: self.settings.leaseSeconds)) }
            return actions
        }
        if !self.inFlight.contains(.renew) && now &- self.lastRenewalSentAt >= self.leaseMilliseconds / 3 {
            self.inFlight.insert(.renew)
            actions.append(.keepAlive(lease: lease))
        }
        if self.published != position && self.start(.publish) { actions.append(.publish(position, lease: lease)) }
        if !self.inFlight.contains(.campaign) && self.start(.readLeader) { actions.append(.readLeader) }
        return actions
    }

    /// A call failed (etcd unreachable, an error): it may be made again at the next tick.
    mutating func failed(_ call: Call) {
        self.inFlight.remove(call)
    }

    /// A lease was granted (the grant was sent at `sentAt`).
    mutating func leaseGranted(id: Int64, ttl: Int, sentAt: UInt64) -> [Action] {
        guard !self.isStopped else { return [] }
        self.inFlight.remove(.grant)
        self.lease = id
        self.published = nil
        self.leaseMilliseconds = UInt64(ttl) * 1000
        return [self.renewed(sentAt: sentAt, ttl: ttl)]
    }

    /// A keepalive of `lease` (sent at `sentAt`) was answered with `ttl` (0: the lease is gone).
    mutating func keptAlive(lease: Int64, ttl: Int, sentAt: UInt64) -> [Action] {
        guard !self.isStopped, self.lease == lease else { return [] }
        self.inFlight.remove(.renew)
        guard ttl <= 0 else { return [self.renewed(sentAt: sentAt, ttl: ttl)] }
        self.lease = nil
        self.published = nil
        var actions: [Action] = [.leaseExpired(lease), .writable(until: 0)]
        if self.role == .leader { actions.append(self.change(to: .candidate, term: self.term, leader: nil, "lease expired")) }
        return actions
    }

    /// The position published under `lease`.
    mutating func published(_ position: MemberPosition, lease: Int64) {
        self.inFlight.remove(.publish)
        if self.lease == lease { self.published = position }
    }

    /// What the leader key says now (nil: absent). `position` is this member's now.
    mutating func leaderRead(_ record: LeaderRecord?, position: MemberPosition) -> [Action] {
        self.inFlight.remove(.readLeader)
        guard !self.isStopped else { return [] }
        return self.observe(record, position: position)
    }

    /// The members' published positions (by address) and the sync set, read because the key was absent.
    mutating func membersRead(
        _ members: [String: MemberPosition], sync: SyncRecord?, position: MemberPosition
    ) -> [Action] {
        self.inFlight.remove(.readMembers)
        guard !self.isStopped, self.role != .leader, let lease = self.lease, self.published == position else {
            return []
        }
        let verdict = Self.verdict(
            me: self.settings.advertise, mine: position, members: members, sync: sync,
            syncReplicas: self.settings.syncReplicas)
        var actions: [Action] = []
        switch verdict {
        case .campaign:
            if self.promotionWait != nil { actions.append(.waitToLead(nil)) }
            self.promotionWait = nil
            self.lastDeferral = nil
            if self.start(.campaign) { actions.append(.campaign(lease: lease)) }
        case .deferTo(let why):
            if self.promotionWait != nil { actions.append(.waitToLead(nil)) }
            self.promotionWait = nil
            actions += self.deferCampaign(why)
        case .wait(let why):
            if why != self.promotionWait { actions.append(.waitToLead(why)) }
            self.promotionWait = why
            self.lastDeferral = nil
        }
        return actions
    }

    /// The campaign's outcome: won (with the record, whose revision is the term), or the key someone else holds.
    mutating func campaigned(won: Bool, leader record: LeaderRecord?, position: MemberPosition) -> [Action] {
        self.inFlight.remove(.campaign)
        guard !self.isStopped else { return [] }
        if won, let record { return self.lead(term: record.term) }
        guard let record else { return [] }
        return self.observe(record, position: position)
    }

    /// A replicated record or line of `term` was seen: an older leader's key read later is stale.
    mutating func observe(term: UInt64) {
        self.highestTerm = max(self.highestTerm, term)
    }

    /// At shutdown: nothing more is acknowledged; the lease is revoked (the leader key, if ours, and the member key
    /// go with it).
    mutating func stop() -> [Action] {
        guard !self.isStopped else { return [] }
        self.isStopped = true
        self.inFlight.removeAll()
        var actions: [Action] = [.writable(until: 0)]
        if let lease = self.lease { actions.append(.revoke(lease: lease)) }
        return actions
    }

    // MARK: - Who may lead

    /// Whether `me` at `mine` may campaign, given the live members' positions and the sync set. Asynchronously (or
    /// before any sync set was written): unless a live member is ahead. With `--sync-replicas`: only a holder of
    /// the sync set, seeing `quorum` holders (itself included), and the most advanced of the holders it sees.
    static func verdict(
        me: String, mine: MemberPosition, members: [String: MemberPosition], sync: SyncRecord?, syncReplicas: Int
    ) -> Verdict {
        if syncReplicas > 0, let sync {
            let holders = sync.holders.joined(separator: ", ")
            guard sync.holders.contains(me) else {
                return .wait("not in the sync set (\(holders)): it may lack acknowledged writes; waiting for a holder")
            }
            var seen = [me: mine]
            for (address, position) in members where sync.holders.contains(address) { seen[address] = position }
            seen[me] = mine
            guard seen.count >= sync.quorum else {
                let absent = sync.holders.filter { seen[$0] == nil }.joined(separator: ", ")
                return .wait(
                    "\(seen.count) of the sync set's \(sync.holders.count) members live, \(sync.quorum) needed: "
                        + "waiting for \(absent), which may hold acknowledged writes this member lacks")
            }
            for (address, theirs) in seen.sorted(by: { $0.key < $1.key }) where address != me {
                if theirs.isAhead(of: mine, address: address, otherAddress: me) {
                    return .deferTo("\(address) is ahead (\(theirs))")
                }
            }
            return .campaign
        }
        for (address, theirs) in members.sorted(by: { $0.key < $1.key }) where address != me {
            if theirs.isAhead(of: mine, address: address, otherAddress: me) {
                return .deferTo("\(address) is ahead (\(theirs))")
            }
        }
        return .campaign
    }

    // MARK: - Roles

    private mutating func observe(_ record: LeaderRecord?, position: MemberPosition) -> [Action] {
        guard let record else {
            var actions: [Action] = []
            if self.role == .leader {
                actions.append(self.change(to: .candidate, term: self.term, leader: nil, "leader key gone"))
            } else if self.role == .follower {
                actions.append(self.change(to: .candidate, term: self.term, leader: nil, "leader key gone"))
            }
            guard self.lease != nil else { return actions }
            guard self.published == position else { return actions + self.deferCampaign("publishing our position") }
            if self.start(.readMembers) { actions.append(.readMembers) }
            return actions
        }
        self.lastDeferral = nil
        if self.promotionWait != nil {
            self.promotionWait = nil
            // Someone leads: nothing to wait for.
            return [.waitToLead(nil)] + self.observe(record, position: position)
        }
        if record.address == self.settings.advertise {
            if record.lease == self.lease { return self.lead(term: record.term) }
            if self.role == .leader {
                return [self.change(to: .candidate, term: self.term, leader: nil, "the leader key is not under our lease")]
            }
            return []  // the key is from an earlier run of this member: it expires with its lease
        }
        // An older leader than one already seen: etcd revisions only grow, so this is a stale read.
        guard record.term >= self.highestTerm else { return [] }
        let wasLeader = self.role == .leader
        guard self.role != .follower || self.term != record.term || self.leader != record.address else { return [] }
        return [self.change(to: .follower, term: record.term, leader: record.address, wasLeader ? "another member leads" : "following")]
    }

    private mutating func lead(term: UInt64) -> [Action] {
        guard self.role != .leader || self.term != term else { return [] }
        return [self.change(to: .leader, term: term, leader: self.settings.advertise, "won the election")]
    }

    private mutating func change(to role: ClusterRole, term: UInt64, leader: String?, _ reason: String) -> Action {
        let previous = self.role
        self.role = role
        self.term = term
        self.leader = leader
        self.highestTerm = max(self.highestTerm, term)
        return .changeRole(RoleChange(role: role, term: term, leader: leader, previous: previous, reason: reason))
    }

    private mutating func renewed(sentAt: UInt64, ttl: Int) -> Action {
        self.lastRenewalSentAt = sentAt
        let until = sentAt + UInt64(ttl) * 1000
        let margin = self.settings.safetyMarginMilliseconds
        return .writable(until: until > margin ? until - margin : 0)
    }

    private mutating func deferCampaign(_ why: String) -> [Action] {
        guard why != self.lastDeferral else { return [] }
        self.lastDeferral = why
        return [.deferCampaign(why)]
    }

    /// Marks `call` in flight; false when it already was.
    private mutating func start(_ call: Call) -> Bool {
        self.inFlight.insert(call).inserted
    }
}
