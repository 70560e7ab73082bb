// EventLoop.syncInBackground: the fsync runs off the loop thread and its completion runs on the loop, with the error
// when the descriptor cannot be fsynced.

import Foundation
import Testing
@testable import UVLoop

@MainActor
@Suite struct FileSyncTests {
    @Test func theCompletionRunsOnTheLoopAfterTheFsync() throws {
        let loop = try EventLoop()
        let path = NSTemporaryDirectory() + "kvod-filesync-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        #expect(descriptor >= 0)
        defer {
            close(descriptor)
            unlink(path)
        }
        #expect(write(descriptor, "journal", 7) == 7)
        let loopThread = pthread_self()
        var outcome: UVError?? = .none
        var onLoopThread = false
        try loop.syncInBackground(descriptor: descriptor) { error in
            outcome = .some(error)
            onLoopThread = pthread_equal(pthread_self(), loopThread) != 0
        }
        #expect(outcome == nil, "the completion never runs inside the call")
        #expect(drive(loop) { outcome != nil })
        #expect(outcome == .some(nil))
        #expect(onLoopThread)
        #expect(loop.shutdown())
    }

    @Test func aDescriptorThatCannotBeFsyncedGivesTheError() throws {
        let loop = try EventLoop()
        var outcome: UVError?? = .none
        try loop.syncInBackground(descriptor: 987_654) { error in outcome = .some(error) }
        #expect(drive(loop) { outcome != nil })
        #expect(outcome??.name == "EBADF")
        #expect(loop.shutdown())
    }
}
