// TCPStream: one connected TCP socket (accepted by a TCPListener or made by `connect`), its read side, its
// callbacks and its two-phase close. Writes and half-close live in TCPStream+Write.swift; the C callbacks are at the
// bottom of each file.

internal import CLibUV

/// Loop-owned. One connected TCP socket.
///
/// The stream keeps itself alive from creation until its close callback, so an owner may drop its reference at any
/// time; it must call `close()` eventually (after `onEnd`, say). After `close()` only `onClose` fires; all callbacks
/// are released once it has, which breaks cycles through closures that capture the stream.
@MainActor
public final class TCPStream: LoopHandleOwner {
    // Unchecked exclusivity below: loop-owned, never re-entered; measured in ARCHITECTURE.md#decisions.
    /// Called with each chunk read; the bytes are valid only during the call (they live in the loop's read buffer).
    /// (Read on every read: loop-owned, without runtime exclusivity checks, as the flags below.)
    @exclusivity(unchecked) public var onRead: (@MainActor (UnsafeRawBufferPointer) -> Void)?
    /// Called once when the peer closed (EOF → nil) or a read/write error occurred (the error); the owner decides to
    /// close.
    public var onEnd: (@MainActor (UVError?) -> Void)?
    /// Called once from the uv_close callback, after which the stream's memory can go.
    public var onClose: (@MainActor () -> Void)?
    /// Called when the libuv write queue becomes empty after having been non-empty (every queued write finished).
    public var onWritesDrained: (@MainActor () -> Void)?

    /// "127.0.0.1:54321", computed once when the connection was accepted or connected.
    public internal(set) var remoteAddress: String = "?"
    /// Whether `close()` was called (the close callback may still be pending).
    /// (This flag and the write flags below are read on every write: loop-owned and never accessed re-entrantly, so
    /// without runtime exclusivity checks.)
    @exclusivity(unchecked) public internal(set) var isClosing = false

    let loop: EventLoop
    /// The socket handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_tcp_t>
    var stream: UnsafeMutablePointer<uv_stream_t> { asStream(self.handle) }

    private var isReading = false
    /// onEnd has been delivered; it fires at most once.
    private var hasEnded = false
    /// A write failed; later writes are dropped instead of hitting the socket again.
    @exclusivity(unchecked) var hasWriteFailed = false
    /// `shutdownWrites` was called; later writes are dropped.
    var isShutDownForWrites = false
    /// uv_write requests whose callback has not run yet.
    @exclusivity(unchecked) var writesInFlight = 0
    /// The completion of `connect`, until the connect callback ran.
    private var connectCompletion: (@MainActor (TCPStream?, UVError?) -> Void)?
    /// The `done` of `shutdownWrites`, until the shutdown callback ran.
    var shutdownCompletion: (@MainActor () -> Void)?

    /// Opens a TCP handle on `loop` (`uv_tcp_init`); the caller accepts or connects into it.
    init(loop: EventLoop) throws(UVError) {
        self.handle = try openHandle(uv_tcp_t(), on: loop, "uv_tcp_init") { uv_tcp_init($0, $1) }
        self.loop = loop
        retainThroughData(self.handle, owner: self)
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    // MARK: - Reading

    /// Starts delivering bytes to `onRead`; does nothing if already reading. Throws after `close()`.
    public func startReading() throws(UVError) {
        guard !self.isClosing else { throw UVError.closed("uv_read_start") }
        guard !self.isReading else { return }
        try uvCheck(uv_read_start(self.stream, onAllocateReadBuffer, onReadCompleted), "uv_read_start")
        self.isReading = true
    }

    /// Stops delivering bytes (the kernel buffers them, then the peer's writes block): back-pressure.
    public func stopReading() {
        guard self.isReading, !self.isClosing else { return }
        self.isReading = false
        uvAssert(uv_read_stop(self.stream), "uv_read_stop")
    }

    /// Handles one read callback; `count` is libuv's `nread`.
    fileprivate func didRead(_ count: Int) {
        guard !self.isClosing else { return }
        if count > 0 {
            self.loop.noteRead()
            self.onRead?(UnsafeRawBufferPointer(rebasing: self.loop.readBuffer[..<count]))
        } else if count < 0 {
            // UV_EOF or a read error: libuv stops reading by itself after either.
            self.stopReading()
            let error = UVError(code: Int32(truncatingIfNeeded: count), call: "uv_read")
            self.end(error.isEOF ? nil : error)
        }
        // count == 0 is EAGAIN: nothing to do.
    }

    /// Reports the end of the stream to `onEnd`, once, unless the stream is closing.
    func end(_ error: UVError?) {
        guard !self.hasEnded, !self.isClosing else { return }
        self.hasEnded = true
        self.onEnd?(error)
    }

    // MARK: - Options

    /// Turns Nagle's algorithm off (`true`) or on (`uv_tcp_nodelay`). A failure means the socket is already dead and is
    /// reported through `onEnd`.
    public func setNoDelay(_ on: Bool) {
        guard !self.isClosing else { return }
        do throws(UVError) {
            try uvCheck(uv_tcp_nodelay(self.handle, on ? 1 : 0), "uv_tcp_nodelay")
        } catch {
            self.end(error)
        }
    }

    /// Sets the socket's kernel send buffer (`SO_SNDBUF`, `uv_send_buffer_size`) and returns the size now in force
    /// (Linux doubles what is asked, for its bookkeeping). Tests shrink it to make the uv_write queue certain to fill.
    func setSendBufferSize(_ bytes: Int32) throws(UVError) -> Int32 {
        try self.setBufferSize(bytes, uv_send_buffer_size, "uv_send_buffer_size")
    }

    /// Sets the socket's kernel receive buffer (`SO_RCVBUF`, `uv_recv_buffer_size`); as `setSendBufferSize(_:)`.
    func setReceiveBufferSize(_ bytes: Int32) throws(UVError) -> Int32 {
        try self.setBufferSize(bytes, uv_recv_buffer_size, "uv_recv_buffer_size")
    }

    /// Sets a buffer size through `call`, then reads back (libuv's value 0 means "read") what is in force.
    private func setBufferSize(
        _ bytes: Int32, _ call: (UnsafeMutablePointer<uv_handle_t>?, UnsafeMutablePointer<Int32>?) -> Int32,
        _ name: String
    ) throws(UVError) -> Int32 {
        precondition(bytes > 0, "a buffer size must be positive (0 would read it)")
        guard !self.isClosing else { throw UVError.closed(name) }
        var value = bytes
        try uvCheck(call(asHandle(self.handle), &value), name)
        value = 0
        try uvCheck(call(asHandle(self.handle), &value), name)
        return value
    }

    // MARK: - Closing

    /// Stops reading and starts closing (`uv_close`); idempotent. After it no `onRead`/`onEnd`/`onWritesDrained`
    /// fires; `onClose` fires once from the close callback. Queued writes are cancelled.
    public func close() {
        self.closeHandle { self.stopReading() }
    }

    func didClose() {
        let onClose = self.onClose
        self.onRead = nil
        self.onEnd = nil
        self.onClose = nil
        self.onWritesDrained = nil
        self.connectCompletion = nil
        self.shutdownCompletion = nil
        onClose?()
    }

    // MARK: - Connecting

    /// Client side: connects to `host:port` (IPv4, IPv6 literal or "localhost"). `completion` runs once, from the
    /// loop, with the connected stream (not yet reading) and nil, or with nil and the error: a refused connection, or
    /// UV_ECANCELED when `EventLoop.shutdown()` came first. Throws instead, without calling `completion`, when the
    /// address is malformed or libuv refuses to start the request.
    public static func connect(
        loop: EventLoop, host: String, port: Int,
        completion: @escaping @MainActor (TCPStream?, UVError?) -> Void
    ) throws(UVError) {
        let address = try SocketAddress(host: host, port: port, call: "uv_tcp_connect")
        let stream = try TCPStream(loop: loop)
        let request = allocateZeroed(uv_connect_t())
        let status = address.withSockaddr { uv_tcp_connect(request, stream.handle, $0, onConnectCompleted) }
        guard status >= 0 else {
            request.deallocate()
            stream.close()
            throw UVError(code: status, call: "uv_tcp_connect")
        }
        stream.connectCompletion = completion
    }

    /// Handles the connect callback.
    fileprivate func didConnect(_ status: Int32) {
        guard let completion = self.connectCompletion else { return }
        self.connectCompletion = nil
        do throws(UVError) {
            try uvCheck(status, "uv_tcp_connect")
            self.remoteAddress = try SocketAddress(
                filling: { uv_tcp_getpeername(self.handle, $0, $1) }, call: "uv_tcp_getpeername"
            ).description
            completion(self, nil)
        } catch {
            self.close()
            completion(nil, error)
        }
    }
}

// MARK: - C callbacks

/// Hands libuv the loop's shared read buffer.
private let onAllocateReadBuffer: uv_alloc_cb = { handle, _, buffer in
    guard let buffer else { return }
    // The read buffer's address never changes, so reading it here needs no actor: only the loop thread calls this.
    guard let loop = handle.flatMap({ EventLoop.owning($0) }) else {
        buffer.pointee = uv_buf_t(base: nil, len: 0)  // libuv reports UV_ENOBUFS to the read callback
        return
    }
    buffer.pointee = uv_buf_t(
        base: loop.readBuffer.baseAddress?.assumingMemoryBound(to: CChar.self), len: loop.readBuffer.count)
}

private let onReadCompleted: uv_read_cb = { handle, count, _ in
    // `count` is the status: < 0 error or EOF, 0 EAGAIN, > 0 bytes in the loop's read buffer.
    guard let handle = handle.map(asHandle), let stream = owner(of: handle, as: TCPStream.self) else { return }
    enterLoop(handle, stream, count) { $0.didRead($1) }
}

private let onConnectCompleted: uv_connect_cb = { request, status in
    guard let request else { return }
    let handle = request.pointee.handle
    request.deallocate()
    guard let stream = owner(of: handle.map(asHandle), as: TCPStream.self) else { return }
    MainActor.assumeIsolated { stream.didConnect(status) }
}
