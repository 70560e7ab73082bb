// A cluster member's node (docs/SCALING.md): built from the session core, it owns what the member knows (its status,
// term history, replication backlog and links, the mutation log that feeds journal and followers, the snapshots it
// ships and receives) and its election (ClusterMember, through a Coordinator). The Server wires it with one call
// (`Server.joinCluster`), the tests with the same initializer and an in-memory coordinator. The node is the election's
// host: it carries out role changes (attach or detach followers, run or leave inherited `onDisconnect` ops) and keeps
// a follower's replication link to the leader. What a follower does with the lines it gets is in
// ClusterNode+Replication.swift.
import Logging
import ObjectGraph
import Persistence
import UVLoop
import WireProtocol

/// One cluster member's replication side and election. Loop-owned.
@MainActor
final class ClusterNode: ClusterMemberHost {
    let status: ClusterStatus
    let terms: TermHistory
    let source: ReplicationSource
    let log: ClusterLog
    let core: SessionCore
    let logger: Logger
    /// The election (set once, right after the node is made: it needs the node as its host).
    private(set) var member: ClusterMember!
    var graph: Graph { self.core.context.graph }
    /// Opens a follower's replication link (a TCP connection in kvod); nil in a node that never follows.
    private let openLink: ((ReplicationLink.Request) -> ReplicationLink)?
    /// On a follower: the link to the leader, and when to try again after one ended.
    private(set) var link: ReplicationLink?
    private var linkRetryAt: UInt64 = 0
    /// On a follower: a line came from the leader since the last ack (every heartbeat gets one: a sign of life).
    private var ackDue = false
    private var lastAckedSeq: UInt64 = 0
    /// Installs a snapshot received from the leader (kvod writes it and restarts on it).
    var onSnapshotReceived: (([UInt8]) throws -> Void)?

    /// A node for `core`'s graph. `recovered` (the journal records loaded at start, after the snapshot at `baseSeq`)
    /// seed the backlog a follower can resume from; `leftovers` (the `onDisconnect` registrations a crash left in
    /// the journal) run if this member leads before a leader's set replaces them. `shipper` bootstraps followers
    /// behind the backlog (nil: none can be). From now on mutations are refused (1012) unless this member is the
    /// leader and can prove its lease.
    init(
        configuration: ClusterConfiguration, core: SessionCore, coordinator: any Coordinator, logger: Logger,
        durability: Durability?, recovered: [JournalRecord], baseSeq: UInt64,
        leftovers: OnDisconnectRegistrations = OnDisconnectRegistrations(),
        shipper: ((ClusterStatus) -> SnapshotShipper)? = nil,
        openLink: ((ReplicationLink.Request) -> ReplicationLink)? = nil
    ) {
        let context = core.context
        self.core = core
        self.logger = logger
        self.openLink = openLink
        self.status = ClusterStatus(configuration: configuration)
        let mutations = recovered.filter { record in
            (try? OnDisconnectRecord(method: record.method, params: record.params)).flatMap { $0 } == nil
        }
        self.terms = TermHistory(directory: durability?.directory.path, snapshotSeq: baseSeq)
        self.source = ReplicationSource(
            graph: context.graph, status: self.status, capacity: configuration.backlogRecords, recovered: mutations,
            baseSeq: baseSeq, terms: self.terms, sessions: context.sessions, clock: context.clock)
        self.source.shipper = shipper?(self.status)
        self.log = ClusterLog(source: self.source, terms: self.terms, status: self.status)
        // With sync replicas, responses of mutations after this seq wait for followers' acks.
        if configuration.syncReplicas > 0 { context.sessions.release(upTo: context.graph.seq) }
        self.log.durability = durability
        self.log.adopt(leftovers)
        context.mutationLog = self.log
        context.cluster = self.status
        context.replication = self.source
        self.recordClusterWide()
        self.member = ClusterMember(
            status: self.status, host: self, coordinator: coordinator, clock: context.clock, logger: logger)
        self.log.afterJournal = { [unowned self] in self.afterJournal() }
        self.source.writeSyncSet = { [unowned self] record, done in self.member.writeSyncSet(record, done) }
    }

    // MARK: - The election's host

    var position: MemberPosition {
        let seq = self.graph.seq
        return MemberPosition(seq: seq, term: self.terms.term(at: seq), registration: self.log.leaderRegistration)
    }

    func roleChanged(_ change: RoleChange) {
        switch change.role {
        case .leader:
            self.closeLink()
            self.status.leaderSeq = self.graph.seq
            self.source.becameLeader()
            // Before any client's mutation: the previous leader's connections are gone (its lease expired).
            self.runInheritedOnDisconnect()
        case .follower, .candidate:
            if change.previous == .leader {
                self.source.detachAll()
                self.closeSessionsWithOnDisconnect()  // after the role change: their ops are left to the next leader
            }
            if change.role == .follower {
                self.closeLink()
                self.linkRetryAt = 0
            }
        }
    }

    func tick(now: UInt64) {
        self.source.heartbeat()
        self.runInheritedOnDisconnect()  // a leader whose lease was not proven when it won, or came back
        self.maintainLink(now: now)
    }

    /// At shutdown: nothing more is acknowledged; the `onDisconnect` ops of the sessions closed now are left to the
    /// next leader, which holds them from the stream (ClusterLog.orphaned), instead of a tail no follower may get.
    func stop() {
        self.closeLink()
        self.member.stop()
    }

    // MARK: - Inherited onDisconnect ops

    /// On a leader that can write: runs the `onDisconnect` ops it inherited (the previous leader's connections, a
    /// crash's leftovers, its sessions that ended while it could not write), each connection's as one transaction
    /// journaled and shipped like any other, as the single-node crash path does (failures logged and counted).
    func runInheritedOnDisconnect() {
        guard !self.log.inherited.isEmpty, self.status.acceptsWrites(now: self.core.context.clock.nowMilliseconds)
        else { return }
        let inherited = self.log.inherited
        let seq = self.graph.seq
        let failed = self.core.runOnDisconnect(ofLostConnections: inherited.lostConnections)
        self.logger.notice(
            "ran the onDisconnect ops of connections lost with the previous leader",
            metadata: [
                "connections": "\(inherited.count)", "failed": "\(failed)", "seq.before": "\(seq)",
                "seq": "\(self.graph.seq)",
            ])
    }

    /// When this member stops being the leader: closes (`not_leader`) the client sessions with `onDisconnect` ops.
    /// Their ops are not run here (ClusterLog.orphaned): the next leader runs them, since it holds them from the
    /// stream; the clients reconnect, to the new leader, and register again.
    func closeSessionsWithOnDisconnect() {
        for session in self.core.context.sessions.all where session.onDisconnectOps != nil && !session.isReplica {
            session.close(.notLeader)
        }
    }

    // MARK: - The replication link

    private func maintainLink(now: UInt64) {
        guard self.status.role == .follower, let leader = self.status.leaderAddress, let openLink else {
            self.closeLink()
            return
        }
        if let link = self.link {
            // No line (a heartbeat comes every 250 ms) for 3 s: the link is dead even if TCP has not noticed.
            if now &- link.lastHeardAt > 3000 { self.linkEnded("no heartbeat for 3 s") }
            return
        }
        guard now >= self.linkRetryAt else { return }
        let seq = self.graph.seq
        let configuration = self.status.configuration
        let link = openLink(
            ReplicationLink.Request(
                address: leader, term: self.status.term, fromSeq: seq, lastTerm: self.terms.term(at: seq),
                token: configuration.token, member: configuration.advertise))
        link.onLine = { [unowned self] line in
            self.ackDue = true
            try self.handleReplicationLine(line)
        }
        link.onEnd = { [unowned self] why in self.linkEnded(why) }
        self.link = link
    }

    /// After the turn's journal write: a follower acknowledges its applied seq when it applied records or heard a
    /// heartbeat since its last ack (ClusterLog.afterJournal).
    private func afterJournal() {
        guard let link = self.link, self.status.isLinked else { return }
        let seq = self.graph.seq
        guard self.ackDue || seq > self.lastAckedSeq else { return }
        self.ackDue = false
        self.lastAckedSeq = seq
        // Only a number of this link's leader (the term tells): another leader's count means nothing to it.
        let registration = self.log.leaderRegistration.flatMap { $0.term == link.term ? $0.number : nil }
        link.acknowledge(seq, registration: registration)
    }

    private func linkEnded(_ why: String) {
        self.link?.close()
        self.link = nil
        self.status.isLinked = false
        self.linkRetryAt = self.core.context.clock.nowMilliseconds + 500
        self.logger.warning(
            "replication link ended",
            metadata: ["cluster.leader": "\(self.status.leaderAddress ?? "none")", "reason": "\(why)"])
    }

    private func closeLink() {
        self.link?.close()
        self.link = nil
        self.status.isLinked = false
    }
}
