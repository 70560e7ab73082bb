// TLS on a libuv stream: the TLS module's session (OpenSSL over memory buffers) driven by the stream's reads and
// writes on the loop's thread. Ciphertext the stream reads goes in, plaintext comes out to the owner (the socket
// transport, or the HTTP server of the metrics and inspector ports); plaintext the owner writes goes out as
// ciphertext through the stream's usual write path, so libuv's write queue and kvod's output limits see the bytes
// that really wait. A connection gets a layer only when its first byte is a TLS handshake record (0x16): plaintext
// connections never reach this file.
import TLS
import UVLoop

/// A stream's TLS. Loop-owned; owned by the stream's owner.
@MainActor
final class TLSLayer {
    let session: TLSSession
    private let stream: TCPStream
    /// Plaintext written before the handshake finished, sent once it has.
    private var held: [UInt8] = []
    /// Called once, when the handshake finishes, before any plaintext is delivered.
    var onEstablished: (@MainActor () -> Void)?
    private var announced = false

    /// A server-side layer for `stream` with `context` (the context current when the connection arrived).
    init(context: TLSContext, stream: TCPStream) throws(TLSError) {
        self.session = try TLSSession(context: context, isServer: true)
        self.stream = stream
    }

    /// The first byte of a TLS handshake record (a ClientHello's): never the first byte of a JSON-RPC line or an
    /// HTTP request.
    static let handshakeRecordByte: UInt8 = 0x16

    /// Plaintext out of OpenSSL: one buffer for the whole loop (the loop runs one connection's TLS at a time).
    private static let plaintextScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    /// Ciphertext into the stream, one write per flush: one buffer for the whole loop, lent to a session for one
    /// `send`. A write made while it is lent (from inside a stream write's failure, which may close connections)
    /// collects in a buffer of its session's own.
    private static let ciphertextScratch = UnsafeMutableRawBufferPointer.allocate(
        byteCount: TLSSession.scratchBytes, alignment: 16)
    private static var ciphertextScratchLent = false

    var isEstablished: Bool { self.session.isEstablished }

    /// Feeds ciphertext the stream read; plaintext goes to `deliver`. Returns the error when the peer broke TLS (the
    /// alert telling it so is already written), nil otherwise.
    func receive(_ ciphertext: UnsafeRawBufferPointer, deliver: (UnsafeRawBufferPointer) -> Void) -> TLSError? {
        var failure: TLSError?
        do {
            try self.session.receive(ciphertext, scratch: Self.plaintextScratch) { plaintext in
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
        let lends = !Self.ciphertextScratchLent
        Self.ciphertextScratchLent = true
        defer { if lends { Self.ciphertextScratchLent = false } }
        do {
            let scratch = lends ? Self.ciphertextScratch : nil
            try self.session.send(plaintext, scratch: scratch) { _ = self.stream.write($0) }
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
