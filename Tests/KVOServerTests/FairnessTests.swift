// A session's share of a loop turn (Protocol/README.md#fairness): requests past it wait for the next turn, with the
// session's reading paused, and other sessions are served in between; nothing is lost, reordered or answered twice.
// In process, on a manual clock that moves at each reading, so the turns fall where the test says.
@testable import KVOServer
import ObjectGraph
import Testing
import WireProtocol

@MainActor
@Suite struct FairnessTests {
    /// A server whose clock moves `milliseconds` at each reading: a request that reads it looks that long.
    private func server(millisecondsPerReading: UInt64 = 1) -> InProcessServer {
        let server = InProcessServer()
        server.clock.nanosecondsPerReading = millisecondsPerReading * 1_000_000
        return server
    }

    private func sets(_ ids: ClosedRange<Int>, path: String = "x") -> [String] {
        ids.map { InProcessServer.requestText($0, "set", #"{"path":"\#(path)","value":\#($0)}"#) }
    }

    @Test func aLongReadIsAnsweredOverSeveralTurnsInOrderWhileOthersAreServed() throws {
        let server = self.server()
        let (_, pipeliner) = server.connect()
        let (_, other) = server.connect()
        pipeliner.sendRead(self.sets(1...200))
        server.flush()
        let first = try pipeliner.takeMessages()
        // The clock is read at the read's first request and every 16 requests, and moves 1 ms each time: the 2 ms
        // share ends after 32 requests.
        #expect(first.map { $0["id"]?.intValue } == Array(1...32))
        #expect(pipeliner.isReadingPaused)
        #expect(server.context.stats.turnsYielded == 1)
        // Between the turns another connection is served, and sees the state so far.
        let read = try server.request(other, 1, "get", #"{"path":"x"}"#)
        #expect(read.first?["result"]?["value"] == 32)
        var answered = first.count
        var turns = 1
        while server.nextTurn() || answered < 200 {
            answered += try pipeliner.takeMessages().count
            turns += 1
            #expect(turns < 20)
            if turns >= 20 { break }
        }
        answered += try pipeliner.takeMessages().count
        #expect(answered == 200)
        #expect(!pipeliner.isReadingPaused)
        #expect(try server.request(other, 2, "get", #"{"path":"x"}"#).first?["result"]?["value"] == 200)
    }

    @Test func theRestOfAReadKeepsItsOrderAcrossTurns() throws {
        let server = self.server()
        let (_, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...100))
        server.flush()
        var ids = try pipeliner.takeMessages().compactMap { $0["id"]?.intValue }
        for _ in 0..<10 where pipeliner.isReadingPaused {
            server.nextTurn()
            ids += try pipeliner.takeMessages().compactMap { $0["id"]?.intValue }
        }
        #expect(ids == Array(1...100))
        #expect(server.log.records.map(\.seq) == Array(1...100))
    }

    @Test func aBatchGoesOnAtTheNextTurnAndIsAnsweredWithOneArrayThenItsInitials() throws {
        let server = self.server()
        let (_, peer) = server.connect()
        let (_, writer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"y","value":"v"}"#)
        let subscribe = InProcessServer.requestText(2, "subscribe", #"{"path":"y","options":["initial","new"]}"#)
        peer.send("[" + ([subscribe] + self.sets(3...102)).joined(separator: ",") + "]")
        server.flush()
        #expect(try peer.takeMessages().isEmpty)  // the array is not cut: nothing yet
        #expect(peer.isReadingPaused)
        // Another connection's change to y between the turns: its notification comes before the batch's array.
        _ = try server.request(writer, 1, "set", #"{"path":"y","value":"w"}"#)
        for _ in 0..<20 where peer.isReadingPaused { server.nextTurn() }
        #expect(!peer.isReadingPaused)
        let messages = try peer.takeMessages()
        #expect(messages.count == 3)
        #expect(messages[0]["method"] == "change" && messages[0]["params"]?["new"] == "w")
        let array = try #require(messages[1].arrayValue)
        #expect(array.map { $0["id"]?.intValue } == Array(2...102))
        // The initial notification follows the array, with the state at the subscribe's seq (before the writer's).
        #expect(messages[2]["params"]?["initial"] == true && messages[2]["params"]?["new"] == "v")
        #expect(server.context.stats.turnsYielded >= 2)
    }

    @Test func aBatchsInitialNotificationsGoOnOverTurnsAfterItsArrayInBatchOrder() throws {
        let server = self.server()
        let (_, peer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"y","value":"v"}"#)
        let subscribes = (2...61).map {
            InProcessServer.requestText($0, "subscribe", #"{"path":"y","options":["initial"],"context":\#($0)}"#)
        }
        peer.send("[" + subscribes.joined(separator: ",") + "]")
        server.flush()
        var messages = try peer.takeMessages()
        for _ in 0..<20 where peer.isReadingPaused {
            server.nextTurn()
            messages += try peer.takeMessages()
        }
        #expect(!peer.isReadingPaused)
        #expect(messages.first?.arrayValue?.count == 60)
        #expect(messages.dropFirst().map { $0["params"]?["context"]?.intValue } == (2...61).map { Int64($0) })
        #expect(messages.dropFirst().allSatisfy { $0["params"]?["initial"] == true })
        #expect(server.context.stats.turnsYielded >= 3)
    }

    @Test func anOrderlyEndWhileRequestsWaitIsActedOnAfterTheyAreAnswered() throws {
        let server = self.server()
        let (session, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...100))
        pipeliner.end()
        server.flush()
        #expect(session.closeReason == nil)
        for _ in 0..<10 where session.closeReason == nil { server.nextTurn() }
        #expect(session.closeReason == .clientClosed)
        #expect(try pipeliner.takeMessages().compactMap { $0["id"]?.intValue } == Array(1...100))
    }

    @Test func aLineTooLongWhileRequestsWaitComesAfterTheirResponses() throws {
        let server = self.server()
        let (session, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...60))
        session.transportReceivedTooLong(limit: 1024)
        server.flush()
        for _ in 0..<10 where session.closeReason == nil { server.nextTurn() }
        #expect(session.closeReason == .lineTooLong)
        let messages = try pipeliner.takeMessages()
        #expect(messages.prefix(60).compactMap { $0["id"]?.intValue } == Array(1...60))
        #expect(messages.dropFirst(60).first?["error"]?["code"] == 1009)
    }

    @Test func aSessionClosedWhileItsRequestsWaitDropsThem() throws {
        let server = self.server()
        let (session, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...100))
        server.flush()
        let answered = try pipeliner.takeMessages().count
        session.close(.serverShutdown)
        #expect(server.nextTurn() == false)
        #expect(server.log.records.count == answered)  // nothing after the close was performed
    }

    @Test func aStillClockNeverYields() throws {
        let server = InProcessServer()
        let (_, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...500))
        server.flush()
        #expect(try pipeliner.takeMessages().count == 500)
        #expect(!pipeliner.isReadingPaused && server.context.stats.turnsYielded == 0)
    }
}
