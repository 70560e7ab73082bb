// onDisconnect registrations in a cluster (docs/SCALING.md#presence-across-a-failover), the parts that live outside
// etcd and sockets, driven in process: a leader's replication link gets the whole set at its catch-up and each change
// after it in order with the mutations (and the link's acks are not counted as requests); a leader that cannot write
// leaves a closing session's ops to whoever leads; a follower's set follows the leader's stream and catch-ups; a
// catch-up from before a connection ended carries its registration and its `disconnected` where it was; with
// `--sync-replicas` the response waits for a follower's ack of the change (or times out); the election's tie-break
// by registration change. The
// cluster as a whole, failovers and restarts included, is tested by Tests/cluster/presence_test.py. Also the 1010 a
// leader answers a `since` beyond its seq (writes lost in an asynchronous failover; Tests/cluster/lost_write_test.py).
@testable import KVOServer
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct ClusterPresenceTests {
    static let goingOffline =
        #"{"ops":[{"method":"set","params":{"path":"presence.ada","value":"offline"}},{"method":"insert","params":{"path":"left","value":"ada"}}]}"#

    /// An in-process leader of term 3 whose lease is proven.
    private func leader() -> (server: InProcessServer, log: ClusterLog, status: ClusterStatus) {
        let leader = InProcessLeader(term: 3)
        return (leader.server, leader.log, leader.status)
    }

    /// A follower's replication link from seq 0: the `replicate` response and the catch-up's lines.
    private func link(_ server: InProcessServer) throws -> (RecordingTransport, [JSONValue]) {
        let (_, replica) = server.connect()
        replica.send(InProcessServer.requestText(1, "replicate", #"{"fromSeq":0,"term":3}"#))
        server.flush()
        server.flush()  // the catch-up goes out at the flush after the response
        return (replica, try replica.takeMessages())
    }

    @Test func aFollowersLinkGetsTheSetThenEachChangeInOrderAndItsAcksAreNoRequests() throws {
        let (server, log, _) = self.leader()
        let (ada, adaOut) = server.connect()
        #expect(try server.request(adaOut, 1, "set", #"{"path":"presence.ada","value":"online"}"#)[0]["result"] != nil)
        #expect(try server.request(adaOut, 2, "onDisconnect", Self.goingOffline)[0]["result"]?["ops"] == 2)
        let (replica, catchUp) = try self.link(server)
        #expect(catchUp.first?["result"]?["seq"] == 1)
        // The whole set first (at the follower's seq), then the record it lacks.
        let set = try #require(catchUp.dropFirst().first)
        #expect(set["seq"] == 0 && set["term"] == 3)
        let registration = set["registrations"]?.arrayValue?.first
        #expect(set["registrations"]?.arrayValue?.count == 1 && registration?["connection"] == .string(ada.durableID))
        #expect(registration?["ops"]?.arrayValue?.count == 2)
        #expect(catchUp.dropFirst(2).map { $0["method"] } == ["set"])

        // A change is a record line at the current seq; a cancel too.
        let (bob, bobOut) = server.connect()
        #expect(try server.request(bobOut, 1, "onDisconnect", Self.goingOffline)[0]["result"]?["ops"] == 2)
        #expect(try server.request(bobOut, 2, "onDisconnect", #"{"ops":[]}"#)[0]["result"]?["ops"] == 0)
        let changes = try replica.takeMessages()
        #expect(changes.map { $0["method"] } == ["onDisconnect", "onDisconnect"])
        #expect(changes.map { $0["seq"] } == [1, 1])
        #expect(changes.map { $0["params"]?["connection"] } == [.string(bob.durableID), .string(bob.durableID)])
        #expect(changes[1]["params"]?["ops"] == .json("[]"))
        #expect(log.registrations.count == 1 && log.inherited.isEmpty)  // ada's, which is this member's own
        let metrics = server.context.cluster?.prometheusText(
            appliedSeq: server.graph.seq, source: server.context.replication, now: 0)
        #expect(metrics?.contains("\nkvod_cluster_ondisconnect_registrations 1\n") == true)

        // The follower's acks (and a `record`) are not requests; a client's are.
        let requests = server.context.stats.requests
        for seq in [1, 1, 1] { replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":\#(seq)}}"#) }
        server.flush()
        #expect(server.context.stats.requests == requests)
        _ = try server.request(bobOut, 3, "ping")
        #expect(server.context.stats.requests == requests + 1)

        // Ada leaves: `disconnected`, then the transaction of her ops, at the next seq.
        ada.transportEnded(error: true)
        server.flush()
        let leaving = try replica.takeMessages()
        #expect(leaving.map { $0["method"] } == ["disconnected", "transaction"])
        #expect(leaving[0]["params"]?["connection"] == .string(ada.durableID))
        #expect(leaving.map { $0["seq"] } == [1, 2])
        #expect(log.registrations.isEmpty && log.inherited.isEmpty)
    }

    /// A follower's catch-up from `fromSeq` (`term` the leader's): its lines after the `replicate` response.
    private func catchUp(_ server: InProcessServer, from fromSeq: Int, term: Int = 3) throws -> [JSONValue] {
        let (_, replica) = server.connect()
        replica.send(InProcessServer.requestText(1, "replicate", #"{"fromSeq":\#(fromSeq),"term":\#(term)}"#))
        server.flush()
        server.flush()
        return Array(try replica.takeMessages().dropFirst())
    }

    @Test func aCatchUpFromBeforeAConnectionEndedHasItsRegistrationThenItsDisconnectedWhereItWas() throws {
        let (server, _, _) = self.leader()
        let (ada, adaOut) = server.connect()
        #expect(try server.request(adaOut, 1, "onDisconnect", Self.goingOffline)[0]["result"]?["ops"] == 2)
        let (bob, bobOut) = server.connect()
        #expect(try server.request(bobOut, 1, "set", #"{"path":"x","value":1}"#)[0]["result"]?["seq"] == 1)
        #expect(try server.request(bobOut, 2, "onDisconnect", Self.goingOffline)[0]["result"]?["ops"] == 2)
        ada.transportEnded(error: true)  // `disconnected` after record 1, her ops' transaction is seq 2
        server.flush()
        #expect(try server.request(bobOut, 3, "set", #"{"path":"x","value":3}"#)[0]["result"]?["seq"] == 3)

        // From seq 0: ada is in the set (she was registered there), and her `disconnected` comes before record 2.
        let early = try self.catchUp(server, from: 0)
        let connections = early.first?["registrations"]?.arrayValue?.compactMap { $0["connection"]?.stringValue }
        #expect(Set(connections ?? []) == [ada.durableID, bob.durableID])
        let rest = early.dropFirst()
        #expect(rest.map { $0["method"] } == ["set", "disconnected", "transaction", "set"])
        #expect(rest.map { $0["seq"] } == [1, 1, 2, 3])
        #expect(rest.dropFirst().first?["params"]?["connection"] == .string(ada.durableID))
        // From seq 1 (where she ended): the same from there on.
        let atEnd = try self.catchUp(server, from: 1)
        #expect(atEnd.dropFirst().map { $0["method"] } == ["disconnected", "transaction", "set"])
        // From seq 2 (her transaction is there): she is neither in the set nor ended again.
        let late = try self.catchUp(server, from: 2)
        #expect(late.first?["registrations"]?.arrayValue?.map { $0["connection"] } == [.string(bob.durableID)])
        #expect(late.dropFirst().map { $0["method"] } == ["set"])
    }

    @Test func aFollowerKeepsTheEndsItAppliesForTheCatchUpsItServesWhenItLeads() throws {
        let (server, log, status) = self.leader()
        status.update(role: .follower, term: 4, leader: "127.0.0.1:2")
        let ops: [JSONValue] = [.json(#"{"method":"set","params":{"path":"a","value":1}}"#)]
        log.replicated(.registered(connection: "L/1", ops: ops))
        log.replicated(.disconnected(connection: "L/1"))
        // A catch-up's set that lacks a connection says it ended somewhere before: not kept (its place is unknown).
        log.replicated(.registered(connection: "L/2", ops: ops))
        log.replicated(all: OnDisconnectRegistrations())
        status.update(role: .leader, term: 5, leader: "127.0.0.1:1")
        status.writableUntil = .max
        let lines = try self.catchUp(server, from: 0, term: 5)
        #expect(lines.first?["registrations"]?.arrayValue?.map { $0["connection"] } == ["L/1"])
        #expect(lines.dropFirst().map { $0["method"] } == ["disconnected"])
        #expect(lines.dropFirst().first?["params"]?["connection"] == "L/1")
    }

    @Test func withSyncReplicasTheResponseWaitsForTheFollowersAckOfTheRegistration() throws {
        let leader = InProcessLeader(term: 3, syncReplicas: 1)
        let server = leader.server
        let (replica, catchUp) = try self.link(server)
        #expect(catchUp.dropFirst().first?["registration"] == 0)  // the set after change 0: none yet
        // Until the follower is in the sync set, mutations are refused (1012): its first ack names it, and with
        // every acknowledged mutation (none yet) it joins the set the leader writes to etcd, quorum 1.
        let (_, early) = server.connect()
        #expect(try server.request(early, 1, "set", #"{"path":"a","value":0}"#)[0]["error"]?["code"] == 1012)
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":0,"member":"127.0.0.1:2"}}"#)
        server.flush()
        #expect(leader.syncWrites.records.map(\.holders) == [["127.0.0.1:1", "127.0.0.1:2"]])
        #expect(leader.syncWrites.records.first?.quorum == 1)
        let (_, ada) = server.connect()
        // Held: the change is on the link (number 1, after seq 0), the follower has not acknowledged it.
        #expect(try server.request(ada, 1, "onDisconnect", Self.goingOffline).isEmpty)
        #expect(try server.request(ada, 2, "ping").isEmpty)  // what follows waits in order
        let change = try replica.takeMessages()
        #expect(change.map { $0["method"] } == ["onDisconnect"])
        #expect(change.first?["registration"] == 1 && change.first?["seq"] == 0)
        // An ack of seq 0 alone does not cover it (the change came after record 0); one that names it does.
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":0}}"#)
        server.flush()
        #expect(try ada.takeMessages().isEmpty)
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":0,"registration":1}}"#)
        server.flush()
        let released = try ada.takeMessages()
        #expect(released.map(\.["id"]) == [1, 2] && released[0]["result"]?["ops"] == 2)

        // A follower that does not number its acks (an earlier version) covers a change by acknowledging a later
        // seq: one whose record follows the change in the stream.
        let (_, bob) = server.connect()
        #expect(try server.request(bob, 1, "set", #"{"path":"a","value":1}"#).isEmpty)  // seq 1
        #expect(try server.request(ada, 3, "onDisconnect", #"{"ops":[]}"#).isEmpty)  // change 2, after seq 1
        let (_, carol) = server.connect()
        #expect(try server.request(carol, 1, "set", #"{"path":"a","value":2}"#).isEmpty)  // seq 2
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":1}}"#)
        server.flush()
        #expect(try bob.takeMessages().map(\.["id"]) == [1])
        #expect(try ada.takeMessages().isEmpty)
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":2}}"#)
        server.flush()
        #expect(try ada.takeMessages().map(\.["id"]) == [3])
        #expect(try carol.takeMessages().map(\.["id"]) == [1])

        // A cancel of nothing ships nothing and is not held.
        #expect(try server.request(ada, 4, "onDisconnect", #"{"ops":[]}"#)[0]["result"]?["ops"] == 0)
    }

    @Test func atTheSameSeqTheElectionPrefersTheMemberWithTheLaterRegistrationChange() throws {
        typealias Position = MemberPosition
        let had = Position(seq: 7, term: 3, registration: (term: 5, number: 4))
        let lacked = Position(seq: 7, term: 3, registration: (term: 5, number: 3))
        #expect(had.isAhead(of: lacked, address: "z:1", otherAddress: "a:1"))
        #expect(!lacked.isAhead(of: had, address: "a:1", otherAddress: "z:1"))
        // A later leader's change beats a higher number of an earlier one's; none counts as the earliest.
        #expect(Position(seq: 7, term: 3, registration: (6, 1)).isAhead(of: had, address: "z:1", otherAddress: "a:1"))
        #expect(lacked.isAhead(of: Position(seq: 7, term: 3), address: "z:1", otherAddress: "a:1"))
        // Seq and last term still come first.
        #expect(Position(seq: 8, term: 3).isAhead(of: had, address: "z:1", otherAddress: "a:1"))
        // Published and read back (an earlier version's JSON has no registration).
        #expect(Position(json: had.json) == had && had.json.contains(#""registration":[5,4]"#))
        #expect(Position(json: #"{"seq":7,"term":3}"#) == Position(seq: 7, term: 3))
    }

    @Test func withSyncReplicasARegistrationNoFollowerConfirmsTimesOutAsAMutation() throws {
        let leader = InProcessLeader(term: 3, syncReplicas: 1)
        let server = leader.server
        let (replica, _) = try self.link(server)
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":0,"member":"127.0.0.1:2"}}"#)
        server.flush()
        let (adaSession, ada) = server.connect()
        #expect(try server.request(ada, 1, "onDisconnect", Self.goingOffline).isEmpty)
        server.clock.advance(milliseconds: leader.status.configuration.syncTimeoutMilliseconds + 1)
        leader.source.heartbeat()
        server.flush()
        // No response: the connection is closed with `replication_timeout`, the registration's outcome unknown.
        let messages = try ada.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?["method"] == "closing")
        #expect(messages.first?["params"]?["reason"] == "replication_timeout")
        #expect(adaSession.closeReason == .replicationTimeout)
        // The connection ended on a leader that can write: its ops run, as for any connection that ends.
        ada.finishClosing()
        server.flush()
        #expect(server.graph.seq == 1)
        let (_, reader) = server.connect()
        #expect(try server.request(reader, 1, "get", #"{"path":"left"}"#)[0]["result"]?["value"] == .json(#"["ada"]"#))
    }

    @Test func aLeaderThatCannotWriteLeavesAClosingSessionsOpsToWhoeverLeads() throws {
        let (server, log, status) = self.leader()
        let (ada, adaOut) = server.connect()
        #expect(try server.request(adaOut, 1, "onDisconnect", Self.goingOffline)[0]["result"]?["ops"] == 2)
        status.writableUntil = 0  // the lease is not proven
        ada.transportEnded(error: true)
        server.flush()
        #expect(server.graph.seq == 0)  // nothing ran here
        #expect(log.inherited.ops(of: ada.durableID)?.count == 2)
        // Writable again (Server.runInheritedOnDisconnect does this): they run once.
        status.writableUntil = .max
        #expect(server.core.runOnDisconnect(ofLostConnections: log.inherited.lostConnections) == 0)
        #expect(server.graph.seq == 1 && log.inherited.isEmpty && log.registrations.isEmpty)
        let (_, reader) = server.connect()
        #expect(try server.request(reader, 1, "get", #"{"path":"left"}"#)[0]["result"]?["value"] == .json(#"["ada"]"#))
    }

    @Test func aLeaderAnswersASinceBeyondItsSeqWith1010AndAFollowerAsBehind() throws {
        let (server, _, status) = self.leader()
        let (_, client) = server.connect()
        #expect(try server.request(client, 1, "set", #"{"path":"w","value":1}"#)[0]["result"]?["seq"] == 1)
        let lost = try server.request(client, 2, "subscribe", #"{"path":"w","since":3}"#)[0]["error"]
        #expect(lost?["code"] == 1010)
        #expect(lost?["data"] == .json(#"{"path":"w","since":3,"oldest":1,"seq":1}"#))
        // A bad path is still a bad path; `since` at the leader's seq resumes as always.
        let badPath = try server.request(client, 3, "subscribe", #"{"path":"w..x","since":3}"#)[0]["error"]
        #expect(badPath?["code"] == -32602)
        #expect(try server.request(client, 4, "subscribe", #"{"path":"w","since":1}"#)[0]["result"]?["seq"] == 1)
        // A follower (or a leader that cannot prove its lease) may only be behind: the refusal a client retries.
        status.update(role: .follower, term: 4, leader: "127.0.0.1:2")
        let behind = try server.request(client, 5, "subscribe", #"{"path":"w","since":3}"#)[0]["error"]
        #expect(behind?["code"] == -32602)
    }

    @Test func aFollowersSetFollowsTheStreamAndIsReplacedAtACatchUp() throws {
        let (_, log, status) = self.leader()
        status.update(role: .follower, term: 4, leader: "127.0.0.1:2")
        let ops: [JSONValue] = [.json(#"{"method":"set","params":{"path":"a","value":1}}"#)]
        let other: [JSONValue] = [.json(#"{"method":"set","params":{"path":"a","value":2}}"#)]
        log.replicated(.registered(connection: "L/1", ops: ops))
        log.replicated(.registered(connection: "L/2", ops: ops))
        log.replicated(.registered(connection: "L/3", ops: ops))
        log.replicated(.disconnected(connection: "L/3"))
        #expect(log.inherited.lostConnections.map(\.connection) == ["L/1", "L/2"])
        // A session of this follower that ends (none can register; this one did while it led) is not inherited
        // when the leader's set does not hold it.
        log.orphaned(connection: "F/9", ops: ops)
        #expect(log.inherited.ops(of: "F/9") == nil)
        // The leader's whole set replaces this member's: L/1 gone (it ran or was cancelled there), L/2 changed.
        var leaders = OnDisconnectRegistrations()
        leaders.apply(.registered(connection: "L/2", ops: other))
        leaders.apply(.registered(connection: "L/4", ops: ops))
        log.replicated(all: try OnDisconnectRegistrations(json: leaders.json))
        #expect(log.registrations == leaders && log.inherited == leaders)
        #expect(log.inherited.ops(of: "L/2") == other)
        #expect(throws: RPCError.self) { try OnDisconnectRegistrations(json: .json(#"[{"ops":[]}]"#)) }
    }
}

@MainActor
@Suite struct SyncSetOverTheLinkTests {
    /// A follower's link: `replicate` from seq 0, then its first ack naming it.
    private func follower(_ server: InProcessServer, _ member: String) -> (Session, RecordingTransport) {
        let (session, replica) = server.connect()
        replica.send(InProcessServer.requestText(1, "replicate", #"{"fromSeq":0,"term":3}"#))
        server.flush()
        server.flush()
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":0,"member":"\#(member)"}}"#)
        server.flush()
        return (session, replica)
    }

    @Test func aGoneFollowerLeavesTheSyncSetOnceAnotherHasEveryAcknowledgedWrite() throws {
        let leader = InProcessLeader(term: 3, syncReplicas: 1)
        let server = leader.server
        let (_, b) = self.follower(server, "b:1")
        let (cSession, c) = self.follower(server, "c:1")
        #expect(leader.syncWrites.records.map(\.holders) == [["127.0.0.1:1", "b:1"], ["127.0.0.1:1", "b:1", "c:1"]])
        let (_, writer) = server.connect()
        #expect(try server.request(writer, 1, "set", #"{"path":"a","value":1}"#).isEmpty)  // held
        c.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":1}}"#)
        server.flush()
        #expect(try writer.takeMessages().map(\.["id"]) == [1])  // c's ack released it: b lacks seq 1
        // c goes: it stays in the set while b lacks seq 1, and leaves once b has it.
        cSession.transportEnded(error: false)
        c.finishClosing()
        server.flush()
        leader.source.heartbeat()  // the node's 250 ms tick
        #expect(leader.syncWrites.records.count == 2)
        b.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":1}}"#)
        server.flush()
        leader.source.heartbeat()
        #expect(leader.syncWrites.records.last?.holders == ["127.0.0.1:1", "b:1"])
        #expect(leader.syncWrites.records.last?.quorum == 1)
    }
}

extension SyncSetOverTheLinkTests {
    @Test func aMemberThatMayNotLeadSaysWhyInHelloAndMetrics() throws {
        let leader = InProcessLeader(term: 3, syncReplicas: 1)
        let server = leader.server
        leader.status.update(role: .candidate, term: 3, leader: nil)
        leader.status.promotionWait = "not in the sync set (a:1, b:1): it may lack acknowledged writes"
        let (_, client) = server.connect()
        let hello = try server.request(client, 1, "hello")[0]["result"]
        #expect(hello?["role"] == "candidate" && hello?["promotionWait"] == .string(leader.status.promotionWait ?? ""))
        let metrics = leader.status.prometheusText(appliedSeq: 0, source: leader.source, now: 0)
        #expect(metrics.contains("\nkvod_cluster_promotion_waiting 1\n"))
        leader.status.promotionWait = nil
        #expect(try server.request(client, 2, "hello")[0]["result"]?["promotionWait"] == nil)
        #expect(leader.status.prometheusText(appliedSeq: 0, source: nil, now: 0).contains("\nkvod_cluster_promotion_waiting 0\n"))
    }
}
