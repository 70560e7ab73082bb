// What a session needs from the thing that carries its bytes (docs/ARCHITECTURE.md#sessions-and-transports). A
// transport cuts its input into messages (TCP: lines; WebSocket: text frames) and hands each to its session; it
// takes the session's output, which is always whole newline-terminated JSON messages, and frames it for the wire.
// The session core above it knows nothing of sockets, so it runs in tests on a RecordingTransport and a ManualClock.
import TLS

/// A session's connection to its peer. Loop-owned.
@MainActor
protocol Transport: AnyObject {
    /// Where input and the close are reported (the session, which owns the transport: not a strong reference).
    var events: (any TransportEvents)? { get set }
    /// The peer's address, for logs and `observers`.
    var remoteAddress: String { get }
    /// What carries the messages ("tcp", "websocket"), for logs and `observers`.
    var kind: String { get }
    /// Hands output to the peer: one or more whole JSON messages, each ending in a newline.
    func write(_ messages: UnsafeRawBufferPointer)
    /// Hands a session's whole output to the peer as `write(_:)` does, and leaves `output` empty; a transport may
    /// take the buffer's memory over instead of copying what the socket does not take at once.
    func write(taking output: inout OutputBuffer)
    /// Output handed over but not yet taken by the peer (the kernel's or the library's queue).
    var pendingWriteBytes: Int { get }
    /// Stops delivering input (a closing session reads nothing more; a session that yields its turn reads nothing
    /// until `resumeReading`).
    func pauseReading()
    /// Delivers input again after `pauseReading` (not after a close).
    func resumeReading()
    /// Ends the connection as `close` says; calls `TransportEvents.transportClosed()` once it is gone.
    func close(_ close: TransportClose)
}

extension Transport {
    /// Copies (`write(_:)`), then empties `output`, keeping a small buffer's capacity for the next turn (an idle
    /// session should not hold a burst's worth of memory).
    func write(taking output: inout OutputBuffer) {
        output.withBytes { self.write($0) }
        output.removeAll(keepingCapacity: output.capacity <= 8 << 10)
    }
}

/// How a transport ends its connection.
enum TransportClose {
    /// The connection is broken: drop what is queued and close now.
    case abort
    /// The peer stopped reading: send `notice` only if nothing is queued ahead of it, then close now.
    case abandon(notice: [UInt8], reason: CloseReason)
    /// Deliver what was written, then close: after the peer's own close (`peerClosed`), or, when the server decided
    /// to close, after waiting a moment for the peer to read the last messages (a lingering close).
    case graceful(reason: CloseReason, peerClosed: Bool)
}

/// What a transport tells its session. Loop-owned.
@MainActor
protocol TransportEvents: AnyObject {
    /// One complete input message (a line without its newline, or a text frame's payload).
    func transportReceived(_ message: UnsafeRawBufferPointer)
    /// Bytes read from the peer, before framing (stats).
    func transportRead(byteCount: Int)
    /// The peer sent a message longer than the session's limit; the transport reads nothing more.
    func transportReceivedTooLong(limit: Int)
    /// The peer broke the transport's protocol; the transport already told it why and reads nothing more.
    func transportFailed(_ reason: CloseReason, detail: String)
    /// The peer ended the connection (`error` false: an orderly close).
    func transportEnded(error: Bool)
    /// The connection is gone; no more events follow.
    func transportClosed()
    /// The connection's TLS handshake finished (before its first message): a client certificate may stand for a
    /// token (Protocol/README.md#mutual-tls).
    func transportEstablishedTLS(_ tls: TLSSession)
}

/// A loop's clock as a session sees it (ManualClock in tests).
@MainActor
protocol SessionClock: AnyObject {
    /// Milliseconds on a monotonic clock.
    var nowMilliseconds: UInt64 { get }
    /// The wall clock: Unix epoch milliseconds (for expiring keys, whose deadlines survive restarts).
    var epochMilliseconds: UInt64 { get }
    /// A precise monotonic clock, read anew at each call (the work a session does in one loop turn).
    var monotonicNanoseconds: UInt64 { get }
}

/// A clock that moves only when told to (tests).
@MainActor
final class ManualClock: SessionClock {
    var nowMilliseconds: UInt64
    var epochMilliseconds: UInt64

    /// How far `monotonicNanoseconds` moves at each reading (0: it stands still with the other clocks), so that
    /// tests can make every request look as long as they need.
    var nanosecondsPerReading: UInt64 = 0
    private var nanoseconds: UInt64 = 1_000_000_000

    var monotonicNanoseconds: UInt64 {
        self.nanoseconds &+= self.nanosecondsPerReading
        return self.nanoseconds
    }

    init(nowMilliseconds: UInt64 = 1_000_000, epochMilliseconds: UInt64 = 1_790_000_000_000) {
        self.nowMilliseconds = nowMilliseconds
        self.epochMilliseconds = epochMilliseconds
    }

    /// Moves both clocks.
    func advance(milliseconds: UInt64) {
        self.nowMilliseconds += milliseconds
        self.epochMilliseconds += milliseconds
    }
}
