// BeforePollHook: runs once per loop iteration while something keeps the loop alive, and never after close().

import Testing
@testable import UVLoop

@MainActor
@Suite struct BeforePollHookTests {
    @Test func runsOncePerIteration() throws {
        let loop = try EventLoop()
        // The hook is unreferenced, so something else must keep the loop iterating.
        let keepAlive = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { $0.close() }
        var calls = 0
        let hook = try BeforePollHook(loop: loop) { calls += 1 }
        for iteration in 1...5 {
            loop.runOnce(nowait: true)
            #expect(calls == iteration)
        }
        hook.close()
        hook.close()
        loop.runOnce(nowait: true)
        loop.runOnce(nowait: true)
        #expect(calls == 5)
        keepAlive.close()
        #expect(loop.shutdown())
    }

    @Test func doesNotKeepTheLoopAlive() throws {
        let loop = try EventLoop()
        var calls = 0
        let hook = try BeforePollHook(loop: loop) { calls += 1 }
        loop.run()  // returns at once: nothing referenced is active
        #expect(calls == 0)
        hook.close()
        #expect(loop.shutdown())
    }

    @Test func runsBeforeTimersOfTheNextTurnSeeTheirEffect() throws {
        let loop = try EventLoop()
        var events: [String] = []
        let timer = try LoopTimer(loop: loop)
        try timer.start(afterMilliseconds: 0) { events.append("timer") }
        let hook = try BeforePollHook(loop: loop) { events.append("hook") }
        loop.runOnce(nowait: true)
        // libuv's iteration order: timers, pending, idle, prepare, poll.
        #expect(events == ["timer", "hook"])
        hook.close()
        timer.close()
        #expect(loop.shutdown())
    }
}
