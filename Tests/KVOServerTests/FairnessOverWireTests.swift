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
}
