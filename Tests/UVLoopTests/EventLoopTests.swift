// EventLoop: running, stopping, the clock and shutdown (which must close whatever is still open and end with
// uv_loop_close == 0).

#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import UVLoop

@MainActor
@Suite struct EventLoopTests {
    @Test func freshLoopShutsDownCleanly() throws {
        let loop = try EventLoop()
        #expect(!loop.runOnce(nowait: true))
        #expect(loop.shutdown())
        #expect(loop.shutdown(), "a repeated call returns the first result")
    }

    @Test func runReturnsWhenNothingIsActive() throws {
        let loop = try EventLoop()
        loop.run()
        #expect(loop.shutdown())
    }

    @Test func stopEndsRun() throws {
        let loop = try EventLoop()
        let timer = try LoopTimer(loop: loop)
        var fired = 0
        try timer.start(afterMilliseconds: 1, repeatMilliseconds: 1) {
            fired += 1
            if fired == 3 { loop.stop() }
        }
        loop.run()  // the repeating timer keeps it alive; only stop() ends it
        #expect(fired == 3)
        timer.close()
        #expect(loop.shutdown())
    }

    @Test func clockAdvances() throws {
        let loop = try EventLoop()
        loop.updateTime()
        let start = loop.nowMilliseconds
        settle(loop, milliseconds: 20)
        #expect(loop.nowMilliseconds >= start + 20)
        #expect(loop.shutdown())
    }

    @Test func shutdownClosesEveryOpenHandle() throws {
        let loop = try EventLoop()
        let server = try EchoServer(loop: loop)
        let client = try Client(loop: loop, port: server.listener.localPort)
        try #require(drive(loop) { client.stream != nil && server.accepted.streams.count == 1 })
        let timer = try LoopTimer(loop: loop)
        try timer.start(afterMilliseconds: 60_000) {}
        _ = try BeforePollHook(loop: loop) {}
        _ = try SignalWatcher(loop: loop, signal: SIGUSR2) { _ in }
        var listenerClosed = 0
        server.listener.onClose = { listenerClosed += 1 }
        // Listener, two streams, timer, hook, signal watcher (the driver's ticker has closed).
        #expect(loop.openHandleCount == 6)

        #expect(loop.shutdown())
        #expect(loop.openHandleCount == 0)
        #expect(listenerClosed == 1)
        #expect(client.closeCount == 1)
        #expect(client.ends.isEmpty, "closing is not an end the owner must react to")
        #expect(throws: UVError.self) { try LoopTimer(loop: loop) }
    }

    @Test func handleObjectsLiveUntilTheirCloseCallback() throws {
        let loop = try EventLoop()
        weak var weakTimer: LoopTimer?
        weak var weakStream: TCPStream?
        let server = try EchoServer(loop: loop)
        do {
            let timer = try LoopTimer(loop: loop)
            weakTimer = timer
            try TCPStream.connect(loop: loop, host: "127.0.0.1", port: server.listener.localPort) { stream, _ in
                weakStream = stream
            }
        }
        #expect(drive(loop) { weakStream != nil })
        // Nobody else holds them: libuv's handle.data keeps them alive while their handles are open.
        #expect(weakTimer != nil)
        weakTimer?.close()
        weakStream?.close()
        #expect(weakTimer != nil, "still alive until the close callback")
        #expect(drive(loop) { weakTimer == nil && weakStream == nil })
        #expect(loop.shutdown())
    }
}
