// The connections kvod opens itself (a follower's replication link to its leader, the etcd client's requests) as one
// small surface, so that the code opening them does not care whether TLS is under them: a plain TCPStream, or a
// ClientTLSStream that runs the TLS module's client session over one (the handshake first; plaintext held until it
// is done; a failed handshake ends the stream with the reason).
import TLS
import UVLoop

/// A connection kvod opened: bytes out, bytes in, its end and its close. Loop-owned.
@MainActor
protocol ClientStream: AnyObject {
    /// Each chunk of plaintext received.
    var onRead: (@MainActor (UnsafeRawBufferPointer) -> Void)? { get set }
    /// Calls `handler` once when the peer closed (nil) or the connection failed (why).
    func whenEnded(_ handler: @escaping @MainActor (String?) -> Void)
    func write(_ bytes: [UInt8])
    func startReading() throws(UVError)
    func setNoDelay(_ on: Bool)
    func close()
}

extension TCPStream: ClientStream {
    func whenEnded(_ handler: @escaping @MainActor (String?) -> Void) {
        self.onEnd = { error in handler(error.map { "\($0)" }) }
    }
}

/// Connects to `host:port` and, with `tls` (a client context), shakes hands with the name `host` checked against the
/// server's certificate. `completion` runs once, from the loop, with the stream or why there is none; a TLS stream's
/// handshake failure comes later, through `onClientEnd`.
@MainActor
func openClientStream(
    loop: EventLoop, host: String, port: Int, tls: TLSContext?,
    completion: @escaping @MainActor ((any ClientStream)?, String?) -> Void
) throws(UVError) {
    try TCPStream.connect(loop: loop, host: host, port: port) { stream, error in
        guard let stream else { return completion(nil, error.map { "\($0)" } ?? "?") }
        guard let tls else { return completion(stream, nil) }
        do {
            completion(try ClientTLSStream(stream: stream, context: tls, serverName: host), nil)
        } catch {
            stream.close()
            completion(nil, "TLS: \(error)")
        }
    }
}

/// A client connection over TLS. Loop-owned.
@MainActor
final class ClientTLSStream: ClientStream {
    var onRead: (@MainActor (UnsafeRawBufferPointer) -> Void)?
    private var onEnd: (@MainActor (String?) -> Void)?
    private let stream: TCPStream
    private let session: TLSSession
    /// Plaintext written before the handshake finished.
    private var held: [UInt8] = []
    private var hasEnded = false

    /// Starts the handshake on a connected `stream`.
    init(stream: TCPStream, context: TLSContext, serverName: String) throws(TLSError) {
        self.stream = stream
        self.session = try TLSSession(context: context, serverName: serverName, isServer: false)
        // kvod opens few connections (replication links, etcd), and a replication link is busy by nature: its record
        // buffers stay rather than being made and given back for each record.
        self.session.keepsBuffers = true
        stream.onRead = { [unowned self] chunk in self.received(chunk) }
        stream.onEnd = { [unowned self] error in self.end(error.map { "\($0)" }) }
        try self.session.handshake()
        self.flushTLS()
    }

    func write(_ bytes: [UInt8]) {
        guard self.session.isEstablished else {
            self.held += bytes
            return
        }
        let sent = bytes.withUnsafeBytes { plaintext in
            Result { () throws(TLSError) in
                try TLSScratch.send(plaintext, through: self.session) { _ = self.stream.write($0) }
            }
        }
        if case .failure(let error) = sent { self.end("TLS: \(error)") }
    }

    func whenEnded(_ handler: @escaping @MainActor (String?) -> Void) {
        self.onEnd = handler
    }

    func startReading() throws(UVError) { try self.stream.startReading() }

    func setNoDelay(_ on: Bool) { self.stream.setNoDelay(on) }

    func close() {
        self.session.close()
        self.flushTLS()
        self.stream.close()
    }

    private func received(_ ciphertext: UnsafeRawBufferPointer) {
        let wasEstablished = self.session.isEstablished
        do throws(TLSError) {
            try self.session.receive(ciphertext, scratch: TLSScratch.plaintext) { self.onRead?($0) }
        } catch {
            self.flushTLS()
            return self.end("TLS: \(error)")
        }
        self.flushTLS()
        if !wasEstablished && self.session.isEstablished && !self.held.isEmpty {
            let held = self.held
            self.held = []
            self.write(held)
        }
        if self.session.peerClosed { self.end(nil) }
    }

    private func flushTLS() {
        guard self.session.hasOutput else { return }
        self.session.drainOutput { _ = self.stream.write($0) }
    }

    private func end(_ why: String?) {
        guard !self.hasEnded else { return }
        self.hasEnded = true
        self.onEnd?(why)
    }
}
