// LoopWaker: a wake from a background thread runs the callback on the loop; wakes after close are harmless.

import Foundation
import Testing
@testable import UVLoop

@MainActor
@Suite struct LoopWakerTests {
    @Test func wakesFromAnotherThread() throws {
        let loop = try EventLoop()
        var wakes = 0
        var onLoopThread = true
        // The loop thread: under Swift Testing the main actor runs on a libdispatch worker, not the process's first
        // thread, so compare with the thread this test (and therefore the loop) runs on.
        let loopThread = pthread_self()
        let waker = try LoopWaker(loop: loop) {
            wakes += 1
            onLoopThread = onLoopThread && pthread_equal(pthread_self(), loopThread) != 0
        }
        let handle = waker.handle
        let thread = Thread {
            Thread.sleep(forTimeInterval: 0.02)
            handle.wake()
        }
        thread.start()
        #expect(drive(loop) { wakes >= 1 })
        #expect(onLoopThread)
        waker.close()
        handle.wake()  // after close: ignored
        settle(loop, milliseconds: 10)
        #expect(wakes == 1)
        #expect(loop.shutdown())
    }

    @Test func wakesCoalesce() throws {
        let loop = try EventLoop()
        var wakes = 0
        let waker = try LoopWaker(loop: loop) { wakes += 1 }
        for _ in 0..<10 { waker.handle.wake() }
        #expect(drive(loop) { wakes >= 1 })
        settle(loop, milliseconds: 10)
        #expect(wakes == 1)
        waker.close()
        #expect(loop.shutdown())
    }
}
