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

/// A byte pattern that makes reordering or corruption visible.
func pattern(count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &* 31 &+ seed) % 251) }
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
