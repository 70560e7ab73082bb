// One TCP connection for the async client: a reader thread that blocks in poll()/read() and hands each `\n`-terminated
// line (and finally the end of the connection) to a sink, in order; writes from any thread under a lock. Plain POSIX
// (the KVOClient module's connect and poll helpers): no libuv, no Foundation, so it builds on Apple platforms too.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import KVOClient

/// What the reader thread reports, in the order it happened.
enum SocketEvent: Sendable {
    /// One line, without its `\n`.
    case line([UInt8])
    /// The connection ended (end of stream, reset, an error, or `shutdown()`); nothing follows.
    case closed(reason: String)
}

/// A connected socket whose reading happens on its own thread. Writes take a lock; the descriptor is closed by the
/// reader thread when it stops, never while a write uses it.
final class LineSocket: @unchecked Sendable {
    // @unchecked: `descriptor` and `isClosed` are only touched under `lock`; the read buffer only by the reader thread.
    private let lock = Lock()
    private var descriptor: Int32
    private var isClosed = false
    private let maxLineBytes: Int

    /// Connects to `host:port` within `timeout`.
    init(host: String, port: Int, timeout: Duration?, maxLineBytes: Int = 64 << 20) throws(KVOClientError) {
        self.descriptor = try connectTCP(host: host, port: port, timeout: timeout)
        self.maxLineBytes = maxLineBytes
    }

    /// Starts the reader thread: `sink` gets every line, then one `.closed`. Call once.
    func start(_ sink: @escaping @Sendable (SocketEvent) -> Void) {
        let started = ReaderThread.detach { [self] in
            let reason = self.readLines(sink)
            self.close()
            sink(.closed(reason: reason))
        }
        if !started {
            self.close()
            sink(.closed(reason: "cannot start a thread to read the connection"))
        }
    }

    /// Writes all of `bytes`, waiting at most `timeout` for the peer to take them. Throws `.closed` once the
    /// connection ended.
    func send(_ bytes: [UInt8], timeout: Duration?) throws(KVOClientError) {
        let deadline = makeDeadline(after: timeout)
        try self.lock.withLock { () throws(KVOClientError) in
            guard !self.isClosed else { throw KVOClientError.closed }
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { raw in
                    sendWithoutSignal(self.descriptor, raw.baseAddress! + written, raw.count - written)
                }
                if count >= 0 {
                    written += count
                    continue
                }
                let code = errno
                switch code {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK:
                    guard try waitFor(Int32(POLLOUT), on: self.descriptor, until: deadline) else {
                        throw KVOClientError.timeout("writing to kvod")
                    }
                case EPIPE, ECONNRESET: throw KVOClientError.closed
                default: throw KVOClientError.connectionLost("write: \(errnoDescription(code))")
                }
            }
        }
    }

    /// Ends the connection in both directions: the reader thread wakes up, reports `.closed` and closes the socket.
    func shutdown() {
        self.lock.withLock {
            guard !self.isClosed else { return }
            #if canImport(Glibc)
            _ = Glibc.shutdown(self.descriptor, Int32(SHUT_RDWR))
            #else
            _ = Darwin.shutdown(self.descriptor, SHUT_RDWR)
            #endif
        }
    }

    private func close() {
        self.lock.withLock {
            closeDescriptor(self.descriptor)
            self.descriptor = -1
            self.isClosed = true
        }
    }

    /// The reader loop: returns why the connection ended.
    private func readLines(_ sink: (SocketEvent) -> Void) -> String {
        let descriptor = self.lock.withLock { self.descriptor }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress!, $0.count) }
            if count == 0 { return "kvod closed the connection" }
            if count < 0 {
                let code = errno
                switch code {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK:
                    var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                    _ = poll(&entry, 1, -1)
                    continue
                default: return "read: \(errnoDescription(code))"
                }
            }
            var start = buffer.count
            buffer.append(contentsOf: chunk[0..<count])
            var lineStart = 0
            while let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                sink(.line(Array(buffer[lineStart..<newline])))
                lineStart = newline + 1
                start = lineStart
            }
            if lineStart > 0 { buffer.removeFirst(lineStart) }
            if buffer.count > self.maxLineBytes { return "a line from kvod is longer than \(self.maxLineBytes) bytes" }
        }
    }
}

/// A mutual-exclusion lock (pthread_mutex), for the few fields threads share.
final class Lock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(self.mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
    }

    func withLock<Result, Failure>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(self.mutex)
        defer { pthread_mutex_unlock(self.mutex) }
        return try body()
    }
}

/// A detached POSIX thread running a closure (the reader's blocking loop must not occupy a thread of Swift's
/// cooperative pool).
enum ReaderThread {
    private final class Box {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts `body` on a new detached thread; false when no thread could be created.
    static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        #if canImport(Glibc)
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
        #else
        var thread: pthread_t?
        let status = pthread_create(&thread, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw).takeRetainedValue().body()
            return nil
        }, box)
        #endif
        guard status == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            return false
        }
        #if canImport(Glibc)
        pthread_detach(thread)
        #else
        if let thread { pthread_detach(thread) }
        #endif
        return true
    }
}
