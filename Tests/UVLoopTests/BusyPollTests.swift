// BusyPoll: after a read the loop polls without blocking (a `UV_RUN_ONCE` iteration returns with nothing ready), and
// once no read has come for the window it blocks again; it never keeps the loop alive, and a loop has at most one.

import Testing
@testable import UVLoop

@MainActor
@Suite struct BusyPollTests {
    /// A loop with an echo server and a connected client, and a timer far enough away that a blocking iteration would
    /// wait for it.
    @MainActor
    final class Rig {
        let loop: EventLoop
        let server: EchoServer
        let client: Client
        let timer: LoopTimer
        var timerFired = false

        /// A timer every `timerMilliseconds` (so a blocking iteration returns within that).
        init(timerMilliseconds: UInt64) throws {
            self.loop = try EventLoop()
            self.server = try EchoServer(loop: self.loop)
            self.client = try Client(loop: self.loop, port: self.server.listener.localPort)
            self.timer = try LoopTimer(loop: self.loop)
            let connected = drive(self.loop) { self.client.stream != nil && self.server.accepted.streams.count == 1 }
            #expect(connected)
            try self.timer.start(afterMilliseconds: timerMilliseconds, repeatMilliseconds: timerMilliseconds) {
                [unowned self] in self.timerFired = true
            }
        }

        /// Sends one byte and waits for its echo: a read on each side.
        func exchange() {
            let before = self.client.received.count
            self.client.stream?.write([UInt8(ascii: "x")])
            let echoed = drive(self.loop) { self.client.received.count > before }
            #expect(echoed)
        }

        func close() {
            self.timer.close()
            self.client.stream?.close()
            for stream in self.server.accepted.streams { stream.close() }
            self.server.listener.close()
            #expect(self.loop.shutdown())
        }
    }

    @Test func afterAReadTheLoopPollsWithoutBlocking() throws {
        let rig = try Rig(timerMilliseconds: 20_000)
        let poll = try BusyPoll(loop: rig.loop, microseconds: 60_000_000)
        #expect(!poll.isSpinning, "no read yet")
        rig.exchange()
        #expect(poll.isSpinning)
        // Nothing is ready and the timer is 20 s away: a blocking iteration would wait for it.
        for _ in 0..<200 where !rig.timerFired { rig.loop.runOnce(nowait: false) }
        #expect(!rig.timerFired, "200 iterations returned without waiting for the timer")
        #expect(poll.isSpinning, "still within the window")
        poll.close()
        poll.close()
        #expect(!poll.isSpinning)
        rig.close()
    }

    @Test func withoutReadsForTheWindowTheLoopBlocksAgain() throws {
        let rig = try Rig(timerMilliseconds: 20_000)
        let poll = try BusyPoll(loop: rig.loop, microseconds: 20_000)
        rig.exchange()
        #expect(poll.isSpinning)
        let stopped = drive(rig.loop, seconds: 10) { !poll.isSpinning }
        #expect(stopped, "the poll stops 20 ms after the last read")
        // Blocking again: one iteration now waits for the next event, the timer (restarted 300 ms away).
        try rig.timer.start(afterMilliseconds: 300, repeatMilliseconds: 300) { [unowned rig] in rig.timerFired = true }
        rig.loop.runOnce(nowait: false)
        #expect(rig.timerFired, "the iteration returned only once the timer was due")
        // And a new read starts it again.
        rig.exchange()
        #expect(poll.isSpinning)
        poll.close()
        rig.close()
    }

    @Test func doesNotKeepTheLoopAliveAndIsOnePerLoop() throws {
        let loop = try EventLoop()
        #expect(throws: UVError.self) { try BusyPoll(loop: loop, microseconds: 0) }
        let poll = try BusyPoll(loop: loop, microseconds: .max)
        #expect(poll.window == .max, "a window too long for nanoseconds is as long as can be")
        #expect(throws: UVError.self) { try BusyPoll(loop: loop, microseconds: 1_000) }
        loop.run()  // returns at once: nothing referenced is active
        poll.close()
        // Closed, it leaves the loop free for another.
        let second = try BusyPoll(loop: loop, microseconds: 1_000)
        second.close()
        #expect(loop.shutdown())
    }
}
