// A blocking, line-oriented TCP connection: connect with a timeout, write whole buffers, read `\n`-terminated lines
// with a timeout, optionally over TLS (the TLS module's session: ciphertext read from the socket goes in, plaintext
// lands in the line buffer). It knows nothing about JSON or JSON-RPC; KVOClient builds on it. Not thread-safe: one
// owner at a time.
public import TLS

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SystemCall

/// A TCP connection that sends bytes and receives `\n`-terminated lines, every wait bounded by poll().
///
/// The socket is non-blocking underneath; each call blocks the calling thread until it is done or its deadline passes.
/// The connection is closed by `close()` or when the object is released.
public final class LineConnection {
    /// The host this connection was opened to, as given.
    public let host: String
    /// The port this connection was opened to.
    public let port: Int
    /// A received line longer than this (without its `\n`) is a protocol violation.
    public let maxLineBytes: Int
    /// How long `send` may wait for the peer to accept bytes; nil waits forever.
    public var writeTimeout: Duration?

    private var descriptor: Int32
    /// Received bytes live in `storage[lineStart..<end]`; the rest of `storage` is room for the next read.
    private var storage = [UInt8](repeating: 0, count: 64 * 1024)
    /// Bytes of `storage` before this index were already returned as lines (or are free space).
    private var lineStart = 0
    /// Bytes from `lineStart` up to this index are known to contain no `\n`.
    private var scannedUpTo = 0
    /// One past the last received byte.
    private var end = 0
    private var isAtEndOfStream = false
    /// The connection's TLS, when it was opened with a context.
    private let tls: TLSSession?
    /// Ciphertext read from the socket, and the plaintext and ciphertext TLS hands out (TLS connections only).
    private var tlsBuffers: TLSBuffers?

    /// Connects to `host:port` (a name, an IPv4 or an IPv6 literal), trying each resolved address until one accepts,
    /// all within `timeout` (nil: the system's own connect timeout). `timeout` also becomes `writeTimeout`.
    /// With `tls`, the TLS handshake follows within the same `timeout` (the server's certificate is checked against
    /// `host` when the context verifies servers); a failed one throws `.tls`.
    public init(
        host: String, port: Int, timeout: Duration? = .seconds(5), maxLineBytes: Int = 64 << 20,
        tls: TLSContext? = nil
    ) throws(KVOClientError) {
        self.host = host
        self.port = port
        self.maxLineBytes = maxLineBytes
        self.writeTimeout = timeout
        let deadline = makeDeadline(after: timeout)
        self.descriptor = try connectTCP(host: host, port: port, timeout: timeout)
        guard let tls else {
            self.tls = nil
            return
        }
        do {
            self.tls = try TLSSession(context: tls, serverName: host, isServer: false)
        } catch {
            closeDescriptor(self.descriptor)
            throw .tls("\(formatEndpoint(host: host, port: port)): \(error)")
        }
        self.tlsBuffers = TLSBuffers()
        do throws(KVOClientError) {
            try self.shakeHands(until: deadline)
        } catch {
            self.close()
            throw error
        }
    }

    deinit {
        if self.descriptor >= 0 { closeDescriptor(self.descriptor) }
        self.tlsBuffers?.deallocate()
    }

    /// Runs the TLS handshake to its end: our messages out, the server's in, until `deadline`.
    private func shakeHands(until deadline: ContinuousClock.Instant?) throws(KVOClientError) {
        guard let tls = self.tls else { return }
        let endpoint = formatEndpoint(host: self.host, port: self.port)
        do throws(TLSError) {
            try tls.handshake()
        } catch {
            throw .tls("\(endpoint): \(error)")
        }
        while true {
            try self.sendTLSOutput(until: deadline)
            if tls.isEstablished { return }
            do throws(KVOClientError) {
                if try self.receive(until: deadline) == false {
                    throw KVOClientError.timeout("waiting for the TLS handshake with \(endpoint)")
                }
            } catch .closed {
                // The server hung up mid-handshake: it refused us (our certificate, the version) or is no TLS server.
                throw .tls("\(endpoint): the server closed the connection during the TLS handshake")
            }
        }
    }

    /// Writes whatever ciphertext TLS produced (handshake messages, alerts).
    private func sendTLSOutput(until deadline: ContinuousClock.Instant?) throws(KVOClientError) {
        guard let tls = self.tls, tls.hasOutput else { return }
        var ciphertext: [UInt8] = []
        tls.drainOutput { ciphertext.append(contentsOf: $0) }
        try self.sendRaw(ciphertext, until: deadline)
    }

    /// The socket's file descriptor (for poll() alongside other descriptors), or -1 after `close()`.
    public var fileDescriptor: Int32 { self.descriptor }

    /// Over TLS: the server certificate's subject ("CN=localhost"); nil over plaintext.
    public var tlsPeerSubject: String? { self.tls?.peerSubject }

    /// True once `close()` was called.
    public var isClosed: Bool { self.descriptor < 0 }

    /// True when a complete line is already buffered, so `readLine` will return without touching the socket.
    public var hasBufferedLine: Bool {
        self.storage[self.scannedUpTo..<self.end].contains(UInt8(ascii: "\n"))
    }

    // MARK: - Writing

    /// Writes all of `bytes` (nothing is appended), waiting at most `writeTimeout` for the peer to accept each part.
    /// Throws `.closed` when the peer is gone, `.timeout` when it stops reading.
    public func send(_ bytes: [UInt8]) throws(KVOClientError) {
        guard self.descriptor >= 0 else { throw .closed }
        let deadline = makeDeadline(after: self.writeTimeout)
        guard let tls = self.tls else {
            return try self.sendRaw(bytes, until: deadline)
        }
        var ciphertext: [UInt8] = []
        let encrypted = bytes.withUnsafeBytes { raw in
            Result { () throws(TLSError) in
                try tls.send(raw) { ciphertext.append(contentsOf: $0) }
            }
        }
        if case .failure(let error) = encrypted {
            throw .tls("\(formatEndpoint(host: self.host, port: self.port)): \(error)")
        }
        try self.sendRaw(ciphertext, until: deadline)
    }

    /// Writes all of `bytes` to the socket as they are.
    private func sendRaw(_ bytes: [UInt8], until deadline: ContinuousClock.Instant?) throws(KVOClientError) {
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                SystemCall.retrying {
                    sendWithoutSignal(self.descriptor, raw.baseAddress! + written, raw.count - written)
                }
            }
            if count >= 0 {
                written += count
                continue
            }
            let code = errno
            switch code {
            case EAGAIN, EWOULDBLOCK:
                guard try waitFor(Int32(POLLOUT), on: self.descriptor, until: deadline) else {
                    throw .timeout("writing to \(formatEndpoint(host: self.host, port: self.port))")
                }
            case EPIPE, ECONNRESET:
                throw .closed
            default:
                throw .connectionLost("write: \(errnoDescription(code))")
            }
        }
    }

    /// Writes `line` as UTF-8 followed by `\n`.
    public func sendLine(_ line: String) throws(KVOClientError) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        try self.send(bytes)
    }

    /// Closes the sending direction (the peer reads end-of-stream) while still allowing reads.
    public func shutdownWrite() {
        guard self.descriptor >= 0 else { return }
        #if canImport(Glibc)
        _ = shutdown(self.descriptor, Int32(SHUT_WR))
        #else
        _ = shutdown(self.descriptor, SHUT_WR)
        #endif
    }

    /// Closes the socket (after TLS's close_notify, when it can go at once); later calls throw `.closed`. Calling it
    /// twice is harmless.
    public func close() {
        guard self.descriptor >= 0 else { return }
        if let tls = self.tls, tls.isEstablished, !tls.isClosed {
            tls.close()
            try? self.sendTLSOutput(until: .now)
        }
        closeDescriptor(self.descriptor)
        self.descriptor = -1
    }

    // MARK: - Reading

    /// The next line, without its `\n`, waiting at most `timeout` (nil: forever) for it to complete.
    ///
    /// Throws `.timeout` when the line does not complete in time (bytes received so far stay buffered),
    /// `.closed` at end of stream (a final line without `\n` is dropped), `.protocolViolation` for an over-long line.
    public func readLine(timeout: Duration?) throws(KVOClientError) -> [UInt8] {
        try self.readLine(until: makeDeadline(after: timeout))
    }

    /// The next line, waiting until `deadline` (nil: forever); otherwise as `readLine(timeout:)`.
    func readLine(until deadline: ContinuousClock.Instant?) throws(KVOClientError) -> [UInt8] {
        while true {
            if let line = self.takeBufferedLine() { return line }
            if try self.receive(until: deadline) == false {
                throw .timeout("waiting for a line from \(formatEndpoint(host: self.host, port: self.port))")
            }
        }
    }

    /// The next line if one is complete now, without waiting: the buffer first, then whatever the socket holds.
    /// Returns nil when no complete line is available yet.
    public func readLineIfAvailable() throws(KVOClientError) -> [UInt8]? {
        if let line = self.takeBufferedLine() { return line }
        while try self.receive(until: .now) {
            if let line = self.takeBufferedLine() { return line }
        }
        return nil
    }

    /// Removes and returns the first complete buffered line, if any.
    private func takeBufferedLine() -> [UInt8]? {
        guard let newline = self.storage[self.scannedUpTo..<self.end].firstIndex(of: UInt8(ascii: "\n")) else {
            self.scannedUpTo = self.end
            return nil
        }
        let line = Array(self.storage[self.lineStart..<newline])
        self.lineStart = newline + 1
        self.scannedUpTo = self.lineStart
        if self.lineStart == self.end {
            self.lineStart = 0
            self.scannedUpTo = 0
            self.end = 0
        }
        return line
    }

    /// Makes room for at least `minimum` more bytes after `end`: first by moving the pending bytes to the front,
    /// then by growing the storage.
    private func reserveSpace(_ minimum: Int) {
        if self.storage.count - self.end >= minimum { return }
        if self.lineStart > 0 {
            let pending = self.end - self.lineStart
            self.storage.withUnsafeMutableBytes { raw in
                let base = raw.baseAddress!
                base.copyMemory(from: base + self.lineStart, byteCount: pending)
            }
            self.scannedUpTo -= self.lineStart
            self.end = pending
            self.lineStart = 0
        }
        if self.storage.count - self.end < minimum {
            self.storage.append(contentsOf: repeatElement(0, count: max(minimum, self.storage.count)))
        }
    }

    /// Feeds ciphertext to TLS and appends the plaintext to the line buffer; sends what TLS answers (a handshake
    /// message). The server's close_notify is the end of the stream.
    private func decrypt(
        _ ciphertext: UnsafeRawBufferPointer, _ tls: TLSSession, _ buffers: TLSBuffers
    ) throws(KVOClientError) {
        do throws(TLSError) {
            try tls.receive(ciphertext, scratch: buffers.plaintext) { plaintext in
                self.reserveSpace(plaintext.count)
                self.storage.withUnsafeMutableBytes { raw in
                    (raw.baseAddress! + self.end).copyMemory(from: plaintext.baseAddress!, byteCount: plaintext.count)
                }
                self.end += plaintext.count
            }
        } catch {
            try? self.sendTLSOutput(until: .now)  // the alert that tells the server why
            throw .tls("\(formatEndpoint(host: self.host, port: self.port)): \(error)")
        }
        try self.sendTLSOutput(until: makeDeadline(after: self.writeTimeout))
        if tls.peerClosed { self.isAtEndOfStream = true }
    }

    /// Reads one chunk into the buffer, waiting until `deadline`. Returns false when nothing arrived in time.
    private func receive(until deadline: ContinuousClock.Instant?) throws(KVOClientError) -> Bool {
        guard self.descriptor >= 0, !self.isAtEndOfStream else { throw .closed }
        if self.end - self.lineStart > self.maxLineBytes {
            throw .protocolViolation("line longer than \(self.maxLineBytes) bytes")
        }
        self.reserveSpace(16 * 1024)
        while true {
            let count: Int
            if let buffers = self.tlsBuffers {
                count = SystemCall.retrying { read(self.descriptor, buffers.ciphertextIn.baseAddress, buffers.ciphertextIn.count) }
            } else {
                count = self.storage.withUnsafeMutableBytes { raw in
                    SystemCall.retrying { read(self.descriptor, raw.baseAddress! + self.end, raw.count - self.end) }
                }
            }
            if count > 0, let tls = self.tls, let buffers = self.tlsBuffers {
                try self.decrypt(UnsafeRawBufferPointer(rebasing: buffers.ciphertextIn[..<count]), tls, buffers)
                return true
            }
            if count > 0 {
                self.end += count
                return true
            }
            if count == 0 {
                self.isAtEndOfStream = true
                throw .closed
            }
            let code = errno
            switch code {
            case EAGAIN, EWOULDBLOCK:
                guard try waitFor(Int32(POLLIN), on: self.descriptor, until: deadline) else { return false }
            case ECONNRESET, EPIPE:
                self.isAtEndOfStream = true
                throw .closed
            default:
                throw .connectionLost("read: \(errnoDescription(code))")
            }
        }
    }
}

/// A TLS connection's buffers: ciphertext read from the socket and the plaintext TLS decrypts it into (one TLS
/// record's worth each and more).
private struct TLSBuffers {
    let ciphertextIn = UnsafeMutableRawBufferPointer.allocate(byteCount: 32 << 10, alignment: 16)
    let plaintext = UnsafeMutableRawBufferPointer.allocate(byteCount: 32 << 10, alignment: 16)

    func deallocate() {
        self.ciphertextIn.deallocate()
        self.plaintext.deallocate()
    }
}
