// One TLS connection's state (OpenSSL's SSL) over two BIOs of memory: its owner reads ciphertext from the network and
// feeds it in, takes plaintext out, hands plaintext in to be sent and writes the ciphertext that comes out. No socket
// and no thread of its own, so the same code serves kvod's event loop (where libuv does the reading and writing, on
// the loop's one thread) and kvoctl's blocking sockets.
//
// Input is a source BIO (COpenSSL's kvod_source) that OpenSSL reads the ciphertext from where the caller has it, for
// the length of one `receive`; the plaintext lands in scratch space the caller lends.
// Output is a sink BIO (COpenSSL's kvod_sink): the records OpenSSL writes collect in one buffer, handed to the owner
// as they are (no copy out) once per `send` or `drainOutput`, so a flush of many records is one network write. The
// buffer is one the owner lends to `send` (kvod's loop lends one for all its connections, so a write allocates
// nothing) or else the session's own. Memory: OpenSSL's record buffers (a read and a write buffer, about 33 KiB) are
// made for each record and given back after it (SSL_MODE_RELEASE_BUFFERS), unless the owner asks a busy session to
// keep them (`keepsBuffers`, which saves a malloc and a free per record); the sink is handed over every 32 KiB of a
// large write and gives its buffer back once drained. So an idle connection holds neither.
#if canImport(Glibc)
import Glibc
#endif
internal import COpenSSL

/// A TLS connection's state machine. Not thread-safe: one owner at a time.
public final class TLSSession {
    private let ssl: OpaquePointer
    /// Ciphertext from the network, lent for one `receive` (the source BIO's state, owned by `ssl`'s input BIO).
    private let input: UnsafeMutablePointer<kvod_source>
    /// Ciphertext OpenSSL produced, waiting to be sent: the sink BIO's buffer (owned by `ssl`'s output BIO).
    private let output: UnsafeMutablePointer<kvod_sink>
    /// The context the connection started with (a reload makes a new one for new connections).
    public let context: TLSContext
    /// True once the handshake finished; plaintext flows from then on.
    public private(set) var isEstablished = false
    /// True once the peer sent its close_notify: it sends nothing more.
    public private(set) var peerClosed = false
    /// True once `close()` queued our close_notify: nothing more is sent.
    public private(set) var isClosed = false

    /// The most plaintext handed to one SSL_write (one TLS record's payload).
    static let chunkBytes = 16 * 1024
    /// A large write's ciphertext is handed over each time this much collected, so the sink stays near 64 KiB.
    static let drainBytes = 32 * 1024
    /// The sink BIO's method, made once for the process.
    private nonisolated(unsafe) static let sinkMethod: OpaquePointer? = kvod_sink_method_new()
    /// The source BIO's method, made once for the process.
    private nonisolated(unsafe) static let sourceMethod: OpaquePointer? = kvod_source_method_new()

    /// A server-side session, or a client-side one when `context` is a client context. `serverName` (client side)
    /// is sent as SNI and, when the context verifies the server, checked against the server's certificate.
    public init(context: TLSContext, serverName: String? = nil, isServer: Bool) throws(TLSError) {
        ERR_clear_error()
        guard let ssl = SSL_new(context.raw) else { throw TLSError.openSSL("cannot make a TLS session") }
        guard let input = BIO_new(Self.sourceMethod), let source = kvod_source_of(input) else {
            SSL_free(ssl)
            throw TLSError.openSSL("cannot make a TLS session's buffers")
        }
        guard let output = BIO_new(Self.sinkMethod), let sink = kvod_sink_of(output) else {
            BIO_free(input)
            SSL_free(ssl)
            throw TLSError.openSSL("cannot make a TLS session's buffers")
        }
        SSL_set_bio(ssl, input, output)  // the session owns both from here on
        self.ssl = ssl
        self.input = source
        self.output = sink
        self.context = context
        if isServer {
            SSL_set_accept_state(ssl)
        } else {
            SSL_set_connect_state(ssl)
            if let serverName {
                // SNI carries names only; an IP address is checked as one.
                let isAddress = serverName.contains(":") || serverName.allSatisfy { $0.isNumber || $0 == "." }
                if !isAddress { _ = kvod_ssl_set_host_name(ssl, serverName) }
                if context.verifiesServer {
                    let set = isAddress ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName)
                                        : SSL_set1_host(ssl, serverName)
                    guard set == 1 else {
                        SSL_free(ssl)
                        throw TLSError.openSSL("cannot check the server's name \(serverName)")
                    }
                }
            }
        }
    }

    deinit {
        SSL_free(self.ssl)
    }

    // MARK: - Handshake

    /// Moves the handshake on with what was fed in; a client calls it once first, to produce its ClientHello.
    /// Throws when the peer refused or broke the handshake (the alert telling it so waits in the output).
    public func handshake() throws(TLSError) {
        guard !self.isEstablished else { return }
        ERR_clear_error()
        let status = SSL_do_handshake(self.ssl)
        if status == 1 {
            self.isEstablished = true
            return
        }
        switch SSL_get_error(self.ssl, status) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return
        default:
            throw self.failure("TLS handshake failed")
        }
    }

    /// The error of a failed call, with the certificate check's reason when that is what failed.
    private func failure(_ context: String) -> TLSError {
        let verify = SSL_get_verify_result(self.ssl)
        if verify != X509_V_OK {
            ERR_clear_error()
            return TLSError("\(context): certificate verify failed: \(String(cString: X509_verify_cert_error_string(verify)))")
        }
        return TLSError.openSSL(context)
    }

    // MARK: - Input

    /// Feeds ciphertext read from the network and hands the plaintext it carries to `deliver` (in pieces of at most
    /// `scratch.count` bytes, written in `scratch`), moving the handshake on first. OpenSSL reads the ciphertext where
    /// it lies, during this call only (a record's first part waits in OpenSSL's read buffer for the rest). Stops after
    /// the peer's close_notify (`peerClosed`) or our `close()`: what follows is dropped. Throws when the peer breaks
    /// TLS; what OpenSSL wants to answer (handshake messages, an alert) waits in the output either way.
    public func receive(
        _ ciphertext: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer,
        deliver: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) {
        guard let base = ciphertext.baseAddress, ciphertext.count > 0, let scratchBase = scratch.baseAddress,
            !self.peerClosed
        else { return }
        let input = self.input
        input.pointee = kvod_source(bytes: base.assumingMemoryBound(to: UInt8.self), count: ciphertext.count)
        // Nothing refers to the caller's bytes once this returns.
        defer { input.pointee = kvod_source(bytes: nil, count: 0) }
        if !self.isEstablished {
            try self.handshake()
            guard self.isEstablished else { return }
        }
        while !self.isClosed {
            // (No ERR_clear_error per call: every failure path empties OpenSSL's error queue, so it is empty here, as
            // SSL_get_error needs; clearing it costs each record ~30 instructions.)
            let read = SSL_read(self.ssl, scratchBase, Int32(clamping: scratch.count))
            if read > 0 {
                deliver(UnsafeRawBufferPointer(start: scratchBase, count: Int(read)))
                continue
            }
            switch SSL_get_error(self.ssl, read) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return
            case SSL_ERROR_ZERO_RETURN:
                self.peerClosed = true
                return
            default:
                throw self.failure("TLS input refused")
            }
        }
    }

    // MARK: - Output

    /// Encrypts `plaintext` (a record per 16 KiB) and hands the ciphertext, with whatever was waiting, to `sink`:
    /// once for a write of up to 32 KiB, once per 32 KiB or so for a larger one. Dropped after `close()` or before the
    /// handshake finished (the caller holds output until then).
    ///
    /// With `scratch` (at least `scratchBytes`), the ciphertext collects there instead of in a buffer allocated for
    /// the call: the scratch is lent for this call only, and nothing refers to it once `send` returns. The caller
    /// must not lend the same scratch to a second call while one runs (from inside `sink`, say).
    public func send(
        _ plaintext: UnsafeRawBufferPointer, scratch: UnsafeMutableRawBufferPointer? = nil,
        sink: (UnsafeRawBufferPointer) -> Void
    ) throws(TLSError) {
        guard self.isEstablished, !self.isClosed, let base = plaintext.baseAddress else { return }
        var offset = 0
        while offset < plaintext.count && !self.isClosed {
            self.lend(scratch)
            let count = min(plaintext.count - offset, Self.chunkBytes)
            let written = SSL_write(self.ssl, base + offset, Int32(count))
            guard written > 0 else {
                self.drainOutput(sink: sink)
                throw self.failure("TLS output refused")
            }
            offset += Int(written)
            if self.output.pointee.count >= Self.drainBytes { self.drainOutput(sink: sink) }
        }
        self.drainOutput(sink: sink)
    }

    /// What a lent scratch holds at most between two hand-overs: 32 KiB collected and one more record.
    public static let scratchBytes = 64 * 1024

    /// Points the empty sink at `scratch` (a sink already holding bytes keeps its own buffer).
    @inline(__always)
    private func lend(_ scratch: UnsafeMutableRawBufferPointer?) {
        guard let scratch, scratch.count >= Self.scratchBytes, let base = scratch.baseAddress,
            self.output.pointee.bytes == nil
        else { return }
        self.output.pointee = kvod_sink(
            bytes: base.assumingMemoryBound(to: UInt8.self), count: 0, capacity: scratch.count, borrowed: 1)
    }

    /// Whether ciphertext waits to be sent (handshake messages, alerts, close_notify).
    public var hasOutput: Bool { self.output.pointee.count > 0 }

    /// Hands every waiting byte of ciphertext to `sink`, at once, from the sink's own buffer (valid during the call).
    public func drainOutput(sink: (UnsafeRawBufferPointer) -> Void) {
        let output = self.output
        let count = output.pointee.count
        guard let bytes = output.pointee.bytes else { return }
        let borrowed = output.pointee.borrowed != 0
        // Detached while `sink` runs (a sink that closes the session, its write failed, may queue a close_notify,
        // which then goes to a buffer of its own), and given back after: an idle connection holds no output buffer
        // and no pointer to a lent one.
        output.pointee = kvod_sink(bytes: nil, count: 0, capacity: 0, borrowed: 0)
        if count > 0 { sink(UnsafeRawBufferPointer(start: bytes, count: count)) }
        if !borrowed { free(bytes) }
    }

    /// Queues our close_notify (once); nothing more is sent after it.
    public func close() {
        guard !self.isClosed else { return }
        self.isClosed = true
        if self.isEstablished {
            ERR_clear_error()
            _ = SSL_shutdown(self.ssl)
            ERR_clear_error()
        }
    }

    // MARK: - Memory

    /// Whether OpenSSL keeps its record buffers between records. False at first: they are made for each record and
    /// given back after it, so an idle session holds none. Turned off, they go at once, or after the record they hold
    /// part of.
    public var keepsBuffers = false {
        didSet {
            guard self.keepsBuffers != oldValue else { return }
            if self.keepsBuffers {
                _ = kvod_ssl_clear_mode(self.ssl, Int(SSL_MODE_RELEASE_BUFFERS))
            } else {
                _ = kvod_ssl_set_mode(self.ssl, Int(SSL_MODE_RELEASE_BUFFERS))
                _ = self.releaseBuffers()
            }
        }
    }

    /// Gives OpenSSL's record buffers back now (the next record makes them again). Returns false, and keeps them,
    /// while they hold part of a record or plaintext not yet read.
    @discardableResult
    public func releaseBuffers() -> Bool {
        SSL_free_buffers(self.ssl) == 1
    }

    // MARK: - What was agreed

    /// The names the peer's verified certificate stands for (`CN=…`, `DNS:…`, `URI:…`, `email:…`, `IP:…`); empty
    /// without one.
    public var peerIdentities: [String] {
        guard self.isEstablished, SSL_get_verify_result(self.ssl) == X509_V_OK,
            let certificate = SSL_get1_peer_certificate(self.ssl)
        else { return [] }
        defer { X509_free(certificate) }
        var buffer = [CChar](repeating: 0, count: 4096)
        let used = buffer.withUnsafeMutableBufferPointer { kvod_x509_identities(certificate, $0.baseAddress, $0.count) }
        let text = buffer.withUnsafeBytes { String(decoding: $0[..<used], as: UTF8.self) }
        return text.split(separator: "\n").map(String.init)
    }

    /// The peer certificate's subject ("CN=orders"), or nil without one.
    public var peerSubject: String? {
        guard self.isEstablished, let certificate = SSL_get1_peer_certificate(self.ssl) else { return nil }
        defer { X509_free(certificate) }
        return TLSContext.subject(of: certificate)
    }

    /// "TLSv1.3", once established.
    public var protocolVersion: String { String(cString: SSL_get_version(self.ssl)) }

    /// "TLS_AES_256_GCM_SHA384", once established.
    public var cipher: String {
        guard let cipher = SSL_get_current_cipher(self.ssl), let name = SSL_CIPHER_get_name(cipher) else { return "" }
        return String(cString: name)
    }
}
