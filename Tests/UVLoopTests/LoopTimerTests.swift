// LoopTimer: one-shot and repeating timers, stop, restart, and use after close.

import Testing
@testable import UVLoop

@MainActor
@Suite struct LoopTimerTests {
    @Test func oneShotFiresOnce() throws {
        let loop = try EventLoop()
        let timer = try LoopTimer(loop: loop)
        var fired = 0
        try timer.start(afterMilliseconds: 10) { fired += 1 }
        #expect(drive(loop) { fired == 1 })
        settle(loop, milliseconds: 40)
        #expect(fired == 1)
        timer.close()
        #expect(loop.shutdown())
    }

    @Test func repeatingFiresUntilStopped() throws {
        let loop = try EventLoop()
        let timer = try LoopTimer(loop: loop)
        var fired = 0
        try timer.start(afterMilliseconds: 2, repeatMilliseconds: 2) { fired += 1 }
        #expect(drive(loop) { fired >= 3 })
        timer.stop()
        let stoppedAt = fired
        settle(loop, milliseconds: 30)
        #expect(fired == stoppedAt)
        // A stopped timer can start again.
        try timer.start(afterMilliseconds: 1) { fired += 100 }
        #expect(drive(loop) { fired == stoppedAt + 100 })
        timer.close()
        #expect(throws: UVError.self) { try timer.start(afterMilliseconds: 1) {} }
        #expect(loop.shutdown())
    }

    @Test func closeFromItsOwnCallback() throws {
        let loop = try EventLoop()
        let timer = try LoopTimer(loop: loop)
        var fired = 0
        try timer.start(afterMilliseconds: 1, repeatMilliseconds: 1) {
            fired += 1
            timer.close()
        }
        #expect(drive(loop) { fired == 1 })
        settle(loop, milliseconds: 20)
        #expect(fired == 1)
        #expect(loop.openHandleCount == 0)
        #expect(loop.shutdown())
    }
}
