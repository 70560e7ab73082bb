// TCPStream over real sockets on 127.0.0.1: echo both ways, the uv_write queue (4 MB through small socket buffers),
// write order, EOF, close semantics, back-pressure, half-close, and errors (refused connect, writes to a vanished peer).

#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import UVLoop

@MainActor
@Suite struct TCPStreamTests {
    @Test func echoesBytesBothWays() throws {
        let loop = try EventLoop()
        let server = try EchoServer(loop: loop)
        let client = try Client(loop: loop, port: server.listener.localPort)
        try #require(drive(loop) { client.stream != nil })
        let stream = try #require(client.stream)
        #expect(stream.remoteAddress == "127.0.0.1:\(server.listener.localPort)")
        let message = Array("hello, kvod\n".utf8)
        stream.write(message)
        #expect(drive(loop) { client.received.count >= message.count })
        #expect(client.received == message)
        let accepted = try #require(server.accepted.streams.first)
        #expect(accepted.remoteAddress.hasPrefix("127.0.0.1:"))
        #expect(accepted.remoteAddress != "127.0.0.1:\(server.listener.localPort)")
        #expect(loop.shutdown())
    }

    @Test func largeWriteGoesThroughTheQueueIntact() throws {
        let loop = try EventLoop()
        // Small kernel buffers on both ends, so a 4 MB write cannot go straight to the socket whatever the machine's
        // TCP autotuning: most of it must wait in libuv's write queue and leave it in many rounds.
        let accepted = StreamList()
        var received: [UInt8] = []
        var receiveBuffer: Int32?
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { stream in
            receiveBuffer = try? stream.setReceiveBufferSize(64 * 1024)
            stream.onRead = { received.append(contentsOf: $0) }
            accepted.streams.append(stream)
        }
        let client = try Client(loop: loop, port: listener.localPort)
        try #require(drive(loop) { client.stream != nil && accepted.streams.count == 1 })
        let stream = try #require(client.stream)
        let sendBuffer = try stream.setSendBufferSize(64 * 1024)
        #expect(sendBuffer > 0 && sendBuffer <= 256 * 1024, "SO_SNDBUF took: \(sendBuffer)")
        let receiveBytes = try #require(receiveBuffer, "SO_RCVBUF could not be set")
        #expect(receiveBytes > 0 && receiveBytes <= 256 * 1024, "SO_RCVBUF took: \(receiveBytes)")
        let payload = pattern(count: 4 * 1024 * 1024)
        let immediate = payload.withUnsafeBytes { stream.write($0) }
        // Nothing reads yet: at most the two small kernel buffers' worth went out (uv_try_write, then uv_write's own
        // first attempt on an empty queue); the rest is queued, in one request.
        let queued = stream.pendingWriteBytes
        #expect(queued <= payload.count - immediate)
        #expect(payload.count - queued < 1024 * 1024, "the kernel took \(payload.count - queued) bytes")
        #expect(stream.writesInFlight == 1)
        #expect(client.drainCount == 0)
        // Now the peer reads. The queue must shrink in several rounds (seen part-drained) and never grow.
        try accepted.streams[0].startReading()
        var sizes: [Int] = [queued]
        #expect(drive(loop, seconds: 20) {
            if stream.pendingWriteBytes != sizes.last { sizes.append(stream.pendingWriteBytes) }
            return received.count >= payload.count
        })
        #expect(zip(sizes, sizes.dropFirst()).allSatisfy { $0 > $1 }, "the queue only shrinks: \(sizes.prefix(20))")
        #expect(sizes.contains { $0 > 0 && $0 < queued }, "the queue drained in rounds: \(sizes.prefix(20))")
        #expect(stream.pendingWriteBytes == 0)
        #expect(client.drainCount == 1)
        // Every byte, once, in order: the pattern never repeats, so a lost, doubled or moved chunk shows.
        #expect(received.count == payload.count)
        #expect(firstDifference(received, payload) == nil)
        #expect(loop.shutdown())
    }

    @Test func writesKeepTheirOrder() throws {
        let loop = try EventLoop()
        let server = try EchoServer(loop: loop)
        let client = try Client(loop: loop, port: server.listener.localPort)
        try #require(drive(loop) { client.stream != nil })
        let stream = try #require(client.stream)
        // Small writes go straight to the socket, big ones queue; later small ones must wait behind them.
        let chunks = [pattern(count: 1, seed: 1), pattern(count: 3_000_000, seed: 2), pattern(count: 5, seed: 3),
                      pattern(count: 700_000, seed: 4), Array("end".utf8)]
        for chunk in chunks { stream.write(chunk) }
        let expected = chunks.flatMap { $0 }
        #expect(drive(loop, seconds: 10) { client.received.count >= expected.count })
        #expect(firstDifference(client.received, expected) == nil)
        #expect(loop.shutdown())
    }

    /// A buffer handed over (`write(adopting:count:)`) is queued as it is, in order with copied writes around it,
    /// and freed by the stream (once written; at once when the socket took it all, or when writing is over).
    @Test func handedOverBuffersKeepTheirOrderWithCopiedWrites() throws {
        let loop = try EventLoop()
        let server = try EchoServer(loop: loop)
        let client = try Client(loop: loop, port: server.listener.localPort)
        try #require(drive(loop) { client.stream != nil })
        let stream = try #require(client.stream)
        func handOver(_ bytes: [UInt8]) -> Int {
            let base = malloc(bytes.count)!
            bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
            return stream.write(adopting: base, count: bytes.count)
        }
        let chunks = [pattern(count: 10, seed: 1), pattern(count: 3_000_000, seed: 2), pattern(count: 7, seed: 3),
                      pattern(count: 2_000_000, seed: 4), pattern(count: 100, seed: 5)]
        #expect(handOver(chunks[0]) == 10)  // an empty queue and a small buffer: the socket takes it all
        _ = handOver(chunks[1])
        stream.write(chunks[2])
        _ = handOver(chunks[3])
        stream.write(chunks[4])
        let expected = chunks.flatMap { $0 }
        #expect(drive(loop, seconds: 10) { client.received.count >= expected.count })
        #expect(firstDifference(client.received, expected) == nil)
        #expect(stream.pendingWriteBytes == 0)
        // After close, a handed-over buffer is freed unwritten (ASan and valgrind would see a leak).
        stream.close()
        #expect(stream.write(adopting: malloc(16)!, count: 16) == 0)
        #expect(loop.shutdown())
    }

    @Test func peerCloseGivesEOFOnce() throws {
        let loop = try EventLoop()
        let accepted = StreamList()
        var received: [UInt8] = []
        var ends: [UVError?] = []
        var closes = 0
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { stream in
            accepted.streams.append(stream)
            stream.onRead = { received.append(contentsOf: $0) }
            stream.onEnd = { error in
                ends.append(error)
                stream.close()
            }
            stream.onClose = { closes += 1 }
            try? stream.startReading()
        }
        let client = try Client(loop: loop, port: listener.localPort)
        try #require(drive(loop) { client.stream != nil })
        client.stream?.write(Array("bye".utf8))
        client.stream?.close()
        #expect(drive(loop) { closes == 1 })
        #expect(received == Array("bye".utf8))
        #expect(ends.count == 1)
        #expect(ends.first.map { $0 == nil } == true, "EOF is reported as nil")
        #expect(client.closeCount == 1)
        #expect(client.ends.isEmpty, "the closing side hears nothing but onClose")
        #expect(loop.shutdown())
    }

    @Test func closeIsIdempotentAndSilencesCallbacks() throws {
        let loop = try EventLoop()
        let accepted = StreamList()
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { accepted.streams.append($0) }
        let client = try Client(loop: loop, port: listener.localPort)
        try #require(drive(loop) { client.stream != nil && accepted.streams.count == 1 })
        let stream = try #require(client.stream)
        // Set up everything that would call back: queued writes (the server does not read), bytes waiting to be read,
        // and a reset from the server closing with unread data (uv_close closes the fd at once).
        let queued = pattern(count: 8 * 1024 * 1024)
        queued.withUnsafeBytes { _ = stream.write($0) }
        #expect(stream.pendingWriteBytes > 0)
        accepted.streams[0].write(Array("pending".utf8))
        accepted.streams[0].close()
        stream.close()
        stream.close()
        #expect(stream.isClosing)
        #expect(drive(loop) { client.closeCount == 1 })
        settle(loop, milliseconds: 20)
        stream.close()
        stream.write(Array("ignored".utf8))
        settle(loop, milliseconds: 20)
        #expect(client.closeCount == 1)
        #expect(client.received.isEmpty, "no onRead after close()")
        #expect(client.ends.isEmpty, "no onEnd after close(), although the peer reset the connection")
        #expect(client.drainCount == 0, "cancelled writes do not report a drain")
        #expect(throws: UVError.self) { try stream.startReading() }
        listener.close()
        #expect(loop.shutdown())
    }

    @Test func peerResetGivesAnErrorEnd() throws {
        let loop = try EventLoop()
        let accepted = StreamList()
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { accepted.streams.append($0) }
        let client = try Client(loop: loop, port: listener.localPort)
        try #require(drive(loop) { client.stream != nil && accepted.streams.count == 1 })
        client.stream?.write(Array("never read".utf8))
        settle(loop, milliseconds: 10)
        // Closing with unread bytes makes the kernel send RST instead of FIN.
        accepted.streams[0].close()
        #expect(drive(loop) { !client.ends.isEmpty })
        #expect(client.ends.count == 1)
        #expect(client.ends.first??.isConnectionReset == true, "\(client.ends)")
        #expect(loop.shutdown())
    }

    @Test func stopReadingPausesDelivery() throws {
        let loop = try EventLoop()
        let server = try EchoServer(loop: loop)
        let client = try Client(loop: loop, port: server.listener.localPort)
        try #require(drive(loop) { client.stream != nil })
        let stream = try #require(client.stream)
        stream.stopReading()
        stream.write(Array("ping".utf8))
        settle(loop, milliseconds: 30)
        #expect(client.received.isEmpty)
        try stream.startReading()
        try stream.startReading()  // already reading: no-op
        #expect(drive(loop) { client.received == Array("ping".utf8) })
        #expect(loop.shutdown())
    }

    @Test func shutdownWritesHalfClosesAfterFlushing() throws {
        let loop = try EventLoop()
        var shutdownDone = 0
        let payload = pattern(count: 1_000_000)
        var repeatedDone = 0
        var lateWrite = -1
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { stream in
            stream.write(payload)
            stream.shutdownWrites {
                shutdownDone += 1
                stream.close()
            }
            // A second request is refused by libuv; its `done` runs at once and nothing is reported as an error.
            stream.shutdownWrites { repeatedDone += 1 }
            lateWrite = Array("late".utf8).withUnsafeBytes { stream.write($0) }
        }
        let client = try Client(loop: loop, port: listener.localPort)
        #expect(drive(loop) { client.ends.count == 1 })
        // Queued bytes are flushed before the FIN; the late write is dropped.
        #expect(firstDifference(client.received, payload) == nil)
        #expect(client.ends.first.map { $0 == nil } == true)
        #expect(drive(loop) { shutdownDone == 1 })
        #expect(repeatedDone == 1)
        #expect(lateWrite == 0)
        #expect(loop.shutdown())
    }

    @Test func connectToClosedPortReportsError() throws {
        let loop = try EventLoop()
        // Find a port nobody listens on: bind one, then close it.
        let probe = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { $0.close() }
        let port = probe.localPort
        probe.close()
        settle(loop, milliseconds: 5)
        let client = try Client(loop: loop, port: port)
        #expect(drive(loop) { client.isConnectDone })
        #expect(client.stream == nil)
        #expect(client.connectError?.isConnectionRefused == true)
        #expect(drive(loop) { loop.openHandleCount == 0 }, "the failed stream closed itself")
        #expect(loop.shutdown())
    }

    @Test func connectToMalformedAddressThrows() throws {
        let loop = try EventLoop()
        #expect(throws: UVError.self) {
            try TCPStream.connect(loop: loop, host: "nowhere", port: 1) { _, _ in Issue.record("no callback") }
        }
        #expect(loop.openHandleCount == 0)
        #expect(loop.shutdown())
    }

    @Test func writingToAVanishedPeerReportsAnErrorNotSIGPIPE() throws {
        let loop = try EventLoop()
        let accepted = StreamList()
        var ends: [UVError?] = []
        let listener = try TCPListener(loop: loop, host: "127.0.0.1", port: 0) { stream in
            // Not reading: the EOF goes unnoticed and only writes find out the peer is gone.
            stream.onEnd = { ends.append($0) }
            accepted.streams.append(stream)
        }
        let client = try Client(loop: loop, port: listener.localPort)
        try #require(drive(loop) { client.stream != nil && accepted.streams.count == 1 })
        client.stream?.close()
        try #require(drive(loop) { client.closeCount == 1 })
        let server = accepted.streams[0]
        // The first write is accepted by the kernel and answered with RST; a later one fails with EPIPE/ECONNRESET.
        #expect(drive(loop) {
            server.write(Array("anyone?".utf8))
            return !ends.isEmpty
        })
        #expect(ends.count == 1)
        let error = try #require(ends.first ?? nil)
        #expect(error.isBrokenPipe || error.isConnectionReset, "\(error)")
        let more = Array("more".utf8)
        #expect(more.withUnsafeBytes { server.write($0) } == 0, "writes after a write error are dropped")
        #expect(ends.count == 1, "onEnd fires once")
        server.close()
        #expect(loop.shutdown())
    }

    @Test func noDelayCanBeToggled() throws {
        let loop = try EventLoop()
        let server = try EchoServer(loop: loop)
        let client = try Client(loop: loop, port: server.listener.localPort)
        try #require(drive(loop) { client.stream != nil })
        client.stream?.setNoDelay(true)
        client.stream?.setNoDelay(false)
        #expect(client.ends.isEmpty)
        #expect(loop.shutdown())
    }
}
