// Helpers that drive an EventLoop in bounded steps from a test: until a condition holds (or a deadline passes), or
// for a fixed stretch of loop time. Nothing here calls an unbounded run().

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import UVLoop

/// Runs `loop` without blocking, one iteration at a time with short sleeps in between, until `condition` holds or
/// `seconds` of loop time pass; returns `condition()`. Opens no handle of its own, so handle counts stay exact.
@MainActor
@discardableResult
func drive(_ loop: EventLoop, seconds: UInt64 = 5, until condition: () -> Bool) -> Bool {
    loop.updateTime()
    let deadline = loop.nowMilliseconds + seconds * 1000
    while !condition() {
        loop.runOnce(nowait: true)
        if condition() { break }
        loop.updateTime()
        if loop.nowMilliseconds >= deadline { break }
        usleep(200)
    }
    return condition()
}

/// Runs `loop` for about `milliseconds` of loop time, whatever happens.
@MainActor
func settle(_ loop: EventLoop, milliseconds: UInt64 = 50) {
    loop.updateTime()
    let deadline = loop.nowMilliseconds + milliseconds
    drive(loop, seconds: 1) { loop.nowMilliseconds >= deadline }
}

/// Bytes that make loss, duplication and reordering visible: an xorshift64 stream, which does not repeat (a short
/// cyclic pattern would hide two swapped chunks whose lengths are multiples of its period).
func pattern(count: Int, seed: Int = 0) -> [UInt8] {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 | 1  // never 0, which xorshift keeps
    var bytes = [UInt8](repeating: 0, count: count)
    for index in bytes.indices {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        bytes[index] = UInt8(truncatingIfNeeded: state >> 56)
    }
    return bytes
}

/// Where `received` first differs from `expected`: an index, or the shorter count when one is a prefix of the other;
/// nil when they are equal. For megabytes: on a failed `#expect(received == expected)` Swift Testing describes the
/// collections' difference, which for arrays this large runs for hours instead of failing.
func firstDifference(_ received: [UInt8], _ expected: [UInt8]) -> Int? {
    let shared = min(received.count, expected.count)
    for index in 0..<shared where received[index] != expected[index] { return index }
    return received.count == expected.count ? nil : shared
}

/// Streams collected by a callback (a reference, so closures can append to it).
@MainActor
final class StreamList {
    var streams: [TCPStream] = []
}

/// A listener on 127.0.0.1:0 whose accepted streams echo everything back and close at the peer's end.
@MainActor
final class EchoServer {
    let listener: TCPListener
    let accepted = StreamList()

    init(loop: EventLoop) throws {
        let accepted = self.accepted
        self.listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { stream in
            // Capturing the stream strongly is fine: its callbacks are released once it has closed.
            stream.onRead = { bytes in stream.write(bytes) }
            stream.onEnd = { _ in stream.close() }
            try? stream.startReading()
            accepted.streams.append(stream)
        }
    }
}

/// A client stream connected to `port` on 127.0.0.1 that collects what it reads, ends and closes.
@MainActor
final class Client {
    private(set) var stream: TCPStream?
    private(set) var connectError: UVError?
    private(set) var isConnectDone = false
    var received: [UInt8] = []
    var ends: [UVError?] = []
    var closeCount = 0
    var drainCount = 0

    init(loop: EventLoop, port: Int) throws {
        try TCPStream.connect(loop: loop, host: "127.0.0.1", port: port) { stream, error in
            self.isConnectDone = true
            self.connectError = error
            guard let stream else { return }
            self.stream = stream
            stream.onRead = { self.received.append(contentsOf: $0) }
            stream.onEnd = { self.ends.append($0) }
            stream.onClose = { self.closeCount += 1 }
            stream.onWritesDrained = { self.drainCount += 1 }
            try? stream.startReading()
        }
    }
}
