// The pieces of cluster phase 2 that live outside etcd and sockets (docs/SCALING.md): the session core holding a
// session's output for `--sync-replicas` (Sessions.releasedSeq, Session.flush), driven in process; the order the
// election prefers (ClusterMember.Position); and the term history a returning member compares with its leader's
// (TermHistory), on a scratch directory. The cluster as a
// whole is tested by Tests/cluster/failover_test.py.
@testable import KVOServer
import Foundation
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct SyncReplicaTests {
    /// A server whose responses wait for followers from seq 0 on (what joinCluster does with `--sync-replicas`).
    private func holdingServer() -> InProcessServer {
        let server = InProcessServer()
        server.context.sessions.release(upTo: server.graph.seq)
        return server
    }

    @Test func aMutationsResponseAndWhatFollowsItWaitForTheRelease() throws {
        let server = self.holdingServer()
        let (_, watcher) = server.connect()
        let (_, writer) = server.connect()
        _ = try server.request(watcher, 1, "subscribe", #"{"path":"a","options":["new"]}"#)
        // Reads before any mutation are not held.
        #expect(try server.request(writer, 1, "ping")[0]["result"] == "pong")
        #expect(try server.request(writer, 2, "set", #"{"path":"a","value":1}"#).isEmpty)
        // Other sessions' notifications go out as the mutation commits; the writer's next response waits in order.
        #expect(try watcher.takeMessages().map { $0["params"]?["new"] } == [1])
        #expect(try server.request(writer, 3, "get", #"{"path":"a"}"#).isEmpty)
        server.context.sessions.release(upTo: 1)
        server.flush()
        let released = try writer.takeMessages()
        #expect(released.map(\.["id"]) == [2, 3])
        #expect(released[0]["result"]?["seq"] == 1 && released[1]["result"]?["value"] == 1)
    }

    @Test func aReleaseBelowTheSessionsLastMutationKeepsHoldingIt() throws {
        let server = self.holdingServer()
        let (_, writer) = server.connect()
        writer.send(InProcessServer.requestText(1, "set", #"{"path":"a","value":1}"#))
        writer.send(InProcessServer.requestText(2, "set", #"{"path":"b","value":2}"#))
        server.flush()
        server.context.sessions.release(upTo: 1)
        server.flush()
        #expect(try writer.takeMessages().isEmpty)
        server.context.sessions.release(upTo: 2)
        server.flush()
        #expect(try writer.takeMessages().map(\.["id"]) == [1, 2])
    }

    @Test func aResponseHeldTooLongIsDroppedWithItsConnection() throws {
        let server = self.holdingServer()
        let (writerSession, writer) = server.connect()
        #expect(try server.request(writer, 1, "set", #"{"path":"a","value":1}"#).isEmpty)
        server.clock.advance(milliseconds: 100)
        #expect(server.context.sessions.expireHeld(before: server.clock.nowMilliseconds - 500).isEmpty)
        let expired = server.context.sessions.expireHeld(before: server.clock.nowMilliseconds)
        #expect(expired.map(\.id) == [writerSession.id])
        for session in expired { session.close(.replicationTimeout) }
        server.flush()
        let messages = try writer.takeMessages()
        try #require(messages.count == 1)
        #expect(messages[0]["method"] == "closing" && messages[0]["params"]?["reason"] == "replication_timeout")
        #expect(server.context.stats.closes[.replicationTimeout] == 1)
    }

    @Test func aClosingSessionDropsItsHeldOutput() throws {
        let server = self.holdingServer()
        let (writerSession, writer) = server.connect()
        #expect(try server.request(writer, 1, "set", #"{"path":"a","value":1}"#).isEmpty)
        writerSession.close(.clientClosed)
        server.context.sessions.release(upTo: 1)
        server.flush()
        #expect(try writer.takeMessages().isEmpty)
    }

    // MARK: - Pipelining (issue 23: a session released by a seq below its later mutation was never flushed again)

    @Test func aReleaseBetweenTwoWritesInDifferentTurnsHoldsTheSecondAndThenSendsBoth() throws {
        let server = self.holdingServer()
        let (_, writer) = server.connect()
        writer.send(InProcessServer.requestText(1, "set", #"{"path":"a","value":1}"#))
        server.flush()
        // The first write is confirmed in the same turn as the second arrives: the session comes off the held list
        // with its output still waiting for seq 2.
        server.context.sessions.release(upTo: 1)
        writer.send(InProcessServer.requestText(2, "set", #"{"path":"a","value":2}"#))
        server.flush()
        #expect(try writer.takeMessages().isEmpty)
        server.context.sessions.release(upTo: 2)
        server.flush()
        #expect(try writer.takeMessages().map(\.["id"]) == [1, 2])
        // And the session goes on as usual.
        #expect(try server.request(writer, 3, "ping").map(\.["id"]) == [3])
    }

    @Test func partialReleasesWithReadsBetweenWritesKeepTheOrder() throws {
        let server = self.holdingServer()
        let (_, writer) = server.connect()
        writer.send(InProcessServer.requestText(1, "set", #"{"path":"a","value":1}"#))
        server.flush()
        writer.send(InProcessServer.requestText(2, "get", #"{"path":"a"}"#))
        server.flush()
        server.context.sessions.release(upTo: 1)
        writer.send(InProcessServer.requestText(3, "set", #"{"path":"b","value":2}"#))
        writer.send(InProcessServer.requestText(4, "ping"))
        server.flush()
        writer.send(InProcessServer.requestText(5, "set", #"{"path":"c","value":3}"#))
        server.context.sessions.release(upTo: 2)
        server.flush()
        #expect(try writer.takeMessages().isEmpty)  // 5 (seq 3) is still unconfirmed
        server.context.sessions.release(upTo: 3)
        server.flush()
        let messages = try writer.takeMessages()
        #expect(messages.map(\.["id"]) == [1, 2, 3, 4, 5])
        #expect(messages[1]["result"]?["value"] == 1 && messages[4]["result"]?["seq"] == 3)
    }

    @Test func batchesAndTransactionsInFlightComeBackInOrder() throws {
        let server = self.holdingServer()
        let (_, writer) = server.connect()
        writer.send(
            "[" + InProcessServer.requestText(1, "set", #"{"path":"a","value":1}"#) + ","
                + InProcessServer.requestText(2, "get", #"{"path":"a"}"#) + "]")
        server.flush()
        server.context.sessions.release(upTo: 1)
        writer.send(
            InProcessServer.requestText(
                3, "transaction",
                #"{"ops":[{"method":"set","params":{"path":"b","value":1}},{"method":"set","params":{"path":"c","value":[]}}]}"#))
        server.flush()
        server.context.sessions.release(upTo: 1)  // the same seq again: nothing changes
        writer.send(
            "[" + InProcessServer.requestText(4, "insert", #"{"path":"c","value":5}"#) + ","
                + InProcessServer.requestText(5, "ping") + "]")
        server.flush()
        #expect(try writer.takeMessages().isEmpty)
        server.context.sessions.release(upTo: 2)
        server.flush()
        #expect(try writer.takeMessages().isEmpty)
        server.context.sessions.release(upTo: 3)
        server.flush()
        let messages = try writer.takeMessages()
        try #require(messages.count == 3)
        #expect(messages[0].arrayValue?.map(\.["id"]) == [1, 2])
        #expect(messages[1]["id"] == 3 && messages[1]["result"]?["seq"] == 2)
        #expect(messages[2].arrayValue?.map(\.["id"]) == [4, 5])
    }

    @Test func aSessionReleasedAndHeldAgainStillTimesOutWithReplicationTimeout() throws {
        let server = self.holdingServer()
        let (writerSession, writer) = server.connect()
        writer.send(InProcessServer.requestText(1, "set", #"{"path":"a","value":1}"#))
        server.flush()
        server.clock.advance(milliseconds: 10)
        server.context.sessions.release(upTo: 1)
        writer.send(InProcessServer.requestText(2, "set", #"{"path":"a","value":2}"#))
        server.flush()
        server.clock.advance(milliseconds: 100)
        let expired = server.context.sessions.expireHeld(before: server.clock.nowMilliseconds)
        #expect(expired.map(\.id) == [writerSession.id])
        for session in expired { session.close(.replicationTimeout) }
        server.flush()
        let messages = try writer.takeMessages()
        #expect(messages.map { $0["params"]?["reason"] } == ["replication_timeout"])
        // Nothing is left on the held list: a later release lists nobody.
        #expect(server.context.sessions.expireHeld(before: .max).isEmpty)
    }

    @Test func aLeadersAcksReleaseWritesAndOnDisconnectInFlightInOrder() throws {
        let leader = InProcessLeader(term: 3, syncReplicas: 1)
        let server = leader.server
        let (_, replica) = server.connect()
        replica.send(InProcessServer.requestText(1, "replicate", #"{"fromSeq":0,"term":3}"#))
        server.flush()
        server.flush()
        // Its first ack names it: with every acknowledged mutation (none yet) it joins the sync set.
        replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":0,"member":"127.0.0.1:2"}}"#)
        server.flush()
        _ = try replica.takeMessages()
        func ack(_ seq: Int, registration: Int? = nil) {
            let number = registration.map { #","registration":\#($0)"# } ?? ""
            replica.send(#"{"jsonrpc":"2.0","method":"ack","params":{"seq":\#(seq)\#(number)}}"#)
        }
        let (_, writer) = server.connect()
        writer.send(InProcessServer.requestText(1, "set", #"{"path":"a","value":1}"#))
        server.flush()
        // The follower confirms seq 1 in the turn the next write and an onDisconnect arrive.
        ack(1)
        writer.send(InProcessServer.requestText(2, "set", #"{"path":"a","value":2}"#))
        writer.send(InProcessServer.requestText(3, "onDisconnect", #"{"ops":[{"method":"set","params":{"path":"gone","value":true}}]}"#))
        server.flush()
        #expect(try writer.takeMessages().isEmpty)
        ack(2)
        server.flush()
        #expect(try writer.takeMessages().isEmpty)  // the registration is not confirmed yet
        writer.send(InProcessServer.requestText(4, "get", #"{"path":"a"}"#))
        ack(2, registration: 1)
        server.flush()
        let messages = try writer.takeMessages()
        #expect(messages.map(\.["id"]) == [1, 2, 3, 4])
        #expect(messages[3]["result"]?["value"] == 2)
    }

    /// Random pipelines (writes, reads, batches, transactions; a turn ends anywhere; releases of any seq reached so
    /// far, in between): once every seq is released, each session has every response, in the order it sent them.
    @Test(arguments: 0..<40) func randomPipelinesAllGetTheirResponsesInOrder(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let server = self.holdingServer()
        let writers = (0..<3).map { _ in server.connect().1 }
        var sent = Array(repeating: [Int](), count: writers.count)
        var received = Array(repeating: [Int](), count: writers.count)
        var nextID = 1
        func request(_ id: Int) -> String {
            switch random.next() % 5 {
            case 0: InProcessServer.requestText(id, "get", #"{"path":"a"}"#)
            case 1: InProcessServer.requestText(id, "ping")
            case 2:
                InProcessServer.requestText(
                    id, "transaction", #"{"ops":[{"method":"set","params":{"path":"b","value":\#(id)}}]}"#)
            default: InProcessServer.requestText(id, "set", #"{"path":"a","value":\#(id)}"#)
            }
        }
        func collect() throws {
            for (index, writer) in writers.enumerated() {
                for message in try writer.takeMessages() {
                    let responses = message.arrayValue ?? [message]
                    received[index] += responses.compactMap { $0["id"].flatMap { if case .int(let id) = $0 { Int(id) } else { nil } } }
                }
            }
        }
        for _ in 0..<60 {
            let index = Int(random.next() % UInt64(writers.count))
            if random.next() % 4 == 0 {
                let ids = [nextID, nextID + 1]
                nextID += 2
                writers[index].send("[" + request(ids[0]) + "," + request(ids[1]) + "]")
                sent[index] += ids
            } else {
                writers[index].send(request(nextID))
                sent[index].append(nextID)
                nextID += 1
            }
            if random.next() % 3 == 0 {
                server.context.sessions.release(upTo: random.next() % (server.graph.seq + 1))
            }
            if random.next() % 2 == 0 { server.flush() }
            try collect()
        }
        server.context.sessions.release(upTo: server.graph.seq)
        server.flush()
        try collect()
        #expect(received == sent)
    }

    @Test func withoutSyncReplicasNothingIsHeld() throws {
        let server = InProcessServer()
        let (_, writer) = server.connect()
        #expect(try server.request(writer, 1, "set", #"{"path":"a","value":1}"#)[0]["result"]?["seq"] == 1)
    }

    @Test func anAckOutsideAReplicationLinkIsRefused() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        #expect(try server.request(peer, 1, "ack", #"{"seq":1}"#)[0]["error"]?["code"] == -32602)
    }

    // MARK: - The election's order and the term history

    @Test func aLaterLastTermBeatsAHigherSeqAndTiesGoToTheSmallerAddress() throws {
        typealias Position = MemberPosition
        let oldLeaderTail = Position(seq: 105, term: 3)
        let newLeader = Position(seq: 101, term: 9)
        #expect(newLeader.isAhead(of: oldLeaderTail, address: "b:1", otherAddress: "a:1"))
        #expect(!oldLeaderTail.isAhead(of: newLeader, address: "a:1", otherAddress: "b:1"))
        #expect(Position(seq: 7, term: 3).isAhead(of: Position(seq: 6, term: 3), address: "z:1", otherAddress: "a:1"))
        let tie = Position(seq: 7, term: 3)
        #expect(tie.isAhead(of: tie, address: "10.0.0.1:7070", otherAddress: "10.0.0.2:7070"))
        #expect(!tie.isAhead(of: tie, address: "10.0.0.2:7070", otherAddress: "10.0.0.1:7070"))
        #expect(Position(json: tie.json) == tie)
        #expect(Position(json: #"{"seq":-1,"term":2}"#) == nil && Position(json: "garbage") == nil)
    }

    @Test func theTermOfASeqIsTheLastEntryAtOrBeforeIt() throws {
        let history = TermHistory(directory: nil, snapshotSeq: 0)
        #expect(history.term(at: 0) == 0 && history.term(at: 7) == 0)
        history.record(term: 3, seq: 1)
        history.record(term: 3, seq: 2)
        history.record(term: 8, seq: 5)
        #expect(history.json == [[3, 1], [8, 5]])
        #expect(history.term(at: 0) == 0)
        #expect(history.term(at: 1) == 3 && history.term(at: 4) == 3)
        #expect(history.term(at: 5) == 8 && history.term(at: 100) == 8)
        // A record at a seq an entry already starts at (a tail lost in a crash, rewritten by a later term) replaces it.
        history.record(term: 11, seq: 5)
        #expect(history.json == [[3, 1], [11, 5]])
    }

    @Test func theHistorySurvivesARestart() throws {
        let directory = try ScratchDirectory("terms")
        let history = TermHistory(directory: directory.path, snapshotSeq: 0)
        history.record(term: 3, seq: 1)
        history.record(term: 9, seq: 40)
        let reloaded = TermHistory(directory: directory.path, snapshotSeq: 0)
        #expect(reloaded.json == [[3, 1], [9, 40]])
    }

    @Test func aBootstrapsHistoryIsAdoptedOnlyWithItsSnapshot() throws {
        let directory = try ScratchDirectory("terms")
        let history = TermHistory(directory: directory.path, snapshotSeq: 0)
        history.record(term: 3, seq: 1)
        history.record(term: 5, seq: 90)  // a tail the new leader does not have
        let leaders: [(term: UInt64, firstSeq: UInt64)] = [(3, 1), (7, 60), (12, 200)]
        // The install did not happen (the start loads a snapshot at another seq): the pending history is dropped.
        history.prepareBootstrap(leaderEntries: leaders, seq: 150)
        #expect(TermHistory(directory: directory.path, snapshotSeq: 0).json == [[3, 1], [5, 90]])
        // It did: the leader's entries up to the snapshot's seq become this member's.
        history.prepareBootstrap(leaderEntries: leaders, seq: 150)
        let adopted = TermHistory(directory: directory.path, snapshotSeq: 150)
        #expect(adopted.json == [[3, 1], [7, 60]])
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/cluster-terms.next"))
        #expect(TermHistory(directory: directory.path, snapshotSeq: 150).json == [[3, 1], [7, 60]])
    }
}

