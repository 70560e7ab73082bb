// A TCP proxy on 127.0.0.1 in front of kvod, for cutting a client's connection while kvod keeps running: `pause()`
// closes the open connections and closes new ones at once (the client's reconnection attempts fail), `resume()`
// forwards again. Blocking sockets and one thread per direction; test use only.

import Foundation

#if canImport(Glibc)
import Glibc
#endif

final class TCPProxy: @unchecked Sendable {
    // @unchecked: the mutable state is guarded by `lock`.
    let port: Int
    private let target: Int
    private let listener: Int32
    private let lock = NSLock()
    private var paused = false
    private var stopped = false
    private var open: [Int32] = []

    init(to target: Int) throws {
        self.target = target
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.port = Int(UInt16(bigEndian: address.sin_port))
        self.listener = listener
        Thread.detachNewThread { [self] in self.acceptLoop() }
    }

    /// Cuts every open connection and refuses (accepts, then closes) new ones until `resume()`.
    func pause() {
        self.lock.withLock {
            self.paused = true
            for descriptor in self.open { shutdown(descriptor, Int32(SHUT_RDWR)) }
            self.open.removeAll()
        }
    }

    func resume() {
        self.lock.withLock { self.paused = false }
    }

    func stop() {
        self.lock.withLock {
            self.stopped = true
            for descriptor in self.open { shutdown(descriptor, Int32(SHUT_RDWR)) }
            self.open.removeAll()
        }
        shutdown(self.listener, Int32(SHUT_RDWR))
        close(self.listener)
    }

    private func acceptLoop() {
        while true {
            let client = accept(self.listener, nil, nil)
            if client < 0 {
                if self.lock.withLock({ self.stopped }) { return }
                continue
            }
            let refuse = self.lock.withLock { self.paused || self.stopped }
            if refuse {
                close(client)
                continue
            }
            let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(self.target).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else {
                close(client)
                close(upstream)
                continue
            }
            self.lock.withLock { self.open += [client, upstream] }
            Thread.detachNewThread { Self.pump(from: client, to: upstream) }
            Thread.detachNewThread { Self.pump(from: upstream, to: client) }
        }
    }

    /// Copies bytes until either side ends, then ends both.
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress!, $0.count) }
            if count <= 0 { break }
            var written = 0
            while written < count {
                let sent = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + written, count - written, Int32(MSG_NOSIGNAL)) }
                if sent <= 0 { break }
                written += sent
            }
            if written < count { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }
}
