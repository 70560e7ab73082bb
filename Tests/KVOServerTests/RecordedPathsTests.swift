// Cluster-wide recorders (Cluster/RecordedPaths.swift, docs/SCALING.md#clients), in process: the history recording a
// path without a subscriber (what a follower does with a record line) and replaying exactly from where it started;
// the announcement of a recorder a subscription starts; and the leader's side of the replication stream — the record
// lines that start a catch-up, the one a follower's `record` notification produces, in order with the mutation
// records. The cluster as a whole is tested by Tests/cluster/resume_test.py.
@testable import KVOServer
import ObjectGraph
import Testing
import WireProtocol

@MainActor
@Suite struct RecordedPathsTests {
    @Test func aPathRecordedWithoutASubscriberReplaysExactlyFromWhereItStarted() throws {
        let server = InProcessServer()
        let history = server.context.subscriptions.history
        let (_, writer) = server.connect()
        _ = try server.request(writer, 1, "set", #"{"path":"a","value":1}"#)
        #expect(history.record(try KeyPath(parsing: "a")))
        #expect(!history.record(try KeyPath(parsing: "a")))  // already recorded
        _ = try server.request(writer, 2, "set", #"{"path":"a","value":2}"#)
        _ = try server.request(writer, 3, "set", #"{"path":"a","value":3}"#)
        let (_, reader) = server.connect()
        let resumed = try server.request(reader, 1, "subscribe", #"{"path":"a","options":["new"],"since":1}"#)
        #expect(resumed.map { $0["params"]?["new"] } == [nil, 2, 3])
        #expect(resumed.dropFirst().map { $0["params"]?["seq"] } == [2, 3])
        // Before the recorder started nothing is known: 1010, from the seq it started at.
        let refused = try server.request(reader, 2, "subscribe", #"{"path":"a","options":["new"],"since":0}"#)
        #expect(refused[0]["error"]?["code"] == 1010 && refused[0]["error"]?["data"]?["oldest"] == 1)
    }

    @Test func onlyASubscriptionThatStartsARecorderAnnouncesIt() throws {
        let server = InProcessServer()
        let history = server.context.subscriptions.history
        var announced: [String] = []
        history.onRecorderStarted = { announced.append($0.description) }
        let (_, first) = server.connect()
        let (_, second) = server.connect()
        _ = try server.request(first, 1, "subscribe", #"{"path":"a.b"}"#)
        _ = try server.request(second, 1, "subscribe", #"{"path":"a.b"}"#)
        #expect(history.record(try KeyPath(parsing: "c")))
        _ = try server.request(first, 2, "subscribe", #"{"path":"c"}"#)
        #expect(announced == ["a.b"])
        #expect(Set(history.recordedPaths.map(\.description)) == ["a.b", "c"])
    }

    /// Idle recorders (no subscriber) beyond the 1,000 kept go least recently used first, whether they became idle by
    /// an unsubscribe, a close or a `record`; a subscriber takes a recorder off the idle list, and a `record` of an
    /// idle one makes it the most recently used. (O(1) per subscription ended: ObjectGraph has the benchmark row.)
    @Test func theLeastRecentlyUsedIdleRecordersGoFirst() throws {
        let server = InProcessServer(historyCapacity: 100)
        let history = server.context.subscriptions.history
        for index in 0..<990 { #expect(history.record(try KeyPath(parsing: "r\(index)"))) }
        let subscriber = server.peer()
        for index in 0..<20 {
            #expect(try subscriber.request(index + 1, "subscribe", #"{"path":"s\#(index)"}"#)["result"] != nil)
        }
        _ = try subscriber.request(100, "subscribe", #"{"path":"r0"}"#)  // r0 has a subscriber now
        #expect(!history.record(try KeyPath(parsing: "r1")))  // r1 becomes the most recently used idle one
        for id in 1...10 { _ = try subscriber.request(200 + id, "unsubscribe", #"{"subscription":\#(id)}"#) }
        // 989 + 10 idle: none dropped yet.
        #expect(history.recordedPaths.count == 1010)
        subscriber.close()  // s10...s19 and r0 become idle, in that order: 1,010 idle, 10 over the limit
        #expect(history.recordedPaths.count == 1010)  // dropped at the turn's end (a budget per turn)
        server.flush()
        let kept = Set(history.recordedPaths.map(\.description))
        #expect(kept.count == 1000)
        // The least recently used went: r2 ... r11 (r0 had a subscriber until the close, r1 was touched).
        #expect((2...11).allSatisfy { !kept.contains("r\($0)") })
        #expect(kept.contains("r0") && kept.contains("r1") && kept.contains("r12"))
        #expect((0..<20).allSatisfy { kept.contains("s\($0)") })
        #expect(history.recordedPaths.suffix(2).map(\.description) == ["s19", "r0"])
        // A turn drops at most its budget: the rest go in the turns after.
        for index in 0..<(SubscriptionHistory.dropBudget + 100) { history.record(try KeyPath(parsing: "t\(index)")) }
        server.flush()
        #expect(history.recordedPaths.count == 1100)
        server.flush()
        #expect(history.recordedPaths.count == 1000 && history.recordedPaths.last?.description == "t355")
    }

    @Test func withoutAHistoryNothingIsRecorded() throws {
        let server = InProcessServer(historyCapacity: 0)
        #expect(!server.context.subscriptions.history.record(try KeyPath(parsing: "a")))
        #expect(server.context.subscriptions.history.recordedPaths.isEmpty)
    }

    @Test func aRecordOutsideAReplicationLinkIsRefused() throws {
        let server = InProcessServer()
        let (_, peer) = server.connect()
        #expect(try server.request(peer, 1, "record", #"{"path":"a"}"#)[0]["error"]?["code"] == -32602)
        #expect(server.context.subscriptions.history.recordedPaths.isEmpty)
    }

    // MARK: - The leader's stream

    /// A leader of term 4 whose lease is proven, wired as joinCluster wires it (the history's announcements go into
    /// the stream: ClusterNode.recordClusterWide).
    private func leader() -> (InProcessServer, ReplicationSource) {
        let leader = InProcessLeader(term: 4)
        return (leader.server, leader.source)
    }

    @Test func aCatchUpStartsWithTheRecordedPathsAndAnnouncementsComeInOrder() throws {
        let (server, _) = self.leader()
        let (_, writer) = server.connect()
        let (_, watcher) = server.connect()
        _ = try server.request(writer, 1, "set", #"{"path":"a","value":1}"#)
        _ = try server.request(watcher, 1, "subscribe", #"{"path":"a"}"#)
        _ = try server.request(writer, 2, "set", #"{"path":"a","value":2}"#)
        let (_, follower) = server.connect()
        let catchUp = try server.request(follower, 1, "replicate", #"{"fromSeq":1,"term":4}"#)
        #expect(catchUp[0]["result"]?["snapshot"] == false)
        // The onDisconnect registrations (none) and the recorded path at the follower's position, then the records
        // after it.
        #expect(catchUp.count == 4)
        #expect(catchUp[1] == ["term": 4, "seq": 1, "registrations": [], "registration": 0])
        #expect(catchUp[2] == [ "term": 4, "seq": 1, "record": "a"])
        #expect(catchUp[3]["seq"] == 2 && catchUp[3]["method"] == "set")
        // A subscription starting a recorder on the leader: announced at the leader's seq, between the records.
        _ = try server.request(watcher, 2, "subscribe", #"{"path":"b"}"#)
        _ = try server.request(writer, 3, "set", #"{"path":"b","value":3}"#)
        let stream = try follower.takeMessages()
        #expect(stream.count == 2)
        #expect(stream[0] == ["term": 4, "seq": 2, "record": "b"])
        #expect(stream[1]["seq"] == 3 && stream[1]["params"]?["path"] == "b")
    }

    @Test func aFollowersRecordIsStartedAndAnnouncedOnce() throws {
        let (server, _) = self.leader()
        let (_, writer) = server.connect()
        _ = try server.request(writer, 1, "set", #"{"path":"x","value":1}"#)
        let (_, follower) = server.connect()
        #expect(try server.request(follower, 1, "replicate", #"{"fromSeq":1,"term":4}"#).count == 2)  // + registrations
        follower.send(#"{"jsonrpc":"2.0","method":"record","params":{"path":"x"}}"#)
        server.flush()
        #expect(try follower.takeMessages() == [["term": 4, "seq": 1, "record": "x"]])
        follower.send(#"{"jsonrpc":"2.0","method":"record","params":{"path":"x"}}"#)
        server.flush()
        #expect(try follower.takeMessages().isEmpty)
        #expect(server.context.subscriptions.history.recordedPaths.map(\.description) == ["x"])
        // The leader replays it like any recorded path.
        _ = try server.request(writer, 2, "set", #"{"path":"x","value":2}"#)
        let (_, reader) = server.connect()
        let resumed = try server.request(reader, 1, "subscribe", #"{"path":"x","options":["new"],"since":1}"#)
        #expect(resumed.dropFirst().map { $0["params"]?["new"] } == [2])
    }
}
