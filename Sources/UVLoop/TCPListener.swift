// TCPListener: a bound, listening TCP socket that accepts connections into TCPStreams. Reading and writing belong
// to TCPStream; address parsing and formatting to SocketAddress.

internal import CLibUV

/// Loop-owned. A listening TCP socket; each accepted connection arrives as a `TCPStream` through `onConnection`.
@MainActor
public final class TCPListener: LoopHandleOwner {
    /// The bound port (`uv_tcp_getsockname`); the real one when 0 was asked for.
    public private(set) var localPort = 0
    /// The bound address, "127.0.0.1:7070" or "[::1]:7070".
    public private(set) var localAddress = ""
    /// Called when accepting a connection failed (EMFILE, say); the listener keeps listening. Optional.
    public var onAcceptError: (@MainActor (UVError) -> Void)?
    /// Whether `close()` was called (the close callback may still be pending).
    public internal(set) var isClosing = false
    /// Called once from the uv_close callback.
    public var onClose: (@MainActor () -> Void)?

    let loop: EventLoop
    /// The socket handle; nonisolated(unsafe) only so deinit can free it, every other use is on the main actor.
    nonisolated(unsafe) let handle: UnsafeMutablePointer<uv_tcp_t>
    private var onConnection: (@MainActor (TCPStream) -> Void)?

    /// Binds `host` (IPv4 dotted, IPv6 literal or "localhost") and `port` (0 = ephemeral) and listens.
    ///
    /// `onConnection` receives each accepted stream, not yet reading; the stream keeps itself alive until closed.
    /// Throws on a malformed address or when binding or listening fails (`isAddressInUse`); nothing is leaked then:
    /// the half-made handle is closed and goes away with the next loop iteration (or `EventLoop.shutdown()`).
    public init(
        loop: EventLoop, host: String, port: Int, backlog: Int32 = 511,
        onConnection: @escaping @MainActor (TCPStream) -> Void
    ) throws(UVError) {
        let address = try SocketAddress(host: host, port: port, call: "uv_tcp_bind")
        let handle = try openHandle(uv_tcp_t(), on: loop, "uv_tcp_init") { uv_tcp_init($0, $1) }
        self.loop = loop
        self.handle = handle
        self.onConnection = onConnection
        retainThroughData(handle, owner: self)
        do throws(UVError) {
            try uvCheck(address.withSockaddr { uv_tcp_bind(handle, $0, 0) }, "uv_tcp_bind")
            // On Unix libuv defers EADDRINUSE from bind to listen.
            try uvCheck(uv_listen(asStream(handle), backlog, onConnectionArrived), "uv_listen")
            let bound = try SocketAddress(
                filling: { uv_tcp_getsockname(handle, $0, $1) }, call: "uv_tcp_getsockname")
            self.localPort = bound.port
            self.localAddress = bound.description
        } catch {
            self.close()
            throw error
        }
    }

    deinit {
        // Runs only after the close callback dropped the retain taken in init.
        self.handle.deallocate()
    }

    var uvHandle: UnsafeMutablePointer<uv_handle_t> { asHandle(self.handle) }

    /// Stops listening and starts closing (`uv_close`); idempotent. Accepted streams are not affected.
    public func close() {
        self.closeHandle()
    }

    func didClose() {
        let onClose = self.onClose
        self.onConnection = nil
        self.onAcceptError = nil
        self.onClose = nil
        onClose?()
    }

    /// Handles one connection callback: accepts into a new stream and hands it over.
    fileprivate func didReceiveConnection(_ status: Int32) {
        guard !self.isClosing else { return }
        do throws(UVError) {
            try uvCheck(status, "uv_listen")
            let stream = try TCPStream(loop: self.loop)
            do throws(UVError) {
                try uvCheck(uv_accept(asStream(self.handle), stream.stream), "uv_accept")
                // A peer that reset the connection before it was accepted has no address any more (ENOTCONN); the
                // connection is still handed over, and its first read reports the reset.
                stream.remoteAddress = (try? SocketAddress(
                    filling: { uv_tcp_getpeername(stream.handle, $0, $1) }, call: "uv_tcp_getpeername"
                ).description) ?? "unknown"
            } catch {
                stream.close()
                throw error
            }
            self.onConnection?(stream)
        } catch {
            self.onAcceptError?(error)
        }
    }
}

private let onConnectionArrived: uv_connection_cb = { server, status in
    // `status` is checked first thing in didReceiveConnection.
    guard let handle = server.map(asHandle), let listener = owner(of: handle, as: TCPListener.self) else { return }
    enterLoop(handle, listener, status) { $0.didReceiveConnection($1) }
}
