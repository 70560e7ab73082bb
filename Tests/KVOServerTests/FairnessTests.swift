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

    /// Requests between two readings of the clock.
    private let n = Session.requestsPerClockReading

    private func sets(_ ids: ClosedRange<Int>, path: String = "x") -> [String] {
        ids.map { InProcessServer.requestText($0, "set", #"{"path":"\#(path)","value":\#($0)}"#) }
    }

    @Test func aLongReadIsAnsweredOverSeveralTurnsInOrderWhileOthersAreServed() throws {
        let server = self.server()
        let (_, pipeliner) = server.connect()
        let (_, other) = server.connect()
        let total = 12 * self.n
        let requests = self.sets(1...total)
        #expect(requests.reduce(0) { $0 + $1.utf8.count } >= Session.heavyInputBytes)
        pipeliner.sendRead(requests)
        server.flush()
        let first = try pipeliner.takeMessages()
        // The read is larger than Session.heavyInputBytes, so it starts the measure (one clock reading); then the
        // clock is read every n requests and moves 1 ms each time: the 2 ms share ends after 2n requests.
        #expect(first.map { $0["id"]?.intValue } == (1...(2 * self.n)).map { Int64($0) })
        #expect(pipeliner.isReadingPaused)
        #expect(server.context.stats.turnsYielded == 1)
        // Between the turns another connection is served, and sees the state so far.
        let read = try server.request(other, 1, "get", #"{"path":"x"}"#)
        #expect(read.first?["result"]?["value"] == .int(Int64(2 * self.n)))
        var answered = first.count
        var turns = 1
        while server.nextTurn() || answered < total {
            answered += try pipeliner.takeMessages().count
            turns += 1
            #expect(turns < 20)
            if turns >= 20 { break }
        }
        answered += try pipeliner.takeMessages().count
        #expect(answered == total)
        #expect(!pipeliner.isReadingPaused)
        #expect(try server.request(other, 2, "get", #"{"path":"x"}"#).first?["result"]?["value"] == .int(Int64(total)))
    }

    @Test func theReadsOfOneLoopTurnShareOneMeasure() throws {
        let server = self.server()
        let (_, pipeliner) = server.connect()
        let (_, other) = server.connect()
        // Small reads (under Session.heavyInputBytes each) arriving in one loop turn, as libuv reads a stream until it
        // is empty: the clock is read every n requests across them (the first reading starts the measure), so the
        // third reading ends the share, in the third read.
        for read in 0..<3 {
            let requests = self.sets((read * self.n + 1)...((read + 1) * self.n))
            #expect(requests.reduce(0) { $0 + $1.utf8.count } < Session.heavyInputBytes)
            #expect(!pipeliner.isReadingPaused)
            pipeliner.sendRead(requests)
        }
        #expect(pipeliner.isReadingPaused)
        #expect(server.context.stats.turnsYielded == 1)
        server.flush()
        #expect(try pipeliner.takeMessages().count == 3 * self.n)
        #expect(try server.request(other, 1, "get", #"{"path":"x"}"#).first?["result"]?["value"] == .int(Int64(3 * self.n)))
        // The next turn is a new measure.
        for _ in 0..<3 where pipeliner.isReadingPaused { server.nextTurn() }
        #expect(!pipeliner.isReadingPaused)
        pipeliner.sendRead(self.sets((3 * self.n + 1)...(4 * self.n)))
        server.flush()
        #expect(try pipeliner.takeMessages().count == self.n)
        #expect(!pipeliner.isReadingPaused)
    }

    @Test func aBatchCanWaitBeforeItsFirstRequestWhenItsLineCameAfterTheShareWasUsed() throws {
        // Every reading after the first ends the share (2 ms a reading).
        let server = self.server(millisecondsPerReading: 2)
        let (_, peer) = server.connect()
        // n small requests: the nth reads the clock and starts the measure. Then, in the same loop turn, a batch line
        // larger than Session.heavyInputBytes: the check before its first request reads the clock again, and the
        // whole batch waits for the next turn.
        peer.sendRead(self.sets(1...self.n))
        let value = String(repeating: "v", count: Session.heavyInputBytes)
        let batch = (self.n + 1)...(self.n + 3)
        peer.sendRead(["[" + batch.map {
            InProcessServer.requestText($0, "set", #"{"path":"big","value":"\#(value)"}"#)
        }.joined(separator: ",") + "]"])
        #expect(peer.isReadingPaused)
        server.flush()
        #expect(try peer.takeMessages().count == self.n)
        #expect(server.context.graph.seq == UInt64(self.n))  // no request of the batch ran
        for _ in 0..<5 where peer.isReadingPaused { server.nextTurn() }
        let messages = try peer.takeMessages()
        #expect(messages.count == 1)
        #expect(messages.first?.arrayValue?.map { $0["id"]?.intValue } == batch.map { Int64($0) })
    }

    @Test func aSessionThatYieldedWaitsForThePollBeforeItsNextTurn() throws {
        let server = self.server()
        let (_, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...(12 * self.n)))
        #expect(pipeliner.isReadingPaused)
        let answered = server.context.graph.seq
        // The idle hook runs before the loop's flush and poll: a session that yielded in this turn's poll waits, so
        // other connections' input is read before its next share.
        #expect(server.context.sessions.resumeYielded())
        #expect(server.context.graph.seq == answered)
        server.flush()  // the next turn begins; its poll reads the others
        #expect(server.context.sessions.resumeYielded())
        #expect(server.context.graph.seq > answered)
    }

    @Test func theRestOfAReadKeepsItsOrderAcrossTurns() throws {
        let server = self.server()
        let (_, pipeliner) = server.connect()
        let total = 8 * self.n
        pipeliner.sendRead(self.sets(1...total))
        server.flush()
        var ids = try pipeliner.takeMessages().compactMap { $0["id"]?.intValue }
        for _ in 0..<10 where pipeliner.isReadingPaused {
            server.nextTurn()
            ids += try pipeliner.takeMessages().compactMap { $0["id"]?.intValue }
        }
        #expect(ids == (1...total).map { Int64($0) })
        #expect(server.log.records.map(\.seq) == (1...total).map { UInt64($0) })
    }

    @Test func aBatchGoesOnAtTheNextTurnAndIsAnsweredWithOneArrayThenItsInitials() throws {
        let server = self.server()
        let (_, peer) = server.connect()
        let (_, writer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"y","value":"v"}"#)
        let subscribe = InProcessServer.requestText(2, "subscribe", #"{"path":"y","options":["initial","new"]}"#)
        let last = 2 + 8 * self.n
        peer.send("[" + ([subscribe] + self.sets(3...last)).joined(separator: ",") + "]")
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
        #expect(array.map { $0["id"]?.intValue } == (2...last).map { Int64($0) })
        // The initial notification follows the array, with the state at the subscribe's seq (before the writer's).
        #expect(messages[2]["params"]?["initial"] == true && messages[2]["params"]?["new"] == "v")
        #expect(server.context.stats.turnsYielded >= 2)
    }

    @Test func aBatchsInitialNotificationsGoOnOverTurnsAfterItsArrayInBatchOrder() throws {
        let server = self.server()
        let (_, peer) = server.connect()
        _ = try server.request(peer, 1, "set", #"{"path":"y","value":"v"}"#)
        let last = 1 + 8 * self.n
        let subscribes = (2...last).map {
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
        #expect(messages.first?.arrayValue?.count == last - 1)
        #expect(messages.dropFirst().map { $0["params"]?["context"]?.intValue } == (2...last).map { Int64($0) })
        #expect(messages.dropFirst().allSatisfy { $0["params"]?["initial"] == true })
        #expect(server.context.stats.turnsYielded >= 3)
    }

    @Test func anOrderlyEndWhileRequestsWaitIsActedOnAfterTheyAreAnswered() throws {
        let server = self.server()
        let (session, pipeliner) = server.connect()
        let total = 8 * self.n
        pipeliner.sendRead(self.sets(1...total))
        pipeliner.end()
        server.flush()
        #expect(session.closeReason == nil)
        for _ in 0..<10 where session.closeReason == nil { server.nextTurn() }
        #expect(session.closeReason == .clientClosed)
        #expect(try pipeliner.takeMessages().compactMap { $0["id"]?.intValue } == (1...total).map { Int64($0) })
    }

    @Test func aLineTooLongWhileRequestsWaitComesAfterTheirResponses() throws {
        let server = self.server()
        let (session, pipeliner) = server.connect()
        let total = 5 * self.n
        pipeliner.sendRead(self.sets(1...total))
        session.transportReceivedTooLong(limit: 1024)
        server.flush()
        for _ in 0..<10 where session.closeReason == nil { server.nextTurn() }
        #expect(session.closeReason == .lineTooLong)
        let messages = try pipeliner.takeMessages()
        #expect(messages.prefix(total).compactMap { $0["id"]?.intValue } == (1...total).map { Int64($0) })
        #expect(messages.dropFirst(total).first?["error"]?["code"] == 1009)
    }

    @Test func aSessionClosedWhileItsRequestsWaitDropsThem() throws {
        let server = self.server()
        let (session, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...(8 * self.n)))
        server.flush()
        let answered = try pipeliner.takeMessages().count
        #expect(answered < 8 * self.n)
        session.close(.serverShutdown)
        #expect(server.nextTurn() == false)
        #expect(server.log.records.count == answered)  // nothing after the close was performed
    }

    @Test func aStillClockNeverYields() throws {
        let server = InProcessServer()
        let (_, pipeliner) = server.connect()
        pipeliner.sendRead(self.sets(1...(40 * self.n)))
        server.flush()
        #expect(try pipeliner.takeMessages().count == 40 * self.n)
        #expect(!pipeliner.isReadingPaused && server.context.stats.turnsYielded == 0)
    }
}
