// SignalWatcher: a raised signal arrives as a callback on the loop.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import UVLoop

@MainActor
@Suite struct SignalWatcherTests {
    @Test func receivesRaisedSignal() throws {
        let loop = try EventLoop()
        var received: [Int32] = []
        let watcher = try SignalWatcher(loop: loop, signal: SIGUSR1) { received.append($0) }
        // Under Swift Testing the main actor runs on a libdispatch worker, which blocks signals; a raise() there would
        // stay pending forever. Unblock SIGUSR1 on this thread just for the raise.
        var unblock = sigset_t()
        var previous = sigset_t()
        sigemptyset(&unblock)
        sigaddset(&unblock, SIGUSR1)
        #expect(pthread_sigmask(SIG_UNBLOCK, &unblock, &previous) == 0)
        #expect(raise(SIGUSR1) == 0)
        #expect(pthread_sigmask(SIG_SETMASK, &previous, nil) == 0)
        #expect(drive(loop) { !received.isEmpty })
        #expect(received == [SIGUSR1])
        watcher.close()
        #expect(loop.shutdown())
    }
}
