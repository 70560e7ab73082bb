// What a cluster member knows about its role, shared by the election (ClusterMember), the replication link and the
// dispatcher, which refuses mutations with 1012 whenever this member cannot accept them (docs/SCALING.md).
public import TLS
import WireProtocol

/// How a member joins its cluster.
public struct ClusterConfiguration: Sendable {
    /// etcd's client URLs.
    public var endpoints: [EtcdEndpoint]
    /// The cluster's name: its keys live under `/kvod/NAME/`.
    public var name: String
    /// The address other members and clients reach this member's kvod port on (`host:port`).
    public var advertise: String
    /// The etcd lease's TTL.
    public var leaseSeconds: Int
    /// Mutations a leader keeps in memory for followers that reconnect (older ones need a snapshot).
    public var backlogRecords = 100_000
    /// The token a follower presents to its leader when access control is on (read-write, unrestricted).
    public var token: String?
    /// Followers that must have a mutation in their journal before the leader answers it (0: asynchronous).
    public var syncReplicas = 0
    /// The client context of a follower's replication link to its leader (the member's TLS: it checks the leader's
    /// certificate and presents its own); nil: plaintext.
    public var peerTLS: TLSContext?
    /// The client context for `https://` etcd endpoints.
    public var etcdTLS: TLSContext?

    public init(endpoints: [EtcdEndpoint], name: String, advertise: String, leaseSeconds: Int = 5) {
        self.endpoints = endpoints
        self.name = name
        self.advertise = advertise
        self.leaseSeconds = leaseSeconds
    }

    /// The election key.
    var leaderKey: String { "/kvod/\(self.name)/leader" }
    /// Where each member publishes its applied seq and last term (under its lease): `/kvod/NAME/members/ADDRESS`.
    var membersPrefix: String { "/kvod/\(self.name)/members/" }
    var memberKey: String { self.membersPrefix + self.advertise }
    /// The sync set (SyncRecord): which members may lead under `--sync-replicas`. Not leased: it outlives leaders.
    var syncKey: String { "/kvod/\(self.name)/sync" }
    /// Every key of the cluster: what a candidate reads (the members' positions and the sync set).
    var clusterPrefix: String { "/kvod/\(self.name)/" }
    /// How long a mutation's response waits for its sync replicas before the session is closed: the lease time.
    var syncTimeoutMilliseconds: UInt64 { UInt64(self.leaseSeconds) * 1000 }
    /// How long before the lease could expire a leader stops acknowledging mutations: a fifth of the lease, at least
    /// 500 ms.
    var safetyMarginMilliseconds: UInt64 { max(500, UInt64(self.leaseSeconds) * 200) }
}

/// A member's role.
public enum ClusterRole: String, Sendable {
    /// No leader known (at start, during an election, or etcd unreachable since the start).
    case candidate
    /// Replicates the leader's journal and serves reads.
    case follower
    /// Accepts mutations while it can prove its lease.
    case leader
}

/// The member's view of the cluster. Loop-owned.
@MainActor
final class ClusterStatus {
    let configuration: ClusterConfiguration
    private(set) var role = ClusterRole.candidate
    /// The role before the last `update` (what a role change is logged as coming from).
    private(set) var previousRole = ClusterRole.candidate
    /// The term and leader before the last `update`.
    private(set) var previousTerm: UInt64 = 0
    private(set) var previousLeaderAddress: String?
    /// The current leader's term (the etcd revision at which it won); 0 before any is known.
    private(set) var term: UInt64 = 0
    /// The highest term seen (from etcd or in a replicated record): records from an older term are refused.
    private(set) var highestTerm: UInt64 = 0
    /// The leader's advertised address, when one is known.
    private(set) var leaderAddress: String?
    /// As leader: mutations are acknowledged only before this loop time (lease renewal minus the safety margin).
    var writableUntil: UInt64 = 0
    /// Why a leader's lease is not proven, for 1012's `data.reason`.
    var leaseProblem = "lease not granted yet"
    /// On a follower: the leader's seq as last heard on the replication link (lag = leaderSeq - appliedSeq).
    var leaderSeq: UInt64 = 0
    /// Whether the replication link is streaming.
    var isLinked = false
    /// As leader: the followers attached and heard from lately (ReplicationSource), for `--sync-replicas`: those
    /// in the sync set.
    var liveReplicas = 0
    /// Why this member may not lead although the leader key is free (`--sync-replicas`: it is not in the sync set,
    /// or too few of the set's members are live to know it has every acknowledged write); nil when it may.
    var promotionWait: String?

    init(configuration: ClusterConfiguration) {
        self.configuration = configuration
    }

    /// Records a role change; returns whether anything changed.
    @discardableResult
    func update(role: ClusterRole, term: UInt64, leader: String?) -> Bool {
        let changed = role != self.role || term != self.term || leader != self.leaderAddress
        (self.previousRole, self.previousTerm, self.previousLeaderAddress) = (self.role, self.term, self.leaderAddress)
        self.role = role
        self.term = term
        self.leaderAddress = leader
        self.observe(term: term)
        return changed
    }

    /// Raises the highest term seen.
    func observe(term: UInt64) {
        self.highestTerm = max(self.highestTerm, term)
    }

    /// Whether this member may commit a mutation at loop time `now`.
    func acceptsWrites(now: UInt64) -> Bool {
        self.role == .leader && now < self.writableUntil
    }

    /// The 1012 a mutation gets at `now`, or nil when this member accepts it: a leader that can prove its lease,
    /// with at least `syncReplicas` followers attached.
    func mutationRefusal(now: UInt64) -> RPCError? {
        if let refusal = self.leadershipRefusal(now: now) { return refusal }
        let needed = self.configuration.syncReplicas
        guard self.liveReplicas < needed else { return nil }
        let replicas = needed == 1 ? "replica" : "replicas"
        let data: JSONObject = [
            "reason": .string("\(needed) sync \(replicas) needed, \(self.liveReplicas) attached"),
            "term": .int(Int64(self.term)), "leader": .string(self.configuration.advertise),
        ]
        return RPCError(.notLeader, "not the leader", data: .object(data))
    }

    /// The 1012 anything but a leader that can prove its lease answers (a mutation, `replicate`), or nil.
    func leadershipRefusal(now: UInt64) -> RPCError? {
        if self.acceptsWrites(now: now) { return nil }
        var data = JSONObject()
        switch self.role {
        case .leader:
            data["reason"] = .string(self.leaseProblem)
        case .follower:
            data["reason"] = "follower"
            if let leader = self.leaderAddress { data["leader"] = .string(leader) }
        case .candidate:
            data["reason"] = "election"
        }
        data["term"] = .int(Int64(self.term))
        return RPCError(.notLeader, "not the leader", data: .object(data))
    }
}
