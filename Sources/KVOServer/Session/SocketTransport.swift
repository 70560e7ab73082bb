// The socket transport: a libuv TCP stream carrying either newline-delimited JSON-RPC or, after an HTTP upgrade,
// WebSocket (RFC 6455) text frames with one JSON-RPC message or batch each (Protocol/README.md#websocket). On kvod's
// own port the first byte decides (a JSON-RPC line starts with `{`, `[` or whitespace; an upgrade with `GET`); on
// `--ws-port` only the upgrade is accepted. With TLS configured, a first byte 0x16 (a ClientHello) puts a TLSLayer
// under either: the same detection then runs on the plaintext (Protocol/README.md#tls); with `--tls-only` anything
// else is refused. The frames are the pure WebSocket module's; this type owns the socket's
// ending: the half-close after the last output, the lingering close after a server-initiated one, the deadline for a
// client that never reads, and for WebSocket the close frame, pings to idle peers and the handshake's HTTP errors.
#if canImport(Glibc)
import Glibc
#endif
import TLS
import UVLoop
import WebSocket
import WireProtocol

/// What a socket transport accepts.
struct SocketTransportSettings {
    /// The longest message (line or WebSocket message) accepted.
    var maxMessageBytes: Int
    /// Origins a browser's WebSocket handshake may come from (`--ws-origins`); empty: any.
    var webSocketOrigins: [String] = []
    /// How long a WebSocket peer may stay silent before it is pinged; twice as long and it is gone.
    var webSocketPingMilliseconds: UInt64 = 30_000
    /// The TLS context for connections that start a handshake (the one current when the connection arrived); nil:
    /// no TLS.
    var tls: TLSContext?
    /// Refuse connections that do not start with a TLS handshake (`--tls-only`).
    var tlsOnly = false
    /// Decides which TLS connections keep their record buffers (the server's one keeper).
    var tlsBuffers: TLSBufferKeeper
}

/// One client socket. Loop-owned; owned by its session.
@MainActor
final class SocketTransport: Transport {
    /// What the socket carries now.
    enum Mode {
        /// Nothing read yet: the first byte decides between lines and a WebSocket upgrade.
        case detecting
        case lines
        /// Reading the upgrade request (output is held until it is answered).
        case handshake
        case webSocket
        /// After a refused handshake or a protocol error: nothing more is read.
        case done
    }

    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// The session. Not `weak`: a weakly referenced object's every retain and release takes the runtime's slow path
    /// (a side table), which costs the fan-out path ~13 %; the session owns this transport and is forgotten only
    /// after `transportClosed`, the last event. (This and `mode` and `framer` are read on every read: loop-owned and
    /// never accessed re-entrantly — a line's handling never reaches the framer — so without runtime exclusivity
    /// checks, which cost ~150 instructions per read.)
    @exclusivity(unchecked) unowned(unsafe) var events: (any TransportEvents)?
    private let stream: TCPStream
    private let loop: EventLoop
    private var settings: SocketTransportSettings
    @exclusivity(unchecked) private(set) var mode: Mode
    @exclusivity(unchecked) private var framer: LineFramer?
    /// What only a WebSocket needs, made when a connection turns out to be one (a TCP connection pays a pointer).
    private var webSocketState: WebSocketState?
    private var webSocket: WebSocketState {
        if let state = self.webSocketState { return state }
        let state = WebSocketState()
        self.webSocketState = state
        return state
    }
    /// The connection's TLS, when its first byte started a handshake.
    private(set) var tls: TLSLayer?
    /// A TLS connection's handshake must finish within `handshakeMilliseconds` of its first byte.
    private var tlsHandshakeTimer: LoopTimer?
    let remoteAddress: String
    /// A connection that asked for an upgrade is a WebSocket one, also after its handshake was refused (logs).
    var kind: String { self.webSocketState == nil ? "tcp" : "websocket" }
    /// Whether the connection speaks TLS (for logs and `observers`).
    var isTLS: Bool { self.tls != nil }
    private var lingerTimer: LoopTimer?
    /// An upgrade request must be complete within this long after its first byte (else 408).
    static let handshakeMilliseconds: UInt64 = 10_000

    /// A transport for `stream`; `webSocketOnly` for `--ws-port`, where a JSON line gets 400.
    init(stream: TCPStream, loop: EventLoop, settings: SocketTransportSettings, webSocketOnly: Bool = false) {
        self.stream = stream
        self.loop = loop
        self.settings = settings
        self.remoteAddress = stream.remoteAddress
        self.mode = webSocketOnly ? .handshake : .detecting
        if webSocketOnly { self.webSocket.handshake = WebSocketHandshake() }
    }

    /// Starts reading; messages go to the session as they complete.
    func start() throws(UVError) {
        // unowned(unsafe): the stream drops its callbacks when it closes, before the session lets this transport go;
        // `unowned` would cost a checked retain and release per read.
        self.stream.onRead = { [unowned(unsafe) self] bytes in self.received(bytes) }
        self.stream.onEnd = { [unowned self] error in self.events?.transportEnded(error: error != nil) }
        self.stream.onClose = { [unowned self] in
            self.tlsHandshakeTimer?.close()
            self.tlsHandshakeTimer = nil
            self.lingerTimer?.close()
            self.lingerTimer = nil
            self.webSocketState?.pingTimer?.close()
            self.webSocketState?.pingTimer = nil
            self.webSocketState?.handshakeTimer?.close()
            self.webSocketState?.handshakeTimer = nil
            self.events?.transportClosed()
        }
        self.stream.setNoDelay(true)
        try self.stream.startReading()
    }

    // MARK: - Input

    private func received(_ bytes: UnsafeRawBufferPointer) {
        guard let events = self.events else { return }
        events.transportRead(byteCount: bytes.count)
        self.receivedPlaintext(bytes, events)
    }

    /// Bytes of the protocol the connection speaks: as read, or as decrypted by its TLS layer.
    private func receivedPlaintext(_ bytes: UnsafeRawBufferPointer, _ events: any TransportEvents) {
        switch self.mode {
        case .lines:
            self.receiveLines(bytes, events)
        case .webSocket:
            self.receiveFrames(bytes, events)
        case .detecting:
            if self.tls == nil && (self.settings.tls != nil || self.settings.tlsOnly) {
                return self.startTLS(bytes, events)
            }
            if bytes.first == UInt8(ascii: "G") {
                self.mode = .handshake
                self.webSocket.handshake = WebSocketHandshake()
                self.receiveHandshake(bytes, events)
            } else {
                self.mode = .lines
                self.framer = LineFramer(maxLineBytes: self.settings.maxMessageBytes)
                self.receiveLines(bytes, events)
            }
        case .handshake:
            if self.tls == nil && !self.webSocket.handshakeStarted
                && (self.settings.tls != nil || self.settings.tlsOnly)
            {
                return self.startTLS(bytes, events)
            }
            self.receiveHandshake(bytes, events)
        case .done:
            return
        }
    }

    // MARK: - TLS

    /// The first bytes of a connection on a port with TLS: a handshake record starts TLS under the connection;
    /// anything else is plaintext, refused with `--tls-only`.
    private func startTLS(_ bytes: UnsafeRawBufferPointer, _ events: any TransportEvents) {
        guard bytes.first == TLSLayer.handshakeRecordByte, let context = self.settings.tls else {
            if self.settings.tlsOnly { return self.refusePlaintext(bytes, events) }
            // Plaintext on a port that also takes TLS: detected as before.
            self.settings.tls = nil
            return self.receivedPlaintext(bytes, events)
        }
        let layer: TLSLayer
        do {
            layer = try TLSLayer(context: context, stream: self.stream, buffers: self.settings.tlsBuffers)
        } catch {
            self.mode = .done
            events.transportFailed(.protocolError, detail: "\(error)")
            return
        }
        self.tls = layer
        layer.onEstablished = { [unowned self] in
            self.tlsHandshakeTimer?.close()
            self.tlsHandshakeTimer = nil
            self.events?.transportEstablishedTLS(layer.session)
        }
        if let timer = try? LoopTimer(loop: self.loop) {
            try? timer.start(afterMilliseconds: Self.handshakeMilliseconds) { [unowned self] in
                guard let layer = self.tls, !layer.isEstablished, self.mode != .done, let events = self.events else {
                    return
                }
                self.mode = .done
                events.transportFailed(.protocolError, detail: "TLS handshake not complete in time")
            }
            self.tlsHandshakeTimer = timer
        }
        // unowned(unsafe), as in start(): the stream drops its callbacks when it closes.
        self.stream.onRead = { [unowned(unsafe) self] bytes in self.receivedCiphertext(bytes) }
        self.receivedCiphertext(bytes)
    }

    /// Ciphertext read from a TLS connection: counted as read, decrypted, and its plaintext handled as a
    /// plaintext connection's bytes are.
    private func receivedCiphertext(_ bytes: UnsafeRawBufferPointer) {
        guard let events = self.events, let layer = self.tls else { return }
        events.transportRead(byteCount: bytes.count)
        let failure = layer.receive(bytes) { plaintext in
            guard self.mode != .done else { return }
            self.receivedPlaintext(plaintext, events)
        }
        if let failure, self.mode != .done {
            self.mode = .done
            events.transportFailed(.protocolError, detail: failure.message)
        } else if layer.session.peerClosed, self.mode != .done {
            events.transportEnded(error: false)
        }
    }

    /// Plaintext sent to a `--tls-only` port: told so in its own protocol (a JSON-RPC error, or HTTP 400 for an
    /// upgrade), then closed.
    private func refusePlaintext(_ bytes: UnsafeRawBufferPointer, _ events: any TransportEvents) {
        self.mode = .done
        let message = "this port takes TLS only: connect with TLS (kvods://, wss://)"
        if WebSocketHandshake.looksLikeHTTP(bytes) {
            self.stream.write(WebSocketHandshake.errorResponse(status: 400, reason: message))
        } else {
            self.stream.write(Array(
                #"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"\#(message)"}}"#.utf8 + [0x0A]))
        }
        events.transportFailed(.protocolError, detail: "plaintext on a TLS-only port")
    }

    /// Sends bytes: through the TLS layer when there is one, else straight to the stream.
    private func send(_ bytes: UnsafeRawBufferPointer) {
        if let tls = self.tls { tls.write(bytes) } else { _ = self.stream.write(bytes) }
    }

    private func send(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.send($0) }
    }

    private func receiveLines(_ bytes: UnsafeRawBufferPointer, _ events: any TransportEvents) {
        do {
            try self.framer?.feed(bytes) { line in events.transportReceived(line) }
        } catch {
            events.transportReceivedTooLong(limit: self.settings.maxMessageBytes)
        }
    }

    private func receiveHandshake(_ bytes: UnsafeRawBufferPointer, _ events: any TransportEvents) {
        if !self.webSocket.handshakeStarted {
            // On the WebSocket port a JSON line (or anything but `GET `) is refused at once, not after 8 KiB.
            self.webSocket.handshakeStarted = true
            guard WebSocketHandshake.looksLikeHTTP(bytes) else {
                self.refuse(status: 400, reason: "expected a WebSocket upgrade (GET)", headers: [], events)
                return
            }
            if let timer = try? LoopTimer(loop: self.loop) {
                try? timer.start(afterMilliseconds: Self.handshakeMilliseconds) { [unowned self] in
                    guard self.mode == .handshake, let events = self.events else { return }
                    self.webSocket.handshake = nil
                    self.refuse(status: 408, reason: "the upgrade request was not complete in time", headers: [], events)
                }
                self.webSocket.handshakeTimer = timer
            }
        }
        guard let outcome = self.webSocket.handshake?.feed(bytes) else { return }
        self.webSocket.handshake = nil
        self.webSocket.handshakeTimer?.close()
        self.webSocket.handshakeTimer = nil
        switch outcome {
        case .reject(let status, let reason, let headers):
            self.refuse(status: status, reason: reason, headers: headers, events)
        case .accept(let request):
            guard WebSocketHandshake.originAllowed(request.origin, allowList: self.settings.webSocketOrigins) else {
                self.refuse(status: 403, reason: "origin not allowed: \(request.origin ?? "")", headers: [], events)
                return
            }
            self.send(WebSocketHandshake.acceptResponse(key: request.key))
            self.mode = .webSocket
            self.webSocket.isWebSocket = true
            self.webSocket.decoder = WebSocketFrameDecoder(maxMessageBytes: self.settings.maxMessageBytes)
            self.webSocket.lastInputAt = self.loop.nowMilliseconds
            self.startPings()
            if !self.webSocket.heldOutput.isEmpty {
                let held = self.webSocket.heldOutput
                self.webSocket.heldOutput = []
                held.withUnsafeBytes { self.write($0) }
            }
            if !request.leftover.isEmpty { request.leftover.withUnsafeBytes { self.receiveFrames($0, events) } }
        }
    }

    /// Answers a bad upgrade request with an HTTP error; the session closes (`protocol_error`).
    private func refuse(
        status: Int, reason: String, headers: [WebSocketHandshake.Header], _ events: any TransportEvents
    ) {
        self.mode = .done
        self.webSocket.heldOutput = []
        self.send(WebSocketHandshake.errorResponse(status: status, reason: reason, extraHeaders: headers))
        events.transportFailed(.protocolError, detail: "\(status) \(reason)")
    }

    private func receiveFrames(_ bytes: UnsafeRawBufferPointer, _ events: any TransportEvents) {
        self.webSocket.lastInputAt = self.loop.nowMilliseconds
        do {
            try self.webSocket.decoder?.feed(bytes) { event in
                switch event {
                case .text(let payload):
                    events.transportReceived(payload)
                case .ping(let payload):
                    var frame: [UInt8] = []
                    WebSocketFrameEncoder.appendPong(payload, to: &frame)
                    if !self.webSocket.sentCloseFrame { self.send(frame) }
                case .pong:
                    break
                case .close(let code, _):
                    self.webSocket.peerCloseCode = code ?? .normal
                    events.transportEnded(error: false)
                }
            }
        } catch {
            self.mode = .done
            if error.code == .messageTooBig {
                events.transportReceivedTooLong(limit: self.settings.maxMessageBytes)
            } else {
                self.webSocket.failureCode = error.code
                events.transportFailed(.protocolError, detail: error.message)
            }
        }
    }

    // MARK: - Output

    func write(_ messages: UnsafeRawBufferPointer) {
        switch self.mode {
        case .detecting, .lines:
            self.send(messages)
        case .handshake:
            self.webSocket.heldOutput.append(contentsOf: messages)
        case .webSocket, .done:
            guard let state = self.webSocketState, state.isWebSocket, !state.sentCloseFrame,
                let base = messages.baseAddress
            else { return }
            // One text frame per message: the session's output is whole messages, each ending in a newline (found
            // with memchr), framed into a buffer the connection keeps, written once.
            state.frames.removeAll(keepingCapacity: state.frames.capacity <= 64 << 10)
            let count = messages.count
            var start = 0
            while start < count {
                // (No closure here: one formed in a main-actor method is checked for its isolation on every call.)
                var end = count
                if let newline = memchr(base + start, 0x0A, count - start) { end = UnsafeRawPointer(newline) - base }
                state.frames.appendTextFrame(UnsafeRawBufferPointer(start: base + start, count: end - start))
                start = end + 1
            }
            state.frames.withBytes { self.send($0) }
        }
    }

    /// A plaintext JSON-lines connection's large output is handed to the stream whole: what the socket does not take
    /// at once is queued without a copy (a client that reads slowly never makes kvod hold its output twice). Over TLS
    /// the output is encrypted into records first (`send`).
    func write(taking output: inout OutputBuffer) {
        if output.count >= Self.handOverBytes, self.tls == nil, self.mode == .lines || self.mode == .detecting,
            let (base, count) = output.takeStorage()
        {
            self.stream.write(adopting: base, count: count)
            return
        }
        output.withBytes { self.write($0) }
        output.removeAll(keepingCapacity: output.capacity <= 8 << 10)
    }

    /// From this size on, output is handed over instead of copied.
    private static let handOverBytes = 64 << 10

    /// What waits to be written: libuv's queue, and a TLS record a flush's batch still holds.
    var pendingWriteBytes: Int { self.stream.pendingWriteBytes + (self.tls?.deferredBytes ?? 0) }

    func pauseReading() {
        self.stream.stopReading()
    }

    func resumeReading() {
        guard self.mode != .done else { return }
        do {
            try self.stream.startReading()
        } catch {
            self.events?.transportEnded(error: true)
        }
    }

    // MARK: - Closing

    func close(_ close: TransportClose) {
        switch close {
        case .abort:
            self.stream.close()
        case .abandon(let notice, let reason):
            // With libuv's queue non-empty the notice would queue behind it, and closing cancels the queue.
            if self.stream.pendingWriteBytes == 0 {
                notice.withUnsafeBytes { self.write($0) }
                self.sendCloseFrame(for: reason)
                self.tls?.close()
            }
            self.stream.close()
        case .graceful(let reason, let peerClosed):
            if self.mode == .handshake {
                // Closed before the upgrade was answered (too many connections, shutdown): an HTTP answer.
                self.mode = .done
                self.webSocket.heldOutput = []
                self.send(WebSocketHandshake.errorResponse(status: 503, reason: reason.rawValue))
            }
            self.sendCloseFrame(for: reason)
            self.tls?.close()
            self.armCloseDeadline()
            if peerClosed {
                // The client sent EOF (or its close frame), so nothing unread is left: close once the output is out.
                self.stream.shutdownWrites { [stream = self.stream] in stream.close() }
            } else {
                self.stream.shutdownWrites { [weak self] in self?.linger() }
            }
        }
    }

    /// On a WebSocket: the close frame, with the peer's code echoed or the code for `reason`.
    private func sendCloseFrame(for reason: CloseReason) {
        guard let state = self.webSocketState, state.isWebSocket, !state.sentCloseFrame else { return }
        state.sentCloseFrame = true
        let code = state.failureCode ?? state.peerCloseCode ?? Self.closeCode(for: reason)
        var frame: [UInt8] = []
        WebSocketFrameEncoder.appendClose(
            code: code.isAllowedOnWire ? code : .normal, reason: reason == .clientClosed ? "" : reason.rawValue,
            to: &frame)
        self.send(frame)
    }

    /// The WebSocket close code for a close reason (Protocol/README.md#websocket).
    static func closeCode(for reason: CloseReason) -> WebSocketCloseCode {
        switch reason {
        case .clientClosed: .normal
        case .serverShutdown, .notLeader, .replicationTimeout: .goingAway
        case .unauthorized, .authTimeout, .tooManyConnections, .slowConsumer: .policyViolation
        case .lineTooLong: .messageTooBig
        case .protocolError: .protocolError
        case .ioError: .normal
        }
    }

    /// Pings a WebSocket peer that has been silent for the ping interval; one silent for twice as long is gone.
    private func startPings() {
        let interval = self.settings.webSocketPingMilliseconds
        guard interval > 0, let timer = try? LoopTimer(loop: self.loop) else { return }
        do {
            try timer.start(afterMilliseconds: interval, repeatMilliseconds: interval) { [unowned self] in
                let state = self.webSocket
                let now = self.loop.nowMilliseconds
                switch Self.keepalive(
                    now: now, lastInputAt: state.lastInputAt, pingSentAt: state.pingSentAt, interval: interval)
                {
                case .wait:
                    break
                case .ping:
                    guard !state.sentCloseFrame else { return }
                    var frame: [UInt8] = []
                    WebSocketFrameEncoder.appendPing(Array("kvod".utf8), to: &frame)
                    self.send(frame)
                    state.pingSentAt = now
                case .drop:
                    self.events?.transportEnded(error: true)
                }
            }
            self.webSocket.pingTimer = timer
        } catch {
            timer.close()
        }
    }

    /// What a WebSocket keepalive tick does.
    enum KeepaliveAction: Equatable {
        case wait
        case ping
        case drop
    }

    /// A keepalive tick at `now`: a peer silent for `interval` is pinged; one that was pinged while silent and has
    /// sent nothing for `interval` since is gone. Only a ping counts, never silence alone: a tick that runs late (a
    /// busy loop with thousands of timers) never drops a peer it did not ping first.
    nonisolated static func keepalive(
        now: UInt64, lastInputAt: UInt64, pingSentAt: UInt64?, interval: UInt64
    ) -> KeepaliveAction {
        guard now &- lastInputAt >= interval else { return .wait }
        guard let pinged = pingSentAt, pinged >= lastInputAt else { return .ping }
        return now &- pinged >= interval ? .drop : .wait
    }

    /// A graceful close waits for queued output to reach the socket, which never happens if the client stopped
    /// reading with its buffers full: after `closeDeadlineMilliseconds` the socket is closed regardless.
    private func armCloseDeadline() {
        self.webSocketState?.pingTimer?.close()
        self.webSocketState?.pingTimer = nil
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

/// A WebSocket connection's state (SocketTransport). Loop-owned.
@MainActor
private final class WebSocketState {
    var handshake: WebSocketHandshake?
    var decoder: WebSocketFrameDecoder?
    /// Output the session wrote while the upgrade was pending.
    var heldOutput: [UInt8] = []
    var handshakeStarted = false
    /// An upgrade request must be complete within `handshakeMilliseconds` of its first byte (else 408).
    var handshakeTimer: LoopTimer?
    /// The close frame's code after a protocol error (1002, 1003, 1007).
    var failureCode: WebSocketCloseCode?
    /// The code the peer's close frame carried (echoed in ours).
    var peerCloseCode: WebSocketCloseCode?
    var sentCloseFrame = false
    /// True once the upgrade was answered: output goes out as frames. (Not `decoder != nil`: the decoder is being
    /// mutated while its events run, and they can write and close.)
    var isWebSocket = false
    /// The loop time of the last input, and of the last keepalive ping (WebSocket keepalive).
    var lastInputAt: UInt64 = 0
    var pingSentAt: UInt64?
    var pingTimer: LoopTimer?
    /// The frames of one flush (reused; a large one is given back at the next flush). Loop-owned, never accessed
    /// re-entrantly: unchecked exclusivity.
    @exclusivity(unchecked) var frames = OutputBuffer()
}

extension OutputBuffer {
    /// Appends an unmasked, unfragmented text frame (RFC 6455 §5.2): the header, then the payload.
    fileprivate mutating func appendTextFrame(_ payload: UnsafeRawBufferPointer) {
        let length = payload.count
        if length < 126 {
            self.append(packed: 0x81 | UInt64(length) << 8, count: 2)
        } else if length <= 0xFFFF {
            self.append(packed: 0x81 | 126 << 8 | UInt64(length >> 8) << 16 | UInt64(length & 0xFF) << 24, count: 4)
        } else {
            self.append(packed: 0x81 | 127 << 8, count: 2)
            self.append(packed: UInt64(length).byteSwapped, count: 8)
        }
        self.append(payload)
    }
}
