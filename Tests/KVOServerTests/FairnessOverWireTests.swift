// A connection whose requests hold the loop past its share of a turn (Protocol/README.md#fairness), against a live
// kvod: pipelined heavy reads and a large batch are answered completely and in order, another connection is answered
// meanwhile, and kvod counts the turns it gave up. No timing is asserted: 200 reads of a 100 KB value take kvod far
// more than one 2 ms share, so it must yield at least once.
import Foundation
import TestSupport
import Testing
import WireProtocol

@Suite struct FairnessOverWireTests {
    @Test func pipelinedHeavyReadsAreAnsweredInOrderAcrossTurns() throws {
        let server = try KVODProcess.start()
        let pipeliner = try Peer(server)
        let other = try Peer(server)
        let value = String(repeating: "v", count: 100_000)
        #expect(try pipeliner.request(1, "set", #"{"path":"big","value":"\#(value)"}"#)["result"]?["seq"] == 1)
        let gets = (2...201).map { Peer.requestText($0, "get", #"{"path":"big"}"#) }
        try pipeliner.send(gets.joined(separator: "\n"))  // one write: kvod reads them together
        // Another connection is answered while the reads go on (or after: either way, answered).
        #expect(try other.request(1, "ping")["id"] == 1)
        for id in 2...201 {
            let response = try pipeliner.receive(timeout: .seconds(30))
            #expect(response["id"] == .int(Int64(id)))
            #expect(response["result"]?["value"]?.stringValue?.utf8.count == 100_000)
        }
        try pipeliner.expectQuiet()
        let stats = try other.request(2, "stats")
        #expect((stats["result"]?["turnsYielded"]?.intValue ?? 0) >= 1, "\(stats)")
    }

    @Test func aLargeBatchIsOneArrayAfterTheTurnsItTook() throws {
        let server = try KVODProcess.start()
        let peer = try Peer(server)
        let value = String(repeating: "w", count: 100_000)
        _ = try peer.request(1, "set", #"{"path":"big","value":"\#(value)"}"#)
        let items = (2...101).map { Peer.requestText($0, "get", #"{"path":"big"}"#) }
        try peer.send("[" + items.joined(separator: ",") + "," + Peer.requestText(102, "set", #"{"path":"n","value":1}"#) + "]")
        let array = try #require(try peer.receive(timeout: .seconds(30)).arrayValue)
        #expect(array.map { $0["id"]?.intValue } == (2...102).map { Int64($0) })
        #expect(array.last?["result"]?["seq"] == 2)
        try peer.expectQuiet()
        #expect((try peer.request(103, "stats")["result"]?["turnsYielded"]?.intValue ?? 0) >= 1)
    }

    /// A query subscription over 30,000 elements is answered over several turns: while its answer is built another
    /// connection is served (it sees `queryFills` at 1) and its sets go on; the subscription's initial window then
    /// holds exactly the sets up to its response's seq. A subscriber that leaves while it waits costs nothing more.
    @Test func aQuerySubscriptionOverALargeCollectionWaitsWhileOthersAreServed() throws {
        let server = try KVODProcess.start()
        let subscriber = try Peer(server)
        let other = try Peer(server)
        for chunk in 0..<3 {
            let values = (chunk * 10_000..<(chunk + 1) * 10_000).map { #"{"score":\#($0)}"# }.joined(separator: ",")
            let inserted = try other.request(chunk + 1, "insert", #"{"path":"players","values":[\#(values)]}"#)
            #expect(inserted["result"]?["seq"] == .int(Int64(chunk + 1)))
        }
        // The 100 lowest (scores 0...99, in order): the ones the other connection raises while the answer is built.
        let lowest = try other.request(10, "get", #"{"path":"players","query":{"orderBy":["score"],"limit":100,"select":["score"]}}"#)
        let lowIDs = try #require(lowest["result"]?["value"]?.arrayValue?.compactMap { $0["$id"]?.intValue })
        #expect(lowIDs.count == 100)
        var scores: [Int64: Int64] = [:]  // $id -> score of each player that may be shown
        let top = try other.request(11, "get", #"{"path":"players","query":{"orderBy":["-score"],"limit":5,"select":["score"]}}"#)
        for entry in top["result"]?["value"]?.arrayValue ?? [] {
            if let id = entry["$id"]?.intValue, let score = entry["score"]?.intValue { scores[id] = score }
        }
        try subscriber.send(Peer.requestText(
            1, "subscribe",
            #"{"path":"players","query":{"where":"score > 50","orderBy":["-score"],"limit":5,"select":["score"]},"options":["initial","new"]}"#))
        var sawFill = false
        var sets: [(seq: Int64, id: Int64, score: Int64, was: Int64)] = []
        for attempt in 0..<100 {
            let stats = try other.request(100 + attempt * 2, "stats")
            guard stats["result"]?["queryFills"]?.intValue == 1 else {
                if sawFill { break }  // answered
                continue  // not read yet
            }
            sawFill = true
            let score = Int64(100_000 + attempt)
            let set = try other.request(101 + attempt * 2, "set", #"{"path":"$\#(lowIDs[attempt]).score","value":\#(score)}"#)
            sets.append((try #require(set["result"]?["seq"]?.intValue), lowIDs[attempt], score, Int64(attempt)))
        }
        #expect(sawFill, "another connection was served while the answer was built")
        let response = try subscriber.receive(timeout: .seconds(120))
        let seq = try #require(response["result"]?["seq"]?.intValue)
        let initial = try subscriber.receive(timeout: .seconds(10))
        var count: Int64 = 30_000 - 51
        for set in sets where set.seq <= seq {
            scores[set.id] = set.score
            if set.was <= 50 { count += 1 }
        }
        let expected = scores.sorted { $0.value > $1.value }.prefix(5).map { JSONValue.object(["$id": .int($0.key), "score": .double(Double($0.value))]) }
        let shown = initial["params"]?["new"]?.arrayValue?.map { entry in
            JSONValue.object(["$id": entry["$id"] ?? .null, "score": .double(entry["score"]?.doubleValue ?? -1)])
        }
        #expect(shown == expected, "\(initial)")
        #expect(initial["params"]?["count"]?.intValue == count)
        #expect(initial["params"]?["initial"] == .bool(true))
        // The sets after its seq come as notifications, in order, the window's top a set's element.
        for set in sets where set.seq > seq {
            let change = try subscriber.receive(timeout: .seconds(10))
            #expect(change["params"]?["seq"]?.intValue == set.seq, "\(change)")
        }
        try subscriber.expectQuiet()

        // One who asks and leaves: its answer is built, then dropped; kvod goes on.
        let leaver = try Peer(server)
        try leaver.send(Peer.requestText(1, "subscribe", #"{"path":"players","query":{"where":"score < 20000","orderBy":["score"]}}"#))
        leaver.close()
        var done = false
        for attempt in 0..<2_000 where !done {
            done = try other.request(1_000 + attempt, "stats")["result"]?["queryFills"]?.intValue == 0
        }
        #expect(done)
        #expect(try other.request(5_000, "ping")["result"] == .string("pong"))

        // In a batch: the array waits for the answer, with the requests after the subscribe performed after it.
        let batcher = try Peer(server)
        try batcher.send("[" + Peer.requestText(1, "ping") + "," + Peer.requestText(
            2, "subscribe", #"{"path":"players","query":{"where":"score BETWEEN {29998, 99999}","orderBy":["score"]},"options":["initial","new"]}"#)
            + "," + Peer.requestText(3, "get", #"{"path":"players","query":{"where":"score BETWEEN {29998, 99999}","select":["score"]}}"#) + "]")
        let array = try #require(try batcher.receive(timeout: .seconds(120)).arrayValue)
        #expect(array.map { $0["id"]?.intValue } == [1, 2, 3])
        #expect(array[2]["result"]?["count"] == .int(2))
        let batchInitial = try batcher.receive()
        #expect(batchInitial["params"]?["count"] == .int(2), "\(batchInitial)")
        #expect(batchInitial["params"]?["new"]?.arrayValue?.count == 2)
        try batcher.expectQuiet()

        // A query in the array's own order (no orderBy) is filled the same way, position by position.
        let ownOrder = try Peer(server)
        try ownOrder.send(Peer.requestText(
            1, "subscribe", #"{"path":"players","query":{"where":"score BETWEEN {29990, 99999}","select":["score"]},"options":["initial","new"]}"#))
        var sawOwnOrderFill = false
        for attempt in 0..<2_000 where !sawOwnOrderFill {
            sawOwnOrderFill = try other.request(6_000 + attempt, "stats")["result"]?["queryFills"]?.intValue == 1
        }
        #expect(sawOwnOrderFill)
        #expect(try ownOrder.receive(timeout: .seconds(120))["result"]?["subscription"] != nil)
        let ownInitial = try ownOrder.receive()
        #expect(ownInitial["params"]?["new"]?.arrayValue?.map { $0["score"]?.doubleValue } == (29_990...29_999).map { Double($0) })
        #expect(ownInitial["params"]?["count"] == .int(10))
    }
}
