// Resumable subscriptions, in process (InProcessServer.swift): `since` replays what a subscription would have received
// (same shapes, order and seqs) and then continues live with no gap and no duplicate; 1010 when the history cannot
// say; progress on the server's clock. Resuming across a restart: DurabilityTests and the Python clients' tests.
import Testing
import WireProtocol

@MainActor
@Suite struct ResumeTests {
    @Test func resumingReplaysTheGapThenContinuesLive() throws {
        let server = InProcessServer()
        let first = server.peer()
        let setter = server.peer()
        _ = try first.request(1, "subscribe", #"{"path":"x","options":["new","old","prior"],"context":"c"}"#)
        for value in 1...3 { _ = try setter.request(value, "set", #"{"path":"x","value":\#(value)}"#) }
        let seen = try first.receive(6)
        let lastSeen = seen.last?["params"]?["seq"]?.intValue ?? -1
        #expect(lastSeen == 3)
        first.close()
        for value in 4...6 { _ = try setter.request(value, "set", #"{"path":"x","value":\#(value)}"#) }
        let again = server.peer()
        again.send(Peer.requestText(1, "subscribe", #"{"path":"x","options":["new","old","prior"],"context":"c","since":3}"#))
        let response = try again.receive()
        #expect(response["result"]?["seq"] == 6)
        let subscription = response["result"]?["subscription"]
        let replayed = try again.receive(6)
        #expect(replayed.map { $0["params"]?["seq"] } == [4, 4, 5, 5, 6, 6])
        #expect(replayed.map { $0["params"]?["prior"] == true } == [true, false, true, false, true, false])
        #expect(replayed[1]["params"] == .json(#"{"subscription":\#(subscription?.intValue ?? 0),"path":"x","kind":"setting","new":4,"old":3,"context":"c","seq":4}"#))
        #expect(replayed[0]["params"]?["new"] == nil, "a replayed prior notification carries no new either")
        // Live from here: the next change comes once, with the next seq.
        _ = try setter.request(7, "set", #"{"path":"x","value":7}"#)
        #expect(try again.receive(2).map { $0["params"]?["seq"] } == [7, 7])
        try again.expectQuiet()
    }

    @Test func replayIsShapedByTheNewOptions() throws {
        let server = InProcessServer()
        let watcher = server.peer()
        _ = try watcher.request(1, "subscribe", #"{"path":"list","options":["new"]}"#)
        _ = try watcher.request(2, "set", #"{"path":"list","value":[1]}"#)
        _ = try watcher.request(3, "insert", #"{"path":"list","value":2}"#)
        let resumed = server.peer()
        resumed.send(Peer.requestText(1, "subscribe", #"{"path":"list","options":["old"],"since":1}"#))
        let messages = try resumed.receive(2)
        #expect(messages[1]["params"] == .json(#"{"subscription":2,"path":"list","kind":"insertion","indexes":[1],"seq":2}"#))
    }

    @Test func tooOldOrUnknownHistoryIsResyncRequired() throws {
        let server = InProcessServer(historyCapacity: 4)
        let peer = server.peer()
        _ = try peer.request(1, "subscribe", #"{"path":"y","options":["new"]}"#)
        for value in 1...10 { _ = try peer.request(10 + value, "set", #"{"path":"y","value":\#(value)}"#) }
        _ = try peer.receive(10)
        let error = try peer.request(2, "subscribe", #"{"path":"y","options":["new"],"since":2}"#)["error"]
        #expect(error?["code"] == 1010)
        let oldest = error?["data"]?["oldest"]?.intValue ?? 0
        #expect(oldest == 6, "the history keeps the last 4 changes (7 to 10)")
        // Resuming from the oldest available works (on another connection: the replay follows the response).
        let resumer = server.peer()
        let ok = try resumer.request(3, "subscribe", #"{"path":"y","options":["new"],"since":\#(oldest)}"#)
        #expect(ok["result"] != nil)
        #expect(try resumer.receive(Int(10 - oldest)).map { $0["params"]?["new"] } == (Int(oldest) + 1...10).map { .int(Int64($0)) })
        // A path never observed cannot be resumed from the past, only from now.
        #expect(try peer.request(4, "subscribe", #"{"path":"never","since":1}"#)["error"]?["code"] == 1010)
        #expect(try peer.request(5, "subscribe", #"{"path":"never","since":10}"#)["result"] != nil)
        // A since beyond the seq names changes no history holds (lost in a crash under --fsync everysec): resync.
        let future = try peer.request(6, "subscribe", #"{"path":"y","since":99}"#)["error"]
        #expect(future?["code"] == 1010)
        #expect(future?["data"]?["oldest"] == .int(oldest) && future?["data"]?["seq"] == .int(10))
        #expect(try peer.request(8, "subscribe", #"{"path":"y..z","since":99}"#)["error"]?["code"] == -32602)
        #expect(try peer.request(9, "subscribe", #"{"path":"y","since":-1}"#)["error"]?["code"] == -32602)
        #expect(try peer.request(7, "subscribe", #"{"path":"y","since":1,"options":["initial"]}"#)["error"]?["code"] == -32602)
    }

    @Test func theRingEvictsEachPathsOwnEntriesOldestFirst() throws {
        // Two paths share a ring of 4 that wraps: 6 changes (a 1, b 2, a 3, b 4, a 5, b 6) evict seq 1 (a) and 2 (b).
        let server = InProcessServer(historyCapacity: 4)
        let watcher = server.peer()
        let setter = server.peer()  // subscribes to nothing: each request's next message is its response
        _ = try watcher.request(1, "subscribe", #"{"path":"a","options":["new"]}"#)
        _ = try watcher.request(2, "subscribe", #"{"path":"b","options":["new"]}"#)
        for value in 1...6 {
            _ = try setter.request(value, "set", #"{"path":"\#(value % 2 == 1 ? "a" : "b")","value":\#(value)}"#)
        }
        #expect(try setter.request(7, "subscribe", #"{"path":"a","since":0}"#)["error"]?["data"]?["oldest"] == 1)
        #expect(try setter.request(8, "subscribe", #"{"path":"b","since":1}"#)["error"]?["data"]?["oldest"] == 2)
        let resumedA = server.peer()
        #expect(try resumedA.request(1, "subscribe", #"{"path":"a","options":["new"],"since":1}"#)["result"] != nil)
        #expect(try resumedA.receive(2).map { $0["params"]?["new"] } == [3, 5])
        let resumedB = server.peer()
        #expect(try resumedB.request(1, "subscribe", #"{"path":"b","options":["new"],"since":2}"#)["result"] != nil)
        #expect(try resumedB.receive(2).map { $0["params"]?["new"] } == [4, 6])
        // The ring keeps going round: four more changes of a (seq 7 to 10) leave none of b's, and a resumes from 5.
        for value in 7...10 { _ = try setter.request(value + 10, "set", #"{"path":"a","value":\#(value)}"#) }
        #expect(try setter.request(21, "subscribe", #"{"path":"b","since":5}"#)["error"]?["data"]?["oldest"] == 6)
        #expect(try setter.request(22, "subscribe", #"{"path":"a","since":4}"#)["error"]?["data"]?["oldest"] == 5)
        let resumedLate = server.peer()
        #expect(try resumedLate.request(1, "subscribe", #"{"path":"a","options":["new"],"since":5}"#)["result"] != nil)
        #expect(try resumedLate.receive(4).map { $0["params"]?["new"] } == [7, 8, 9, 10])
        try resumedLate.expectQuiet()
    }

    @Test func progressNotificationsKeepTheResumePointFresh() throws {
        let server = InProcessServer()
        let peer = server.peer()
        _ = try peer.request(1, "set", #"{"path":"z","value":1}"#)
        let subscription = try peer.request(2, "subscribe", #"{"path":"z","progress":1}"#)["result"]?["subscription"]
        server.advance(milliseconds: 1250)  // a second without a change, seen at the next 250 ms tick
        let progress = try peer.receive()
        #expect(progress == .json(#"{"jsonrpc":"2.0","method":"progress","params":{"subscription":\#(subscription?.intValue ?? 0),"seq":1}}"#))
        #expect(try peer.request(3, "subscribe", #"{"path":"z","progress":0}"#)["error"]?["code"] == -32602)
    }
}
