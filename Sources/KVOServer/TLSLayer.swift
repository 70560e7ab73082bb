// TLS on a libuv stream: the TLS module's session (OpenSSL over the caller's buffers) driven by the stream's reads and
// writes on the loop's thread. Ciphertext the stream reads goes in, plaintext comes out to the owner (the socket
// transport, or the HTTP server of the metrics and inspector ports); plaintext the owner writes goes out as
// ciphertext through the stream's usual write path, so libuv's write queue and kvod's output limits see the bytes
// that really wait. A connection gets a layer only when its first byte is a TLS handshake record (0x16): plaintext
// connections never reach this file. OpenSSL's record buffers are made and given back for each record, except on a
// busy connection, which keeps them (TLSBufferKeeper, below).
import TLS
import UVLoop

/// A stream's TLS. Loop-owned; owned by the stream's owner.
@MainActor
final class TLSLayer {
    let session: TLSSession
    fileprivate let stream: TCPStream
    /// Plaintext written before the handshake finished, sent once it has.
    private var held: [UInt8] = []
    /// Called once, when the handshake finishes, before any plaintext is delivered.
    var onEstablished: (@MainActor () -> Void)?
    private var announced = false
    /// Told of the connection's first use since its last sweep: it decides whether the session keeps its buffers.
    private let buffers: TLSBufferKeeper
    /// Whether the keeper watches this layer (it was used since the keeper last let it go).
    fileprivate var isWatched = false
    /// Reads and writes since the keeper's last sweep (wrapping: only compared with a small threshold).
    fileprivate var usesSinceSweep: UInt32 = 0

    /// A server-side layer for `stream` with `context` (the context current when the connection arrived), whose
    /// record buffers `buffers` lets it keep while it is busy.
    init(context: TLSContext, stream: TCPStream, buffers: TLSBufferKeeper) throws(TLSError) {
        self.session = try TLSSession(context: context, isServer: true)
        self.stream = stream
        self.buffers = buffers
    }

    /// Counts a read or a write for the keeper.
    @inline(__always)
    private func noteUse() {
        self.usesSinceSweep &+= 1
        if !self.isWatched { self.buffers.watch(self) }
    }

    /// The first byte of a TLS handshake record (a ClientHello's): never the first byte of a JSON-RPC line or an
    /// HTTP request.
    static let handshakeRecordByte: UInt8 = 0x16

    var isEstablished: Bool { self.session.isEstablished }

    /// Feeds ciphertext the stream read; plaintext goes to `deliver`. Returns the error when the peer broke TLS (the
    /// alert telling it so is already written), nil otherwise.
    func receive(_ ciphertext: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) -> TLSError? {
        var failure: TLSError?
        self.noteUse()
        do {
            try self.session.receive(ciphertext, scratch: TLSScratch.plaintext) { plaintext in
                self.announceIfEstablished()
                deliver(plaintext)
            }
        } catch {
            failure = error
        }
        self.announceIfEstablished()
        self.flush()
        return failure
    }

    private func announceIfEstablished() {
        guard !self.announced, self.session.isEstablished else { return }
        self.announced = true
        self.onEstablished?()
        if !self.held.isEmpty {
            let held = self.held
            self.held = []
            held.withUnsafeBytes { self.write($0) }
        }
    }

    /// Sends plaintext (held until the handshake finished). A failure to encrypt ends the stream through its
    /// `onEnd`, as a failed write does.
    func write(_ plaintext: UnsafeRawBufferPointer) {
        guard self.session.isEstablished else {
            if !self.session.isClosed { self.held.append(contentsOf: plaintext) }
            return
        }
        self.noteUse()
        do {
            try TLSScratch.send(plaintext, through: self.session) { _ = self.stream.write($0) }
        } catch {
            self.stream.close()
        }
    }

    /// Sends plaintext (see `write(_:)` for the raw-buffer version).
    func write(_ plaintext: [UInt8]) {
        plaintext.withUnsafeBytes { self.write($0) }
    }

    /// Sends our close_notify; nothing more is sent afterwards.
    func close() {
        self.held = []
        self.session.close()
        self.flush()
    }

    /// Writes whatever ciphertext OpenSSL produced (handshake messages, alerts, close_notify).
    private func flush() {
        guard self.session.hasOutput else { return }
        self.session.drainOutput { _ = self.stream.write($0) }
    }
}

/// The loop's TLS scratch space, shared by every TLS stream on its thread (the loop runs one connection's TLS at a
/// time): kvod's own connections (TLSLayer) and the ones it opens (ClientTLSStream).
@MainActor
enum TLSScratch {
    /// Plaintext out of OpenSSL, for `TLSSession.receive`.
    static let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    /// Ciphertext into a stream, one write per flush, lent to a session for one `send`.
    private static let ciphertext = UnsafeMutableRawBufferPointer.allocate(
        byteCount: TLSSession.scratchBytes, alignment: 16)
    private static var ciphertextLent = false

    /// Encrypts `plaintext` with `session` into the lent ciphertext scratch and hands it to `sink`. A send made while
    /// the scratch is lent (from inside a stream write's failure, which may close connections) collects in a buffer of
    /// the session's own.
    static func send(
        _ plaintext: UnsafeRawBufferPointer, through session: TLSSession, sink: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) {
        let lends = !Self.ciphertextLent
        Self.ciphertextLent = true
        defer { if lends { Self.ciphertextLent = false } }
        try session.send(plaintext, scratch: lends ? Self.ciphertext : nil, sink: sink)
    }
}

/// Decides, once a second, which TLS connections keep OpenSSL's record buffers (a read and a write buffer, about
/// 33 KiB) between records. By default a session makes them for each record and gives them back after it, a malloc and
/// a free per record (SSL_MODE_RELEASE_BUFFERS), so an idle connection holds none. A connection that read or wrote at
/// least `busyUses` times since the last sweep keeps them until a sweep finds it below that again: 36 instructions
/// less per notification at fan-out 100, 2,400 less per set and notification at fan-out 1 (docs/PERFORMANCE.md#tls).
/// So only connections busy enough for that to count hold memory while they are busy, and none holds any once idle.
/// The owner of the layers sweeps it from a timer it already has; a sweep costs in proportion to the connections used
/// since the last one. Loop-owned.
@MainActor
final class TLSBufferKeeper {
    /// The layers used since the last sweep, and those keeping buffers.
    private var watched: [TLSLayer] = []
    /// How many of them keep buffers.
    private(set) var keeping = 0

    /// The reads and writes between two sweeps (a second apart) that make a connection keep its buffers.
    static let busyUses: UInt32 = 100

    init() {}

    /// Starts watching `layer` (used for the first time since the keeper last let it go).
    fileprivate func watch(_ layer: TLSLayer) {
        layer.isWatched = true
        self.watched.append(layer)
    }

    /// Lets each busy connection keep its buffers and has each other give them back; forgets the idle and the
    /// closed ones.
    func sweep() {
        var keeping = 0
        self.watched.removeAll { layer in
            let uses = layer.usesSinceSweep
            layer.usesSinceSweep = 0
            let busy = uses >= Self.busyUses && !layer.stream.isClosing
            layer.session.keepsBuffers = busy
            if busy {
                keeping += 1
                return false
            }
            if uses > 0 && !layer.stream.isClosing { return false }  // used lightly: still watched
            layer.isWatched = false
            return true
        }
        self.keeping = keeping
    }

    /// Forgets every layer (when their owner stops).
    func forgetAll() {
        for layer in self.watched { layer.isWatched = false }
        self.watched.removeAll()
        self.keeping = 0
    }
}
