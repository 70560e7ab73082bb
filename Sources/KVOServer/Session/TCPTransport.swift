// The TCP transport: a libuv stream whose input is cut into lines (LineFramer) and whose output is written as it
// comes (the session's output is already newline-delimited JSON). It owns the socket's ending: the half-close after
// the last output, the lingering close after a server-initiated one, and the deadline for a client that never reads.
import UVLoop
import WireProtocol

/// One client socket. Loop-owned; owned by its session.
@MainActor
final class TCPTransport: Transport {
    weak var events: (any TransportEvents)?
    private let stream: TCPStream
    private let loop: EventLoop
    private var framer: LineFramer
    private let maxLineBytes: Int
    let remoteAddress: String
    var kind: String { "tcp" }
    private var lingerTimer: LoopTimer?

    init(stream: TCPStream, loop: EventLoop, maxLineBytes: Int) {
        self.stream = stream
        self.loop = loop
        self.maxLineBytes = maxLineBytes
        self.framer = LineFramer(maxLineBytes: maxLineBytes)
        self.remoteAddress = stream.remoteAddress
    }

    /// Starts reading; lines go to the session as they complete.
    func start() throws(UVError) {
        self.stream.onRead = { [unowned self] bytes in self.received(bytes) }
        self.stream.onEnd = { [unowned self] error in self.events?.transportEnded(error: error != nil) }
        self.stream.onClose = { [unowned self] in
            self.lingerTimer?.close()
            self.lingerTimer = nil
            self.events?.transportClosed()
        }
        self.stream.setNoDelay(true)
        try self.stream.startReading()
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard let events = self.events else { return }
        events.transportRead(byteCount: bytes.count)
        do {
            try self.framer.feed(bytes) { line in events.transportReceived(line) }
        } catch {
            events.transportReceivedTooLong(limit: self.maxLineBytes)
        }
    }

    func write(_ messages: UnsafeRawBufferPointer) {
        _ = self.stream.write(messages)
    }

    var pendingWriteBytes: Int { self.stream.pendingWriteBytes }

    func pauseReading() {
        self.stream.stopReading()
    }

    func close(_ close: TransportClose) {
        switch close {
        case .abort:
            self.stream.close()
        case .abandon(let notice, _):
            // With libuv's queue non-empty the notice would queue behind it, and closing cancels the queue.
            if self.stream.pendingWriteBytes == 0 { self.stream.write(notice) }
            self.stream.close()
        case .graceful(_, peerClosed: true):
            // The client sent EOF, so nothing unread is left: close once the output is out.
            self.armCloseDeadline()
            self.stream.shutdownWrites { [stream = self.stream] in stream.close() }
        case .graceful(_, peerClosed: false):
            self.armCloseDeadline()
            self.stream.shutdownWrites { [weak self] in self?.linger() }
        }
    }

    /// A graceful close waits for queued output to reach the socket, which never happens if the client stopped
    /// reading with its buffers full: after `closeDeadlineMilliseconds` the socket is closed regardless.
    private func armCloseDeadline() {
        guard let timer = try? LoopTimer(loop: self.loop) else { return self.stream.close() }
        do {
            try timer.start(afterMilliseconds: Self.closeDeadlineMilliseconds) { [stream = self.stream] in stream.close() }
            self.lingerTimer = timer
        } catch {
            timer.close()
            self.stream.close()
        }
    }

    /// How long a graceful close may wait for the client to take what is queued.
    static let closeDeadlineMilliseconds: UInt64 = 5000

    /// Closing a socket that still has unread input makes the kernel send a reset, which can destroy the last
    /// messages in flight (the error and `closing` notice). So after a server-initiated close the transport reads
    /// and discards input until the client closes its end or `lingerMilliseconds` pass (Apache's lingering close).
    private func linger() {
        let stream = self.stream
        stream.onRead = { _ in }
        stream.onEnd = { _ in stream.close() }
        do {
            try stream.startReading()
            let timer = try LoopTimer(loop: self.loop)
            try timer.start(afterMilliseconds: Self.lingerMilliseconds) { stream.close() }
            self.lingerTimer?.close()
            self.lingerTimer = timer
        } catch {
            stream.close()
        }
    }

    /// How long a server-initiated close waits for the client to close its end.
    static let lingerMilliseconds: UInt64 = 2000
}
